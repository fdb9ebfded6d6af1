/* app.js - the report page: the verdict and summary of a process, a
 * timeline per device (click: a time; drag: a range; wheel: zoom;
 * double-click: all), the icicle of live bytes by call site at the chosen
 * time (or what the chosen range allocated and left live), and the
 * report's tables, sortable and filterable, each row finding its frames in
 * the icicle.  A diff page (window.VT_DIFF) shows the differential icicle
 * and the table of changes.  Data: window.VT_REPORT (the JSON report),
 * window.VT_SERIES (timelines, call-site histograms), unpacked on load
 * from window.VT_PACKED (see unpack). */
(function () {
  "use strict";
  var L = VTLIB, $ = function (id) { return document.getElementById(id); };
  /* colours by series key (the series' names come with them, from the C
   * side's one table) */
  var COLORS = { tensor: "#4c78a8", reserved: "#f58518", live: "#54a24b", device: "#72b7b2", device_static: "#b279a2",
    managed: "#9d755d", pinned_host: "#bab0ac", array: "#8c6d31", host_registered: "#d6d6d6", driver_used: "#e45756",
    pool_reserved: "#ff9da6", pool_used: "#eeca3b", unknown: "#999", site: "#d62728" };
  var PAD = 64;
  var st = { proc: 0, sel: null, zoom: null, native: false, libs: false, search: "", view: [0, 0] };

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  /* The site's user frame; without one, as the text report says it: the
   * thread (and PyTorch's autograd engine, the operator) */
  /* A site's user frame as the text heads it; withOp: its operator after
   * it too (", in aten::relu"), as the text's rows say it, so that rows of
   * one line tell apart */
  function userFrame(s, withOp) {
    var x = s && s.site ? s.site : s, f = s && (s.user_frame || (s.site && s.site.user_frame));
    var op = x && (x.autograd_node || x.operator) ? ", in " + (x.autograd_node && x.operator ? x.autograd_node +
      " (" + x.operator + ")" : x.autograd_node || x.operator) : "";
    if (f && f.kind === "python") return f["function"] + " (" + f.file.split("/").pop() + ":" + f.line + ")" + (withOp ? op : "");
    if (f) return (f["function"] ? f["function"] + (f.file ? " (" + f.file.split("/").pop() + ":" + f.line + ")" : "") :
      (f.module || "?").split("/").pop() + "+" + f.offset) + (withOp ? op : "");
    var th = x && x.thread, stack = x && x.stack;
    var t = th && th.name ? " in thread " + th.name + " (tid " + th.tid + ")" +
      (th.name.indexOf("pt_autograd") === 0 ? ": PyTorch's autograd engine, during backward" : "") : "";
    if (stack && stack.length) return "(no frame of yours)" + t + op;
    return "(no call stack recorded)" + t + op;
  }

  /* ---------------------------------------------------------- the report */

  function procLabel(p, i) {
    return (p.program || "?") + " (rank " + (p.rank === null || p.rank === undefined ? 0 : p.rank) + ", pid " + p.pid + ")";
  }

  /* "PATH (TYPE, N tensors, BYTES; + G of autograd graph: B+G in all)": what holds a site (who-holds walk) */
  function holderText(h, site) {
    /* tensors much smaller than the allocator's blocks: as the text says it */
    var tsz = h.tensors ? Math.floor(h.bytes / h.tensors) : 0, bsz = site && site.kind === "tensor" && site.allocs ?
      Math.floor(site.alloc_bytes / site.allocs) : 0;
    return h.path + " (" + h.type + ", " + h.tensors + " tensor" + (h.tensors === 1 ? "" : "s") + ", " +
      L.fmtBytes(h.bytes) + (h.graph_bytes ? "; + " + L.fmtBytes(h.graph_bytes) + " of autograd graph: " + L.fmtBytes(h.bytes + h.graph_bytes) + " in all" : "") +
      (tsz && tsz < 512 && bsz === 512 && !h.graph_bytes ? ": " + L.fmtBytes(tsz) + " each, in " + L.fmtBytes(bsz) + " allocator blocks" : "") + ")";
  }

  function heldBy(x) {
    var h = x && (x.held_by !== undefined ? x.held_by : x.site && x.site.held_by);
    if (h === undefined) return "";
    return h ? holderText(h, x.site || x) : "no Python object";
  }

  /* a leak's growth as the text says it: the named site's, then every
   * growing site's when there are more */
  function leakGrowth(v) {
    var own = v.site_grown_bytes !== undefined ? v.site_grown_bytes : v.grown_bytes;
    return "+" + L.fmtBytes(own) +
      (v.rate_bytes_per_step !== null && v.rate_bytes_per_step !== undefined && v.steps ?
        ", " + L.fmtBytes(v.rate_bytes_per_step) + " per step over " + v.steps + " steps" : "") +
      ", confidence " + v.confidence.toFixed(2) +
      (v.growing_sites > 1 ? " (" + v.growing_sites + " growing call sites, " + L.fmtBytes(v.grown_bytes) + " in all)" : "");
  }

  var SIGNALS = { 1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL",
    11: "SIGSEGV", 13: "SIGPIPE", 15: "SIGTERM" };
  /* how the process ended, as the text's rep_end_text says it */
  function endText(p) {
    if (!p.complete) return "no End record (killed, or the file was cut)";
    if (p.end_reason === "signal") return "killed by signal " + p.end_signal + (SIGNALS[p.end_signal] ? " (" + SIGNALS[p.end_signal] + ")" : "");
    return p.end_reason === "normal" ? "normal exit" : "tracing error";
  }

  /* the holder walk runs at exit: a view at a time or a mark (--at) is before it */
  function heldWord(p) {
    return p.view && (p.view.mode === "time" || p.view.mode === "marker") ? "held at exit by" : "held by";
  }

  function verdict(p) {
    var v = p.verdict;
    var held = heldWord(p) + " ";
    if (v && v.kind === "leak" && v.test) return { cls: "bad", kind: "leak", text: "Leak in test " + v.test.name + ": left " +
      L.fmtBytes(v.test.leaked_bytes) + " live in " + v.test.leaked_blocks + " block" + (v.test.leaked_blocks === 1 ? "" : "s") +
      (v.site && v.site.held_by ? ", " + held + holderText(v.site.held_by, v.site) : "") + ", allocated at " + userFrame(v.site) };
    if (v && v.kind === "leak" && v.site && v.site.held_by) return { cls: "bad", kind: "leak", text: "Leak: " + held +
      holderText(v.site.held_by, v.site) + ", allocated at " + userFrame(v.site) + ": " + leakGrowth(v) };
    if (v && v.kind === "leak") return { cls: "bad", kind: "leak", text: "Leak at " + userFrame(v.site) + ": " + leakGrowth(v) };
    if (v && v.kind === "cannot_tell" && v.pool) return { cls: "warn", kind: "cannot_tell", text: "Cannot tell: " + v.reason +
      (v.segments_grown_bytes ? " (its chunks grew by " + L.fmtBytes(v.segments_grown_bytes) + ")" : "") +
      ". To see its blocks: " + v.command };
    if (v && v.kind === "cannot_tell" && !v.command) /* a trace cut before any allocation */
      return { cls: "warn", kind: "cannot_tell", text: "Cannot tell: " + v.reason };
    if (v && v.kind === "cannot_tell") return { cls: "warn", kind: "cannot_tell", text: "Cannot tell in this mode: the caching allocator's " +
      "segments grew by " + L.fmtBytes(v.segments_grown_bytes) + "; " + v.reason + ". To find the line: " + v.command };
    /* a process that did not end normally: its "no leak" says so (what it
     * did after its last flush is not in the trace), not in green */
    var ended = endText(p), abnormal = ended !== "normal exit";
    if (v && v.kind === "no_leak") return { cls: p.oom_headline || abnormal ? "info" : "ok", kind: "no_leak", text: "No leak: no call site keeps growing" +
      (v.steps ? " over " + v.steps + " steps" : "") + "; " + L.fmtBytes(p.leaks ? p.leaks.bytes : 0) +
      " never freed" + (v.pool_cached_bytes > 0 ? "; the pools keep " + L.fmtBytes(v.pool_cached_bytes) +
      " reserved beyond what is allocated (cached, not leaked)" : "") +
      (abnormal ? "; but the process did not end normally: " + ended : "") };
    var grown = p.growth ? p.growth.grown_bytes : 0, leak = p.leaks ? p.leaks.bytes : 0;
    var failed = p.oom ? p.oom.failed : 0;
    if (failed) return { cls: "bad", kind: "oom", text: "Out of memory: " + failed + " failed allocation" + (failed > 1 ? "s" : "") +
      (grown ? "; memory grew by " + L.fmtBytes(grown) : "") };
    if (grown) return { cls: "bad", kind: "leak", text: "Growing: " + L.fmtBytes(grown) + " in " + p.growth.sites.length +
      " call site" + (p.growth.sites.length > 1 ? "s" : "") };
    return { cls: "ok", kind: "no_leak", text: "No growth: " + L.fmtBytes(leak) + " live at the view" };
  }

  /* OOM first: the request that ran out of memory, before the verdict
   * (the report's oom_headline; its full description is oom.events[event]) */
  function oomHeadline(p) {
    var h = p.oom_headline;
    if (!h) return null;
    var ev = (p.oom && p.oom.events && p.oom.events[h.event]) || {};
    var held = [];
    if (h.allocated_bytes !== null && h.allocated_bytes !== undefined)
      held.push("PyTorch allocated " + L.fmtBytes(h.allocated_bytes) + ", reserved " + L.fmtBytes(h.reserved_bytes));
    if (h.pool_reserved_bytes !== null && h.pool_reserved_bytes !== undefined)
      held.push("pools reserved " + L.fmtBytes(h.pool_reserved_bytes) + ", used " + L.fmtBytes(h.pool_used_bytes));
    held.push("traced live " + L.fmtBytes(h.device_live_bytes));
    var who = h.walk_holders ? h.walk_holders.slice(0, 3).map(holderText) :
      (ev.top_holders || []).slice(0, 3).map(function (x) { return L.fmtBytes(x.bytes) + " at " + userFrame(x); });
    return "Out of memory at " + userFrame(h) + ": " + L.fmtBytes(h.requested_bytes) + " requested on GPU " + h.device +
      " at " + L.fmtTime(h.time_s) + (h.failed_calls > 1 ? " (one request, " + h.failed_calls +
      " failed calls: the allocator's retries)" : "") + ". Held then: " + held.join("; ") + "." +
      (who.length ? (h.walk_holders ? " Who held CUDA tensors: " : " Largest call sites live then: ") + who.join("; ") + "." : "") +
      (h.more_out_of_memory ? " " + h.more_out_of_memory + " more request" + (h.more_out_of_memory > 1 ? "s" : "") +
        " ran out of memory." : "");
  }

  function summary(p, s) {
    var box = $("summary");
    box.textContent = "";
    var oh = oomHeadline(p);
    if (oh) box.appendChild(el("div", { id: "oom-headline", "class": "verdict bad oom", "data-kind": "oom" }, oh));
    var v = verdict(p);
    var vd = el("div", { id: "verdict", "class": "verdict " + v.cls, "data-kind": v.kind }, v.text);
    box.appendChild(vd);
    /* this process's read errors, then the report's that no process holds
     * (a file that gave no process): each once */
    var held = {};
    VT_REPORT.processes.forEach(function (q) { (q.read_errors || []).forEach(function (e) { held[e] = 1; }); });
    var errs = (p.read_errors || []).concat((VT_REPORT.errors || []).filter(function (e) { return !held[e]; }));
    if (errs.length) {
      box.appendChild(el("div", { id: "damaged", "class": "damaged" },
        "The trace is damaged: " + errs.join("; ") + ". What follows is what could be read."));
    }
    if (p.unverified_events) /* frames no checksum verified: a flipped bit there is a value here */
      box.appendChild(el("div", { id: "unverified", "class": "damaged" }, p.unverified_events + " event" +
        (p.unverified_events === 1 ? "" : "s") + " UNVERIFIED: decoded from frames no checksum checked (the last " +
        "frame of a trace cut short, or a trace read from a pipe); a damaged byte there would show as a value."));
    var dl = el("dl");
    function row(k, val, id) {
      dl.appendChild(el("dt", {}, k));
      var d = el("dd", id ? { id: id } : {}, val);
      dl.appendChild(d);
    }
    (p.devices || []).forEach(function (d) {
      row("GPU " + d.index + " peak", L.fmtBytes(d.peak_live_bytes) + " at " + L.fmtTime(d.peak_time_s), "peak-" + d.index);
      var ca = d.caching_allocator; /* PyTorch's caching allocator with its tensor events */
      if (ca) row("GPU " + d.index + " PyTorch allocated / reserved", L.fmtBytes(ca.allocated.at_view_bytes) + " / " +
        L.fmtBytes(ca.reserved.at_view_bytes) + " at the view (peaks " + L.fmtBytes(ca.allocated.peak_bytes) + " / " +
        L.fmtBytes(ca.reserved.peak_bytes) + "); " + L.fmtBytes(ca.cached_at_view_bytes) + " cached, " +
        L.fmtBytes(ca.outside_at_view_bytes) + " outside the allocator", "allocated-" + d.index);
    });
    /* the leak total, as the text's leak section and --fail-on-leak count it */
    var td = p.leaks && p.leaks.freed_at_teardown_counted_bytes;
    row("leaked", L.fmtBytes(p.leaks ? p.leaks.bytes : 0) + (td ? " (" + L.fmtBytes(td) +
      " of it freed only at teardown, from sites that grew or a test left live)" : " never freed") +
      "; the view: " + (p.view ? p.view.description : ""), "view");
    row("growth", L.fmtBytes(p.growth ? p.growth.grown_bytes : 0), "growth");
    var pr = p.oom && p.oom.probes ? p.oom.probes.count : 0; /* a library probing: not failures */
    row("failed allocations", String(p.oom ? p.oom.failed : 0) + (pr ? " (" + pr + " probe" + (pr > 1 ? "s" : "") +
      " not counted: " + Object.keys(p.oom.probes.by_kind).join(", ") + ")" : ""), "failed");
    var a = p.allocator || {};
    var amode = a.mode || "?", pooled = /^(pytorch_|cupy_)/.test(amode);
    row("allocator", amode + (a.tensor_level ? " (every tensor is an allocation)" :
      pooled ? " (the caching allocator's segments are recorded, not its tensors)" :
      amode === "direct" ? " (no caching allocator: every block is the program's own allocation)" :
      amode === "stream_ordered" ? " (cudaMallocAsync: blocks from the driver's memory pools)" : ""), "allocator");
    row("duration", L.fmtTime(p.duration_s || (s ? s.duration_s : 0)));
    box.appendChild(dl);
  }

  /* ---------------------------------------------------------- timeline */

  function bucketOf(s, t) { return Math.max(0, Math.min(s.buckets - 1, Math.floor(t / s.bucket_s))); }

  /* The call site the verdict names (else the first growing one): its
   * index in the series' sites, or -1 */
  function growSite(p, s) {
    var v = p && p.verdict, key = v && v.site && v.site.key;
    if (!key && p && p.growth && p.growth.sites && p.growth.sites.length) key = (p.growth.sites[0].site || {}).key;
    if (!key || !s) return -1;
    for (var i = 0; i < s.sites.length; i++) if (s.sites[i].key === key) return i;
    return -1;
  }

  /* A device's lanes: first what the verdict talks about (PyTorch's
   * allocated and reserved, or the traced live bytes), then the growing
   * call site's own live bytes on its own scale, then the driver and the
   * other kinds.  Each lane's legend is its series list itself. */
  function lanesOf(s, d) {
    var p = VT_REPORT.processes[st.proc], main = [], other = [], lanes = [];
    d.series.forEach(function (ser) { (ser.lane === "main" ? main : other).push(ser); });
    var ca = main.some(function (x) { return x.key === "tensor"; });
    if (main.length) lanes.push({ id: "main", h: 200, title: ca ? "PyTorch allocated vs reserved" : "live on the GPU (traced)",
      series: main });
    var gi = growSite(p, s);
    if (gi >= 0 && s.sites[gi].device === d.device) {
      /* a test's leak has not grown: its lane says what it is */
      var what = p.verdict && p.verdict.test ? "what test " + p.verdict.test.name + " left live: " : "the growing call site: ";
      var live = L.liveSeries(s.sites[gi], s.buckets), name = what + userFrame(p.verdict && p.verdict.site ?
        p.verdict : p.growth.sites[0]);
      lanes.push({ id: "site", h: 130, title: name, series: [{ key: "site", name: name, min: live, max: live }] });
    }
    if (other.length) lanes.push({ id: "other", h: 130, title: "driver and other memory", series: other });
    return lanes;
  }

  function drawTimelines(s) {
    var box = $("timelines");
    box.textContent = "";
    if (!s || !s.devices.length) {
      box.appendChild(el("p", {}, "No device memory was recorded."));
      return;
    }
    s.devices.forEach(function (d) {
      var wrap = el("div", { "class": "tl" });
      var title = el("div", { "class": "tl-title" }, "GPU " + d.device + " \u2014 peak " + L.fmtBytes(d.peak_bytes) +
        " at " + L.fmtTime(d.peak_s));
      title.id = "tl-title-" + d.device;
      wrap.appendChild(title);
      lanesOf(s, d).forEach(function (lane) {
        var lw = el("div", { "class": "lane", "data-lane": lane.id });
        lw.appendChild(el("div", { "class": "lane-title" }, lane.title));
        var c = el("canvas", { "class": "tl-canvas", "data-device": d.device, "data-lane": lane.id, height: String(lane.h) });
        c.style.height = lane.h + "px";
        c._lane = lane;
        var leg = el("div", { "class": "legend" });
        lane.series.forEach(function (ser) {
          var it = el("span", { "class": "key", "data-key": ser.key });
          var sw = el("i");
          sw.style.background = COLORS[ser.key] || "#888";
          it.appendChild(sw);
          it.appendChild(el("span", { "class": "key-name" }, ser.name));
          leg.appendChild(it);
        });
        lw.appendChild(c);
        if (lane.id !== "site") lw.appendChild(leg);
        wrap.appendChild(lw);
        box.appendChild(wrap);
        c.width = Math.max(400, box.clientWidth - 2);
        paint(c, s, d, lane);
        interact(c, s, d, lane);
      });
    });
  }

  function paint(c, s, d, lane) {
    var g = c.getContext("2d"), W = c.width, H = c.height, pad = PAD, top = 8, bot = 18;
    g.clearRect(0, 0, W, H);
    var v0 = st.view[0], v1 = st.view[1], cols = W - pad;
    var hi = 0;
    lane.series.forEach(function (ser) {
      for (var b = Math.floor(v0); b < Math.min(v1, ser.max.length); b++) if (ser.max[b] > hi) hi = ser.max[b];
    });
    var yt = L.byteTicks(hi, Math.max(2, Math.floor((H - top - bot) / 30)));
    var y = function (v) { return top + (H - top - bot) * (1 - v / yt.top); };
    var x = function (b) { return pad + (b - v0) / (v1 - v0) * cols; };
    g.font = "11px sans-serif";
    yt.ticks.forEach(function (tk) {
      g.fillStyle = "#666";
      g.fillText(tk.label, pad - 6 - g.measureText(tk.label).width, y(tk.v) + 4);
      g.strokeStyle = "#eee";
      g.beginPath(); g.moveTo(pad, y(tk.v)); g.lineTo(W, y(tk.v)); g.stroke();
    });
    /* the x axis: step numbers when the steps are known, else time */
    /* by step only where the steps cover most of the view (a run whose
     * steps take its last tenth keeps a time axis, the steps as ticks) */
    var t0 = v0 * s.bucket_s, t1 = v1 * s.bucket_s, sv = (s.steps || []).filter(function (t) { return t >= t0 && t <= t1; });
    var bySteps = sv.length >= 2 && (sv[sv.length - 1] - sv[0]) > 0.5 * (t1 - t0);
    var xt = L.timeTicks(t0, t1, Math.max(2, Math.floor(cols / 90)), bySteps ? s.steps : null), lastX = -1e9;
    if (!bySteps) sv.forEach(function (t) {
      g.strokeStyle = "#bbb";
      g.beginPath(); g.moveTo(x(t / s.bucket_s), H - bot); g.lineTo(x(t / s.bucket_s), H - bot + 3); g.stroke();
    });
    g.textBaseline = "alphabetic";
    xt.forEach(function (tk) {
      var px = x(tk.t / s.bucket_s);
      g.strokeStyle = "#f2f2f2";
      g.beginPath(); g.moveTo(px, top); g.lineTo(px, H - bot); g.stroke();
      g.strokeStyle = "#999";
      g.beginPath(); g.moveTo(px, H - bot); g.lineTo(px, H - bot + 4); g.stroke();
      g.fillStyle = "#666";
      var w = g.measureText(tk.label).width, lx = Math.min(W - w - 2, Math.max(pad, px - w / 2));
      if (lx < lastX + 8) return; /* labels never overlap */
      g.fillText(tk.label, lx, H - 3);
      lastX = lx + w;
    });
    var drawn = [], lo = Infinity, hiPx = -Infinity;
    lane.series.forEach(function (ser, k) {
      var dm = L.decimate(ser.min, ser.max, v0, v1, cols), col = COLORS[ser.key] || "#888";
      if (k === 0) { /* the lane's first series as a band under its line */
        g.fillStyle = col + "40";
        g.beginPath(); g.moveTo(pad, y(0));
        for (var i = 0; i < cols; i++) g.lineTo(pad + i, y(dm.max[i]));
        g.lineTo(pad + cols - 1, y(0));
        g.fill();
      }
      g.strokeStyle = col;
      g.lineWidth = k === 0 || ser.key === "reserved" ? 2 : 1.2;
      g.beginPath();
      for (var q = 0; q < cols; q++) {
        var py = y(dm.max[q]);
        g.lineTo(pad + q, py);
        if (py < lo) lo = py;
        if (py > hiPx) hiPx = py;
        py = y(dm.min[q]);
        if (py > hiPx) hiPx = py;
      }
      g.stroke();
      drawn.push(ser.name);
    });
    /* what the look test reads: the names drawn, and how much of the plot's
     * height the curves span */
    c.setAttribute("data-drawn", JSON.stringify(drawn));
    c.setAttribute("data-span", lo === Infinity ? "0" : ((hiPx - lo) / (H - top - bot)).toFixed(3));
    g.lineWidth = 1;
    function mark(t, color, dash) {
      var b = t / s.bucket_s;
      if (b < v0 || b > v1) return;
      g.strokeStyle = color;
      g.setLineDash(dash || []);
      g.beginPath(); g.moveTo(x(b), top); g.lineTo(x(b), H - bot); g.stroke();
      g.setLineDash([]);
    }
    mark(d.peak_s, "#f58518");
    mark(s.view_s, "#4c78a8", [4, 3]);
    (s.ooms || []).forEach(function (o) { if (o.device === d.device) mark(o.t_s, "#d62728"); });
    if (st.sel) {
      g.fillStyle = "rgba(80,80,200,0.15)";
      if (st.sel.mode === "range") g.fillRect(x(st.sel.b0), top, x(st.sel.b1 + 1) - x(st.sel.b0), H - top - bot);
      else if (st.sel.mode === "time") {
        g.strokeStyle = "#222"; g.beginPath(); g.moveTo(x(st.sel.b + 0.5), top); g.lineTo(x(st.sel.b + 0.5), H - bot); g.stroke();
      }
    }
  }

  function interact(c, s, d, lane) {
    var down = null;
    function bAt(ev) {
      var r = c.getBoundingClientRect(), px = ev.clientX - r.left - PAD;
      var f = Math.max(0, Math.min(1, px / (c.width - PAD)));
      return Math.max(0, Math.min(s.buckets - 1, Math.floor(st.view[0] + f * (st.view[1] - st.view[0]))));
    }
    c.addEventListener("mousedown", function (ev) { down = bAt(ev); });
    c.addEventListener("mouseup", function (ev) {
      if (down === null) return;
      var b = bAt(ev);
      if (Math.abs(b - down) < 1) select({ mode: "time", b: b });
      else select({ mode: "range", b0: Math.min(down, b), b1: Math.max(down, b) });
      down = null;
    });
    c.addEventListener("mousemove", function (ev) {
      var b = bAt(ev), parts = [L.fmtTime((b + 0.5) * s.bucket_s)];
      lane.series.forEach(function (ser) { parts.push(ser.name + " " + L.fmtBytes(ser.max[b])); });
      c.title = parts.join("\n");
    });
    c.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      var b = bAt(ev), f = ev.deltaY > 0 ? 1.25 : 0.8, v0 = st.view[0], v1 = st.view[1];
      var n0 = b - (b - v0) * f, n1 = b + (v1 - b) * f;
      st.view = [Math.max(0, n0), Math.min(s.buckets, Math.max(n0 + 4, n1))];
      redrawTimelines(s);
    }, { passive: false });
    c.addEventListener("dblclick", function () { st.view = [0, s.buckets]; redrawTimelines(s); });
  }

  function redrawTimelines(s) {
    /* which part of the run the charts show, when not all of it */
    var zv = $("tl-zoom");
    if (zv) {
      var whole = st.view[0] <= 0 && st.view[1] >= s.buckets;
      zv.textContent = whole ? "" : "showing " + L.fmtTime(st.view[0] * s.bucket_s) + " to " +
        L.fmtTime(Math.min(st.view[1], s.buckets) * s.bucket_s) + " of " + L.fmtTime(s.duration_s || s.buckets * s.bucket_s) +
        " \u00b7 double-click: the whole run";
    }
    var cs = document.querySelectorAll(".tl-canvas");
    for (var i = 0; i < cs.length; i++) {
      var dev = +cs[i].getAttribute("data-device");
      paint(cs[i], s, s.devices.filter(function (d) { return d.device === dev; })[0], cs[i]._lane);
    }
  }

  /* ---------------------------------------------------------- icicle */

  function grownByKey(p) {
    var g = {};
    ((p && p.growth && p.growth.sites) || []).forEach(function (x) {
      if (x.site && x.site.key) g[x.site.key] = (g[x.site.key] || 0) + (x.grown_bytes || 0);
    });
    return g;
  }

  function currentWeights(s) {
    if (!st.sel) return function () { return 0; };
    /* the peak and the view: the report's exact bytes per call site */
    if (st.sel.mode === "peak") return function (site) { return (site.peak || {})[st.sel.device] || 0; };
    if (st.sel.mode === "apeak") return function (site) { return (site.apeak || {})[st.sel.device] || 0; };
    if (st.sel.mode === "view") return function (site) { return site.view || 0; };
    if (st.sel.mode === "grew") { /* the report's growth by call site */
      var g = grownByKey(VT_REPORT.processes[st.proc]);
      return function (site) { return site.key ? g[site.key] || 0 : 0; };
    }
    if (st.sel.mode === "range") return function (site) { return L.rangeLeft(site, st.sel.b0, st.sel.b1); };
    return function (site) { return L.liveAt(site, st.sel.b); };
  }

  function drawFlame(s) {
    var box = $("flame");
    box.textContent = "";
    if (!s) return;
    var tree = L.buildTree(s.sites, currentWeights(s), st.native, st.libs);
    var gi = growSite(VT_REPORT.processes[st.proc], s), pv = VT_REPORT.processes[st.proc].verdict;
    var leakTest = pv && pv.test;
    (function markGrow(n) { /* the nodes down to the growing site */
      n.grow = n.sites.indexOf(gi) >= 0;
      for (var k in n.children) if (markGrow(n.children[k])) n.grow = true;
      return n.grow;
    })(tree);
    var root = tree;
    (st.zoom || []).forEach(function (name) { if (root.children[name]) root = root.children[name]; });
    var W = Math.max(300, box.clientWidth || 900), rects = L.layout(root, W, 1), rowH = 18, maxd = 0;
    var q = st.search.toLowerCase();
    rects.forEach(function (r) {
      var div = el("div", { "class": "fr" + (r.depth === 0 ? " root" : "") });
      div.style.left = r.x + "px";
      div.style.width = Math.max(1, r.w - 1) + "px";
      div.style.top = r.depth * rowH + "px";
      div.setAttribute("data-bytes", String(r.node.value));
      div.setAttribute("data-name", r.node.name);
      var pct = tree.value ? (100 * r.node.value / tree.value).toFixed(1) : "0";
      div.title = r.node.name + "\n" + L.fmtBytes(r.node.value) + " (" + r.node.value + " bytes, " + pct + " %)";
      var leaf = r.node.grow && r.node.sites.indexOf(gi) >= 0;
      if (r.w > 40) div.textContent = (leaf ? (leakTest ? "\u25b2 left live by a test: " : "\u25b2 growing: ") : "") + r.node.name +
        " \u2014 " + L.fmtBytes(r.node.value);
      var py = r.node.frame && r.node.frame[3], fold = r.node.frame && r.node.frame[5];
      div.className += fold ? " fold" : py ? " py" : r.depth ? " native" : "";
      if (r.node.grow && r.depth) div.className += " grow";
      if (q && r.node.name.toLowerCase().indexOf(q) >= 0) div.className += " match";
      div.addEventListener("click", function () {
        if (r.depth === 0) { st.zoom = (st.zoom || []).slice(0, -1); } else {
          var path = [], n = r.node;
          /* the path from the tree's root to this node */
          (function find(p, acc) {
            if (p === n) { path = acc; return true; }
            for (var k in p.children) if (find(p.children[k], acc.concat([k]))) return true;
            return false;
          })(tree, []);
          st.zoom = path;
        }
        drawFlame(s);
      });
      box.appendChild(div);
      if (r.depth > maxd) maxd = r.depth;
    });
    box.style.height = (maxd + 1) * rowH + 4 + "px";
    var at = $("flame-at");
    if (!st.sel) at.textContent = "";
    else if (st.sel.mode === "peak") at.textContent = "live at GPU " + st.sel.device + "'s peak (" +
      L.fmtTime(st.sel.t) + "): " + L.fmtBytes(tree.value);
    else if (st.sel.mode === "apeak") at.textContent = "live at GPU " + st.sel.device + "'s PyTorch allocated peak (" +
      L.fmtTime(st.sel.t) + ", tensors without the pool's cache): " + L.fmtBytes(tree.value);
    else if (st.sel.mode === "grew") at.textContent = "what grew (the growing call sites' growth): " + L.fmtBytes(tree.value);
    else if (st.sel.mode === "view") at.textContent = "live at the view (" + L.fmtTime(s.view_s) + "): " + L.fmtBytes(tree.value);
    else if (st.sel.mode === "range") at.textContent = "allocated from " + L.fmtTime(st.sel.b0 * s.bucket_s) + " to " +
      L.fmtTime((st.sel.b1 + 1) * s.bucket_s) + " and still live then: " + L.fmtBytes(tree.value);
    else at.textContent = "live at " + L.fmtTime((st.sel.b + 0.5) * s.bucket_s) + ": " + L.fmtBytes(tree.value);
    at.setAttribute("data-bytes", String(tree.value));
    drawRange(s);
  }

  /* the range's own table: what it allocated and left live, by call site */
  function drawRange(s) {
    var box = $("range");
    box.textContent = "";
    if (!st.sel || st.sel.mode !== "range") return;
    var rows = s.sites.map(function (site) { return { site: site, bytes: L.rangeLeft(site, st.sel.b0, st.sel.b1) }; })
      .filter(function (r) { return r.bytes > 0; }).sort(function (a, b) { return b.bytes - a.bytes; });
    table(box, "range-table", "Allocated in the range and still live at its end", ["bytes", "call site", "kind"],
      rows.map(function (r) { return [r.bytes, r.site.name, r.site.kind]; }), [true, false, false], null);
  }

  function select(sel) {
    st.sel = sel;
    var s = series();
    redrawTimelines(s);
    drawFlame(s);
  }

  /* ---------------------------------------------------------- tables */

  function table(box, id, title, heads, rows, bytesCol, onRow) {
    var sec = el("div", { "class": "tbl" });
    sec.appendChild(el("h3", {}, title + " (" + rows.length + ")"));
    var filt = el("input", { placeholder: "filter", "class": "filter" });
    sec.appendChild(filt);
    var t = el("table", { id: id }), thead = el("thead"), tr = el("tr");
    heads.forEach(function (h, k) {
      var th = el("th", {}, h);
      th.addEventListener("click", function () {
        var dir = th.getAttribute("data-dir") === "desc" ? "asc" : "desc";
        th.setAttribute("data-dir", dir);
        rows.sort(function (a, b) {
          var x = a[k], y = b[k], c = typeof x === "number" ? x - y : String(x) < String(y) ? -1 : String(x) > String(y) ? 1 : 0;
          return dir === "desc" ? -c : c;
        });
        fill();
      });
      tr.appendChild(th);
    });
    thead.appendChild(tr);
    t.appendChild(thead);
    var tb = el("tbody");
    t.appendChild(tb);
    function fill() {
      tb.textContent = "";
      var q = filt.value.toLowerCase();
      rows.forEach(function (r) {
        if (q && r.join(" ").toLowerCase().indexOf(q) < 0) return;
        var row = el("tr");
        r.forEach(function (v, k) {
          var td = el("td");
          if (v && v.svg) {
            td.innerHTML = v.svg;
          } else if (bytesCol[k]) {
            td.textContent = L.fmtBytes(v);
            td.title = v + " bytes";
            td.className = "num";
          } else {
            td.textContent = v;
          }
          row.appendChild(td);
        });
        if (onRow) row.addEventListener("click", function () { onRow(r); });
        tb.appendChild(row);
      });
    }
    filt.addEventListener("input", fill);
    fill();
    sec.appendChild(t);
    box.appendChild(sec);
  }

  function findInFlame(name) {
    st.search = name.replace(/ \(.*$/, "");
    $("search").value = st.search;
    drawFlame(series());
  }

  function sparkFor(s, key) {
    var site = s && s.sites.filter(function (x) { return x.key === key; })[0];
    if (!site) return "";
    /* over the part of the run the charts open on (the steps), so that it
     * draws the staircase the chart above draws */
    var all = L.liveSeries(site, s.buckets), pts = [], v0 = st.view[0], v1 = Math.min(st.view[1], s.buckets);
    for (var k = 0; k < 60; k++) pts.push(all[Math.min(s.buckets - 1, Math.floor(v0 + (k + 0.5) * (v1 - v0) / 60))]);
    return { svg: '<svg class="spark" width="90" height="18"><path d="' + L.sparkPath(pts, 90, 18) + '"/></svg>' };
  }

  /* The pytest plugin's tests (processes[].tests[]): what each left live,
   * its peak, the line of what it left and who holds it; a row selects
   * the test's time on the timeline (what it allocated and left live). */
  function testsTable(box, p, s) {
    var ts = (p.tests || []).slice().sort(function (a, b) { return b.leaked_bytes - a.leaked_bytes; });
    if (!ts.length) return;
    var heads = ["left live", "peak", "allocated", "test", "line of what it left"];
    if (p.holders) heads.push("held by"); /* the walk at exit: who holds what a test left */
    table(box, "tests-table", "Tests, " + ts.filter(function (t) { return t.leaked_bytes > 0; }).length +
      " of them left GPU memory live", heads,
      ts.map(function (t) {
        var top = (t.sites || [])[0];
        var r = [t.leaked_bytes, t.peak_bytes, t.allocated_bytes, t.name + (t.ended ? "" : " (the process stopped in it)"),
          top ? userFrame(top) : ""];
        if (p.holders) r.push(top ? heldBy(top) : "");
        r.test = t;
        return r;
      }), [true, true, true, false, false, false], function (r) {
        var t = r.test;
        if (s && s.bucket_s > 0)
          select({ mode: "range", b0: Math.max(0, Math.floor(t.start_s / s.bucket_s)),
            b1: Math.min(s.buckets - 1, Math.ceil((t.start_s + t.duration_s) / s.bucket_s)) });
        if (r[4]) findInFlame(r[4]);
      });
  }

  function tables(p, s) {
    var box = $("tables");
    box.textContent = "";
    testsTable(box, p, s);
    /* the growing call sites first (by their growth), then by bytes */
    var gk = grownByKey(p), gof = function (x) { return (x.site ? x.site.key : x.key) ? gk[x.site ? x.site.key : x.key] || 0 : 0; };
    var leaks = ((p.leaks && p.leaks.sites) || []).slice().sort(function (a, b) {
      return gof(b) - gof(a) || b.bytes - a.bytes;
    });
    /* what each row is to the leak total (the text's parts): so that the
     * rows that count add up to the summary's "leaked" */
    var counted = function (x) {
      if (x.after_view_bytes && x.after_view_bytes >= x.bytes) return "allocated after the view";
      if (gof(x) > 0) return x.never_freed_bytes >= x.bytes ? "leak: grew" : "leak: grew (freed at teardown)";
      if (x.counted_bytes >= x.bytes && x.never_freed_bytes < x.bytes) return "leak: a test left it live";
      if (x.held_since_start) return "held since the start";
      if (!x.never_freed_bytes) return "freed at teardown: not counted";
      return x.never_freed_bytes >= x.bytes ? "never freed" : "part never freed";
    };
    var lt = "Live at the view (growing call sites first): " + L.fmtBytes(p.leaks ? p.leaks.bytes : 0) + " leaked" +
      (p.leaks && p.leaks.teardown_bytes ? ", " + L.fmtBytes(p.leaks.teardown_bytes) + " freed at teardown (not counted)" : "");
    if (p.holders) /* who holds each site (the walk at exit) */
      table(box, "leaks-table", lt, ["bytes", "blocks", "call site", heldWord(p), "kind", "api", "grown", "counted"],
        leaks.map(function (x) { return [x.bytes, x.blocks, userFrame(x, true), heldBy(x), x.kind, x.api, gof(x), counted(x)]; }),
        [true, false, false, false, false, false, true, false], function (r) { findInFlame(r[2]); });
    else
      table(box, "leaks-table", lt, ["bytes", "blocks", "call site", "kind", "api", "grown", "counted"],
        leaks.map(function (x) { return [x.bytes, x.blocks, userFrame(x, true), x.kind, x.api, gof(x), counted(x)]; }),
        [true, false, false, false, false, true, false], function (r) { findInFlame(r[2]); });
    var gr = (p.growth && p.growth.sites) || [];
    table(box, "growth-table", "Growing call sites", ["grown", "per step", "per second", "confidence", "call site", "live bytes"],
      gr.map(function (x) {
        return [x.grown_bytes, Math.round(x.rate_bytes_per_step || 0), Math.round(x.rate_bytes_per_s || 0),
          (x.confidence || 0).toFixed(2), userFrame(x, true), sparkFor(s, x.site && x.site.key)];
      }), [true, true, true, false, false, false], function (r) { findInFlame(r[4]); });
    /* the peaks as the text lists them: the sites shown of all, and the
     * pool's cache as a row of its own */
    var more = function (sh, all) { return all > sh ? ", the largest " + sh + " of " + all + " call sites" : ""; };
    (p.peak || []).forEach(function (pk) {
      var rows = pk.sites.map(function (x) { return [x.bytes, x.blocks, userFrame(x, true), x.kind]; });
      if (pk.cached_bytes) rows.push([pk.cached_bytes, "", "(cached in PyTorch's pool: reserved, no tensor in it)", ""]);
      table(box, "peak-table-" + pk.device, "Live at GPU " + pk.device + "'s peak (" + L.fmtBytes(pk.bytes) + " at " +
        L.fmtTime(pk.time_s) + more(pk.sites.length, pk.sites_total) + ")", ["bytes", "blocks", "call site", "kind"],
        rows, [true, false, false, false], function (r) { findInFlame(r[2]); });
      if (pk.allocated)
        table(box, "apeak-table-" + pk.device, "Live at GPU " + pk.device + "'s PyTorch allocated peak (" +
          L.fmtBytes(pk.allocated.bytes) + " at " + L.fmtTime(pk.allocated.time_s) +
          more(pk.allocated.sites.length, pk.allocated.sites_total) + ")", ["bytes", "blocks", "call site", "kind"],
          pk.allocated.sites.map(function (x) { return [x.bytes, x.blocks, userFrame(x, true), x.kind]; }), [true, false, false, false],
          function (r) { findInFlame(r[2]); });
    });
    var ev = (p.oom && p.oom.events) || [];
    table(box, "oom-table", "Failed allocations", ["time", "requested", "error", "at", "top holder"],
      ev.map(function (x) {
        var th = (x.top_holders || [])[0];
        return [L.fmtTime(x.time_s), x.requested_bytes, x.error_name, userFrame(x),
          th ? L.fmtBytes(th.bytes) + " " + userFrame(th) : ""];
      }), [false, true, false, false, false], function (r) { findInFlame(r[3]); });
  }

  /* ---------------------------------------------------------- the page */

  function series() { return window.VT_SERIES && st.proc >= 0 ? VT_SERIES.processes[st.proc] : null; }

  function showProc(i) {
    st.proc = i;
    document.body.className = "";
    var p = VT_REPORT.processes[i], s = series();
    st.zoom = null;
    st.view = [0, s ? s.buckets : 1];
    /* the loop first: a run whose steps are a small part of it (imports,
     * start-up and a compile before them, the exit after them) opens on
     * its steps, from a little before the first to a little after the
     * last one or the view; a double-click shows the whole run */
    if (s && s.steps && s.steps.length >= 2 && s.bucket_s > 0) {
      var a = s.steps[0] / s.bucket_s;
      var e = Math.max(s.steps[s.steps.length - 1], s.view_s || 0) / s.bucket_s, span = Math.max(e - a, 1);
      var from = Math.max(0, Math.floor(a - 0.05 * span)), to = Math.min(s.buckets, Math.ceil(e + 0.15 * span));
      if (to - from < 0.6 * s.buckets && to - from >= 16) st.view = [from, to];
    }
    summary(p, s);
    drawTimelines(s);
    /* what grew when the verdict is a leak, else the peak of the first device */
    var g = grownByKey(p);
    /* (with PyTorch's tensors: its allocated peak, the tensors themselves,
     * where the device's peak is mostly the pool's cache) */
    var ad = s ? s.devices.filter(function (d) { return d.apeak_bytes; })[0] : null;
    var ab = document.querySelector('.at[data-at="apeak"]');
    if (ab) ab.hidden = !ad;
    if (s && p.verdict && p.verdict.kind === "leak" && Object.keys(g).length) st.sel = { mode: "grew" };
    else if (ad) st.sel = { mode: "apeak", device: ad.device, t: ad.apeak_s };
    else if (s && s.devices.length) st.sel = { mode: "peak", device: s.devices[0].device, t: s.devices[0].peak_s };
    else st.sel = null;
    if (s) redrawTimelines(s);
    drawFlame(s);
    tables(p, s);
  }

  /* all processes: the merged verdict (which processes leak, at which
   * line), the icicle of what is live at the view over all of them, and
   * the report's merged tables (by call site over ranks) */
  function showMerged() {
    var m = VT_REPORT.merged, ps = VT_REPORT.processes, box = $("summary");
    st.proc = -1;
    document.body.className = "merged";
    box.textContent = "";
    /* each process as the report names it (merged.verdict.processes:
     * "rank 1"; a report without them: the selector's label) */
    var mv = (m && m.verdict) || {}, named = mv.processes || [];
    var nameOf = function (i) { return named[i] && named[i].name ? named[i].name : procLabel(ps[i], i); };
    var list = function (ix) {
      var n = ix.slice(0, 8).map(nameOf).join(", ");
      return ix.length > 8 ? n + " and " + (ix.length - 8) + " more" : n;
    };
    var leaking = [], telling = [], clean = [], oomed = [], rest = [];
    ps.forEach(function (p, i) {
      var k = p.verdict && p.verdict.kind;
      (k === "leak" ? leaking : k === "cannot_tell" ? telling : clean).push(i);
      (p.oom_headline ? oomed : rest).push(i);
    });
    var tell = telling.length, n = ps.length, of = function (k) { return " (" + k + " of " + n + " processes)"; };
    var kind = leaking.length ? "leak" : tell ? "cannot_tell" : "no_leak";
    var openProc = function (i) {
      var a = el("a", { href: "#", "data-proc": String(i) }, nameOf(i));
      a.addEventListener("click", function (ev) { ev.preventDefault(); $("proc").value = String(i); showProc(i); });
      return a;
    };
    if (oomed.length) {
      box.appendChild(el("div", { id: "oom-headline", "class": "verdict bad oom", "data-kind": "oom" },
        "Out of memory in " + list(oomed) + of(oomed.length) +
        (rest.length ? "; no request ran out of memory in " + list(rest) : "")));
      var ol = el("ul", { id: "oom-processes", "class": "leaking" });
      oomed.concat(rest).forEach(function (i) {
        var p = ps[i], li = el("li", { "data-name": nameOf(i) }), end = named[i] || p;
        li.appendChild(openProc(i));
        li.appendChild(document.createTextNode(": " + (p.oom_headline ? oomHeadline(p) :
          "no request ran out of memory; its trace ends at " + L.fmtTime(p.duration_s) + ", " +
          endText(end))));
        ol.appendChild(li);
      });
      box.appendChild(ol);
    }
    var head = leaking.length ? "Leak in " + list(leaking) + of(leaking.length) +
      (tell ? "; cannot tell in " + list(telling) : "") :
      tell ? "Cannot tell in " + list(telling) + of(tell) : "No leak in any of the " + n + " processes (" + list(clean) + ")";
    if ((leaking.length || tell) && clean.length) head += "; no leak in " + list(clean);
    var vd = el("div", { id: "verdict", "class": "verdict " + (leaking.length ? "bad" : tell ? "warn" : "ok"), "data-kind": kind },
      head + ": " + L.fmtBytes(m.grown_bytes) + " grown, " + L.fmtBytes(m.leaked_bytes) + " leaked");
    box.appendChild(vd);
    if (leaking.length) {
      var ul = el("ul", { id: "leaking", "class": "leaking" });
      leaking.forEach(function (i) {
        var p = ps[i], li = el("li", { "data-name": nameOf(i) }), dir = (p.file || "").replace(/\/+[^\/]*$/, "").split("/").pop();
        var a = openProc(i);
        /* the name, the pid and host where the name is not them already, its directory */
        var nm = nameOf(i), ph = "pid " + p.pid + (p.host ? " on " + p.host : "");
        a.textContent = (nm.indexOf("pid " + p.pid) === 0 ? ph : nm + " (" + ph + ")") + (dir ? " in " + dir : "");
        li.appendChild(a);
        li.appendChild(document.createTextNode(": " + verdict(p).text));
        ul.appendChild(li);
      });
      box.appendChild(ul);
    }
    if ((leaking.length || tell) && clean.length)
      box.appendChild(el("p", { id: "clean" }, "No leak in " + list(clean) + ": no call site keeps growing there."));
    $("timelines").textContent = "";
    $("timelines").appendChild(el("p", {}, "Timelines are per process: choose one in the list above, or a leaking process."));
    /* the icicle of the merged sites: what is live at the view, over all processes */
    var sites = (m.leaks || []).map(function (x) {
      return { frames: L.jsonFrames(x.site && x.site.stack), bytes: x.bytes, name: userFrame(x) };
    });
    var tree = L.buildTree(sites, function (x) { return x.bytes; }, st.native, st.libs);
    var f = $("flame"), W = Math.max(300, f.clientWidth || 900), maxd = 0;
    f.textContent = "";
    L.layout(tree, W, 1).forEach(function (r) {
      var div = el("div", { "class": "fr" + (r.depth === 0 ? " root" : "") });
      div.style.left = r.x + "px";
      div.style.width = Math.max(1, r.w - 1) + "px";
      div.style.top = r.depth * 18 + "px";
      div.setAttribute("data-bytes", String(r.node.value));
      div.setAttribute("data-name", r.node.name);
      div.title = r.node.name + "\n" + L.fmtBytes(r.node.value);
      if (r.w > 40) div.textContent = r.node.name + " \u2014 " + L.fmtBytes(r.node.value);
      var fr = r.node.frame;
      div.className += fr && fr[5] ? " fold" : fr && fr[3] ? " py" : r.depth ? " native" : "";
      f.appendChild(div);
      if (r.depth > maxd) maxd = r.depth;
    });
    f.style.height = (maxd + 1) * 18 + 4 + "px";
    $("flame-at").textContent = "live at the view, all processes, by call site (the pools' cache and module globals " +
      "apart, freed at teardown included): " + L.fmtBytes(tree.value);
    $("flame-at").setAttribute("data-bytes", String(tree.value));
    $("range").textContent = "";
    var tb = $("tables");
    tb.textContent = "";
    /* "1 (rank 1)": which processes a row is in, when not all and few */
    var inProcs = function (x) {
      var ns = x.process_names || [];
      return x.processes < n && ns.length === x.processes ? x.processes + " (" + ns.join(", ") + ")" : String(x.processes);
    };
    table(tb, "merged-growth-table", "Growing call sites, all processes", ["grown", "processes", "call site"],
      (m.growth || []).map(function (x) { return [x.grown_bytes || x.bytes || 0, inProcs(x), userFrame(x)]; }),
      [true, false, false], null);
    table(tb, "merged-leaks-table", "Live at the view, all processes", ["bytes", "blocks", "processes", "call site", "kind"],
      (m.leaks || []).map(function (x) { return [x.bytes, x.blocks, inProcs(x), userFrame(x), x.site ? x.site.kind : ""]; }),
      [true, false, false, false, false], null);
  }

  function report() {
    var sel = $("proc");
    VT_REPORT.processes.forEach(function (p, i) { sel.appendChild(el("option", { value: i }, procLabel(p, i))); });
    var job = VT_REPORT.merged && VT_REPORT.processes.length > 1;
    if (job) sel.insertBefore(el("option", { value: "merged" }, "all " + VT_REPORT.processes.length +
      " processes (the job's verdict)"), sel.firstChild);
    sel.addEventListener("change", function () { if (sel.value === "merged") showMerged(); else showProc(+sel.value); });
    var redraw = function () { if (st.proc < 0) showMerged(); else drawFlame(series()); };
    $("search").addEventListener("input", function (ev) { st.search = ev.target.value; redraw(); });
    $("native").addEventListener("change", function (ev) { st.native = ev.target.checked; redraw(); });
    $("libs").addEventListener("change", function (ev) { st.libs = ev.target.checked; redraw(); });
    $("reset-zoom").addEventListener("click", function () { st.zoom = null; drawFlame(series()); });
    document.querySelectorAll(".at").forEach(function (b) {
      b.addEventListener("click", function () {
        var s = series(), w = b.getAttribute("data-at");
        if (!s) return;
        if (w === "peak" && s.devices.length) select({ mode: "peak", device: s.devices[0].device, t: s.devices[0].peak_s });
        else if (w === "apeak") {
          var ad = s.devices.filter(function (d) { return d.apeak_bytes; })[0];
          if (ad) select({ mode: "apeak", device: ad.device, t: ad.apeak_s });
        }
        else if (w === "view") select({ mode: "view" });
        else if (w === "grew") select({ mode: "grew" });
        else select({ mode: "time", b: s.buckets - 1 });
      });
    });
    if (!VT_REPORT.processes.length) {
      $("summary").appendChild(el("div", { id: "damaged", "class": "damaged" }, "Nothing could be read: " +
        (VT_REPORT.errors || []).join("; ")));
      return;
    }
    if (job) { sel.value = "merged"; showMerged(); } else showProc(0);
    window.addEventListener("resize", function () {
      if (st.proc < 0) return showMerged();
      drawTimelines(series()); redrawTimelines(series()); drawFlame(series());
    });
  }

  function diff() {
    document.body.className = "diff";
    var d = VT_DIFF, box = $("tables");
    var grown = (d.b.leaked_bytes || 0) - (d.a.leaked_bytes || 0);
    $("summary").appendChild(el("div", { id: "verdict", "class": "verdict " + (grown > 0 ? "bad" : "ok") },
      "B against A: " + (grown >= 0 ? "+" : "") + L.fmtBytes(grown) + " leaked at the view (A " + L.fmtBytes(d.a.leaked_bytes || 0) +
      " in " + d.a.processes + " process" + (d.a.processes === 1 ? "" : "es") + ", B " + L.fmtBytes(d.b.leaked_bytes || 0) +
      "); peak " + L.fmtBytes(d.a.peak_bytes || 0) + " \u2192 " + L.fmtBytes(d.b.peak_bytes || 0)));
    var sites = L.diffSites(d);
    function drawDiff() {
      var f = $("flame");
      f.textContent = "";
      var tree = L.diffTree(sites, st.native, st.libs), W = Math.max(300, f.clientWidth || 900), rects = L.layout(tree, W, 1), maxd = 0;
      rects.forEach(function (r) {
        var div = el("div", { "class": "fr" + (r.depth === 0 ? " root" : "") });
        div.style.left = r.x + "px";
        div.style.width = Math.max(1, r.w - 1) + "px";
        div.style.top = r.depth * 18 + "px";
        var dl = r.node.delta;
        div.style.background = dl > 0 ? "rgba(214,39,40," + Math.min(0.9, 0.25 + Math.abs(dl) / (tree.value || 1)) + ")" :
          dl < 0 ? "rgba(44,160,44," + Math.min(0.9, 0.25 + Math.abs(dl) / (tree.value || 1)) + ")" : "#ddd";
        div.setAttribute("data-delta", String(dl));
        div.title = r.node.name + "\nB - A: " + L.fmtBytes(dl);
        if (r.w > 40) div.textContent = r.node.name + " \u2014 " + (dl >= 0 ? "+" : "") + L.fmtBytes(dl);
        f.appendChild(div);
        if (r.depth > maxd) maxd = r.depth;
      });
      f.style.height = (maxd + 1) * 18 + 4 + "px";
      $("flame-at").textContent = "leaked bytes, grown (red) and shrunk (green) from A to B";
    }
    $("native").addEventListener("change", function (ev) { st.native = ev.target.checked; drawDiff(); });
    $("libs").addEventListener("change", function (ev) { st.libs = ev.target.checked; drawDiff(); });
    drawDiff();
    var nd = L.diffRows(d).length;
    table(box, "diff-table", "Call sites whose leaked bytes changed, A against B" + (d.sites_total > nd ?
      " (of " + d.sites_total + " call sites that changed in any way: `vramtrace diff` lists them all)" : ""),
      ["status", "leaked A", "leaked B", "B - A", "call site"],
      L.diffRows(d).map(function (x) {
        var lb = x.leaked_bytes || [0, 0], a = lb[0] || 0, b = lb[1] || 0;
        return [x.status, a, b, b - a, typeof x.user_frame === "string" ? x.user_frame : userFrame(x)];
      }), [false, true, true, true, false], null);
  }

  /* The data comes packed (src/analyze/vt_page_pack.c): base64 of gzip of
   * what L.unpackText reads. */
  function unpack(b64) {
    var bin = atob(b64), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var ds = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(ds).text().then(function (text) {
      var data = L.unpackText(text);
      Object.keys(data).forEach(function (k) { window[k] = data[k]; });
    });
  }

  function start() {
    if (window.VT_DIFF) diff();
    else if (window.VT_REPORT) report();
  }

  window.addEventListener("DOMContentLoaded", function () {
    if (!window.VT_PACKED) return start();
    if (typeof DecompressionStream === "undefined") {
      document.body.insertBefore(el("p", { class: "verdict bad" }, "This browser cannot open the page's data: it has no " +
        "DecompressionStream (Chrome 80, Firefox 113, Safari 16.4 and later have it)."), document.body.firstChild);
      return;
    }
    unpack(window.VT_PACKED).then(start, function (e) {
      document.body.insertBefore(el("p", { class: "verdict bad" }, "The page's data is damaged: " + e), document.body.firstChild);
    });
  });
})();
