/* vt_report_text.c - `vramtrace report` as text: per process the summary,
 * leaks, growth, peak, OOM and allocator view (the job's merged part:
 * vt_report_job.c). */
#include "vt_report_int.h"
/* ------------------------------------------------------------ text */

/* The answer first: leak (where, how fast), no leak, or cannot tell in
 * this mode (and the command that can). */
static const char *holder_text(const vt_proc *p, const vt_unit *u, char *buf, size_t len);
void rep_text_verdict(vt_analysis *a, vt_proc *p, FILE *o, const char *lead, const char *indent)
{
    rep_verdict v;
    char b1[32], b2[32], b3[32], at[1200];
    rep_verdict_of(a, p, &v);
    if (v.kind == REP_LEAK) {
        vt_xframe fr[VT_MAX_STACK];
        int user = -1;
        uint32_t n = vt_site_frames(a, p, p->units[v.unit].stack, fr, VT_MAX_STACK, &user);
        if (n)
            vt_xframe_format(&fr[user >= 0 ? user : 0], at, sizeof(at));
        else
            snprintf(at, sizeof(at), "(no call stack recorded)");
        char hb[600];
        if (v.test) { /* a test that left memory live (the pytest plugin) */
            fprintf(o, "%sLEAK in test %s: left %s live in %" PRIu64 " block%s", lead, rep_t(v.test->name),
                    rep_bytes(b1, (double)v.test->leaked), v.test->leaked_blocks, v.test->leaked_blocks == 1 ? "" : "s");
            if (*holder_text(p, &p->units[v.unit], hb, sizeof(hb)) && p->units[v.unit].holder)
                fprintf(o, ", %s", hb);
            fprintf(o, ", allocated at %s (see the tests section)\n", at);
            return;
        }
        if (p->units[v.unit].holder) /* the keeper first, then where it was allocated */
            fprintf(o, "%sLEAK %s, allocated at %s: +%s", lead, holder_text(p, &p->units[v.unit], hb, sizeof(hb)), at,
                    rep_bytes(b1, (double)p->units[v.unit].grown));
        else
            fprintf(o, "%sLEAK at %s: +%s", lead, at, rep_bytes(b1, (double)p->units[v.unit].grown));
        if (v.per_step >= 0)
            fprintf(o, ", %s per step over %" PRIu64 " step%s", rep_bytes(b2, v.per_step), v.steps, v.steps == 1 ? "" : "s");
        fprintf(o, ", %s/s, confidence %.2f", rep_bytes(b3, v.rate), v.confidence);
        if (p->ngrowth > 1)
            fprintf(o, " (%zu growing call sites, %s in all)", p->ngrowth, rep_bytes(b1, (double)v.grown));
        fputc('\n', o);
    } else if (v.kind == REP_CANNOT_TELL && v.blind) { /* cut before any allocation */
        fprintf(o, "verdict: CANNOT TELL: %s\n", v.reason);
    } else if (v.kind == REP_CANNOT_TELL && v.early) { /* a view before the steps */
        fprintf(o, "%sCANNOT TELL: %s\n", lead, v.reason);
    } else if (v.kind == REP_CANNOT_TELL && v.pool) { /* a pool the trace cannot see into (vt_pools.c) */
        fprintf(o, "%sCANNOT TELL: %s", lead, v.reason);
        if (v.segments_grown)
            fprintf(o, " (its chunks grew by %s)", rep_bytes(b1, (double)v.segments_grown));
        fprintf(o, "\n%sto see its blocks: %s\n", indent, v.command);
    } else if (v.kind == REP_CANNOT_TELL) {
        fprintf(o, "%sCANNOT TELL in this mode: the caching allocator's segments grew by %s; %s\n", lead,
                rep_bytes(b1, (double)v.segments_grown), v.reason);
        fprintf(o, "%sto find the line: %s\n", indent, v.command);
    } else {
        fprintf(o, "%sno leak: no call site's live bytes keep rising", lead);
        if (v.steps)
            fprintf(o, " over %" PRIu64 " step%s", v.steps, v.steps == 1 ? "" : "s");
        if (p->leak_bytes)
            fprintf(o, " (%s never freed, not growing)", rep_bytes(b2, (double)p->leak_bytes));
        if (v.cached > 0)
            fprintf(o, "; the pools keep %s reserved beyond what is allocated (freed blocks cached, not a leak)",
                    rep_bytes(b1, (double)v.cached));
        /* "no leak" of a process that did not end normally says so: what
         * it did after its last flush is not in the trace */
        if (rep_abnormal_end(p)) {
            char eb[96];
            fprintf(o, "; but the process did not end normally: %s", rep_end_text(p, eb, sizeof(eb)));
        }
        fputc('\n', o);
    }
}

/* OOM first: the request that ran out of memory, its line, what the
 * allocator held then and who held the tensors (the OOM walk; else the
 * largest call sites live then), before the verdict. */
int rep_text_oom_headline(vt_analysis *a, vt_proc *p, FILE *o, const char *lead, const char *indent)
{
    rep_oom_head h;
    if (!rep_oom_headline(p, &h))
        return 0;
    const vt_oom *e = h.o;
    char b1[32], b2[32], b3[32], b4[32], at[1200];
    vt_xframe fr[VT_MAX_STACK];
    int user = -1;
    uint32_t n = vt_site_frames(a, p, e->stack, fr, VT_MAX_STACK, &user);
    if (n)
        vt_xframe_format(&fr[user >= 0 ? user : 0], at, sizeof(at));
    else
        snprintf(at, sizeof(at), "(no call stack recorded)");
    fprintf(o, "%sOUT OF MEMORY at %s: %s requested on device %u at %.3f s (%s", lead, at, rep_bytes(b1, (double)e->size),
            e->device, rep_rel_s(p, e->t_first), rep_t(e->error_name ? e->error_name : "out of memory"));
    if (e->attempts > 1)
        fprintf(o, "; one request, %u failed calls: the allocator's retries", e->attempts);
    fprintf(o, ")");
    if (h.more)
        fprintf(o, "; %" PRIu64 " more request%s ran out of memory (oom section)", h.more, h.more == 1 ? "" : "s");
    fputc('\n', o);
    fprintf(o, "%sheld then:", indent);
    if (e->have_tensors) {
        int64_t cached = e->reserved > e->allocated ? e->reserved - e->allocated : 0;
        fprintf(o, " PyTorch allocated %s (tensors), reserved %s (%s cached", rep_bytes(b1, (double)e->allocated),
                rep_bytes(b2, (double)e->reserved), rep_bytes(b3, (double)cached));
        if (e->largest_free >= 0)
            fprintf(o, ", largest free block %s", rep_bytes(b4, (double)e->largest_free));
        fprintf(o, ");");
    } else if (e->c10_reserved) {
        fprintf(o, " PyTorch caching allocator segments %s;", rep_bytes(b1, (double)e->c10_reserved));
    }
    if (e->have_pool)
        fprintf(o, " pools reserved %s, used %s;", rep_bytes(b1, (double)e->pool_reserved),
                rep_bytes(b2, (double)e->pool_used));
    fprintf(o, " traced live %s", rep_bytes(b1, (double)e->dev_live));
    if (p->dev[e->device].total)
        fprintf(o, " of %s", rep_bytes(b2, (double)p->dev[e->device].total));
    if (e->drv_t)
        fprintf(o, "; driver %s free", rep_bytes(b3, (double)e->drv_free));
    fputc('\n', o);
    if (h.walk) {
        const vt_walk *k = h.walk;
        fprintf(o, "%swho held CUDA tensors (PyTorch's OOM observer):", indent);
        if (!k->nh)
            fprintf(o, " no Python object reachable from module globals or the running frames");
        for (uint32_t i = 0; i < k->nh && i < 3; i++)
            fprintf(o, "%s %u) %s (%s, %" PRIu64 " tensor%s, %s)", i ? ";" : "", i + 1, rep_t(k->h[i].path), rep_t(k->h[i].type),
                    k->h[i].tensors, k->h[i].tensors == 1 ? "" : "s", rep_bytes(b1, (double)(k->h[i].bytes + k->h[i].graph_bytes)));
        fputc('\n', o);
    } else if (e->ntop) {
        fprintf(o, "%slargest call sites live then:", indent);
        for (uint32_t i = 0; i < e->ntop && i < 3; i++) {
            n = vt_site_frames(a, p, p->units[e->top_unit[i]].stack, fr, VT_MAX_STACK, &user);
            if (n && user >= 0 && !fr[user].internal)
                vt_xframe_format(&fr[user], at, sizeof(at));
            else
                snprintf(at, sizeof(at), "%s", n ? "(no frame of yours)" : "(no call stack recorded)");
            fprintf(o, "%s %u) %s at %s", i ? ";" : "", i + 1, rep_bytes(b1, (double)e->top_bytes[i]), at);
        }
        fputc('\n', o);
    }
    return 1;
}

