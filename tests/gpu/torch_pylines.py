"""torch_pylines.py EXPECT_JSON - PyTorch allocations from known Python lines.

Run by check_pylines.sh under CUDA_INJECTION64_PATH=libvramtrace.so with
VRAMTRACE_PYTHON_STACKS=1 and PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
(one cudaMallocAsync per tensor).  Every case allocates one tensor of a
distinct size on one line and, on that same line, records the Python stack
as Python itself sees it (file, qualified name on 3.11+, line; innermost
first).  EXPECT_JSON gets one entry per case: the tensor's address and size
and that stack; the checker finds the allocation by address in the trace
and compares its Python frames.  All tensors stay alive until the end, so
no address is reused by our cases.
"""
import asyncio
import functools
import json
import os
import sys
import threading

import torch

MB = 1 << 20
CASES = []
KEEP = []
_n = [0]


def here():
    """The caller's stack, innermost first, as [file, function, line]."""
    out = []
    f = sys._getframe(1)
    while f is not None:
        co = f.f_code
        out.append([co.co_filename, getattr(co, "co_qualname", co.co_name), f.f_lineno])
        f = f.f_back
    return out


def nbytes():
    """A distinct size per case: (2 + case) MiB + case * 4 KiB."""
    _n[0] += 1
    return (2 + _n[0]) * MB + _n[0] * 4096


def record(case, t, stack, exact=True):
    """exact: the trace's Python frames must equal `stack`; otherwise
    `stack` must be their outer end (frames inside torch come first)."""
    KEEP.append(t)
    CASES.append({"case": case, "addr": t.data_ptr(), "size": t.numel() * t.element_size(),
                  "stack": stack, "exact": exact})


def new(n):
    return torch.empty(n, dtype=torch.uint8, device="cuda")


def case_plain():
    t, s = torch.empty(nbytes(), dtype=torch.uint8, device="cuda"), here()
    record("plain", t, s)


def leaf():
    t, s = torch.zeros(nbytes(), dtype=torch.uint8, device="cuda"), here()
    record("nested", t, s)


def middle():
    leaf()


def case_nested():
    middle()


class Net:
    def build(self):
        t, s = torch.ones(nbytes(), dtype=torch.uint8, device="cuda"), here()
        record("method", t, s)

    @classmethod
    def make(cls):
        t, s = torch.empty(nbytes(), dtype=torch.uint8, device="cuda"), here()
        record("classmethod", t, s)

    @staticmethod
    def helper():
        t, s = torch.empty(nbytes(), dtype=torch.uint8, device="cuda"), here()
        record("staticmethod", t, s)


def case_lambda():
    mk = lambda n: (torch.empty(n, dtype=torch.uint8, device="cuda"), here())  # noqa: E731
    t, s = mk(nbytes())
    record("lambda", t, s)


def gen():
    yield torch.empty(nbytes(), dtype=torch.uint8, device="cuda"), here()


def case_generator():
    for t, s in gen():
        record("generator", t, s)


def case_listcomp():
    # 3.12+ inlines the comprehension: the frame is case_listcomp itself
    pairs = [(torch.empty(nbytes(), dtype=torch.uint8, device="cuda"), here()) for _ in range(2)]
    for i, (t, s) in enumerate(pairs):
        record("listcomp%d" % i, t, s)


def case_closure():
    size = nbytes()

    def inner():
        return torch.empty(size, dtype=torch.uint8, device="cuda"), here()

    t, s = inner()
    record("closure", t, s)


def traced(fn):
    @functools.wraps(fn)
    def wrapper(*a, **k):
        return fn(*a, **k)

    return wrapper


@traced
def case_decorated():
    t, s = torch.empty(nbytes(), dtype=torch.uint8, device="cuda"), here()
    record("decorated", t, s)


async def co_alloc():
    await asyncio.sleep(0)
    return torch.empty(nbytes(), dtype=torch.uint8, device="cuda"), here()


async def co_main():
    return await co_alloc()


def case_coroutine():
    t, s = asyncio.run(co_main())
    record("coroutine", t, s)


def thread_body():
    t, s = torch.empty(nbytes(), dtype=torch.uint8, device="cuda"), here()
    record("thread", t, s)


def case_thread():
    th = threading.Thread(target=thread_body, name="alloc-thread")
    th.start()
    th.join()


def case_module():
    # the output of nn.Linear is allocated below torch/nn/modules/linear.py
    lin = torch.nn.Linear(1024, 1024 + _n[0]).cuda()
    KEEP.append(lin)
    x = torch.randn(512, 1024, device="cuda")
    KEEP.append(x)
    y, s = lin(x), here()
    record("nn_linear", y, s, exact=False)


def main():
    torch.cuda.init()
    KEEP.append(new(MB))  # warm-up: CUDA context, allocator, injection init
    torch.cuda.synchronize()
    for case in (case_plain, case_nested, Net().build, Net.make, Net.helper, case_lambda,
                 case_generator, case_listcomp, case_closure, case_decorated, case_coroutine,
                 case_thread, case_module):
        case()
    torch.cuda.synchronize()
    with open(sys.argv[1], "w") as fh:
        json.dump({"python": sys.version.split()[0], "cases": CASES}, fh, indent=1)
    print("torch_pylines: %d cases, Python %s, torch %s" % (len(CASES), sys.version.split()[0],
                                                           torch.__version__))
    print("torch_pylines pid %d" % os.getpid())


if __name__ == "__main__":
    main()
