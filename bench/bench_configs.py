"""bench_configs.py - the library configurations the GPU benchmarks compare
(bench/gpu_bench.py, bench/gpu_pairs.py, bench/gpu_gate.py): name -> the
environment a benchmark process gets on top of its own.
VT_PAIR_EXTRA / VT_BENCH_EXTRA='{"name": {VAR: VALUE}}' add traced variants."""
import json
import os
import re
import statistics
import subprocess
import sys


def configs(build, gate=False):
    # gate: the shipped library's code built with the benchmark switches
    # (the gate, CUPTI attributes: bench/inject.cmake), which the shipped
    # libvramtrace.so lacks; whole-process benchmarks time the shipped one
    lib = os.path.join(build, "bench", "libvramtrace-bench.so") if gate else os.path.join(build, "libvramtrace.so")
    floor = os.path.join(build, "bench", "libvt_cupti_floor.so")
    traced = {"CUDA_INJECTION64_PATH": lib, "VRAMTRACE_QUIET": "0"}
    c = {
        "untraced": {},
        # CUPTI's own cost: the same callbacks with empty bodies + kernel activity
        "floor": {"CUDA_INJECTION64_PATH": floor},
        # which part of the floor is which (bench/cupti_floor.c): kernel
        # activity alone; only the two tensor-mode callbacks; one callback
        # a PyTorch step never calls; the two in the runtime domain
        "floor-nocallbacks": {"CUDA_INJECTION64_PATH": floor, "VT_FLOOR_NO_CALLBACKS": "1"},
        "floor-async": {"CUDA_INJECTION64_PATH": floor, "VT_FLOOR_CALLBACKS": "async"},
        "floor-unused": {"CUDA_INJECTION64_PATH": floor, "VT_FLOOR_CALLBACKS": "unused"},
        "floor-runtime": {"CUDA_INJECTION64_PATH": floor, "VT_FLOOR_CALLBACKS": "runtime-async"},
        # callbacks alone, without kernel activity, on both sides
        "floor-nokernels": {"CUDA_INJECTION64_PATH": floor, "VT_FLOOR_NO_KERNELS": "1"},
        # callbacks with the launch APIs' added, no kernel activity: what
        # kernels taken from the launch calls would cost in CUPTI (BENCHMARKS.md,
        # eleventh session: about what its kernel records cost)
        "floor-launch": {"CUDA_INJECTION64_PATH": floor, "VT_FLOOR_NO_KERNELS": "1", "VT_FLOOR_LAUNCH": "1"},
        "traced": dict(traced),
        # the default allocator's tensor events through the PyTorch shim
        # (VT_BENCH_SHIM: the libvt_torch.so that `vramtrace record` built)
        "tensors": dict(traced, VRAMTRACE_TORCH_SHIM=os.environ.get("VT_BENCH_SHIM", "")),
        "tensors-nokernels": dict(traced, VRAMTRACE_TORCH_SHIM=os.environ.get("VT_BENCH_SHIM", ""),
                                  VRAMTRACE_KERNELS="0"),
        # where tensor events' cost goes: without stacks, with one kind only
        "tensors-nostacks": dict(traced, VRAMTRACE_TORCH_SHIM=os.environ.get("VT_BENCH_SHIM", ""),
                                 VRAMTRACE_NATIVE_STACKS="0", VRAMTRACE_PYTHON_STACKS="0"),
        "tensors-nopython": dict(traced, VRAMTRACE_TORCH_SHIM=os.environ.get("VT_BENCH_SHIM", ""),
                                 VRAMTRACE_PYTHON_STACKS="0"),
        "tensors-nonative": dict(traced, VRAMTRACE_TORCH_SHIM=os.environ.get("VT_BENCH_SHIM", ""),
                                 VRAMTRACE_NATIVE_STACKS="0"),
        # PyTorch's own memory history, untraced (bench/torch_step.py)
        "history": {"VT_BENCH_HISTORY": "1"},
        "traced-nokernels": dict(traced, VRAMTRACE_KERNELS="0"),
        "traced-nostacks-nokernels": dict(traced, VRAMTRACE_KERNELS="0", VRAMTRACE_NATIVE_STACKS="0",
                                          VRAMTRACE_PYTHON_STACKS="0"),
        # the library with its driver callbacks' bodies compiled out
        # (bench/inject.cmake): what it costs apart from those bodies
        # (and the other variants of bench/inject.cmake)
        "traced-empty": dict(traced, CUDA_INJECTION64_PATH=os.path.join(build, "bench", "libvramtrace-empty.so")),
        "traced-empty-discard": dict(traced, CUDA_INJECTION64_PATH=os.path.join(build, "bench",
                                                                                 "libvramtrace-empty-discard.so")),
        "traced-empty-nosampler": dict(traced, CUDA_INJECTION64_PATH=os.path.join(build, "bench", "libvramtrace-empty.so"),
                                       VRAMTRACE_SAMPLE_MS="0"),
        # the shipped library with its activity buffers freed unread
        "traced-discard": dict(traced, CUDA_INJECTION64_PATH=os.path.join(build, "bench", "libvramtrace-discard.so")),
        "traced-captureonly": dict(traced, CUDA_INJECTION64_PATH=os.path.join(build, "bench",
                                                                               "libvramtrace-captureonly.so")),
        "traced-pmaddr": dict(traced, CUDA_INJECTION64_PATH=os.path.join(build, "bench", "libvramtrace-pmaddr.so")),
        "traced-verify8": dict(traced, CUDA_INJECTION64_PATH=os.path.join(build, "bench", "libvramtrace-verify8.so")),
        "traced-uwnobp": dict(traced, CUDA_INJECTION64_PATH=os.path.join(build, "bench", "libvramtrace-uwnobp.so")),
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


def start_step(config_env, tag, slot, tmp, alloc_conf, extra, wrap=()):
    """One bench/torch_step.py process (tag = its config name) in the
    environment of a config, on GPU slot[0] and cores slot[1], its traces in
    tmp; alloc_conf "" = PyTorch's default allocator; extra: more variables;
    wrap: a command prefix (e.g. setarch -R)."""
    env = dict(os.environ)
    env.pop("CUDA_INJECTION64_PATH", None)
    env.update(config_env)
    env["CUDA_VISIBLE_DEVICES"] = slot[0]
    env["VRAMTRACE_OUTPUT"] = os.path.join(tmp, "t.%p.zst")
    env.update(extra)
    if alloc_conf:
        env["PYTORCH_CUDA_ALLOC_CONF"] = alloc_conf
    else:
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    step = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_step.py")
    cmd = list(wrap) + ["taskset", "-c", slot[1], sys.executable, step, tag]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def block_pair_ratios(per_block):
    """A gate process's blocks [(traced, ms), ...]: each traced block against
    the mean of the untraced blocks beside it (bench/gpu_gate.py,
    bench/gate_blocks.py)."""
    r = []
    for i, (on, ms) in enumerate(per_block):
        if not on:
            continue
        nb = [per_block[j][1] for j in (i - 1, i + 1) if 0 <= j < len(per_block) and not per_block[j][0]]
        if nb:
            r.append(ms / statistics.mean(nb))
    return r


# one process's line in gpu_gate.py's log
GATE_LINE = re.compile(r"^(\S+) \(gpu (\d)\): on ([\d.]+) / off ([\d.]+) ms = ([\d.]+)"
                       r"(?: \(pairs ([\d.]+|nan)\))?;.* blocks (.*)$")


def gate_log_processes(path):
    """The processes of a bench/gpu_gate.py log (bench/data/gate-*.log):
    [{config, ratio (on/off), pairs (None in logs before it), blocks: [(traced, ms), ...]}]."""
    out = []
    with open(path) as f:
        for ln in f:
            m = GATE_LINE.match(ln)
            if m:
                out.append({"config": m.group(1), "ratio": float(m.group(5)),
                            "pairs": float(m.group(6)) if m.group(6) else None,
                            "blocks": [(t[0] == "+", float(t[1:])) for t in m.group(7).split()]})
    return out
