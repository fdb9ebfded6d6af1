#!/usr/bin/env python3
"""check_parquet_pyarrow.py - the Parquet export (docs/EXPORT.md, "Parquet")
read by pyarrow and pandas, as users of a notebook read it: for the GPU
machine, where both are installed (CI has neither; DuckDB and hyparquet
check the same there, viewer/parquet_check.mjs).

    python3 tests/gpu/check_parquet_pyarrow.py VRAMTRACE OUTDIR INPUT...

Exports INPUT... (traces or directories) into OUTDIR (removed first), reads
every table with pyarrow.dataset (hive partitioning: rank and host from the
paths) and with pandas.read_parquet, and checks per trace against
`vramtrace report --json` of the same inputs: allocations (alloc +
vmm_create records), the bytes live at the end by kind, kernels, failed
calls and probes, the peak, leaked and grown bytes; the column types
(timestamps in ns, strings, the frames list).  Exit 0 when all
agree, 1 with each difference on stderr.  Touches OUTDIR."""
import json
import shutil
import subprocess
import sys
from collections import defaultdict

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds

TABLES = ["allocations", "sites", "kernels", "samples", "steps", "failures", "processes"]
bad = 0


def fail(msg):
    global bad
    bad += 1
    print("check_parquet_pyarrow: " + msg, file=sys.stderr)


def eq(what, got, want):
    if int(got) != int(want):
        fail(f"{what}: parquet {got}, report {want}")


def main():
    vt, out, inputs = sys.argv[1], sys.argv[2], sys.argv[3:]
    shutil.rmtree(out, ignore_errors=True)
    r = subprocess.run([vt, "export", "--format", "parquet", "--no-symbols", "--no-progress", "-o", out, *inputs])
    if r.returncode not in (0, 1):
        sys.exit(1)
    rep = subprocess.run([vt, "report", "--json", "--no-symbols", "--no-progress", *inputs],
                         capture_output=True, text=True)
    report = json.loads(rep.stdout)

    t = {}
    for name in TABLES:
        d = ds.dataset(f"{out}/{name}", format="parquet", partitioning="hive")
        t[name] = d.to_table().to_pandas()
        # pandas alone, the way a notebook reads a directory
        p = pd.read_parquet(f"{out}/{name}")
        eq(f"{name}: pandas rows", len(p), len(t[name]))
    a = t["allocations"]
    schema = ds.dataset(f"{out}/allocations", format="parquet", partitioning="hive").schema
    for col in ("alloc_time", "free_time"):
        ty = schema.field(col).type
        if not (pa.types.is_timestamp(ty) and ty.unit == "ns"):
            fail(f"allocations.{col}: {ty}, not timestamp[ns]")
    if not pa.types.is_string(schema.field("kind").type) and not pa.types.is_dictionary(schema.field("kind").type):
        fail(f"allocations.kind: {schema.field('kind').type}")
    sschema = ds.dataset(f"{out}/sites", format="parquet", partitioning="hive").schema
    if not pa.types.is_list(sschema.field("frames").type):
        fail(f"sites.frames: {sschema.field('frames').type}, not a list")

    procs = t["processes"]
    key = ["rank", "host", "pid"]
    # pids may repeat across hosts and ranks: a trace is (rank, host, pid)
    # here, as it is in the examples of docs/EXPORT.md
    by_file = {row.trace_file: (row.rank, row.host, row.pid, row) for row in procs.itertuples()}

    def group(df, **agg):
        if df.empty:
            return {}
        g = df.groupby(key).agg(**agg)
        return {k: v for k, v in g.iterrows()}

    A = group(a, n=("size", "size"), bytes=("size", "sum"))
    live = a[a["free_time"].isna()]
    LK = defaultdict(int)
    for row in live.groupby(key + ["kind"])["size"].sum().reset_index().itertuples():
        LK[(row.rank, row.host, row.pid, row.kind)] += int(row.size)
    K = group(t["kernels"], n=("pid", "size"))
    f = t["failures"]
    F = group(f, n=("pid", "size"))
    FP = group(f[f["probe"].notna()], n=("pid", "size"))
    S = group(t["sites"], grown=("grown_bytes", "sum"), allocs=("allocs", "sum"))

    eq("processes", len(procs), len(report["processes"]))
    for p in report["processes"]:
        if p["file"] not in by_file:
            fail(f"{p['file']}: no processes row")
            continue
        rank, host, pid, row = by_file[p["file"]]
        k = (rank, host, pid)
        ev = p["events"]
        w = p["file"]
        got = A.get(k)
        eq(f"{w}: allocations", got["n"] if got is not None else 0, ev.get("alloc", 0) + ev.get("vmm_create", 0))
        ends = defaultdict(int)
        for d in p["devices"]:
            for kind, v in d["by_kind"].items():
                ends[kind] += v["at_end_bytes"]
        for kind in set(ends) | {kk[3] for kk in LK if kk[:3] == k}:
            eq(f"{w}: live at the end, {kind}", LK.get((rank, host, pid, kind), 0), ends.get(kind, 0))
        got = K.get(k)
        eq(f"{w}: kernels", got["n"] if got is not None else 0, ev.get("kernel", 0))
        got = F.get(k)
        eq(f"{w}: failed calls", got["n"] if got is not None else 0, p["oom"]["failed_calls"])
        got = FP.get(k)
        eq(f"{w}: probes", got["n"] if got is not None else 0, p["oom"]["probes"]["count"])
        eq(f"{w}: peak", row.peak_bytes, max([0] + [d["peak_live_bytes"] for d in p["devices"]]))
        eq(f"{w}: leaked", row.leaked_bytes, p["leaks"]["bytes"])
        eq(f"{w}: grown", row.grown_bytes, p["growth"]["grown_bytes"])
        got = S.get(k)
        eq(f"{w}: sites' grown bytes", got["grown"] if got is not None else 0, p["growth"]["grown_bytes"])
    print(f"check_parquet_pyarrow: {len(procs)} traces, pyarrow {pa.__version__}, pandas {pd.__version__}, "
          f"{bad} differences")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
