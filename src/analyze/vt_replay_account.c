/* vt_replay_account.c - per call site (unit) accounting: units, growth
 * buckets, the view at the end of real work, peaks. */
#include "vt_replay_int.h"


vt_unit *get_unit_slow(vt_proc *p, uint32_t stack, uint32_t device, unsigned kind, unsigned api,
                              uint32_t *idx)
{
    if (stack >= p->nstack_unit && stack < p->nstacks) {
        uint32_t *ns = realloc(p->stack_unit, p->nstacks * sizeof(*ns));
        if (ns) {
            memset(ns + p->nstack_unit, 0, (p->nstacks - p->nstack_unit) * sizeof(*ns));
            p->stack_unit = ns;
            p->nstack_unit = p->nstacks;
        }
    }
    uint64_t key = (1ULL << 63) | (uint64_t)stack | ((uint64_t)device << 32) | ((uint64_t)(kind & 0xff) << 48);
    uint64_t *v = vt_map_get(&p->unitmap, key);
    if (v) {
        *idx = (uint32_t)*v;
        if (stack < p->nstack_unit)
            p->stack_unit[stack] = *idx + 1;
        return &p->units[*v];
    }
    if (p->budget) { /* the analysis's one budget: a new call site must fit */
        if (p->budget->used + VT_UNIT_COST > p->budget->limit) {
            p->over_budget = 1;
            return NULL;
        }
        p->budget->used += VT_UNIT_COST;
    }
    if (p->nunits == p->capunits) {
        size_t nc = p->capunits ? p->capunits * 2 : 256;
        vt_unit *u = aligned_alloc(_Alignof(vt_unit), nc * sizeof(*u)); /* see vt_unit */
        if (!u)
            return NULL;
        if (p->nunits)
            memcpy(u, p->units, p->nunits * sizeof(*u));
        free(p->units);
        p->units = u;
        p->capunits = nc;
    }
    if (vt_map_put(&p->unitmap, key, p->nunits))
        return NULL;
    vt_unit *u = &p->units[p->nunits];
    memset(u, 0, sizeof(*u));
    u->stack = stack;
    u->device = device;
    u->kind = (uint8_t)kind;
    u->resident = (uint8_t)is_resident(kind);
    u->api = (uint8_t)api;
    u->c10 = (uint8_t)vt_stack_is_c10(p, stack);
    /* segments: what the caching allocator gets from the driver (cudaMalloc
     * or cuMemCreate); with backend:cudaMallocAsync c10 allocates tensors */
    u->segment = u->c10 && (api == VT_API_MALLOC || api == VT_API_VMM);
    if (u->segment)
        p->c10_units++;
    /* CuPy's pool chunks are segments too: with its memory hook's blocks
     * (TENSOR) they are reserved memory, as PyTorch's (vt_pools.c) */
    u->pool = (uint8_t)vt_pool_of_stack(p, stack);
    if (u->pool == VT_POOL_CUPY && api == VT_API_MALLOC && kind == VT_MEM_DEVICE)
        u->segment = 1;
    if (api == VT_API_CACHING_ALLOCATOR)
        p->tensor_units++;
    u->pk_epoch = p->dev[device].peak_epoch;
    u->tk_epoch = p->dev[device].tpeak_epoch;
    u->dev = &p->dev[device];
    *idx = (uint32_t)p->nunits++;
    if (stack < p->nstack_unit)
        p->stack_unit[stack] = *idx + 1;
    return u;
}

/* --- growth floors --- */

/* halve a site's resolution: neighbouring buckets merge (min of floors,
 * the first one's start) */
static void growth_merge(vt_unit *u)
{
    uint64_t *f = u->floor, *ts = u->floor + VT_GROWTH_BUCKETS;
    for (uint32_t i = 0; i < VT_GROWTH_BUCKETS / 2; i++) {
        uint32_t a = 2 * i, b = 2 * i + 1;
        if (b <= u->gcur)
            f[i] = f[a] < f[b] ? f[a] : f[b];
        else if (a <= u->gcur)
            f[i] = f[a];
        ts[i] = ts[a];
    }
    u->gcur /= 2;
    u->g_shift++;
}

