#!/usr/bin/env bash
# Build the libFuzzer targets with clang (ASan+UBSan over vt_core and
# vt_analyze, not only the harness) and run each on the corpus for a fixed
# time (a target's own seeds, tests/fuzz/corpus-NAME/, beside the shared
# corpus).  A finding fails the run and is left as crash-* in build-fuzz/out/;
# add it to tests/fuzz/regress/ once fixed (replayed by every ctest run).
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [JOBS]     (default 30 s, 1 job)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
jobs=${2:-1}
if ! command -v clang >/dev/null; then
    echo "fuzz: clang not found (scripts/install-deps.sh installs it)" >&2
    exit 1
fi
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVT_FUZZ=ON \
    -DVT_BUILD_INJECT=OFF >/dev/null
. tests/fuzz/flags.sh
# shellcheck disable=SC2046 # the names are words
cmake --build build-fuzz -j"$(nproc)" --target $(printf 'fuzz_%s ' $FUZZ_TARGETS) >build-fuzz/build.log 2>&1 ||
    { tail -40 build-fuzz/build.log; exit 1; }
mkdir -p build-fuzz/out
status=0
for t in $FUZZ_TARGETS; do
    work=build-fuzz/corpus-$t   # new inputs land here, the committed corpus stays as it is
    mkdir -p "$work"
    echo "=== fuzz_$t: ${secs}s x $jobs"
    # shellcheck disable=SC2046 # the flags are words
    if ! build-fuzz/tests/fuzz_$t -max_total_time="$secs" $(fuzz_flags $t) -artifact_prefix=build-fuzz/out/ \
            $( [ "$jobs" -gt 1 ] && echo "-jobs=$jobs -workers=$jobs" ) \
            "$work" $( [ -d tests/fuzz/corpus-$t ] && echo tests/fuzz/corpus-$t ) tests/fuzz/corpus tests/fuzz/regress \
            >build-fuzz/out/fuzz_$t.log 2>&1; then
        status=1
    fi
    grep -h -E "stat::number_of_executed_units|stat::average_exec_per_sec|SUMMARY|ERROR:" \
        build-fuzz/out/fuzz_$t.log fuzz-*.log 2>/dev/null | sed "s/^/fuzz_$t: /" || true
    rm -f fuzz-*.log
done
if ls build-fuzz/out/crash-* build-fuzz/out/leak-* build-fuzz/out/timeout-* >/dev/null 2>&1; then
    echo "fuzz: findings in build-fuzz/out/"; status=1
fi
[ $status = 0 ] && echo "=== fuzz: no findings" || echo "=== fuzz: FINDINGS"
exit $status
