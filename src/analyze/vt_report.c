/* vt_report.c - `vramtrace report` output: text for people, JSON for tools
 * (schema "vramtrace.report/1", docs/REPORT.md).  Both print the same
 * sections from the finished analysis, in a deterministic order (bytes
 * descending, then call-site key / unit order).  Touches only the FILE it
 * is given. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vt_analyze_int.h"
#include "vt_error.h"

/* ------------------------------------------------------------ helpers */

void vt_fmt_bytes(char *buf, size_t len, double b)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    double v = b < 0 ? -b : b;
    while (v >= 1024 && i < 4) {
        v /= 1024;
        i++;
    }
    if (i == 0)
        snprintf(buf, len, "%s%.0f B", b < 0 ? "-" : "", v);
    else
        snprintf(buf, len, "%s%.2f %s", b < 0 ? "-" : "", v, u[i]);
}

/* length of a valid UTF-8 sequence at p (1..4), 0 if invalid */
static int utf8_len(const unsigned char *p)
{
    int n;
    uint32_t c;
    if (p[0] < 0x80)
        return 1;
    if ((p[0] & 0xe0) == 0xc0) {
        n = 2;
        c = p[0] & 0x1f;
    } else if ((p[0] & 0xf0) == 0xe0) {
        n = 3;
        c = p[0] & 0x0f;
    } else if ((p[0] & 0xf8) == 0xf0) {
        n = 4;
        c = p[0] & 0x07;
    } else
        return 0;
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        c = (c << 6) | (p[i] & 0x3f);
    }
    if ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
        (c >= 0xd800 && c <= 0xdfff))
        return 0;
    return n;
}

/* a JSON string; invalid UTF-8 bytes become U+FFFD so the output always parses */
void vt_json_str(FILE *f, const char *s)
{
    if (!s) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        switch (*p) {
        case '"': fputs("\\\"", f); p++; continue;
        case '\\': fputs("\\\\", f); p++; continue;
        case '\n': fputs("\\n", f); p++; continue;
        case '\r': fputs("\\r", f); p++; continue;
        case '\t': fputs("\\t", f); p++; continue;
        default: break;
        }
        if (*p < 0x20) {
            fprintf(f, "\\u%04x", *p);
            p++;
            continue;
        }
        int n = utf8_len(p);
        if (!n) {
            fputs("\\ufffd", f);
            p++;
            continue;
        }
        fwrite(p, 1, (size_t)n, f);
        p += n;
    }
    fputc('"', f);
}

static const char *B(char *buf, double b)
{
    vt_fmt_bytes(buf, 32, b);
    return buf;
}

static double rel_s(const vt_proc *p, uint64_t t)
{
    return t >= p->t0 ? (double)(t - p->t0) / 1e9 : -(double)(p->t0 - t) / 1e9;
}

static const char *view_mode_name(int m)
{
    switch (m) {
    case VT_AT_AUTO: return "last_kernel";
    case VT_AT_END: return "end";
    case VT_AT_TIME: return "time";
    case VT_AT_MARKER: return "marker";
    default: return "?";
    }
}

static void view_text(const vt_analysis *a, const vt_proc *p, char *buf, size_t len)
{
    switch (p->view_mode) {
    case VT_AT_AUTO:
        snprintf(buf, len, "live at the end of the last kernel (t=%.3f s), when the real work ended", rel_s(p, p->view_t));
        break;
    case VT_AT_TIME:
        snprintf(buf, len, "live at --at %.3f s", rel_s(p, p->view_t));
        break;
    case VT_AT_MARKER:
        if (p->cand_set)
            snprintf(buf, len, "live at the last NVTX marker \"%s\" (t=%.3f s)", a->at_marker, rel_s(p, p->view_t));
        else
            snprintf(buf, len, "live at the end of the trace (t=%.3f s): NVTX marker \"%s\" not found",
                     rel_s(p, p->view_t), a->at_marker);
        break;
    default:
        if (p->hdr_kernels && a->cfg.at_mode == VT_AT_AUTO)
            snprintf(buf, len, "live at the end of the trace (t=%.3f s): no kernel was traced", rel_s(p, p->view_t));
        else if (a->cfg.at_mode == VT_AT_AUTO)
            snprintf(buf, len, "live at the end of the trace (t=%.3f s): kernels were not recorded", rel_s(p, p->view_t));
        else
            snprintf(buf, len, "live at the end of the trace (t=%.3f s), teardown included", rel_s(p, p->view_t));
        break;
    }
}

static int resident(unsigned k)
{
    return k == VT_MEM_DEVICE || k == VT_MEM_DEVICE_STATIC || k == VT_MEM_ARRAY;
}

/* ------------------------------------------------------------ text */

