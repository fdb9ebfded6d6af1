/* vt_intern.h - hash tables and a bump arena for the writer's interning
 * (src/core, internal).  Single-threaded: only the writer's encoder uses
 * them.  Every operation that could allocate takes `may_alloc`; with 0 it
 * fails instead of calling malloc (the emergency flush runs in a signal
 * handler).  Depends on the C library only.
 */
#ifndef VT_INTERN_H
#define VT_INTERN_H

#include <stddef.h>
#include <stdint.h>

/* 64-bit hash of `len` bytes. */
uint64_t vt_intern_hash(const void *data, size_t len, uint64_t seed);

/* Bump allocator: memory lives until vt_arena_free(). */
typedef struct vt_arena_chunk vt_arena_chunk;
typedef struct {
    vt_arena_chunk *head;
    size_t used, cap; /* in head */
} vt_arena;
void *vt_arena_alloc(vt_arena *a, size_t size, int may_alloc); /* 8-aligned; NULL on failure */
void vt_arena_free(vt_arena *a);

/* Byte-string key -> nonzero uint32 value.  Keys are copied into the map's
 * arena. */
typedef struct {
    uint64_t hash;
    const void *key;
    uint32_t len;
    uint32_t val; /* 0 = empty slot */
} vt_imap_slot;
typedef struct {
    vt_imap_slot *slots;
    size_t cap, n; /* cap is a power of two */
    vt_arena arena;
} vt_imap;
int vt_imap_init(vt_imap *m, size_t cap);
/* Value for key, 0 if absent. */
uint32_t vt_imap_find(const vt_imap *m, const void *key, uint32_t len, uint64_t hash);
/* Insert a key known to be absent.  Returns 0 or VT_ERR_NOMEM. */
int vt_imap_insert(vt_imap *m, const void *key, uint32_t len, uint64_t hash, uint32_t val, int may_alloc);
/* Forget every key (keeps the capacity; frees key memory if may_alloc). */
void vt_imap_clear(vt_imap *m, int may_alloc);
void vt_imap_free(vt_imap *m);

/* uint64 key -> nonzero uint64 value. */
typedef struct {
    uint64_t key;
    uint64_t val; /* 0 = empty slot */
} vt_umap_slot;
typedef struct {
    vt_umap_slot *slots;
    size_t cap, n;
} vt_umap;
int vt_umap_init(vt_umap *m, size_t cap);
uint64_t vt_umap_find(const vt_umap *m, uint64_t key);
/* Insert or replace.  Returns 0 or VT_ERR_NOMEM. */
int vt_umap_put(vt_umap *m, uint64_t key, uint64_t val, int may_alloc);
void vt_umap_free(vt_umap *m);

#endif
