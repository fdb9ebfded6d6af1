"""smoke_cpu.py - every code path of prog.py on the CPU, torch.cuda stubbed:
a check before a GPU call (a Python error in a pattern would cost the
matrix's one run).  Needs torch (any version with a CPU build), no GPU;
not run by ctest.  torch.compile is skipped where it does not exist.

  python3 tests/gpu/matrix/smoke_cpu.py"""
import json
import os
import sys
import tempfile

os.environ["VT_MATRIX_DEVICE"] = "cpu"
import torch  # noqa: E402

torch.cuda.synchronize = lambda *a, **k: None
torch.cuda.memory_allocated = lambda *a, **k: 0
torch.cuda.max_memory_allocated = lambda *a, **k: 0


class _Nvtx:
    range_push = staticmethod(lambda *a: None)
    range_pop = staticmethod(lambda *a: None)


torch.cuda.nvtx = _Nvtx
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import prog  # noqa: E402

CASES = [
    ["--pattern", "list", "--leak-bytes", "512", "--steps", "8", "--step-ms", "0.2"],
    ["--pattern", "list", "--leak-bytes", "65536", "--steps", "8", "--step-ms", "1", "--release", "loop-end"],
    ["--pattern", "graph", "--leak-bytes", "65536", "--steps", "8", "--step-ms", "1", "--no-nvtx"],
    ["--pattern", "dict", "--leak-bytes", "512", "--steps", "8", "--step-ms", "10"],
    ["--pattern", "clean", "--steps", "8", "--step-ms", "0.2"],
    ["--pattern", "clean", "--steps", "8", "--step-ms", "1"],
    ["--pattern", "deque", "--steps", "32", "--step-ms", "1"],
    ["--pattern", "temporaries", "--steps", "8", "--step-ms", "1"],
    ["--pattern", "no_zero_grad", "--steps", "8", "--step-ms", "1"],
    ["--pattern", "grad_accum", "--steps", "8", "--step-ms", "1"],
    ["--pattern", "no_grad_val", "--steps", "8", "--step-ms", "10"],
    ["--pattern", "compile", "--steps", "8", "--step-ms", "1"],
]
fails = 0
with tempfile.TemporaryDirectory() as d:
    for args in CASES:
        for c in (prog.kept, prog.val_losses, prog.cache, prog.recent):
            c.clear()
        path = os.path.join(d, "truth.json")
        rc = prog.main(args + ["--truth", path])
        t = json.load(open(path))
        held = {"list": len(prog.kept), "graph": len(prog.val_losses), "dict": len(prog.cache)}.get(t["pattern"])
        ok = rc == 0 and (t["skipped"] or not t["leaky"] or (t["line"] and held == (
            0 if t["release"] == "loop-end" else t["steps"])))
        fails += not ok
        print(("ok  " if ok else "FAIL"), " ".join(args), f"line={t['line']} held={held} skipped={t['skipped']}")
print("smoke_cpu: ok" if not fails else f"smoke_cpu: FAIL: {fails}")
sys.exit(1 if fails else 0)
