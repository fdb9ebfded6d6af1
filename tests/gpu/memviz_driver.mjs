// memviz_driver.mjs MEMORYVIZ_JS SNAPSHOT[=PEAK_BYTES] ... - run PyTorch's
// own viewer code (torch/utils/viz/MemoryViz.js, given at run time, never
// committed) over vramtrace's memory-viz snapshots in node, without a
// browser: its unpickle and annotate_snapshot, process_alloc_data as the
// Active Memory Timeline and the Active Cached Segment Timeline call it,
// and MemoryView(...).draw(idx) as the Allocator State History calls it at
// every event index (evenly sampled above MEMVIZ_MAX_IDX indices per
// device, default 4000: each draw replays the trace back from the end).
// What the browser also runs on these data: create_trace_view for both
// timelines (MemoryPlot's polygons, the minimap, the legend), the text of
// every event of the Allocator State History's list (formatEvent) and of
// the selected one (eventStack), and the hover texts: the timeline's
// context_for_id of every element, the segment, block and rounding texts
// of every drawn rect (their register callbacks, at every
// MEMVIZ_HOVER_EVERY-th draw, default 16, and the last).
// d3 is replaced by a stub that runs every attribute callback over the
// bound data (where a missing segment would throw in the browser) and
// draws nothing.  With =PEAK_BYTES the timeline's peak (max_size, summed
// over the snapshot's devices) must lie within 1 % of it.
// Prints one line per snapshot; exit 1 when any threw or missed its peak.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {pathToFileURL} from 'node:url';

// ---- a d3 stand-in: chainable selections, a linear scale
class Sel {
  constructor(data) {
    this.d = data || null;
  }
  each(v) {
    if (typeof v === 'function' && this.d) this.d.forEach((x, i) => v(x, i));
    return this;
  }
  append() { return new Sel(this.d); }
  select() { return new Sel(); }
  selectAll() { return new Sel(); }
  data(a) { return new Sel(a); }
  enter() { return this; }
  attr(_k, v) { return this.each(v); }
  style(_k, v) { return this.each(v); }
  text(v) { return this.each(v); }
  html(v) { return this.each(v); }
  on() { return this; }
  call() { return this; }
  remove() { return this; }
  datum() { return this.d && this.d.length === 1 ? this.d[0] : null; }
  node() { return {children: [], value: '', options: [], scrollIntoViewIfNeeded() {}}; }
}
function scaleLinear() {
  let d = [0, 1], r = [0, 1];
  const s = x => r[0] + ((x - d[0]) / (d[1] - d[0] || 1)) * (r[1] - r[0]);
  s.domain = v => ((d = v), s);
  s.range = v => ((r = v), s);
  s.invert = y => d[0] + ((y - r[0]) / (r[1] - r[0] || 1)) * (d[1] - d[0]);
  return s;
}
const chain = () => {
  const o = () => o;
  o.on = () => o;
  o.extent = () => o;
  o.scale = () => o;
  o.tickFormat = () => o;
  o.transform = () => o;
  return o;
};
globalThis.__vt_d3 = {
  d3: {select: () => new Sel(), selectAll: () => new Sel(), event: {}, format: () => String},
  axisLeft: chain, scaleLinear, zoom: chain, zoomIdentity: {scale: () => ({translate: () => ({})})}, brushX: chain,
};

// ---- load the viewer's module with the stand-in in place of its imports
async function loadViewer(jsPath) {
  let src = fs.readFileSync(jsPath, 'utf8');
  src = src.replace(/^import\s+\*\s+as\s+d3\s+from\s+["'][^"']*["'];?$/m, 'const d3 = globalThis.__vt_d3.d3;');
  src = src.replace(/^import\s+\{([^}]*)\}\s+from\s+["'][^"']*["'];?$/gm, (_m, names) =>
    `const {${names}} = globalThis.__vt_d3;`);
  src += '\nexport {unpickle, annotate_snapshot, process_alloc_data, MemoryView, create_trace_view, formatEvent, ' +
    'eventStack};\n';
  const tmp = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'memviz-')), 'MemoryViz.mjs');
  fs.writeFileSync(tmp, src);
  return import(pathToFileURL(tmp).href);
}

