/* vt_hash.h - the one 64-bit mixer (MurmurHash3's finalizer) that the
 * writer's interning tables and the analyzer's maps hash with. */
#ifndef VT_HASH_H
#define VT_HASH_H

#include <stdint.h>

static inline uint64_t vt_hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

#endif
