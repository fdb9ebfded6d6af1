"""crash_matrix.py MODE - a small PyTorch program for the host-under-stress
matrix of tests/gpu/check_crash_matrix.sh.  Each mode prints a fixed
output and exits with a fixed status, traced or not:
  plain     a few hundred allocations, exit 0
  fork      fork() without exec: the child (no CUDA) prints and _exits 7,
            the parent waits and goes on allocating, exit 0
  profiler  torch.profiler with CUDA activities active at the same time
            (a second CUPTI client): it must see the GPU's kernels (a
            jiterator kernel named vt_in_profiler among them) while
            vramtrace records them and the one after (vt_after_profiler), exit 0
  os_exit   os._exit(3) with tensors live, 0.5 s after the allocations
            (the writer flushes every VRAMTRACE_FLUSH_MS): no atexit, no End
  many      2,000 allocations with Python stacks (fills a tiny disk)
The output says whether torch.profiler saw GPU activities: a second CUPTI
client in the process must not take them away."""
import os
import sys
import time

import torch


def work(n):
    keep = []
    for i in range(n):
        x = torch.empty((1 + i % 17) * 4096, device="cuda")
        if i % 3 == 0:
            keep.append(x)
    torch.cuda.synchronize()
    return len(keep)


def main(mode):
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 1
    if mode == "plain":
        print("kept", work(300))
    elif mode == "fork":
        work(50)
        pid = os.fork()
        if pid == 0:
            print("child", flush=True)
            os._exit(7)
        _, st = os.waitpid(pid, 0)
        print("child exit", os.waitstatus_to_exitcode(st))
        print("kept", work(100))
    elif mode == "profiler":
        from torch.profiler import ProfilerActivity, profile
        # kernels named for the check: one while the profiler runs, one after
        # it stopped (check_crash_matrix.sh looks for both in the trace)
        named = {}
        try:
            from torch.cuda import jiterator
            for k in ("vt_in_profiler", "vt_after_profiler"):
                named[k] = jiterator._create_jit_fn(
                    "template <typename T> T %s(T x) { return x * 2 + 1; }" % k)
        except Exception as e:  # the same line traced and untraced
            print("no jiterator:", type(e).__name__)
        x = torch.ones(1024, device="cuda")
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            n = work(100)
            y = x * 2
            if "vt_in_profiler" in named:
                y = named["vt_in_profiler"](y)
            torch.cuda.synchronize()
        if "vt_after_profiler" in named:
            y = named["vt_after_profiler"](y)
        torch.cuda.synchronize()
        # what the profiler saw on the GPU: it needs CUPTI too
        gpu = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
        names = {e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA}
        mine = any("vt_in_profiler" in s for s in names)
        print("kept", n, "profiled GPU activities", "yes" if gpu > 0 else "no",
              "named kernel", "yes" if mine or not named else "no", float(y.sum()))
    elif mode == "os_exit":
        n = work(100)
        print("kept", n, flush=True)
        time.sleep(0.5)
        os._exit(3)
    elif mode == "many":
        print("kept", work(2000))
    else:
        print("unknown mode", mode, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
