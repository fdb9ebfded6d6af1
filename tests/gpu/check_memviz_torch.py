#!/usr/bin/env python3
"""check_memviz_torch.py [--memory-viz FILE] SNAPSHOT.pickle... - PyTorch's
own reader of memory snapshots (torch.cuda._memory_viz) on the snapshots
that `vramtrace export --format memory-viz` wrote.  Every function of it
that reads a snapshot must run without error: `stats` (segsum, which
asserts that each segment's blocks add up to it), `trace` (the event list),
the `segments` and `memory` flamegraphs (their folded lines, before
flamegraph.pl, must count every byte of every segment), and `trace_plot` /
`segment_plot`, whose HTML must embed the snapshot whole.

The module is the installed torch's; --memory-viz FILE reads it from a copy
of torch/cuda/_memory_viz.py instead (its snapshot functions need only the
standard library), for a machine without torch: the copy is taken at run
time, never committed.  Prints one line per snapshot; exit 1 on any
failure."""
import base64
import importlib.util
import pickle
import re
import sys
import traceback


def load_module(path):
    if path is None:
        import torch.cuda._memory_viz as mv  # noqa: the installed torch's
        return mv
    spec = importlib.util.spec_from_file_location("_memory_viz_copy", path)
    mv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mv)
    return mv


def embedded(html):
    """The snapshot trace_plot/segment_plot embed: the longest base64 run."""
    runs = re.findall(r"[A-Za-z0-9+/=]{200,}", html)
    if not runs:
        return None
    raw = base64.b64decode(max(runs, key=len))
    try:
        return pickle.loads(raw.rstrip(b"\0"))
    except Exception:
        return pickle.loads(raw)


def folded_bytes(text):
    """The byte total of flamegraph.pl's input lines ('a;b;c COUNT')."""
    return sum(int(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.strip())


def check(mv, path):
    snap = pickle.load(open(path, "rb"))
    if isinstance(snap, list):  # segments only, as the module's own _read takes it
        snap = {"segments": snap, "device_traces": []}
    notes, bad = [], 0
    total = sum(s["total_size"] for s in snap["segments"])
    allocs = sum(1 for tr in snap.get("device_traces", []) for e in tr if e["action"] in ("alloc", "segment_alloc"))

    def step(name, fn):
        nonlocal bad
        try:
            return fn()
        except Exception as e:  # the module's own failure, named
            bad = 1
            tb = traceback.extract_tb(e.__traceback__)[-1]
            notes.append("%s FAILED: %s: %s (line %d)" % (name, type(e).__name__, e, tb.lineno))
            return None

    if step("stats", lambda: mv.segsum(snap)) is not None:
        notes.append("stats ok")
    t = step("trace", lambda: mv.trace(snap))
    if t is not None:
        notes.append("trace ok (%d lines)" % t.count("\n"))
    for name in ("segments", "memory"):
        text = step(name, lambda: getattr(mv, name)(snap, format_flamegraph=lambda s: s))
        if text is None:
            continue
        got = folded_bytes(text)
        if got != total:
            bad = 1
            notes.append("%s: the flamegraph counts %d bytes, the segments hold %d" % (name, got, total))
        else:
            notes.append("%s ok" % name)
    for name, fn in (("trace_plot", lambda: mv.trace_plot(snap)), ("segment_plot", lambda: mv.segment_plot(snap))):
        html = step(name, fn)
        if html is None:
            continue
        data = embedded(html)
        if not isinstance(data, dict):
            bad = 1
            notes.append("%s: no embedded snapshot in %d bytes of HTML" % (name, len(html)))
            continue
        n = sum(1 for tr in data.get("device_traces", []) for e in tr if e.get("action") in ("alloc", "segment_alloc"))
        if n != allocs or len(data.get("segments", [])) != len(snap["segments"]):
            bad = 1
            notes.append("%s: %d allocations, %d segments in the HTML; %d, %d in the snapshot"
                         % (name, n, len(data.get("segments", [])), allocs, len(snap["segments"])))
        else:
            notes.append("%s ok" % name)
    print("%s: %d allocations, %d segments (%d bytes): %s"
          % (path, allocs, len(snap["segments"]), total, "; ".join(notes)))
    return bad


def main(argv):
    src = None
    if argv[:1] == ["--memory-viz"]:
        src, argv = argv[1], argv[2:]
    mv = load_module(src)
    bad = sum(check(mv, p) for p in argv)
    print("check_memviz_torch: %d snapshots, %d failed (%s)" % (len(argv), bad, src or mv.__file__))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