static void text_allocated_reserved(const vt_proc *p, const vt_devstate *s, FILE *o);
static void text_stack_lead(vt_analysis *a, const vt_proc *p, uint32_t stack, FILE *o, const char *indent,
                            const char *lead, uint32_t thread);

static void text_stack(vt_analysis *a, const vt_proc *p, uint32_t stack, FILE *o, const char *indent)
{
    text_stack_lead(a, p, stack, o, indent, "at", 0);
}

/* Set while a later section prints a site the leak section showed in
 * full: its headline only, pointing at that leak (one screen, no repeat). */
static size_t g_leak_ref;
static int g_headline_only; /* the headline and nothing more */

/* A unit's stack: a caching-allocator segment's call site is where the
 * pool grew, never presented as the line that holds the memory. */
void rep_text_unit_stack(vt_analysis *a, const vt_proc *p, const vt_unit *u, FILE *o, const char *indent)
{
    text_stack_lead(a, p, u->stack, o, indent,
                    u->segment ? "triggered the pool to grow at" : u->holder ? "allocated at" : "at", u->thread);
}

/* As text_unit_stack, but a site shown in full as leak #N gets its
 * headline and "(stack: leak #N)"; --native prints every stack */
static void text_unit_stack_once(vt_analysis *a, const vt_proc *p, const vt_unit *u, FILE *o, const char *indent)
{
    for (size_t i = 0; !a->cfg.native && i < p->nleak && i < a->cfg.top; i++)
        if (&p->units[p->leak_order[i]] == u && VT_LEAK_PART(u) < 2) { /* shown in full there */
            g_leak_ref = i + 1;
            break;
        }
    rep_text_unit_stack(a, p, u, o, indent);
    g_leak_ref = 0;
}

/* thread: the site's first allocating thread (0: not said); where no
 * frame is the user's (framework threads: PyTorch's autograd engine during
 * backward, NCCL, a library's own), the headline names that thread rather
 * than a framework frame. */
static void text_stack_lead(vt_analysis *a, const vt_proc *p, uint32_t stack, FILE *o, const char *indent,
                            const char *lead, uint32_t thread)
{
    vt_xframe fr[VT_MAX_STACK];
    int user = -1;
    char line[1200];
    uint32_t n = vt_site_frames(a, p, stack, fr, VT_MAX_STACK, &user);
    uint32_t tid = 0;
    const char *tname = thread ? rep_thread_name(p, thread, &tid) : NULL;
    if (tname && !*tname)
        tname = NULL; /* a thread without a name says nothing the frames do not */
    if (!n) {
        if (tname)
            fprintf(o, "%s%s (no call stack recorded) in thread %s (tid %u)\n", indent, lead, rep_t(tname), tid);
        else
            fprintf(o, "%s%s (no call stack recorded)\n", indent, lead);
        return;
    }
    /* the operator it came from (symbolized PyTorch frames): ", in
     * MmBackward0 (aten::mm)" */
    char op[96], node[96], opw[220] = "";
    if (vt_site_operator(fr, n, op, sizeof(op), node, sizeof(node))) {
        if (node[0] && op[0])
            snprintf(opw, sizeof(opw), ", in %s (%s)", rep_t(node), rep_t(op));
        else
            snprintf(opw, sizeof(opw), ", in %s", rep_t(node[0] ? node : op));
    }
    char ref[48] = "";
    if (g_leak_ref)
        snprintf(ref, sizeof(ref), " (stack: leak #%zu)", g_leak_ref);
    if ((user < 0 || fr[user].internal) && tname && !a->cfg.native) {
        fprintf(o, "%s%s (no frame of yours) in thread %s (tid %u)%s%s%s\n", indent, lead, rep_t(tname), tid,
                !strncmp(tname, "pt_autograd", 11) ? ": PyTorch's autograd engine, during backward" : "", opw, ref);
    } else {
        vt_xframe_format(&fr[user >= 0 ? user : 0], line, sizeof(line));
        fprintf(o, "%s%s %s%s%s\n", indent, lead, line, opw, ref);
    }
    if (g_leak_ref || g_headline_only)
        return;
    if (!a->cfg.native) {
        /* the user's frames (Python, and native frames of the user's own
         * binaries), innermost first, below the headline that names the
         * first of them; runs of framework and runtime frames folded into
         * one line naming their libraries (--native: every frame) */
        uint32_t printed = 0;
        for (uint32_t i = 0; i < n && printed < a->cfg.max_frames;) {
            if (!fr[i].internal) {
                if ((int)i != user) {
                    vt_xframe_format(&fr[i], line, sizeof(line));
                    fprintf(o, "%s    %s\n", indent, line);
                    printed++;
                }
                i++;
                continue;
            }
            uint32_t j = i, libs = 0;
            char names[400] = "";
            size_t len = 0;
            for (; j < n && fr[j].internal; j++) {
                const char *m = fr[j].python ? "python" : fr[j].module ? strrchr(fr[j].module, '/') : NULL;
                m = fr[j].python ? (fr[j].file && strstr(fr[j].file, "site-packages/") ? strstr(fr[j].file, "site-packages/") + 14 : "python")
                                 : m ? m + 1 : fr[j].module ? fr[j].module : "?";
                char lib[80];
                snprintf(lib, sizeof(lib), "%s", m);
                if (fr[j].python) { /* a package: its top directory */
                    char *sl = strchr(lib, '/');
                    if (sl)
                        *sl = 0;
                }
                if (!strstr(names, lib) && libs < 6) {
                    len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s", libs ? ", " : "", lib);
                    libs++;
                }
            }
            /* a run inside the user's frame is the allocation's way down */
            fprintf(o, "%s    [%s%u frame%s: %s]\n", indent, user >= 0 && (int)i < user ? "via " : "", j - i,
                    j - i == 1 ? "" : "s", names);
            printed++;
            i = j;
        }
        return;
    }
    uint32_t shown = n < a->cfg.max_frames ? n : a->cfg.max_frames;
    for (uint32_t i = 0; i < shown; i++) {
        vt_xframe_format(&fr[i], line, sizeof(line));
        /* Why a frame is unsymbolized is said once per run of frames of
         * one module, not on every line. */
        if (i > 0 && !fr[i].python && !fr[i - 1].python && !fr[i].function && !fr[i - 1].function &&
            fr[i].status == fr[i - 1].status && fr[i].module && fr[i - 1].module &&
            !strcmp(fr[i].module, fr[i - 1].module)) {
            char *paren = strrchr(line, '(');
            if (paren && paren > line && paren[-1] == ' ')
                paren[-1] = '\0';
        }
        fprintf(o, "%s  %c %s\n", indent, (int)i == user ? '>' : ' ', line);
    }
    if (user >= 0 && (uint32_t)user >= shown) {
        /* the user's frame is below the cut: show it in its place */
        if ((uint32_t)user > shown)
            fprintf(o, "%s    ... %u frames\n", indent, (uint32_t)user - shown);
        vt_xframe_format(&fr[user], line, sizeof(line));
        fprintf(o, "%s  > %s\n", indent, line);
        shown = (uint32_t)user + 1;
    }
    if (shown < n)
        fprintf(o, "%s    ... %u more frames\n", indent, n - shown);
}

