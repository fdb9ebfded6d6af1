"""cupy_leak.py OUT.json [STEPS] [KEEP_BYTES] - a CuPy loop that keeps one
array a step (issue 33): each step makes a 4 MiB temporary and keeps a
KEEP_BYTES array in a list, the leak.  Ground truth from CuPy's own pool:
used_bytes() before and after the loop (and total_bytes()), written to
OUT.json with the leak's line, for tests/gpu/check_pools.sh."""
import json
import sys

import cupy as cp

out = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 64
keep_bytes = int(sys.argv[3]) if len(sys.argv) > 3 else 1 << 20

pool = cp.get_default_memory_pool()
kept = []
x = cp.ones(1 << 18, dtype=cp.float32)  # warm up: kernels compiled, first chunk
cp.cuda.Device().synchronize()
used0, total0 = pool.used_bytes(), pool.total_bytes()
for step in range(steps):
    tmp = cp.ones(1 << 20, dtype=cp.float32) * 2.0  # 4 MiB temporary, freed next step
    kept.append(cp.zeros(keep_bytes // 4, dtype=cp.float32))  # LEAK_LINE
    x += tmp[: x.size]
cp.cuda.Device().synchronize()
used1, total1 = pool.used_bytes(), pool.total_bytes()
with open(__file__) as f:
    leak_line = next(i for i, line in enumerate(f, 1) if line.rstrip().endswith("# LEAK_LINE"))
json.dump({"framework": "cupy", "steps": steps, "keep_bytes": keep_bytes, "used_before": used0, "used_after": used1,
           "total_before": total0, "total_after": total1, "leaked": used1 - used0,
           "leak_line": leak_line, "leak_function": "<module>", "file": __file__}, open(out, "w"))
