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
 * Growth floors: the run is cut into VT_GROWTH_BUCKETS time buckets (width
 * doubles, merging neighbours, when the run outgrows them); per site and
 * bucket the floor is the lowest live byte count seen in the bucket.  A
 * temporary allocated and freed every step has floor 0; a list keeping each
 * step's output has a rising floor; a cache rises then stays flat.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vt_analyze_int.h"
#include "vt_error.h"

#define VT_MAX_ID (1u << 26)
#define VT_FREED_CACHE (1u << 14)
#define VT_TAIL_CAP (8u << 20)
#define VT_G_SHIFT0 20 /* first bucket width: 2^20 ns ~ 1 ms */
#define VT_POOL_SAMPLES 256
/* Sizes above this are not real allocations (a corrupt or hostile trace):
 * clamped and counted, so that the signed byte counters cannot overflow. */
#define VT_MAX_SIZE (1ull << 44)

static inline uint64_t clamp_size(vt_proc *p, uint64_t size)
{
    if (size <= VT_MAX_SIZE)
        return size;
    p->absurd_sizes++;
    return VT_MAX_SIZE;
}

/* ------------------------------------------------------------------ maps */

static int map_grow(vt_map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    uint64_t *nk = calloc(ncap, sizeof(*nk));
    uint64_t *nv = malloc(ncap * sizeof(*nv));
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return VT_ERR_NOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = vt_hash64(m->keys[i]) & (ncap - 1);
        while (nk[j])
            j = (j + 1) & (ncap - 1);
        nk[j] = m->keys[i];
        nv[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = ncap;
    return 0;
}

int vt_map_put(vt_map *m, uint64_t key, uint64_t val)
{
    if ((m->len + 1) * 2 > m->cap) {
        int rc = map_grow(m);
        if (rc)
            return rc;
    }
    size_t j = vt_hash64(key) & (m->cap - 1);
    while (m->keys[j] && m->keys[j] != key)
        j = (j + 1) & (m->cap - 1);
    if (!m->keys[j])
        m->len++;
    m->keys[j] = key;
    m->vals[j] = val;
    return 0;
}

uint64_t *vt_map_get(const vt_map *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    size_t j = vt_hash64(key) & (m->cap - 1);
    while (m->keys[j]) {
        if (m->keys[j] == key)
            return &m->vals[j];
        j = (j + 1) & (m->cap - 1);
    }
    return NULL;
}

int vt_map_del(vt_map *m, uint64_t key, uint64_t *val)
{
    if (!m->cap)
        return 0;
    size_t mask = m->cap - 1, j = vt_hash64(key) & mask;
    while (m->keys[j] && m->keys[j] != key)
        j = (j + 1) & mask;
    if (!m->keys[j])
        return 0;
    if (val)
        *val = m->vals[j];
    /* backward-shift deletion keeps probe chains intact */
    size_t i = j;
    for (;;) {
        j = (j + 1) & mask;
        if (!m->keys[j])
            break;
        size_t home = vt_hash64(m->keys[j]) & mask;
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            m->keys[i] = m->keys[j];
            m->vals[i] = m->vals[j];
            i = j;
        }
    }
    m->keys[i] = 0;
    m->len--;
    return 1;
}

void vt_map_free(vt_map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof(*m));
}

/* live blocks: same scheme, inline 32-byte slots, Fibonacci hashing (the
 * top bits of addr * golden ratio: cheap, and mixes aligned addresses) */
static inline size_t blk_home(const vt_blockmap *b, uint64_t addr)
{
    return (size_t)((addr * 0x9E3779B97F4A7C15ull) >> b->shift);
}

/* A freed young block leaves its address behind (unit VT_DEAD, its slot
 * still counted in `used`) until the table is rebuilt or migrates: the next
 * allocation at that address finds it, and then knows without the old
 * table's filter that no old block is there (old blocks only come from a
 * migration, which clears the dead ones, and an address is never live in
 * both tables); a free marks the slot instead of shifting its neighbours.
 * The old table has none. */
#define VT_DEAD UINT32_MAX

/* the same blocks in a table of ncap slots, the dead ones dropped.  The
 * slots are 64-byte aligned, two to a cache line (calloc's 16 bytes put
 * every other 32-byte slot across two lines) */
static int blocks_rehash(vt_blockmap *b, size_t ncap)
{
    vt_block *ns = aligned_alloc(64, ncap * sizeof(*ns));
    if (!ns)
        return VT_ERR_NOMEM;
    memset(ns, 0, ncap * sizeof(*ns));
    vt_blockmap nb = {ns, ncap, 0, 64};
    for (size_t c = ncap; c > 1; c >>= 1)
        nb.shift--;
    for (size_t i = 0; i < b->cap; i++) {
        if (!b->slots[i].addr || b->slots[i].unit == VT_DEAD)
            continue;
        size_t j = blk_home(&nb, b->slots[i].addr);
        while (ns[j].addr)
            j = (j + 1) & (ncap - 1);
        ns[j] = b->slots[i];
        nb.used++;
    }
    free(b->slots);
    *b = nb;
    return 0;
}

static int blocks_grow(vt_blockmap *b)
{
    return blocks_rehash(b, b->cap ? b->cap * 2 : 1024);
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

/* the block at addr (live or dead), or the empty slot where it goes (addr
 * == 0 then) */
static inline vt_block *blocks_probe(vt_blockmap *b, uint64_t addr)
{
    if ((b->used + 1) * 2 > b->cap && blocks_grow(b))
        return NULL;
    size_t mask = b->cap - 1, j = blk_home(b, addr);
    while (b->slots[j].addr && b->slots[j].addr != addr)
        j = (j + 1) & mask;
    return &b->slots[j];
}

static void blocks_remove(vt_blockmap *b, vt_block *s)
{
    size_t mask = b->cap - 1, i = (size_t)(s - b->slots), j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!b->slots[j].addr)
            break;
        size_t home = blk_home(b, b->slots[j].addr);
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            b->slots[i] = b->slots[j];
            i = j;
        }
    }
    b->slots[i].addr = 0;
    b->used--;
}

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

static inline void filt_set(vt_proc *p, uint64_t addr)
{
    size_t w;
    uint64_t m = filt_mask(p, addr, &w);
    p->old_filter[w] |= m;
}

/* (re)build the filter from the old table, sized for its blocks */
static int filt_rebuild(vt_proc *p)
{
    size_t words = VT_FILTER_MIN_WORDS;
    unsigned shift = 64 - 16;
    while (words * 64 < 16 * p->old.used) {
        words *= 2;
        shift--;
    }
    if (!p->old_filter || words != p->filter_words) {
        uint64_t *f = calloc(words, sizeof(uint64_t));
        if (!f)
            return VT_ERR_NOMEM;
        free(p->old_filter);
        p->old_filter = f;
        p->filter_words = words;
        p->filter_shift = shift;
    } else {
        memset(p->old_filter, 0, words * sizeof(uint64_t));
    }
    for (size_t i = 0; i < p->old.cap; i++)
        if (p->old.slots[i].addr)
            filt_set(p, p->old.slots[i].addr);
    p->filter_sets = p->old.used;
    p->filter_fp = 0;
    return 0;
}

/* The filter said maybe, the old table said no: bits of blocks freed since
 * they were set (e.g. blocks that were young at a migration, freed soon
 * after, and whose addresses come back).  Each such answer costs a cache
 * miss in the old table; once they have cost about as much as rebuilding
 * the filter would (a pass over the old table), rebuild it.  A failed
 * rebuild keeps the old filter, still right. */
static void filt_false_positive(vt_proc *p)
{
    if (++p->filter_fp > p->old.cap / 8 + 1024)
        (void)filt_rebuild(p);
}

/* move every young block to the old table */
static int blocks_migrate(vt_proc *p)
{
    for (size_t i = 0; i < p->blocks.cap; i++) {
        vt_block *y = &p->blocks.slots[i];
        if (!y->addr || y->unit == VT_DEAD)
            continue;
        vt_block *o = blocks_probe(&p->old, y->addr);
        if (!o)
            return VT_ERR_NOMEM;
        if (!o->addr)
            p->old.used++;
        *o = *y;
        p->filter_sets++;
        if (p->old_filter)
            filt_set(p, y->addr);
    }
    memset(p->blocks.slots, 0, p->blocks.cap * sizeof(vt_block));
    p->blocks.used = 0;
    /* rebuild when many filter bits belong to blocks freed since, or when
     * the old blocks outgrow it */
    if (!p->old_filter || p->filter_sets > p->old.used + p->old.used / 2 + 4096 ||
        p->filter_words * 64 < 16 * p->old.used)
        return filt_rebuild(p);
    return 0;
}

