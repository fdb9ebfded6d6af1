/* vt_pystack.h - the calling thread's Python stack, read without the GIL
 * (src/inject; CPython 3.10, 3.11, 3.12, 3.13, detected at run time).
 *
 * INTEGRATION NOTE (for the CUPTI allocation callback, VRAMTRACE_PYTHON_STACKS=1)
 *   once, e.g. in InitializeInjection (Python is initialized by then):
 *       char why[160];
 *       if (vt_pystack_init(why, sizeof why) < 0) say once: "python stacks off: <why>"
 *   at each allocation, in the allocating thread, after the native unwind
 *   (ips innermost first, nips may be 0 when native stacks are off):
 *       vt_frame fr[VT_PYSTACK_MAX_MERGED];
 *       int n = vt_pystack_stack(ips, nips, fr, VT_PYSTACK_MAX_MERGED,
 *                                pydepth, my_define, w);
 *       n < 0: use the native frames alone (not Python, disabled);
 *       n >= 0: fr[0..n) is the merged stack for vt_site.frames.
 *   where my_define(ctx, key, file, function) calls
 *       vt_writer_define_code((vt_writer *)ctx, key, file, function).
 *   vt_pystack_stack() defines each code key before returning it (once per
 *   thread, see vt_pystack_seen()), so the per-thread ring order puts the
 *   definition before the allocation that references it.
 *   Cost here (BENCHMARKS.md, ## pystack): 30 Python frames ~0.3-0.7 us to
 *   capture, ~0.7-1.2 us with the define check and a ~30-frame merge.
 *   Python frames replace the native frames of _PyEval_EvalFrameDefault
 *   (found by dlsym + symbol size); if none is found in `ips` (a capped
 *   unwind, a cloned eval loop), they go where the stack enters the
 *   interpreter's code, or after the native ones.
 *
 * What it does: reads PyThreadState -> frame chain -> code objects with plain
 * loads, per-version layouts (3.13: checked against _Py_DebugOffsets).  No
 * GIL, no Python call that allocates or touches reference counts, no lock.
 * Layouts are checked against the calling thread's real frames with
 * fault-tolerant reads (types, bounds, RESUME at the first traceable
 * instruction, lines vs PyCode_Addr2Line, entry marks vs the eval frames
 * on our native stack).  If init runs where there is no Python frame, the
 * first capture that finds some checks them; if that check fails, captures
 * return VT_ERR_DISABLED from then on and one line goes to stderr
 * ("vramtrace: python stacks off: ...", not with VRAMTRACE_QUIET set).
 * Only the calling thread's own frames are read: they cannot change while it
 * is inside the callback.  Every pointer and size is sanity-checked; any
 * surprise ends the walk early (fewer frames), never a crash.  Apart from
 * that late-check line nothing here prints; callers report init's message.
 *
 * Thread safety: init once (idempotent; not concurrently with captures);
 * everything else may be called from any thread at any time.  Per-thread
 * caches live in TLS.  Not async-signal-safe (first TLS touch may malloc).
 */
#ifndef VT_PYSTACK_H
#define VT_PYSTACK_H

#include <stddef.h>
#include <stdint.h>

#include "vt_event.h"

#define VT_PYSTACK_MAX_DEPTH 256   /* cap on Python frames per capture */
#define VT_PYSTACK_MAX_MERGED 384  /* a comfortable size for merged arrays */

#define VT_PYFRAME_TRUNCATED 1u /* set on the last frame: the chain goes on */

/* One Python frame, innermost first. */
typedef struct {
    uint64_t key;    /* code key for vt_frame.pc: code object address mixed
                      * with a tag of (filename, name, line table, first
                      * line, the name's hash), so a reused address gives
                      * another key */
    uint64_t code;   /* the code object's address, for vt_pystack_describe() */
    uint32_t line;   /* line being executed; 0 if the table has none */
    uint16_t nentry; /* C-level eval calls (_PyEval_EvalFrameDefault) that
                      * end after this frame: 3.10 always 1; 3.11+ 1 on the
                      * outermost frame each C call runs, else 0 */
    uint16_t flags;  /* VT_PYFRAME_* */
} vt_pyframe;

/* Detect the interpreter in this process and validate the layouts (reading
 * the calling thread's own frames with fault-tolerant reads).  Returns 0
 * when captures will work, or a negative vt_err with a one-line reason in
 * `why` (may be NULL): VT_ERR_NOT_FOUND not a Python process / Python not
 * initialized, VT_ERR_VERSION unsupported version or build,
 * VT_ERR_CORRUPT an inconsistency.  Idempotent: later calls return the
 * first result. */
int vt_pystack_init(char *why, size_t n);

/* 1 after a successful init, else 0. */
int vt_pystack_ready(void);

/* "3.12.1"-style version found by init, or "" if none. */
const char *vt_pystack_version(void);

/* Walk the calling thread's Python frames into out[0..max) (max is capped at
 * VT_PYSTACK_MAX_DEPTH), innermost first.  Returns the count (0 when the
 * thread has no Python thread state or is not in Python code) or
 * VT_ERR_DISABLED when init did not succeed or the late layout check
 * failed.  If the chain is longer than max, the last frame has
 * VT_PYFRAME_TRUNCATED.  Frames Python itself hides (not started yet, C
 * stack shims) are left out. */
int vt_pystack_capture(vt_pyframe *out, int max);

