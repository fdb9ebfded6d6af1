#!/usr/bin/env python3
"""check_chrome.py FILE - a `vramtrace export --format chrome` file as
chrome://tracing and Perfetto's JSON importer read it: it parses; every
event has a phase, a pid and a numeric ts >= 0; per thread, B/E pairs nest
in time order and X slices come sorted and nest; async b/e pair by (cat, id)
with e after b; counters carry numeric args; metadata names processes and
threads.  Prints a summary; exit 1 on the first fault."""
import json
import sys


def fail(msg):
    print("check_chrome: FAIL: " + msg)
    sys.exit(1)


def main(path):
    doc = json.load(open(path))
    ev = doc["traceEvents"] if isinstance(doc, dict) else doc
    if not isinstance(ev, list) or not ev:
        fail("no traceEvents")
    stacks, xs, asyncs, counts = {}, {}, {}, {}
    named_p, named_t = set(), set()
    for n, e in enumerate(ev):
        ph = e.get("ph")
        counts[ph] = counts.get(ph, 0) + 1
        if "pid" not in e:
            fail("event %d without pid" % n)
        if ph == "M":
            if e["name"] == "process_name":
                named_p.add(e["pid"])
            if e["name"] == "thread_name":
                named_t.add((e["pid"], e["tid"]))
            if not isinstance(e.get("args"), dict):
                fail("metadata %d without args" % n)
            continue
        ts = e.get("ts")
        if not isinstance(ts, (int, float)) or ts < 0:
            fail("event %d: ts %r" % (n, ts))
        if "args" in e and not isinstance(e["args"], dict):
            fail("event %d: args not an object" % n)
        key = (e["pid"], e.get("tid"))
        if ph == "B":
            stacks.setdefault(key, []).append(ts)
        elif ph == "E":
            st = stacks.get(key)
            if not st:
                fail("event %d: E without B on %s" % (n, key))
            if ts < st.pop():
                fail("event %d: E before its B" % n)
        elif ph == "X":
            d = e.get("dur")
            if not isinstance(d, (int, float)) or d < 0:
                fail("event %d: dur %r" % (n, d))
            xs.setdefault(key, []).append((ts, ts + d, n))
        elif ph in ("b", "e"):
            k = (e.get("cat"), e.get("id"))
            if ph == "b":
                if k in asyncs:
                    fail("event %d: async id %s begun twice" % (n, k))
                asyncs[k] = ts
            else:
                if k not in asyncs:
                    fail("event %d: async end without begin %s" % (n, k))
                if ts < asyncs.pop(k):
                    fail("event %d: async end before its begin" % n)
        elif ph == "C":
            a = e.get("args")
            if not a or not all(isinstance(v, (int, float)) for v in a.values()):
                fail("event %d: counter args not numeric" % n)
        elif ph == "i":
            pass
        else:
            fail("event %d: phase %r" % (n, ph))
        if ph in ("B", "E", "X", "i", "b", "e") and key not in named_t:
            fail("event %d on an unnamed thread %s" % (n, key))
        if e["pid"] not in named_p:
            fail("event %d in an unnamed process %s" % (n, e["pid"]))
    for k, st in stacks.items():
        if st:
            fail("thread %s: %d B without E" % (k, len(st)))
    if asyncs:
        fail("%d async begins without end" % len(asyncs))
    for k, v in xs.items():
        open_ = []
        last = -1
        for t0, t1, n in v:
            if t0 < last:
                fail("thread %s: X %d out of order" % (k, n))
            last = t0
            while open_ and open_[-1] <= t0 + 1e-3:  # abutting, within float rounding
                open_.pop()
            if open_ and t1 > open_[-1] + 1e-3:
                fail("thread %s: X %d overlaps without nesting" % (k, n))
            open_.append(t1)
    print("check_chrome: ok: %d events (%s), %d threads with slices"
          % (len(ev), ", ".join("%s %d" % (k, c) for k, c in sorted(counts.items())), len(xs)))


if __name__ == "__main__":
    main(sys.argv[1])
