"""test_holders.py SRC_PYTHON_DIR - the holder walk (src/python) on stand-ins
for CUDA tensors and autograd nodes (no torch in CI): the paths of module
globals, attributes, nested containers, closures and generator frames;
cycles; the object limit; graph-retained bytes; the file written at exit
by the sitecustomize that `vramtrace record` puts first on PYTHONPATH,
chaining to the program's own sitecustomize."""
import collections
import functools
import io
import itertools
import os
import subprocess
import sys
import tempfile
import types

src = os.path.abspath(sys.argv[1])
sys.path.insert(0, src)
import vramtrace_holders as vh  # noqa: E402

fails = 0


def wait_walks(d, limit=60):
    """The walk at exit runs in a child that outlives the program: wait
    until every holders.*.pending in d is unlocked (the child has ended).
    Returns the markers that were still locked when the program ended."""
    import fcntl
    import time
    running = []
    for x in sorted(os.listdir(d)):
        if not (x.startswith("holders.") and x.endswith(".pending")):
            continue
        try:
            fd = os.open(os.path.join(d, x), os.O_RDONLY)
        except OSError:
            continue  # gone: the walk ended
        try:
            t0 = time.monotonic()
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if x not in running:
                        running.append(x)
                    if time.monotonic() - t0 > limit:
                        break
                    time.sleep(0.02)
        finally:
            os.close(fd)
    return running


def check(name, ok, detail=""):
    global fails
    print(("ok   " if ok else "FAIL ") + name + ("" if ok or not detail else ": " + detail))
    fails += not ok


class T:  # a CUDA tensor: storage address and bytes, maybe a grad_fn
    def __init__(self, addr, n, grad_fn=None):
        self.addr, self.n, self.grad_fn = addr, n, grad_fn


class Node:  # an autograd node: what it saved, the nodes before it
    def __init__(self, saved, nxt=()):
        self._saved_self = saved
        self.next_functions = tuple((x, 0) for x in nxt)


def info(o):
    return (o.addr, o.n) if issubclass(type(o), T) else None  # as the real one: type() only


m = types.ModuleType("prog")
m.kept = [T(0x1000 + i * 0x100, 0x100) for i in range(3)]


class Trainer:
    __slots__ = ("loss_buffer", "last", "__dict__")


m.trainer = Trainer()
m.trainer.loss_buffer = [T(0x9000, 16, Node(T(0x20000, 4096), [Node(T(0x30000, 8192))]))]
m.trainer.last = T(0xA000, 32)
m.trainer.extra = {"imgs": [T(0xB000, 64)]}


def make():
    t = T(0xC000, 128)
    return lambda: t


m.f = make()


def gen():
    t = T(0xE000, 256)
    yield t


m.g = gen()
next(m.g)
m.cycle = []
m.cycle.append(m.cycle)
m.dq = collections.deque([T(0xD000, 1)], maxlen=8)
m.shared = m.kept  # the same list under two names: one holder
m.direct = T(0xF000, 2)

hs, n, sec, lim = vh.walk(roots=[("prog", m)], info=info)
got = {h.path: (h.type, h.count, sum(h.storages.values()), sum(h.graph.values())) for h in hs}
check("a module-level list", got.get("prog.kept") == ("list", 3, 0x300, 0) or got.get("prog.shared") == ("list", 3, 0x300, 0))
check("the same list once", ("prog.kept" in got) != ("prog.shared" in got))
check("a list attribute, with its graph", got.get("prog.trainer.loss_buffer") == ("list", 1, 16, 4096 + 8192))
check("a tensor attribute (slot)", got.get("prog.trainer.last") == ("attribute of Trainer", 1, 32, 0))
check("a dict of lists", got.get("prog.trainer.extra['imgs']") == ("list", 1, 64, 0))
check("a closure", got.get("prog.f.<closure t>") == ("closure", 1, 128, 0))
check("a generator's local", got.get("prog.g.<frame t>") == ("generator local", 1, 256, 0))
check("a deque", got.get("prog.dq") == ("deque", 1, 1, 0))
check("a tensor as a module global", got.get("prog.direct") == ("global", 1, 2, 0))
check("the biggest first", hs and sum(hs[0].storages.values()) + sum(hs[0].graph.values())
      == max(sum(h.storages.values()) + sum(h.graph.values()) for h in hs))


