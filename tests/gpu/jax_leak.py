"""jax_leak.py OUT.json [STEPS] [KEEP_ELEMS] - a JAX loop that keeps one
array a step (issue 33): each step computes a 4 MiB temporary and keeps a
KEEP_ELEMS float32 array (256 KiB by default) in a list, the leak.  Ground
truth from JAX itself: len(jax.live_arrays()) and their bytes before and
after the loop, written to OUT.json with the leak's line, for
tests/gpu/check_pools.sh (run with XLA's default allocator and with
XLA_PYTHON_CLIENT_ALLOCATOR=platform)."""
import json
import os
import sys

import jax
import jax.numpy as jnp

out = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 64
keep = int(sys.argv[3]) if len(sys.argv) > 3 else 1 << 16


def live():
    a = jax.live_arrays()
    return len(a), sum(x.nbytes for x in a)


@jax.jit
def step_fn(x, s):
    t = jnp.ones((1 << 20,), jnp.float32) * s  # 4 MiB temporary
    return x + t[: x.shape[0]]


kept = []
x = jnp.zeros((1 << 16,), jnp.float32)
x = step_fn(x, 1.0).block_until_ready()  # warm up: compiled, allocator ready
n0, b0 = live()
for step in range(steps):
    x = step_fn(x, float(step))
    kept.append(jnp.full((keep,), float(step), jnp.float32))  # LEAK_LINE
x.block_until_ready()
n1, b1 = live()
with open(__file__) as f:
    leak_line = next(i for i, line in enumerate(f, 1) if line.rstrip().endswith("# LEAK_LINE"))
json.dump({"framework": "jax", "allocator": os.environ.get("XLA_PYTHON_CLIENT_ALLOCATOR", "default"), "steps": steps,
           "keep_bytes": keep * 4, "live_arrays_before": n0, "live_arrays_after": n1, "live_bytes_before": b0,
           "live_bytes_after": b1, "leaked": b1 - b0, "leak_line": leak_line, "leak_function": "<module>",
           "file": __file__}, open(out, "w"))
