#!/usr/bin/env bash
# tests/analyze/gpu-analyze.sh - run ON the GPU machine (device tool) from the
# repository root with the binaries of CARRY (default build-analyze/gpu-carry:
# vramtrace, libvramtrace.so, analyze_bench, and libdw/libelf if the machine
# lacks them).  Records tests/analyze/gpu/leaky_train.py in PyTorch's three
# allocator modes with `vramtrace record`, reports each trace (text + JSON),
# checks the growth verdicts, then runs the analyzer benchmark on a generated
# 100 M-event trace.  Everything lands in $OUT.
set -u
cd "$(dirname "$0")/../.."
CARRY=${CARRY:-build-analyze/gpu-carry}
OUT=${OUT:-/tmp/vt-analyze-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VRAMTRACE_LIB=$PWD/$CARRY/libvramtrace.so
VT=$PWD/$CARRY/vramtrace
W=$(mktemp -d)
summary=$OUT/summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
check() { # NAME FILE PYEXPR: assert on the JSON report
    python3 - "$2" "$3" <<'PY' && say "ok   $1" || say "FAIL $1"
import json, sys
d = json.load(open(sys.argv[1]))
p = d["processes"][0]
grow = [s["site"]["user_frame"]["function"] if s["site"]["user_frame"] else "?" for s in p["growth"]["sites"]]
ok = eval(sys.argv[2])
if not ok:
    print("growth:", grow, "steps:", p["growth"]["steps"], "allocator:", p["allocator"]["mode"], file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}
for mode in default expandable tensors; do
    d=$W/$mode
    mkdir -p "$d"
    args=()
    env=()
    case $mode in
    expandable) env=(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) ;;
    tensors) args=(--tensors) ;;
    esac
    nv=nvtx
    [ $mode = expandable ] && nv=""
    ( cd "$d" && env "${env[@]}" "$VT" record "${args[@]}" -- \
        python3 "$OLDPWD/tests/analyze/gpu/leaky_train.py" 60 $nv ) >"$OUT/record_$mode.log" 2>&1
    say "record $mode: rc=$?"
    t=$(find "$d" -name '*.zst' | head -1)
    [ -n "$t" ] || { say "FAIL $mode: no trace"; continue; }
    start=$(date +%s.%N)
    "$VT" report "$t" >"$OUT/report_$mode.txt" 2>"$OUT/report_$mode.err"
    say "report $mode: rc=$? in $(echo "$(date +%s.%N) - $start" | bc) s, trace $(stat -c %s "$t") bytes"
    "$VT" report --json "$t" >"$OUT/report_$mode.json" 2>/dev/null
    if [ "$(stat -c %s "$t")" -lt 3000000 ]; then cp "$t" "$OUT/gpu-leaky-$mode.zst"; fi
    case $mode in
    tensors)
        check "tensors: keep_history flagged" "$OUT/report_$mode.json" '"keep_history" in grow'
        check "tensors: cache and temporary not flagged" "$OUT/report_$mode.json" \
            '"cached_features" not in grow and "big_temporary" not in grow'
        check "tensors: tensor-level allocator" "$OUT/report_$mode.json" 'p["allocator"]["tensor_level"]'
        check "tensors: steps from NVTX" "$OUT/report_$mode.json" 'p["growth"]["steps"] and p["growth"]["steps"]["source"] == "nvtx"' ;;
    default)
        check "default: caching allocator detected" "$OUT/report_$mode.json" 'p["allocator"]["mode"] == "pytorch_caching"' ;;
    expandable)
        check "expandable: expandable segments detected" "$OUT/report_$mode.json" 'p["allocator"]["mode"] == "pytorch_expandable"'
        check "expandable: steps detected from kernels" "$OUT/report_$mode.json" 'p["growth"]["steps"] and p["growth"]["steps"]["source"] == "kernels"' ;;
    esac
done
"$VT" diff "$(find "$W/default" -name '*.zst' | head -1)" "$(find "$W/tensors" -name '*.zst' | head -1)" >"$OUT/diff_default_tensors.txt" 2>&1
say "diff: rc=$?"
# benchmark: 100 M events generated here, then replayed on one thread
if [ "${VT_BENCH:-1}" = 1 ]; then
    nproc | sed 's/^/cores: /' >"$OUT/bench.txt"
    lscpu | grep "Model name" >>"$OUT/bench.txt"
    "$PWD/$CARRY/analyze_bench" --events 100000000 --trace /tmp/vt_analyze_bench.zst --regen >>"$OUT/bench.txt" 2>&1
    "$PWD/$CARRY/analyze_bench" --trace /tmp/vt_analyze_bench.zst >>"$OUT/bench.txt" 2>&1
    tr '\r' '\n' <"$OUT/bench.txt" | grep -v generating | tee -a "$summary"
fi
rm -rf "$W"
cat "$summary"
