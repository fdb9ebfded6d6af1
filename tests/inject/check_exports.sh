#!/bin/sh
# check_exports.sh LIB - libvramtrace.so exports InitializeInjection and
# the memory hooks' vt_hook_attach and vt_hook_event (vt_inject_hook.c),
# the pytest plugin's vt_test_begin and vt_test_end (vt_inject_test.c),
# nothing else, and needs neither protobuf-c nor zstd at run time (they are
# linked in statically: the GPU machine has no protobuf-c).
lib=$1
syms=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort | tr '\n' ' ')
[ "$syms" = "InitializeInjection vt_hook_attach vt_hook_event vt_test_begin vt_test_end " ] || { echo "exports: $syms"; exit 1; }
if readelf -d "$lib" | grep NEEDED | grep -E 'protobuf|zstd'; then
    echo "dynamic protobuf-c/zstd dependency"
    exit 1
fi
readelf -d "$lib" | grep NEEDED | grep -q 'libcupti.so' || { echo "no libcupti soname dependency"; exit 1; }
echo "ok: exports only InitializeInjection, the hook and test entry points, static protobuf-c/zstd"
