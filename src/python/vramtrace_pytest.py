"""vramtrace_pytest - a pytest plugin: each test a range in the trace, and
the test that leaks GPU memory fails, naming its line (issue 37).

    vramtrace record -- python -m pytest --vramtrace tests/
    vramtrace record -- python -m pytest --vramtrace-fail-on-leak 0 tests/
    vramtrace report --json vramtrace-pytest-*/   # processes[].tests[]

`vramtrace record` puts this module on PYTHONPATH and names it in
PYTEST_PLUGINS, so nothing is installed; a wheel registers it as a
`pytest11` entry point named `vramtrace_pytest` (pytest registers the
plugin under that name and then skips the PYTEST_PLUGINS module of the
same name: loaded once).  It is
inert unless `--vramtrace`, `--vramtrace-fail-on-leak`,
`--vramtrace-fail-on-peak` or a `vramtrace` marker asks for it:

    @pytest.mark.vramtrace(leak=0, peak="2 GiB")
    def test_step(): ...

Around each test's call (not its fixtures' setup and teardown) it calls
two functions of libvramtrace.so (src/inject/vt_inject_test.c) through
ctypes:

    int vt_test_begin(const char *nodeid)
    int vt_test_end(const char *nodeid, vt_test_summary *sum,
                    vt_test_site *sites, uint32_t max_sites)

The library writes the range (NVTX, domain "vramtrace.test") into the
trace and, while the test runs, keeps a table of the blocks it allocated
and has not freed, each with the user's Python line; vt_test_end returns
what is left (with tensor events, PyTorch's tensors; the allocator's
cache is not a leak) for this module to fail the test.  The library is
the one CUDA loaded from CUDA_INJECTION64_PATH (RTLD_NOLOAD: never loaded
here); until CUDA initialised it is not there, so the open test's node id
waits in VRAMTRACE_TEST_PENDING ("PID:NODEID"), which the library reads
when it starts in this process.
Without the library this module says so once and does nothing.
"""
import ctypes
import gc
import os
import re
import sys

ABI = 1
MAX_SITES = 16
PENDING_ENV = "VRAMTRACE_TEST_PENDING"
F_TENSORS, F_FULL, F_NOPY = 1, 2, 4


class Summary(ctypes.Structure):
    """vt_test_summary (src/inject/vt_test_abi.h)."""
    _fields_ = [("abi", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("allocated_bytes", ctypes.c_uint64), ("allocs", ctypes.c_uint64),
                ("leaked_bytes", ctypes.c_uint64), ("leaked_blocks", ctypes.c_uint64),
                ("peak_bytes", ctypes.c_uint64), ("reserved_bytes", ctypes.c_uint64),
                ("dropped", ctypes.c_uint64), ("nsites", ctypes.c_uint32),
                ("ndevices", ctypes.c_uint32), ("device_live", ctypes.c_uint64 * 16)]


class Site(ctypes.Structure):
    """vt_test_site (src/inject/vt_test_abi.h)."""
    _fields_ = [("file", ctypes.c_char * 256), ("function", ctypes.c_char * 128),
                ("line", ctypes.c_uint32), ("device", ctypes.c_int32),
                ("bytes", ctypes.c_uint64), ("blocks", ctypes.c_uint64)]


_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1000, "kib": 1 << 10, "m": 1 << 20, "mb": 1000 ** 2,
          "mib": 1 << 20, "g": 1 << 30, "gb": 1000 ** 3, "gib": 1 << 30, "t": 1 << 40, "tb": 1000 ** 4,
          "tib": 1 << 40}


def parse_size(text):
    """Bytes from 0, 4096, "512 KiB", "2 GiB", "1.5G" (K/M/G alone are binary), or None."""
    if text is None:
        return None
    if isinstance(text, bool):
        raise ValueError("a size, not %r" % (text,))
    if isinstance(text, (int, float)):
        if text < 0:
            raise ValueError("a size must not be negative: %r" % (text,))
        return int(text)
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError("not a size: %r (bytes, or a number with B, KiB, MiB, GiB, KB, MB, GB)" % (text,))
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def fmt_bytes(n):
    """As the report writes sizes: 512 B, 4.00 KiB, 1.50 GiB."""
    n = int(n)
    if n < 1024:
        return "%d B" % n
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024.0
        if n < 1024 or unit == "TiB":
            return "%.2f %s" % (n, unit)


