/* vt_replay_int.h - the replay's private helpers, shared by its parts
 * (docs/ARCHITECTURE.md, "The replay"):
 *
 *   vt_blocks.c          the live block tables (young, old, the filter)
 *   vt_replay_proc.c     a process: create, free, its tables, notes
 *   vt_replay_account.c  call-site units, growth buckets, the view, peaks
 *   vt_replay.c          allocations, frees, kernels; the hot path; feed
 *   vt_replay_events.c   failed allocations, VMM, pools, NVTX, the header
 *   vt_replay_finish.c   end of process: growth, leaks, steps
 *
 * The accounting helpers are inline here: the batch loop of vt_replay.c
 * and the handlers of every part share them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vt_analyze_int.h"
#include "vt_error.h"
#ifndef VT_REPLAY_INT_H
#define VT_REPLAY_INT_H

#define VT_MAX_ID (1u << 26)
#ifdef VT_ANALYZE_SMALL_BUFFERS
/* the fuzz build (-DVT_FUZZ=ON): a fuzz input frees a few hundred blocks;
 * 128 KiB mapped and zeroed per replay was a third of a run under ASan */
#define VT_FREED_CACHE (1u << 10)
#else
#define VT_FREED_CACHE (1u << 14)
#endif
#define VT_TAIL_CAP (8u << 20)
#define VT_POOL_SAMPLES 256
/* Sizes above this are not real allocations (a corrupt or hostile trace):
 * clamped and counted, so that the signed byte counters cannot overflow. */
#define VT_MAX_SIZE (1ull << 44)

/* A host event at t, earlier than the latest host time seen (last): time
 * ran backwards (a clock stepped, a damaged or crafted trace).  Counted,
 * the largest step kept, and the earliest time, so that the duration
 * spans every event and cannot wrap. */
static inline __attribute__((cold)) void time_back_note(vt_proc *p, uint64_t t, uint64_t last)
{
    p->time_back++;
    if (last - t > p->time_back_max)
        p->time_back_max = last - t;
    if (!p->t_min || t < p->t_min)
        p->t_min = t;
}

static inline uint64_t clamp_size(vt_proc *p, uint64_t size)
{
    if (size <= VT_MAX_SIZE)
        return size;
    p->absurd_sizes++;
    return VT_MAX_SIZE;
}

/* A freed young block leaves its address behind (unit VT_DEAD, its slot
 * still counted in `used`) until the table is rebuilt or migrates: the next
 * allocation at that address finds it, and then knows without the old
 * table's filter that no old block is there (old blocks only come from a
 * migration, which clears the dead ones, and an address is never live in
 * both tables); a free marks the slot instead of shifting its neighbours.
 * The old table has none. */
#define VT_DEAD UINT32_MAX

/* Young and old blocks.  New blocks go to a small table that stays in
 * cache (VT_YOUNG_CAP slots); when it is half full, its blocks move to the
 * growable old table, whose addresses are also set in a filter.  Most
 * frees are of recent blocks and touch only the young table; an address
 * not in the young one is looked up in the old one only when the filter
 * says it may be there (so a large set of long-lived blocks, e.g. a leak,
 * no longer costs a cache miss per event). */
#define VT_YOUNG_CAP (1u << 15)
/* The filter: at least 2^22 bits, at least 16 per old block; each address
 * sets 3 bits of one 64-bit word (a blocked Bloom filter: one load per
 * test), so an address that is in no old block still goes to the old
 * table (a cache miss) about once in 500 at 1 block per 16 bits, where one
 * bit per address did once in 16. */
#define VT_FILTER_MIN_WORDS (1u << 16)

/* Tensors of PyTorch's caching allocator (its trace tracker) lie inside
 * its segments, DEVICE blocks at the same addresses: their blocks are keyed
 * apart, by the address with its lowest bit set (the allocator's blocks are
 * 512-byte aligned, the driver's at least 256).  Consumers and reports see
 * the real address. */
static inline uint64_t blk_key(uint64_t addr, unsigned api)
{
    return addr | (uint64_t)(api == VT_API_CACHING_ALLOCATOR);
}

/* ---- shared between the parts */

