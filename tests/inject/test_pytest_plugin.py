"""test_pytest_plugin.py SRC_PYTHON_DIR FAKE_LIB - the pytest plugin
(src/python/vramtrace_pytest.py) without a GPU.

Part 1, always: its parts called directly with stand-in objects (sizes,
limits from options and markers, the verdict and its message, a library
that is not injected), no pytest needed.

Part 2, where an interpreter here has pytest (this one, else
/usr/bin/python3; Debian's python3-pytest): real pytest runs of a test
file on a stand-in torch that loads a fake library with the real entry
points' signatures over the real table (fake_test_lib.c), named by
CUDA_INJECTION64_PATH and loaded at the first tensor as CUDA loads the
library; the plugin comes from PYTEST_PLUGINS as `vramtrace record` sets
it.  With --vramtrace-fail-on-leak 0 exactly the test that keeps a
tensor in a module-level list fails, naming its line; the test that lets
the allocator cache a segment and the clean ones pass; a marker's limits
win over the option's; a peak limit fails its test; the first test,
open before "CUDA" loaded the library, is traced; every test is a range;
without the library the plugin says so once and changes nothing;
without --vramtrace it is inert."""
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import types

src, fake = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
sys.path.insert(0, src)
import vramtrace_pytest as vp  # noqa: E402

fails = 0


def check(name, ok, detail=""):
    global fails
    print(("ok   " if ok else "FAIL ") + name + ("" if ok or not detail else ": " + str(detail)))
    fails += not ok


# ---------------------------------------------------------------- part 1
check("size: bytes", vp.parse_size("0") == 0 and vp.parse_size(4096) == 4096)
check("size: units", vp.parse_size("2 GiB") == 2 << 30 and vp.parse_size("1.5G") == 3 << 29
      and vp.parse_size("512KiB") == 512 << 10 and vp.parse_size("1 MB") == 10 ** 6)
for bad in ("two", "-1", "1 parsec", True):
    try:
        vp.parse_size(bad)
        check("size: %r refused" % (bad,), False)
    except ValueError:
        check("size: %r refused" % (bad,), True)
check("fmt_bytes", vp.fmt_bytes(512) == "512 B" and vp.fmt_bytes(4 << 20) == "4.00 MiB")


class Config:
    def __init__(self, **opts):
        self.opts = opts
        self.lines = []
        self.pluginmanager = types.SimpleNamespace(get_plugin=lambda name: None)

    def getoption(self, name, default=None):
        return self.opts.get(name, default)


class Mark:
    def __init__(self, **kw):
        self.kwargs = kw


class Item:
    def __init__(self, nodeid, mark=None):
        self.nodeid, self.mark = nodeid, mark

    def get_closest_marker(self, name):
        return self.mark if name == "vramtrace" else None


class FakeLib:
    """Library's interface over Python stand-ins of the two functions."""
    absent = None

    def __init__(self, summary, sites):
        self.summary, self.sites, self.calls = summary, sites, []

    def get(self):
        def begin(nodeid):
            self.calls.append(("begin", nodeid))
            return 0

        def end(nodeid, psum, sites, n):
            self.calls.append(("end", nodeid))
            psum._obj.abi = vp.ABI
            for f, _ in vp.Summary._fields_:
                if f in self.summary:
                    setattr(psum._obj, f, self.summary[f])
            for i, s in enumerate(self.sites[:n]):
                sites[i] = s
            return min(len(self.sites), n)
        return begin, end


off = vp.Plugin(Config())
check("inert without options", not off.on and off.limits(Item("t"))[2] is False)
check("a marker turns it on for its test", off.limits(Item("t", Mark(leak=0)))[:3] == (0, None, True))
on = vp.Plugin(Config(vramtrace_fail_on_leak="1 KiB", vramtrace_fail_on_peak="2 GiB"))
check("options imply --vramtrace", on.on and on.limits(Item("t")) == (1024, 2 << 30, True))
check("a marker's limits win", on.limits(Item("t", Mark(leak="8 MiB")))[:2] == (8 << 20, 2 << 30))

site = vp.Site(file=b"/w/tests/test_model.py", function=b"test_leaks", line=12, device=0, bytes=4 << 20,
               blocks=1)
lib = FakeLib({"flags": vp.F_TENSORS, "leaked_bytes": 4 << 20, "leaked_blocks": 1, "peak_bytes": 6 << 20,
               "nsites": 1, "allocated_bytes": 6 << 20, "allocs": 2}, [site])
