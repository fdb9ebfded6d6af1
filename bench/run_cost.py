#!/usr/bin/env python3
"""run_cost.py BUILD_DIR [ROUNDS] - what a run costs a user, ON the GPU
machine: whole processes of bench/cost_prog.py (workloads launch,
transformer, gpt2), each config its own process, configs in an order
shuffled per round (fixed seed), one process at a time on the same cores.
    python3 bench/run_cost.py BUILD [ROUNDS]     run; the table; $OUT/cost.log
    python3 bench/run_cost.py --pool LOG...      the table from logs
Configs (VT_COST_CONFIGS): untraced; floor (CUPTI's own cost: the same
callbacks with empty bodies, BUILD/bench/libvt_cupti_floor.so or
BUILD/libvt_cupti_floor.so); history (PyTorch's
_record_memory_history(stacks="python")); record (`vramtrace record` as a
user runs it, the symbol cache warm: a second run of the program); first
(the same with an empty symbol cache: a first run on this host);
notensors (`record --no-tensor-events`: the allocator's segments only);
noholders (`record --no-holders`: no holder walk at the exit).
Per process: wall time (start to exit, what the user waits) and the median
step after the warm-up.  Per config: the step against untraced of the same
round and the wall time added, as paired medians over rounds with their
range; for record-type configs, what `vramtrace record` itself spent after
the program ended (its --timings line) and the holder walk's own time
("walk": it runs in a child after the program ends, so it is in no wall
time; the next process starts only when it is done), what `record` took
before it started the program ("before": finding torch, its shim), and
the wall time in four phases, each paired with untraced: start (to the
program's first line), setup (import torch, CUDA's and CUPTI's start, the
model), loop (the timed steps), exit (from the loop's end to the exit of
the whole command).  VT_COST_WORK (default
launch,transformer,gpt2), VT_COST_BUDGET_S (start no round after it), VT_COST_SEED (the shuffle,
default 7: give each call of a pooled set its own)."""
import json
import os
import random
import re
import shutil
import statistics as st
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
LINE = re.compile(r"^round (\d+) (\S+) (\S+): wall ([\d.]+) s step ([\d.]+) ms after ([\d.]+|-) s"
                  r"(?: walk ([\d.]+|-) s)?(?: phases ([-\d.]+) ([-\d.]+) ([-\d.]+) ([-\d.]+) before ([\d.]+|-))?$")
PHASES = ("start", "setup", "loop", "exit")


def command(build, cfg, work, tmp, cache):
    prog = [sys.executable, os.path.join(HERE, "cost_prog.py"), work]
    env = dict(os.environ)
    env.pop("CUDA_INJECTION64_PATH", None)
    if cfg == "untraced":
        return prog, env
    if cfg == "floor":
        for p in ("bench/libvt_cupti_floor.so", "libvt_cupti_floor.so"):
            if os.path.exists(os.path.join(build, p)):
                env["CUDA_INJECTION64_PATH"] = os.path.join(build, p)
        return prog, env
    if cfg == "history":
        env["VT_COST_HISTORY"] = "1"
        return prog, env
    out = tempfile.mkdtemp(dir=tmp)
    env["VRAMTRACE_CACHE_DIR"] = cache if cfg != "first" else tempfile.mkdtemp(dir=tmp)
    extra = {"notensors": ["--no-tensor-events"], "noholders": ["--no-holders"]}.get(cfg, [])
    return [os.path.join(build, "vramtrace"), "record", "-q", "--timings", "-o", out, *extra, "--", *prog], env


def after_exit(stderr):
    """seconds `vramtrace record` spent after the command ended"""
    m = re.search(r"total after it ([\d.]+) s", stderr)
    return float(m.group(1)) if m else None


def before_start(stderr):
    """seconds `vramtrace record` spent before it started the command"""
    m = re.search(r"timings: before it ([\d.]+) s", stderr)
    return float(m.group(1)) if m else None