void growth_log_merge(vt_unit *u)
{
    uint64_t *lg = u->floor + 2 * VT_GROWTH_BUCKETS;
    uint32_t best = 0;
    for (uint32_t i = 1; i + 1 < VT_GROWTH_LOG; i++)
        if (lg[2 * (i + 1)] - lg[2 * i] < lg[2 * (best + 1)] - lg[2 * best])
            best = i;
    lg[2 * best + 1] = lg[2 * (best + 1) + 1]; /* the later level from the earlier time */
    memmove(lg + 2 * (best + 1), lg + 2 * (best + 2), (VT_GROWTH_LOG - best - 2) * 2 * sizeof(uint64_t));
    u->g_nlog = VT_GROWTH_LOG - 1;
}

/* Called before the allocation number u->allocs (0-based) at time t when
 * it starts a new bucket (growth_touch): the bucket's floor starts at the
 * live bytes before it, its start time is t. */
int growth_touch_slow(vt_unit *u, uint64_t t)
{
    uint64_t live = u->live_bytes > 0 ? (uint64_t)u->live_bytes : 0;
    if (!u->floor) {
        u->floor = calloc(2 * VT_GROWTH_BUCKETS + 2 * VT_GROWTH_LOG, sizeof(uint64_t));
        if (!u->floor)
            return VT_ERR_NOMEM;
        u->gcur = 0;
        u->g_t0 = t;
        u->g_shift = 0;
    } else {
        uint64_t b = u->allocs >> u->g_shift;
        while (b >= VT_GROWTH_BUCKETS) {
            growth_merge(u);
            b = u->allocs >> u->g_shift;
        }
        if (b <= u->gcur) { /* (the count did not reach a new bucket after a merge) */
            u->g_next = ((uint64_t)u->gcur + 1) << u->g_shift;
            return 0;
        }
        u->gcur = (uint32_t)b;
    }
    u->floor[u->gcur] = live;
    u->floor[VT_GROWTH_BUCKETS + u->gcur] = t;
    u->floor_cur = live;
    u->g_next = ((uint64_t)u->gcur + 1) << u->g_shift;
    return 0;
}

/* --- view at T --- */

/* Apply the tail's entries at or before `upto` (all of them if `all`),
 * keep the others.  A block's pair (count 0, see free_fast) is settled by
 * that with nothing to add: its free comes at or before the view, like its
 * allocation, so its +size and -size cancel. */
static void tail_fold(vt_proc *p, uint64_t upto, int all)
{
    size_t w = 0;
    if (all)
        upto = UINT64_MAX;
    for (size_t i = 0; i < p->ntail; i++) {
        vt_tail *e = &p->tail[i];
        if (e->t <= upto) {
            if (e->count) {
                p->units[e->unit].at_bytes += e->bytes;
                p->units[e->unit].at_count += e->count;
            }
        } else {
            p->tail[w++] = *e;
        }
    }
    p->ntail = w;
}

/* The view's end: the tail folded at T; the pairs left, whose free came
 * after T, count their block as live at T. */
void tail_end(vt_proc *p, uint64_t upto, int all)
{
    tail_fold(p, upto, all);
    for (size_t i = 0; i < p->ntail; i++) {
        const vt_tail *e = &p->tail[i];
        if (!e->count) {
            p->units[e->unit].at_bytes += e->bytes;
            p->units[e->unit].at_count++;
        }
    }
}

/* Room for one more entry in a full list that the view's bound prunes (the
 * tail, the late frees), after the caller has pruned what the bound has
 * passed: grown 2x only if that freed less than half; -1 at VT_TAIL_CAP
 * entries or without memory (the caller then gives up exactness: memory
 * the size of the events is not allowed). */
