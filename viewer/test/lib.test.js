// lib.test.js - unit tests of the page's data transforms (node --test).
"use strict";
const test = require("node:test");
const assert = require("node:assert");
const L = require("../lib.js");

const site = (hist, frames) => ({ hist, frames: frames || [["f", "a.py", 1, 1, 0]] });

test("bytes with their unit", () => {
  assert.strictEqual(L.fmtBytes(0), "0 B");
  assert.strictEqual(L.fmtBytes(1023), "1023 B");
  assert.strictEqual(L.fmtBytes(1024), "1.00 KiB");
  assert.strictEqual(L.fmtBytes(1.5 * 1024 * 1024 * 1024), "1.50 GiB");
  assert.strictEqual(L.fmtBytes(-2048), "-2.00 KiB");
});

test("times as the text writes them: seconds, 3 decimals", () => {
  assert.strictEqual(L.fmtTime(0.85529), "0.855 s");
  assert.strictEqual(L.fmtTime(6.4881), "6.488 s");
  assert.strictEqual(L.fmtTime(0), "0.000 s");
  assert.strictEqual(L.fmtTime(0.0000421), "42.1 \u00b5s");
});

test("live bytes at a bucket, and what a range left live", () => {
  // [alloc bucket, free bucket, bytes]; free bucket 10 = never freed (10 buckets)
  const s = site([[0, 3, 100], [2, 10, 50], [5, 6, 7], [5, 10, 1]]);
  assert.strictEqual(L.liveAt(s, 0), 100);
  assert.strictEqual(L.liveAt(s, 2), 150);
  assert.strictEqual(L.liveAt(s, 3), 50);
  assert.strictEqual(L.liveAt(s, 5), 58);
  assert.strictEqual(L.liveAt(s, 9), 51);
  assert.strictEqual(L.rangeLeft(s, 2, 5), 58); // the 50, the 7 (freed after the range) and the 1; the 100 began before
  assert.strictEqual(L.rangeLeft(s, 5, 5), 8);
  const series = L.liveSeries(s, 10);
  for (let b = 0; b < 10; b++) assert.strictEqual(series[b], L.liveAt(s, b), "bucket " + b);
});

test("the pool's cache at a bucket: its segments less its tensors, never counted twice", () => {
  // a 22-byte segment from bucket 1 on, a tensor of 8 inside it over [2, 5)
  const c = { cached: 1, hist: [[1, 10, 22]], tensors_hist: [[2, 5, 8]] };
  assert.strictEqual(L.liveAt(c, 0), 0);
  assert.strictEqual(L.liveAt(c, 1), 22);
  assert.strictEqual(L.liveAt(c, 3), 14);
  assert.strictEqual(L.liveAt(c, 6), 22);
  assert.strictEqual(L.rangeLeft(c, 0, 9), 0); // a cache is no allocation
  const series = L.liveSeries(c, 10);
  for (let b = 0; b < 10; b++) assert.strictEqual(series[b], L.liveAt(c, b), "bucket " + b);
  // the tensor and the cache add up to the segment
  const t = { hist: [[2, 5, 8]] };
  assert.strictEqual(L.liveAt(c, 3) + L.liveAt(t, 3), 22);
});

test("decimation keeps every minimum and maximum", () => {
  const mn = [], mx = [];
  for (let i = 0; i < 1000; i++) { mn.push(i % 7); mx.push(i % 7 + (i === 500 ? 1000 : 0)); }
  const d = L.decimate(mn, mx, 0, 1000, 100);
  assert.strictEqual(d.min.length, 100);
  assert.strictEqual(Math.max(...d.max), 1003);
  assert.strictEqual(Math.min(...d.min), 0);
  const z = L.decimate(mn, mx, 0, 10, 100); // zoomed in: more columns than buckets
  assert.strictEqual(z.max.length, 100);
  assert.ok(z.max.every((v) => v >= 0 && v <= 6));
});

