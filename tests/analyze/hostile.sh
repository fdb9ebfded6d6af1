#!/bin/bash
# hostile.sh CASE GEN_HOSTILE VRAMTRACE - the findings of issue 36 on the
# traces of gen_hostile.c, one ctest per CASE (tests/analyze/tests.cmake).
set -u
case_=$1
gen=$(readlink -f "$2") vt=$(readlink -f "$3")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
"$gen" "$tmp" || exit 1
cd "$tmp"

# clean FILE: no byte a terminal acts on (C0 but newline and tab, DEL, C1), valid UTF-8
clean() {
    python3 - "$1" <<'PY' || fail "$1: control bytes or invalid UTF-8 reach the terminal"
import sys
b = open(sys.argv[1], 'rb').read()
bad = [i for i, c in enumerate(b) if (c < 0x20 and c not in (9, 10)) or c == 0x7f]
try:
    t = b.decode('utf-8')
except UnicodeDecodeError as e:
    print(sys.argv[1], 'not UTF-8:', e); sys.exit(1)
c1 = [ch for ch in t if 0x80 <= ord(ch) <= 0x9f]
if bad or c1:
    print(sys.argv[1], 'control bytes at', bad[:5], 'C1', len(c1)); sys.exit(1)
PY
}

case $case_ in
dump_time) # 1: dump's time column, 10^6 s after and 10^5 s before the first timed record
    "$vt" dump far.zst >out.txt 2>err.txt || fail "dump far.zst: exit $?"
    grep -q '^2000000\.000001000 alloc ' out.txt || fail "dump: no '2000000.000001000 alloc' line"
    grep -q '^-199999\.999999000 alloc ' out.txt || fail "dump: no '-199999.999999000 alloc' line"
    "$vt" dump --json far.zst >out.jsonl || fail "dump --json far.zst: exit $?"
    grep -q '"time":2000000.000001000,' out.jsonl || fail "dump --json: no time 2000000.000001000"
    ;;
escape) # 2: names from the trace never reach the terminal raw
    "$vt" report names.zst >r.txt 2>&1; clean r.txt
    "$vt" report --native --frames 50 names.zst >rn.txt 2>&1; clean rn.txt
    "$vt" report names.zst far.zst >r2.txt 2>&1; clean r2.txt
    "$vt" diff far.zst names.zst >d.txt 2>&1; clean d.txt
    grep -q 'new in B' d.txt || fail "diff: no row for the hostile sites"
    "$vt" dump --stacks names.zst >du.txt 2>&1; clean du.txt
    "$vt" export --format memory-viz -o m.pickle names.zst 2>mv.txt; clean mv.txt
    "$vt" export --format perfetto -o p.pftrace names.zst 2>pf.txt; clean pf.txt
    # a file name with ESC in a directory: the errors that name it are escaped
    mkdir evil && echo "not a trace" >evil/$'x\e]0;t\a.zst' && mkfifo evil/$'f\e[2J.zst' && cp far.zst evil/
    "$vt" report evil >/dev/null 2>ev.txt; clean ev.txt
    "$vt" dump evil >/dev/null 2>evd.txt; clean evd.txt
    grep -q 'x\\x1b\]0;t\\x07.zst' ev.txt || fail "report: the bad file's name is not shown escaped: $(cat -v ev.txt)"
    # a newline in a name forges no line
    for f in r.txt d.txt du.txt; do
        grep -q '^verdict: no leak (forged)' $f && fail "$f: a name forged a verdict line"
        grep -q '^read error: forged' $f && fail "$f: a note forged a read error line"
    done
    grep -q 'evil\\x1b\]0;pwned-title\\x07\.py' r.txt || fail "report: argv not shown escaped"
    ;;
html) # 3: the page's data cannot close its script or open a comment
    "$vt" report --html p.html names.zst >/dev/null 2>&1 || fail "report --html: exit $?"
    python3 - <<'PY' || fail "page data"
import re, sys
page = open('p.html', encoding='utf-8').read()
i = page.index('<script>', page.index('</style>') if '</style>' in page else 0)
for bad in ('<!--', '<script>alert', '<img src=x onerror'):
    if bad in page:
        print('page holds', repr(bad)); sys.exit(1)
PY
    ;;
utf8) # 4: every export loads: valid UTF-8 in the pickle and in Perfetto's strings
    "$vt" export --format memory-viz -o m.pickle names.zst 2>/dev/null || fail "export memory-viz: exit $?"
    python3 -c "
