#!/usr/bin/env bash
# scripts/gpu-test.sh - GPU checks of libvramtrace.so, run ON the GPU machine
# (the device tool), from the repository root:
#   BUILD=build-inject bash scripts/gpu-test.sh
# Builds the CUDA test programs of tests/gpu with nvcc, runs each under
# CUDA_INJECTION64_PATH, checks every trace with vt_gpucheck against the
# "VT_EXPECT" lines the program printed (addresses, sizes, frees, failed
# allocations, kernels, stacks in named functions), runs the PyTorch
# training loop in each allocator mode, then every tests/gpu/check_*.sh
# with VRAMTRACE_LIB, VRAMTRACE_CLI and OUT.  Logs and small traces go
# under $OUT (logs.tar.gz, traces.tar.gz, summary.txt); a table is printed last.
set -u
cd "$(dirname "$0")/.."
root=$(pwd)
BUILD=${BUILD:-build}
OUT=${OUT:-/tmp/vt-gpu-out}
# The analyzer links libdw/libelf, which the GPU machine may lack:
# `scripts/gpu-all.sh --prepare` carries them in $BUILD/extra-lib.
if ! ldconfig -p | grep -q 'libdw.so.1 ' && [ -d "$root/$BUILD/extra-lib" ]; then
    export LD_LIBRARY_PATH=$root/$BUILD/extra-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
export VRAMTRACE_LIB=${VRAMTRACE_LIB:-$root/$BUILD/libvramtrace.so}
export VRAMTRACE_CLI=${VRAMTRACE_CLI:-$root/$BUILD/vramtrace}
[ -x "$VRAMTRACE_CLI" ] || [ ! -x "$root/$BUILD/src/cli/vramtrace" ] || VRAMTRACE_CLI=$root/$BUILD/src/cli/vramtrace
CHECK=${VT_GPUCHECK:-$(find "$root/$BUILD" -name vt_gpucheck -type f | head -1)}
ONLY=${VT_GPU_ONLY:-}   # optional regex of test names to run
SKIP=${VT_GPU_SKIP:-}   # optional regex of test names not to run
W=$OUT/work
rm -rf "$W"
mkdir -p "$W/bin" "$W/traces" "$W/logs"
results=()
record() { results+=("$(printf '%-28s %-5s %s' "$1" "$2" "$3")"); echo "== $1: $2 $3"; }
want() { { [ -z "$ONLY" ] || [[ $1 =~ $ONLY ]]; } && { [ -z "$SKIP" ] || ! [[ $1 =~ $SKIP ]]; }; }

if [ "${1:-}" = "--build-only" ]; then
    # compile the CUDA test programs here (no GPU needed) into $BUILD/gpu-bin
    mkdir -p "$root/$BUILD/gpu-bin"
    for p in alloc_basic alloc_async alloc_vmm oom threads forkexec crash subscriber_conflict launches seeds_native; do
        nvcc -O1 -g -arch=sm_90 -I"$root/tests/gpu" -o "$root/$BUILD/gpu-bin/$p" "$root/tests/gpu/$p.cu" -lcuda -lcupti -ldl -lpthread -Xlinker -rpath,/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/extras/CUPTI/lib64 || exit 1
    done
    nvcc -O2 -arch=sm_90 -o "$root/$BUILD/gpu-bin/gpu_micro" "$root/bench/gpu_micro.cu" || exit 1 # bench/gpu_bench.py
    exit 0
fi
ulimit -c 0
echo "== machine"
nvidia-smi -L 2>&1 | head -4
nvcc --version 2>&1 | tail -1
ls -la "$VRAMTRACE_LIB" "$CHECK" 2>&1
[ -f "$VRAMTRACE_LIB" ] || { echo "no $VRAMTRACE_LIB"; exit 1; }

