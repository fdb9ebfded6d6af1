"""check_dist.py VRAMTRACE DIR... - the checks of a job of two ranks
(issue 39) on its recording: DIR holds what `vramtrace record -o DIR --
torchrun --nproc_per_node=2 tests/gpu/dist_job.py MODE --expect DIR` left
(one trace per rank, the holders files, the symbols) and each rank's
expect.rank{R}.json (what torch said: pids, the mode, the lines of the
leak and of the OOM, torch.cuda.memory_allocated() at the end).  The same
checks run on the GPU machine (tests/gpu/check_dist.sh) and on the
fixtures in CI (tests/data/ddp, tests/data/fsdp; ctest analyze.dist):

- two traces, named by rank (.r0. and .r1.), the ranks' pids, nothing
  from the launcher (no trace of torch.distributed.run);
- NCCL's buffers listed outside PyTorch's allocator with their library
  (a call site, not a tensor, with a frame in libnccl);
- the merged verdict, text and JSON: a clean job is clean in every rank; a
  leaking rank is named with its line and holder, the other said clean;
  the rank that ran out of memory is named with its line and who held
  the memory, the other rank's trace ends without an OOM;
- allocated at the view against torch.cuda.memory_allocated() at the end.

Prints "ok"/"FAIL" lines and "check_dist: N ok, M failed" last; exit 1 on
a failure, 77 when a DIR holds no expect file (nothing to check)."""
import glob
import json
import os
import re
import subprocess
import sys

vt, dirs = sys.argv[1], sys.argv[2:]
fails, oks = [], 0


def check(name, ok, detail=""):
    global oks
    if ok:
        oks += 1
        print("ok   " + name)
    else:
        fails.append(name)
        print("FAIL " + name + (": " + str(detail)[:400] if detail else ""))
    return ok


