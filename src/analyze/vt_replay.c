
/* vt_replay.c - replays the events of one process into live blocks, per call
 * site accounting, peaks, the view at "end of real work", growth floors,
 * steps, pools and oddities.  Memory: the live blocks, the unique
 * definitions and per-site state; never proportional to the event count
 * (the only event-sized buffer, the view tail, is pruned as kernels arrive
 * and capped).  Touches nothing outside src/analyze and src/core headers.
 *
 * View at T ("what was live when the real work ended"): live(T) per site =
 * bytes allocated at or before T minus bytes of those freed at or before T.
 * T is the end of the last kernel (or the last occurrence of a marker) and
 * is only known at the end, but it never decreases while streaming.  A
 * block's part is settled when its life ends (free, overlap, VMM release),
 * when both of its times are known: +size if allocated at or before T,
 * -size if freed at or before T; a part at or before the current lower
 * bound `cand` is added to per-site counters at once, a later one waits in
 * `tail`, which is pruned whenever the bound moves (kernel records arrive
 * with a delay of one activity buffer); a block allocated before the bound
 * and freed after it waits there as one pair entry, which adds its +size
 * only if it is never folded (its free came after T).  Blocks still live
 * at the end are added by vt_proc_finish() from the block tables.  So an
 * allocation costs the view nothing, and a block allocated and freed before
 * the bound one comparison.
 *
 * Growth floors: each site's allocations are cut into VT_GROWTH_BUCKETS
 * buckets of 2^g_shift allocations (the width doubles, merging neighbours,
 * when the site outgrows them); per bucket the floor is the lowest live
 * byte count from its first allocation to the next bucket's, and the time
 * of its first allocation is kept.  A temporary allocated and freed every
 * step has floor 0; a list keeping each step's output has a rising floor;
 * a cache rises then stays flat.  Counting allocations, not time, keeps the
 * resolution where the site is active whatever its step length, and frees
 * after its last allocation (teardown) stay in its last, open bucket, which
 * the finish (vt_replay_finish.c) leaves out.
 */
#include "vt_replay_int.h"
#include "vt_grow.h"
int check_device(vt_proc *p, uint32_t *device)
{
    if (*device >= VT_MAX_DEVICES) {
        p->bad_device++;
        return 0;
    }
    if (*device + 1 > p->ndev_seen)
        p->ndev_seen = *device + 1;
    return 1;
}

/* The freed-address cache's slot of addr, also kept in the address's block
 * (vt_block.fslot, set where a slot takes an address: on_alloc,
 * alloc_fast), so that free_fast need not hash it again: the address
 * stays in its young slot once freed, and an allocation that reuses that
 * slot (most of them) keeps it. */
static inline uint32_t freed_slot(uint64_t addr)
{
    return (uint32_t)(vt_hash64(addr) & (VT_FREED_CACHE - 1));
}

static void freed_mark(vt_proc *p, uint64_t addr)
{
    if (!p->freed_cache) {
        p->freed_cache = calloc(VT_FREED_CACHE, sizeof(uint64_t));
        if (!p->freed_cache)
            return;
    }
    p->freed_cache[freed_slot(addr)] = addr;
}

static int freed_check(const vt_proc *p, uint64_t addr)
{
    return p->freed_cache && p->freed_cache[freed_slot(addr)] == addr;
}

/* A tensor of PyTorch's caching allocator counts as PyTorch counts it in
 * memory_allocated(): its request rounded up to the allocator's 512-byte
 * blocks (round_size: a 4-byte scalar holds 512 B).  The trace keeps the
 * request as made. */
static inline uint64_t alloc_size(const vt_ev_alloc *e)
{
    if (e->api != VT_API_CACHING_ALLOCATOR || e->size > VT_MAX_SIZE)
        return e->size;
    return e->size < 512 ? 512 : (e->size + 511) & ~(uint64_t)511;
}