import pickle
d = pickle.load(open('m.pickle', 'rb'))
names = [f['filename'] + f['name'] for t in d['device_traces'] for e in t for f in e.get('frames', [])]
assert any('bad\ufffd\ufffd utf8 \ufffd(' in n for n in names), names
" || fail "memory-viz pickle does not load, or the name is not sanitized"
    "$vt" export --format perfetto -o p.pftrace names.zst 2>/dev/null || fail "export perfetto: exit $?"
    python3 -c "
b = open('p.pftrace', 'rb').read()
assert b'\xff\xfe' not in b and b'\xc3(' not in b, 'raw invalid UTF-8 in the Perfetto trace'
assert 'bad\ufffd\ufffd utf8'.encode() in b, 'no sanitized name'
" || fail "perfetto strings"
    "$vt" export --format chrome -o c.json names.zst 2>/dev/null || fail "export chrome: exit $?"
    python3 -c "import json; json.load(open('c.json', encoding='utf-8'))" || fail "chrome json does not load"
    ;;
nul) # 10: a NUL in a name is shown, not a silent cut
    "$vt" report names.zst >r.txt 2>&1
    grep -q 'fn\\x00after-nul' r.txt || fail "report: the NUL is not shown (fn\\x00after-nul)"
    "$vt" report --json names.zst >r.json 2>/dev/null
    python3 -c "
import json
d = json.load(open('r.json'))
s = json.dumps(d)
assert 'fn\\\\u0000after-nul' in s, 'no fn\\\\u0000after-nul in the JSON'
" || fail "report --json: the NUL is not kept"
    "$vt" report --html p.html names.zst >/dev/null 2>&1
    python3 "$(dirname "$0")/page_json.py" p.html | grep -q 'fn\\u0000after-nul' || fail "page: the NUL is not kept"
    "$vt" dump names.zst | grep -q 'value="fn\\x00after-nul"' || fail "dump: the NUL is not shown"
    ;;
unverified) # 5: events from frames no checksum verified are counted and shown
    "$vt" report cut-alloc.zst >r.txt 2>&1
    grep -q '^status: INCOMPLETE .*; 4 events UNVERIFIED' r.txt || { fail "report: no unverified count"; grep status r.txt; }
    "$vt" report --json cut-alloc.zst 2>/dev/null | python3 -c "
import json, sys
d = json.load(sys.stdin)
assert d['processes'][0]['unverified_events'] == 4, d['processes'][0]['unverified_events']
" || fail "report --json: unverified_events is not 4"
    # a pipe: nothing is verified
    "$vt" report --json <(cat names.zst) 2>/dev/null | python3 -c "
import json, sys
d = json.load(sys.stdin)
assert d['processes'][0]['unverified_events'] > 0
" || fail "report --json of a pipe: no unverified events"
    "$vt" report --json names.zst 2>/dev/null | python3 -c "
import json, sys
assert json.load(sys.stdin)['processes'][0]['unverified_events'] == 0
" || fail "report --json of a whole file: unverified events"
    ;;
bad_device) # 9: one record with an impossible device index is skipped alone, not its frame
    "$vt" dump --no-defs baddev.zst >out.txt 2>err.txt || fail "dump baddev.zst: exit $? ($(head -1 err.txt))"
    [ "$(grep -c ' alloc ' out.txt)" = 6 ] || fail "dump: $(grep -c ' alloc ' out.txt) allocations, the trace has 6"
    "$vt" report baddev.zst >r.txt 2>&1 || fail "report baddev.zst: exit $?"
    grep -q '^events: 6 alloc' r.txt || fail "report: $(grep '^events' r.txt), the trace has 6 allocations"
    grep -q 'events with an invalid device' r.txt || fail "report: the bad device record is not among the oddities"
    ;;
messages) # 11: a link loop, the version's offset, a trace cut before any allocation
    mkdir loop && ln -s a.zst loop/b.zst && ln -s b.zst loop/a.zst && cp far.zst loop/c.zst && ln -s nothing.zst loop/d.zst
    "$vt" report loop >/dev/null 2>err.txt
    grep -q 'loop/a.zst: skipped, a symbolic link loop' err.txt || fail "a link loop is not called one: $(grep a.zst err.txt)"
    grep -q 'loop/d.zst: skipped, a dangling link' err.txt || fail "a dangling link is not called one: $(grep d.zst err.txt)"
    "$vt" report version.zst >/dev/null 2>err.txt
    grep -q 'version.zst: header at offset [0-9]* (decompressed byte [0-9]*): unsupported format version 99' err.txt ||
        fail "the version error has no offset: $(cat err.txt)"
    "$vt" report cut-noalloc.zst >r.txt 2>/dev/null
    grep -q '^verdict: no leak' r.txt && fail "a trace cut before any allocation says 'verdict: no leak'"
    grep -q '^verdict: CANNOT TELL: the trace was cut short (no end record) before any allocation' r.txt ||
        fail "report: $(grep ^verdict r.txt)"
    "$vt" report --json cut-noalloc.zst 2>/dev/null | python3 -c "