class Library:
    """libvramtrace.so's test entry points, found lazily: None until CUDA
    loaded it; `absent` (a reason) when it never will be."""

    def __init__(self, env=os.environ):
        self.env = env
        self.path = env.get("CUDA_INJECTION64_PATH") or ""
        self.absent = None if self.path else (
            "libvramtrace.so is not injected (run pytest under `vramtrace record --`)")
        self.begin = self.end = None

    def get(self):
        """The loaded library's (begin, end), or None (not loaded yet, or absent)."""
        if self.begin is not None or self.absent:
            return (self.begin, self.end) if self.begin is not None else None
        try:
            lib = ctypes.CDLL(self.path, mode=getattr(os, "RTLD_NOLOAD", 4) | getattr(os, "RTLD_NOW", 2))
        except OSError:
            return None  # CUDA has not initialised (and loaded it) yet
        try:
            begin, end = lib.vt_test_begin, lib.vt_test_end
        except AttributeError:
            self.absent = "%s has no test entry points (an older vramtrace)" % self.path
            return None
        begin.argtypes = [ctypes.c_char_p]
        begin.restype = ctypes.c_int
        end.argtypes = [ctypes.c_char_p, ctypes.POINTER(Summary), ctypes.POINTER(Site), ctypes.c_uint32]
        end.restype = ctypes.c_int
        self.begin, self.end = begin, end
        return begin, end


def _shown(path):
    """A file under the current directory relative to it, as pytest shows files."""
    try:
        rel = os.path.relpath(path)
        return path if rel.startswith("..") or os.path.isabs(rel) else rel
    except ValueError:
        return path


class Result:
    """What one test left live, as vt_test_end answered."""

    def __init__(self, summary, sites):
        self.summary, self.sites = summary, sites

    @property
    def leaked(self):
        return self.summary.leaked_bytes

    @property
    def peak(self):
        return self.summary.peak_bytes

    def site_lines(self, limit=5):
        out = []
        for s in self.sites[:limit]:
            f = _shown(s.file.decode("utf-8", "replace"))
            where = "%s:%d (%s)" % (f, s.line, s.function.decode("utf-8", "replace")) if f != "?" else \
                "no Python line (a thread without Python frames, e.g. PyTorch's autograd engine)"
            out.append("    %s in %d block%s at %s%s" % (
                fmt_bytes(s.bytes), s.blocks, "" if s.blocks == 1 else "s", where,
                " on device %d" % s.device if s.device else ""))
        more = self.summary.nsites - min(len(self.sites), limit)
        if more > 0:
            out.append("    ... and %d more call site%s" % (more, "" if more == 1 else "s"))
        return out

    def notes(self):
        s, out = self.summary, []
        if s.flags & F_FULL:
            out.append("vramtrace: the test table was full: %d blocks were not followed; "
                       "the figures are low" % s.dropped)
        if not s.flags & F_TENSORS:
            out.append("vramtrace: no tensor events: blocks the driver handed out count "
                       "(a caching allocator's new segment counts as left live)")
        if s.flags & F_NOPY:
            out.append("vramtrace: some blocks have no Python line (allocated by a thread without Python "
                       "frames, or Python stacks off)")
        return out


class Plugin:
    """The plugin's state for one pytest session."""

    def __init__(self, config, lib=None):
        self.config = config
        self.lib = lib if lib is not None else Library()
        self.on = bool(config.getoption("vramtrace", False))
        self.fail_leak = parse_size(config.getoption("vramtrace_fail_on_leak", None))
        self.fail_peak = parse_size(config.getoption("vramtrace_fail_on_peak", None))
        self.on = self.on or self.fail_leak is not None or self.fail_peak is not None
        self.said = None  # the one message kept for the end
        self.results = {}  # nodeid -> Result, tests that left memory live
        self.traced = 0

    def limits(self, item):
        """(leak, peak) limits of this test in bytes (None: none), and whether to trace it."""
        leak, peak, on = self.fail_leak, self.fail_peak, self.on
        mark = item.get_closest_marker("vramtrace") if hasattr(item, "get_closest_marker") else None
        if mark is not None:
            on = True
            if "leak" in mark.kwargs:
                leak = parse_size(mark.kwargs["leak"])
            if "peak" in mark.kwargs:
                peak = parse_size(mark.kwargs["peak"])
        return leak, peak, on

    def say_once(self, text):
        """Keep one message for the end of the session (pytest captures the
        terminal while a test runs)."""
        if not self.said:
            self.said = "vramtrace: " + text + "; the plugin does nothing"

    def begin(self, item):
        """Before the test's call: True when the test is traced (then end() follows)."""
        if self.lib.absent:
            self.say_once(self.lib.absent)
            return False
        fns = self.lib.get()
        nodeid = item.nodeid.encode("utf-8", "replace")
        if fns is None:
            if self.lib.absent:
                self.say_once(self.lib.absent)
                return False
            # CUDA is not initialised: the library begins this test when it starts
            os.environ[PENDING_ENV] = "%d:%s" % (os.getpid(), item.nodeid)
            return True
        rc = fns[0](nodeid)
        if rc == -4:  # a test left open (an earlier end that never came): close it, begin again
            fns[1](None, None, None, 0)
            rc = fns[0](nodeid)
        return rc == 0 or rc == -3

    def end(self, item, collect):
        """After the test's call: its Result, or None when nothing was followed."""
        os.environ.pop(PENDING_ENV, None)
        fns = self.lib.get()
        if fns is None:
            return None  # CUDA never initialised in this test
        if collect:
            gc.collect()  # blocks held by reference cycles are not a leak
        summary, sites = Summary(), (Site * MAX_SITES)()
        n = fns[1](item.nodeid.encode("utf-8", "replace"), ctypes.byref(summary), sites, MAX_SITES)
        if n < 0 or summary.abi != ABI:
            return None
        self.traced += 1
        return Result(summary, list(sites[:n]))

    def verdict(self, item, res, leak, peak):
        """The failure message of a test past its limits, or None."""
        if res is None:
            return None
        lines = []
        s = res.summary
        if leak is not None and s.leaked_bytes > leak:
            lines.append("vramtrace: %s left %s of GPU memory live in %d block%s (limit %s):" % (
                item.nodeid, fmt_bytes(s.leaked_bytes), s.leaked_blocks, "" if s.leaked_blocks == 1 else "s",
                fmt_bytes(leak)))
            lines += res.site_lines()
        if peak is not None and s.peak_bytes > peak:
            lines.append("vramtrace: %s peaked at %s of GPU memory allocated (limit %s)" % (
                item.nodeid, fmt_bytes(s.peak_bytes), fmt_bytes(peak)))
        if not lines:
            return None
        return "\n".join(lines + res.notes())


