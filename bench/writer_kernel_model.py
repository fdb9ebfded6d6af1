#!/usr/bin/env python3
"""writer_kernel_model.py - bytes per kernel event of alternative encodings.

Generates the kernel stream of bench_writer.c's training loop (60 launch
signatures, 400 kernels per step, 3-20 us gaps, durations jittered) and
encodes it as the format does today and as a few alternatives, then
compresses each with the zstd command line.  Used to size a format change
for the <= 6 B/kernel budget (BENCHMARKS.md, ## writer).  The "current"
line matches what vt_writer writes (8.27 here vs 8.25 B measured).

    python3 bench/writer_kernel_model.py [JITTER [QUANTUM_NS [STEPS]]]
"""
import random
import subprocess
import sys

random.seed(1)
JIT = float(sys.argv[1]) if len(sys.argv) > 1 else 0.01
QUANT = int(sys.argv[2]) if len(sys.argv) > 2 else 1
STEPS = int(sys.argv[3]) if len(sys.argv) > 3 else 300
NSIG, KPS = 60, 400


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def zz(v):
    return (v << 1) if v >= 0 else ((-v) << 1) - 1


def fld(n, v):
    return varint(n << 3) + varint(v) if v else b""


def sub(n, b):
    return varint((n << 3) | 2) + varint(len(b)) + b


def packed(n, vals):
    return sub(n, b"".join(varint(v) for v in vals))


sigs = [random.randint(2000, 400000) for _ in range(NSIG)]
seq = [i if i < NSIG else random.randrange(NSIG) for i in range(KPS)]
ev = []
t, corr = 10**9, 1000
for _ in range(STEPS):
    for k in seq:
        d = max(1, int(sigs[k] * (1 + JIT * random.gauss(0, 1))))
        t += random.randint(3000, 20000)
        st, d = t // QUANT * QUANT, d // QUANT * QUANT
        t += d
        corr += random.randint(1, 3)
        ev.append((k + 1, st, d, corr))


def per_record(gap, ts_last):
    out, ps, pe, pc = bytearray(), 10**9, 10**9, 0
    for (l, st, d, c) in ev:
        ts = st - (pe if gap else ps)
        ps, pe = st, st + d
        kern = fld(1, l) + fld(2, d) + fld(3, zz(c - pc))
        pc = c
        rec = sub(9, kern) + fld(1, zz(ts)) if ts_last else fld(1, zz(ts)) + sub(9, kern)
        out += b"\x0a" + varint(len(rec)) + rec
    return bytes(out)


def columnar(gap, batch):
    out, ps, pe, pc = bytearray(), 10**9, 10**9, 0
    for i in range(0, len(ev), batch):
        L, G, D, C = [], [], [], []
        for (l, st, d, c) in ev[i:i + batch]:
            L.append(l)
            G.append(zz(st - (pe if gap else ps)))
            D.append(d)
            C.append(zz(c - pc))
            ps, pe, pc = st, st + d, c
        rec = sub(28, packed(1, L) + packed(2, G) + packed(3, D) + packed(4, C))
        out += b"\x0a" + varint(len(rec)) + rec
    return bytes(out)


variants = [
    ("current: Record{ts_delta=start-prev start, kernel{...}}", per_record(False, False)),
    ("ts_delta = start - previous kernel end", per_record(True, False)),
    ("current, ts_delta written after the body", per_record(False, True)),
    ("KernelBatch of 256, packed columns, start-prev start", columnar(False, 256)),
    ("KernelBatch of 256, packed columns, start-prev end", columnar(True, 256)),
]
print("jitter %.1f%%, timestamps quantized to %d ns, %d kernels" % (JIT * 100, QUANT, len(ev)))
for name, raw in variants:
    sizes = []
    for lvl in (3, 9, 19):
        c = subprocess.run(["zstd", "-q", "-c", "-%d" % lvl], input=raw, capture_output=True).stdout
        sizes.append(len(c) / len(ev))
    print("%-56s raw %5.2f  zstd-3 %5.2f  -9 %5.2f  -19 %5.2f B/kernel" % (name, len(raw) / len(ev), *sizes))
