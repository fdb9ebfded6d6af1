#!/usr/bin/env python3
"""page_data.py VRAMTRACE DATA_DIR - the HTML page's packed data
(src/analyze/vt_page_pack.c) read back as the page reads it: base64, gzip,
the string table and its references.  What the page shows must be the
report itself: the unpacked VT_REPORT equals `report --json` of the same
traces, VT_DIFF equals `diff --json`; and a job page stays small: every
fixture in DATA_DIR as one job, at most 50 KB a process (100 processes in
5 MB)."""
import json, os, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from page_json import unpack  # noqa: E402

vt, data = sys.argv[1], sys.argv[2]
tmp = tempfile.mkdtemp(prefix="vt_page_data.")
fails = []


def run(*args):
    return subprocess.run([vt, *args], capture_output=True, text=True)


inputs = sorted(os.path.join(data, f) for f in os.listdir(data) if f.endswith(".zst") and f.startswith("gpu-"))
inputs += [os.path.join(data, d) for d in ("seeds", "matrix")]
html = os.path.join(tmp, "job.html")
run("report", "--no-progress", "--html", html, *inputs)
got, size = unpack(html)
want = json.loads(run("report", "--no-progress", "--json", *inputs).stdout)
if got.get("VT_REPORT") != want:
    fails.append("the job page's VT_REPORT differs from report --json")
n = len(want["processes"])
if len(got.get("VT_SERIES", {}).get("processes", [])) != n:
    fails.append(f"VT_SERIES has {len(got.get('VT_SERIES', {}).get('processes', []))} processes, the report {n}")
print(f"page_data: {n} processes, page {size} bytes, {size / n / 1000:.1f} KB a process")
if n < 30 or size > 50_000 * n:
    fails.append(f"page of {n} processes is {size} bytes: over 50 KB a process")

a, b = os.path.join(data, "gpu-torch-default.zst"), os.path.join(data, "gpu-leaky-default.zst")
dh = os.path.join(tmp, "diff.html")
run("diff", "--no-progress", "--html", dh, a, b)
got, _ = unpack(dh)
want = json.loads(run("diff", "--no-progress", "--json", a, b).stdout)
if got.get("VT_DIFF") != want:
    fails.append("the diff page's VT_DIFF differs from diff --json")

for f in fails:
    print("page_data: FAIL:", f)
sys.exit(1 if fails else 0)
