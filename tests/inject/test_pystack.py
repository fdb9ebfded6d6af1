#!/usr/bin/env python3
"""test_pystack.py LIB VERSION - vt_pystack inside a real interpreter.

Calls the capture through ctypes (which releases the GIL, as PyTorch does
around CUDA calls) from frames of every kind and asserts every frame's file,
function and line: against Python's own introspection (sys._getframe) taken
on the same line, and for the innermost frames against literal names and the
line numbers of "# @marker" comments in this file.  Exit status 0 = pass.
VTPT_INIT_GIL=1: init with the GIL held (ctypes.PyDLL), as the thread that
initializes CUDA in PyTorch does: on 3.12+ the walk memo then names code
objects by address, with a code watcher counting their destruction.
"""
import asyncio
import ctypes
import functools
import gc
import os
import random
import sys
import threading

LIB = ctypes.CDLL(sys.argv[1])
WANT_VERSION = sys.argv[2] if len(sys.argv) > 2 else None
LIB.vtpt_init.argtypes = [ctypes.c_char_p, ctypes.c_int]
LIB.vtpt_version.restype = ctypes.c_char_p
LIB.vtpt_capture.argtypes = [ctypes.c_int]
LIB.vtpt_capture.restype = ctypes.c_char_p
LIB.vtpt_capture0.argtypes = []
LIB.vtpt_capture0.restype = ctypes.c_char_p
LIB.vtpt_repeat.argtypes = [ctypes.c_int, ctypes.c_int]
LIB.vtpt_bench.argtypes = [ctypes.c_int, ctypes.c_int]
LIB.vtpt_bench.restype = ctypes.c_double
LIB.vtpt_merged.argtypes = [ctypes.c_int]
LIB.vtpt_merged.restype = ctypes.c_char_p
LIB.vtpt_merged_noeval.argtypes = [ctypes.c_int]
LIB.vtpt_merged_noeval.restype = ctypes.c_char_p
LIB.vtpt_walk.argtypes = [ctypes.c_int]
LIB.vtpt_walk.restype = ctypes.c_char_p
LIB.vtpt_stack_twice.argtypes = [ctypes.c_int]
LIB.vtpt_stack_twice.restype = ctypes.c_char_p
INIT_GIL = os.environ.get("VTPT_INIT_GIL") == "1"

V = sys.version_info[:2]
QUAL = V >= (3, 11)          # co_qualname exists
INLINE_COMP = V >= (3, 12)   # PEP 709: list/dict comprehensions inlined
INLINE_CALLS = V >= (3, 11)  # Python-to-Python calls share one C eval call
THIS = sys._getframe().f_code.co_filename
MAX = 256
REPEAT = 2000000

with open(THIS, encoding="utf-8") as fh:
    LINES = {}
    for no, text in enumerate(fh, 1):
        if "# @" in text:
            LINES[text.split("# @")[1].split()[0]] = no

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, flush=True)


def parse(raw):
    """Capture text -> [(file, function, line, nentry, flags)] innermost first."""
    if isinstance(raw, list):
        return raw
    text = raw.decode("utf-8")
    lines = text.splitlines()
    n = int(lines[0].split("=")[1])
    out = []
    for ln in lines[1:]:
        f, fn, line, ne, fl = ln.split("\t")
        out.append((f, fn, int(line), int(ne), int(fl)))
    assert n == len(out), text
    return out


# The capture, called straight from the frame under test (no wrapper frame).
C = LIB.vtpt_capture0
CN = LIB.vtpt_capture


def E():
    """The caller's stack as Python sees it, innermost first."""
    out = []
    f = sys._getframe(1)
    while f is not None:
        co = f.f_code
        out.append((co.co_filename, co.co_qualname if QUAL else co.co_name, f.f_lineno))
        f = f.f_back
    return out


def q(qual, name=None):
    """Expected function name: qualname on 3.11+, co_name on 3.10."""
    return qual if QUAL else (name or qual.rsplit(".", 1)[-1])


