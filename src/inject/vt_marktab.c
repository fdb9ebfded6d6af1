/* vt_marktab.c - blocks allocated since a mark and still live (vt_marktab.h).
 *
 * Three fixed tables, open addressing with linear probing: live blocks
 * (address and class -> size, device, site; deleted by backward shift, so
 * no tombstones), call sites ((code, line, device, class) -> live bytes and
 * blocks, cleared at each mark) and code descriptions (key -> file,
 * function, whether it is a library's; kept across marks: a key names one
 * code).  A site is the user's frame of the allocation, chosen here from
 * the Python frames with the descriptions.  One mutex over all of it,
 * taken only while a mark is set: a test's allocations, not a training
 * loop's. */
#define _GNU_SOURCE
#include "vt_marktab.h"
#include "vt_hash.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_IDX UINT32_MAX

typedef struct {
    uint64_t addr, size;
    uint32_t site;
    uint16_t device;
    uint8_t tensor, used;
} mblock;

typedef struct {
    uint64_t bytes, blocks;
    uint32_t code, line, device;
    uint8_t tensor, used;
} msite;

typedef struct {
    uint64_t key;
    char file[256];
    char func[128];
    uint8_t lib, used;
} mcode;

struct vt_marktab {
    _Atomic int active;
    pthread_mutex_t mu;
    mblock *blocks;
    uint32_t bmask, bused, bmax;
    msite *sites; /* smask + 3 entries: the last two (per class) take what no slot could */
    uint32_t smask, sused, smax;
    mcode *codes;
    uint32_t cmask, cused, cmax;
    /* per class (0 driver, 1 tensor) since the mark */
    uint64_t allocated[2], allocs[2], live[2], peak[2];
    uint64_t dropped;
    int nopy;
};

static uint32_t pow2_at_least(uint32_t n)
{
    uint32_t c = 16;
    while (c < n && c < (1u << 30))
        c <<= 1;
    return c;
}

vt_marktab *vt_marktab_create(uint32_t max_blocks, uint32_t max_sites)
{
    vt_marktab *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    const uint32_t bcap = pow2_at_least(max_blocks + max_blocks / 3 + 1);
    const uint32_t scap = pow2_at_least(2 * max_sites);
    m->blocks = calloc(bcap, sizeof(mblock));
    m->sites = calloc((size_t)scap + 2, sizeof(msite));
    m->codes = calloc(scap, sizeof(mcode));
    if (!m->blocks || !m->sites || !m->codes)
        goto fail_tables;
    if (pthread_mutex_init(&m->mu, NULL))
        goto fail_tables;
    m->bmask = bcap - 1;
    m->bmax = max_blocks;
    m->smask = scap - 1;
    m->smax = max_sites;
    m->cmask = scap - 1;
    m->cmax = max_sites;
    m->sites[scap] = (msite){.code = NO_IDX, .tensor = 0}; /* the overflow sites */
    m->sites[scap + 1] = (msite){.code = NO_IDX, .tensor = 1};
    return m;
fail_tables:
    free(m->blocks);
    free(m->sites);
    free(m->codes);
    free(m);
    return NULL;
}

void vt_marktab_free(vt_marktab *m)
{
    if (!m)
        return;
    pthread_mutex_destroy(&m->mu);
    free(m->blocks);
    free(m->sites);
    free(m->codes);
    free(m);
}

const _Atomic int *vt_marktab_flag(const vt_marktab *m)
{
    return &m->active;
}

int vt_marktab_begin(vt_marktab *m)
{
    pthread_mutex_lock(&m->mu);
    if (atomic_load(&m->active)) {
        pthread_mutex_unlock(&m->mu);
        return -4;
    }
    memset(m->blocks, 0, ((size_t)m->bmask + 1) * sizeof(mblock));
    memset(m->sites, 0, ((size_t)m->smask + 1) * sizeof(msite));
    m->sites[m->smask + 1] = (msite){.code = NO_IDX, .tensor = 0};
    m->sites[m->smask + 2] = (msite){.code = NO_IDX, .tensor = 1};
    m->bused = m->sused = 0;
    memset(m->allocated, 0, sizeof(m->allocated));
    memset(m->allocs, 0, sizeof(m->allocs));
    memset(m->live, 0, sizeof(m->live));
    memset(m->peak, 0, sizeof(m->peak));
    m->dropped = 0;
    m->nopy = 0;
    atomic_store(&m->active, 1);
    pthread_mutex_unlock(&m->mu);
    return 0;
}

int vt_marktab_is_library(const char *f)
{
    if (!f || !*f || f[0] == '<' || f[0] == '?')
        return 1;
    static const char *const parts[] = {"/site-packages/", "/dist-packages/", "/_pytest/", "/pluggy/"};
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        if (strstr(f, parts[i]))
            return 1;
    const char *base = strrchr(f, '/');
    base = base ? base + 1 : f;
    if (!strncmp(base, "vramtrace_", 10))
        return 1;
    /* the standard library: .../lib/python3.N/x.py (its site-packages is above) */
    const char *lp = strstr(f, "/lib/python3");
    if (lp) {
        const char *rest = strchr(lp + 12, '/');
        if (rest && (lp[12] == '.' || (lp[12] >= '0' && lp[12] <= '9')))
            return 1;
    }
    return 0;
}

