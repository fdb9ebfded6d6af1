/* vt_export_parquet.c - `vramtrace export --format parquet -o DIR`: each
 * trace as a file of each table of a partitioned dataset (docs/EXPORT.md,
 * "Parquet"):
 *   DIR/TABLE/rank=R/host=H/part-STEM.parquet
 * for the tables allocations, sites, kernels, samples, steps, failures and
 * processes.  One trace at a time, each its own two passes (the report's
 * analysis of that trace alone, then its replay with the consumer below),
 * so that a job of any number of traces exports in the memory of one, and
 * a scheduler may run one export per trace into the same DIR.  Rows are
 * written as the replay goes (a block's row when it ends), through the
 * writer of vt_parquet.c, into ".part-STEM.parquet.tmp" renamed when
 * complete.  Memory: the analysis of one trace, a row group per table,
 * the live blocks' threads and, at the end, the blocks still live (put in
 * order).  Touches: the inputs (read), DIR (directories
 * and files made), stderr (read errors). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "vt_error.h"
#include "vt_export_int.h"
#include "vt_grow.h"
#include "vt_parquet.h"
#include "vt_report_int.h"
#include "vt_tracedir.h"

/* ------------------------------------------------------------ tables */

/* clang-format off */
#define TS VT_PQ_TIMESTAMP
#define I64 VT_PQ_INT64
#define I32 VT_PQ_INT32
#define STR VT_PQ_STRING
#define LST VT_PQ_STRING_LIST

enum { A_PID, A_DEVICE, A_ADDRESS, A_SIZE, A_KIND, A_API, A_ALLOC_TIME, A_FREE_TIME, A_SITE, A_THREAD, A_ALLOC_STEP,
       A_FREE_STEP, A__N };
static const vt_pq_col alloc_cols[A__N] = {
    {"pid", I64, 0},        {"device", I32, 0},      {"address", I64, 0},   {"size", I64, 0},
    {"kind", STR, 0},       {"api", STR, 0},         {"alloc_time", TS, 0}, {"free_time", TS, 1},
    {"site", I64, 0},       {"thread", I64, 1},      {"alloc_step", I64, 1}, {"free_step", I64, 1},
};

enum { S_PID, S_SITE, S_FUNCTION, S_FILE, S_LINE, S_FRAMES, S_OPERATOR, S_AUTOGRAD, S_HOLDER, S_ALLOCS, S_ALLOC_BYTES,
       S_FREES, S_MAX_LIVE, S_VIEW_BYTES, S_LEAKED, S_GROWING, S_GROWN, S_PER_STEP, S_FAILED, S__N };
static const vt_pq_col site_cols[S__N] = {
    {"pid", I64, 0},          {"site", I64, 0},         {"function", STR, 1},      {"file", STR, 1},
    {"line", I32, 1},         {"frames", LST, 0},       {"operator", STR, 1},      {"autograd_node", STR, 1},
    {"holder", STR, 1},       {"allocs", I64, 0},       {"alloc_bytes", I64, 0},   {"frees", I64, 0},
    {"max_live_bytes", I64, 0}, {"live_at_view_bytes", I64, 0}, {"leaked_bytes", I64, 0}, {"growing", I32, 0},
    {"grown_bytes", I64, 0},  {"growth_bytes_per_step", I64, 1}, {"failed_calls", I64, 0},
};

enum { K_PID, K_DEVICE, K_STREAM, K_NAME, K_START, K_END, K_DURATION, K_GX, K_GY, K_GZ, K_BX, K_BY, K_BZ, K_SHARED,
       K_CORR, K_GRAPH, K_STEP, K__N };
static const vt_pq_col kernel_cols[K__N] = {
    {"pid", I64, 0},     {"device", I32, 0},  {"stream", I64, 0},  {"name", STR, 1},         {"start_time", TS, 0},
    {"end_time", TS, 0}, {"duration_ns", I64, 0}, {"grid_x", I32, 0}, {"grid_y", I32, 0},    {"grid_z", I32, 0},
    {"block_x", I32, 0}, {"block_y", I32, 0}, {"block_z", I32, 0}, {"shared_memory", I64, 0}, {"correlation", I64, 0},
    {"graph_id", I64, 1}, {"step", I64, 1},
};

