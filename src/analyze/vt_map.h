/* vt_map.h - small growable hash map: uint64 key -> uint64 value (key 0
 * reserved as empty; callers add 1 or use nonzero keys).  Linear probing
 * with backward-shift deletion (vt_map.c). */
#ifndef VT_MAP_H
#define VT_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "vt_hash.h"

typedef struct {
    uint64_t *keys;
    uint64_t *vals;
    size_t cap; /* power of two or 0 */
    size_t len;
} vt_map;

int vt_map_put(vt_map *m, uint64_t key, uint64_t val); /* insert or replace */
uint64_t *vt_map_get(const vt_map *m, uint64_t key);   /* NULL if absent */
int vt_map_del(vt_map *m, uint64_t key, uint64_t *val); /* 1 if removed */
void vt_map_free(vt_map *m);

#endif
