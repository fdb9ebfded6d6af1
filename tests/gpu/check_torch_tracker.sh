#!/usr/bin/env bash
# tests/gpu/check_torch_tracker.sh - tensor events from PyTorch's default
# caching allocator (issue 23), run by scripts/gpu-test.sh with
# VRAMTRACE_CLI, VRAMTRACE_LIB and OUT: `vramtrace record` builds the shim
# for this torch (timed), then torch_tracker.py runs in the default and
# the expandable-segments allocator (the report's allocated and reserved at
# each NVTX mark against torch's own numbers, every tensor allocation
# freed or live at the end, the logger leak on its own line), with
# --no-tensor-events, with a shim of the wrong layout and under
# backend:cudaMallocAsync: each must run unharmed.  Traces under
# $OUT/torch-tracker; prints "check_torch_tracker: ok" or the failures.
set -u
here=$(cd "$(dirname "$0")" && pwd)
W=${OUT:-/tmp}/torch-tracker
rm -rf "$W"
mkdir -p "$W"
export VRAMTRACE_CACHE_DIR=$W/cache
fail=0
bad() { echo "FAIL: $*"; fail=1; }
run() { # NAME ENVVARS... -- record options: records into $W/NAME
    local name=$1
    shift
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    local t0=$(date +%s.%N)
    env "${envs[@]}" "$VRAMTRACE_CLI" record -o "$W/$name" "$@" -- python3 "$here/torch_tracker.py" "$W/$name.json" \
        >"$W/$name.out" 2>"$W/$name.err"
    local rc=$?
    echo "$name: exit $rc in $(python3 -c "import time;print(f'{time.time()-$t0:.1f}')") s"
    [ $rc -eq 0 ] || { bad "$name exited $rc: $(tail -3 "$W/$name.err" | tr '\n' ' ')"; return 1; }
    return 0
}
run default -- && grep -h 'building the PyTorch\|tensor events' "$W/default.err"
shim=$(ls "$W"/cache/*/libvt_torch.so 2>/dev/null | head -1)
[ -n "$shim" ] || bad "no shim was built: $(cat "$W"/cache/*/build.log 2>/dev/null | tail -5)"
run cached -- # the second run finds the shim in the cache
grep -q 'building the PyTorch' "$W/cached.err" && bad "the cached shim was built again"
run expandable PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True --
run notensors -- --no-tensor-events
run async PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync --
if [ -n "$shim" ]; then
    cmd=$(head -1 "$(dirname "$shim")/build.log")
    wrong=$W/libvt_torch_wrong.so
    eval "${cmd/ -o * -L/ -DVT_TORCH_WRONG_LAYOUT -o $wrong -L}" >"$W/wrong-build.log" 2>&1 || bad "wrong-layout shim did not build"
    run wrong VRAMTRACE_TORCH_SHIM=$wrong --
    grep -q "PyTorch tensor events off: the shim's first segment" "$W/wrong.err" || bad "wrong layout not caught: $(grep -i torch "$W/wrong.err" | head -2)"
fi
for t in default expandable notensors async wrong; do
    f=$(ls "$W/$t"/*.zst 2>/dev/null | head -1)
    [ -n "$f" ] || { bad "$t: no trace"; continue; }
    n=$("$VRAMTRACE_CLI" dump "$f" 2>/dev/null | grep -c 'caching_allocator')
    echo "$t: $n caching_allocator events; $(grep -h 'tensor events\|PyTorch shim' "$W/$t.err" | head -2 | tr '\n' ' ')"
    case $t in
    default | expandable) [ "$n" -gt 1000 ] || bad "$t: only $n tensor events" ;;
    *) [ "$n" -eq 0 ] || bad "$t: $n tensor events (none wanted)" ;;
    esac
done
# the holder walk at exit (issue 25): holders.PID.txt beside the trace,
# written by a child that outlives the program (holders.PID.pending locked
# until it is done)
for t in default expandable; do
    for m in "$W/$t"/holders.*.pending; do [ -e "$m" ] && timeout 60 flock -s "$m" true; done
    ls "$W/$t"/holders.*.txt >/dev/null 2>&1 || bad "$t: no holders file (the walk at exit)"
done
# the analyzer's checks (allocated/reserved at the marks, pairing, the leak line, the holder)
if [ -x "$here/check_torch_tracker.py" ] || [ -f "$here/check_torch_tracker.py" ]; then
    for t in default expandable; do
        python3 "$here/check_torch_tracker.py" "$VRAMTRACE_CLI" "$W/$t" "$W/$t.json" || bad "$t: analyzer check"
    done
fi
# PyTorch's own memory_viz on the exported snapshots (tensors inside segments)
for t in default expandable; do
    "$VRAMTRACE_CLI" export --format memory-viz -o "$W/$t.pickle" "$W/$t" 2>/dev/null || bad "$t: export memory-viz"
done
python3 "$here/check_memviz_torch.py" "$W/default.pickle" "$W/expandable.pickle" || bad "memory_viz on the snapshots"
[ $fail -eq 0 ] && echo "check_torch_tracker: ok"
exit $fail