enum { M_PID, M_TIME, M_DEVICE, M_SOURCE, M_POOL, M_USED, M_RESERVED, M_TOTAL, M__N };
static const vt_pq_col sample_cols[M__N] = {
    {"pid", I64, 0},  {"time", TS, 0},  {"device", I32, 0},   {"source", STR, 0},
    {"pool", I64, 1}, {"used_bytes", I64, 0}, {"reserved_bytes", I64, 1}, {"total_bytes", I64, 1},
};

enum { T_PID, T_STEP, T_STEPS, T_START, T_END, T_SOURCE, T__N };
static const vt_pq_col step_cols[T__N] = {
    {"pid", I64, 0}, {"step", I64, 0}, {"steps", I64, 0}, {"start_time", TS, 0}, {"end_time", TS, 0}, {"source", STR, 1},
};

enum { F_PID, F_TIME, F_DEVICE, F_SIZE, F_KIND, F_API, F_ERROR, F_ERROR_NAME, F_OOM, F_PROBE, F_SITE, F_THREAD, F_STEP,
       F__N };
static const vt_pq_col fail_cols[F__N] = {
    {"pid", I64, 0},  {"time", TS, 0}, {"device", I32, 0}, {"size", I64, 0},   {"kind", STR, 0},  {"api", STR, 0},
    {"error", I32, 0}, {"error_name", STR, 1}, {"out_of_memory", I32, 0}, {"probe", STR, 1}, {"site", I64, 0}, {"thread", I64, 1}, {"step", I64, 1},
};

enum { P_PID, P_PPID, P_PROGRAM, P_ARGV, P_RANK_ENV, P_TRACE, P_VERDICT, P_START, P_END, P_COMPLETE, P_RECORDS,
       P_ALLOCS, P_PEAK, P_PEAK_DEVICE, P_PEAK_TIME, P_LEAKED, P_GROWN, P_STEPS, P_FAILED, P_FAILED_CALLS, P__N };
static const vt_pq_col proc_cols[P__N] = {
    {"pid", I64, 0},        {"ppid", I64, 0},         {"program", STR, 1},     {"argv", LST, 0},
    {"rank_env", STR, 1},   {"trace_file", STR, 0},   {"verdict", STR, 0},     {"start_time", TS, 0},
    {"end_time", TS, 0},    {"complete", I32, 0},     {"records", I64, 0},     {"allocations", I64, 0},
    {"peak_bytes", I64, 0}, {"peak_device", I32, 1},  {"peak_time", TS, 1},    {"leaked_bytes", I64, 0},
    {"grown_bytes", I64, 0}, {"steps", I64, 0},       {"failed", I64, 0},      {"failed_calls", I64, 0},
};

enum { TB_ALLOC, TB_SITES, TB_KERNELS, TB_SAMPLES, TB_STEPS, TB_FAILURES, TB_PROCESSES, TB__N };
static const struct {
    const char *name;
    const vt_pq_col *cols;
    int ncols;
} tables[TB__N] = {
    {"allocations", alloc_cols, A__N}, {"sites", site_cols, S__N},       {"kernels", kernel_cols, K__N},
    {"samples", sample_cols, M__N},    {"steps", step_cols, T__N},       {"failures", fail_cols, F__N},
    {"processes", proc_cols, P__N},
};
/* clang-format on */

/* ------------------------------------------------------------ one trace */

typedef struct {
    const vt_export_config *cfg;
    vt_analysis *model;
    vt_proc *m; /* the model's process */
    vt_pq *t[TB__N];
    char *path[TB__N], *tmp[TB__N];
    vt_map blk;   /* live block (address, caching-allocator bit) -> its thread's tid + 1, */
    int64_t tid0; /* unless that is the first allocating thread's (most processes: the only) */
    int have_tid0;
    uint32_t step_k; /* the step interval the last time fell in (times mostly come in order) */
    vt_map fstack;   /* stacks of failed allocations -> their count */
    uint32_t *tid;   /* Thread id -> tid */
    size_t ntid;
    int64_t pid;
    int err;
} px;

static uint64_t blk_key_of(uint64_t addr, unsigned api)
{
    uint64_t k = addr ^ ((uint64_t)(api == VT_API_CACHING_ALLOCATOR) << 63);
    return k ? k : 1;
}

static int64_t wall(const px *x, uint64_t t)
{
    return (int64_t)vt_xjob_time(x->m, t);
}

/* The step t falls in (1-based, 0 before the first), -1 when the trace has
 * no steps.  With more than the model keeps (VT_OCC_MAX), every stride-th
 * start is known and the number is that of the first step of its stride. */
