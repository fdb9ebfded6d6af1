#!/usr/bin/env bash
# check_crash_matrix.sh - the host under stress (issue 24, item 8): each
# case runs a PyTorch program (tests/gpu/crash_matrix.py) untraced, then
# under libvramtrace.so, and checks: the program's exit status and stdout
# are unchanged, it does not hang (timeout 180 s), the trace is readable by
# `vramtrace dump` up to its last flush, and where tracing could not go on
# there is one clear "vramtrace:" message.  Cases: fork without exec,
# torch.profiler at the same time (a second CUPTI client), os._exit, an
# unwritable output path, a full disk (a 4 KiB tmpfs; SKIP if it cannot be
# mounted).  SIGKILL, SIGSEGV, OOM, threads, DataLoader workers and CUDA
# graphs are checked by scripts/gpu-test.sh's own cases.  Run by
# scripts/gpu-test.sh with VRAMTRACE_CLI, VRAMTRACE_LIB and OUT.
set -u
name=check_crash_matrix
here=$(cd "$(dirname "$0")" && pwd)
lib=${VRAMTRACE_LIB:?VRAMTRACE_LIB must name libvramtrace.so}
cli=${VRAMTRACE_CLI:?VRAMTRACE_CLI must name vramtrace}
work=${OUT:-/tmp}/crash_matrix
rm -rf "$work"
mkdir -p "$work"
if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "$name: SKIP: python3 with torch and a CUDA device is not available"
    exit 0
fi
fails=0 skips=0 oks=0
fail() { echo "$name: FAIL: $*"; fails=$((fails + 1)); }

# case NAME MODE OUTPUT_TEMPLATE DUMP_RCS MESSAGE_REGEX(or -) [noalloc]
# noalloc: the trace may end before the first allocation (a full disk)
case_() {
    local c=$1 mode=$2 outt=$3 dump_ok=$4 msg=$5 noalloc=${6:-} d=$work/$1
    mkdir -p "$d"
    mkdir -p "$(dirname "$outt")" 2>/dev/null
    timeout 180 python3 "$here/crash_matrix.py" "$mode" >"$d/plain.out" 2>"$d/plain.err"
    local prc=$?
    CUDA_INJECTION64_PATH=$lib VRAMTRACE_OUTPUT="$outt" VRAMTRACE_FLUSH_MS=100 \
        timeout 180 python3 "$here/crash_matrix.py" "$mode" >"$d/traced.out" 2>"$d/traced.err"
    local trc=$? f0=$fails
    [ $trc = 124 ] && fail "$c: hung (killed after 180 s)"
    [ $trc = "$prc" ] || fail "$c: exit $trc traced, $prc untraced"
    cmp -s "$d/plain.out" "$d/traced.out" || fail "$c: stdout differs: $(diff "$d/plain.out" "$d/traced.out" | head -4 | tr '\n' ' ')"
    if [ "$msg" != - ]; then
        local n
        n=$(grep -c -E "^vramtrace: .*($msg)" "$d/traced.err")
        [ "$n" -ge 1 ] || fail "$c: no 'vramtrace: ...$msg' message: $(grep '^vramtrace' "$d/traced.err" | head -3 | tr '\n' ' ')"
    fi
    if [ "$dump_ok" != none ]; then
        local traces=("$(dirname "$outt")"/*.zst)
        if [ ! -f "${traces[0]}" ]; then
            fail "$c: no trace"
        else
            for t in "${traces[@]}"; do
                "$cli" dump --stats --no-defs "$t" >"$d/dump.out" 2>"$d/dump.err"
                local drc=$?
                [[ " $dump_ok " == *" $drc "* ]] || fail "$c: dump $t: exit $drc, wanted one of $dump_ok: $(head -2 "$d/dump.err" | tr '\n' ' ')"
                [ -n "$noalloc" ] || grep -q -i alloc "$d/dump.out" || fail "$c: $t holds no allocation"
            done
        fi
    fi
    [ $fails = $f0 ] || { echo "--- $c: traced stderr"; grep -v '^  ' "$d/traced.err" | tail -4; }
    [ $fails = $f0 ] && { oks=$((oks + 1)); echo "$name: ok: $c (exit $trc, $(grep -c '^vramtrace:' "$d/traced.err") vramtrace lines)"; }
}

case_ fork_no_exec fork "$work/fork_no_exec/t/%p.zst" "0" -
case_ profiler profiler "$work/profiler/t/%p.zst" "0" -
# torch.profiler and vramtrace share CUPTI's activity API (vt_actmux.h):
# the profiler saw GPU activity (stdout above, as untraced), and the trace
# holds the kernels run while it profiled and after it stopped
prof_kernels() {
    local d=$work/profiler t line
    grep -q "profiled GPU activities yes" "$d/plain.out" || { echo "$name: SKIP: profiler_kernels: untraced, torch.profiler saw no GPU activity"; skips=$((skips + 1)); return; }
    grep -q "no jiterator" "$d/plain.out" && { echo "$name: SKIP: profiler_kernels: no jiterator"; skips=$((skips + 1)); return; }
    t=$(ls "$d"/t/*.zst 2>/dev/null | head -1)
    [ -n "$t" ] || { fail "profiler_kernels: no trace"; return; }
    if line=$(bash "$here/check_profiler_trace.sh" "$cli" "$t"); then
        oks=$((oks + 1))
        echo "$name: ok: profiler_kernels ($line)"
    else
        fail "profiler_kernels: $line"
    fi
}
prof_kernels
case_ os_exit os_exit "$work/os_exit/t/%p.zst" "0 1" -
# an unwritable path: a directory under a regular file (root ignores modes)
case_ unwritable plain "/etc/hostname/vt/%p.zst" none "disabled|cannot|Not a directory|failed"
# a full disk
tiny=$work/tiny
mkdir -p "$tiny"
if mount -t tmpfs -o size=4k tmpfs "$tiny" 2>/dev/null; then
    case_ full_disk many "$tiny/%p.zst" "0 1" "No space left on device" noalloc
    umount "$tiny"
else
    echo "$name: SKIP: full_disk: cannot mount a tmpfs here"
    skips=$((skips + 1))
fi
if [ $fails = 0 ]; then
    echo "$name: $oks cases ok, $skips not run (see above)"
else
    echo "$name: FAIL: $fails failures, $oks cases ok"
fi
[ $fails = 0 ]