_KEY = "_vramtrace_state"


def pytest_addoption(parser):
    g = parser.getgroup("vramtrace", "GPU memory per test (vramtrace record)")
    g.addoption("--vramtrace", action="store_true", default=False,
                help="each test a range in the trace; with vramtrace record -- pytest")
    g.addoption("--vramtrace-fail-on-leak", metavar="BYTES", default=None,
                help="fail a test that leaves more than BYTES of GPU memory live (0, 4096, '1 MiB')")
    g.addoption("--vramtrace-fail-on-peak", metavar="BYTES", default=None,
                help="fail a test whose allocated GPU memory peaks above BYTES ('2 GiB')")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "vramtrace(leak=None, peak=None): fail the test when it leaves more than `leak` "
        "bytes of GPU memory live or allocates more than `peak` at once (numbers or '2 GiB'; "
        "under vramtrace record)")
    try:
        setattr(config, _KEY, Plugin(config))
    except ValueError as e:
        import pytest
        raise pytest.UsageError("vramtrace: %s" % e)


def _plugin(item):
    return getattr(item.config, _KEY, None)


try:
    import pytest as _pytest
    _hookwrapper = _pytest.hookimpl(hookwrapper=True)
except Exception:  # imported without pytest (tests of its parts)
    def _hookwrapper(f):
        return f


@_hookwrapper
def pytest_runtest_call(item):
    p = _plugin(item)
    if p is None:
        yield
        return
    leak, peak, on = p.limits(item)
    item._vramtrace_fail = None
    traced = on and p.begin(item)
    try:
        yield
    finally:
        if traced:
            res = p.end(item, collect=leak is not None or peak is not None)
            if res is not None and (res.leaked or res.summary.nsites):
                p.results[item.nodeid] = res
            msg = p.verdict(item, res, leak, peak)
            if msg:
                item._vramtrace_fail = msg  # read by pytest_runtest_makereport


@_hookwrapper
def pytest_runtest_makereport(item, call):
    outcome = yield
    msg = getattr(item, "_vramtrace_fail", None)
    if msg is None or call.when != "call":
        return
    rep = outcome.get_result()
    if rep.passed:
        rep.outcome = "failed"
        rep.longrepr = msg
    elif rep.failed:
        rep.sections.append(("vramtrace", msg))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    p = getattr(config, _KEY, None)
    if p is None or not p.on:
        return
    if p.said:
        terminalreporter.write_line(p.said, yellow=True)
        return
    if not p.traced:
        if p.lib.absent:
            terminalreporter.write_line("vramtrace: %s; no test was traced" % p.lib.absent, yellow=True)
        elif os.environ.get("CUDA_INJECTION64_PATH"):
            terminalreporter.write_line("vramtrace: CUDA was never initialised; no test was traced", yellow=True)
        return
    if not p.results:
        return
    terminalreporter.section("vramtrace: GPU memory left live by tests")
    for nodeid, res in sorted(p.results.items(), key=lambda kv: -kv[1].leaked):
        terminalreporter.write_line("%s  %s left live, peak %s" % (nodeid, fmt_bytes(res.leaked),
                                                                   fmt_bytes(res.peak)))
        for line in res.site_lines(3):
            terminalreporter.write_line(line)