static int64_t step_at(px *x, uint64_t t)
{
    const vt_occ *o = x->m->step_occ;
    if (!o || o->n < 2)
        return -1;
    uint32_t lo; /* the number of starts at or before t */
    uint32_t k = x->step_k;
    if (k < o->n && o->t[k] <= t && (k + 1 == o->n || t < o->t[k + 1])) {
        lo = k + 1;
    } else {
        uint32_t hi = o->n;
        lo = 0;
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (o->t[mid] <= t)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo)
            x->step_k = lo - 1;
    }
    return lo ? (int64_t)(lo - 1) * (o->stride ? o->stride : 1) + 1 : 0;
}

static void put_step(px *x, int table, int col, uint64_t t)
{
    int64_t s = step_at(x, t);
    if (s >= 0)
        vt_pq_int(x->t[table], col, s);
}

static int64_t tid_of(const px *x, uint32_t thread)
{
    return thread < x->ntid ? (int64_t)x->tid[thread] : 0;
}

static void alloc_row(px *x, uint64_t addr, uint64_t size, uint64_t t_alloc, int have_end, uint64_t t_end,
                      uint32_t device, uint32_t stack, unsigned kind, unsigned api)
{
    vt_pq *w = x->t[TB_ALLOC];
    vt_pq_int(w, A_PID, x->pid);
    vt_pq_int(w, A_DEVICE, device);
    vt_pq_int(w, A_ADDRESS, (int64_t)addr);
    vt_pq_int(w, A_SIZE, (int64_t)size);
    vt_pq_str(w, A_KIND, vt_memkind_name((vt_memkind)kind));
    vt_pq_str(w, A_API, vt_allocapi_name((vt_allocapi)api));
    vt_pq_int(w, A_ALLOC_TIME, wall(x, t_alloc));
    if (have_end)
        vt_pq_int(w, A_FREE_TIME, wall(x, t_end));
    vt_pq_int(w, A_SITE, stack);
    uint64_t v = 0;
    if (x->blk.len && vt_map_del(&x->blk, blk_key_of(addr, api), &v)) {
        if (v)
            vt_pq_int(w, A_THREAD, (int64_t)v - 1);
    } else if (x->have_tid0 && x->tid0) {
        vt_pq_int(w, A_THREAD, x->tid0);
    }
    put_step(x, TB_ALLOC, A_ALLOC_STEP, t_alloc);
    if (have_end)
        put_step(x, TB_ALLOC, A_FREE_STEP, t_end);
    if (vt_pq_row(w))
        x->err = vt_pq_err(w);
}

