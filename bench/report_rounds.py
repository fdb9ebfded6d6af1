#!/usr/bin/env python3
"""report_rounds.py TRACE RECORDS ROUNDS BIN... - `BIN report --no-symbols
TRACE` for each binary in turn, ROUNDS times (fresh processes, alternating
so that the machine's load falls on all alike); prints per binary the
CPU seconds (user + system, from wait4) min / median, as M records per
CPU second, and the peak RSS.  RECORDS: the trace's record count
(analyze_bench prints it).  A BIN given as BIN=OTHER_TRACE reads that
trace instead (the same events in another format: a format change timed
side by side).  For issue 4's goal (>= 30 M events/s per core)
on machines without /usr/bin/time."""
import os
import statistics
import subprocess
import sys

trace, records, rounds, bins = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
cpu = [[] for _ in bins]  # by position: the same binary may be given twice (a control)
rss = [0 for _ in bins]
for r in range(rounds):
    for i, b in enumerate(bins):
        exe, _, tr = b.partition("=")
        p = subprocess.Popen([exe, "report", "--no-symbols", tr or trace], stdout=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        if status:
            sys.exit("report_rounds.py: %s exited with %d" % (b, status))
        cpu[i].append(ru.ru_utime + ru.ru_stime)
        rss[i] = max(rss[i], ru.ru_maxrss)
for i, b in enumerate(bins):
    lo, med = min(cpu[i]), statistics.median(cpu[i])
    print("%s: %d rounds, CPU min %.2f s / median %.2f s = %.1f / %.1f M records/s per CPU second, peak RSS %.1f MiB"
          % (b, rounds, lo, med, records / lo / 1e6, records / med / 1e6, rss[i] / 1024.0))
if len(bins) == 2:
    ratios = sorted(a / b for a, b in zip(cpu[1], cpu[0]))
    print("paired %s / %s: median %.3f (min %.3f, max %.3f)" % (bins[1], bins[0], statistics.median(ratios),
                                                                  ratios[0], ratios[-1]))