/* The description of a code key: its index, or NO_IDX (table full, no
 * describe, no key).  Under the mutex. */
static uint32_t code_of(vt_marktab *m, const vt_markframe *f, vt_mark_describe_fn describe)
{
    if (!f->key)
        return NO_IDX;
    for (uint32_t i = (uint32_t)vt_hash64(f->key) & m->cmask;; i = (i + 1) & m->cmask) {
        mcode *c = &m->codes[i];
        if (c->used && c->key == f->key)
            return i;
        if (c->used)
            continue;
        if (!describe || m->cused >= m->cmax)
            return NO_IDX;
        if (describe(f->code, c->file, sizeof(c->file), c->func, sizeof(c->func))) {
            snprintf(c->file, sizeof(c->file), "?");
            snprintf(c->func, sizeof(c->func), "?");
        }
        c->file[sizeof(c->file) - 1] = c->func[sizeof(c->func) - 1] = 0;
        c->key = f->key;
        c->lib = (uint8_t)vt_marktab_is_library(c->file);
        c->used = 1;
        m->cused++;
        return i;
    }
}

/* The site slot of (code, line, device, class), made if new; the overflow
 * slot when the table is full.  Under the mutex. */
static uint32_t site_of(vt_marktab *m, uint32_t code, uint32_t line, uint32_t device, int tensor)
{
    const uint64_t h = vt_hash64(((uint64_t)code << 32 | line) ^ vt_hash64((uint64_t)device << 1 | (unsigned)tensor));
    for (uint32_t i = (uint32_t)h & m->smask;; i = (i + 1) & m->smask) {
        msite *s = &m->sites[i];
        if (s->used && s->code == code && s->line == line && s->device == device && s->tensor == tensor)
            return i;
        if (s->used)
            continue;
        if (m->sused >= m->smax)
            return m->smask + 1 + (uint32_t)tensor;
        *s = (msite){.code = code, .line = line, .device = device, .tensor = (uint8_t)tensor, .used = 1};
        m->sused++;
        return i;
    }
}

static inline uint32_t block_home(const vt_marktab *m, uint64_t addr, int tensor)
{
    return (uint32_t)vt_hash64(addr ^ (uint64_t)tensor) & m->bmask;
}

void vt_marktab_alloc(vt_marktab *m, uint64_t addr, uint64_t size, uint32_t device, int tensor,
                      const vt_markframe *fr, int nfr, vt_mark_describe_fn describe)
{
    if (!m || !addr)
        return;
    tensor = tensor ? 1 : 0;
    pthread_mutex_lock(&m->mu);
    if (!atomic_load_explicit(&m->active, memory_order_relaxed))
        goto out; /* the mark ended while this thread waited */
    /* the user's frame: the innermost that is not a library's */
    uint32_t code = NO_IDX, line = 0;
    int chosen = 0;
    for (int i = 0; fr && i < nfr && !chosen; i++) {
        uint32_t c = code_of(m, &fr[i], describe);
        if (c == NO_IDX)
            continue;
        if (code == NO_IDX || !m->codes[c].lib) {
            code = c;
            line = fr[i].line;
            chosen = !m->codes[c].lib;
        }
    }
    if (!fr || nfr <= 0)
        m->nopy = 1;
    m->allocated[tensor] += size;
    m->allocs[tensor]++;
    uint32_t i = block_home(m, addr, tensor);
    for (;; i = (i + 1) & m->bmask) {
        mblock *b = &m->blocks[i];
        if (!b->used)
            break;
        if (b->addr == addr && b->tensor == tensor) { /* its free was not seen: the new block replaces it */
            msite *s = &m->sites[b->site];
            s->bytes -= b->size;
            s->blocks--;
            m->live[tensor] -= b->size;
            m->bused--;
            b->used = 0;
            break;
        }
    }
    if (m->bused >= m->bmax) {
        m->dropped++;
        goto out;
    }
    const uint32_t si = site_of(m, code, line, device, tensor);
    m->blocks[i] =
        (mblock){.addr = addr, .size = size, .site = si, .device = (uint16_t)device, .tensor = (uint8_t)tensor, .used = 1};
    m->bused++;
    m->sites[si].bytes += size;
    m->sites[si].blocks++;
    m->live[tensor] += size;
    if (m->live[tensor] > m->peak[tensor])
        m->peak[tensor] = m->live[tensor];
out:
    pthread_mutex_unlock(&m->mu);
}