static int on_alloc(vt_analysis *a, vt_proc *p, const vt_ev_alloc *e, uint64_t t)
{
    uint32_t device = e->device, ui;
    const uint64_t size = clamp_size(p, alloc_size(e));
    if (!check_device(p, &device))
        return 0;
    if (!e->address) {
        p->zero_frees++;
        return 0;
    }
    const uint64_t key = blk_key(e->address, e->api);
    vt_block *b = young_probe(p, key);
    if (!b)
        return VT_ERR_NOMEM;
    const int dead = b->addr && b->unit == VT_DEAD; /* freed young: in no old block */
    if (!b->addr && filt_maybe(p, key)) {
        vt_block *ob = blocks_find(&p->old, key);
        if (ob) { /* an old block's free was not seen: drop it here */
            p->overlap_allocs++;
            uint32_t old = ob->unit;
            uint64_t sz = ob->size, ta = ob->t;
            blocks_remove(&p->old, ob);
            vt_replay_note_block(a, p, VT_BLOCK_END, e->address, old, sz, ta, t);
            int rc = account_free(a, p, old, sz, ta, t);
            if (rc)
                return rc;
        } else {
            filt_false_positive(p);
        }
    }
    if (b->addr && !dead) {
        /* the young block's free was not seen: drop it here */
        p->overlap_allocs++;
        uint32_t old = b->unit;
        uint64_t sz = b->size, ta = b->t;
        if (!get_unit(p, e->site.stack, device, e->kind < VT_MEM__COUNT ? e->kind : 0,
                      e->api < VT_API__COUNT ? e->api : 0, &ui))
            return p->over_budget ? VT_ERR_LIMIT : VT_ERR_NOMEM;
        b->size = size;
        b->t = t;
        b->unit = ui;
        vt_replay_note_block(a, p, VT_BLOCK_END, e->address, old, sz, ta, t);
        vt_replay_note_block(a, p, VT_BLOCK_BEGIN, e->address, ui, size, t, t);
        int rc = account_free(a, p, old, sz, ta, t);
        if (rc)
            return rc;
        return account_alloc(a, p, ui, size, t);
    }
    if (!get_unit(p, e->site.stack, device, e->kind < VT_MEM__COUNT ? e->kind : 0,
                  e->api < VT_API__COUNT ? e->api : 0, &ui))
        return p->over_budget ? VT_ERR_LIMIT : VT_ERR_NOMEM;
    if (!p->units[ui].allocs)
        p->units[ui].thread = e->site.thread; /* its first allocation's */
    b->addr = key;
    b->fslot = freed_slot(key);
    if (!dead)
        p->blocks.used++; /* (a dead slot was taken already) */
    b->size = size;
    b->t = t;
    b->unit = ui;
    /* no need to forget the address in the freed cache: a later free of a
     * non-live address that was freed before is a double free either way */
    vt_replay_note_block(a, p, VT_BLOCK_BEGIN, e->address, ui, size, t, t);
    return account_alloc(a, p, ui, size, t);
}

static int on_free(vt_analysis *a, vt_proc *p, const vt_ev_free *e, uint64_t t)
{
    vt_blockmap *table = NULL;
    const uint64_t key = blk_key(e->address, e->api);
    vt_block *b = e->address ? blocks_lookup(p, key, &table) : NULL;
    if (!b) {
        if (!e->address)
            p->zero_frees++;
        else if (freed_check(p, key))
            p->double_frees++;
        else
            p->unknown_frees++;
        return 0;
    }
    uint32_t ui = b->unit;
    uint64_t sz = b->size, ta = b->t;
    blocks_remove(table, b);
    freed_mark(p, key);
    vt_replay_note_block(a, p, VT_BLOCK_END, e->address, ui, sz, ta, t);
    late_free_check(p, key, ui, sz, ta, t);
    return account_free(a, p, ui, sz, ta, t);
}

static inline __attribute__((always_inline)) void cand_raise_auto(vt_proc *p, uint64_t t)
{
    if (t > p->cand || !p->cand_set) { /* the common case first: kernels end later and later */
        p->cand = t;
        p->cand_set = 1;
        p->view_below = p->tail_overflow ? 0 : t + (t != UINT64_MAX);
    }
}

