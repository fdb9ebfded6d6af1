#!/usr/bin/env bash
# tests/gpu/check_pools.sh - pools above CUDA on the GPU (issue 33, items 4
# and 5), with VRAMTRACE_CLI (build/vramtrace) and OUT; needs CuPy and JAX.
# Records cupy_leak.py and jax_leak.py with `vramtrace record` and checks
# the report's JSON verdict against each program's own truth (CuPy's pool
# used_bytes(), jax.live_arrays()):
#   cupy-pool      CuPy's default pool, hook off (VRAMTRACE_CUPY_HOOK=0):
#                  cannot_tell, pool "cupy", never no_leak
#   cupy-hook      the same with record's CuPy memory hook: leak at the
#                  leak's line of cupy_leak.py, the hook's Note in the trace
#   jax-default    XLA's BFC allocator (preallocation): cannot_tell, pool
#                  "jax_xla"
#   jax-platform   XLA_PYTHON_CLIENT_ALLOCATOR=platform
#                  XLA_PYTHON_CLIENT_PREALLOCATE=false: leak at the leak's
#                  line of jax_leak.py
# Traces under $OUT/pools; prints "check_pools: ok" or the failures (SKIP
# when neither framework is installed).
set -u
here=$(cd "$(dirname "$0")" && pwd)
VT=${VRAMTRACE_CLI:-$here/../../build/vramtrace}
W=${OUT:-/tmp}/pools
rm -rf "$W"
mkdir -p "$W"
export VRAMTRACE_CACHE_DIR=$W/cache
fail=0 skipped=""
bad() { echo "FAIL: $*"; fail=1; }
run() { # NAME PROGRAM ENVVARS...: records into $W/NAME, truth in $W/NAME.truth.json
    local name=$1 prog=$2
    shift 2
    env "$@" "$VT" record -o "$W/$name" -- python3 "$here/$prog" "$W/$name.truth.json" \
        >"$W/$name.out" 2>"$W/$name.err"
    local rc=$?
    echo "$name: exit $rc"
    [ $rc -eq 0 ] || { bad "$name exited $rc: $(tail -3 "$W/$name.err" | tr '\n' ' ')"; return 1; }
    "$VT" report --json "$W/$name" >"$W/$name.report.json" 2>"$W/$name.report.err" || bad "$name: report failed"
    "$VT" report "$W/$name" >"$W/$name.report.txt" 2>&1
    grep '^verdict' -A1 "$W/$name.report.txt" | head -2
}
check() { # NAME WANT(leak|cannot_tell) POOL_KEY(for cannot_tell)
    python3 - "$W/$1.report.json" "$W/$1.truth.json" "$2" "${3:-}" <<'PY' || bad "$1"
import json, sys
rep, truth, want, pool = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3], sys.argv[4]
assert truth["leaked"] >= truth["steps"] * truth["keep_bytes"] * 0.9, ("the program did not leak", truth)
# the Python process (the one with the program's argv), whatever else ran
procs = [p for p in rep["processes"] if any("leak.py" in a for a in p.get("argv", []))] or rep["processes"]
v = procs[0]["verdict"]
print("  truth: leaked %d bytes in %d steps; verdict %s%s" % (truth["leaked"], truth["steps"], v["kind"],
      (" pool " + v["pool"]["key"]) if v.get("pool") else ""))
assert v["kind"] != "no_leak", ("no_leak to a leak", v)
assert v["kind"] == want, ("want " + want, v)
if want == "cannot_tell":
    assert v.get("pool", {}).get("key") == pool, ("pool", v)
else:
    u = v["site"]["user_frame"]
    assert u and u["file"] == truth["file"] and u["line"] == truth["leak_line"], ("not at the leak's line", u, truth)
PY
}
if python3 -c 'import cupy' 2>/dev/null; then
    run cupy-pool cupy_leak.py VRAMTRACE_CUPY_HOOK=0 && check cupy-pool cannot_tell cupy
    run cupy-hook cupy_leak.py && check cupy-hook leak
    "$VT" report "$W/cupy-hook" 2>/dev/null | grep -q 'CuPy memory hook: tensor events on' || bad "cupy-hook: no hook note"
else
    skipped+=" cupy"
fi
if python3 -c 'import jax' 2>/dev/null; then
    run jax-default jax_leak.py && check jax-default cannot_tell jax_xla
    run jax-platform jax_leak.py XLA_PYTHON_CLIENT_ALLOCATOR=platform XLA_PYTHON_CLIENT_PREALLOCATE=false &&
        check jax-platform leak
else
    skipped+=" jax"
fi
if [ $fail != 0 ]; then
    echo "check_pools: FAILED"
elif [ "$skipped" = " cupy jax" ]; then
    echo "check_pools: SKIP neither cupy nor jax is installed"
else
    echo "check_pools: ok${skipped:+ (not installed:$skipped)}"
fi
exit $fail
