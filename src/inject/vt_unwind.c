/* vt_unwind.c - the x86-64 unwinder (see vt_unwind.h) with a lock-free
 * per-ip rule cache and a per-thread memo of recent walks.  May touch: the
 * calling thread's stack. */
#include "vt_unwind_int.h"
#include "vt_grow.h"
/* ---------------------------------------------------------------- unwinder */

#define MAX_SKIP 8
struct vt_unwinder {
    /* what a replay reads, first (the unwinder is 64-byte aligned) */
    _Atomic uint64_t epoch; /* bumped whenever cached rules or skip flags change: memos die */
    uint64_t uid;           /* this unwinder among all created (memos name it) */
    _Atomic(uint64_t) *cache;
    unsigned bits;
    _Atomic(vt_modmap *) map;
    vt_modmap **retired; /* old snapshots, freed with the unwinder */
    size_t nretired, capretired;
    atomic_flag scanning;
    _Atomic uint64_t last_scan_ns;
    vt_module_cb cb;
    void *cb_arg;
    char skip_prefix[MAX_SKIP][32];
    int nskip_prefix;
    uint64_t skip_addr[MAX_SKIP];
    int nskip_addr;
    int nstop; /* vt_unwinder_stop_at */
    uint64_t stop_start[MAX_SKIP], stop_end[MAX_SKIP];
    _Atomic uint64_t subs;  /* the loader's unload count when the map was made */
    /* counters, added to by every capturing thread: a line of their own */
    _Alignas(64) _Atomic uint64_t st_captures, st_frames, st_misses, st_fp, st_rescans, st_unknown, st_memo_full,
        st_memo_steps;
    /* one whole replay in 64, described (memo_sample) */
    _Atomic uint64_t st_smp_n, st_smp_span, st_smp_pages, st_smp_bp, st_smp_way, st_smp_pred, st_smp_tried,
        st_smp_wasted;
};
static _Atomic uint64_t g_unwinder_uids;

/* The loader's count of unloaded objects (dlpi_subs), ~0 if unknown: a
 * change means a module of our map may be gone (dlclose), and its
 * .eh_frame with it, so the map is rescanned before any CFI is read. */
static int subs_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    unsigned long long *out = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs))
        *out = info->dlpi_subs;
    return 1; /* the first object carries the counters */
}