/* every kernel: counts, times, the view's bound; seen: a kernel came
 * before (kernel_fast knows it), so kernel_first is set */
static inline __attribute__((always_inline)) void kernel_times(vt_proc *p, const vt_ev_kernel *e, uint64_t t,
                                                               const int seen)
{
    uint64_t end = t + e->duration_ns;
    if ((!seen && !p->kernels) || t < p->kernel_first)
        p->kernel_first = t;
    p->kernels++;
    if (end > p->kernel_last_end)
        p->kernel_last_end = end;
    if (end > p->t_last)
        p->t_last = end;
    if (p->view_mode == VT_AT_AUTO)
        cand_raise_auto(p, end);
}

/* a kernel of a launch signature seen before: the gap (in kernels) since
 * its last occurrence into the Misra-Gries summary, count, occurrences */
static inline __attribute__((always_inline)) void launch_again(vt_proc *p, vt_launch_stat *s, uint64_t t)
{
    uint64_t gap = p->kernels - s->last_idx;
    int k, empty = -1;
    for (k = 0; k < 4; k++) {
        if (s->gcnt[k] && s->gap[k] == gap)
            break;
        if (!s->gcnt[k] && empty < 0)
            empty = k;
    }
    if (k < 4)
        s->gcnt[k]++;
    else if (empty >= 0) {
        s->gap[empty] = gap;
        s->gcnt[empty] = 1;
    } else
        for (k = 0; k < 4; k++)
            s->gcnt[k]--;
    s->count++;
    occ_add(&s->occ, t, p->nlstats <= 1024);
    s->last_idx = p->kernels;
    if (t > s->last_t)
        s->last_t = t;
}

static int on_kernel(vt_analysis *a, vt_proc *p, const vt_ev_kernel *e, uint64_t t)
{
    kernel_times(p, e, t, 0);
    /* per launch signature: count and regularity of the gaps (in kernels) */
    uint64_t key = e->launch_id ? e->launch_id : ((uint64_t)e->name_id | (1ULL << 32));
    uint64_t *v, direct;
    if (e->launch_id && e->launch_id < p->nlstat_by_launch && p->lstat_by_launch[e->launch_id]) {
        direct = p->lstat_by_launch[e->launch_id] - 1;
        v = &direct;
    } else {
        v = vt_map_get(&p->lstat_map, key);
        if (v && e->launch_id && e->launch_id < (1u << 20)) {
            if (e->launch_id >= p->nlstat_by_launch) {
                size_t nn = p->nlstat_by_launch ? p->nlstat_by_launch : 64;
                while (nn <= e->launch_id)
                    nn *= 2;
                uint32_t *nl = realloc(p->lstat_by_launch, nn * sizeof(*nl));
                if (nl) {
                    memset(nl + p->nlstat_by_launch, 0, (nn - p->nlstat_by_launch) * sizeof(*nl));
                    p->lstat_by_launch = nl;
                    p->nlstat_by_launch = nn;
                }
            }
            if (e->launch_id < p->nlstat_by_launch)
                p->lstat_by_launch[e->launch_id] = (uint32_t)*v + 1;
        }
    }
    vt_launch_stat *s;
    if (!v) {
        if (p->nlstats >= (1u << 20))
            return 0;
        if (VT_GROW(p->lstats, p->nlstats, p->caplstats, 64))
                return VT_ERR_NOMEM;
        if (vt_map_put(&p->lstat_map, key, p->nlstats))
            return VT_ERR_NOMEM;
        s = &p->lstats[p->nlstats++];
        memset(s, 0, sizeof(*s));
        s->key = key;
        s->first_t = t;
    } else {
        launch_again(p, &p->lstats[*v], t);
        (void)a;
        return 0;
    }
    s->count++;
    occ_add(&s->occ, t, p->nlstats <= 1024);
    s->last_idx = p->kernels;
    if (t > s->last_t)
        s->last_t = t;
    (void)a;
    return 0;
}

