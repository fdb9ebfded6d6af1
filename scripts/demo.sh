#!/usr/bin/env bash
# scripts/demo.sh - the main job: set up, build, then show vramtrace at work.
#  - On a machine with a GPU (`nvidia-smi -L` lists one) where the injection
#    library was built (build/libvramtrace.so): record the bundled leaky CUDA
#    program (examples/leaky.cu, built as build/examples/leaky) with
#    `vramtrace record`, then `vramtrace report` on its traces.
#  - Elsewhere: `vramtrace report` on a real trace recorded on the GPU
#    machine (tests/data/gpu-*.zst), or on any trace fixture in tests/data/.
# `scripts/demo.sh --cpu` takes the second path even where a GPU is present.
# `scripts/demo.sh [--cpu] TRACE|DIR` (or VRAMTRACE_DEMO_TRACE=TRACE|DIR)
# shows that recording instead of a fixture: a trace with its TRACE.sym
# beside it names its frames without the binaries.
set -euo pipefail
cpu=0
[ "${1:-}" = "--cpu" ] && { cpu=1; shift; }
demo_trace=${1:-${VRAMTRACE_DEMO_TRACE:-}}
[ -z "$demo_trace" ] || demo_trace=$(realpath "$demo_trace")
cd "$(dirname "$0")/.."
mkdir -p build
if scripts/install-deps.sh; then
    cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >build/demo-configure.log 2>&1 ||
        { tail -30 build/demo-configure.log; echo "demo: cmake configure failed" >&2; exit 1; }
    cmake --build build -j"$(nproc)" >build/demo-build.log 2>&1 ||
        { tail -30 build/demo-build.log; echo "demo: build failed (build/demo-build.log)" >&2; exit 1; }
else
    # A machine without a package registry (the GPU machine) can still run
    # a build/ made elsewhere and carried over.
    echo "demo: cannot install the build dependencies here; using the existing build/" >&2
fi

vt=""
for c in build/vramtrace build/src/cli/vramtrace; do
    if [ -x "$c" ]; then vt=$c; break; fi
done
[ -n "$vt" ] || { echo "demo: no vramtrace binary in build/" >&2; exit 1; }

# `report` when the build has it, else `dump` (first lines).
show() {
    if "$vt" --help 2>/dev/null | grep -q '^  report '; then
        echo "demo: $vt report $*"
        "$vt" report --top 5 --frames 6 "$@"
    else
        echo "demo: $vt dump $* (no report command in this build)"
        "$vt" dump "$@" | head -60
    fi
}

if [ -n "$demo_trace" ]; then
    [ -e "$demo_trace" ] || { echo "demo: $demo_trace: no such trace" >&2; exit 1; }
    echo "demo: the recording $demo_trace"
    show "$demo_trace"
    exit 0
fi
if [ $cpu -eq 0 ] && nvidia-smi -L 2>/dev/null | grep -q '^GPU ' &&
    [ -e build/libvramtrace.so ]; then
    if [ -x build/examples/leaky ]; then
        out=build/demo-traces
        rm -rf "$out"
        echo "demo: $vt record -o $out -- build/examples/leaky"
        "$vt" record -o "$out" -- build/examples/leaky
        echo
        show "$out"
        exit 0
    fi
    echo "demo: build/examples/leaky was not built (no nvcc): showing a recorded trace" >&2
fi

# No GPU here: a real trace recorded on the GPU machine, the leaky one first.
# Fixtures made damaged on purpose (reader tests) are no demo.
trace=""
# tests/data/gpu-leaky-tensors.zst: tests/analyze/gpu/leaky_train.py
# recorded with --tensors on the H200 (a list that keeps every step's output,
# a bounded cache, a big temporary per step).
for pat in 'tests/data/gpu-leaky-tensors.zst' 'tests/data/gpu-*leak*.zst' 'tests/data/gpu-*.zst' 'tests/data/*.zst' 'tests/data/*/*.zst'; do
    # shellcheck disable=SC2086
    trace=$(ls -1 $pat 2>/dev/null | grep -v -E 'damaged|truncated|corrupt|bad' | head -1 || true)
    [ -n "$trace" ] && break
done
if [ -z "$trace" ]; then
    echo "demo: no GPU here and no trace in tests/data/" >&2
    exit 1
fi
case "$trace" in
    tests/data/gpu-*|tests/data/gpu-*) echo "demo: no GPU here (or --cpu): a trace recorded on the GPU machine, $trace" ;;
    *) echo "demo: no GPU here (or --cpu): the trace fixture $trace" ;;
esac
show "$trace"