p = vp.Plugin(Config(vramtrace_fail_on_leak="0"), lib=lib)
it = Item("tests/test_model.py::test_leaks")
check("begin traces", p.begin(it))
res = p.end(it, collect=True)
check("end reads the summary", res is not None and res.leaked == 4 << 20 and len(res.sites) == 1)
msg = p.verdict(it, res, 0, None)
check("the verdict names the line", msg is not None and "test_model.py:12 (test_leaks)" in msg
      and "left 4.00 MiB of GPU memory live in 1 block (limit 0 B)" in msg, msg)
check("within the limit: no verdict", p.verdict(it, res, 8 << 20, None) is None)
pk = p.verdict(it, res, None, 1 << 20)
check("a peak past its limit", pk is not None and "peaked at 6.00 MiB" in pk and "limit 1.00 MiB" in pk, pk)
check("the range's calls", lib.calls == [("begin", b"tests/test_model.py::test_leaks"),
                                         ("end", b"tests/test_model.py::test_leaks")], lib.calls)

absent = vp.Plugin(Config(vramtrace=True), lib=vp.Library(env={}))
check("not injected: nothing traced", not absent.begin(Item("a")) and not absent.begin(Item("b")))
check("not injected: one message kept", absent.said is not None and "not injected" in absent.said
      and absent.said.endswith("the plugin does nothing"), absent.said)
pend = vp.Plugin(Config(vramtrace=True), lib=vp.Library(env={"CUDA_INJECTION64_PATH": "/nonexistent/libvt.so"}))
check("not loaded yet: pending", pend.begin(Item("t::first"))
      and os.environ.get(vp.PENDING_ENV) == "%d:t::first" % os.getpid())
check("not loaded yet: no result", pend.end(Item("t::first"), False) is None and vp.PENDING_ENV not in os.environ)

# ---------------------------------------------------------------- part 2
STANDIN_TORCH = textwrap.dedent('''
    """torch as far as the tests use it (in a site-packages folder, as torch is): tensors allocated and freed through
    the fake library, with the caller's Python frames; the library loaded
    at the first tensor, as CUDA loads libvramtrace.so at cuInit."""
    import ctypes, os, sys
    _lib = None
    _next = [0x7f0000000000]
    _seg = [0]

    class _NoLib:  # CUDA without vramtrace
        def __getattr__(self, name):
            return lambda *a: None

    def _init():
        global _lib
        if _lib is None:
            path = os.environ.get("CUDA_INJECTION64_PATH")
            _lib = ctypes.CDLL(path) if path else _NoLib()
            _lib.fake_cuda_init()
        return _lib

    def _frames():
        f, out = sys._getframe(2), []
        while f is not None and len(out) < 16:
            out.append((f.f_code.co_filename, f.f_code.co_name, f.f_lineno))
            f = f.f_back
        return out

    def _alloc(addr, size, tensor):
        fr = _frames()
        n = len(fr)
        files = (ctypes.c_char_p * n)(*[x[0].encode() for x in fr])
        funcs = (ctypes.c_char_p * n)(*[x[1].encode() for x in fr])
        lines = (ctypes.c_uint32 * n)(*[x[2] for x in fr])
        _init().fake_alloc(ctypes.c_uint64(addr), ctypes.c_uint64(size), 0, tensor, n, files, funcs, lines)

    class Tensor:
        def __init__(self, nbytes, new_segment=False):
            if new_segment or not _seg[0]:  # the allocator grows: a segment, kept cached
                _seg[0] += 1
                seg = 0x7e0000000000 + (_seg[0] << 32)
                _alloc(seg, max(nbytes, 2 << 20), 0)
            self.addr = _next[0]
            _next[0] += max(nbytes, 512)
            _alloc(self.addr, nbytes, 1)

        def __del__(self):
            _init().fake_free(ctypes.c_uint64(self.addr), 1)

    def ones(n, new_segment=False):
        return Tensor(4 * n, new_segment)
''')

TESTS = textwrap.dedent('''
    import pytest
    import torch

    _kept = []


    def test_clean():
        t = torch.ones(1024)
        del t


    def test_leaks():
        _kept.append(torch.ones(1 << 20))  # LEAK LINE


    def test_caches():
        big = torch.ones(1 << 22, new_segment=True)
        del big


    @pytest.mark.vramtrace(peak="1 MiB")
    def test_peak():
        t = torch.ones(1 << 19)
        del t


    @pytest.mark.vramtrace(leak="8 MiB")
    def test_leak_allowed():
        _kept.append(torch.ones(1 << 20))


    def test_no_cuda():
        pass
''')


