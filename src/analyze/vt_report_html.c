/* vt_report_html.c - `vramtrace report --html` and `diff --html`: the page
 * of viewer/ (embedded at build time: vt_viewer_page) with its data: the
 * JSON report itself (the same model as the text and JSON renderings) and,
 * from a second replay through the consumer interface, per process the
 * timeline of each device (the series of ser_tab, each named once there
 * with the lane the page draws it in: live bytes per memory kind and
 * device-resident, PyTorch's reserved, the driver's used memory, pool
 * reserved and used: min and max per time bucket) and, per call site (the top VT_HTML_SITES by their highest live
 * bytes, the rest as one "other"), a histogram of its bytes by allocation
 * bucket and free bucket, from which the page computes what was live at
 * any time and what a time range left live.  Touches only the FILE. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "vt_error.h"
#include "vt_export_int.h"
#include "vt_grow.h"
#include "vt_page_pack.h"
#include "vt_report_int.h"

extern const unsigned char vt_viewer_page[];
extern const unsigned long vt_viewer_page_len;

#define VT_HTML_BUCKETS 1000
#define VT_HTML_SITES 150
#define VT_HTML_DEVS 8
/* With tensor events the pool's segments are reserved memory, not call
 * sites (the tensors inside them are): their blocks and every tensor's
 * go to two more histograms, from which the page draws the pool's cache
 * (reserved - allocated) at any time, as the report's peak does. */
#define HS_SEGS (VT_HTML_SITES + 1)
#define HS_TENSORS (VT_HTML_SITES + 2)
/* The timeline's series: one table, indexed by the series, that gives
 * each its key (the page's colour), the name its legend and tooltip show,
 * and its lane (the page's first chart, "main", or the driver's and the
 * other kinds' lane, "other": see lane_of).  The memory kinds first, in
 * vt_memkind order, then the series the replay adds. */
enum { SER_LIVE = VT_MEM__COUNT, SER_RESERVED, SER_DRIVER, SER_POOL_RES, SER_POOL_USED, NSER };

static const struct {
    const char *key, *name;
} ser_tab[] = {
    [VT_MEM_UNKNOWN] = {"unknown", "unknown kind"},
    [VT_MEM_DEVICE] = {"device", "cudaMalloc'd (device)"},
    [VT_MEM_DEVICE_STATIC] = {"device_static", "module globals"},
    [VT_MEM_MANAGED] = {"managed", "managed"},
    [VT_MEM_PINNED_HOST] = {"pinned_host", "pinned host"},
    [VT_MEM_ARRAY] = {"array", "CUDA arrays"},
    [VT_MEM_HOST_REGISTERED] = {"host_registered", "host registered"},
    [VT_MEM_TENSOR] = {"tensor", "PyTorch allocated"},
    [SER_LIVE] = {"live", "live on the GPU (traced)"},
    [SER_RESERVED] = {"reserved", "PyTorch reserved"},
    [SER_DRIVER] = {"driver_used", "driver used (context, workspaces, other processes)"},
    [SER_POOL_RES] = {"pool_reserved", "pool reserved"},
    [SER_POOL_USED] = {"pool_used", "pool used"},
};
_Static_assert(sizeof(ser_tab) / sizeof(ser_tab[0]) == NSER, "one name per series");

/* The first chart is what the verdict talks about: PyTorch's allocated and
 * reserved with its tensor events, else the traced live bytes; the rest
 * (the driver's used memory, pools, each kind) in a lane of its own. */
static const char *lane_of(int s, int tensor_level)
{
    if (s == VT_MEM_TENSOR || s == SER_RESERVED)
        return "main";
    return s == SER_LIVE && !tensor_level ? "main" : "other";
}

typedef struct {
    int64_t *mn, *mx, *ls; /* per bucket: min, max, last; INT64_MIN: no event in it */
    int used;
} hs_series;

