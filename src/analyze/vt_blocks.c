/* vt_blocks.c - the live block tables of a process: a young table that
 * stays in cache, a growable old one behind a blocked Bloom filter. */
#include "vt_replay_int.h"
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

int blocks_grow(vt_blockmap *b)
{
    return blocks_rehash(b, b->cap ? b->cap * 2 : 1024);
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

void blocks_remove(vt_blockmap *b, vt_block *s)
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
void filt_false_positive(vt_proc *p)
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
vt_block *young_probe(vt_proc *p, uint64_t addr)
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
vt_block *blocks_lookup(vt_proc *p, uint64_t addr, vt_blockmap **table)
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

int vt_proc_live_blocks(const vt_proc *p, int (*fn)(void *ctx, uint64_t addr, uint64_t size, uint64_t t, uint32_t unit),
                        void *ctx)
{
    const vt_blockmap *tabs[2] = {&p->blocks, &p->old};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < tabs[k]->cap; i++) {
            const vt_block *b = &tabs[k]->slots[i];
            if (b->addr && b->unit != VT_DEAD) {
                int rc = fn(ctx, b->addr, b->size, b->t, b->unit);
                if (rc)
                    return rc;
            }
        }
    for (size_t i = 0; i < p->vmm_handles.cap; i++) { /* VMM physical allocations not released */
        if (!p->vmm_handles.keys[i])
            continue;
        const vt_vmm *v = &p->vmms[p->vmm_handles.vals[i] - 1];
        int rc = fn(ctx, v->handle, v->size, v->t, v->unit);
        if (rc)
            return rc;
    }
    return 0;
}
