/* vt_hash.h - the one 64-bit mixer (MurmurHash3's finalizer) that the
 * writer's interning tables and the analyzer's maps hash with, and the
 * hash of a byte string built on it (the Parquet dictionaries, the page's
 * string table). */
#ifndef VT_HASH_H
#define VT_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t vt_hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* s[0..n) eight bytes a step (a loop per byte costs more than its
 * multiply, and in the fuzz build a comparison hook per byte) */
static inline uint64_t vt_hash_bytes(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, s + i, 8);
        h = (h ^ v) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    uint64_t v = 0;
    memcpy(&v, s + i, n - i);
    h = (h ^ v) * 0x100000001b3ull;
    return vt_hash64(h);
}

#endif