typedef struct {
    uint64_t *key; /* ab << 16 | fb */
    int64_t *bytes;
    size_t n, cap, capb;
    vt_map idx; /* key + 1 -> index + 1 */
} hs_hist;

typedef struct {
    hs_series ser[VT_HTML_DEVS][NSER];
    uint64_t pool_res[VT_HTML_DEVS], pool_used[VT_HTML_DEVS];
    int32_t *site_of;  /* unit -> site index (VT_HTML_SITES = other, HS_SEGS = the
                        * pool's segments under tensor events), -1 none yet */
    uint8_t *is_tensor; /* unit -> a caching-allocator tensor (also counted in HS_TENSORS) */
    hs_hist hist[VT_HTML_SITES + 3];
    uint32_t site_unit[VT_HTML_SITES];
    uint32_t nsites;
    uint64_t bucket_ns;
    uint64_t t_hi; /* the latest event time so far: a late record draws from its arrival */
} hs_proc;

typedef struct {
    vt_xjob *j;
    hs_proc *procs;
    size_t nprocs;
    int err;
} hs;

static uint32_t hs_bucket(const hs_proc *q, const vt_proc *m, uint64_t t)
{
    uint64_t b = t > m->t0 ? (t - m->t0) / q->bucket_ns : 0;
    return b >= VT_HTML_BUCKETS ? VT_HTML_BUCKETS - 1 : (uint32_t)b;
}

static void hs_set(hs *h, hs_series *s, uint32_t b, int64_t v)
{
    if (!s->mn) {
        s->mn = malloc(VT_HTML_BUCKETS * sizeof(int64_t));
        s->mx = malloc(VT_HTML_BUCKETS * sizeof(int64_t));
        s->ls = malloc(VT_HTML_BUCKETS * sizeof(int64_t));
        if (!s->mn || !s->mx || !s->ls) {
            h->err = VT_ERR_NOMEM;
            return;
        }
        for (int k = 0; k < VT_HTML_BUCKETS; k++)
            s->mn[k] = s->mx[k] = s->ls[k] = INT64_MIN;
    }
    s->used = 1;
    if (s->mn[b] == INT64_MIN || v < s->mn[b])
        s->mn[b] = v;
    if (s->mx[b] == INT64_MIN || v > s->mx[b])
        s->mx[b] = v;
    s->ls[b] = v;
}

static void hs_add(hs *h, hs_hist *g, uint32_t ab, uint32_t fb, int64_t bytes)
{
    uint64_t key = (uint64_t)ab << 16 | fb;
    uint64_t *v = vt_map_get(&g->idx, key + 1);
    if (v) {
        g->bytes[*v - 1] += bytes;
        return;
    }
    if (VT_GROW(g->key, g->n, g->cap, 64) || VT_GROW(g->bytes, g->n, g->capb, 64) ||
        vt_map_put(&g->idx, key + 1, g->n + 1)) {
        h->err = VT_ERR_NOMEM;
        return;
    }
    g->key[g->n] = key;
    g->bytes[g->n++] = bytes;
}

static int unit_cmp_desc(const void *a, const void *b, void *ctx)
{
    const vt_proc *p = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (p->units[x].max_live != p->units[y].max_live)
        return p->units[x].max_live > p->units[y].max_live ? -1 : 1;
    return x < y ? -1 : x > y;
}