test("the icicle: sums, frames outermost first, native runtime frames folded", () => {
  const py = ["train", "t.py", 5, 1, 0], inner = ["alloc", "t.py", 9, 1, 0], rt = ["cudaMalloc", "libcudart", 0, 0, 1];
  const sites = [site([], [rt, inner, py]), site([], [rt, py])];
  const w = [30, 12];
  const t = L.buildTree(sites, (s, i) => w[i], false);
  assert.strictEqual(t.value, 42);
  const top = t.children["train (t.py:5)"];
  assert.ok(top, "outermost frame at the top");
  assert.strictEqual(top.value, 42);
  assert.strictEqual(top.children["alloc (t.py:9)"].value, 30);
  assert.ok(!("cudaMalloc" in top.children["alloc (t.py:9)"].children), "runtime frames folded");
  const n = L.buildTree(sites, (s, i) => w[i], true);
  assert.strictEqual(n.children["train (t.py:5)"].children["alloc (t.py:9)"].children["cudaMalloc"].value, 30);
  const rects = L.layout(t, 1000, 0);
  assert.strictEqual(rects[0].w, 1000);
  const w1 = rects.filter((r) => r.depth === 1).reduce((a, r) => a + r.w, 0);
  const w2 = rects.filter((r) => r.depth === 2).reduce((a, r) => a + r.w, 0);
  assert.ok(Math.abs(w1 - 1000) < 1e-6, "a child as wide as its bytes");
  assert.ok(Math.abs(w2 - 1000 * 30 / 42) < 1e-6);
});

test("a differential tree: grown and shrunk call sites", () => {
  const st = (fn) => [{ kind: "python", function: fn, file: "t.py", line: 1, internal: false }];
  const t = L.diffTree([
    { stack: st("a"), leaked_bytes: [10, 50] },
    { stack: st("b"), leaked_bytes: [30, 0] },
  ], false);
  assert.strictEqual(t.value, 80);
  assert.strictEqual(t.delta, 10);
  assert.strictEqual(t.children["a (t.py:1)"].delta, 40);
  assert.strictEqual(t.children["b (t.py:1)"].delta, -30);
});

test("a differential tree of the diff's frame strings folds installed packages unless asked", () => {
  const sp = "/v/lib/python3.12/site-packages/torch/nn/modules/";
  const stack = ["libtorch_cuda.so+0x10 (not symbolized)", "Linear.forward (" + sp + "linear.py:134)",
    "Module._call_impl (" + sp + "module.py:1790)", "step (/home/u/train.py:12)"];
  const folded = L.diffTree([{ stack: stack, leaked_bytes: [0, 64] }], false, false);
  const names = (n) => Object.keys(n.children).concat(...Object.values(n.children).map(names));
  assert.ok(!names(folded).some((x) => x.includes("Linear.forward")), "torch's frames shown: " + names(folded));
  assert.ok(names(folded).includes("step (train.py:12)"), "the user's frame: " + names(folded));
  const shown = L.diffTree([{ stack: stack, leaked_bytes: [0, 64] }], false, true);
  assert.ok(names(shown).includes("Linear.forward (linear.py:134)"), "with the box: " + names(shown));
  assert.strictEqual(folded.delta, 64);
});

test("a diff's rows: no 0 B row, the sites past --top as one", () => {
  const st = (fn) => [{ kind: "python", function: fn, file: "t.py", line: 1, internal: false }];
  const d = {
    a: { leaked_bytes: 40 }, b: { leaked_bytes: 95 },
    sites: [
      { stack: st("a"), leaked_bytes: [10, 50] },
      { stack: st("same"), leaked_bytes: [30, 30] },
      { stack: st("peak"), leaked_bytes: [0, 0] },
    ],
    sites_total: 5, others: { sites: 2, leaked_bytes: [0, 15] },
  };
  const rows = L.diffRows(d);
  assert.deepStrictEqual(rows.map((x) => x.user_frame || x.stack[0].function), ["a", "(2 other call sites)"]);
  const sum = rows.reduce((s, x) => s + x.leaked_bytes[1] - x.leaked_bytes[0], 0);
  assert.strictEqual(sum, d.b.leaked_bytes - d.a.leaked_bytes);
  assert.strictEqual(L.diffTree(L.diffSites(d), false).delta, sum);
});

