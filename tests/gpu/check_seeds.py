"""check_seeds.py VRAMTRACE DIR - what the report must say about the memory
patterns of tests/gpu/seeds.py and tests/gpu/seeds_native.cu, recorded by
tests/gpu/check_seeds.sh into DIR/PATTERN-MODE/ and DIR/native/ (on the
GPU machine), or kept in tests/data/seeds/ (CI replays them the same way):

  a leak     the verdict is "leak", its site is the line that allocated
             what is kept (seeds.py), the holder it names is the one the
             program keeps it in, and that holder's bytes in live blocks
             are within 5 % of the growth torch.cuda.memory_allocated()
             measured over the loop
  bounded    (a deque of 8) not a leak; the holder is still listed
  no leak    (a per-step temporary, validation without no_grad, a clean
             loop) the verdict is "no_leak"
  native     the leaks are load_batch, stage_async and map_pages (a VMM
             mapping), by name, never the CUDA runtime linked into the
             program, never scratch_ok or pool_ok

Prints one line per assertion and "check_seeds: N ok" or the failures."""
import glob
import json
import os
import subprocess
import sys

vt, top = sys.argv[1], sys.argv[2]
fails, oks = [], 0


def check(name, ok, detail=""):
    global oks
    if ok:
        oks += 1
        print("ok   " + name)
    else:
        fails.append(name)
        print("FAIL " + name + (": " + detail if detail else ""))


def report(d):
    r = subprocess.run([vt, "report", "--json", d], capture_output=True, text=True)
    if r.returncode not in (0, 1):
        raise RuntimeError(f"report {d}: exit {r.returncode}: {r.stderr[:300]}")
    procs = json.loads(r.stdout)["processes"]
    # the process that ran the loop: the one with tensors (DataLoader
    # workers use no CUDA and write no trace, but be sure)
    return max(procs, key=lambda p: p["leaks"]["bytes"] + (1 << 60 if p.get("holders") else 0))


def frame(site):
    f = (site or {}).get("user_frame") or {}
    return f.get("function"), os.path.basename(f.get("file") or ""), f.get("line")


for d in sorted(glob.glob(os.path.join(top, "*-*"))):
    ej = os.path.join(d, "expect.json")
    if not os.path.isfile(ej):
        continue
    e = json.load(open(ej))
    name = os.path.basename(d)
    try:
        p = report(d)
    except Exception as x:  # noqa: BLE001
        check(f"{name}: report", False, str(x))
        continue
    v = p["verdict"]
    holders = {h["path"]: h for h in (p.get("holders") or {}).get("list", [])}
    if e["leak"]:
        check(f"{name}: verdict leak", v["kind"] == "leak", f"{v['kind']} {v.get('reason', '')}")
        site = v.get("site")
        fn, fl, ln = frame(site)
        check(f"{name}: the kept tensors' line seeds.py:{e['line']}", fl == "seeds.py" and ln == e["line"],
              f"{fn} {fl}:{ln}")
        hb = (site or {}).get("held_by") or {}
        check(f"{name}: held by {e['holder']}", hb.get("path") == e["holder"], f"held_by {hb}")
        h = holders.get(e["holder"])
        got = h["bytes_in_live_blocks"] if h else 0
        want = e["leak_bytes"]
        check(f"{name}: {got} B held, torch says {want} B (5 %)", want > 0 and abs(got - want) <= 0.05 * want,
              f"holder {h}")
    else:
        if e["holder"]:
            check(f"{name}: bounded, not a leak", v["kind"] != "leak", f"{v['kind']}")
            check(f"{name}: the holder {e['holder']} listed", e["holder"] in holders, f"{sorted(holders)[:5]}")
        else:
            check(f"{name}: verdict no_leak", v["kind"] == "no_leak", f"{v['kind']} {frame(v.get('site'))}")
nd = os.path.join(top, "native")
if os.path.isdir(nd) and glob.glob(os.path.join(nd, "*.zst")):
    want = {}
    for line in open(os.path.join(nd, "out.txt")):
        if line.startswith("SEED_NATIVE "):
            _, fn, b = line.split()
            want[fn] = int(b)
    p = report(nd)
    v = p["verdict"]
    check("native: verdict leak", v["kind"] == "leak", v["kind"])
    sites = p["leaks"]["sites"]
    got = {}
    for s in sites:
        if not s["never_freed_bytes"]:
            continue  # listed, not counted: all freed after the view (teardown)
        fn, fl, ln = frame(s)
        got[fn] = got.get(fn, 0) + s["never_freed_bytes"]
        mod = ((s.get("user_frame") or {}).get("module") or "")
        check(f"native: leak frame {fn} is not the CUDA runtime", "cudart" not in (fn or "") and "libcudart" not in mod,
              f"{fn} in {mod}")
    for fn, b in want.items():
        check(f"native: {fn} leaks {b} B", got.get(fn, 0) == b, f"report: {got}")
    check("native: scratch_ok and pool_ok not leaks", "scratch_ok" not in got and "pool_ok" not in got, f"{got}")
print(f"check_seeds: {oks} ok" if not fails else f"check_seeds: FAIL: {len(fails)} of {oks + len(fails)}: {fails[:6]}")
sys.exit(1 if fails else 0)
