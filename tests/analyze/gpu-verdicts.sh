#!/bin/bash
# gpu-verdicts.sh VRAMTRACE DATADIR - what the report must conclude on the
# real traces of leaky_train.py (tests/data/gpu-leaky-*.zst):
# the list is the only growing site (about 1 MiB per step), the bounded
# cache and the 256 MiB temporary are not; the allocator mode is named.
set -u
vt=$1 dir=$2
python3 - "$vt" "$dir" <<'PY'
import json, subprocess, sys
vt, d = sys.argv[1], sys.argv[2]
fails = 0
def rep(m):
    out = subprocess.run([vt, "report", "--no-symbols", "--json", f"{d}/gpu-leaky-{m}.zst"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["processes"][0]
def check(name, ok):
    global fails
    print(("ok   " if ok else "FAIL ") + name)
    fails += not ok
p = rep("tensors")
g = p["growth"]["sites"]
fn = [s["site"]["user_frame"]["function"] for s in g if s["site"]["user_frame"]]
check("tensors: one growing site, keep_history", fn == ["keep_history"])
check("tensors: ~1 MiB per step", g and 0.9 < g[0]["rate_bytes_per_step"] / 2**20 < 1.2)
check("tensors: 60 NVTX steps", p["growth"]["steps"]["count"] == 60 and p["growth"]["steps"]["source"] == "nvtx")
check("tensors: tensor-level allocator", p["allocator"]["mode"] == "pytorch_async" and p["allocator"]["tensor_level"])
leaks = [s["user_frame"]["function"] for s in p["leaks"]["sites"] if s["user_frame"]]
check("tensors: the kept outputs are live at the view", "keep_history" in leaks)
for m, mode in (("default", "pytorch_caching"), ("expandable", "pytorch_expandable")):
    p = rep(m)
    check(f"{m}: allocator mode {mode}", p["allocator"]["mode"] == mode)
    check(f"{m}: advice to record tensors", "--tensors" in (p["allocator"]["advice"] or ""))
    g = p["growth"]["sites"]
    check(f"{m}: segment growth ~1 MiB per step", len(g) == 1 and 0.9 < g[0]["rate_bytes_per_step"] / 2**20 < 1.2)
p = rep("expandable")
check("expandable: steps detected from kernels", p["growth"]["steps"]["source"] == "kernels"
      and 55 <= p["growth"]["steps"]["count"] <= 65)
# the kernel-period detector against the NVTX steps where both exist
import glob, os
for f in sorted(glob.glob(f"{d}/gpu-*.zst") + glob.glob(f"{d}/seeds/*/*.zst")):
    out = subprocess.run([vt, "report", "--no-symbols", "--json", f], capture_output=True, text=True).stdout
    try:
        procs = json.loads(out)["processes"]
    except (ValueError, KeyError):
        continue
    for q in procs:
        st = q["growth"]["steps"]
        if st and st["source"] == "nvtx" and st["kernel_count"]:
            check(f"{os.path.relpath(f, d)}: kernel steps {st['kernel_count']} ~ NVTX steps {st['count']}",
                  abs(st["kernel_count"] - st["count"]) <= 1)
sys.exit(1 if fails else 0)
PY