static int px_event(void *ctx, const vt_replay_event *re)
{
    px *x = ctx;
    if (x->err)
        return x->err;
    const vt_event *ev = re->ev;
    for (unsigned b = 0; b < re->nblocks; b++) {
        const vt_replay_block *k = &re->blocks[b];
        if (k->op == VT_BLOCK_END) {
            alloc_row(x, k->address, k->size, k->t_alloc, 1, k->t, k->device, k->stack, k->kind, k->api);
        } else {
            const vt_site *s = vt_event_site((vt_event *)ev);
            int64_t tid = s ? tid_of(x, s->thread) : 0;
            if (!x->have_tid0) {
                x->have_tid0 = 1;
                x->tid0 = tid;
            }
            if (tid != x->tid0 &&
                vt_map_put(&x->blk, blk_key_of(k->address, k->api), tid ? (uint64_t)tid + 1 : 0))
                x->err = VT_ERR_NOMEM;
        }
    }
    const uint64_t t = ev->time_ns;
    switch (ev->type) {
    case VT_EV_THREAD: {
        uint32_t id = ev->u.thread.id;
        if (id < (1u << 20) && id >= x->ntid) {
            size_t n = (size_t)id + 64;
            uint32_t *v = realloc(x->tid, n * sizeof(uint32_t));
            if (!v)
                return x->err = VT_ERR_NOMEM;
            memset(v + x->ntid, 0, (n - x->ntid) * sizeof(uint32_t));
            x->tid = v;
            x->ntid = n;
        }
        if (id < x->ntid)
            x->tid[id] = ev->u.thread.tid;
        break;
    }
    case VT_EV_KERNEL: {
        const vt_ev_kernel *k = &ev->u.kernel;
        vt_pq *w = x->t[TB_KERNELS];
        vt_pq_int(w, K_PID, x->pid);
        vt_pq_int(w, K_DEVICE, k->device);
        vt_pq_int(w, K_STREAM, k->stream);
        vt_pq_str(w, K_NAME, k->name);
        vt_pq_int(w, K_START, wall(x, t));
        vt_pq_int(w, K_END, wall(x, t + k->duration_ns));
        vt_pq_int(w, K_DURATION, (int64_t)k->duration_ns);
        vt_pq_int(w, K_GX, k->grid[0]);
        vt_pq_int(w, K_GY, k->grid[1]);
        vt_pq_int(w, K_GZ, k->grid[2]);
        vt_pq_int(w, K_BX, k->block[0]);
        vt_pq_int(w, K_BY, k->block[1]);
        vt_pq_int(w, K_BZ, k->block[2]);
        vt_pq_int(w, K_SHARED, k->shared_memory);
        vt_pq_int(w, K_CORR, (int64_t)k->corr);
        if (k->graph)
            vt_pq_int(w, K_GRAPH, (int64_t)k->graph_id);
        put_step(x, TB_KERNELS, K_STEP, t);
        if (vt_pq_row(w))
            x->err = vt_pq_err(w);
        break;
    }
    case VT_EV_ALLOC_FAILED: {
        const vt_ev_alloc_failed *f = &ev->u.alloc_failed;
        vt_pq *w = x->t[TB_FAILURES];
        vt_pq_int(w, F_PID, x->pid);
        vt_pq_int(w, F_TIME, wall(x, t));
        vt_pq_int(w, F_DEVICE, f->device);
        vt_pq_int(w, F_SIZE, (int64_t)f->size);
        vt_pq_str(w, F_KIND, vt_memkind_name(f->kind));
        vt_pq_str(w, F_API, vt_allocapi_name(f->api));
        vt_pq_int(w, F_ERROR, f->error);
        vt_pq_str(w, F_ERROR_NAME, f->error_name);
        vt_pq_int(w, F_OOM, f->error == 2); /* CUDA_ERROR_OUT_OF_MEMORY, cudaErrorMemoryAllocation */
        int probe = vt_failed_probe(f);
        if (probe)
            vt_pq_str(w, F_PROBE, rep_probe_name(probe));
        vt_pq_int(w, F_SITE, f->site.stack);
        int64_t tid = tid_of(x, f->site.thread);
        if (tid)
            vt_pq_int(w, F_THREAD, tid);
        put_step(x, TB_FAILURES, F_STEP, t);
        if (vt_pq_row(w))
            x->err = vt_pq_err(w);
        uint64_t *c = vt_map_get(&x->fstack, (uint64_t)f->site.stack + 1);
        if (c)
            (*c)++;
        else if (vt_map_put(&x->fstack, (uint64_t)f->site.stack + 1, 1))
            x->err = VT_ERR_NOMEM;
        break;
    }
    case VT_EV_MEMORY_USAGE: {
        const vt_ev_memory_usage *u = &ev->u.memory_usage;
        vt_pq *w = x->t[TB_SAMPLES];
        vt_pq_int(w, M_PID, x->pid);
        vt_pq_int(w, M_TIME, wall(x, t));
        vt_pq_int(w, M_DEVICE, u->device);
        vt_pq_str(w, M_SOURCE, "driver");
        vt_pq_int(w, M_USED, (int64_t)(u->total > u->free ? u->total - u->free : 0));
        vt_pq_int(w, M_TOTAL, (int64_t)u->total);
        if (vt_pq_row(w))
            x->err = vt_pq_err(w);
        break;
    }
    case VT_EV_POOL_USAGE: {
        const vt_ev_pool_usage *u = &ev->u.pool_usage;
        vt_pq *w = x->t[TB_SAMPLES];
        vt_pq_int(w, M_PID, x->pid);
        vt_pq_int(w, M_TIME, wall(x, t));
        vt_pq_int(w, M_DEVICE, u->device);
        vt_pq_str(w, M_SOURCE, "pool");
        vt_pq_int(w, M_POOL, (int64_t)u->pool);
        vt_pq_int(w, M_USED, (int64_t)u->used_current);
        vt_pq_int(w, M_RESERVED, (int64_t)u->reserved_current);
        if (vt_pq_row(w))
            x->err = vt_pq_err(w);
        break;
    }
    default:
        break;
    }
    return x->err;
}

/* ---- the end of the trace: live blocks, sites, steps, the process ---- */

/* The blocks live at the end, gathered from the replay's tables and
 * written in order of allocation (time, then address): the tables' order
 * is their hashing's, which the replay's short and full ways leave
 * different. */
