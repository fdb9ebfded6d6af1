// parquet_examples.mjs - the SQL examples of docs/EXPORT.md ("SQL across a
// job") against `vramtrace report --json` of the same traces; used by
// parquet_check.mjs --examples.  checkExamples(sql, rows, report, procs,
// fail) runs each example (sql: name -> text), checks its answer, and
// returns 0 (differences go through fail()).  Without a report (a job too
// large for one) each example must run and answer for the processes the
// processes table has.
const frameKey = (f, file, line) => `${f ?? ''}\u0000${file ?? ''}\u0000${line || 0}`

export async function checkExamples (sql, rows, report, procs, fail) {
  const eq = (what, got, want) => {
    if (String(got) !== String(want)) fail(`example ${what}: SQL ${got}, report ${want}`)
  }
  for (const name of ['top_growing_sites', 'growing_ranks', 'live_by_step', 'peak_per_rank', 'peak_from_blocks', 'allocated_peak_sites', 'failed_by_line']) {
    if (!sql[name]) fail(`example ${name}: not in docs/EXPORT.md`)
  }
  const ans = {}
  for (const [name, text] of Object.entries(sql)) {
    try {
      ans[name] = await rows(text)
    } catch (e) {
      fail(`example ${name}: ${e.message}`)
      ans[name] = []
    }
  }
  const pidOf = new Map(procs.map(p => [p.trace_file, p]))
  const id = r => `${r.rank}/${r.host}/${r.pid}`
  if (!report) {
    eq('peak_per_rank: rows', ans.peak_per_rank.length, procs.length)
    const fromBlocks = new Map()
    for (const r of ans.peak_from_blocks) fromBlocks.set(id(r), Math.max(fromBlocks.get(id(r)) || 0, Number(r.peak_bytes)))
    for (const r of ans.peak_per_rank) eq(`peak_from_blocks ${id(r)}`, fromBlocks.get(id(r)) || 0, r.peak_bytes)
    return 0
  }
  const P = report.processes.map(p => ({ p, q: pidOf.get(p.file) })).filter(x => x.q)

  // top growing call sites: the report's growing sites by user frame
  const want = new Map()
  for (const { p, q } of P) {
    for (const g of p.growth.sites) {
      const uf = g.site.user_frame || {}
      const k = frameKey(uf.function, uf.file, uf.line)
      const e = want.get(k) || { bytes: 0, procs: new Set() }
      e.bytes += g.grown_bytes
      e.procs.add(id(q))
      want.set(k, e)
    }
  }
  const top = [...want.entries()].sort((a, b) => b[1].bytes - a[1].bytes)
  eq('top_growing_sites: rows', ans.top_growing_sites.length, Math.min(20, top.length))
  for (const r of ans.top_growing_sites) {
    const w = want.get(frameKey(r.function, r.file, r.line))
    if (!w) { fail(`example top_growing_sites: ${r.function} ${r.file}:${r.line} not growing in the report`); continue }
    eq(`top_growing_sites ${r.file}:${r.line} bytes`, r.grown_bytes, w.bytes)
    eq(`top_growing_sites ${r.file}:${r.line} processes`, r.processes, w.procs.size)
  }

  // growing ranks: the processes whose report grows, with its bytes
  const grows = P.filter(x => x.p.growth.grown_bytes > 0)
  eq('growing_ranks: rows', ans.growing_ranks.length, grows.length)
  const gm = new Map(ans.growing_ranks.map(r => [id(r), r]))
  for (const { p, q } of grows) eq(`growing_ranks ${p.file}`, gm.get(id(q))?.grown_bytes ?? 0, p.growth.grown_bytes)

  // live bytes by step: a row per step of each process with steps
  const stepRows = await rows('SELECT count(*) AS n FROM steps')
  const withLive = await rows(`SELECT count(*) AS n FROM (SELECT DISTINCT s.rank, s.host, s.pid, s.step FROM steps s
    JOIN allocations a ON a.rank = s.rank AND a.host = s.host AND a.pid = s.pid
     AND a.alloc_time <= s.start_time AND (a.free_time IS NULL OR a.free_time > s.start_time)
    WHERE a.kind IN ('device', 'device_static', 'array'))`)
  eq('live_by_step: rows', ans.live_by_step.length, withLive[0].n)
  if (Number(stepRows[0].n) && !ans.live_by_step.length) fail('example live_by_step: no rows')

  // peaks: the report's, per process and per device
  const pm = new Map(ans.peak_per_rank.map(r => [id(r), r]))
  const bm = new Map(ans.peak_from_blocks.map(r => [`${id(r)}/${r.device}`, r]))
  eq('peak_per_rank: rows', ans.peak_per_rank.length, P.length)
  for (const { p, q } of P) {
    const peak = Math.max(0, ...p.devices.map(d => d.peak_live_bytes))
    eq(`peak_per_rank ${p.file}`, pm.get(id(q))?.peak_bytes ?? 0, peak)
    for (const d of p.devices) {
      if (d.peak_live_bytes <= 0) continue
      const got = Number(bm.get(`${id(q)}/${d.index}`)?.peak_bytes ?? 0)
      // with module globals live (gpu-torch-tracker-*) the two differ a
      // little: their records carry times earlier than the records before
      // them, the replay sums in record order, SQL in time order
      // (docs/EXPORT.md): within 1% there
      if (d.by_kind.device_static) {
        if (Math.abs(got - d.peak_live_bytes) > d.peak_live_bytes / 100) fail(`example peak_from_blocks ${p.file} device ${d.index}: SQL ${got}, report ${d.peak_live_bytes} (more than 1% apart)`)
      } else {
        eq(`peak_from_blocks ${p.file} device ${d.index}`, got, d.peak_live_bytes)
      }
    }
  }

  // PyTorch's allocated peak: its bytes, and by line what was live then
  // (every line when the report lists all its sites)
  const ap = new Map()
  for (const r of ans.allocated_peak_sites) {
    const k = `${id(r)}/${r.device}`
    const e = ap.get(k) || { peak: Number(r.peak_bytes), sum: 0, lines: new Map() }
    e.sum += Number(r.bytes)
    const fk = frameKey(r.function, r.file, r.line)
    e.lines.set(fk, (e.lines.get(fk) || 0) + Number(r.bytes))
    ap.set(k, e)
  }
  let apWant = 0
  for (const { p, q } of P) {
    for (const pk of p.peak) {
      if (!pk.allocated) continue
      apWant++
      const k = `${id(q)}/${pk.device}`
      const e = ap.get(k)
      if (!e) { fail(`example allocated_peak_sites ${p.file} device ${pk.device}: no rows, report ${pk.allocated.bytes}`); continue }
      eq(`allocated_peak_sites ${p.file} device ${pk.device}: peak`, e.peak, pk.allocated.bytes)
      eq(`allocated_peak_sites ${p.file} device ${pk.device}: live then`, e.sum, pk.allocated.bytes)
      if (pk.allocated.sites.length === pk.allocated.sites_total) {
        const want = new Map()
        for (const st of pk.allocated.sites) {
          const uf = st.user_frame || {}
          const fk = frameKey(uf.function, uf.file, uf.line)
          want.set(fk, (want.get(fk) || 0) + st.bytes)
        }
        for (const [fk, b] of want) eq(`allocated_peak_sites ${p.file} ${fk.replaceAll('\u0000', ' ')}`, e.lines.get(fk) || 0, b)
        eq(`allocated_peak_sites ${p.file} device ${pk.device}: lines`, e.lines.size, want.size)
      }
    }
  }
  eq('allocated_peak_sites: processes and devices', ap.size, apWant)

  // failed allocations by line: every call, the probes apart; by line
  // where the report describes every request of the process
  let calls = 0; let probes = 0; let oom = 0
  for (const r of ans.failed_by_line) {
    calls += Number(r.failed_calls)
    if (r.probe !== null) probes += Number(r.failed_calls)
    else oom += Number(r.out_of_memory)
  }
  const sum = f => P.reduce((s, x) => s + f(x.p), 0)
  eq('failed_by_line: calls', calls, sum(p => p.oom.failed_calls))
  eq('failed_by_line: probes', probes, sum(p => p.oom.probes.count))
  const lines = new Map()
  let described = true
  for (const { p } of P) {
    if (p.oom.events.length < p.oom.failed) described = false
    for (const e of p.oom.events) {
      const uf = e.user_frame || {}
      const k = frameKey(uf.function, uf.file, uf.line)
      lines.set(k, (lines.get(k) || 0) + e.failed_calls)
    }
  }
  if (described) {
    const got = new Map()
    for (const r of ans.failed_by_line) {
      if (r.probe !== null) continue
      const k = frameKey(r.function, r.file, r.line)
      got.set(k, (got.get(k) || 0) + Number(r.failed_calls))
    }
    for (const [k, n] of lines) eq(`failed_by_line ${k.replaceAll('\u0000', ' ')}`, got.get(k) || 0, n)
    eq('failed_by_line: lines', got.size, lines.size)
  }
  if (oom < sum(p => p.oom.out_of_memory)) fail(`example failed_by_line: ${oom} out-of-memory calls, the report ${sum(p => p.oom.out_of_memory)} requests`)
  return 0
}