/* The same, for a caller that may not need the frames themselves.
 * frames (may be NULL): set to where the frames are: out, or, for a walk
 * that read exactly as a recent one of this thread (its per-thread memo),
 * that walk's frames in place (not copied; valid until this thread's next
 * capture).  walk (may be NULL): set to the id of the memo entry holding
 * this walk, nonzero and unique in the process: two captures with one id
 * gave the same frames; 0 when the walk was not kept. */
int vt_pystack_capture_walk(vt_pyframe *out, int max, const vt_pyframe **frames, uint64_t *walk);

/* UTF-8, NUL-terminated file name and function name (co_qualname on 3.11+,
 * co_name on 3.10) of a code object taken from a vt_pyframe of a capture
 * made by this thread in the same callback (the frame keeps it alive only
 * while it runs).  Truncates to the buffers at a character boundary.
 * Returns 0, VT_ERR_DISABLED, or VT_ERR_CORRUPT (buffers then hold "?"). */
int vt_pystack_describe(uint64_t code, char *file, size_t nfile, char *func, size_t nfunc);

/* Per-thread "already defined" cache of code keys (direct mapped, 1024
 * entries).  Returns 1 if this thread marked `key` before, else marks it
 * and returns 0.  An evicted key is reported again: define it again (the
 * writer accepts redefinitions).  vt_pystack_unsee() drops a mark (use it
 * when the definition could not be queued). */
int vt_pystack_seen(uint64_t key);
void vt_pystack_unsee(uint64_t key);

/* Nonzero if `ip`, a return address (or a return address - 1), lies in the
 * interpreter's eval loop, i.e. in (start, end] of _PyEval_EvalFrameDefault. */
int vt_pystack_is_eval(uint64_t ip);

/* The eval-loop ranges vt_pystack_is_eval() tests, (start, end] for a
 * return address: copies at most max into start/end, returns how many
 * there are (0 before vt_pystack_init succeeded). */
int vt_pystack_eval_ranges(uint64_t *start, uint64_t *end, int max);

/* Merge native ips (innermost first) and Python frames into out[0..max):
 * each native eval-loop frame is replaced by the Python frames it runs
 * (the next group, up to and including a frame with nentry > 0); Python
 * frames left when the native stack ends (a capped native unwind, or none)
 * are appended.  A native eval frame with no Python group left is kept if
 * the Python capture was complete, dropped if it was truncated.  Returns
 * the count (<= max).  If no native frame is recognised as the eval loop,
 * all Python frames go before the first native frame inside the
 * interpreter's code (else after the native frames). */
int vt_pystack_merge(const uint64_t *ips, int nips, const vt_pyframe *py, int npy,
                     vt_frame *out, int max);

/* Callback defining a code key, e.g. a wrapper of vt_writer_define_code().
 * Returns 0 or a negative vt_err (then the key is defined again later). */
typedef int (*vt_pystack_define_fn)(void *ctx, uint64_t key, const char *file,
                                    const char *function);

/* All of the above in one call: capture up to `pydepth` Python frames,
 * define the keys this thread has not defined yet through `define` (may be
 * NULL), merge with `ips`.  Returns the merged count, or VT_ERR_DISABLED (out
 * untouched). */
int vt_pystack_stack(const uint64_t *ips, int nips, vt_frame *out, int max, int pydepth,
                     vt_pystack_define_fn define, void *ctx);

/* A key for vt_unwind_capture_keyed() from a capture: the innermost
 * frame's code and line (nonzero), or 0 when there is no Python frame. */
static inline uint64_t vt_pystack_walk_key(const vt_pyframe *py, int npy)
{
    return npy > 0 ? (py[0].key ^ ((uint64_t)py[0].line << 32)) | 1 : 0;
}

/* The second half of vt_pystack_stack(), for a caller that captured the
 * Python frames first (vt_pystack_capture: npy >= 0) to key its native
 * walk by them: define the new keys, merge.  Returns the merged count. */
int vt_pystack_finish(const uint64_t *ips, int nips, const vt_pyframe *py, int npy, vt_frame *out, int max,
                      vt_pystack_define_fn define, void *ctx);

/* ---- test hooks ---- */
/* Byte offset of a layout field ("ts_interp", "f_previous", "co_qualname",
 * "u_ascii_size" (a size), ... see vt_pystack.c) in the built-in table of
 * 3.<minor>, or for 3.13 of a _Py_DebugOffsets entry ("dbg_co_filename"...);
 * -1 if none or not used by that version. */
long vt_pystack_layout_offset(int minor, const char *field);
/* Add an eval-loop address range [start, end) used by vt_pystack_is_eval()
 * (tests of the merge without an interpreter).  Returns 0 or VT_ERR_NOSPACE. */
int vt_pystack_test_add_eval(uint64_t start, uint64_t end);
/* Set the interpreter's code range [start, end) (init finds it) used by the
 * merge when no eval frame is recognised.  Returns 0. */
int vt_pystack_test_set_interp(uint64_t start, uint64_t end);
/* Forget the init result; the next init uses layout field `field` (a name
 * as in vt_pystack_layout_offset(), NULL for none) shifted by `delta`, to
 * prove that a wrong table disables us instead of crashing.  Not for use
 * while other threads capture.  Returns 0 or VT_ERR_INVALID. */
int vt_pystack_test_reset(const char *field, long delta);

/* 1 when the walk memo names code objects by address because a code
 * watcher counts their destruction (3.12+, initialized by a thread that
 * held the GIL); 0 when it reads each code object's key. */
int vt_pystack_code_watch(void);

#endif
