#!/usr/bin/env bash
# tests/gpu/check_matrix.sh - the ground-truth matrix of issue 33 on the
# GPU machine: tests/gpu/matrix/run.py records tests/gpu/matrix/prog.py
# in ~230 cells (step length x leak per step x steps x release x NVTX x
# allocator, leaky and clean patterns), 8 at a time, and compares each
# verdict with torch.cuda's own counters.  About 450 s, so it runs only
# with VT_MATRIX=1 (scripts/gpu-test.sh runs every check_*.sh; without it
# this one says SKIP):
#   VT_MATRIX=1 BUILD=build bash tests/gpu/check_matrix.sh [run.py options]
# Uses VRAMTRACE_CLI / VRAMTRACE_LIB when set (as gpu-test.sh sets them),
# else $BUILD/vramtrace; VT_MATRIX_BUDGET_S (default 450) caps the time.
# Writes matrix.json, matrix.md, matrix-fixtures.tar.gz, matrix-logs.tar.gz
# into $OUT; the recordings stay in ${TMPDIR:-/tmp}/vt-matrix-work.
# Prints the summary table, then "check_matrix: ..." last.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [ "${VT_MATRIX:-0}" != 1 ]; then
    echo "check_matrix: SKIP: ~450 s; run it alone: VT_MATRIX=1 bash tests/gpu/check_matrix.sh"
    exit 0
fi
BUILD=${BUILD:-build}
case $BUILD in /*) b=$BUILD ;; *) b=$root/$BUILD ;; esac
# the analyzer links libdw/libelf (scripts/gpu-all.sh --prepare carries them)
if ! ldconfig -p | grep -q 'libdw.so.1 ' && [ -d "$b/extra-lib" ]; then
    export LD_LIBRARY_PATH=$b/extra-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
cli=${VRAMTRACE_CLI:-$b/vramtrace}
[ -x "$cli" ] || [ ! -x "$b/src/cli/vramtrace" ] || cli=$b/src/cli/vramtrace
[ -n "${VRAMTRACE_LIB:-}" ] || [ ! -f "$b/libvramtrace.so" ] || export VRAMTRACE_LIB=$b/libvramtrace.so
if [ ! -x "$cli" ]; then
    echo "check_matrix: FAIL: no vramtrace CLI at $cli (set BUILD or VRAMTRACE_CLI)"
    exit 1
fi
if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "check_matrix: SKIP: python3 with torch and a CUDA device is not available"
    exit 0
fi
export VRAMTRACE_CACHE_DIR=${VRAMTRACE_CACHE_DIR:-${TMPDIR:-/tmp}/vt-matrix-cache}
export PYTHONUNBUFFERED=1
exec python3 "$here/matrix/run.py" --vt "$cli" --out "${OUT:-/tmp/vt-matrix-out}" \
    --budget-s "${VT_MATRIX_BUDGET_S:-450}" "$@"
