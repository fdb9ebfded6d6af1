#!/bin/bash
# crafted.sh GEN_CRAFTED VRAMTRACE - the crafted traces of gen_crafted.c:
# every command stops on the string bomb with one error naming the file, the
# offset and the limit, in bounded memory (it took 2 GB before the budget),
# also for a directory of three copies and a diff; the 1 M-deep stack chain
# is read in linear time (the ctest TIMEOUT is the guard: it took ~30 min).
set -u
gen=$(readlink -f "$1") vt=$(readlink -f "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
"$gen" "$tmp" >/dev/null || exit 1
mkdir "$tmp/dir"
for i in 1 2 3; do cp "$tmp/strings.zst" "$tmp/dir/vt-h-$i.zst"; done
# resident-set cap: 900 MB leaves room for sanitizer builds (plain: ~170 MB)
cap_kb=900000
run() { # EXPECTED_RC STDERR_PATTERN CMD...
    local want=$1 pat=$2
    shift 2
    /usr/bin/time -f "maxrss_kb=%M" "$@" >/dev/null 2>"$tmp/err"
    local rc=$? kb f0=$fails
    kb=$(sed -n 's/^maxrss_kb=//p' "$tmp/err" | tail -1)
    [ "$rc" = "$want" ] || fail "$*: exit $rc, expected $want"
    [ "$pat" = - ] || grep -q -- "$pat" "$tmp/err" || { fail "$*: stderr lacks '$pat'"; head -3 "$tmp/err"; }
    [ -n "$kb" ] && [ "$kb" -lt $cap_kb ] || fail "$*: ${kb:-?} KB resident, over $cap_kb"
    [ $fails = $f0 ] && echo "ok: $* (${kb} KB)"
}
lim="strings.zst: record at offset [0-9]* (decompressed byte [0-9]*): a string would take the definition tables past [0-9]* MiB"
cd "$tmp"
run 1 "$lim" "$vt" report strings.zst
run 1 "$lim" "$vt" report --json strings.zst
run 1 "$lim" "$vt" dump --no-defs strings.zst
run 1 "vt-h-3.zst: record at offset" "$vt" report dir
run 1 "$lim" "$vt" diff strings.zst dir/vt-h-1.zst
run 1 "no trace could be read\|$lim" "$vt" export --format chrome -o "$tmp/x.json" strings.zst
run 0 "records=1000004" "$vt" dump --stats --no-defs chain.zst
run 0 - "$vt" dump --stacks chain.zst
run 0 - "$vt" report chain.zst
[ $fails = 0 ] && echo "crafted: all ok" || echo "crafted: $fails failures"
[ $fails = 0 ]