def find_pytest():
    for py in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(py) and subprocess.run([py, "-c", "import pytest"], capture_output=True).returncode == 0:
            return py
    return None


py = find_pytest()
if py is None:
    print("skip part 2: no interpreter here has pytest (Debian: apt-get install python3-pytest); "
          "the hooks were called directly above")
else:
    work = tempfile.mkdtemp(prefix="vt-pytest-")
    try:
        os.makedirs(os.path.join(work, "site-packages", "torch"))
        with open(os.path.join(work, "site-packages", "torch", "__init__.py"), "w") as f:
            f.write(STANDIN_TORCH)
        with open(os.path.join(work, "site-packages", "rangedump.py"), "w") as f:
            f.write("import ctypes, os\n"
                    "def pytest_unconfigure(config):\n"
                    "    lib = ctypes.CDLL(os.environ['CUDA_INJECTION64_PATH'])\n"
                    "    print((ctypes.c_char * 8192).in_dll(lib, 'fake_ranges').value.decode())\n")
        with open(os.path.join(work, "test_gpu.py"), "w") as f:
            f.write(TESTS)
        leak_line = TESTS.splitlines().index("    _kept.append(torch.ones(1 << 20))  # LEAK LINE") + 1

        def run(args, inject=True, plugins="vramtrace_pytest"):
            env = dict(os.environ)
            env.pop(vp.PENDING_ENV, None)
            env["PYTHONPATH"] = src + os.pathsep + os.path.join(work, "site-packages")
            env["PYTEST_PLUGINS"] = plugins
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            if inject:
                env["CUDA_INJECTION64_PATH"] = fake
            else:
                env.pop("CUDA_INJECTION64_PATH", None)
            r = subprocess.run([py, "-m", "pytest", "-p", "no:cacheprovider", "-rf", "-q"] + args + ["test_gpu.py"],
                               cwd=work, env=env, capture_output=True, text=True, timeout=120)
            return r.returncode, r.stdout + r.stderr

        rc, out = run(["--vramtrace", "--vramtrace-fail-on-leak", "0"])
        failed = sorted(l.split("::")[1].split()[0] for l in out.splitlines() if l.startswith("FAILED"))
        check("fail-on-leak 0: the leaking test and the peak fail", rc == 1 and failed == ["test_leaks", "test_peak"],
              out)
        check("the leak names its line", ("test_gpu.py:%d (test_leaks)" % leak_line) in out
              and "left 4.00 MiB of GPU memory live in 1 block (limit 0 B)" in out, out)
        check("the peak names its limit", "peaked at 2.00 MiB of GPU memory allocated (limit 1.00 MiB)" in out, out)
        check("the summary lists the tests that left memory", "GPU memory left live by tests" in out
              and "test_gpu.py::test_leak_allowed  4.00 MiB left live" in out, out)

        rc, out = run(["--vramtrace"])
        failed = sorted(l.split("::")[1].split()[0] for l in out.splitlines() if l.startswith("FAILED"))
        check("--vramtrace alone: only the marker's limit fails", rc == 1 and failed == ["test_peak"]
              and "5 passed" in out, out)
        rc, out = run(["--vramtrace", "-s"], plugins="vramtrace_pytest,rangedump")
        # the fake library's ranges, read by a tiny plugin at the session's end
        check("every test is a range", out.count("B test_gpu.py::") == 6 and out.count("\nE") >= 6
              and "B test_gpu.py::test_clean" in out, out)

        rc, out = run(["--vramtrace", "--vramtrace-fail-on-leak", "0"], inject=False)
        check("not injected: says so once, changes nothing",
              rc == 0 and out.count("libvramtrace.so is not injected") == 1 and "6 passed" in out, out)
        rc, out = run([])
        check("without --vramtrace: inert (markers alone trace their tests)", rc == 1
              and "test_peak" in out and "test_leaks" not in out.split("short test summary")[-1], out)
        rc, out = run(["--vramtrace-fail-on-leak", "lots"])
        check("a bad size is a usage error", rc == 4 and "not a size" in out, out)
    finally:
        shutil.rmtree(work, ignore_errors=True)

print("%d failed" % fails if fails else "all passed")
sys.exit(1 if fails else 0)
