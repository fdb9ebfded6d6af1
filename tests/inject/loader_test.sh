#!/usr/bin/env bash
# loader_test.sh LOADER - libvramtrace.so (src/inject/vt_loader.c) with
# stand-ins for CUPTI and the library proper, built here:
#   1. the wheel's layout (site/vramtrace/lib/) with the same environment's
#      nvidia-cuda-cupti (site/nvidia/cuNN/lib/libcupti.so.NN): the library
#      proper is loaded against that CUPTI, its InitializeInjection runs once
#      and the hook entry points reach it;
#   2. a CUPTI the program loaded first, from anywhere: that one is used;
#   3. a CUPTI of another major version loaded first: refused;
#   4. no library proper beside the loader: refused.
# A refusal leaves the host running: InitializeInjection returns 1 (the
# driver must not fail), one line on stderr says why (none under
# VRAMTRACE_QUIET=1), and the hook entry points answer -1 (not tracing).
set -eu
loader=$1
tmp=$(mktemp -d /tmp/vt_loader.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# the soname the loader wants, from its own strings
soname=$(strings "$loader" | grep -o -E 'libcupti\.so\.[0-9]+' | head -1)
major=${soname##*.}
[ -n "$major" ] || { echo "FAIL: no libcupti soname in $loader"; exit 1; }
cat >"$tmp/cupti.c" <<'C'
int vt_standin_cupti(void) { return 1; }
C
cat >"$tmp/body.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
int vt_standin_cupti(void);
int InitializeInjection(void)
{
    Dl_info di;
    dladdr((void *)&vt_standin_cupti, &di);
    printf("body init, cupti %s\n", di.dli_fname);
    return vt_standin_cupti();
}
int vt_hook_attach(const char *pool) { return pool ? 7 : -3; }
int vt_hook_event(uint32_t a, int32_t d, uint64_t addr, uint64_t size) { return (int)(a + d + (addr == 4096) + size); }
C
mkdir -p "$tmp/site/vramtrace/lib" "$tmp/site/nvidia/cu$major/lib" "$tmp/other" "$tmp/bare"
cc -shared -fPIC -Wl,-soname,"$soname" -o "$tmp/site/nvidia/cu$major/lib/$soname" "$tmp/cupti.c"
cp "$tmp/site/nvidia/cu$major/lib/$soname" "$tmp/other/$soname"
cc -shared -fPIC -Wl,-soname,libcupti.so.1 -o "$tmp/other/libcupti.so.1" "$tmp/cupti.c"
cc -shared -fPIC -o "$tmp/site/vramtrace/lib/libvramtrace_cupti.so" "$tmp/body.c" \
   -L"$tmp/other" -l:"$soname" -ldl
cp "$loader" "$tmp/site/vramtrace/lib/libvramtrace.so"
cp "$loader" "$tmp/bare/libvramtrace.so"
# host.py PRELOAD LOADER: load PRELOAD (if any) and the loader, initialise twice, call the hooks
cat >"$tmp/host.py" <<'PY'
import ctypes, sys
if sys.argv[1]:
    ctypes.CDLL(sys.argv[1])
lib = ctypes.CDLL(sys.argv[2])
sys.stdout.flush()
print(lib.InitializeInjection(), lib.InitializeInjection(), lib.vt_hook_attach(b"cupy"),
      lib.vt_hook_event(1, 2, 4096, 3), "host goes on", flush=True)
PY
fail=0 passed=0
run() { # name preload loader want-stdout want-stderr-pattern ('' = none)
    local out
    out=$(python3 "$tmp/host.py" "$2" "$3" 2>"$tmp/err") || { echo "FAIL $1: host died"; fail=1; return; }
    [ "$out" = "$4" ] || { echo "FAIL $1: stdout '$out', want '$4'"; fail=1; return; }
    if [ -z "$5" ]; then
        [ ! -s "$tmp/err" ] || { echo "FAIL $1: stderr '$(cat "$tmp/err")'"; fail=1; return; }
    else
        [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "$5" "$tmp/err" ||
            { echo "FAIL $1: stderr '$(cat "$tmp/err")'"; fail=1; return; }
        VRAMTRACE_QUIET=1 python3 "$tmp/host.py" "$2" "$3" 2>"$tmp/err" >/dev/null
        [ ! -s "$tmp/err" ] || { echo "FAIL $1: quiet, yet '$(cat "$tmp/err")'"; fail=1; return; }
    fi
    passed=$((passed + 1))
}
unset LD_LIBRARY_PATH CUDA_HOME CUDA_PATH VRAMTRACE_QUIET
site=$(realpath "$tmp/site")
run "wheel layout" "" "$tmp/site/vramtrace/lib/libvramtrace.so" \
    "body init, cupti $site/vramtrace/lib/../../nvidia/cu$major/lib/$soname
1 1 7 7 host goes on" ""
run "loaded first" "$tmp/other/$soname" "$tmp/site/vramtrace/lib/libvramtrace.so" \
    "body init, cupti $tmp/other/$soname
1 1 7 7 host goes on" ""
run "other major" "$tmp/other/libcupti.so.1" "$tmp/site/vramtrace/lib/libvramtrace.so" \
    "1 1 -1 -1 host goes on" "loaded $tmp/other/libcupti.so.1, but this vramtrace is built for $soname"
# without a CUPTI found the message names the search; with one (a toolkit
# here) the missing library proper is the reason: either is one line
run "no library proper" "" "$tmp/bare/libvramtrace.so" \
    "1 1 -1 -1 host goes on" "$soname not found\|cannot load the library proper"
echo "loader: $passed passed, $fail failed"
exit $fail
