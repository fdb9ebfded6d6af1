/* vt_export_int.h - what the exporters share (src/analyze):
 *
 *   vt_export.c           the driver (two passes), the timeline model that
 *                         the Perfetto and Chrome writers render, and the
 *                         helpers every format uses (times, frames, pids)
 *   vt_export_perfetto.c  the timeline as Perfetto's protobuf trace
 *   vt_export_chrome.c    the timeline as Chrome's JSON trace
 *   vt_export_memviz.c    PyTorch's memory snapshot (its own consumer)
 *   vt_pickle.c           the pickle writer memviz uses
 */
#ifndef VT_EXPORT_INT_H
#define VT_EXPORT_INT_H

#include <stdint.h>
#include <stdio.h>

#include "vt_analyze_int.h"
#include "vt_export.h"

/* An annotation of a slice or instant; `key` is a string literal (the
 * Perfetto writer interns keys by their address). */
typedef struct {
    const char *key;
    int is_str;
    int64_t i;
    const char *s;
} vt_xarg;

#define VT_XARG_I(k, v) ((vt_xarg){(k), 0, (int64_t)(v), NULL})
#define VT_XARG_S(k, v) ((vt_xarg){(k), 1, 0, (v)})

/* Tracks: a 64-bit id, unique in the export.  Kinds, for the writers that
 * need them (Chrome: a counter is an event of its process, a slice track a
 * thread of it). */
enum { VT_XT_SLICES = 0, VT_XT_COUNTER = 1, VT_XT_THREAD = 2 };

/* A timeline format.  Times are ns on the job's wall clock (each process's
 * trace clock mapped through its header's clock pair); every track is
 * declared (track/thread) before its first event.  Slices on one track
 * nest, except `async` ones (allocations: any overlap).  `begin`/`end`
 * slices come in time order per track (NVTX push/pop); complete ones
 * (`slice`) may come in any order.  Each returns 0 or a vt_err. */
typedef struct {
    void *ctx;
    int (*process)(void *ctx, uint64_t track, uint32_t pid, const char *name, const char *label);
    int (*track)(void *ctx, uint64_t track, uint64_t process, int kind, const char *name, const char *share_key,
                 uint32_t tid, int order);
    int (*slice)(void *ctx, uint64_t track, uint64_t t0, uint64_t t1, const char *name, int async, uint64_t id,
                 const vt_xarg *args, int nargs);
    int (*begin)(void *ctx, uint64_t track, uint64_t t, const char *name, const vt_xarg *args, int nargs);
    int (*end)(void *ctx, uint64_t track, uint64_t t);
    int (*counter)(void *ctx, uint64_t track, uint64_t t, int64_t v);
    int (*instant)(void *ctx, uint64_t track, uint64_t t, const char *name, const vt_xarg *args, int nargs);
    /* live bytes of one call site at t (a flamegraph sample): frames
     * innermost first */
    int (*flame)(void *ctx, uint64_t track, uint64_t t, const vt_xframe *frames, uint32_t n, uint64_t bytes,
                 const char *name);
    int (*finish)(void *ctx);
    const char *(*errmsg)(void *ctx); /* why a call failed, or NULL (may be NULL) */
    void (*free)(void *ctx);
} vt_xsink;

/* budget: the export's one memory budget (the model's, vt_xjob.budget),
 * charged for what a writer keeps per track, name, frame and stack; a
 * call that would pass it fails with VT_ERR_LIMIT.  NULL: none. */
int vt_xsink_perfetto(vt_xsink *s, FILE *out, vt_table_budget *budget);
/* Perfetto's first packet: the clock snapshot at t0 (before any other). */
int vt_xsink_perfetto_start(vt_xsink *s, uint64_t t0);
int vt_xsink_chrome(vt_xsink *s, FILE *out, uint64_t t0, uint64_t max_bytes, vt_table_budget *budget);

/* Exporting one job: the two analyses, the inputs, the output. */
typedef struct {
    const vt_export_config *cfg;
    vt_analysis *model;  /* pass 1, finished */
    vt_analysis *live;   /* pass 2, being replayed; charged to the model's budget */
    FILE *out;
    uint64_t t0;         /* the job's first time (wall clock ns) */
    uint32_t *upid_pid;  /* per process: the pid written (unique in the job) */
    char *const *inputs;
    int ninputs;
} vt_xjob;

/* Pass 2: replay the job's inputs into j->live with the consumer fn.
 * Both analyses and the writer's own tables share one budget, the model's
 * (j->model->budget: --max-memory); past it a call returns VT_ERR_LIMIT
 * and vt_export says what ran out. */
int vt_xjob_replay(vt_xjob *j, vt_replay_fn fn, void *ctx);

/* A process's trace time on the job's wall clock. */
static inline uint64_t vt_xjob_time(const vt_proc *p, uint64_t t)
{
    if (!p->realtime_ns)
        return t;
    return t - p->trace_clock_ns + p->realtime_ns;
}

/* Inside --start/--end (trace time of p). */
int vt_xjob_in_window(const vt_xjob *j, const vt_proc *p, uint64_t t);

/* "program (rank R, host H, pid P)" of a process. */
void vt_xjob_label(const vt_proc *p, char *buf, size_t len);

/* The frames of a stack, innermost first, Python frames where recorded
 * (native interpreter frames between them left out, as in the report). */
uint32_t vt_xjob_frames(vt_xjob *j, const vt_proc *p, uint32_t stack, vt_xframe *out, uint32_t max);

/* A call site's name: its user frame ("keep_history (train.py:16)"). */
void vt_xjob_site_name(vt_xjob *j, const vt_proc *p, uint32_t stack, uint32_t thread, char *buf, size_t len);

int vt_export_memviz(vt_xjob *j, char *err, size_t errlen);

#endif