def shim_notes(build, cmd):
    """the trace's notes on the PyTorch shim (outside the timed wall time)"""
    d = cmd[cmd.index("-o") + 1] if "-o" in cmd else None
    out = []
    for x in sorted(os.listdir(d)) if d else []:
        if x.endswith(".zst"):
            p = subprocess.run([os.path.join(build, "vramtrace"), "dump", os.path.join(d, x)],
                               capture_output=True, text=True)
            out += [ln.split("text=", 1)[-1] for ln in p.stdout.splitlines()
                    if " note " in ln and ("PyTorch" in ln or "tensor events" in ln) and "attaches at" not in ln]
    return out


def detached_walk(cmd):
    """The holder walk at exit runs in a child that outlives the program
    (and `record`): wait for it (holders.*.pending unlocked) so that it
    never runs beside the next process, and return its time from the W
    line of holders.PID.txt (None without one)."""
    import fcntl
    if "-o" not in cmd:
        return None
    d = cmd[cmd.index("-o") + 1]
    for x in os.listdir(d):
        if x.startswith("holders.") and x.endswith(".pending"):
            try:
                fd = os.open(os.path.join(d, x), os.O_RDONLY)
            except OSError:
                continue
            t0 = time.time()
            while time.time() - t0 < 60:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    time.sleep(0.02)
            os.close(fd)
    secs = None
    for x in os.listdir(d):
        if re.fullmatch(r"holders\.\d+\.txt", x):
            for ln in open(os.path.join(d, x)):
                if ln.startswith("W "):
                    secs = (secs or 0) + float(ln.split()[2])
    return secs


def run(build, rounds, works, cfgs, budget, log):
    tmp = tempfile.mkdtemp(prefix="vt_cost.")
    cache = os.path.join(tmp, "cache")
    rng = random.Random(int(os.environ.get("VT_COST_SEED", "7")))
    # "record" is a second run: one untimed run of each workload fills the
    # symbol cache (and builds PyTorch's allocator shim) first
    if any(c in cfgs for c in ("record", "notensors", "noholders")):
        for work in works:
            cmd, env = command(build, "record", work, tmp, cache)
            p = subprocess.run(cmd, env=env, capture_output=True, text=True)
            print(f"# warm-up {work}: exit {p.returncode}", file=log, flush=True)
    t_all = time.time()
    for r in range(rounds):
        if budget and time.time() - t_all > budget:
            print(f"budget: stopped before round {r}", file=log, flush=True)
            break
        for work in works:
            order = list(cfgs)
            rng.shuffle(order)
            for cfg in order:
                cmd, env = command(build, cfg, work, tmp, cache)
                t0 = time.perf_counter()
                w0 = time.time()
                p = subprocess.run(cmd, env=env, capture_output=True, text=True)
                wall = time.perf_counter() - t0
                w1 = time.time()
                res = None
                for ln in p.stdout.splitlines():
                    try:
                        res = json.loads(ln)
                    except ValueError:
                        pass
                if p.returncode or not res:
                    print(f"# {work} {cfg}: exit {p.returncode} {p.stderr[-400:]!r}", file=log, flush=True)
                    continue
                a = after_exit(p.stderr)
                b = before_start(p.stderr)
                wk = detached_walk(cmd)
                # the process's wall time in four: to the program's first line
                # (record's own start, the interpreter, sitecustomize), to the
                # loop (import torch, CUDA and CUPTI's start, the model), the
                # loop, and from its end to the exit of the command (atexit,
                # the library's close, CUDA's teardown, record after it)
                ph = (res["w_start"] - w0, res["w_loop"] - res["w_start"], res["w_end"] - res["w_loop"],
                      w1 - res["w_end"])
                print(f"round {r} {work} {cfg}: wall {wall:.3f} s step {res['median_ms']:.3f} ms after "
                      f"{'-' if a is None else f'{a:.3f}'} s walk {'-' if wk is None else f'{wk:.3f}'} s "
                      f"phases {' '.join(f'{x:.3f}' for x in ph)} before {'-' if b is None else f'{b:.3f}'}",
                      file=log, flush=True)
                if a is not None:
                    for ln in p.stderr.splitlines():
                        if "timings" in ln or "after the command" in ln:  # record's and the library's
                            print(f"#   {ln.strip()}", file=log, flush=True)
                    # the shim's notes: tensor events on or off, the wait for its build
                    for ln in shim_notes(build, cmd):
                        print(f"#   {ln}", file=log, flush=True)
    shutil.rmtree(tmp, ignore_errors=True)


