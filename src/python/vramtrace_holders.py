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
        if not isinstance(o, tensor):
            return None
        try:
            if not o.is_cuda:
                return None
            st = o.untyped_storage()
            return st.data_ptr(), st.nbytes()
        except Exception:
            return None
    return info


def _graph_storages(t, info, seen_nodes, budget):
    """Storages kept by t's autograd graph: saved tensors of its grad_fn
    nodes (attributes named _saved_*), breadth first through
    next_functions.  A lower bound: nodes that do not expose what they
    saved are not counted."""
    out = []
    fn = getattr(t, "grad_fn", None)
    stack = [fn] if fn is not None else []
    while stack and budget[0] > 0:
        node = stack.pop()
        if node is None or id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        budget[0] -= 1
        try:
            names = [n for n in dir(node) if n.startswith("_saved_")]
        except Exception:
            names = []
        for n in names:
            try:
                v = getattr(node, n)
            except Exception:
                continue
            vals = v if isinstance(v, (list, tuple)) else (v,)
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


class _Holder:
    __slots__ = ("path", "type", "count", "storages", "graph")

    def __init__(self, path, typ):
        self.path, self.type, self.count = path, typ, 0
        self.storages, self.graph = {}, {}


def _path(node):
    """The text of a path kept as linked (parent, suffix) pairs."""
    parts = []
    while node is not None:
        node, suffix = node
        parts.append(suffix)
    return "".join(reversed(parts))


def walk(roots=None, info=None, max_objects=MAX_OBJECTS, max_seconds=MAX_SECONDS):
    """Walk from roots ([(path, object)], default: every module's globals);
    info(obj) -> (address, bytes) for a CUDA tensor, else None (default:
    torch's).  Returns (holders, objects visited, seconds, limit reason or
    "").  Paths are kept as linked pairs and spelled out only for holders:
    most objects hold no tensor."""
    t0 = time.monotonic()
    if info is None:
        info = _torch_tensor_info()
    if info is None:
        return [], 0, 0.0, ""
    if roots is None:
        roots = []
        for name, mod in list(sys.modules.items()):
            d = getattr(mod, "__dict__", None)
            if isinstance(d, dict) and name != __name__:
                roots.append((name, mod))
    import collections
    import types
    seen, holders, nodes = set(), {}, set()
    graph_budget = [max_objects]
    queue = collections.deque()
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
        for g in _graph_storages(x, info, nodes, graph_budget):
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
        visited += 1
        if root and info(obj) is not None:  # a tensor as a root itself
            continue
        # who holds a tensor found among the children: a container holds
        # it itself (its path, its type); a name (a module global, an
        # attribute, a captured variable, a generator's local) is the holder
        named = None
        items = ()
        try:
            t = type(obj)
            if isinstance(obj, module_t):
                if _path(path) != obj.__name__:
                    continue  # a module reached through another: its own root names it
                named = "global"
                items = [("." + k, v) for k, v in list(vars(obj).items()) if not k.startswith("__")]
            elif t is dict_t or isinstance(obj, dict_t):
                items = [(k, v) for k, v in list(obj.items())]
                items = [("[%r]" % (k,), v) for k, v in items if type(v) not in atomic]
            elif isinstance(obj, seqs):
                items = [(i, v) for i, v in enumerate(list(obj)) if type(v) not in atomic]
                items = [("[%d]" % i, v) for i, v in items]
            elif isinstance(obj, sets):
                items = [("{}", v) for v in list(obj) if type(v) not in atomic]
            elif isinstance(obj, func_t):
                named = "closure"
                cells = obj.__closure__ or ()
                out = []
                for n, c in zip(obj.__code__.co_freevars, cells):
                    try:
                        out.append((".<closure %s>" % n, c.cell_contents))
                    except ValueError:
                        pass
                items = out
            elif isinstance(obj, gen_t):
                named = "generator local"
                fr = obj.gi_frame
                if fr is not None:
                    items = [(".<frame %s>" % k, v) for k, v in list(fr.f_locals.items())]
            elif info(obj) is None:
                named = "attribute of " + t.__name__
                d = getattr(obj, "__dict__", None)
                out = [("." + k, v) for k, v in list(d.items())] if isinstance(d, dict) else []
                for sl in getattr(t, "__slots__", ()) or ():
                    if isinstance(sl, str) and sl != "__dict__" and hasattr(obj, sl):
                        out.append(("." + sl, getattr(obj, sl)))
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
    out = sorted(holders.values(), key=lambda h: -sum(h.storages.values()))
    return out, visited, time.monotonic() - t0, limit


def write(path, holders, visited, seconds, limit):
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write("vramtrace-holders 1\n")
        f.write(f"W {visited} {seconds:.6f} {1 if limit else 0} {limit or '-'}\n")
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


def _at_exit():
    try:
        out = os.environ.get("VRAMTRACE_HOLDERS")
        if not out or "torch" not in sys.modules:
            return  # programs without torch pay nothing
        holders, visited, seconds, limit = walk()
        write(os.path.join(out, f"holders.{os.getpid()}.txt"), holders, visited, seconds, limit)
    except Exception as e:  # never into the program
        try:
            sys.stderr.write(f"vramtrace: holder walk failed: {e!r}\n")
        except Exception:
            pass


def install():
    import atexit
    atexit.register(_at_exit)