static int bound_list_room(void **v, size_t n, size_t *cap, size_t elem, size_t first)
{
    if (n >= VT_TAIL_CAP)
        return -1;
    if (*cap && n * 2 <= *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : first;
    void *nv = realloc(*v, nc * elem);
    if (!nv)
        return -1;
    *v = nv;
    *cap = nc;
    return 0;
}

void view_apply_slow(vt_analysis *a, vt_proc *p, uint32_t ui, int64_t bytes, int32_t count, uint64_t t)
{
    vt_unit *u = &p->units[ui];
    switch (p->view_mode) {
    case VT_AT_END:
        return; /* live at the end is live_bytes itself */
    case VT_AT_TIME:
        if (t <= p->t0 + a->cfg.at_ns) {
            u->at_bytes += bytes;
            u->at_count += count;
        }
        return;
    default:
        break;
    }
    if (p->tail_overflow || (p->cand_set && t <= p->cand)) {
        u->at_bytes += bytes;
        u->at_count += count;
        return;
    }
    if (p->ntail == p->captail) {
        /* full: fold what the bound has passed, grow only if that freed little */
        if (p->cand_set)
            tail_fold(p, p->cand, 0);
        void *v = p->tail;
        if (bound_list_room(&v, p->ntail, &p->captail, sizeof(vt_tail), 4096)) {
            /* event-sized memory is not allowed: give up exactness */
            tail_fold(p, 0, 1);
            p->tail_overflow = 1;
            view_bound_update(p);
            u->at_bytes += bytes;
            u->at_count += count;
            return;
        }
        p->tail = v;
    }
    vt_tail *e = &p->tail[p->ntail++];
    e->t = t;
    e->bytes = bytes;
    e->unit = ui;
    e->count = count;
}

/* A free after the view's bound (see vt_late): kept while it may still
 * come after the view.  Full: what the bound has passed goes; past
 * VT_TAIL_CAP entries nothing more is kept (late_overflow: the holders
 * then join to the blocks live at the end only). */
void late_free_note(vt_proc *p, uint64_t key, uint32_t ui, uint64_t size, uint64_t ta, uint64_t t)
{
    if (p->nlate == p->caplate) {
        if (p->cand_set) {
            size_t w = 0;
            for (size_t i = 0; i < p->nlate; i++)
                if (p->late[i].t > p->cand)
                    p->late[w++] = p->late[i];
            p->nlate = w;
        }
        void *v = p->late;
        if (bound_list_room(&v, p->nlate, &p->caplate, sizeof(vt_late), 1024)) {
            free(p->late);
            p->late = NULL;
            p->nlate = p->caplate = 0;
            p->late_overflow = 1;
            return;
        }
        p->late = v;
    }
    vt_late *e = &p->late[p->nlate++];
    e->key = key;
    e->size = size;
    e->ta = ta;
    e->t = t;
    e->unit = ui;
}

/* The view fixed at T: the late frees of blocks live at T (allocated at or
 * before it, freed after it) are kept, the rest go. */
void late_free_end(vt_proc *p, uint64_t T)
{
    size_t w = 0;
    for (size_t i = 0; i < p->nlate; i++)
        if (p->late[i].t > T && p->late[i].ta <= T)
            p->late[w++] = p->late[i];
    p->nlate = w;
}

/* view_below: the fast path's view bound (see free_fast), 0 when the
 * fast path may not decide (another view mode, overflow, no bound yet) */
void view_bound_update(vt_proc *p)
{
    if ((p->view_mode == VT_AT_AUTO || p->view_mode == VT_AT_MARKER) && !p->tail_overflow && p->cand_set)
        p->view_below = p->cand == UINT64_MAX ? UINT64_MAX : p->cand + 1;
    else
        p->view_below = 0;
}

void cand_raise(vt_proc *p, uint64_t t)
{
    if (!p->cand_set || t > p->cand) {
        p->cand = t;
        p->cand_set = 1;
        view_bound_update(p);
    }
}

/* --- step occurrences --- */

uint32_t occ_upper(const vt_occ *o, uint64_t t)
{
    uint32_t lo = 0, hi = o->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (o->t[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* occurrences at or before t (approximate to the stride) */
double occ_count(const vt_occ *o, uint64_t t)
{
    return (double)occ_upper(o, t) * o->stride;
}

/* --- accounting --- */

/* A point of the device's allocated-vs-reserved series: at most
 * VT_ALLOC_SERIES_MAX, every stride-th kept (the stride doubles when
 * full); the peaks are kept apart (vt_devstate). */
void alloc_series_point(vt_proc *p, vt_devstate *d, uint64_t t)
{
    (void)p;
    if (!d->series) {
        if (!(d->series = malloc(VT_ALLOC_SERIES_MAX * sizeof(*d->series))))
            return;
        d->series_stride = 1;
    }
    vt_alloc_point pt = {t, d->live[VT_MEM_TENSOR], d->reserved};
    if (d->series_seen++ % d->series_stride)
        return;
    if (d->nseries == VT_ALLOC_SERIES_MAX) {
        for (uint32_t i = 0; i < VT_ALLOC_SERIES_MAX / 2; i++)
            d->series[i] = d->series[2 * i];
        d->nseries = VT_ALLOC_SERIES_MAX / 2;
        d->series_stride *= 2;
    }
    d->series[d->nseries++] = pt;
}
