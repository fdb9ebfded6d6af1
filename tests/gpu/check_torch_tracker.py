"""check_torch_tracker.py CLI TRACE_DIR MARKS_JSON - the analyzer on a trace
of tests/gpu/torch_tracker.py in PyTorch's default (or expandable)
allocator with tensor events (tests/gpu/check_torch_tracker.sh):
- at each NVTX mark, the report's allocated and reserved (`report --at
  MARK --json`, devices[0].caching_allocator) within 1 % of
  torch.cuda.memory_allocated() / memory_reserved() printed there;
- every tensor allocation freed or live at the end (dump: no free of an
  unknown tensor, no tensor allocated over a live one);
- the verdict: a leak at the logger's own line (torch_tracker.py:LEAK_LINE);
- the 1 TiB request's out-of-memory error as one failed tensor allocation
  at its own line, with allocated, reserved and the largest free block.
Exit 0 when all hold; prints one line per check."""
import json
import re
import subprocess
import sys

cli, tdir, marks_path = sys.argv[1:4]
want = json.load(open(marks_path))
bad = 0


def check(ok, what):
    global bad
    print(("ok   " if ok else "FAIL ") + what)
    bad += not ok


for m in want["marks"]:
    r = subprocess.run([cli, "report", "--at", m["name"], "--json", tdir], capture_output=True, text=True)
    d = json.loads(r.stdout)
    ca = d["processes"][0]["devices"][0].get("caching_allocator")
    if not ca:
        check(False, f"{m['name']}: no caching_allocator section")
        continue
    for k in ("allocated", "reserved"):
        got, exp = ca[k]["at_view_bytes"], m[k]
        check(abs(got - exp) <= 0.01 * exp, f"{m['name']}: {k} {got} B, torch.cuda says {exp} B "
              f"({100.0 * (got - exp) / exp:+.4f} %)")

dump = subprocess.run([cli, "dump", tdir], capture_output=True, text=True).stdout
live, over, unknown, n = {}, 0, 0, 0
for ln in dump.splitlines():
    if "api=caching_allocator" not in ln or " alloc_failed " in ln:
        continue
    a = int(re.search(r"addr=(0x[0-9a-f]+)", ln).group(1), 16)
    if " alloc " in ln:
        n += 1
        over += a in live
        live[a] = 1
    elif " free " in ln:
        if a in live:
            del live[a]
        else:
            unknown += 1
check(n > 1000 and over == 0 and unknown == 0,
      f"{n} tensor allocations: {over} over a live tensor, {unknown} frees of no live tensor, {len(live)} live at the end")

r = subprocess.run([cli, "report", "--json", tdir], capture_output=True, text=True)
v = json.loads(r.stdout)["processes"][0]["verdict"]
uf = (v.get("site") or {}).get("user_frame") or {}
check(v["kind"] == "leak" and v.get("tensor_level") and (uf.get("file") or "").endswith("torch_tracker.py")
      and uf.get("line") == want["leak_line"],
      f"verdict {v['kind']} at {uf.get('file')}:{uf.get('line')} (the logger is line {want['leak_line']}), "
      f"{v.get('rate_bytes_per_step', 0) / 2**20:.2f} MiB per step")
proc = json.loads(r.stdout)["processes"][0]
if proc.get("holders"):  # recorded with the holder walk (issue 25): the logger's list holds the leak
    hb = (v.get("site") or {}).get("held_by") or {}
    check(hb.get("path") == "__main__.history" and hb.get("tensors") == want["steps"],
          f"held by {hb.get('path')} ({hb.get('tensors')} tensors, {hb.get('bytes')} B; "
          f"the walk: {proc['holders']['objects_walked']} objects in {proc['holders']['walk_s']:.3f} s)")
if "oom_line" in want:  # fixtures recorded before the OOM case have none
    ooms = json.loads(r.stdout)["processes"][0]["oom"]["events"]
    t = [e for e in ooms if e["api"] == "caching_allocator"]
    uf = (t[0].get("user_frame") or {}) if t else {}
    check(len(t) == 1 and t[0]["requested_bytes"] >= 1 << 40 and uf.get("line") == want["oom_line"]
          and "caching_allocator" in t[0],
          f"{len(t)} failed tensor allocation(s): {t[0]['requested_bytes'] if t else 0} B requested at line "
          f"{uf.get('line')} (the request is line {want['oom_line']}), "
          f"allocated/reserved then {(t[0].get('caching_allocator') or {}) if t else {}}")
sys.exit(1 if bad else 0)
