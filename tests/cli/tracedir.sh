#!/bin/bash
# tracedir.sh VRAMTRACE DATADIR - a trace directory as users leave it: a FIFO,
# a subdirectory and a dangling link named *.zst are named and skipped (a FIFO
# used to hang `report` forever), the real trace beside them is read; a
# directory with no trace gives its error alone, no made-up process, no page;
# a directory of job directories gives the traces below it.
set -u
vt=$1 data=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
d=$tmp/run
mkdir "$d" "$d/sub.zst" "$tmp/empty"
cp "$data/reader-sample.zst" "$d/vt-host-1.zst"
mkfifo "$d/vt-host-2.zst"
ln -s "$tmp/nowhere" "$d/vt-host-3.zst"
for cmd in "report" "report --json" "dump --no-defs" "export --format chrome -o $tmp/x.json"; do
    # timeout: a hang on the FIFO is the failure this test is for
    timeout 20 "$vt" $cmd "$d" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc = 124 ] && { fail "$cmd hung on a FIFO"; continue; }
    [ $rc = 0 ] || { fail "$cmd: exit $rc"; cat "$tmp/err"; }
    grep -q "vt-host-2.zst: skipped, a FIFO" "$tmp/err" || fail "$cmd: FIFO not named"
    grep -q "sub.zst: skipped, a directory" "$tmp/err" || fail "$cmd: directory not named"
    grep -q "vt-host-3.zst: skipped" "$tmp/err" || fail "$cmd: dangling link not named"
    echo "ok: $cmd"
done
"$vt" report "$d" 2>/dev/null | grep -q "^verdict:" || fail "report of the real trace has no verdict"
# a directory of job directories: the traces of its subdirectories, for
# every command (export used to say "no trace could be read")
mkdir -p "$tmp/jobs/j1" "$tmp/jobs/j2/r0"
cp "$data/reader-sample.zst" "$tmp/jobs/j1/vt-host-1.zst"
cp "$data/reader-sample.zst" "$tmp/jobs/j2/r0/vt-host-2.zst"
for cmd in "report --json" "export --format chrome -o $tmp/jobs.json" "export --format perfetto -o $tmp/jobs.pf"; do
    timeout 60 "$vt" $cmd --no-progress "$tmp/jobs" >"$tmp/out" 2>"$tmp/err" || { fail "$cmd of job directories: exit $?"; cat "$tmp/err"; }
    echo "ok: $cmd of job directories"
done
"$vt" report --json "$tmp/jobs" 2>/dev/null | grep -o '"file":"[^"]*vt-host-[12].zst"' | sort -u | wc -l | grep -qx 2 ||
    fail "report of job directories does not name both traces"
"$vt" dump --no-defs "$tmp/jobs" 2>/dev/null | grep -q "j2/r0/vt-host-2.zst" || fail "dump of job directories misses j2/r0"
# nothing readable: exit 1, the error alone
for cmd in "report" "report --html $tmp/e.html" "diff $tmp/empty"; do
    timeout 20 "$vt" $cmd "$tmp/empty" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc = 1 ] || fail "$cmd empty: exit $rc, expected 1"
    [ -s "$tmp/out" ] && { fail "$cmd empty: printed a report"; cat "$tmp/out"; }
    grep -q "no \*.zst trace in this directory" "$tmp/err" || fail "$cmd empty: no message"
    echo "ok: $cmd of an empty directory"
done
[ -e "$tmp/e.html" ] && fail "a page was written for nothing"
"$vt" report --json "$tmp/empty" 2>/dev/null | grep -q '"processes":\[\]' || fail "report --json: schema lost"
[ $fails = 0 ] && echo "tracedir: all ok" || echo "tracedir: $fails failures"
[ $fails = 0 ]