static void text_summary(vt_analysis *a, vt_proc *p, FILE *o)
{
    char b1[32], b2[32], b3[32];
    fprintf(o, "trace: %s  (format %u, vramtrace %s, clock %s)\n", rep_t(p->name), p->format_version,
            rep_t(p->tool_version ? p->tool_version : "?"), rep_t(p->clock ? p->clock : "?"));
    if (p->argc) {
        fprintf(o, "command:");
        for (uint32_t i = 0; i < p->argc; i++)
            fprintf(o, " %s", rep_t(p->argv[i]));
        fprintf(o, "\n");
    }
    if (p->env_alloc_conf)
        fprintf(o, "PYTORCH_CUDA_ALLOC_CONF=%s\n", rep_t(p->env_alloc_conf));
    if (!p->complete)
        fprintf(o, "status: INCOMPLETE (no end record: the process died or the file was cut)");
    else
    {
        char sb[32];
        if (p->end_reason == VT_END_SIGNAL)
            fprintf(o, "status: complete (fatal signal %s, flushed on the signal)",
                    rep_signal_text(p->end_signal, sb, sizeof(sb)));
        else
            fprintf(o, "status: complete (%s)", p->end_reason == VT_END_NORMAL ? "normal exit" : "tracing error");
    }
    if (p->unverified_events)
        fprintf(o, "; %" PRIu64 " event%s UNVERIFIED (decoded from frames no checksum checked: the last frame of a "
                   "trace cut short, or a trace read from a pipe)",
                p->unverified_events, p->unverified_events == 1 ? "" : "s");
    fputc('\n', o);
    fprintf(o, "recorded: kernels %s, native stacks %s, python stacks %s\n", p->hdr_kernels ? "yes" : "no",
            p->hdr_native ? "yes" : "no", p->hdr_python ? "yes" : "no");
    fprintf(o, "duration: %.3f s\n", rep_duration_s(p));
    /* failed: the program's requests; an allocator's retries and a
     * library's probes are failed calls, said apart */
    fprintf(o, "events: %" PRIu64 " alloc, %" PRIu64 " free, %" PRIu64 " failed", p->nev[VT_EV_ALLOC], p->nev[VT_EV_FREE],
            p->failed);
    if (p->failed_retries && p->failed_probes)
        fprintf(o, " (+%" PRIu64 " retr%s, %" PRIu64 " probe%s)", p->failed_retries, p->failed_retries == 1 ? "y" : "ies",
                p->failed_probes, p->failed_probes == 1 ? "" : "s");
    else if (p->failed_retries || p->failed_probes)
        fprintf(o, " (+%" PRIu64 " %s)", p->failed_retries + p->failed_probes,
                p->failed_retries ? (p->failed_retries == 1 ? "retry" : "retries")
                                  : (p->failed_probes == 1 ? "probe" : "probes"));
    fprintf(o, ", %" PRIu64 " kernels", p->nev[VT_EV_KERNEL]);
    uint64_t vmm = p->nev[VT_EV_VMM_CREATE] + p->nev[VT_EV_VMM_RELEASE] + p->nev[VT_EV_VMM_MAP] +
                   p->nev[VT_EV_VMM_UNMAP] + p->nev[VT_EV_VMM_RESERVE] + p->nev[VT_EV_VMM_ADDRESS_FREE];
    if (vmm)
        fprintf(o, ", %" PRIu64 " vmm", vmm);
    if (p->nev[VT_EV_NVTX])
        fprintf(o, ", %" PRIu64 " nvtx", p->nev[VT_EV_NVTX]);
    if (p->nev[VT_EV_POOL] + p->nev[VT_EV_POOL_USAGE])
        fprintf(o, ", %" PRIu64 " pool", p->nev[VT_EV_POOL] + p->nev[VT_EV_POOL_USAGE]);
    fprintf(o, " (%" PRIu64 " records)\n", p->records);
    for (uint32_t d = 0; d < p->ndev_seen && d < VT_MAX_DEVICES; d++) {
        const vt_devstate *s = &p->dev[d];
        if (!s->present && !s->used && !s->drv_samples)
            continue;
        int host_only = 1;
        for (int k = 0; k < VT_MEM__COUNT; k++)
            if (rep_resident((unsigned)k) && s->peak_kind[k])
                host_only = 0;
        fprintf(o, "device %u", d);
        if (s->present)
            fprintf(o, " (%s, %s)", rep_t(s->name ? s->name : "?"), rep_bytes(b1, (double)s->total));
        if (host_only && !s->peak)
            fprintf(o, ": no device memory traced\n");
        else
            fprintf(o, ": peak live %s at %.3f s\n", rep_bytes(b1, (double)s->peak), rep_rel_s(p, s->peak_t));
        for (int k = 0; k < VT_MEM__COUNT; k++) {
            if (!s->peak_kind[k] || k == VT_MEM_TENSOR)
                continue;
            fprintf(o, "    %-15s peak %s at %.3f s, at the view %s, at the end %s\n", vt_memkind_name((vt_memkind)k),
                    rep_bytes(b1, (double)s->peak_kind[k]), rep_rel_s(p, s->peak_kind_t[k]), rep_bytes(b2, (double)s->at_kind[k]),
                    rep_bytes(b3, (double)s->live[k]));
        }
        if (p->tensor_units && (s->peak_kind[VT_MEM_TENSOR] || s->reserved_peak))
            text_allocated_reserved(p, s, o);
        if (s->drv_samples) {
            int64_t untraced = (int64_t)s->drv_max_used - s->drv_traced_then;
            fprintf(o, "    driver view: max used %s of %s at %.3f s; traced live then %s",
                    rep_bytes(b1, (double)s->drv_max_used), rep_bytes(b2, (double)s->drv_total), rep_rel_s(p, s->drv_max_t),
                    rep_bytes(b3, (double)s->drv_traced_then));
            if (untraced >= 0)
                fprintf(o, " (%s not traced: CUDA context, other processes, driver reserves)\n",
                        rep_bytes(b1, (double)untraced));
            else /* a sample or the trace is wrong: said so, not a negative size */
                fprintf(o, " (%s more than the driver's used memory: the sample or the trace is wrong)\n",
                        rep_bytes(b1, -(double)untraced));
        } else {
            fprintf(o, "    driver view: no MemoryUsage sample\n");
        }
    }
    /* oddities */
    int any = 0;
#define ODD(cnt, text)                                                               \
    do {                                                                             \
        if (cnt) {                                                                   \
            fprintf(o, "%s%" PRIu64 " %s", any ? ", " : "oddities: ", (uint64_t)(cnt), text); \
            any = 1;                                                                 \
        }                                                                            \
    } while (0)
    ODD(p->unknown_frees, "frees of unknown addresses (allocated before tracing began, or not traced)");
    ODD(p->double_frees, "double frees");
    ODD(p->overlap_allocs, "allocations over a live block (its free was not seen)");
    ODD(p->unknown_vmm_release, "releases of unknown VMM handles");
    ODD(p->double_vmm_release, "double VMM releases");
    ODD(p->unknown_unmaps, "unmaps of unknown mappings");
    ODD(p->zero_frees, "events with address 0");
    ODD(p->bad_device, "events with an invalid device");
    ODD(p->absurd_sizes, "sizes above 16 TiB (clamped)");
    ODD(p->partial_overlaps, "live blocks whose address ranges overlap in part (a free not seen, or a bad record)");
    if (p->time_back) {
        char bb[48];
        snprintf(bb, sizeof(bb), "%.6f s", (double)p->time_back_max / 1e9);
        fprintf(o, "%s%" PRIu64 " events earlier than one before them (time ran backwards, by up to %s)",
                any ? ", " : "oddities: ", p->time_back, bb);
        any = 1;
    }
    ODD(p->dropped[VT_DROP_WRITER_QUEUE], "events dropped by the writer (queue full)");
    ODD(p->dropped[VT_DROP_CUPTI_ACTIVITY], "CUPTI activity records dropped");
    ODD(p->dropped[VT_DROP_STACK], "stacks not captured");
    ODD(p->dropped[VT_DROP_OTHER], "other events dropped");
#undef ODD
    fprintf(o, "%s\n", any ? "" : "oddities: none");
    for (uint32_t i = 0; i < p->nnotes; i++)
        fprintf(o, "note (%s): %s\n", p->note_sev[i] == VT_SEV_ERROR ? "error" : p->note_sev[i] == VT_SEV_WARNING ? "warning" : "info",
                rep_t(p->notes[i]));
    if (p->notes_more)
        fprintf(o, "note: %u more notes\n", p->notes_more);
    for (uint32_t i = 0; i < p->nerrors; i++)
        fprintf(o, "read error: %s\n", rep_t(p->errors[i]));
}

