"""run.py - the ground-truth matrix of issue 33 ("Proof: ground truth, not
our own fixtures"): generate the cells, record each one's run of
tests/gpu/matrix/prog.py under `vramtrace record` (JOBS at a time), read
`vramtrace report --json`, and compare the verdict with what torch.cuda
said in the program.  Run on the GPU machine by tests/gpu/check_matrix.sh.

  run.py --vt build/vramtrace [--out DIR] [--budget-s 450] [--jobs 8]
  run.py --dry-run              the cells, their arguments checked, the
                                estimated wall time; no torch, no GPU
  run.py --replay DIR --vt VT   the comparison alone, on recorded cells
                                (DIR/NAME/{truth.json,*.zst}: the fixtures)

A cell is allocator x pattern x step length x steps x leak per step x
release time x NVTX.  The factors: step about {0.2, 1, 10, 100} ms x leak
{512 B, 64 KiB, 1 MiB, 16 MiB, none} x steps {8, 32, 300, 3000} x release
{exit, loop-end}, in full on the default allocator with the list pattern
(loops over 15 s and leaks over 8 GiB left out); sampled on expandable
segments and backend:cudaMallocAsync; the other leaky patterns (graph,
dict) and the clean ones (bounded deque, temporaries, no zero_grad,
gradient accumulation, no_grad validation, torch.compile) beside them;
some without NVTX; the fixture cells recorded 3 times.

What each cell must get: with a leaky pattern that kept at least
max(1 MiB, 1 % of the peak) by memory_allocated(), the verdict "leak"
("miss" if no_leak, "weak" if cannot_tell); under that, any answer
("under", recorded); a clean pattern must not get "leak" ("false_leak").
The repeated cells must get the same verdict each time.

Launch order: fixtures and torch.compile first, then the default grid's
leaks of at least 1 MiB, the patterns and the no-NVTX cells, the repeats,
the other allocators, the leaks under 1 MiB; the longest first within a
tier.  --budget-s: no cell starts unless its estimate (scaled by what the
finished cells took) ends within the budget; cells still running 45 s
after it are stopped.  The table is written whatever ran.

Output in --out (default $OUT): matrix.json (every cell), matrix.md (the
tables), matrix-fixtures.tar.gz (the fixture cells' traces, truth and
holders: at most 12 cells, 8 MiB), matrix-logs.tar.gz (each cell's
output, stderr and report).  The recordings stay in --work.  The summary
table is printed last, then one line "check_matrix: ...".  Exit 0 when no
cell failed, else 1."""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import prog  # noqa: E402  (no torch at import)

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
STEP_MS = (0.2, 1, 10, 100)
LEAKS = (512, 64 * KiB, MiB, 16 * MiB)
STEPS = (8, 32, 300, 3000)
RELEASES = ("exit", "loop-end")
ALLOCS = {"default": None, "expandable": "expandable_segments:True", "async": "backend:cudaMallocAsync"}
ABBR = {"default": "def", "expandable": "exp", "async": "asy"}
MAX_LOOP_S = 15.0  # a cell's loop at most this long (by the estimate)
MAX_KEPT = 8 * GiB  # a cell keeps at most this much
STARTUP_S = 8.0  # torch import, CUDA, the tracer, the holder walk, the report
COMPILE_S = 45.0  # torch.compile's first compile, cold
GRACE_S = 45.0  # running cells are stopped this long after the budget
THRESHOLD_MIN = MiB  # a leak must be found from max(1 MiB, 1 % of the peak)
FIXTURES_MAX, FIXTURES_BYTES = 12, 8 * MiB
FAILING = ("miss", "weak", "false_leak", "error", "timeout")


# ---------------------------------------------------------------- the cells

class Cell:
    def __init__(self, alloc, pattern, step_ms, steps, leak, release="exit", nvtx=True, tier=1):
        self.alloc, self.pattern, self.step_ms, self.steps = alloc, pattern, step_ms, steps
        self.leak, self.release, self.nvtx, self.tier = leak, release, nvtx, tier
        self.fixture = None  # rank among the fixtures (0 first), or None
        self.run = 0  # 0, then 1 and 2 for the repeats
        self.repeat = False  # recorded --repeats times

    @property
    def group(self):
        ms = f"{self.step_ms:g}"
        return (f"{ABBR[self.alloc]}-{self.pattern}-{ms}ms-{self.steps}x-{fmt_leak(self.leak)}-"
                f"{'exit' if self.release == 'exit' else 'end'}{'' if self.nvtx else '-nonvtx'}")

    @property
    def name(self):
        return self.group + (f".r{self.run}" if self.run else "")

    @property
    def light(self):
        return self.step_ms < 1 and self.pattern in ("list", "dict", "clean")

    def prog_args(self):
        a = ["--step-ms", f"{self.step_ms:g}", "--steps", str(self.steps), "--leak-bytes", str(self.leak),
             "--release", self.release, "--pattern", self.pattern]
        return a + ([] if self.nvtx else ["--no-nvtx"])

    def params(self):
        return {"alloc": self.alloc, "alloc_conf": ALLOCS[self.alloc], "pattern": self.pattern,
                "step_ms": self.step_ms, "steps": self.steps, "leak_bytes": self.leak, "release": self.release,
                "nvtx": self.nvtx}

    def est_loop_s(self):
        work_ms = 0.5 if self.light else 2.0  # traced, 8 processes sharing the GPU
        return self.steps * max(self.step_ms, work_ms) / 1000.0

    def est_s(self):
        return STARTUP_S + self.est_loop_s() + (COMPILE_S if self.pattern == "compile" else 0.0)

    def timeout_s(self):
        return min(300.0, 60.0 + 3.0 * self.est_s())


