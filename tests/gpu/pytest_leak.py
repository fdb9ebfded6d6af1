"""tests/gpu/pytest_leak.py - the pytest plugin on the GPU
(tests/gpu/check_pytest.sh runs it under `vramtrace record -- python3 -m
pytest --vramtrace --vramtrace-fail-on-leak 0`): a clean test (the first:
CUDA and the library start inside it), a test that keeps a tensor in a
module-level list (the only one that must fail, naming the line marked
VT_LEAK_LINE), a test whose freed tensor stays in the caching
allocator's cache (reserved, not a leak) and a clean test after them."""
import torch

_kept = []


def test_clean():
    x = torch.ones(1024, 1024, device="cuda")
    y = x * 2 + 1
    assert float(y[0, 0]) == 3.0


def test_leaks():
    _kept.append(torch.ones(1 << 20, device="cuda"))  # VT_LEAK_LINE


def test_caches():
    big = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    big.fill_(1)
    del big  # back to the allocator's cache: reserved, not a leak
    assert torch.cuda.memory_reserved() >= 64 << 20


def test_after():
    z = torch.zeros(4096, device="cuda")
    assert float(z.sum()) == 0.0