typedef struct {
    uint64_t t, addr, size;
    uint32_t unit;
} px_lblock;

typedef struct {
    px_lblock *v;
    size_t n, cap;
} px_lblocks;

static int px_live_add(void *ctx, uint64_t addr, uint64_t size, uint64_t t, uint32_t unit)
{
    px_lblocks *l = ctx;
    if (VT_GROW(l->v, l->n, l->cap, 1024))
        return VT_ERR_NOMEM;
    l->v[l->n++] = (px_lblock){t, addr, size, unit};
    return 0;
}

static int lblock_cmp(const void *a, const void *b)
{
    const px_lblock *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return (x->unit > y->unit) - (x->unit < y->unit);
}

static int px_live(px *x, const vt_proc *live)
{
    const vt_proc *p = x->m; /* the model and the replay share units (stable ids) */
    px_lblocks l = {0};
    int rc = vt_proc_live_blocks(live, px_live_add, &l);
    if (!rc) {
        if (l.n) /* qsort's base may not be NULL, even for no elements */
            qsort(l.v, l.n, sizeof(*l.v), lblock_cmp);
        for (size_t i = 0; i < l.n && !x->err; i++) {
            const px_lblock *b = &l.v[i];
            if (b->unit >= p->nunits)
                continue;
            const vt_unit *u = &p->units[b->unit];
            alloc_row(x, b->addr, b->size, b->t, 0, 0, u->device, u->stack, u->kind, u->api);
        }
        rc = x->err;
    }
    free(l.v);
    return rc;
}

typedef struct {
    uint32_t stack;
    uint64_t allocs, alloc_bytes, frees, failed;
    int64_t max_live, view, leaked, grown, per_step;
    int growing, have_per_step;
    uint32_t holder;
    uint64_t held;
} px_site;

static int site_cmp(const void *a, const void *b)
{
    const px_site *x = a, *y = b;
    return (x->stack > y->stack) - (x->stack < y->stack);
}

static void site_row(px *x, const px_site *s)
{
    vt_pq *w = x->t[TB_SITES];
    static vt_xframe fr[VT_MAX_STACK];
    static char text[VT_MAX_STACK][320];
    const char *items[VT_MAX_STACK];
    int user = -1;
    uint32_t n = s->stack ? vt_site_frames(x->model, x->m, s->stack, fr, VT_MAX_STACK, &user) : 0;
    vt_pq_int(w, S_PID, x->pid);
    vt_pq_int(w, S_SITE, s->stack);
    if (user >= 0 && (uint32_t)user < n && !fr[user].internal) {
        vt_pq_str(w, S_FUNCTION, fr[user].function);
        vt_pq_str(w, S_FILE, fr[user].file);
        if (fr[user].line)
            vt_pq_int(w, S_LINE, fr[user].line);
    }
    for (uint32_t k = 0; k < n; k++) {
        vt_xframe_format(&fr[k], text[k], sizeof(text[k]));
        items[k] = text[k];
    }
    vt_pq_list(w, S_FRAMES, items, n);
    char op[96], node[96];
    op[0] = node[0] = 0;
    if (n)
        vt_site_operator(fr, n, op, sizeof(op), node, sizeof(node));
    if (op[0])
        vt_pq_str(w, S_OPERATOR, op);
    if (node[0])
        vt_pq_str(w, S_AUTOGRAD, node);
    if (s->holder && s->holder <= x->m->nholders)
        vt_pq_str(w, S_HOLDER, x->m->holders[s->holder - 1].path);
    vt_pq_int(w, S_ALLOCS, (int64_t)s->allocs);
    vt_pq_int(w, S_ALLOC_BYTES, (int64_t)s->alloc_bytes);
    vt_pq_int(w, S_FREES, (int64_t)s->frees);
    vt_pq_int(w, S_MAX_LIVE, s->max_live);
    vt_pq_int(w, S_VIEW_BYTES, s->view);
    vt_pq_int(w, S_LEAKED, s->leaked);
    vt_pq_int(w, S_GROWING, s->growing);
    vt_pq_int(w, S_GROWN, s->grown);
    if (s->have_per_step)
        vt_pq_int(w, S_PER_STEP, s->per_step);
    vt_pq_int(w, S_FAILED, (int64_t)s->failed);
    if (vt_pq_row(w))
        x->err = vt_pq_err(w);
}

/* One row per call stack: the units of that stack (one per device and
 * memory kind) summed, and the stacks of failed allocations. */
