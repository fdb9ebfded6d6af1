"""vramtrace_cupy - CuPy's memory-pool blocks as tensor events (issue 33).

Loaded into a traced Python program by `vramtrace record` (through its
sitecustomize.py).  It never imports cupy: a meta path finder waits for
the program's own `import cupy`, and when that module has run, enters a
cupy.cuda.MemoryHook (CuPy's public hook API) in that thread and in every
thread started after it (CuPy's hooks are per thread: threading's
Thread._bootstrap_inner enters it too).

CuPy's MemoryPool gets chunks from cudaMalloc, which the trace sees, and
hands out blocks inside them, which it does not.  The hook reports each
block the pool hands out (malloc_postprocess: its address and rounded
size) and takes back (free_postprocess) to libvramtrace.so, through two
functions the library exports (src/inject/vt_inject_hook.c):

    int vt_hook_attach(const char *pool)           once, "cupy"
    int vt_hook_event(uint32 action, int32 device, uint64 addr, uint64 size)
                                                   0 alloc, 1 free

The library is the one CUDA loaded from CUDA_INJECTION64_PATH (opened with
RTLD_NOLOAD: never loaded here); it captures the thread's native and
Python stacks itself, so the block is named at the program's line.  The
first block comes after the pool's first chunk, i.e. after CUDA (and the
library) initialised; until the library answers, a few tries, then the
hook stays quiet.  The report then counts chunks as reserved and blocks as
allocated, as for PyTorch's tensors.  VRAMTRACE_CUPY_HOOK=0 turns it off.
Nothing here raises into the program or into CuPy.
"""
import os
import sys

HOOK_NAME = "vramtrace"
MAX_TRIES = 8  # looks for the library before giving up (each a dlopen)

_state = {"fn": None, "tries": 0, "hook_cls": None}


def _entry():
    """vt_hook_event of the loaded library, or None (not there yet, or given up)."""
    fn = _state["fn"]
    if fn is not None or _state["tries"] >= MAX_TRIES:
        return fn
    _state["tries"] += 1
    try:
        import ctypes
        path = os.environ.get("CUDA_INJECTION64_PATH")
        if not path:
            _state["tries"] = MAX_TRIES
            return None
        lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 4) | getattr(os, "RTLD_NOW", 2))
        attach, event = lib.vt_hook_attach, lib.vt_hook_event
        attach.argtypes = [ctypes.c_char_p]
        attach.restype = ctypes.c_int
        event.argtypes = [ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint64, ctypes.c_uint64]
        event.restype = ctypes.c_int
        rc = attach(b"cupy")
        if rc == -2:  # a library that does not know the pool: no use trying again
            _state["tries"] = MAX_TRIES
        if rc != 0:
            return None
        _state["fn"] = event
        return event
    except Exception:  # not loaded (OSError), an older library without the symbols
        return None


def _event(action, kw, size):
    ptr = kw.get("mem_ptr")
    if not ptr:  # a failed malloc reports mem_ptr 0
        return
    fn = _entry()
    if fn is None:
        return
    try:
        dev = kw.get("device_id", 0)
        fn(action, dev if isinstance(dev, int) and 0 <= dev < (1 << 31) else 0, ptr, size)
    except Exception:
        pass


def _hook_class(cupy):
    base = cupy.cuda.MemoryHook

    class VramtraceHook(base):
        """Each block of CuPy's MemoryPool, handed out and taken back."""
        name = HOOK_NAME

        def malloc_postprocess(self, **kw):
            try:
                _event(0, kw, kw.get("mem_size") or kw.get("size") or 0)
            except Exception:
                pass

        def free_postprocess(self, **kw):
            try:
                _event(1, kw, 0)
            except Exception:
                pass
    return VramtraceHook


def _enter():
    """Enter the hook in the calling thread (once per thread)."""
    cls = _state["hook_cls"]
    if cls is None:
        return
    try:
        cls().__enter__()
    except Exception:  # already there (RuntimeError), or CuPy changed
        pass


def _wrap_threads():
    import threading
    run = getattr(threading.Thread, "_bootstrap_inner", None)
    if run is None or getattr(run, "_vramtrace", False):
        return

    def _bootstrap_inner(self):
        _enter()
        return run(self)
    _bootstrap_inner._vramtrace = True
    threading.Thread._bootstrap_inner = _bootstrap_inner


def on_cupy(cupy):
    """cupy has been imported: install the hook (idempotent)."""
    if _state["hook_cls"] is not None:
        return
    try:
        _state["hook_cls"] = _hook_class(cupy)
    except Exception:
        return
    _enter()
    try:
        _wrap_threads()
    except Exception:
        pass


def install():
    """Wait for the program's `import cupy` (or hook it now if it is in)."""
    if os.environ.get("VRAMTRACE_CUPY_HOOK", "1") == "0":
        return
    if "cupy" in sys.modules:
        on_cupy(sys.modules["cupy"])
        return
    # the holder walk's meta path finder: one way to wait for an import
    from vramtrace_holders import _ImportHook
    if not any(isinstance(f, _ImportHook) and "cupy" in f.after for f in sys.meta_path):
        sys.meta_path.insert(0, _ImportHook({"cupy": on_cupy}))
