#!/usr/bin/env bash
# The test command: install what is missing, build into build/, run the
# whole suite with ctest; then the same suite built with ASan+UBSan
# (build-asan/) and with TSan (build-tsan/); then the fuzz targets for a
# short, fixed time (scripts/fuzz.sh, clang).
#   scripts/test.sh            everything
#   scripts/test.sh --quick    only the normal build
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[ "${1:-}" = "--quick" ] && quick=1

scripts/install-deps.sh
jobs=$(nproc)
status=0

run_suite() { # name builddir ctest-args cmake-args...
    local name=$1 dir=$2 targs=$3; shift 3
    echo "=== $name: configure and build ($dir)"
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
    mkdir -p "$dir"
    if ! cmake --build "$dir" -j"$jobs" >"$dir/build.log" 2>&1; then
        tail -60 "$dir/build.log"; echo "=== $name: BUILD FAILED"; status=1; return
    fi
    echo "=== $name: ctest"
    # shellcheck disable=SC2086
    if ! ctest --test-dir "$dir" --output-on-failure -j"$jobs" $targs; then status=1; fi
}

run_suite "release" build "" -DVT_BENCH=ON
if [ $quick -eq 0 ]; then
    # Tests labelled nosan load code into foreign interpreters (Python) or
    # measure crash behaviour that sanitizers intercept.
    run_suite "asan+ubsan" build-asan "-LE nosan" -DVT_SANITIZE=address,undefined -DVT_BUILD_INJECT=OFF
    # The whole suite under TSan too (threaded writer, unwinder memo, the
    # analyzer); notsan: tests whose signals or resident-set caps TSan skews.
    run_suite "tsan" build-tsan "-LE nosan|notsan" -DVT_SANITIZE=thread -DVT_BUILD_INJECT=OFF
    # each libFuzzer target for a short, fixed time (a longer run: BENCHMARKS.md)
    echo "=== fuzz: 30 s per target (build-fuzz/)"
    if ! scripts/fuzz.sh 30 1; then status=1; fi
fi
if [ $status -eq 0 ]; then echo "=== scripts/test.sh: all suites passed"; else echo "=== scripts/test.sh: FAILURES"; fi
exit $status