static void text_stack(vt_analysis *a, const vt_proc *p, uint32_t stack, FILE *o, const char *indent)
{
    vt_xframe fr[VT_MAX_STACK];
    int user = -1;
    char line[1200];
    uint32_t n = vt_site_frames(a, p, stack, fr, VT_MAX_STACK, &user);
    if (!n) {
        fprintf(o, "%sat (no call stack recorded)\n", indent);
        return;
    }
    vt_xframe_format(&fr[user >= 0 ? user : 0], line, sizeof(line));
    fprintf(o, "%sat %s\n", indent, line);
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
    fprintf(o, "trace: %s  (format %u, vramtrace %s, clock %s)\n", p->name, p->format_version,
            p->tool_version ? p->tool_version : "?", p->clock ? p->clock : "?");
    if (p->argc) {
        fprintf(o, "command:");
        for (uint32_t i = 0; i < p->argc; i++)
            fprintf(o, " %s", p->argv[i]);
        fprintf(o, "\n");
    }
    if (p->env_alloc_conf)
        fprintf(o, "PYTORCH_CUDA_ALLOC_CONF=%s\n", p->env_alloc_conf);
    if (!p->complete)
        fprintf(o, "status: INCOMPLETE (no end record: the process died or the file was cut)\n");
    else
        fprintf(o, "status: complete (%s%s)\n", p->end_reason == VT_END_NORMAL ? "normal exit"
                                                 : p->end_reason == VT_END_SIGNAL ? "fatal signal"
                                                                                  : "tracing error",
                p->end_reason == VT_END_SIGNAL ? ", flushed on the signal" : "");
    fprintf(o, "recorded: kernels %s, native stacks %s, python stacks %s\n", p->hdr_kernels ? "yes" : "no",
            p->hdr_native ? "yes" : "no", p->hdr_python ? "yes" : "no");
    fprintf(o, "duration: %.3f s\n", rel_s(p, p->t_last));
    fprintf(o, "events: %" PRIu64 " alloc, %" PRIu64 " free, %" PRIu64 " failed, %" PRIu64 " kernels",
            p->nev[VT_EV_ALLOC], p->nev[VT_EV_FREE], p->nev[VT_EV_ALLOC_FAILED], p->nev[VT_EV_KERNEL]);
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
            if (resident((unsigned)k) && s->peak_kind[k])
                host_only = 0;
        fprintf(o, "device %u", d);
        if (s->present)
            fprintf(o, " (%s, %s)", s->name ? s->name : "?", B(b1, (double)s->total));
        if (host_only && !s->peak)
            fprintf(o, ": no device memory traced\n");
        else
            fprintf(o, ": peak live %s at %.3f s\n", B(b1, (double)s->peak), rel_s(p, s->peak_t));
        for (int k = 0; k < VT_MEM__COUNT; k++) {
            if (!s->peak_kind[k])
                continue;
            fprintf(o, "    %-15s peak %s at %.3f s, at the view %s, at the end %s\n", vt_memkind_name((vt_memkind)k),
                    B(b1, (double)s->peak_kind[k]), rel_s(p, s->peak_kind_t[k]), B(b2, (double)s->at_kind[k]),
                    B(b3, (double)s->live[k]));
        }
        if (s->drv_samples) {
            int64_t untraced = (int64_t)s->drv_max_used - s->drv_traced_then;
            fprintf(o, "    driver view: max used %s of %s at %.3f s; traced live then %s",
                    B(b1, (double)s->drv_max_used), B(b2, (double)s->drv_total), rel_s(p, s->drv_max_t),
                    B(b3, (double)s->drv_traced_then));
            fprintf(o, " (%s not traced: CUDA context, other processes, driver reserves)\n",
                    B(b1, (double)untraced));
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
    ODD(p->dropped[VT_DROP_WRITER_QUEUE], "events dropped by the writer (queue full)");
    ODD(p->dropped[VT_DROP_CUPTI_ACTIVITY], "CUPTI activity records dropped");
    ODD(p->dropped[VT_DROP_STACK], "stacks not captured");
    ODD(p->dropped[VT_DROP_OTHER], "other events dropped");
#undef ODD
    fprintf(o, "%s\n", any ? "" : "oddities: none");
    for (uint32_t i = 0; i < p->nnotes; i++)
        fprintf(o, "note (%s): %s\n", p->note_sev[i] == VT_SEV_ERROR ? "error" : p->note_sev[i] == VT_SEV_WARNING ? "warning" : "info",
                p->notes[i]);
    if (p->notes_more)
        fprintf(o, "note: %u more notes\n", p->notes_more);
    for (uint32_t i = 0; i < p->nerrors; i++)
        fprintf(o, "read error: %s\n", p->errors[i]);
}

static void unit_line(const vt_proc *p, const vt_unit *u, int64_t bytes, int64_t count, FILE *o)
{
    char b1[32];
    (void)p;
    fprintf(o, "%s in %" PRId64 " block%s, device %u %s (%s)", B(b1, (double)bytes), count, count == 1 ? "" : "s",
            u->device, vt_memkind_name((vt_memkind)u->kind), vt_allocapi_name((vt_allocapi)u->api));
}

static const char *allocator_mode(const vt_proc *p, int *tensor_level);

static void text_leaks(vt_analysis *a, vt_proc *p, FILE *o)
{
    char b1[32], view[256];
    int tl;
    view_text(a, p, view, sizeof(view));
    fprintf(o, "\n-- leaks: %s --\n", view);
    const char *mode = allocator_mode(p, &tl);
    if (!strcmp(mode, "pytorch_caching") || !strcmp(mode, "pytorch_expandable"))
        fprintf(o, "(blocks from libc10_cuda are PyTorch caching-allocator segments: reserved memory, not tensors;"
                   " see the allocator view)\n");
    fprintf(o, "%s in %" PRIu64 " blocks from %zu call sites\n", B(b1, (double)p->leak_bytes), p->leak_blocks, p->nleak);
    if (p->static_bytes)
        fprintf(o, "(not counted: module globals, %s in %" PRIu64 " block%s, live as long as their module)\n",
                B(b1, (double)p->static_bytes), p->static_blocks, p->static_blocks == 1 ? "" : "s");
    for (size_t i = 0; i < p->nleak && i < a->cfg.top; i++) {
        const vt_unit *u = &p->units[p->leak_order[i]];
        fprintf(o, "#%zu ", i + 1);
        unit_line(p, u, u->at_bytes, u->at_count, o);
        fprintf(o, "; %" PRIu64 " allocated in all; ", u->allocs);
        if (u->never_bytes >= u->at_bytes)
            fprintf(o, "never freed\n");
        else if (u->never_bytes == 0)
            fprintf(o, "all freed after the view (teardown)\n");
        else
            fprintf(o, "%s never freed\n", B(b1, (double)u->never_bytes));
        text_stack(a, p, u->stack, o, "    ");
    }
    if (p->nleak > a->cfg.top)
        fprintf(o, "... %zu more call sites\n", p->nleak - a->cfg.top);
}

static void text_steps(const vt_proc *p, FILE *o)
{
    if (p->steps)
        fprintf(o, "steps: %" PRIu64 " (%s%s), %.3f s per step\n", p->steps,
                !strncmp(p->step_source, "nvtx:", 5) ? "NVTX range " : "detected from the repeating kernel sequence, period ",
                !strncmp(p->step_source, "nvtx:", 5) ? p->step_source + 5 : p->step_source + 8,
                p->step_period_ns / 1e9);
    else
        fprintf(o, "steps: unknown (no repeating NVTX range or kernel sequence)\n");
}

static void text_growth(vt_analysis *a, vt_proc *p, FILE *o)
{
    char b1[32], b2[32], b3[32];
    fprintf(o, "\n-- growth: call sites whose live bytes keep rising until the view time --\n");
    text_steps(p, o);
    if (!p->ngrowth) {
        fprintf(o, "no call site keeps growing\n");
        return;
    }
    fprintf(o, "%s grown by %zu call sites\n", B(b1, (double)p->grown_total), p->ngrowth);
    for (size_t i = 0; i < p->ngrowth && i < a->cfg.top; i++) {
        const vt_unit *u = &p->units[p->growth_order[i]];
        fprintf(o, "#%zu +%s, %s/s", i + 1, B(b1, (double)u->grown), B(b2, u->growth_rate));
        if (p->steps)
            fprintf(o, ", %s/step", B(b3, u->growth_per_step >= 0 ? u->growth_per_step
                                                                     : u->growth_rate * p->step_period_ns / 1e9));
        fprintf(o, ", confidence %.2f, %" PRId64 " live blocks at the view, device %u %s (%s)\n", u->growth_conf,
                u->at_count, u->device, vt_memkind_name((vt_memkind)u->kind), vt_allocapi_name((vt_allocapi)u->api));
        text_stack(a, p, u->stack, o, "    ");
    }
}

typedef struct { uint32_t unit; int64_t bytes, count; } vt_row;

static int row_cmp(const void *x, const void *y)
{
    const vt_row *a = x, *b = y;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return a->unit < b->unit ? -1 : a->unit > b->unit;
}

static size_t peak_rows(const vt_proc *p, uint32_t dev, vt_row **out)
{
    vt_row *r = malloc((p->nunits + 1) * sizeof(*r));
    size_t n = 0;
    if (!r) {
        *out = NULL;
        return 0;
    }
    for (size_t k = 0; k < p->nunits; k++) {
        const vt_unit *u = &p->units[k];
        if (u->device == dev && resident(u->kind) && u->pk_bytes > 0)
            r[n++] = (vt_row){(uint32_t)k, u->pk_bytes, u->pk_count};
    }
    qsort(r, n, sizeof(*r), row_cmp);
    *out = r;
    return n;
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
        size_t n = peak_rows(p, d, &r);
        fprintf(o, "device %u: %s at %.3f s in %zu call sites\n", d, B(b1, (double)s->peak), rel_s(p, s->peak_t), n);
        for (size_t i = 0; i < n && i < a->cfg.top; i++) {
            const vt_unit *u = &p->units[r[i].unit];
            fprintf(o, "#%zu ", i + 1);
            unit_line(p, u, r[i].bytes, r[i].count, o);
            fprintf(o, " (%.1f%%)\n", 100.0 * (double)r[i].bytes / (double)s->peak);
            text_stack(a, p, u->stack, o, "    ");
        }
        if (n > a->cfg.top)
            fprintf(o, "... %zu more call sites\n", n - a->cfg.top);
        free(r);
    }
    if (!any)
        fprintf(o, "no device memory was live\n");
}

