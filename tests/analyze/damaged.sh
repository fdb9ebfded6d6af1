#!/bin/bash
# damaged.sh VRAMTRACE TRACES_DIR - a trace damaged in 20 of its 60-odd zstd
# frames: report reads every good frame to the end (it used to give up after
# 16 errors and lose the rest), shows the first 16 errors and counts the rest.
set -u
vt=$1 dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$dir/frames.zst" "$tmp/damaged.zst" <<'PY' || exit 1
import sys
d = bytearray(open(sys.argv[1], 'rb').read())
magic = b'\x28\xb5\x2f\xfd'
offs, i = [], d.find(magic)
while i >= 0:
    offs.append(i)
    i = d.find(magic, i + 1)
if len(offs) < 45:
    sys.exit('frames.zst has only %d frames' % len(offs))
for k in range(1, 40, 2):  # frames 1, 3, ..., 39: 20 damaged, the last ones intact
    d[(offs[k] + offs[k + 1]) // 2] ^= 0xff
open(sys.argv[2], 'wb').write(d)
PY
"$vt" report --json "$dir/frames.zst" >"$tmp/good.json" 2>/dev/null || { echo "FAIL: the undamaged trace"; exit 1; }
"$vt" report --json "$tmp/damaged.zst" >"$tmp/bad.json" 2>"$tmp/err"
rc=$?
[ $rc = 1 ] || { echo "FAIL: exit $rc, expected 1 (read errors)"; exit 1; }
python3 - "$tmp/good.json" "$tmp/bad.json" "$tmp/err" <<'PY'
import json, sys
good = json.load(open(sys.argv[1]))['processes'][0]
bad = json.load(open(sys.argv[2]))['processes'][0]
err = open(sys.argv[3]).read()
fails = []
if not bad['complete'] or bad['end_reason'] != 'normal':
    fails.append('did not read to the End record: complete=%s end=%s' % (bad['complete'], bad['end_reason']))
if bad['duration_s'] != good['duration_s']:
    fails.append('duration %s, undamaged %s' % (bad['duration_s'], good['duration_s']))
shown = err.count('corrupt zstd frame')
if shown != 16:
    fails.append('%d errors shown, expected the first 16' % shown)
if '4 more read errors not shown (20 in all' not in err:
    fails.append('no summary of the other 4 errors:\n' + err)
for f in fails:
    print('FAIL:', f)
if fails:
    sys.exit(1)
print('ok: 20 damaged frames, read to the end, 16 errors shown, 4 counted')
PY
