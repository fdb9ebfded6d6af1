#!/bin/sh
# check_exports.sh LOADER LIB - libvramtrace.so (the loader, vt_loader.c)
# and libvramtrace_cupti.so (the library proper) each export
# InitializeInjection, the memory hooks' vt_hook_attach and vt_hook_event
# (vt_inject_hook.c) and the pytest plugin's vt_test_begin and vt_test_end
# (vt_inject_test.c), nothing else; neither needs protobuf-c nor zstd at run
# time (linked in statically: the GPU machine has no protobuf-c); the
# library proper links libcupti by soname, the loader neither libcupti nor
# libcuda (it finds the program's CUPTI first).
loader=$1
lib=$2
for f in "$loader" "$lib"; do
    syms=$(nm -D --defined-only "$f" | awk '{print $3}' | sort | tr '\n' ' ')
    [ "$syms" = "InitializeInjection vt_hook_attach vt_hook_event vt_test_begin vt_test_end " ] ||
        { echo "$f exports: $syms"; exit 1; }
    if readelf -d "$f" | grep NEEDED | grep -E 'protobuf|zstd'; then
        echo "$f: dynamic protobuf-c/zstd dependency"
        exit 1
    fi
done
readelf -d "$lib" | grep NEEDED | grep -q 'libcupti.so' || { echo "no libcupti soname dependency"; exit 1; }
if readelf -d "$loader" | grep NEEDED | grep -E 'libcupti|libcuda'; then
    echo "the loader needs CUPTI or the driver"
    exit 1
fi
echo "ok: exports only InitializeInjection, the hook and test entry points, static protobuf-c/zstd, a loader without CUPTI"
