"""seeds_at.py VRAMTRACE DIR - the verdict with an early view never says
"no leak" to a leak: for each leaking pattern of tests/data/seeds (its
expect.json, written by the program from torch's own counters), the view
(--at) is put inside each of the loop's first steps and just after, and
the verdict must be "leak" or "cannot_tell", never "no_leak".  (With 3
or 4 steps in view it said no_leak: the growth test needs 5.)"""
import glob
import json
import os
import subprocess
import sys

vt, top = sys.argv[1], sys.argv[2]
fails, n = [], 0


def report(d, *args):
    r = subprocess.run([vt, "report", "--no-progress", "--json", *args, d], capture_output=True, text=True)
    if r.returncode not in (0, 1):
        raise RuntimeError(f"report {' '.join(args)} {d}: exit {r.returncode}: {r.stderr[:300]}")
    return json.loads(r.stdout)["processes"][0]


for d in sorted(glob.glob(os.path.join(top, "*-*"))):
    ej = os.path.join(d, "expect.json")
    if not os.path.isfile(ej) or not json.load(open(ej)).get("leak"):
        continue
    p = report(d)
    st, sites = p["growth"]["steps"], p["growth"]["sites"]
    if not st or not sites:
        fails.append(f"{os.path.basename(d)}: no steps or no growing site without --at")
        continue
    t0, per = min(s["window_start_s"] for s in sites), st["period_s"]
    for k in range(0, 9):
        t = t0 + (k + 0.5) * per
        v = report(d, "--at", f"{t:.6f}s")["verdict"]
        n += 1
        if v["kind"] == "no_leak":
            fails.append(f"{os.path.basename(d)} --at {t:.6f}s (about {k + 1} steps in view): no_leak over "
                         f"{v['steps']} steps")
for f in fails:
    print("FAIL " + f)
print(f"seeds_at: {n} views, {len(fails)} said no leak to a leak")
sys.exit(1 if fails else 0)
