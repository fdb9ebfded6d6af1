#!/usr/bin/env bash
# check_pylines.sh - GPU check of Python call stacks: PyTorch with
# PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (one cudaMallocAsync per
# tensor) runs tests/gpu/torch_pylines.py under the injection library with
# VRAMTRACE_PYTHON_STACKS=1.  Each case allocated one tensor on a known line
# and wrote down the Python stack there (address, size, frames); the trace's
# allocation at that address must carry exactly those Python frames (file,
# function, line, in order; for nn.Linear, those frames as the outer end of
# the stack), placed after the native frames that led into the interpreter.
# Run by scripts/gpu-test.sh with VRAMTRACE_LIB (libvramtrace.so),
# VRAMTRACE_CLI (the vramtrace binary) and OUT (a directory for logs).
# Prints one summary line last; exit 0 = pass.
set -u
name=check_pylines
here=$(cd "$(dirname "$0")" && pwd)
cli=${VRAMTRACE_CLI:?VRAMTRACE_CLI must name the vramtrace binary}
lib=${VRAMTRACE_LIB:?VRAMTRACE_LIB must name libvramtrace.so}
work=${OUT:-/tmp}/pylines
rm -rf "$work"
mkdir -p "$work"
log=$work/log.txt
: >"$log"

fail() { echo "$name: FAIL: $* (log: $log)"; exit 1; }

if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>>"$log"; then
    echo "$name: SKIP: python3 with torch and a CUDA device is not available"
    exit 0
fi

CUDA_INJECTION64_PATH=$lib VRAMTRACE_PYTHON_STACKS=1 VRAMTRACE_OUTPUT="$work/pylines.%p.zst" \
    PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync \
    timeout 300 python3 "$here/torch_pylines.py" "$work/expect.json" >>"$log" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "torch_pylines.py exited $rc: $(tail -3 "$log" | tr '\n' ' ')"
pid=$(sed -n 's/^torch_pylines pid \([0-9]*\)$/\1/p' "$log" | tail -1)
[ -n "$pid" ] || fail "torch_pylines.py did not print its pid"
trace=$work/pylines.$pid.zst
[ -f "$trace" ] || fail "no trace $trace (found: $(ls "$work" | tr '\n' ' '))"
grep -q "python stacks off" "$log" && fail "$(grep -m1 "python stacks off" "$log")"
"$cli" dump --json --stacks "$trace" >"$work/dump.jsonl" 2>>"$log"
rc=$?
[ $rc -eq 0 ] || fail "vramtrace dump exited $rc (incomplete trace?)"

python3 "$here/pylines_check.py" "$work/expect.json" "$work/dump.jsonl" >"$work/result.txt" 2>>"$log"
rc=$?
cat "$work/result.txt" >>"$log"
summary=$(sed -n 's/^SUMMARY //p' "$work/result.txt" | tail -1)
[ -n "$summary" ] || fail "the checker crashed: $(tail -2 "$log" | tr '\n' ' ')"
if [ $rc -ne 0 ]; then
    fail "${summary#FAIL }"
fi
echo "$name: PASS: ${summary#PASS }"
