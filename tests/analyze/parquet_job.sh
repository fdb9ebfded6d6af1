#!/bin/bash
# parquet_job.sh VRAMTRACE GEN_JOB NODE VIEWER OUT N [--no-report]: a job of N
# generated traces (gen_job.c) exported as Parquet one trace at a time:
# the export's peak RSS (/usr/bin/time -v) stays that of one trace, and
# DuckDB and hyparquet agree with the report (or, with --no-report, for a
# job too large for one report, with the processes table), the SQL
# examples of docs/EXPORT.md included; the growing ranks and the failed
# allocations are those gen_job wrote.  Touches OUT and a temporary dir.
set -eu
vt=$1 gen=$2 node=$3 viewer=$4 out=$5 n=$6 mode=${7:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$gen" "$tmp/job" "$n"
"$gen" "$tmp/one" 1
# an ASan build keeps freed memory in quarantine (256 MiB): not for this measure
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0"
rss() { # peak RSS in KiB of an export of $1
    rm -rf "$tmp/x"
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -v "$vt" export --format parquet --no-symbols --no-progress -o "$tmp/x" "$1" 2>"$tmp/time" >/dev/null
        sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/time"
        sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): /wall /p; s/.*User time (seconds): /user /p' \
            "$tmp/time" | tr '\n' ' ' >"$tmp/wall.$(basename "$1")"
    else
        "$vt" export --format parquet --no-symbols --no-progress -o "$tmp/x" "$1" 2>/dev/null; echo 0
    fi
}
# the command: a directory, never stdout (2); nothing readable (1); the
# same trace twice gives the same bytes (and replaces its files)
rc=0; "$vt" export --format parquet -o - "$tmp/one" 2>/dev/null || rc=$?
[ $rc = 2 ] || { echo "parquet_job: FAIL: -o - gave $rc, not 2" >&2; exit 1; }
rc=0; "$vt" export --format parquet --no-progress -o "$tmp/none" "$tmp/missing.zst" 2>/dev/null || rc=$?
[ $rc = 1 ] || { echo "parquet_job: FAIL: a missing trace gave $rc, not 1" >&2; exit 1; }
"$vt" export --format parquet --no-symbols --no-progress -o "$tmp/d1" "$tmp/one" 2>/dev/null
"$vt" export --format parquet --no-symbols --no-progress -o "$tmp/d1" "$tmp/one" 2>/dev/null
"$vt" export --format parquet --no-symbols --no-progress -o "$tmp/d2" "$tmp/one" 2>/dev/null
diff -r "$tmp/d1" "$tmp/d2" >/dev/null || { echo "parquet_job: FAIL: two exports differ" >&2; exit 1; }
[ "$(find "$tmp/d1" -type f | wc -l)" = 7 ] || { echo "parquet_job: FAIL: not 7 files for one trace" >&2; exit 1; }
one=$(rss "$tmp/one")
all=$(rss "$tmp/job")
echo "parquet_job: $n traces exported in $all KiB peak RSS ($(cat "$tmp/wall.job" 2>/dev/null)s), one trace $one KiB"
# bounded: the job's export within one trace's and 16 MiB more (not x N)
if [ "$one" -gt 0 ] && [ "$all" -gt $((one + 16384)) ]; then
    echo "parquet_job: FAIL: $n traces took $all KiB, one $one KiB: memory grows with the job" >&2
    exit 1
fi
"$node" "$viewer/parquet_check.mjs" "$vt" "$out" --examples $mode "$tmp/job"
# the known answers: ranks 7 mod 10 grow at keep_outputs (train.py:64),
# ranks 3 mod 10 fail a 4 GiB cudaMalloc at train_step (train.py:60)
cat >"$tmp/q.mjs" <<'JS'
import { DuckDBInstance } from '@duckdb/node-api'
const [out, n] = process.argv.slice(2)
const db = await DuckDBInstance.create(':memory:'); const c = await db.connect()
const q = async s => (await c.runAndReadAll(s)).getRowObjectsJson()
const v = t => `read_parquet('${out}/${t}/*/*/*.parquet', hive_partitioning = true)`
const grow = await q(`SELECT DISTINCT rank FROM ${v('sites')} WHERE growing = 1 AND line = 64 ORDER BY rank`)
const fail = await q(`SELECT DISTINCT f.rank FROM ${v('failures')} f JOIN ${v('sites')} s USING (rank, host, pid, site)
  WHERE s.line = 60 AND f.out_of_memory = 1 ORDER BY rank`)
let bad = 0
const want = m => [...Array(Number(n)).keys()].filter(r => r % 10 === m).join(',')
if (grow.map(r => r.rank).join(',') !== want(7)) { console.error('growing ranks', grow); bad++ }
if (fail.map(r => r.rank).join(',') !== want(3)) { console.error('failing ranks', fail); bad++ }
process.exit(bad)
JS
cp "$tmp/q.mjs" "$viewer/.parquet_job_q.mjs"
trap 'rm -rf "$tmp" "$viewer/.parquet_job_q.mjs"' EXIT
"$node" "$viewer/.parquet_job_q.mjs" "$out" "$n"
echo "parquet_job: ok"
