// shots.js VRAMTRACE DATA_DIR OUT_DIR - the pictures in docs/ (issue 34):
// the report page of the seeds' patterns at 1600x1000 in Debian's
// chromium, as a person first sees it (the top of the page):
// a list of losses kept with their graphs, a logger, an OOM, a job of four
// processes.  `node viewer/shots.js build/vramtrace tests/data docs`
"use strict";
const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { chromium } = require("playwright-core");

const [bin, data, out] = process.argv.slice(2);
const CHROMIUM = process.env.VT_CHROMIUM || "/usr/bin/chromium";
const shots = [
  ["report-list-of-losses", ["seeds/graph_list-default"]],
  ["report-logger", ["seeds/logger-default"]],
  ["report-oom", ["gpu-torch-tracker-default.zst"]],
  ["report-job", ["seeds/graph_list-default", "seeds/logger-default", "seeds/clean-default", "seeds/slices-default"]],
];

(async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "vt-shots-"));
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  for (const [name, inputs] of shots) {
    const html = path.join(tmp, name + ".html");
    execFileSync(bin, ["report", "--no-progress", "--html", html, ...inputs.map((x) => path.join(data, x))],
                 { stdio: ["ignore", "ignore", "inherit"] });
    const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    await page.goto("file://" + html);
    await page.waitForSelector("#summary > *", { timeout: 10000 });
    await page.waitForTimeout(300);
    await page.screenshot({ path: path.join(out, name + ".png") });
    await page.close();
    console.log("shots: " + path.join(out, name + ".png"));
  }
  await browser.close();
  fs.copyFileSync(path.join(out, "report-list-of-losses.png"), path.join(out, "report-page.png"));
  fs.rmSync(tmp, { recursive: true });
})().catch((e) => { console.error("shots: " + e.message); process.exit(1); });
