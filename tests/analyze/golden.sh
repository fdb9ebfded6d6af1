#!/bin/bash
# golden.sh VRAMTRACE TRACEDIR GOLDEN EXPECTED_RC ARGS...
# Runs `vramtrace ARGS` inside TRACEDIR (so paths in the output are the
# relative names given) and compares stdout with the GOLDEN file and the
# exit status with EXPECTED_RC.  VT_UPDATE_GOLDEN=1 rewrites GOLDEN instead.
set -u
vt=$1 dir=$2 golden=$3 want_rc=$4
shift 4
out=$(mktemp)
trap 'rm -f "$out"' EXIT
(cd "$dir" && "$vt" "$@") >"$out" 2>/dev/null
rc=$?
if [ "$rc" != "$want_rc" ]; then
    echo "FAIL: vramtrace $* exited $rc, expected $want_rc"
    exit 1
fi
if [ "${VT_UPDATE_GOLDEN:-0}" = 1 ]; then
    cp "$out" "$golden"
    echo "updated $golden"
    exit 0
fi
if [ ! -f "$golden" ]; then
    echo "FAIL: no golden file $golden (scripts/update-golden.sh writes it)"
    exit 1
fi
if ! diff -u "$golden" "$out"; then
    echo "FAIL: output of vramtrace $* differs from $golden (VT_UPDATE_GOLDEN=1 to refresh)"
    exit 1
fi
echo "ok: vramtrace $*"
