"""bench_configs.py - the library configurations the GPU benchmarks compare
(bench/gpu_bench.py, bench/gpu_pairs.py, bench/gpu_gate.py): name -> the
environment a benchmark process gets on top of its own.
VT_PAIR_EXTRA / VT_BENCH_EXTRA='{"name": {VAR: VALUE}}' add traced variants."""
import json
import os


def configs(build):
    lib = os.path.join(build, "libvramtrace.so")
    floor = os.path.join(build, "bench", "libvt_cupti_floor.so")
    traced = {"CUDA_INJECTION64_PATH": lib, "VRAMTRACE_QUIET": "0"}
    c = {
        "untraced": {},
        # CUPTI's own cost: the same callbacks with empty bodies + kernel activity
        "floor": {"CUDA_INJECTION64_PATH": floor},
        "traced": dict(traced),
        # VRAMTRACE_SELFTIME=1 times every phase of every callback (4 more
        # TSC reads per allocation): only this config pays that
        "traced-phases": dict(traced, VRAMTRACE_SELFTIME="1"),
        "traced-nostacks": dict(traced, VRAMTRACE_NATIVE_STACKS="0", VRAMTRACE_PYTHON_STACKS="0"),
        "traced-nopython": dict(traced, VRAMTRACE_PYTHON_STACKS="0"),
        "traced-nonative": dict(traced, VRAMTRACE_NATIVE_STACKS="0"),
        "traced-depth16": dict(traced, VRAMTRACE_STACK_DEPTH="16"),
        "traced-nostatic": dict(traced, VRAMTRACE_STATIC="0"),
        "traced-cupticlock": dict(traced, VRAMTRACE_CLOCK="cupti"),
        "traced-monoclock": dict(traced, VRAMTRACE_CLOCK="monotonic"),
    }
    for var in ("VT_PAIR_EXTRA", "VT_BENCH_EXTRA"):
        for k, v in json.loads(os.environ.get(var, "{}")).items():
            c[k] = dict(traced, **v)
    return c