# graph nodes as PyTorch gives them: a new Python object on each access of
# next_functions, dropped after use (its id is then reused by the next
# one); a weight that every graph saved but a module global holds
class CNode:
    def __init__(self, depth, weight):
        self.depth, self.weight = depth, weight
        self._saved_self = T(0x100000 + depth * 0x1000, 1000)
        self._saved_weight = weight

    @property
    def next_functions(self):
        return ((CNode(self.depth - 1, self.weight), 0),) if self.depth else ()


w = types.ModuleType("net")
w.weight = T(0x50000, 7777)
w.losses = [T(0x60000, 4, CNode(50, w.weight))]
hs2 = vh.walk(roots=[("net", w)], info=info)[0]
got2 = {h.path: (h.count, sum(h.storages.values()), sum(h.graph.values())) for h in hs2}
check("a graph of made-on-demand nodes: each node's saved tensor counted",
      got2.get("net.losses") == (1, 4, 51 * 1000))
check("a weight a global holds is not graph memory", got2.get("net.weight") == (1, 7777, 0))


# the walk runs none of the program's code: a key's repr (a tensor's
# launches kernels), a __class__ property or __getattr__ (a deprecated
# module attribute warns), a property
calls = []


class Key:
    def __repr__(self):
        calls.append("repr")
        return "Key()"


class Sly:
    @property
    def __class__(self):
        calls.append("__class__")
        return Sly

    def __getattr__(self, n):
        calls.append("getattr " + n)
        raise AttributeError(n)

    @property
    def prop(self):
        calls.append("property")
        return T(0x70000, 1)


q = types.ModuleType("prog3")
q.state = {Key(): [T(0x80000, 8)]}
q.sly = Sly()
q.sly.kept = [T(0x90000, 16)]
hs3 = vh.walk(roots=[("prog3", q)], info=info)[0]
got3 = {h.path: sum(h.storages.values()) for h in hs3}
check("a key that is not a literal shows its type", got3.get("prog3.state[<Key>]") == 8)
check("an object with a __class__ property and __getattr__ walked", got3.get("prog3.sly.kept") == 16)
check("none of the program's code ran (repr, __class__, __getattr__, properties)", calls == [], str(calls))
check("a cycle ends, no limit", lim == "" and n > 5)
hs2, n2, _, lim2 = vh.walk(roots=[("prog", m)], info=info, max_objects=4)
check("the object limit", lim2 == "objects" and n2 == 4)
hs3, _, _, lim3 = vh.walk(roots=[("prog", m)], info=info, max_seconds=-1)
check("the time limit", lim3 == "time")
# a walk past say_after says why the program's exit waits, once
big = types.ModuleType("big")
big.items = [[i] for i in range(5000)]
_err, sys.stderr = sys.stderr, io.StringIO()
try:
    vh.walk(roots=[("big", big)], info=info, say_after=0.0)
    said = sys.stderr.getvalue()
finally:
    sys.stderr = _err
check("the walk's progress line, once", said.count("naming the objects that hold GPU memory") == 1, said)
check("no torch: nothing", vh.walk(roots=[("prog", m)]) == ([], 0, 0.0, ""))


def walked(name, mod, **kw):
    hs = vh.walk(roots=[(name, mod)], **dict(dict(info=info), **kw))[0]
    return {h.path: (h.type, h.count, sum(h.storages.values()), sum(h.graph.values())) for h in hs}


# memory kept by C: a memoizing cache's dict, which only the garbage
# collector is shown; a C object's contents; a C type's struct members
mc = types.ModuleType("memo")


@functools.lru_cache(maxsize=None)
def embedding_for(i):
    return T(0x200000 + i * 0x1000, 512)