/* ------------------------------------------------------------ hot path
 *
 * The common allocation, free and kernel, decided inline in the batch loop
 * with few registers: each returns 0 when any condition of its short way
 * does not hold, before changing anything, and the event then goes through
 * on_alloc / on_free / on_kernel, which handle every case; so the short
 * ways only have to be right, never complete. */

static void view_pair_slow(vt_analysis *a, vt_proc *p, uint32_t ui, uint64_t size, uint64_t t_alloc, uint64_t t)
    __attribute__((noinline));
static void view_pair_slow(vt_analysis *a, vt_proc *p, uint32_t ui, uint64_t size, uint64_t t_alloc, uint64_t t)
{
    view_pair(a, p, ui, size, t_alloc, t);
}

/* A new block in the young table, of a unit its stack used last, on a
 * known device: 1 when done, 0 for the full way, or a vt_err.  Needs
 * fast_ready(). */
static inline __attribute__((always_inline)) int alloc_fast(vt_proc *p, const vt_ev_alloc *e, uint64_t t)
{
    const uint64_t addr = blk_key(e->address, e->api), size = alloc_size(e);
    const uint32_t device = e->device, stack = e->site.stack;
    const unsigned kind = e->kind;
    if (__builtin_expect(size > VT_MAX_SIZE || !e->address || stack >= p->nstack_unit, 0))
        return 0;
    const uint32_t su = p->stack_unit[stack];
    if (__builtin_expect(!su, 0))
        return 0;
    /* a unit's device passed check_device() and its kind is in range */
    vt_unit *u = &p->units[su - 1];
    if (__builtin_expect(u->device != device || u->kind != kind, 0))
        return 0;
    vt_block *slots = p->blocks.slots;
    const size_t mask = p->blocks.cap - 1;
    size_t j = blk_home(&p->blocks, addr);
    int dead = 0;
    while (slots[j].addr) {
        if (slots[j].addr == addr) {
            if (slots[j].unit != VT_DEAD) /* overlapping allocation */
                return 0;
            dead = 1; /* freed young block: no old block there */
            break;
        }
        j = (j + 1) & mask;
    }
    vt_block *const b = &slots[j];
    if (!dead) {
        if ((p->blocks.used + 1) * 2 > p->blocks.cap /* full: rebuild or migrate */
            || filt_maybe(p, addr))                                   /* maybe an old block there */
            return 0;
        b->fslot = freed_slot(addr); /* (an empty slot until its address is set below) */
    }
    if (__builtin_expect(u->allocs >= u->g_next, 0)) {
        int rc = growth_touch_slow(u, t);
        if (rc)
            return rc;
    }
    b->addr = addr;
    b->size = size;
    b->t = t;
    b->unit = su - 1;
    if (!dead)
        p->blocks.used++; /* (a dead slot was taken already) */
    account_alloc_rest(p, u, u->dev, size, t);
    return 1;
}

/* A free of a young block: 1 when done, 0 for the full way, or a vt_err;
 * when done, the block's unit, size and allocation time in *ui_out,
 * *size_out and *ta_out (for the consumer).  Needs fast_ready(). */
