"""vramtrace_holders - who holds the GPU memory (issue 25).

Loaded into a traced Python program by `vramtrace record` (through its
sitecustomize.py).  It does nothing while the program runs.  At exit
(atexit), when PyTorch, CuPy or JAX is in the process (never imported
here), it walks the objects reachable from module globals (object
attributes and slots, lists, tuples, dicts, sets, deques, closures,
generator frames, what C objects show only to the garbage collector,
functools.lru_cache caches, stored exceptions' traceback frames),
cheapest path first (fewest private names, then fewest steps), finds
the CUDA arrays they hold and the tensors that their autograd graphs
keep (the saved tensors of grad_fn nodes, as far as the nodes expose
them), and writes one line per holder to
VRAMTRACE_HOLDERS/holders.PID.txt:

    vramtrace-holders 1
    W <objects visited> <seconds> <limit hit 0|1> <reason>
    H <tensors> <bytes> <graph bytes> <type>\t<path>
    P <storage address, hex> <bytes> <0 direct | 1 through a graph>

which `vramtrace report` joins to the recorded blocks by storage address.
The walk at exit runs in a child forked from the program's own thread
(the GIL held), so the program ends without waiting for it; until the
file is written, holders.PID.pending beside it is locked and `vramtrace
report` waits on it (_detach; VRAMTRACE_HOLDERS_DETACH=0 walks in the
program).  The walks at a failed allocation and on a signal run in the
program.  Each is bounded in objects and time, never raises into the
program and keeps no object alive after it returns.
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


def _cupy_array_info():
    """CuPy's arrays, when cupy is already imported: obj -> (address,
    bytes, False) (no autograd graph).  The allocation the array lies in
    (data.mem: a view shares its base's, as a torch storage) where CuPy
    exposes it, else data.ptr and nbytes."""
    cupy = sys.modules.get("cupy")
    nd = getattr(cupy, "ndarray", None) if cupy is not None else None
    if not isinstance(nd, type):
        return None

    def info(o):
        if not issubclass(type(o), nd):
            return None
        try:
            mp = o.data
            mem = getattr(mp, "mem", None)
            if mem is not None and mem.ptr:
                return mem.ptr, mem.size, False
            return (mp.ptr, o.nbytes, False) if mp.ptr else None
        except Exception:
            return None
    return info


def _jax_array_info():
    """JAX's arrays on a GPU, when jax is already imported: the ones
    jax.live_arrays() lists, by id (no type test: jax.Array is an ABC),
    obj -> (unsafe_buffer_pointer(), nbytes, False).  An array sharded over
    several devices has no single buffer and is left out."""
    jax = sys.modules.get("jax")
    live = getattr(jax, "live_arrays", None) if jax is not None else None
    if live is None:
        return None
    xb = sys.modules.get("jax._src.xla_bridge")
    if xb is not None and getattr(xb, "_backends", None) == {}:
        return None  # cleared (jax's own atexit ran): live_arrays() would start a backend
    try:
        arrays = list(live())
    except Exception:
        return None
    table = {}
    for a in arrays:
        try:
            if not any(getattr(d, "platform", "") in ("gpu", "cuda", "rocm") for d in a.devices()):
                continue
            table[id(a)] = (a.unsafe_buffer_pointer(), a.nbytes, False)
        except Exception:
            continue
    if not table:
        return None

    def info(o, _keep=arrays):  # _keep: the ids stay theirs while the walk runs
        return table.get(id(o))
    return info


def _array_info(torch=True):
    """One predicate for every array library already imported (none is
    imported here): torch's (when torch is true), CuPy's, JAX's; None when
    there is none."""
    preds = [f() for f in ((_torch_tensor_info,) if torch else ()) + (_cupy_array_info, _jax_array_info)]
    preds = [f for f in preds if f is not None]
    if len(preds) < 2:
        return preds[0] if preds else None

    def info(o):
        for f in preds:
            r = f(o)
            if r is not None:
                return r
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


class _Cache:
    """The entries of a cache kept in C (a functools.lru_cache's), walked
    as one container named by its owner and labelled by kind."""
    __slots__ = ("items", "label")

    def __init__(self, items, label):
        self.items, self.label = items, label


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


def _frame_items(fr, line, label):
    """A function frame's locals as (" -> function (file:line).name", value,
    label), read as the frame keeps them (f_locals: no code of the program
    runs); a module's frame gives none (its locals are its globals, which
    the module names)."""
    code = fr.f_code
    loc = fr.f_locals
    if loc is fr.f_globals:
        return []
    items = list(dict.items(loc)) if type(loc) is dict else list(loc.items())
    where = " -> %s (%s:%s)" % (code.co_name, os.path.basename(code.co_filename), line)
    return [("%s.%s" % (where, k), v, label) for k, v in items if type(k) is str]


def _lru_items(obj, d):
    """A functools.lru_cache wrapper's entries, [(key, result)]: its cache
    dict is seen only by the garbage collector (gc.get_referents).  With
    maxsize=None (functools.cache) the dict maps key -> result; a bounded
    cache maps key -> a link that shows nothing, but the wrapper visits
    each link's key then its result, so results are paired to keys from
    its referents.  Returns (cache dict or None, entries)."""
    import gc
    refs = gc.get_referents(obj)
    cache = None
    for r in refs:
        if type(r) is dict and r is not d:
            cache = r
            break
    if cache is None:
        return None, []
    entries = list(dict.items(cache))
    if entries and type(entries[0][1]).__name__ == "_lru_list_elem":
        keys = {id(k) for k, _ in entries}
        result = {}
        for i in range(len(refs) - 1):
            if id(refs[i]) in keys:
                result[id(refs[i])] = refs[i + 1]
        entries = [(k, result[id(k)]) for k, _ in entries if id(k) in result]
    return cache, entries


def walk(roots=None, info=None, max_objects=MAX_OBJECTS, max_seconds=MAX_SECONDS, frames=(), say_after=None):
    """Walk from roots ([(path, object)], default: every module's globals)
    and from the locals of frames (running frames, innermost first: at a
    failed allocation or a signal what a function holds in its locals is
    named "<function (file:line)>.name");
    info(obj) -> (address, bytes[, has a graph]) for a CUDA array, else
    None (default: torch's, CuPy's and JAX's, of those imported).  Returns
    (holders, objects visited, seconds, limit reason or "").

    Objects are taken cheapest path first: fewest attributes whose name
    starts with "_" (private ones, dunders), then fewest steps, then the
    order found (a module's globals in their order, sys.modules' order):
    of the paths to one holder the one given is the shortest through
    public attributes, the same in every run.  Paths are kept as linked
    pairs and spelled out only for holders: most objects hold no tensor.
    say_after: seconds after which one line on stderr says what the
    program is doing at its exit (None: never)."""
    t0 = time.monotonic()
    if info is None:
        info = _array_info()
    if info is None:
        return [], 0, 0.0, ""
    import collections
    import functools
    import gc
    import types
    roots = list(roots) if roots is not None else None
    if roots is None:  # modules only (sys.modules may hold lazy proxies: not walked)
        roots = [(name, mod) for name, mod in list(sys.modules.items())
                 if issubclass(type(mod), types.ModuleType) and name != __name__]
    # alive: every object whose id is in seen or nodes, until the walk
    # returns (an id is only unique while its object lives)
    seen, holders, nodes, alive = set(), {}, set(), []
    graph_budget = [max_objects]
    # a child of (private, depth) goes to (private or private + 1,
    # depth + 1): taking buckets in that order, each in the order its
    # objects were found, is taking the cheapest path first, no heap needed
    buckets = {}
    for f in frames:
        try:
            code = f.f_code
            loc = f.f_locals
            items = list(dict.items(loc)) if type(loc) is dict else list(loc.items())
            where = "<%s (%s:%d)>" % (code.co_name, os.path.basename(code.co_filename), f.f_lineno)
        except Exception:
            continue
        roots.append((where, _Locals([("." + k, v) for k, v in items if type(k) is str])))
    buckets[0, 0] = [((None, path), obj, True) for path, obj in roots]
    visited, limit = 0, ""
    atomic = {str, bytes, int, float, complex, bool, type(None), range, type, bytearray}
    module_t, dict_t, func_t = types.ModuleType, dict, types.FunctionType
    frame_of = {types.GeneratorType: "gi_frame", types.CoroutineType: "cr_frame",
                types.AsyncGeneratorType: "ag_frame"}
    tb_t, frame_t, member_t = types.TracebackType, types.FrameType, types.MemberDescriptorType
    lru_t = getattr(sys.modules.get("functools", functools), "_lru_cache_wrapper", None)
    exc_attrs = [(n, BaseException.__dict__[n]) for n in ("args", "__cause__", "__context__", "__traceback__")]
    seqs = (list, tuple, collections.deque)
    sets = (set, frozenset)
    members = {}  # type -> its member descriptors (Python slots, C struct members)

    def members_of(t):
        m = members.get(t)
        if m is None:
            m = members[t] = []
            for base in t.__mro__:
                for n, dsc in list(base.__dict__.items()):
                    if type(dsc) is member_t and n not in ("__weakref__", "__dict__"):
                        m.append((n, dsc))
        return m

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
        if len(r) < 3 or r[2]:
            for g in _graph_storages(x, info, nodes, graph_budget, alive):
                if g[0] not in h.storages:
                    h.graph[g[0]] = g[1]
        return True

    while buckets and not limit:
        private, depth = key = min(buckets)
        for path, obj, root in buckets.pop(key):
            if visited >= max_objects:
                limit = "objects"
                break
            if (visited & 1023) == 0:
                el = time.monotonic() - t0
                if el > max_seconds:
                    limit = "time"
                    break
                if say_after is not None and el > say_after:
                    say_after = None
                    try:  # never hold the terminal without saying why
                        sys.stderr.write(f"vramtrace: naming the objects that hold GPU memory (at most "
                                         f"{max_seconds:g} s; vramtrace record --no-holders skips it)...\n")
                    except Exception:
                        pass
            oid = id(obj)
            if oid in seen:
                continue
            seen.add(oid)
            alive.append(obj)
            visited += 1
            if root and info(obj) is not None:  # a tensor as a root itself
                continue
            # who holds a tensor found among the children: an item labelled
            # None is held by this object itself, a container (its path, its
            # type); a label says that a name holds it (a module global, an
            # attribute, a captured variable, a frame's local): that name is
            # the holder
            t = type(obj)
            tname = t.__name__
            items = ()
            # Only type() and the builtin types' own methods and descriptors
            # are used on the program's objects: isinstance(), getattr() and
            # repr() can run the program's code (a deprecation warning, a
            # property, a tensor's repr launching kernels)
            try:
                if t is _Locals:  # a running frame's locals
                    items = [(k, v, "local variable") for k, v in obj.items]
                elif t is _Cache:
                    tname = obj.label
                    items = [(k, v, None) for k, v in obj.items]
                elif issubclass(t, module_t):
                    d = object.__getattribute__(obj, "__dict__")
                    if _path(path) != dict.get(d, "__name__"):
                        continue  # a module reached through another: its own root names it
                    items = [("." + k, v, "global") for k, v in list(dict.items(d))
                             if type(k) is str and not k.startswith("__")]
                elif issubclass(t, dict_t):
                    items = [("[%s]" % _key(k), v, None) for k, v in list(dict.items(obj)) if type(v) not in atomic]
                elif issubclass(t, seqs):
                    vals = list.copy(obj) if issubclass(t, list) else tuple.__getitem__(obj, slice(None)) \
                        if issubclass(t, tuple) else list(collections.deque.__iter__(obj))
                    items = [("[%d]" % i, v, None) for i, v in enumerate(vals) if type(v) not in atomic]
                elif issubclass(t, sets):
                    items = [("{}", v, None) for v in list(set.__iter__(obj) if issubclass(t, set) else frozenset.__iter__(obj))
                             if type(v) not in atomic]
                elif issubclass(t, func_t):
                    cells = obj.__closure__ or ()
                    out = []
                    for n, c in zip(obj.__code__.co_freevars, cells):
                        try:
                            out.append((".<closure %s>" % n, c.cell_contents, "closure"))
                        except ValueError:
                            pass
                    items = out
                elif t in frame_of:
                    fr = getattr(obj, frame_of[t])
                    if fr is not None:
                        items = [(".<frame %s>" % k, v, "generator local") for k, v in list(fr.f_locals.items())]
                elif t is tb_t:  # a stored exception's frames, outermost first
                    out, tb, n = [], obj, 0
                    while tb is not None and n < 256:
                        out.extend(_frame_items(tb.tb_frame, tb.tb_lineno, "traceback local"))
                        tb, n = tb.tb_next, n + 1
                    items = out
                elif t is frame_t:
                    items = _frame_items(obj, obj.f_lineno, "frame local")
                elif info(obj) is None:
                    label = "attribute of " + tname
                    try:
                        d = object.__getattribute__(obj, "__dict__")
                    except Exception:
                        d = None
                    out = [("." + k, v, label) for k, v in list(dict.items(d)) if type(k) is str] if type(d) is dict else []
                    for n, dsc in members_of(t):  # slots; a C type's struct members
                        try:
                            out.append(("." + n, dsc.__get__(obj, t), label))
                        except Exception:
                            pass
                    if issubclass(t, BaseException):  # its traceback keeps its frames' locals
                        for n, dsc in exc_attrs:
                            out.append(("." + n, dsc.__get__(obj, t), label))
                    if t is lru_t:
                        cache, entries = _lru_items(obj, d)
                        if cache is not None:
                            seen.add(id(cache))
                            alive.append(cache)
                            out.append((".<lru_cache>", _Cache(
                                [("[%s]" % _key(k), v) for k, v in entries if type(v) not in atomic],
                                "functools lru_cache"), label))
                    else:
                        # what only the garbage collector is shown (a container
                        # implemented in C): this object holds it.  Most
                        # objects show their type, __dict__ and slots only
                        refs = [r for r in gc.get_referents(obj) if r is not d and type(r) not in atomic
                                and not issubclass(type(r), type)]
                        if refs:
                            known = {id(v) for _, v, _ in out}
                            for r in refs:
                                if id(r) not in known:
                                    known.add(id(r))
                                    out.append((".<%s>" % type(r).__name__, r, None))
                    items = out
            except Exception:
                continue
            for suffix, child, label in items:
                if type(child) in atomic:
                    continue
                cpath = (path, suffix)
                found = held(cpath, label, child) if label else held(path, tname, child)
                if not found and id(child) not in seen:
                    bucket = (private + 1 if suffix.startswith("._") else private, depth + 1)
                    b = buckets.get(bucket)
                    if b is None:
                        b = buckets[bucket] = []
                    b.append((cpath, child, False))
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
    members.clear()
    buckets.clear()
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


def _detach(path):
    """The walk at exit in a forked child, so that the program (and
    `record`, and the terminal) need not wait for it: the parent returns
    at once and goes on with its exit; the child walks the objects as
    they were at the fork (copy on write), writes `path` and ends with
    os._exit (no atexit, no CUDA: the injection library writes nothing
    in a fork child).  Until it is done, holders.PID.pending beside
    `path` is locked (flock, held by the child's copy of the descriptor:
    released when the child ends, however it ends); `vramtrace report`
    waits on that lock.  Returns 0 in the parent when a child took the
    walk, 1 in the child, None when there is no child (the walk then
    runs here, as before): VRAMTRACE_HOLDERS_DETACH=0, no fork, or the
    marker cannot be made."""
    if os.environ.get("VRAMTRACE_HOLDERS_DETACH", "1") == "0" or not hasattr(os, "fork"):
        return None
    import fcntl
    pending = path[:-len(".txt")] + ".pending"
    try:
        fd = os.open(pending, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        import warnings
        with warnings.catch_warnings():  # 3.12 warns of fork() in a process with threads
            warnings.simplefilter("ignore")
            try:
                pid = os.fork()
            except RuntimeError:
                # 3.12 refuses os.fork() in atexit ("can't fork at
                # interpreter shutdown"); the C library's fork() has no such
                # rule.  Called through PyDLL the GIL stays held across it,
                # and the child runs nothing but the walk and os._exit.
                import ctypes
                pid = ctypes.PyDLL(None).fork()
                if pid < 0:
                    raise OSError(ctypes.get_errno(), "fork")
    except Exception:
        os.close(fd)
        try:
            os.unlink(pending)
        except OSError:
            pass
        return None
    if pid:
        os.close(fd)  # the child's copy keeps the lock
        return 0
    # the child: bounded in time even if the walk hangs in C code, and
    # holding none of the program's descriptors (a pipe to `tee` would
    # otherwise stay open until the walk ends)
    try:
        import signal
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(int(MAX_SECONDS) + 10)
        null = os.open(os.devnull, os.O_RDWR)
        for i in (0, 1, 2):
            os.dup2(null, i)
        keep = sorted((fd, null))
        os.closerange(3, keep[0])
        os.closerange(keep[0] + 1, keep[1])
        os.closerange(keep[1] + 1, 1 << 20)
        os.write(fd, b"%d\n" % os.getpid())
    except Exception:
        pass
    return 1


def _end_child(path, code):
    """The detached walk's child ends: the marker goes, then the lock."""
    try:
        os.unlink(path[:-len(".txt")] + ".pending")
    except BaseException:
        pass
    os._exit(code)


def _run(tag, frame=None, extra=None):
    """One walk, written to holders.PID<tag>.txt; never raises.  frame: the
    innermost running frame whose locals (and its callers') are walked too;
    extra: a line written after W (the failed allocation).  The walk at
    exit (tag "") runs in a detached child (_detach); the others (a failed
    allocation, a signal) in the program, which goes on after them."""
    child = None
    try:
        out = os.environ.get("VRAMTRACE_HOLDERS")
        if not out or not ("torch" in sys.modules or "cupy" in sys.modules or "jax" in sys.modules):
            return  # programs without an array library pay nothing
        if os.getpid() != _INSTALLED_PID:
            return  # a fork child (a DataLoader worker): it writes no trace either
        # torch's tensors only where torch initialized CUDA (not in a
        # spawned worker, a CPU-only run); CuPy's and JAX's where on a GPU
        cuda = sys.modules.get("torch.cuda")
        info = _array_info(torch=cuda is not None and cuda.is_initialized())
        if info is None:
            return  # no CUDA array to name
        frames = []
        while frame is not None and len(frames) < 64:
            if frame.f_code.co_filename != __file__:
                frames.append(frame)
            frame = frame.f_back
        path = os.path.join(out, f"holders.{os.getpid()}{tag}.txt")
        if not tag:
            child = _detach(path)
            if child == 0:
                return  # the child walks
        import warnings
        with warnings.catch_warnings():  # a module's deprecation warnings stay quiet
            warnings.simplefilter("ignore")
            holders, visited, seconds, limit = walk(info=info, frames=frames,
                                                    say_after=None if child else 1.0)
        frames = None
        write(path, holders, visited, seconds, limit, extra)
    except Exception as e:  # never into the program
        try:
            sys.stderr.write(f"vramtrace: holder walk failed: {e!r}\n")
        except Exception:
            pass
    finally:
        if child:
            _end_child(path, 0)


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


def _attach_oom_later(module):
    """torch.cuda has run: the OOM observer is queued with
    torch.cuda._lazy_call (it attaches when CUDA initializes; before, the
    allocator has no devices to attach it to)."""
    module._lazy_call(_attach_oom)


def _walk_before_jax_cleanup(module):
    """jax has run: it registered an atexit function that clears its
    backends, after which jax.live_arrays() would start a new one.  atexit
    runs the last registered first: the walk registers again, to run
    before it."""
    import atexit
    atexit.unregister(_at_exit)
    atexit.register(_at_exit)


class _ImportHook:
    """A meta path finder that stays out of every import but those in
    `after` (module name -> function): when that module has run, the
    function is called with it."""

    def __init__(self, after):
        self.after = after

    def find_spec(self, name, path=None, target=None):
        then = self.after.get(name)
        if then is None:
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
                then(module)
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
    after = {"jax": _walk_before_jax_cleanup}
    if os.environ.get("VRAMTRACE_HOLDERS_OOM", "1") != "0":
        after["torch.cuda"] = _attach_oom_later
    sys.meta_path.insert(0, _ImportHook(after))
    sig = os.environ.get("VRAMTRACE_HOLDERS_SIGNAL")
    if sig:
        import signal
        num = int(sig) if sig.isdigit() else getattr(signal, sig if sig.startswith("SIG") else "SIG" + sig, None)
        if num and signal.getsignal(num) in (signal.SIG_DFL, None):
            signal.signal(num, _on_signal)
