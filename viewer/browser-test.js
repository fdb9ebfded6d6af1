// browser-test.js VRAMTRACE DATA_DIR OUT_DIR - the HTML report in a real browser
// (Debian's chromium through playwright-core): for every fixture of DATA_DIR
// (each trace, and each directory below it that holds traces, one page)
// and the directory as one job, `vramtrace report --html` then the page
// loaded from file://: no console error, no request to any host, the
// summary's peak and the flamegraph's root equal to the JSON report's peak,
// the tables' rows equal to the JSON report's rows, a click on a frame
// zooms into it, a dragged range fills the range table with what the range
// left live; a damaged trace's page says so; the diff page of two traces.
// Screenshots and pages under OUT_DIR.  Exit 1 on the first failed check
// of any page (all pages are tried).
"use strict";
const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
const { chromium } = require("playwright-core");
const L = require("./lib.js");

// browser-test.js VRAMTRACE DATA OUT [--jobs|--only-jobs DIR...]: the job
// directories are checked as jobs too (--only-jobs: nothing else)
const [bin, data, out, jopt, ...jobs] = process.argv.slice(2);
const onlyJobs = jopt === "--only-jobs";
const CHROMIUM = process.env.VT_CHROMIUM || "/usr/bin/chromium";
fs.mkdirSync(out, { recursive: true });

function report(args, html) {
  try {
    execFileSync(bin, ["report", "--no-symbols", "--no-progress", "--html", html, ...args], { stdio: "ignore" });
  } catch (e) { /* damaged traces exit 1 and still write the page */ }
  let json;
  try {
    json = execFileSync(bin, ["report", "--json", "--no-symbols", "--no-progress", ...args],
      { stdio: ["ignore", "pipe", "ignore"], maxBuffer: 1 << 30 });
  } catch (e) {
    json = e.stdout;
  }
  return JSON.parse(json.toString());
}

// The look test: what a person sees.  Each lane's legend names exactly the
// series drawn in it; the growing call site's curve spans at least a
// quarter of its lane; the banner's colour and first words match the
// verdict's kind (leak / no leak / cannot tell, an OOM in red first); no
// "(null)", "undefined" or "NaN" in the visible text.  p: the process
// shown, null for a job's merged view.
const BANNER = { leak: [/^(Leak|Growing)/, /\bbad\b/], no_leak: [/^No (leak|growth)/, /\b(ok|info)\b/],
  cannot_tell: [/^Cannot tell/, /\bwarn\b/], oom: [/^Out of memory/, /\bbad\b/] };
async function look(page, p, expect) {
  const lanes = await page.$$eval(".lane", (ls) => ls.map((l) => ({
    id: l.getAttribute("data-lane"),
    legend: [...l.querySelectorAll(".legend .key-name")].map((k) => k.textContent),
    title: l.querySelector(".lane-title").textContent,
    drawn: JSON.parse(l.querySelector("canvas").getAttribute("data-drawn") || "[]"),
    span: Number(l.querySelector("canvas").getAttribute("data-span")) })));
  for (const l of lanes) {
    if (l.id === "site") {
      expect(l.drawn.length === 1 && l.drawn[0] === l.title, `the growing site's lane draws ${JSON.stringify(l.drawn)}, titled '${l.title}'`);
      expect(l.span >= 0.25, `the growing site's curve spans ${l.span} of its lane`);
    } else expect(JSON.stringify(l.legend) === JSON.stringify(l.drawn),
      `lane ${l.id}: legend ${JSON.stringify(l.legend)}, drawn ${JSON.stringify(l.drawn)}`);
  }
  if (p && p.verdict && p.verdict.kind === "leak" && (p.verdict.site || {}).key) {
    const inSeries = await page.evaluate((k) => VT_SERIES.processes.some((s) => s.sites.some((x) => x.key === k)), p.verdict.site.key);
    expect(!inSeries || lanes.some((l) => l.id === "site"), "a leak without its growing site's lane");
  }
  for (const id of ["oom-headline", "verdict"]) {
    const b = await page.$("#" + id);
    if (!b) continue;
    const kind = await b.getAttribute("data-kind"), cls = await b.getAttribute("class"), txt = (await b.textContent()) || "";
    const want = BANNER[kind];
    expect(want && want[0].test(txt) && want[1].test(cls), `banner #${id} of kind '${kind}' reads '${txt.slice(0, 60)}' in '${cls}'`);
    if (id === "verdict" && p && p.verdict) expect(kind === p.verdict.kind, `banner kind '${kind}', verdict '${p.verdict.kind}'`);
  }
  if (p) expect(!!(await page.$("#oom-headline")) === !!p.oom_headline, "an OOM headline shown iff the report has one");
  const text = await page.evaluate(() => document.body.innerText);
  for (const bad of ["(null)", "undefined", "NaN"]) expect(!text.includes(bad), `'${bad}' in the page's text`);
}

