"""pylines_check.py EXPECT_JSON DUMP_JSONL - compare the Python frames of a
trace's allocations with the stacks a script wrote down when it made them.

EXPECT_JSON: {"python": VERSION, "cases": [{"case", "addr", "size", "stack",
"exact"}]} where stack is [[file, function, line], ...] innermost first
(torch_pylines.py on the GPU, tests/inject/test_pystack_trace.py on the
CPU).  DUMP_JSONL: `vramtrace dump --json --stacks TRACE`.  For each case an
allocation at that address of at least that size must have exactly those
Python frames (exact; extra innermost frames only from inside the torch
package) or end with them after frames of the callee (not exact), and start
with a native frame.  Prints "ok ..." per case, "problem: ..." lines and a last line
"SUMMARY PASS|FAIL ..."; exit 0 = pass.
"""
import json, os, sys

exp = json.load(open(sys.argv[1]))
allocs = {}  # address -> [alloc records]
notes = []
header = None
for line in open(sys.argv[2]):
    line = line.strip()
    if not line:
        continue
    try:
        r = json.loads(line)
    except ValueError:
        print("bad JSON line in dump: %.120s" % line)
        sys.exit(1)
    t = r.get("type")
    if t == "alloc":
        allocs.setdefault(int(str(r.get("addr", "0")), 16), []).append(r)
    elif t == "note":
        notes.append(str(r.get("text", "")))
    elif t == "header":
        header = r

problems = []
for n in notes:
    if "python stacks off" in n:
        problems.append("the library says: " + n)
if header is not None and not header.get("python_stacks", 1):
    problems.append("header: python_stacks is off")


def pyframes(rec):
    return [[f.get("file"), f.get("function"), f.get("line")]
            for f in rec.get("frames", []) if f.get("kind") == "python"]


def shape(rec):
    s, last = [], None
    for f in rec.get("frames", []):
        k = "P" if f.get("kind") == "python" else "N"
        if k == last:
            s[-1][1] += 1
        else:
            s.append([k, 1])
            last = k
    return " ".join("%s%d" % (k, c) for k, c in s)


ok = 0
example = ""
for c in exp["cases"]:
    want = c["stack"]
    recs = [r for r in allocs.get(c["addr"], []) if int(r.get("size", 0)) >= c["size"]]
    if not recs:
        problems.append("%s: no allocation at 0x%x of >= %d bytes in the trace"
                        % (c["case"], c["addr"], c["size"]))
        continue
    good = None
    for r in recs:
        got = pyframes(r)
        extra = got[:len(got) - len(want)]
        ends = len(got) >= len(want) and got[len(got) - len(want):] == want
        if c["exact"]:
            # a torch function may be Python-wrapped in some versions: extra
            # innermost frames are accepted only from inside the torch package
            ok_here = ends and all("/torch/" in str(f[0]) for f in extra)
        else:
            ok_here = ends and len(extra) > 0
        if ok_here:
            good = r
            break
    if good is None:
        r = recs[-1]
        problems.append("%s: Python frames %s, want %s%s (stack shape %s)"
                        % (c["case"], pyframes(r), "" if c["exact"] else "... + ", want, shape(r)))
        continue
    frames = good.get("frames", [])
    if not frames or frames[0].get("kind") != "native":
        problems.append("%s: the stack does not start with the native allocation call (shape %s)"
                        % (c["case"], shape(good)))
        continue
    ok += 1
    if not example:
        f = want[0]
        example = "%s -> %s:%d in %s [%s]" % (c["case"], os.path.basename(f[0]), f[2], f[1], shape(good))
    print("ok %-12s %s" % (c["case"], shape(good)))

for p in problems:
    print("problem:", p)
total = len(exp["cases"])
if problems or ok != total or total < int(os.environ.get("VT_PYLINES_MIN_CASES", "10")):
    print("SUMMARY FAIL %d/%d cases; first problem: %s" % (ok, total, problems[0] if problems else "too few cases"))
    sys.exit(1)
print("SUMMARY PASS %d/%d allocations carry their exact Python lines (Python %s), e.g. %s"
      % (ok, total, exp["python"], example))
