#!/usr/bin/env bash
# oom.sh VRAMTRACE TRACES DATA - OOM first (issue 33): a process that ran
# out of memory leads with it (text, JSON); the caching allocator's
# retries of one request are one failure; a library's probes
# (NOT_PERMITTED from cuMemCreate, INVALID_CONTEXT from cudaMallocAsync)
# are counted apart and nowhere as failures.  On the synthetic
# oom_retry.zst (gen_traces.c), with and without the OOM walk's holders
# file beside it, and on the real traces of tests/data.
set -u
vt=$1 traces=$2 data=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
mkdir "$tmp/t"
cp "$traces/oom_retry.zst" "$tmp/t/"
"$vt" report --no-symbols "$tmp/t/oom_retry.zst" >"$tmp/r.txt" 2>&1 || bad "report exit $?"
# the headline comes first, right under the process's title, before the verdict
line3=$(sed -n 4p "$tmp/r.txt")
[ "$line3" = "OUT OF MEMORY at train_step (/home/user/project/train.py:60): 4.00 GiB requested on device 0 at 0.010 s (CUDA_ERROR_OUT_OF_MEMORY; one request, 3 failed calls: the allocator's retries); 1 more request ran out of memory (oom section)" ] ||
    bad "headline: $line3"
sed -n 5p "$tmp/r.txt" | grep -q '^  held then: PyTorch allocated 2.00 GiB (tensors), reserved 2.00 GiB' || bad "what the allocator held: $(sed -n 5p "$tmp/r.txt")"
sed -n 6p "$tmp/r.txt" | grep -q '^  largest call sites live then: 1) 2.00 GiB at build_model (/home/user/project/train.py:20)$' ||
    bad "the trace's holders: $(sed -n 6p "$tmp/r.txt")"
sed -n 7p "$tmp/r.txt" | grep -q '^verdict: ' || bad "the verdict does not follow the headline"
grep -q '^events: 2 alloc, 0 free, 2 failed (+3 retries, 2 probes), ' "$tmp/r.txt" || bad "events: $(grep '^events' "$tmp/r.txt")"
grep -q '^2 failed allocations (2 out of memory); 3 more failed calls were the allocator.s retries of them$' "$tmp/r.txt" ||
    bad "oom count: $(grep 'failed allocation' "$tmp/r.txt")"
grep -q '^probes, not failures .*: 1 handle_type (cuMemCreate refused a handle type.*; 1 no_context (cudaMallocAsync' "$tmp/r.txt" ||
    bad "probes line: $(grep '^probes' "$tmp/r.txt")"
"$vt" report --no-symbols --json "$tmp/t/oom_retry.zst" 2>/dev/null | python3 -c '
import json, sys
p = json.load(sys.stdin)["processes"][0]
o, h = p["oom"], p["oom_headline"]
assert (o["failed"], o["out_of_memory"], o["failed_calls"], o["retries"]) == (2, 2, 7, 3), o
assert o["probes"] == {"count": 2, "by_kind": {"handle_type": 1, "no_context": 1}}, o["probes"]
assert [e["failed_calls"] for e in o["events"]] == [3, 2], o["events"]
assert all(e["error_name"] == "CUDA_ERROR_OUT_OF_MEMORY" for e in o["events"])
assert h["event"] == 0 and h["requested_bytes"] == 4 << 30 and h["failed_calls"] == 3 and h["more_out_of_memory"] == 1, h
assert h["user_frame"]["line"] == 60 and h["allocated_bytes"] == 2 << 30 and h["walk_holders"] is None, h
assert list(p).index("oom_headline") < list(p).index("verdict")
' || bad "JSON oom / oom_headline"
# with the OOM walk (PyTorch's observer): its holders in the headline
printf 'vramtrace-holders 1\nW 999 0.050000 0 -\nO 0 4294967296 2147483648 1073741824\nH 1 2147483648 0 Linear\t__main__.model.fc.weight\nH 2 1048576 0 list\t<train_step (train.py:60)>.outs\n' \
    >"$tmp/t/holders.6300.oom.txt"