def run(args):
    r = subprocess.run([vt] + args, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def frames(site):
    return (site or {}).get("stack") or []


def nccl_sites(p):
    """call sites outside the allocator with a frame in NCCL's library"""
    found = {}
    rows = list(p["leaks"]["sites"]) + [s for d in p["peak"] for s in d["sites"]]
    for s in rows:
        if s.get("kind") == "tensor":
            continue
        for f in frames(s):
            m = os.path.basename(f.get("module") or "")
            if "nccl" in m.lower() or "nccl" in (f.get("function") or "").lower():
                found[s["key"]] = (m or f.get("function"), s["bytes"], s.get("api"))
                break
    return found


def one(d):
    name = os.path.basename(os.path.normpath(d))
    ex = {}
    for f in glob.glob(os.path.join(d, "expect.rank*.json")):
        e = json.load(open(f))
        ex[e["rank"]] = e
    if not ex:
        print(f"{name}: no expect.rank*.json in {d}")
        return False
    mode = next(iter(ex.values()))["mode"]
    leak_rank = next(iter(ex.values()))["leak_rank"]
    oom_rank = next(iter(ex.values()))["oom_rank"]
    tag = f"{name} ({mode})"
    traces = sorted(os.path.basename(t) for t in glob.glob(os.path.join(d, "*.zst")))
    check(f"{tag}: two traces", len(traces) == 2, traces)
    check(f"{tag}: named by rank", sorted(re.sub(r".*\.(r\d+)\.\d+\.zst$", r"\1", t) for t in traces) == ["r0", "r1"], traces)
    rc, out, err = run(["report", "--json", "--no-progress", "--top", "100", "--frames", "64", d])
    # a rank stopped by the launcher (oom1's rank 0) may end without its
    # End record: reported, with exit 1 for what could not be read
    check(f"{tag}: report --json exit {'0 or 1' if oom_rank >= 0 else 0}", rc == 0 or (rc == 1 and oom_rank >= 0),
          err[-300:])
    try:
        rep = json.loads(out)
    except ValueError:
        check(f"{tag}: report --json is JSON", False, out[:200])
        return True
    procs = rep["processes"]
    by_rank = {p.get("rank"): p for p in procs}
    check(f"{tag}: ranks 0 and 1 in the report", sorted(by_rank) == ["0", "1"], [p.get("rank") for p in procs])
    for r, e in ex.items():
        p = by_rank.get(str(r))
        if not p:
            continue
        check(f"{tag}: rank {r}'s trace is its process (pid {e['pid']})", p["pid"] == e["pid"], p["pid"])
        check(f"{tag}: rank {r} ran dist_job.py, not the launcher",
              any("dist_job.py" in a for a in p["argv"]) and not any("torch.distributed.run" in a or a.endswith("torchrun")
                                                                      for a in p["argv"]), p["argv"])
        ns = nccl_sites(p)
        check(f"{tag}: rank {r}: NCCL's buffers outside the allocator, with their library", len(ns) > 0,
              "no call site through libnccl among leaks and peak rows")
        if ns:
            libs = sorted({v[0] for v in ns.values()})
            print(f"     rank {r}: {len(ns)} NCCL call sites, {sum(v[1] for v in ns.values()) / 2**20:.1f} MiB, "
                  f"through {', '.join(libs)}, api {', '.join(sorted({str(v[2]) for v in ns.values()}))}")
        # allocated at the view (the last kernel) against memory_allocated() at the end
        if e.get("outcome") == "done":
            dev = next((x for x in p["devices"] if x.get("caching_allocator")), None)
            got = dev["caching_allocator"]["allocated"]["at_view_bytes"] if dev else None
            want = e["allocated"]
            check(f"{tag}: rank {r}: allocated at the view {got} ~ torch.cuda.memory_allocated() {want}",
                  got is not None and abs(got - want) <= max(2 << 20, want // 20), (got, want))
    m = rep.get("merged") or {}
    v = m.get("verdict") or {}
    named = {q["name"]: q for q in v.get("processes", [])}
    check(f"{tag}: merged verdict names rank 0 and rank 1", sorted(named) == ["rank 0", "rank 1"], list(named))
    rc, text, _ = run(["report", "--no-progress", d])
    merged = text[text.find("== all 2 processes merged"):] if "== all 2 processes merged" in text else ""
    check(f"{tag}: the text has the merged part", bool(merged))
    vline = next((ln for ln in merged.splitlines() if ln.startswith("verdict: ")), "")
    if leak_rank < 0:
        check(f"{tag}: no rank leaks", v.get("kind") == "no_leak" and v.get("processes_leaking") == 0, v.get("kind"))
        check(f"{tag}: text: no leak in any rank", vline == "verdict: no leak in any of the 2 processes (rank 0, rank 1)", vline)
    else:
        other = 1 - leak_rank
        e = ex[leak_rank]
        q = named.get(f"rank {leak_rank}", {})
        f = q.get("user_frame") or {}
        check(f"{tag}: the merged verdict is a leak in one rank", v.get("kind") == "leak" and v.get("processes_leaking") == 1, v)
        check(f"{tag}: rank {leak_rank} leaks at {e['leak_function']} ({e['file']}:{e['leak_line']})",
              q.get("kind") == "leak" and f.get("function") == e["leak_function"] and f.get("line") == e["leak_line"] and
              os.path.basename(f.get("file") or "") == e["file"], (q.get("kind"), f))
        check(f"{tag}: rank {leak_rank}'s holder is {e['leak_holder']}",
              ((q.get("held_by") or {}).get("path") or "") == e["leak_holder"], q.get("held_by"))
        if e.get("kept_bytes"):
            g = q.get("grown_bytes", 0)
            check(f"{tag}: rank {leak_rank} grew {g} of the {e['kept_bytes']} bytes it kept",
                  0.7 * e["kept_bytes"] <= g <= 1.1 * e["kept_bytes"] + (4 << 20), (g, e["kept_bytes"]))
        check(f"{tag}: rank {other} is clean", named.get(f"rank {other}", {}).get("kind") == "no_leak",
              named.get(f"rank {other}", {}).get("kind"))
        want = f"verdict: LEAK in rank {leak_rank} (1 of 2 processes); no leak in rank {other}"
        check(f"{tag}: text: '{want}'", vline == want, vline)
        nxt = merged.splitlines()[2] if len(merged.splitlines()) > 2 else ""
        check(f"{tag}: text: rank {leak_rank}'s line and holder",
              nxt.startswith(f"  rank {leak_rank} (pid {e['pid']}") and f"{e['file']}:{e['leak_line']})" in nxt and
              e["leak_holder"] in nxt, nxt)
    if oom_rank >= 0:
        other = 1 - oom_rank
        e = ex.get(oom_rank, {})
        q = named.get(f"rank {oom_rank}", {})
        o = q.get("out_of_memory") or {}
        f = o.get("user_frame") or {}
        check(f"{tag}: rank {oom_rank} wrote its expect file (it ran out of memory)", e.get("outcome") == "oom", e.get("outcome"))
        check(f"{tag}: one rank ran out of memory", v.get("processes_out_of_memory") == 1, v.get("processes_out_of_memory"))
        check(f"{tag}: rank {oom_rank} ran out of memory at {e.get('oom_function')} ({e.get('file')}:{e.get('oom_line')})",
              f.get("function") == e.get("oom_function") and f.get("line") == e.get("oom_line"), f)
        holders = [h["path"] for h in (o.get("walk_holders") or [])]
        check(f"{tag}: who held the memory: {e.get('oom_holder')}", e.get("oom_holder") in holders, holders)
        q0 = named.get(f"rank {other}", {})
        p0 = by_rank.get(str(other)) or {}
        check(f"{tag}: rank {other}'s trace ends without an OOM",
              q0.get("out_of_memory") is None and (p0.get("oom") or {}).get("out_of_memory", 1) == 0, q0)
        print(f"     rank {other}: complete {q0.get('complete')}, end {q0.get('end_reason')} signal {q0.get('end_signal')}, "
              f"{q0.get('duration_s')} s")
        oline = next((ln for ln in merged.splitlines() if ln.startswith("OUT OF MEMORY in ")), "")
        want = f"OUT OF MEMORY in rank {oom_rank} (1 of 2 processes); no request ran out of memory in rank {other}"
        check(f"{tag}: text: '{want}'", oline == want, oline)
        check(f"{tag}: text: rank {other}'s end said",
              any(ln.startswith(f"  rank {other} (pid ") and "no request ran out of memory; its trace ends at" in ln
                  for ln in merged.splitlines()), merged[:600])
    return True


seen = 0
for d in dirs:
    if one(d):
        seen += 1
print(f"check_dist: {oks} ok, {len(fails)} failed" + (": " + "; ".join(fails[:6]) if fails else ""))
sys.exit(1 if fails else 0 if seen else 77)
