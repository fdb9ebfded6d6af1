"""seeds_at.py VRAMTRACE DIR - the verdict with an early view never says
"no leak" to a leak: for each leaking pattern of tests/data/seeds (its
expect.json, written by the program from torch's own counters), the view
(--at) is put inside each of the loop's first steps and just after, and
the verdict must be "leak" or "cannot_tell", never "no_leak".  (With 3
or 4 steps in view it said no_leak: the growth test needs 5.)  A leak
verdict at such a view names its holder as the one at exit ("held at
exit by": the holder walk runs at exit), and without --at as "held by"."""
import glob
import json
import os
import subprocess
import sys

vt, top = sys.argv[1], sys.argv[2]
fails, n, n_held = [], 0, 0


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
        if k == 8 and v["kind"] == "leak":
            text = subprocess.run([vt, "report", "--no-progress", "--at", f"{t:.6f}s", d], capture_output=True,
                                  text=True).stdout
            line = next((ln for ln in text.splitlines() if ln.startswith("verdict:")), "")
            if "held by" in line:
                fails.append(f"{os.path.basename(d)} --at {t:.6f}s: the holder is not said to be the one at exit: {line}")
            n_held += "held at exit by" in line
    text = subprocess.run([vt, "report", "--no-progress", d], capture_output=True, text=True).stdout
    if "at exit by" in text:
        fails.append(f"{os.path.basename(d)}: without --at, a holder said to be at exit")
for f in fails:
    print("FAIL " + f)
print(f"seeds_at: {n_held} leak verdicts at a view name their holder at exit")
print(f"seeds_at: {n} views, {len(fails)} failed (no leak said to a leak, or a holder at exit not said so)")
sys.exit(1 if fails else 0)
