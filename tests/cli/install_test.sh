#!/usr/bin/env bash
# install_test.sh BUILD_DIR HAVE_LIB - the two system layouts of one build:
#   prefix  `cmake --install` into a scratch prefix;
#   deb     `cpack -G DEB`, extracted with `dpkg-deb -x` (its /usr), and its
#           control fields (Depends: libc6 with the measured glibc floor);
# each puts bin/vramtrace and (when the injection library is built)
# lib/libvramtrace.so with lib/libvramtrace_cupti.so there, the format, the
# documents and the man page, and the installed `vramtrace record` finds
# that library by itself (no VRAMTRACE_LIB).  The wheel, the third layout,
# is tests/cli/wheel_test.sh (cli.wheel).  The deb part is skipped, and
# says so, where cpack or dpkg-deb is missing.
set -eu
build=$1
have_lib=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/vt_install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unset VRAMTRACE_LIB CUDA_INJECTION64_PATH
passed=0

check_layout() { # name prefix
    local name=$1 prefix=$2
    [ -x "$prefix/bin/vramtrace" ] || { echo "FAIL($name): no $prefix/bin/vramtrace"; exit 1; }
    # What the README's commands need: the format for `protoc --decode`, the
    # documents, the man page.
    for f in share/vramtrace/vramtrace.proto share/doc/vramtrace/README.md share/doc/vramtrace/FORMAT.md \
             share/doc/vramtrace/REPORT.md share/doc/vramtrace/LICENSE share/man/man1/vramtrace.1; do
        [ -f "$prefix/$f" ] || { echo "FAIL($name): no $prefix/$f"; exit 1; }
    done
    if command -v protoc >/dev/null; then
        # the README's decode line with the installed schema, on a real trace
        zstd -dc "$src/tests/data/gpu-alloc-basic.zst" |
            protoc -I "$prefix/share/vramtrace" --decode=vramtrace.Trace vramtrace.proto | grep -q 'header {' ||
            { echo "FAIL($name): protoc --decode with the installed vramtrace.proto"; exit 1; }
    fi
    "$prefix/bin/vramtrace" report "$src/tests/data/gpu-alloc-basic.zst" | grep -q '^verdict: ' ||
        { echo "FAIL($name): report"; exit 1; }
    if [ "$have_lib" = 1 ]; then
        for l in libvramtrace.so libvramtrace_cupti.so; do
            [ -f "$prefix/lib/$l" ] || { echo "FAIL($name): no $prefix/lib/$l"; exit 1; }
        done
        local got want
        got=$(cd "$prefix" && "$prefix/bin/vramtrace" record -q -o "$prefix/out" -- printenv CUDA_INJECTION64_PATH)
        want=$(realpath "$prefix/lib/libvramtrace.so")
        [ "$got" = "$want" ] || { echo "FAIL($name): CUDA_INJECTION64_PATH='$got', want '$want'"; exit 1; }
        echo "install($name): bin/vramtrace finds lib/libvramtrace.so"
    else
        # Without the library the installed command says so and exits 1.
        local rc
        set +e
        "$prefix/bin/vramtrace" record -- true 2>"$prefix/err"
        rc=$?
        set -e
        [ $rc -eq 1 ] && grep -q "libvramtrace.so not found" "$prefix/err" ||
            { echo "FAIL($name): rc=$rc"; cat "$prefix/err"; exit 1; }
        echo "install($name): bin/vramtrace installed, no library built"
    fi
    passed=$((passed + 1))
}

# Two levels down, so that no lookup path of the binary leaves $tmp.
cmake --install "$build" --prefix "$tmp/a/prefix" >/dev/null
check_layout prefix "$tmp/a/prefix"

if command -v cpack >/dev/null && command -v dpkg-deb >/dev/null; then
    (cd "$build" && cpack -G DEB -B "$tmp/cpack" >"$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log"; echo "FAIL(deb): cpack"; exit 1; }
    deb=$(ls "$tmp"/cpack/vramtrace_*_amd64.deb)
    depends=$(dpkg-deb -f "$deb" Depends)
    # the measured floor; a build the audit refuses (the sanitizers' runtimes
    # are NEEDED) gets libc6 without one (cmake/cpack_project.cmake)
    if floor=$(python3 "$src/scripts/wheel_audit.py" --floor "$build/vramtrace" 2>/dev/null); then
        want="libc6 (>= $floor)"
    else
        want=libc6
    fi
    [ "$depends" = "$want" ] || { echo "FAIL(deb): Depends '$depends', want '$want'"; exit 1; }
    [ "$(dpkg-deb -f "$deb" Package)" = vramtrace ] || { echo "FAIL(deb): Package"; exit 1; }
    mkdir -p "$tmp/b"
    dpkg-deb -x "$deb" "$tmp/b/root"
    check_layout deb "$tmp/b/root/usr"
else
    echo "install(deb): skipped, no cpack or dpkg-deb here"
fi
echo "install: $passed passed, 0 failed"