static uint64_t loader_subs(void)
{
    unsigned long long s = ~0ull;
    dl_iterate_phdr(subs_cb, &s);
    return s;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void mark_skips(vt_unwinder *u, vt_modmap *m)
{
    for (size_t i = 0; i < m->n; i++) {
        vt_module *mod = &m->mods[i];
        const char *base = strrchr(mod->path, '/');
        base = base ? base + 1 : mod->path;
        mod->skip = 0;
        for (int k = 0; k < u->nskip_prefix; k++)
            if (strncmp(base, u->skip_prefix[k], strlen(u->skip_prefix[k])) == 0)
                mod->skip = 1;
        for (int k = 0; k < u->nskip_addr; k++)
            if (u->skip_addr[k] >= mod->start && u->skip_addr[k] < mod->end)
                mod->skip = 1;
    }
}

static int same_module(const vt_module *a, const vt_module *b)
{
    return a->start == b->start && a->end == b->end && strcmp(a->path, b->path) == 0;
}

/* Drop every compiled rule (code may have moved, or skip flags changed):
 * the epoch moves with them, which retires every thread's memo. */
static void forget_rules(vt_unwinder *u)
{
    size_t n = (size_t)1 << u->bits;
    for (size_t i = 0; i < n; i++)
        atomic_store_explicit(&u->cache[i], 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&u->epoch, 1, memory_order_release);
}

/* Rescan; report new modules; publish.  Returns nonzero if done. */
static int rescan(vt_unwinder *u, int force)
{
    uint64_t t = now_ns();
    if (!force && t - atomic_load_explicit(&u->last_scan_ns, memory_order_relaxed) < 100000000ull)
        return 0;
    if (atomic_flag_test_and_set_explicit(&u->scanning, memory_order_acquire))
        return 0;
    atomic_store_explicit(&u->last_scan_ns, t, memory_order_relaxed);
    uint64_t subs = loader_subs(); /* before the scan: an unload during it is seen next time */
    vt_modmap *nm = NULL, *old = atomic_load_explicit(&u->map, memory_order_acquire);
    int done = 0;
    if (vt_modmap_scan(&nm) != 0)
        goto out;
    mark_skips(u, nm);
    int removed = 0;
    if (old) {
        for (size_t i = 0; i < old->n; i++) {
            const vt_module *o = &old->mods[i];
            const vt_module *n = vt_modmap_find(nm, o->start);
            if (!n || !same_module(n, o))
                removed = 1;
        }
    }
    if (old && VT_GROW(u->retired, u->nretired, u->capretired, 16)) {
        vt_modmap_free(nm);
        goto out;
    }
    for (size_t i = 0; i < nm->n; i++) {
        const vt_module *n = &nm->mods[i];
        const vt_module *o = old ? vt_modmap_find(old, n->start) : NULL;
        if (!o || !same_module(n, o)) {
            if (u->cb)
                u->cb(u->cb_arg, n);
        }
    }
    if (removed) /* code may have moved */
        forget_rules(u);
    atomic_store_explicit(&u->map, nm, memory_order_release);
    atomic_store_explicit(&u->subs, subs, memory_order_release);
    if (old)
        u->retired[u->nretired++] = old;
    atomic_fetch_add_explicit(&u->st_rescans, 1, memory_order_relaxed);
    done = 1;
out:
    atomic_flag_clear_explicit(&u->scanning, memory_order_release);
    return done;
}

int vt_unwinder_create(vt_unwinder **out, unsigned cache_bits, vt_module_cb cb, void *cb_arg)
{
    *out = NULL;
    if (cache_bits == 0)
        cache_bits = 16;
    if (cache_bits > 24)
        return VT_ERR_INVALID;
    vt_unwinder *u = aligned_alloc(64, (sizeof(*u) + 63) & ~(size_t)63);
    if (u)
        memset(u, 0, sizeof(*u));
    if (!u)
        return VT_ERR_NOMEM;
    u->bits = cache_bits;
    u->uid = atomic_fetch_add(&g_unwinder_uids, 1) + 1;
    u->cache = calloc((size_t)1 << cache_bits, sizeof(*u->cache));
    if (!u->cache) {
        free(u);
        return VT_ERR_NOMEM;
    }
    atomic_flag_clear(&u->scanning);
    u->cb = cb;
    u->cb_arg = cb_arg;
    rescan(u, 1);
    if (!atomic_load(&u->map)) {
        vt_unwinder_free(u);
        return VT_ERR_NOMEM;
    }
    *out = u;
    return 0;
}

void vt_unwinder_free(vt_unwinder *u)
{
    if (!u)
        return;
    for (size_t i = 0; i < u->nretired; i++)
        vt_modmap_free(u->retired[i]);
    free(u->retired);
    vt_modmap_free(atomic_load(&u->map));
    free((void *)u->cache);
    free(u);
}

void vt_unwinder_skip_prefix(vt_unwinder *u, const char *prefix)
{
    if (!u || u->nskip_prefix >= MAX_SKIP)
        return;
    snprintf(u->skip_prefix[u->nskip_prefix++], sizeof(u->skip_prefix[0]), "%s", prefix);
    vt_modmap *m = atomic_load(&u->map);
    if (m)
        mark_skips(u, m);
    forget_rules(u); /* cached rules carry the skip flag */
}

void vt_unwinder_skip_addr(vt_unwinder *u, const void *addr)
{
    if (!u || u->nskip_addr >= MAX_SKIP)
        return;
    u->skip_addr[u->nskip_addr++] = (uint64_t)(uintptr_t)addr;
    vt_modmap *m = atomic_load(&u->map);
    if (m)
        mark_skips(u, m);
    forget_rules(u); /* cached rules carry the skip flag */
}

int vt_unwinder_stop_at(vt_unwinder *u, int n, const uint64_t *start, const uint64_t *end)
{
    if (!u || n < 0 || n > MAX_SKIP || (n && (!start || !end)))
        return VT_ERR_INVALID;
    for (int i = 0; i < n; i++) {
        u->stop_start[i] = start[i];
        u->stop_end[i] = end[i];
    }
    u->nstop = n;
    atomic_fetch_add_explicit(&u->epoch, 1, memory_order_release); /* memos of other walks die */
    return 0;
}

/* ip is a return address: the call lies in (start, end]. */
static inline int in_stop(const vt_unwinder *u, uint64_t ip)
{
    for (int i = 0; i < u->nstop; i++)
        if (ip - u->stop_start[i] - 1 < u->stop_end[i] - u->stop_start[i])
            return 1;
    return 0;
}

const vt_modmap *vt_unwinder_modmap(const vt_unwinder *u) { return u ? atomic_load(&((vt_unwinder *)u)->map) : NULL; }

static inline uint64_t hash_ip(uint64_t ip) { return ip * 0x9E3779B97F4A7C15ull; }

static uint64_t lookup_rule(vt_unwinder *u, vt_modmap **mapp, uint64_t ip, const vt_module **modp, int *in_module)
{
    uint64_t h = hash_ip(ip);
    size_t idx = (size_t)(h >> (64 - u->bits));
    uint64_t tag = (h >> 22) & ((1ull << (64 - R_TAG_SHIFT)) - 1);
    uint64_t e = atomic_load_explicit(&u->cache[idx], memory_order_relaxed);
    *modp = NULL;
    if (e && (e >> R_TAG_SHIFT) == tag) {
        *in_module = 1;
        return e & R_BODY_MASK;
    }
    atomic_fetch_add_explicit(&u->st_misses, 1, memory_order_relaxed);
    /* A miss reads a module's CFI: make sure no module was unloaded since
     * the map was made (one dl_iterate_phdr step, misses are rare). */
    if (loader_subs() != atomic_load_explicit(&u->subs, memory_order_acquire)) {
        if (!rescan(u, 1)) { /* another thread is rescanning: no rule this time */
            *in_module = 0;
            return rule_pack(R_UNKNOWN, 0, 0, 0, 0);
        }
        *mapp = atomic_load_explicit(&u->map, memory_order_acquire);
    }
    const vt_module *m = vt_modmap_find(*mapp, ip);
    if (!m && rescan(u, 0)) {
        *mapp = atomic_load_explicit(&u->map, memory_order_acquire);
        m = vt_modmap_find(*mapp, ip);
    }
    *modp = m;
    if (!m) {
        *in_module = 0;
        return rule_pack(R_UNKNOWN, 0, 0, 0, 0);
    }
    *in_module = 1;
    uint64_t rule = vt_cfi_compile_rule(m, ip - 1) | (m->skip ? R_SKIP : 0);
    atomic_store_explicit(&u->cache[idx], rule | tag << R_TAG_SHIFT, memory_order_relaxed);
    return rule;
}

/* Per-thread memo of recent walks.  A walk is a pure function of its
 * start state (ip, sp, bp), the rules of the ips it meets, and the stack
 * words it reads; the memo keeps, per step, the state and every word read
 * with its address.  When a new walk starts from the same state, re-reading
 * those words and finding the same values proves the same walk: no rule
 * lookups (the costly part: a cache-missing hash probe per frame in a big
 * process).  A saved rbp is verified only where the walk used it: code
 * without frame pointers keeps data in rbp, which differs from call to
 * call without changing the walk.  The first differing word leaves a
 * verified prefix, and the walk goes on from the state there.  Rules are
 * the same while the epoch is (it moves when cached rules are dropped). */
#ifndef VT_MEMO_WAYS
#define VT_MEMO_WAYS 32
#endif
#define MEMO_WAYS VT_MEMO_WAYS
#define MEMO_STEPS 48
#define MEMO_NONE 0xffffffffu /* memo.off: the step read no word (it ended the walk) */
typedef struct {
    uint64_t sp;            /* the step's stack pointer (rbp is read again on resuming) */
    uint64_t bp_at, bp_val; /* bp_at 0: rbp kept */
} memo_cold;
/* An entry, laid out for the replay, which reads the first line, then the
 * word offsets and the ips in a row: 12 bytes a step.  The word a step
 * reads is the return address, i.e. the next step's ip, so the ips double
 * as the values to verify, and a replay hands them out in place. */
typedef struct {
    uint64_t sp0, ip0, xkey; /* the start state and the caller's key */
    uint64_t epoch, uid;
    int max, nsteps, first_rec, n;
    int bp0_used;
    uint64_t bp0;
    uint64_t bp_used; /* bit i: the rbp loaded at step i was used (by a CFA or a frame-pointer step) */
    uint64_t walk;    /* this recording's id (g_walk_ids) */
    uint32_t off[MEMO_STEPS];     /* the return address word step i read, as an offset from sp0 */
    uint64_t ip[MEMO_STEPS + 1];  /* ip[i]: step i's ip; ip[i + 1]: the word step i read */
    /* the rbp loads in bp_used, as offsets from sp0 of where and what (a
     * used rbp points into the stack above sp0): 8 bytes a check, in a
     * row, where c[] would spread them over 24 */
    struct {
        uint32_t at, val;
    } bpc[MEMO_STEPS];
    memo_cold c[MEMO_STEPS];
} __attribute__((aligned(64))) memo;
_Static_assert(MEMO_STEPS <= 64, "bp_used is a 64-bit mask");

/* The unwinder's per-thread state, in one object so that a capture looks
 * it up once (VT_TLS_ADDR): the stack bounds, the counts not yet added to
 * the unwinder's totals, and the memo.  The memo is fully associative: the
 * sites of one program often reach the allocator at the same stack depth,
 * and must not evict each other; the caller's key (e.g. the innermost
 * Python frame) tells most of them apart before any word is read.
 * Candidates are found through a tag per entry (a hash of its start state
 * and key; 0: empty): 256 bytes in a row, not a line per entry. */
typedef struct {
    uint64_t stack_lo, stack_hi;
    int stack_state; /* 0 unknown, 1 known, 2 failed */
    uint32_t memo_age;
    uint64_t captures, frames, memo_full;
    uint64_t tag[MEMO_WAYS];
    uint32_t ages[MEMO_WAYS];
    /* next[w]: the way this thread's capture after one in way w used last
     * time; last: the way of the last capture.  A program repeats its
     * sequence of allocations (a training step), so the way after `last`
     * is tried first: sites at one depth with one key (threads without
     * Python frames) share a tag, and each candidate tried in vain costs
     * the steps it shares with the right one. */
    uint8_t next[MEMO_WAYS];
    uint32_t last;
    memo memo[MEMO_WAYS];
} uw_tls;
static __thread uw_tls t_uw;

/* Stack bounds of the calling thread, cached per thread. */
static int stack_bounds(uw_tls *T, uint64_t sp, uint64_t *lo, uint64_t *hi)
{
    if (T->stack_state == 0) {
        /* once per thread: the pthread stack (reads /proc/self/maps for
         * the main thread) */
        pthread_attr_t attr;
        void *addr = NULL;
        size_t size = 0;
        T->stack_state = 2;
        if (pthread_getattr_np(pthread_self(), &attr) == 0) {
            int rc = pthread_attr_getstack(&attr, &addr, &size);
            pthread_attr_destroy(&attr);
            if (rc == 0 && addr && size) {
                T->stack_lo = (uint64_t)(uintptr_t)addr;
                T->stack_hi = T->stack_lo + size;
                T->stack_state = 1;
            }
        }
    }
    /* on another stack (sigaltstack, a coroutine): no walk this time */
    if (T->stack_state != 1 || sp < T->stack_lo || sp >= T->stack_hi)
        return -1;
    *lo = T->stack_lo;
    *hi = T->stack_hi;
    return 0;
}

void vt_unwinder_get_stats(const vt_unwinder *u, vt_unwind_stats *st)
{
    vt_unwinder *w = (vt_unwinder *)u;
    memset(st, 0, sizeof(*st));
    if (!u)
        return;
    /* totals are added per thread in batches of 64 captures: include the
     * calling thread's pending part */
    st->captures = atomic_load(&w->st_captures) + (t_uw.captures & 63);
    st->frames = atomic_load(&w->st_frames) + t_uw.frames;
    st->cache_misses = atomic_load(&w->st_misses);
    st->cache_hits = st->frames > st->cache_misses ? st->frames - st->cache_misses : 0;
    st->fp_steps = atomic_load(&w->st_fp);
    st->rescans = atomic_load(&w->st_rescans);
    st->stops_unknown = atomic_load(&w->st_unknown);
    st->memo_full = atomic_load(&w->st_memo_full) + (t_uw.memo_full & 63);
    st->memo_steps = atomic_load(&w->st_memo_steps);
    st->sampled = atomic_load(&w->st_smp_n);
    st->sampled_span = atomic_load(&w->st_smp_span);
    st->sampled_pages = atomic_load(&w->st_smp_pages);
    st->sampled_bp = atomic_load(&w->st_smp_bp);
    st->sampled_way = atomic_load(&w->st_smp_way);
    st->sampled_pred = atomic_load(&w->st_smp_pred);
    st->sampled_tried = atomic_load(&w->st_smp_tried);
    st->sampled_wasted = atomic_load(&w->st_smp_wasted);
}

static _Atomic uint64_t g_walk_ids; /* the last id given to a recorded walk */

static inline uint64_t memo_tag(uint64_t sp0, uint64_t ip0, uint64_t xkey)
{
    uint64_t h = (sp0 ^ (ip0 * 0x9E3779B97F4A7C15ull) ^ (xkey * 0xC2B2AE3D27D4EB4Full));
    h ^= h >> 29;
    return h | 1;
}

/* The walk uses rbp: the load it came from becomes part of the proof. */
#define USE_BP()                                                                                              \
    do {                                                                                                      \
        if (bp_src < 0)                                                                                       \
            bp0_used = 1;                                                                                     \
        else if (bp_src < MEMO_STEPS)                                                                         \
            mm->bp_used |= 1ull << bp_src;                                                                    \
    } while (0)

/* Steps of m whose words still hold, from the start. */
static inline int memo_verify(const memo *m)
{
    const unsigned char *sp0 = (const unsigned char *)(uintptr_t)m->sp0;
    int i = 0;
    for (; i < m->nsteps; i++) {
#ifdef VT_BENCH_UW_VERIFY /* benchmarks only (bench/inject.cmake): steps past the first N taken as verified (unsafe) */
        if (i >= VT_BENCH_UW_VERIFY)
            return m->nsteps;
#endif
        uint32_t o = m->off[i];
        if (o != MEMO_NONE && *(const uint64_t *)(const void *)(sp0 + o) != m->ip[i + 1])
            break;
#ifndef VT_BENCH_UW_NOBP /* benchmarks only: rbp loads not verified (unsafe) */
        if (__builtin_expect((m->bp_used >> i) & 1, 0) &&
            *(const uint64_t *)(const void *)(sp0 + m->bpc[i].at) != m->sp0 + m->bpc[i].val)
            break;
#endif
    }
    return i;
}

#if defined(__x86_64__)
/* What one whole replay read of the host's stack: from sp0 to the last
 * word, the 4 KiB pages those words lie on (the words go up the stack in
 * order), the rbp loads it checked, where in the memo its entry was found
 * (the tag scan's length), whether it was the predicted way, and the other
 * candidates verified before it (same tag, a differing word) with the steps
 * they verified.  Called for one replay in 64, in the branch that adds the
 * batch of 64 to the totals: nothing on the others. */
static __attribute__((noinline, cold)) void memo_sample(vt_unwinder *u, const memo *m, int way, int pred,
                                                        uint32_t tried, uint32_t wasted)
{
    uint64_t span = 0, pages = 0, page = ~0ull;
    for (int i = 0; i < m->nsteps && i < MEMO_STEPS; i++) {
        if (m->off[i] == MEMO_NONE)
            continue;
        uint64_t a = m->sp0 + m->off[i];
        if (m->off[i] + 8ull > span)
            span = m->off[i] + 8ull;
        if (a >> 12 != page) {
            pages++;
            page = a >> 12;
        }
    }
    uint64_t used = m->bp_used & (m->nsteps >= 64 ? ~0ull : (1ull << m->nsteps) - 1);
    atomic_fetch_add_explicit(&u->st_smp_n, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&u->st_smp_span, span, memory_order_relaxed);
    atomic_fetch_add_explicit(&u->st_smp_pages, pages, memory_order_relaxed);
    atomic_fetch_add_explicit(&u->st_smp_bp, (uint64_t)__builtin_popcountll(used), memory_order_relaxed);
    atomic_fetch_add_explicit(&u->st_smp_way, (uint64_t)way, memory_order_relaxed);
    atomic_fetch_add_explicit(&u->st_smp_pred, (uint64_t)(pred != 0), memory_order_relaxed);
    atomic_fetch_add_explicit(&u->st_smp_tried, tried, memory_order_relaxed);
    atomic_fetch_add_explicit(&u->st_smp_wasted, wasted, memory_order_relaxed);
}

/* Way w served this thread's capture: the most recently used, and the
 * way that follows the previous capture's (tried first next time). */
static inline void memo_used(uw_tls *T, int w)
{
    T->ages[w] = ++T->memo_age;
    T->next[T->last] = (uint8_t)w;
    T->last = (uint32_t)w;
}

/* Counted per thread, added to the totals in batches: a shared counter
 * per capture would bounce a cache line between every allocating thread. */
static inline void count_capture(uw_tls *T, vt_unwinder *u, int n)
{
    T->captures++;
    T->frames += (uint64_t)n;
    if ((T->captures & 63) == 0) {
        atomic_fetch_add_explicit(&u->st_captures, 64, memory_order_relaxed);
        atomic_fetch_add_explicit(&u->st_frames, T->frames, memory_order_relaxed);
        T->frames = 0;
    }
}

/* The walk itself, recorded into the memo: from the start, or resumed
 * after the verified prefix of `best` (best_i steps). */
static __attribute__((noinline)) int unwind_walk(uw_tls *T, vt_unwinder *u, uint64_t ip, uint64_t sp, uint64_t bp,
                                                 uint64_t *ips, int max, uint64_t xkey, uint64_t *walk, uint64_t hi,
                                                 uint64_t epoch, uint64_t tag, const memo *best, int best_i)
{
    uint64_t walk_id = 0;
    uint64_t *tags = T->tag;
    uint32_t *ages = T->ages;
    vt_modmap *map = atomic_load_explicit(&u->map, memory_order_acquire);
    int n = 0, skipping = u->nskip_prefix || u->nskip_addr, step = 0, first_rec = -1;
    int bp_src = -1, bp0_used = 0, clean = 1; /* bp_src: step whose load gave rbp, -1: bp0 */
    const uint64_t ip0 = ip, sp0 = sp, bp0 = bp;
    memo *mm;

    /* no whole walk: record into a free entry, else the least recently used */
    int mw = 0;
    for (int w = 0; w < MEMO_WAYS && tags[mw]; w++)
        if (!tags[w] || (int32_t)(ages[w] - ages[mw]) < 0)
            mw = w;
    mm = &T->memo[mw];
    if (best) {
        /* a verified prefix of i steps: resume in step i's state, the
         * prefix copied into the entry this walk will fill */
        int i = best_i, fr = best->first_rec;
        if (best != mm) {
            memcpy(mm->off, best->off, (size_t)i * sizeof(uint32_t));
            memcpy(mm->ip, best->ip, (size_t)(i + 1) * sizeof(uint64_t));
            memcpy(mm->c, best->c, (size_t)i * sizeof(memo_cold));
            mm->bp_used = best->bp_used;
            mm->bp0_used = best->bp0_used;
        }
        /* rbp now: the last load before step i, read again (unverified
         * loads may differ from the memo), or bp0 */
        for (int k = 0; k < i; k++)
            if (mm->c[k].bp_at)
                bp_src = k;
        if (bp_src >= 0) {
            bp = *(const uint64_t *)(uintptr_t)mm->c[bp_src].bp_at;
            mm->c[bp_src].bp_val = bp;
        }
        bp0_used = mm->bp0_used;
        ip = best->ip[i];
        sp = best->c[i].sp;
        step = i;
        if (fr >= 0 && fr < i) {
            first_rec = fr;
            skipping = 0;
            n = i - fr;
            for (int k = 0; k < n; k++)
                ips[k] = mm->ip[fr + k];
        }
        atomic_fetch_add_explicit(&u->st_memo_steps, (uint64_t)i, memory_order_relaxed);
    }
    tags[mw] = 0; /* rewritten below */
    for (int guard = step; guard < 512 && n < max && ip; guard++, step++) {
        const int rec = step < MEMO_STEPS;
        memo_cold *mc = rec ? &mm->c[step] : NULL;
        if (rec) {
            mm->ip[step] = ip;
            mm->off[step] = MEMO_NONE;
            mc->sp = sp;
            mc->bp_at = 0;
            mm->bp_used &= ~(1ull << step);
        } else {
            clean = 0;
        }
        const vt_module *m;
        int in_module;
        uint64_t rule = lookup_rule(u, &map, ip, &m, &in_module);
        if (m || !in_module) /* a miss: the rule came from the CFI, or from nowhere for now */
            clean = 0;
        if (skipping && !(rule & R_SKIP))
            skipping = 0;
        if (!skipping) {
            if (first_rec < 0)
                first_rec = step;
            ips[n++] = ip;
            if (__builtin_expect(u->nstop, 0) && in_stop(u, ip)) { /* where Python frames take over */
                step++;
                break;
            }
        }
        int kind = RULE_KIND(rule);
        if (kind == R_OUTERMOST) {
            step++;
            break;
        }
        uint64_t cfa, nip, nbp = bp;
        if (kind == R_NORMAL) {
            if (RULE_CFA_BP(rule))
                USE_BP();
            cfa = (RULE_CFA_BP(rule) ? bp : sp) + RULE_OFF(rule);
            uint64_t ra_at = cfa - 8ull * RULE_RA_N(rule);
            if (cfa <= sp || cfa > hi || ra_at < sp || ra_at + 8 > hi) {
                step++;
                break;
            }
            nip = *(const uint64_t *)(uintptr_t)ra_at;
            unsigned bn = RULE_BP_N(rule);
            if (rec) {
                if (ra_at - sp0 < MEMO_NONE)
                    mm->off[step] = (uint32_t)(ra_at - sp0);
                else
                    clean = 0; /* too far for the memo */
                mm->ip[step + 1] = nip;
            }
            if (bn) {
                uint64_t bp_at = cfa - 8ull * bn;
                if (bp_at < sp || bp_at + 8 > hi) {
                    step++;
                    break;
                }
                nbp = *(const uint64_t *)(uintptr_t)bp_at;
                bp_src = step;
                if (mc) {
                    mc->bp_at = bp_at;
                    mc->bp_val = nbp;
                }
            }
        } else {
            /* unknown: one bounds-checked frame-pointer step */
            USE_BP();
            if (bp < sp || bp + 16 > hi || (bp & 7)) {
                atomic_fetch_add_explicit(&u->st_unknown, 1, memory_order_relaxed);
                step++;
                break;
            }
            cfa = bp + 16;
            nip = *(const uint64_t *)(uintptr_t)(bp + 8);
            nbp = *(const uint64_t *)(uintptr_t)bp;
            bp_src = step;
            if (rec) {
                if (bp + 8 - sp0 < MEMO_NONE)
                    mm->off[step] = (uint32_t)(bp + 8 - sp0);
                else
                    clean = 0;
                mm->ip[step + 1] = nip;
                mc->bp_at = bp;
                mc->bp_val = nbp;
            }
            atomic_fetch_add_explicit(&u->st_fp, 1, memory_order_relaxed);
            (void)in_module;
        }
        sp = cfa;
        bp = nbp;
        ip = nip;
        if (ip < 4096) {
            step++;
            break;
        }
    }
    int keep = clean && step <= MEMO_STEPS && first_rec >= 0;
    /* the used rbp loads, compact (a load or value out of reach: not memoized) */
    for (uint64_t used = keep ? mm->bp_used & ((1ull << step) - 1) : 0; used; used &= used - 1) {
        int k = __builtin_ctzll(used);
        uint64_t at = mm->c[k].bp_at - sp0, val = mm->c[k].bp_val - sp0;
        if (at > UINT32_MAX - 8 || val > UINT32_MAX) {
            keep = 0;
            break;
        }
        mm->bpc[k].at = (uint32_t)at;
        mm->bpc[k].val = (uint32_t)val;
    }
    if (keep) {
        mm->sp0 = sp0;
        mm->ip0 = ip0;
        mm->xkey = xkey;
        mm->bp0 = bp0;
        mm->epoch = epoch;
        mm->uid = u->uid;
        mm->max = max;
        mm->nsteps = step;
        mm->first_rec = first_rec;
        mm->bp0_used = bp0_used;
        mm->n = n;
        mm->walk = walk_id = atomic_fetch_add_explicit(&g_walk_ids, 1, memory_order_relaxed) + 1;
        tags[mw] = tag;
        memo_used(T, mw);
    }
    if (walk)
        *walk = walk_id;
    count_capture(T, u, n);
    return n;
}
#endif

/* Replay a remembered walk from this start while the words it read still
 * hold; else walk, from the longest verified prefix.  This part runs at
 * nearly every allocation of a big program, after microseconds of other
 * work: it reads the tags, one entry's first line, then its offsets and
 * ips in a row, and is kept small and apart from the walk (hot). */
static inline __attribute__((always_inline)) int unwind_from(vt_unwinder *u, uint64_t ip, uint64_t sp, uint64_t bp,
                                                             uint64_t *ips, int max, uint64_t xkey, uint64_t *walk,
                                                             const uint64_t **frames)
{
    if (walk)
        *walk = 0;
    if (frames)
        *frames = ips;
#if defined(__x86_64__)
    if (!u || max <= 0)
        return 0;
    uint64_t lo, hi;
    uw_tls *T = VT_TLS_ADDR(&t_uw);
    if (stack_bounds(T, sp, &lo, &hi) != 0)
        return 0;
    uint64_t epoch = atomic_load_explicit(&u->epoch, memory_order_acquire);
    const uint64_t tag = memo_tag(sp, ip, xkey);
    const uint64_t *tags = T->tag;
    const memo *best = NULL;
    int best_i = 0;
    uint32_t tried = 0, wasted = 0; /* candidates verified in vain, their steps */
    /* the predicted way first, then the others in order */
    const int p = T->next[T->last];
    for (int k = -1; k < MEMO_WAYS; k++) {
        const int w = k < 0 ? p : k;
        if (tags[w] != tag || (k >= 0 && w == p))
            continue;
        memo *m = &T->memo[w];
        if (m->sp0 != sp || m->ip0 != ip || m->xkey != xkey || m->max != max || m->epoch != epoch ||
            m->uid != u->uid || (m->bp0_used && m->bp0 != bp))
            continue;
        int i = memo_verify(m);
        if (i == m->nsteps) { /* the whole walk */
            int n = m->n;
            if (frames)
                *frames = m->ip + m->first_rec; /* in place, until this thread's next walk */
            else
                memcpy(ips, m->ip + m->first_rec, (size_t)n * sizeof(uint64_t));
            if (walk)
                *walk = m->walk;
            memo_used(T, w);
            if ((++T->memo_full & 63) == 0) { /* batched, as in count_capture */
                atomic_fetch_add_explicit(&u->st_memo_full, 64, memory_order_relaxed);
                memo_sample(u, m, w, k < 0, tried, wasted);
            }
            count_capture(T, u, n);
            return n;
        }
        tried++;
        wasted += (uint32_t)i + 1;
        if (i > best_i) {
            best = m;
            best_i = i;
        }
    }
    return unwind_walk(T, u, ip, sp, bp, ips, max, xkey, walk, hi, epoch, tag, best, best_i);
#else
    (void)u; (void)ip; (void)sp; (void)bp; (void)ips; (void)max; (void)xkey;
    return 0;
#endif
}

int vt_unwind_from(vt_unwinder *u, uint64_t ip, uint64_t sp, uint64_t bp, uint64_t *ips, int max)
{
    return unwind_from(u, ip, sp, bp, ips, max, 0, NULL, NULL);
}

VT_HOT __attribute__((noinline, optimize("no-omit-frame-pointer"))) int vt_unwind_capture_keyed(vt_unwinder *u,
                                                                                         uint64_t *ips, int max,
                                                                                         uint64_t xkey, uint64_t *walk,
                                                                                         const uint64_t **frames)
{
#if defined(__x86_64__)
    /* With a frame pointer, our frame gives the caller's state exactly:
     * return address at [rbp+8], caller's rsp = rbp+16, caller's rbp = [rbp]. */
    const uint64_t *fp = (const uint64_t *)__builtin_frame_address(0);
    uint64_t ip = fp[1], sp = (uint64_t)(uintptr_t)(fp + 2), bp = fp[0];
    int n = unwind_from(u, ip, sp, bp, ips, max, xkey, walk, frames);
    __asm__ volatile("" ::: "memory"); /* keep this a real call frame (no tail call) */
    return n;
#else
    (void)u; (void)ips; (void)max; (void)xkey;
    if (walk)
        *walk = 0;
    if (frames)
        *frames = ips;
    return 0;
#endif
}

int vt_unwind_rule_describe(vt_unwinder *u, uint64_t ip, int *cfa_reg_is_bp, int64_t *cfa_off, int *ra_n, int *bp_n,
                            int *outermost)
{
    vt_modmap *map = atomic_load(&u->map);
    const vt_module *m = vt_modmap_find(map, ip);
    if (!m)
        return VT_ERR_NOT_FOUND;
    uint64_t r = vt_cfi_compile_rule(m, ip - 1);
    if (RULE_KIND(r) == R_UNKNOWN)
        return VT_ERR_INVALID;
    *outermost = RULE_KIND(r) == R_OUTERMOST;
    *cfa_reg_is_bp = RULE_CFA_BP(r);
    *cfa_off = (int64_t)RULE_OFF(r);
    *ra_n = (int)RULE_RA_N(r);
    *bp_n = (int)RULE_BP_N(r);
    return 0;
}
