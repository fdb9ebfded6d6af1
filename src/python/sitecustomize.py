"""vramtrace's sitecustomize (put first on PYTHONPATH by `vramtrace record`):
runs the program's own sitecustomize, if any, then registers the holder
walk at exit (vramtrace_holders) and CuPy's memory hook for when the
program imports cupy (vramtrace_cupy).  usercustomize is not shadowed."""
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))


def _chain():
    import importlib.machinery
    import importlib.util
    paths = [p for p in sys.path if os.path.abspath(p or ".") != _here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", paths)
    if spec is None or spec.origin is None or os.path.dirname(os.path.abspath(spec.origin)) == _here:
        return
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = mod  # theirs is the one the program sees
    spec.loader.exec_module(mod)


try:
    _chain()
except Exception:  # as Python's site does for a failing sitecustomize: say it, go on
    import traceback
    sys.stderr.write("Error in sitecustomize (the program's own, run by vramtrace); traceback follows\n")
    traceback.print_exc()

try:
    import vramtrace_holders
    vramtrace_holders.install()
except Exception:
    pass

try:
    import vramtrace_cupy
    vramtrace_cupy.install()
except Exception:
    pass
