/* vt_export.c - `vramtrace export`'s driver and its timeline model.
 *
 * Pass 1 is the report's analysis (the model: view time, peaks, growing
 * call sites, steps, failed allocations).  Pass 2 replays the same inputs
 * again with a consumer; for Perfetto and Chrome that consumer is the
 * timeline below, which turns each event into tracks, slices, counters
 * and instants of a vt_xsink (the format's writer), and at the end adds
 * the blocks still live, the steps, the view and the flamegraphs of live
 * bytes at each device's peak and at the view.  Memory: per process its
 * tracks, counters, kernel lanes and call-site lanes; the blocks still live
 * are read from the replay's own tables.  Touches: the inputs (read), the
 * output FILE, stderr (read errors, as `report` prints them). */
#define _GNU_SOURCE
#include "vt_escape.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vt_error.h"
#include "vt_export_int.h"
#include "vt_grow.h"
#include "vt_report_int.h"

void vt_export_config_default(vt_export_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    vt_analysis_config_default(&cfg->analysis);
    cfg->max_points = VT_EXPORT_MAX_POINTS_DEFAULT;
    cfg->max_bytes = VT_EXPORT_CHROME_MAX_BYTES_DEFAULT;
}

/* ------------------------------------------------------------ helpers */

int vt_xjob_in_window(const vt_xjob *j, const vt_proc *p, uint64_t t)
{
    if (j->cfg->have_start && t < p->t0 + j->cfg->start_ns)
        return 0;
    if (j->cfg->have_end && t > p->t0 + j->cfg->end_ns)
        return 0;
    return 1;
}

/* names escaped (vt_escape.h): the label goes to stderr and into the
 * exports' process names */
void vt_xjob_label(const vt_proc *p, char *buf, size_t len)
{
    char prog[256], rank[64], host[256];
    snprintf(buf, len, "%s (rank %s, host %s, pid %" PRIu32 ")", vt_esc_text_buf(p->program ? p->program : "?", prog, sizeof(prog)),
             vt_esc_text_buf(p->env_rank ? p->env_rank : "0", rank, sizeof(rank)),
             vt_esc_text_buf(p->host ? p->host : "?", host, sizeof(host)), p->pid);
}

uint32_t vt_xjob_frames(vt_xjob *j, const vt_proc *p, uint32_t stack, vt_xframe *out, uint32_t max)
{
    int user = -1;
    return stack ? vt_site_frames(j->model, p, stack, out, max, &user) : 0;
}

/* as the text report heads the site (rep_site_headline) */
void vt_xjob_site_name(vt_xjob *j, const vt_proc *p, uint32_t stack, uint32_t thread, char *buf, size_t len)
{
    rep_site_headline(j->model, p, stack, thread, 0, buf, len);
}

/* ------------------------------------------------------------ the timeline */

#define XT_KERNEL_LANES 4
#define XT_UNIT_LANES 64
#define XT_NVTX_LANES 8
#define XT_MAX_THREADS 256

typedef struct { /* decimated counter: min, max and last of each bucket */
    uint64_t track;
    uint64_t bucket, tmin, tmax, tlast;
    int64_t min, max, last, sent;
    int have, have_sent;
} xt_counter;

typedef struct {
    uint64_t key; /* device << 32 | stream */
    uint64_t end[XT_KERNEL_LANES];
    uint64_t track[XT_KERNEL_LANES];
} xt_stream;

typedef struct {
    uint64_t *end, *track; /* lanes: the last slice's end, the lane's track */
    size_t nlanes, caplanes, caplanes2;
    uint64_t live_track; /* the blocks still live at the end, nested */
    char *site;          /* its call site's name (made once) */
} xt_unit;

typedef struct {
    uint32_t id, tid;
    char *name;
    uint64_t track;
    uint32_t depth; /* open NVTX push ranges */
} xt_thread;

typedef struct {
    uint64_t t, id;
    char *msg;
} xt_range;

#define XT_LAUNCH_CACHE 64
typedef struct { /* a launch signature's grid and block, printed once */
    int valid;
    uint32_t id;
    char grid[40], block[40];
} xt_launch;

typedef struct { /* one process of the timeline */
    int declared;
    uint64_t track;        /* the process */
    uint64_t events_track; /* instants: failed allocations, the view */
    uint64_t bucket_ns;    /* counter bucket width */
    xt_counter *ctr;
    size_t nctr, capctr;
    vt_map ctr_map;        /* key -> index + 1 */
    xt_stream *streams;
    size_t nstreams, capstreams;
    xt_unit *units;
    size_t nunits;         /* = model's nunits */
    uint64_t alloc_parent[8]; /* per device (first 8): the allocations group */
    xt_thread *threads;
    size_t nthreads, capthreads;
    xt_range *ranges;
    size_t nranges, capranges;
    uint64_t range_end[XT_NVTX_LANES], range_track[XT_NVTX_LANES];
    uint64_t drv_used[64]; /* last driver used bytes per device (+1; 0 none) */
    uint64_t drv_free[64];
    uint32_t nfailed;
    uint64_t dropped_slices;
    xt_launch launch[XT_LAUNCH_CACHE];
    uint32_t live_ctr[8][VT_MEM__COUNT + 1]; /* the live-bytes counters of the first 8 devices: index + 1 */
} xt_proc;

typedef struct {
    vt_xjob *j;
    vt_xsink *s;
    xt_proc *procs;
    size_t nprocs;
    uint64_t next_track;
    uint64_t next_async;
    int err;
} xt;

