#!/usr/bin/env python3
"""bench/symcache.py - what symbolization costs per library, cold and with
the build-id symbol cache warm (issue 35; BENCHMARKS.md: symbols).

For each large shared object found on the machine (the CUDA toolkit's,
torch's and the nvidia wheels' where installed, LLVM, libpython), a trace
with N native frames spread evenly over its .text (tests/analyze/
gen_symcache.c) is symbolized by `vramtrace symbolize`:
  cold  an empty cache directory: the library is opened with libdwfl
  warm  the same again: every address from the cache, the library unread
for N in --n, --rounds times each (the median is printed, cold rounds each
with a fresh cache).  Then all the libraries in one trace (what `record`
does after a program that uses all of them: the modules in parallel), cold
and warm, and the same through `vramtrace record --timings` (the command
just puts the trace in the output directory) for the steps after the
program.

    python3 bench/symcache.py [--build build] [--n 10,100,1000] [--rounds 3]
                              [--lib PATH]... [--markdown]

Needs the build's vramtrace and tests/vt_gen_symcache (cmake --build build
--target vramtrace vt_gen_symcache)."""
import argparse
import glob
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

STATS = re.compile(r"^(\d+) modules?, (\d+) read \(([\d.]+) MiB\); (\d+) address(?:es)?, (\d+) from the cache; "
                   r"([\d.]+) s resolving on (\d+) threads?", re.M)
TIMINGS = re.compile(r"timings: .*?program ([\d.]+) s .*summary ([\d.]+) s, symbolize ([\d.]+) s \((.*?)\); "
                     r"total after it ([\d.]+) s")


def readelf(args, path):
    return subprocess.run(["readelf"] + args + [path], capture_output=True, text=True).stdout


