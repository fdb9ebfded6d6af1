#!/usr/bin/env bash
# scripts/gpu-all.sh - the one command for a GPU-machine call: every check
# (scripts/gpu-test.sh, which also runs tests/gpu/check_*.sh), then the
# PyTorch step benchmark in the tensor-level mode.  Run from the repository
# root with the build carried:  BUILD=build bash scripts/gpu-all.sh
# Everything lands in $OUT; each part has its own time cap.
#   BUILD=build bash scripts/gpu-all.sh --prepare   (here, before the call:
#   builds the CUDA test programs and copies libdw/libelf into
#   $BUILD/extra-lib, since the GPU machine may lack them)
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
if [ "${1:-}" = "--prepare" ]; then
    BUILD=$BUILD bash scripts/gpu-test.sh --build-only || exit 1
    mkdir -p "$BUILD/extra-lib"
    for l in libdw.so.1 libelf.so.1; do
        p=$(ldconfig -p | awk -v l="$l" '$1 == l {print $NF; exit}')
        [ -n "$p" ] && cp -L "$p" "$BUILD/extra-lib/"
    done
    find "$BUILD" -name '*.o' -delete
    du -sh "$BUILD"
    exit 0
fi
OUT=${OUT:-/tmp/vt-gpu-out}
mkdir -p "$OUT"
# The analyzer links libdw/libelf; the GPU machine may lack them.
if ! ldconfig -p | grep -q 'libdw.so.1 '; then
    export LD_LIBRARY_PATH=$PWD/$BUILD/extra-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
nvidia-smi -L
if [ "${VT_SKIP_CHECKS:-0}" != 1 ]; then  # VT_SKIP_CHECKS=1: the benchmark only
    timeout "${VT_CHECK_S:-300}" env BUILD="$BUILD" OUT="$OUT" bash scripts/gpu-test.sh >"$OUT/gpu-test.log" 2>&1
    echo "gpu-test.sh exit $?"
    tail -45 "$OUT/gpu-test.log"
fi
# The step benchmark (VT_BENCH): "gate" (default) times traced against
# untraced steps inside each process, tracing switched between blocks of
# steps (bench/gpu_gate.py); "pairs" runs each config beside an untraced
# twin process, one per GPU (bench/gpu_pairs.py, two GPUs); "interleaved"
# runs processes one after another (bench/gpu_bench.py, also the
# microbenchmarks).  The spread between processes on these machines is
# 20-50 %, which only the first method cancels.
export PYTHONUNBUFFERED=1
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
case "${VT_BENCH:-gate}" in
gate)
    timeout "${VT_BENCH_S:-300}" python3 bench/gpu_gate.py "$BUILD" "${VT_GATE_PROCS:-4}" >"$OUT/bench.log" 2>&1
    echo "gpu_gate.py exit $?" ;;
pairs)
    [ "${ngpu:-0}" -ge 2 ] || echo "gpu-all.sh: pairs need two GPUs, this machine has ${ngpu:-0}"
    timeout "${VT_BENCH_S:-300}" python3 bench/gpu_pairs.py "$BUILD" "${VT_PAIR_ROUNDS:-6}" >"$OUT/bench.log" 2>&1
    echo "gpu_pairs.py exit $?" ;;
*)
    VT_BENCH_TORCH=${VT_BENCH_TORCH:-async/untraced,async/traced,async/floor} \
        timeout "${VT_BENCH_S:-150}" python3 bench/gpu_bench.py "$BUILD" "${VT_BENCH_REPS:-3}" >"$OUT/bench.log" 2>&1
    echo "gpu_bench.py exit $?" ;;
esac
tail -25 "$OUT/bench.log"
# At most 8 files come back from the device machine, two folders deep:
# everything else of the work directory goes into one archive.
if [ -d "$OUT/work" ]; then
    (cd "$OUT" && tar czf work.tar.gz --exclude=work/bin work && rm -rf work)
fi
ls -la "$OUT"