# ---- build the CUDA programs
progs="alloc_basic alloc_async alloc_vmm oom threads forkexec crash subscriber_conflict launches"
for p in $progs; do
    # programs built ahead (scripts/gpu-test.sh --build-only here) travel in $BUILD/gpu-bin
    if [ -x "$root/$BUILD/gpu-bin/$p" ] && [ "$root/$BUILD/gpu-bin/$p" -nt "$root/tests/gpu/$p.cu" ]; then
        cp "$root/$BUILD/gpu-bin/$p" "$W/bin/$p"
        continue
    fi
    nvcc -O1 -g -arch=sm_90 -I"$root/tests/gpu" -I"$root/tests/gpu" -o "$W/bin/$p" "$root/tests/gpu/$p.cu" \
        -lcuda -lcupti -ldl -lpthread -Xlinker -rpath,/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda/extras/CUPTI/lib64 >"$W/logs/build_$p.log" 2>&1 || { record "build $p" FAIL "see logs/build_$p.log"; }
done

# run NAME EXPECTED_RC PROG ARGS...: run under the tracer, check the one trace it wrote
run_one() {
    local name=$1 erc=$2
    shift 2
    local tdir=$W/traces/$name
    mkdir -p "$tdir"
    local t0=$(date +%s.%N)
    CUDA_INJECTION64_PATH=$VRAMTRACE_LIB VRAMTRACE_OUTPUT="$tdir/%n.%p.zst" VRAMTRACE_FLUSH_MS=100 \
        timeout 300 "$@" >"$W/logs/$name.out" 2>"$W/logs/$name.err"
    local rc=$?
    local t1=$(date +%s.%N)
    local secs=$(python3 -c "print(f'{$t1 - $t0:.1f}')" 2>/dev/null || echo "?")
    if [ "$erc" != any ] && [ $rc -ne "$erc" ]; then
        record "$name" FAIL "exit $rc (wanted $erc) $(tail -2 "$W/logs/$name.err" | tr '\n' ' ')"
        return
    fi
    grep -q "vramtrace: recording to" "$W/logs/$name.err" || echo "   (no 'recording to' line on stderr)"
    local files=("$tdir"/*.zst)
    if [ ! -f "${files[0]}" ]; then
        record "$name" FAIL "no trace written"
        return
    fi
    local tf=${files[0]}
    if [ -n "${PICK_PID:-}" ]; then tf=$(ls "$tdir"/*."$PICK_PID".zst 2>/dev/null | head -1); fi
    if [ -n "${NOSTACK_EXPECT:-}" ]; then
        sed -i -E 's/^(VT_EXPECT alloc \S+ \S+ \S+) \S+$/\1 -/' "$W/logs/$name.out"
        echo "VT_EXPECT count stack == 0" >>"$W/logs/$name.out"
    fi
    "$CHECK" "$tf" "$W/logs/$name.out" >"$W/logs/$name.check" 2>&1
    local crc=$?
    # the CLI reads it too: dump --json exits 0 for a complete trace (1 for
    # the SIGKILL one, which has no End record)
    if [ -x "$VRAMTRACE_CLI" ]; then
        "$VRAMTRACE_CLI" dump --json "$tf" >"$W/logs/$name.json" 2>"$W/logs/$name.dump.err"
        local drc=$? want_drc=0
        [ "$erc" = 137 ] && want_drc=1
        if [ $drc -ne $want_drc ]; then
            echo "FAIL vramtrace dump --json exit $drc: $(head -c 200 "$W/logs/$name.dump.err")" >>"$W/logs/$name.check"
            crc=1
        fi
        gzip -f "$W/logs/$name.json"
    fi
    local summ=$(grep -E '^(PASS|FAIL) [0-9]' "$W/logs/$name.check" | tail -1)
    local sz=$(stat -c %s "$tf")
    if [ $crc -eq 0 ]; then record "$name" ok "$summ, ${sz} B, ${secs}s"; else record "$name" FAIL "$summ (logs/$name.check)"; fi
    grep -E '^(FAIL|summary)' "$W/logs/$name.check" | head -12
}

want alloc_basic && run_one alloc_basic 0 "$W/bin/alloc_basic"
want alloc_async && run_one alloc_async 0 "$W/bin/alloc_async"
want alloc_vmm && run_one alloc_vmm 0 "$W/bin/alloc_vmm"
want oom && run_one oom 0 "$W/bin/oom"
want threads && run_one threads 0 "$W/bin/threads"
want crash_segv && run_one crash_segv 139 "$W/bin/crash" segv
want crash_kill && run_one crash_kill 137 "$W/bin/crash" kill
# every way to launch a kernel: <<<>>>, Ex, cooperative, a captured graph
want launches && run_one launches 0 "$W/bin/launches"

# natives off / kernels off still produce valid traces
if want nostacks; then
    # expectations without call sites: the same program, stacks not checked
    NOSTACK_EXPECT=1 VRAMTRACE_NATIVE_STACKS=0 VRAMTRACE_KERNELS=0 run_one nostacks 0 "$W/bin/alloc_async"
fi

# staying out of the way: another CUPTI subscriber first; an unwritable output path
if want conflict; then
    CUDA_INJECTION64_PATH=$VRAMTRACE_LIB VRAMTRACE_OUTPUT="$W/traces/conflict.%p.zst" timeout 60 \
        "$W/bin/subscriber_conflict" >"$W/logs/conflict.out" 2>"$W/logs/conflict.err"
    rc=$?
    if [ $rc -eq 0 ] && grep -q "program ran normally" "$W/logs/conflict.out" &&
        [ "$(grep -c 'cuptiSubscribe failed' "$W/logs/conflict.err")" -eq 1 ]; then
        record conflict ok "one message: $(grep -o 'cuptiSubscribe failed[^;]*' "$W/logs/conflict.err")"
    else
        record conflict FAIL "rc=$rc $(head -c 300 "$W/logs/conflict.err")"
    fi
    CUDA_INJECTION64_PATH=$VRAMTRACE_LIB VRAMTRACE_OUTPUT="/nonexistent-dir/x.%p.zst" timeout 60 \
        "$W/bin/alloc_basic" >"$W/logs/badpath.out" 2>"$W/logs/badpath.err"
    rc=$?
    nl=$(grep -c vramtrace "$W/logs/badpath.err")
    if [ $rc -eq 0 ] && [ "$nl" -eq 1 ]; then
        record badpath ok "program ran, one message: $(grep vramtrace "$W/logs/badpath.err" | head -c 120)"
    else
        record badpath FAIL "rc=$rc lines=$nl $(head -c 300 "$W/logs/badpath.err")"
    fi
fi

# fork + exec: parent trace checked; the exec'd child wrote its own
if want forkexec; then
    tdir=$W/traces/forkexec
    mkdir -p "$tdir"
    CUDA_INJECTION64_PATH=$VRAMTRACE_LIB VRAMTRACE_OUTPUT="$tdir/%n.%p.zst" timeout 120 "$W/bin/forkexec" \
        >"$W/logs/forkexec.out" 2>"$W/logs/forkexec.err" &
    wait $!
    rc=$?
    ppid=$(sed -n 's/^PID //p' "$W/logs/forkexec.out")
    cpid=$(sed -n 's/^CHILD PID //p' "$W/logs/forkexec.out")
    n=$(ls "$tdir"/*.zst 2>/dev/null | wc -l)
    "$CHECK" "$tdir/forkexec.$ppid.zst" "$W/logs/forkexec.out" >"$W/logs/forkexec.check" 2>&1
    prc=$?
    child=$tdir/forkexec.$cpid.zst
    grep '^CHILD ' "$W/logs/forkexec.out" | sed 's/^CHILD //' >"$W/logs/forkexec_child.out"
    crc=1
    [ -n "$child" ] && { "$CHECK" "$child" "$W/logs/forkexec_child.out" >"$W/logs/forkexec_child.check" 2>&1; crc=$?; }
    if [ $rc -eq 0 ] && [ "$n" -eq 2 ] && [ $prc -eq 0 ] && [ $crc -eq 0 ]; then
        record forkexec ok "2 traces (parent + exec'd child), fork child wrote none"
    else
        record forkexec FAIL "rc=$rc traces=$n parent_check=$prc child_check=$crc"
        cat "$W/logs/forkexec.check" "$W/logs/forkexec_child.check" 2>/dev/null | grep -E "FAIL|summary" | head
    fi
fi

# PyTorch training loop, each allocator mode
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    for mode in default expandable async; do
        want "torch_$mode" || continue
        case $mode in
        default) conf= ;;
        expandable) conf=expandable_segments:True ;;
        async) conf=backend:cudaMallocAsync ;;
        esac
        PYTORCH_CUDA_ALLOC_CONF=$conf run_one "torch_$mode" 0 python3 "$root/tests/gpu/torch_train.py"
    done
    # those traces as PyTorch memory snapshots, read by PyTorch's own
    # memory_viz (trace_plot, segment_plot, stats: tests/gpu/check_memviz_torch.py)
    snaps=()
    for mode in default expandable async; do
        t=$(ls "$W/traces/torch_$mode"/*.zst 2>/dev/null | head -1)
        [ -n "$t" ] || continue
        "$VRAMTRACE_CLI" export --no-progress --no-symbols --format memory-viz -o "$W/traces/torch_$mode.pickle" "$t" \
            2>>"$W/logs/memviz.err" && snaps+=("$W/traces/torch_$mode.pickle")
    done
    if want memviz && [ ${#snaps[@]} -gt 0 ]; then
        if python3 "$root/tests/gpu/check_memviz_torch.py" "${snaps[@]}" >"$W/logs/memviz.out" 2>&1; then
            record memviz ok "${#snaps[@]} snapshots read by torch.cuda._memory_viz trace_plot, segment_plot, stats"
        else
            record memviz FAIL "see logs/memviz.out"
        fi
    fi
    # the Parquet export read by pyarrow.dataset and pandas (issue 38:
    # tests/gpu/check_parquet_pyarrow.py), this run's traces and the seeds
    if want parquet; then
        if python3 "$root/tests/gpu/check_parquet_pyarrow.py" "$VRAMTRACE_CLI" "$W/parquet" "$W/traces" \
            "$root/tests/data/seeds" >"$W/logs/parquet.out" 2>&1; then
            record parquet ok "$(tail -1 "$W/logs/parquet.out")"
        else
            record parquet FAIL "see logs/parquet.out"
        fi
    fi
else
    record torch SKIP "no torch with CUDA"
fi

# every check_*.sh of tests/gpu (other parts' checks too)
for c in "$root"/tests/gpu/check_*.sh; do
    [ -f "$c" ] || continue
    cn=$(basename "$c" .sh)
    want "$cn" || continue
    line=$(OUT=$W/checks timeout 600 bash "$c" 2>"$W/logs/$cn.err" | tail -1)
    rc=$?
    case "$line" in
    *SKIP*) record "$cn" SKIP "${line#*: }" ;;
    *FAIL*) record "$cn" FAIL "${line#*: }" ;;
    *) if [ $rc -eq 0 ]; then record "$cn" ok "${line#*: }"; else record "$cn" FAIL "rc $rc $line"; fi ;;
    esac
done

# bring back: logs and the small traces, each with its symbols (TRACE.sym,
# resolved here where the test programs and libraries are), so that a
# fixture's report names functions on any machine
(cd "$W" && find traces -name '*.zst' -size -4M | while read -r t; do
    [ -f "$t.sym" ] || "$VRAMTRACE_CLI" symbolize "$t" >/dev/null 2>>"$W/logs/symbolize.err"; done)
(cd "$W" && tar czf "$OUT/logs.tar.gz" logs checks 2>/dev/null)
(cd "$W" && find traces \( -name '*.zst' -size -4M -o -name '*.zst.sym' \) | tar czf "$OUT/traces.tar.gz" -T - 2>/dev/null)
{
    echo "== gpu-test summary ($(date -u +%FT%TZ))"
    printf '%-28s %-5s %s\n' test result detail
    for r in "${results[@]}"; do echo "$r"; done
} | tee "$OUT/summary.txt"
! printf '%s\n' "${results[@]}" | grep -q ' FAIL '
