// html_paint.js PAGE.html [RUNS] - how fast the report page opens: headless
// chromium (Debian's, through viewer/node_modules/playwright-core) at
// 1280x800 loads the page RUNS times (default 3) and prints the time until
// the icicle's root is drawn and the first contentful paint.
// Run from the repository root:  node bench/html_paint.js /tmp/a100m.html
"use strict";
const path = require("node:path");
const { chromium } = require(path.join(__dirname, "..", "viewer", "node_modules", "playwright-core"));
(async () => {
  const page = path.resolve(process.argv[2]);
  const runs = Number(process.argv[3] || 3);
  const b = await chromium.launch({ executablePath: process.env.VT_CHROMIUM || "/usr/bin/chromium", args: ["--no-sandbox"] });
  for (let i = 0; i < runs; i++) {
    const p = await b.newPage({ viewport: { width: 1280, height: 800 } });
    const t0 = Date.now();
    await p.goto("file://" + page);
    await p.waitForSelector("#flame .fr.root");
    const fcp = await p.evaluate(() => {
      const e = performance.getEntriesByName("first-contentful-paint")[0];
      return e ? e.startTime : -1;
    });
    console.log(`run ${i + 1}: drawn in ${Date.now() - t0} ms, first contentful paint ${Math.round(fcp)} ms`);
    await p.close();
  }
  await b.close();
})();