def lib_info(path):
    """build id, .text (address, size), has DWARF, symbols (.symtab or .dynsym)"""
    bid = None
    for line in readelf(["-n"], path).splitlines():
        if "Build ID" in line:
            bid = line.split()[-1]
    text, dwarf, nsym = None, False, 0
    for line in readelf(["-SW"], path).splitlines():
        f = line.replace("[ ", "[").split()
        if len(f) > 5 and f[1] == ".text":
            text = (int(f[3], 16), int(f[5], 16))
        if len(f) > 1 and f[1] == ".debug_info":
            dwarf = True
        if len(f) > 5 and f[1] in (".symtab", ".dynsym"):
            nsym = max(nsym, int(f[5], 16) // 24)
    return bid, text, dwarf, nsym


def find_libs():
    pats = ["/usr/local/cuda*/lib*/*.so*", "/usr/local/cuda*/targets/*/lib/*.so*",
            os.path.expanduser("~/.pyenv/versions/*/lib/python3*/site-packages/torch/lib/*.so*"),
            os.path.expanduser("~/.pyenv/versions/*/lib/python3*/site-packages/nvidia/*/lib/*.so*"),
            "/usr/lib/python3*/site-packages/torch/lib/*.so*", "/usr/lib/x86_64-linux-gnu/libLLVM-1*.so*",
            os.path.expanduser("~/.pyenv/versions/3.12*/lib/libpython3*.so*")]
    seen, out = set(), []
    for p in pats:
        for f in sorted(glob.glob(p)):
            r = os.path.realpath(f)
            big = os.path.getsize(r) >= 50 << 20 or "libpython" in r  # libpython: DWARF
            if r in seen or not os.path.isfile(r) or not big:
                continue
            seen.add(r)
            out.append(r)
    # the largest first; one libpython, one libLLVM
    out.sort(key=lambda f: -os.path.getsize(f))
    keep, kinds = [], set()
    for f in out:
        k = re.sub(r"[-.\d]+(so.*)?$", "", os.path.basename(f))
        if k in kinds:
            continue
        kinds.add(k)
        keep.append(f)
    return keep


def offsets(text, n, path):
    a, s = text
    with open(path, "w") as f:
        for k in range(n):
            f.write("%x\n" % (a + (s * (2 * k + 1)) // (2 * n)))


def run_sym(vt, trace, cache):
    env = dict(os.environ, VRAMTRACE_CACHE_DIR=cache)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run([vt, "symbolize", trace], capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    if p.returncode:
        sys.exit(f"symbolize failed: {p.stdout}{p.stderr}")
    m = STATS.search(p.stdout)
    return wall, cpu, int(m.group(2)), int(m.group(4)), int(m.group(5))


def cold_warm(vt, trace, rounds, tmp):
    colds, warms, ccpu, wcpu, naddr = [], [], [], [], 0
    for r in range(rounds):
        cache = os.path.join(tmp, "cache")
        shutil.rmtree(cache, ignore_errors=True)
        c = run_sym(vt, trace, cache)
        w = run_sym(vt, trace, cache)
        if w[2] != 0:
            sys.exit(f"warm run read {w[2]} modules")
        colds.append(c[0])
        warms.append(w[0])
        ccpu.append(c[1])
        wcpu.append(w[1])
        naddr = c[3]
    size = sum(os.path.getsize(f) for f in glob.glob(os.path.join(tmp, "cache", "symbols", "*.cache")))
    med = statistics.median
    return (med(colds), med(ccpu)), (med(warms), med(wcpu)), naddr, size


def run_record(vt, trace, tmp, cache):
    out = os.path.join(tmp, "rec")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    env = dict(os.environ, VRAMTRACE_CACHE_DIR=cache, VRAMTRACE_LIB=vt)  # any file: cp loads no CUDA
    p = subprocess.run([vt, "record", "--timings", "-o", out, "--", "cp", trace,
                        os.path.join(out, "vramtrace.bench.host.0.1.zst")], capture_output=True, text=True, env=env)
    m = TIMINGS.search(p.stderr)
    if not m:
        sys.exit(f"record said: {p.stderr}")
    return float(m.group(2)), float(m.group(3)), m.group(4)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--n", default="10,100,1000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--lib", action="append")
    a = ap.parse_args()
    vt = os.path.abspath(os.path.join(a.build, "vramtrace"))
    gen = os.path.abspath(os.path.join(a.build, "tests", "vt_gen_symcache"))
    libs = a.lib or find_libs()
    ns = [int(x) for x in a.n.split(",")]
    tmp = tempfile.mkdtemp(prefix="vt-symcache-bench-")
    print(f"# {time.strftime('%Y-%m-%d')}, {os.cpu_count()} processors, median of {a.rounds} rounds; "
          f"seconds are the whole `vramtrace symbolize` process, wall (CPU)")
    print("| library | size | DWARF | symbols | frames | addresses | cold | warm | cache file |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    allargs = []
    try:
        for lib in libs:
            bid, text, dwarf, nsym = lib_info(lib)
            if not bid or not text:
                continue
            for n in ns:
                offsets(text, n, os.path.join(tmp, "o"))
                trace = os.path.join(tmp, "t.zst")
                subprocess.run([gen, trace, lib, bid, os.path.join(tmp, "o")], check=True)
                cold, warm, naddr, size = cold_warm(vt, trace, a.rounds, tmp)
                print(f"| {os.path.basename(lib)} | {os.path.getsize(lib) / (1 << 20):.0f} MiB | "
                      f"{'yes' if dwarf else 'no'} | {nsym} | {n} | {naddr} | {cold[0]:.3f} s ({cold[1]:.3f}) | "
                      f"{warm[0]:.3f} s ({warm[1]:.3f}) | "
                      f"{size / 1024:.0f} KiB |", flush=True)
            offsets(text, max(ns), os.path.join(tmp, f"o{len(allargs)}"))
            allargs.append((lib, bid, os.path.join(tmp, f"o{len(allargs)}")))
        trace = os.path.join(tmp, "all.zst")
        subprocess.run([gen, trace] + [x for t in allargs for x in t], check=True)
        cold, warm, naddr, size = cold_warm(vt, trace, a.rounds, tmp)
        print(f"| all {len(allargs)} in one trace ({os.cpu_count()} threads) | | | | {max(ns)} each | {naddr} | "
              f"{cold[0]:.3f} s ({cold[1]:.3f}) | {warm[0]:.3f} s ({warm[1]:.3f}) | {size / 1024:.0f} KiB |")
        cache = os.path.join(tmp, "rcache")
        shutil.rmtree(cache, ignore_errors=True)
        for label in ("cold", "warm"):
            summary, sym, what, = run_record(vt, trace, tmp, cache)
            print(f"\n`vramtrace record --timings`, {label}: summary {summary:.3f} s, symbolize {sym:.3f} s ({what})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
