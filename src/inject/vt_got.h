/* vt_got.h - point other libraries' calls of a function at a replacement,
 * through their global offset tables.
 *
 * For every object loaded in the process but the one holding `self` and
 * those whose path contains one of `skip`, each JUMP_SLOT or GLOB_DAT
 * relocation against a symbol named in `hooks` has its GOT slot set to the
 * hook's replacement.  A slot inside PT_GNU_RELRO is made writable for the
 * store and read-only again after it.  A store of an aligned pointer is
 * atomic: a thread calling through the slot meanwhile calls either the old
 * or the new function.  Objects loaded later are not seen.  Nothing is
 * allocated; safe to call again (a slot already patched is left as is).
 *
 * Returns the number of slots set (0: no object calls these), or -1 when a
 * slot could not be made writable (errno; the slots set before stay set).
 * `what`, when not NULL, receives the path of the last object patched (or
 * of the one that failed). */
#ifndef VT_GOT_H
#define VT_GOT_H

#include <stddef.h>

typedef struct {
    const char *name; /* the symbol, e.g. "cuptiActivityEnable" */
    void *repl;       /* what its callers call from now on */
} vt_got_hook;

int vt_got_patch(const vt_got_hook *hooks, int nhooks, const void *self, const char *const *skip, int nskip,
                 char *what, size_t what_len);

#endif
