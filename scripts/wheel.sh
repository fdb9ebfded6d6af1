#!/usr/bin/env bash
# scripts/wheel.sh [BUILD_DIR [OUT_DIR]] - the wheel: dist/vramtrace-VERSION-
# py3-none-manylinux_2_XX_x86_64.whl (docs/ARCHITECTURE.md, "The wheel").
#
# Without BUILD_DIR, configures and builds build-wheel/ (the binary and the
# injection library only); with it, packs what that build holds (the test
# cli.wheel packs the build under test).  The binaries are copied with
# their debug sections stripped, checked by scripts/wheel_audit.py (every
# NEEDED on its allowlist; the highest GLIBC_ version is the floor and
# gives the platform tag), then zipped by scripts/wheel.py with the Python
# package (src/python/vramtrace), the helpers `record` uses (src/python),
# the format (proto/vramtrace.proto) and the notices of what is linked in.
# Without CUPTI at build time there is no libvramtrace.so: the wheel then
# analyzes only, and this says so.  Prints the wheel's path last.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-}
out=${2:-$root/dist}
if [ -z "$build" ]; then
    build=$root/build-wheel
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVT_BUILD_TESTS=OFF >/dev/null
    cmake --build "$build" -j"$(nproc)" --target vramtrace >/dev/null
    if cmake --build "$build" --target help | grep vramtrace_loader >/dev/null; then  # not -q: pipefail
        cmake --build "$build" -j"$(nproc)" --target vramtrace_loader >/dev/null
    fi
fi
build=$(cd "$build" && pwd)
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
[ -n "$version" ] || { echo "wheel.sh: no project version in $build/CMakeCache.txt" >&2; exit 1; }
[ -x "$build/vramtrace" ] || { echo "wheel.sh: no $build/vramtrace; build it first" >&2; exit 1; }

stage=$(mktemp -d /tmp/vt_wheel.XXXXXX)
trap 'rm -rf "$stage"' EXIT
pkg=$stage/vramtrace
mkdir -p "$pkg/bin" "$pkg/lib" "$pkg/python" "$pkg/share" "$stage/licenses"
strip_to() { objcopy --strip-debug "$1" "$2" && chmod 755 "$2"; }
strip_to "$build/vramtrace" "$pkg/bin/vramtrace"
elfs=("$pkg/bin/vramtrace")
if [ -f "$build/libvramtrace.so" ] && [ -f "$build/libvramtrace_cupti.so" ]; then
    strip_to "$build/libvramtrace.so" "$pkg/lib/libvramtrace.so"
    strip_to "$build/libvramtrace_cupti.so" "$pkg/lib/libvramtrace_cupti.so"
    elfs+=("$pkg/lib/libvramtrace.so" "$pkg/lib/libvramtrace_cupti.so")
else
    rmdir "$pkg/lib"
    echo "wheel.sh: warning: no libvramtrace.so in $build (CUPTI not found at build time): this wheel" \
         "analyzes traces but cannot record" >&2
fi
cp "$root"/src/python/vramtrace/*.py "$pkg/"
printf '__version__ = "%s"\n' "$version" >"$pkg/_version.py"
cp "$root"/src/python/sitecustomize.py "$root"/src/python/vramtrace_holders.py "$root"/src/python/vramtrace_cupy.py "$pkg/python/"
cp "$root/proto/vramtrace.proto" "$pkg/share/"

# What the audit measures is what the tag says.
python3 "$root/scripts/wheel_audit.py" "${elfs[@]}" | sed "s|$stage/||" >&2
tag=$(python3 "$root/scripts/wheel_audit.py" --tag "${elfs[@]}")

# Notices: the project's licence, and the Debian copyright file of each
# static archive linked in (elfutils: LGPL-3+, with the licence texts).
cp "$root/LICENSE" "$stage/licenses/LICENSE"
if command -v dpkg >/dev/null; then
    echo "Linked statically into bin/vramtrace (and, protobuf-c and zstd, into lib/): the archive, its Debian package." \
         "Their sources: https://sources.debian.org/ (elfutils under the LGPL-3+, whose terms this wheel meets with" \
         "vramtrace's own source published)." >"$stage/licenses/STATIC-LINKED.txt"
    archives=$(sed -n -e 's/^\(PROTOBUFC_STATIC\|ZSTD_STATIC\|VT_LIB[a-z0-9]*_A\):FILEPATH=\(\/.*\)$/\2/p' "$build/CMakeCache.txt")
    archives+=" $(g++ -print-file-name=libstdc++.a 2>/dev/null || true)"
    for a in $archives; do
        [ -f "$a" ] || continue
        p=$(dpkg -S "$(realpath "$a")" 2>/dev/null | head -1 | cut -d: -f1) || continue
        [ -n "$p" ] && [ -f "/usr/share/doc/$p/copyright" ] || continue
        cp "/usr/share/doc/$p/copyright" "$stage/licenses/$p.copyright"
        echo "$(basename "$a"): Debian $p $(dpkg-query -W -f='${Version}' "$p" 2>/dev/null)" >>"$stage/licenses/STATIC-LINKED.txt"
    done
    for l in LGPL-3 GPL-3; do
        [ -f "/usr/share/common-licenses/$l" ] && cp "/usr/share/common-licenses/$l" "$stage/licenses/$l"
    done
fi
python3 "$root/scripts/wheel.py" "$stage" "$out" "$version" "$tag" "$root/README.md"
