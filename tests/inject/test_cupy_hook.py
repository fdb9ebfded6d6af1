"""test_cupy_hook.py SRC_PYTHON_DIR FAKE_LIB - CuPy's memory hook
(src/python/vramtrace_cupy.py) without CuPy: a minimal fake `cupy` package
(cupy.cuda.MemoryHook with CuPy's per-thread hook table, a pool that calls
malloc_postprocess / free_postprocess as CuPy's SingleDeviceMemoryPool
does) and a fake library with the real entry points' C signatures
(fake_hook_lib.c), named by CUDA_INJECTION64_PATH as `record` sets it.
Each case runs a program under the sitecustomize that `vramtrace record`
puts first on PYTHONPATH: cupy is not imported before the program does;
the hook attaches once ("cupy") and records each block handed out (address,
device, rounded size) and taken back, in the importing thread and in a
thread started later; a failed malloc (mem_ptr 0) is not recorded; a
library that is not loaded yet, or not initialised, loses those events
only; VRAMTRACE_CUPY_HOOK=0 installs nothing."""
import os
import subprocess
import sys
import tempfile
import textwrap

src, fake = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
fails = 0


def check(name, ok, detail=""):
    global fails
    print(("ok   " if ok else "FAIL ") + name + ("" if ok or not detail else ": " + detail))
    fails += not ok


FAKE_CUPY_INIT = "from . import cuda\n"
FAKE_CUPY_CUDA = textwrap.dedent('''
    """cupy.cuda as far as the hook uses it: MemoryHook (per-thread table, as
    cupy/cuda/memory_hook.pyx) and a pool calling the hooks as CuPy's does."""
    import threading
    _tl = threading.local()

    def get_memory_hooks():
        try:
            return _tl.hooks
        except AttributeError:
            _tl.hooks = {}
            return _tl.hooks

    class MemoryHook(object):
        name = None

        def __enter__(self):
            hooks = get_memory_hooks()
            if self.name in hooks:
                raise RuntimeError("MemoryHook %s already exists" % self.name)
            hooks[self.name] = self
            return self

        def __exit__(self, *a):
            del get_memory_hooks()[self.name]

        def alloc_preprocess(self, **kw): pass
        def alloc_postprocess(self, **kw): pass
        def malloc_preprocess(self, **kw): pass
        def malloc_postprocess(self, **kw): pass
        def free_preprocess(self, **kw): pass
        def free_postprocess(self, **kw): pass

    class MemoryPool(object):
        def __init__(self, device_id=0):
            self.dev, self.next = device_id, 0x7f0000000000

        def malloc(self, size, fail=False):
            rounded = (size + 511) // 512 * 512
            ptr = 0 if fail else self.next
            if not fail:
                self.next += rounded
            for h in list(get_memory_hooks().values()):
                h.malloc_postprocess(device_id=self.dev, size=size, mem_size=rounded, mem_ptr=ptr, pmem_id=1)
            return ptr

        def free(self, ptr, size):
            for h in list(get_memory_hooks().values()):
                h.free_postprocess(device_id=self.dev, mem_size=size, mem_ptr=ptr, pmem_id=1)
''')

