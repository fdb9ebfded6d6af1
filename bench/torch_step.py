"""torch_step.py - one process of the transformer step benchmark: a 6-layer
transformer encoder training step (bf16 autocast, AdamW), median step time
over STEPS steps after WARM warm-up steps.  Prints one JSON line.

Gate mode (bench/gpu_gate.py: VRAMTRACE_BENCH_GATE=FILE, VT_BENCH_BLOCKS=N):
after the warm-up, N blocks of STEPS steps each, tracing switched on and
off between blocks in the order on, off, off, on, on, off, ... through
the library's gate (src/inject/vt_gate.h); each block starts with one
untimed step.  Prints the median step time of the on- and off-steps and
their ratio: traced against untraced within one process, and per thread
(the main thread as "main", others by name, e.g. pt_autograd_0 and the
library's vt-writer / vt-drain) the CPU time and the run-queue wait per
step of each side, from /proc/self/task/*/schedstat around the timed
steps: where a traced step's extra time is spent."""
import json
import mmap
import os
import statistics
import struct
import sys
import time

GATE = os.environ.get("VRAMTRACE_BENCH_GATE")
gate_map = None
if GATE:  # before the first CUDA call, which loads the library
    with open(GATE, "wb") as f:
        f.write(bytes(64))
    with open(GATE, "r+b") as f:
        gate_map = mmap.mmap(f.fileno(), 64)

import torch  # noqa: E402

if os.environ.get("VT_BENCH_HISTORY"):  # PyTorch's own memory history, the comparison (bench_configs.py)
    torch.cuda.memory._record_memory_history(max_entries=100000, stacks="python")
steps = int(os.environ.get("VT_BENCH_STEPS", "40"))
warm = int(os.environ.get("VT_BENCH_WARM", "10"))
torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True, dropout=0.1)
model = torch.nn.TransformerEncoder(layer, 6).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(16, 256, 512, device="cuda")


def step():
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x).float().pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)

def barrier(tag=""):
    """bench/gpu_pairs.py: start timing together with the twin process."""
    path = os.environ.get("VT_BENCH_BARRIER")
    if not path:
        return
    path += tag
    open(f"{path}.{os.getpid()}", "w").close()
    d, base = os.path.dirname(path), os.path.basename(path) + "."
    t0 = time.time()
    while sum(f.startswith(base) for f in os.listdir(d)) < 2 and time.time() - t0 < 120:
        if tag:
            step()  # keep loading the machine until the twin is done too
            torch.cuda.synchronize()
        else:
            time.sleep(0.001)


gate_seq = 0


def gate(on):
    """Ask the library to switch tracing; wait until it did."""
    global gate_seq
    gate_seq += 1
    req = (gate_seq << 1) | on
    gate_map[0:4] = struct.pack("=I", req)
    t0 = time.time()
    while struct.unpack("=I", gate_map[4:8])[0] != req:
        if time.time() - t0 > 5:
            sys.exit("torch_step.py: the gate was not applied in 5 s (no library with VRAMTRACE_BENCH_GATE?)")
        time.sleep(0.0002)


def timed_step():
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    c0 = time.thread_time()
    torch.cuda.nvtx.range_push("step")
    step()
    torch.cuda.nvtx.range_pop()
    c1 = time.thread_time()  # the main thread's CPU time, before the wait for the GPU
    torch.cuda.synchronize()
    return time.perf_counter() - t0, c1 - c0


def thread_times():
    """{tid: (name, cpu_ns, runqueue_wait_ns)} of this process's threads."""
    snap = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                run, wait = f.read().split()[:2]
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
        except (OSError, ValueError):
            continue
        snap[int(tid)] = ("main" if int(tid) == os.getpid() else name, int(run), int(wait))
    return snap


def add_thread_times(acc, s0, s1):
    """acc[name] += [cpu ns, wait ns] between two thread_times()."""
    for tid, (name, run, wait) in s1.items():
        r0, w0 = s0[tid][1:] if tid in s0 else (0, 0)
        a = acc.setdefault(name, [0, 0])
        a[0] += run - r0
        a[1] += wait - w0


blocks = int(os.environ.get("VT_BENCH_BLOCKS", "0"))
if gate_map and blocks:
    for i in range(warm):
        timed_step()
    res = {0: ([], []), 1: ([], [])}
    per_block = []
    threads = {0: {}, 1: {}}
    for b in range(blocks):
        on = 1 if b % 4 in (0, 3) else 0
        gate(on)
        timed_step()  # the first step after a switch is not timed
        s0 = thread_times()
        t = [timed_step() for _ in range(steps)]
        add_thread_times(threads[on], s0, thread_times())
        res[on][0].extend(x[0] for x in t)
        res[on][1].extend(x[1] for x in t)
        per_block.append((on, statistics.median(x[0] for x in t) * 1e3))
    gate(1)
    on_ms, off_ms = statistics.median(res[1][0]) * 1e3, statistics.median(res[0][0]) * 1e3
    on_cpu, off_cpu = statistics.median(res[1][1]) * 1e3, statistics.median(res[0][1]) * 1e3
    print(json.dumps({"on_ms": on_ms, "off_ms": off_ms, "ratio": on_ms / off_ms,
                      "on_cpu_ms": on_cpu, "off_cpu_ms": off_cpu, "cpu_ratio": on_cpu / off_cpu,
                      "blocks": per_block, "steps": steps,
                      # per thread name: [cpu ms, run-queue wait ms] per step, on and off
                      "threads": {n: [threads[1].get(n, [0, 0])[0] / 1e6 / len(res[1][0]),
                                      threads[0].get(n, [0, 0])[0] / 1e6 / len(res[0][0]),
                                      threads[1].get(n, [0, 0])[1] / 1e6 / len(res[1][0]),
                                      threads[0].get(n, [0, 0])[1] / 1e6 / len(res[0][0])]
                                  for n in sorted(set(threads[0]) | set(threads[1]))},
                      "tag": sys.argv[1] if len(sys.argv) > 1 else ""}), flush=True)
    sys.exit(0)

times, cpu = [], []
for i in range(warm + steps):
    if i == warm:
        barrier()
    dt, dc = timed_step()
    if i >= warm:
        times.append(dt)
        cpu.append(dc)
barrier("-done")
print(json.dumps({"median_ms": statistics.median(times) * 1e3, "min_ms": min(times) * 1e3,
                  "p10_ms": sorted(times)[len(times) // 10] * 1e3,
                  "cpu_ms": statistics.median(cpu) * 1e3,
                  "steps": steps, "tag": sys.argv[1] if len(sys.argv) > 1 else ""}), flush=True)
