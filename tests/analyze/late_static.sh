#!/usr/bin/env bash
# late_static.sh VRAMTRACE TRACES_DIR - the peak when an allocation's record
# arrives after later events (a module's globals, from an activity record):
# late_static.zst of gen_traces.c.  The 1 MiB global was made while the
# 76 MiB peak held, so the peak is 77 MiB at its time (3.5 ms) and it is one
# of the peak's call sites; the 2 MiB global came after the level fell and
# is in neither; by kind, device_static peaks at 3 MiB (both, at the end).
set -u
vt=$1 dir=$2
"$vt" report --no-symbols --json "$dir/late_static.zst" | python3 -c '
import json, sys
p = json.load(sys.stdin)["processes"][0]
d = p["devices"][0]
MiB = 1 << 20
errs = []
if d["peak_live_bytes"] != 77 * MiB:
    errs.append("peak %s, 77 MiB wanted" % d["peak_live_bytes"])
if abs(d["peak_time_s"] - 0.0035) > 1e-6:
    errs.append("peak at %s s, 0.0035 wanted" % d["peak_time_s"])
k = d["by_kind"]
if k["device"]["peak_bytes"] != 76 * MiB or k["device_static"]["peak_bytes"] != 3 * MiB:
    errs.append("by kind: %s" % k)
pk = p["peak"][0]
kinds = sorted((s["kind"], s["bytes"]) for s in pk["sites"])
if pk["bytes"] != 77 * MiB or kinds != [("device", 76 * MiB), ("device_static", 1 * MiB)]:
    errs.append("the peak'"'"'s call sites: %s in all, %s" % (pk["bytes"], kinds))
for e in errs:
    print("FAIL: late_static: " + e)
print("ok: the peak with a late record" if not errs else "%d failed" % len(errs))
sys.exit(1 if errs else 0)
'