import json, sys
v = json.load(sys.stdin)['processes'][0]['verdict']
assert v['kind'] == 'cannot_tell' and 'cut short' in v['reason'], v
" || fail "report --json: the verdict of a trace cut before any allocation"
    ;;
outputs) # 6: no output is written through a link planted at its path
    echo precious >victim
    # export's default name: refused when anything is there, a link included
    ln -s victim far.perfetto-trace
    "$vt" export --format perfetto far.zst 2>err.txt && fail "export over a planted link: exit 0"
    grep -q 'far.perfetto-trace exists: not replaced' err.txt || fail "export: $(cat err.txt)"
    [ -L far.perfetto-trace ] && [ "$(cat victim)" = precious ] || fail "export wrote through the link at its default name"
    rm far.perfetto-trace; echo mine >far.perfetto-trace
    "$vt" export --format perfetto far.zst 2>/dev/null && fail "export replaced an existing file it was not told to"
    [ "$(cat far.perfetto-trace)" = mine ] || fail "export's default name replaced an existing file"
    # -o names it: replaced, the link itself, never its target
    ln -s victim out.pftrace
    "$vt" export --format perfetto -o out.pftrace far.zst 2>/dev/null || fail "export -o over a link: exit $?"
    [ -f out.pftrace ] && [ ! -L out.pftrace ] && [ "$(cat victim)" = precious ] || fail "export -o wrote through the link"
    # the page
    ln -s victim page.html
    "$vt" report --html page.html far.zst >/dev/null 2>&1 || fail "report --html over a link: exit $?"
    [ -f page.html ] && [ ! -L page.html ] && [ "$(cat victim)" = precious ] || fail "report --html wrote through the link"
    grep -q '<html' page.html || fail "report --html: no page"
    ln -s victim diff.html
    "$vt" diff --html diff.html far.zst names.zst >/dev/null 2>&1 || fail "diff --html over a link: exit $?"
    [ ! -L diff.html ] && [ "$(cat victim)" = precious ] || fail "diff --html wrote through the link"
    # a stream named by -o (a FIFO, /dev/null, /dev/stdout: a link to one) is written
    # into, never renamed over: that would put a regular file at /dev/null
    mkfifo pipe && ln -s pipe pipe.link
    for p in pipe pipe.link; do
        rm -f got
        timeout 10 cat pipe >got & reader=$!
        timeout 10 "$vt" export --no-progress --format perfetto -o $p far.zst 2>err.txt ||
            fail "export -o $p (a FIFO): $(cat err.txt)"
        wait $reader
        [ -p pipe ] || { fail "export -o $p replaced the FIFO"; rm -f pipe; mkfifo pipe; }
        [ -s got ] || fail "export -o $p: nothing came through the FIFO"
    done
    timeout 10 cat pipe >got & reader=$!
    timeout 10 "$vt" report --no-progress --html pipe.link far.zst >/dev/null 2>&1 || fail "report --html into a FIFO: exit $?"
    wait $reader
    [ -p pipe ] || fail "report --html replaced the FIFO"
    grep -q '<html' got || fail "report --html into a FIFO: no page came through"
    ls | grep -q '\.vt-' && fail "a temporary file was left: $(ls | grep '\.vt-')"
    ;;
time) # 7: time running backwards is an oddity; durations and sizes never wrap
    "$vt" report backwards.zst >r.txt 2>&1 || fail "report backwards.zst: exit $?"
    grep -q 'events earlier than one before them (time ran backwards, by up to 10.000000 s)' r.txt ||
        fail "report: time running backwards is not an oddity: $(grep oddities r.txt)"
    grep -q '^duration: 10\.000 s' r.txt || fail "report: $(grep ^duration r.txt), the events span 10 s"
    grep -q ' not traced' r.txt && fail "report: a negative 'not traced': $(grep 'driver view' r.txt)"
    grep -q 'more than the driver.s used memory' r.txt || fail "report: the driver view does not say the sample is wrong"
    grep -E -q '[0-9]{10,} s|-[0-9.]+ [KMGT]iB' r.txt && fail "report: a wrapped duration or a negative size: $(grep -E '[0-9]{10,} s|-[0-9.]+ [KMGT]iB' r.txt)"
    "$vt" report --json backwards.zst 2>/dev/null | python3 -c "
