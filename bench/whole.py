#!/usr/bin/env python3
"""whole.py - what a user pays: whole processes of the transformer step
(bench/torch_step.py), run ON the GPU machine:
    python3 bench/whole.py BUILD_DIR [ROUNDS]      run, print, write $OUT/whole.log
    python3 bench/whole.py --pool LOG...           the same table from logs
Each round runs every config once, as its own process, in an order shuffled
per round (fixed seed), all on the same cores (VT_BENCH_CPUS, default 2-9).
Per process: the median and the 10th percentile of its step times after
the warm-up.  Per config: the ratio to the untraced process of the same
round (the machine drifts slowly; adjacent processes share its state),
the median of those ratios over rounds with a bootstrap 95 % interval
(rounds resampled, fixed seed), and the same against CUPTI's floor
(config `floor`) as a difference of ratios, paired by round.
Env: VT_WHOLE_CONFIGS (default untraced,floor,traced,traced-nokernels,
tensors,history: names of bench/bench_configs.py), VT_WHOLE_MODE
(default|expandable|async, default: PyTorch's default allocator),
VT_BENCH_STEPS (default 60), VT_BENCH_WARM (default 10), VT_WHOLE_BUDGET_S
(start no round after this many seconds; 0 = all rounds), VT_BENCH_SHIM
(the libvt_torch.so that `vramtrace record` built: config `tensors`)."""
import json
import os
import random
import statistics as st
import subprocess
import sys
import tempfile
import time

LINE = "round %d %s: median %.3f ms p10 %.3f ms cpu %.3f ms"


def parse(path):
    """{round: {config: (median, p10)}} of a log written by this script"""
    rounds = {}
    with open(path) as f:
        for ln in f:
            w = ln.split()
            if len(w) == 12 and w[0] == "round" and w[3] == "median" and w[6] == "p10":
                rounds.setdefault((path, int(w[1])), {})[w[2].rstrip(":")] = (float(w[4]), float(w[7]))
    return rounds


def interval(xs, stat, n=4000, seed=1):
    rng = random.Random(seed)
    m = sorted(stat(rng.choices(xs, k=len(xs))) for _ in range(n))
    return m[int(0.025 * n)], m[int(0.975 * n)]


def table(rounds, order):
    """the summary: per config, ratio to untraced and to the floor"""
    out = []
    for k, metric in ((0, "median step"), (1, "10th percentile step")):
        out.append(f"\n== {metric}: x untraced of the same round (median over rounds, 95 % interval)")
        out.append(f"{'config':20s} {'ms':>8s} {'x untraced':>10s} {'interval':>13s} {'- floor':>8s} "
                   f"{'interval':>15s} {'n':>3s}")
        for c in order:
            both = [r for r in rounds.values() if c in r and "untraced" in r]
            if not both:
                continue
            ms = st.median(r[c][k] for r in both)
            if c == "untraced":
                out.append(f"{c:20s} {ms:8.3f} {'1':>10s} {'':13s} {'':8s} {'':15s} {len(both):3d}")
                continue
            xs = [r[c][k] / r["untraced"][k] for r in both]
            lo, hi = interval(xs, st.median)
            row = f"{c:20s} {ms:8.3f} {st.median(xs):10.3f} {lo:6.3f}-{hi:6.3f}"
            fl = [(r[c][k] / r["untraced"][k], r["floor"][k] / r["untraced"][k]) for r in both if "floor" in r]
            if c != "floor" and fl:
                d = st.median(a for a, _ in fl) - st.median(b for _, b in fl)
                dlo, dhi = interval(fl, lambda s: st.median(a for a, _ in s) - st.median(b for _, b in s), seed=2)
                row += f" {d:+8.3f} {dlo:+7.3f}..{dhi:+6.3f}"
            else:
                row += f" {'':8s} {'':15s}"
            out.append(row + f" {len(both):3d}")
    return "\n".join(out)


def pool(logs):
    rounds, order = {}, []
    for f in logs:
        for key, r in parse(f).items():
            rounds[key] = r
            order += [c for c in r if c not in order]
    if not rounds:
        sys.exit("whole.py: no round in " + " ".join(logs))
    first = {c: i for i, c in enumerate(order)}
    order.sort(key=lambda c: (c != "untraced", c != "floor", first[c]))
    print(f"{len(rounds)} rounds from {len(logs)} log(s)" + table(rounds, order))


def run(build, nrounds):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_configs import configs as bench_configs, start_step
    configs = bench_configs(build)
    cfgs = os.environ.get("VT_WHOLE_CONFIGS", "untraced,floor,traced,traced-nokernels,tensors,history").split(",")
    if "untraced" not in cfgs:
        cfgs.insert(0, "untraced")
    unknown = [c for c in cfgs if c not in configs]
    if unknown:
        sys.exit("whole.py: unknown config(s) " + ", ".join(unknown))
    if "tensors" in cfgs and not os.path.exists(os.environ.get("VT_BENCH_SHIM", "")):
        sys.exit("whole.py: config tensors needs VT_BENCH_SHIM (the libvt_torch.so that `vramtrace record` built)")
    mode = os.environ.get("VT_WHOLE_MODE", "default")
    alloc = {"default": "", "expandable": "expandable_segments:True", "async": "backend:cudaMallocAsync"}[mode]
    cpus = os.environ.get("VT_BENCH_CPUS", "2-9")
    if subprocess.run(["taskset", "-c", cpus, "true"], capture_output=True).returncode != 0:
        cpus = "0-%d" % (os.cpu_count() - 1)
    extra = {"VT_BENCH_STEPS": os.environ.get("VT_BENCH_STEPS", "60"),
             "VT_BENCH_WARM": os.environ.get("VT_BENCH_WARM", "10")}
    budget = float(os.environ.get("VT_WHOLE_BUDGET_S", "0"))
    out = os.environ.get("OUT", "/tmp")
    logp = os.path.join(out, "whole.log")
    rng = random.Random(int(os.environ.get("VT_WHOLE_SEED", "7")))
    t0 = time.time()
    with open(logp, "w") as log:
        def say(s):
            print(s, flush=True)
            log.write(s + "\n")
            log.flush()
        say(f"# whole.py {mode} allocator, configs {','.join(cfgs)}, steps {extra['VT_BENCH_STEPS']} after "
            f"{extra['VT_BENCH_WARM']}, cpus {cpus}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
        for r in range(nrounds):
            if budget and time.time() - t0 > budget:
                say(f"# budget of {budget:.0f} s reached after {r} rounds")
                break
            order = list(cfgs)
            rng.shuffle(order)
            for c in order:
                tmp = tempfile.mkdtemp(prefix="vtwhole")
                p = start_step(configs[c], c, ("0", cpus), tmp, alloc, extra)
                try:
                    so, se = p.communicate(timeout=300)
                except subprocess.TimeoutExpired:
                    p.kill()
                    so, se = p.communicate()
                subprocess.run(["rm", "-rf", tmp])
                if p.returncode != 0:
                    say(f"# round {r} {c}: FAILED rc {p.returncode}: " + se[-400:].replace("\n", " | "))
                    continue
                d = json.loads(so.strip().splitlines()[-1])
                say(LINE % (r, c, d["median_ms"], d["p10_ms"], d["cpu_ms"]))
        say(f"# {time.time() - t0:.0f} s")
    print(table(parse(logp), cfgs))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--pool":
        if len(sys.argv) < 3:
            sys.exit(__doc__)
        pool(sys.argv[2:])
    elif len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        run(os.path.abspath(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 12)
    else:
        sys.exit(__doc__)