static void unit_line(const vt_proc *p, const vt_unit *u, int64_t bytes, int64_t count, FILE *o)
{
    char b1[32];
    (void)p;
    fprintf(o, "%s in %" PRId64 " block%s, device %u %s (%s)", rep_bytes(b1, (double)bytes), count, count == 1 ? "" : "s",
            u->device, vt_memkind_name((vt_memkind)u->kind), vt_allocapi_name((vt_allocapi)u->api));
}

/* PyTorch's caching allocator on one device, as torch.cuda.memory_summary()
 * names it: allocated (its tensors), reserved (its segments), what it
 * keeps cached, and device memory outside it. */
static void text_allocated_reserved(const vt_proc *p, const vt_devstate *s, FILE *o)
{
    char b1[32], b2[32], b3[32];
    int tl;
    const int cupy = !strcmp(rep_allocator_mode(p, &tl), "cupy_pool"); /* blocks from CuPy's memory hook */
    fprintf(o, "    allocated       peak %s at %.3f s, at the view %s, at the end %s (%s)\n",
            rep_bytes(b1, (double)s->peak_kind[VT_MEM_TENSOR]), rep_rel_s(p, s->peak_kind_t[VT_MEM_TENSOR]),
            rep_bytes(b2, (double)s->at_kind[VT_MEM_TENSOR]), rep_bytes(b3, (double)s->live[VT_MEM_TENSOR]),
            cupy ? "blocks of CuPy's memory pool" : "tensors of PyTorch's caching allocator");
    fprintf(o, "    reserved        peak %s at %.3f s, at the view %s, at the end %s (its %s)\n",
            rep_bytes(b1, (double)s->reserved_peak), rep_rel_s(p, s->reserved_peak_t), rep_bytes(b2, (double)s->reserved_at),
            rep_bytes(b3, (double)s->reserved), cupy ? "chunks" : "segments");
    int64_t cached = s->reserved_at - s->at_kind[VT_MEM_TENSOR];
    int64_t outside = s->at_kind[VT_MEM_DEVICE] - s->reserved_at;
    fprintf(o, "    at the view: %s cached in the pool (reserved - allocated: freed tensors kept, not a leak)",
            rep_bytes(b1, (double)(cached > 0 ? cached : 0)));
    if (outside > 0)
        fprintf(o, "; %s outside the allocator (cuBLAS and cuDNN workspaces, NCCL, CUDA graphs, other libraries)",
                rep_bytes(b2, (double)outside));
    fputc('\n', o);
}

/* "held by PATH (TYPE, N tensors, B; + G of autograd graph: B+G in all)" of a unit, into
 * buf; "" when the process has no holders file or nothing holds it. */
