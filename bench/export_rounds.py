#!/usr/bin/env python3
"""export_rounds.py VRAMTRACE TRACE ROUNDS [SEED] - the exporters against
each other on one trace: `report`, `export --format perfetto -o /dev/null`
and `export --format parquet -o DIR`, each a fresh process, in an order
shuffled every round (so that the machine's drift falls on all alike);
prints per command the CPU seconds (user + system, from wait4) min /
median, the trace's events per CPU second, the peak RSS and the output's
size, then each exporter's time paired with `report`'s and Perfetto's of
the same round.  The event count: the records `report --json` gives (as the
other benches count).  For
issue 38's goal (Parquet at 10 M events/s, like the other exporters)."""
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile

vt, trace, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
common = ["--no-symbols", "--no-progress"]
rep = json.loads(subprocess.run([vt, "report", "--json"] + common + [trace], check=True, capture_output=True).stdout)
events = sum(p["records"] for p in rep["processes"])  # every record, as the other benches count
out = tempfile.mkdtemp(prefix="vt-export-rounds-")
cmds = {
    "report": ["report"] + common + [trace],
    "perfetto": ["export", "--format", "perfetto", "-o", "/dev/null"] + common + [trace],
    "parquet": ["export", "--format", "parquet", "-o", out + "/pq"] + common + [trace],
}
cpu = {k: [] for k in cmds}
rss = {k: 0 for k in cmds}
for r in range(rounds):
    order = list(cmds)
    rng.shuffle(order)
    for k in order:
        shutil.rmtree(out + "/pq", ignore_errors=True)
        p = subprocess.Popen([vt] + cmds[k], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        if status:
            sys.exit("export_rounds.py: %s exited with %d" % (k, status))
        cpu[k].append(ru.ru_utime + ru.ru_stime)
        if k == "parquet":
            size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(out + "/pq") for f in fs)
        rss[k] = max(rss[k], ru.ru_maxrss)
shutil.rmtree(out)
print("%s: %d events, %d rounds" % (trace, events, rounds))
for k in cmds:
    lo, med = min(cpu[k]), statistics.median(cpu[k])
    print("%-9s CPU min %.2f s / median %.2f s = %.1f / %.1f M events per CPU s, peak RSS %.1f MiB%s"
          % (k, lo, med, events / lo / 1e6, events / med / 1e6, rss[k] / 1024.0,
             ", output %.1f MB (%.2f B/event)" % (size / 1e6, size / events) if k == "parquet" else ""))
for a, b in (("parquet", "perfetto"), ("parquet", "report"), ("perfetto", "report")):
    ratios = sorted(x / y for x, y in zip(cpu[a], cpu[b]))
    print("paired %s / %s: median %.2f (min %.2f, max %.2f)" % (a, b, statistics.median(ratios), ratios[0], ratios[-1]))