def table(paths):
    rows = {}  # (work, cfg) -> {round: (wall, step, after)}
    for path in paths:
        for ln in open(path):
            m = LINE.match(ln.strip())
            if m:
                r, w, c = (path, int(m.group(1))), m.group(2), m.group(3)
                rows.setdefault((w, c), {})[r] = (float(m.group(4)), float(m.group(5)),
                                                  None if m.group(6) == "-" else float(m.group(6)),
                                                  None if m.group(7) in (None, "-") else float(m.group(7)),
                                                  None if m.group(8) is None else
                                                  tuple(float(m.group(i)) for i in range(8, 12)),
                                                  None if m.group(12) in (None, "-") else float(m.group(12)))
    out = [f"{'workload':12s} {'config':10s} {'n':>3s} {'step ms':>8s} {'x untraced':>10s} {'range':>13s} "
           f"{'wall s':>7s} {'+wall s':>7s} {'range':>15s} {'after s':>7s} {'walk s':>7s} {'befor s':>7s} "
           f"{'start':>6s} {'setup':>6s} {'loop':>6s} {'exit':>6s}"]
    for w in sorted({w for w, _ in rows}):
        base = rows.get((w, "untraced"), {})
        for c in ("untraced", "floor", "history", "notensors", "noholders", "record", "first"):
            d = rows.get((w, c))
            if not d:
                continue
            both = [k for k in d if k in base]
            ratio = [d[k][1] / base[k][1] for k in both]
            add = [d[k][0] - base[k][0] for k in both]
            aft = [d[k][2] for k in d if d[k][2] is not None]
            line = f"{w:12s} {c:10s} {len(d):3d} {st.median(v[1] for v in d.values()):8.2f} "
            if c != "untraced" and both:
                line += f"{st.median(ratio):10.3f} {min(ratio):6.3f}-{max(ratio):6.3f} "
            else:
                line += f"{'':10s} {'':13s} "
            line += f"{st.median(v[0] for v in d.values()):7.2f} "
            if c != "untraced" and both:
                line += f"{st.median(add):+7.2f} {min(add):+7.2f}..{max(add):+6.2f} "
            else:
                line += f"{'':7s} {'':15s} "
            line += f"{st.median(aft):7.2f}" if aft else f"{'':7s}"
            walk = [d[k][3] for k in d if d[k][3] is not None]
            line += f" {st.median(walk):7.2f}" if walk else f" {'':7s}"
            bef = [d[k][5] for k in d if d[k][5] is not None]
            line += f" {st.median(bef):7.2f}" if bef else f" {'':7s}"
            # where the added wall time goes: each phase paired with untraced
            ph = [k for k in both if d[k][4] and base[k][4]]
            if c != "untraced" and ph:
                line += " " + " ".join(f"{st.median(d[k][4][i] - base[k][4][i] for k in ph):+6.2f}"
                                       for i in range(4))
            elif ph or any(v[4] for v in d.values()):
                line += " " + " ".join(f"{st.median(v[4][i] for v in d.values() if v[4]):6.2f}" for i in range(4))
            out.append(line)
    return "\n".join(out)


def main():
    if sys.argv[1:2] == ["--pool"]:
        print(table(sys.argv[2:]))
        return
    build = os.path.abspath(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    works = os.environ.get("VT_COST_WORK", "launch,transformer,gpt2").split(",")
    cfgs = os.environ.get("VT_COST_CONFIGS", "untraced,floor,history,record,first,notensors").split(",")
    out = os.environ.get("OUT", ".")
    path = os.path.join(out, "cost.log")
    with open(path, "a") as log:
        print(f"# run_cost.py {build} rounds {rounds} works {works} configs {cfgs} "
              f"seed {os.environ.get('VT_COST_SEED', '7')} {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC", file=log, flush=True)
        run(build, rounds, works, cfgs, float(os.environ.get("VT_COST_BUDGET_S", "0")), log)
    print(table([path]))


if __name__ == "__main__":
    main()
