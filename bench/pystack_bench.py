#!/usr/bin/env python3
"""pystack_bench.py LIB [FRAMES] - cost of one GIL-free Python stack capture.

Builds a Python stack of exactly FRAMES frames (default 30; a mix of plain
calls, methods, a generator and a closure), then calls into the test
library once (ctypes, GIL released) which loops the capture inside C.
Prints the min and the median of 7 runs of 1,000,000 calls each (the
machine is shared: the min is the uncontended cost)."""
import ctypes
import os
import statistics
import sys

import pyframes

LIB = ctypes.CDLL(sys.argv[1])
FRAMES = int(sys.argv[2]) if len(sys.argv) > 2 else 30
LIB.vtpt_init.argtypes = [ctypes.c_char_p, ctypes.c_int]
LIB.vtpt_bench.argtypes = [ctypes.c_int, ctypes.c_int]
LIB.vtpt_bench.restype = ctypes.c_double
LIB.vtpt_bench_stack.argtypes = [ctypes.c_int, ctypes.c_int]
LIB.vtpt_bench_stack.restype = ctypes.c_double
LIB.vtpt_native_depth.restype = ctypes.c_int
LIB.vtpt_capture.argtypes = [ctypes.c_int]
LIB.vtpt_capture.restype = ctypes.c_char_p
ITERS = 1000000


def measure():
    n = int(LIB.vtpt_capture(256).decode().split("\n")[0].split("=")[1])
    cap = [LIB.vtpt_bench(ITERS, 256) for _ in range(7)]
    stk = [LIB.vtpt_bench_stack(ITERS, 256) for _ in range(7)]
    print("Python %s: %d Python frames: vt_pystack_capture min %.0f ns median %.0f ns; "
          "vt_pystack_stack (capture + define check + merge with %d-deep native stack) min %.0f ns median %.0f ns"
          % (sys.version.split()[0], n, min(cap), statistics.median(cap), LIB.vtpt_native_depth(),
             min(stk), statistics.median(stk)))
    return n


def main():
    why = ctypes.create_string_buffer(200)
    # VTPB_GIL=1: init with the GIL held (ctypes.PyDLL), as libvramtrace.so
    # is in PyTorch: on 3.12+ code objects are then named by address
    init = ctypes.PyDLL(sys.argv[1]) if os.environ.get("VTPB_GIL") == "1" else LIB
    init.vtpt_init.argtypes = [ctypes.c_char_p, ctypes.c_int]
    if init.vtpt_init(why, 200) != 0:
        print("init failed:", why.value.decode())
        return 1
    got = pyframes.call_at(FRAMES, measure)
    if got != FRAMES:
        print("warning: stack had %d frames, wanted %d" % (got, FRAMES))
    return 0


if __name__ == "__main__":
    sys.exit(main())