static const char *holder_text(const vt_proc *p, const vt_unit *u, char *buf, size_t len)
{
    char b1[32], b2[32];
    buf[0] = 0;
    if (!p->holders_file)
        return buf;
    /* the holder walk runs at exit: a view at a time or a mark before it
     * (--at) shows what held the blocks then, said as such */
    const char *when = p->view_mode == VT_AT_TIME || p->view_mode == VT_AT_MARKER ? " at exit" : "";
    if (!u->holder || u->holder > p->nholders) {
        if (u->kind == VT_MEM_TENSOR || (u->api != VT_API_MALLOC && u->kind == VT_MEM_DEVICE && u->api != VT_API_VMM))
            snprintf(buf, len, "held%s by no Python object reachable from module globals (a C++ cache, the allocator, "
                               "NCCL or cuBLAS, or unreachable)", when);
        return buf;
    }
    const vt_holder *h = &p->holders[u->holder - 1];
    size_t n = (size_t)snprintf(buf, len, "held%s by %s (%s, %" PRIu64 " tensor%s, %s", when, rep_t(h->path), rep_t(h->type),
                                h->tensors, h->tensors == 1 ? "" : "s", rep_bytes(b1, (double)h->bytes));
    if (h->graph_bytes && n < len) {
        char b3[32];
        n += (size_t)snprintf(buf + n, len - n, "; + %s of autograd graph: %s in all", rep_bytes(b2, (double)h->graph_bytes),
                              rep_bytes(b3, (double)h->bytes + (double)h->graph_bytes));
    }
    /* tensors much smaller than the allocator's blocks (a scalar in a
     * 512 B block, the caching allocator's least): say so, or "40 tensors, 160 B" reads against the
     * site's "+20.00 KiB" as a contradiction */
    if (u->kind == VT_MEM_TENSOR && h->tensors && !h->graph_bytes && u->allocs && n < len) {
        /* PyTorch's caching allocator rounds a request up to 512 B */
        uint64_t tsz = h->bytes / h->tensors, bsz = u->alloc_bytes / u->allocs;
        if (tsz && tsz < 512 && bsz == 512) {
            char b3[32], b4[32];
            n += (size_t)snprintf(buf + n, len - n, ": %s each, in %s allocator blocks",
                                  rep_bytes(b3, (double)tsz), rep_bytes(b4, (double)bsz));
        }
    }
    if (n < len)
        snprintf(buf + n, len - n, ")");
    return buf;
}

static void text_holder(const vt_proc *p, const vt_unit *u, FILE *o, const char *indent)
{
    char hb[600];
    if (*holder_text(p, u, hb, sizeof(hb)))
        fprintf(o, "%s%s\n", indent, hb);
}

static void text_leaks(vt_analysis *a, vt_proc *p, FILE *o)
{
    char b1[32], view[256];
    int tl;
    rep_view_text(a, p, view, sizeof(view));
    fprintf(o, "\n-- leaks: %s --\n", view);
    const char *mode = rep_allocator_mode(p, &tl);
    if (tl && (!strcmp(mode, "pytorch_caching") || !strcmp(mode, "pytorch_expandable")))
        fprintf(o, "(PyTorch's caching allocator: tensors, with its segments counted as reserved in the device summary)\n");
    else if (!strcmp(mode, "pytorch_caching") || !strcmp(mode, "pytorch_expandable"))
        fprintf(o, "(blocks from libc10_cuda are PyTorch caching-allocator segments: reserved memory, not tensors;"
                   " see the allocator view)\n");
    char b2[32];
    fprintf(o, "%s %s, in %" PRIu64 " block%s", rep_bytes(b1, (double)p->leak_bytes), p->leak_td_bytes ? "leaked" : "never freed",
            p->leak_blocks, p->leak_blocks == 1 ? "" : "s");
    if (p->leak_td_bytes)
        fprintf(o, " (%s of it freed only at teardown, from sites that grew or that a test left live",
                rep_bytes(b2, (double)p->leak_td_bytes));
    if (p->held_bytes)
        fprintf(o, "%s%s of it held since the start: allocated before the first step, not growing",
                p->leak_td_bytes ? "; " : " (", rep_bytes(b2, (double)p->held_bytes));
    if (p->leak_td_bytes || p->held_bytes)
        fputc(')', o);
    fprintf(o, "; %zu call site%s live at the view\n", p->nleak, p->nleak == 1 ? "" : "s");
    if (p->teardown_bytes)
        fprintf(o, "(not counted: freed at teardown, after the view: %s in %" PRIu64 " block%s)\n",
                rep_bytes(b1, (double)p->teardown_bytes), p->teardown_blocks, p->teardown_blocks == 1 ? "" : "s");
    if (p->static_bytes)
        fprintf(o, "(not counted: module globals, %s in %" PRIu64 " block%s, live as long as their module)\n",
                rep_bytes(b1, (double)p->static_bytes), p->static_blocks, p->static_blocks == 1 ? "" : "s");
    for (size_t i = 0; i < p->nleak && i < a->cfg.top; i++) {
        const vt_unit *u = &p->units[p->leak_order[i]];
        const vt_unit *prev = i ? &p->units[p->leak_order[i - 1]] : NULL;
        if (VT_LEAK_PART(u) == 2 && (!prev || VT_LEAK_PART(prev) != 2))
            fprintf(o, "held since the start (allocated before the first step, not growing: weights, optimizer "
                       "state, workspaces):\n");
        if (VT_LEAK_PART(u) == 3 && (!prev || VT_LEAK_PART(prev) != 3))
            fprintf(o, "freed at teardown, after the view (not counted):\n");
        fprintf(o, "#%zu ", i + 1);
        unit_line(p, u, u->at_bytes, u->at_count, o);
        fprintf(o, "; %" PRIu64 " allocated in all; ", u->allocs);
        if (u->late_bytes > 0 && u->late_bytes >= u->at_bytes)
            fprintf(o, "allocated after the view, never freed\n");
        else if (u->never_bytes >= u->at_bytes && u->late_bytes > 0)
            fprintf(o, "never freed (%s of it allocated after the view)\n", rep_bytes(b1, (double)u->late_bytes));
        else if (u->never_bytes >= u->at_bytes)
            fprintf(o, "never freed\n");
        else if (VT_LEAK_PART(u) == 0 && u->never_bytes == 0)
            fprintf(o, "freed only at teardown, counted: %s\n", u->growth_flag ? "it grew" : "a test left it live");
        else if (VT_LEAK_PART(u) == 0 && u->never_bytes < u->at_bytes)
            fprintf(o, "%s never freed, the rest only at teardown, counted: %s\n", rep_bytes(b1, (double)u->never_bytes),
                    u->growth_flag ? "it grew" : "a test left it live");
        else if (u->never_bytes == 0)
            fprintf(o, "all freed after the view (teardown)\n");
        else
            fprintf(o, "%s never freed\n", rep_bytes(b1, (double)u->never_bytes));
        text_holder(p, u, o, "    ");
        /* what was held since the start, and what teardown freed: the
         * headline only (--native: the stacks too) */
        g_headline_only = !a->cfg.native && VT_LEAK_PART(u) >= 2;
        rep_text_unit_stack(a, p, u, o, "    ");
        g_headline_only = 0;
    }
    if (p->nleak > a->cfg.top)
        fprintf(o, "... %zu more call site%s\n", p->nleak - a->cfg.top, p->nleak - a->cfg.top == 1 ? "" : "s");
}

/* Tests (the pytest plugin's ranges, vt_replay_tests.c): those that left
 * memory live first, by bytes, each with its call sites; then a count of
 * the rest and the test with the highest peak. */
