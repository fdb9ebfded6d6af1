#!/usr/bin/env python3
"""capture_bench.py LIB MODE ITERS HOST_KIB [FRAMES] - one run of
libvt_capture_bench.so (bench/capture_bench.c) from inside a Python stack
of FRAMES frames (default 24: calls, methods, a generator, closures, as a
module's forward reaches the allocator): ITERS rounds of host work over
HOST_KIB KiB, each followed by MODE 0 (nothing), 1 (an event without
stack) or 2 (the callback with native and Python stacks).  Prints ns per
round; with VTCB_SELF=1 the callback's own ns instead (TSC-timed, the host's
work excluded).  bench/capture_pollution.sh runs it under callgrind."""
import ctypes
import os
import sys

import pyframes

LIB = ctypes.CDLL(sys.argv[1])
MODE, ITERS, HOST_KIB = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
FRAMES = int(sys.argv[5]) if len(sys.argv) > 5 else 24
LIB.vtcb_init.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
LIB.vtcb_run.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
LIB.vtcb_run.restype = ctypes.c_double


def run():
    return LIB.vtcb_run(ITERS, HOST_KIB, MODE)


# initialized with the GIL held, as libvramtrace.so is by the thread that
# initializes CUDA in PyTorch (3.12+: code objects named by address, a
# code watcher counting their end); VTCB_NO_GIL=1: without it
init = LIB if os.environ.get("VTCB_NO_GIL") == "1" else ctypes.PyDLL(sys.argv[1])
init.vtcb_init.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
if init.vtcb_init(1, 1, 32) != 0:
    sys.exit("capture_bench.py: vtcb_init failed")
ns = pyframes.call_at(FRAMES, run)
LIB.vtcb_close()
print("mode %d: %d rounds over %d KiB: %.0f ns per round" % (MODE, ITERS, HOST_KIB, ns))