/* The young table's dead slots, counted when it is half full (a pass over
 * it, before the pass that rebuilds, grows or migrates it) rather than
 * kept: one update in memory per allocation and per free less. */
static size_t young_dead(const vt_blockmap *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->cap; i++)
        n += (b->slots[i].addr != 0) & (b->slots[i].unit == VT_DEAD); /* no branch to mispredict */
    return n;
}

/* slot of addr in the young table (existing block, live or dead, or the
 * empty slot) */
static vt_block *young_probe(vt_proc *p, uint64_t addr)
{
    if ((p->blocks.used + 1) * 2 > p->blocks.cap) {
        const size_t dead = young_dead(&p->blocks);
        if (dead && (p->blocks.used - dead + 1) * 4 <= p->blocks.cap) {
            if (blocks_rehash(&p->blocks, p->blocks.cap)) /* mostly dead: clean */
                return NULL;
        } else if (p->blocks.cap < VT_YOUNG_CAP) {
            if (blocks_grow(&p->blocks))
                return NULL;
        } else if (blocks_migrate(p)) {
            return NULL;
        }
    }
    return blocks_probe(&p->blocks, addr);
}

/* a live block at addr in either table, and which table holds it */
static vt_block *blocks_lookup(vt_proc *p, uint64_t addr, vt_blockmap **table)
{
    vt_block *b = blocks_find(&p->blocks, addr);
    if (b) {
        *table = &p->blocks;
        return b;
    }
    if (filt_maybe(p, addr)) {
        if ((b = blocks_find(&p->old, addr))) {
            *table = &p->old;
            return b;
        }
        filt_false_positive(p);
    }
    return NULL;
}

/* ----------------------------------------------------------- processes */

static char *xstrdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

int vt_proc_create(vt_proc **out, const char *name)
{
    vt_proc *p = calloc(1, sizeof(*p));
    if (!p)
        return VT_ERR_NOMEM;
    p->name = xstrdup(name ? name : "-");
    *out = p;
    return 0;
}

void vt_proc_free(vt_proc *p)
{
    if (!p)
        return;
    free(p->name);
    free(p->host);
    free(p->program);
    free(p->clock);
    for (uint32_t i = 0; i < p->argc; i++)
        free(p->argv[i]);
    free(p->argv);
    free(p->env_rank);
    free(p->env_alloc_conf);
    free(p->env_world);
    free(p->tool_version);
    for (size_t i = 0; i < p->nstrings; i++)
        free(p->strings[i]);
    free(p->strings);
    free(p->frames);
    for (size_t i = 0; i < p->nstacks; i++)
        free(p->stacks[i].frames);
    free(p->stacks);
    for (size_t i = 0; i < p->nmodules; i++) {
        free(p->modules[i].path);
        free(p->modules[i].build_id);
    }
    free(p->modules);
    free(p->launch_name);
    for (size_t i = 0; i < p->nunits; i++) {
        free(p->units[i].floor);
        free(p->units[i].key);
    }
    free(p->units);
    vt_map_free(&p->unitmap);
    free(p->blocks.slots);
    free(p->old.slots);
    free(p->old_filter);
    free(p->stack_unit);
    free(p->lstat_by_launch);
    vt_map_free(&p->vmm_handles);
    free(p->vmms);
    free(p->vmm_free);
    vt_map_free(&p->vmm_maps);
    vt_map_free(&p->vmm_map_size);
    vt_map_free(&p->vmm_reserves);
    free(p->freed_cache);
    for (int i = 0; i < VT_MAX_DEVICES; i++)
        free(p->dev[i].name);
    free(p->tail);
    for (size_t i = 0; i < p->nlstats; i++)
        free(p->lstats[i].occ.t);
    free(p->lstats);
    vt_map_free(&p->lstat_map);
    for (size_t i = 0; i < p->nnvtx; i++) {
        free(p->nvtx[i].msg);
        free(p->nvtx[i].occ.t);
    }
    free(p->nvtx);
    free(p->step_source);
    for (size_t i = 0; i < p->npools; i++)
        free(p->pools[i].s);
    free(p->pools);
    for (uint32_t i = 0; i < p->noom; i++)
        free(p->oom[i].error_name);
    for (uint32_t i = 0; i < p->nnotes; i++)
        free(p->notes[i]);
    for (uint32_t i = 0; i < p->nerrors; i++)
        free(p->errors[i]);
    free(p->leak_order);
    free(p->growth_order);
    free(p);
}

/* grow a table indexed by id to hold `id` */
static int grow_table(void **tab, size_t *n, size_t elem, uint32_t id)
{
    if (id == 0 || id >= VT_MAX_ID)
        return VT_ERR_CORRUPT;
    if (id < *n)
        return 0;
    size_t ncap = *n ? *n : 64;
    while (ncap <= id)
        ncap *= 2;
    void *t = realloc(*tab, ncap * elem);
    if (!t)
        return VT_ERR_NOMEM;
    memset((char *)t + *n * elem, 0, (ncap - *n) * elem);
    *tab = t;
    *n = ncap;
    return 0;
}

const char *vt_proc_string(const vt_proc *p, uint32_t id)
{
    return id && id < p->nstrings ? p->strings[id] : NULL;
}

uint32_t vt_proc_stack(const vt_proc *p, uint32_t stack, uint32_t *out, uint32_t max)
{
    uint32_t n = 0, guard = 0;
    while (stack && stack < p->nstacks && guard++ < 4096) {
        const vt_pstack *s = &p->stacks[stack];
        if (!s->frames && !s->nframes && !s->parent)
            break;
        for (uint32_t i = 0; i < s->nframes; i++, n++)
            if (n < max)
                out[n] = s->frames[i];
        if (s->parent >= stack) /* parents are defined first: no cycles */
            break;
        stack = s->parent;
    }
    return n;
}

static void add_note(vt_proc *p, int sev, const char *text)
{
    if (p->nnotes >= VT_MAX_NOTES) {
        p->notes_more++;
        return;
    }
    p->note_sev[p->nnotes] = sev;
    p->notes[p->nnotes++] = xstrdup(text ? text : "");
}

static int is_resident(unsigned kind)
{
    return kind == VT_MEM_DEVICE || kind == VT_MEM_DEVICE_STATIC || kind == VT_MEM_ARRAY;
}

int vt_stack_is_c10(const vt_proc *p, uint32_t stack)
{
    uint32_t fr[VT_MAX_STACK];
    uint32_t n = vt_proc_stack(p, stack, fr, VT_MAX_STACK);
    if (n > VT_MAX_STACK)
        n = VT_MAX_STACK;
    for (uint32_t i = 0; i < n; i++) {
        if (fr[i] >= p->nframes)
            continue;
        const vt_pframe *f = &p->frames[fr[i]];
        if (f->kind == VT_FRAME_NATIVE && f->module && f->module < p->nmodules && p->modules[f->module].c10)
            return 1;
    }
    return 0;
}

static vt_unit *get_unit_slow(vt_proc *p, uint32_t stack, uint32_t device, unsigned kind, unsigned api,
                              uint32_t *idx) __attribute__((noinline));

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

static vt_unit *get_unit_slow(vt_proc *p, uint32_t stack, uint32_t device, unsigned kind, unsigned api,
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
    u->pk_epoch = p->dev[device].peak_epoch;
    u->dev = &p->dev[device];
    *idx = (uint32_t)p->nunits++;
    if (stack < p->nstack_unit)
        p->stack_unit[stack] = *idx + 1;
    return u;
}

/* --- growth floors --- */

/* halve a site's resolution: neighbouring buckets merge (min of floors) */
static void growth_merge(vt_unit *u)
{
    uint64_t *f = u->floor;
    for (uint32_t i = 0; i < VT_GROWTH_BUCKETS / 2; i++) {
        uint32_t a = 2 * i, b = 2 * i + 1;
        if (b <= u->gcur)
            f[i] = f[a] < f[b] ? f[a] : f[b];
        else if (a <= u->gcur)
            f[i] = f[a];
    }
    u->gcur /= 2;
    u->g_shift++;
}