static int px_sites(px *x)
{
    const vt_proc *p = x->m;
    size_t cap = p->nunits + x->fstack.len + 1, n = 0;
    px_site *v = calloc(cap, sizeof(px_site));
    if (!v)
        return VT_ERR_NOMEM;
    for (size_t i = 0; i < p->nunits; i++) {
        const vt_unit *u = &p->units[i];
        px_site *s = &v[n++];
        s->stack = u->stack;
        s->allocs = u->allocs;
        s->alloc_bytes = u->alloc_bytes;
        s->frees = u->frees;
        s->max_live = (int64_t)u->max_live;
        s->view = u->at_bytes;
        s->leaked = u->kept_bytes;
        s->growing = u->growth_flag ? 1 : 0;
        s->grown = u->growth_flag ? (int64_t)u->grown : 0;
        if (u->growth_flag && u->growth_per_step >= 0) {
            s->have_per_step = 1;
            s->per_step = (int64_t)u->growth_per_step;
        }
        s->holder = u->holder;
        s->held = u->held_bytes;
    }
    for (size_t k = 0; k < x->fstack.cap; k++)
        if (x->fstack.keys[k]) {
            px_site *s = &v[n++];
            s->stack = (uint32_t)(x->fstack.keys[k] - 1);
            s->failed = x->fstack.vals[k];
        }
    qsort(v, n, sizeof(*v), site_cmp);
    size_t i = 0;
    while (i < n && !x->err) {
        px_site s = v[i];
        size_t j = i + 1;
        for (; j < n && v[j].stack == s.stack; j++) {
            s.allocs += v[j].allocs;
            s.alloc_bytes += v[j].alloc_bytes;
            s.frees += v[j].frees;
            s.failed += v[j].failed;
            s.max_live = s.max_live > v[j].max_live ? s.max_live : v[j].max_live;
            s.view += v[j].view;
            s.leaked += v[j].leaked;
            s.grown += v[j].grown;
            s.growing |= v[j].growing;
            if (v[j].have_per_step) {
                s.per_step = (s.have_per_step ? s.per_step : 0) + v[j].per_step;
                s.have_per_step = 1;
            }
            if (v[j].holder && v[j].held > s.held) {
                s.holder = v[j].holder;
                s.held = v[j].held;
            }
        }
        site_row(x, &s);
        i = j;
    }
    free(v);
    return x->err;
}

static int px_steps(px *x)
{
    const vt_occ *o = x->m->step_occ;
    if (!o || o->n < 2)
        return 0;
    vt_pq *w = x->t[TB_STEPS];
    uint32_t stride = o->stride ? o->stride : 1;
    for (uint32_t k = 0; k + 1 < o->n && !x->err; k++) {
        vt_pq_int(w, T_PID, x->pid);
        vt_pq_int(w, T_STEP, (int64_t)k * stride + 1);
        vt_pq_int(w, T_STEPS, stride);
        vt_pq_int(w, T_START, wall(x, o->t[k]));
        vt_pq_int(w, T_END, wall(x, o->t[k + 1]));
        vt_pq_str(w, T_SOURCE, x->m->step_source);
        if (vt_pq_row(w))
            x->err = vt_pq_err(w);
    }
    return x->err;
}

static int px_process(px *x, const char *trace)
{
    vt_proc *p = x->m;
    vt_pq *w = x->t[TB_PROCESSES];
    vt_pq_int(w, P_PID, x->pid);
    vt_pq_int(w, P_PPID, p->ppid);
    vt_pq_str(w, P_PROGRAM, p->program);
    vt_pq_list(w, P_ARGV, (const char *const *)p->argv, p->argv ? p->argc : 0);
    vt_pq_str(w, P_RANK_ENV, p->env_rank);
    vt_pq_str(w, P_TRACE, trace);
    rep_verdict v;
    rep_verdict_of(x->model, p, &v);
    vt_pq_str(w, P_VERDICT, rep_verdict_name(v.kind));
    vt_pq_int(w, P_START, wall(x, p->t0));
    vt_pq_int(w, P_END, wall(x, p->t_last));
    vt_pq_int(w, P_COMPLETE, p->complete ? 1 : 0);
    vt_pq_int(w, P_RECORDS, (int64_t)p->records);
    vt_pq_int(w, P_ALLOCS, (int64_t)p->nev[VT_EV_ALLOC]);
    int64_t peak = 0;
    int pd = -1;
    for (uint32_t d = 0; d < p->ndev_seen && d < VT_MAX_DEVICES; d++)
        if (p->dev[d].peak > peak) {
            peak = p->dev[d].peak;
            pd = (int)d;
        }
    vt_pq_int(w, P_PEAK, peak);
    if (pd >= 0) {
        vt_pq_int(w, P_PEAK_DEVICE, pd);
        vt_pq_int(w, P_PEAK_TIME, wall(x, p->dev[pd].peak_t));
    }
    vt_pq_int(w, P_LEAKED, (int64_t)p->leak_bytes);
    vt_pq_int(w, P_GROWN, (int64_t)p->grown_total);
    vt_pq_int(w, P_STEPS, (int64_t)p->steps);
    vt_pq_int(w, P_FAILED, (int64_t)p->failed);
    vt_pq_int(w, P_FAILED_CALLS, (int64_t)p->failed_calls);
    if (vt_pq_row(w))
        x->err = vt_pq_err(w);
    return x->err;
}

