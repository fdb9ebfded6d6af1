#!/usr/bin/env python3
"""test_pystack_refuse.py LIB - on a Python version vt_pystack does not know
(run under 3.9 by ctest), init must refuse with VT_ERR_VERSION and a
one-line reason naming the version, and every later call must be a cheap
"disabled" answer, never a crash.  Exit 0 = pass."""
import ctypes
import sys

LIB = ctypes.CDLL(sys.argv[1])
LIB.vtpt_init.argtypes = [ctypes.c_char_p, ctypes.c_int]
LIB.vtpt_capture0.restype = ctypes.c_char_p
LIB.vtpt_stack_twice.argtypes = [ctypes.c_int]
LIB.vtpt_stack_twice.restype = ctypes.c_char_p
VT_ERR_VERSION, VT_ERR_DISABLED = -7, -8


def main():
    ver = "%d.%d.%d" % sys.version_info[:3]
    why = ctypes.create_string_buffer(200)
    rc = LIB.vtpt_init(why, 200)
    msg = why.value.decode()
    problems = []
    if rc != VT_ERR_VERSION:
        problems.append("init returned %d, want %d" % (rc, VT_ERR_VERSION))
    if msg != "unsupported Python %s (3.10-3.13 only)" % ver:
        problems.append("reason %r" % msg)
    if LIB.vtpt_init(why, 200) != rc:
        problems.append("init is not idempotent")
    first = LIB.vtpt_capture0().decode().splitlines()[0]
    if first != "n=%d" % VT_ERR_DISABLED:
        problems.append("capture answered %r" % first)
    d = LIB.vtpt_stack_twice(64).decode().split()
    if int(d[2]) != VT_ERR_DISABLED:
        problems.append("vt_pystack_stack answered %s" % d)
    for p in problems:
        print("FAIL:", p)
    print("%s: Python %s refused: %s" % ("FAILED" if problems else "PASS", ver, msg))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
