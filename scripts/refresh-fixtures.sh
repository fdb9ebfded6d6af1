#!/usr/bin/env bash
# scripts/refresh-fixtures.sh - replace every GPU fixture in tests/data:
# gpu-*.{zst,expect} with the traces and VT_EXPECT lines of one
# scripts/gpu-test.sh run, and gpu-leaky-*.zst with the traces of
# tests/analyze/gpu-analyze.sh when that run has them.
#   scripts/refresh-fixtures.sh DIR
# DIR holds traces/ and logs/ as gpu-test.sh leaves them (unpack the
# traces.tar.gz and logs.tar.gz that scripts/gpu-all.sh brings back into
# it), and gpu-leaky-*.zst as gpu-analyze.sh leaves them.  Then:
# scripts/update-golden.sh BUILD, read the diff, and update the date and
# build in tests/data/README.md.
set -eu
src=${1:?usage: scripts/refresh-fixtures.sh DIR}
cd "$(dirname "$0")/.."
dst=tests/data
one() { # one trace file in a folder, or fail naming it
    local n
    n=$(ls "$1"/*.zst 2>/dev/null | wc -l)
    [ "$n" -eq 1 ] || { echo "refresh-fixtures: $1: $n traces, expected 1" >&2; exit 1; }
    ls "$1"/*.zst
}
expect() { grep '^VT_EXPECT' "$src/logs/$1.out"; }
for t in alloc_basic alloc_async alloc_vmm oom crash_segv crash_kill nostacks launches \
         torch_default torch_expandable torch_async; do
    name=gpu-${t//_/-}
    if [ ! -d "$src/traces/$t" ] && [ "${t#torch_}" != "$t" ]; then
        # a run of the C programs only (VT_GPU_ONLY) refreshes those alone
        echo "refresh-fixtures: $src/traces/$t missing: $name.zst kept" >&2
        continue
    fi
    cp "$(one "$src/traces/$t")" "$dst/$name.zst"
    expect "$t" >"$dst/$name.expect"
done
# 16 threads x 100 allocations: the trace in full, every 16th alloc/free
# expectation (the replay test stays quick) and every other line
cp "$(one "$src/traces/threads")" "$dst/gpu-threads.zst"
expect threads | awk '$2 == "alloc" || $2 == "free" { if (n++ % 16) next } { print }' \
    >"$dst/gpu-threads.expect"
# fork + exec: the parent has the lower pid; the exec'd child its own file
set -- $(ls "$src"/traces/forkexec/*.zst | sort -t. -k2,2n)
[ $# -eq 2 ] || { echo "refresh-fixtures: forkexec: $# traces, expected 2" >&2; exit 1; }
cp "$1" "$dst/gpu-forkexec-parent.zst"
cp "$2" "$dst/gpu-forkexec-child.zst"
expect forkexec >"$dst/gpu-forkexec-parent.expect"
expect forkexec_child >"$dst/gpu-forkexec-child.expect"
# leaky_train.py in PyTorch's three allocator modes (gpu-analyze.sh)
for m in default expandable tensors; do
    if [ -f "$src/gpu-leaky-$m.zst" ]; then
        cp "$src/gpu-leaky-$m.zst" "$dst/gpu-leaky-$m.zst"
    else
        echo "refresh-fixtures: $src/gpu-leaky-$m.zst missing: gpu-leaky-$m.zst kept" >&2
    fi
done
# each trace's symbols, resolved where it was recorded (gpu-test.sh); a
# trace kept from an earlier run keeps its own
for f in "$dst"/gpu-*.zst; do
    s=$(find "$src/traces" -name '*.zst' -exec cmp -s {} "$f" \; -print -quit)
    [ -n "$s" ] || continue
    rm -f "$f.sym"
    [ -f "$s.sym" ] && cp "$s.sym" "$f.sym"
done
ls -l "$dst"/gpu-*