static uint64_t xt_new_track(xt *x) { return ++x->next_track; }

static int xt_declare_process(xt *x, unsigned i)
{
    xt_proc *q = &x->procs[i];
    if (q->declared)
        return 0;
    const vt_proc *p = x->j->model->procs[i];
    q->declared = 1;
    q->track = xt_new_track(x);
    char label[600];
    vt_xjob_label(p, label, sizeof(label));
    int rc = x->s->process(x->s->ctx, q->track, x->j->upid_pid[i], p->program ? p->program : "?", label);
    if (rc)
        return rc;
    q->events_track = xt_new_track(x);
    rc = x->s->track(x->s->ctx, q->events_track, q->track, VT_XT_SLICES, "events: failed allocations, the view",
                     NULL, 0, 0);
    uint64_t dur = p->t_last > p->t0 ? p->t_last - p->t0 : 1;
    uint64_t buckets = x->j->cfg->max_points / 3 ? x->j->cfg->max_points / 3 : 1;
    q->bucket_ns = dur / buckets + 1;
    return rc;
}

/* ---- counters ---- */

static int xt_counter_emit(xt *x, xt_counter *c, uint64_t t, int64_t v)
{
    if (c->have_sent && c->sent == v)
        return 0;
    c->sent = v;
    c->have_sent = 1;
    return x->s->counter(x->s->ctx, c->track, t, v);
}

static int xt_counter_flush(xt *x, xt_counter *c)
{
    if (!c->have)
        return 0;
    int rc = 0;
    if (c->tmin <= c->tmax) {
        rc = xt_counter_emit(x, c, c->tmin, c->min);
        if (!rc && c->tmax != c->tmin)
            rc = xt_counter_emit(x, c, c->tmax, c->max);
    } else {
        rc = xt_counter_emit(x, c, c->tmax, c->max);
        if (!rc)
            rc = xt_counter_emit(x, c, c->tmin, c->min);
    }
    if (!rc && c->tlast > c->tmin && c->tlast > c->tmax)
        rc = xt_counter_emit(x, c, c->tlast, c->last);
    c->have = 0;
    return rc;
}

/* The counter of (key) in process i, declared on first use. */
static xt_counter *xt_counter_get(xt *x, unsigned i, uint64_t key, const char *name, const char *share)
{
    xt_proc *q = &x->procs[i];
    uint64_t *v = vt_map_get(&q->ctr_map, key);
    if (v)
        return &q->ctr[*v - 1];
    if (VT_GROW(q->ctr, q->nctr, q->capctr, 16) || vt_map_put(&q->ctr_map, key, q->nctr + 1)) {
        x->err = VT_ERR_NOMEM;
        return NULL;
    }
    xt_counter *c = &q->ctr[q->nctr++];
    memset(c, 0, sizeof(*c));
    c->track = xt_new_track(x);
    int rc = x->s->track(x->s->ctx, c->track, q->track, VT_XT_COUNTER, name, share, 0, (int)q->nctr);
    if (rc)
        x->err = rc;
    return c;
}

static void xt_counter_set(xt *x, unsigned i, xt_counter *c, uint64_t t, int64_t v)
{
    if (!c || x->err)
        return;
    const xt_proc *q = &x->procs[i];
    const vt_proc *p = x->j->model->procs[i];
    uint64_t b = (t > p->t0 ? t - p->t0 : 0) / q->bucket_ns;
    uint64_t wt = vt_xjob_time(p, t);
    if (c->have && wt < c->tlast) {
        /* a record that arrives late (an activity record: a module's
         * globals) changes the level from its arrival, not back in time */
        b = c->bucket;
        wt = c->tlast + 1; /* after the value it follows */
    }
    if (c->have && b != c->bucket) {
        int rc = xt_counter_flush(x, c);
        if (rc)
            x->err = rc;
    }
    if (!c->have) {
        c->have = 1;
        c->bucket = b;
        c->min = c->max = v;
        c->tmin = c->tmax = wt;
    } else {
        if (v < c->min) {
            c->min = v;
            c->tmin = wt;
        }
        if (v > c->max) {
            c->max = v;
            c->tmax = wt;
        }
    }
    c->last = v;
    c->tlast = wt;
}

static const char *kind_label(unsigned k)
{
    switch (k) {
    case VT_MEM_DEVICE: return "device";
    case VT_MEM_DEVICE_STATIC: return "module globals";
    case VT_MEM_MANAGED: return "managed";
    case VT_MEM_PINNED_HOST: return "pinned host";
    case VT_MEM_ARRAY: return "arrays";
    case VT_MEM_HOST_REGISTERED: return "host registered";
    case VT_MEM_TENSOR: return "PyTorch allocated (tensors)";
    default: return "unknown kind";
    }
}

/* The counter of key if declared, else NULL. */
static xt_counter *xt_counter_find(xt *x, unsigned i, uint64_t key)
{
    uint64_t *v = vt_map_get(&x->procs[i].ctr_map, key);
    return v ? &x->procs[i].ctr[*v - 1] : NULL;
}

/* Every live-bytes counter of device dev after an event on it: each is
 * set, changed or not, since a counter's time bucket closes only when it is
 * set (xt_counter_set); unchanged values are not written twice. */
