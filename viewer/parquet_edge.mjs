// parquet_edge.mjs DIR - DIR/edge.parquet (tests/analyze/parquet/test_parquet.c)
// read by DuckDB and by hyparquet must give the rows of DIR/edge.jsonl:
// nulls, negative INT32s, timestamps (DuckDB: exact ns), strings with
// invalid UTF-8 replaced, lists null, empty and full, row groups of 777,
// delta-coded numbers (step, wrap, wrap32: deltas past the type's range).
// Exit 0 or 1 with the first differences on stderr.
import { readFileSync } from 'node:fs'
import { DuckDBInstance } from '@duckdb/node-api'
import { parquetMetadata, parquetReadObjects } from 'hyparquet'
import { compressors } from 'hyparquet-compressors'

const dir = process.argv[2]
const want = readFileSync(`${dir}/edge.jsonl`, 'utf8').trim().split('\n').map(l => JSON.parse(l))
let bad = 0
const diff = (who, i, col, got, exp) => {
  if (JSON.stringify(got) !== JSON.stringify(exp) && bad++ < 10) console.error(`parquet_edge: ${who} row ${i} ${col}: ${JSON.stringify(got)}, want ${JSON.stringify(exp)}`)
}
const db = await DuckDBInstance.create(':memory:')
const c = await db.connect()
const rows = (await c.runAndReadAll(`SELECT id, small, epoch_ns(t)::VARCHAR AS t, name, long, items, same,
  step, wrap::VARCHAR AS wrap, wrap32 FROM read_parquet('${dir}/edge.parquet') ORDER BY id`)).getRowObjectsJson()
if (rows.length !== want.length) { console.error(`parquet_edge: DuckDB ${rows.length} rows, want ${want.length}`); process.exit(1) }
rows.forEach((r, i) => {
  const w = want[i]
  diff('duckdb', i, 'id', Number(r.id), w.id)
  diff('duckdb', i, 'small', r.small, w.small)
  diff('duckdb', i, 't', r.t, w.t)
  for (const k of ['name', 'long', 'items']) diff('duckdb', i, k, r[k], w[k])
  diff('duckdb', i, 'same', Number(r.same), 42)
  diff('duckdb', i, 'step', Number(r.step), w.step)
  diff('duckdb', i, 'wrap', r.wrap, w.wrap)
  diff('duckdb', i, 'wrap32', r.wrap32, w.wrap32)
})
// the statistics DuckDB reads from the footer
const st = (await c.runAndReadAll(`SELECT path_in_schema, stats_min_value, stats_max_value, stats_null_count
  FROM parquet_metadata('${dir}/edge.parquet') WHERE row_group_id = 0`)).getRowObjectsJson()
const first = want.slice(0, 777)
const small = first.map(w => w.small).filter(v => v !== null)
const s0 = st.find(s => s.path_in_schema === 'small')
diff('stats', 0, 'small min', Number(s0.stats_min_value), Math.min(...small))
diff('stats', 0, 'small max', Number(s0.stats_max_value), Math.max(...small))
diff('stats', 0, 'small nulls', Number(s0.stats_null_count), first.length - small.length)

// hyparquet reads a nanosecond timestamp as a Date: its milliseconds
const ns = t => String(t instanceof Date ? t.getTime() : BigInt(t) / 1000000n)
const b = readFileSync(`${dir}/edge.parquet`)
const file = b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)
const md = parquetMetadata(file)
diff('hyparquet', 0, 'row groups', md.row_groups.length, Math.ceil(want.length / 777))
const hy = await parquetReadObjects({ file, compressors })
if (hy.length !== want.length) { console.error(`parquet_edge: hyparquet ${hy.length} rows`); process.exit(1) }
hy.forEach((r, i) => {
  const w = want[i]
  diff('hyparquet', i, 'id', Number(r.id), w.id)
  diff('hyparquet', i, 'small', r.small ?? null, w.small)
  for (const k of ['name', 'long', 'items']) diff('hyparquet', i, k, r[k] ?? null, w[k])
  diff('hyparquet', i, 'same', Number(r.same), 42)
  diff('hyparquet', i, 't', r.t === null || r.t === undefined ? null : ns(r.t), w.t === null ? null : String(BigInt(w.t) / 1000000n))
  diff('hyparquet', i, 'step', Number(r.step), w.step)
  diff('hyparquet', i, 'wrap', r.wrap === null || r.wrap === undefined ? null : String(r.wrap), w.wrap)
  diff('hyparquet', i, 'wrap32', r.wrap32, w.wrap32)
})
console.log(`parquet_edge: ${want.length} rows, ${md.row_groups.length} row groups, ${bad} differences`)
process.exit(bad ? 1 : 0)