"$vt" report --no-symbols "$tmp/t/oom_retry.zst" >"$tmp/w.txt" 2>&1
sed -n 6p "$tmp/w.txt" | grep -q '^  who held CUDA tensors (PyTorch.s OOM observer): 1) __main__.model.fc.weight (Linear, 1 tensor, 2.00 GiB); 2) <train_step (train.py:60)>.outs (list, 2 tensors, 1.00 MiB)$' ||
    bad "walk holders in the headline: $(sed -n 6p "$tmp/w.txt")"
"$vt" report --no-symbols --json "$tmp/t/oom_retry.zst" 2>/dev/null | python3 -c '
import json, sys
h = json.load(sys.stdin)["processes"][0]["oom_headline"]
assert [x["path"] for x in h["walk_holders"]] == ["__main__.model.fc.weight", "<train_step (train.py:60)>.outs"], h
' || bad "JSON walk_holders"
# real traces: torch_tracker.py's 1 TiB request is one failure of 3 calls
# (default: cudaMalloc, its retry, the tracker's report; expandable: two
# cuMemCreate failures and the report, beside the handle-type probe)
for m in default expandable; do
    "$vt" report --no-symbols "$data/gpu-torch-tracker-$m.zst" >"$tmp/$m.txt" 2>&1
    sed -n 4p "$tmp/$m.txt" | grep -q "^OUT OF MEMORY at <module> (.*torch_tracker.py:49): 1.00 TiB requested on device 0 at .* (CUDA_ERROR_OUT_OF_MEMORY; one request, 3 failed calls: the allocator's retries)$" ||
        bad "$m headline: $(sed -n 4p "$tmp/$m.txt")"
    sed -n 5p "$tmp/$m.txt" | grep -q '^  held then: PyTorch allocated 115.08 MiB (tensors), reserved' || bad "$m held: $(sed -n 5p "$tmp/$m.txt")"
done
"$vt" report --no-symbols --json "$data/gpu-torch-tracker-expandable.zst" 2>/dev/null | python3 -c '
import json, sys
p = json.load(sys.stdin)["processes"][0]
o = p["oom"]
assert (o["failed"], o["out_of_memory"], o["failed_calls"], o["retries"]) == (1, 1, 4, 2), o
assert o["probes"]["by_kind"] == {"handle_type": 1}, o["probes"]
assert p["oom_headline"]["requested_bytes"] == 1 << 40 and p["oom_headline"]["allocated_bytes"] > 0, p["oom_headline"]
' || bad "tracker-expandable JSON"
# clean runs: the expandable allocator's probe and cudaMallocAsync's are no failure
for f in gpu-torch-expandable:handle_type gpu-torch-async:no_context; do
    "$vt" report --no-symbols "$data/${f%%:*}.zst" >"$tmp/c.txt" 2>&1
    grep -q '^OUT OF MEMORY' "$tmp/c.txt" && bad "${f%%:*}: an OOM headline"
    grep -q '^events: .* 0 failed (+1 probe)' "$tmp/c.txt" || bad "${f%%:*}: $(grep '^events' "$tmp/c.txt")"
    grep -q '^no allocation failed$' "$tmp/c.txt" || bad "${f%%:*}: failures in the oom section"
    "$vt" report --no-symbols --json "$data/${f%%:*}.zst" 2>/dev/null | python3 -c '
import json, sys
p = json.load(sys.stdin)["processes"][0]
assert p["oom_headline"] is None and p["oom"]["failed"] == 0 and p["oom"]["events"] == [], p["oom"]
assert p["oom"]["probes"] == {"count": 1, "by_kind": {sys.argv[1]: 1}}, p["oom"]["probes"]
assert p["verdict"]["kind"] != "cannot_tell" or "failed" not in p["verdict"].get("reason", "")
' "${f#*:}" || bad "${f%%:*}: JSON probes"
done
[ $fail -eq 0 ] && echo "oom: ok"
exit $fail