static int hs_init_proc(hs *h, unsigned i)
{
    hs_proc *q = &h->procs[i];
    const vt_proc *m = h->j->model->procs[i];
    uint64_t dur = m->t_last > m->t0 ? m->t_last - m->t0 : 1;
    q->bucket_ns = dur / VT_HTML_BUCKETS + 1;
    q->site_of = malloc((m->nunits ? m->nunits : 1) * sizeof(int32_t));
    q->is_tensor = calloc(m->nunits ? m->nunits : 1, 1);
    uint32_t *order = malloc((m->nunits ? m->nunits : 1) * sizeof(uint32_t));
    if (!q->site_of || !q->is_tensor || !order) {
        free(order);
        return VT_ERR_NOMEM;
    }
    for (size_t u = 0; u < m->nunits; u++) {
        order[u] = (uint32_t)u;
        q->site_of[u] = VT_HTML_SITES;
        if (m->tensor_units && m->units[u].segment && m->units[u].resident)
            q->site_of[u] = HS_SEGS;
        q->is_tensor[u] = m->tensor_units && m->units[u].kind == VT_MEM_TENSOR;
    }
    qsort_r(order, m->nunits, sizeof(uint32_t), unit_cmp_desc, (void *)m);
    for (size_t k = 0; k < m->nunits && q->nsites < VT_HTML_SITES; k++) {
        if (!m->units[order[k]].allocs || q->site_of[order[k]] == HS_SEGS)
            continue;
        q->site_unit[q->nsites] = order[k];
        q->site_of[order[k]] = (int32_t)q->nsites++;
    }
    free(order);
    return 0;
}

static int hs_on_event(void *ctx, const vt_replay_event *re)
{
    hs *h = ctx;
    if (h->err || re->proc >= h->nprocs)
        return h->err;
    hs_proc *q = &h->procs[re->proc];
    const vt_proc *m = h->j->model->procs[re->proc];
    if (!q->site_of) {
        int rc = hs_init_proc(h, re->proc);
        if (rc)
            return rc;
    }
    const vt_event *ev = re->ev;
    /* the levels after this event, at the stream's time: a record that
     * arrives late (an activity record: a module's globals) must not put
     * today's levels into an earlier bucket */
    if (ev->time_ns > q->t_hi)
        q->t_hi = ev->time_ns;
    uint32_t b = hs_bucket(q, m, q->t_hi);
    for (unsigned k = 0; k < re->nblocks; k++) {
        const vt_replay_block *bl = &re->blocks[k];
        if (bl->op == VT_BLOCK_END && bl->unit < m->nunits) {
            hs_add(h, &q->hist[q->site_of[bl->unit]], hs_bucket(q, m, bl->t_alloc), hs_bucket(q, m, bl->t),
                   (int64_t)bl->size);
            if (q->is_tensor[bl->unit])
                hs_add(h, &q->hist[HS_TENSORS], hs_bucket(q, m, bl->t_alloc), hs_bucket(q, m, bl->t), (int64_t)bl->size);
        }
    }
    if (re->nblocks && re->blocks[0].device < VT_HTML_DEVS) {
        uint32_t d = re->blocks[0].device;
        for (unsigned k = 0; k < VT_MEM__COUNT; k++)
            if (re->live_kind[k] || q->ser[d][k].used)
                hs_set(h, &q->ser[d][k], b, re->live_kind[k]);
        hs_set(h, &q->ser[d][SER_LIVE], b, re->live_device);
        if (re->reserved >= 0)
            hs_set(h, &q->ser[d][SER_RESERVED], b, re->reserved);
    }
    if (ev->type == VT_EV_MEMORY_USAGE && ev->u.memory_usage.device < VT_HTML_DEVS && ev->u.memory_usage.total) {
        const vt_ev_memory_usage *u = &ev->u.memory_usage;
        hs_set(h, &q->ser[u->device][SER_DRIVER], b,
               (int64_t)(u->total > u->free ? u->total - u->free : 0));
    }
    if (ev->type == VT_EV_POOL_USAGE && ev->u.pool_usage.device < VT_HTML_DEVS) {
        /* the sum over the device's pools of their last samples: kept as
         * the last sample of this pool replacing its previous one */
        const vt_ev_pool_usage *u = &ev->u.pool_usage;
        q->pool_res[u->device] = u->reserved_current; /* one pool per device in practice */
        q->pool_used[u->device] = u->used_current;
        hs_set(h, &q->ser[u->device][SER_POOL_RES], b, (int64_t)u->reserved_current);
        hs_set(h, &q->ser[u->device][SER_POOL_USED], b, (int64_t)u->used_current);
    }
    return h->err;
}