@functools.cache
def cached(i):
    return T(0x300000 + i * 0x1000, 64)


@functools.lru_cache(maxsize=2)
def bounded(i, j=0):
    return T(0x400000 + i * 0x1000, 8)


@functools.lru_cache(maxsize=None)
def listy(i):
    return [T(0x500000 + i * 0x1000, 1), T(0x500800 + i * 0x1000, 1)]


for i in range(3):
    embedding_for(i), cached(i), bounded(i, j=i), listy(i)
mc.embedding_for, mc.cached, mc.bounded, mc.listy = embedding_for, cached, bounded, listy
mc.rep = itertools.repeat(T(0x600000, 16))  # a C object: its element only gc sees
mc.part = functools.partial(max, T(0x700000, 32))  # its args: a struct member
got4 = walked("memo", mc)
check("a functools.lru_cache's cache, named by its owner",
      got4.get("memo.embedding_for.<lru_cache>") == ("functools lru_cache", 3, 3 * 512, 0), str(got4))
check("a functools.cache's", got4.get("memo.cached.<lru_cache>") == ("functools lru_cache", 3, 3 * 64, 0))
check("a bounded lru_cache's entries (results paired to keys through gc)",
      got4.get("memo.bounded.<lru_cache>") == ("functools lru_cache", 2, 2 * 8, 0))
check("a list an lru_cache keeps", got4.get("memo.listy.<lru_cache>[1]") == ("list", 2, 2, 0))
check("a C object's contents through gc.get_referents", got4.get("memo.rep") == ("repeat", 1, 16, 0))
check("a C type's struct member", got4.get("memo.part.args") == ("tuple", 1, 32, 0))


# tensors kept by stored exceptions: their tracebacks keep the frames'
# locals (a function's frame; a module's frame is its globals)
def risky(i):
    buf = T(0x800000 + i * 0x1000, 1024)
    raise ValueError(i)


def collect(n):
    errors = []
    for i in range(n):
        try:
            risky(i)
        except ValueError as e:
            errors.append(e)
    return errors


ex = types.ModuleType("exc")
ex.errors = collect(5)
try:
    try:
        risky(9)
    except ValueError as e:
        raise RuntimeError("step failed") from e
except RuntimeError as e:
    ex.last = e
got5 = walked("exc", ex)
line = risky.__code__.co_firstlineno + 2
want = "exc.errors[3].__traceback__ -> risky (test_holders.py:%d).buf" % line
check("a stored exception's traceback: the raising frame's local",
      got5.get(want) == ("traceback local", 1, 1024, 0), "%s not in %s" % (want, sorted(got5)))
check("one holder per stored exception", sum(1 for k in got5 if k.startswith("exc.errors[")) == 5)
check("an exception's cause", got5.get("exc.last.__cause__.__traceback__ -> risky (test_holders.py:%d).buf" % line)
      == ("traceback local", 1, 1024, 0), str(sorted(got5)))


# of the paths to one holder, the shortest through public attributes
class Obj:
    pass


pl = types.ModuleType("pl")
lm = Obj()
lm.step_outputs = [T(0x900000, 4)]
pl.trainer = Obj()
pl.trainer._data_connector = Obj()
pl.trainer._data_connector._datahook_selector = Obj()
pl.trainer._data_connector._datahook_selector.model = lm
pl.trainer.lightning_module = lm  # found after the private path, shorter
deep = [T(0x910000, 4)]
pl.a = Obj()
pl.a._b = Obj()
pl.a._b.outs = deep  # 3 steps, one private
pl.c = Obj()
pl.c.d = Obj()
pl.c.d.e = Obj()
pl.c.d.e.outs = deep  # 5 steps, all public: this one
tie = [T(0x920000, 4)]
pl.x = Obj()
pl.x._y = Obj()
pl.x._y.z = tie
pl.x.w = Obj()
pl.x.w.z = tie  # as long, public
only = [T(0x930000, 4)]
pl.p = Obj()
pl.p._q = Obj()
pl.p._q._r = only  # only private paths: the shortest of them
pl.s = Obj()
pl.s._t = Obj()
pl.s._t.u = Obj()
pl.s._t.u._v = only
got6 = walked("pl", pl)
check("the public path, not the first found", "pl.trainer.lightning_module.step_outputs" in got6
      and not any("_datahook_selector" in k for k in got6), str(sorted(got6)))
