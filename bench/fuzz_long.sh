#!/usr/bin/env bash
# bench/fuzz_long.sh - the long fuzz run of BENCHMARKS.md: every target of
# tests/fuzz at once, WORKERS independent processes each, for SECONDS,
# from the committed corpus; prints each target's executions, rate and
# findings, and the total.  The binaries are scripts/fuzz.sh's (built here
# with clang, ASan+UBSan over vt_core and vt_analyze), or those in BIN_DIR
# (carried to a machine with more cores).  Findings land in OUT/crash-*.
#   bench/fuzz_long.sh SECONDS WORKERS [BIN_DIR] [OUT]
# VT_FUZZ_TARGETS="render ..." runs only those targets.
set -u
cd "$(dirname "$0")/.."
secs=${1:?seconds per worker}
workers=${2:?workers per target}
bin=${3:-build-fuzz/tests}
out=${4:-build-fuzz/long}
mkdir -p "$out"
. tests/fuzz/flags.sh
targets=${VT_FUZZ_TARGETS:-$FUZZ_TARGETS}
for t in $targets; do
    [ -x "$bin/fuzz_$t" ] || { echo "fuzz_long: no $bin/fuzz_$t (scripts/fuzz.sh builds them)" >&2; exit 1; }
    mkdir -p "$out/corpus-$t"
done
echo "fuzz_long: $targets, $workers workers each, ${secs}s, $(nproc) cores, $(date -u +%FT%TZ)"
pids=()
for t in $targets; do
    for w in $(seq 1 "$workers"); do
        # shellcheck disable=SC2046 # the flags are words
        "$bin/fuzz_$t" -max_total_time="$secs" $(fuzz_flags $t) -seed="$w$((RANDOM % 1000))" -artifact_prefix="$out/" \
            "$out/corpus-$t" $( [ -d tests/fuzz/corpus-$t ] && echo tests/fuzz/corpus-$t ) tests/fuzz/corpus \
            tests/fuzz/regress >"$out/fuzz_$t.$w.log" 2>&1 &
        pids+=($!)
    done
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
total=0
for t in $targets; do
    n=$(cat "$out"/fuzz_$t.*.log | awk '/stat::number_of_executed_units/ {s += $2} END {print s + 0}')
    r=$(cat "$out"/fuzz_$t.*.log | awk '/stat::average_exec_per_sec/ {s += $2; k++} END {printf "%d", k ? s / k : 0}')
    f=$(grep -l -E "ERROR: (AddressSanitizer|UndefinedBehaviorSanitizer|libFuzzer)|SUMMARY: " "$out"/fuzz_$t.*.log 2>/dev/null | wc -l)
    printf 'fuzz_long: fuzz_%-8s %12d runs  %6d runs/s per worker  %d workers with findings\n' "$t" "$n" "$r" "$f"
    total=$((total + n))
done
nf=$(ls "$out"/crash-* "$out"/leak-* "$out"/timeout-* "$out"/oom-* 2>/dev/null | wc -l)
echo "fuzz_long: total $total runs, $nf findings"
[ "$nf" = 0 ] && [ $status = 0 ]
