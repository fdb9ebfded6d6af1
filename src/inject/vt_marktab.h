/* vt_marktab.h - the blocks allocated since a mark and still live, in the
 * traced process (docs/ARCHITECTURE.md, "Tests as ranges: the pytest
 * plugin").  vt_test_begin() sets the mark; while it is set, every
 * allocation and free of the library's hot path also goes here (address ->
 * size, device, class, call site); vt_test_end() reads what is left.
 * Without a mark the hot path reads one flag (vt_marktab_active).
 *
 * Thread safety: every call may come from any thread; one mutex, taken
 * only while a mark is set.  Memory: fixed at vt_marktab_create(), never
 * grown; a full table drops blocks and says how many (VT_TEST_F_FULL).
 * No CUDA, no Python here: unit-tested on the CPU
 * (tests/inject/test_marktab.c) and built into the plugin's stand-in
 * library (tests/inject/fake_test_lib.c). */
#ifndef VT_MARKTAB_H
#define VT_MARKTAB_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "vt_test_abi.h"

typedef struct vt_marktab vt_marktab;

/* A Python frame of the allocation, innermost first: `key` identifies the
 * code (equal keys, equal code), `code` is what `describe` takes. */
typedef struct {
    uint64_t key, code;
    uint32_t line;
} vt_markframe;

/* Names of a code object (file, function) into the buffers, NUL-terminated;
 * returns 0, or negative (then "?" is used). */
typedef int (*vt_mark_describe_fn)(uint64_t code, char *file, size_t nfile, char *func, size_t nfunc);

/* A table of up to `max_blocks` live blocks and `max_sites` call sites
 * (and as many code descriptions).  NULL when out of memory. */
vt_marktab *vt_marktab_create(uint32_t max_blocks, uint32_t max_sites);
void vt_marktab_free(vt_marktab *m); /* NULL: nothing */

/* Set the mark: forget every block, start counting.  0, or -4 when a mark
 * is already set (it stays). */
int vt_marktab_begin(vt_marktab *m);

/* Whether a mark is set: the hot path's only cost without one. */
static inline int vt_marktab_active(const _Atomic int *flag)
{
    return __builtin_expect(atomic_load_explicit(flag, memory_order_relaxed), 0);
}
const _Atomic int *vt_marktab_flag(const vt_marktab *m);

/* A block allocated: `tensor` 1 for a tensor of a framework's pool
 * (TENSOR blocks), 0 for the driver's; frames (may be NULL) name its call
 * site, `describe` (may be NULL) names their code the first time a key is
 * seen.  Nothing without a mark. */
void vt_marktab_alloc(vt_marktab *m, uint64_t addr, uint64_t size, uint32_t device, int tensor,
                      const vt_markframe *fr, int nfr, vt_mark_describe_fn describe);
/* A block freed (of the same class): forgotten, if it was allocated since
 * the mark. */
void vt_marktab_release(vt_marktab *m, uint64_t addr, int tensor);

/* Clear the mark and report (sum, and up to max_sites sites, largest
 * first; either may be NULL).  `tensors` 1: tensor events were on, count
 * the tensors.  Returns the number of sites written, or -1 without a mark. */
int vt_marktab_end(vt_marktab *m, int tensors, vt_test_summary *sum, vt_test_site *sites, uint32_t max_sites);

/* In a forked child: no mark, a fresh mutex (the parent's may have been
 * held by another thread at the fork). */
void vt_marktab_forget(vt_marktab *m);

/* 1 when a Python file is not the user's: site-packages, dist-packages,
 * the standard library, frozen or generated code ("<...>"), pytest and
 * pluggy, vramtrace's own modules. */
int vt_marktab_is_library(const char *file);

#endif
