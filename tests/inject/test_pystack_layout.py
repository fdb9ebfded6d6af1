#!/usr/bin/env python3
"""test_pystack_layout.py LIB - a wrong layout table must disable vt_pystack,
never crash it.  For every layout field and a few shifts (+-8, +4096), a
child process gets that field wrong on purpose (vt_pystack_test_reset), runs
init from a nested stack (method, generator, frame objects), then captures
from several kinds of frames.  Every child must exit cleanly; init must
refuse, unless the field is not used by this version (then captures must be
exact).  Fields init cannot check are listed in UNCHECKED with the reason;
their shifts must still not crash.  Exit 0 = pass."""
import ctypes
import subprocess
import sys

V = sys.version_info[:2]
USED = {"co_firsttraceable"} if V >= (3, 11) else set()
USED |= {"f_previous", "f_code", "f_instr", "co_filename", "co_linetable", "ob_type"}
FIELDS = ["ts_interp", "ts_frame", "ts_cframe", "cf_current", "f_previous", "f_code", "f_instr",
          "f_owner", "f_is_entry", "co_filename", "co_name", "co_qualname", "co_linetable",
          "co_firstlineno", "co_firsttraceable", "co_adaptive", "ob_type", "ob_size", "bytes_sval",
          "u_length", "u_state", "u_ascii_size", "u_compact_size"]
# field -> why init cannot catch a wrong value (covered by vt_pyoffsets_check)
UNCHECKED = {"u_compact_size": "used only by non-ASCII names, none is certain to exist at init"}
if V == (3, 10):
    UNCHECKED["f_instr"] = "f_lasti's neighbours are small ints that decode to valid lines"
if V in ((3, 11), (3, 12)):
    UNCHECKED["co_qualname"] = "its neighbour co_name is a valid name too (plain names instead of qualified)"
SHIFTS = [8, -8, 4096]
LATE_FIELDS = ["f_previous", "f_code", "f_instr", "co_filename", "co_linetable", "ob_type",
               "co_firsttraceable"]
if V == (3, 10):
    LATE_FIELDS.remove("f_instr")


def child(lib, field, delta, late):
    LIB = ctypes.CDLL(lib)
    LIB.vtpt_reset.argtypes = [ctypes.c_char_p, ctypes.c_long]
    LIB.vtpt_init.argtypes = [ctypes.c_char_p, ctypes.c_int]
    LIB.vtpt_capture0.restype = ctypes.c_char_p
    assert LIB.vtpt_reset(field.encode(), delta) == 0

    def E():
        out, f = [], sys._getframe(1)
        while f is not None:
            co = f.f_code
            out.append("%s\t%s\t%d" % (co.co_filename, getattr(co, "co_qualname", co.co_name), f.f_lineno))
            f = f.f_back
        return out

    def same(raw, exp):
        lines = raw.decode("utf-8", "replace").splitlines()
        return ["\t".join(x.split("\t")[:3]) for x in lines[1:]] == exp

    why = ctypes.create_string_buffer(200)

    class Outer:
        def method(self):
            sys._getframe()  # a frame object on the chain
            return next(self.gen())

        def gen(self):
            yield [LIB.vtpt_init(why, 200)][0]

    deferred = 0
    if late:
        LIB.vtpt_init_in_new_thread.argtypes = [ctypes.c_char_p, ctypes.c_int]
        rc = LIB.vtpt_init_in_new_thread(why, 200)
        if rc == 0:
            deferred = 1  # nothing checked yet: the first capture with frames must
            first = LIB.vtpt_capture0().decode().splitlines()[0]
            rc = int(first.split("=")[1])  # -8: disabled by the late check
            sys.stderr.flush()
    else:
        rc = Outer().method()
    results = []

    def fünf():
        return LIB.vtpt_capture0(), E()

    def g():
        yield fünf()

    def deep(n):
        return deep(n - 1) if n else (LIB.vtpt_capture0(), E())

    for r, e in (fünf(), next(g()), deep(20), [(LIB.vtpt_capture0(), E()) for _ in range(1)][0]):
        results.append(same(r, e))
    print("rc=%d exact=%d deferred=%d why=%s" % (rc, all(results), deferred, why.value.decode()))


def main():
    lib = sys.argv[1]
    problems, rows = [], 0
    checked_late = [0]
    runs = [(f, d, 0) for f in FIELDS for d in SHIFTS]
    # init on a thread without Python frames: the first capture checks
    runs += [(f, 8, 1) for f in LATE_FIELDS if f in USED]
    for field, delta, late in runs:
        if True:
            p = subprocess.run([sys.executable, __file__, lib, field, str(delta), str(late)],
                               capture_output=True, text=True, timeout=60)
            rows += 1
            out = p.stdout.strip().splitlines()
            if p.returncode != 0 or not out or not out[-1].startswith("rc="):
                problems.append("%s%+d: child died (status %d) %s" % (field, delta, p.returncode, p.stderr[-300:]))
                continue
            kv = dict(x.split("=", 1) for x in out[-1].split(" ", 3))
            rc, exact = int(kv["rc"]), kv["exact"] == "1"
            if rc == 0 and not exact and field not in UNCHECKED:
                problems.append("%s%+d: init accepted a wrong layout and captures are wrong" % (field, delta))
            deferred = kv["deferred"] == "1"  # init passed, the first capture checked
            if deferred and rc != -8:
                problems.append("%s%+d late: first capture returned %d, want -8 (disabled)" % (field, delta, rc))
            if deferred and "vramtrace: python stacks off: " not in p.stderr:
                problems.append("%s%+d late: no stderr line (%r)" % (field, delta, p.stderr[-200:]))
            print("%-18s %+5d %s init %3d  %s  %s" % (field, delta, "late" if late else "    ", rc,
                                                     "exact" if exact else "-", kv["why"]))
            checked_late[0] += deferred
    for p in problems:
        print("FAIL:", p)
    if not checked_late[0]:
        problems.append("no wrong layout got past init to be caught by the late check")
        print("FAIL:", problems[-1])
    print("%s: %d wrong layouts (%d caught by the late check), %d problem(s); unchecked by init: %s"
          % ("FAILED" if problems else "PASS", rows, checked_late[0], len(problems), ", ".join(sorted(UNCHECKED))))
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) == 5:
        child(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(main())
