/* vt_report_model.c - the report model the text and JSON renderings share:
 * byte formatting, the view, peak rows, the allocator mode, merged rows. */
#include "vt_report_int.h"
#include "vt_escape.h"
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

/* a JSON string (vt_escape.h): control bytes as \uXXXX, bytes that are
 * not UTF-8 as U+FFFD, so the output always parses */
void vt_json_str_to(const char *s, void (*put)(void *ctx, const char *p, size_t n), void *ctx)
{
    vt_esc_json(s, 0, put, ctx);
}

static void json_put_file(void *ctx, const char *p, size_t n)
{
    fwrite(p, 1, n, (FILE *)ctx);
}

void vt_json_str(FILE *f, const char *s)
{
    vt_json_str_to(s, json_put_file, f);
}

const char *rep_t(const char *s)
{
    static char ring[8][2048];
    static unsigned next;
    char *b = ring[next++ & 7];
    return vt_esc_text_buf(s ? s : "", b, sizeof(ring[0]));
}

static void put_file(void *ctx, const char *p, size_t n)
{
    fwrite(p, 1, n, (FILE *)ctx);
}

int rep_text_escaped(vt_analysis *a, vt_analysis *b, int (*one)(vt_analysis *, FILE *),
                     int (*two)(vt_analysis *, vt_analysis *, FILE *), FILE *o)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return VT_ERR_NOMEM;
    int rc = one ? one(a, m) : two(a, b, m);
    if (fclose(m)) {
        free(buf);
        return VT_ERR_NOMEM;
    }
    vt_esc_text(buf, len, VT_ESC_KEEP_NL, put_file, o);
    free(buf);
    if (!rc && ferror(o))
        rc = VT_ERR_IO;
    return rc;
}

const char *rep_bytes(char *buf, double b)
{
    vt_fmt_bytes(buf, 32, b);
    return buf;
}

double rep_rel_s(const vt_proc *p, uint64_t t)
{
    return t >= p->t0 ? (double)(t - p->t0) / 1e9 : -(double)(p->t0 - t) / 1e9;
}

double rep_duration_s(const vt_proc *p)
{
    uint64_t start = p->t_min && p->t_min < p->t0 ? p->t_min : p->t0; /* time that ran backwards included */
    return p->t_last > start ? (double)(p->t_last - start) / 1e9 : 0.0;
}

const char *rep_view_mode_name(int m)
{
    switch (m) {
    case VT_AT_AUTO: return "last_kernel";
    case VT_AT_END: return "end";
    case VT_AT_TIME: return "time";
    case VT_AT_MARKER: return "marker";
    default: return "?";
    }
}

void rep_view_text(const vt_analysis *a, const vt_proc *p, char *buf, size_t len)
{
    switch (p->view_mode) {
    case VT_AT_AUTO:
        snprintf(buf, len, "live at the end of the last kernel (t=%.3f s), when the real work ended", rep_rel_s(p, p->view_t));
        break;
    case VT_AT_TIME:
        snprintf(buf, len, "live at --at %.3f s", rep_rel_s(p, p->view_t));
        break;
    case VT_AT_MARKER:
        if (p->cand_set)
            snprintf(buf, len, "live at the last NVTX marker \"%s\" (t=%.3f s)", a->at_marker, rep_rel_s(p, p->view_t));
        else
            snprintf(buf, len, "live at the end of the trace (t=%.3f s): NVTX marker \"%s\" not found",
                     rep_rel_s(p, p->view_t), a->at_marker);
        break;
    default:
        if (p->hdr_kernels && a->cfg.at_mode == VT_AT_AUTO)
            snprintf(buf, len, "live at the end of the trace (t=%.3f s): no kernel was traced", rep_rel_s(p, p->view_t));
        else if (a->cfg.at_mode == VT_AT_AUTO)
            snprintf(buf, len, "live at the end of the trace (t=%.3f s): kernels were not recorded", rep_rel_s(p, p->view_t));
        else
            snprintf(buf, len, "live at the end of the trace (t=%.3f s), teardown included", rep_rel_s(p, p->view_t));
        break;
    }
}