async function check(browser, name, html, rep, opts) {
  const fails = [];
  const expect = (ok, msg) => { if (!ok) fails.push(msg); };
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const errors = [], requests = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("request", (r) => { if (!r.url().startsWith("file:")) requests.push(r.url()); });
  const t0 = Date.now();
  await page.goto("file://" + path.resolve(html));
  await page.waitForSelector("#summary > *", { timeout: 10000 }).catch(() => {});
  const loadMs = Date.now() - t0;
  expect(errors.length === 0, "console errors: " + errors.join("; "));
  expect(requests.length === 0, "requests to hosts: " + requests.join(", "));
  if (opts.merged && rep.merged) { /* a job's page opens on the merged verdict */
    const mv = rep.merged.verdict || {};
    const kind = await page.getAttribute("#verdict", "data-kind");
    expect(kind === mv.kind, `the job page opens on '${kind}', the merged verdict is '${mv.kind}'`);
    const n = (await page.$$("#leaking li")).length;
    expect(n === (mv.processes_leaking || 0), `the job page lists ${n} leaking processes, the report ${mv.processes_leaking}`);
    /* each process named as the report names it (rank 1): the leaking
     * ones with their line (and holder), the clean ones said clean, the
     * ones that ran out of memory in the OOM banner (issue 39) */
    const leakNames = await page.$$eval("#leaking li", (ls) => ls.map((l) => [l.getAttribute("data-name"), l.textContent]));
    const verdictText = (await page.textContent("#verdict")) || "", cleanText = (await page.textContent("#clean").catch(() => "")) || "";
    const oomText = (await page.textContent("#oom-headline").catch(() => "")) || "";
    for (const q of mv.processes || []) {
      if (q.kind === "leak") {
        const li = leakNames.find((x) => x[0] === q.name);
        expect(li && verdictText.includes(q.name), `the leaking ${q.name} is not named in the verdict and its list`);
        const f = q.user_frame;
        if (li && f && f.kind === "python") expect(li[1].includes(f.file.split("/").pop() + ":" + f.line), `${q.name}'s line is not in its row: ${li[1]}`);
        if (li && q.held_by) expect(li[1].includes(q.held_by.path), `${q.name}'s holder is not in its row`);
      } else if (q.kind === "no_leak" && (mv.processes_leaking || mv.processes_cannot_tell) && (mv.processes || []).length <= 8)
        expect(cleanText.includes(q.name) && verdictText.includes(q.name), `the clean ${q.name} is not said clean`);
      if (q.out_of_memory && (mv.processes || []).length <= 8) expect(oomText.includes(q.name), `${q.name}'s OOM is not named in the OOM banner`);
    }
    const fr = (await page.$$("#flame .fr:not(.root)")).length;
    expect(fr > 0 || !(rep.merged.leaks || []).length, "the merged flamegraph is empty");
    const nl = (await page.$$("#merged-leaks-table tbody tr")).length;
    expect(nl === (rep.merged.leaks || []).length, `merged rows ${nl}, JSON ${(rep.merged.leaks || []).length}`);
    await look(page, null, expect);
    await page.selectOption("#proc", "0");
  }
  const p = rep.processes ? rep.processes[0] : null;
  if (p && !opts.diff) await look(page, p, expect);
  if (opts.damaged) {
    const dmg = await page.textContent("#damaged").catch(() => null);
    expect(dmg, "no word of the damage");
    /* each read error once: the process's and the report's lists hold the same */
    const said = dmg ? dmg.replace(/^The trace is damaged: /, "").replace(/\. What follows.*$/, "").split("; ") : [];
    expect(new Set(said).size === said.length, `a read error said twice: '${dmg}'`);
  }
  if (p && !opts.diff) {
    for (const d of p.devices || []) {
      const txt = await page.textContent("#peak-" + d.index).catch(() => null);
      expect(txt && txt.startsWith(L.fmtBytes(d.peak_live_bytes)), `peak of GPU ${d.index}: '${txt}', want ${L.fmtBytes(d.peak_live_bytes)}`);
    }
    // the page's "PyTorch reserved" reaches its top no earlier than the
    // report's reserved peak (a late record once drew later levels back in
    // time: 148 MiB before the first step)
    for (const d of p.devices || []) {
      const rv = d.caching_allocator && d.caching_allocator.reserved;
      if (!rv || !rv.peak_bytes) continue;
      const first = await page.evaluate((dev) => {
        const q = VT_SERIES.processes[0], dd = (q.devices || []).find((x) => x.device === dev);
        const r = dd && dd.series.find((x) => x.key === "reserved");
        if (!r) return null;
        let top = -1, at = -1;
        r.max.forEach((v, k) => { if (v !== null && v > top) { top = v; at = k; } });
        return at < 0 ? null : at * q.bucket_s;
      }, d.index);
      expect(first === null || first <= rv.peak_time_s + 1e-6 && first >= rv.peak_time_s - 2 * (await page.evaluate(() => VT_SERIES.processes[0].bucket_s)),
        `GPU ${d.index}: the page's reserved tops at ${first} s, the report's reserved peak is at ${rv.peak_time_s} s`);
    }
    // a leak opens on what grew; the peak's icicle is the report's peak
    const grew = (p.growth && p.growth.sites || []).some((x) => x.site && x.site.key);
    if (p.verdict && p.verdict.kind === "leak" && grew) {
      const at = (await page.textContent("#flame-at")) || "";
      expect(at.startsWith("what grew"), "a leak's page opens on '" + at + "', not on what grew");
    }
    await page.click('button[data-at="peak"]');
    const pk = (p.peak || [])[0];
    if (pk && pk.bytes > 0) {
      const root = await page.getAttribute("#flame .fr.root", "data-bytes");
      expect(Number(root) === pk.bytes, `flamegraph root ${root}, the report's peak ${pk.bytes}`);
    }
    /* the view and the end: what is live then, every byte once (with
     * tensor events the tensors and the pool's cache, never the segments
     * around the tensors as well): the report's bytes by kind then */
    for (const [w, field] of [["view", "at_view_bytes"], ["end", "at_end_bytes"]]) {
      let want = 0;
      for (const d of p.devices || [])
        for (const [k, v] of Object.entries(d.by_kind || {})) if (k !== "tensor") want += v[field] || 0;
      await page.click(`button[data-at="${w}"]`);
      const root = Number((await page.getAttribute("#flame .fr.root", "data-bytes")) || 0);
      expect(root === want, `the flamegraph at the ${w}: ${root} bytes, the report's ${want} (${L.fmtBytes(root)} against ${L.fmtBytes(want)})`);
    }
    /* PyTorch's allocated peak: its button shown exactly when the report
     * has one, and its icicle is the report's tensors then */
    const apk = (p.peak || []).find((x) => x.allocated);
    const ab = await page.$('button[data-at="apeak"]');
    expect(!!ab && (await ab.isVisible()) === !!apk, `allocated peak button visible: ${ab && await ab.isVisible()}, in the report: ${!!apk}`);
    if (apk) {
      await page.click('button[data-at="apeak"]');
      const root = await page.getAttribute("#flame .fr.root", "data-bytes");
      expect(Number(root) === apk.allocated.bytes, `allocated peak flamegraph root ${root}, the report's ${apk.allocated.bytes}`);
      const at = (await page.textContent("#flame-at")) || "";
      expect(at.includes("PyTorch allocated peak") && at.includes(L.fmtBytes(apk.allocated.bytes)), "allocated peak caption: " + at);
      await page.click('button[data-at="peak"]');
    }
    if (p.verdict && p.verdict.kind === "leak" && p.verdict.test) {
      /* a test that left memory live: named, with what it left */
      const vt = (await page.textContent("#verdict")) || "";
      expect(vt.includes("Leak in test " + p.verdict.test.name + ": left " + L.fmtBytes(p.verdict.test.leaked_bytes)),
        "the verdict does not name the test and what it left: " + vt);
    } else if (p.verdict && p.verdict.kind === "leak" && p.verdict.site_grown_bytes !== undefined) {
      /* the banner's "+N" is the named site's growth, as the text says it;
       * every growing site's total only after "in all" */
      const vt = (await page.textContent("#verdict")) || "";
      const own = ": +" + L.fmtBytes(p.verdict.site_grown_bytes);
      expect(vt.includes(own), `the verdict's growth is not the site's ${own}: ${vt}`);
      if (p.verdict.growing_sites > 1)
        expect(vt.includes(L.fmtBytes(p.verdict.grown_bytes) + " in all"), "the verdict does not say the total in all: " + vt);
    }
    if (p.holders) { /* who holds it: the verdict names the holder, the leak table has its column */
      const vt = (await page.textContent("#verdict")) || "";
      const hv = p.verdict && p.verdict.site && p.verdict.site.held_by;
      /* a view at a time or a mark is before the walk at exit: said so */
      const held = p.view && (p.view.mode === "time" || p.view.mode === "marker") ? "held at exit by " : "held by ";
      expect(!hv || vt.includes(held + hv.path), `the verdict does not name the holder as '${held}${hv && hv.path}': ` + vt);
      const heads = await page.$$eval("#leaks-table th", (t) => t.map((x) => x.textContent));
      expect(heads.includes(held.trim()), `no '${held.trim()}' column in the leak table`);
    }
    // OOM first: a process whose request ran out of memory leads with it,
    // above the verdict, naming the line; a probe is not a failure
    const oh = await page.$("#oom-headline");
    expect(!!oh === !!p.oom_headline, "OOM headline shown: " + !!oh + ", in the report: " + !!p.oom_headline);
    if (oh) {
      const first = await page.$eval("#summary", (b) => b.firstElementChild && b.firstElementChild.id);
      expect(first === "oom-headline", "the OOM headline is not first: " + first);
      const uf = p.oom_headline.user_frame, ot = (await oh.textContent()) || "";
      const line = !uf ? "" : uf.kind === "python" ? uf.file.split("/").pop() + ":" + uf.line : uf["function"] || uf.offset;
      expect(ot.includes(line) && ot.includes(L.fmtBytes(p.oom_headline.requested_bytes)),
        "the OOM headline does not name the line and the request: " + ot);
    }
    const ft = (await page.textContent("#failed")) || "";
    expect(ft.startsWith(String(p.oom ? p.oom.failed : 0)), `failed allocations '${ft}', the report's ${p.oom && p.oom.failed}`);
    const rows = async (id) => (await page.$$(`#${id} tbody tr`)).length;
    expect((await rows("leaks-table")) === ((p.leaks && p.leaks.sites.length) || 0), "leak rows differ from the JSON's");
    expect((await rows("growth-table")) === ((p.growth && p.growth.sites.length) || 0), "growth rows differ from the JSON's");
    expect((await rows("oom-table")) === ((p.oom && p.oom.events.length) || 0), "failed-allocation rows differ");
    // click a frame below the root: it becomes the root
    const frames = await page.$$("#flame .fr:not(.root)");
    if (frames.length) {
      const name = await frames[0].getAttribute("data-name");
      await frames[0].click();
      const root = await page.getAttribute("#flame .fr.root", "data-name");
      expect(root === name, `a click on '${name}' zoomed to '${root}'`);
      await page.click("#reset-zoom");
    }
    // drag across the first timeline: the range table and the flamegraph agree
    const c = await page.$(".tl-canvas");
    if (c) {
      await c.scrollIntoViewIfNeeded();
      const b = await c.boundingBox();
      await page.mouse.move(b.x + 46 + (b.width - 46) * 0.05, b.y + b.height / 2);
      await page.mouse.down();
      await page.mouse.move(b.x + 46 + (b.width - 46) * 0.95, b.y + b.height / 2, { steps: 4 });
      await page.mouse.up();
      const at = await page.textContent("#flame-at");
      expect(/allocated from/.test(at), `after a drag the flamegraph says '${at}'`);
      const left = Number(await page.getAttribute("#flame-at", "data-bytes"));
      const cells = await page.$$eval("#range-table tbody tr td:first-child", (tds) => tds.map((t) => Number(t.title.split(" ")[0])));
      const sum = cells.reduce((a, v) => a + v, 0);
      expect(sum === left, `range table sums to ${sum}, the flamegraph's root ${left}`);
      await page.click('button[data-at="peak"]');
    }
  }
  if (opts.merged) expect(errors.length === 0, "console errors in the merged view: " + errors.join("; "));
  if (opts.diff) {
    const n = (await page.$$("#diff-table tbody tr")).length, want = L.diffRows(rep).length;
    expect(n === want, `diff rows ${n}, JSON ${want} (sites whose leaked bytes changed, and the others)`);
    expect((await page.$$("#flame .fr")).length > 0 || rep.sites.length === 0, "no differential flamegraph");
  }
  await page.screenshot({ path: path.join(out, name + ".png"), fullPage: true });
  await page.close();
  const size = fs.statSync(html).size;
  console.log(`${fails.length ? "FAIL" : "ok  "} ${name}: ${(size / 1024).toFixed(0)} KiB, first paint ${loadMs} ms` +
    (fails.length ? "\n      " + fails.join("\n      ") : ""));
  return fails.length === 0;
}