static void text_oom(vt_analysis *a, vt_proc *p, FILE *o)
{
    char b1[32], b2[32], b3[32];
    fprintf(o, "\n-- oom: failed allocations --\n");
    if (!p->failed) {
        fprintf(o, "no allocation failed\n");
        return;
    }
    fprintf(o, "%" PRIu64 " failed allocations (%" PRIu64 " out of memory)%s\n", p->failed, p->failed_oom,
            p->failed > p->noom ? "; the first ones are described" : "");
    for (uint32_t i = 0; i < p->noom; i++) {
        const vt_oom *e = &p->oom[i];
        fprintf(o, "#%u at %.3f s: %s requested on device %u, %s (%s) -> %s (%d)\n", i + 1, rel_s(p, e->t),
                B(b1, (double)e->size), e->device, vt_memkind_name((vt_memkind)e->kind),
                vt_allocapi_name((vt_allocapi)e->api), e->error_name ? e->error_name : "error", e->error);
        text_stack(a, p, e->stack, o, "    ");
        fprintf(o, "    device state: traced live %s", B(b1, (double)e->dev_live));
        const vt_devstate *s = &p->dev[e->device];
        if (s->total)
            fprintf(o, " of %s", B(b2, (double)s->total));
        fprintf(o, "\n");
        if (e->drv_t)
            fprintf(o, "    driver: %s free of %s (sample at %.3f s)\n", B(b1, (double)e->drv_free),
                    B(b2, (double)e->drv_total), rel_s(p, e->drv_t));
        if (e->have_pool) {
            uint64_t unused = e->pool_reserved > e->pool_used ? e->pool_reserved - e->pool_used : 0;
            fprintf(o, "    pools: reserved %s, used %s, reserved but unused %s", B(b1, (double)e->pool_reserved),
                    B(b2, (double)e->pool_used), B(b3, (double)unused));
            if (unused >= e->size && e->size && e->error == 2)
                fprintf(o, " >= the request: fragmentation (no free range large enough)");
            fprintf(o, "\n");
        }
        if (e->c10_reserved)
            fprintf(o, "    PyTorch caching allocator segments live: %s (reserved by the allocator, used or cached)\n",
                    B(b1, (double)e->c10_reserved));
        if (e->ntop) {
            fprintf(o, "    top holders:\n");
            for (uint32_t k = 0; k < e->ntop; k++) {
                const vt_unit *u = &p->units[e->top_unit[k]];
                fprintf(o, "    %u) ", k + 1);
                unit_line(p, u, e->top_bytes[k], e->top_count[k], o);
                fprintf(o, "\n");
                text_stack(a, p, u->stack, o, "        ");
            }
        }
    }
}

