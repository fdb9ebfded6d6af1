// hostile-test.js VRAMTRACE TRACE_DIR OUT_DIR - pages built from hostile
// names (tests/analyze/gen_hostile.c: a <script>, a comment opener
// "<!--<script>", an <img onerror>, ESC sequences, a NUL, invalid UTF-8)
// opened in a real browser (Debian's chromium through playwright-core):
// the page is whole (summary, verdict, tables and flamegraph drawn, the
// names shown as text), no script of the trace ran (no dialog, no element
// the names spell, no script element beyond the page's own), no console
// error.  The report page of names.zst, of a cut trace, and a diff page.
"use strict";
const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
const { chromium } = require("playwright-core");

const [bin, dir, out] = process.argv.slice(2);
const CHROMIUM = process.env.VT_CHROMIUM || "/usr/bin/chromium";
fs.mkdirSync(out, { recursive: true });
const OWN_SCRIPTS = (fs.readFileSync(path.join(__dirname, "index.html"), "utf8").match(/<script/g) || []).length;

function page(args, html) {
  try {
    execFileSync(bin, [...args, "--no-symbols", "--html", html], { stdio: "ignore" });
  } catch (e) { /* a cut trace exits 1 and still writes the page */ }
}

async function check(browser, name, html, want) {
  const fails = [];
  const expect = (ok, msg) => { if (!ok) fails.push(msg); };
  const p = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const errors = [], dialogs = [];
  p.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  p.on("pageerror", (e) => errors.push(String(e)));
  p.on("dialog", (d) => { dialogs.push(d.message()); d.dismiss().catch(() => {}); });
  await p.addInitScript(() => { window.__ran = []; window.alert = (x) => window.__ran.push(String(x)); });
  await p.goto("file://" + path.resolve(html));
  await p.waitForSelector("#summary > *", { timeout: 10000 }).catch(() => {});
  await p.waitForTimeout(300); /* an image's onerror fires after its load fails */
  const st = await p.evaluate(() => ({
    ran: window.__ran,
    scripts: document.querySelectorAll("script").length,
    imgs: document.querySelectorAll("img").length,
    summary: (document.getElementById("summary") || {}).innerText || "",
    verdict: !!document.getElementById("verdict"),
    text: document.body.innerText,
    rows: document.querySelectorAll("table tbody tr").length,
    report: (typeof VT_REPORT === "object" && VT_REPORT !== null) || (typeof VT_DIFF === "object" && VT_DIFF !== null),
  }));
  expect(dialogs.length === 0 && st.ran.length === 0, `a script of the trace ran: ${dialogs.concat(st.ran).join(", ")}`);
  expect(st.scripts === OWN_SCRIPTS, `${st.scripts} script elements, the page has ${OWN_SCRIPTS}`);
  expect(st.imgs === 0, `${st.imgs} img elements: a name became markup`);
  expect(st.report, "no VT_REPORT (VT_DIFF): the data did not load (the page is cut)");
  expect(st.verdict && st.summary.length > 0, "no summary or verdict: the page is not whole");
  expect(errors.length === 0, "console errors: " + errors.join("; "));
  for (const t of want) expect(st.text.includes(t), `the page does not show '${t}'`);
  await p.screenshot({ path: path.join(out, name + ".png"), fullPage: true });
  await p.close();
  console.log((fails.length ? "FAIL " : "ok   ") + name + (fails.length ? ": " + fails.join("; ") : ""));
  return fails.length === 0;
}

(async () => {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  let ok = true;
  const names = path.join(dir, "names.zst"), cut = path.join(dir, "cut-alloc.zst"), far = path.join(dir, "far.zst");
  page(["report", names], path.join(out, "names.html"));
  ok = await check(browser, "names", path.join(out, "names.html"),
    ["<img src=x onerror=alert(4)>", "script>.py:10", "after-nul", "onerror=alert(1)", "bad\ufffd\ufffd utf8"]) && ok;
  page(["report", cut], path.join(out, "cut.html"));
  ok = await check(browser, "cut", path.join(out, "cut.html"), ["4 events UNVERIFIED"]) && ok;
  page(["diff", far, names], path.join(out, "diff.html"));
  ok = await check(browser, "diff", path.join(out, "diff.html"), []) && ok;
  await browser.close();
  process.exit(ok ? 0 : 1);
})().catch((e) => { console.error(e); process.exit(1); });
