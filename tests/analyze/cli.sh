#!/bin/bash
# cli.sh VRAMTRACE TRACEDIR [CORPUSDIR] - exit codes and error messages of
# `vramtrace report` and `vramtrace diff` on good and bad input; with
# CORPUSDIR (the reader's fuzz corpus), every file there must give exit 0
# or 1, never a crash.
set -u
vt=$1 dir=$2 corpus=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
# expect RC GREP_STDERR(or -) CMD...
expect() {
    local want=$1 pat=$2
    shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" != "$want" ]; then
        echo "FAIL: $* -> exit $rc, expected $want"; cat "$tmp/err"; fails=$((fails + 1)); return
    fi
    if [ "$pat" != - ] && ! grep -q -- "$pat" "$tmp/err"; then
        echo "FAIL: $* -> stderr lacks '$pat':"; cat "$tmp/err"; fails=$((fails + 1)); return
    fi
    echo "ok: exit $rc: $*"
}
expect 0 - "$vt" report "$dir/leak.zst"
expect 3 "exceed --fail-on-leak" "$vt" report --fail-on-leak 50M "$dir/leak.zst"  # 58 MiB never freed
expect 0 - "$vt" report --fail-on-leak 100M "$dir/leak.zst"  # (1.06 GiB more freed at teardown)
expect 3 "exceed --fail-on-growth" "$vt" report --fail-on-growth 10M "$dir/growth_nvtx.zst"
expect 0 - "$vt" report --fail-on-growth 100MiB "$dir/growth_nvtx.zst"
expect 0 - "$vt" report --fail-on-growth 1M "$dir/caching.zst"
expect 3 "fail-on-leak" "$vt" report --json --fail-on-leak 100M "$dir/ranks"
expect 2 "needs a byte count" "$vt" report --fail-on-leak lots "$dir/leak.zst"
expect 2 "unknown option" "$vt" report --bogus "$dir/leak.zst"
expect 2 "usage" "$vt" report
expect 2 "needs a value" "$vt" report "$dir/leak.zst" --at
expect 2 "not a positive number" "$vt" report --top 0 "$dir/leak.zst"
expect 1 "$tmp/missing.zst" "$vt" report "$tmp/missing.zst"
# the same file twice (and through a link): one process, which says so
ln -s "$dir/leak.zst" "$tmp/again.zst"
"$vt" report "$dir/leak.zst" "$tmp/again.zst" "$dir/leak.zst" >"$tmp/twice" 2>&1
if head -1 "$tmp/twice" | grep -qx 'vramtrace report: 1 process' && grep -q 'given again: read once' "$tmp/twice"; then
    echo "ok: a file given twice is read once"
else
    echo "FAIL: a file given twice:"; head -5 "$tmp/twice"; fails=$((fails + 1))
fi
# nothing readable: the error alone, no empty report on stdout
if [ -s "$tmp/out" ]; then
    echo "FAIL: report of a missing file printed a report:"; cat "$tmp/out"; fails=$((fails + 1))
fi
head -c 3000 /dev/urandom >"$tmp/garbage.zst"
expect 1 "garbage.zst" "$vt" report "$tmp/garbage.zst"
if [ -s "$tmp/out" ]; then
    echo "FAIL: a report of random bytes:"; head -3 "$tmp/out"; fails=$((fails + 1))
fi
printf 'not a trace\n' >"$tmp/text.zst"
expect 1 "not a vramtrace trace" "$vt" report "$tmp/text.zst"
[ -s "$tmp/out" ] && { echo "FAIL: a report of a text file"; fails=$((fails + 1)); }
# --at that names nothing in the traces: a usage error saying what there is
expect 2 "matches no NVTX mark or range.*'step'" "$vt" report --at nosuch "$dir/growth_nvtx.zst"
expect 2 "past the end of every trace" "$vt" report --at 1000s "$dir/growth_nvtx.zst"
mkdir "$tmp/empty"
expect 1 "no \*.zst trace" "$vt" report "$tmp/empty"
# a trace cut inside its only zstd frame: nothing is readable, so the
# error alone, with the offset, and no made-up process
size=$(stat -c %s "$dir/growth_nvtx.zst")
head -c $((size * 2 / 3)) "$dir/growth_nvtx.zst" >"$tmp/cut.zst"
expect 1 "cut.zst: truncated at offset" "$vt" report "$tmp/cut.zst"
if [ -s "$tmp/out" ]; then
    echo "FAIL: a report of a trace of which nothing was readable:"; head -5 "$tmp/out"; fails=$((fails + 1))
