"""vramtrace_holders - who holds the GPU memory (issue 25).

Loaded into a traced Python program by `vramtrace record` (through its
sitecustomize.py).  It does nothing while the program runs.  At exit
(atexit), when PyTorch is in the process, it walks the objects reachable
from module globals (object attributes, lists, tuples, dicts, sets,
deques, closures, generator frames), finds the CUDA tensors they hold
and the tensors that their autograd graphs keep (the saved tensors of
grad_fn nodes, as far as the nodes expose them), and writes one line per
holder to VRAMTRACE_HOLDERS/holders.PID.txt:

    vramtrace-holders 1
    W <objects visited> <seconds> <limit hit 0|1> <reason>
    H <tensors> <bytes> <graph bytes> <type>\t<path>
    P <storage address, hex> <bytes> <0 direct | 1 through a graph>

which `vramtrace report` joins to the recorded blocks by storage address.
The walk runs in the program's own thread, with the GIL, only at exit;
it is bounded in objects and time, never raises into the program and
keeps no object alive after it returns.
"""
import os
import sys
import time

MAX_OBJECTS = int(os.environ.get("VRAMTRACE_HOLDERS_MAX_OBJECTS", "2000000"))
MAX_SECONDS = float(os.environ.get("VRAMTRACE_HOLDERS_MAX_SECONDS", "5"))
MAX_STORAGES = 100000  # addresses written per holder


