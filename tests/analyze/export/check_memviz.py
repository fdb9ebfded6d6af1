#!/usr/bin/env python3
"""check_memviz.py FILE [REPORT_JSON] - a `vramtrace export --format
memory-viz` snapshot as torch.cuda._memory_viz reads it: a pickle of
{"device_traces": [[entry]...], "segments": [segment]}; entries with a
known action, int addr/size/time_us, frames as lists of {filename, line,
name} (entries in stream order: module globals, from CUPTI's activity
records, come late with earlier times); per device every free_completed follows its free_requested and an
alloc of that address, every segment_free a segment_alloc; every segment's
blocks tile it (their sizes sum to total_size) with known states.  With
the report's JSON (vramtrace report --json) the bytes active in the
segments equal the device bytes the report finds live at the view.
Prints a summary; exit 1 on the first fault."""
import json
import pickle
import sys

ACTIONS = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "segment_map",
           "segment_unmap", "oom", "snapshot"}
STATES = {"active_allocated", "active_pending_free", "inactive"}


def fail(msg):
    print("check_memviz: FAIL: " + msg)
    sys.exit(1)


def check_frames(fr, where):
    if not isinstance(fr, list):
        fail("%s: frames not a list" % where)
    for f in fr:
        if not (isinstance(f, dict) and isinstance(f.get("filename"), str) and isinstance(f.get("line"), int)
                and isinstance(f.get("name"), str)):
            fail("%s: frame %r" % (where, f))


def main(path, report=None):
    snap = pickle.load(open(path, "rb"))
    if not isinstance(snap, dict) or not isinstance(snap.get("device_traces"), list) or \
            not isinstance(snap.get("segments"), list):
        fail("not a snapshot dict with device_traces and segments")
    n_entries = 0
    for d, tr in enumerate(snap["device_traces"]):
        live, pending, segs = {}, set(), {}
        for k, e in enumerate(tr):
            w = "device %d entry %d" % (d, k)
            a = e.get("action")
            if a not in ACTIONS:
                fail("%s: action %r" % (w, a))
            for f in ("addr", "size", "stream", "time_us"):
                if not isinstance(e.get(f), int):
                    fail("%s: %s %r" % (w, f, e.get(f)))
            check_frames(e.get("frames"), w)
            addr = e["addr"]
            if a == "alloc":
                live[addr] = e["size"]
            elif a == "free_requested":
                if addr not in live:
                    fail("%s: free_requested of an address never allocated" % w)
                pending.add(addr)
            elif a == "free_completed":
                if addr not in pending:
                    fail("%s: free_completed without free_requested" % w)
                pending.discard(addr)
                del live[addr]
            elif a == "segment_alloc":
                segs[addr] = e["size"]
            elif a == "segment_free":
                if addr not in segs:
                    fail("%s: segment_free of no segment" % w)
                del segs[addr]
            elif a == "oom" and not isinstance(e.get("device_free"), int):
                fail("%s: oom without device_free" % w)
            n_entries += 1
    active = 0
    for k, s in enumerate(snap["segments"]):
        w = "segment %d" % k
        for f in ("device", "address", "total_size", "allocated_size", "active_size", "stream"):
            if not isinstance(s.get(f), int):
                fail("%s: %s %r" % (w, f, s.get(f)))
        if s["device"] >= len(snap["device_traces"]) and snap["device_traces"]:
            fail("%s: device %d has no trace" % (w, s["device"]))
        total = 0
        for b in s["blocks"]:
            if b.get("state") not in STATES or not isinstance(b.get("size"), int) or b["size"] <= 0:
                fail("%s: block %r" % (w, {k: b.get(k) for k in ("state", "size")}))
            check_frames(b.get("frames"), w)
            total += b["size"]
            if b["state"] == "active_allocated":
                active += b["size"]
        if total != s["total_size"]:
            fail("%s: blocks sum to %d, total_size %d" % (w, total, s["total_size"]))
    if report:
        r = json.load(open(report))
        want = 0
        for p in r["processes"]:
            want += p["leaks"]["module_globals_bytes"]  # device memory too, apart in the report
            for site in p["leaks"]["sites"]:
                if site["kind"] not in ("pinned_host", "host_registered") and site["api"] != "vmm":
                    want += site["bytes"] - site.get("after_view_bytes", 0)  # the snapshot is at the view
            if p["leaks"]["sites_total"] > len(p["leaks"]["sites"]):
                want = None
                break
        if want is not None and want != active:
            fail("segments hold %d active bytes, the report %d live at the view" % (active, want))
    print("check_memviz: ok: %d devices, %d entries, %d segments, %d bytes active at the view"
          % (len(snap["device_traces"]), n_entries, len(snap["segments"]), active))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
