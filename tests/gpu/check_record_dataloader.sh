#!/usr/bin/env bash
# check_record_dataloader.sh - GPU check of `vramtrace record` with a PyTorch
# script whose DataLoader has num_workers=2 (forked, then spawned workers):
# exactly one trace (the main process; workers never use CUDA and leave
# none), named by its pid, with allocations in it, and `vramtrace report DIR`
# works on the directory.  Run by scripts/gpu-test.sh with VRAMTRACE_CLI
# (the vramtrace binary), VRAMTRACE_LIB (libvramtrace.so) and OUT (a
# directory for logs).  Prints one summary line; exit 0 = pass.
set -u
name=check_record_dataloader
here=$(cd "$(dirname "$0")" && pwd)
export VRAMTRACE_LIB=${VRAMTRACE_LIB:?VRAMTRACE_LIB must name libvramtrace.so}
# The vramtrace binary: VRAMTRACE_CLI, else where a build tree has it.
cli=${VRAMTRACE_CLI:-}
if [ ! -x "$cli" ]; then
    libdir=$(dirname "$VRAMTRACE_LIB")
    for c in "$libdir/vramtrace" "$libdir/src/cli/vramtrace" "$libdir/../cli/vramtrace" \
        "$here/../../build/src/cli/vramtrace"; do
        if [ -x "$c" ]; then cli=$c; break; fi
    done
fi
work=${OUT:-/tmp}/record_dataloader
rm -rf "$work"
mkdir -p "$work"
log=$work/log.txt

fail() { echo "$name: FAIL: $* (log: $log)"; exit 1; }
[ -x "$cli" ] || fail "no vramtrace binary (VRAMTRACE_CLI='${VRAMTRACE_CLI:-}')"
"$cli" --version >/dev/null 2>&1 ||
    fail "$cli does not run here: $(ldd "$cli" 2>&1 | grep 'not found' | tr -s ' \t\n' ' ')"

if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "$name: SKIP: python3 with torch and a CUDA device is not available"
    exit 0
fi

traces=$work/traces
"$cli" record -o "$traces" -- python3 "$here/dataloader_workers.py" >"$work/stdout.txt" 2>"$log"
rc=$?
cat "$work/stdout.txt" >>"$log"
[ $rc -eq 0 ] || fail "vramtrace record exited $rc"

main_pid=$(sed -n 's/^main pid \([0-9]*\)$/\1/p' "$work/stdout.txt")
workers=$(sed -n 's/^worker pids //p' "$work/stdout.txt")
[ -n "$main_pid" ] || fail "the script did not print its pid"
[ "$(echo $workers | wc -w)" -ge 4 ] || fail "expected 4 worker pids (2 forked, 2 spawned), got '$workers'"

mapfile -t files < <(cd "$traces" && ls -1 vramtrace.*.zst 2>/dev/null)
[ ${#files[@]} -eq 1 ] || fail "expected exactly 1 trace in $traces, found ${#files[@]}: ${files[*]:-none}"
case "${files[0]}" in
    *".$main_pid.zst") ;;
    *) fail "the trace ${files[0]} is not the main process's (pid $main_pid)" ;;
esac
for w in $workers; do
    case "${files[0]}" in *".$w.zst") fail "a worker (pid $w) left a trace" ;; esac
done
# beside the one trace: its symbols and the main process's holder walk
# (none from the workers), once the walk's child is done
for m in "$traces"/holders.*.pending; do [ -e "$m" ] && timeout 60 flock -s "$m" true; done
extra=$(ls -A "$traces" | grep -v -x -e "$(basename "${files[0]}")" -e "$(basename "${files[0]}").sym" -e "holders.$main_pid.txt")
[ -z "$extra" ] || fail "clutter in $traces: $(echo $extra)"
grep -q "1 process traced" "$log" || fail "the summary does not say 1 process traced"
grep -q "next: vramtrace report $traces" "$log" || fail "the summary does not give the next command"

"$cli" report "$traces" >"$work/report.txt" 2>>"$log"
rc=$?
[ $rc -eq 0 ] || fail "vramtrace report $traces exited $rc"
[ -s "$work/report.txt" ] || fail "vramtrace report printed nothing"
allocs=$(sed -n 's/.*events: *\([0-9][0-9]*\) alloc.*/\1/p' "$work/report.txt" | head -1)
if [ -n "$allocs" ] && [ "$allocs" -eq 0 ]; then
    fail "the report counts no allocation"
fi

# Keep what comes back small (scripts/gpu-test.sh tars $OUT): traces of
# 4 MiB and more are dropped once checked; the report stays.
find "$traces" -name '*.zst' -size +4M -delete 2>/dev/null
echo "$name: PASS: 1 trace (${files[0]}), ${allocs:-?} allocations, $(echo $workers | wc -w) workers left none; report ok"