static inline __attribute__((always_inline)) int free_fast(vt_analysis *a, vt_proc *p, const vt_ev_free *e, uint64_t t,
                                                           uint32_t *ui_out, uint64_t *size_out, uint64_t *ta_out)
{
    const uint64_t addr = blk_key(e->address, e->api);
    if (__builtin_expect(!e->address, 0))
        return 0;
    vt_block *slots = p->blocks.slots;
    const size_t mask = p->blocks.cap - 1;
    size_t j = blk_home(&p->blocks, addr);
    for (;;) {
        if (slots[j].addr == addr)
            break;
        if (!slots[j].addr)
            return 0;
        j = (j + 1) & mask;
    }
    vt_block *const b = &slots[j];
    const uint32_t ui = b->unit;
    if (__builtin_expect(ui == VT_DEAD, 0)) /* a double free, probably */
        return 0;
    const uint64_t size = b->size, ta = b->t;
    *ui_out = ui;
    *size_out = size;
    *ta_out = ta;
    vt_unit *u = &p->units[ui];
    b->unit = VT_DEAD; /* the slot stays taken */
    p->freed_cache[b->fslot] = addr; /* freed_mark */
    account_free_rest(p, u, u->dev, size, ta, t);
    /* view_pair: allocated before the bound; freed before it too (nothing
     * to do), or after it: the block's pair waits in the tail, which adds
     * its +size only if the free turns out to come after the view (the
     * allocation counting at once and the free waiting, as view_pair does,
     * cost two more updates of the unit now and two when folded) */
    const uint64_t below = p->view_below;
    const int before = ta < below;
    if (__builtin_expect(before, 1) && t < below)
        return 1;
    late_free_check(p, addr, ui, size, ta, t);
    if (__builtin_expect(before, 1) && __builtin_expect(p->ntail < p->captail, 1)) {
        vt_tail *w = &p->tail[p->ntail++];
        w->t = t;
        w->bytes = (int64_t)size;
        w->unit = ui;
        w->count = 0;
        return 1;
    }
    view_pair_slow(a, p, ui, size, ta, t);
    return 1;
}

/* A kernel of a launch signature seen before: 1 when done, 0 for the full
 * way.  Needs fast_ready(). */
static inline __attribute__((always_inline)) int kernel_fast(vt_proc *p, const vt_ev_kernel *e, uint64_t t)
{
    const uint32_t lid = e->launch_id;
    if (__builtin_expect(lid >= p->nlstat_by_launch, 0))
        return 0;
    /* lstat_by_launch[0] stays 0 (on_kernel fills in nonzero ids only):
     * a kernel without a launch id goes the full way */
    const uint32_t li = p->lstat_by_launch[lid];
    if (__builtin_expect(!li, 0))
        return 0;
    kernel_times(p, e, t, 1); /* a kernel came before: this launch's */
    launch_again(p, &p->lstats[li - 1], t);
    return 1;
}

/* Per event: allocations, frees and kernels (nearly all of a trace) take
 * the short way; the rest goes through feed_other(). */
static inline __attribute__((always_inline)) int proc_feed(vt_analysis *a, vt_proc *p, const vt_event *ev)
{
    uint64_t t = ev->time_ns;
    p->records++;
    switch (ev->type) {
    case VT_EV_ALLOC:
    case VT_EV_FREE:
        p->nev[ev->type]++;
        if (__builtin_expect(!p->have_t0, 0)) {
            p->have_t0 = 1;
            p->t0 = t;
        }
        if (t > p->t_last)
            p->t_last = t;
        if (t > p->t_seq)
            p->t_seq = t;
        else if (__builtin_expect(t < p->t_seq, 0) &&
                 !(ev->type == VT_EV_ALLOC && ev->u.alloc.kind == VT_MEM_DEVICE_STATIC)) /* module globals: late */
            time_back_note(p, t, p->t_seq);
        if (ev->type == VT_EV_ALLOC)
            return on_alloc(a, p, &ev->u.alloc, t);
        return on_free(a, p, &ev->u.free, t);
    case VT_EV_KERNEL:
        p->nev[VT_EV_KERNEL]++;
        if (__builtin_expect(!p->have_t0, 0)) {
            p->have_t0 = 1;
            p->t0 = t;
        }
        return on_kernel(a, p, &ev->u.kernel, t);
    default:
        if ((unsigned)ev->type < VT_EV__MAX)
            p->nev[ev->type]++;
        return feed_other(a, p, ev);
    }
}

/* every event the batch loop does not finish itself */
static int feed_slow(vt_analysis *a, vt_proc *p, const vt_event *ev) __attribute__((noinline));
static int feed_slow(vt_analysis *a, vt_proc *p, const vt_event *ev)
{
    return proc_feed(a, p, ev);
}