static void xt_live_counters(xt *x, unsigned i, uint32_t dev, const int64_t *live, int64_t live_dev, int64_t reserved,
                             uint64_t t)
{
    char name[96], share[32];
    if (reserved >= 0) { /* PyTorch's caching allocator: reserved beside allocated (its tensors' kind) */
        snprintf(share, sizeof(share), "gpu%u", dev);
        snprintf(name, sizeof(name), "GPU %u live bytes: PyTorch reserved (segments)", dev);
        xt_counter_set(x, i, xt_counter_get(x, i, 7ull << 60 | dev, name, share), t, reserved);
    }
    for (unsigned k = 0; k <= VT_MEM__COUNT; k++) {
        const int all = k == VT_MEM__COUNT; /* the device-resident total */
        uint64_t key = all ? 2ull << 60 | dev : 1ull << 60 | (uint64_t)dev << 8 | k;
        int64_t v = all ? live_dev : live[k];
        uint32_t *ci = dev < 8 ? &x->procs[i].live_ctr[dev][k] : NULL;
        xt_counter *c = ci && *ci ? &x->procs[i].ctr[*ci - 1] : xt_counter_find(x, i, key);
        if (!c) {
            if (!v && !all)
                continue;
            snprintf(share, sizeof(share), "gpu%u", dev);
            if (all)
                snprintf(name, sizeof(name), "GPU %u live bytes: device-resident", dev);
            else
                snprintf(name, sizeof(name), "GPU %u live bytes: %s", dev, kind_label(k));
            c = xt_counter_get(x, i, key, name, share);
        }
        if (c && ci)
            *ci = (uint32_t)(c - x->procs[i].ctr) + 1;
        xt_counter_set(x, i, c, t, v);
    }
}

/* ---- lanes ---- */

static uint64_t xt_lane_track(xt *x, unsigned i, uint64_t *slot, const char *name, uint64_t parent, int order)
{
    if (!*slot) {
        *slot = xt_new_track(x);
        int rc = x->s->track(x->s->ctx, *slot, parent ? parent : x->procs[i].track, VT_XT_SLICES, name, NULL, 0,
                             order);
        if (rc)
            x->err = rc;
    }
    return *slot;
}

/* The lane of [t0, t1] among n lanes whose last slice ended at end[k]: in
 * end order (t1 never below an earlier t1), a lane is free when its last
 * end is at or before t0.  -1 when all are taken. */
static int xt_lane(uint64_t *end, int n, uint64_t t0, uint64_t t1)
{
    for (int k = 0; k < n; k++)
        if (end[k] <= t0 || !end[k]) {
            end[k] = t1;
            return k;
        }
    return -1;
}

/* ---- events ---- */

static xt_thread *xt_thread_of(xt *x, unsigned i, uint32_t thread, uint32_t tid)
{
    xt_proc *q = &x->procs[i];
    for (size_t k = 0; k < q->nthreads; k++)
        if (q->threads[k].id == thread)
            return &q->threads[k];
    if (q->nthreads >= XT_MAX_THREADS || VT_GROW(q->threads, q->nthreads, q->capthreads, 8))
        return NULL;
    xt_thread *t = &q->threads[q->nthreads++];
    memset(t, 0, sizeof(*t));
    t->id = thread;
    t->tid = tid;
    return t;
}

static uint64_t xt_thread_track(xt *x, unsigned i, xt_thread *t)
{
    if (!t->track) {
        t->track = xt_new_track(x);
        char name[200];
        snprintf(name, sizeof(name), "%s %u", t->name ? t->name : "thread", t->tid);
        int rc = x->s->track(x->s->ctx, t->track, x->procs[i].track, VT_XT_THREAD, name, NULL, t->tid, 0);
        if (rc)
            x->err = rc;
    }
    return t->track;
}

static void xt_kernel(xt *x, unsigned i, const vt_proc *p, const vt_ev_kernel *k, uint64_t t)
{
    xt_proc *q = &x->procs[i];
    uint64_t key = (uint64_t)k->device << 32 | k->stream;
    xt_stream *s = NULL;
    for (size_t n = 0; n < q->nstreams; n++)
        if (q->streams[n].key == key) {
            s = &q->streams[n];
            break;
        }
    if (!s) {
        if (VT_GROW(q->streams, q->nstreams, q->capstreams, 8)) {
            x->err = VT_ERR_NOMEM;
            return;
        }
        s = &q->streams[q->nstreams++];
        memset(s, 0, sizeof(*s));
        s->key = key;
    }
    uint64_t t0 = vt_xjob_time(p, t), t1 = t0 + (k->duration_ns ? k->duration_ns : 1);
    int lane = xt_lane(s->end, XT_KERNEL_LANES, t0, t1);
    if (lane < 0) { /* more than 4 kernels at once on one stream: the last lane */
        lane = XT_KERNEL_LANES - 1;
        q->dropped_slices++;
        return;
    }
    if (!s->track[lane]) {
        char name[96];
        if (lane)
            snprintf(name, sizeof(name), "GPU %u stream %u (overlap %d)", k->device, k->stream, lane);
        else
            snprintf(name, sizeof(name), "GPU %u stream %u", k->device, k->stream);
        xt_lane_track(x, i, &s->track[lane], name, 0, 100 + (int)(key & 0xffff));
    }
    uint64_t tr = s->track[lane];
    xt_launch *L = &q->launch[k->launch_id % XT_LAUNCH_CACHE];
    if (!L->valid || L->id != k->launch_id) {
        L->valid = 1;
        L->id = k->launch_id;
        snprintf(L->grid, sizeof(L->grid), "%u,%u,%u", k->grid[0], k->grid[1], k->grid[2]);
        snprintf(L->block, sizeof(L->block), "%u,%u,%u", k->block[0], k->block[1], k->block[2]);
    }
    vt_xarg a[4] = {VT_XARG_S("grid", L->grid), VT_XARG_S("block", L->block),
                    VT_XARG_I("shared_memory", k->shared_memory), VT_XARG_I("correlation", k->corr)};
    int rc = x->s->slice(x->s->ctx, tr, t0, t1, k->name ? k->name : "kernel", 0, 0, a, 4);
    if (rc)
        x->err = rc;
}

