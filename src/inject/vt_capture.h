/* vt_capture.h - the call stack of one allocation, as libvramtrace.so's
 * driver callbacks take it (issues 3 and 6): the Python frames first (their
 * walk keys the native walk's memo, which then finds the walk of this
 * Python line among the many sites that reach the allocator at the same
 * stack depth), then the native walk, the stack's fingerprint, and the
 * merge into frames only when this thread has not sent the same stack
 * before (the writer then sends a reference).
 *
 * Static inline, so that the library's callback path keeps it in its own
 * hot section and reads its settings straight from the library's state;
 * bench/capture_bench.c runs the same sequence on the CPU.
 * Without VT_HAVE_PYSTACK, native frames only. */
#ifndef VT_CAPTURE_H
#define VT_CAPTURE_H

#include <stddef.h>
#include <stdint.h>
#include <x86intrin.h>

#include "vt_event.h"
#include "vt_fp.h"
#include "vt_hot.h"
#include "vt_unwind.h"
#include "vt_writer.h"
#ifdef VT_HAVE_PYSTACK
#include "vt_pystack.h"
#define VT_CAPTURE_FRAMES_MAX VT_PYSTACK_MAX_MERGED
#else
#define VT_CAPTURE_FRAMES_MAX 260
#endif

typedef struct {
    vt_writer *w;    /* where frames and code definitions go */
    vt_unwinder *uw; /* NULL: no native frames */
    int pystack;     /* Python frames on */
    int depth;       /* frames per walk (at most 256 are taken) */
    int refs;        /* stack references: a stack sent before is not merged again */
} vt_capture_cfg;

/* What a capture writes besides its fingerprint, per thread (the caller
 * owns it): the native walk's return addresses and the Python walk's
 * frames when their memos miss, and the merged frames when the writer
 * needs them.  Not locals: these 14 KiB on the stack put the callback's
 * frames pages below the host's, each call touching lines and pages the
 * host never uses; with them here a callback's stack stays within a page,
 * and a repeated stack writes none of them (both memos hand their frames
 * out in place). */
typedef struct {
    uint64_t ips[260];
#ifdef VT_HAVE_PYSTACK
    vt_pyframe py[VT_PYSTACK_MAX_DEPTH];
#endif
    vt_frame fr[VT_CAPTURE_FRAMES_MAX]; /* the result */
} vt_capture_scratch;

/* TSC cycles per phase, added to when the caller times them. */
typedef struct {
    uint64_t stk_cyc; /* the whole capture */
    uint64_t uw_cyc;  /* of it, the native walk */
} vt_capture_times;

#ifdef VT_HAVE_PYSTACK
/* vt_pystack's define callback (ctx: the writer) */
static inline int vt_capture_define_code(void *ctx, uint64_t key, const char *file, const char *function)
{
    return vt_writer_define_code((vt_writer *)ctx, key, file, function);
}
#endif

/* Capture into s->fr (innermost first) and fp; returns the frame count,
 * 0 when this thread has sent the same stack before.  times: NULL, or the
 * phases' counters. */
VT_HOT static inline uint32_t vt_capture_stack(const vt_capture_cfg *c, vt_capture_times *times,
                                               vt_capture_scratch *s, uint64_t fp[2])
{
    uint64_t *ips = s->ips;
    vt_frame *fr = s->fr;
    const int max = VT_CAPTURE_FRAMES_MAX;
    const uint64_t *nat = ips; /* where the native frames are: ips, or the unwinder's memo */
    ips[0] = 0;
    int depth = c->depth < 256 ? c->depth : 256;
    int n = 0;
    uint64_t c0 = times ? __rdtsc() : 0;
    uint64_t xkey = 0, walk = 0, pywalk = 0;
    int npy = -1;
#ifdef VT_HAVE_PYSTACK
    const vt_pyframe *py = s->py; /* or the Python walk's memo */
    npy = c->pystack ? vt_pystack_capture_walk(s->py, depth < VT_PYSTACK_MAX_DEPTH ? depth : VT_PYSTACK_MAX_DEPTH,
                                               &py, &pywalk)
                     : -1;
    xkey = vt_pystack_walk_key(py, npy);
#endif
    if (c->uw) {
        uint64_t c1 = times ? __rdtsc() : 0;
        n = vt_unwind_capture_keyed(c->uw, ips, depth, xkey, &walk, &nat);
        if (times)
            times->uw_cyc += __rdtsc() - c1;
    }
#ifdef VT_BENCH_CAPTURE_ONLY /* benchmarks only (bench/inject.cmake): the stacks captured and dropped */
    __asm__ __volatile__("" ::"r"(nat), "r"(n), "r"(npy), "r"(walk), "r"(pywalk) : "memory");
    fp[0] = fp[1] = 0;
    if (times)
        times->stk_cyc += __rdtsc() - c0;
    return 0;
#endif
    if (c->refs && (n > 0 || npy > 0)) {
#ifdef VT_HAVE_PYSTACK
        _Static_assert(sizeof(vt_pyframe) == 24 && offsetof(vt_pyframe, line) == 16, "vt_fp_capture's layout");
        vt_fp_capture(walk, nat, n, pywalk, (const uint64_t *)py, npy > 0 ? npy : 0, fp);
#else
        vt_fp_capture(walk, nat, n, 0, NULL, 0, fp);
#endif
        if (vt_writer_site_sent(c->w, fp)) {
            if (times)
                times->stk_cyc += __rdtsc() - c0;
            return 0; /* frames not needed: the writer sends the reference */
        }
    }
#ifdef VT_HAVE_PYSTACK
    if (npy >= 0) {
        int m = vt_pystack_finish(nat, n, py, npy, fr, max, vt_capture_define_code, c->w);
        if (times)
            times->stk_cyc += __rdtsc() - c0;
        return (uint32_t)m;
    }
#endif
    if (times)
        times->stk_cyc += __rdtsc() - c0;
    if (n > max)
        n = max;
    for (int i = 0; i < n; i++) {
        fr[i].pc = nat[i];
        fr[i].line = 0;
        fr[i].kind = VT_FRAME_NATIVE;
    }
    return (uint32_t)n;
}

#endif