static const char *allocator_mode(const vt_proc *p, int *tensor_level)
{
    int c10_malloc = 0, c10_vmm = 0, c10_async = 0, async = 0;
    for (size_t k = 0; k < p->nunits; k++) {
        const vt_unit *u = &p->units[k];
        if (u->api == VT_API_MALLOC_ASYNC || u->api == VT_API_MALLOC_FROM_POOL)
            async = 1;
        if (!u->c10)
            continue;
        if (u->api == VT_API_VMM)
            c10_vmm = 1;
        else if (u->api == VT_API_MALLOC_ASYNC || u->api == VT_API_MALLOC_FROM_POOL)
            c10_async = 1;
        else if (u->api == VT_API_MALLOC)
            c10_malloc = 1;
    }
    const char *conf = p->env_alloc_conf ? p->env_alloc_conf : "";
    *tensor_level = 0;
    if (c10_async || (strstr(conf, "cudaMallocAsync") && async)) {
        *tensor_level = 1;
        return "pytorch_async";
    }
    if (c10_vmm || (strstr(conf, "expandable_segments:True") && p->nev[VT_EV_VMM_CREATE]))
        return "pytorch_expandable";
    if (c10_malloc)
        return "pytorch_caching";
    if (async)
        return "stream_ordered";
    return "direct";
}

static void text_allocator(vt_analysis *a, vt_proc *p, FILE *o)
{
    char b1[32], b2[32], b3[32], b4[32];
    (void)a;
    int tl;
    const char *mode = allocator_mode(p, &tl);
    fprintf(o, "\n-- allocator view --\n");
    if (!strcmp(mode, "pytorch_caching") || !strcmp(mode, "pytorch_expandable")) {
        fprintf(o, "PyTorch's caching allocator%s: %" PRIu64 " segment allocations from %u call sites, peak %s of segments.\n",
                !strcmp(mode, "pytorch_expandable") ? " with expandable segments (cuMemCreate/cuMemMap)" : " (cudaMalloc segments)",
                p->c10_allocs, p->c10_units, B(b1, (double)p->c10_bytes_peak));
        fprintf(o, "These blocks are the allocator's segments, not tensors: freed tensors stay cached (reserved),\n"
                   "so a segment's call site is the tensor that made the pool grow. For tensor-level call sites,\n"
                   "record again with `vramtrace record --tensors` (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync).\n");
    } else if (!strcmp(mode, "pytorch_async")) {
        fprintf(o, "PyTorch with backend:cudaMallocAsync: one allocation per tensor, call sites are tensor-level.\n");
    } else if (!strcmp(mode, "stream_ordered")) {
        fprintf(o, "stream-ordered allocations (cudaMallocAsync / memory pools): blocks are individual allocations.\n");
    } else {
        fprintf(o, "direct allocations (no caching allocator detected): blocks are the program's own allocations.\n");
    }
    if (p->nev[VT_EV_VMM_CREATE] || p->nev[VT_EV_VMM_RESERVE])
        fprintf(o, "VMM: address space reserved peak %s, mapped peak %s (physical memory counted once, at cuMemCreate)\n",
                B(b1, (double)p->va_reserved_peak), B(b2, (double)p->mapped_peak));
    for (size_t i = 0; i < p->npools; i++) {
        const vt_pool *q = &p->pools[i];
        fprintf(o, "pool 0x%" PRIx64 " on device %u: reserved peak %s, used peak %s; last: reserved %s, used %s",
                q->pool, q->device, B(b1, (double)q->reserved_high), B(b2, (double)q->used_high),
                B(b3, (double)q->reserved_last), B(b4, (double)q->used_last));
        if (q->creates || q->destroys || q->trims)
            fprintf(o, " (%" PRIu64 " create, %" PRIu64 " destroy, %" PRIu64 " trim)", q->creates, q->destroys, q->trims);
        fprintf(o, "\n");
        if (q->ns) {
            fprintf(o, "    time        reserved        used      unused\n");
            size_t step = q->ns > 16 ? (q->ns + 15) / 16 : 1;
            for (size_t k = 0; k < q->ns; k += step) {
                const vt_pool_sample *s = &q->s[k];
                fprintf(o, "    %8.3f s %11s %11s %11s\n", rel_s(p, s->t), B(b1, (double)s->reserved),
                        B(b2, (double)s->used), B(b3, s->reserved > s->used ? (double)(s->reserved - s->used) : 0));
            }
        }
    }
}

/* --- merged view over processes, by call-site key --- */

typedef struct {
    const char *key;
    uint32_t proc, unit;
    int64_t bytes, count;
    uint64_t grown;
    double rate;
    uint32_t nproc;
} vt_mrow;

static int mrow_key_cmp(const void *x, const void *y)
{
    const vt_mrow *a = x, *b = y;
    int c = strcmp(a->key, b->key);
    if (c)
        return c;
    if (a->proc != b->proc)
        return a->proc < b->proc ? -1 : 1;
    return a->unit < b->unit ? -1 : a->unit > b->unit;
}

static int mrow_bytes_cmp(const void *x, const void *y)
{
    const vt_mrow *a = x, *b = y;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return strcmp(a->key, b->key);
}

