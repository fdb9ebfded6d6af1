// parquet_check.mjs - the Parquet export (docs/EXPORT.md, "Parquet") read
// back by the readers users have, DuckDB (@duckdb/node-api) and hyparquet,
// against `vramtrace report --json` of the same traces (the ctest
// analyze.parquet.* runs it):
//
//   node parquet_check.mjs VRAMTRACE OUTDIR [--examples] [--no-report] INPUT...
//
// Exports INPUT... (traces or directories) into OUTDIR, then checks, per
// trace, the row counts and sums that the JSON report gives: allocations
// (one row per block: the alloc and vmm_create records), the bytes live at
// the end by kind, kernels, samples, failed calls and probes, the peak,
// leaked and grown bytes; every file read again with hyparquet must give
// DuckDB's row count and the count and sum of every number column.  --examples also runs the SQL examples
// of docs/EXPORT.md (read from it) and checks each against the report.
// --no-report: a job too large for one report (the 1,000-trace bench):
// only DuckDB's answers and their row counts against the processes table.
// Exit 0 when everything agrees, 1 with each difference on stderr.
import { spawnSync } from 'node:child_process'
import { readFileSync, readdirSync, rmSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { DuckDBInstance } from '@duckdb/node-api'
import { parquetMetadata, parquetReadObjects } from 'hyparquet'
import { compressors } from 'hyparquet-compressors'

const args = process.argv.slice(2)
const vramtrace = args.shift()
const out = args.shift()
let examples = false
let withReport = true
const inputs = []
for (const a of args) {
  if (a === '--examples') examples = true
  else if (a === '--no-report') withReport = false
  else inputs.push(a)
}
let failures = 0
function fail (msg) { failures++; console.error('parquet_check: ' + msg) }
function eq (what, got, want) {
  if (String(got) !== String(want)) fail(`${what}: parquet ${got}, report ${want}`)
}

rmSync(out, { recursive: true, force: true }) // a fresh export: no file of an earlier run
const ex = spawnSync(vramtrace, ['export', '--format', 'parquet', '--no-symbols', '--no-progress', '-o', out, ...inputs],
  { encoding: 'utf8' })
if (ex.status !== 0 && ex.status !== 1) { console.error(ex.stderr); process.exit(1) }
const TABLES = ['allocations', 'sites', 'kernels', 'samples', 'steps', 'failures', 'processes']

const db = await DuckDBInstance.create(':memory:')
const c = await db.connect()
for (const t of TABLES) {
  // the views the examples use: every file of the table, rank and host from the paths
  await c.run(`CREATE VIEW ${t} AS SELECT * FROM read_parquet('${out}/${t}/*/*/*.parquet', hive_partitioning = true)`)
  await c.run(`CREATE VIEW ${t}_f AS SELECT *, regexp_extract(filename, '[^/]*$') AS part
               FROM read_parquet('${out}/${t}/*/*/*.parquet', hive_partitioning = true, filename = true)`)
}
async function rows (sql) { return (await c.runAndReadAll(sql)).getRowObjectsJson() }

// per trace (its part file's name within rank and host): the processes row
const procs = await rows(`SELECT rank, host, part, pid, trace_file, peak_bytes, leaked_bytes, grown_bytes,
  failed_calls, allocations FROM processes_f`)
const byTrace = new Map(procs.map(p => [p.trace_file, p]))
const key = p => `${p.rank}\u0000${p.host}\u0000${p.part}`
async function perTrace (sql) {
  const m = new Map()
  for (const r of await rows(sql)) m.set(key(r), r)
  return m
}
const allocs = await perTrace(`SELECT rank, host, part, count(*) AS n, sum(size) AS bytes,
  count(*) FILTER (WHERE free_time IS NULL) AS live FROM allocations_f GROUP BY ALL`)
const liveKind = await rows(`SELECT rank, host, part, kind, sum(size) AS bytes FROM allocations_f
  WHERE free_time IS NULL GROUP BY ALL`)
const kernels = await perTrace('SELECT rank, host, part, count(*) AS n FROM kernels_f GROUP BY ALL')
const samples = await perTrace(`SELECT rank, host, part, count(*) FILTER (WHERE source = 'driver') AS driver,
  count(*) FILTER (WHERE source = 'pool') AS pool FROM samples_f GROUP BY ALL`)
const fails = await perTrace(`SELECT rank, host, part, count(*) AS n, count(*) FILTER (WHERE probe IS NULL) AS own
  FROM failures_f GROUP BY ALL`)
const sites = await perTrace(`SELECT rank, host, part, sum(grown_bytes) AS grown, sum(leaked_bytes) AS leaked,
  sum(allocs) AS allocs FROM sites_f GROUP BY ALL`)

if (withReport) {
  const rep = spawnSync(vramtrace, ['report', '--json', '--no-symbols', '--no-progress', ...inputs],
    { encoding: 'utf8', maxBuffer: 1 << 30 })
  const report = JSON.parse(rep.stdout)
  if (report.processes.length !== procs.length) fail(`processes: parquet ${procs.length}, report ${report.processes.length}`)
  for (const p of report.processes) {
    const q = byTrace.get(p.file)
    if (!q) { fail(`${p.file}: no processes row`); continue }
    const k = key(q)
    const w = `${p.file}`
    const ev = p.events
    const a = allocs.get(k) || { n: 0, bytes: 0, live: 0 }
    eq(`${w}: allocations`, a.n, (ev.alloc || 0) + (ev.vmm_create || 0))
    eq(`${w}: processes.allocations`, q.allocations, ev.alloc || 0)
    const s = sites.get(k) || { allocs: 0, grown: 0, leaked: 0 }
    eq(`${w}: sites' allocs`, s.allocs, a.n)
    const endKind = {}
    for (const d of p.devices) {
      for (const [kind, v] of Object.entries(d.by_kind)) endKind[kind] = (endKind[kind] || 0) + v.at_end_bytes
    }
    const gotKind = {}
    for (const r of liveKind) if (key(r) === k) gotKind[r.kind] = Number(r.bytes)
    for (const kind of new Set([...Object.keys(endKind), ...Object.keys(gotKind)])) {
      eq(`${w}: bytes live at the end, ${kind}`, gotKind[kind] || 0, endKind[kind] || 0)
    }
    eq(`${w}: kernels`, (kernels.get(k) || { n: 0 }).n, ev.kernel || 0)
    const sm = samples.get(k) || { driver: 0, pool: 0 }
    eq(`${w}: driver samples`, sm.driver, ev.memory_usage || 0)
    eq(`${w}: pool samples`, sm.pool, ev.pool_usage || 0)
    const f = fails.get(k) || { n: 0, own: 0 }
    eq(`${w}: failed calls`, f.n, p.oom.failed_calls)
    eq(`${w}: failed calls, probes left out`, f.own, p.oom.failed_calls - p.oom.probes.count)
    const peak = Math.max(0, ...p.devices.map(d => d.peak_live_bytes))
    eq(`${w}: peak`, q.peak_bytes, peak)
    eq(`${w}: leaked`, q.leaked_bytes, p.leaks.bytes)
    eq(`${w}: grown`, q.grown_bytes, p.growth.grown_bytes)
    eq(`${w}: sites' grown bytes`, s.grown, p.growth.grown_bytes)
  }
}

// hyparquet: every file, its row count and byte sums as DuckDB reads them
function filesOf (dir) {
  const r = []
  for (const e of readdirSync(dir)) {
    const f = join(dir, e)
    if (statSync(f).isDirectory()) r.push(...filesOf(f))
    else if (e.endsWith('.parquet')) r.push(f)
  }
  return r
}
// every number column of every table, summed by both readers: each
// encoding the writer chooses (PLAIN, DELTA_BINARY_PACKED, a one-value
// dictionary) read by two decoders that share nothing; a timestamp as its
// milliseconds (hyparquet reads it as a Date)
let nfiles = 0
for (const t of TABLES) {
  const cols = (await rows(`DESCRIBE SELECT * FROM read_parquet('${out}/${t}/*/*/*.parquet', hive_partitioning = false)`))
    .filter(r => /^(BIGINT|INTEGER|TIMESTAMP_NS)$/.test(r.column_type))
    .map(r => ({ name: r.column_name, ts: r.column_type === 'TIMESTAMP_NS' }))
  const sums = cols.map((c, k) => `sum(${c.ts ? `epoch_ms(${c.name})` : c.name})::VARCHAR AS s${k}, count(${c.name}) AS n${k}`)
  const duck = new Map()
  for (const r of await rows(`SELECT filename, count(*) AS n${sums.length ? ', ' + sums.join(', ') : ''}
      FROM read_parquet('${out}/${t}/*/*/*.parquet', filename = true, hive_partitioning = false) GROUP BY ALL`)) duck.set(r.filename, r)
  for (const f of filesOf(join(out, t))) {
    const b = readFileSync(f)
    const file = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)
    const md = parquetMetadata(file)
    const objs = await parquetReadObjects({ file, compressors })
    nfiles++
    const d = duck.get(f) || { n: 0 }
    eq(`hyparquet ${f}: rows`, objs.length, d.n)
    eq(`hyparquet ${f}: footer rows`, md.num_rows, d.n)
    cols.forEach((c, k) => {
      let sum = 0n
      let n = 0
      for (const o of objs) {
        const v = o[c.name]
        if (v === null || v === undefined) continue
        n++
        sum += c.ts ? BigInt(v instanceof Date ? v.getTime() : Number(BigInt(v) / 1000000n)) : BigInt(v)
      }
      eq(`hyparquet ${f}: count(${c.name})`, n, d[`n${k}`] ?? 0)
      eq(`hyparquet ${f}: sum(${c.name})`, n ? sum : null, d[`s${k}`] ?? null)
    })
  }
}

// the examples of docs/EXPORT.md, each between "<!-- example NAME -->" and its ```sql block
if (examples) {
  const here = dirname(fileURLToPath(import.meta.url))
  const md = readFileSync(join(here, '..', 'docs', 'EXPORT.md'), 'utf8')
  const re = /<!-- example ([a-z_]+) -->\s*```sql\n([\s\S]*?)```/g
  const ex = {}
  for (let m; (m = re.exec(md));) ex[m[1]] = m[2]
  const report = withReport
    ? JSON.parse(spawnSync(vramtrace, ['report', '--json', '--no-symbols', '--no-progress', ...inputs], { encoding: 'utf8', maxBuffer: 1 << 30 }).stdout)
    : null
  const { checkExamples } = await import('./parquet_examples.mjs')
  await checkExamples(ex, rows, report, procs, fail) // differences counted by fail()
}
console.log(`parquet_check: ${procs.length} traces, ${nfiles} files read by DuckDB and hyparquet, ${failures} differences`)
process.exit(failures ? 1 : 0)
