#!/usr/bin/env bash
# bench/capture_pollution.sh BUILD [ITERS] [HOST_KIB...] - what an
# allocation callback costs, itself and the host around it, counted by
# callgrind's cache simulation (deterministic; this VM has no PMU).  For
# each host working set, bench/capture_bench.py runs in mode 0 (host work
# alone), 1 (+ an event without stack) and 2 (+ the callback with native
# and Python stacks); per round it prints the callback's own instructions
# and misses (inclusive) and the host's extra misses against mode 0 (what
# the callback displaced).  The cache model: the H200 host's cores (48 KiB
# L1d, 32 KiB L1i; their 2 MiB L2 as the last level).
# PYTHON: the interpreter (default: pyenv's 3.12.1, as on the H200);
# VTCB_NO_GIL=1: the library initialized without the GIL (capture_bench.py).
set -eu
BUILD=${1:?usage: capture_pollution.sh BUILD [ITERS] [HOST_KIB...]}
ITERS=${2:-2000}
shift $(( $# >= 2 ? 2 : 1 ))
KIBS=${*:-16 40 160}
LIB=$BUILD/bench/libvt_capture_bench.so
PY=${PYTHON:-$(PYENV_VERSION=3.12.1 pyenv which python3 2>/dev/null || command -v python3)}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# "Ir I1mr D1mr D1mw DLmr DLmw" of a function, inclusive (callgrind_annotate)
counts() {
    callgrind_annotate --inclusive=yes --show=Ir,I1mr,D1mr,D1mw,DLmr,DLmw "$1" 2>/dev/null |
        sed 's/([^)]*)//g' | awk -v fn="$2" '
        $0 ~ ("capture_bench.c:" fn " ") { gsub(",", ""); for (i = 1; i <= 6; i++) if ($i == ".") $i = 0;
                                            print $1, $2, $3, $4, $5, $6; exit }'
}
printf '%-9s %-5s | %9s %7s %7s %7s %7s | %9s %9s %9s\n' "host KiB" mode "cb Ir" "cb I1" "cb D1r" "cb D1w" "cb LL" \
    "host D1+" "host LL+" "host I1+"
for kib in $KIBS; do
    for mode in 0 1 2; do
        valgrind --tool=callgrind --cache-sim=yes --D1=49152,12,64 --I1=32768,8,64 --LL=2097152,16,64 \
            --callgrind-out-file="$dir/cg.$kib.$mode" "$PY" bench/capture_bench.py "$LIB" $mode "$ITERS" "$kib" \
            >"$dir/out.$kib.$mode" 2>"$dir/err.$kib.$mode" || { cat "$dir/err.$kib.$mode"; exit 1; }
    done
    read -r _ h0i1 h0d1r h0d1w h0llr h0llw < <(counts "$dir/cg.$kib.0" host_work)
    for mode in 1 2; do
        read -r cir ci1 cd1r cd1w cllr cllw < <(counts "$dir/cg.$kib.$mode" callback)
        read -r _ hi1 hd1r hd1w hllr hllw < <(counts "$dir/cg.$kib.$mode" host_work)
        awk -v k="$kib" -v m="$mode" -v n="$ITERS" -v cir="$cir" -v ci1="$ci1" -v cd1r="$cd1r" -v cd1w="$cd1w" \
            -v cll="$(( cllr + cllw ))" -v hd="$(( hd1r + hd1w - h0d1r - h0d1w ))" \
            -v hl="$(( hllr + hllw - h0llr - h0llw ))" -v hi="$(( hi1 - h0i1 ))" \
            'BEGIN { printf "%-9s %-5s | %9.0f %7.1f %7.1f %7.1f %7.2f | %9.1f %9.2f %9.2f\n",
                     k, m, cir / n, ci1 / n, cd1r / n, cd1w / n, cll / n, hd / n, hl / n, hi / n }'
    done
done
