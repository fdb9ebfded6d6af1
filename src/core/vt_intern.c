/* vt_intern.c - open-addressing hash tables and a bump arena used by the
 * writer's interning (see vt_intern.h).  Touches only its own memory. */
#include "vt_intern.h"
#include "vt_hash.h"

#include <stdlib.h>
#include <string.h>

#include "vt_error.h"

#define VT_ARENA_CHUNK (64u << 10)

struct vt_arena_chunk {
    vt_arena_chunk *next;
    size_t cap;
    unsigned char data[];
};


uint64_t vt_intern_hash(const void *data, size_t len, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t h = seed ^ (len * 0x9e3779b97f4a7c15ull);
    while (len >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        h = (h ^ v) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
        p += 8;
        len -= 8;
    }
    if (len) {
        uint64_t v = 0;
        memcpy(&v, p, len);
        h = (h ^ v) * 0x9e3779b97f4a7c15ull;
    }
    return vt_hash64(h);
}

void *vt_arena_alloc(vt_arena *a, size_t size, int may_alloc)
{
    size = (size + 7) & ~(size_t)7;
    if (!a->head || a->cap - a->used < size) {
        if (!may_alloc)
            return NULL;
        size_t cap = size > VT_ARENA_CHUNK ? size : VT_ARENA_CHUNK;
        vt_arena_chunk *c = malloc(sizeof(*c) + cap);
        if (!c)
            return NULL;
        c->next = a->head;
        c->cap = cap;
        a->head = c;
        a->used = 0;
        a->cap = cap;
    }
    void *p = a->head->data + a->used;
    a->used += size;
    return p;
}

void vt_arena_free(vt_arena *a)
{
    vt_arena_chunk *c = a->head;
    while (c) {
        vt_arena_chunk *n = c->next;
        free(c);
        c = n;
    }
    a->head = NULL;
    a->used = a->cap = 0;
}

static size_t vt_pow2(size_t n)
{
    size_t c = 16;
    while (c < n)
        c <<= 1;
    return c;
}

int vt_imap_init(vt_imap *m, size_t cap)
{
    memset(m, 0, sizeof(*m));
    m->cap = vt_pow2(cap);
    m->slots = calloc(m->cap, sizeof(*m->slots));
    /* first arena chunk now: an emergency flush (no allocation allowed)
     * must be able to intern the first keys (inject found events dropped) */
    if (m->slots && !vt_arena_alloc(&m->arena, 0, 1)) {
        free(m->slots);
        m->slots = NULL;
    }
    return m->slots ? 0 : VT_ERR_NOMEM;
}

uint32_t vt_imap_find(const vt_imap *m, const void *key, uint32_t len, uint64_t hash)
{
    size_t mask = m->cap - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        const vt_imap_slot *s = &m->slots[i];
        if (!s->val)
            return 0;
        if (s->hash == hash && s->len == len && memcmp(s->key, key, len) == 0)
            return s->val;
    }
}

static void vt_imap_place(vt_imap_slot *slots, size_t cap, const vt_imap_slot *e)
{
    size_t mask = cap - 1;
    size_t i = e->hash & mask;
    while (slots[i].val)
        i = (i + 1) & mask;
    slots[i] = *e;
}

int vt_imap_insert(vt_imap *m, const void *key, uint32_t len, uint64_t hash, uint32_t val, int may_alloc)
{
    if ((m->n + 1) * 4 > m->cap * 3) { /* keep load <= 3/4 */
        if (!may_alloc)
            return VT_ERR_NOMEM;
        size_t ncap = m->cap * 2;
        vt_imap_slot *ns = calloc(ncap, sizeof(*ns));
        if (!ns)
            return VT_ERR_NOMEM;
        for (size_t i = 0; i < m->cap; i++)
            if (m->slots[i].val)
                vt_imap_place(ns, ncap, &m->slots[i]);
        free(m->slots);
        m->slots = ns;
        m->cap = ncap;
    }
    void *copy = vt_arena_alloc(&m->arena, len ? len : 1, may_alloc);
    if (!copy)
        return VT_ERR_NOMEM;
    memcpy(copy, key, len);
    vt_imap_slot e = {.hash = hash, .key = copy, .len = len, .val = val};
    vt_imap_place(m->slots, m->cap, &e);
    m->n++;
    return 0;
}

void vt_imap_clear(vt_imap *m, int may_alloc)
{
    memset(m->slots, 0, m->cap * sizeof(*m->slots));
    m->n = 0;
    if (may_alloc)
        vt_arena_free(&m->arena);
}

void vt_imap_free(vt_imap *m)
{
    free(m->slots);
    vt_arena_free(&m->arena);
    memset(m, 0, sizeof(*m));
}

int vt_umap_init(vt_umap *m, size_t cap)
{
    memset(m, 0, sizeof(*m));
    m->cap = vt_pow2(cap);
    m->slots = calloc(m->cap, sizeof(*m->slots));
    return m->slots ? 0 : VT_ERR_NOMEM;
}

uint64_t vt_umap_find(const vt_umap *m, uint64_t key)
{
    size_t mask = m->cap - 1;
    for (size_t i = vt_hash64(key) & mask;; i = (i + 1) & mask) {
        if (!m->slots[i].val)
            return 0;
        if (m->slots[i].key == key)
            return m->slots[i].val;
    }
}

int vt_umap_put(vt_umap *m, uint64_t key, uint64_t val, int may_alloc)
{
    size_t mask = m->cap - 1;
    for (size_t i = vt_hash64(key) & mask; m->slots[i].val; i = (i + 1) & mask) {
        if (m->slots[i].key == key) {
            m->slots[i].val = val;
            return 0;
        }
    }
    if ((m->n + 1) * 4 > m->cap * 3) {
        if (!may_alloc)
            return VT_ERR_NOMEM;
        size_t ncap = m->cap * 2;
        vt_umap_slot *ns = calloc(ncap, sizeof(*ns));
        if (!ns)
            return VT_ERR_NOMEM;
        for (size_t j = 0; j < m->cap; j++) {
            if (!m->slots[j].val)
                continue;
            size_t k = vt_hash64(m->slots[j].key) & (ncap - 1);
            while (ns[k].val)
                k = (k + 1) & (ncap - 1);
            ns[k] = m->slots[j];
        }
        free(m->slots);
        m->slots = ns;
        m->cap = ncap;
        mask = ncap - 1;
    }
    size_t i = vt_hash64(key) & mask;
    while (m->slots[i].val)
        i = (i + 1) & mask;
    m->slots[i].key = key;
    m->slots[i].val = val;
    m->n++;
    return 0;
}

void vt_umap_free(vt_umap *m)
{
    free(m->slots);
    memset(m, 0, sizeof(*m));
}