def check(case, res, inner, marker, file=None):
    got, exp = parse(res[0]), res[1]
    triples = [g[:3] for g in got]
    if triples != exp:
        fail("%s: stack differs from sys._getframe\n  got %s\n  exp %s" % (case, triples, exp))
        return got
    want = (file or THIS, inner, LINES[marker] if isinstance(marker, str) else marker)
    if triples[0] != want:
        fail("%s: innermost %s, want %s" % (case, triples[0], want))
    if got and got[-1][4] != 0:
        fail("%s: unexpected flags %s" % (case, got[-1]))
    if got and got[-1][3] < 1:
        fail("%s: outermost frame has no entry mark %s" % (case, got[-1]))
    return got


# ---------------------------------------------------------------- cases
def f_plain():
    return C(), E()  # @plain


def f_a():
    return f_b()  # @a


def f_b():
    return f_c()  # @b


def f_c():
    return C(), E()  # @c


class K:
    def meth(self):
        return C(), E()  # @method

    @classmethod
    def cm(cls):
        return C(), E()  # @classmethod

    @staticmethod
    def sm():
        return C(), E()  # @staticmethod

    @property
    def prop(self):
        return C(), E()  # @property

    def __call__(self):
        return C(), E()  # @dunder_call

    def __add__(self, other):
        return C(), E()  # @dunder_add

    def __enter__(self):
        return C(), E()  # @enter

    def __exit__(self, *exc):
        return False


LAM = lambda: (C(), E())  # @lambda


def gen():
    yield C(), E()  # @gen


def gen_outer():
    yield from gen()  # @yield_from


async def co_inner():
    await asyncio.sleep(0)
    return C(), E()  # @coro


async def co_outer():
    return await co_inner()  # @coro_outer


def f_listcomp():
    return [(C(), E()) for _ in range(1)][0]  # @listcomp


def f_dictcomp():
    return {k: (C(), E()) for k in range(1)}[0]  # @dictcomp


def f_genexpr():
    return next((C(), E()) for _ in range(1))  # @genexpr


def f_closure():
    x = 1

    def inner():
        return C(), E(), x  # @closure

    got, exp, _ = inner()
    return got, exp


def deco(fn):
    @functools.wraps(fn)
    def wrapper(*a, **k):
        return fn(*a, **k)  # @wrapper

    return wrapper


@deco
def decorated():
    return C(), E()  # @decorated


def fünf_函数():
    return C(), E()  # @unicode


def f_except():
    try:
        raise ValueError("x")
    except ValueError:
        return C(), E()  # @except


def f_two_lines():
    first = C(), E()  # @line1
    second = C(), E()  # @line2
    return first, second


def f_sorted_key():
    out = []
    sorted([1], key=lambda v: out.append((C(), E())) or v)  # @sorted_key
    return out[0]


def f_del():
    out = []

    class D:
        def __del__(self):
            out.append((C(), E()))  # @del

    D()  # freed at once: __del__ runs from C, in a new eval call
    return out[0]


_imports = [0]


def f_import():
    """Module code run by importlib (frozen importlib frames in between)."""
    import importlib.util
    import os
    import tempfile
    _imports[0] += 1
    d = tempfile.mkdtemp()
    name = "vtpt_mod_%d_%d" % (os.getpid(), _imports[0])
    path = os.path.join(d, name + ".py")
    with open(path, "w") as fh:
        fh.write("import __main__\nRESULT = (__main__.C(), __main__.E())\n")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    os.unlink(path)
    os.rmdir(d)
    return mod.RESULT, path


def rec(n, max_frames):
    if n == 0:
        return CN(max_frames), E()  # @rec_leaf
    return rec(n - 1, max_frames)  # @rec


def nentry_of(got, i):
    return got[i][3]