def fmt_leak(n):
    if n == 0:
        return "0"
    if n % MiB == 0:
        return f"{n // MiB}M"
    if n % KiB == 0:
        return f"{n // KiB}K"
    return f"{n}B"


def fmt_b(n):
    if n is None:
        return "-"
    a = abs(n)
    for unit, s in ((GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB")):
        if a >= unit:
            return f"{n / unit:.2f} {s}"
    return f"{n} B"


def generate(repeats=3):
    """Every cell, in launch order (deterministic)."""
    cells = {}

    def add(c, fixture=None, repeat=False):
        if c.est_loop_s() > MAX_LOOP_S or c.leak * c.steps > MAX_KEPT:
            return
        if c.pattern == "deque" and c.steps < 4 * prog.DEQUE_LEN:
            return
        old = cells.get(c.group)
        if old:
            old.tier = min(old.tier, c.tier)
            c = old
        else:
            cells[c.group] = c
        if fixture is not None:
            c.fixture, c.tier = fixture, 0
        c.repeat = c.repeat or repeat

    # the fixtures (CI replays them): small traces, few steps, small tensors
    fixtures = [
        Cell("default", "list", 0.2, 300, 64 * KiB),  # a fast loop's leak, released at exit (issue item 1)
        Cell("default", "list", 10, 8, MiB),  # an 8-step leak
        Cell("default", "graph", 1, 32, MiB),  # a 32-step leak through autograd graphs (item 2)
        Cell("default", "list", 1, 300, 64 * KiB, nvtx=False),  # steps from the kernels alone
        Cell("default", "list", 1, 32, MiB, release="loop-end"),  # freed before the last kernel
        Cell("async", "list", 1, 32, MiB),  # one driver allocation per tensor
        Cell("expandable", "list", 1, 32, 64 * KiB),
        Cell("default", "deque", 1, 32, 0),  # clean: bounded
        Cell("default", "temporaries", 1, 32, 0),  # clean: a new size each step
        Cell("default", "grad_accum", 1, 32, 0),  # clean: gradients come and go
    ]
    for i, c in enumerate(fixtures):
        add(c, fixture=i, repeat=True)
    add(Cell("default", "compile", 1, 300, 0, tier=0))
    # the full factor on the default allocator, the list pattern
    for ms in STEP_MS:
        for steps in STEPS:
            for leak in LEAKS:
                for rel in RELEASES:
                    add(Cell("default", "list", ms, steps, leak, rel, tier=1 if leak * steps >= MiB else 4))
            add(Cell("default", "clean", ms, steps, 0, tier=1))
    # the other leaky patterns, and the clean ones, on the default allocator
    for ms, steps, leak, rel in ((1, 32, MiB, "exit"), (0.2, 300, MiB, "exit"), (10, 300, 64 * KiB, "loop-end"),
                                 (100, 8, 16 * MiB, "exit"), (1, 3000, 64 * KiB, "exit")):
        add(Cell("default", "graph", ms, steps, leak, rel, tier=1))
    for ms, steps, leak, rel in ((0.2, 300, 64 * KiB, "exit"), (1, 3000, 512, "exit"), (10, 32, MiB, "loop-end"),
                                 (100, 8, 16 * MiB, "exit")):
        add(Cell("default", "dict", ms, steps, leak, rel, tier=1))
    for pat in ("deque", "temporaries", "no_zero_grad", "grad_accum", "no_grad_val"):
        for ms, steps in ((1, 300), (10, 32), (0.2, 3000)):
            add(Cell("default", pat, ms, steps, 0, tier=1))
    # without NVTX: the kernel-period step detector
    for ms, steps, leak, rel in ((0.2, 300, MiB, "exit"), (0.2, 3000, 64 * KiB, "exit"), (1, 32, MiB, "loop-end"),
                                 (10, 300, 64 * KiB, "loop-end"), (100, 32, MiB, "exit"), (10, 8, 16 * MiB, "exit")):
        add(Cell("default", "list", ms, steps, leak, rel, nvtx=False, tier=1))
    add(Cell("default", "graph", 1, 32, MiB, nvtx=False, tier=1))
    for pat, ms, steps in (("clean", 0.2, 3000), ("clean", 1, 300), ("temporaries", 1, 300),
                           ("grad_accum", 10, 32), ("no_grad_val", 1, 300)):
        add(Cell("default", pat, ms, steps, 0, nvtx=False, tier=1))
    # a sample on expandable segments and cudaMallocAsync
    for alloc in ("expandable", "async"):
        for ms, steps in ((0.2, 300), (1, 32), (1, 3000), (10, 8), (10, 300), (100, 32)):
            add(Cell(alloc, "list", ms, steps, 64 * KiB, "exit", tier=3))
            add(Cell(alloc, "list", ms, steps, MiB, "loop-end", tier=3))
            add(Cell(alloc, "list", ms, steps, 16 * MiB, "exit", tier=3))
            add(Cell(alloc, "clean", ms, steps, 0, tier=3))
        add(Cell(alloc, "list", 1, 3000, 512, "exit", tier=3))  # 1.5 MiB in 512-byte steps
        add(Cell(alloc, "graph", 1, 32, MiB, tier=3))
        add(Cell(alloc, "dict", 0.2, 300, 64 * KiB, "loop-end", tier=3))
        add(Cell(alloc, "list", 1, 300, 64 * KiB, nvtx=False, tier=3))
        add(Cell(alloc, "temporaries", 1, 300, 0, tier=3))
        add(Cell(alloc, "deque", 1, 32, 0, tier=3))
    out = list(cells.values())
    for c in list(out):
        if c.repeat:
            for r in range(1, repeats):
                d = Cell(c.alloc, c.pattern, c.step_ms, c.steps, c.leak, c.release, c.nvtx, tier=2)
                d.run, d.repeat = r, True
                out.append(d)
    out.sort(key=lambda c: (c.tier, c.fixture if c.fixture is not None else 99, -c.est_s(), c.name))
    return out


# ---------------------------------------------------------- the comparison

def expectation(truth):
    """('leak' | 'either' | 'not_leak', threshold bytes) from the program's own counters."""
    if not truth.get("leaky"):
        return "not_leak", None
    thr = max(THRESHOLD_MIN, int(0.01 * (truth.get("peak_bytes") or 0)))
    return ("leak" if truth["kept_bytes"] >= thr else "either"), thr


def pick_process(rep):
    """The process that ran prog.py (inductor or other children may write traces too)."""
    procs = rep.get("processes") or []
    mine = [p for p in procs if any("prog.py" in str(a) for a in (p.get("argv") or []))] or procs
    return max(mine, key=lambda p: p.get("records") or 0) if mine else None


def read_report(path):
    """The fields of the report that the table needs, or {'error': ...}."""
    try:
        with open(path) as f:
            rep = json.load(f)
    except (OSError, ValueError) as e:
        return {"error": f"report JSON: {e}"}
    p = pick_process(rep)
    if p is None:
        return {"error": "report: no process"}
    v = p.get("verdict") or {}
    g = p.get("growth") or {}
    st = g.get("steps") or {}
    site = v.get("site") or {}
    uf = site.get("user_frame") or {}
    leaks = p.get("leaks") or {}
    top = (leaks.get("sites") or [{}])[0] if leaks.get("sites") else {}
    tuf = (top or {}).get("user_frame") or {}
    return {
        "kind": v.get("kind"), "grown_bytes": v.get("grown_bytes"), "steps": v.get("steps"),
        "step_source": v.get("step_source") or st.get("source"), "step_name": st.get("name"),
        "step_period_s": st.get("period_s"), "confidence": v.get("confidence"),
        "rate_bytes_per_step": v.get("rate_bytes_per_step"), "reason": v.get("reason"),
        "site_file": os.path.basename(uf.get("file") or "") or None, "site_line": uf.get("line"),
        "site_function": uf.get("function"), "held_by": (site.get("held_by") or {}).get("path"),
        "leaks_bytes": leaks.get("bytes"), "teardown_bytes": leaks.get("teardown_bytes"),
        "leak_site_file": os.path.basename(tuf.get("file") or "") or None, "leak_site_line": tuf.get("line"),
        "growth_grown_bytes": g.get("grown_bytes"), "growth_sites": len(g.get("sites") or []),
        "allocator_mode": v.get("allocator_mode"), "tensor_level": v.get("tensor_level"),
        "processes": len(rep.get("processes") or []), "pid": p.get("pid"),
    }


def classify(truth, verdict):
    """outcome, expectation, threshold, line_ok"""
    if truth is None:
        return "error", None, None, None
    if truth.get("skipped"):
        return "skipped", None, None, None
    if verdict is None or verdict.get("error") or not verdict.get("kind"):
        return "error", None, None, None
    exp, thr = expectation(truth)
    kind = verdict["kind"]
    if exp == "leak":
        outcome = {"leak": "ok", "no_leak": "miss", "cannot_tell": "weak"}.get(kind, "miss")
    elif exp == "either":
        outcome = "under"
    else:
        outcome = "false_leak" if kind == "leak" else "ok"
    line_ok = None
    if truth.get("line") and kind == "leak":
        want = os.path.basename(truth.get("file") or "prog.py")
        line_ok = verdict.get("site_file") == want and verdict.get("site_line") == truth["line"]
    return outcome, exp, thr, line_ok


# ------------------------------------------------------------------ running

def run_proc(cmd, env, out_path, err_path, timeout):
    """rc (None on a timeout); the whole process group is stopped on a timeout."""
    with open(out_path, "wb") as o, open(err_path, "wb") as e:
        p = subprocess.Popen(cmd, env=env, stdout=o, stderr=e, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            return p.wait(timeout=max(1.0, timeout))
        except subprocess.TimeoutExpired:
            for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    p.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
            return None


def tail(path, n=600):
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - n))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def report_cell(vt, d, timeout=90.0, out=None):
    """Run `vramtrace report --json` on the cell's directory into report.json
    there, or in out (a replay leaves the fixtures as they are)."""
    t0 = time.monotonic()
    out = out or d
    os.makedirs(out, exist_ok=True)
    rc = run_proc([vt, "report", "--json", "--no-symbols", "--no-progress", d], os.environ.copy(),
                  os.path.join(out, "report.json"), os.path.join(out, "report.err"), timeout)
    v = read_report(os.path.join(out, "report.json")) if rc in (0, 1) else {
        "error": f"report exit {rc}: {tail(os.path.join(out, 'report.err'), 300)}"}
    return v, rc, time.monotonic() - t0


def load_truth(d):
    try:
        with open(os.path.join(d, "truth.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


class Runner:
    def __init__(self, a, cells):
        self.a, self.cells = a, cells
        self.work = os.path.abspath(a.work)
        self.t0 = time.monotonic()
        self.launch_deadline = self.t0 + a.budget_s
        self.hard_deadline = self.launch_deadline + GRACE_S
        self.lock = threading.Lock()
        self.pending = list(cells)
        self.results = {}
        self.ratios = []  # actual wall / estimate of the finished cells
        self.env = os.environ.copy()
        self.env["PYTHONUNBUFFERED"] = "1"
        self.env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")  # no compile workers to trace
        self.env.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(self.work, "inductor"))

    def scale(self):
        with self.lock:
            r = sorted(self.ratios)
        return min(3.0, max(0.5, statistics.median(r))) if len(r) >= 4 else 1.0

    def next_cell(self):
        s = self.scale()
        with self.lock:
            now = time.monotonic()
            for i, c in enumerate(self.pending):
                if now + c.est_s() * s <= self.launch_deadline:
                    return self.pending.pop(i)
            return None

    def run_cell(self, c):
        d = os.path.join(self.work, "cells", c.name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        env = dict(self.env)
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
        env.pop("PYTORCH_ALLOC_CONF", None)
        if ALLOCS[c.alloc]:
            env["PYTORCH_CUDA_ALLOC_CONF"] = ALLOCS[c.alloc]
        cmd = ([self.a.vt, "record", "-o", d] + self.a.record_opt +
               ["--", self.a.python, os.path.join(HERE, "prog.py")] + c.prog_args() +
               ["--truth", os.path.join(d, "truth.json")])
        t0 = time.monotonic()
        timeout = min(c.timeout_s(), self.hard_deadline - t0)
        if c.name == self.warmup:
            timeout = max(timeout, 300.0)  # builds the PyTorch shim first
        rc = run_proc(cmd, env, os.path.join(d, "out.txt"), os.path.join(d, "err.txt"), timeout)
        rec_s = time.monotonic() - t0
        truth = load_truth(d)
        traces = sorted(glob.glob(os.path.join(d, "*.zst")))
        verdict, rrc, rep_s = None, None, 0.0
        if traces:
            verdict, rrc, rep_s = report_cell(self.a.vt, d, max(10.0, min(90.0, self.hard_deadline + 20 - time.monotonic())))
        outcome, exp, thr, line_ok = classify(truth, verdict)
        if rc is None:
            outcome = "timeout"
        elif rc != 0 and outcome != "skipped":
            outcome = "error"
        wall = time.monotonic() - t0
        res = {
            "name": c.name, "group": c.group, "run": c.run, "tier": c.tier, "fixture": c.fixture,
            "params": c.params(), "status": "timeout" if rc is None else "ran", "record_rc": rc,
            "report_rc": rrc, "traces": [os.path.basename(t) for t in traces],
            "trace_bytes": sum(os.path.getsize(t) for t in traces), "truth": truth, "expect": exp,
            "threshold_bytes": thr, "verdict": verdict, "outcome": outcome, "line_ok": line_ok,
            "wall_s": round(wall, 2), "record_s": round(rec_s, 2), "report_s": round(rep_s, 2),
            "est_s": round(c.est_s(), 2), "dir": d,
        }
        if outcome in ("error", "timeout"):
            res["stderr_tail"] = tail(os.path.join(d, "err.txt"))
        with self.lock:
            self.results[c.name] = res
            if c.name != self.warmup and rc is not None:
                self.ratios.append(wall / c.est_s())
        el = time.monotonic() - self.t0
        kind = (verdict or {}).get("kind")
        print(f"[{el:6.1f}s] {c.name:44s} {outcome:10s} verdict={kind} kept={fmt_b((truth or {}).get('kept_bytes'))} "
              f"{wall:.1f}s", flush=True)

    def worker(self):
        while True:
            c = self.next_cell()
            if c is None:
                return
            try:
                self.run_cell(c)
            except Exception as e:  # noqa: BLE001 - one broken cell must not stop the table
                with self.lock:
                    self.results[c.name] = {"name": c.name, "group": c.group, "run": c.run, "tier": c.tier,
                                            "fixture": c.fixture, "params": c.params(), "status": "ran",
                                            "outcome": "error", "stderr_tail": f"run.py: {type(e).__name__}: {e}"}

    def run(self):
        os.makedirs(os.path.join(self.work, "cells"), exist_ok=True)
        # the first cell alone: `vramtrace record` builds the PyTorch shim once
        # into VRAMTRACE_CACHE_DIR, not 8 times at once
        self.warmup = self.pending[0].name if self.pending else None
        if self.pending:
            self.run_cell(self.pending.pop(0))
        threads = [threading.Thread(target=self.worker, daemon=True) for _ in range(self.a.jobs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for c in self.pending:
            self.results[c.name] = {"name": c.name, "group": c.group, "run": c.run, "tier": c.tier,
                                    "fixture": c.fixture, "params": c.params(), "status": "not_run",
                                    "outcome": "not_run", "est_s": round(c.est_s(), 2)}
        return [self.results[c.name] for c in self.cells]


# ------------------------------------------------------------------ tables

def consistency(results):
    """{group: [verdict kinds of its runs]} for the groups recorded more than once."""
    groups = {}
    for r in results:
        if r.get("status") == "ran" and r.get("verdict") and r["verdict"].get("kind"):
            groups.setdefault(r["group"], []).append((r["run"], r["verdict"]["kind"]))
    return {g: [k for _, k in sorted(v)] for g, v in sorted(groups.items()) if len(v) > 1}


def smallest_found(results):
    """Per step length: the smallest leak reported as one, and the largest missed."""
    rows = {}
    for ms in STEP_MS:
        leaky = [r for r in results if r.get("truth") and r["truth"].get("leaky") and r["params"]["step_ms"] == ms
                 and r.get("verdict") and r["verdict"].get("kind")]
        found = [r for r in leaky if r["verdict"]["kind"] == "leak"]
        missed = [r for r in leaky if r["verdict"]["kind"] != "leak"]
        f = min(found, key=lambda r: (r["truth"]["kept_bytes"], r["name"])) if found else None
        fs = min(found, key=lambda r: (r["params"]["leak_bytes"], r["truth"]["kept_bytes"], r["name"])) if found else None
        m = max(missed, key=lambda r: (r["truth"]["kept_bytes"], r["name"])) if missed else None
        rows[f"{ms:g}"] = {
            "leaky_cells": len(leaky), "found": len(found),
            "smallest_kept_found": f and {"cell": f["name"], "kept_bytes": f["truth"]["kept_bytes"]},
            "smallest_per_step_found": fs and {"cell": fs["name"], "leak_bytes": fs["params"]["leak_bytes"],
                                               "kept_bytes": fs["truth"]["kept_bytes"]},
            "largest_kept_missed": m and {"cell": m["name"], "kept_bytes": m["truth"]["kept_bytes"],
                                          "verdict": m["verdict"]["kind"],
                                          "expected": m.get("expect")},
        }
    return rows


def summarize(results):
    counts = {}
    for r in results:
        counts.setdefault(r["outcome"], 0)
        counts[r["outcome"]] += 1
    cons = consistency(results)
    inconsistent = sorted(g for g, k in cons.items() if len(set(k)) > 1)
    failures = [r["name"] for r in results if r["outcome"] in FAILING] + [g + " (repeats)" for g in inconsistent]
    return {"cells": len(results), "outcomes": counts, "repeat_groups": len(cons), "inconsistent": inconsistent,
            "failures": failures,
            "line_ok": sum(1 for r in results if r.get("line_ok") is True),
            "line_wrong": sorted(r["name"] for r in results if r.get("line_ok") is False)}


def cell_row(r):
    p, t, v = r["params"], r.get("truth") or {}, r.get("verdict") or {}
    step = f"{p['step_ms']:g}" + (f"/{t['mean_step_ms']:.2f}" if t.get("mean_step_ms") else "")
    src = v.get("step_source") or "-"
    if v.get("step_name"):
        src += f":{v['step_name']}"
    line = "-"
    if t.get("line"):
        got = f"{v.get('site_file') or '?'}:{v.get('site_line')}" if v.get("site_line") else "none"
        line = f"{t['line']} / {got}" + (" ok" if r.get("line_ok") else "")
    return (f"| {r['name']} | {p['alloc']} | {p['pattern']} | {step} | {p['steps']} | {fmt_leak(p['leak_bytes'])} | "
            f"{p['release']} | {'y' if p['nvtx'] else 'n'} | {fmt_b(t.get('kept_bytes'))} | "
            f"{fmt_b(r.get('threshold_bytes'))} | {r.get('expect') or '-'} | {v.get('kind') or '-'} | "
            f"{fmt_b(v.get('grown_bytes'))} | {v.get('steps') if v.get('steps') is not None else '-'} ({src}) | "
            f"{line} | **{r['outcome']}** | {r.get('wall_s', '-')} |")


def markdown(meta, results, summ, small, cons):
    L = [f"# vramtrace ground-truth matrix (issue 33)", "",
         f"{meta['started']}, {meta.get('torch') or 'torch ?'}, {meta['jobs']} at a time, "
         f"{meta['elapsed_s']:.0f} s of a {meta['budget_s']:.0f} s budget; vramtrace: `{meta['vt']}`.", "",
         "A leaky cell must get `leak` when it kept at least max(1 MiB, 1 % of the peak) by "
         "`torch.cuda.memory_allocated()` (miss: `no_leak`; weak: `cannot_tell`); under that any answer "
         "(under); a clean cell must not get `leak` (false_leak).", "",
         "## Outcomes", "", "| outcome | " + " | ".join(ALLOCS) + " | all |", "|---|" + "---|" * (len(ALLOCS) + 1)]
    outs = sorted(summ["outcomes"])
    for o in outs:
        per = [sum(1 for r in results if r["outcome"] == o and r["params"]["alloc"] == al) for al in ALLOCS]
        L.append(f"| {o} | " + " | ".join(map(str, per)) + f" | {summ['outcomes'][o]} |")
    L += ["", f"Site line right in {summ['line_ok']} leak verdicts; wrong in {len(summ['line_wrong'])}"
          + (": " + ", ".join(summ["line_wrong"][:20]) if summ["line_wrong"] else "") + ".", "",
          "## Smallest leak found per step length", "",
          "| step ms | leaky cells | found | smallest kept found | smallest per-step leak found | largest kept missed |",
          "|---|---|---|---|---|---|"]
    for ms, s in small.items():
        f, fs, m = s["smallest_kept_found"], s["smallest_per_step_found"], s["largest_kept_missed"]
        L.append(f"| {ms} | {s['leaky_cells']} | {s['found']} | "
                 + (f"{fmt_b(f['kept_bytes'])} ({f['cell']})" if f else "-") + " | "
                 + (f"{fmt_b(fs['leak_bytes'])}/step ({fs['cell']})" if fs else "-") + " | "
                 + (f"{fmt_b(m['kept_bytes'])} ({m['cell']}: {m['verdict']}, {m['expected']})" if m else "-") + " |")
    bad = [r for r in results if r["outcome"] in FAILING]
    L += ["", f"## Misses and failures ({len(bad)} cells, {len(summ['inconsistent'])} inconsistent repeats)", ""]
    if bad:
        L += ["| cell | outcome | kept | verdict | reason / stderr |", "|---|---|---|---|---|"]
        for r in bad:
            v = r.get("verdict") or {}
            why = (v.get("reason") or v.get("error") or r.get("stderr_tail") or "").replace("\n", " ").replace("|", "/")
            L.append(f"| {r['name']} | {r['outcome']} | {fmt_b((r.get('truth') or {}).get('kept_bytes'))} | "
                     f"{v.get('kind') or '-'} | {why[-200:]} |")
    else:
        L.append("None.")
    L += ["", "## Repeats", "", "| cell | verdicts | same |", "|---|---|---|"]
    for g, kinds in cons.items():
        L.append(f"| {g} | {', '.join(kinds)} | {'yes' if len(set(kinds)) == 1 else '**no**'} |")
    L += ["", "## Cells", "",
          "Step: target / measured mean ms. Line: true / reported (the verdict's site).", "",
          "| cell | alloc | pattern | step ms | steps | leak/step | release | nvtx | kept | threshold | expect | "
          "verdict | grown | steps (source) | line | outcome | wall s |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    L += [cell_row(r) for r in results if r["outcome"] != "not_run"]
    nr = [r["name"] for r in results if r["outcome"] == "not_run"]
    if nr:
        L += ["", f"Not run (budget): {len(nr)}: " + ", ".join(nr)]
    return "\n".join(L) + "\n"


def summary_text(meta, results, summ, small):
    L = [f"== matrix: {summ['cells']} cells, {meta['elapsed_s']:.0f} s (budget {meta['budget_s']:.0f} s)",
         f"{'outcome':12s}" + "".join(f"{al:>12s}" for al in ALLOCS) + f"{'all':>8s}"]
    for o in sorted(summ["outcomes"]):
        per = [sum(1 for r in results if r["outcome"] == o and r["params"]["alloc"] == al) for al in ALLOCS]
        L.append(f"{o:12s}" + "".join(f"{n:12d}" for n in per) + f"{summ['outcomes'][o]:8d}")
    L.append("smallest leak found per step length (kept in all; largest missed):")
    for ms, s in small.items():
        f, m = s["smallest_kept_found"], s["largest_kept_missed"]
        L.append(f"  {ms:>4s} ms: {s['found']}/{s['leaky_cells']} found, smallest "
                 + (f"{fmt_b(f['kept_bytes'])} ({f['cell']})" if f else "-")
                 + (f"; largest missed {fmt_b(m['kept_bytes'])} ({m['cell']}, {m['verdict']})" if m else ""))
    L.append(f"repeats: {summ['repeat_groups']} groups, inconsistent: {', '.join(summ['inconsistent']) or 'none'}")
    L.append(f"site line right: {summ['line_ok']}, wrong: {len(summ['line_wrong'])}")
    if summ["failures"]:
        L.append(f"check_matrix: FAIL: {len(summ['failures'])}: {', '.join(summ['failures'][:8])}")
    else:
        n = sum(1 for r in results if r["outcome"] not in ("not_run",))
        L.append(f"check_matrix: ok: {n} cells, no miss, no false leak, repeats agree")
    return "\n".join(L)


def write_fixtures(results, out):
    """The fixture cells (first run), at most FIXTURES_MAX and FIXTURES_BYTES, as one tarball."""
    chosen, total = [], 0
    fx = sorted((r for r in results if r.get("fixture") is not None and r.get("run") == 0
                 and r.get("status") == "ran" and r.get("truth") and r.get("dir")), key=lambda r: r["fixture"])
    for r in fx:
        files = sorted(glob.glob(os.path.join(r["dir"], "*.zst")) + glob.glob(os.path.join(r["dir"], "holders.*.txt"))
                       + [os.path.join(r["dir"], "truth.json")])
        size = sum(os.path.getsize(f) for f in files)
        if len(chosen) >= FIXTURES_MAX or total + size > FIXTURES_BYTES:
            continue
        chosen.append((r["name"], files))
        total += size
    path = os.path.join(out, "matrix-fixtures.tar.gz")
    with tarfile.open(path, "w:gz") as tf:
        for name, files in chosen:
            for f in files:
                tf.add(f, arcname=f"matrix/{name}/{os.path.basename(f)}")
    return [n for n, _ in chosen], total


def write_logs(results, out):
    path = os.path.join(out, "matrix-logs.tar.gz")
    with tarfile.open(path, "w:gz") as tf:
        for r in results:
            d = r.get("dir")
            if not d:
                continue
            for b in ("out.txt", "err.txt", "report.err", "report.json", "truth.json"):
                if b == "report.json" and r["outcome"] in ("ok", "under") and r.get("fixture") is None:
                    continue  # matrix.json has what the table needs; whole reports where it went wrong
                f = os.path.join(d, b)
                if os.path.isfile(f) and os.path.getsize(f) <= 2 * MiB:
                    tf.add(f, arcname=f"matrix-logs/{r['name']}/{b}")


def finish(a, meta, results):
    summ = summarize(results)
    small = smallest_found(results)
    cons = consistency(results)
    os.makedirs(a.out, exist_ok=True)
    fixtures, fx_bytes = write_fixtures(results, a.out) if not a.replay else ([], 0)
    meta["fixtures"], meta["fixture_bytes"] = fixtures, fx_bytes
    with open(os.path.join(a.out, "matrix.json"), "w") as f:
        json.dump({"schema": "vramtrace.matrix/1", "meta": meta, "summary": summ, "smallest_found": small,
                   "repeats": cons, "cells": results}, f, indent=1)
    with open(os.path.join(a.out, "matrix.md"), "w") as f:
        f.write(markdown(meta, results, summ, small, cons))
    if not a.replay:
        write_logs(results, a.out)
    print(summary_text(meta, results, summ, small), flush=True)
    return 1 if summ["failures"] else 0


# --------------------------------------------------------------- the modes

def find_vt(a):
    if a.vt:
        return a.vt
    root = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
    build = os.environ.get("BUILD", "build")
    for p in (os.environ.get("VRAMTRACE_CLI"), os.path.join(root, build, "vramtrace"),
              os.path.join(root, build, "src", "cli", "vramtrace")):
        if p and os.access(p, os.X_OK):
            return p
    return None


def dry_run(a, cells):
    bad = []
    for c in cells:
        try:
            prog.parse_args(c.prog_args() + ["--truth", "/dev/null"])
        except SystemExit:
            bad.append(c.name)
        if not re.fullmatch(r"[A-Za-z0-9._-]+", c.name):
            bad.append(c.name + " (name)")
    names = [c.name for c in cells]
    dup = sorted({n for n in names if names.count(n) > 1})
    lines = prog.truth_lines()
    missing = [p for p in prog.LEAKY if p not in lines]
    print(f"{'cell':46s} tier fixture est_s")
    for c in cells:
        print(f"{c.name:46s} {c.tier:4d} {'' if c.fixture is None else c.fixture:>7} {c.est_s():6.1f}")
    # list scheduling in launch order: the first cell alone, then jobs at a time
    t = cells[0].est_s() if cells else 0.0
    free = [t] * a.jobs
    for c in cells[1:]:
        i = free.index(min(free))
        free[i] += c.est_s()
    tiers = {}
    for c in cells:
        tiers[c.tier] = tiers.get(c.tier, 0) + 1
    fx = [c for c in cells if c.fixture is not None]
    print(f"dry run: {len(cells)} cells (tiers {dict(sorted(tiers.items()))}), {len(fx)} fixtures, "
          f"estimated {max(free):.0f} s with {a.jobs} at a time (plus the PyTorch shim's build), budget {a.budget_s:.0f} s")
    for k, v in (("bad arguments", bad), ("duplicate names", dup), ("untagged leaky patterns", missing)):
        if v:
            print(f"dry run: FAIL: {k}: {v[:8]}")
    ok = not bad and not dup and not missing and len(fx) <= FIXTURES_MAX
    print("dry run: ok" if ok else "dry run: FAIL")
    return 0 if ok else 1


def replay(a):
    """The comparison on recorded cells: DIR/NAME/ with truth.json and the trace."""
    results = []
    for d in sorted(glob.glob(os.path.join(a.replay, "*", "truth.json"))):
        d = os.path.dirname(d)
        truth = load_truth(d)
        verdict, rrc, rep_s = report_cell(a.vt, d, out=os.path.join(a.out, "cells", os.path.basename(d)))
        outcome, exp, thr, line_ok = classify(truth, verdict)
        p = {k: truth.get(k) for k in ("pattern", "step_ms", "steps", "leak_bytes", "release", "nvtx")}
        conf = truth.get("alloc_conf") or ""
        p["alloc"] = next((k for k, v in ALLOCS.items() if v and v in conf), "default")
        name = os.path.basename(d)
        results.append({"name": name, "group": re.sub(r"\.r\d+$", "", name), "run": 0, "params": p,
                        "status": "ran", "report_rc": rrc, "truth": truth, "expect": exp, "threshold_bytes": thr,
                        "verdict": verdict, "outcome": outcome, "line_ok": line_ok, "wall_s": round(rep_s, 2)})
        print(f"{name:44s} {outcome:10s} verdict={(verdict or {}).get('kind')}", flush=True)
    return results


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vt", help="the vramtrace CLI (default: $VRAMTRACE_CLI, build/vramtrace)")
    ap.add_argument("--python", default=sys.executable, help="the interpreter with torch (default: this one)")
    ap.add_argument("--out", default=os.environ.get("OUT") or "/tmp/vt-matrix-out", help="tables and tarballs")
    ap.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR") or "/tmp", "vt-matrix-work"),
                    help="the cells' recordings (not under $OUT: few files come back from it)")
    ap.add_argument("--budget-s", type=float, default=450.0, help="no cell starts that would end after this")
    ap.add_argument("--jobs", type=int, default=8, help="cells at a time")
    ap.add_argument("--repeats", type=int, default=3, help="recordings of each fixture cell")
    ap.add_argument("--only", default=None, help="regex: run only the cells whose name matches")
    ap.add_argument("--record-opt", action="append", default=None,
                    help="an option for `vramtrace record` (default: --no-symbolize)")
    ap.add_argument("--dry-run", action="store_true", help="list and check the cells; run nothing")
    ap.add_argument("--replay", metavar="DIR", help="report and compare recorded cells DIR/NAME/")
    a = ap.parse_args(argv)
    if a.record_opt is None:
        a.record_opt = ["--no-symbolize"]
    cells = generate(a.repeats)
    if a.only:
        cells = [c for c in cells if re.search(a.only, c.name)]
    if a.dry_run:
        return dry_run(a, cells)
    a.vt = find_vt(a)
    if not a.vt:
        print("check_matrix: FAIL: no vramtrace CLI (--vt, $VRAMTRACE_CLI or build/vramtrace)")
        return 1
    a.vt = os.path.abspath(a.vt)
    meta = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "vt": a.vt, "python": a.python,
            "jobs": a.jobs, "budget_s": a.budget_s, "repeats": a.repeats, "record_opt": a.record_opt,
            "alloc_conf": ALLOCS, "threshold": "max(1 MiB, 1 % of max_memory_allocated())"}
    t0 = time.monotonic()
    if a.replay:
        results = replay(a)
    else:
        a.work = os.path.abspath(a.work)
        print(f"matrix: {len(cells)} cells, {a.jobs} at a time, budget {a.budget_s:.0f} s, work {a.work}", flush=True)
        results = Runner(a, cells).run()
    meta["elapsed_s"] = time.monotonic() - t0
    meta["torch"] = next((f"torch {r['truth']['torch']}" for r in results if r.get("truth")), None)
    return finish(a, meta, results)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
