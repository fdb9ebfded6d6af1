#!/usr/bin/env bash
# holders.sh VRAMTRACE GEN_TRACES - who holds it (issue 25): the synthetic
# caching_tensors.zst (pid 6200: weights held since the start, one kept
# output per step) with a holders.6200.txt beside it, as the walk at exit
# writes it: the verdict names the holder first, each leak and growing site
# says what holds it, JSON carries held_by; a site nothing holds says so;
# without the file nothing changes; a damaged file is one note.
set -u
vt=$1 gen=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
"$gen" "$tmp/g" >/dev/null || { echo "FAIL: gen_traces"; exit 1; }
mkdir "$tmp/t"
cp "$tmp/g/caching_tensors.zst" "$tmp/t/"
"$vt" report --no-symbols "$tmp/t/caching_tensors.zst" >"$tmp/before.txt" 2>&1
grep -q 'held by' "$tmp/before.txt" && bad "held by without a holders file"
python3 - "$tmp/t/holders.6200.txt" <<'PY'
import sys
B = 0x900000000
with open(sys.argv[1], "w") as f:
    f.write("vramtrace-holders 1\nW 12345 0.120000 0 -\n")
    f.write("H 16 8388608 1048576 list\t__main__.trainer.loss_buffer\n")
    for k in range(16):
        f.write("P %x %d 0\n" % (B + k * 512 * 1024, 512 * 1024))
    f.write("P dead0000 4096 1\n")  # a graph's storage in no live block: joined to nothing
PY
"$vt" report --no-symbols "$tmp/t/caching_tensors.zst" >"$tmp/r.txt" 2>&1
grep -q '^verdict: LEAK held by __main__.trainer.loss_buffer (list, 16 tensors, 8.00 MiB; + 1.00 MiB of autograd graph: 9.00 MiB in all), allocated at keep_outputs (/home/user/project/train.py:50)' "$tmp/r.txt" ||
    bad "verdict: $(grep '^verdict' "$tmp/r.txt")"
# a trace linked into a job's directory: its holders are found beside the
# file the link names
mkdir "$tmp/job"
ln -s "$tmp/t/caching_tensors.zst" "$tmp/job/rank0.zst"
"$vt" report --no-symbols "$tmp/job" 2>&1 | grep -q '^verdict: LEAK held by __main__.trainer.loss_buffer' ||
    bad "a linked trace: its holders not found beside the link's target"
[ "$(grep -c '    held by __main__.trainer.loss_buffer' "$tmp/r.txt")" -ge 2 ] || bad "the leak and growth sites do not say their holder"
grep -q 'held by no Python object reachable from module globals' "$tmp/r.txt" || bad "the weights' site does not say that nothing holds it"
"$vt" report --no-symbols --json "$tmp/t/caching_tensors.zst" 2>/dev/null | python3 -c '
import json, sys
p = json.load(sys.stdin)["processes"][0]
h = p["verdict"]["site"]["held_by"]
assert h["path"] == "__main__.trainer.loss_buffer" and h["tensors"] == 16 and h["site_bytes_held"] == 16 * 512 * 1024, h
assert p["holders"]["objects_walked"] == 12345 and p["holders"]["list"][0]["bytes_in_live_blocks"] == 16 * 512 * 1024, p["holders"]
assert any(s["held_by"] is None for s in p["leaks"]["sites"])
' || bad "JSON held_by"
# the program's exit freed what the walk at exit saw (the walk runs in a
# child after it: caching_teardown.zst frees every tensor after the last
# kernel): the holder still joins to those blocks, live at the view
mkdir "$tmp/td"
cp "$tmp/g/caching_teardown.zst" "$tmp/t/holders.6200.txt" "$tmp/td/"
"$vt" report --no-symbols "$tmp/td/caching_teardown.zst" >"$tmp/td.txt" 2>&1
grep -q '^verdict: LEAK held by __main__.trainer.loss_buffer (list, 16 tensors, 8.00 MiB; + 1.00 MiB of autograd graph: 9.00 MiB in all), allocated at keep_outputs' "$tmp/td.txt" ||
    bad "teardown: verdict: $(grep '^verdict' "$tmp/td.txt")"
# the growing site is the leak even though the exit freed it: counted in
# the total, its row says so, --fail-on-leak catches it; the rest of the
# teardown (the model's weights) is not counted
grep -q '^8.00 MiB leaked, in 16 blocks (8.00 MiB of it freed only at teardown, from sites that grew' "$tmp/td.txt" ||
    bad "teardown: the leak total leaves the verdict's leak out: $(grep 'blocks' "$tmp/td.txt" | head -2)"