def run_cases(tag=""):
    check(tag + "plain", f_plain(), q("f_plain"), "plain")
    got = check(tag + "chain", f_a(), q("f_c"), "c")
    if [g[1:3] for g in got[:3]] != [(q("f_c"), LINES["c"]), (q("f_b"), LINES["b"]), (q("f_a"), LINES["a"])]:
        fail(tag + "chain: %s" % (got[:3],))
    inline_mark = 0 if INLINE_CALLS else 1
    if nentry_of(got, 0) != inline_mark or nentry_of(got, 1) != inline_mark:
        fail(tag + "chain: nentry %s, want %d for inlined calls" % (got[:3], inline_mark))
    k = K()
    check(tag + "method", k.meth(), q("K.meth"), "method")
    check(tag + "classmethod", K.cm(), q("K.cm"), "classmethod")
    check(tag + "staticmethod", K.sm(), q("K.sm"), "staticmethod")
    check(tag + "property", k.prop, q("K.prop"), "property")
    check(tag + "dunder_call", k(), q("K.__call__"), "dunder_call")
    check(tag + "operator", k + 1, q("K.__add__"), "dunder_add")
    with k as res:
        check(tag + "with", res, q("K.__enter__"), "enter")
    check(tag + "lambda", LAM(), "<lambda>", "lambda")
    got = check(tag + "gen", next(gen()), q("gen"), "gen")
    if nentry_of(got, 0) != 1:  # resumed by next(), a C function: its own eval call
        fail(tag + "gen: nentry %s" % (got[0],))
    got = check(tag + "yield_from", next(gen_outer()), q("gen"), "gen")
    if got[1][1:3] != (q("gen_outer"), LINES["yield_from"]):
        fail(tag + "yield_from: %s" % (got[1],))
    got = check(tag + "coro", asyncio.run(co_outer()), q("co_inner"), "coro")
    if got[1][1:3] != (q("co_outer"), LINES["coro_outer"]):
        fail(tag + "coro: outer %s" % (got[1],))
    comp = "f_listcomp" if INLINE_COMP else q("f_listcomp.<locals>.<listcomp>", "<listcomp>")
    check(tag + "listcomp", f_listcomp(), comp, "listcomp")
    comp = "f_dictcomp" if INLINE_COMP else q("f_dictcomp.<locals>.<dictcomp>", "<dictcomp>")
    check(tag + "dictcomp", f_dictcomp(), comp, "dictcomp")
    check(tag + "genexpr", f_genexpr(), q("f_genexpr.<locals>.<genexpr>", "<genexpr>"), "genexpr")
    check(tag + "closure", f_closure(), q("f_closure.<locals>.inner", "inner"), "closure")
    got = check(tag + "decorator", decorated(), q("decorated"), "decorated")
    if got[1][1:3] != (q("deco.<locals>.wrapper", "wrapper"), LINES["wrapper"]):
        fail(tag + "decorator: wrapper frame %s" % (got[1],))
    check(tag + "unicode", fünf_函数(), q("fünf_函数"), "unicode")
    check(tag + "except", f_except(), q("f_except"), "except")
    a, b = f_two_lines()
    check(tag + "line1", a, q("f_two_lines"), "line1")
    check(tag + "line2", b, q("f_two_lines"), "line2")
    check(tag + "sorted_key", f_sorted_key(), q("f_sorted_key.<locals>.<lambda>", "<lambda>"), "sorted_key")
    check(tag + "eval", eval("(C(), E())"), "<module>", 1, file="<string>")
    check(tag + "__del__", f_del(), q("f_del.<locals>.D.__del__", "__del__"), "del")
    res, path = f_import()
    check(tag + "import", res, "<module>", 2, file=path)
    ns = {"C": C, "E": E}
    exec(compile("def from_exec():\n    return C(), E()\n", "<exec-src>", "exec"), ns)
    check(tag + "exec", ns["from_exec"](), "from_exec", 2, file="<exec-src>")


def test_recursion():
    # deeper than the cap: the innermost frames, the last one marked
    for depth, max_frames, want in ((300, 64, 64), (300, MAX, 256), (300, 1000, 256)):
        got, exp = rec(depth, max_frames)
        got = parse(got)
        triples = [g[:3] for g in got]
        if len(got) != want or triples != exp[:want]:
            fail("recursion %d/%d: %d frames, prefix equal %s" % (depth, max_frames, len(got), triples == exp[:want]))
        elif got[-1][4] != 1 or any(g[4] for g in got[:-1]):
            fail("recursion %d/%d: truncation flag %s" % (depth, max_frames, [g[4] for g in got]))
        elif got[0][1:3] != (q("rec"), LINES["rec_leaf"]) or got[1][1:3] != (q("rec"), LINES["rec"]):
            fail("recursion: frames %s" % (got[:2],))
    # exactly at the cap: complete, no flag
    got, exp = rec(0, len(E()) + 1)
    got = parse(got)
    if [g[:3] for g in got] != exp or got[-1][4] != 0:
        fail("recursion at cap: %s vs %s" % (got, exp))


