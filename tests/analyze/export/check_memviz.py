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
segments equal the device bytes the report finds never freed (the
snapshot is the state at the trace's end), and, for one process on one
device without tensor events, the Active Memory Timeline's peak lies
within 1 % of the report's (VMM mappings are blocks there).
Prints a summary; exit 1 on the first fault."""
import bisect
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


def annotate(tr):
    """annotate_snapshot: free_requested directly followed by the
    free_completed of its address is one 'free'."""
    out = []
    for e in tr:
        if e["action"] == "free_completed" and out and out[-1]["action"] == "free_requested" \
                and out[-1]["addr"] == e["addr"]:
            out[-1] = dict(out[-1], action="free")
            continue
        out.append(e)
    return out


def check_viewer(d, tr, segs):
    """What MemoryViz.js needs of one device (docs/EXPORT.md, "What the
    viewer relies on"); segs: [(address, total_size, [(addr, size, state)])]
    of this device.  Returns the Active Memory Timeline's peak."""
    w0 = "device %d" % d
    # a segment-level trace (no tensor events: every alloc is the one block
    # of the segment or mapping just made) carries every mapping's block
    # too, alloc after its segment_map, else the Active Memory Timeline
    # leaves the mapped memory out (expandable segments without tensors)
    own = lambda i: i > 0 and tr[i - 1]["action"] in ("segment_alloc", "segment_map") and \
        tr[i - 1]["addr"] == tr[i]["addr"] and tr[i - 1]["size"] == tr[i]["size"]
    if all(own(i) for i, e in enumerate(tr) if e["action"] == "alloc"):
        for i, e in enumerate(tr):
            if e["action"] == "segment_map" and not (
                    i + 1 < len(tr) and tr[i + 1]["action"] == "alloc" and tr[i + 1]["addr"] == e["addr"]):
                fail("%s entry %d: segment_map of 0x%x without the alloc of its block in a trace without tensor "
                     "events: the Active Memory Timeline leaves the mapped memory out" % (w0, i, e["addr"]))
    ev = annotate(tr)
    # the same moment: the segments are the state after the last entry
    last_blk, last_seg, seg_alloced = {}, {}, set()
    for e in ev:
        a = e["action"]
        if a in ("alloc", "free", "free_completed"):
            last_blk[e["addr"]] = a
        elif a in ("segment_alloc", "segment_free"):
            last_seg[e["addr"]] = a
            seg_alloced.add(e["addr"])
    active = {}
    for (sa, ss, blocks) in segs:
        for (ba, bs, st) in blocks:
            if st in ("active_allocated", "active_pending_free"):
                active[ba] = (bs, sa)
    for ba, (bs, sa) in active.items():
        if last_blk.get(ba) in ("free", "free_completed"):
            fail("%s: block 0x%x is freed by the trace and active in the segments: the Active Memory Timeline "
                 "counts it twice (segments and entries of different moments)" % (w0, ba))
        if ba not in last_blk and sa in seg_alloced:
            fail("%s: block 0x%x active in a segment the trace allocates, without an alloc: the timeline draws "
                 "it from the start" % (w0, ba))
    for ba, a in last_blk.items():
        if a == "alloc" and ba not in active:
            fail("%s: block 0x%x allocated by the trace, never freed, not in the segments" % (w0, ba))
    starts = {sa for (sa, _, _) in segs}
    for sa, a in last_seg.items():
        if (a == "segment_alloc") != (sa in starts):
            fail("%s: segment 0x%x %s by the trace's end but %s the segments" % (
                w0, sa, "live" if a == "segment_alloc" else "freed", "not in" if a == "segment_alloc" else "in"))

    # the Allocator State History: MemoryView's simulate_memory replays the
    # entries backwards from the segments; at every event index every block
    # must lie in a segment (find_segment), every segment_alloc undone must
    # name a segment, every segment_map undone lie inside one
    seg_starts = sorted(starts)
    seg_size = {sa: ss for (sa, ss, _) in segs}
    max_size = [max(seg_size.values(), default=0)]
    blk = {ba: bs for ba, (bs, _) in active.items()}
    blk_sorted = sorted(blk)

    def seg_of(addr):
        # segments of one device may overlap where the trace's own blocks
        # do (reader-writer: a 3 MiB block at 0x7f2000400000 and a 1 MiB
        # one at 0x7f2000600000, both live); the viewer draws that
        # (memviz_driver.mjs), so look back past a nearer segment
        i = bisect.bisect_right(seg_starts, addr) - 1
        while i >= 0 and seg_starts[i] + max_size[0] > addr:
            if addr < seg_starts[i] + seg_size[seg_starts[i]]:
                return seg_starts[i]
            i -= 1
        return None

    def orphaned(lo, hi, w):
        i = bisect.bisect_left(blk_sorted, lo)
        if i < len(blk_sorted) and blk_sorted[i] < hi:
            fail("%s: block 0x%x in no segment (find_segment returns null)" % (w, blk_sorted[i]))

    def seg_add(addr, size):
        bisect.insort(seg_starts, addr)
        seg_size[addr] = size
        max_size[0] = max(max_size[0], size)

    def seg_del(addr):
        seg_starts.pop(bisect.bisect_left(seg_starts, addr))
        del seg_size[addr]

    for i in range(len(ev) - 1, 0, -1):
        e, w = ev[i], "%s entry %d of %d (annotated)" % (w0, i, len(ev))
        a, addr, size = e["action"], e["addr"], e["size"]
        if a in ("free", "free_completed"):
            if seg_of(addr) is None:
                fail("%s: block 0x%x freed here lies in no segment before it" % (w, addr))
            if addr not in blk:
                bisect.insort(blk_sorted, addr)
            blk[addr] = size
        elif a == "free_requested":
            if addr not in blk:
                fail("%s: free_requested of 0x%x, no block there after it" % (w, addr))
        elif a == "alloc":
            if addr in blk:
                del blk[addr]
                blk_sorted.pop(bisect.bisect_left(blk_sorted, addr))
        elif a in ("segment_free", "segment_unmap"):
            # two segments of one device at one address: a process's
            # entries in another's device, or a free without its alloc
            if addr in seg_size:
                fail("%s: segment 0x%x freed where a live segment starts" % (w, addr))
            seg_add(addr, size)
        elif a == "segment_alloc":
            if seg_size.get(addr) is None:
                fail("%s: segment_alloc of 0x%x, no segment there after it" % (w, addr))
            seg_del(addr)
            orphaned(addr, addr + size, w)
        elif a == "segment_map":
            s0 = seg_of(addr)
            if s0 is None or addr + size > s0 + seg_size[s0]:
                fail("%s: segment_map of 0x%x+%d inside no segment after it (unmap_segment throws)" % (w, addr, size))
            end0 = s0 + seg_size[s0]
            seg_del(s0)
            if s0 < addr:
                seg_add(s0, addr - s0)
            if addr + size < end0:
                seg_add(addr + size, end0 - addr - size)
            orphaned(addr, addr + size, w)

    # the Active Memory Timeline's peak, as process_alloc_data sums it
    live, initial = {}, 0
    for e in ev:
        if e["action"] == "alloc":
            live[e["addr"]] = e["size"]
        elif e["action"] in ("free", "free_completed") and e["addr"] in live:
            del live[e["addr"]]
        elif e["action"] in ("free", "free_completed"):
            initial += e["size"]
    for ba, (bs, _) in active.items():
        if ba not in live:
            initial += bs
    cur = peak = initial
    live = {}
    for e in ev:
        if e["action"] == "alloc":
            live[e["addr"]] = e["size"]
            cur += e["size"]
        elif e["action"] in ("free", "free_completed"):
            cur -= live.pop(e["addr"], e["size"])
        peak = max(peak, cur)
    return peak




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
    by_dev = {}
    for k, s in enumerate(snap["segments"]):
        blocks, at = [], s.get("address")
        by_dev.setdefault(s.get("device"), []).append((at, s.get("total_size"), blocks))
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
            blocks.append((s["address"] + total, b["size"], b["state"]))
            total += b["size"]
            if b["state"] == "active_allocated":
                active += b["size"]
        if total != s["total_size"]:
            fail("%s: blocks sum to %d, total_size %d" % (w, total, s["total_size"]))
    peak = 0
    for d, tr in enumerate(snap["device_traces"]):
        peak += check_viewer(d, tr, by_dev.get(d, []))
    if report:
        r = json.load(open(report))
        want = 0
        for p in r["processes"]:
            want += p["leaks"]["module_globals_bytes"]  # device memory too, apart in the report
            # VMM memory is a block where the process has no tensor events
            # (each mapping its own block); else the tensors inside are
            tensors = any(dv.get("caching_allocator") for dv in p.get("devices", []))
            for site in p["leaks"]["sites"]:
                if site["kind"] not in ("pinned_host", "host_registered") and (site["api"] != "vmm" or not tensors):
                    want += site["never_freed_bytes"]  # live at the trace's end: the snapshot's moment
            if p["leaks"]["sites_total"] > len(p["leaks"]["sites"]):
                want = None
                break
        if want is not None and want != active:
            fail("segments hold %d active bytes, the report %d live at the end" % (active, want))
        # the Active Memory Timeline's peak against the report's, where the
        # two count the same blocks: one process, no caching-allocator
        # tensors (their segments are the report's live bytes), no host kinds
        devs = [dv for p in r["processes"] for dv in p.get("devices", [])]
        if len(r["processes"]) == 1 and len(devs) == 1 and not devs[0].get("caching_allocator") and \
                not set(devs[0].get("by_kind", {})) & {"pinned_host", "host_registered"}:
            # no tensor events: every VMM mapping is a block of the
            # timeline (alloc after its segment_map), as the report counts
            # the memory it maps
            wp = devs[0]["peak_live_bytes"]
            if wp and abs(peak - wp) > 0.01 * wp:
                fail("Active Memory Timeline peak %d, the report's %d" % (peak, wp))
    print("check_memviz: ok: %d devices, %d entries, %d segments, %d bytes active at the end, timeline peak %d"
          % (len(snap["device_traces"]), n_entries, len(snap["segments"]), active, peak))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
