#!/usr/bin/env bash
# pools.sh VRAMTRACE TRACES_DIR - pools above CUDA (issue 33,
# src/analyze/vt_pools.c) on the synthetic traces of gen_traces.c:
#   cupy_pool.zst     CuPy's MemoryPool without its hook: the chunks grew at
#                     a temporary's line -> cannot tell, naming CuPy's pool
#                     and its hook or set_allocator(None)
#   jax_bfc.zst       XLA's preallocation, nothing else seen -> cannot tell
#                     (never no leak), naming XLA and its platform allocator
#   cupy_hook.zst     the same CuPy program with its memory hook's blocks ->
#                     leak at keep_outputs (train.py:50), chunks reserved
#   jax_platform.zst  XLA_PYTHON_CLIENT_ALLOCATOR=platform -> leak at the
#                     user's line through JAX's dispatch frames
#   cupy_native.zst   CuPy's pool beside a growing cudaMalloc outside it ->
#                     leak at that line (growth outside a pool is real)
# Amounts of growth are left to the growth tests: only the verdict's kind,
# the pool and its setting, and the named line are checked here.
set -u
vt=$1 dir=$2
fail=0
bad() { echo "FAIL: $*"; fail=1; }
verdict() { "$vt" report --no-symbols "$dir/$1" 2>&1 | sed -n '/^verdict:/,/^trace:/p' | grep -v '^trace:'; }
json() { "$vt" report --no-symbols --json "$dir/$1" 2>/dev/null; }

v=$(verdict cupy_pool.zst)
grep -q "^verdict: CANNOT TELL: allocations come from CuPy's MemoryPool, which hands out blocks inside cudaMalloc chunks" <<<"$v" ||
    bad "cupy_pool: $v"
grep -q "^  to see its blocks: vramtrace record -- python3 cupy_train.py --epochs=1 (its CuPy memory hook records the pool's blocks; VRAMTRACE_CUPY_HOOK unset), or call cupy.cuda.set_allocator(None) before allocating$" <<<"$v" ||
    bad "cupy_pool command: $v"
json cupy_pool.zst | python3 -c '
import json, sys
v = json.load(sys.stdin)["processes"][0]["verdict"]
assert v["kind"] == "cannot_tell", v
assert v["pool"] == {"key": "cupy", "name": "CuPy'"'"'s MemoryPool"}, v
assert "set_allocator(None)" in v["command"] and "CuPy" in v["reason"], v
' || bad "cupy_pool JSON"

v=$(verdict jax_bfc.zst)
grep -q "^verdict: CANNOT TELL: allocations come from JAX/XLA's BFC allocator, which preallocates most of the device (75 %)" <<<"$v" ||
    bad "jax_bfc: $v"
grep -q "^  to see its blocks: XLA_PYTHON_CLIENT_ALLOCATOR=platform XLA_PYTHON_CLIENT_PREALLOCATE=false vramtrace record -- python3 jax_train.py --epochs=1$" <<<"$v" ||
    bad "jax_bfc command: $v"
json jax_bfc.zst | python3 -c '
import json, sys
v = json.load(sys.stdin)["processes"][0]["verdict"]
assert v["kind"] == "cannot_tell" and v["pool"]["key"] == "jax_xla", v
assert v["command"].startswith("XLA_PYTHON_CLIENT_ALLOCATOR=platform XLA_PYTHON_CLIENT_PREALLOCATE=false"), v
' || bad "jax_bfc JSON"

v=$(verdict cupy_hook.zst)
grep -q "^verdict: LEAK at keep_outputs (/home/user/project/train.py:50): +" <<<"$v" || bad "cupy_hook: $v"
json cupy_hook.zst | python3 -c '
import json, sys
p = json.load(sys.stdin)["processes"][0]
v = p["verdict"]
assert v["kind"] == "leak" and v["tensor_level"] and "pool" not in v and v["allocator_mode"] == "cupy_pool", v
u, fr = v["site"]["user_frame"], v["site"]["stack"]
assert u["file"] == "/home/user/project/train.py" and u["line"] == 50, u
assert all(f["internal"] for f in fr if "vramtrace_cupy" in (f.get("file") or "") or "_ctypes" in (f.get("module") or "")), fr
assert [s["kind"] for s in p["leaks"]["sites"]] == ["tensor"], p["leaks"]["sites"]
' || bad "cupy_hook JSON"
r=$("$vt" report --no-symbols "$dir/cupy_hook.zst" 2>&1)
grep -q "allocated       peak 26.00 MiB .* (blocks of CuPy's memory pool)" <<<"$r" || bad "cupy_hook: blocks not allocated"
grep -q "reserved        peak 28.00 MiB .* (its chunks)" <<<"$r" || bad "cupy_hook: chunks not reserved"

v=$(verdict jax_platform.zst)
grep -q "^verdict: LEAK at keep_outputs (/home/user/project/train.py:50): +.* over 24 steps" <<<"$v" ||
    bad "jax_platform: $v"

v=$(verdict cupy_native.zst)
grep -q "^verdict: LEAK at keep_outputs (/home/user/project/train.py:50): +" <<<"$v" || bad "cupy_native: $v"

[ $fail = 0 ] && echo "ok: pools (cupy pool, jax bfc: cannot tell; cupy hook, jax platform: leak at the line)"
exit $fail