/* ------------------------------------------------------------ files */

/* A partition value: letters, digits, '.', '-' and '_' kept, the rest '_'. */
static void part_value(const char *s, char *buf, size_t len)
{
    size_t n = 0;
    for (; s && *s && n + 1 < len; s++)
        buf[n++] = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
                           *s == '.' || *s == '-' || *s == '_'
                       ? *s
                       : '_';
    if (!n)
        buf[n++] = '_';
    buf[n] = 0;
}

static int mkdirs(char *path)
{
    /* the whole path first: after the first trace of a host it is there */
    if (mkdir(path, 0777) == 0 || errno == EEXIST)
        return 0;
    if (errno != ENOENT)
        return VT_ERR_IO;
    for (char *s = path + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = 0;
        int rc = mkdir(path, 0777);
        *s = '/';
        if (rc && errno != EEXIST)
            return VT_ERR_IO;
    }
    if (mkdir(path, 0777) && errno != EEXIST)
        return VT_ERR_IO;
    return 0;
}

/* The trace's rank: RANK of its environment when a number, else 0. */
static long rank_of(const vt_proc *p)
{
    if (!p->env_rank || !*p->env_rank)
        return 0;
    char *end;
    long r = strtol(p->env_rank, &end, 10);
    return *end || r < 0 ? 0 : r;
}

static void px_free(px *x, int keep)
{
    for (int k = 0; k < TB__N; k++) {
        vt_pq_free(x->t[k]);
        if (!keep && x->tmp[k])
            unlink(x->tmp[k]);
        free(x->path[k]);
        free(x->tmp[k]);
    }
    vt_map_free(&x->blk);
    vt_map_free(&x->fstack);
    free(x->tid);
}