check("public before shorter", "pl.c.d.e.outs" in got6 and "pl.a._b.outs" not in got6, str(sorted(got6)))
check("public at the same length", "pl.x.w.z" in got6 and "pl.x._y.z" not in got6, str(sorted(got6)))
check("fewest private names", "pl.p._q._r" in got6 and "pl.s._t.u._v" not in got6, str(sorted(got6)))
check("the same paths in every walk", all(sorted(walked("pl", pl)) == sorted(got6) for _ in range(3)))


# CuPy's and JAX's arrays where those modules are imported (stand-ins):
# never torch's autograd attributes on them
touched = []


class Mem:
    def __init__(self, ptr, size):
        self.ptr, self.size = ptr, size


class MemPtr:
    def __init__(self, mem, off=0):
        self.mem, self.ptr = mem, mem.ptr + off


class CupyArray:
    def __init__(self, mp, n):
        self._mp, self._n = mp, n

    @property
    def data(self):
        return self._mp

    @property
    def nbytes(self):
        return self._n

    def __getattr__(self, n):
        touched.append(n)
        raise AttributeError(n)


class Device:
    def __init__(self, platform):
        self.platform = platform


class JaxArray:
    def __init__(self, ptr, n, platform="gpu"):
        self.ptr, self.nbytes, self.platform = ptr, n, platform

    def devices(self):
        return {Device(self.platform)}

    def unsafe_buffer_pointer(self):
        return self.ptr


fake_cupy = types.ModuleType("cupy")
fake_cupy.ndarray = CupyArray
base = Mem(0xA00000, 4096)
fake_jax = types.ModuleType("jax")
jarrays = [JaxArray(0xB00000 + i * 0x1000, 256) for i in range(4)] + [JaxArray(0xC00000, 99, "cpu")]
fake_jax.live_arrays = lambda: list(jarrays)
arrs = types.ModuleType("arrs")
arrs.kept = [CupyArray(MemPtr(base), 4096), CupyArray(MemPtr(base, 1024), 512),
             CupyArray(MemPtr(Mem(0xA10000, 1024)), 1000)]
arrs.history = jarrays[:4]
arrs.on_cpu = [jarrays[4]]
check("no CuPy, no JAX: no predicate", vh._array_info(torch=False) is None)
sys.modules["cupy"], sys.modules["jax"] = fake_cupy, fake_jax
try:
    got7 = walked("arrs", arrs, info=vh._array_info(torch=False))
finally:
    del sys.modules["cupy"], sys.modules["jax"]
check("CuPy arrays: the allocation each lies in (a view counts its base once)",
      got7.get("arrs.kept") == ("list", 3, 4096 + 1024, 0), str(got7))
check("JAX arrays on the GPU (jax.live_arrays)", got7.get("arrs.history") == ("list", 4, 4 * 256, 0))
check("JAX arrays on the CPU are not held", "arrs.on_cpu" not in got7)
check("no autograd attribute read on CuPy arrays", touched == [], str(touched))

# a CUDA tensor as the walk sees one (its storage's address and bytes), for
# the programs below that stand in for torch
TENSOR_STANDIN = ("class Storage:\n"
                  "    def __init__(s, a, n): s.a, s.n = a, n\n"
                  "    def data_ptr(s): return s.a\n"
                  "    def nbytes(s): return s.n\n"
                  "class Tensor:\n"
                  "    is_cuda = True\n"
                  "    grad_fn = None\n"
                  "    def __init__(s, a, n): s.st = Storage(a, n)\n"
                  "    def untyped_storage(s): return s.st\n")

