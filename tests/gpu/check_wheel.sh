#!/usr/bin/env bash
# check_wheel.sh - on the GPU machine: the wheel (VRAMTRACE_WHEEL, else
# dist/*.whl) as a user has it.  A fresh venv over the machine's torch
# Python (--system-site-packages: torch and its nvidia-cuda-cupti stay
# where pip put them) gets it by `pip install --no-index`; with no CUDA
# toolkit on PATH or LD_LIBRARY_PATH and none at CUDA_HOME:
#   1. `vramtrace record -- python leak.py` (torch): the library names the
#      CUPTI that torch loaded, the trace is written, `report` names the
#      leaking line;
#   2. a CUDA program without torch (the driver through ctypes): traced
#      with a CUPTI the loader finds, or one line says why and the program
#      runs to its end (rc 0) all the same.
# Last line: "check_wheel: ok ..." or "check_wheel: FAIL ..." or SKIP.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
name=check_wheel
whl=${VRAMTRACE_WHEEL:-$(ls "$root"/dist/vramtrace-*.whl 2>/dev/null | tail -1)}
[ -n "$whl" ] && [ -f "$whl" ] || { echo "$name: SKIP: no wheel (scripts/wheel.sh, or VRAMTRACE_WHEEL)"; exit 0; }
py=""
for c in python3 /opt/torch/.venv/bin/python; do
    if command -v "$c" >/dev/null && "$c" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
        py=$c
        break
    fi
done
[ -n "$py" ] || { echo "$name: SKIP: no python with torch and a CUDA device"; exit 0; }
work=${OUT:-/tmp}/check_wheel
rm -rf "$work"
mkdir -p "$work"
fail() { echo "$name: FAIL: $*"; exit 1; }

"$py" -m venv --system-site-packages "$work/venv" >"$work/venv.log" 2>&1 || fail "venv: $(tail -1 "$work/venv.log")"
"$work/venv/bin/python" -m pip install -q --no-index --disable-pip-version-check "$whl" >"$work/pip.log" 2>&1 ||
    fail "pip install: $(tail -1 "$work/pip.log")"
# no toolkit: only the venv and the system's own directories
export PATH="$work/venv/bin:/usr/bin:/bin"
unset LD_LIBRARY_PATH CUDA_HOME CUDA_PATH VRAMTRACE_LIB CUDA_INJECTION64_PATH
cat >"$work/leak.py" <<'PY'
import torch
keep = []
for step in range(20):
    x = torch.randn(256, 1024, device="cuda")
    keep.append(x * 2)  # the leak: one tensor per step kept
    torch.cuda.synchronize()
print("leak.py done")
PY
cd "$work"
vramtrace --version >"$work/version.txt" 2>&1 || fail "vramtrace --version: $(cat "$work/version.txt")"
timeout 300 vramtrace record -o "$work/t1" -- python "$work/leak.py" >"$work/rec1.out" 2>"$work/rec1.err" ||
    fail "record (torch) rc $?: $(tail -3 "$work/rec1.err")"
grep -q "leak.py done" "$work/rec1.out" || fail "the program did not finish"
cupti=$(grep -m1 -o 'recording to .*' "$work/rec1.err")
case "$cupti" in *libcupti.so*) ;; *) fail "no CUPTI named in the start line: $(head -3 "$work/rec1.err")" ;; esac
vramtrace report "$work/t1" >"$work/report1.txt" 2>&1 || fail "report rc $?"
grep -q 'leak.py:5' "$work/report1.txt" || fail "report does not name leak.py:5: $(grep -m1 verdict "$work/report1.txt")"

cat >"$work/driver.py" <<'PY'
import ctypes
cu = ctypes.CDLL("libcuda.so.1")
assert cu.cuInit(0) == 0
dev, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
assert cu.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
assert cu.cuCtxSetCurrent(ctx) == 0
assert cu.cuMemAlloc_v2(ctypes.byref(ptr), 1 << 20) == 0
print("driver.py done")
PY
timeout 120 vramtrace record -o "$work/t2" -- python "$work/driver.py" >"$work/rec2.out" 2>"$work/rec2.err"
rc=$?
[ $rc -eq 0 ] && grep -q "driver.py done" "$work/rec2.out" || fail "driver program rc $rc: $(tail -3 "$work/rec2.err")"
if grep -q 'recording to' "$work/rec2.err"; then
    how="no torch: $(grep -m1 -o 'CUPTI [0-9]* [^,)]*' "$work/rec2.err")"
else
    how="no torch: untraced, $(grep -m1 'vramtrace: ' "$work/rec2.err")"
fi
echo "torch: ${cupti#recording to }" >"$work/summary.txt"
echo "$how" >>"$work/summary.txt"
cat "$work/summary.txt" "$work/rec2.err" >&2
echo "$name: ok (${cupti#recording to *(}; $how)"
