#!/usr/bin/env bash
# job.sh VRAMTRACE TRACES - a job of two ranks (issue 39) on the synthetic
# traces of gen_traces.c (gen_job_rank): job_leak/, where only rank 1
# keeps a tensor a step (keep_outputs, dist_job.py:50, held by
# __main__.history), and job_oom/, where rank 1 runs out of memory
# (train_step, dist_job.py:60) and rank 0, left waiting, is killed by
# signal 15.  The merged verdict, in the text, the JSON and the page's
# data, names the leaking rank with its line and holder, says rank 0 is
# clean, and names the rank that ran out of memory and how the other ended.
set -u
vt=$1 traces=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
cd "$traces" || exit 1

# -- one rank leaks
"$vt" report --no-symbols job_leak >"$tmp/leak.txt" 2>&1 || bad "report job_leak exit $?"
sed -n '/^== all 2 processes merged/,$p' "$tmp/leak.txt" >"$tmp/leak-merged.txt"
[ -s "$tmp/leak-merged.txt" ] || bad "no merged part"
sed -n 2p "$tmp/leak-merged.txt" | grep -qx 'verdict: LEAK in rank 1 (1 of 2 processes); no leak in rank 0' ||
    bad "merged verdict: $(sed -n 2p "$tmp/leak-merged.txt")"
sed -n 3p "$tmp/leak-merged.txt" | grep -q '^  rank 1 (pid 9101 on testhost): LEAK held by __main__.history (list, 24 tensors, 12.00 MiB), allocated at keep_outputs (/home/user/project/dist_job.py:50): +11.00 MiB, 512.00 KiB per step over 24 steps' ||
    bad "rank 1's line: $(sed -n 3p "$tmp/leak-merged.txt")"
grep -q '^  rank 0 ' "$tmp/leak-merged.txt" && bad "a clean rank has a verdict line of its own in the merged part"
# each process's own part is titled by its rank too
grep -q '^== process 2: dist_job.py (pid 9101 on testhost, rank 1) ==$' "$tmp/leak.txt" || bad "rank 1's title"
# the merged rows say which ranks a call site is in
sed -n '/^-- merged growth/,$p' "$tmp/leak-merged.txt" | sed -n 2p | grep -q ' in 1 process (rank 1)$' ||
    bad "the merged growth row does not name rank 1: $(sed -n '/^-- merged growth/,$p' "$tmp/leak-merged.txt" | sed -n 2p)"
# NCCL's buffers are listed (outside the allocator, with their library)
grep -q 'libnccl.so.2' "$tmp/leak-merged.txt" || bad "NCCL's buffers are not in the merged rows"
"$vt" report --no-symbols --json job_leak 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
v = d["merged"]["verdict"]
assert v["kind"] == "leak" and v["processes_leaking"] == 1 and v["processes_out_of_memory"] == 0, v
by = {p["name"]: p for p in v["processes"]}
assert sorted(by) == ["rank 0", "rank 1"], list(by)
r1, r0 = by["rank 1"], by["rank 0"]
assert r1["kind"] == "leak" and r1["rank"] == "1" and r1["pid"] == 9101, r1
assert r1["user_frame"]["function"] == "keep_outputs" and r1["user_frame"]["line"] == 50, r1["user_frame"]
assert r1["held_by"]["path"] == "__main__.history" and r1["held_by"]["tensors"] == 24, r1["held_by"]
assert r1["grown_bytes"] > 10 << 20, r1
assert r0["kind"] == "no_leak" and r0["user_frame"] is None and r0["held_by"] is None, r0
g = d["merged"]["growth"]
assert len(g) == 1 and g[0]["processes"] == 1 and g[0]["process_names"] == ["rank 1"], g
assert all(len(x["process_names"]) == min(x["processes"], 4) for x in d["merged"]["leaks"]), d["merged"]["leaks"]
# the same processes as the report lists, by index
for p in v["processes"]:
    q = d["processes"][p["process"]]
    assert (q["pid"], q["rank"], q["verdict"]["kind"]) == (p["pid"], p["rank"], p["kind"]), (p, q["pid"])