/* What the fast paths take for granted: t0 seen (once set, it stays), a
 * young table and the freed-address cache (made here if missing, as the
 * first allocation and the first free would make them: the same tables,
 * the same results; they stay until vt_proc_free). */
static int fast_ready(vt_proc *p) __attribute__((noinline));
static int fast_ready(vt_proc *p)
{
    if (!p->have_t0)
        return 0;
    if (!p->blocks.cap && blocks_grow(&p->blocks))
        return 0;
    if (!p->freed_cache && !(p->freed_cache = calloc(VT_FREED_CACHE, sizeof(uint64_t))))
        return 0;
    return 1;
}

/* One event the short way with the block it begins or ends noted for the
 * consumer (vt_replay_note_block, as on_alloc and on_free note it): 1 when
 * done, 0 for the full way (nothing changed), or a vt_err.  Counts and
 * times as proc_feed() does them, when done.  Needs fast_ready(). */
static inline __attribute__((always_inline)) int feed_fast_noted(vt_analysis *a, vt_proc *p, const vt_event *e)
{
    const uint64_t t = e->time_ns;
    int rc;
    switch (e->type) {
    case VT_EV_ALLOC:
        rc = alloc_fast(p, &e->u.alloc, t);
        if (rc <= 0)
            return rc;
        vt_replay_note_block(a, p, VT_BLOCK_BEGIN, e->u.alloc.address, p->stack_unit[e->u.alloc.site.stack] - 1,
                             alloc_size(&e->u.alloc), t, t);
        break;
    case VT_EV_FREE: {
        uint32_t ui;
        uint64_t size, ta;
        rc = free_fast(a, p, &e->u.free, t, &ui, &size, &ta);
        if (rc <= 0)
            return rc;
        vt_replay_note_block(a, p, VT_BLOCK_END, e->u.free.address, ui, size, ta, t);
        break;
    }
    case VT_EV_KERNEL:
        if (!kernel_fast(p, &e->u.kernel, t))
            return 0;
        p->records++;
        p->nev[VT_EV_KERNEL]++;
        return 1;
    default:
        return 0;
    }
    /* an allocation or a free, done: what proc_feed() does before either */
    p->records++;
    p->nev[e->type]++;
    if (t > p->t_last)
        p->t_last = t;
    if (t > p->t_seq)
        p->t_seq = t;
    else if (__builtin_expect(t < p->t_seq, 0) &&
             !(e->type == VT_EV_ALLOC && e->u.alloc.kind == VT_MEM_DEVICE_STATIC))
        time_back_note(p, t, p->t_seq);
    return 1;
}

/* With a consumer, or while a test is open: every event the short way
 * when it can (feed_fast_noted), else the full way, then the blocks it
 * began or ended to the test (vt_replay_tests.c) and to the consumer, with
 * the device's live bytes after it. */
static int feed_consumed(vt_analysis *a, vt_proc *p, const vt_event *ev, int n) __attribute__((noinline));
static int feed_consumed(vt_analysis *a, vt_proc *p, const vt_event *ev, int n)
{
    for (int i = 0; i < n; i++) {
        p->nrb = 0;
        int rc = 0;
        if (__builtin_expect(p->have_t0 && p->blocks.cap && p->freed_cache, 1))
            rc = feed_fast_noted(a, p, &ev[i]);
        if (rc < 0)
            return rc;
        if (!rc && (rc = feed_slow(a, p, &ev[i])))
            return rc;
        if (p->nrb && p->test_open && (rc = vt_tests_blocks(p, p->rb, p->nrb)))
            return rc;
        if (!a->consumer)
            continue;
        vt_replay_event re = {.ev = &ev[i], .proc = p->index, .nblocks = p->nrb, .blocks = p->rb, .reserved = -1};
        if (p->nrb) {
            const vt_devstate *d = &p->dev[p->rb[0].device];
            re.live_kind = d->live;
            re.live_device = d->live_dev;
            re.reserved = p->tensor_units ? d->reserved : -1;
        }
        rc = a->consumer(a->consumer_ctx, &re);
        if (rc)
            return rc;
    }
    return 0;
}