static int xt_shown(const xt *x, const vt_proc *m, uint32_t unit, uint64_t t_alloc, uint64_t t_end, int live_at_end)
{
    if (x->j->cfg->allocations)
        return 1;
    if (unit < m->nunits && m->units[unit].growth_flag)
        return 1;
    if (t_alloc <= m->view_t && (live_at_end || t_end > m->view_t))
        return 1;
    return 0;
}

static void xt_block_slice(xt *x, unsigned i, const vt_replay_block *b, uint64_t t_end, int live_at_end)
{
    xt_proc *q = &x->procs[i];
    const vt_proc *m = x->j->model->procs[i];
    if (!xt_shown(x, m, b->unit, b->t_alloc, t_end, live_at_end))
        return;
    if (b->unit >= q->nunits)
        return;
    uint64_t a0 = b->t_alloc, a1 = t_end;
    if (x->j->cfg->have_start && a1 < m->t0 + x->j->cfg->start_ns)
        return;
    if (x->j->cfg->have_end && a0 > m->t0 + x->j->cfg->end_ns)
        return;
    uint64_t t0 = vt_xjob_time(m, a0), t1 = vt_xjob_time(m, a1);
    if (t1 <= t0)
        t1 = t0 + 1;
    xt_unit *u = &q->units[b->unit];
    char name[520];
    if (!u->site) {
        char s[400];
        vt_xjob_site_name(x->j, m, b->stack, b->unit < m->nunits ? m->units[b->unit].thread : 0, s, sizeof(s));
        if (vt_budget_take(x->j->model->budget, strlen(s) + 1 + 16)) {
            x->err = VT_ERR_LIMIT;
            return;
        }
        if (!(u->site = strdup(s))) {
            x->err = VT_ERR_NOMEM;
            return;
        }
    }
    const char *site = u->site;
    uint32_t dev = b->device < 8 ? b->device : 7;
    char gname[64];
    snprintf(gname, sizeof(gname), "GPU %u allocations (call sites)", b->device);
    uint64_t parent = xt_lane_track(x, i, &q->alloc_parent[dev], gname, 0, 50 + (int)dev);
    uint64_t tr;
    if (live_at_end) {
        snprintf(name, sizeof(name), "%s (live at the end)", site);
        tr = xt_lane_track(x, i, &u->live_track, name, parent, (int)b->unit * 16 + 15);
    } else {
        int lane = xt_lane(u->end, (int)u->nlanes, t0, t1);
        if (lane < 0 && u->nlanes < XT_UNIT_LANES) { /* one more lane */
            if (VT_GROW(u->end, u->nlanes, u->caplanes, 4) || VT_GROW(u->track, u->nlanes, u->caplanes2, 4)) {
                x->err = VT_ERR_NOMEM;
                return;
            }
            u->end[u->nlanes] = t1;
            u->track[u->nlanes] = 0;
            lane = (int)u->nlanes++;
        }
        if (lane < 0) {
            q->dropped_slices++;
            return;
        }
        if (lane)
            snprintf(name, sizeof(name), "%s (overlap %d)", site, lane);
        else
            snprintf(name, sizeof(name), "%s", site);
        tr = xt_lane_track(x, i, &u->track[lane], name, parent, (int)b->unit * 16 + lane);
    }
    char sz[32];
    rep_bytes(sz, (double)b->size);
    snprintf(name, sizeof(name), "%s %s", sz, site);
    char addr[24];
    snprintf(addr, sizeof(addr), "0x%" PRIx64, b->address);
    vt_xarg a[4] = {VT_XARG_I("bytes", b->size), VT_XARG_S("address", addr),
                    VT_XARG_S("api", vt_allocapi_name((vt_allocapi)b->api)),
                    VT_XARG_S("kind", vt_memkind_name((vt_memkind)b->kind))};
    int rc = x->s->slice(x->s->ctx, tr, t0, t1, name, 1, ++x->next_async, a, 4);
    if (rc)
        x->err = rc;
}