/* The name of Thread id `thread` (NULL when unknown), its OS tid in *tid. */
const char *rep_thread_name(const vt_proc *p, uint32_t thread, uint32_t *tid)
{
    for (uint32_t k = 0; thread && k < p->nthr; k++)
        if (p->thr[k].id == thread) {
            *tid = p->thr[k].tid;
            return p->thr[k].name;
        }
    *tid = 0;
    return NULL;
}

/* A call site's one-line name, as the text report heads it: the user's
 * frame; for a stack with none (a framework's own thread: PyTorch's
 * autograd engine, NCCL, cuBLAS) "(no frame of yours) in thread NAME (tid
 * N)", with what the thread is when known; "(no call stack recorded)"
 * for none.  Unescaped (each output escapes as it must).  short_file: the
 * file's base name (a screen's width). */
void rep_site_headline(vt_analysis *a, const vt_proc *p, uint32_t stack, uint32_t thread, int short_file, char *buf,
                       size_t len)
{
    vt_xframe fr[VT_MAX_STACK];
    int user = -1;
    uint32_t n = stack ? vt_site_frames(a, p, stack, fr, VT_MAX_STACK, &user) : 0;
    uint32_t tid = 0;
    const char *tname = thread ? rep_thread_name(p, thread, &tid) : NULL;
    if (tname && !*tname)
        tname = NULL;
    if (!n) {
        if (tname)
            snprintf(buf, len, "(no call stack recorded) in thread %s (tid %u)", tname, tid);
        else
            snprintf(buf, len, "(no call stack recorded)");
        return;
    }
    if ((user < 0 || fr[user].internal) && tname) {
        int ag = !strncmp(tname, "pt_autograd", 11);
        if (short_file) /* a screen's column */
            snprintf(buf, len, "(thread %s%s)", tname, ag ? ", backward" : "");
        else
            snprintf(buf, len, "(no frame of yours) in thread %s (tid %u)%s", tname, tid,
                     ag ? ": PyTorch's autograd engine, during backward" : "");
        return;
    }
    vt_xframe f = fr[user >= 0 ? (uint32_t)user : 0];
    if (short_file && f.file && strrchr(f.file, '/'))
        f.file = strrchr(f.file, '/') + 1;
    vt_xframe_format(&f, buf, len);
}

int rep_resident(unsigned k)
{
    return k == VT_MEM_DEVICE || k == VT_MEM_DEVICE_STATIC || k == VT_MEM_ARRAY;
}

/* Whether a unit's bytes count in the device's per-site lists (peak,
 * merged rows): device-resident memory; with the caching allocator's
 * tensor events, its tensors instead of its segments (which hold them). */
int rep_counted(const vt_proc *p, const vt_unit *u)
{
    if (p->tensor_units)
        return u->kind == VT_MEM_TENSOR || (rep_resident(u->kind) && !u->segment);
    return rep_resident(u->kind);
}

/* With tensor events: what the caching allocator held cached at the
 * device's peak (its segments' bytes then minus its tensors'), the part
 * of the peak that the per-site rows leave out. */
int64_t rep_peak_cached(const vt_proc *p, uint32_t dev)
{
    if (!p->tensor_units)
        return 0;
    int64_t seg = 0, ten = 0;
    for (size_t k = 0; k < p->nunits; k++) {
        const vt_unit *u = &p->units[k];
        if (u->device != dev || u->pk_bytes <= 0)
            continue;
        if (u->segment && rep_resident(u->kind))
            seg += u->pk_bytes;
        else if (u->kind == VT_MEM_TENSOR)
            ten += u->pk_bytes;
    }
    return seg > ten ? seg - ten : 0;
}

