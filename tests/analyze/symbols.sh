#!/usr/bin/env bash
# symbols.sh VRAMTRACE GEN_SYMTRACE DLMOD - symbols that travel (issue 22):
# a trace whose frame lies in a real shared object (DLMOD, with its build
# id); `vramtrace symbolize` writes TRACE.sym; with the object gone (another
# machine), the report still names the function and its file:line from
# there; without the .sym it says "binary not found"; a damaged .sym is one
# warning note and the report goes on.
set -u
vt=$1 gen=$2 dlmod=$3
# "another machine" has no symbol cache of this one (symcache.sh tests it)
export VRAMTRACE_SYMBOL_CACHE=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
mkdir -p "$tmp/lib"
cp "$dlmod" "$tmp/lib/libvt_test_dlmod.so"
bid=$(readelf -n "$dlmod" | awk '/Build ID/ {print $3}')
fn=$(nm --defined-only "$dlmod" | awk '$3 == "vt_test_dlmod_fn" {print $1}')
[ -n "$bid" ] && [ -n "$fn" ] || { echo "FAIL: no build id or symbol in $dlmod"; exit 1; }
off=$(printf '%x' $((0x$fn + 1))) # a return address just after the function's start
"$gen" "$tmp/t.zst" "$tmp/lib/libvt_test_dlmod.so" "$bid" "$off" || { echo "FAIL: gen_symtrace"; exit 1; }
where() { # the innermost native frames' functions in the report, one line
    "$vt" report --json --native "$tmp/t.zst" 2>/dev/null | python3 -c '
import json, sys
p = json.load(sys.stdin)["processes"][0]
s = p["leaks"]["sites"][0]["stack"]
print(" ".join("%s@%s:%s" % (f.get("function"), (f.get("file") or "").split("/")[-1], f.get("symbolized")) for f in s if f["kind"] == "native"))'
}
here=$(where)
case "$here" in *vt_test_dlmod_fn@dlmod.c:ok*) ;; *) bad "with the object here: $here" ;; esac
out=$("$vt" symbolize "$tmp/t.zst") || bad "symbolize exited $?"
case "$out" in *"t.zst.sym: 1 of 2 native frames resolved"* | *"t.zst.sym: 2 of 2 native frames resolved"*) ;; *) bad "symbolize said: $out" ;; esac
[ -s "$tmp/t.zst.sym" ] || bad "no t.zst.sym"
mv "$tmp/lib/libvt_test_dlmod.so" "$tmp/gone.so"
there=$(where)
case "$there" in *vt_test_dlmod_fn@dlmod.c:ok*) ;; *) bad "elsewhere, with the .sym: $there" ;; esac
# a frame the .sym has nothing of is never "binary not found" beside a .sym
case "$there" in *"binary not found"*) bad "elsewhere, with the .sym, a frame says binary not found: $there" ;; esac
mv "$tmp/t.zst.sym" "$tmp/keep.sym"
none=$(where)
case "$none" in *"binary not found"*) ;; *) bad "elsewhere, without the .sym: $none" ;; esac
printf 'vramtrace-symbols 1\nS zz\n' >"$tmp/t.zst.sym"
"$vt" report "$tmp/t.zst" >"$tmp/r.txt" 2>&1 || bad "report with a damaged .sym exited $?"
grep -q 't.zst.sym: line 2: expected an entry' "$tmp/r.txt" || bad "no note of the damaged .sym: $(grep -i sym "$tmp/r.txt" | head -2)"
[ $fail -eq 0 ] && echo "symbols: ok (here: $here; elsewhere: $there)"
exit $fail
