/* vt_pystack_tracelib.c - part of the Python test library: writes a real
 * trace (vt_writer) whose allocation events carry merged native + Python
 * stacks made by vt_pystack_stack(), as libvramtrace.so does in its CUPTI
 * callback, so tests can read them back with `vramtrace dump`.  Test-only.
 * VTPT_UNWIND=inner: the native part from the library's own unwinder,
 * ending at the first eval frame (vt_unwinder_stop_at, the library's
 * default); then no native frame may follow a Python frame.
 * VTPT_UNWIND=library: the library's own capture (vt_capture.h: the same
 * unwinder, the walk memos, stack references: a stack sent before travels
 * as a reference).  Else glibc backtrace(), every native frame
 * (VRAMTRACE_NATIVE_STACKS=full).
 */
#define _GNU_SOURCE
#include <execinfo.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vt_capture.h"
#include "vt_error.h"
#include "vt_pystack.h"
#include "vt_unwind.h"
#include "vt_writer.h"

#define VTPT_EXPORT __attribute__((visibility("default")))

static vt_writer *g_w;
static vt_unwinder *g_uw; /* VTPT_UNWIND=inner or library */
static int g_library;     /* VTPT_UNWIND=library */

VTPT_EXPORT int vtpt_trace_open(const char *path)
{
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.path = path;
    cfg.quiet = 1;
    vt_ev_header h;
    memset(&h, 0, sizeof h);
    h.pid = (uint32_t)getpid();
    h.program = "test_pystack_trace";
    h.python_stacks = 1;
    h.native_stacks = 1;
    h.clock = VT_CLOCK_MONOTONIC;
    const char *uw = getenv("VTPT_UNWIND");
    g_library = uw && !strcmp(uw, "library");
    if (uw && (!strcmp(uw, "inner") || g_library)) {
        uint64_t es[8], ee[8];
        int ne = vt_pystack_eval_ranges(es, ee, 8);
        if (ne <= 0 || ne > 8) /* vtpt_init first; the eval loop must be known */
            return VT_ERR_INVALID;
        int rc = vt_unwinder_create(&g_uw, 0, NULL, NULL);
        if (rc == 0)
            rc = vt_unwinder_stop_at(g_uw, ne, es, ee);
        if (rc != 0)
            return rc;
    }
    return vt_writer_create(&g_w, &cfg, &h);
}

/* An allocation event at (addr, size) with this thread's merged stack. */
VTPT_EXPORT int vtpt_trace_alloc(unsigned long long addr, unsigned long long size)
{
    void *raw[128];
    uint64_t ips[128];
    vt_frame frbuf[VT_PYSTACK_MAX_MERGED], *fr = frbuf;
    int nips, n;
    vt_event ev;
    memset(&ev, 0, sizeof ev);
    if (g_library) { /* the library's capture, stack references included */
        static __thread vt_capture_scratch scratch;
        const vt_capture_cfg c = {g_w, g_uw, 1, 128, 1};
        n = (int)vt_capture_stack(&c, NULL, &scratch, ev.u.alloc.site.fp);
        fr = scratch.fr;
        if (!n && !(ev.u.alloc.site.fp[0] | ev.u.alloc.site.fp[1]))
            return VT_ERR_CORRUPT; /* no frames and no stack sent before */
    } else if (g_uw) { /* as the library does: Python frames first, keying the native walk */
        static __thread vt_pyframe py[VT_PYSTACK_MAX_DEPTH];
        int npy = vt_pystack_capture(py, VT_PYSTACK_MAX_DEPTH);
        if (npy <= 0)
            return npy < 0 ? npy : VT_ERR_CORRUPT;
        nips = vt_unwind_capture_keyed(g_uw, ips, 128, vt_pystack_walk_key(py, npy), NULL, NULL);
        if (nips <= 0 || !vt_pystack_is_eval(ips[nips - 1])) /* the walk must end at the eval loop */
            return VT_ERR_CORRUPT;
        n = vt_pystack_finish(ips, nips, py, npy, fr, VT_PYSTACK_MAX_MERGED, vt_capture_define_code, g_w);
    } else {
        nips = backtrace(raw, 128);
        for (int i = 0; i < nips; i++)
            ips[i] = (uint64_t)(uintptr_t)raw[i];
        n = vt_pystack_stack(ips, nips, fr, VT_PYSTACK_MAX_MERGED, VT_PYSTACK_MAX_DEPTH, vt_capture_define_code,
                             g_w);
    }
    if (n < 0)
        return n;
    for (int i = 1; g_uw && i < n; i++) /* native frames, then Python frames only */
        if (fr[i].kind == VT_FRAME_NATIVE && fr[i - 1].kind == VT_FRAME_PYTHON)
            return VT_ERR_CORRUPT;
    ev.type = VT_EV_ALLOC;
    ev.u.alloc.address = addr;
    ev.u.alloc.size = size;
    ev.u.alloc.kind = VT_MEM_DEVICE;
    ev.u.alloc.api = VT_API_MALLOC_ASYNC;
    ev.u.alloc.site.frames = fr;
    ev.u.alloc.site.nframes = (uint32_t)n;
    return vt_writer_emit(g_w, &ev);
}

VTPT_EXPORT int vtpt_trace_close(void)
{
    int rc = vt_writer_close(g_w, VT_END_NORMAL, 0);
    vt_writer_free(g_w);
    g_w = NULL;
    vt_unwinder_free(g_uw);
    g_uw = NULL;
    return rc;
}
