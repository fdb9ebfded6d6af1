"""prog.py - one parameterized PyTorch program of the ground-truth matrix
(issue 33, "Proof: ground truth, not our own fixtures"), recorded by
tests/gpu/matrix/run.py under `vramtrace record`.

A loop of --steps steps, each about --step-ms long: the step's work (one
small matmul for loops under 1 ms, else a training step of a small MLP),
the pattern's own allocations, a synchronize, then a sleep/spin up to the
step's length, so the time is real.  Each step is the NVTX range "step"
unless --no-nvtx (then only the kernel-period step detector can find the
steps).

Patterns that leak --leak-bytes a step (N > 0):
  list          kept.append(one new tensor of N bytes)
  graph         validation without no_grad whose loss is appended to a list:
                each kept loss keeps its autograd graph, whose largest saved
                tensor is the N-byte hidden activation
  dict          cache[f"batch{i}"] = a new tensor of N bytes (never evicted)
Clean patterns (--leak-bytes 0):
  clean         the step's work only
  deque         collections.deque(maxlen=8) of 256 KiB tensors: held, bounded
  temporaries   a 1-13 MiB temporary of a different size each step
  no_zero_grad  a training step that never zeroes the gradients (they
                accumulate in place)
  grad_accum    gradient accumulation over 4 micro-batches, then step and
                zero_grad(set_to_none=True)
  no_grad_val   every 4th step a validation pass under torch.no_grad()
  compile       the training step through torch.compile (written as skipped
                when it cannot compile here)

--release exit keeps what leaked until the interpreter exits (no kernel
after the loop); --release loop-end drops it after the loop and then runs a
last evaluation kernel, so the frees come before the end of the real work.

Ground truth (--truth PATH, JSON): torch.cuda.memory_allocated() after one
warm-up step (before the loop) and at the loop's end (before any release),
kept_bytes = the difference, peak_bytes = max_memory_allocated() then,
the measured mean step time, and the line that allocates what is kept
(the line tagged "# truth:PATTERN" below).

`--help` and parse_args() need no torch and no GPU (run.py --dry-run uses
them); torch is imported in main() only."""
import argparse
import collections
import json
import os
import sys
import time

LEAKY = ("list", "graph", "dict")
CLEAN = ("clean", "deque", "temporaries", "no_zero_grad", "grad_accum", "no_grad_val", "compile")
PATTERNS = LEAKY + CLEAN
RELEASES = ("exit", "loop-end")
BATCH, D_IN, D_OUT, HIDDEN = 16, 32, 32, 256
DEQUE_LEN, DEQUE_ELEMS = 8, 65536  # 8 x 256 KiB held at most
# module globals, as a user's would be: with --release exit they live until
# the interpreter's exit, and the holder walk at exit names them
kept, val_losses, cache = [], [], {}
recent = collections.deque(maxlen=DEQUE_LEN)
HOLDERS = {"list": "__main__.kept", "graph": "__main__.val_losses", "dict": "__main__.cache",
           "deque": "__main__.recent"}


def build_parser():
    p = argparse.ArgumentParser(prog="prog.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--step-ms", type=float, default=1.0, help="step length in ms (0.2, 1, 10, 100)")
    p.add_argument("--leak-bytes", type=int, default=0, help="bytes kept a step (0: a clean pattern)")
    p.add_argument("--steps", type=int, default=32, help="steps in the loop")
    p.add_argument("--release", choices=RELEASES, default="exit", help="when the kept tensors are freed")
    p.add_argument("--pattern", choices=PATTERNS, default=None,
                   help="default: list when --leak-bytes > 0, else clean")
    p.add_argument("--no-nvtx", action="store_true", help="no NVTX range per step")
    p.add_argument("--truth", default=None, help="write the ground truth (JSON) here")
    return p


def parse_args(argv):
    """Parse and check the arguments (no torch); raises SystemExit (2) on an error."""
    p = build_parser()
    a = p.parse_args(argv)
    if a.pattern is None:
        a.pattern = "list" if a.leak_bytes > 0 else "clean"
    if a.steps < 1:
        p.error("--steps must be at least 1")
    if not a.step_ms > 0:
        p.error("--step-ms must be positive")
    if a.leak_bytes < 0 or a.leak_bytes % 4:
        p.error("--leak-bytes must be a non-negative multiple of 4")
    if a.pattern in LEAKY and a.leak_bytes == 0:
        p.error(f"--pattern {a.pattern} leaks: give --leak-bytes > 0")
    if a.pattern in CLEAN and a.leak_bytes:
        p.error(f"--pattern {a.pattern} is clean: --leak-bytes must be 0")
    if a.pattern == "deque" and a.steps < 4 * DEQUE_LEN:
        p.error(f"--pattern deque needs --steps >= {4 * DEQUE_LEN}: over fewer it grows every step, as a leak")
    if a.pattern == "graph" and a.leak_bytes < 4 * BATCH:
        p.error(f"--pattern graph needs --leak-bytes >= {4 * BATCH} (one hidden unit per sample)")
    return a


def truth_lines(path=None):
    """{pattern: line} of the lines tagged '# truth:PATTERN' in this file."""
    out = {}
    with open(path or os.path.abspath(__file__)) as f:
        for n, line in enumerate(f, 1):
            code, _, tag = line.partition("  # truth:")
            if tag and code.strip() and tag.strip() in PATTERNS:
                out[tag.strip()] = n
    return out


def wait_until(t_end):
    """Sleep, then spin, until perf_counter() reaches t_end."""
    while True:
        left = t_end - time.perf_counter()
        if left <= 0:
            return
        if left > 0.002:
            time.sleep(left - 0.001)


