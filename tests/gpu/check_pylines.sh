#!/usr/bin/env bash
# check_pylines.sh - GPU check of Python call stacks (issue 6): PyTorch with
# PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync (one cudaMallocAsync per
# tensor) runs tests/gpu/torch_pylines.py under the injection library with
# VRAMTRACE_PYTHON_STACKS=1.  Each case allocated one tensor on a known line
# and wrote down the Python stack there (address, size, frames); the trace's
# allocation at that address must carry exactly those Python frames (file,
# function, line, in order; for nn.Linear, those frames as the outer end of
# the stack), placed after the native frames that led into the interpreter.
# Run by scripts/gpu-test.sh with VRAMTRACE_LIB (libvramtrace.so),
# VRAMTRACE_CLI (the vramtrace binary) and OUT (a directory for logs).
# Prints one summary line last; exit 0 = pass.
set -u
name=check_pylines
here=$(cd "$(dirname "$0")" && pwd)
cli=${VRAMTRACE_CLI:?VRAMTRACE_CLI must name the vramtrace binary}
lib=${VRAMTRACE_LIB:?VRAMTRACE_LIB must name libvramtrace.so}
work=${OUT:-/tmp}/pylines
rm -rf "$work"
mkdir -p "$work"
log=$work/log.txt
: >"$log"

fail() { echo "$name: FAIL: $* (log: $log)"; exit 1; }

if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>>"$log"; then
    echo "$name: SKIP: python3 with torch and a CUDA device is not available"
    exit 0
fi

CUDA_INJECTION64_PATH=$lib VRAMTRACE_PYTHON_STACKS=1 VRAMTRACE_OUTPUT="$work/pylines.%p.zst" \
    PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync \
    timeout 300 python3 "$here/torch_pylines.py" "$work/expect.json" >>"$log" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "torch_pylines.py exited $rc: $(tail -3 "$log" | tr '\n' ' ')"
traces=("$work"/pylines.*.zst)
[ -f "${traces[0]}" ] || fail "no trace written in $work"
[ ${#traces[@]} -eq 1 ] || fail "expected 1 trace, found ${#traces[@]}"
"$cli" dump --json --stacks "${traces[0]}" >"$work/dump.jsonl" 2>>"$log"
rc=$?
[ $rc -eq 0 ] || fail "vramtrace dump exited $rc (incomplete trace?)"

python3 - "$work/expect.json" "$work/dump.jsonl" >"$work/result.txt" 2>>"$log" <<'PY'
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
        if (got == want) if c["exact"] else (len(got) > len(want) and got[-len(want):] == want):
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
if problems or ok != total or total < 10:
    print("SUMMARY FAIL %d/%d cases; first problem: %s" % (ok, total, problems[0] if problems else "too few cases"))
    sys.exit(1)
print("SUMMARY PASS %d/%d allocations carry their exact Python lines (Python %s), e.g. %s"
      % (ok, total, exp["python"], example))
PY
rc=$?
cat "$work/result.txt" >>"$log"
summary=$(sed -n 's/^SUMMARY //p' "$work/result.txt" | tail -1)
[ -n "$summary" ] || fail "the checker crashed: $(tail -2 "$log" | tr '\n' ' ')"
if [ $rc -ne 0 ]; then
    fail "${summary#FAIL }"
fi
echo "$name: PASS: ${summary#PASS }"
