#!/usr/bin/env python3
"""gate_pool.py LOG... - bench/gpu_gate.py's results pooled over runs: per
config, the median over processes of each log (on/off and pairs ratio),
then of all the given logs together with a bootstrap 95 % interval of the
median (4000 resamples, fixed seed: the same numbers every time).  Give
only logs whose configs name the same library (a config's name is all
this script knows of it).  BENCHMARKS.md's pooled step ratios come from
it, e.g.  python3 bench/gate_pool.py bench/data/gate-s11-run*.log
--diff A,B (repeatable): also the difference of the two configs' pooled
medians, from the logs that ran both (side by side on one host), with a
bootstrap interval that resamples processes within each log, e.g.
python3 bench/gate_pool.py --diff traced,floor bench/data/gate-s10-run[34].log"""
import os
import random
import statistics as st
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_configs import gate_log_processes  # noqa: E402


def interval(xs, n=4000):
    rng = random.Random(1)
    m = sorted(st.median(rng.choices(xs, k=len(xs))) for _ in range(n))
    return m[int(0.025 * n)], m[int(0.975 * n)]


def diff(per, a, b, n=4000):
    """median(a) - median(b) over the logs holding both, and its interval"""
    logs = [f for f in per.get(a, {}) if f in per.get(b, {})]
    if not logs:
        return None
    for i, name in ((0, "on/off"), (1, "pairs")):
        xa = {f: [x[i] for x in per[a][f] if x[i] is not None] for f in logs}
        xb = {f: [x[i] for x in per[b][f] if x[i] is not None] for f in logs}
        if not any(xa.values()) or not any(xb.values()):
            continue
        rng = random.Random(2)
        d0 = st.median([x for v in xa.values() for x in v]) - st.median([x for v in xb.values() for x in v])
        ds = []
        for _ in range(n):
            ra = [x for f in logs if xa[f] for x in rng.choices(xa[f], k=len(xa[f]))]
            rb = [x for f in logs if xb[f] for x in rng.choices(xb[f], k=len(xb[f]))]
            ds.append(st.median(ra) - st.median(rb))
        ds.sort()
        print("%-22s %-6s %+.3f (%+.3f..%+.3f), %d against %d processes in %d logs" %
              ("%s - %s" % (a, b), name, d0, ds[int(0.025 * n)], ds[int(0.975 * n)],
               sum(map(len, xa.values())), sum(map(len, xb.values())), len(logs)))
    return True


def main(args):
    pairs = []
    while len(args) >= 2 and args[0] == "--diff":
        pairs.append(args[1].split(",", 1))
        args = args[2:]
    logs = args
    if not logs or any(len(p) != 2 for p in pairs):
        sys.exit(__doc__)
    per = {}  # config -> log -> [(ratio, pairs)]
    for f in logs:
        for p in gate_log_processes(f):
            per.setdefault(p["config"], {}).setdefault(f, []).append((p["ratio"], p["pairs"]))
    print("%-22s %-6s %-30s %s" % ("config", "", "pooled median (95 % interval)", "per log: median (processes)"))
    for cfg, by_log in per.items():
        for i, name in ((0, "on/off"), (1, "pairs")):
            allx = [x[i] for v in by_log.values() for x in v if x[i] is not None]
            if not allx:
                continue
            lo, hi = interval(allx)
            runs = "  ".join("%s %.3f (%d)" % (os.path.basename(f), st.median([x[i] for x in v if x[i] is not None]), len(v))
                             for f, v in by_log.items() if any(x[i] is not None for x in v))
            print("%-22s %-6s %.3f (%.3f-%.3f), n %-3d      %s" % (cfg, name, st.median(allx), lo, hi, len(allx), runs))
    for a, b in pairs:
        if diff(per, a, b) is None:
            print("%s - %s: no log ran both" % (a, b))


if __name__ == "__main__":
    main(sys.argv[1:])
