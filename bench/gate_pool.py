#!/usr/bin/env python3
"""gate_pool.py LOG... - bench/gpu_gate.py's results pooled over runs: per
config, the median over processes of each log (on/off and pairs ratio),
then of all the given logs together with a bootstrap 95 % interval of the
median (4000 resamples, fixed seed: the same numbers every time).  Give
only logs whose configs name the same library (a config's name is all
this script knows of it).  BENCHMARKS.md's pooled step ratios come from
it, e.g.  python3 bench/gate_pool.py bench/data/gate-s9-run[2-5].log"""
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


def main(logs):
    if not logs:
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


if __name__ == "__main__":
    main(sys.argv[1:])