static void text_tests(vt_analysis *a, vt_proc *p, FILE *o)
{
    if (!p->ntests)
        return;
    char b1[32], b2[32], b3[32];
    size_t *ord = malloc(p->ntests * sizeof(*ord)), nleak = 0, top = 0;
    uint64_t total = 0;
    if (!ord)
        return;
    for (size_t i = 0; i < p->ntests; i++) {
        ord[i] = i;
        nleak += p->tests[i].leaked > 0;
        total += p->tests[i].leaked;
        if (p->tests[i].peak > p->tests[top].peak)
            top = i;
    }
    for (size_t i = 1; i < p->ntests; i++) { /* by leaked bytes, stable: tests run in order */
        size_t v = ord[i], j = i;
        for (; j > 0 && p->tests[ord[j - 1]].leaked < p->tests[v].leaked; j--)
            ord[j] = ord[j - 1];
        ord[j] = v;
    }
    fprintf(o, "\n-- tests: GPU memory each test allocated and left live --\n");
    fprintf(o, "%zu test%s, %zu left memory live (%s in all); the highest peak: %s in %s\n", p->ntests,
            p->ntests == 1 ? "" : "s", nleak, rep_bytes(b1, (double)total), rep_bytes(b2, (double)p->tests[top].peak),
            p->tests[top].name);
    for (size_t k = 0; k < nleak && k < a->cfg.top; k++) {
        const vt_test *x = &p->tests[ord[k]];
        fprintf(o, "#%zu %s: left %s live in %" PRIu64 " block%s; peak %s, %s allocated in %" PRIu64
                   " block%s, %.3f s%s\n",
                k + 1, x->name, rep_bytes(b1, (double)x->leaked), x->leaked_blocks, x->leaked_blocks == 1 ? "" : "s",
                rep_bytes(b2, (double)x->peak), rep_bytes(b3, (double)x->allocated), x->allocs,
                x->allocs == 1 ? "" : "s", (double)(x->t1 - x->t0) / 1e9,
                x->ended ? "" : " (the process stopped inside it)");
        for (uint32_t s = 0; s < x->nsites && s < VT_TEST_SITES; s++) {
            const vt_unit *u = &p->units[x->site[s].unit];
            fprintf(o, "    ");
            unit_line(p, u, (int64_t)x->site[s].bytes, (int64_t)x->site[s].blocks, o);
            fputc('\n', o);
            text_holder(p, u, o, "        ");
            g_headline_only = !a->cfg.native;
            rep_text_unit_stack(a, p, u, o, "        ");
            g_headline_only = 0;
        }
        if (x->nsites > VT_TEST_SITES)
            fprintf(o, "    ... %u more call site%s\n", x->nsites - VT_TEST_SITES,
                    x->nsites - VT_TEST_SITES == 1 ? "" : "s");
    }
    if (nleak > a->cfg.top)
        fprintf(o, "... %zu more test%s left memory live\n", nleak - a->cfg.top, nleak - a->cfg.top == 1 ? "" : "s");
    free(ord);
}

static void text_steps(const vt_analysis *a, const vt_proc *p, FILE *o)
{
    if (p->steps && !strncmp(p->step_source, "nvtx:", 5)) {
        fprintf(o, "steps: %" PRIu64 " (NVTX range %s, %s), %.3f s per step", p->steps, rep_t(p->step_source + 5),
                a->cfg.steps_name ? "--steps" : "it repeats with the loop's work", p->step_period_ns / 1e9);
        if (p->kernel_steps)
            fprintf(o, "; the kernel sequence repeats %" PRIu64 " times", p->kernel_steps);
        fputc('\n', o);
    } else if (p->steps) {
        fprintf(o, "steps: %" PRIu64 " (detected from the repeating kernel sequence, period %s kernels), %.3f s per step\n",
                p->steps, p->step_source + 8, p->step_period_ns / 1e9);
    } else if (p->steps_missing) {
        fprintf(o, "steps: unknown (no NVTX range \"%s\" repeats here); growth over the whole run\n",
                rep_t(a->cfg.steps_name));
    } else {
        fprintf(o, "steps: unknown (no NVTX range repeats with the allocations, no kernel sequence repeats); "
                   "growth over the whole run\n");
    }
}

static void text_growth(vt_analysis *a, vt_proc *p, FILE *o)
{
    char b1[32], b2[32], b3[32];
    fprintf(o, "\n-- growth: call sites whose live bytes keep rising over the steps --\n");
    text_steps(a, p, o);
    if (!p->ngrowth) {
        fprintf(o, "no call site keeps growing\n");
        return;
    }
    fprintf(o, "%s grown by %zu call site%s\n", rep_bytes(b1, (double)p->grown_total), p->ngrowth,
            p->ngrowth == 1 ? "" : "s");
    int tl;
    const char *mode = rep_allocator_mode(p, &tl);
    if (!tl && (!strcmp(mode, "pytorch_caching") || !strcmp(mode, "pytorch_expandable")))
        fprintf(o, "(caching allocator: what grows are segments; each names the allocation that made the pool grow, "
                   "not what holds the memory: vramtrace record --tensors names that)\n");
    for (size_t i = 0; i < p->ngrowth && i < a->cfg.top; i++) {
        const vt_unit *u = &p->units[p->growth_order[i]];
        fprintf(o, "#%zu +%s, %s/s", i + 1, rep_bytes(b1, (double)u->grown), rep_bytes(b2, u->growth_rate));
        if (p->steps)
            fprintf(o, ", %s/step", rep_bytes(b3, u->growth_per_step >= 0 ? u->growth_per_step
                                                                     : u->growth_rate * p->step_period_ns / 1e9));
        fprintf(o, ", confidence %.2f, %" PRId64 " live block%s at the view, device %u %s (%s)\n", u->growth_conf,
                u->at_count, u->at_count == 1 ? "" : "s", u->device, vt_memkind_name((vt_memkind)u->kind), vt_allocapi_name((vt_allocapi)u->api));
        text_holder(p, u, o, "    ");
        text_unit_stack_once(a, p, u, o, "    ");
    }
}

/* A peak's first --top call sites, each with its share of `total` */
static void text_peak_rows(vt_analysis *a, vt_proc *p, const vt_row *r, size_t n, int64_t total, FILE *o)
{
    for (size_t i = 0; i < n && i < a->cfg.top; i++) {
        const vt_unit *u = &p->units[r[i].unit];
        fprintf(o, "#%zu ", i + 1);
        unit_line(p, u, r[i].bytes, r[i].count, o);
        fprintf(o, " (%.1f%%)\n", 100.0 * (double)r[i].bytes / (double)total);
        text_unit_stack_once(a, p, u, o, "    ");
    }
    if (n > a->cfg.top)
        fprintf(o, "... %zu more call site%s\n", n - a->cfg.top, n - a->cfg.top == 1 ? "" : "s");
}

