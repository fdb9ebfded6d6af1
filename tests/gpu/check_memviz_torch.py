#!/usr/bin/env python3
"""check_memviz_torch.py SNAPSHOT.pickle... - on the GPU machine: PyTorch's
own readers on snapshots that `vramtrace export --format memory-viz` wrote
from real traces of the PyTorch loop: `python3 -m torch.cuda._memory_viz
trace_plot`, `segment_plot` and `stats` must run without error; the HTML
that trace_plot and segment_plot write must carry the snapshot's
allocations (its embedded data decoded and counted), and the bytes active
in the segments must be what the snapshot says.  Prints one line per
snapshot; exit 1 on any failure."""
import base64
import pickle
import re
import subprocess
import sys
import tempfile


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


def main(paths):
    bad = 0
    for path in paths:
        snap = pickle.load(open(path, "rb"))
        allocs = sum(1 for tr in snap["device_traces"] for e in tr if e["action"] in ("alloc", "segment_alloc"))
        active = sum(b["size"] for s in snap["segments"] for b in s["blocks"] if b["state"] == "active_allocated")
        notes = []
        for cmd in ("trace_plot", "segment_plot", "stats"):
            with tempfile.NamedTemporaryFile(suffix=".html") as out:
                args = [sys.executable, "-m", "torch.cuda._memory_viz", cmd, path]
                if cmd != "stats":
                    args += ["-o", out.name]
                p = subprocess.run(args, capture_output=True, text=True, timeout=300)
                if p.returncode != 0:
                    notes.append("%s FAILED: %s" % (cmd, p.stderr.strip()[-300:]))
                    bad = 1
                    continue
                if cmd == "stats":
                    notes.append("stats ok (%d lines)" % len(p.stdout.splitlines()))
                    continue
                html = open(out.name).read()
                data = embedded(html)
                if data is None:
                    notes.append("%s: no embedded snapshot in %d bytes of HTML" % (cmd, len(html)))
                    bad = 1
                    continue
                traces = data.get("device_traces", []) if isinstance(data, dict) else []
                n = sum(1 for tr in traces for e in tr if e.get("action") in ("alloc", "segment_alloc"))
                segs = len(data.get("segments", [])) if isinstance(data, dict) else 0
                if cmd == "trace_plot" and n != allocs:
                    notes.append("trace_plot: %d allocations in the HTML, %d in the snapshot" % (n, allocs))
                    bad = 1
                elif cmd == "segment_plot" and segs != len(snap["segments"]):
                    notes.append("segment_plot: %d segments in the HTML, %d in the snapshot" % (segs, len(snap["segments"])))
                    bad = 1
                else:
                    notes.append("%s ok (%d bytes of HTML, %d allocations, %d segments)" % (cmd, len(html), n, segs))
        print("%s: %d allocations, %d segments, %d bytes active at the view: %s"
              % (path, allocs, len(snap["segments"]), active, "; ".join(notes)))
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