static void xt_failed(xt *x, unsigned i, const vt_proc *m, const vt_ev_alloc_failed *e, uint64_t t)
{
    xt_proc *q = &x->procs[i];
    char sz[32], name[200];
    rep_bytes(sz, (double)e->size);
    snprintf(name, sizeof(name), "failed allocation: %s (%s)", sz, e->error_name ? e->error_name : "?");
    vt_xarg a[12];
    int n = 0;
    a[n++] = VT_XARG_I("requested_bytes", e->size);
    a[n++] = VT_XARG_S("error", e->error_name ? e->error_name : "?");
    a[n++] = VT_XARG_I("device", e->device);
    if (e->device < 64 && q->drv_free[e->device])
        a[n++] = VT_XARG_I("device_free_bytes", q->drv_free[e->device] - 1);
    char holders[VT_OOM_TOP][480];
    uint32_t k = q->nfailed++; /* the k-th failed call: its request's description (none for a probe) */
    if (k < VT_FAIL_MAP && m->fail_detail[k] && m->fail_detail[k] <= m->noom) {
        const vt_oom *o = &m->oom[m->fail_detail[k] - 1];
        for (uint32_t h = 0; h < o->ntop && h < VT_OOM_TOP; h++) {
            char site[400], b[32];
            const vt_unit *u = &m->units[o->top_unit[h]];
            vt_xjob_site_name(x->j, m, u->stack, u->thread, site, sizeof(site));
            rep_bytes(b, (double)o->top_bytes[h]);
            snprintf(holders[h], sizeof(holders[h]), "%s in %" PRId64 " blocks at %s", b, o->top_count[h], site);
            static const char *keys[VT_OOM_TOP] = {"holder_1", "holder_2", "holder_3", "holder_4", "holder_5"};
            a[n++] = VT_XARG_S(keys[h], holders[h]);
        }
    }
    int rc = x->s->instant(x->s->ctx, q->events_track, vt_xjob_time(m, t), name, a, n);
    if (rc)
        x->err = rc;
}

static void xt_nvtx(xt *x, unsigned i, const vt_proc *m, const vt_ev_nvtx *e, uint64_t t)
{
    xt_proc *q = &x->procs[i];
    uint64_t wt = vt_xjob_time(m, t);
    const char *msg = e->message ? e->message : "?";
    if (e->op == VT_NVTX_START) {
        if (VT_GROW(q->ranges, q->nranges, q->capranges, 8))
            return;
        q->ranges[q->nranges++] = (xt_range){t, e->range_id, strdup(msg)};
        return;
    }
    if (e->op == VT_NVTX_END) {
        for (size_t k = 0; k < q->nranges; k++) {
            if (q->ranges[k].id != e->range_id)
                continue;
            xt_range r = q->ranges[k];
            q->ranges[k] = q->ranges[--q->nranges];
            uint64_t t0 = vt_xjob_time(m, r.t);
            int lane = xt_lane(q->range_end, XT_NVTX_LANES, t0, wt);
            if (lane >= 0) {
                char name[64];
                snprintf(name, sizeof(name), lane ? "NVTX ranges (overlap %d)" : "NVTX ranges", lane);
                uint64_t tr = xt_lane_track(x, i, &q->range_track[lane], name, 0, 40 + lane);
                int rc = x->s->slice(x->s->ctx, tr, t0, wt > t0 ? wt : t0 + 1, r.msg ? r.msg : "?", 0, 0, NULL, 0);
                if (rc)
                    x->err = rc;
            } else {
                q->dropped_slices++;
            }
            free(r.msg);
            return;
        }
        return;
    }
    xt_thread *th = xt_thread_of(x, i, e->site.thread, e->site.tid);
    if (!th)
        return;
    uint64_t tr = xt_thread_track(x, i, th);
    int rc = 0;
    if (e->op == VT_NVTX_PUSH) {
        th->depth++;
        rc = x->s->begin(x->s->ctx, tr, wt, msg, NULL, 0);
    } else if (e->op == VT_NVTX_POP) {
        if (th->depth) {
            th->depth--;
            rc = x->s->end(x->s->ctx, tr, wt);
        }
    } else {
        rc = x->s->instant(x->s->ctx, tr, wt, msg, NULL, 0);
    }
    if (rc)
        x->err = rc;
}

static int xt_on_event(void *ctx, const vt_replay_event *re)
{
    xt *x = ctx;
    if (x->err)
        return x->err;
    const unsigned i = re->proc;
    if (i >= x->nprocs)
        return 0;
    const vt_event *ev = re->ev;
    const vt_proc *m = x->j->model->procs[i];
    xt_proc *q = &x->procs[i];
    if (!q->declared) {
        if (ev->type == VT_EV_HEADER || ev->type == VT_EV_SYNC || !m->have_t0)
            return 0; /* the model's header and clock pair come first */
        int rc = xt_declare_process(x, i);
        if (rc)
            return rc;
        if (vt_budget_take(x->j->model->budget, (m->nunits ? m->nunits : 1) * sizeof(xt_unit)))
            return VT_ERR_LIMIT;
        q->units = calloc(m->nunits ? m->nunits : 1, sizeof(xt_unit));
        if (!q->units)
            return VT_ERR_NOMEM;
        q->nunits = m->nunits;
    }
    const uint64_t t = ev->time_ns;
    /* blocks that ended: their slices (whole lives, clipped to the window) */
    for (unsigned b = 0; b < re->nblocks; b++)
        if (re->blocks[b].op == VT_BLOCK_END)
            xt_block_slice(x, i, &re->blocks[b], re->blocks[b].t, 0);
    if (!vt_xjob_in_window(x->j, m, t) && ev->type != VT_EV_THREAD)
        return x->err;
    switch (ev->type) {
    case VT_EV_THREAD: {
        xt_thread *th = xt_thread_of(x, i, ev->u.thread.id, ev->u.thread.tid);
        if (th && !th->name && ev->u.thread.name)
            th->name = strdup(ev->u.thread.name);
        break;
    }
    case VT_EV_KERNEL:
        xt_kernel(x, i, m, &ev->u.kernel, t);
        break;
    case VT_EV_ALLOC_FAILED:
        xt_failed(x, i, m, &ev->u.alloc_failed, t);
        break;
    case VT_EV_NVTX:
        xt_nvtx(x, i, m, &ev->u.nvtx, t);
        break;
    case VT_EV_MEMORY_USAGE: {
        const vt_ev_memory_usage *u = &ev->u.memory_usage;
        if (u->device >= 64 || !u->total)
            break;
        char name[96], share[32];
        snprintf(share, sizeof(share), "gpu%u", u->device);
        uint64_t used = u->total > u->free ? u->total - u->free : 0;
        q->drv_used[u->device] = used + 1;
        q->drv_free[u->device] = u->free + 1;
        snprintf(name, sizeof(name), "GPU %u driver used (nvidia-smi)", u->device);
        xt_counter_set(x, i, xt_counter_get(x, i, 3ull << 60 | u->device, name, share), t, (int64_t)used);
        const vt_proc *live = x->j->live->procs[i];
        int64_t traced = live->dev[u->device].live_dev;
        snprintf(name, sizeof(name), "GPU %u untraced (driver used - traced)", u->device);
        xt_counter_set(x, i, xt_counter_get(x, i, 4ull << 60 | u->device, name, share), t,
                       (int64_t)used - traced);
        break;
    }
    case VT_EV_POOL_USAGE: {
        const vt_ev_pool_usage *u = &ev->u.pool_usage;
        char name[128], share[32];
        snprintf(share, sizeof(share), "gpu%u", u->device);
        uint64_t pk = (uint64_t)vt_hash64(u->pool) & 0xffffffffffull;
        snprintf(name, sizeof(name), "GPU %u pool 0x%" PRIx64 " reserved", u->device, u->pool);
        xt_counter_set(x, i, xt_counter_get(x, i, 5ull << 60 | pk << 8 | u->device, name, share), t,
                       (int64_t)u->reserved_current);
        snprintf(name, sizeof(name), "GPU %u pool 0x%" PRIx64 " used", u->device, u->pool);
        xt_counter_set(x, i, xt_counter_get(x, i, 6ull << 60 | pk << 8 | u->device, name, share), t,
                       (int64_t)u->used_current);
        break;
    }
    default:
        break;
    }
    if (re->nblocks)
        xt_live_counters(x, i, re->blocks[0].device, re->live_kind, re->live_device, re->reserved, t);
    return x->err;
}

