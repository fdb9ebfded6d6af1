#!/usr/bin/env python3
"""gate_blocks.py LOG... - how well bench/gpu_gate.py's per-process ratio
estimates the traced/untraced step, from the per-block times its logs
print (the `blocks +a -b ...` lines of $OUT/bench.log): the spread over
processes of one config in one run for several estimators, a split-half
test (is a process's ratio its own, or block noise?) and the spread
against the number of blocks.  Default: bench/data/gate-*.log (the
per-process lines of the eighth session's seven runs and the ninth
session's five, BENCHMARKS.md)."""
import glob
import math
import os
import statistics as st
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_configs import block_pair_ratios, gate_log_processes  # noqa: E402

logs = sys.argv[1:] or sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "gate-*.log")))
rows = [(f, p["config"], p["ratio"], p["blocks"]) for f in logs for p in gate_log_processes(f)]


def on_off(bl):
    return [v for o, v in bl if o], [v for o, v in bl if not o]


def e_block_median(bl):
    on, off = on_off(bl)
    return st.median(on) / st.median(off)


def e_min(bl):
    on, off = on_off(bl)
    return min(on) / min(off)


def e_trimmed(bl):
    r = sorted(block_pair_ratios(bl))
    k = len(r) // 4
    return st.mean(r[k:len(r) - k] or r)


ESTIMATORS = {
    "current": None,  # the ratio the log reports (median on-step / median off-step)
    "pairs-median": lambda bl: st.median(block_pair_ratios(bl)),
    "pairs-geomean": lambda bl: math.exp(st.mean(math.log(x) for x in block_pair_ratios(bl))),
    "block-median": e_block_median,
    "min/min": e_min,
    "pairs-trimmed": e_trimmed,
}

groups = {}  # (log, config) -> [(reported ratio, blocks)]
for f, cfg, r, bl in rows:
    groups.setdefault((f, cfg), []).append((r, bl))
big = [v for v in groups.values() if len(v) >= 5]


def pooled_sd(fn):
    """Root mean square of the within-group SDs, and the groups' median mean."""
    sds, meds = [], []
    for v in big:
        xs = [fn(bl) if fn else r for r, bl in v]
        if len(xs) >= 2:
            sds.append(st.stdev(xs))
            meds.append(st.median(xs))
    return math.sqrt(st.mean(s * s for s in sds)), len(sds), st.mean(meds)


print("%-16s %s" % ("estimator", "pooled within-group SD (groups with >=5 procs), mean of group medians"))
for name, fn in ESTIMATORS.items():
    sd, n, med = pooled_sd(fn)
    print("%-16s SD %.4f  (n groups %d)  mean median %.4f" % (name, sd, n, med))

# split-half: is a process's ratio its own (layout) or noise?
a, b = [], []
for f, cfg, r, bl in rows:
    if len(bl) >= 16:
        half = len(bl) // 8 * 4  # whole on, off, off, on cycles in each half
        h1, h2 = block_pair_ratios(bl[:half]), block_pair_ratios(bl[half:])
        if h1 and h2:
            a.append(st.median(h1))
            b.append(st.median(h2))
ma, mb = st.mean(a), st.mean(b)
cov = sum((x - ma) * (y - mb) for x, y in zip(a, b)) / (len(a) - 1)
print("split-half n=%d corr %.3f  sd halves %.4f %.4f  sd of diff %.4f"
      % (len(a), cov / (st.stdev(a) * st.stdev(b)), st.stdev(a), st.stdev(b), st.stdev([x - y for x, y in zip(a, b)])))

# how the per-process estimate's spread falls with blocks (pairs-median over the first k)
for k in (4, 8, 16, 32, 64):
    if not any(len(bl) >= k for _, _, _, bl in rows):
        break
    sd, _, _ = pooled_sd(lambda bl, k=k: st.median(block_pair_ratios(bl[:k])))
    print("first %2d blocks: within-group SD %.4f" % (k, sd))