grep -q 'freed at teardown, after the view: 10.00 MiB in 3 blocks' "$tmp/td.txt" || bad "teardown: the frees after the view are not said"
grep -q '16 allocated in all; freed only at teardown, counted: it grew' "$tmp/td.txt" || bad "teardown: the growing row does not say it counts"
"$vt" report --no-symbols --fail-on-leak 7M "$tmp/td/caching_teardown.zst" >/dev/null 2>&1
[ $? = 3 ] || bad "teardown: --fail-on-leak 7M does not catch the 8 MiB the verdict names"
"$vt" report --no-symbols --fail-on-leak 9M "$tmp/td/caching_teardown.zst" >/dev/null 2>&1
[ $? = 0 ] || bad "teardown: --fail-on-leak 9M fails on 8 MiB"
"$vt" report --no-symbols --json "$tmp/td/caching_teardown.zst" 2>/dev/null | python3 -c '
import json, sys
p = json.load(sys.stdin)["processes"][0]
assert p["holders"]["list"][0]["bytes_in_live_blocks"] == 16 * 512 * 1024, p["holders"]
assert p["verdict"]["site"]["held_by"]["path"] == "__main__.trainer.loss_buffer", p["verdict"]
assert p["leaks"]["bytes"] == 8 << 20 and p["leaks"]["freed_at_teardown_counted_bytes"] == 8 << 20, p["leaks"]
assert p["leaks"]["teardown_bytes"] == 10 << 20, p["leaks"]
' || bad "teardown: JSON held_by, leaks"
# the walks before the end: at the first failed allocation (PyTorch's OOM
# observer) and on a signal, said as the walk found them
printf 'vramtrace-holders 1\nW 999 0.050000 0 -\nO 0 1073741824 8388608 4096\nH 3 6291456 0 local variable\t<step (train.py:42)>.big\nP 900000000 2097152 0\nH 16 8388608 1048576 list\t__main__.trainer.loss_buffer\n' \
    >"$tmp/t/holders.6200.oom.txt"
printf 'vramtrace-holders 1\nW 500 0.010000 0 -\nS 12\nH 4 2097152 0 list\t__main__.trainer.loss_buffer\n' >"$tmp/t/holders.6200.sig-1.txt"
"$vt" report --no-symbols "$tmp/t/caching_tensors.zst" >"$tmp/w.txt" 2>&1
grep -q '^who held CUDA tensors at the first failed allocation (1.00 GiB requested on device 0, 8.00 MiB allocated, 4.00 KiB free; PyTorch.s OOM observer walked 999 objects' "$tmp/w.txt" ||
    bad "no OOM walk in the report: $(grep -i 'who held' "$tmp/w.txt")"
oom_first=$(grep -A1 '^who held CUDA tensors at the first' "$tmp/w.txt" | tail -1)
[ "$oom_first" = "    1) __main__.trainer.loss_buffer (list, 16 tensors, 8.00 MiB; + 1.00 MiB of autograd graph: 9.00 MiB in all)" ] || bad "OOM walk order: $oom_first"
grep -q '    2) <step (train.py:42)>.big (local variable, 3 tensors, 6.00 MiB)' "$tmp/w.txt" || bad "the OOM walk's local"
grep -q '^-- who held CUDA tensors on signal 12 (walk 1 at the program.s request' "$tmp/w.txt" || bad "no signal walk"
"$vt" report --no-symbols --json "$tmp/t/caching_tensors.zst" 2>/dev/null | python3 -c '
import json, sys
w = json.load(sys.stdin)["processes"][0]["walks"]
assert [x["when"] for x in w] == ["oom", "signal"] and w[0]["request_bytes"] == 1 << 30 and w[1]["signal"] == 12, w
assert w[0]["holders"][1]["path"] == "<step (train.py:42)>.big", w[0]
' || bad "JSON walks"
rm -f "$tmp/t/holders.6200.oom.txt" "$tmp/t/holders.6200.sig-1.txt"
# the walk at exit runs in a child after the program: while it holds
# holders.6200.pending locked, the report waits for it (and says so)
mv "$tmp/t/holders.6200.txt" "$tmp/h.txt"
: >"$tmp/t/holders.6200.pending"
flock -x "$tmp/t/holders.6200.pending" sh -c "sleep 1; mv '$tmp/h.txt' '$tmp/t/holders.6200.txt'; rm -f '$tmp/t/holders.6200.pending'" &
for _ in $(seq 100); do flock -n -s "$tmp/t/holders.6200.pending" true 2>/dev/null || break; sleep 0.02; done
"$vt" report --no-symbols "$tmp/t/caching_tensors.zst" >"$tmp/p.txt" 2>"$tmp/p.err"
wait
grep -q '^verdict: LEAK held by __main__.trainer.loss_buffer' "$tmp/p.txt" || bad "a pending walk was not waited for: $(grep '^verdict' "$tmp/p.txt")"
grep -q 'waiting for the holder walk of process 6200, which runs after the program ends' "$tmp/p.err" || bad "the wait is not said: $(cat "$tmp/p.err")"
# a marker left by a walk that died (nothing holds its lock): no wait, no holders
mv "$tmp/t/holders.6200.txt" "$tmp/h.txt"
: >"$tmp/t/holders.6200.pending"
"$vt" report --no-symbols "$tmp/t/caching_tensors.zst" >"$tmp/s.txt" 2>"$tmp/s.err"
grep -q 'held by' "$tmp/s.txt" && bad "held by from a dead walk"
grep -q 'waiting' "$tmp/s.err" && bad "waited for a dead walk"
rm -f "$tmp/t/holders.6200.pending"
printf 'vramtrace-holders 1\nX what\n' >"$tmp/t/holders.6200.txt"
"$vt" report --no-symbols "$tmp/t/caching_tensors.zst" >"$tmp/d.txt" 2>&1
grep -q 'holders.6200.txt: line 2: not a holders line' "$tmp/d.txt" || bad "no note of the damaged holders file"
[ $fail -eq 0 ] && echo "holders: ok"
exit $fail
