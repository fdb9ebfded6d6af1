"""gpu_bench.py - GPU benchmarks of libvramtrace.so, run ON the GPU machine:
    python3 bench/gpu_bench.py BUILD_DIR [REPS]
A. PyTorch transformer training step (bench/torch_step.py), untraced vs
   traced, default caching allocator and backend:cudaMallocAsync, plus the
   CUPTI floor (bench/cupti_floor.c: same callbacks, empty bodies, kernel
   activity) and traced without stacks; processes interleaved round-robin,
   REPS rounds; per config the median of the per-process median step times.
B. Microbenchmarks (bench/gpu_micro.cu): launch, cudaMalloc+cudaFree,
   cudaMallocAsync+cudaFreeAsync, ns per op, same configs.
Trace bytes per event from the library's closing stderr line.
Writes $OUT/bench.json and prints a table last."""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
reps = int(sys.argv[2] if len(sys.argv) > 2 else "3")
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
out = os.environ.get("OUT", "/tmp")
micro = os.path.join(build, "gpu-bin", "gpu_micro")
tmp = tempfile.mkdtemp(prefix="vtbench")
# Every process on the same cores (VT_BENCH_CPUS, "" = no pinning): the
# spread between identical processes comes mostly from where they run.
CPUS = os.environ.get("VT_BENCH_CPUS", "2-9")
if CPUS and subprocess.run(["taskset", "-c", CPUS, "true"], capture_output=True).returncode != 0:
    CPUS = ""
rounds = {}  # round -> {config: ms}

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_configs import configs as bench_configs  # noqa: E402

configs = bench_configs(build)
# VT_BENCH_SELFTIME=0: the library as users run it (its self time is then
# only estimated from one callback in 16, not timed in every callback)
for c in configs.values():
    if "VRAMTRACE_QUIET" in c and os.environ.get("VT_BENCH_SELFTIME", "1") != "0":
        c["VRAMTRACE_SELFTIME"] = "1"
SELF = re.compile(r"(self time: .*|clock: .*)")
WROTE = re.compile(r"wrote \S+ \((\d+) events, (\d+) dropped, (\d+) bytes\)")


def run(cmd, env_extra, mode_conf, tag):
    env = dict(os.environ)
    env.pop("CUDA_INJECTION64_PATH", None)
    env.update(env_extra)
    env["VRAMTRACE_OUTPUT"] = os.path.join(tmp, "t.%p.zst")
    if mode_conf:
        env["PYTORCH_CUDA_ALLOC_CONF"] = mode_conf
    else:
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    if CPUS:
        cmd = ["taskset", "-c", CPUS] + cmd
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    m = WROTE.search(p.stderr)
    sm = SELF.findall(p.stderr)
    if sm:
        results["self"].setdefault(tag, []).append(" | ".join(sm))
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    if p.returncode != 0:
        print("FAILED", cmd, env_extra, mode_conf, p.stderr[-800:], flush=True)
        return None, None
    return p.stdout, (tuple(int(x) for x in m.groups()) if m else None)


results = {"torch": {}, "micro": {}, "bytes": {}, "self": {}}
modes = {"default": "", "async": "backend:cudaMallocAsync"}
torch_cfgs = [("default", "untraced"), ("default", "floor"), ("default", "traced"), ("default", "traced-nostatic"),
              ("async", "untraced"), ("async", "floor"), ("async", "traced"), ("async", "traced-nostacks")]
if os.environ.get("VT_BENCH_TORCH"):
    torch_cfgs = [tuple(x.split("/")) for x in os.environ["VT_BENCH_TORCH"].split(",")]
for r in range(reps):
    for mode, cfg in torch_cfgs:
        so, wrote = run([sys.executable, os.path.join(root, "bench", "torch_step.py"), f"{mode}/{cfg}"],
                        configs[cfg], modes[mode], f"torch {mode}/{cfg}")
        if so is None:
            continue
        d = json.loads(so.strip().splitlines()[-1])
        results["torch"].setdefault(f"{mode}/{cfg}", []).append(d["median_ms"])
        rounds.setdefault(r, {})[f"{mode}/{cfg}"] = d["median_ms"]
        if wrote:
            results["bytes"].setdefault(f"torch {mode}/{cfg}", []).append(wrote)
        results.setdefault("cpu", {}).setdefault(f"{mode}/{cfg}", []).append(d.get("cpu_ms"))
        print(f"round {r} {mode}/{cfg}: {d['median_ms']:.3f} ms (main thread CPU {d.get('cpu_ms', 0):.3f} ms)", flush=True)

if os.path.exists(micro):
    for r in range(reps):
        for cfg in ["untraced", "floor", "traced", "traced-nostacks"]:
            so, wrote = run([micro], configs[cfg], "", f"micro/{cfg}")
            if so is None:
                continue
            for line in so.splitlines():
                k, v = line.split()
                results["micro"].setdefault(f"{k}/{cfg}", []).append(float(v))
            if wrote:
                results["bytes"].setdefault(f"micro/{cfg}", []).append(wrote)

with open(os.path.join(out, "bench.json"), "w") as f:
    json.dump(results, f, indent=1)

med = {k: statistics.median(v) for k, v in results["torch"].items()}
print("\n== transformer step (median of per-process medians, %d rounds)" % reps)
print(f"{'config':32s} {'ms/step':>9s} {'x untraced':>11s}  runs")
for k in sorted(med):
    base = med.get(k.split("/")[0] + "/untraced")
    ratio = med[k] / base if base else float("nan")
    print(f"{k:32s} {med[k]:9.3f} {ratio:11.3f}  {', '.join('%.3f' % x for x in results['torch'][k])}")
# Paired: each config against the untraced process of the same round
# (adjacent in time), then the median over rounds.
print("\n== paired ratios (config / untraced of the same round; median, and every round)  cpus=%s" % (CPUS or "any"))
for k in sorted(med):
    base_k = k.split("/")[0] + "/untraced"
    rs = [rounds[r][k] / rounds[r][base_k] for r in sorted(rounds) if k in rounds[r] and base_k in rounds[r]]
    if rs and k != base_k:
        print(f"{k:32s} {statistics.median(rs):7.3f}  " + ", ".join("%.3f" % x for x in rs))
results["paired"] = {k: [rounds[r][k] / rounds[r][k.split('/')[0] + '/untraced'] for r in sorted(rounds)
                         if k in rounds[r] and k.split('/')[0] + '/untraced' in rounds[r]] for k in med}
with open(os.path.join(out, "bench.json"), "w") as f:
    json.dump(results, f, indent=1)
print("\n== microbenchmarks (ns per op, median of rounds)")
mm = {k: statistics.median(v) for k, v in results["micro"].items()}
for op in ["launch", "malloc_free", "malloc_async_free"]:
    row = [f"{cfg}={mm.get(op + '/' + cfg, float('nan')):.0f}" for cfg in ["untraced", "floor", "traced", "traced-nostacks"]]
    print(f"{op:20s} " + "  ".join(row))
print("\n== self time (last run of each)")
for k, v in sorted(results["self"].items()):
    print(f"{k:28s} {v[-1]}")
print("\n== trace size")
for k, v in sorted(results["bytes"].items()):
    ev = statistics.median(x[0] for x in v)
    by = statistics.median(x[2] for x in v)
    dr = max(x[1] for x in v)
    print(f"{k:32s} {ev:9.0f} events {by:10.0f} bytes {by / max(ev, 1):6.2f} B/event dropped<={dr}")