with tempfile.TemporaryDirectory() as d:
    p = os.path.join(d, "h.txt")
    vh.write(p, hs, n, sec, lim)
    lines = open(p).read().splitlines()
    check("the file's header", lines[0] == "vramtrace-holders 1" and lines[1].startswith("W "))
    hl = [ln for ln in lines if ln.startswith("H ")]
    check("one H line per holder", len(hl) == len(hs))
    check("graph storages marked", any(ln.startswith("P 20000 4096 1") for ln in lines))

    # the program's own sitecustomize still runs; at exit (a stand-in torch
    # in sys.modules) holders.PID.txt is written
    theirs = os.path.join(d, "theirs")
    os.mkdir(theirs)
    with open(os.path.join(theirs, "sitecustomize.py"), "w") as f:
        f.write("import os\nos.environ['THEIRS_RAN'] = '1'\n")
    prog = os.path.join(d, "prog.py")
    with open(prog, "w") as f:
        f.write("import os, sys, types\n"
                "torch = types.ModuleType('torch')\n"
                + TENSOR_STANDIN +
                "torch.Tensor = Tensor\n"
                "sys.modules['torch'] = torch\n"
                "cuda = types.ModuleType('torch.cuda')\n"
                "cuda.is_initialized = lambda: os.environ.get('NO_CUDA') != '1'\n"
                "sys.modules['torch.cuda'] = cuda\n"
                "history = [Tensor(0x7000 + i * 0x1000, 4096) for i in range(5)]\n"
                "print(os.environ.get('THEIRS_RAN'), 'sitecustomize' in sys.modules, flush=True)\n"
                "if os.fork() == 0:\n"  # a fork child (a DataLoader worker) runs atexit: no file
                "    sys.exit(0)\n"
                "os.wait()\n"
                "print('parent', os.getpid())\n")
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + theirs, VRAMTRACE_HOLDERS=d)
    r = subprocess.run([sys.executable, prog], env=env, capture_output=True, text=True)
    wait_walks(d)
    out = r.stdout.split()
    check("the program's sitecustomize ran", out[:2] == ["1", "True"])
    files = [x for x in os.listdir(d) if x.startswith("holders.") and x.endswith(".txt")]
    text = open(os.path.join(d, files[0])).read() if files else ""
    check("holders.PID.txt at exit", len(files) == 1 and "H 5 20480 0 list\t__main__.history" in text)
    check("none from a fork child", files == ["holders.%s.txt" % out[-1]], str(files))
    for x in files:
        os.unlink(os.path.join(d, x))
    # torch without CUDA initialized (a spawned DataLoader worker): no file
    r = subprocess.run([sys.executable, prog], env=dict(env, NO_CUDA="1"), capture_output=True, text=True)
    check("torch without CUDA: no walk", r.returncode == 0
          and not [x for x in os.listdir(d) if x.startswith("holders.")])
    # a program without torch pays nothing: no file
    with open(prog, "w") as f:
        f.write("x = [1, 2, 3]\n")
    r = subprocess.run([sys.executable, prog], env=env, capture_output=True, text=True)
    check("no torch, no walk", r.returncode == 0 and not [x for x in os.listdir(d) if x.startswith("holders.")])
    # CuPy without torch: the walk at exit names CuPy's arrays
    with open(prog, "w") as f:
        f.write("import sys, types\n"
                "class Mem:\n"
                "    def __init__(s, p, n): s.ptr, s.size = p, n\n"
                "class MP:\n"
                "    def __init__(s, m): s.mem, s.ptr = m, m.ptr\n"
                "class ndarray:\n"
                "    def __init__(s, p, n): s.data, s.nbytes = MP(Mem(p, n)), n\n"
                "cupy = types.ModuleType('cupy')\n"
                "cupy.ndarray = ndarray\n"
                "sys.modules['cupy'] = cupy\n"
                "arrs = [ndarray(0x8000 + i * 0x1000, 2048) for i in range(2)]\n")
    r = subprocess.run([sys.executable, prog], env=env, capture_output=True, text=True)
    wait_walks(d)
    files = [x for x in os.listdir(d) if x.startswith("holders.")]
    text = open(os.path.join(d, files[0])).read() if files else ""
    check("CuPy without torch: its arrays at exit", "H 2 4096 0 list\t__main__.arrs" in text, text[:300] + r.stderr[-300:])
    for x in files:
        os.unlink(os.path.join(d, x))
    # JAX clears its backends at exit (then live_arrays() would start a
    # new one): the walk runs before, and never after
    jaxdir = os.path.join(d, "jaxlib_", "jax")
    os.makedirs(os.path.join(jaxdir, "_src"))
    with open(os.path.join(jaxdir, "_src", "__init__.py"), "w") as f:
        f.write("")
    with open(os.path.join(jaxdir, "_src", "xla_bridge.py"), "w") as f:
        f.write("_backends = {'gpu': object()}\n")
    with open(os.path.join(jaxdir, "__init__.py"), "w") as f:
        f.write("import atexit\n"
                "from jax._src import xla_bridge as xb\n"
                "class Dev:\n"
                "    platform = 'gpu'\n"
                "class Array:\n"
                "    nbytes = 256\n"
                "    def __init__(s, p): s.p = p\n"
                "    def devices(s): return {Dev()}\n"
                "    def unsafe_buffer_pointer(s): return s.p\n"
                "_live = []\n"
                "def array(p):\n"
                "    _live.append(Array(p))\n"
                "    return _live[-1]\n"
                "def live_arrays():\n"
                "    if not xb._backends:\n"
                "        raise SystemExit('a backend started at exit')\n"
                "    return list(_live)\n"
                "atexit.register(xb._backends.clear)\n")
    with open(prog, "w") as f:
        f.write("import jax\n"
                "params = {'w': [jax.array(0x9000 + i * 0x1000) for i in range(3)]}\n")
    r = subprocess.run([sys.executable, prog], env=dict(env, PYTHONPATH=env["PYTHONPATH"] + os.pathsep
                                                        + os.path.dirname(jaxdir)), capture_output=True, text=True)
    wait_walks(d)
    files = [x for x in os.listdir(d) if x.startswith("holders.")]
    text = open(os.path.join(d, files[0])).read() if files else ""
    check("JAX: the walk at exit runs before JAX's own cleanup", r.returncode == 0
          and "H 3 768 0 list\t__main__.params['w']" in text, text[:300] + r.stderr[-300:])
    for x in files:
        os.unlink(os.path.join(d, x))

