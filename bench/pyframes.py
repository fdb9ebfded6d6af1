"""pyframes.py - a Python stack of an exact depth for the stack-capture
benchmarks (bench/pystack_bench.py, bench/capture_bench.py): plain calls,
methods, a generator and closures, as a module's forward reaches an
allocation."""
import sys


class _Walker:
    def __init__(self, inner):
        self.inner = inner

    def step(self, left):
        """`left` more frames, this one and inner()'s included."""
        if left <= 2:
            return self.inner()
        if left % 5 == 0:
            return next(self.gen(left - 1))
        if left % 7 == 0 and left > 3:
            def closure():
                return self.step(left - 2)
            return closure()
        return self.step(left - 1)

    def gen(self, left):
        yield self.step(left - 1)


def call_at(frames, inner):
    """inner() with `frames` Python frames on the stack, its own included;
    returns what it returns."""
    f, base = sys._getframe(0), 0  # this frame included
    while f is not None:
        base, f = base + 1, f.f_back
    return _Walker(inner).step(frames - base)
