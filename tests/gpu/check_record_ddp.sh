#!/usr/bin/env bash
# check_record_ddp.sh - GPU check of `vramtrace record` on a two-process
# torchrun run (DistributedDataParallel over NCCL, tests/gpu/ddp_two_ranks.py):
# two traces, named with ranks r0 and r1 (the torchrun launcher uses no CUDA
# and leaves none); NCCL's own buffers visible (call sites through libnccl in
# the report); `vramtrace report DIR` covers both ranks and merges them.
# SKIPs (exit 0) with fewer than 2 GPUs.  Run by scripts/gpu-test.sh with
# VRAMTRACE_CLI, VRAMTRACE_LIB and OUT.  Prints one summary line.
set -u
name=check_record_ddp
here=$(cd "$(dirname "$0")" && pwd)
export VRAMTRACE_LIB=${VRAMTRACE_LIB:?VRAMTRACE_LIB must name libvramtrace.so}
# The vramtrace binary: VRAMTRACE_CLI, else where a build tree has it.
cli=${VRAMTRACE_CLI:-}
if [ ! -x "$cli" ]; then
    libdir=$(dirname "$VRAMTRACE_LIB")
    for c in "$libdir/vramtrace" "$libdir/src/cli/vramtrace" "$libdir/../cli/vramtrace" \
        "$here/../../build/src/cli/vramtrace"; do
        if [ -x "$c" ]; then cli=$c; break; fi
    done
fi
work=${OUT:-/tmp}/record_ddp
rm -rf "$work"
mkdir -p "$work"
log=$work/log.txt

fail() { echo "$name: FAIL: $* (log: $log)"; exit 1; }
[ -x "$cli" ] || fail "no vramtrace binary (VRAMTRACE_CLI='${VRAMTRACE_CLI:-}')"
"$cli" --version >/dev/null 2>&1 ||
    fail "$cli does not run here: $(ldd "$cli" 2>&1 | grep 'not found' | tr -s ' \t\n' ' ')"

ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "${ngpu:-0}" -lt 2 ]; then
    echo "$name: SKIP: needs 2 GPUs, $ngpu visible (run on nvidia-h200-x2)"
    exit 0
fi
if ! python3 -c 'import torch.distributed as d, sys; sys.exit(0 if d.is_nccl_available() else 1)' 2>/dev/null; then
    echo "$name: SKIP: torch with NCCL is not available"
    exit 0
fi

# NVLink multicast off in every environment built here
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
traces=$work/traces
timeout 300 "$cli" record -o "$traces" -- \
    python3 -m torch.distributed.run --standalone --nnodes=1 --nproc_per_node=2 \
    "$here/ddp_two_ranks.py" >"$work/stdout.txt" 2>"$log"
rc=$?
cat "$work/stdout.txt" >>"$log"
[ $rc -eq 0 ] || fail "vramtrace record exited $rc"
# counted by match, not by line: two ranks' lines may still share one
[ "$(grep -oE 'rank [01] pid [0-9]+ ok' "$work/stdout.txt" | sort -u | wc -l)" -eq 2 ] || fail "both ranks did not finish"

mapfile -t files < <(cd "$traces" && ls -1 vramtrace.*.zst 2>/dev/null)
[ ${#files[@]} -eq 2 ] || fail "expected 2 traces in $traces, found ${#files[@]}: ${files[*]:-none}"
r0=$(printf '%s\n' "${files[@]}" | grep -c '\.r0\.[0-9]*\.zst$')
r1=$(printf '%s\n' "${files[@]}" | grep -c '\.r1\.[0-9]*\.zst$')
[ "$r0" -eq 1 ] && [ "$r1" -eq 1 ] || fail "traces are not named by rank r0/r1: ${files[*]}"
grep -q "2 processes traced" "$log" || fail "the summary does not say 2 processes traced"

"$cli" report "$traces" >"$work/report.txt" 2>>"$log"
rc=$?
[ $rc -eq 0 ] || fail "vramtrace report $traces exited $rc"
grep -q "rank 0" "$work/report.txt" && grep -q "rank 1" "$work/report.txt" ||
    fail "the report does not show both ranks"
grep -qi "merged" "$work/report.txt" || fail "the report has no merged view of the ranks"
# NCCL's buffers: call-site frames in libnccl (function names or the
# module), looked for in a report with more rows and frames per stack.
"$cli" report --top 100 --frames 64 "$traces" >"$work/report_full.txt" 2>>"$log" ||
    fail "vramtrace report --top 100 --frames 64 failed"
nccl=$(grep -i 'nccl' "$work/report_full.txt" | grep -v -E '^(trace|command|== )' | wc -l)
[ "$nccl" -gt 0 ] || fail "no call site through NCCL in the report"

# Keep what comes back small (scripts/gpu-test.sh tars $OUT): traces of
# 4 MiB and more are dropped once checked; the report stays.
find "$traces" -name '*.zst' -size +4M -delete 2>/dev/null
echo "$name: PASS: 2 traces (${files[*]}), both ranks in the report and merged, $nccl report lines through NCCL"