/* The end of the site's current bucket: events before it change nothing
 * but the floor (see growth_touch).  Saturates; 0 before the first one. */
static void growth_set_next(vt_unit *u)
{
    unsigned __int128 end = (unsigned __int128)u->g_t0 + ((unsigned __int128)(u->gcur + 1) << u->g_shift);
    u->g_next = end > UINT64_MAX ? UINT64_MAX : (uint64_t)end;
}

/* bucket of time t in the site's own window, which starts at its first
 * allocation (so a site born late has the same resolution as one born
 * early) and doubles its bucket width when t falls beyond the last one */
static uint32_t growth_bucket(vt_unit *u, uint64_t t)
{
    if (t < u->g_t0)
        return 0;
    uint64_t b = (t - u->g_t0) >> u->g_shift;
    while (b >= VT_GROWTH_BUCKETS) {
        growth_merge(u);
        b = (t - u->g_t0) >> u->g_shift;
    }
    return (uint32_t)b;
}

/* called before a change of u->live_bytes at time t */
static int growth_touch_slow(vt_unit *u, uint64_t t) __attribute__((noinline));
static int growth_touch_slow(vt_unit *u, uint64_t t)
{
    if (!u->floor) {
        u->floor = calloc(VT_GROWTH_BUCKETS, sizeof(uint64_t));
        if (!u->floor)
            return VT_ERR_NOMEM;
        u->gcur = 0;
        u->g_t0 = t;
        u->g_shift = VT_G_SHIFT0;
    }
    uint32_t b = growth_bucket(u, t);
    if (b > u->gcur) {
        uint64_t live = u->live_bytes > 0 ? (uint64_t)u->live_bytes : 0;
        for (uint32_t i = u->gcur + 1; i <= b; i++)
            u->floor[i] = live;
        u->gcur = b;
    }
    growth_set_next(u);
    u->floor_cur = u->floor[u->gcur];
    return 0;
}

/* Most events fall in the site's current bucket (or an earlier one, as
 * growth_bucket() keeps it): nothing to do, decided inline by one
 * comparison with the bucket's end (g_next, 0 before the site's first
 * event, so that one goes the slow way). */
static inline __attribute__((always_inline)) int growth_touch(vt_proc *p, vt_unit *u, uint64_t t)
{
    (void)p;
    if (__builtin_expect(t < u->g_next, 1))
        return 0;
    return growth_touch_slow(u, t);
}

/* after a free: the current bucket's floor (read from its copy in the
 * unit, which the events keep in cache) */
static inline void growth_after(vt_unit *u)
{
    uint64_t live = u->live_bytes > 0 ? (uint64_t)u->live_bytes : 0;
    if (live < u->floor_cur) {
        u->floor_cur = live;
        u->floor[u->gcur] = live;
    }
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
static void tail_end(vt_proc *p, uint64_t upto, int all)
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

static void view_bound_update(vt_proc *p);
static void view_apply_slow(vt_analysis *a, vt_proc *p, uint32_t ui, int64_t bytes, int32_t count, uint64_t t)
    __attribute__((noinline));
static void view_apply_slow(vt_analysis *a, vt_proc *p, uint32_t ui, int64_t bytes, int32_t count, uint64_t t)
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
        if (p->ntail >= VT_TAIL_CAP) {
            /* event-sized memory is not allowed: give up exactness */
            tail_fold(p, 0, 1);
            p->tail_overflow = 1;
            view_bound_update(p);
            u->at_bytes += bytes;
            u->at_count += count;
            return;
        }
        if (p->ntail * 2 > p->captail || !p->captail) {
            size_t nc = p->captail ? p->captail * 2 : 4096;
            vt_tail *nt = realloc(p->tail, nc * sizeof(*nt));
            if (!nt) {
                tail_fold(p, 0, 1);
                p->tail_overflow = 1;
                view_bound_update(p);
                u->at_bytes += bytes;
                u->at_count += count;
                return;
            }
            p->tail = nt;
            p->captail = nc;
        }
    }
    vt_tail *e = &p->tail[p->ntail++];
    e->t = t;
    e->bytes = bytes;
    e->unit = ui;
    e->count = count;
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

/* view_below: the fast path's view bound (see free_fast), 0 when the
 * fast path may not decide (another view mode, overflow, no bound yet) */
static void view_bound_update(vt_proc *p)
{
    if ((p->view_mode == VT_AT_AUTO || p->view_mode == VT_AT_MARKER) && !p->tail_overflow && p->cand_set)
        p->view_below = p->cand == UINT64_MAX ? UINT64_MAX : p->cand + 1;
    else
        p->view_below = 0;
}

static void cand_raise(vt_proc *p, uint64_t t)
{
    if (!p->cand_set || t > p->cand) {
        p->cand = t;
        p->cand_set = 1;
        view_bound_update(p);
    }
}

/* --- step occurrences --- */

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

