#!/usr/bin/env bash
# symcache.sh VRAMTRACE GEN_SYMCACHE DLMOD - the build-id symbol cache
# (issue 35) on real shared objects of this machine: DLMOD (copied, with
# DWARF), libc, and the large CUDA libraries where they are installed.
#   cold      every module is read; the cache gets one file per build id
#   warm      nothing is read (the stats line says 0 read) and DLMOD's copy
#             is gone from its path: the answers can only come from the
#             cache, and the .sym is byte for byte the cold one; the
#             report reads the cache too (not with --no-symbol-cache)
#   damaged   a truncated, a bit-flipped and a foreign cache file are each
#             ignored with one message, the module read again, the file
#             rewritten whole (the next run is silent and reads nothing)
#   writers   two symbolize processes at once on disjoint addresses of the
#             same modules: the cache holds the union afterwards
#   off       VRAMTRACE_SYMBOL_CACHE=0 and --no-symbol-cache read every time
#             and write nothing
set -u
vt=$1 gen=$2 dlmod=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
export VRAMTRACE_CACHE_DIR=$tmp/vc
cache=$tmp/vc/symbols
mkdir -p "$tmp/lib"
cp "$dlmod" "$tmp/lib/libvt_test_dlmod.so"

# the modules: path, build id, N addresses spread over .text (every other
# one into a/, the rest into b/, for the two writers)
libc=$(ldd "$vt" | awk '$1 ~ /^libc\.so/ {print $3}')
mods=("$tmp/lib/libvt_test_dlmod.so" "$libc")
for big in /usr/local/cuda/lib64/libnccl.so.2 /usr/local/cuda/lib/libnccl.so.2 \
           /usr/local/cuda/lib64/libcublasLt.so.13 /usr/local/cuda/lib/libcublasLt.so.13; do
    [ -r "$big" ] && mods+=("$big")
done
args=() args_a=() args_b=() i=0 seen=" "
for m in "${mods[@]}"; do
    bid=$(readelf -n "$m" 2>/dev/null | awk '/Build ID/ {print $3; exit}')
    [ -n "$bid" ] || continue
    case $seen in *" $bid "*) continue ;; esac # lib64 and lib: one file
    seen="$seen$bid "
    python3 - "$m" 40 "$tmp/o$i" <<'EOF' || { echo "FAIL: no .text in $m"; exit 1; }
