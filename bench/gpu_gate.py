"""gpu_gate.py - the transformer step benchmark, traced against untraced
INSIDE one process, run ON the GPU machine:
    python3 bench/gpu_gate.py BUILD_DIR [PROCS]
Step times of identical processes on the shared GPU machines spread by
20-50 % (BENCHMARKS.md), more than the effect measured, and even twin
processes run side by side leave +-15 % per pair.  Here each process
switches tracing on and off itself between blocks of steps
(VRAMTRACE_BENCH_GATE, src/inject/vt_gate.h; bench/torch_step.py gate
mode), so both sides of the ratio share the process, its memory layout,
its cores and its GPU.  Off = CUPTI subscribed with every callback and
activity kind of the library disabled (the library loaded, its threads
idle).  PROCS processes per config (default 4), one per GPU at a time;
result per config: the median over processes of on/off step time, and
of the "pairs" ratio: each traced block against the mean of the untraced
blocks beside it, the median of those (robust to a process's slow drift
and to a burst in one block: its spread over processes is ~15 % lower).
A process's ratio is mostly block-to-block noise (its two halves
correlate at 0.06 over 158 processes), so its spread falls as 1/sqrt of
the blocks (16: +-4.4 %, 4: +-9.8 %; bench/gate_blocks.py): 64 blocks by
default, about 1.5x the wall time of 16 (a process's start dominates).
Env: VT_GATE_CONFIGS (default "traced,floor,traced-nostacks"; names from
bench/bench_configs.py; a name given twice runs twice as many processes), VT_PAIR_MODE (async|default), VT_GATE_SLOTS
("0:2-9,1:18-25": gpu:cpus), VT_BENCH_BLOCKS (default 64),
VT_BENCH_STEPS (steps per block, default 10), VT_GATE_BUDGET_S (start no
process after this many seconds; 0 = all).  Writes $OUT/gate.json and
prints a table."""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
procs = int(sys.argv[2] if len(sys.argv) > 2 else "4")
out = os.environ.get("OUT", "/tmp")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_configs import block_pair_ratios, configs as bench_configs, start_step  # noqa: E402

configs = bench_configs(build, gate=True)
cfgs = os.environ.get("VT_GATE_CONFIGS", "traced,floor,traced-nostacks").split(",")
for c in cfgs:
    if "CUDA_INJECTION64_PATH" not in configs[c]:
        sys.exit(f"gpu_gate.py: {c}: no library to switch")
mode = os.environ.get("VT_PAIR_MODE", "async")
alloc_conf = {"async": "backend:cudaMallocAsync", "default": ""}[mode]
slots = [s.split(":") for s in os.environ.get("VT_GATE_SLOTS", "0:2-9,1:18-25").split(",")]
ngpu = int(subprocess.run("nvidia-smi -L | grep -c '^GPU '", shell=True, capture_output=True,
                          text=True).stdout.strip() or "1")
slots = slots[:max(1, min(ngpu, len(slots)))]
blocks = os.environ.get("VT_BENCH_BLOCKS", "64")
steps = os.environ.get("VT_BENCH_STEPS", "10")


def start(cfg, slot, tmp):
    return start_step(configs[cfg], cfg, slot, tmp, alloc_conf,
                      {"VRAMTRACE_BENCH_GATE": os.path.join(tmp, "gate"), "VT_BENCH_BLOCKS": blocks,
                       "VT_BENCH_STEPS": steps})


def pairs_ratio(per_block):
    """The median of block_pair_ratios(), NaN without a pair."""
    r = block_pair_ratios(per_block)
    return statistics.median(r) if r else float("nan")