static void text_peak(vt_analysis *a, vt_proc *p, FILE *o)
{
    char b1[32];
    fprintf(o, "\n-- peak: the live set at each device's peak, per call site --\n");
    int any = 0;
    for (uint32_t d = 0; d < p->ndev_seen && d < VT_MAX_DEVICES; d++) {
        const vt_devstate *s = &p->dev[d];
        if (!s->peak)
            continue;
        any = 1;
        vt_row *r;
        size_t n = rep_peak_rows(p, d, 0, &r);
        fprintf(o, "device %u: %s at %.3f s in %zu call site%s\n", d, rep_bytes(b1, (double)s->peak), rep_rel_s(p, s->peak_t), n,
                n == 1 ? "" : "s");
        text_peak_rows(a, p, r, n, s->peak, o);
        int64_t cached = rep_peak_cached(p, d);
        if (cached)
            fprintf(o, "and %s cached in PyTorch's pool (reserved, no tensor in it) (%.1f%%)\n", rep_bytes(b1, (double)cached),
                    100.0 * (double)cached / (double)s->peak);
        free(r);
        /* with tensor events: the tensors at PyTorch's allocated peak (its
         * memory_allocated at the highest), which the device's peak, made
         * of the pool's segments, can hide */
        int64_t tp = s->peak_kind[VT_MEM_TENSOR];
        if (!p->tensor_units || tp <= 0)
            continue;
        n = rep_peak_rows(p, d, 1, &r);
        fprintf(o, "device %u, PyTorch allocated: %s at %.3f s in %zu call site%s (tensors, without the pool's cache)\n", d,
                rep_bytes(b1, (double)tp), rep_rel_s(p, s->peak_kind_t[VT_MEM_TENSOR]), n, n == 1 ? "" : "s");
        text_peak_rows(a, p, r, n, tp, o);
        free(r);
    }
    if (!any)
        fprintf(o, "no device memory was live\n");
}

static void text_walks(const vt_proc *p, int oom, FILE *o);

/* Probes: failed calls that are a library trying something and falling
 * back (VT_PROBES), one line, counted as no failure. */
static void text_probes(const vt_proc *p, FILE *o)
{
    if (!p->failed_probes)
        return;
    fprintf(o, "probes, not failures (a library trying something and falling back):");
    for (int k = 1, first = 1; k < VT_PROBE__COUNT; k++)
        if (p->probes[k]) {
            fprintf(o, "%s %" PRIu64 " %s (%s)", first ? "" : ";", p->probes[k], rep_probe_name(k), rep_probe_what(k));
            first = 0;
        }
    fputc('\n', o);
}

static void text_oom(vt_analysis *a, vt_proc *p, FILE *o)
{
    char b1[32], b2[32], b3[32];
    fprintf(o, "\n-- oom: failed allocations --\n");
    text_probes(p, o);
    if (!p->failed) {
        fprintf(o, "no allocation failed\n");
        return;
    }
    fprintf(o, "%" PRIu64 " failed allocation%s (%" PRIu64 " out of memory)", p->failed, p->failed == 1 ? "" : "s",
            p->failed_oom);
    if (p->failed_retries)
        fprintf(o, "; %" PRIu64 " more failed call%s the allocator's retries of %s", p->failed_retries,
                p->failed_retries == 1 ? " was" : "s were", p->failed == 1 ? "it" : "them");
    fprintf(o, "%s\n", p->failed > p->noom ? "; the first ones are described" : "");
    for (uint32_t i = 0; i < p->noom; i++) {
        const vt_oom *e = &p->oom[i];
        fprintf(o, "#%u at %.3f s: %s requested on device %u, %s (%s) -> %s (%d)", i + 1, rep_rel_s(p, e->t_first),
                rep_bytes(b1, (double)e->size), e->device, vt_memkind_name((vt_memkind)e->kind),
                vt_allocapi_name((vt_allocapi)e->api), rep_t(e->error_name ? e->error_name : "error"), e->error);
        if (e->attempts > 1)
            fprintf(o, "; %u failed calls with the allocator's retries, the last at %.3f s (the state below)", e->attempts,
                    rep_rel_s(p, e->t));
        fputc('\n', o);
        text_stack(a, p, e->stack, o, "    ");
        fprintf(o, "    device state: traced live %s", rep_bytes(b1, (double)e->dev_live));
        const vt_devstate *s = &p->dev[e->device];
        if (s->total)
            fprintf(o, " of %s", rep_bytes(b2, (double)s->total));
        fprintf(o, "\n");
        if (e->drv_t)
            fprintf(o, "    driver: %s free of %s (sample at %.3f s)\n", rep_bytes(b1, (double)e->drv_free),
                    rep_bytes(b2, (double)e->drv_total), rep_rel_s(p, e->drv_t));
        if (e->have_pool) {
            uint64_t unused = e->pool_reserved > e->pool_used ? e->pool_reserved - e->pool_used : 0;
            fprintf(o, "    pools: reserved %s, used %s, reserved but unused %s", rep_bytes(b1, (double)e->pool_reserved),
                    rep_bytes(b2, (double)e->pool_used), rep_bytes(b3, (double)unused));
            if (unused >= e->size && e->size && e->error == 2)
                fprintf(o, " >= the request: fragmentation (no free range large enough)");
            fprintf(o, "\n");
        }
        if (e->have_tensors) {
            int64_t cached = e->reserved > e->allocated ? e->reserved - e->allocated : 0;
            fprintf(o, "    PyTorch caching allocator: allocated %s, reserved %s, cached %s", rep_bytes(b1, (double)e->allocated),
                    rep_bytes(b2, (double)e->reserved), rep_bytes(b3, (double)cached));
            if (e->largest_free >= 0) {
                fprintf(o, ", largest free block %s", rep_bytes(b1, (double)e->largest_free));
                if ((uint64_t)cached >= e->size && (uint64_t)e->largest_free < e->size)
                    fprintf(o, ": fragmentation (enough cached in all, no block large enough)");
            }
            fprintf(o, "\n");
        } else if (e->c10_reserved)
            fprintf(o, "    PyTorch caching allocator segments live: %s (reserved by the allocator, used or cached)\n",
                    rep_bytes(b1, (double)e->c10_reserved));
        if (e->ntop) {
            fprintf(o, "    top holders:\n");
            for (uint32_t k = 0; k < e->ntop; k++) {
                const vt_unit *u = &p->units[e->top_unit[k]];
                fprintf(o, "    %u) ", k + 1);
                unit_line(p, u, e->top_bytes[k], e->top_count[k], o);
                fprintf(o, "\n");
                rep_text_unit_stack(a, p, u, o, "        ");
            }
        }
    }
    text_walks(p, 1, o);
}

/* the walks before the end (holders.PID.oom.txt, .sig-N.txt): who held
 * CUDA tensors at that moment, as the walk found them */
static void text_walks(const vt_proc *p, int oom, FILE *o)
{
    char b1[32], b2[32], b3[32];
    for (uint32_t w = 0; w < p->nwalks; w++) {
        const vt_walk *k = &p->walks[w];
        if ((k->signal == 0) != oom)
            continue;
        if (oom)
            fprintf(o, "who held CUDA tensors at the first failed allocation (%s requested on device %u, %s allocated, "
                       "%s free; PyTorch's OOM observer walked %" PRIu64 " objects in %.2f s%s):\n",
                    rep_bytes(b1, (double)k->request), k->device, rep_bytes(b2, (double)k->dev_allocated),
                    rep_bytes(b3, (double)k->dev_free), k->objects, k->seconds, k->limited ? ", stopped by its limit" : "");
        else
            fprintf(o, "\n-- who held CUDA tensors on signal %d (walk %u at the program's request, %" PRIu64
                       " objects in %.2f s%s) --\n",
                    k->signal, w + (p->nwalks && p->walks[0].signal ? 1 : 0), k->objects, k->seconds,
                    k->limited ? ", stopped by its limit" : "");
        if (!k->nh)
            fprintf(o, "    no Python object reachable from module globals or the running frames held one\n");
        for (uint32_t i = 0; i < k->nh; i++) {
            fprintf(o, "    %u) %s (%s, %" PRIu64 " tensor%s, %s", i + 1, rep_t(k->h[i].path), rep_t(k->h[i].type), k->h[i].tensors,
                    k->h[i].tensors == 1 ? "" : "s", rep_bytes(b1, (double)k->h[i].bytes));
            if (k->h[i].graph_bytes) {
                char ball[32];
                fprintf(o, "; + %s of autograd graph: %s in all", rep_bytes(b2, (double)k->h[i].graph_bytes),
                        rep_bytes(ball, (double)k->h[i].bytes + (double)k->h[i].graph_bytes));
            }
            fprintf(o, ")\n");
        }
    }
}