test("byte ticks: 1-2-5 steps in the unit of the top, at most n", () => {
  const t = L.byteTicks(674 * 1048576, 5);
  assert.deepEqual(t.ticks.map((x) => x.label), ["0 MiB", "200 MiB", "400 MiB", "600 MiB", "800 MiB"]);
  assert.equal(t.top, 800 * 1048576);
  const g = L.byteTicks(1.98 * 1073741824, 4);
  assert.deepEqual(g.ticks.map((x) => x.label), ["0.0 GiB", "0.5 GiB", "1.0 GiB", "1.5 GiB", "2.0 GiB"]);
  assert.ok(L.byteTicks(3, 4).ticks.every((x) => Number.isInteger(x.v)));
});

test("time ticks: by step number when the steps are known, else rounded times", () => {
  const steps = Array.from({ length: 40 }, (_, k) => 1 + k * 0.1);
  const s = L.timeTicks(0, 5, 8, steps);
  /* the second before the first step keeps a time label */
  assert.equal(s[0].label, "0 s");
  const k = s.findIndex((x) => x.label.startsWith("step"));
  assert.equal(s[k].label, "step 5");
  assert.deepEqual(s.map((x) => x.label).slice(k + 1, k + 3), ["10", "15"]);
  assert.ok(s.slice(0, k).every((x) => x.label.endsWith(" s") && x.t < 1));
  /* and so does a teardown after the last step */
  const u = L.timeTicks(0, 12, 8, steps);
  assert.ok(u[u.length - 1].label.endsWith(" s") && u[u.length - 1].t > 6);
  const t = L.timeTicks(0, 8.02, 10, []);
  assert.deepEqual(t.map((x) => x.label), ["0 s", "1 s", "2 s", "3 s", "4 s", "5 s", "6 s", "7 s", "8 s"]);
  assert.equal(L.timeTicks(0, 0.0042, 4, null)[1].label, "0.002 s");
});

test("installed packages' Python frames fold into one frame naming them", () => {
  const sp = "/v/lib/python3.12/site-packages/";
  const site = { frames: [ /* innermost first */
    ["relu", sp + "torch/nn/functional.py", 1, 1, 0],
    ["forward", "/home/u/train.py", 50, 1, 0],
    ["_call_impl", sp + "torch/nn/module.py", 1, 1, 0],
    ["run", sp + "lightning/fit.py", 2, 1, 0],
    ["_call_and_handle_interrupt", sp + "lightning/trainer.py", 3, 1, 0],
    ["<module>", "/home/u/train.py", 9, 1, 0]] };
  const f = L.shownFrames(site, false, false).map((x) => x[0]);
  assert.deepEqual(f, ["<module>", "[lightning, torch]", "forward"]);
  assert.equal(L.shownFrames(site, false, true).length, 6);
});

test("a site with no frame of the user's is named as the text names it, its libraries folded", () => {
  const site = { name: "(no frame of yours) in thread pt_autograd_0 (tid 7)", frames: [ /* innermost first */
    ["std::_Function_handler<void (c10::Cached)>", "/v/libc10_cuda.so", 0, 0, 1],
    ["at::mm", "/v/libtorch_cuda.so", 0, 0, 1],
    ["start_thread", "/lib/libc.so.6", 0, 0, 1]] };
  assert.deepEqual(L.shownFrames(site, false, false).map((x) => x[0]),
    ["(no frame of yours) in thread pt_autograd_0 (tid 7)", "[libc, libtorch_cuda, libc10_cuda]"]);
  assert.equal(L.shownFrames(site, true, false)[0][0], "start_thread"); /* native frames asked for: all of them */
});
