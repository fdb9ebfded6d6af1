"""holders_walk.py SRC_PYTHON_DIR [N] - the holder walk's time at exit
(src/python/vramtrace_holders.py) over a program of about N Python objects
(default 10^6: dicts of lists of small objects, a few stand-in tensors
among them), median of 5 walks.  CPU only (stand-ins for tensors)."""
import statistics
import sys
import time
import types

sys.path.insert(0, sys.argv[1])
import vramtrace_holders as vh  # noqa: E402

N = int(sys.argv[2]) if len(sys.argv) > 2 else 1000000


class T:
    def __init__(self, a):
        self.addr, self.n, self.grad_fn = a, 4096, None


class Rec:
    def __init__(self, i):
        self.i, self.name, self.tags = i, "r%d" % i, [i, i + 1]


def info(o):
    return (o.addr, o.n) if issubclass(type(o), T) else None  # as the real one: type() only


m = types.ModuleType("prog")
m.tables = {k: [Rec(i) for i in range(1000)] for k in range(N // 3000)}  # ~3 objects per Rec
m.kept = [T(0x1000 * i) for i in range(1000)]
times, visited = [], 0
for _ in range(5):
    t0 = time.perf_counter()
    hs, visited, _, lim = vh.walk(roots=[("prog", m)], info=info, max_seconds=60)
    times.append(time.perf_counter() - t0)
print(f"holder walk: {visited} objects visited, median {statistics.median(times):.3f} s of 5 "
      f"({min(times):.3f}-{max(times):.3f}), {len(hs)} holders, limit '{lim}'")