typedef struct {
    hs *h;
    unsigned i;
} hs_live;

static int hs_live_block(void *ctx, uint64_t addr, uint64_t size, uint64_t t, uint32_t unit)
{
    hs_live *l = ctx;
    (void)addr;
    hs_proc *q = &l->h->procs[l->i];
    const vt_proc *m = l->h->j->model->procs[l->i];
    if (unit < m->nunits && q->site_of) {
        hs_add(l->h, &q->hist[q->site_of[unit]], hs_bucket(q, m, t), VT_HTML_BUCKETS, (int64_t)size);
        if (q->is_tensor[unit])
            hs_add(l->h, &q->hist[HS_TENSORS], hs_bucket(q, m, t), VT_HTML_BUCKETS, (int64_t)size);
    }
    return l->h->err;
}

/* ---- JSON ---- */

/* A site's bytes live at the view, without what it allocated after the
 * view (the report's rows count that too, and say so; the device's
 * levels at the view do not) */
static int64_t view_bytes(const vt_unit *u)
{
    int64_t v = u->at_bytes - (u->late_bytes > 0 ? u->late_bytes : 0);
    return v > 0 ? v : 0;
}

static void json_hist(FILE *o, const hs_hist *g)
{
    fputc('[', o);
    for (size_t k = 0; k < g->n; k++)
        fprintf(o, "%s[%u,%u,%" PRId64 "]", k ? "," : "", (unsigned)(g->key[k] >> 16), (unsigned)(g->key[k] & 0xffff),
                g->bytes[k]);
    fputc(']', o);
}

static double rel_s(const vt_proc *p, uint64_t t) { return t > p->t0 ? (double)(t - p->t0) / 1e9 : 0.0; }

/* min and max per bucket; a bucket without an event holds the value the
 * previous one ended with */
static void json_series(FILE *o, const hs_series *s)
{
    for (int pass = 0; pass < 2; pass++) {
        fputs(pass ? ",\"max\":[" : "\"min\":[", o);
        int64_t last = 0;
        for (int k = 0; k < VT_HTML_BUCKETS; k++) {
            int64_t v = s->ls[k] == INT64_MIN ? last : pass ? s->mx[k] : s->mn[k];
            if (s->ls[k] != INT64_MIN)
                last = s->ls[k];
            fprintf(o, "%s%" PRId64, k ? "," : "", v);
        }
        fputc(']', o);
    }
}

static void json_frames(vt_xjob *j, const vt_proc *m, uint32_t stack, FILE *o)
{
    vt_xframe fr[VT_MAX_STACK];
    uint32_t n = vt_xjob_frames(j, m, stack, fr, VT_MAX_STACK);
    fputc('[', o);
    for (uint32_t k = 0; k < n; k++) {
        const vt_xframe *x = &fr[k];
        char fn[512];
        if (x->function)
            snprintf(fn, sizeof(fn), "%s", x->function);
        else if (x->module)
            snprintf(fn, sizeof(fn), "%s+0x%" PRIx64, strrchr(x->module, '/') ? strrchr(x->module, '/') + 1 : x->module,
                     x->offset);
        else
            snprintf(fn, sizeof(fn), "?");
        fputs(k ? ",[" : "[", o);
        vt_json_str(o, fn);
        fputc(',', o);
        vt_json_str(o, x->file ? x->file : (x->module ? x->module : ""));
        fprintf(o, ",%u,%d,%d]", x->line, x->python, x->internal);
    }
    fputc(']', o);
}

