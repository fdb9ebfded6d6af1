/* vt_unwind.h - module map and fast native stack capture (src/inject).
 *
 * The module map is a snapshot of the loaded ELF objects (dl_iterate_phdr):
 * path, load bias, mapped range, GNU build-id and the runtime address of
 * each object's .eh_frame_hdr.  Snapshots are immutable once published, so
 * lookups need no lock.
 *
 * The unwinder walks x86-64 stacks with DWARF call-frame information
 * (.eh_frame_hdr binary search table + .eh_frame CIE/FDE programs).  The
 * result of interpreting the CFI for one instruction pointer is compiled
 * into a 64-bit rule (CFA = rsp|rbp + offset, return address at CFA - 8n,
 * saved rbp at CFA - 8m, or "outermost", or "unknown") and kept in a
 * lock-free direct-mapped cache, so that in steady state one frame costs a
 * hash, one load and two bounds-checked stack reads.  Every stack read is
 * checked against the calling thread's stack bounds; anything unknown ends
 * the walk (after a bounds-checked frame-pointer step).  When an ip lies in
 * no known module the map is rescanned (rate-limited) and new modules are
 * reported through a callback (the injection library turns them into
 * Module records).
 *
 * Thread safety: vt_unwind_capture() may run concurrently on any number of
 * threads; it never takes a lock in steady state (a rescan is guarded by a
 * try-lock: losers skip it).  Not async-signal-safe (a rescan calls
 * dl_iterate_phdr and malloc). x86-64 only; elsewhere capture returns 0.
 */
#ifndef VT_UNWIND_H
#define VT_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#define VT_BUILD_ID_MAX 32

typedef struct {
    const char *path;          /* "" for the main program is replaced by /proc/self/exe's target */
    uint64_t load_bias;        /* dlpi_addr */
    uint64_t start, end;       /* [lowest, highest) address of the PT_LOAD segments */
    uint8_t build_id[VT_BUILD_ID_MAX];
    uint32_t build_id_len;
    uint64_t eh_frame_hdr;     /* runtime address of .eh_frame_hdr, 0 if none */
    int skip;                  /* frames in this module are dropped at the top of a stack */
} vt_module;

typedef struct vt_modmap vt_modmap;

/* Scan the loaded objects now.  Returns 0 or a vt_err. */
int vt_modmap_scan(vt_modmap **out);
void vt_modmap_free(vt_modmap *m);
size_t vt_modmap_count(const vt_modmap *m);
const vt_module *vt_modmap_get(const vt_modmap *m, size_t i);
/* The module whose [start,end) holds addr, or NULL. */
const vt_module *vt_modmap_find(const vt_modmap *m, uint64_t addr);

typedef struct vt_unwinder vt_unwinder;

/* Called once for every module of the first scan and for every module that
 * a later rescan finds new (any thread, inside vt_unwind_capture). */
typedef void (*vt_module_cb)(void *arg, const vt_module *m);

/* cache_bits: log2 of the rule cache entries (0 = default 16). */
int vt_unwinder_create(vt_unwinder **out, unsigned cache_bits, vt_module_cb cb, void *cb_arg);
void vt_unwinder_free(vt_unwinder *u);

/* Drop frames at the top of captured stacks while they lie in a module
 * whose basename starts with `prefix` (e.g. "libcupti", "libcuda.so") or,
 * for vt_unwinder_skip_addr, in the module holding `addr`.  Set before
 * capturing; takes effect at the next rescan (and immediately for modules
 * already known). */
void vt_unwinder_skip_prefix(vt_unwinder *u, const char *prefix);
void vt_unwinder_skip_addr(vt_unwinder *u, const void *addr);

/* End every walk at the first frame whose ip (a return address) lies in
 * one of n ranges (start[i], end[i]] (e.g. the interpreter's eval loop,
 * where Python frames take over): that frame is the last one stored.  At
 * most 8 ranges; n = 0 clears.  Set before capturing.  Returns 0 or
 * VT_ERR_INVALID. */
int vt_unwinder_stop_at(vt_unwinder *u, int n, const uint64_t *start, const uint64_t *end);

/* Capture the caller's stack: ips[0] is the return address into the caller
 * of vt_unwind_capture_keyed (i.e. the caller's current pc, one past the
 * call), then outward.  Returns the number of ips stored (<= max).  xkey:
 * a key the caller knows to tell its call sites apart (e.g. the innermost
 * Python frame; 0 = none): the per-thread memo of walks only tries entries
 * recorded with the same key.  Any key is correct; a good one makes
 * repeated walks cheaper.  walk (may be NULL): set to the id of the memo
 * entry that holds this walk, nonzero and unique in the process: two
 * captures with one id stored the same ips (the same count); 0 when the
 * walk was not memoized.  frames (may be NULL): set to where the ips are:
 * ips, or, for a walk replayed from the memo, the memo entry itself (not
 * copied; valid until this thread's next capture with u). */
int vt_unwind_capture_keyed(vt_unwinder *u, uint64_t *ips, int max, uint64_t xkey, uint64_t *walk,
                            const uint64_t **frames);

/* The same without a key.  Always inlined, so that ips[0] is still the
 * return address into the caller of vt_unwind_capture. */
static inline __attribute__((always_inline)) int vt_unwind_capture(vt_unwinder *u, uint64_t *ips, int max)
{
    return vt_unwind_capture_keyed(u, ips, max, 0, NULL, NULL);
}

/* Unwind from an explicit register state (ip is treated as a return
 * address).  For tests and for callers that have a ucontext. */
int vt_unwind_from(vt_unwinder *u, uint64_t ip, uint64_t sp, uint64_t bp, uint64_t *ips, int max);

/* captures/frames of other threads are counted in batches of 64 captures */
typedef struct {
    uint64_t captures, frames;
    uint64_t cache_hits, cache_misses;
    uint64_t fp_steps;       /* frame-pointer fallback steps */
    uint64_t rescans;
    uint64_t stops_unknown;  /* walks that ended on an unknown ip/rule */
    uint64_t memo_full;      /* walks replayed whole from the thread's memo (no rule lookups) */
    uint64_t memo_steps;     /* steps replayed from a memo by walks that then went on */
    /* one whole replay in 64, described; sums over `sampled` replays: the
     * host's stack read (bytes from the walk's start to its last word, 4 KiB
     * pages), rbp loads checked, the memo way the entry was found in (0-31),
     * replays whose entry was the predicted way (the one that followed the
     * thread's previous capture last time), other candidates verified in
     * vain before it and the steps they verified */
    uint64_t sampled, sampled_span, sampled_pages, sampled_bp, sampled_way, sampled_pred, sampled_tried,
        sampled_wasted;
} vt_unwind_stats;
void vt_unwinder_get_stats(const vt_unwinder *u, vt_unwind_stats *st);

/* The current module map snapshot (valid until vt_unwinder_free). */
const vt_modmap *vt_unwinder_modmap(const vt_unwinder *u);

/* For tests: compile the rule of `ip` (as a return address) uncached and
 * describe it: returns 0 and fills the fields, or a vt_err if unknown. */
int vt_unwind_rule_describe(vt_unwinder *u, uint64_t ip, int *cfa_reg_is_bp, int64_t *cfa_off,
                            int *ra_n, int *bp_n, int *outermost);

#endif