static int row_cmp(const void *x, const void *y)
{
    const vt_row *a = x, *b = y;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return a->unit < b->unit ? -1 : a->unit > b->unit;
}

/* The call sites live at device dev's peak, largest first: allocated 0,
 * the device's peak (the units it counts); 1, with tensor events, the
 * tensors at PyTorch's allocated peak (memory_allocated at its highest). */
size_t rep_peak_rows(const vt_proc *p, uint32_t dev, int allocated, vt_row **out)
{
    vt_row *r = malloc((p->nunits + 1) * sizeof(*r));
    size_t n = 0;
    if (!r) {
        *out = NULL;
        return 0;
    }
    for (size_t k = 0; k < p->nunits; k++) {
        const vt_unit *u = &p->units[k];
        if (u->device != dev)
            continue;
        if (!allocated && rep_counted(p, u) && u->pk_bytes > 0)
            r[n++] = (vt_row){(uint32_t)k, u->pk_bytes, u->pk_count};
        else if (allocated && u->kind == VT_MEM_TENSOR && u->tk_bytes > 0)
            r[n++] = (vt_row){(uint32_t)k, u->tk_bytes, u->tk_count};
    }
    qsort(r, n, sizeof(*r), row_cmp);
    *out = r;
    return n;
}

const char *rep_allocator_mode(const vt_proc *p, int *tensor_level)
{
    int c10_malloc = 0, c10_vmm = 0, c10_async = 0, async = 0, cupy = 0;
    for (size_t k = 0; k < p->nunits; k++) {
        const vt_unit *u = &p->units[k];
        if (u->api == VT_API_MALLOC_ASYNC || u->api == VT_API_MALLOC_FROM_POOL)
            async = 1;
        if (u->pool == VT_POOL_CUPY && u->segment)
            cupy = 1; /* a chunk of CuPy's MemoryPool (vt_pools.c) */
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
    /* tensor events from the caching allocator's trace tracker (issue 23) */
    *tensor_level = p->tensor_units > 0;
    if (c10_async || (strstr(conf, "cudaMallocAsync") && async)) {
        *tensor_level = 1;
        return "pytorch_async";
    }
    if (c10_vmm || (strstr(conf, "expandable_segments:True") && p->nev[VT_EV_VMM_CREATE]))
        return "pytorch_expandable";
    if (c10_malloc)
        return "pytorch_caching";
    if (cupy) /* with its memory hook's blocks (tensor_level), or chunks only */
        return "cupy_pool";
    if (async)
        return "stream_ordered";
    return "direct";
}

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
size_t rep_merged_rows(vt_analysis *a, int which, vt_mrow **out)
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
            int64_t b = which == 0 ? (u->kind == VT_MEM_DEVICE_STATIC || (u->segment && p->tensor_units) ? 0 : u->at_bytes)
                      : which == 1 ? (rep_counted(p, u) ? u->pk_bytes : 0)
                                                               : (u->growth_flag ? (int64_t)u->grown : 0);
            int64_t c = which == 0 ? u->at_count : which == 1 ? u->pk_count : u->at_count;
            if (b <= 0)
                continue;
            r[n++] = (vt_mrow){vt_unit_key(a, p, (uint32_t)k), (uint32_t)i, (uint32_t)k, b, c,
                               u->grown, u->growth_rate, 1, (uint32_t)i, {(uint32_t)i}};
        }
    }
    qsort(r, n, sizeof(*r), mrow_key_cmp);
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (w && !strcmp(r[w - 1].key, r[i].key)) {
            vt_mrow *m = &r[w - 1];
            /* rows of one key come in process order (mrow_key_cmp) */
            if (m->lastproc != r[i].proc) {
                if (m->nproc < VT_MROW_PROCS)
                    m->procs[m->nproc] = r[i].proc;
                m->nproc++;
                m->lastproc = r[i].proc;
            }
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

/* ------------------------------------------------------------ the verdict */

const char *rep_verdict_name(rep_verdict_kind k)
{
    return k == REP_LEAK ? "leak" : k == REP_NO_LEAK ? "no_leak" : "cannot_tell";
}

void rep_verdict_of(vt_analysis *a, const vt_proc *p, rep_verdict *v)
{
    memset(v, 0, sizeof(*v));
    v->mode = rep_allocator_mode(p, &v->tensor_level);
    v->steps = p->steps_view; /* the steps the verdict looked at */
    v->grown = p->grown_total;
    v->cached = -1;
    for (size_t k = 0; k < p->npools; k++) {
        const vt_pool *q = &p->pools[k];
        if (!q->ns && !q->reserved_last)
            continue;
        /* saturating: a damaged trace may carry any values */
        int64_t d, sum;
        if (__builtin_sub_overflow((int64_t)q->reserved_last, (int64_t)q->used_last, &d))
            d = q->reserved_last > q->used_last ? INT64_MAX : INT64_MIN;
        if (__builtin_add_overflow(v->cached < 0 ? 0 : v->cached, d, &sum))
            sum = d > 0 ? INT64_MAX : INT64_MIN;
        v->cached = sum;
    }
    if (p->tensor_units) { /* reserved minus allocated at the view: freed tensors the pool keeps */
        int64_t c = 0;
        for (uint32_t d = 0; d < p->ndev_seen && d < VT_MAX_DEVICES; d++)
            if (p->dev[d].reserved_at > p->dev[d].at_kind[VT_MEM_TENSOR])
                c += p->dev[d].reserved_at - p->dev[d].at_kind[VT_MEM_TENSOR];
        v->cached = c;
    }
    /* a pool above CUDA whose blocks the trace does not hold (vt_pools.c):
     * no growth says nothing of what it holds, and growth of its chunks
     * names the line that made it grow; growth elsewhere is still a leak */
    vt_pool_finding pf;
    vt_pools_find(a, p, &pf);
    if (pf.pool && (!p->ngrowth || pf.lead_hidden)) {
        v->kind = REP_CANNOT_TELL;
        v->pool = pf.pool;
        v->segments_grown = pf.grown;
        vt_pools_advice(p, pf.pool, v->reason, sizeof(v->reason), v->command, sizeof(v->command));
        return;
    }
    const int segments = !v->tensor_level && (!strcmp(v->mode, "pytorch_caching") || !strcmp(v->mode, "pytorch_expandable"));
    if (segments) {
        /* what grew is the pool's segments: their growth says memory went
         * up, never which line holds it */
        for (size_t k = 0; k < p->ngrowth; k++) {
            const vt_unit *u = &p->units[p->growth_order[k]];
            if (u->segment || u->c10)
                v->segments_grown += u->grown;
        }
        if (p->ngrowth) {
            v->kind = REP_CANNOT_TELL;
            snprintf(v->reason, sizeof(v->reason),
                     "in PyTorch's %s caching allocator the trace holds segments, not tensors: a segment's call site is "
                     "the allocation that made the pool grow, not what holds the memory",
                     !strcmp(v->mode, "pytorch_expandable") ? "expandable-segments" : "default");
            /* `record` attaches its PyTorch shim; where it could not (the
             * trace's note says why), the other allocator is the way left */
            int shim_off = 0;
            for (uint32_t k = 0; k < p->nnotes; k++)
                if (p->notes[k] && strstr(p->notes[k], "PyTorch tensor events off"))
                    shim_off = 1;
            size_t n = (size_t)snprintf(v->command, sizeof(v->command), "%s",
                                        shim_off ? "vramtrace record --tensors --" : "vramtrace record --");
            for (uint32_t k = 0; k < p->argc && n < sizeof(v->command); k++)
                n += (size_t)snprintf(v->command + n, sizeof(v->command) - n, " %s", p->argv[k]);
            return;
        }
    }
    if (p->ngrowth) {
        const vt_unit *u = &p->units[p->growth_order[0]];
        v->kind = REP_LEAK;
        v->have_unit = 1;
        v->unit = p->growth_order[0];
        v->rate = u->growth_rate;
        v->per_step = p->steps ? (u->growth_per_step >= 0 ? u->growth_per_step : u->growth_rate * p->step_period_ns / 1e9)
                               : -1;
        v->confidence = u->growth_conf;
        return;
    }
    if (!segments) {
        /* a test run (the pytest plugin): no site grows over steps, but a
         * test that left memory live, still live at the view, is a leak
         * all the same: the one that left the most, by its largest site
         * (1 MiB at least: a first test's lazy set-up is not one) */
        const vt_test *t = NULL;
        for (size_t i = 0; i < p->ntests; i++) {
            const vt_test *x = &p->tests[i];
            if (x->leaked >= (1u << 20) && x->nsites && x->site[0].unit < p->nunits &&
                p->units[x->site[0].unit].at_bytes > 0 && (!t || x->leaked > t->leaked))
                t = x;
        }
        if (t) {
            v->kind = REP_LEAK;
            v->have_unit = 1;
            v->unit = t->site[0].unit;
            v->test = t;
            v->rate = 0;
            v->per_step = -1;
            v->confidence = 1;
            return;
        }
    }
    if (p->steps && p->steps_view < VT_GROWTH_MIN_STEPS) {
        /* fewer steps in the window than the growth test needs (a view,
         * --at, early in the loop; or a short run): no growth found says
         * nothing */
        v->kind = REP_CANNOT_TELL;
        v->early = 1;
        if (p->steps_view < p->steps)
            snprintf(v->reason, sizeof(v->reason),
                     "the view at %.3f s sees %" PRIu64 " of the %" PRIu64 " steps, and growth over steps needs %d: "
                     "the steps after it are not looked at; report without --at, or --at a time after the steps",
                     rep_rel_s(p, p->view_t), p->steps_view, p->steps, VT_GROWTH_MIN_STEPS);
        else
            snprintf(v->reason, sizeof(v->reason),
                     "the trace has %" PRIu64 " steps, and growth over steps needs %d: run more steps",
                     p->steps, VT_GROWTH_MIN_STEPS);
        return;
    }
    if (!p->complete && !p->nev[VT_EV_ALLOC] && !p->nev[VT_EV_VMM_CREATE]) {
        /* cut short with nothing allocated: what it did not see is no answer */
        v->kind = REP_CANNOT_TELL;
        v->blind = 1;
        snprintf(v->reason, sizeof(v->reason),
                 "the trace was cut short (no end record) before any allocation was recorded: what the process "
                 "allocated after the cut is not in it");
        return;
    }
    v->kind = REP_NO_LEAK;
}

/* ------------------------------------------------------------ OOM first */

int rep_oom_headline(const vt_proc *p, rep_oom_head *h)
{
    memset(h, 0, sizeof(*h));
    for (uint32_t i = 0; i < p->noom; i++)
        if (p->oom[i].error == 2) { /* CUDA_ERROR_OUT_OF_MEMORY */
            h->index = i;
            h->o = &p->oom[i];
            break;
        }
    if (!h->o)
        return 0;
    for (uint32_t w = 0; w < p->nwalks; w++)
        if (!p->walks[w].signal) {
            h->walk = &p->walks[w];
            break;
        }
    h->more = p->failed_oom > 0 ? p->failed_oom - 1 : 0;
    return 1;
}

const char *rep_probe_name(int k)
{
    static const char *const names[] = {"none",
#define VT_PROBE_NAME(N, n, w) #n,
                                        VT_PROBES(VT_PROBE_NAME)
#undef VT_PROBE_NAME
    };
    return k >= 0 && k < VT_PROBE__COUNT ? names[k] : "?";
}

const char *rep_probe_what(int k)
{
    static const char *const what[] = {"",
#define VT_PROBE_WHAT(N, n, w) w,
                                       VT_PROBES(VT_PROBE_WHAT)
#undef VT_PROBE_WHAT
    };
    return k >= 0 && k < VT_PROBE__COUNT ? what[k] : "";
}

/* ------------------------------------------------------------ a job */

const char *rep_proc_name(const vt_analysis *a, const vt_proc *p, char *buf, size_t len)
{
    if (!p->env_rank) {
        snprintf(buf, len, "pid %u", p->pid);
        return buf;
    }
    int dup = 0; /* the same rank twice: two jobs in one report */
    for (size_t i = 0; i < a->nprocs && !dup; i++)
        dup = a->procs[i] != p && a->procs[i]->env_rank && !strcmp(a->procs[i]->env_rank, p->env_rank);
    if (dup)
        snprintf(buf, len, "rank %s (pid %u)", p->env_rank, p->pid);
    else
        snprintf(buf, len, "rank %s", p->env_rank);
    return buf;
}

const char *rep_proc_label(const vt_analysis *a, const vt_proc *p, char *buf, size_t len)
{
    if (!p->env_rank)
        snprintf(buf, len, "pid %u%s%s", p->pid, p->host ? " on " : "", p->host ? p->host : "");
    else {
        (void)a;
        snprintf(buf, len, "rank %s (pid %u%s%s)", p->env_rank, p->pid, p->host ? " on " : "", p->host ? p->host : "");
    }
    return buf;
}

void rep_job_of(vt_analysis *a, rep_job *j)
{
    memset(j, 0, sizeof(*j));
    j->kind = REP_NO_LEAK;
    for (size_t i = 0; i < a->nprocs; i++) {
        rep_verdict v;
        rep_oom_head h;
        rep_verdict_of(a, a->procs[i], &v);
        if (v.kind == REP_LEAK) {
            j->kind = REP_LEAK;
            j->leaking++;
        } else if (v.kind == REP_CANNOT_TELL) {
            if (j->kind != REP_LEAK)
                j->kind = REP_CANNOT_TELL;
            j->cannot_tell++;
        }
        j->oom += (size_t)rep_oom_headline(a->procs[i], &h);
    }
}

/* "11 (SIGSEGV)" */
const char *rep_signal_text(int sig, char *buf, size_t len)
{
    static const char *const names[] = {NULL,     "SIGHUP",  "SIGINT",    "SIGQUIT", "SIGILL",  "SIGTRAP", "SIGABRT",
                                        "SIGBUS", "SIGFPE",  "SIGKILL",   "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE",
                                        "SIGALRM", "SIGTERM", "SIGSTKFLT", "SIGCHLD", "SIGCONT", "SIGSTOP", "SIGTSTP",
                                        "SIGTTIN", "SIGTTOU", "SIGURG",    "SIGXCPU", "SIGXFSZ", "SIGVTALRM", "SIGPROF",
                                        "SIGWINCH", "SIGIO",  "SIGPWR",    "SIGSYS"};
    if (sig > 0 && sig < (int)(sizeof(names) / sizeof(names[0])))
        snprintf(buf, len, "%d (%s)", sig, names[sig]);
    else
        snprintf(buf, len, "%d", sig);
    return buf;
}

/* Whether the process ended otherwise than by a normal exit: a signal, a
 * tracing error, or no End record. */
int rep_abnormal_end(const vt_proc *p)
{
    return !p->complete || p->end_reason != VT_END_NORMAL;
}

const char *rep_end_text(const vt_proc *p, char *buf, size_t len)
{
    char sb[32];
    if (!p->complete)
        snprintf(buf, len, "no End record (killed, or the file was cut)");
    else if (p->end_reason == VT_END_SIGNAL)
        snprintf(buf, len, "killed by signal %s", rep_signal_text(p->end_signal, sb, sizeof(sb)));
    else if (p->end_reason == VT_END_NORMAL)
        snprintf(buf, len, "normal exit");
    else
        snprintf(buf, len, "tracing error");
    return buf;
}