fi
# a trace cut in its second frame: the report of the first, then the error
src=$(cd "$(dirname "$0")/../.." && pwd)
expect 1 "truncated at offset" "$vt" report "$src/tests/data/reader-sample-truncated.zst"
if ! grep -q "^vramtrace report: 1 process" "$tmp/out" || ! grep -q "INCOMPLETE" "$tmp/out"; then
    echo "FAIL: no partial report for a cut trace"; fails=$((fails + 1))
fi
grep -q "offset" "$tmp/err" || { echo "FAIL: the read error does not give the offset"; cat "$tmp/err"; fails=$((fails + 1)); }
# a good trace and a bad one: the good one is reported, exit 1
expect 1 "garbage.zst" "$vt" report "$dir/leak.zst" "$tmp/garbage.zst"
grep -q "make_buffer" "$tmp/out" || { echo "FAIL: good trace not reported next to a bad one"; fails=$((fails + 1)); }
# --html FILE: the page, and on stdout one line saying where it went (not
# the whole text report); --html - is the page itself on stdout
"$vt" report --html "$tmp/p.html" "$dir/leak.zst" >"$tmp/out" 2>/dev/null
if [ "$(wc -l <"$tmp/out")" = 1 ] && grep -q "the page is $tmp/p.html" "$tmp/out" && grep -q VT_PACKED "$tmp/p.html"; then
    echo "ok: report --html FILE says where the page went"
else
    echo "FAIL: report --html FILE printed:"; head -5 "$tmp/out"; fails=$((fails + 1))
fi
"$vt" report --html - "$dir/leak.zst" 2>/dev/null | head -1 | grep -q "^<!doctype html>" && echo "ok: report --html -" ||
    { echo "FAIL: report --html - is no page"; fails=$((fails + 1)); }
expect 0 - "$vt" diff "$dir/leak.zst" "$dir/leak2.zst"
expect 2 "usage" "$vt" diff "$dir/leak.zst"
expect 1 "missing.zst" "$vt" diff "$dir/leak.zst" "$tmp/missing.zst"
# diff gates: B holds more than A at the view
expect 3 "over --fail-on-growth" "$vt" diff --fail-on-growth 1k "$dir/leak.zst" "$dir/leak2.zst"
expect 0 - "$vt" diff --fail-on-growth 100G "$dir/leak.zst" "$dir/leak2.zst"
# the same line in two traces is one call site, whatever its raw offsets
src=$(cd "$(dirname "$0")/../.." && pwd)
"$vt" diff --json --no-symbols "$src/tests/data/gpu-leaky-default.zst" "$src/tests/data/gpu-leaky-expandable.zst" >"$tmp/d.json"
if ! grep -q '"status":"changed"' "$tmp/d.json"; then
    echo "FAIL: diff of two allocator modes matched no call site"; fails=$((fails + 1))
fi
expect 0 - "$vt" report --help
# every JSON output parses (strings are valid UTF-8, numbers finite)
if command -v python3 >/dev/null; then
    for f in "$dir"/*.zst "$dir"/ranks; do
        "$vt" report --json "$f" >"$tmp/j.json" 2>/dev/null
        python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/j.json" ||
            { echo "FAIL: report --json $f is not valid JSON"; fails=$((fails + 1)); }
    done
    "$vt" diff --json "$dir/leak.zst" "$dir/leak2.zst" >"$tmp/j.json"
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/j.json" ||
        { echo "FAIL: diff --json is not valid JSON"; fails=$((fails + 1)); }
    echo "ok: JSON outputs parse"
fi
if [ -n "$corpus" ] && [ -d "$corpus" ]; then
    n=0
    for f in "$corpus"/*; do
        for m in "" --json; do
            "$vt" report $m "$f" >/dev/null 2>&1
            rc=$?
            if [ $rc -gt 1 ]; then echo "FAIL: report $m $f exited $rc"; fails=$((fails + 1)); fi
        done
        n=$((n + 1))
    done
    echo "ok: $n corpus files reported without a crash"
fi
[ "$fails" = 0 ] && echo "all CLI checks passed" || { echo "$fails CLI checks failed"; exit 1; }