/* which: 0 leaks, 1 peak, 2 growth */
static size_t merged_rows(vt_analysis *a, int which, vt_mrow **out)
{
    size_t cap = 0, n = 0;
    for (size_t i = 0; i < a->nprocs; i++)
        cap += a->procs[i]->nunits;
    vt_mrow *r = malloc((cap + 1) * sizeof(*r));
    *out = r;
    if (!r)
        return 0;
    for (size_t i = 0; i < a->nprocs; i++) {
        vt_proc *p = a->procs[i];
        for (size_t k = 0; k < p->nunits; k++) {
            vt_unit *u = &p->units[k];
            int64_t b = which == 0 ? (u->kind == VT_MEM_DEVICE_STATIC ? 0 : u->at_bytes)
                      : which == 1 ? (resident(u->kind) ? u->pk_bytes : 0)
                                                               : (u->growth_flag ? (int64_t)u->grown : 0);
            int64_t c = which == 0 ? u->at_count : which == 1 ? u->pk_count : u->at_count;
            if (b <= 0)
                continue;
            r[n++] = (vt_mrow){vt_unit_key(a, p, (uint32_t)k), (uint32_t)i, (uint32_t)k, b, c,
                               u->grown, u->growth_rate, 1};
        }
    }
    qsort(r, n, sizeof(*r), mrow_key_cmp);
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (w && !strcmp(r[w - 1].key, r[i].key)) {
            vt_mrow *m = &r[w - 1];
            if (m->proc != r[i].proc)
                m->nproc++;
            m->bytes += r[i].bytes;
            m->count += r[i].count;
            m->grown += r[i].grown;
            m->rate += r[i].rate;
            continue;
        }
        r[w++] = r[i];
    }
    qsort(r, w, sizeof(*r), mrow_bytes_cmp);
    return w;
}

static void text_merged(vt_analysis *a, FILE *o)
{
    static const char *titles[] = {"leaks (each process at its own view time)", "peak live sets, summed",
                                   "growth (call sites flagged in any process)"};
    char b1[32], b2[32];
    fprintf(o, "\n== all %zu processes merged, by call site ==\n", a->nprocs);
    uint64_t lb = 0, pk = 0;
    for (size_t i = 0; i < a->nprocs; i++) {
        lb += a->procs[i]->leak_bytes;
        for (uint32_t d = 0; d < VT_MAX_DEVICES; d++)
            pk += (uint64_t)a->procs[i]->dev[d].peak;
    }
    fprintf(o, "leaked at the view: %s; sum of per-device peaks: %s\n", B(b1, (double)lb), B(b2, (double)pk));
    for (int w = 0; w < 3; w++) {
        vt_mrow *r;
        size_t n = merged_rows(a, w, &r);
        fprintf(o, "\n-- merged %s: %zu call sites --\n", titles[w], n);
        for (size_t i = 0; i < n && i < a->cfg.top; i++) {
            const vt_proc *p = a->procs[r[i].proc];
            const vt_unit *u = &p->units[r[i].unit];
            if (w == 2)
                fprintf(o, "#%zu +%s, %s/s in %u process%s\n", i + 1, B(b1, (double)r[i].grown), B(b2, r[i].rate),
                        r[i].nproc, r[i].nproc == 1 ? "" : "es");
            else
                fprintf(o, "#%zu %s in %" PRId64 " block%s, %s, in %u process%s\n", i + 1, B(b1, (double)r[i].bytes),
                        r[i].count, r[i].count == 1 ? "" : "s", vt_memkind_name((vt_memkind)u->kind), r[i].nproc,
                        r[i].nproc == 1 ? "" : "es");
            text_stack(a, p, u->stack, o, "    ");
        }
        free(r);
    }
}

static void proc_title(const vt_proc *p, size_t i, FILE *o)
{
    fprintf(o, "== process %zu: %s (pid %u", i + 1, p->program ? p->program : "?", p->pid);
    if (p->host)
        fprintf(o, " on %s", p->host);
    if (p->env_rank)
        fprintf(o, ", rank %s", p->env_rank);
    fprintf(o, ") ==\n");
}

int vt_report_text(vt_analysis *a, FILE *o)
{
    if (!a->finished)
        return VT_ERR_INVALID;
    fprintf(o, "vramtrace report: %zu process%s\n", a->nprocs, a->nprocs == 1 ? "" : "es");
    for (size_t i = 0; i < a->nprocs; i++) {
        vt_proc *p = a->procs[i];
        fprintf(o, "\n");
        proc_title(p, i, o);
        text_summary(a, p, o);
        text_leaks(a, p, o);
        text_growth(a, p, o);
        text_peak(a, p, o);
        text_oom(a, p, o);
        text_allocator(a, p, o);
    }
    if (a->nprocs > 1)
        text_merged(a, o);
    return ferror(o) ? VT_ERR_IO : 0;
}

/* ------------------------------------------------------------ JSON */

static void json_frame(FILE *o, const vt_xframe *f, int user)
{
    fprintf(o, "{\"kind\":\"%s\"", f->python ? "python" : "native");
    fprintf(o, ",\"function\":");
    vt_json_str(o, f->function);
    fprintf(o, ",\"file\":");
    vt_json_str(o, f->file);
    fprintf(o, ",\"line\":%u", f->line);
    if (!f->python) {
        fprintf(o, ",\"module\":");
        vt_json_str(o, f->module);
        fprintf(o, ",\"offset\":\"0x%" PRIx64 "\",\"inlined\":%s,\"symbolized\":\"%s\"", f->offset,
                f->inlined ? "true" : "false", vt_sym_status_name(f->status));
    }
    fprintf(o, ",\"internal\":%s,\"user\":%s}", f->internal ? "true" : "false", user ? "true" : "false");
}

static void json_stack(vt_analysis *a, const vt_proc *p, uint32_t stack, FILE *o)
{
    vt_xframe fr[VT_MAX_STACK];
    int user = -1;
    uint32_t n = vt_site_frames(a, p, stack, fr, VT_MAX_STACK, &user);
    fprintf(o, "\"user_frame\":");
    if (user >= 0)
        json_frame(o, &fr[user], 1);
    else
        fprintf(o, "null");
    fprintf(o, ",\"stack\":[");
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            fputc(',', o);
        json_frame(o, &fr[i], (int)i == user);
    }
    fprintf(o, "]");
}

