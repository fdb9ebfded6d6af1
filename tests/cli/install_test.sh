#!/usr/bin/env bash
# install_test.sh BUILD_DIR HAVE_LIB - `cmake --install` into a scratch
# prefix puts bin/vramtrace and (when the injection library is built)
# lib/libvramtrace.so there, and the installed `vramtrace record` finds that
# library by itself (no VRAMTRACE_LIB).
set -eu
build=$1
have_lib=$2
tmp=$(mktemp -d /tmp/vt_install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# Two levels down, so that no lookup path of the binary leaves $tmp.
prefix=$tmp/a/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
[ -x "$prefix/bin/vramtrace" ] || { echo "FAIL: no $prefix/bin/vramtrace"; exit 1; }
# What the README's commands need: the format for `protoc --decode`, the
# documents, the man page.
for f in share/vramtrace/vramtrace.proto share/doc/vramtrace/README.md share/doc/vramtrace/FORMAT.md \
         share/doc/vramtrace/REPORT.md share/doc/vramtrace/LICENSE share/man/man1/vramtrace.1; do
    [ -f "$prefix/$f" ] || { echo "FAIL: no $prefix/$f"; exit 1; }
done
if command -v protoc >/dev/null; then
    # the README's decode line with the installed schema, on a real trace
    src=$(cd "$(dirname "$0")/../.." && pwd)
    zstd -dc "$src/tests/data/gpu-alloc-basic.zst" |
        protoc -I "$prefix/share/vramtrace" --decode=vramtrace.Trace vramtrace.proto | grep -q 'header {' ||
        { echo "FAIL: protoc --decode with the installed vramtrace.proto"; exit 1; }
fi
unset VRAMTRACE_LIB CUDA_INJECTION64_PATH
if [ "$have_lib" = 1 ]; then
    [ -f "$prefix/lib/libvramtrace.so" ] || { echo "FAIL: no $prefix/lib/libvramtrace.so"; exit 1; }
    got=$(cd "$prefix" && "$prefix/bin/vramtrace" record -q -o "$prefix/out" -- printenv CUDA_INJECTION64_PATH)
    want=$(realpath "$prefix/lib/libvramtrace.so")
    [ "$got" = "$want" ] || { echo "FAIL: CUDA_INJECTION64_PATH='$got', want '$want'"; exit 1; }
    echo "install: bin/vramtrace finds lib/libvramtrace.so: 1 passed, 0 failed"
else
    # Without the library the installed command says so and exits 1.
    set +e
    "$prefix/bin/vramtrace" record -- true 2>"$prefix/err"
    rc=$?
    set -e
    [ $rc -eq 1 ] && grep -q "libvramtrace.so not found" "$prefix/err" ||
        { echo "FAIL: rc=$rc"; cat "$prefix/err"; exit 1; }
    echo "install: bin/vramtrace installed, no library built: 1 passed, 0 failed"
fi
