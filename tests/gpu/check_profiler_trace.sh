#!/usr/bin/env bash
# check_profiler_trace.sh CLI TRACE - a trace of tests/gpu/crash_matrix.py's
# "profiler" mode (torch.profiler and vramtrace sharing CUPTI, vt_actmux.h)
# holds the kernel run while the profiler ran (vt_in_profiler) and the one
# after it stopped (vt_after_profiler), the note of the second client, and
# every kernel on vramtrace's clock though the profiler set CUPTI's (inside
# the trace's span).  Prints one line; exit 1 on the first failure.  Run by
# check_crash_matrix.sh on the GPU and by ctest on the recorded fixture
# (tests/data/gpu-profiler-shared.zst).
set -u
cli=${1:?vramtrace} trace=${2:?trace}
out=$("$cli" dump --no-defs "$trace" 2>&1) || { echo "FAIL: dump $trace: $(echo "$out" | tail -1)"; exit 1; }
for k in vt_in_profiler vt_after_profiler; do
    echo "$out" | grep -E "^ *[0-9.]+ kernel " | grep -q "$k" || { echo "FAIL: no $k kernel in $trace"; exit 1; }
done
echo "$out" | grep -q "a second CUPTI client" || { echo "FAIL: no note of the second CUPTI client in $trace"; exit 1; }
span=$(echo "$out" | awk '$2 == "kernel" {n++; k = $1 + 0; if (k > kmax) kmax = k} $2 == "end" {e = $1 + 0}
    END {printf "%d kernels, the last at %.3f s, the trace ends at %.3f s", n, kmax, e; exit (e == 0 || kmax > e)}') ||
    { echo "FAIL: kernel times off vramtrace's clock: $span"; exit 1; }
echo "ok: $span; $(echo "$out" | grep -o 'a second CUPTI client[^"]*' | head -1)"