# the walk at exit is detached: the program ends (and its pipes close)
# while a child walks; holders.PID.pending stays locked until the file is
# written.  A stand-in storage that takes 1.5 s to answer keeps the walk
# going well past the program's end.
with tempfile.TemporaryDirectory() as d:
    prog = os.path.join(d, "slow.py")
    with open(prog, "w") as f:
        f.write("import os, sys, time, types\n"
                "torch = types.ModuleType('torch')\n"
                + TENSOR_STANDIN +
                "class Slow(Tensor):\n"
                "    def untyped_storage(s):\n"
                "        time.sleep(1.5)\n"
                "        return s.st\n"
                "torch.Tensor = Tensor\n"
                "sys.modules['torch'] = torch\n"
                "cuda = types.ModuleType('torch.cuda')\n"
                "cuda.is_initialized = lambda: True\n"
                "sys.modules['torch.cuda'] = cuda\n"
                "held = [Slow(0xa000, 512)]\n"
                "print(os.getpid(), flush=True)\n")
    env = dict(os.environ, PYTHONPATH=src, VRAMTRACE_HOLDERS=d)
    r = subprocess.run([sys.executable, prog], env=env, capture_output=True, text=True)
    pid = r.stdout.strip()
    ended = sorted(os.listdir(d))
    running = wait_walks(d)
    after = sorted(os.listdir(d))
    text = open(os.path.join(d, "holders.%s.txt" % pid)).read() if "holders.%s.txt" % pid in after else ""
    check("detached walk: the program and its pipes end before the walk",
          r.returncode == 0 and "holders.%s.pending" % pid in ended and running == ["holders.%s.pending" % pid]
          and "holders.%s.txt" % pid not in ended, "%s %s %s" % (ended, running, r.stderr[-300:]))
    check("detached walk: then the file, and the marker gone",
          "H 1 512 0 list\t__main__.held" in text and after == ["holders.%s.txt" % pid, "slow.py"], str(after))
    os.unlink(os.path.join(d, "holders.%s.txt" % pid))
    # VRAMTRACE_HOLDERS_DETACH=0: in the program, done when it ends
    r = subprocess.run([sys.executable, prog], env=dict(env, VRAMTRACE_HOLDERS_DETACH="0"),
                       capture_output=True, text=True)
    pid = r.stdout.strip()
    check("VRAMTRACE_HOLDERS_DETACH=0: the walk in the program",
          sorted(os.listdir(d)) == ["holders.%s.txt" % pid, "slow.py"], str(os.listdir(d)))