static int export_trace(const vt_export_config *cfg, const char *trace, const char *name, const char *dir,
                        ZSTD_CCtx *zc, char *err, size_t errlen, int *damaged)
{
    px x = {.cfg = cfg};
    vt_analysis *live = NULL;
    int rc = vt_analysis_create(&x.model, &cfg->analysis);
    if (rc)
        return rc;
    rc = vt_analysis_add_file(x.model, trace);
    for (unsigned k = 0; k < vt_analysis_nerrors(x.model); k++)
        fprintf(stderr, "vramtrace export: %s\n", vt_analysis_error(x.model, k));
    if (vt_analysis_nerrors(x.model))
        *damaged = 1;
    if (!vt_analysis_nprocs(x.model)) {
        vt_analysis_free(x.model);
        *damaged = 1;
        return rc == VT_ERR_NOMEM ? rc : 0; /* nothing of it readable: said, and the others go on */
    }
    rc = vt_analysis_finish(x.model);
    if (rc)
        goto out_model;
    x.m = x.model->procs[0];
    x.pid = x.m->pid;
    char host[128], stem[256];
    part_value(x.m->host ? x.m->host : "unknown", host, sizeof(host));
    const char *base = name; /* its path under the directory given, or its file name */
    size_t bl = strlen(base);
    if (bl > 4 && !strcmp(base + bl - 4, ".zst"))
        bl -= 4;
    snprintf(stem, sizeof(stem), "%.*s", (int)(bl < 200 ? bl : 200), bl > 200 ? base + bl - 200 : base);
    part_value(stem, stem, sizeof(stem));
    long rank = rank_of(x.m);
    for (int k = 0; k < TB__N && !rc; k++) {
        char *d = NULL;
        if (asprintf(&d, "%s/%s/rank=%ld/host=%s", dir, tables[k].name, rank, host) < 0)
            rc = VT_ERR_NOMEM;
        else if (mkdirs(d)) {
            snprintf(err, errlen, "%.300s: cannot make the directory: %s", d, strerror(errno));
            rc = VT_ERR_IO;
        } else if (asprintf(&x.path[k], "%s/part-%s.parquet", d, stem) < 0 ||
                   asprintf(&x.tmp[k], "%s/.part-%s.parquet.tmp", d, stem) < 0) {
            rc = VT_ERR_NOMEM;
        } else if ((rc = vt_pq_create(&x.t[k], x.tmp[k], tables[k].cols, tables[k].ncols, 0))) {
            snprintf(err, errlen, "%.300s: cannot write: %s", x.tmp[k], strerror(errno));
            free(x.tmp[k]);
            x.tmp[k] = NULL;
        } else {
            vt_pq_share_zstd(x.t[k], zc);
        }
        free(d);
    }
    if (rc)
        goto out;
    /* pass 2: the replay of this trace, rows as it goes */
    vt_analysis_config c = cfg->analysis;
    c.symbolize = 0;
    c.progress = 0;
    rc = vt_analysis_create(&live, &c);
    if (rc)
        goto out;
    vt_analysis_set_consumer(live, px_event, &x);
    vt_analysis_add_file(live, trace);
    if (x.err) {
        rc = x.err;
        goto out;
    }
    if (vt_analysis_nprocs(live))
        rc = px_live(&x, live->procs[0]);
    if (!rc)
        rc = px_sites(&x);
    if (!rc)
        rc = px_steps(&x);
    if (!rc)
        rc = px_process(&x, trace);
    for (int k = 0; k < TB__N && !rc; k++) {
        rc = vt_pq_close(x.t[k]);
        if (rc)
            snprintf(err, errlen, "%.300s: write failed", x.tmp[k]);
        else if (rename(x.tmp[k], x.path[k])) {
            snprintf(err, errlen, "%.300s: cannot rename: %s", x.path[k], strerror(errno));
            rc = VT_ERR_IO;
        } else {
            free(x.tmp[k]); /* in place: nothing left to remove */
            x.tmp[k] = NULL;
        }
    }
out:
    vt_analysis_free(live);
    px_free(&x, 0);
out_model:
    vt_analysis_free(x.model);
    return rc;
}

int vt_export_parquet(const vt_export_config *cfg, char *const *inputs, int ninputs, const char *dir,
                      char *err, size_t errlen)
{
    if (errlen)
        err[0] = 0;
    char *d = strdup(dir);
    if (!d)
        return VT_ERR_NOMEM;
    int rc = mkdirs(d);
    free(d);
    if (rc) {
        snprintf(err, errlen, "%.300s: cannot make the directory: %s", dir, strerror(errno));
        return rc;
    }
    ZSTD_CCtx *zc = ZSTD_createCCtx(); /* one for every table of every trace */
    if (!zc)
        return VT_ERR_NOMEM;
    int damaged = 0, any = 0;
    for (int i = 0; i < ninputs && !rc; i++) {
        struct stat st;
        if (stat(inputs[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            char **names = NULL;
            size_t n = 0;
            rc = vt_tracedir_list(inputs[i], "vramtrace export", &names, &n);
            if (rc) {
                snprintf(err, errlen, "%.300s: cannot read the directory", inputs[i]);
                break;
            }
            if (!n)
                fprintf(stderr, "vramtrace export: %s: no trace\n", inputs[i]), damaged = 1;
            size_t dl = strlen(inputs[i]);
            for (size_t k = 0; k < n && !rc; k++, any++) {
                const char *rel = names[k];
                if (!strncmp(rel, inputs[i], dl) && rel[dl] == '/')
                    rel += dl + 1;
                rc = export_trace(cfg, names[k], rel, dir, zc, err, errlen, &damaged);
            }
            vt_tracedir_free(names, n);
        } else {
            any++;
            const char *base = strrchr(inputs[i], '/');
            rc = export_trace(cfg, inputs[i], base ? base + 1 : inputs[i], dir, zc, err, errlen, &damaged);
        }
    }
    ZSTD_freeCCtx(zc);
    if (!rc && !any) {
        snprintf(err, errlen, "no trace could be read");
        return VT_ERR_NOT_FOUND;
    }
    if (rc)
        return rc;
    return damaged ? 1 : 0;
}