import subprocess, sys
lib, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for line in subprocess.run(["readelf", "-SW", lib], capture_output=True, text=True).stdout.splitlines():
    f = line.replace("[ ", "[").split()
    if len(f) > 5 and f[1] == ".text":
        a, s = int(f[3], 16), int(f[5], 16)
        offs = [a + (s * (2 * k + 1)) // (2 * n) for k in range(n)]
        open(out, "w").write("".join("%x\n" % o for o in offs))
        open(out + "a", "w").write("".join("%x\n" % o for o in offs[0::2]))
        open(out + "b", "w").write("".join("%x\n" % o for o in offs[1::2]))
        sys.exit(0)
sys.exit(1)
EOF
    args+=("$m" "$bid" "$tmp/o$i")
    args_a+=("$m" "$bid" "$tmp/o${i}a")
    args_b+=("$m" "$bid" "$tmp/o${i}b")
    i=$((i + 1))
done
nmod=$i
[ "$nmod" -ge 2 ] || { echo "FAIL: fewer than 2 modules with build ids (${mods[*]})"; exit 1; }
"$gen" "$tmp/t.zst" "${args[@]}" || { echo "FAIL: gen_symcache"; exit 1; }
naddr=$((nmod * 80)) # each frame: the address and the call before it

msgs() { # what symbolize said on stderr, less its progress lines (a slow machine)
    grep -h 'vramtrace symbolize:' "$@" | grep -v 'symbolizing [0-9]\|symbolized in'
}
sym() { # symbolize, stdout+stderr to $tmp/out; the stats line to $tmp/stats
    "$vt" symbolize "$@" >"$tmp/out" 2>&1
    local rc=$?
    grep -E '^[0-9]+ modules?, ' "$tmp/out" >"$tmp/stats"
    return $rc
}
# cold
sym "$tmp/t.zst" || bad "cold: exit $?: $(cat "$tmp/out")"
grep -q "^$nmod modules, $nmod read" "$tmp/stats" || bad "cold: $(cat "$tmp/stats")"
grep -q "t.zst.sym: 40 of 40\|t.zst.sym: [0-9]* of $((nmod * 40)) native" "$tmp/out" || bad "cold: $(head -1 "$tmp/out")"
n=$(ls "$cache"/*.cache 2>/dev/null | wc -l)
[ "$n" -eq "$nmod" ] || bad "cold: $n cache files for $nmod modules"
cp "$tmp/t.zst.sym" "$tmp/cold.sym"
grep -q vt_test_dlmod_fn "$tmp/cold.sym" || bad "cold: the dlmod's function is not in the .sym"

# warm, the dlmod gone: no module read, the same answers
mv "$tmp/lib/libvt_test_dlmod.so" "$tmp/gone.so"
sym "$tmp/t.zst" || bad "warm: exit $?"
grep -q "^$nmod modules, 0 read (0.0 MiB); $naddr addresses, $naddr from the cache" "$tmp/stats" ||
    bad "warm: $(cat "$tmp/stats")"
cmp -s "$tmp/cold.sym" "$tmp/t.zst.sym" || bad "warm: the .sym differs from the cold one"
[ -n "$(msgs "$tmp/out")" ] && bad "warm: a message: $(msgs "$tmp/out")"
# the report on this host asks the cache too: no .sym, the dlmod still gone
mv "$tmp/t.zst.sym" "$tmp/keep.sym"
"$vt" report --native --top 1000 "$tmp/t.zst" >"$tmp/rep" 2>&1 || bad "report: exit $?"
grep -q "vt_test_dlmod_fn" "$tmp/rep" || bad "report from the cache: no vt_test_dlmod_fn"
"$vt" report --native --top 1000 --no-symbol-cache "$tmp/t.zst" >"$tmp/rep" 2>&1 || bad "report --no-symbol-cache: exit $?"
grep -q "vt_test_dlmod_fn" "$tmp/rep" && bad "report --no-symbol-cache: named from the cache"
mv "$tmp/keep.sym" "$tmp/t.zst.sym"
mv "$tmp/gone.so" "$tmp/lib/libvt_test_dlmod.so"

# damaged cache files: one message each, read again, rewritten
dbid=$(readelf -n "$tmp/lib/libvt_test_dlmod.so" | awk '/Build ID/ {print $3; exit}')
cf=$cache/$dbid.cache
for how in truncate flip foreign; do
    case $how in
    truncate) head -c $(($(stat -c %s "$cf") / 2)) "$cf" >"$cf.x" && mv "$cf.x" "$cf"; want="truncated" ;;
    flip) python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[len(b)//2]^=1; open(p,"wb").write(b)' "$cf"
          want="checksum does not match" ;;
    foreign) printf 'hello\n' >"$cf"; want="not a vramtrace symbol cache file" ;;
    esac
    sym "$tmp/t.zst" || bad "$how: exit $?"
    m=$(grep -c "$dbid.cache: " "$tmp/out")
    [ "$m" -eq 1 ] || bad "$how: $m messages about the cache file: $(cat "$tmp/out")"
    grep -q "$want" "$tmp/out" || bad "$how: not '$want': $(grep cache: "$tmp/out")"
    grep -q "^$nmod modules, 1 read" "$tmp/stats" || bad "$how: $(cat "$tmp/stats")"
    cmp -s "$tmp/cold.sym" "$tmp/t.zst.sym" || bad "$how: the .sym differs from the cold one"
    sym "$tmp/t.zst" || bad "$how, again: exit $?"
    grep -q "^$nmod modules, 0 read" "$tmp/stats" || bad "$how, rewritten: $(cat "$tmp/stats")"
    [ -n "$(msgs "$tmp/out")" ] && bad "$how, rewritten: still a message: $(msgs "$tmp/out")"
done

# two writers at once, disjoint addresses, five times over
"$gen" "$tmp/a.zst" "${args_a[@]}" && "$gen" "$tmp/b.zst" "${args_b[@]}" || { echo "FAIL: gen a/b"; exit 1; }
for round in 1 2 3 4 5; do
    rm -rf "$tmp/vc"
    "$vt" symbolize "$tmp/a.zst" >"$tmp/oa" 2>&1 &
    pa=$!
    "$vt" symbolize "$tmp/b.zst" >"$tmp/ob" 2>&1 &
    pb=$!
    wait $pa || bad "writers $round: a exited $?: $(cat "$tmp/oa")"
    wait $pb || bad "writers $round: b exited $?: $(cat "$tmp/ob")"
    [ -n "$(msgs "$tmp/oa" "$tmp/ob")" ] && bad "writers $round: a message: $(msgs "$tmp/oa" "$tmp/ob")"
    sym "$tmp/t.zst" || bad "writers $round: exit $?"
    grep -q "^$nmod modules, 0 read" "$tmp/stats" || bad "writers $round: the union is not cached: $(cat "$tmp/stats")"
    cmp -s "$tmp/cold.sym" "$tmp/t.zst.sym" || bad "writers $round: the .sym differs from the cold one"
    left=$(ls "$cache" | grep -c tmp)
    [ "$left" -eq 0 ] || bad "writers $round: temporaries left: $(ls "$cache")"
done

# off: every module read, nothing written
rm -rf "$tmp/vc"
VRAMTRACE_SYMBOL_CACHE=0 sym "$tmp/t.zst" || bad "off: exit $?"
grep -q "^$nmod modules, $nmod read" "$tmp/stats" || bad "off: $(cat "$tmp/stats")"
[ -e "$tmp/vc" ] && bad "off: the cache directory was made"
sym --no-symbol-cache "$tmp/t.zst" || bad "--no-symbol-cache: exit $?"
grep -q "^$nmod modules, $nmod read" "$tmp/stats" || bad "--no-symbol-cache: $(cat "$tmp/stats")"
[ -e "$tmp/vc" ] && bad "--no-symbol-cache: the cache directory was made"
cmp -s "$tmp/cold.sym" "$tmp/t.zst.sym" || bad "off: the .sym differs from the cold one"

[ $fail -eq 0 ] && echo "symcache: ok ($nmod modules)"
exit $fail
