#!/usr/bin/env python3
"""test_pystack_trace.py LIB VRAMTRACE_CLI WORKDIR - Python stacks through
the whole pipeline on the CPU: allocations "made" on known lines (the test
library emits an alloc event with vt_pystack_stack()'s merged stack into a
real vt_writer trace, as libvramtrace.so does), then `vramtrace dump --json
--stacks` and tests/gpu/pylines_check.py, the same checker the GPU check
uses, compare every allocation's Python frames with the stack Python
reported on that line.  VTPT_UNWIND (see vt_pystack_tracelib.c) picks the
native part; VTPT_INIT_GIL=1 initializes with the GIL held (ctypes.PyDLL),
as libvramtrace.so is in PyTorch.  Exit 0 = pass."""
import asyncio
import ctypes
import os
import subprocess
import sys
import threading
import json

LIB = ctypes.CDLL(sys.argv[1])
CLI, WORK = sys.argv[2], sys.argv[3]
HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "..", "gpu", "pylines_check.py")
LIB.vtpt_init.argtypes = [ctypes.c_char_p, ctypes.c_int]
LIB.vtpt_trace_open.argtypes = [ctypes.c_char_p]
LIB.vtpt_trace_alloc.argtypes = [ctypes.c_ulonglong, ctypes.c_ulonglong]
A = LIB.vtpt_trace_alloc
CASES = []
_n = [0]


def here():
    out, f = [], sys._getframe(1)
    while f is not None:
        co = f.f_code
        out.append([co.co_filename, getattr(co, "co_qualname", co.co_name), f.f_lineno])
        f = f.f_back
    return out


def addr():
    _n[0] += 1
    return 0x7f0000000000 + _n[0] * 0x100000, 4096 * _n[0]


def record(case, a, s, rc, exact=True):
    assert rc == 0, (case, rc)
    CASES.append({"case": case, "addr": a[0], "size": a[1], "stack": s, "exact": exact})


def plain():
    a = addr()
    rc, s = A(*a), here()
    record("plain", a, rc=rc, s=s)


class Model:
    def forward(self):
        a = addr()
        rc, s = A(*a), here()
        record("method", a, rc=rc, s=s)


def gen():
    a = addr()
    yield a, A(*a), here()


def comp():
    rows = [(a, A(*a), here()) for a in (addr(), addr())]
    for i, (a, rc, s) in enumerate(rows):
        record("listcomp%d" % i, a, rc=rc, s=s)


async def co():
    await asyncio.sleep(0)
    a = addr()
    return a, A(*a), here()


def in_thread():
    a = addr()
    rc, s = A(*a), here()
    record("thread", a, rc=rc, s=s)


def deep(n):
    if n:
        return deep(n - 1)
    a = addr()
    rc, s = A(*a), here()
    record("deep", a, rc=rc, s=s)


def repeat():
    for _ in range(3):  # one line, one stack: sent once, then referenced
        a = addr()
        rc, s = A(*a), here()
        record("repeat", a, rc=rc, s=s)


def main():
    why = ctypes.create_string_buffer(200)
    init = ctypes.PyDLL(sys.argv[1]) if os.environ.get("VTPT_INIT_GIL") == "1" else LIB
    init.vtpt_init.argtypes = [ctypes.c_char_p, ctypes.c_int]
    if init.vtpt_init(why, 200) != 0:
        print("FAIL: init:", why.value.decode())
        return 1
    os.makedirs(WORK, exist_ok=True)
    trace = os.path.join(WORK, "pystack.%s.zst" % sys.version.split()[0])
    expect = os.path.join(WORK, "expect.%s.json" % sys.version.split()[0])
    if os.path.exists(trace):
        os.unlink(trace)
    assert LIB.vtpt_trace_open(trace.encode()) == 0
    plain()
    repeat()
    Model().forward()
    for a, rc, s in gen():
        record("generator", a, rc=rc, s=s)
    comp()
    a, rc, s = asyncio.run(co())
    record("coroutine", a, rc=rc, s=s)
    t = threading.Thread(target=in_thread)
    t.start()
    t.join()
    deep(40)
    plain()  # same code again: keys already defined, stack interned once
    assert LIB.vtpt_trace_close() == 0
    with open(expect, "w") as fh:
        json.dump({"python": sys.version.split()[0], "cases": CASES}, fh)
    dump = subprocess.run([CLI, "dump", "--json", "--stacks", trace], capture_output=True, text=True)
    if dump.returncode != 0:
        print("FAIL: vramtrace dump exited %d: %s" % (dump.returncode, dump.stderr[-400:]))
        return 1
    jl = os.path.join(WORK, "dump.%s.jsonl" % sys.version.split()[0])
    with open(jl, "w") as fh:
        fh.write(dump.stdout)
    env = dict(os.environ, VT_PYLINES_MIN_CASES=str(len(CASES)))
    res = subprocess.run([sys.executable, CHECK, expect, jl], capture_output=True, text=True, env=env)
    print(res.stdout, end="")
    print(res.stderr, end="")
    return res.returncode


if __name__ == "__main__":
    sys.exit(main())