# every config's processes spread over rounds and slots alike: the order
# rotates by one config per round, so that with an even number of configs
# a config does not always land on the same GPU and cores
queue = [cfgs[(i + r) % len(cfgs)] for r in range(procs) for i in range(len(cfgs))]
res = {c: [] for c in cfgs}
pairs = {c: [] for c in cfgs}
cpu = {c: [] for c in cfgs}
threads = {c: [] for c in cfgs}
notes = {}
t_start = time.time()
budget = float(os.environ.get("VT_GATE_BUDGET_S", "0"))
while queue:
    if budget and time.time() - t_start > budget:
        print(f"budget of {budget:.0f} s reached: {len(queue)} processes not run", flush=True)
        break
    batch = [(queue.pop(0), slot) for slot in slots if queue]
    running = []
    for c, slot in batch:
        tmp = tempfile.mkdtemp(prefix="vtgate")
        running.append((c, slot, tmp, start(c, slot, tmp)))
    for c, slot, tmp, p in running:
        o, e = p.communicate(timeout=300)
        if p.returncode:
            print(f"{c} (gpu {slot[0]}): FAILED rc {p.returncode}\n{e[-800:]}", flush=True)
            continue
        d = json.loads(o.strip().splitlines()[-1])
        res[c].append(d["ratio"])
        pairs[c].append(pairs_ratio(d["blocks"]))
        cpu[c].append(d["cpu_ratio"])
        threads[c].append(d.get("threads", {}))
        for line in e.splitlines():
            for key in ("self time:", "native stacks:", "python stacks:", "benchmark gate"):
                if key in line:
                    notes.setdefault(f"{c} {key.rstrip(':')}", []).append(line.split("vramtrace: ", 1)[-1])
        print(f"{c} (gpu {slot[0]}): on {d['on_ms']:.3f} / off {d['off_ms']:.3f} ms = {d['ratio']:.3f}"
              f" (pairs {pairs[c][-1]:.3f});"
              f" main-thread CPU {d['on_cpu_ms']:.3f} / {d['off_cpu_ms']:.3f} ms = {d['cpu_ratio']:.3f};"
              f" blocks " + " ".join(f"{'+' if on else '-'}{ms:.2f}" for on, ms in d["blocks"]), flush=True)
        subprocess.run(["rm", "-rf", tmp])

print(f"\n== in-process on/off, {mode} allocator, {procs} processes per config, {blocks} blocks of "
      f"{steps} steps, {time.time() - t_start:.0f} s")
print(f"{'config':20s} {'on/off':>8s} {'pairs':>7s} {'CPU':>7s}  per process (on/off)")
cfgs = list(dict.fromkeys(cfgs))  # a config named twice ran twice as often: one row
for c in cfgs:
    if res[c]:
        print(f"{c:20s} {statistics.median(res[c]):8.3f} {statistics.median(pairs[c]):7.3f} "
              f"{statistics.median(cpu[c]):7.3f}  " + ", ".join("%.3f" % x for x in res[c]))
# where the time goes, per thread (torch_step.py: schedstat around the timed
# steps): medians over processes of ms per step, traced and untraced
print("\nper thread, ms per step (median over processes): CPU on / off / +, run-queue wait on / off")
for c in cfgs:
    names = sorted({n for t in threads[c] for n in t}, key=lambda n: -max(
        [t[n][0] for t in threads[c] if n in t] or [0]))
    for n in names:
        v = [t.get(n, [0, 0, 0, 0]) for t in threads[c]]
        med = [statistics.median(x[i] for x in v) for i in range(4)]
        dif = statistics.median(x[0] - x[1] for x in v)
        if max(med[0], med[1]) >= 0.01 or max(med[2], med[3]) >= 0.01:
            print(f"  {c:20s} {n:16s} {med[0]:7.3f} {med[1]:7.3f} {dif:+7.3f}   {med[2]:6.3f} {med[3]:6.3f}")
for k, lines in notes.items():  # one per process
    for s in lines:
        print(f"{k}: {s}")
with open(os.path.join(out, "gate.json"), "w") as f:
    json.dump({"mode": mode, "procs": procs, "blocks": blocks, "steps": steps, "ratio": res,
               "pairs_ratio": pairs, "cpu_ratio": cpu, "threads": threads, "notes": notes}, f, indent=1)
