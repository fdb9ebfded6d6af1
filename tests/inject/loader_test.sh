#!/usr/bin/env bash
# loader_test.sh LOADER - libvramtrace.so (src/inject/vt_loader.c) inside a
# host process that cannot be traced: the host goes on, InitializeInjection
# returns 1 (the driver must not fail), one line on stderr says why, none
# under VRAMTRACE_QUIET=1, and the hook entry points answer -1 (not tracing).
#   1. a libcupti of another major version already loaded (a stand-in
#      with soname libcupti.so.12, built here);
#   2. the library proper missing beside the loader.
set -eu
loader=$1
tmp=$(mktemp -d /tmp/vt_loader.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cp "$loader" "$tmp/libvramtrace.so"
echo 'int cuptiGetVersion_standin;' > "$tmp/c.c"
cc -shared -fPIC -Wl,-soname,libcupti.so.12 -o "$tmp/libcupti.so.12" "$tmp/c.c"
# host.py PRELOAD: load PRELOAD (if any) and the loader, initialise, print
cat > "$tmp/host.py" <<'PY'
import ctypes, sys
if sys.argv[1]:
    ctypes.CDLL(sys.argv[1])
lib = ctypes.CDLL(sys.argv[2])
print(lib.InitializeInjection(), lib.InitializeInjection(), lib.vt_hook_attach(b"cupy"),
      lib.vt_hook_event(1, 0, 4096, 512), "host goes on")
PY
fail=0
check() { # name preload want-stderr-pattern
    local out err
    out=$(python3 "$tmp/host.py" "$2" "$tmp/libvramtrace.so" 2>"$tmp/err") || { echo "FAIL $1: host died"; fail=1; return; }
    err=$(cat "$tmp/err")
    [ "$out" = "1 1 -1 -1 host goes on" ] || { echo "FAIL $1: '$out'"; fail=1; }
    [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "$3" "$tmp/err" ||
        { echo "FAIL $1: stderr '$err'"; fail=1; }
    VRAMTRACE_QUIET=1 python3 "$tmp/host.py" "$2" "$tmp/libvramtrace.so" 2>"$tmp/err" >/dev/null
    [ ! -s "$tmp/err" ] || { echo "FAIL $1: quiet, yet '$(cat "$tmp/err")'"; fail=1; }
}
check "other CUPTI" "$tmp/libcupti.so.12" "loaded $tmp/libcupti.so.12, but this vramtrace is built for libcupti.so.1[0-9]"
# without any CUPTI findable the message names the search; with one (this
# machine's toolkit) the missing library proper is the reason: either is one line
check "no library proper" "" "libcupti.so.*not found\|cannot load the library proper"
[ $fail -eq 0 ] && echo "loader: 2 passed, 0 failed"
exit $fail