int blocks_grow(vt_blockmap *b);
void blocks_remove(vt_blockmap *b, vt_block *s);
void filt_false_positive(vt_proc *p);
vt_block *young_probe(vt_proc *p, uint64_t addr);
vt_block *blocks_lookup(vt_proc *p, uint64_t addr, vt_blockmap **table);
char *xstrdup(const char *s);
int grow_table(void **tab, size_t *n, size_t elem, uint32_t id);
void add_note(vt_proc *p, int sev, const char *text);
int is_resident(unsigned kind);
vt_unit *get_unit_slow(vt_proc *p, uint32_t stack, uint32_t device, unsigned kind, unsigned api,
                              uint32_t *idx) __attribute__((noinline));
int growth_touch_slow(vt_unit *u, uint64_t t);
void tail_end(vt_proc *p, uint64_t upto, int all);
void late_free_note(vt_proc *p, uint64_t key, uint32_t ui, uint64_t size, uint64_t ta, uint64_t t);
void late_free_end(vt_proc *p, uint64_t T);
/* a free after the view's bound (the auto and marker views): its block kept */
static inline void late_free_check(vt_proc *p, uint64_t key, uint32_t ui, uint64_t size, uint64_t ta, uint64_t t)
{
    if ((p->view_mode == VT_AT_AUTO || p->view_mode == VT_AT_MARKER) && !p->late_overflow &&
        !(p->cand_set && t <= p->cand))
        late_free_note(p, key, ui, size, ta, t);
}
void view_apply_slow(vt_analysis *a, vt_proc *p, uint32_t ui, int64_t bytes, int32_t count, uint64_t t)
    __attribute__((noinline));
void view_bound_update(vt_proc *p);
void cand_raise(vt_proc *p, uint64_t t);
double occ_count(const vt_occ *o, uint64_t t);
/* how many kept occurrences of o are at or before t (o->t is sorted) */
uint32_t occ_upper(const vt_occ *o, uint64_t t);
int check_device(vt_proc *p, uint32_t *device);
int feed_other(vt_analysis *a, vt_proc *p, const vt_event *ev);
void alloc_series_point(vt_proc *p, vt_devstate *d, uint64_t t) __attribute__((noinline));

/* live blocks: same scheme, inline 32-byte slots, Fibonacci hashing (the
 * top bits of addr * golden ratio: cheap, and mixes aligned addresses) */
static inline size_t blk_home(const vt_blockmap *b, uint64_t addr)
{
    return (size_t)((addr * 0x9E3779B97F4A7C15ull) >> b->shift);
}
/* the live block at addr, or NULL */
static inline vt_block *blocks_find(const vt_blockmap *b, uint64_t addr)
{
    if (!b->cap)
        return NULL;
    size_t mask = b->cap - 1, j = blk_home(b, addr);
    while (b->slots[j].addr) {
        if (b->slots[j].addr == addr) /* an address is in at most one slot */
            return b->slots[j].unit == VT_DEAD ? NULL : &b->slots[j];
        j = (j + 1) & mask;
    }
    return NULL;
}
static inline uint64_t filt_mask(const vt_proc *p, uint64_t addr, size_t *word)
{
    uint64_t h = addr * 0xD6E8FEB86659FD93ull;
    *word = (size_t)(h >> p->filter_shift);
    return (1ull << ((h >> 20) & 63)) | (1ull << ((h >> 26) & 63)) | (1ull << ((h >> 32) & 63));
}
static inline int filt_maybe(const vt_proc *p, uint64_t addr)
{
    if (!p->old_filter)
        return 0;
    size_t w;
    uint64_t m = filt_mask(p, addr, &w);
    return (p->old_filter[w] & m) == m;
}
/* The unit of (stack, device, kind): the one last used by this stack,
 * inline; else looked up or created out of line. */
