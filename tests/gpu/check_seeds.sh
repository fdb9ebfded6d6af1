#!/usr/bin/env bash
# tests/gpu/check_seeds.sh - the memory patterns users meet (issues 22 and
# 25), run by scripts/gpu-test.sh with VRAMTRACE_CLI, VRAMTRACE_LIB and OUT:
# each pattern of tests/gpu/seeds.py under `vramtrace record` in PyTorch's
# three allocator modes (default and expandable segments with tensor
# events, backend:cudaMallocAsync), and the native program seeds_native
# (leaks in named functions beside correct ones); then
# tests/gpu/check_seeds.py asserts the verdict, the named line and the
# holder with its bytes against what torch.cuda said.  The recordings stay
# in $OUT/seeds/PATTERN-MODE/ (they become tests/data/seeds/, replayed in
# CI by the same checker).  Prints "check_seeds: ..." last.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
W=${OUT:-/tmp}/seeds
rm -rf "$W"
mkdir -p "$W"
export VRAMTRACE_CACHE_DIR=${VRAMTRACE_CACHE_DIR:-$W/cache}
if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "check_seeds: SKIP: python3 with torch and a CUDA device is not available"
    exit 0
fi
one() { # PATTERN MODE
    local d=$W/$1-$2 conf=
    case $2 in
    expandable) conf=expandable_segments:True ;;
    async) conf=backend:cudaMallocAsync ;;
    esac
    mkdir -p "$d"
    local t0=$(date +%s.%N)
    PYTORCH_CUDA_ALLOC_CONF=$conf "$VRAMTRACE_CLI" record -o "$d" -- python3 "$here/seeds.py" "$1" "$d/expect.json" \
        >"$d/out.txt" 2>"$d/err.txt"
    echo "$1-$2: exit $? in $(python3 -c "import time;print(f'{time.time()-$t0:.1f}')") s"
}
pats="graph_list logger scalars slices closure deque temporary validation dataloader clean"
one clean default # builds the PyTorch shim into the cache first
for m in default expandable async; do
    (for p in $pats; do [ "$p-$m" = clean-default ] || one "$p" "$m"; done) &
done
wait
# the native program: built by gpu-test.sh --build-only into gpu-bin
nat=${SEEDS_NATIVE:-$(ls "$root"/build*/gpu-bin/seeds_native 2>/dev/null | head -1)}
if [ -x "$nat" ]; then
    mkdir -p "$W/native"
    "$VRAMTRACE_CLI" record -o "$W/native" -- "$nat" >"$W/native/out.txt" 2>"$W/native/err.txt"
    echo "native: exit $?"
else
    echo "check_seeds: no seeds_native binary (scripts/gpu-test.sh --build-only builds it)"
fi
python3 "$here/check_seeds.py" "$VRAMTRACE_CLI" "$W"