static void text_allocator(vt_analysis *a, vt_proc *p, FILE *o)
{
    char b1[32], b2[32], b3[32], b4[32];
    (void)a;
    int tl;
    const char *mode = rep_allocator_mode(p, &tl);
    fprintf(o, "\n-- allocator view --\n");
    if (tl && (!strcmp(mode, "pytorch_caching") || !strcmp(mode, "pytorch_expandable"))) {
        fprintf(o, "PyTorch's caching allocator%s: %" PRIu64 " segment allocations, peak %s reserved;\n"
                   "tensor events from its trace tracker: call sites are tensor-level, segments are reserved memory.\n",
                !strcmp(mode, "pytorch_expandable") ? " with expandable segments (cuMemCreate/cuMemMap)" : " (cudaMalloc segments)",
                p->c10_allocs, rep_bytes(b1, (double)p->c10_bytes_peak));
        if (p->reserved_grown)
            fprintf(o, "Reserved grew by %s, following the tensors above (not a call site of its own).\n",
                    rep_bytes(b1, (double)p->reserved_grown));
    } else if (!strcmp(mode, "pytorch_caching") || !strcmp(mode, "pytorch_expandable")) {
        fprintf(o, "PyTorch's caching allocator%s: %" PRIu64 " segment allocations from %u call sites, peak %s of segments.\n",
                !strcmp(mode, "pytorch_expandable") ? " with expandable segments (cuMemCreate/cuMemMap)" : " (cudaMalloc segments)",
                p->c10_allocs, p->c10_units, rep_bytes(b1, (double)p->c10_bytes_peak));
        fprintf(o, "These blocks are the allocator's segments, not tensors: freed tensors stay cached (reserved),\n"
                   "so a segment's call site is the tensor that made the pool grow. For tensor-level call sites,\n"
                   "record with `vramtrace record` (its PyTorch shim records the tensors; see the notes if it\n"
                   "did not), or with `--tensors` (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync).\n");
    } else if (!strcmp(mode, "cupy_pool") && tl) {
        fprintf(o, "CuPy's memory pool: its cudaMalloc chunks are reserved memory; blocks from its memory hook\n"
                   "(cupy.cuda.MemoryHook, installed by `vramtrace record`) are allocated: call sites are array-level.\n");
    } else if (!strcmp(mode, "cupy_pool")) {
        fprintf(o, "CuPy's memory pool: these blocks are its cudaMalloc chunks, not arrays: a chunk's call site is the\n"
                   "array that made the pool grow. For array-level call sites, record with `vramtrace record` (its\n"
                   "CuPy memory hook records the pool's blocks), or call cupy.cuda.set_allocator(None).\n");
    } else if (!strcmp(mode, "pytorch_async")) {
        fprintf(o, "PyTorch with backend:cudaMallocAsync: one allocation per tensor, call sites are tensor-level.\n");
    } else if (!strcmp(mode, "stream_ordered")) {
        fprintf(o, "stream-ordered allocations (cudaMallocAsync / memory pools): blocks are individual allocations.\n");
    } else {
        fprintf(o, "direct allocations (no caching allocator detected): blocks are the program's own allocations.\n");
    }
    if (p->nev[VT_EV_VMM_CREATE] || p->nev[VT_EV_VMM_RESERVE])
        fprintf(o, "VMM: address space reserved peak %s, mapped peak %s (physical memory counted once, at cuMemCreate)\n",
                rep_bytes(b1, (double)p->va_reserved_peak), rep_bytes(b2, (double)p->mapped_peak));
    for (size_t i = 0; i < p->npools; i++) {
        const vt_pool *q = &p->pools[i];
        fprintf(o, "pool 0x%" PRIx64 " on device %u: reserved peak %s, used peak %s; last: reserved %s, used %s",
                q->pool, q->device, rep_bytes(b1, (double)q->reserved_high), rep_bytes(b2, (double)q->used_high),
                rep_bytes(b3, (double)q->reserved_last), rep_bytes(b4, (double)q->used_last));
        if (q->creates || q->destroys || q->trims)
            fprintf(o, " (%" PRIu64 " create, %" PRIu64 " destroy, %" PRIu64 " trim)", q->creates, q->destroys, q->trims);
        fprintf(o, "\n");
        if (q->ns) {
            fprintf(o, "    time        reserved        used      unused\n");
            size_t step = q->ns > 16 ? (q->ns + 15) / 16 : 1;
            for (size_t k = 0; k < q->ns; k += step) {
                const vt_pool_sample *s = &q->s[k];
                fprintf(o, "    %8.3f s %11s %11s %11s\n", rep_rel_s(p, s->t), rep_bytes(b1, (double)s->reserved),
                        rep_bytes(b2, (double)s->used), rep_bytes(b3, s->reserved > s->used ? (double)(s->reserved - s->used) : 0));
            }
        }
    }
}

static void proc_title(const vt_proc *p, size_t i, FILE *o)
{
    fprintf(o, "== process %zu: %s (pid %u", i + 1, rep_t(p->program ? p->program : "?"), p->pid);
    if (p->host)
        fprintf(o, " on %s", rep_t(p->host));
    if (p->env_rank)
        fprintf(o, ", rank %s", rep_t(p->env_rank));
    fprintf(o, ") ==\n");
}

static int report_text(vt_analysis *a, FILE *o)
{
    fprintf(o, "vramtrace report: %zu process%s\n", a->nprocs, a->nprocs == 1 ? "" : "es");
    for (size_t i = 0; i < a->nprocs; i++) {
        vt_proc *p = a->procs[i];
        fprintf(o, "\n");
        proc_title(p, i, o);
        rep_text_oom_headline(a, p, o, "", "  ");
        rep_text_verdict(a, p, o, "verdict: ", "  ");
        text_summary(a, p, o);
        text_leaks(a, p, o);
        text_growth(a, p, o);
        text_peak(a, p, o);
        text_oom(a, p, o);
        text_walks(p, 0, o);
        text_tests(a, p, o);
        text_allocator(a, p, o);
    }
    if (a->nprocs > 1)
        rep_text_merged(a, o);
    return ferror(o) ? VT_ERR_IO : 0;
}

/* The whole report goes through the terminal escaper once more (newlines
 * kept): a name that one of the sections above prints without rep_t()
 * still puts no control byte on the terminal. */
int vt_report_text(vt_analysis *a, FILE *o)
{
    if (!a->finished)
        return VT_ERR_INVALID;
    return rep_text_escaped(a, NULL, report_text, NULL, o);
}
