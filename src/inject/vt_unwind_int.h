/* vt_unwind_int.h - what the unwinder's parts share (vt_unwind.h):
 *
 *   vt_modmap.c  the module map (dl_iterate_phdr, build ids)
 *   vt_cfi.c     DWARF CFI (.eh_frame_hdr, .eh_frame) compiled into rules
 *   vt_unwind.c  the unwinder: rule cache, stop ranges, the per-thread memo
 *                of recent walks, the walk itself
 *
 * Runs inside the traced process: never aborts; every stack read is bounds
 * checked; unknown CFI ends the walk.
 */
#ifndef VT_UNWIND_INT_H
#define VT_UNWIND_INT_H

#define _GNU_SOURCE
#include "vt_unwind.h"

#include <elf.h>
#include <stddef.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vt_error.h"
#include "vt_hot.h"

/* ---------------------------------------------------------------- modmap */

struct vt_modmap {
    vt_module *mods; /* sorted by start */
    size_t n;
    char *strings;   /* all paths, one block */
};

/* ---------------------------------------------------------------- rules */

/* Rule word layout (bit 0 = valid so that 0 means empty):
 *   [1:2]  kind: 0 normal, 1 outermost (RA undefined), 2 unknown
 *   [3]    CFA register: 0 rsp, 1 rbp
 *   [4:23] CFA offset (bytes, 0..2^20-1)
 *   [24:27] return address at CFA - 8*n
 *   [28:37] saved rbp at CFA - 8*m, 0 = rbp unchanged
 *   [38]   the ip lies in a skipped module (cache entries only)
 *   [39:63] tag (hash bits of the ip) */
enum { R_NORMAL = 0, R_OUTERMOST = 1, R_UNKNOWN = 2 };
#define R_SKIP (1ull << 38)
#define R_TAG_SHIFT 39
#define R_BODY_MASK ((1ull << R_TAG_SHIFT) - 1)

static inline uint64_t rule_pack(int kind, int cfa_bp, uint64_t off, unsigned ra_n, unsigned bp_n)
{
    return 1ull | (uint64_t)kind << 1 | (uint64_t)(cfa_bp & 1) << 3 | (off & 0xfffff) << 4 |
           (uint64_t)(ra_n & 0xf) << 24 | (uint64_t)(bp_n & 0x3ff) << 28;
}
#define RULE_KIND(r) ((int)(((r) >> 1) & 3))
#define RULE_CFA_BP(r) ((int)(((r) >> 3) & 1))
#define RULE_OFF(r) (((r) >> 4) & 0xfffff)
#define RULE_RA_N(r) ((unsigned)(((r) >> 24) & 0xf))
#define RULE_BP_N(r) ((unsigned)(((r) >> 28) & 0x3ff))

/* ---- shared between the parts */

uint64_t vt_cfi_compile_rule(const vt_module *m, uint64_t pc);

#endif