import json, sys
p = json.load(sys.stdin)['processes'][0]
o = p['oddities']
assert o['time_backwards'] >= 2 and abs(o['time_backwards_max_s'] - 10) < 1e-6, o
assert 0 <= p['duration_s'] < 100, p['duration_s']
" || fail "report --json: time_backwards or duration_s"
    ;;
overlap) # 7: live blocks whose ranges overlap in part are flagged
    "$vt" report overlap.zst >r.txt 2>&1 || fail "report overlap.zst: exit $?"
    grep -q '1 live blocks whose address ranges overlap in part' r.txt || fail "report: $(grep oddities r.txt)"
    "$vt" report --json overlap.zst 2>/dev/null | python3 -c "
import json, sys
assert json.load(sys.stdin)['processes'][0]['oddities']['partial_overlaps'] == 1
" || fail "report --json: partial_overlaps is not 1"
    "$vt" report --json far.zst 2>/dev/null | python3 -c "
import json, sys
assert json.load(sys.stdin)['processes'][0]['oddities']['partial_overlaps'] == 0
" || fail "report --json: partial overlaps where there are none"
    ;;
budget) # 8: one budget for all an analysis keeps, a clear error naming what ran out
    "$vt" report --max-memory 1M sites.zst >r.txt 2>err.txt; rc=$?
    [ $rc = 1 ] || fail "report past the budget: exit $rc, expected 1"
    grep -q "sites.zst: at offset [0-9]*: the analysis's memory budget of 1 MiB is spent: [0-9]* call sites" err.txt ||
        fail "report: the error does not name the call sites: $(cat err.txt)"
    grep -q '^vramtrace report: 1 process' r.txt || fail "report: what was read before is not reported"
    "$vt" report --max-memory 64M sites.zst >/dev/null 2>&1 || fail "report sites.zst within the budget: exit $?"
    # an export's two passes and its writer's names, frames and stacks share the budget:
    # sites.zst's model fits in 4 MiB, the whole export does not
    "$vt" report --max-memory 4M sites.zst >/dev/null 2>&1 || fail "report sites.zst in 4 MiB: exit $?"
    for fmt in perfetto chrome memory-viz; do
        rm -f x.out
        "$vt" export --no-progress --max-memory 4M --format $fmt -o x.out sites.zst >/dev/null 2>err.txt; rc=$?
        [ $rc = 1 ] || fail "export $fmt past the budget: exit $rc, expected 1"
        grep -q "the export's memory budget of 4 MiB is spent (--max-memory raises it)" err.txt ||
            fail "export $fmt: the error does not say the budget ran out: $(tail -1 err.txt)"
        [ -e x.out ] && fail "export $fmt past the budget left x.out"
        "$vt" export --no-progress --max-memory 64M --format $fmt -o x.out sites.zst >/dev/null 2>&1 ||
            fail "export $fmt within the budget: exit $?"
    done
    "$vt" report --no-progress --max-memory 4M --html p.html sites.zst >/dev/null 2>err.txt && fail "page past the budget: exit 0"
    grep -q "cannot write the page: its second pass over the traces would pass the memory budget" err.txt ||
        fail "report --html: $(tail -1 err.txt)"
    mkdir procs && for i in $(seq 1 12); do cp far.zst procs/p$i.zst; done
    "$vt" report --max-memory 1M procs >/dev/null 2>err.txt && fail "12 processes in 1 MiB: exit 0"
    grep -q "not read: the analysis's memory budget of 1 MiB is spent ([0-9]* processes" err.txt ||
        fail "report: the error does not name the processes: $(head -2 err.txt)"
    # dump gives each file's tables back: a directory of many fits any budget one file fits
    mkdir names && for i in $(seq 1 300); do cp bigname.zst names/n$i.zst; done
    "$vt" dump --no-defs --max-memory 1M names >/dev/null 2>err.txt || fail "dump of 300 files in 1 MiB each: $(head -1 err.txt)"
    ;;
*) echo "hostile.sh: unknown case $case_"; exit 2 ;;
esac
[ $fails = 0 ] && echo "hostile $case_: ok" || echo "hostile $case_: $fails failures"
[ $fails = 0 ]