int vt_proc_feed(vt_analysis *a, vt_proc *p, const vt_event *ev)
{
    return vt_proc_feed_batch(a, p, ev, 1); /* the same ways as the report's */
}

/* The same as proc_feed() for each event, with the hot paths inline.  The
 * hot paths' event counts and their latest time are kept in locals and
 * added to p's when the batch returns (the stores into p's tables could
 * alias them: three updates in memory per event); proc_feed() counts into
 * p itself.  p->t_last is only a maximum until the finish reads it, so
 * the merge at the end is the same as a merge per event. */
__attribute__((aligned(64))) int vt_proc_feed_batch(vt_analysis *a, vt_proc *p, const vt_event *ev, int n)
{
    if (__builtin_expect(a->consumer != NULL || p->test_open, 0))
        return feed_consumed(a, p, ev, n);
    uint64_t nalloc = 0, nfree = 0, nkernel = 0, t_last = p->t_last, t_seq;
    int rc = 0, i = 0;
    /* until the fast paths can run (the trace's first events), the full way */
    if (__builtin_expect(!p->have_t0 || !p->blocks.cap || !p->freed_cache, 0)) {
        for (; i < n && !fast_ready(p); i++) {
            rc = feed_slow(a, p, &ev[i]);
            if (rc)
                return rc;
        }
        t_last = p->t_last;
    }
    t_seq = p->t_seq;
    for (; i < n; i++) {
        const vt_event *e = &ev[i];
        const uint64_t t = e->time_ns;
        switch (e->type) {
        case VT_EV_ALLOC:
            nalloc++;
            /* module globals come from CUPTI's activity, late, timed at their load */
            if (__builtin_expect(t < t_seq, 0) && e->u.alloc.kind != VT_MEM_DEVICE_STATIC)
                time_back_note(p, t, t_seq);
            t_seq = t > t_seq ? t : t_seq;
            t_last = t > t_last ? t : t_last;
            rc = alloc_fast(p, &e->u.alloc, t);
            if (__builtin_expect(rc == 0, 0))
                rc = on_alloc(a, p, &e->u.alloc, t);
            else if (rc > 0)
                rc = 0;
            if (__builtin_expect(rc != 0, 0))
                goto out;
            continue;
        case VT_EV_FREE:
            nfree++;
            if (__builtin_expect(t < t_seq, 0))
                time_back_note(p, t, t_seq);
            t_seq = t > t_seq ? t : t_seq;
            t_last = t > t_last ? t : t_last;
            uint32_t ui_unused;
            uint64_t size_unused, ta_unused;
            rc = free_fast(a, p, &e->u.free, t, &ui_unused, &size_unused, &ta_unused);
            if (__builtin_expect(rc == 0, 0))
                rc = on_free(a, p, &e->u.free, t);
            else if (rc > 0)
                rc = 0;
            if (__builtin_expect(rc != 0, 0))
                goto out;
            continue;
        case VT_EV_KERNEL:
            if (!kernel_fast(p, &e->u.kernel, t))
                break;
            nkernel++;
            continue;
        default:
            break;
        }
        p->t_seq = t_seq; /* the full way checks and moves it too */
        rc = feed_slow(a, p, e);
        t_seq = p->t_seq;
        if (rc)
            goto out;
        if (__builtin_expect(p->test_open, 0)) { /* a test began: the rest the full way */
            rc = feed_consumed(a, p, ev + i + 1, n - i - 1);
            goto out;
        }
    }
out:
    p->t_seq = t_seq;
    if (t_last > p->t_last)
        p->t_last = t_last;
    p->records += nalloc + nfree + nkernel;
    p->nev[VT_EV_ALLOC] += nalloc;
    p->nev[VT_EV_FREE] += nfree;
    p->nev[VT_EV_KERNEL] += nkernel;
    return rc;
}