static inline __attribute__((always_inline)) vt_unit *get_unit(vt_proc *p, uint32_t stack, uint32_t device,
                                                              unsigned kind, unsigned api, uint32_t *idx)
{
    if (stack < p->nstack_unit && p->stack_unit[stack]) {
        vt_unit *c = &p->units[p->stack_unit[stack] - 1];
        if (c->device == device && c->kind == kind) {
            *idx = p->stack_unit[stack] - 1;
            return c;
        }
    }
    return get_unit_slow(p, stack, device, kind, api, idx);
}
/* Most allocations fall in the site's current bucket: nothing to do,
 * decided inline by one comparison of its allocation count with where
 * the next bucket starts (g_next, 0 before the site's first allocation, so
 * that one goes the slow way).  Frees never open a bucket: they only
 * lower the current one's floor (growth_after). */
static inline __attribute__((always_inline)) int growth_touch(vt_proc *p, vt_unit *u, uint64_t t)
{
    (void)p;
    if (__builtin_expect(u->allocs < u->g_next, 1))
        return 0;
    return growth_touch_slow(u, t);
}
/* after a free: the current bucket's floor (read from its copy in the
 * unit, which the events keep in cache) */
/* A free after the site's last allocation: its time and the live bytes
 * after it, for the levels between the last allocation and the end of the
 * growth window, known only at the finish.  When the log is full the two
 * frees closest in time become one, at the earlier one's time (the level
 * falls a little early: never more growth than there was). */
void growth_log_merge(vt_unit *u);
static inline void growth_log(vt_unit *u, uint64_t t)
{
    if (__builtin_expect(!u->floor, 0))
        return;
    if (__builtin_expect(u->g_nlog == VT_GROWTH_LOG, 0))
        growth_log_merge(u);
    uint64_t *lg = u->floor + 2 * VT_GROWTH_BUCKETS + 2 * u->g_nlog++;
    lg[0] = t;
    lg[1] = u->live_bytes > 0 ? (uint64_t)u->live_bytes : 0;
}
static inline void growth_after(vt_unit *u)
{
    uint64_t live = u->live_bytes > 0 ? (uint64_t)u->live_bytes : 0;
    if (live < u->floor_cur) {
        u->floor_cur = live;
        u->floor[u->gcur] = live;
    }
}
/* Every allocation and free: the common cases (the event is at or before
 * the bound, or goes to a tail with room) inline, the rest out of line. */
static inline __attribute__((always_inline)) void view_apply(vt_analysis *a, vt_proc *p, uint32_t ui, int64_t bytes,
                                                              int32_t count, uint64_t t)
{
    if (p->view_mode == VT_AT_AUTO || p->view_mode == VT_AT_MARKER) {
        if (p->tail_overflow || (p->cand_set && t <= p->cand)) {
            p->units[ui].at_bytes += bytes;
            p->units[ui].at_count += count;
            return;
        }
        if (p->ntail < p->captail) {
            vt_tail *e = &p->tail[p->ntail++];
            e->t = t;
            e->bytes = bytes;
            e->unit = ui;
            e->count = count;
            return;
        }
    }
    view_apply_slow(a, p, ui, bytes, count, t);
}
/* A block's part in the view, applied once, when its life ends (free,
 * overlap, VMM release): +size if allocated at or before T, -size if freed
 * at or before T.  Blocks still live at the end are added by
 * vt_proc_finish() from the block tables, so an allocation costs nothing
 * here, and a block whose allocation and free both precede the bound (net
 * zero) costs one comparison. */
static inline __attribute__((always_inline)) void view_pair(vt_analysis *a, vt_proc *p, uint32_t ui, uint64_t size,
                                                             uint64_t t_alloc, uint64_t t)
{
    if (p->view_mode == VT_AT_AUTO || p->view_mode == VT_AT_MARKER) {
        if (p->tail_overflow) /* every event counts: at = live (finish) */
            return;
        if (p->cand_set && t <= p->cand && t_alloc <= p->cand)
            return;
    } else if (p->view_mode == VT_AT_END) {
        return;
    }
    view_apply(a, p, ui, (int64_t)size, 1, t_alloc);
    view_apply(a, p, ui, -(int64_t)size, -1, t);
}
/* Once per kernel: the stride is a power of two (1, doubled), so a mask
 * instead of a division; the common case (not kept) inline. */