/* occurrences at or before t (approximate to the stride) */
static double occ_count(const vt_occ *o, uint64_t t)
{
    uint32_t lo = 0, hi = o->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (o->t[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (double)lo * o->stride;
}

/* --- accounting --- */

static inline void pk_sync(vt_proc *p, vt_unit *u)
{
    (void)p;
    uint64_t e = u->dev->peak_epoch;
    if (u->pk_epoch != e) {
        u->pk_bytes = u->live_bytes;
        u->pk_count = vt_unit_live_count(u);
        u->pk_epoch = e;
    }
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
    u->live_bytes += (int64_t)size;
    u->allocs++;
    u->alloc_bytes += size;
    if ((uint64_t)u->live_bytes > u->max_live)
        u->max_live = (uint64_t)u->live_bytes;
    d->live[u->kind] += (int64_t)size;
    if (d->live[u->kind] > d->peak_kind[u->kind]) {
        d->peak_kind[u->kind] = d->live[u->kind];
        d->peak_kind_t[u->kind] = t;
    }
    if (u->resident) {
        d->live_dev += (int64_t)size;
        if (d->live_dev > d->peak) {
            d->peak = d->live_dev;
            d->peak_t = t;
            d->peak_epoch++;
            u->pk_bytes = u->live_bytes;
            u->pk_count = vt_unit_live_count(u);
            u->pk_epoch = d->peak_epoch;
        }
    }
    if (u->segment) {
        p->c10_allocs++;
        p->c10_live += (int64_t)size;
        if (p->c10_live > (int64_t)p->c10_bytes_peak)
            p->c10_bytes_peak = (uint64_t)p->c10_live;
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
    u->live_bytes -= (int64_t)size;
    u->frees++;
    if (t >= t_alloc)
        u->lifetime_sum += t - t_alloc;
    growth_after(u);
    d->live[u->kind] -= (int64_t)size;
    if (u->resident)
        d->live_dev -= (int64_t)size;
    if (u->segment)
        p->c10_live -= (int64_t)size;
}

static inline __attribute__((always_inline)) int account_free(vt_analysis *a, vt_proc *p, uint32_t ui, uint64_t size,
                                                               uint64_t t_alloc, uint64_t t)
{
    vt_unit *u = &p->units[ui];
    if (growth_touch(p, u, t))
        return VT_ERR_NOMEM;
    account_free_rest(p, u, u->dev, size, t_alloc, t);
    view_pair(a, p, ui, size, t_alloc, t);
    return 0;
}

static int check_device(vt_proc *p, uint32_t *device)
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

static int on_alloc(vt_analysis *a, vt_proc *p, const vt_ev_alloc *e, uint64_t t)
{
    uint32_t device = e->device, ui;
    const uint64_t size = clamp_size(p, e->size);
    if (!check_device(p, &device))
        return 0;
    if (!e->address) {
        p->zero_frees++;
        return 0;
    }
    vt_block *b = young_probe(p, e->address);
    if (!b)
        return VT_ERR_NOMEM;
    const int dead = b->addr && b->unit == VT_DEAD; /* freed young: in no old block */
    if (!b->addr && filt_maybe(p, e->address)) {
        vt_block *ob = blocks_find(&p->old, e->address);
        if (ob) { /* an old block's free was not seen: drop it here */
            p->overlap_allocs++;
            uint32_t old = ob->unit;
            uint64_t sz = ob->size, ta = ob->t;
            blocks_remove(&p->old, ob);
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
            return VT_ERR_NOMEM;
        b->size = size;
        b->t = t;
        b->unit = ui;
        int rc = account_free(a, p, old, sz, ta, t);
        if (rc)
            return rc;
        return account_alloc(a, p, ui, size, t);
    }
    if (!get_unit(p, e->site.stack, device, e->kind < VT_MEM__COUNT ? e->kind : 0,
                  e->api < VT_API__COUNT ? e->api : 0, &ui))
        return VT_ERR_NOMEM;
    b->addr = e->address;
    b->fslot = freed_slot(e->address);
    if (!dead)
        p->blocks.used++; /* (a dead slot was taken already) */
    b->size = size;
    b->t = t;
    b->unit = ui;
    /* no need to forget the address in the freed cache: a later free of a
     * non-live address that was freed before is a double free either way */
    return account_alloc(a, p, ui, size, t);
}

static int on_free(vt_analysis *a, vt_proc *p, const vt_ev_free *e, uint64_t t)
{
    vt_blockmap *table = NULL;
    vt_block *b = e->address ? blocks_lookup(p, e->address, &table) : NULL;
    if (!b) {
        if (!e->address)
            p->zero_frees++;
        else if (freed_check(p, e->address))
            p->double_frees++;
        else
            p->unknown_frees++;
        return 0;
    }
    uint32_t ui = b->unit;
    uint64_t sz = b->size, ta = b->t;
    blocks_remove(table, b);
    freed_mark(p, e->address);
    return account_free(a, p, ui, sz, ta, t);
}

static void top_holders(vt_proc *p, uint32_t device, vt_oom *o)
{
    o->ntop = 0;
    for (size_t k = 0; k < p->nunits; k++) {
        const vt_unit *u = &p->units[k];
        if (u->device != device || !is_resident(u->kind) || u->live_bytes <= 0)
            continue;
        /* insertion into a sorted top list; ties keep the lower unit index */
        uint32_t pos = o->ntop;
        while (pos > 0 && o->top_bytes[pos - 1] < u->live_bytes)
            pos--;
        if (pos >= VT_OOM_TOP)
            continue;
        uint32_t end = o->ntop < VT_OOM_TOP ? o->ntop : VT_OOM_TOP - 1;
        for (uint32_t j = end; j > pos; j--) {
            o->top_unit[j] = o->top_unit[j - 1];
            o->top_bytes[j] = o->top_bytes[j - 1];
            o->top_count[j] = o->top_count[j - 1];
        }
        o->top_unit[pos] = (uint32_t)k;
        o->top_bytes[pos] = u->live_bytes;
        o->top_count[pos] = vt_unit_live_count(u);
        if (o->ntop < VT_OOM_TOP)
            o->ntop++;
    }
    for (size_t k = 0; k < p->nunits; k++) {
        const vt_unit *u = &p->units[k];
        if (u->device == device && u->segment && u->live_bytes > 0)
            o->c10_reserved += (uint64_t)u->live_bytes;
    }
}

static void on_failed(vt_proc *p, const vt_ev_alloc_failed *e, uint64_t t)
{
    uint32_t device = e->device;
    p->failed++;
    if (e->error == 2) /* CUDA_ERROR_OUT_OF_MEMORY == cudaErrorMemoryAllocation == 2 */
        p->failed_oom++;
    if (!check_device(p, &device) || p->noom >= VT_MAX_OOM_DETAIL)
        return;
    vt_oom *o = &p->oom[p->noom++];
    memset(o, 0, sizeof(*o));
    o->t = t;
    o->size = e->size;
    o->device = device;
    o->stack = e->site.stack;
    o->thread = e->site.thread;
    o->kind = (uint8_t)(e->kind < VT_MEM__COUNT ? e->kind : 0);
    o->api = (uint8_t)(e->api < VT_API__COUNT ? e->api : 0);
    o->error = e->error;
    o->error_name = xstrdup(e->error_name);
    const vt_devstate *d = &p->dev[device];
    o->dev_live = d->live_dev;
    memcpy(o->kind_live, d->live, sizeof(o->kind_live));
    if (d->drv_samples) {
        o->drv_free = d->drv_last_free;
        o->drv_total = d->drv_total;
        o->drv_t = d->drv_last_t;
    }
    for (size_t i = 0; i < p->npools; i++)
        if (p->pools[i].device == device && p->pools[i].seen) {
            o->have_pool = 1;
            o->pool_reserved += p->pools[i].reserved_last;
            o->pool_used += p->pools[i].used_last;
        }
    top_holders(p, device, o);
}

static int vmm_release_now(vt_analysis *a, vt_proc *p, uint64_t handle, uint64_t t)
{
    uint64_t idx;
    if (!vt_map_del(&p->vmm_handles, handle, &idx))
        return 0;
    vt_vmm *v = &p->vmms[idx - 1];
    int rc = account_free(a, p, v->unit, v->size, v->t, t);
    if (p->nvmm_free == p->capvmm_free) {
        size_t nc = p->capvmm_free ? p->capvmm_free * 2 : 64;
        uint32_t *nf = realloc(p->vmm_free, nc * sizeof(*nf));
        if (!nf)
            return VT_ERR_NOMEM;
        p->vmm_free = nf;
        p->capvmm_free = nc;
    }
    p->vmm_free[p->nvmm_free++] = (uint32_t)(idx - 1);
    return rc;
}

static int on_vmm_create(vt_analysis *a, vt_proc *p, const vt_ev_vmm_create *e, uint64_t t)
{
    uint32_t device = e->device, ui;
    if (!check_device(p, &device))
        return 0;
    if (vt_map_get(&p->vmm_handles, e->handle + 1)) {
        p->overlap_allocs++;
        int rc = vmm_release_now(a, p, e->handle + 1, t);
        if (rc)
            return rc;
    }
    unsigned kind = e->kind ? (e->kind < VT_MEM__COUNT ? e->kind : 0) : VT_MEM_DEVICE;
    if (!get_unit(p, e->site.stack, device, kind, VT_API_VMM, &ui))
        return VT_ERR_NOMEM;
    uint32_t idx;
    if (p->nvmm_free) {
        idx = p->vmm_free[--p->nvmm_free];
    } else {
        if (p->nvmms == p->capvmms) {
            size_t nc = p->capvmms ? p->capvmms * 2 : 64;
            vt_vmm *nv = realloc(p->vmms, nc * sizeof(*nv));
            if (!nv)
                return VT_ERR_NOMEM;
            p->vmms = nv;
            p->capvmms = nc;
        }
        idx = (uint32_t)p->nvmms++;
    }
    vt_vmm *v = &p->vmms[idx];
    memset(v, 0, sizeof(*v));
    v->handle = e->handle;
    v->size = clamp_size(p, e->size);
    v->t = t;
    v->unit = ui;
    if (vt_map_put(&p->vmm_handles, e->handle + 1, idx + 1))
        return VT_ERR_NOMEM;
    return account_alloc(a, p, ui, v->size, t);
}

static int on_vmm_release(vt_analysis *a, vt_proc *p, const vt_ev_vmm_release *e, uint64_t t)
{
    uint64_t *idx = vt_map_get(&p->vmm_handles, e->handle + 1);
    if (!idx) {
        p->unknown_vmm_release++;
        return 0;
    }
    vt_vmm *v = &p->vmms[*idx - 1];
    if (v->released) {
        p->double_vmm_release++;
        return 0;
    }
    if (v->nmaps) { /* physical memory goes when its last mapping does */
        v->released = 1;
        return 0;
    }
    return vmm_release_now(a, p, e->handle + 1, t);
}

static int on_vmm_map(vt_proc *p, const vt_ev_vmm_map *e)
{
    uint64_t *idx = vt_map_get(&p->vmm_handles, e->handle + 1);
    if (idx)
        p->vmms[*idx - 1].nmaps++;
    uint64_t size = clamp_size(p, e->size);
    if (vt_map_put(&p->vmm_maps, e->address + 1, e->handle + 1) || vt_map_put(&p->vmm_map_size, e->address + 1, size))
        return VT_ERR_NOMEM;
    p->mapped += (int64_t)size;
    if (p->mapped > p->mapped_peak)
        p->mapped_peak = p->mapped;
    return 0;
}

static int on_vmm_unmap(vt_analysis *a, vt_proc *p, const vt_ev_vmm_range *e, uint64_t t)
{
    uint64_t h, sz = 0;
    if (!vt_map_del(&p->vmm_maps, e->address + 1, &h)) {
        p->unknown_unmaps++;
        return 0;
    }
    vt_map_del(&p->vmm_map_size, e->address + 1, &sz);
    p->mapped -= (int64_t)sz;
    uint64_t *idx = vt_map_get(&p->vmm_handles, h);
    if (!idx)
        return 0;
    vt_vmm *v = &p->vmms[*idx - 1];
    if (v->nmaps)
        v->nmaps--;
    if (!v->nmaps && v->released)
        return vmm_release_now(a, p, h, t);
    return 0;
}

static vt_pool *get_pool(vt_proc *p, uint64_t pool, uint32_t device)
{
    for (size_t i = 0; i < p->npools; i++)
        if (p->pools[i].pool == pool && p->pools[i].device == device)
            return &p->pools[i];
    if (p->npools == p->cappools) {
        size_t nc = p->cappools ? p->cappools * 2 : 8;
        vt_pool *np = realloc(p->pools, nc * sizeof(*np));
        if (!np)
            return NULL;
        p->pools = np;
        p->cappools = nc;
    }
    vt_pool *q = &p->pools[p->npools++];
    memset(q, 0, sizeof(*q));
    q->pool = pool;
    q->device = device;
    q->stride = 1;
    return q;
}

static int on_pool_usage(vt_proc *p, const vt_ev_pool_usage *e, uint64_t t)
{
    vt_pool *q = get_pool(p, e->pool, e->device);
    if (!q)
        return VT_ERR_NOMEM;
    if (e->reserved_current > q->reserved_high) {
        q->reserved_high = e->reserved_current;
        q->reserved_max_t = t;
    }
    if (e->reserved_high > q->reserved_high)
        q->reserved_high = e->reserved_high;
    if (e->used_current > q->used_high)
        q->used_high = e->used_current;
    if (e->used_high > q->used_high)
        q->used_high = e->used_high;
    q->reserved_last = e->reserved_current;
    q->used_last = e->used_current;
    if (!q->s) {
        q->s = calloc(VT_POOL_SAMPLES, sizeof(*q->s));
        if (!q->s)
            return VT_ERR_NOMEM;
    }
    if ((q->seen++ & (q->stride - 1)) == 0) { /* stride: a power of two */
        if (q->ns == VT_POOL_SAMPLES) { /* decimate: keep every other sample */
            for (size_t i = 0; i < VT_POOL_SAMPLES / 2; i++)
                q->s[i] = q->s[2 * i];
            q->ns = VT_POOL_SAMPLES / 2;
            q->stride *= 2;
            if (((q->seen - 1) & (q->stride - 1)) != 0)
                return 0;
        }
        q->s[q->ns].t = t;
        q->s[q->ns].reserved = e->reserved_current;
        q->s[q->ns].used = e->used_current;
        q->ns++;
    }
    return 0;
}

/* "step 12" -> "step": strip trailing digits and separators */
static char *nvtx_normalize(const char *m)
{
    if (!m)
        m = "";
    size_t n = strlen(m);
    while (n > 0 && strchr("0123456789 #:_-=/.", m[n - 1]))
        n--;
    if (n == 0)
        n = strlen(m);
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, m, n);
        s[n] = 0;
    }
    return s;
}

static int nvtx_stat(vt_proc *p, const char *msg, uint32_t *idx)
{
    char *norm = nvtx_normalize(msg);
    if (!norm)
        return VT_ERR_NOMEM;
    for (size_t i = 0; i < p->nnvtx; i++)
        if (!strcmp(p->nvtx[i].msg, norm)) {
            free(norm);
            *idx = (uint32_t)i;
            return 0;
        }
    if (p->nnvtx >= 4096) { /* unique messages are bounded; ignore the rest */
        free(norm);
        return VT_ERR_TOO_LARGE;
    }
    if (p->nnvtx == p->capnvtx) {
        size_t nc = p->capnvtx ? p->capnvtx * 2 : 16;
        vt_nvtx_stat *ns = realloc(p->nvtx, nc * sizeof(*ns));
        if (!ns) {
            free(norm);
            return VT_ERR_NOMEM;
        }
        p->nvtx = ns;
        p->capnvtx = nc;
    }
    vt_nvtx_stat *s = &p->nvtx[p->nnvtx];
    memset(s, 0, sizeof(*s));
    s->msg = norm;
    s->min_depth = UINT32_MAX;
    *idx = (uint32_t)p->nnvtx++;
    return 0;
}

static uint32_t nv_thread_slot(vt_proc *p, uint32_t thread)
{
    for (uint32_t i = 0; i < p->nnv_thr; i++)
        if (p->nv_thr[i].thread == thread)
            return i;
    if (p->nnv_thr < 16) {
        p->nv_thr[p->nnv_thr].thread = thread;
        p->nv_thr[p->nnv_thr].depth = 0;
        return p->nnv_thr++;
    }
    return 15;
}

static void on_nvtx(vt_analysis *a, vt_proc *p, const vt_ev_nvtx *e, uint64_t t)
{
    uint32_t ts = nv_thread_slot(p, e->site.thread);
    uint32_t *nv_depth = &p->nv_thr[ts].depth;
    vt_nvtx_open *nv_stack = p->nv_thr[ts].st;
    const char *msg = e->message ? e->message : vt_proc_string(p, e->message_id);
    uint32_t idx;
    if (e->op == VT_NVTX_POP) {
        if (*nv_depth > 0) {
            (*nv_depth)--;
            if (*nv_depth < 32) {
                vt_nvtx_open *o = &nv_stack[*nv_depth];
                if (o->msg < p->nnvtx && t >= o->t)
                    p->nvtx[o->msg].dur_sum += t - o->t;
            }
        }
        return;
    }
    if (e->op == VT_NVTX_END)
        return;
    if (p->view_mode == VT_AT_MARKER && msg && a->at_marker) {
        char *norm = nvtx_normalize(msg);
        if (!strcmp(msg, a->at_marker) || (norm && !strcmp(norm, a->at_marker))) {
            cand_raise(p, t);
            p->marker_found = 1;
        }
        free(norm);
    }
    if (nvtx_stat(p, msg, &idx))
        return;
    vt_nvtx_stat *s = &p->nvtx[idx];
    uint32_t depth = e->op == VT_NVTX_PUSH ? *nv_depth : 0;
    if (!s->count || t < s->first_t)
        s->first_t = t;
    if (t > s->last_t)
        s->last_t = t;
    s->count++;
    occ_add(&s->occ, t, 1);
    if (depth < s->min_depth)
        s->min_depth = depth;
    if (e->op == VT_NVTX_PUSH) {
        if (*nv_depth < 32) {
            nv_stack[*nv_depth].msg = idx;
            nv_stack[*nv_depth].t = t;
        }
        (*nv_depth)++;
    }
}

/* cand_raise for the auto view (view_bound_update's mode test done) */
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
        if (p->nlstats == p->caplstats) {
            size_t nc = p->caplstats ? p->caplstats * 2 : 64;
            vt_launch_stat *ns = realloc(p->lstats, nc * sizeof(*ns));
            if (!ns)
                return VT_ERR_NOMEM;
            p->lstats = ns;
            p->caplstats = nc;
        }
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

static void copy_header(vt_proc *p, const vt_ev_header *h)
{
    p->have_header = 1;
    p->pid = h->pid;
    p->ppid = h->ppid;
    free(p->host);
    p->host = xstrdup(h->hostname);
    free(p->program);
    p->program = xstrdup(h->program);
    p->format_version = h->format_version;
    free(p->tool_version);
    p->tool_version = xstrdup(h->tool_version);
    p->hdr_kernels = h->kernels;
    p->hdr_native = h->native_stacks;
    p->hdr_python = h->python_stacks;
    static const char *clocks[] = {"unknown", "cupti", "monotonic", "realtime"};
    free(p->clock);
    p->clock = xstrdup((unsigned)h->clock < 4 ? clocks[h->clock] : "unknown");
    for (uint32_t i = 0; i < p->argc; i++)
        free(p->argv[i]);
    free(p->argv);
    p->argv = NULL;
    p->argc = 0;
    if (h->argc && h->argv) {
        uint32_t n = h->argc > VT_MAX_ARGV ? VT_MAX_ARGV : h->argc;
        p->argv = calloc(n, sizeof(char *));
        if (p->argv) {
            for (uint32_t i = 0; i < n; i++)
                p->argv[i] = xstrdup(h->argv[i] ? h->argv[i] : "");
            p->argc = n;
        }
    }
    for (uint32_t i = 0; i < h->nenv && h->env_names && h->env_values; i++) {
        const char *n = h->env_names[i], *v = h->env_values[i];
        if (!n || !v)
            continue;
        if (!strcmp(n, "RANK")) {
            free(p->env_rank);
            p->env_rank = xstrdup(v);
        } else if (!strcmp(n, "WORLD_SIZE")) {
            free(p->env_world);
            p->env_world = xstrdup(v);
        } else if (!strcmp(n, "PYTORCH_CUDA_ALLOC_CONF")) {
            free(p->env_alloc_conf);
            p->env_alloc_conf = xstrdup(v);
        }
    }
}

static int is_c10_path(const char *path)
{
    if (!path)
        return 0;
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    return !strncmp(b, "libc10_cuda", 11);
}

/* Everything but allocations, frees and kernels (counted by the caller). */
static int feed_other(vt_analysis *a, vt_proc *p, const vt_event *ev) __attribute__((noinline));
static int feed_other(vt_analysis *a, vt_proc *p, const vt_event *ev)
{
    int rc = 0;
    uint64_t t = ev->time_ns;
    switch (ev->type) {
    case VT_EV_HEADER:
        copy_header(p, &ev->u.header);
        if (p->view_mode == VT_AT_AUTO && !ev->u.header.kernels)
            p->view_mode = VT_AT_END;
        view_bound_update(p);
        return 0;
    case VT_EV_SYNC:
        if (!p->have_t0) {
            p->have_t0 = 1;
            p->t0 = ev->u.sync.time_ns;
        }
        if (ev->u.sync.time_ns > p->t_last)
            p->t_last = ev->u.sync.time_ns;
        return 0;
    case VT_EV_STRING: {
        const vt_ev_string *s = &ev->u.string;
        if ((rc = grow_table((void **)&p->strings, &p->nstrings, sizeof(char *), s->id)))
            return rc == VT_ERR_CORRUPT ? 0 : rc;
        free(p->strings[s->id]);
        size_t len = s->value ? (s->len ? s->len : strlen(s->value)) : 0;
        p->strings[s->id] = malloc(len + 1);
        if (!p->strings[s->id])
            return VT_ERR_NOMEM;
        if (len)
            memcpy(p->strings[s->id], s->value, len);
        p->strings[s->id][len] = 0;
        return 0;
    }
    case VT_EV_FRAME: {
        const vt_ev_frame *f = &ev->u.frame;
        if ((rc = grow_table((void **)&p->frames, &p->nframes, sizeof(vt_pframe), f->id)))
            return rc == VT_ERR_CORRUPT ? 0 : rc;
        vt_pframe *d = &p->frames[f->id];
        d->kind = f->kind;
        d->ip = f->ip;
        d->module = f->module;
        d->function = f->function;
        d->file = f->file;
        d->line = f->line;
        return 0;
    }
    case VT_EV_STACK: {
        const vt_ev_stack *s = &ev->u.stack;
        if ((rc = grow_table((void **)&p->stacks, &p->nstacks, sizeof(vt_pstack), s->id)))
            return rc == VT_ERR_CORRUPT ? 0 : rc;
        vt_pstack *d = &p->stacks[s->id];
        free(d->frames);
        d->frames = NULL;
        d->nframes = 0;
        if (s->nframes) {
            d->frames = malloc(s->nframes * sizeof(uint32_t));
            if (!d->frames)
                return VT_ERR_NOMEM;
            memcpy(d->frames, s->frames, s->nframes * sizeof(uint32_t));
            d->nframes = s->nframes;
        }
        d->parent = s->parent;
        return 0;
    }
    case VT_EV_MODULE: {
        const vt_ev_module *m = &ev->u.module;
        if ((rc = grow_table((void **)&p->modules, &p->nmodules, sizeof(vt_pmodule), m->id)))
            return rc == VT_ERR_CORRUPT ? 0 : rc;
        vt_pmodule *d = &p->modules[m->id];
        free(d->path);
        free(d->build_id);
        d->path = xstrdup(m->path ? m->path : "");
        d->load_bias = m->load_bias;
        d->start = m->start;
        d->end = m->end;
        d->build_id = NULL;
        d->build_id_len = 0;
        if (m->build_id_len && m->build_id) {
            d->build_id = malloc(m->build_id_len);
            if (d->build_id) {
                memcpy(d->build_id, m->build_id, m->build_id_len);
                d->build_id_len = m->build_id_len;
            }
        }
        d->c10 = is_c10_path(d->path);
        return 0;
    }
    case VT_EV_LAUNCH: {
        const vt_ev_launch *l = &ev->u.launch;
        if ((rc = grow_table((void **)&p->launch_name, &p->nlaunches, sizeof(uint32_t), l->id)))
            return rc == VT_ERR_CORRUPT ? 0 : rc;
        p->launch_name[l->id] = l->name;
        return 0;
    }
    case VT_EV_DEVICE: {
        const vt_ev_device *d = &ev->u.device;
        if (d->index >= VT_MAX_DEVICES)
            return 0;
        vt_devstate *s = &p->dev[d->index];
        s->present = 1;
        free(s->name);
        s->name = xstrdup(d->name ? d->name : "");
        s->total = d->total_memory;
        s->cc_major = d->cc_major;
        s->cc_minor = d->cc_minor;
        if (d->index + 1 > p->ndev_seen)
            p->ndev_seen = d->index + 1;
        return 0;
    }
    case VT_EV_THREAD:
        return 0;
    default:
        break;
    }
    /* timed events */
    if (!p->have_t0) {
        p->have_t0 = 1;
        p->t0 = t;
    }
    if (t > p->t_last && ev->type != VT_EV_KERNEL)
        p->t_last = t;
    switch (ev->type) {
    case VT_EV_ALLOC_FAILED:
        on_failed(p, &ev->u.alloc_failed, t);
        break;
    case VT_EV_VMM_CREATE:
        rc = on_vmm_create(a, p, &ev->u.vmm_create, t);
        break;
    case VT_EV_VMM_RELEASE:
        rc = on_vmm_release(a, p, &ev->u.vmm_release, t);
        break;
    case VT_EV_VMM_MAP:
        rc = on_vmm_map(p, &ev->u.vmm_map);
        break;
    case VT_EV_VMM_UNMAP:
        rc = on_vmm_unmap(a, p, &ev->u.vmm_range, t);
        break;
    case VT_EV_VMM_RESERVE:
    {
        uint64_t size = clamp_size(p, ev->u.vmm_range.size);
        if (vt_map_put(&p->vmm_reserves, ev->u.vmm_range.address + 1, size))
            return VT_ERR_NOMEM;
        p->va_reserved += (int64_t)size;
    }
        if (p->va_reserved > p->va_reserved_peak)
            p->va_reserved_peak = p->va_reserved;
        break;
    case VT_EV_VMM_ADDRESS_FREE: {
        uint64_t sz;
        if (vt_map_del(&p->vmm_reserves, ev->u.vmm_range.address + 1, &sz))
            p->va_reserved -= (int64_t)sz;
        break;
    }
    case VT_EV_POOL: {
        vt_pool *q = get_pool(p, ev->u.pool.pool, ev->u.pool.device);
        if (!q)
            return VT_ERR_NOMEM;
        if (ev->u.pool.op == VT_POOL_CREATE)
            q->creates++;
        else if (ev->u.pool.op == VT_POOL_DESTROY)
            q->destroys++;
        else if (ev->u.pool.op == VT_POOL_TRIM)
            q->trims++;
        break;
    }
    case VT_EV_POOL_USAGE:
        rc = on_pool_usage(p, &ev->u.pool_usage, t);
        break;
    case VT_EV_NVTX:
        on_nvtx(a, p, &ev->u.nvtx, t);
        break;
    case VT_EV_MEMORY_USAGE: {
        uint32_t dv = ev->u.memory_usage.device;
        if (dv >= VT_MAX_DEVICES)
            break;
        vt_devstate *d = &p->dev[dv];
        const vt_ev_memory_usage *m = &ev->u.memory_usage;
        uint64_t used = m->total > m->free ? m->total - m->free : 0;
        d->drv_samples++;
        d->drv_total = m->total;
        d->drv_last_free = m->free;
        d->drv_last_t = t;
        if (used > d->drv_max_used || d->drv_samples == 1) {
            d->drv_max_used = used;
            d->drv_max_t = t;
            d->drv_traced_then = d->live_dev;
        }
        break;
    }
    case VT_EV_DROPPED:
        if ((unsigned)ev->u.dropped.source < 4)
            p->dropped[ev->u.dropped.source] += ev->u.dropped.count;
        break;
    case VT_EV_NOTE:
        add_note(p, ev->u.note.severity, ev->u.note.text);
        break;
    case VT_EV_END:
        p->complete = 1;
        p->end_reason = ev->u.end.reason;
        p->end_signal = ev->u.end.signal;
        p->end_events = ev->u.end.events;
        p->end_dropped = ev->u.end.dropped;
        break;
    default:
        break;
    }
    return rc;
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
    const uint64_t addr = e->address, size = e->size;
    const uint32_t device = e->device, stack = e->site.stack;
    const unsigned kind = e->kind;
    if (__builtin_expect(size > VT_MAX_SIZE || !addr || stack >= p->nstack_unit, 0))
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
    if (__builtin_expect(t >= u->g_next, 0)) {
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

/* A free of a young block: 1 when done, 0 for the full way, or a vt_err.
 * Needs fast_ready(). */
static inline __attribute__((always_inline)) int free_fast(vt_analysis *a, vt_proc *p, const vt_ev_free *e, uint64_t t)
{
    const uint64_t addr = e->address;
    if (__builtin_expect(!addr, 0))
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
    vt_unit *u = &p->units[ui];
    if (__builtin_expect(t >= u->g_next, 0)) {
        int rc = growth_touch_slow(u, t);
        if (rc)
            return rc;
    }
    b->unit = VT_DEAD; /* the slot stays taken */
    p->freed_cache[b->fslot] = addr; /* freed_mark */
    account_free_rest(p, u, u->dev, size, ta, t);
    /* view_pair: allocated before the bound; freed before it too (nothing
     * to do), or after it: the block's pair waits in the tail, which adds
     * its +size only if the free turns out to come after the view (the
     * allocation counting at once and the free waiting, as view_pair does,
     * cost two more updates of the unit now and two when folded) */
    const uint64_t below = p->view_below;
    if (__builtin_expect(ta < below, 1)) {
        if (t < below)
            return 1;
        if (__builtin_expect(p->ntail < p->captail, 1)) {
            vt_tail *w = &p->tail[p->ntail++];
            w->t = t;
            w->bytes = (int64_t)size;
            w->unit = ui;
            w->count = 0;
            return 1;
        }
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
    uint64_t nalloc = 0, nfree = 0, nkernel = 0, t_last = p->t_last;
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
    for (; i < n; i++) {
        const vt_event *e = &ev[i];
        const uint64_t t = e->time_ns;
        switch (e->type) {
        case VT_EV_ALLOC:
            nalloc++;
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
            t_last = t > t_last ? t : t_last;
            rc = free_fast(a, p, &e->u.free, t);
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
        rc = feed_slow(a, p, e);
        if (rc)
            goto out;
    }
out:
    if (t_last > p->t_last)
        p->t_last = t_last;
    p->records += nalloc + nfree + nkernel;
    p->nev[VT_EV_ALLOC] += nalloc;
    p->nev[VT_EV_FREE] += nfree;
    p->nev[VT_EV_KERNEL] += nkernel;
    return rc;
}

/* ------------------------------------------------------------ finishing */

/* Kendall tau-b of y against its index (x has no ties). */
static double kendall_tau_b(const uint64_t *y, uint32_t n)
{
    int64_t s = 0;
    uint64_t n0 = (uint64_t)n * (n - 1) / 2, ties = 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = i + 1; j < n; j++) {
            if (y[j] > y[i])
                s++;
            else if (y[j] < y[i])
                s--;
            else
                ties++;
        }
    if (n0 == 0 || ties >= n0)
        return 0.0;
    return (double)s / sqrt((double)n0 * (double)(n0 - ties));
}

static void unit_growth(vt_proc *p, vt_unit *u)
{
    u->growth_flag = 0;
    if (!u->floor || p->view_t <= u->g_t0)
        return;
    /* the site's window: from its first allocation to the view time, the
     * buckets wholly before T (teardown is not growth) */
    uint32_t bT = growth_bucket(u, p->view_t);
    uint32_t n = bT;
    if (n < 8)
        return;
    uint64_t *f = u->floor;
    uint64_t live = u->live_bytes > 0 ? (uint64_t)u->live_bytes : 0;
    for (uint32_t i = u->gcur + 1; i < n; i++)
        f[i] = live;
    if (u->gcur + 1 < n)
        u->gcur = n - 1;
    uint32_t h = n / 2, m = n - h;
    const uint64_t *y = f + h;
    uint64_t lo = f[0];
    for (uint32_t i = 1; i < n; i++)
        if (f[i] < lo)
            lo = f[i];
    /* grown: from the lowest floor to the live bytes at the view (the last
     * floor when the view falls inside a temporary's lifetime) */
    uint64_t endv = u->at_bytes > 0 ? (uint64_t)u->at_bytes : 0;
    if (endv > f[n - 1] + (f[n - 1] - lo))
        endv = f[n - 1];
    u->grown = (endv > f[n - 1] ? endv : f[n - 1]) - lo;
    double tau = kendall_tau_b(y, m);
    /* least squares slope over the late window, bytes per bucket */
    double mx = (m - 1) / 2.0, my = 0, sxy = 0, sxx = 0;
    for (uint32_t i = 0; i < m; i++)
        my += (double)y[i];
    my /= m;
    for (uint32_t i = 0; i < m; i++) {
        sxy += (i - mx) * ((double)y[i] - my);
        sxx += (i - mx) * (i - mx);
    }
    double slope = sxx > 0 ? sxy / sxx : 0;
    uint32_t rises = 0;
    for (uint32_t i = 1; i < m; i++)
        if (y[i] > y[i - 1])
            rises++;
    /* "keeps rising": the floor rises in at least 3 of the 4 quarters of
     * the late window, the last one included (a cache that filled early in
     * the window and then held does not) */
    uint32_t qrise = 0;
    int last_q = 0;
    for (uint32_t q = 0; q < 4; q++) {
        uint32_t a = m * q / 4, b = m * (q + 1) / 4;
        if (b <= a)
            continue;
        uint64_t before = a ? y[a - 1] : y[0];
        int r = y[b - 1] > before;
        qrise += (uint32_t)r;
        if (q == 3)
            last_q = r;
    }
    double width_s = (double)(1ULL << u->g_shift) / 1e9;
    u->growth_rate = slope / width_s;
    u->growth_conf = tau > 0 ? tau : 0;
    u->growth_rises = rises;
    u->growth_per_step = -1;
    if (p->step_occ) {
        /* steps that started inside the late window */
        uint64_t ta = u->g_t0 + ((uint64_t)h << u->g_shift), tb = u->g_t0 + ((uint64_t)n << u->g_shift);
        double steps = occ_count(p->step_occ, tb) - occ_count(p->step_occ, ta);
        if (steps >= 1)
            u->growth_per_step = u->growth_rate * (double)(tb - ta) / 1e9 / steps;
    }
    u->growth_flag = tau >= 0.5 && slope > 0 && qrise >= 3 && last_q && rises >= 2 && u->grown > 0;
}

static int cmp_u64_desc(uint64_t a, uint64_t b)
{
    return a < b ? 1 : a > b ? -1 : 0;
}

static vt_proc *g_sort_proc; /* qsort has no context argument in C11 */

static int leak_cmp(const void *x, const void *y)
{
    const vt_unit *a = &g_sort_proc->units[*(const uint32_t *)x];
    const vt_unit *b = &g_sort_proc->units[*(const uint32_t *)y];
    int c = cmp_u64_desc((uint64_t)a->at_bytes, (uint64_t)b->at_bytes);
    if (c)
        return c;
    if (a->at_count != b->at_count)
        return a->at_count > b->at_count ? -1 : 1;
    return *(const uint32_t *)x < *(const uint32_t *)y ? -1 : 1;
}

static int growth_cmp(const void *x, const void *y)
{
    const vt_unit *a = &g_sort_proc->units[*(const uint32_t *)x];
    const vt_unit *b = &g_sort_proc->units[*(const uint32_t *)y];
    int c = cmp_u64_desc(a->grown, b->grown);
    if (c)
        return c;
    return *(const uint32_t *)x < *(const uint32_t *)y ? -1 : 1;
}

static void detect_steps(vt_proc *p)
{
    free(p->step_source);
    p->step_source = NULL;
    p->steps = 0;
    p->step_period_ns = 0;
    p->step_occ = NULL;
    /* NVTX: a repeating range, preferring step-like names, then the outermost */
    int best = -1, best_named = 0;
    for (size_t i = 0; i < p->nnvtx; i++) {
        const vt_nvtx_stat *s = &p->nvtx[i];
        if (s->count < 3 || s->last_t <= s->first_t)
            continue;
        int named = strcasestr(s->msg, "step") || strcasestr(s->msg, "iter") || strcasestr(s->msg, "batch");
        if (best < 0) {
            best = (int)i;
            best_named = named;
            continue;
        }
        const vt_nvtx_stat *b = &p->nvtx[best];
        int better;
        if (named != best_named)
            better = named;
        else if (s->min_depth != b->min_depth)
            better = s->min_depth < b->min_depth;
        else if (s->count != b->count)
            better = s->count > b->count;
        else
            better = strcmp(s->msg, b->msg) < 0;
        if (better) {
            best = (int)i;
            best_named = named;
        }
    }
    if (best >= 0) {
        const vt_nvtx_stat *s = &p->nvtx[best];
        p->step_occ = s->occ.t ? &s->occ : NULL;
        p->steps = s->count;
        p->step_period_ns = (double)(s->last_t - s->first_t) / (double)(s->count - 1);
        size_t len = strlen(s->msg) + 16;
        p->step_source = malloc(len);
        if (p->step_source)
            snprintf(p->step_source, len, "nvtx:%s", s->msg);
        return;
    }
    /* Kernels: launch signatures recurring at a regular gap (the same gap
     * for most of their occurrences); the gap shared by most signatures is
     * the loop's period (one occurrence per step). */
    uint64_t best_gap = 0;
    uint32_t best_members = 0;
    uint64_t best_count = 0;
    size_t anchor = 0;
    uint64_t *period = calloc(p->nlstats + 1, sizeof(uint64_t));
    if (!period)
        return;
    for (size_t i = 0; i < p->nlstats; i++) {
        const vt_launch_stat *s = &p->lstats[i];
        if (s->count < 3)
            continue;
        int top = 0;
        for (int k = 1; k < 4; k++)
            if (s->gcnt[k] > s->gcnt[top] || (s->gcnt[k] == s->gcnt[top] && s->gap[k] < s->gap[top]))
                top = k;
        if (s->gcnt[top] * 10 >= (s->count - 1) * 6) /* at least 60% of the gaps */
            period[i] = s->gap[top];
    }
    for (size_t i = 0; i < p->nlstats; i++) {
        if (!period[i])
            continue;
        uint32_t members = 0;
        uint64_t maxc = 0;
        size_t anc = i;
        for (size_t j = 0; j < p->nlstats; j++) {
            if (period[j] != period[i])
                continue;
            const vt_launch_stat *o = &p->lstats[j];
            members++;
            if (o->count > maxc || (o->count == maxc && o->first_t < p->lstats[anc].first_t)) {
                maxc = o->count;
                anc = j;
            }
        }
        if (members > best_members || (members == best_members && period[i] > best_gap)) {
            best_members = members;
            best_gap = period[i];
            best_count = maxc;
            anchor = anc;
        }
    }
    free(period);
    if (best_members && best_count >= 3) {
        const vt_launch_stat *s = &p->lstats[anchor];
        p->step_occ = s->occ.t ? &s->occ : NULL;
        p->steps = s->count;
        p->step_period_ns = (double)(s->last_t - s->first_t) / (double)(s->count - 1);
        char buf[64];
        snprintf(buf, sizeof(buf), "kernels:%llu", (unsigned long long)best_gap);
        p->step_source = xstrdup(buf);
    }
}

int vt_proc_finish(vt_analysis *a, vt_proc *p)
{
    /* the view time */
    switch (p->view_mode) {
    case VT_AT_TIME:
        p->view_t = p->t0 + a->cfg.at_ns;
        break;
    case VT_AT_END:
        p->view_t = p->t_last;
        break;
    default:
        if (p->cand_set) {
            p->view_t = p->cand;
        } else {
            p->view_t = p->t_last;
            p->view_mode = VT_AT_END;
        }
        break;
    }
    tail_end(p, p->view_t, p->view_mode == VT_AT_END);
    /* at = live at the end: the view is the end, or the tail overflowed
     * (every event was counted from then on, see view_apply_slow) */
    const int at_live = p->view_mode == VT_AT_END || p->tail_overflow;
    /* blocks live at the end: allocated at or before T, they are live at
     * the view (their part of it, see view_pair) and never freed after it */
    for (int w = 0; w < 2; w++) {
        const vt_blockmap *tb = w ? &p->old : &p->blocks;
        for (size_t i = 0; i < tb->cap; i++) {
            const vt_block *b = &tb->slots[i];
            if (b->addr && b->unit != VT_DEAD && b->t <= p->view_t) {
                vt_unit *u = &p->units[b->unit];
                u->never_bytes += (int64_t)b->size;
                u->never_count++;
                if (!at_live) {
                    u->at_bytes += (int64_t)b->size;
                    u->at_count++;
                }
            }
        }
    }
    for (size_t i = 0; i < p->nvmms; i++) {
        const vt_vmm *v = &p->vmms[i];
        const uint64_t *live = vt_map_get(&p->vmm_handles, v->handle + 1);
        if (live && *live == i + 1 && v->t <= p->view_t) {
            vt_unit *u = &p->units[v->unit];
            u->never_bytes += (int64_t)v->size;
            u->never_count++;
            if (!at_live) {
                u->at_bytes += (int64_t)v->size;
                u->at_count++;
            }
        }
    }
    p->leak_bytes = p->leak_blocks = p->static_bytes = p->static_blocks = 0;
    for (size_t k = 0; k < p->nunits; k++) {
        vt_unit *u = &p->units[k];
        if (at_live) {
            u->at_bytes = u->live_bytes;
            u->at_count = vt_unit_live_count(u);
        }
        if (u->at_bytes < 0)
            u->at_bytes = 0;
        if (u->at_count < 0)
            u->at_count = 0;
        pk_sync(p, u);
        if (u->allocs)
            u->dev->used = 1; /* (an allocation's one store less) */
        if (u->at_bytes > 0) {
            p->dev[u->device].at_kind[u->kind] += u->at_bytes;
            if (u->kind == VT_MEM_DEVICE_STATIC) {
                /* module globals live as long as their module: by design,
                 * shown apart and not counted as leaks */
                p->static_bytes += (uint64_t)u->at_bytes;
                p->static_blocks += (uint64_t)u->at_count;
                continue;
            }
            p->leak_bytes += (uint64_t)u->at_bytes;
            p->leak_blocks += (uint64_t)u->at_count;
        }
    }
    /* leak order */
    free(p->leak_order);
    p->leak_order = malloc((p->nunits + 1) * sizeof(uint32_t));
    free(p->growth_order);
    p->growth_order = malloc((p->nunits + 1) * sizeof(uint32_t));
    if (!p->leak_order || !p->growth_order)
        return VT_ERR_NOMEM;
    p->nleak = 0;
    for (size_t k = 0; k < p->nunits; k++)
        if (p->units[k].at_bytes > 0 && p->units[k].kind != VT_MEM_DEVICE_STATIC)
            p->leak_order[p->nleak++] = (uint32_t)k;
    g_sort_proc = p;
    qsort(p->leak_order, p->nleak, sizeof(uint32_t), leak_cmp);
    /* growth over [start, T): buckets wholly before T */
    detect_steps(p);
    p->ngrowth = 0;
    p->grown_total = 0;
    for (size_t k = 0; k < p->nunits; k++) {
        vt_unit *u = &p->units[k];
        unit_growth(p, u);
        if (u->growth_flag) {
            p->growth_order[p->ngrowth++] = (uint32_t)k;
            p->grown_total += u->grown;
        }
    }
    qsort(p->growth_order, p->ngrowth, sizeof(uint32_t), growth_cmp);
    if (p->tail_overflow)
        add_note(p, VT_SEV_WARNING,
                 "vramtrace report: the end of real work came too late in the stream to keep every event after "
                 "it; the leak view may count frees made during teardown");
    return 0;
}
