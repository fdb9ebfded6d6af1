#!/bin/bash
# golden.sh VRAMTRACE DATADIR GOLDEN EXPECTED_RC ARGS...
# Runs `vramtrace ARGS` inside DATADIR (file names in the output stay the
# relative ones given), compares stdout with GOLDEN and the exit status with
# EXPECTED_RC.  VT_UPDATE_GOLDEN=1 rewrites GOLDEN instead
# (scripts/update-golden.sh).
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
if ! diff -u "$golden" "$out"; then
    echo "FAIL: output of vramtrace $* differs from $golden (scripts/update-golden.sh to refresh)"
    exit 1
fi
echo "ok: vramtrace $*"