static inline void occ_add(vt_occ *o, uint64_t t, int alloc_ok)
{
    if (!o->t) {
        if (!alloc_ok || !(o->t = malloc(VT_OCC_MAX * sizeof(uint64_t))))
            return;
        o->stride = 1;
    }
    if (o->seen++ & (o->stride - 1))
        return;
    if (o->n == VT_OCC_MAX) { /* keep every other one, double the stride */
        for (uint32_t i = 0; i < VT_OCC_MAX / 2; i++)
            o->t[i] = o->t[2 * i];
        o->n = VT_OCC_MAX / 2;
        o->stride *= 2;
        if ((o->seen - 1) & (o->stride - 1))
            return;
    }
    o->t[o->n++] = t;
}
/* A tensor unit's snapshot at the allocated peak, before its live bytes
 * change (the tensor kind only: no other unit pays for it). */
static inline __attribute__((always_inline)) void tk_sync(vt_unit *u, const vt_devstate *d)
{
    if (u->kind == VT_MEM_TENSOR && u->tk_epoch != d->tpeak_epoch) {
        u->tk_bytes = u->live_bytes;
        u->tk_count = vt_unit_live_count(u);
        u->tk_epoch = d->tpeak_epoch;
    }
}
static inline void pk_sync(vt_proc *p, vt_unit *u)
{
    (void)p;
    uint64_t e = u->dev->peak_epoch;
    if (u->pk_epoch != e) {
        u->pk_bytes = u->live_bytes;
        u->pk_count = vt_unit_live_count(u);
        u->pk_epoch = e;
    }
    tk_sync(u, u->dev);
}
/* An allocation of `size` at t in unit u (on device d), after its growth
 * bucket is current (growth_touch). */
static inline __attribute__((always_inline)) void account_alloc_rest(vt_proc *p, vt_unit *u, vt_devstate *d,
                                                                      uint64_t size, uint64_t t)
{
    if (u->pk_epoch != d->peak_epoch) { /* pk_sync */
        u->pk_bytes = u->live_bytes;
        u->pk_count = vt_unit_live_count(u);
        u->pk_epoch = d->peak_epoch;
    }
    tk_sync(u, d);
    u->live_bytes += (int64_t)size;
    u->allocs++;
    u->alloc_bytes += size;
    u->g_last_t = t; /* growth: the level after the site's last allocation (vt_replay_finish.c) */
    u->g_last_live = (uint64_t)u->live_bytes;
    u->g_last_floor = u->floor_cur;
    u->g_nlog = 0;
    if ((uint64_t)u->live_bytes > u->max_live)
        u->max_live = (uint64_t)u->live_bytes;
    /* An allocation that arrives after a peak (an activity record, flushed
     * late: a module's globals) but was made while the peak's level held
     * (before its peak_until) is not freed yet, so it was live at that
     * peak: the peak grows by it, at its time; the call sites at the peak
     * (the lazy snapshot) by it too. */
    d->live[u->kind] += (int64_t)size;
    if (__builtin_expect(t < d->peak_kind_t[u->kind] || t < d->peak_kind_until[u->kind], 0)) {
        d->peak_kind[u->kind] += (int64_t)size;
        if (t > d->peak_kind_t[u->kind])
            d->peak_kind_t[u->kind] = t;
        u->tk_bytes += (int64_t)size; /* (read for tensors only) */
        u->tk_count++;
    } else if (d->live[u->kind] > d->peak_kind[u->kind]) {
        d->peak_kind[u->kind] = d->live[u->kind];
        d->peak_kind_t[u->kind] = t;
        d->peak_kind_until[u->kind] = 0;
        if (u->kind == VT_MEM_TENSOR) { /* a new allocated peak: every tensor unit's snapshot is stale */
            d->tpeak_epoch++;
            u->tk_bytes = u->live_bytes;
            u->tk_count = vt_unit_live_count(u);
            u->tk_epoch = d->tpeak_epoch;
        }
    } else if (!d->peak_kind_until[u->kind])
        d->peak_kind_until[u->kind] = t;
    if (u->resident) {
        d->live_dev += (int64_t)size;
        /* a module's globals come in activity records, late by design:
         * one that comes while the peak's level still holds (nothing
         * resident allocated or freed since) joins that level, as one
         * made before it ended does, instead of starting a new peak whose
         * call sites would be taken at the stream's later time (tensors
         * freed since then would be missing) */
        if (__builtin_expect(t < d->peak_t || t < d->peak_until ||
                                 (u->kind == VT_MEM_DEVICE_STATIC && !d->peak_until && d->peak > 0),
                             0)) {
            d->peak += (int64_t)size;
            if (t > d->peak_t)
                d->peak_t = t;
            u->pk_bytes += (int64_t)size;
            u->pk_count++;
        } else if (d->live_dev > d->peak) {
            d->peak = d->live_dev;
            d->peak_t = t;
            d->peak_until = 0;
            d->peak_epoch++;
            u->pk_bytes = u->live_bytes;
            u->pk_count = vt_unit_live_count(u);
            u->pk_epoch = d->peak_epoch;
        } else if (!d->peak_until)
            d->peak_until = t;
    }
    if (u->segment) {
        p->c10_allocs++;
        p->c10_live += (int64_t)size;
        if (p->c10_live > (int64_t)p->c10_bytes_peak)
            p->c10_bytes_peak = (uint64_t)p->c10_live;
        d->reserved += (int64_t)size;
        if (d->reserved > d->reserved_peak) {
            d->reserved_peak = d->reserved;
            d->reserved_peak_t = t;
        }
        alloc_series_point(p, d, t);
    }
}
static inline __attribute__((always_inline)) int account_alloc(vt_analysis *a, vt_proc *p, uint32_t ui, uint64_t size,
                                                                uint64_t t)
{
    (void)a;
    vt_unit *u = &p->units[ui];
    if (growth_touch(p, u, t))
        return VT_ERR_NOMEM;
    account_alloc_rest(p, u, u->dev, size, t);
    return 0;
}
/* A free of a block of `size` allocated at t_alloc, at t, in unit u (on
 * device d), after its growth bucket is current; the view is left to the
 * caller (view_pair). */