' || bad "JSON merged.verdict of job_leak"

# -- one rank runs out of memory, the other is left waiting
"$vt" report --no-symbols job_oom >"$tmp/oom.txt" 2>&1 || bad "report job_oom exit $?"
sed -n '/^== all 2 processes merged/,$p' "$tmp/oom.txt" >"$tmp/oom-merged.txt"
sed -n 2p "$tmp/oom-merged.txt" | grep -qx 'verdict: no leak in any of the 2 processes (rank 0, rank 1)' ||
    bad "merged verdict: $(sed -n 2p "$tmp/oom-merged.txt")"
sed -n 3p "$tmp/oom-merged.txt" | grep -qx 'OUT OF MEMORY in rank 1 (1 of 2 processes); no request ran out of memory in rank 0' ||
    bad "OOM line: $(sed -n 3p "$tmp/oom-merged.txt")"
sed -n 4p "$tmp/oom-merged.txt" | grep -q '^  rank 1 (pid 9201 on testhost): OUT OF MEMORY at train_step (/home/user/project/dist_job.py:60): 4.00 GiB requested on device 1 ' ||
    bad "rank 1's OOM: $(sed -n 4p "$tmp/oom-merged.txt")"
sed -n 5p "$tmp/oom-merged.txt" | grep -q '^    held then: PyTorch allocated 2.00 GiB (tensors)' || bad "held then: $(sed -n 5p "$tmp/oom-merged.txt")"
sed -n 6p "$tmp/oom-merged.txt" | grep -q "^    who held CUDA tensors (PyTorch's OOM observer): 1) __main__.model.fc.weight (Linear, 1 tensor, 2.00 GiB)$" ||
    bad "who held it: $(sed -n 6p "$tmp/oom-merged.txt")"
sed -n 7p "$tmp/oom-merged.txt" | grep -qx '  rank 0 (pid 9200 on testhost): no request ran out of memory; its trace ends at 0.048 s, killed by signal 15 (SIGTERM)' ||
    bad "rank 0's end: $(sed -n 7p "$tmp/oom-merged.txt")"
"$vt" report --no-symbols --json job_oom 2>/dev/null | python3 -c '
import json, sys
v = json.load(sys.stdin)["merged"]["verdict"]
assert v["kind"] == "no_leak" and v["processes_out_of_memory"] == 1, v
by = {p["name"]: p for p in v["processes"]}
o = by["rank 1"]["out_of_memory"]
assert o["requested_bytes"] == 4 << 30 and o["device"] == 1 and o["user_frame"]["line"] == 60, o
assert o["walk_holders"][0]["path"] == "__main__.model.fc.weight", o
r0 = by["rank 0"]
assert r0["out_of_memory"] is None and r0["complete"] and r0["end_reason"] == "signal" and r0["end_signal"] == 15, r0
' || bad "JSON merged.verdict of job_oom"

# -- a process without a rank is named by its pid; two jobs in one report
# (the same rank twice) by rank and pid
mkdir -p "$tmp/two"
cp job_leak/vramtrace.*.r1.*.zst "$tmp/two/a.zst"
cp job_oom/vramtrace.*.r1.*.zst "$tmp/two/b.zst"
"$vt" report --no-symbols "$tmp/two" 2>/dev/null | grep -qx 'verdict: LEAK in rank 1 (pid 9101) (1 of 2 processes); no leak in rank 1 (pid 9201)' ||
    bad "the same rank twice: $("$vt" report --no-symbols "$tmp/two" 2>/dev/null | grep '^verdict: LEAK in')"

# -- the page: its data is the JSON's (analyze.page_data checks that);
# the merged view names the ranks (viewer/app.js reads merged.verdict)
grep -q 'verdict.processes' "$here/../../viewer/app.js" ||
    bad "viewer/app.js does not read merged.verdict.processes"
[ $fail = 0 ] && echo "ok: the job's merged verdict names the leaking and the out-of-memory rank"
exit $fail