static void json_proc(hs *h, unsigned i, FILE *o)
{
    hs_proc *q = &h->procs[i];
    const vt_proc *m = h->j->model->procs[i];
    fprintf(o, "{\"duration_s\":%.9f,\"buckets\":%d,\"bucket_s\":%.9f,\"devices\":[", rel_s(m, m->t_last),
            VT_HTML_BUCKETS, (double)q->bucket_ns / 1e9);
    int first = 1;
    for (int d = 0; d < VT_HTML_DEVS; d++) {
        int any = 0;
        for (int s = 0; s < NSER; s++)
            any |= q->ser[d][s].used;
        if (!any)
            continue;
        fprintf(o, "%s{\"device\":%d,\"series\":[", first ? "" : ",", d);
        first = 0;
        int fs = 1;
        for (int s = 0; s < NSER; s++) {
            if (!q->ser[d][s].used)
                continue;
            fprintf(o, "%s{\"key\":\"%s\",\"name\":\"%s\",\"lane\":\"%s\",", fs ? "" : ",", ser_tab[s].key,
                    ser_tab[s].name, lane_of(s, m->tensor_units != 0));
            fs = 0;
            json_series(o, &q->ser[d][s]);
            fputc('}', o);
        }
        fprintf(o, "],\"peak_s\":%.9f,\"peak_bytes\":%" PRId64, m->dev[d].peak_t ? rel_s(m, m->dev[d].peak_t) : 0.0,
                m->dev[d].peak);
        if (m->tensor_units && m->dev[d].peak_kind[VT_MEM_TENSOR] > 0) /* PyTorch's allocated peak */
            fprintf(o, ",\"apeak_s\":%.9f,\"apeak_bytes\":%" PRId64, rel_s(m, m->dev[d].peak_kind_t[VT_MEM_TENSOR]),
                    m->dev[d].peak_kind[VT_MEM_TENSOR]);
        fputc('}', o);
    }
    /* each call site's exact bytes at its device's peak and at the view
     * (the model's, as in the report's tables); the rest summed as "other" */
    int64_t *pk = calloc(m->nunits ? 2 * (size_t)m->nunits : 1, sizeof(int64_t));
    int64_t *apk = pk ? pk + m->nunits : NULL; /* at PyTorch's allocated peak (tensors) */
    int64_t other_pk[VT_HTML_DEVS] = {0}, other_apk[VT_HTML_DEVS] = {0}, other_view = 0;
    for (uint32_t d = 0; pk && d < m->ndev_seen && d < VT_HTML_DEVS; d++) {
        vt_row *rows = NULL;
        size_t n = m->dev[d].peak > 0 ? rep_peak_rows(m, d, 0, &rows) : 0;
        for (size_t k = 0; k < n; k++)
            if (rows[k].unit < m->nunits)
                pk[rows[k].unit] = rows[k].bytes;
        free(rows);
        rows = NULL;
        n = m->tensor_units && m->dev[d].peak_kind[VT_MEM_TENSOR] > 0 ? rep_peak_rows(m, d, 1, &rows) : 0;
        for (size_t k = 0; k < n; k++)
            if (rows[k].unit < m->nunits)
                apk[rows[k].unit] = rows[k].bytes;
        free(rows);
    }
    for (size_t u = 0; pk && u < m->nunits; u++)
        if (q->site_of[u] == VT_HTML_SITES) {
            if (m->units[u].device < VT_HTML_DEVS) {
                other_pk[m->units[u].device] += pk[u];
                other_apk[m->units[u].device] += apk[u];
            }
            other_view += view_bytes(&m->units[u]);
        }
    fputs("],\"sites\":[", o);
    for (uint32_t s = 0; s <= q->nsites; s++) {
        const hs_hist *g = &q->hist[s < q->nsites ? s : VT_HTML_SITES];
        if (s == q->nsites && !g->n)
            break;
        fputs(s ? ",{" : "{", o);
        if (s < q->nsites) {
            const vt_unit *u = &m->units[q->site_unit[s]];
            char name[400];
            vt_xjob_site_name(h->j, m, u->stack, u->thread, name, sizeof(name));
            fputs("\"name\":", o);
            vt_json_str(o, name);
            fputs(",\"key\":", o);
            vt_json_str(o, vt_unit_key(h->j->model, (vt_proc *)m, q->site_unit[s]));
            fprintf(o, ",\"device\":%u,\"kind\":\"%s\",\"api\":\"%s\",\"growing\":%d,\"frames\":", u->device,
                    vt_memkind_name((vt_memkind)u->kind), vt_allocapi_name((vt_allocapi)u->api), u->growth_flag);
            json_frames(h->j, m, u->stack, o);
            fprintf(o, ",\"peak\":{\"%u\":%" PRId64 "},\"view\":%" PRId64, u->device, pk ? pk[q->site_unit[s]] : 0,
                    view_bytes(u));
            if (apk && apk[q->site_unit[s]])
                fprintf(o, ",\"apeak\":{\"%u\":%" PRId64 "}", u->device, apk[q->site_unit[s]]);
        } else {
            fputs("\"name\":\"(other call sites)\",\"key\":\"\",\"device\":-1,\"kind\":\"\",\"api\":\"\",\"growing\":0,"
                  "\"frames\":[[\"(other call sites)\",\"\",0,0,0]]",
                  o);
            fputs(",\"peak\":{", o);
            for (int d = 0, f = 1; d < VT_HTML_DEVS; d++)
                if (other_pk[d]) {
                    fprintf(o, "%s\"%d\":%" PRId64, f ? "" : ",", d, other_pk[d]);
                    f = 0;
                }
            fprintf(o, "},\"view\":%" PRId64, other_view);
            fputs(",\"apeak\":{", o);
            for (int d = 0, f = 1; d < VT_HTML_DEVS; d++)
                if (other_apk[d]) {
                    fprintf(o, "%s\"%d\":%" PRId64, f ? "" : ",", d, other_apk[d]);
                    f = 0;
                }
            fputc('}', o);
        }
        fputs(",\"hist\":", o);
        json_hist(o, g);
        fputc('}', o);
    }
    if (m->tensor_units) { /* the caching allocator's cached bytes: the rest of each device's peak */
        fputs(",{\"name\":\"(cached in PyTorch's pool: reserved, no tensor)\",\"key\":\"\",\"device\":-1,\"kind\":\"\","
              "\"api\":\"\",\"growing\":0,\"frames\":[[\"(cached in PyTorch's pool)\",\"\",0,0,0]],\"peak\":{",
              o);
        int64_t cv = 0;
        for (uint32_t d = 0, f = 1; d < m->ndev_seen && d < VT_HTML_DEVS; d++) {
            int64_t c = rep_peak_cached(m, d);
            if (c) {
                fprintf(o, "%s\"%u\":%" PRId64, f ? "" : ",", d, c);
                f = 0;
            }
            if (m->dev[d].reserved_at > m->dev[d].at_kind[VT_MEM_TENSOR])
                cv += m->dev[d].reserved_at - m->dev[d].at_kind[VT_MEM_TENSOR];
        }
        /* at any time: its segments' bytes less its tensors' (the page's
         * L.liveAt of each, never below 0) */
        fprintf(o, "},\"view\":%" PRId64 ",\"cached\":1,\"hist\":", cv);
        json_hist(o, &q->hist[HS_SEGS]);
        fputs(",\"tensors_hist\":", o);
        json_hist(o, &q->hist[HS_TENSORS]);
        fputc('}', o);
    }
    free(pk);
    fputs("],\"steps\":[", o);
    if (m->step_occ)
        for (uint32_t k = 0; k < m->step_occ->n; k++)
            fprintf(o, "%s%.9f", k ? "," : "", rel_s(m, m->step_occ->t[k]));
    fprintf(o, "],\"view_s\":%.9f,\"ooms\":[", m->view_t ? rel_s(m, m->view_t) : rel_s(m, m->t_last));
    for (uint32_t k = 0; k < m->noom && k < VT_MAX_OOM_DETAIL; k++)
        fprintf(o, "%s{\"t_s\":%.9f,\"bytes\":%" PRIu64 ",\"device\":%u}", k ? "," : "", rel_s(m, m->oom[k].t_first),
                m->oom[k].size, m->oom[k].device);
    fputs("]}", o);
}