static inline __attribute__((always_inline)) void account_free_rest(vt_proc *p, vt_unit *u, vt_devstate *d,
                                                                     uint64_t size, uint64_t t_alloc, uint64_t t)
{
    if (u->pk_epoch != d->peak_epoch) { /* pk_sync */
        u->pk_bytes = u->live_bytes;
        u->pk_count = vt_unit_live_count(u);
        u->pk_epoch = d->peak_epoch;
    }
    tk_sync(u, d);
    u->live_bytes -= (int64_t)size;
    u->frees++;
    growth_log(u, t);
    if (t >= t_alloc)
        u->lifetime_sum += t - t_alloc;
    growth_after(u);
    d->live[u->kind] -= (int64_t)size;
    if (!d->peak_kind_until[u->kind])
        d->peak_kind_until[u->kind] = t;
    if (u->resident) {
        d->live_dev -= (int64_t)size;
        if (!d->peak_until)
            d->peak_until = t;
    }
    if (u->segment) {
        p->c10_live -= (int64_t)size;
        d->reserved -= (int64_t)size;
        alloc_series_point(p, d, t);
    }
}
static inline __attribute__((always_inline)) int account_free(vt_analysis *a, vt_proc *p, uint32_t ui, uint64_t size,
                                                               uint64_t t_alloc, uint64_t t)
{
    vt_unit *u = &p->units[ui];
    account_free_rest(p, u, u->dev, size, t_alloc, t);
    view_pair(a, p, ui, size, t_alloc, t);
    return 0;
}

/* A block the current event begins or ends, for the consumer
 * (vt_analysis_set_consumer); nothing without one. */
static inline void vt_replay_note_block(const vt_analysis *a, vt_proc *p, vt_block_op op, uint64_t addr, uint32_t ui,
                                        uint64_t size, uint64_t t_alloc, uint64_t t)
{
    if ((!a->consumer && !p->test_open) || p->nrb == VT_REPLAY_MAX_BLOCKS)
        return;
    const vt_unit *u = &p->units[ui];
    vt_replay_block *b = &p->rb[p->nrb++];
    b->op = op;
    b->address = addr;
    b->size = size;
    b->t_alloc = t_alloc;
    b->t = t;
    b->device = u->device;
    b->stack = u->stack;
    b->unit = ui;
    b->kind = u->kind;
    b->api = u->api;
}

#endif
