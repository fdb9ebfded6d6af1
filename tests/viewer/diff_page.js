// diff_page.js - the diff page's totals, without a browser: the data the
// page embeds (VT_DIFF, packed: lib.js unpackText) is `diff --json`'s; its headline (B - A of
// the sides' leaked bytes), the icicle's root and the table's rows (lib.js:
// diffRows, diffTree, as the page draws them) agree; no row of 0 B.
// usage: node diff_page.js VRAMTRACE DATA_DIR OUT_DIR
"use strict";
const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
const zlib = require("node:zlib");
const L = require(path.join(__dirname, "../../viewer/lib.js"));

const [bin, data, out] = process.argv.slice(2);
fs.mkdirSync(out, { recursive: true });
const seeds = path.join(data, "seeds");
const pairs = [
  [path.join(seeds, "clean-default"), path.join(seeds, "logger-default"), []],
  [path.join(seeds, "clean-default"), path.join(seeds, "graph_list-default"), []],
  [path.join(seeds, "logger-default"), path.join(seeds, "logger-expandable"), []],
  [path.join(data, "gpu-torch-default.zst"), path.join(data, "gpu-leaky-default.zst"), ["--top", "3"]],
];
let fails = 0;
const expect = (c, what) => { if (!c) { fails++; console.log("FAIL " + what); } };
const run = (args) => {
  try {
    return execFileSync(bin, args, { maxBuffer: 1 << 30, stdio: ["ignore", "pipe", "ignore"] }).toString();
  } catch (e) { return e.stdout.toString(); } /* exit 1 on read errors: what was readable */
};
pairs.forEach(([a, b, extra], k) => {
  const name = `${path.basename(a)} vs ${path.basename(b)} ${extra.join(" ")}`;
  const html = path.join(out, `diff-${k}.html`);
  const common = ["--no-symbols", "--no-progress", ...extra];
  run(["diff", ...common, "--html", html, a, b]);
  const json = JSON.parse(run(["diff", "--json", ...common, a, b]));
  const page = fs.readFileSync(html, "utf8");
  const m = /window\.VT_PACKED = "([A-Za-z0-9+/=]*)";/.exec(page);
  expect(m, `${name}: no VT_PACKED in the page`);
  if (!m) return;
  const d = L.unpackText(zlib.gunzipSync(Buffer.from(m[1], "base64")).toString("utf8")).VT_DIFF;
  expect(d, `${name}: no VT_DIFF in the page's data`);
  if (!d) return;
  expect(JSON.stringify(d) === JSON.stringify(json), `${name}: the page's data differ from --json`);
  const total = d.b.leaked_bytes - d.a.leaked_bytes;
  const rows = L.diffRows(d), sum = rows.reduce((s, x) => s + x.leaked_bytes[1] - x.leaked_bytes[0], 0);
  const root = L.diffTree(L.diffSites(d), false).delta;
  expect(sum === total, `${name}: rows add up to ${sum}, the headline says ${total}`);
  expect(root === total, `${name}: the icicle's root says ${root}, the headline ${total}`);
  expect(rows.every((x) => x.leaked_bytes[1] !== x.leaked_bytes[0]), `${name}: a row of 0 B`);
  const listed = d.sites.reduce((s, x) => s + x.leaked_bytes[1] - x.leaked_bytes[0], 0);
  const others = d.others.leaked_bytes[1] - d.others.leaked_bytes[0];
  expect(listed + others === total, `${name}: JSON sites ${listed} + others ${others} != ${total}`);
  expect(d.sites.length + d.others.sites === d.sites_total, `${name}: sites listed + others != sites_total`);
  console.log(`${fails ? "..." : "ok  "} ${name}: B - A ${L.fmtBytes(total)}, ${rows.length} rows`);
});
process.exit(fails ? 1 : 0);
