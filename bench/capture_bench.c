/* capture_bench.c - libvt_capture_bench.so: the allocation callback's
 * stack capture and event (src/inject/vt_capture.h, then vt_writer_emit),
 * between rounds of a host's own work, for bench/capture_bench.py (issues
 * 3 and 6).  On the GPU a capture costs the step about three times its own
 * time (BENCHMARKS.md, `## inject`, sixth session): what it displaces from
 * the host's caches is paid by the host afterwards.  Under cachegrind this
 * library counts both sides: the host's misses (host_work) with and
 * without a capture between its rounds, and the capture's own.
 * Loaded through ctypes by Python code with a real frame chain (ctypes
 * releases the GIL, as PyTorch does around CUDA work).  Bench-only. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vt_capture.h"
#include "vt_error.h"

#define VTCB_EXPORT __attribute__((visibility("default")))

static vt_capture_cfg g_cfg;
static char g_path[64];

/* The settings of libvramtrace.so's defaults: native walk ending at the
 * interpreter's first eval frame, Python frames, depth, references. */
VTCB_EXPORT int vtcb_init(int native, int python, int depth)
{
    char why[256] = "";
    g_cfg.depth = depth;
    g_cfg.refs = 1;
    if (python) {
        if (vt_pystack_init(why, sizeof why) < 0) {
            fprintf(stderr, "capture_bench: python stacks off: %s\n", why);
            return -1;
        }
        g_cfg.pystack = 1;
    }
    if (native) {
        int rc = vt_unwinder_create(&g_cfg.uw, 16, NULL, NULL);
        uint64_t es[8], ee[8];
        int ne = python ? vt_pystack_eval_ranges(es, ee, 8) : 0;
        if (rc == 0 && ne > 0 && ne <= 8)
            rc = vt_unwinder_stop_at(g_cfg.uw, ne, es, ee);
        if (rc != 0)
            return rc;
    }
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    snprintf(g_path, sizeof g_path, "/tmp/vt_capture_bench.%d.zst", (int)getpid());
    cfg.path = g_path;
    cfg.quiet = 1;
    vt_ev_header h;
    memset(&h, 0, sizeof h);
    h.pid = (uint32_t)getpid();
    h.program = "capture_bench";
    h.python_stacks = g_cfg.pystack;
    h.native_stacks = g_cfg.uw != NULL;
    h.clock = VT_CLOCK_MONOTONIC;
    return vt_writer_create(&g_cfg.w, &cfg, &h);
}

VTCB_EXPORT void vtcb_close(void)
{
    vt_writer_close(g_cfg.w, VT_END_NORMAL, 0);
    vt_writer_free(g_cfg.w);
    vt_unwinder_free(g_cfg.uw);
    unlink(g_path);
    memset(&g_cfg, 0, sizeof g_cfg);
}

/* The host's own work between two allocations: read every line of its
 * working set and write every fourth (a dispatcher's tables, tensors'
 * metadata, its stack).  noinline: cachegrind counts it apart. */
__attribute__((noinline)) static uint64_t host_work(uint64_t *set, size_t words)
{
    uint64_t s = 0;
    for (size_t i = 0; i < words; i += 8) {
        s += set[i];
        if ((i & 31) == 0)
            set[i] = s;
    }
    return s;
}

/* What an allocation callback does: the stack, then the event. */
__attribute__((noinline)) static void callback(uint64_t addr, int stacks)
{
    static __thread vt_capture_scratch scratch; /* as the library's, per thread */
    vt_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = VT_EV_ALLOC;
    ev.time_ns = __rdtsc(); /* given, as libvramtrace.so gives it (its TSC read at the callback's start) */
    ev.u.alloc.address = addr;
    ev.u.alloc.size = 4096;
    ev.u.alloc.kind = VT_MEM_DEVICE;
    ev.u.alloc.api = VT_API_MALLOC_ASYNC;
    if (stacks) {
        ev.u.alloc.site.nframes = vt_capture_stack(&g_cfg, NULL, &scratch, ev.u.alloc.site.fp);
        ev.u.alloc.site.frames = ev.u.alloc.site.nframes ? scratch.fr : NULL;
    }
    vt_writer_emit(g_cfg.w, &ev);
}

/* iters rounds of host work over host_kib KiB, each followed by
 * mode 0: nothing; 1: an event without stack; 2: a callback with stacks.
 * Every 256 rounds the writer is flushed (its thread drains the ring).
 * Returns ns per round. */
VTCB_EXPORT double vtcb_run(int iters, int host_kib, int mode)
{
    size_t words = (size_t)host_kib * 1024 / 8;
    uint64_t *set = aligned_alloc(64, words * 8 + 64);
    if (!set)
        return -1;
    memset(set, 1, words * 8);
    struct timespec t0, t1;
    uint64_t s = 0, cyc = 0;
    const uint64_t tsc0 = __rdtsc();
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < iters; i++) {
        s += host_work(set, words);
        if (mode) {
            uint64_t c0 = __rdtsc();
            callback(0x7f0000000000ull + (uint64_t)i * 4096, mode == 2);
            cyc += __rdtsc() - c0;
        }
        if ((i & 255) == 255)
            vt_writer_flush(g_cfg.w);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const uint64_t tsc1 = __rdtsc();
    __asm__ __volatile__("" ::"r"(s));
    free(set);
    double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
    if (getenv("VTCB_SELF")) /* the callback's own time, not the round's */
        return tsc1 > tsc0 ? (double)cyc * ns / (double)(tsc1 - tsc0) / iters : -1;
    return ns / iters;
}