# the walk at a failed allocation (PyTorch's OOM observer, attached when
# torch.cuda initializes) and on a signal, with the locals of the running
# frames: a stand-in torch package found on PYTHONPATH
with tempfile.TemporaryDirectory() as d:
    pkg = os.path.join(d, "lib", "torch")
    os.makedirs(pkg)
    with open(os.path.join(pkg, "__init__.py"), "w") as f:
        f.write("import types\n"
                + TENSOR_STANDIN +
                "_C = types.SimpleNamespace(observers=[])\n"
                "_C._cuda_attach_out_of_memory_observer = _C.observers.append\n")
    with open(os.path.join(pkg, "cuda.py"), "w") as f:
        f.write("queued = []\n"
                "def _lazy_call(fn): queued.append(fn)\n"
                "def is_initialized(): return True\n"
                "def init():\n"
                "    for fn in queued: fn()\n")
    prog = os.path.join(d, "oomprog.py")
    with open(prog, "w") as f:
        f.write("import os, signal, time, torch, torch.cuda\n"
                "kept = [torch.Tensor(0x5000, 100)]\n"
                "torch.cuda.init()  # CUDA initializes: the observer attaches\n"
                "def step():\n"
                "    big = torch.Tensor(0x6000, 4096)\n"
                "    for obs in torch._C.observers:  # the allocator fails a 1 GiB request\n"
                "        obs(0, 1 << 30, 123, 456)\n"
                "    os.kill(os.getpid(), signal.SIGUSR2)\n"
                "    time.sleep(0.05)\n"
                "step()\n"
                "print(len(torch._C.observers), flush=True)\n")
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.path.join(d, "lib"), VRAMTRACE_HOLDERS=d,
               VRAMTRACE_HOLDERS_SIGNAL="USR2")
    r = subprocess.run([sys.executable, prog], env=env, capture_output=True, text=True)
    wait_walks(d)
    check("the OOM observer attached when CUDA initialized", r.returncode == 0 and r.stdout.strip() == "1",
          r.stdout + r.stderr[-300:])
    got = {x.split(".", 2)[2]: open(os.path.join(d, x)).read() for x in os.listdir(d) if x.startswith("holders.")}
    oom = got.get("oom.txt", "")
    check("holders.PID.oom.txt: the failed request and the frame's local",
          "O 0 1073741824 123 456" in oom and "local variable\t<step (oomprog.py:7)>.big" in oom
          and "list\t__main__.kept" in oom, oom[:300])
    sig = got.get("sig-1.txt", "")
    check("holders.PID.sig-1.txt on SIGUSR2", "S %d" % __import__("signal").SIGUSR2 in sig
          and "<step (oomprog.py:8)>.big" in sig, sig[:300])
    check("and the walk at exit", "txt" in got and "__main__.kept" in got["txt"], str(sorted(got)))
sys.exit(1 if fails else 0)
