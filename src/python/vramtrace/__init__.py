"""vramtrace: what holds your GPU memory.

The wheel's package: the `vramtrace` command (a native binary, bin/), the
injection library it runs programs with (lib/libvramtrace.so, which finds
the program's own CUPTI), and the Python helpers that `vramtrace record`
puts on a traced program's PYTHONPATH (python/: the holder walk and CuPy's
memory hook; the binary carries the same files and writes them to its
cache).  `vramtrace ARGS` (the console script) and `python -m vramtrace
ARGS` both run the binary in place of this interpreter: exit status,
signals and the terminal are the binary's.  Layout: docs/ARCHITECTURE.md,
"The wheel".
"""
import os
import sys

try:
    from ._version import __version__
except ImportError:  # a source checkout, not an installed wheel
    __version__ = "0+unknown"

_HERE = os.path.dirname(os.path.abspath(__file__))


def binary():
    """Path of the vramtrace command inside the package."""
    return os.path.join(_HERE, "bin", "vramtrace")


def library():
    """Path of libvramtrace.so, for CUDA_INJECTION64_PATH."""
    return os.path.join(_HERE, "lib", "libvramtrace.so")


def hooks_dir():
    """Directory of the Python helpers (sitecustomize.py and the modules it loads)."""
    return os.path.join(_HERE, "python")


def main(argv=None):
    """Run the vramtrace binary with argv (default: this process's arguments)."""
    args = sys.argv[1:] if argv is None else list(argv)
    exe = binary()
    if not os.access(exe, os.X_OK):
        sys.stderr.write("vramtrace: %s is missing or not executable; reinstall the wheel\n" % exe)
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(exe, ["vramtrace"] + args)
    return 1  # not reached