/* ---- the end of each process: live blocks, steps, the view, flamegraphs ---- */

typedef struct {
    xt *x;
    unsigned i;
    vt_replay_block *v;
    size_t n, cap;
} xt_live;

static int xt_collect_live(void *ctx, uint64_t addr, uint64_t size, uint64_t t, uint32_t unit)
{
    xt_live *l = ctx;
    const vt_proc *p = l->x->j->live->procs[l->i];
    if (unit >= p->nunits)
        return 0;
    if (VT_GROW(l->v, l->n, l->cap, 256))
        return VT_ERR_NOMEM;
    const vt_unit *u = &p->units[unit];
    l->v[l->n++] = (vt_replay_block){VT_BLOCK_END, addr, size, t, p->t_last, u->device, u->stack, unit,
                                      u->kind, u->api};
    return 0;
}

static int live_cmp(const void *a, const void *b)
{
    const vt_replay_block *x = a, *y = b;
    if (x->unit != y->unit)
        return x->unit < y->unit ? -1 : 1;
    if (x->t_alloc != y->t_alloc)
        return x->t_alloc < y->t_alloc ? -1 : 1;
    return x->address < y->address ? -1 : x->address > y->address;
}

static int xt_flame(xt *x, unsigned i, uint64_t track, uint64_t t, uint32_t unit, int64_t bytes, const char *what)
{
    const vt_proc *m = x->j->model->procs[i];
    vt_xframe fr[VT_MAX_STACK];
    uint32_t n = vt_xjob_frames(x->j, m, m->units[unit].stack, fr, VT_MAX_STACK);
    char site[400], name[520];
    vt_xjob_site_name(x->j, m, m->units[unit].stack, m->units[unit].thread, site, sizeof(site));
    snprintf(name, sizeof(name), "%s: %s", what, site);
    return x->s->flame(x->s->ctx, track, vt_xjob_time(m, t), fr, n, (uint64_t)bytes, name);
}