static void json_site(vt_analysis *a, vt_proc *p, uint32_t unit, int64_t bytes, int64_t count, FILE *o)
{
    const vt_unit *u = &p->units[unit];
    fprintf(o, "{\"bytes\":%" PRId64 ",\"blocks\":%" PRId64 ",\"device\":%u,\"kind\":\"%s\",\"api\":\"%s\"", bytes,
            count, u->device, vt_memkind_name((vt_memkind)u->kind), vt_allocapi_name((vt_allocapi)u->api));
    fprintf(o, ",\"allocs\":%" PRIu64 ",\"alloc_bytes\":%" PRIu64 ",\"frees\":%" PRIu64, u->allocs, u->alloc_bytes, u->frees);
    fprintf(o, ",\"never_freed_bytes\":%" PRId64 ",\"never_freed_blocks\":%" PRId64, u->never_bytes, u->never_count);
    fprintf(o, ",\"mean_lifetime_s\":%.6f", u->frees ? (double)u->lifetime_sum / (double)u->frees / 1e9 : 0.0);
    fprintf(o, ",\"key\":");
    vt_json_str(o, vt_unit_key(a, p, unit));
    fputc(',', o);
    json_stack(a, p, u->stack, o);
    fputc('}', o);
}

static void json_proc(vt_analysis *a, vt_proc *p, FILE *o)
{
    char view[256];
    fprintf(o, "{\"file\":");
    vt_json_str(o, p->name);
    fprintf(o, ",\"pid\":%u,\"ppid\":%u,\"host\":", p->pid, p->ppid);
    vt_json_str(o, p->host);
    fprintf(o, ",\"program\":");
    vt_json_str(o, p->program);
    fprintf(o, ",\"argv\":[");
    for (uint32_t i = 0; i < p->argc; i++) {
        if (i)
            fputc(',', o);
        vt_json_str(o, p->argv[i]);
    }
    fprintf(o, "],\"rank\":");
    vt_json_str(o, p->env_rank);
    fprintf(o, ",\"pytorch_cuda_alloc_conf\":");
    vt_json_str(o, p->env_alloc_conf);
    fprintf(o, ",\"format_version\":%u,\"tool_version\":", p->format_version);
    vt_json_str(o, p->tool_version);
    fprintf(o, ",\"clock\":");
    vt_json_str(o, p->clock);
    fprintf(o, ",\"complete\":%s,\"end_reason\":%s", p->complete ? "true" : "false",
            !p->complete ? "null" : p->end_reason == VT_END_NORMAL ? "\"normal\"" : p->end_reason == VT_END_SIGNAL ? "\"signal\"" : "\"error\"");
    fprintf(o, ",\"recorded\":{\"kernels\":%s,\"native_stacks\":%s,\"python_stacks\":%s}", p->hdr_kernels ? "true" : "false",
            p->hdr_native ? "true" : "false", p->hdr_python ? "true" : "false");
    fprintf(o, ",\"duration_s\":%.6f", rel_s(p, p->t_last));
    fprintf(o, ",\"events\":{");
    int first = 1;
    for (int t = 0; t < VT_EV__MAX; t++) {
        if (!p->nev[t])
            continue;
        fprintf(o, "%s\"%s\":%" PRIu64, first ? "" : ",", vt_evtype_name((vt_evtype)t), p->nev[t]);
        first = 0;
    }
    fprintf(o, "},\"records\":%" PRIu64, p->records);
    /* summary: devices */
    fprintf(o, ",\"devices\":[");
    first = 1;
    for (uint32_t d = 0; d < p->ndev_seen && d < VT_MAX_DEVICES; d++) {
        const vt_devstate *s = &p->dev[d];
        if (!s->present && !s->used && !s->drv_samples)
            continue;
        fprintf(o, "%s{\"index\":%u,\"name\":", first ? "" : ",", d);
        first = 0;
        vt_json_str(o, s->present ? s->name : NULL);
        fprintf(o, ",\"total_bytes\":%" PRIu64 ",\"peak_live_bytes\":%" PRId64 ",\"peak_time_s\":%.6f", s->total, s->peak,
                rel_s(p, s->peak_t));
        fprintf(o, ",\"by_kind\":{");
        int fk = 1;
        for (int k = 0; k < VT_MEM__COUNT; k++) {
            if (!s->peak_kind[k])
                continue;
            fprintf(o, "%s\"%s\":{\"peak_bytes\":%" PRId64 ",\"peak_time_s\":%.6f,\"at_view_bytes\":%" PRId64
                       ",\"at_end_bytes\":%" PRId64 "}",
                    fk ? "" : ",", vt_memkind_name((vt_memkind)k), s->peak_kind[k], rel_s(p, s->peak_kind_t[k]),
                    s->at_kind[k], s->live[k]);
            fk = 0;
        }
        fprintf(o, "},\"driver\":");
        if (s->drv_samples)
            fprintf(o, "{\"samples\":%" PRIu64 ",\"total_bytes\":%" PRIu64 ",\"max_used_bytes\":%" PRIu64
                       ",\"max_used_time_s\":%.6f,\"traced_live_then_bytes\":%" PRId64 ",\"untraced_bytes\":%" PRId64 "}",
                    s->drv_samples, s->drv_total, s->drv_max_used, rel_s(p, s->drv_max_t), s->drv_traced_then,
                    (int64_t)s->drv_max_used - s->drv_traced_then);
        else
            fprintf(o, "null");
        fputc('}', o);
    }
    fprintf(o, "]");
    fprintf(o, ",\"oddities\":{\"unknown_frees\":%" PRIu64 ",\"double_frees\":%" PRIu64 ",\"overlapping_allocs\":%" PRIu64
               ",\"unknown_vmm_releases\":%" PRIu64 ",\"double_vmm_releases\":%" PRIu64 ",\"unknown_unmaps\":%" PRIu64
               ",\"zero_addresses\":%" PRIu64 ",\"invalid_devices\":%" PRIu64 ",\"absurd_sizes\":%" PRIu64,
            p->unknown_frees, p->double_frees, p->overlap_allocs, p->unknown_vmm_release, p->double_vmm_release,
            p->unknown_unmaps, p->zero_frees, p->bad_device, p->absurd_sizes);
    fprintf(o, ",\"dropped\":{\"writer_queue\":%" PRIu64 ",\"cupti_activity\":%" PRIu64 ",\"stack\":%" PRIu64 ",\"other\":%" PRIu64 "}}",
            p->dropped[0], p->dropped[1], p->dropped[2], p->dropped[3]);
    fprintf(o, ",\"notes\":[");
    for (uint32_t i = 0; i < p->nnotes; i++) {
        fprintf(o, "%s{\"severity\":\"%s\",\"text\":", i ? "," : "",
                p->note_sev[i] == VT_SEV_ERROR ? "error" : p->note_sev[i] == VT_SEV_WARNING ? "warning" : "info");
        vt_json_str(o, p->notes[i]);
        fputc('}', o);
    }
    fprintf(o, "],\"read_errors\":[");
    for (uint32_t i = 0; i < p->nerrors; i++) {
        if (i)
            fputc(',', o);
        vt_json_str(o, p->errors[i]);
    }
    fprintf(o, "]");
    /* leaks */
    view_text(a, p, view, sizeof(view));
    fprintf(o, ",\"view\":{\"mode\":\"%s\",\"time_s\":%.6f,\"description\":", view_mode_name(p->view_mode), rel_s(p, p->view_t));
    vt_json_str(o, view);
    fprintf(o, ",\"exact\":%s}", p->tail_overflow ? "false" : "true");
    fprintf(o, ",\"leaks\":{\"bytes\":%" PRIu64 ",\"blocks\":%" PRIu64 ",\"module_globals_bytes\":%" PRIu64
               ",\"module_globals_blocks\":%" PRIu64 ",\"sites_total\":%zu,\"sites\":[",
            p->leak_bytes, p->leak_blocks, p->static_bytes, p->static_blocks, p->nleak);
    for (size_t i = 0; i < p->nleak && i < a->cfg.top; i++) {
        const vt_unit *u = &p->units[p->leak_order[i]];
        if (i)
            fputc(',', o);
        json_site(a, p, p->leak_order[i], u->at_bytes, u->at_count, o);
    }
    fprintf(o, "]}");
    /* growth */
    fprintf(o, ",\"growth\":{\"steps\":");
    if (p->steps)
        fprintf(o, "{\"count\":%" PRIu64 ",\"source\":\"%s\",\"name\":", p->steps,
                !strncmp(p->step_source, "nvtx:", 5) ? "nvtx" : "kernels");
    if (p->steps) {
        if (!strncmp(p->step_source, "nvtx:", 5))
            vt_json_str(o, p->step_source + 5);
        else
            fprintf(o, "null");
        fprintf(o, ",\"period_s\":%.6f}", p->step_period_ns / 1e9);
    } else
        fprintf(o, "null");
    fprintf(o, ",\"grown_bytes\":%" PRIu64 ",\"sites\":[", p->grown_total);
    for (size_t i = 0; i < p->ngrowth && i < a->cfg.top; i++) {
        const vt_unit *u = &p->units[p->growth_order[i]];
        fprintf(o, "%s{\"grown_bytes\":%" PRIu64 ",\"rate_bytes_per_s\":%.1f,\"rate_bytes_per_step\":", i ? "," : "",
                u->grown, u->growth_rate);
        if (p->steps)
            fprintf(o, "%.1f", u->growth_per_step >= 0 ? u->growth_per_step : u->growth_rate * p->step_period_ns / 1e9);
        else
            fprintf(o, "null");
        fprintf(o, ",\"confidence\":%.3f,\"rises\":%u,\"window_start_s\":%.6f,\"bucket_s\":%.6f,\"site\":",
                u->growth_conf, u->growth_rises, rel_s(p, u->g_t0), (double)(1ULL << u->g_shift) / 1e9);
        json_site(a, p, p->growth_order[i], u->at_bytes, u->at_count, o);
        fputc('}', o);
    }
    fprintf(o, "]}");
    /* peak */
    fprintf(o, ",\"peak\":[");
    first = 1;
    for (uint32_t d = 0; d < p->ndev_seen && d < VT_MAX_DEVICES; d++) {
        const vt_devstate *s = &p->dev[d];
        if (!s->peak)
            continue;
        vt_row *r;
        size_t n = peak_rows(p, d, &r);
        fprintf(o, "%s{\"device\":%u,\"bytes\":%" PRId64 ",\"time_s\":%.6f,\"sites_total\":%zu,\"sites\":[", first ? "" : ",",
                d, s->peak, rel_s(p, s->peak_t), n);
        first = 0;
        for (size_t i = 0; i < n && i < a->cfg.top; i++) {
            if (i)
                fputc(',', o);
            json_site(a, p, r[i].unit, r[i].bytes, r[i].count, o);
        }
        fprintf(o, "]}");
        free(r);
    }
    fprintf(o, "]");
    /* oom */
    fprintf(o, ",\"oom\":{\"failed\":%" PRIu64 ",\"out_of_memory\":%" PRIu64 ",\"events\":[", p->failed, p->failed_oom);
    for (uint32_t i = 0; i < p->noom; i++) {
        const vt_oom *e = &p->oom[i];
        fprintf(o, "%s{\"time_s\":%.6f,\"requested_bytes\":%" PRIu64 ",\"device\":%u,\"kind\":\"%s\",\"api\":\"%s\",\"error\":%d,\"error_name\":",
                i ? "," : "", rel_s(p, e->t), e->size, e->device, vt_memkind_name((vt_memkind)e->kind),
                vt_allocapi_name((vt_allocapi)e->api), e->error);
        vt_json_str(o, e->error_name);
        fputc(',', o);
        json_stack(a, p, e->stack, o);
        fprintf(o, ",\"device_live_bytes\":%" PRId64 ",\"device_total_bytes\":%" PRIu64, e->dev_live, p->dev[e->device].total);
        fprintf(o, ",\"by_kind\":{");
        int fk = 1;
        for (int k = 0; k < VT_MEM__COUNT; k++)
            if (e->kind_live[k]) {
                fprintf(o, "%s\"%s\":%" PRId64, fk ? "" : ",", vt_memkind_name((vt_memkind)k), e->kind_live[k]);
                fk = 0;
            }
        fprintf(o, "},\"driver\":");
        if (e->drv_t)
            fprintf(o, "{\"free_bytes\":%" PRIu64 ",\"total_bytes\":%" PRIu64 ",\"time_s\":%.6f}", e->drv_free, e->drv_total,
                    rel_s(p, e->drv_t));
        else
            fprintf(o, "null");
        fprintf(o, ",\"pool\":");
        if (e->have_pool) {
            uint64_t unused = e->pool_reserved > e->pool_used ? e->pool_reserved - e->pool_used : 0;
            fprintf(o, "{\"reserved_bytes\":%" PRIu64 ",\"used_bytes\":%" PRIu64 ",\"unused_bytes\":%" PRIu64
                       ",\"fragmentation\":%s}",
                    e->pool_reserved, e->pool_used, unused, unused >= e->size && e->size && e->error == 2 ? "true" : "false");
        } else
            fprintf(o, "null");
        fprintf(o, ",\"caching_allocator_segments_bytes\":%" PRIu64 ",\"top_holders\":[", e->c10_reserved);
        for (uint32_t k = 0; k < e->ntop; k++) {
            if (k)
                fputc(',', o);
            json_site(a, p, e->top_unit[k], e->top_bytes[k], e->top_count[k], o);
        }
        fprintf(o, "]}");
    }
    fprintf(o, "]}");
    /* allocator */
    int tl;
    const char *mode = allocator_mode(p, &tl);
    fprintf(o, ",\"allocator\":{\"mode\":\"%s\",\"tensor_level\":%s,\"caching_allocator\":{\"segment_allocs\":%" PRIu64
               ",\"call_sites\":%u,\"peak_bytes\":%" PRIu64 "},\"advice\":",
            mode, tl ? "true" : "false", p->c10_allocs, p->c10_units, p->c10_bytes_peak);
    if (!strcmp(mode, "pytorch_caching") || !strcmp(mode, "pytorch_expandable"))
        vt_json_str(o, "blocks are caching-allocator segments; for tensor-level call sites record with `vramtrace record "
                       "--tensors` (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync)");
    else
        fprintf(o, "null");
    fprintf(o, ",\"vmm\":{\"reserved_peak_bytes\":%" PRId64 ",\"mapped_peak_bytes\":%" PRId64 "}", p->va_reserved_peak, p->mapped_peak);
    fprintf(o, ",\"pools\":[");
    for (size_t i = 0; i < p->npools; i++) {
        const vt_pool *q = &p->pools[i];
        fprintf(o, "%s{\"pool\":\"0x%" PRIx64 "\",\"device\":%u,\"reserved_peak_bytes\":%" PRIu64 ",\"used_peak_bytes\":%" PRIu64
                   ",\"reserved_last_bytes\":%" PRIu64 ",\"used_last_bytes\":%" PRIu64 ",\"creates\":%" PRIu64
                   ",\"destroys\":%" PRIu64 ",\"trims\":%" PRIu64 ",\"samples\":[",
                i ? "," : "", q->pool, q->device, q->reserved_high, q->used_high, q->reserved_last, q->used_last, q->creates,
                q->destroys, q->trims);
        for (size_t k = 0; k < q->ns; k++)
            fprintf(o, "%s[%.6f,%" PRIu64 ",%" PRIu64 "]", k ? "," : "", rel_s(p, q->s[k].t), q->s[k].reserved, q->s[k].used);
        fprintf(o, "]}");
    }
    fprintf(o, "]}}");
}

