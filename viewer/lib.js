/* lib.js - the page's data transforms, without the DOM: byte formatting,
 * live bytes of a call site at a time bucket and what a range left live
 * (from the call sites' histograms of bytes by allocation bucket and free
 * bucket), decimation of a timeline into pixel columns, the icicle tree and
 * its layout, the differential tree of a diff, the page's packed data.  Loaded by the page and, for
 * its unit tests, by node (viewer/test/lib.test.js). */
var VTLIB = (function () {
  "use strict";

  function fmtBytes(b) {
    var neg = b < 0, v = Math.abs(b), u = ["B", "KiB", "MiB", "GiB", "TiB"], k = 0;
    while (v >= 1024 && k < u.length - 1) { v /= 1024; k++; }
    var s = k === 0 ? String(Math.round(v)) : v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : 2);
    return (neg ? "-" : "") + s + " " + u[k];
  }

  /* A time since the trace's start as the text report writes it (seconds,
   * 3 decimals), so that one page does not mix ms and s; below a
   * millisecond in µs */
  function fmtTime(s) {
    if (s >= 1e-3 || s === 0) return s.toFixed(3) + " s";
    return (s * 1e6).toFixed(1) + " \u00b5s";
  }

  /* A site's histogram entries are [allocation bucket, free bucket, bytes];
   * free bucket == buckets: never freed.  Live at bucket b: allocated at or
   * before b and freed after it. */
  function histAt(h, b) {
    var s = 0;
    for (var i = 0; i < h.length; i++) if (h[i][0] <= b && h[i][1] > b) s += h[i][2];
    return s;
  }

  /* A site's live bytes at bucket b; the pool's cache (a `cached` row,
   * with tensor events): its segments' bytes less its tensors' then. */
  function liveAt(site, b) {
    if (site.cached) return Math.max(0, histAt(site.hist, b) - histAt(site.tensors_hist || [], b));
    return histAt(site.hist, b);
  }

  /* Allocated in [b0, b1] and still live at the end of b1 (the pool's
   * cache is no allocation: 0). */
  function rangeLeft(site, b0, b1) {
    var s = 0, h = site.hist;
    if (site.cached) return 0;
    for (var i = 0; i < h.length; i++) if (h[i][0] >= b0 && h[i][0] <= b1 && h[i][1] > b1) s += h[i][2];
    return s;
  }

  function histSeries(h, buckets) {
    var d = new Float64Array(buckets + 1), out = new Array(buckets), v = 0;
    for (var i = 0; i < h.length; i++) {
      d[h[i][0]] += h[i][2];
      if (h[i][1] < buckets) d[h[i][1]] -= h[i][2];
    }
    for (var b = 0; b < buckets; b++) { v += d[b]; out[b] = v; }
    return out;
  }

  /* Live bytes of a site at every bucket (a sweep: O(entries + buckets)). */
  function liveSeries(site, buckets) {
    var out = histSeries(site.hist, buckets);
    if (site.cached) {
      var t = histSeries(site.tensors_hist || [], buckets);
      for (var b = 0; b < buckets; b++) out[b] = Math.max(0, out[b] - t[b]);
    }
    return out;
  }

  /* Buckets [v0, v1) of min/max arrays into `cols` pixel columns: the min
   * of the minima and the max of the maxima of the buckets each column
   * covers (a column between two buckets takes the nearer). */
  function decimate(mn, mx, v0, v1, cols) {
    var outMin = new Array(cols), outMax = new Array(cols), span = (v1 - v0) / cols;
    for (var c = 0; c < cols; c++) {
      var a = Math.floor(v0 + c * span), z = Math.max(a + 1, Math.floor(v0 + (c + 1) * span));
      var lo = Infinity, hi = -Infinity;
      for (var b = Math.max(0, a); b < Math.min(z, mn.length); b++) {
        if (mn[b] < lo) lo = mn[b];
        if (mx[b] > hi) hi = mx[b];
      }
      if (lo === Infinity) { lo = 0; hi = 0; }
      outMin[c] = lo; outMax[c] = hi;
    }
    return { min: outMin, max: outMax };
  }


  /* A step of 1, 2 or 5 times a power of ten that cuts `span` into at most
   * `n` parts. */
  function niceStep(span, n) {
    var raw = span / Math.max(1, n), e = Math.pow(10, Math.floor(Math.log10(raw || 1)));
    var m = [1, 2, 5, 10];
    for (var i = 0; i < m.length; i++) if (m[i] * e >= raw - 1e-12 * e) return m[i] * e;
    return 10 * e;
  }

  function fmtNum(v, step) {
    var d = step >= 1 ? 0 : Math.min(6, Math.ceil(-Math.log10(step) - 1e-9));
    return v.toFixed(d);
  }

  /* The y axis of bytes from 0 to at least `hi`: ticks at 1-2-5 steps in
   * the binary unit of `hi`, at most `n` of them above 0.
   * {top, ticks: [{v, label}]} */
  function byteTicks(hi, n) {
    var u = ["B", "KiB", "MiB", "GiB", "TiB"], k = 0, div = 1;
    hi = hi > 0 ? hi : 1;
    while (hi >= 1024 * div && k < u.length - 1) { div *= 1024; k++; }
    var v = hi / div, step = niceStep(v, n);
    if (k === 0 && step < 1) step = 1;
    var top = Math.ceil(v / step - 1e-9) * step, ticks = [];
    for (var i = 0; i * step <= top + 1e-9; i++)
      ticks.push({ v: i * step * div, label: fmtNum(i * step, step) + " " + u[k] });
    return { top: top * div, ticks: ticks };
  }

  /* Ticks of the x axis between times t0 and t1 (seconds): by step number
   * when the steps' times are known (two or more), else by time, at 1-2-5
   * steps, at most `n`.  [{t, label}] */
  function timeTicks(t0, t1, n, steps) {
    var out = [];
    if (steps && steps.length >= 2) {
      var k0 = 0, k1 = steps.length - 1;
      while (k0 < steps.length && steps[k0] < t0) k0++;
      while (k1 >= 0 && steps[k1] > t1) k1--;
      if (k1 - k0 >= 1) {
        var st = Math.max(1, niceStep(k1 - k0 + 1, n)), first = true;
        for (var k = Math.ceil((k0 + 1) / st) * st; k <= k1 + 1; k += st) {
          out.push({ t: steps[k - 1], label: (first ? "step " : "") + k });
          first = false;
        }
        if (!out.length) return out;
        /* the time before the first step (start-up, loading) and after
         * the last (teardown) keeps time labels, a tick apart from the
         * steps' */
        var gap = (t1 - t0) / Math.max(2, n), a = out[0].t, z = out[out.length - 1].t;
        var times = timeTicks(t0, t1, n, null);
        var before = times.filter(function (tk) { return tk.t < a - gap; });
        var after = times.filter(function (tk) { return tk.t > z + gap; });
        return before.concat(out, after);
      }
    }
    var span = t1 - t0, step = niceStep(span || 1e-6, n), unit = 1, name = "s";
    if (span < 1e-3) { unit = 1e-6; name = "\u00b5s"; } /* else seconds, as every other time on the page */
    for (var t = Math.ceil(t0 / step - 1e-9) * step; t <= t1 + 1e-12; t += step)
      out.push({ t: t, label: fmtNum(t / unit, step / unit) + " " + name });
    return out;
  }

  /* The package a frame's file belongs to when it is installed
   * (site-packages or dist-packages: torch, lightning, ...), else "". */
  function pkgOf(file) {
    var m = /\/(?:site|dist)-packages\/([^\/]+)/.exec(file || "");
    return m ? m[1].replace(/\.py$/, "").replace(/-[0-9].*$/, "") : "";
  }

  /* A JSON report's frame objects (innermost first) as the page's frames
   * [function, file, line, python, internal]. */
  function jsonFrames(stack) {
    return (stack || []).map(function (f) {
      return [f["function"] || (f.module ? base(f.module) + "+" + f.offset : "?"), f.file || f.module || "",
        f.line || 0, f.kind === "python" ? 1 : 0, f.internal ? 1 : 0];
    });
  }

  function frameLabel(f) {
    /* f: [function, file, line, python, internal] */
    if (!f[1]) return f[0];
    if (f[3]) return f[0] + " (" + base(f[1]) + ":" + f[2] + ")";
    return f[2] ? f[0] + " (" + base(f[1]) + ":" + f[2] + ")" : f[0];
  }

  function base(p) {
    var k = p.lastIndexOf("/");
    return k >= 0 ? p.slice(k + 1) : p;
  }

  /* The frames of a site shown in the tree, outermost first: the user's
   * Python and native frames; the runtime's native frames only with
   * `native`, the Python frames of installed packages (site-packages) only
   * with `libs`.  A run of hidden frames between shown ones is folded into
   * one frame naming its packages ("[torch, lightning]"), as the text
   * report folds them; below the last shown frame they are left out.  A
   * stack of hidden frames alone keeps its innermost one. */
  function shownFrames(site, native, libs) {
    var fr = site.frames, out = [], run = [];
    for (var i = fr.length - 1; i >= 0; i--) {
      var f = fr[i], py = f[3], lib = py ? !libs && pkgOf(f[1]) : !native && f[4];
      if (!lib) {
        if (run.length) out.push(["[" + run.join(", ") + "]", "", 0, 0, 1, 1]);
        run = [];
        out.push(f);
        continue;
      }
      var name = pkgOf(f[1]) || base(f[1]).replace(/\.so.*$/, "") || "runtime";
      if (run.indexOf(name) < 0) run.push(name);
    }
    /* no frame of the user's at all (a framework's own thread: autograd,
     * NCCL, cuBLAS): the site's headline, as the text names it, then its
     * libraries folded (a raw innermost frame said nothing) */
    if (!out.length && fr.length) {
      if (native) out.push(fr[0]);
      else {
        out.push([site.name || "(no frame of yours)", "", 0, 0, 0]);
        if (run.length) out.push(["[" + run.join(", ") + "]", "", 0, 0, 1, 1]);
      }
    }
    return out;
  }

  /* The icicle tree: weight(site) bytes down each site's frames. */
  function buildTree(sites, weight, native, libs) {
    var root = { name: "all", value: 0, children: {}, sites: [] };
    for (var i = 0; i < sites.length; i++) {
      var w = weight(sites[i], i);
      if (!(w > 0)) continue;
      root.value += w;
      var node = root, fr = shownFrames(sites[i], native, libs);
      for (var k = 0; k < fr.length; k++) {
        var name = frameLabel(fr[k]);
        var c = node.children[name];
        if (!c) c = node.children[name] = { name: name, value: 0, children: {}, sites: [], frame: fr[k] };
        c.value += w;
        node = c;
      }
      node.sites.push(i);
    }
    return root;
  }

  /* Rectangles of the tree under `root` in a width of `width` pixels:
   * {x, w, depth, node}, children by decreasing value; narrower than
   * `minw` pixels left out. */
  function layout(root, width, minw) {
    var out = [];
    minw = minw || 0.5;
    (function walk(n, x, w, d) {
      out.push({ x: x, w: w, depth: d, node: n });
      var kids = Object.keys(n.children).map(function (k) { return n.children[k]; });
      kids.sort(function (a, b) { return b.value - a.value || (a.name < b.name ? -1 : 1); });
      var cx = x;
      for (var i = 0; i < kids.length; i++) {
        var cw = n.value ? w * kids[i].value / n.value : 0;
        if (cw >= minw) walk(kids[i], cx, cw, d + 1);
        cx += cw;
      }
    })(root, 0, width, 0);
    return out;
  }

  /* The sites of a diff that the page draws: the listed ones and, for
   * those past --top (JSON `others`), one row of their sum, so that the
   * rows add up to the totals B - A. */
  function diffSites(d) {
    var sites = (d.sites || []).slice(), o = d.others;
    if (o && o.sites > 0) {
      var lb = o.leaked_bytes || [0, 0];
      sites.push({ key: "", status: "others", leaked_bytes: [lb[0] || 0, lb[1] || 0],
        user_frame: "(" + o.sites + " other call site" + (o.sites === 1 ? "" : "s") + ")",
        stack: ["(" + o.sites + " other call site" + (o.sites === 1 ? "" : "s") + ")"] });
    }
    return sites;
  }

  /* The table's rows: the sites whose leaked bytes changed (a site that
   * differs only at the peak or in bytes allocated is no row of 0 B). */
  function diffRows(d) {
    return diffSites(d).filter(function (x) {
      var lb = x.leaked_bytes || [0, 0];
      return (lb[1] || 0) !== (lb[0] || 0);
    });
  }

  /* The differential tree of a diff (JSON `sites` with `stack`): each
   * site's weight is the larger of its leaked bytes before and after, its
   * delta after - before. */
  function diffTree(sites, native, libs) {
    var conv = sites.map(function (s) {
      var st = (s.stack || []).map(function (f) {
        if (typeof f === "string") { /* the diff's frames: "function (file:line)" or "module+0x... (status)" */
          var pm = /^(.*) \((.+\.py):(\d+)\)$/.exec(f);
          if (pm) return [pm[1], pm[2], +pm[3], 1, 0]; /* a Python frame: its file, for the package fold */
          var nat = /\.so|\+0x/.test(f);
          return [f.replace(/ \((not symbolized|no module|no symbol)[^)]*\)$/, ""), "", 0, 0, nat ? 1 : 0];
        }
        return [f["function"] || (f.module ? base(f.module) + "+" + f.offset : "?"), f.file || f.module || "",
          f.line || 0, f.kind === "python" ? 1 : 0, f.internal ? 1 : 0];
      });
      var lb = s.leaked_bytes || [0, 0]; /* [A, B] */
      return { frames: st, a: lb[0] || 0, b: lb[1] || 0 };
    });
    var root = buildTree(conv, function (s) { return Math.max(s.a, s.b); }, native, libs);
    (function delta(n) {
      n.delta = 0;
      n.sites.forEach(function (i) { n.delta += conv[i].b - conv[i].a; });
      Object.keys(n.children).forEach(function (k) { n.delta += delta(n.children[k]); });
      return n.delta;
    })(root);
    return root;
  }

  /* An SVG path of values in w x h (a sparkline). */
  function sparkPath(vals, w, h) {
    var hi = 0;
    for (var i = 0; i < vals.length; i++) if (vals[i] > hi) hi = vals[i];
    if (!vals.length) return "";
    var p = "";
    for (var k = 0; k < vals.length; k++) {
      var x = vals.length > 1 ? k * w / (vals.length - 1) : 0, y = h - (hi ? vals[k] / hi * (h - 1) : 0);
      p += (k ? "L" : "M") + x.toFixed(1) + " " + y.toFixed(1);
    }
    return p;
  }

  /* The page's data once inflated (src/analyze/vt_page_pack.c): a table
   * of strings (a JSON array), a newline, then one JSON object whose
   * members are the page's globals; a value "\u0001" + base 36 is the
   * table's entry of that index. */
  function unpackText(text) {
    var nl = text.indexOf("\n"), tab = JSON.parse(text.slice(0, nl));
    return JSON.parse(text.slice(nl + 1), function (_k, v) {
      return typeof v === "string" && v.charCodeAt(0) === 1 ? tab[parseInt(v.slice(1), 36)] : v;
    });
  }

  return { fmtBytes: fmtBytes, unpackText: unpackText, fmtTime: fmtTime, liveAt: liveAt, rangeLeft: rangeLeft, liveSeries: liveSeries,
    decimate: decimate, buildTree: buildTree, layout: layout, diffSites: diffSites, diffRows: diffRows, diffTree: diffTree,
    sparkPath: sparkPath, shownFrames: shownFrames, frameLabel: frameLabel, niceStep: niceStep, byteTicks: byteTicks,
    timeTicks: timeTicks, pkgOf: pkgOf, jsonFrames: jsonFrames };
})();
if (typeof module !== "undefined") module.exports = VTLIB;