static int write_page(FILE *out, const char *data, size_t n)
{
    static const char mark[] = "/*@VT_DATA@*/";
    const char *page = (const char *)vt_viewer_page;
    const char *at = memmem(page, vt_viewer_page_len, mark, sizeof(mark) - 1);
    if (!at)
        return VT_ERR_INVALID;
    fwrite(page, 1, (size_t)(at - page), out);
    int rc = vt_page_pack(data, n, out);
    if (rc)
        return rc;
    const char *rest = at + sizeof(mark) - 1;
    fwrite(rest, 1, vt_viewer_page_len - (size_t)(rest - page), out);
    return fflush(out) || ferror(out) ? VT_ERR_IO : 0;
}

int vt_report_html(vt_analysis *a, char *const *inputs, int ninputs, FILE *out)
{
    vt_export_config cfg;
    vt_export_config_default(&cfg);
    cfg.analysis = a->cfg;
    vt_xjob j = {.cfg = &cfg, .model = a, .inputs = inputs, .ninputs = ninputs};
    hs h = {.j = &j, .nprocs = a->nprocs};
    h.procs = calloc(a->nprocs ? a->nprocs : 1, sizeof(hs_proc));
    if (!h.procs)
        return VT_ERR_NOMEM;
    int rc = vt_xjob_replay(&j, hs_on_event, &h);
    if (!rc)
        rc = h.err;
    for (unsigned i = 0; i < h.nprocs && !rc; i++) {
        if (!h.procs[i].site_of && (rc = hs_init_proc(&h, i)))
            break;
        hs_live l = {&h, i};
        if (i < j.live->nprocs)
            rc = vt_proc_live_blocks(j.live->procs[i], hs_live_block, &l);
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *m = rc ? NULL : open_memstream(&buf, &len);
    if (!rc && !m)
        rc = VT_ERR_NOMEM;
    if (!rc) {
        fputs("{\"VT_REPORT\":", m);
        rc = vt_report_json(a, m);
        fputs(",\n\"VT_SERIES\":{\"processes\":[", m);
        for (unsigned i = 0; i < h.nprocs; i++) {
            if (i)
                fputc(',', m);
            json_proc(&h, i, m);
        }
        fputs("]}}\n", m);
        if (fclose(m))
            rc = VT_ERR_NOMEM;
        m = NULL;
    }
    if (!rc)
        rc = write_page(out, buf, len);
    free(buf);
    for (size_t i = 0; i < h.nprocs; i++) {
        hs_proc *q = &h.procs[i];
        for (int d = 0; d < VT_HTML_DEVS; d++)
            for (int s = 0; s < NSER; s++) {
                free(q->ser[d][s].mn);
                free(q->ser[d][s].mx);
                free(q->ser[d][s].ls);
            }
        for (int s = 0; s <= HS_TENSORS; s++) {
            free(q->hist[s].key);
            free(q->hist[s].bytes);
            vt_map_free(&q->hist[s].idx);
        }
        free(q->site_of);
        free(q->is_tensor);
    }
    free(h.procs);
    vt_analysis_free(j.live);
    return rc;
}

int vt_diff_html(vt_analysis *a, vt_analysis *b, FILE *out)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return VT_ERR_NOMEM;
    fputs("{\"VT_DIFF\":", m);
    int rc = vt_diff_json(a, b, m);
    fputs("}\n", m);
    if (fclose(m) && !rc)
        rc = VT_ERR_NOMEM;
    if (!rc)
        rc = write_page(out, buf, len);
    free(buf);
    return rc;
}
