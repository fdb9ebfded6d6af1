#!/bin/bash
# dump_errors.sh VRAMTRACE DATADIR - exit codes and messages of
# `vramtrace dump` on bad arguments, missing, truncated and damaged files;
# a damaged trace prints everything readable before the error.
set -u
vt=$1 dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
# expect RC STDERR_PATTERN(or -) CMD...
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
sample=$dir/reader-sample.zst
expect 0 - "$vt" dump "$sample"
expect 0 - "$vt" dump --json --stacks --no-defs --stats "$sample"
grep -q "records=" "$tmp/err" || { echo "FAIL: --stats printed nothing"; fails=$((fails + 1)); }
expect 0 - "$vt" dump --help
grep -q "usage: vramtrace dump" "$tmp/out" || { echo "FAIL: --help not on stdout"; fails=$((fails + 1)); }
expect 2 "missing trace file" "$vt" dump
expect 2 "unknown option '--bogus'" "$vt" dump --bogus "$sample"
expect 2 "one trace file at a time" "$vt" dump "$sample" "$sample"
expect 1 "vramtrace dump: $tmp/nope.zst: No such file or directory" "$vt" dump "$tmp/nope.zst"
# a directory of traces, damaged ones among them: all printed, the errors named
expect 1 "reader-sample-damaged.zst: corrupt" "$vt" dump "$dir"
printf 'not a trace at all\n' >"$tmp/text.zst"
expect 1 "not a vramtrace trace" "$vt" dump "$tmp/text.zst"
: >"$tmp/empty.zst"
expect 1 "truncated at offset 0 (empty file" "$vt" dump "$tmp/empty.zst"

# Every prefix length of the sample: exit 1 with "truncated at offset", and
# stdout is a prefix (whole lines) of the complete output.
"$vt" dump "$sample" >"$tmp/full" 2>/dev/null
size=$(stat -c %s "$sample")
for len in 1 3 4 10 100 500 949 950 1000 1200 $((size - 1)); do
    head -c "$len" "$sample" >"$tmp/cut.zst"
    expect 1 "cut.zst: truncated at offset $len" "$vt" dump "$tmp/cut.zst"
    n=$(wc -l <"$tmp/out")
    if ! head -n "$n" "$tmp/full" | cmp -s - "$tmp/out"; then
        echo "FAIL: output of a $len-byte prefix is not a prefix of the full output"; fails=$((fails + 1))
    fi
done

# Damage in the first frame: the second frame is still printed, exit 1.
cp "$sample" "$tmp/bad.zst"
printf '\xff\xff\xff\xff' | dd of="$tmp/bad.zst" bs=1 seek=400 conv=notrunc status=none
expect 1 "bad.zst: corrupt" "$vt" dump "$tmp/bad.zst"
grep -q "seq=1" "$tmp/out" || { echo "FAIL: the frame after the damage was not printed"; fails=$((fails + 1)); }
grep -q " end " "$tmp/out" || { echo "FAIL: the end record was not printed"; fails=$((fails + 1)); }

# A directory: each trace by name after a line naming it; an empty one fails.
mkdir -p "$tmp/dir" "$tmp/none"
cp "$sample" "$tmp/dir/b.zst"
cp "$sample" "$tmp/dir/a.zst"
expect 0 - "$vt" dump "$tmp/dir"
[ "$(grep -c '^== ' "$tmp/out")" = 2 ] && head -1 "$tmp/out" | grep -q "a.zst ==" ||
    { echo "FAIL: dump DIR did not print both traces in order"; fails=$((fails + 1)); }
expect 1 "no \*.zst trace" "$vt" dump "$tmp/none"

# Output to a closed pipe must not hang or crash.
"$vt" dump "$sample" | head -1 >/dev/null
if [ $fails -ne 0 ]; then echo "$fails failure(s)"; exit 1; fi
echo "all dump error checks passed"
