#!/usr/bin/env bash
# export.sh VRAMTRACE DATA_DIR GOLDEN_DIR - `vramtrace export` end to end on
# every real fixture of DATA_DIR and on the directory as one job: each
# format is checked by its validator (check_perfetto.py: the structure
# trace_processor needs; perfetto_schema.py wire: each field's wire type
# as Perfetto's official schema has it; check_chrome.py: what the JSON
# importers need; check_memviz.py: what torch.cuda._memory_viz reads, and the bytes active
# at the view against the report's), exports are deterministic, a damaged
# or truncated trace exits 1 with what was readable, usage errors exit 2,
# the Chrome size limit refuses and leaves no file, and the golden text
# forms of two small fixtures (Perfetto through protoc with the project's
# schema subset, Chrome JSON, the pickle as JSON) are unchanged
# (VT_UPDATE_GOLDEN=1 rewrites them).
set -u
bin=$1
data=$2
golden=$3
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/vt_export.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
pass=0
fails=0
ok() { pass=$((pass + 1)); }
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }
check() { # FORMAT FILE [REPORT]
    case $1 in
    perfetto) python3 "$here/check_perfetto.py" "$2" &&
        python3 "$here/perfetto_schema.py" wire "$here/perfetto_fields.tsv" "$2" ;;
    chrome) python3 "$here/check_chrome.py" "$2" ;;
    memory-viz) python3 "$here/check_memviz.py" "$2" ${3:+"$3"} ;;
    esac >"$tmp/check.out" 2>&1
}
X="--no-progress --no-symbols"
for f in "$data"/*.zst; do
    n=$(basename "$f" .zst)
    want=0
    case $n in *damaged* | *truncated* | gpu-crash-kill) want=1 ;; esac
    "$bin" report --json --top 100000 $X "$f" >"$tmp/$n.report.json" 2>/dev/null
    for fmt in perfetto chrome memory-viz; do
        o=$tmp/$n.$fmt
        "$bin" export $X --format $fmt -o "$o" "$f" 2>"$tmp/err"
        rc=$?
        [ $rc = $want ] || { bad "$n $fmt: exit $rc, want $want"; cat "$tmp/err"; continue; }
        if [ $want = 1 ] && ! grep -q 'offset' "$tmp/err"; then bad "$n $fmt: no offset in the error"; fi
        rep=""
        [ $want = 0 ] && [ $fmt = memory-viz ] && rep=$tmp/$n.report.json
        if check $fmt "$o" $rep; then ok; else bad "$n $fmt: $(cat "$tmp/check.out")"; fi
        "$bin" export $X --format $fmt -o "$o.again" "$f" 2>/dev/null
        if cmp -s "$o" "$o.again"; then ok; else bad "$n $fmt: two exports differ"; fi
        rm -f "$o.again"
    done
done
# memory-viz on every recorded directory too (the seeds' and the matrix's
# runs): the viewer's invariants and the report's bytes and peak
for f in "$data"/seeds/*/ "$data"/matrix/*/; do
    n=$(basename "$f")
    "$bin" report --json --top 100000 $X "$f" >"$tmp/$n.report.json" 2>/dev/null
    if "$bin" export $X --format memory-viz -o "$tmp/$n.pickle" "$f" 2>"$tmp/err" &&
        check memory-viz "$tmp/$n.pickle" "$tmp/$n.report.json"; then ok; else bad "$n memory-viz: $(cat "$tmp/err" "$tmp/check.out")"; fi
    rm -f "$tmp/$n.pickle" "$tmp/$n.report.json"
done
# the directory as one job: every process in one file
for fmt in perfetto chrome memory-viz; do
    "$bin" export $X --format $fmt -o "$tmp/job.$fmt" "$data" 2>"$tmp/err"
    rc=$?
    [ $rc = 1 ] || bad "directory $fmt: exit $rc, want 1 (damaged fixtures in it)"
    if check $fmt "$tmp/job.$fmt"; then ok; else bad "directory $fmt: $(cat "$tmp/check.out")"; fi
done
n=$(python3 -c "import json,sys; print(sum(1 for e in json.load(open(sys.argv[1]))['traceEvents'] if e['ph']=='M' and e['name']=='process_name'))" "$tmp/job.chrome")
[ "$n" -ge 20 ] && ok || bad "directory chrome: $n processes"
# options
t=$data/gpu-torch-async.zst
for opt in "--allocations" "--start 1s --end 3s" "--max-points 30" "--at end"; do
    for fmt in perfetto chrome memory-viz; do
        # shellcheck disable=SC2086
        "$bin" export $X $opt --format $fmt -o "$tmp/opt.$fmt" "$t" 2>/dev/null || bad "$opt $fmt: exit $?"
        if check $fmt "$tmp/opt.$fmt"; then ok; else bad "$opt $fmt: $(cat "$tmp/check.out")"; fi
    done
done
# --max-points bounds each counter: at most 3 points per bucket, plus the first
"$bin" export $X --max-points 30 --format chrome -o "$tmp/opt.chrome" "$t" 2>/dev/null
pts=$(python3 -c "
import json,sys,collections
c=collections.Counter((e['pid'],e['name']) for e in json.load(open(sys.argv[1]))['traceEvents'] if e['ph']=='C')
print(max(c.values()))" "$tmp/opt.chrome")
[ "$pts" -le 34 ] && ok || bad "--max-points 30: a counter has $pts points"
# --allocations draws every block (this trace: 1515 allocations)
"$bin" export $X --allocations --format chrome -o "$tmp/all.json" "$t" 2>/dev/null
nb=$(python3 -c "import json,sys; print(sum(1 for e in json.load(open(sys.argv[1]))['traceEvents'] if e['ph']=='b'))" "$tmp/all.json")
[ "$nb" -ge 1400 ] && ok || bad "--allocations: $nb allocation slices"
# the Chrome size limit: refused, said why (the limit in its unit: not
# "over 0 MiB"), no file left
"$bin" export $X --format chrome --max-bytes 10k -o "$tmp/big.json" "$t" 2>"$tmp/err"
rc=$?
if [ $rc = 1 ] && grep -q 'over 10.00 KiB (--max-bytes), more than a browser opens' "$tmp/err" && [ ! -e "$tmp/big.json" ]; then ok; else
    bad "--max-bytes: exit $rc, $(cat "$tmp/err")"; fi
# memory-viz spools its devices' entries in $TMPDIR: the same bytes there
# as in /tmp, and a TMPDIR that cannot hold files is named, no file left
TMPDIR=$tmp "$bin" export $X --format memory-viz -o "$tmp/spool.mv" "$t" 2>/dev/null
"$bin" export $X --format memory-viz -o "$tmp/spool0.mv" "$t" 2>/dev/null
cmp -s "$tmp/spool.mv" "$tmp/spool0.mv" && ok || bad "memory-viz: TMPDIR changed the snapshot"
TMPDIR=$tmp/missing "$bin" export $X --format memory-viz -o "$tmp/spool1.mv" "$t" 2>"$tmp/err"
rc=$?
if [ $rc = 1 ] && grep -q "cannot create a temporary file in $tmp/missing (\$TMPDIR)" "$tmp/err" &&
    [ ! -e "$tmp/spool1.mv" ]; then ok; else bad "memory-viz, TMPDIR missing: exit $rc, $(cat "$tmp/err")"; fi
# usage
"$bin" export "$t" >/dev/null 2>&1; [ $? = 2 ] && ok || bad "no --format: not exit 2"
"$bin" export --format svg "$t" >/dev/null 2>&1; [ $? = 2 ] && ok || bad "--format svg: not exit 2"
"$bin" export --format chrome --start 2s --end 1s "$t" >/dev/null 2>&1; [ $? = 2 ] && ok || bad "--end before --start: not exit 2"
"$bin" export --format perfetto -o "$tmp/none" "$tmp/missing.zst" >/dev/null 2>&1; [ $? = 1 ] && ok || bad "missing trace: not exit 1"
# default output name beside the trace
cp "$data/gpu-alloc-basic.zst" "$tmp/basic.zst"
"$bin" export $X --format perfetto "$tmp/basic.zst" 2>/dev/null && [ -s "$tmp/basic.perfetto-trace" ] && ok ||
    bad "default name: no $tmp/basic.perfetto-trace"
# goldens: the text forms of two small fixtures
for g in gpu-alloc-basic gpu-oom; do
    "$bin" export $X --format perfetto -o "$tmp/g.pf" "$data/$g.zst" 2>/dev/null
    protoc -I"$here" --decode=perfetto_subset.Trace perfetto_subset.proto <"$tmp/g.pf" >"$tmp/$g.perfetto.txt"
    "$bin" export $X --format chrome -o "$tmp/$g.chrome.json" "$data/$g.zst" 2>/dev/null
    "$bin" export $X --format memory-viz -o "$tmp/g.mv" "$data/$g.zst" 2>/dev/null
    python3 -c "import json,pickle,sys; print(json.dumps(pickle.load(open(sys.argv[1],'rb')), indent=1, sort_keys=True))" \
        "$tmp/g.mv" >"$tmp/$g.memviz.json"
    for k in perfetto.txt chrome.json memviz.json; do
        if [ "${VT_UPDATE_GOLDEN:-0}" = 1 ]; then
            cp "$tmp/$g.$k" "$golden/export-$g.$k"
            echo "updated $golden/export-$g.$k"
            ok
        elif diff -u "$golden/export-$g.$k" "$tmp/$g.$k" >"$tmp/diff"; then
            ok
        else
            bad "golden export-$g.$k differs:"
            head -30 "$tmp/diff"
        fi
    done
done
echo "export: $pass passed, $fails failed"
[ $fails = 0 ]