def main(argv):
    a = parse_args(argv)
    import torch
    import torch.nn.functional as F

    dev = os.environ.get("VT_MATRIX_DEVICE", "cuda")  # cpu: a smoke test of the code paths, torch.cuda stubbed
    torch.manual_seed(0)
    # under 1 ms a step is one small matmul (a training step takes longer)
    light = a.step_ms < 1 and a.pattern in ("list", "dict", "clean")
    hidden = max(8, a.leak_bytes // (4 * BATCH)) if a.pattern == "graph" else HIDDEN

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(D_IN, hidden)
            self.fc2 = torch.nn.Linear(hidden, D_OUT)

        def forward(self, x):
            h = torch.relu(self.fc1(x))  # truth:graph
            return self.fc2(h)

    model = Net().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    fwd = model
    skipped = None
    mm_a = torch.randn(64, 64, device=dev)
    mm_b = torch.randn(64, 64, device=dev)
    n = a.leak_bytes

    def train(i, zero=True, scale=1.0):  # fwd: the model, or torch.compile's of it
        x = torch.randn(BATCH, D_IN, device=dev)
        y = torch.randn(BATCH, D_OUT, device=dev)
        loss = F.mse_loss(fwd(x), y) * scale
        loss.backward()
        if zero:
            opt.step()
            opt.zero_grad(set_to_none=True)

    def step_once(i):
        if a.pattern == "list":
            kept.append(torch.zeros(n, dtype=torch.uint8, device=dev))  # truth:list
        elif a.pattern == "dict":
            cache[f"batch{i}"] = torch.full((n // 4,), float(i), device=dev)  # truth:dict
        if light:
            float(torch.mm(mm_a, mm_b)[0, 0])
            return
        if a.pattern == "no_zero_grad":
            x = torch.randn(BATCH, D_IN, device=dev)
            F.mse_loss(fwd(x), torch.randn(BATCH, D_OUT, device=dev)).backward()
            opt.step()  # the gradients are never zeroed: they accumulate in place
        elif a.pattern == "grad_accum":
            train(i, zero=(i + 1) % 4 == 0, scale=0.25)  # step and zero_grad every 4th micro-batch
        else:
            train(i)
        if a.pattern == "graph":
            xv = torch.randn(BATCH, D_IN, device=dev)
            yv = torch.randn(BATCH, D_OUT, device=dev)
            val_losses.append(F.mse_loss(model(xv), yv))  # not .item(), no no_grad: the graph stays
        elif a.pattern == "deque":
            recent.append(torch.randn(DEQUE_ELEMS, device=dev))  # truth:deque
        elif a.pattern == "temporaries":
            tmp = torch.empty((1 + (i * 7) % 13) << 18, device=dev)  # 1-13 MiB, a new size each step
            tmp.fill_(float(i))
            float(tmp.sum())
            del tmp
        elif a.pattern == "no_grad_val" and i % 4 == 3:
            with torch.no_grad():
                float(model(torch.randn(8 * BATCH, D_IN, device=dev)).pow(2).mean())

    def clear():
        kept.clear(), val_losses.clear(), cache.clear(), recent.clear()

    # one step before the baseline: the optimizer's state and cuBLAS's
    # workspace exist (and torch.compile compiles here, not in the loop)
    if a.pattern == "compile":
        try:
            fwd = torch.compile(model)
            step_once(-1)
        except Exception as e:  # noqa: BLE001 - no compiler offline, no triton: the cell is skipped
            skipped = f"torch.compile failed: {type(e).__name__}: {str(e)[:300]}"
    else:
        step_once(-1)
    clear()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    step_s = a.step_ms / 1000.0
    t_loop = time.perf_counter()
    for i in range(a.steps if skipped is None else 0):
        t0 = time.perf_counter()
        if not a.no_nvtx:
            torch.cuda.nvtx.range_push("step")
        step_once(i)
        torch.cuda.synchronize()
        wait_until(t0 + step_s)
        if not a.no_nvtx:
            torch.cuda.nvtx.range_pop()
    loop_s = time.perf_counter() - t_loop
    torch.cuda.synchronize()
    end = torch.cuda.memory_allocated()
    try:
        peak = torch.cuda.max_memory_allocated()
    except RuntimeError:  # an allocator backend without the statistic
        peak = max(base, end)
    after = None
    if a.release == "loop-end" and skipped is None:
        clear()
        with torch.no_grad():  # a last kernel after the frees: they come before the end of the work
            float(model(torch.randn(BATCH, D_IN, device=dev)).sum())
        torch.cuda.synchronize()
        after = torch.cuda.memory_allocated()
    lines = truth_lines()
    truth = {
        "pattern": a.pattern, "leaky": a.pattern in LEAKY, "step_ms": a.step_ms, "steps": a.steps,
        "leak_bytes": a.leak_bytes, "release": a.release, "nvtx": not a.no_nvtx, "light": light,
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
        "base_bytes": base, "end_bytes": end, "kept_bytes": end - base, "peak_bytes": peak,
        "after_release_bytes": after, "mean_step_ms": 1000.0 * loop_s / max(1, a.steps if skipped is None else 1),
        "loop_s": loop_s, "file": os.path.abspath(__file__),
        "line": lines.get(a.pattern) if a.pattern in LEAKY else None,
        "holder": HOLDERS.get(a.pattern) if a.release == "exit" else None,
        "torch": torch.__version__, "pid": os.getpid(), "skipped": skipped,
    }
    if a.truth:
        with open(a.truth, "w") as f:
            json.dump(truth, f, indent=1)
    print(f"prog: {a.pattern} kept {end - base} B over {a.steps} steps, "
          f"{truth['mean_step_ms']:.3f} ms a step" + (f" (skipped: {skipped})" if skipped else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
