"""gpu_pairs.py - the transformer step benchmark as concurrent pairs, run ON
a two-GPU machine:
    python3 bench/gpu_pairs.py BUILD_DIR [ROUNDS]
Step times of identical processes on the shared GPU machines spread by 20-50 %
from one process to the next (even pinned: main-thread CPU time per step
itself varies that much), more than the effect measured.  So each config
runs AT THE SAME TIME as an untraced twin: one process per GPU, each pinned
to its own cores, both timing their steps together (a file barrier after the
warm-up), so that whatever slows the machine slows both.  The two slots
(GPU + cores) swap every round.  The result per config is the median over
rounds of traced/untraced step time of the same pair.
Env: VT_PAIR_CONFIGS (default "traced,traced-phases,traced-nostacks,floor";
VT_PAIR_EXTRA='{"name": {VAR: VALUE}}' adds traced variants), VT_PAIR_MODE
(async|default, default async), VT_PAIR_SLOTS ("0:2-9,1:18-25": gpu:cpus),
VT_BENCH_STEPS (default 150), VT_PAIR_NOASLR=1 (setarch -R: no address-space
randomization).  Writes $OUT/pairs.json; prints a table."""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
rounds = int(sys.argv[2] if len(sys.argv) > 2 else "6")
out = os.environ.get("OUT", "/tmp")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_configs import configs as bench_configs, start_step  # noqa: E402

configs = bench_configs(build)
cfgs = os.environ.get("VT_PAIR_CONFIGS", "traced,traced-phases,traced-nostacks,floor").split(",")
mode = os.environ.get("VT_PAIR_MODE", "async")
alloc_conf = {"async": "backend:cudaMallocAsync", "default": ""}[mode]
slots = [s.split(":") for s in os.environ.get("VT_PAIR_SLOTS", "0:2-9,1:18-25").split(",")]
steps = os.environ.get("VT_BENCH_STEPS", "150")
# VT_PAIR_NOASLR=1: every process with the same address-space layout
# (setarch -R), one suspect of the spread between identical processes
NOASLR = os.environ.get("VT_PAIR_NOASLR") == "1" and subprocess.run(
    ["setarch", os.uname().machine, "-R", "true"], capture_output=True).returncode == 0


def start(cfg, slot, barrier, tmp):
    wrap = ["setarch", os.uname().machine, "-R"] if NOASLR else []
    return start_step(configs[cfg], cfg, slot, tmp, alloc_conf,
                      {"VT_BENCH_STEPS": steps, "VT_BENCH_BARRIER": barrier}, wrap)


res = {c: [] for c in cfgs}
cpu = {c: [] for c in cfgs}
selft = {}
t_start = time.time()
for r in range(rounds):
    for c in cfgs:
        tmp = tempfile.mkdtemp(prefix="vtpair")
        barrier = os.path.join(tmp, "barrier")
        a, b = (slots[0], slots[1]) if r % 2 == 0 else (slots[1], slots[0])
        pu, pc = start("untraced", a, barrier, tmp), start(c, b, barrier, tmp)
        ou, eu = pu.communicate(timeout=300)
        oc, ec = pc.communicate(timeout=300)
        if pu.returncode or pc.returncode:
            print(f"round {r} {c}: FAILED rc {pu.returncode}/{pc.returncode}\n{eu[-600:]}\n{ec[-600:]}", flush=True)
            continue
        du, dc = json.loads(ou.strip().splitlines()[-1]), json.loads(oc.strip().splitlines()[-1])
        ratio = dc["median_ms"] / du["median_ms"]
        res[c].append(ratio)
        cpu[c].append(dc["cpu_ms"] / du["cpu_ms"])
        for line in ec.splitlines():
            if "self time:" in line or "native stacks:" in line:
                selft[c + (" unwind" if "native stacks:" in line else "")] = line.split("vramtrace: ", 1)[-1]
        print(f"round {r} {c} (gpu {b[0]}) vs untraced (gpu {a[0]}): {dc['median_ms']:.3f} / {du['median_ms']:.3f} ms"
              f" = {ratio:.3f}; main-thread CPU {dc['cpu_ms']:.3f} / {du['cpu_ms']:.3f} ms", flush=True)
        subprocess.run(["rm", "-rf", tmp])

print(f"\n== concurrent pairs, {mode} allocator, {rounds} rounds, {steps} steps, {time.time() - t_start:.0f} s"
      f"{', no ASLR' if NOASLR else ''}")
print(f"{'config':20s} {'x untraced':>10s} {'CPU x':>7s}  per round")
for c in cfgs:
    if res[c]:
        print(f"{c:20s} {statistics.median(res[c]):10.3f} {statistics.median(cpu[c]):7.3f}  "
              + ", ".join("%.3f" % x for x in res[c]))
for c, s in selft.items():
    print(f"{c}: {s}")
with open(os.path.join(out, "pairs.json"), "w") as f:
    json.dump({"mode": mode, "rounds": rounds, "steps": steps, "ratio": res, "cpu_ratio": cpu, "self": selft}, f, indent=1)
