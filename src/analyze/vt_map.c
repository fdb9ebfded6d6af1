/* vt_map.c - the general open-addressing hash map (vt_map.h): uint64
 * keys and values, linear probing, backward-shift deletion. */
#include <stdlib.h>
#include <string.h>

#include "vt_error.h"
#include "vt_map.h"
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