void vt_marktab_release(vt_marktab *m, uint64_t addr, int tensor)
{
    if (!m || !addr)
        return;
    tensor = tensor ? 1 : 0;
    pthread_mutex_lock(&m->mu);
    if (!atomic_load_explicit(&m->active, memory_order_relaxed))
        goto out;
    uint32_t i = block_home(m, addr, tensor);
    for (;; i = (i + 1) & m->bmask) {
        mblock *b = &m->blocks[i];
        if (!b->used)
            goto out; /* allocated before the mark */
        if (b->addr == addr && b->tensor == tensor)
            break;
    }
    mblock *b = &m->blocks[i];
    msite *s = &m->sites[b->site];
    s->bytes -= b->size;
    s->blocks--;
    m->live[tensor] -= b->size;
    m->bused--;
    /* backward shift: move later entries of the run into the hole */
    uint32_t hole = i;
    for (uint32_t j = (i + 1) & m->bmask; m->blocks[j].used; j = (j + 1) & m->bmask) {
        uint32_t home = block_home(m, m->blocks[j].addr, m->blocks[j].tensor);
        /* j may move to the hole when its home is not in (hole, j] */
        if ((j > hole && (home <= hole || home > j)) || (j < hole && home <= hole && home > j)) {
            m->blocks[hole] = m->blocks[j];
            hole = j;
        }
    }
    m->blocks[hole].used = 0;
out:
    pthread_mutex_unlock(&m->mu);
}

/* sites largest first, then by file and line: a stable report */
static int by_bytes_desc(const void *pa, const void *pb, void *ctx)
{
    const vt_marktab *t = ctx;
    const msite *a = &t->sites[*(const uint32_t *)pa], *b = &t->sites[*(const uint32_t *)pb];
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    if (a->code != b->code) {
        if (a->code == NO_IDX || b->code == NO_IDX)
            return a->code == NO_IDX ? 1 : -1;
        int c = strcmp(t->codes[a->code].file, t->codes[b->code].file);
        if (c)
            return c;
    }
    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    return a->device < b->device ? -1 : a->device > b->device;
}

static void site_out(const vt_marktab *m, uint32_t i, vt_test_site *o)
{
    const msite *st = &m->sites[i];
    memset(o, 0, sizeof(*o));
    const mcode *c = st->code != NO_IDX ? &m->codes[st->code] : NULL;
    snprintf(o->file, sizeof(o->file), "%s", c ? c->file : "?");
    snprintf(o->function, sizeof(o->function), "%s", c ? c->func : (i > m->smask ? "(other sites)" : "?"));
    o->line = st->line;
    o->device = (int32_t)st->device;
    o->bytes = st->bytes;
    o->blocks = st->blocks;
}

int vt_marktab_end(vt_marktab *m, int tensors, vt_test_summary *sum, vt_test_site *sites, uint32_t max_sites)
{
    pthread_mutex_lock(&m->mu);
    if (!atomic_load(&m->active)) {
        pthread_mutex_unlock(&m->mu);
        return -1;
    }
    atomic_store(&m->active, 0);
    /* counted: tensors with tensor events, else every block */
    vt_test_summary s;
    memset(&s, 0, sizeof(s));
    s.abi = VT_TEST_ABI;
    if (tensors) {
        s.flags |= VT_TEST_F_TENSORS;
        s.allocated_bytes = m->allocated[1];
        s.allocs = m->allocs[1];
        s.leaked_bytes = m->live[1];
        s.peak_bytes = m->peak[1];
        s.reserved_bytes = m->live[0];
    } else {
        s.allocated_bytes = m->allocated[0] + m->allocated[1];
        s.allocs = m->allocs[0] + m->allocs[1];
        s.leaked_bytes = m->live[0] + m->live[1];
        /* the two classes' peaks need not coincide: their sum bounds it */
        s.peak_bytes = m->peak[0] + m->peak[1];
    }
    s.dropped = m->dropped;
    if (m->dropped)
        s.flags |= VT_TEST_F_FULL;
    if (m->nopy)
        s.flags |= VT_TEST_F_NOPY;
    /* the sites' indexes (no memory: none returned, the summary still is) */
    uint32_t *idx = sites && max_sites ? malloc(((size_t)m->sused + 2) * sizeof(uint32_t)) : NULL;
    uint32_t n = 0;
    for (uint32_t i = 0; i <= m->smask + 2; i++) {
        const msite *st = &m->sites[i];
        if (!st->blocks || (tensors && !st->tensor))
            continue;
        s.leaked_blocks += st->blocks;
        s.nsites++;
        if (st->device < VT_TEST_MAX_DEVICES) {
            s.device_live[st->device] += st->bytes;
            if (st->device + 1 > s.ndevices)
                s.ndevices = st->device + 1;
        }
        if (idx)
            idx[n++] = i;
    }
    if (idx) {
        qsort_r(idx, n, sizeof(*idx), by_bytes_desc, m);
        if (n > max_sites)
            n = max_sites;
        for (uint32_t k = 0; k < n; k++)
            site_out(m, idx[k], &sites[k]);
        free(idx);
    }
    pthread_mutex_unlock(&m->mu);
    if (sum)
        *sum = s;
    return (int)n;
}

void vt_marktab_forget(vt_marktab *m)
{
    if (!m)
        return;
    atomic_store(&m->active, 0);
    pthread_mutex_init(&m->mu, NULL);
}