int vt_report_json(vt_analysis *a, FILE *o)
{
    if (!a->finished)
        return VT_ERR_INVALID;
    fprintf(o, "{\"schema\":\"vramtrace.report/1\",\"processes\":[");
    for (size_t i = 0; i < a->nprocs; i++) {
        if (i)
            fputs(",\n", o);
        json_proc(a, a->procs[i], o);
    }
    fprintf(o, "],\"merged\":");
    if (a->nprocs > 1) {
        uint64_t lb = 0;
        for (size_t i = 0; i < a->nprocs; i++)
            lb += a->procs[i]->leak_bytes;
        fprintf(o, "{\"leaked_bytes\":%" PRIu64 ",\"grown_bytes\":%" PRIu64, lb, vt_analysis_grown_bytes(a));
        static const char *names[] = {"leaks", "peak", "growth"};
        for (int w = 0; w < 3; w++) {
            vt_mrow *r;
            size_t n = merged_rows(a, w, &r);
            fprintf(o, ",\"%s\":[", names[w]);
            for (size_t i = 0; i < n && i < a->cfg.top; i++) {
                vt_proc *p = a->procs[r[i].proc];
                fprintf(o, "%s{\"processes\":%u,\"bytes\":%" PRId64 ",\"blocks\":%" PRId64, i ? "," : "", r[i].nproc,
                        r[i].bytes, r[i].count);
                if (w == 2)
                    fprintf(o, ",\"rate_bytes_per_s\":%.1f", r[i].rate);
                fprintf(o, ",\"site\":");
                json_site(a, p, r[i].unit, r[i].bytes, r[i].count, o);
                fputc('}', o);
            }
            fprintf(o, "]");
            free(r);
        }
        fputc('}', o);
    } else
        fprintf(o, "null");
    fprintf(o, ",\"leaked_bytes\":%" PRIu64 ",\"grown_bytes\":%" PRIu64 ",\"errors\":[", vt_analysis_leaked_bytes(a),
            vt_analysis_grown_bytes(a));
    for (unsigned i = 0; i < a->nall_errors; i++) {
        if (i)
            fputc(',', o);
        vt_json_str(o, a->all_errors[i]);
    }
    fprintf(o, "]}\n");
    return ferror(o) ? VT_ERR_IO : 0;
}