(async () => {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  let ok = true, n = 0;
  const files = onlyJobs ? [] : fs.readdirSync(data).filter((f) => f.endsWith(".zst")).sort();
  for (const f of files) {
    const name = f.replace(/\.zst$/, ""), html = path.join(out, name + ".html");
    const rep = report([path.join(data, f)], html);
    ok = (await check(browser, name, html, rep, { damaged: /damaged|truncated/.test(name) })) && ok;
    n++;
  }
  // fixture directories (tests/data/seeds/PATTERN-MODE: a trace with its
  // holders file and symbols beside it): one page per directory
  const dirs = [];
  const walk = (d, rel) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((x, y) => (x.name < y.name ? -1 : 1))) {
      if (!e.isDirectory()) continue;
      const full = path.join(d, e.name), r = rel ? rel + "-" + e.name : e.name;
      if (fs.readdirSync(full).some((f) => f.endsWith(".zst"))) dirs.push([full, r]);
      walk(full, r);
    }
  };
  if (!onlyJobs) walk(data, "");
  for (const [d, name] of dirs) {
    const html = path.join(out, name + ".html");
    ok = (await check(browser, name, html, report([d], html), {})) && ok;
    n++;
  }
  // a view before the end (--at inside the deque's filling steps): a leak
  // whose holder is the one the walk found at exit
  const deque = path.join(data, "seeds", "deque-async");
  if (!onlyJobs && fs.existsSync(deque)) {
    const html = path.join(out, "seeds-deque-async-at.html");
    const rep = report(["--at", "6.06177s", deque], html);
    const v = rep.processes[0].verdict;
    if (!(v.kind === "leak" && v.site && v.site.held_by)) {
      console.log("FAIL seeds-deque-async-at: the view at 6.06177 s is no leak with a holder: " + v.kind);
      ok = false;
    } else ok = (await check(browser, "seeds-deque-async-at", html, rep, {})) && ok;
    n++;
  }
  const job = path.join(out, "job.html");
  if (!onlyJobs) ok = (await check(browser, "job", job, report([data], job), { merged: true })) && ok;
  // more jobs, each a directory of ranks (the analyzer's synthetic job_leak
  // and job_oom: ctest viewer.browser_jobs passes them with --only-jobs)
  for (const d of jobs) {
    const jn = "job-" + path.basename(d), jh = path.join(out, jn + ".html");
    ok = (await check(browser, jn, jh, report([d], jh), { merged: true })) && ok;
    n++;
  }
  if (!onlyJobs) {
    const dh = path.join(out, "diff.html");
    const a = path.join(data, "gpu-leaky-default.zst"), b = path.join(data, "gpu-leaky-tensors.zst");
    try {
      execFileSync(bin, ["diff", "--no-symbols", "--no-progress", "--html", dh, a, b], { stdio: "ignore" });
    } catch (e) { /* exit status 1 on read errors */ }
    const dj = JSON.parse(execFileSync(bin, ["diff", "--json", "--no-symbols", "--no-progress", a, b], { maxBuffer: 1 << 30 }).toString());
    ok = (await check(browser, "diff", dh, dj, { diff: true })) && ok;
  }
  await browser.close();
  console.log(`browser: ${n + (onlyJobs ? 0 : 2)} pages, ${ok ? "all passed" : "FAILURES"}`);
  process.exit(ok ? 0 : 1);
})().catch((e) => { console.error(e); process.exit(1); });