function devicesOf(snap) {
  const devs = new Set();
  snap.device_traces.forEach((t, i) => t.length > 0 && devs.add(i));
  for (const s of snap.segments) devs.add(s.device);
  return [...devs].sort((a, b) => a - b);
}

function checkOne(V, file, want, maxIdx) {
  const buf = fs.readFileSync(file);
  const snap = V.unpickle(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
  V.annotate_snapshot(snap);
  let peak = 0, draws = 0;
  const faults = [];
  for (const dev of devicesOf(snap)) {
    const where = w => `device ${dev} ${w}`;
    for (const [name, segs] of [['Active Memory Timeline', false], ['Active Cached Segment Timeline', true]]) {
      try {
        const data = V.process_alloc_data(snap, dev, segs, 15000);
        if (!segs) peak += data.max_size;
        for (let id = 0; id < data.elements_length; id++) data.context_for_id(id); // hover
        V.create_trace_view(new Sel(), snap, dev, segs);
      } catch (e) {
        faults.push(where(`${name}: ${e.message}`));
      }
    }
    const events = snap.device_traces[dev] || [];
    const n = events.length;
    try {
      events.forEach(e => V.formatEvent(e)); // EventSelector's list
    } catch (e) {
      faults.push(where(`Allocator State History's event list: ${e.message}`));
    }
    // StackInfo.register: what a mouseover runs on each drawn rect
    let hover = false;
    const stackInfo = {
      register(dom, enter, leave = () => {}) {
        if (!hover || !dom.d) return;
        for (const x of dom.d) {
          const t = new Sel([x]);
          enter(t);
          leave(t);
        }
      },
      highlight() {},
    };
    let view;
    try {
      view = V.MemoryView(new Sel(), stackInfo, snap, dev);
    } catch (e) {
      faults.push(where(`Allocator State History: ${e.message}`));
      continue;
    }
    const step = n > maxIdx ? n / maxIdx : 1;
    const seen = new Set();
    const hoverEvery = Number(process.env.MEMVIZ_HOVER_EVERY || 16);
    for (let k = 0; k < Math.min(n, maxIdx) + 1; k++) {
      // no events: the browser draws index 0 (select(null))
      const idx = n === 0 ? 0 : Math.min(n - 1, Math.floor(k * step));
      if (seen.has(idx)) continue;
      seen.add(idx);
      hover = (seen.size - 1) % hoverEvery === 0 || idx === n - 1 || n === 0;
      try {
        const [reserved, allocated] = view.draw(idx);
        if (n > 0) V.eventStack(events[idx], allocated, reserved); // the selected event's text
        draws++;
      } catch (e) {
        faults.push(where(`Allocator State History at event ${idx} of ${n}: ${e.message}`));
        break;
      }
    }
  }
  if (want !== null && want > 0 && Math.abs(peak - want) > 0.01 * want)
    faults.push(`timeline peak ${peak} against the report's ${want} (${((100 * (peak - want)) / want).toFixed(1)} %)`);
  return {peak, draws, faults};
}

const [jsPath, ...args] = process.argv.slice(2);
if (!jsPath || args.length === 0) {
  console.error('usage: memviz_driver.mjs MemoryViz.js SNAPSHOT[=PEAK_BYTES] ...');
  process.exit(2);
}
const V = await loadViewer(jsPath);
const maxIdx = Number(process.env.MEMVIZ_MAX_IDX || 4000);
let bad = 0;
for (const a of args) {
  const eq = a.lastIndexOf('=');
  const file = eq > 0 ? a.slice(0, eq) : a;
  const want = eq > 0 ? Number(a.slice(eq + 1)) : null;
  let r;
  try {
    r = checkOne(V, file, want, maxIdx);
  } catch (e) {
    r = {peak: 0, draws: 0, faults: [`unpickle/annotate: ${e.message}`]};
  }
  const ok = r.faults.length === 0;
  bad += ok ? 0 : 1;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${file}: ${r.draws} draws, timeline peak ${r.peak}` +
              `${want !== null ? ` (report ${want})` : ''}${ok ? '' : '\n     ' + r.faults.slice(0, 3).join('\n     ')}`);
}
console.log(`memviz_driver: ${args.length - bad} of ${args.length} snapshots drawn without a fault`);
process.exit(bad ? 1 : 0);