def thread_main(results, idx):
    try:
        run_cases("thread%d: " % idx)
        results[idx] = True
    except Exception as e:  # report, do not hide
        fail("thread %d raised %r" % (idx, e))


def test_threads():
    results = [False] * 4
    ts = [threading.Thread(target=thread_main, args=(results, i), name="t%d" % i) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if not all(results):
        fail("threads: %s" % results)


def mutate(stop, stats):
    """Recurse up and down, capturing and checking at every turn."""
    rnd = random.Random(1)

    def down(n):
        if n == 0 or stop.is_set():
            got, exp = C(), E()  # @mutator
            got = parse(got)
            stats["captures"] += 1
            if [g[:3] for g in got] != exp:
                stats["bad"] += 1
            return
        if n % 3 == 0:
            list(down(n - 1) for _ in (0,))
        else:
            down(n - 1)

    while not stop.is_set():
        down(rnd.randint(0, 60))


def test_concurrent():
    stop = threading.Event()
    stats = {"captures": 0, "bad": 0}
    t = threading.Thread(target=mutate, args=(stop, stats))
    t.start()
    while stats["captures"] < 5:  # the mutator is running
        threading.Event().wait(0.001)
    try:
        bad = LIB.vtpt_repeat(REPEAT, MAX)  # GIL released: runs beside the mutator
        got, exp = C(), E()
        got = parse(got)
        if bad != 0:
            fail("concurrent: %d of %d captures differed from the first" % (bad, REPEAT))
        if [g[:3] for g in got] != exp:
            fail("concurrent: final capture differs")
    finally:
        stop.set()
        t.join()
    if stats["bad"] or stats["captures"] < 20:
        fail("concurrent: mutator %s" % stats)
    return stats


def test_foreign_thread():
    n = LIB.vtpt_capture_foreign_thread()
    if n != 0:
        fail("a thread Python never saw captured %d frames" % n)


def merged_check():
    text, exp = LIB.vtpt_merged(MAX).decode("utf-8"), E()  # @merged
    lines = text.splitlines()
    head = dict(kv.split("=") for kv in lines[0].split())
    frames = [ln.split("\t") for ln in lines[1:]]
    py = [(f[1], f[2], int(f[3])) for f in frames if f[0] == "P"]
    if py != exp:
        fail("merged: python frames %s != %s" % (py, exp))
    if int(head["neval"]) != int(head["nentry"]):
        fail("merged: %s eval frames in the native stack but %s entry marks" % (head["neval"], head["nentry"]))
    if any(f[0] == "N" and f[2] == "1" for f in frames):
        fail("merged: an eval frame was left in place")
    if not frames or frames[0][0] != "N":
        fail("merged: innermost frame should be native (the test library)")
    # the Python frames of one eval call are adjacent; calls through C
    # (ctypes, next(), asyncio) put native frames between groups
    kinds = "".join(f[0] for f in frames)
    groups = [g for g in kinds.split("N") if g]
    if INLINE_CALLS and len(groups) >= len(py):
        fail("merged: every Python frame has its own group on >= 3.11: %s" % kinds)
    if not INLINE_CALLS and any(len(g) != 1 for g in groups):
        fail("merged: 3.10 groups must be single frames: %s" % kinds)
    if not kinds.rstrip("N").endswith("P"):
        fail("merged: %s" % kinds)
    return kinds


def is_interp(module):
    """libpython3.X.so (shared builds) or the python executable."""
    return module.startswith("libpython") or module.startswith("python")


def merged_noeval_check():
    """Eval frames not recognised: all Python frames in one block, right
    before the first native frame in the interpreter's code."""
    text, exp = LIB.vtpt_merged_noeval(MAX).decode("utf-8"), E()  # @merged_noeval
    frames = [ln.split("\t") for ln in text.splitlines()[1:]]
    py = [(f[1], f[2], int(f[3])) for f in frames if f[0] == "P"]
    if py != exp:
        fail("merged_noeval: python frames %s != %s" % (py, exp))
        return
    kinds = "".join(f[0] for f in frames)
    first = kinds.index("P")
    block = kinds[first:first + len(py)]
    after = frames[first + len(py)] if first + len(py) < len(frames) else None
    if block != "P" * len(py):
        fail("merged_noeval: Python frames not in one block: %s" % kinds)
    elif after is None or not is_interp(after[3]):
        fail("merged_noeval: the frame after the Python block is %s, want the interpreter's" % (after,))
    elif any(is_interp(f[3]) for f in frames[:first]):
        fail("merged_noeval: interpreter frames before the Python block: %s" % kinds)


def merged_outer():
    return merged_inner()


def merged_inner():
    return merged_check()


def test_stack_twice():
    out = []
    t = threading.Thread(target=lambda: out.append(LIB.vtpt_stack_twice(MAX).decode()))
    t.start()
    t.join()
    d1, d2, n1, n2, badkeys = map(int, out[0].split())
    if d1 < 3 or d2 != 0 or n1 != n2 or n1 < d1 or badkeys:
        fail("vt_pystack_stack: defs %d then %d, frames %d/%d, undefined keys %d" % (d1, d2, n1, n2, badkeys))


def walk_here():
    raw = LIB.vtpt_walk(MAX).decode("utf-8")  # @walk_inner
    head, _, rest = raw.partition("\n")
    w, inplace, n = (int(x.split("=")[1]) for x in head.split())
    return w, inplace, parse(("n=%d\n" % n + rest).encode("utf-8")), E()


def test_walks():
    # The per-thread memo of walks: a walk that reads as a recent one is
    # that walk (its id, its frames in place); another outer line, or the
    # same line at another depth, is a walk of its own, with its own frames.
    got = []
    for _ in range(3):
        got.append(walk_here())  # @walk_loop
    other = walk_here()  # @walk_other
    deeper = (lambda: walk_here())()  # @walk_deeper
    for case, (w, inplace, frames, exp) in zip(("loop0", "loop1", "loop2", "other", "deeper"), got + [other, deeper]):
        triples = [f[:3] for f in frames]
        if triples != [(THIS, "walk_here", LINES["walk_inner"])] + exp[1:]:  # exp[0]: walk_here at its return
            fail("walk %s: frames %s, want %s" % (case, triples, exp))
    ids = [g[0] for g in got] + [other[0], deeper[0]]
    if not all(ids) or ids[1] != ids[0] or ids[2] != ids[0] or len(set(ids[2:])) != 3:
        fail("walk ids %s: want one id for the loop, another for each other line" % ids)
    if [g[1] for g in got] != [0, 1, 1]:
        fail("walks in place %s, want [0, 1, 1]" % [g[1] for g in got])
    if got[1][2] != got[0][2]:
        fail("a replayed walk differs: %s / %s" % (got[1][2], got[0][2]))
    # 24 callers of one innermost frame, in turn, twice: each keeps its own
    # walk (the memo is found by the whole chain, not the innermost frame)
    ns = {"walk_here": walk_here}
    exec(compile("".join("def s%d():\n    return walk_here()\n" % i for i in range(24)), "<walk-sites>", "exec"), ns)
    rounds = [[ns["s%d" % i]() for i in range(24)] for _ in range(2)]
    for i, (a, b) in enumerate(zip(*rounds)):
        if a[2] != b[2] or a[2][1][:3] != ("<walk-sites>", "s%d" % i, 2 * i + 2):
            fail("walk site %d: %s then %s" % (i, a[2][:2], b[2][:2]))
    kept = sum(b[1] for b in rounds[1])
    print("walk memo: %d of 24 sites in turn kept their walk" % kept)
    # (hashed sets: an unlucky few may share a set with four others; a
    # fully associative LRU memo smaller than 24 would keep none)
    if kept < 12:
        fail("walks kept for 24 sites in turn: %d, want at least half" % kept)


def test_code_recycle():
    """Functions made, called and freed in turn, each with a name of its own
    and the same size: their code objects often take the address of one
    freed before (then a memo that named code by address alone would replay
    the old name).  Every capture must name the function that runs."""
    ns = {"walk_here": walk_here}
    seen, reused, freed, walks = 0, 0, set(), set()
    gc.collect()
    for i in range(40):
        name = "r%02d" % i
        exec(compile("def %s():\n    return walk_here()\n" % name, "<recycle>", "exec"), ns)
        addr = id(ns[name].__code__)
        w, _, frames, _ = ns[name]()
        got = frames[:2]  # the frames only: nothing that keeps the code alive
        del frames
        if w in walks:  # the frames' keys (and so the trace's names) would be another function's
            fail("recycled code %s: the walk of an earlier function replayed (walk %d)" % (name, w))
        walks.add(w)
        reused += addr in freed
        freed.add(addr)
        seen += 1
        if got[1][:3] != ("<recycle>", name, 2):
            fail("recycled code %s: frames %s" % (name, got))
        del ns[name]
        gc.collect()  # frames of E() that referenced it sit in cycles
    print("code recycling: %d functions, %d at the address of one freed before (code watcher %s)"
          % (seen, reused, "on" if LIB.vtpt_code_watch() else "off"))


def test_late_validation():
    """init where there is no Python frame: the first capture checks."""
    LIB.vtpt_reset.argtypes = [ctypes.c_char_p, ctypes.c_long]
    LIB.vtpt_init_in_new_thread.argtypes = [ctypes.c_char_p, ctypes.c_int]
    why = ctypes.create_string_buffer(200)
    assert LIB.vtpt_reset(None, 0) == 0
    rc = LIB.vtpt_init_in_new_thread(why, 200)
    if rc != 0:
        fail("init on a thread without Python: %d %s" % (rc, why.value.decode()))
        return
    check("late: plain", f_plain(), q("f_plain"), "plain")
    check("late: gen", next(gen()), q("gen"), "gen")
    results = [False]
    t = threading.Thread(target=thread_main, args=(results, 0))
    t.start()
    t.join()
    if not results[0]:
        fail("late: thread cases")


def test_traced():
    """sys.settrace active (3.12+: bytecode instrumented by sys.monitoring);
    includes a late layout check, which reads the RESUME opcodes."""
    def tracer(frame, event, arg):
        return tracer

    sys.settrace(tracer)
    try:
        check("traced: plain", f_plain(), q("f_plain"), "plain")
        check("traced: method", K().meth(), q("K.meth"), "method")
        check("traced: gen", next(gen()), q("gen"), "gen")
        why = ctypes.create_string_buffer(200)
        assert LIB.vtpt_reset(None, 0) == 0
        rc = LIB.vtpt_init_in_new_thread(why, 200)
        if rc != 0:
            fail("traced: init %d %s" % (rc, why.value.decode()))
        check("traced late: closure", f_closure(), q("f_closure.<locals>.inner", "inner"), "closure")
        check("traced late: plain", f_plain(), q("f_plain"), "plain")
    finally:
        sys.settrace(None)


def main():
    why = ctypes.create_string_buffer(200)
    if INIT_GIL:  # the same library, called with the GIL held
        gil = ctypes.PyDLL(sys.argv[1])
        gil.vtpt_init.argtypes = [ctypes.c_char_p, ctypes.c_int]
        rc = gil.vtpt_init(why, 200)
    else:
        rc = LIB.vtpt_init(why, 200)
    ver = LIB.vtpt_version().decode()
    print("Python %s: vt_pystack_init -> %d %s (detected %s)" % (sys.version.split()[0], rc, why.value.decode(), ver))
    if rc != 0:
        print("FAIL: init")
        return 1
    if ver != "%d.%d.%d" % sys.version_info[:3] or (WANT_VERSION and ver != WANT_VERSION):
        fail("version %s, running %s, wanted %s" % (ver, sys.version.split()[0], WANT_VERSION))
    if LIB.vtpt_code_watch() != (INIT_GIL and V >= (3, 12)):
        fail("code watcher %d, want %d" % (LIB.vtpt_code_watch(), INIT_GIL and V >= (3, 12)))
    run_cases()
    test_recursion()
    test_threads()
    stats = test_concurrent()
    test_foreign_thread()
    kinds = merged_outer()
    merged_noeval_check()
    test_stack_twice()
    test_walks()
    test_code_recycle()
    test_late_validation()
    test_traced()
    ns = LIB.vtpt_bench(200000, MAX)
    depth = len(E())
    print("merged stack kinds (innermost first): %s" % kinds)
    print("mutator thread: %d captures checked" % stats["captures"])
    print("capture of %d frames: %.0f ns" % (depth + 1, ns))
    if failures:
        print("FAILED: %d problem(s)" % len(failures))
        return 1
    print("PASS: Python %s" % sys.version.split()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