static int xt_finish_proc(xt *x, unsigned i)
{
    xt_proc *q = &x->procs[i];
    const vt_proc *m = x->j->model->procs[i];
    if (!q->declared)
        return 0;
    int rc = 0;
    /* the blocks still live: one nested lane per call site */
    xt_live l = {x, i, NULL, 0, 0};
    rc = vt_proc_live_blocks(x->j->live->procs[i], xt_collect_live, &l);
    if (!rc) {
        if (l.n)
            qsort(l.v, l.n, sizeof(*l.v), live_cmp);
        for (size_t k = 0; k < l.n && !x->err; k++)
            xt_block_slice(x, i, &l.v[k], m->t_last, 1);
    }
    free(l.v);
    if (rc || x->err)
        return rc ? rc : x->err;
    for (size_t k = 0; k < q->nctr && !rc; k++)
        rc = xt_counter_flush(x, &q->ctr[k]);
    /* steps (the occurrences the model kept of its step marker) */
    if (!rc && m->step_occ && m->step_occ->n > 1) {
        uint64_t tr = xt_new_track(x);
        char name[200];
        snprintf(name, sizeof(name), "steps (%s)", m->step_source ? m->step_source : "detected");
        rc = x->s->track(x->s->ctx, tr, q->track, VT_XT_SLICES, name, NULL, 0, 30);
        const vt_occ *o = m->step_occ;
        for (uint32_t k = 0; k + 1 < o->n && !rc; k++) {
            if (!vt_xjob_in_window(x->j, m, o->t[k]))
                continue;
            char sn[64];
            if (o->stride > 1)
                snprintf(sn, sizeof(sn), "steps %" PRIu64 "-%" PRIu64, (uint64_t)k * o->stride + 1,
                         (uint64_t)(k + 1) * o->stride);
            else
                snprintf(sn, sizeof(sn), "step %u", k + 1);
            rc = x->s->slice(x->s->ctx, tr, vt_xjob_time(m, o->t[k]), vt_xjob_time(m, o->t[k + 1]), sn, 0, 0, NULL, 0);
        }
    }
    /* the view, and live bytes by call site at it */
    if (!rc && m->view_t) {
        char v[300], name[360];
        rep_view_text(x->j->model, m, v, sizeof(v));
        snprintf(name, sizeof(name), "leak view: %s", v);
        vt_xarg a[1] = {VT_XARG_I("live_bytes_at_view", m->leak_bytes)};
        rc = x->s->instant(x->s->ctx, q->events_track, vt_xjob_time(m, m->view_t), name, a, 1);
        uint64_t tr = 0;
        for (size_t u = 0; u < m->nunits && !rc; u++) {
            if (m->units[u].at_bytes <= 0)
                continue;
            if (!tr) {
                tr = xt_new_track(x);
                rc = x->s->track(x->s->ctx, tr, q->track, VT_XT_SLICES, "live at the view (by call site)", NULL, 0, 20);
            }
            if (!rc)
                rc = xt_flame(x, i, tr, m->view_t, (uint32_t)u, m->units[u].at_bytes, "live at the view");
        }
    }
    /* each device's peak */
    for (uint32_t d = 0; d < m->ndev_seen && d < VT_MAX_DEVICES && !rc; d++) {
        if (m->dev[d].peak <= 0)
            continue;
        vt_row *rows = NULL;
        size_t n = rep_peak_rows(m, d, 0, &rows);
        uint64_t tr = xt_new_track(x);
        char name[96];
        snprintf(name, sizeof(name), "GPU %u live at its peak (by call site)", d);
        rc = x->s->track(x->s->ctx, tr, q->track, VT_XT_SLICES, name, NULL, 0, 21 + (int)d);
        for (size_t k = 0; k < n && !rc; k++)
            if (rows[k].bytes > 0)
                rc = xt_flame(x, i, tr, m->dev[d].peak_t, rows[k].unit, rows[k].bytes, "live at the peak");
        free(rows);
    }
    if (!rc && q->dropped_slices) {
        char name[200];
        snprintf(name, sizeof(name), "%" PRIu64 " slices not drawn (more overlapping at once than lanes)",
                 q->dropped_slices);
        rc = x->s->instant(x->s->ctx, q->events_track, vt_xjob_time(m, m->t_last), name, NULL, 0);
    }
    return rc;
}

static void xt_free(xt *x)
{
    for (size_t i = 0; i < x->nprocs; i++) {
        xt_proc *q = &x->procs[i];
        free(q->ctr);
        vt_map_free(&q->ctr_map);
        free(q->streams);
        for (size_t k = 0; k < q->nunits; k++) {
            free(q->units[k].site);
            free(q->units[k].end);
            free(q->units[k].track);
        }
        free(q->units);
        for (size_t k = 0; k < q->nthreads; k++)
            free(q->threads[k].name);
        free(q->threads);
        for (size_t k = 0; k < q->nranges; k++)
            free(q->ranges[k].msg);
        free(q->ranges);
    }
    free(x->procs);
}

/* ------------------------------------------------------------ the driver */

static int add_inputs(vt_analysis *a, char *const *inputs, int n)
{
    int any = 0;
    for (int k = 0; k < n; k++) {
        struct stat st;
        int rc;
        if (stat(inputs[k], &st) == 0 && S_ISDIR(st.st_mode))
            rc = vt_analysis_add_dir(a, inputs[k]);
        else
            rc = vt_analysis_add_file(a, inputs[k]);
        if (rc == 0 || vt_analysis_nprocs(a))
            any = 1;
    }
    return any ? 0 : VT_ERR_NOT_FOUND;
}

int vt_xjob_replay(vt_xjob *j, vt_replay_fn fn, void *ctx)
{
    vt_analysis_config c = j->cfg->analysis;
    c.symbolize = 0; /* frames come from the model */
    c.progress = 0;
    int rc = vt_analysis_create(&j->live, &c);
    if (rc)
        return rc;
    vt_analysis_share_budget(j->live, j->model->budget);
    vt_analysis_set_consumer(j->live, fn, ctx);
    add_inputs(j->live, j->inputs, j->ninputs);
    /* the second pass ran out of the budget the first left: what it wrote
     * is not the whole timeline */
    if (j->live->budget_why[0])
        return VT_ERR_LIMIT;
    for (size_t i = 0; i < j->live->nprocs; i++)
        if (j->live->procs[i]->over_budget)
            return VT_ERR_LIMIT;
    return 0;
}