def _torch_tensor_info():
    """The predicate for torch's CUDA tensors: obj -> (address, bytes) or None."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    tensor = getattr(torch, "Tensor", None)
    if tensor is None:
        return None

    def info(o):
        if not issubclass(type(o), tensor):  # type(): no __class__ lookup runs code
            return None
        try:
            if not o.is_cuda:
                return None
            st = o.untyped_storage()
            return st.data_ptr(), st.nbytes()
        except Exception:
            return None
    return info


def _graph_storages(t, info, seen_nodes, budget, alive):
    """Storages kept by t's autograd graph: saved tensors of its grad_fn
    nodes (attributes named _saved_*, and saved_tensors of Python
    autograd Functions), depth first through next_functions.  A lower
    bound: nodes that do not expose what they saved are not counted.
    The Python objects of graph nodes are made on demand and die with
    their last reference, so their ids are reused: each node seen stays
    in `alive` until the walk ends, or a later node would pass for it."""
    out = []
    fn = getattr(t, "grad_fn", None)
    stack = [fn] if fn is not None else []
    while stack and budget[0] > 0:
        node = stack.pop()
        if node is None or id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        alive.append(node)
        budget[0] -= 1
        try:
            names = [n for n in dir(node) if n.startswith("_saved_") or n == "saved_tensors"]
        except Exception:
            names = []
        for n in names:
            try:
                v = getattr(node, n)
            except Exception:
                continue
            vals = v if type(v) in (list, tuple) else (v,)
            for x in vals:
                r = info(x)
                if r:
                    out.append(r)
        try:
            for nxt in getattr(node, "next_functions", ()) or ():
                if nxt and nxt[0] is not None:
                    stack.append(nxt[0])
        except Exception:
            pass
    return out


class _Locals:
    __slots__ = ("items",)

    def __init__(self, items):
        self.items = items


class _Holder:
    __slots__ = ("path", "type", "count", "storages", "graph")

    def __init__(self, path, typ):
        self.path, self.type, self.count = path, typ, 0
        self.storages, self.graph = {}, {}


def _key(k):
    """A dict key as a path shows it: literals as repr() gives them (short),
    anything else by its type (a tensor's repr would run kernels)."""
    t = type(k)
    if t in (str, int, float, bool, bytes) or k is None:
        r = repr(k)
        return r if len(r) <= 60 else r[:57] + "..."
    if t is tuple and len(k) <= 4 and all(type(x) in (str, int, float, bool) for x in k):
        return repr(k)
    return "<%s>" % t.__name__


def _path(node):
    """The text of a path kept as linked (parent, suffix) pairs."""
    parts = []
    while node is not None:
        node, suffix = node
        parts.append(suffix)
    return "".join(reversed(parts))


def walk(roots=None, info=None, max_objects=MAX_OBJECTS, max_seconds=MAX_SECONDS, frames=()):
    """Walk from roots ([(path, object)], default: every module's globals)
    and from the locals of frames (running frames, innermost first: at a
    failed allocation or a signal what a function holds in its locals is
    named "<function (file:line)>.name");
    info(obj) -> (address, bytes) for a CUDA tensor, else None (default:
    torch's).  Returns (holders, objects visited, seconds, limit reason or
    "").  Paths are kept as linked pairs and spelled out only for holders:
    most objects hold no tensor."""
    t0 = time.monotonic()
    if info is None:
        info = _torch_tensor_info()
    if info is None:
        return [], 0, 0.0, ""
    import collections
    import types
    roots = list(roots) if roots is not None else None
    if roots is None:  # modules only (sys.modules may hold lazy proxies: not walked)
        roots = [(name, mod) for name, mod in list(sys.modules.items())
                 if issubclass(type(mod), types.ModuleType) and name != __name__]
    # alive: every object whose id is in seen or nodes, until the walk
    # returns (an id is only unique while its object lives)
    seen, holders, nodes, alive = set(), {}, set(), []
    graph_budget = [max_objects]
    queue = collections.deque()
    for f in frames:
        try:
            code = f.f_code
            loc = f.f_locals
            items = list(dict.items(loc)) if type(loc) is dict else list(loc.items())
            where = "<%s (%s:%d)>" % (code.co_name, os.path.basename(code.co_filename), f.f_lineno)
        except Exception:
            continue
        roots.append((where, _Locals([("." + k, v) for k, v in items if type(k) is str])))
    for path, obj in roots:
        queue.append(((None, path), obj, True))
    visited, limit = 0, ""
    atomic = {str, bytes, int, float, complex, bool, type(None), range, type, bytearray}
    module_t, dict_t, func_t, gen_t = types.ModuleType, dict, types.FunctionType, types.GeneratorType
    seqs = (list, tuple, collections.deque)
    sets = (set, frozenset)

    def held(hpath, htype, x):
        r = info(x)
        if r is None:
            return False
        key = _path(hpath)
        h = holders.get(key)
        if h is None:
            h = holders[key] = _Holder(key, htype)
        h.count += 1
        h.storages[r[0]] = r[1]
        for g in _graph_storages(x, info, nodes, graph_budget, alive):
            if g[0] not in h.storages:
                h.graph[g[0]] = g[1]
        return True

    while queue:
        if visited >= max_objects:
            limit = "objects"
            break
        if (visited & 1023) == 0 and time.monotonic() - t0 > max_seconds:
            limit = "time"
            break
        path, obj, root = queue.popleft()
        oid = id(obj)
        if oid in seen:
            continue
        seen.add(oid)
        alive.append(obj)
        visited += 1
        if root and info(obj) is not None:  # a tensor as a root itself
            continue
        # who holds a tensor found among the children: a container holds
        # it itself (its path, its type); a name (a module global, an
        # attribute, a captured variable, a generator's local) is the holder
        named = None
        items = ()
        # Only type() and the builtin types' own methods are used on the
        # program's objects: isinstance(), getattr() and repr() can run the
        # program's code (a deprecation warning, a property, a tensor's
        # repr launching kernels)
        try:
            t = type(obj)
            if t is _Locals:  # a running frame's locals
                named = "local variable"
                items = obj.items
            elif issubclass(t, module_t):
                d = object.__getattribute__(obj, "__dict__")
                if _path(path) != dict.get(d, "__name__"):
                    continue  # a module reached through another: its own root names it
                named = "global"
                items = [("." + k, v) for k, v in list(dict.items(d)) if type(k) is str and not k.startswith("__")]
            elif issubclass(t, dict_t):
                items = [("[%s]" % _key(k), v) for k, v in list(dict.items(obj)) if type(v) not in atomic]
            elif issubclass(t, seqs):
                vals = list.copy(obj) if issubclass(t, list) else tuple.__getitem__(obj, slice(None)) \
                    if issubclass(t, tuple) else list(collections.deque.__iter__(obj))
                items = [("[%d]" % i, v) for i, v in enumerate(vals) if type(v) not in atomic]
            elif issubclass(t, sets):
                items = [("{}", v) for v in list(set.__iter__(obj) if issubclass(t, set) else frozenset.__iter__(obj))
                         if type(v) not in atomic]
            elif issubclass(t, func_t):
                named = "closure"
                cells = obj.__closure__ or ()
                out = []
                for n, c in zip(obj.__code__.co_freevars, cells):
                    try:
                        out.append((".<closure %s>" % n, c.cell_contents))
                    except ValueError:
                        pass
                items = out
            elif issubclass(t, gen_t):
                named = "generator local"
                fr = obj.gi_frame
                if fr is not None:
                    items = [(".<frame %s>" % k, v) for k, v in list(fr.f_locals.items())]
            elif info(obj) is None:
                named = "attribute of " + t.__name__
                try:
                    d = object.__getattribute__(obj, "__dict__")
                except Exception:
                    d = None
                out = [("." + k, v) for k, v in list(dict.items(d)) if type(k) is str] if type(d) is dict else []
                slots = []
                for base in t.__mro__:
                    sl = base.__dict__.get("__slots__", ())
                    slots.extend((sl,) if type(sl) is str else sl if type(sl) in (tuple, list) else ())
                for sl in slots:
                    if type(sl) is str and sl not in ("__dict__", "__weakref__"):
                        try:
                            out.append(("." + sl, object.__getattribute__(obj, sl)))
                        except Exception:
                            pass
                items = out
        except Exception:
            continue
        for suffix, child in items:
            if type(child) in atomic:
                continue
            cpath = (path, suffix)
            found = held(cpath, named, child) if named else held(path, t.__name__, child)
            if not found and id(child) not in seen:
                queue.append((cpath, child, False))
    # a storage held directly by some holder (a model's weights, saved by
    # every graph that used them) is that holder's, not part of a graph;
    # one kept by several graphs counts once, with the largest holder
    direct = set()
    for h in holders.values():
        direct.update(h.storages)
    out = sorted(holders.values(), key=lambda h: -(sum(h.storages.values()) + sum(h.graph.values())))
    claimed = set()
    for h in out:
        h.graph = {a: nb for a, nb in h.graph.items() if a not in direct and a not in claimed}
        claimed.update(h.graph)
    alive.clear()
    return out, visited, time.monotonic() - t0, limit


def write(path, holders, visited, seconds, limit, extra=None):
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write("vramtrace-holders 1\n")
        f.write(f"W {visited} {seconds:.6f} {1 if limit else 0} {limit or '-'}\n")
        if extra:
            f.write(extra + "\n")
        for h in holders:
            direct = sum(h.storages.values())
            graph = sum(h.graph.values())
            p = h.path.replace("\t", " ").replace("\n", " ")
            f.write(f"H {h.count} {direct} {graph} {h.type}\t{p}\n")
            n = 0
            for addr, nb in h.storages.items():
                if n >= MAX_STORAGES:
                    break
                f.write(f"P {addr:x} {nb} 0\n")
                n += 1
            for addr, nb in h.graph.items():
                if n >= MAX_STORAGES:
                    break
                f.write(f"P {addr:x} {nb} 1\n")
                n += 1
    os.replace(tmp, path)


def _run(tag, frame=None, extra=None):
    """One walk, written to holders.PID<tag>.txt; never raises.  frame: the
    innermost running frame whose locals (and its callers') are walked too;
    extra: a line written after W (the failed allocation)."""
    try:
        out = os.environ.get("VRAMTRACE_HOLDERS")
        if not out or "torch" not in sys.modules:
            return  # programs without torch pay nothing
        if os.getpid() != _INSTALLED_PID:
            return  # a fork child (a DataLoader worker): it writes no trace either
        cuda = sys.modules.get("torch.cuda")
        if cuda is None or not cuda.is_initialized():
            return  # no CUDA here (a spawned worker, a CPU-only run): no tensor to name
        frames = []
        while frame is not None and len(frames) < 64:
            if frame.f_code.co_filename != __file__:
                frames.append(frame)
            frame = frame.f_back
        import warnings
        with warnings.catch_warnings():  # a module's deprecation warnings stay quiet
            warnings.simplefilter("ignore")
            holders, visited, seconds, limit = walk(frames=frames)
        frames = None
        write(os.path.join(out, f"holders.{os.getpid()}{tag}.txt"), holders, visited, seconds, limit, extra)
    except Exception as e:  # never into the program
        try:
            sys.stderr.write(f"vramtrace: holder walk failed: {e!r}\n")
        except Exception:
            pass


def _at_exit():
    _run("")


_OOM_DONE = [False]


def _on_oom(device, alloc, device_allocated, device_free):
    """PyTorch's out-of-memory observer (the allocator calls it before it
    raises, its lock released, with the GIL): the first failed allocation
    is walked, with the locals of the frames that asked for it."""
    if _OOM_DONE[0]:
        return
    _OOM_DONE[0] = True
    _run(".oom", sys._getframe(1), "O %d %d %d %d" % (device, alloc, device_allocated, device_free))


def _attach_oom():
    try:
        sys.modules["torch"]._C._cuda_attach_out_of_memory_observer(_on_oom)
    except Exception:
        pass


class _TorchCudaHook:
    """A meta path finder that stays out of every import but torch.cuda's:
    when that module has run, the OOM observer is queued with
    torch.cuda._lazy_call (it attaches when CUDA initializes; before, the
    allocator has no devices to attach it to)."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch.cuda":
            return None
        import importlib.machinery
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module):
            run(module)
            try:
                module._lazy_call(_attach_oom)
            except Exception:
                pass
        try:
            loader.exec_module = exec_module
        except Exception:
            pass
        return spec


_SIGNALS = [0]


def _on_signal(signum, frame):
    _SIGNALS[0] += 1
    _run(".sig-%d" % _SIGNALS[0], frame, "S %d" % signum)


_INSTALLED_PID = None


def install():
    """At exit always; at the first failed CUDA allocation where PyTorch
    has an OOM observer; on VRAMTRACE_HOLDERS_SIGNAL (a signal name or
    number, `record --holders-signal`) when the program left that signal's
    handler at its default."""
    global _INSTALLED_PID
    import atexit
    _INSTALLED_PID = os.getpid()
    atexit.register(_at_exit)
    if os.environ.get("VRAMTRACE_HOLDERS_OOM", "1") != "0":
        sys.meta_path.insert(0, _TorchCudaHook())
    sig = os.environ.get("VRAMTRACE_HOLDERS_SIGNAL")
    if sig:
        import signal
        num = int(sig) if sig.isdigit() else getattr(signal, sig if sig.startswith("SIG") else "SIG" + sig, None)
        if num and signal.getsignal(num) in (signal.SIG_DFL, None):
            signal.signal(num, _on_signal)