PROGRAM = textwrap.dedent('''
    import ctypes, json, os, sys, threading
    out = {"cupy_before": "cupy" in sys.modules}
    mode = sys.argv[1]
    lib = None
    def load():
        global lib
        lib = ctypes.CDLL(os.environ["FAKE_LIB"], mode=os.RTLD_NOW)  # what CUDA's loading of the library does
    if mode != "late":
        load()
    if mode == "refuse":
        ctypes.c_int.in_dll(lib, "fake_refuse").value = 1
    import cupy
    pool = cupy.cuda.MemoryPool(device_id=1)
    a = pool.malloc(1000)            # before the library answers, in "late" and "refuse"
    if mode == "late":
        load()
    if mode == "refuse":
        ctypes.c_int.in_dll(lib, "fake_refuse").value = 0
    b = pool.malloc(4096)
    pool.malloc(64, fail=True)       # out of memory: mem_ptr 0
    pool.free(b, 4096)
    got = []
    t = threading.Thread(target=lambda: got.append(pool.malloc(100)))
    t.start(); t.join()
    out["hooks"] = sorted(cupy.cuda.get_memory_hooks())
    n = ctypes.c_uint32.in_dll(lib, "fake_n").value
    arr = lambda name, ct: (ct * 256).in_dll(lib, name)
    out["events"] = [[arr("fake_action", ctypes.c_uint32)[i], arr("fake_dev", ctypes.c_int32)[i],
                      arr("fake_addr", ctypes.c_uint64)[i], arr("fake_size", ctypes.c_uint64)[i]] for i in range(n)]
    out["attached"] = ctypes.c_int.in_dll(lib, "fake_attached").value
    out["pool"] = ctypes.c_char_p(ctypes.addressof(ctypes.c_char.in_dll(lib, "fake_pool"))).value.decode()
    out["a"], out["b"], out["t"] = a, b, got[0]
    print(json.dumps(out))
''')


def run(tmp, mode, env_extra=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = src + os.pathsep + tmp
    env["CUDA_INJECTION64_PATH"] = fake
    env["FAKE_LIB"] = fake
    env.pop("VRAMTRACE_CUPY_HOOK", None)
    env.update(env_extra or {})
    r = subprocess.run([sys.executable, os.path.join(tmp, "prog.py"), mode], env=env, capture_output=True, text=True)
    if r.returncode:
        return None, r.stderr
    import json
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


with tempfile.TemporaryDirectory() as tmp:
    os.makedirs(os.path.join(tmp, "cupy", "cuda"))
    with open(os.path.join(tmp, "cupy", "__init__.py"), "w") as f:
        f.write(FAKE_CUPY_INIT)
    with open(os.path.join(tmp, "cupy", "cuda", "__init__.py"), "w") as f:
        f.write(FAKE_CUPY_CUDA)
    with open(os.path.join(tmp, "prog.py"), "w") as f:
        f.write(PROGRAM)

    o, err = run(tmp, "normal")
    check("normal: program ran", o is not None, err)
    if o:
        B, T0 = o["b"], o["t"]
        check("cupy not imported by the sitecustomize", o["cupy_before"] is False)
        check("hook entered in the importing thread", o["hooks"] == ["vramtrace"], str(o["hooks"]))
        check("attached once, for cupy", o["attached"] == 1 and o["pool"] == "cupy", "%s %s" % (o["attached"], o["pool"]))
        want = [[0, 1, o["a"], 1024], [0, 1, B, 4096], [1, 1, B, 0], [0, 1, T0, 512]]
        check("blocks handed out and taken back (rounded sizes), the later thread's too, no failed malloc",
              o["events"] == want, "%s != %s" % (o["events"], want))

    o, err = run(tmp, "late")
    check("late: program ran", o is not None, err)
    if o:
        want = [[0, 1, o["b"], 4096], [1, 1, o["b"], 0], [0, 1, o["t"], 512]]
        check("library not loaded yet: that block only is lost", o["events"] == want, "%s" % o["events"])

    o, err = run(tmp, "refuse")
    check("refuse: program ran", o is not None, err)
    if o:
        check("library not initialised yet: that block only is lost, attached once after",
              o["events"][:1] == [[0, 1, o["b"], 4096]] and o["attached"] == 1, "%s" % o)

    o, err = run(tmp, "normal", {"VRAMTRACE_CUPY_HOOK": "0"})
    check("VRAMTRACE_CUPY_HOOK=0: program ran", o is not None, err)
    if o:
        check("VRAMTRACE_CUPY_HOOK=0: no hook, no event", o["hooks"] == [] and o["events"] == [] and o["attached"] == 0,
              "%s" % o)

print("FAILED: %d" % fails if fails else "all passed")
sys.exit(1 if fails else 0)