int vt_export(const vt_export_config *cfg, char *const *inputs, int ninputs, FILE *out, char *err, size_t errlen)
{
    vt_xjob j = {.cfg = cfg, .out = out, .inputs = inputs, .ninputs = ninputs};
    if (errlen)
        err[0] = 0;
    if (cfg->format == VT_EXPORT_PARQUET) { /* a directory, not a stream: vt_export_parquet */
        snprintf(err, errlen, "parquet writes a directory (vt_export_parquet)");
        return VT_ERR_INVALID;
    }
    int rc = vt_analysis_create(&j.model, &cfg->analysis);
    if (rc) {
        snprintf(err, errlen, "%s", vt_strerror(rc));
        return rc;
    }
    char eb[1200]; /* the errors name files: escaped */
    rc = add_inputs(j.model, inputs, ninputs);
    unsigned nerr = vt_analysis_nerrors(j.model);
    for (unsigned k = 0; k < nerr; k++)
        fprintf(stderr, "vramtrace export: %s\n", vt_esc_text_buf(vt_analysis_error(j.model, k), eb, sizeof(eb)));
    if (rc || !vt_analysis_nprocs(j.model)) {
        snprintf(err, errlen, "no trace could be read");
        vt_analysis_free(j.model);
        return rc ? rc : VT_ERR_NOT_FOUND;
    }
    rc = vt_analysis_finish(j.model);
    unsigned np = vt_analysis_nprocs(j.model);
    j.upid_pid = calloc(np, sizeof(uint32_t));
    if (rc || !j.upid_pid) {
        snprintf(err, errlen, "%s", vt_strerror(rc ? rc : VT_ERR_NOMEM));
        free(j.upid_pid);
        vt_analysis_free(j.model);
        return rc ? rc : VT_ERR_NOMEM;
    }
    /* pids unique in the job (ranks on several hosts may share one) */
    j.t0 = UINT64_MAX;
    for (unsigned i = 0; i < np; i++) {
        const vt_proc *p = j.model->procs[i];
        uint32_t pid = p->pid ? p->pid : i + 1;
        for (unsigned k = 0; k < i; k++)
            if (j.upid_pid[k] == pid) {
                pid += 1000000u * (i + 1);
                k = (unsigned)-1;
            }
        j.upid_pid[i] = pid;
        /* kernels may start before the first host event (their records
         * come later, with earlier times) */
        uint64_t first = p->kernels && p->kernel_first && p->kernel_first < p->t0 ? p->kernel_first : p->t0;
        if (p->have_t0 && p->realtime_ns && vt_xjob_time(p, first) < j.t0)
            j.t0 = vt_xjob_time(p, first);
    }
    /* a process without its clock's anchor (its header lost in a damaged
     * frame) cannot be placed among the others: it starts at the job's
     * start (said on stderr); without any anchor, times are the traces' */
    for (unsigned i = 0; i < np; i++) {
        vt_proc *p = j.model->procs[i];
        if (!p->have_t0 || p->realtime_ns)
            continue;
        uint64_t first = p->kernels && p->kernel_first && p->kernel_first < p->t0 ? p->kernel_first : p->t0;
        if (j.t0 != UINT64_MAX) {
            p->trace_clock_ns = first;
            p->realtime_ns = j.t0 ? j.t0 : 1;
            fprintf(stderr, "vramtrace export: %s has no clock anchor (no header): placed at the job's start\n",
                    p->name ? p->name : "?");
        }
    }
    for (unsigned i = 0; i < np; i++) {
        const vt_proc *p = j.model->procs[i];
        uint64_t first = p->kernels && p->kernel_first && p->kernel_first < p->t0 ? p->kernel_first : p->t0;
        if (p->have_t0 && !p->realtime_ns && first < j.t0)
            j.t0 = first;
    }
    if (j.t0 == UINT64_MAX)
        j.t0 = 0;

    if (cfg->format == VT_EXPORT_MEMVIZ) {
        rc = vt_export_memviz(&j, err, errlen);
    } else {
        vt_xsink sink = {0};
        rc = cfg->format == VT_EXPORT_PERFETTO ? vt_xsink_perfetto(&sink, out, j.model->budget)
                                               : vt_xsink_chrome(&sink, out, j.t0, cfg->max_bytes, j.model->budget);
        if (!rc && cfg->format == VT_EXPORT_PERFETTO)
            rc = vt_xsink_perfetto_start(&sink, j.t0);
        xt x = {.j = &j, .s = &sink};
        x.nprocs = np;
        x.procs = calloc(np, sizeof(xt_proc));
        if (!rc && !x.procs)
            rc = VT_ERR_NOMEM;
        if (!rc)
            rc = vt_xjob_replay(&j, xt_on_event, &x);
        if (!rc && x.err)
            rc = x.err;
        for (unsigned i = 0; i < np && !rc; i++)
            rc = xt_finish_proc(&x, i);
        if (!rc)
            rc = sink.finish(sink.ctx);
        if (rc && sink.errmsg && sink.errmsg(sink.ctx))
            snprintf(err, errlen, "%s", sink.errmsg(sink.ctx));
        if (sink.free)
            sink.free(sink.ctx);
        xt_free(&x);
        vt_analysis_free(j.live);
    }
    if (rc == VT_ERR_LIMIT && !err[0])
        snprintf(err, errlen,
                 "the export's memory budget of %llu MiB is spent (--max-memory raises it): its two passes over "
                 "%u processes and %llu call sites, and the writer's names, frames and stacks",
                 (unsigned long long)(j.model->budget->limit >> 20), np, (unsigned long long)vt_analysis_units(j.model));
    if (rc) {
        if (!err[0])
            snprintf(err, errlen, "%s", vt_strerror(rc));
    }
    free(j.upid_pid);
    vt_analysis_free(j.model);
    if (rc)
        return rc;
    return nerr ? 1 : 0;
}
