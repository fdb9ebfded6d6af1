/* vt_report_int.h - what the report's renderings share (src/analyze):
 *
 *   vt_report_model.c  the report model: units, the view, peak rows, the
 *                      allocator mode, rows merged over processes
 *   vt_report_text.c   text for people
 *   vt_report_job.c    text of the job: the merged verdict naming each
 *                      rank, the rows merged over processes
 *   vt_report_json.c   JSON for tools (schema "vramtrace.report/1",
 *                      docs/REPORT.md)
 *
 * Both renderings print the same sections from the finished analysis, in
 * a deterministic order (bytes descending, then call-site key / unit
 * order).  They touch only the FILE they are given.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vt_analyze_int.h"
#include "vt_error.h"
#ifndef VT_REPORT_INT_H
#define VT_REPORT_INT_H

typedef struct { uint32_t unit; int64_t bytes, count; } vt_row;
#define VT_MROW_PROCS 4
typedef struct {
    const char *key;
    uint32_t proc, unit;
    int64_t bytes, count;
    uint64_t grown;
    double rate;
    uint32_t nproc, lastproc;
    uint32_t procs[VT_MROW_PROCS]; /* the first processes (indices) the key is in */
} vt_mrow;

/* ---- shared between the parts */

const char *rep_bytes(char *buf, double b);
double rep_rel_s(const vt_proc *p, uint64_t t);
const char *rep_view_mode_name(int m);
void rep_view_text(const vt_analysis *a, const vt_proc *p, char *buf, size_t len);
int rep_resident(unsigned k);
const char *rep_thread_name(const vt_proc *p, uint32_t thread, uint32_t *tid);
void rep_site_headline(vt_analysis *a, const vt_proc *p, uint32_t stack, uint32_t thread, int short_file, char *buf,
                       size_t len);
int rep_counted(const vt_proc *p, const vt_unit *u);
int64_t rep_peak_cached(const vt_proc *p, uint32_t dev);
size_t rep_peak_rows(const vt_proc *p, uint32_t dev, int allocated, vt_row **out);
const char *rep_allocator_mode(const vt_proc *p, int *tensor_level);
size_t rep_merged_rows(vt_analysis *a, int which, vt_mrow **out);

/* The verdict of a process, before anything else: a leak (the call site
 * that grows most, how fast), no leak (live bytes flat over the steps; what
 * the pools keep reserved beyond what is allocated), or cannot tell in this
 * mode (what grew, why the mode cannot name the line, the command that
 * can). */
typedef enum { REP_LEAK = 0, REP_NO_LEAK = 1, REP_CANNOT_TELL = 2 } rep_verdict_kind;
typedef struct {
    rep_verdict_kind kind;
    int have_unit;
    uint32_t unit;          /* REP_LEAK: the leading growing call site */
    uint64_t grown;         /* bytes grown, all flagged sites */
    double rate, per_step;  /* of the leading site: bytes/s, bytes/step (< 0 unknown) */
    double confidence;
    uint64_t steps;
    int64_t cached;         /* pools: reserved - used at the last sample, -1 none */
    uint64_t segments_grown; /* REP_CANNOT_TELL: growth of caching-allocator segments */
    const char *mode;
    int tensor_level;
    int pool;               /* REP_CANNOT_TELL: VT_POOL_* the trace cannot see into, 0 none */
    int blind;              /* REP_CANNOT_TELL: the trace was cut before any allocation */
    int early;              /* REP_CANNOT_TELL: fewer steps in the window than the growth test needs */
    const vt_test *test;    /* REP_LEAK without growth: the test that left the most live (the pytest plugin) */
    char reason[400];
    char command[600];
} rep_verdict;
void rep_verdict_of(vt_analysis *a, const vt_proc *p, rep_verdict *v);
/* from the earliest host event (time that ran backwards included) to the
 * latest: never negative, never wrapped */
double rep_duration_s(const vt_proc *p);

/* A pool above CUDA whose blocks the trace does not hold (vt_pools.c):
 * the one with most bytes allocated through it (0: none), its call sites
 * and bytes, the growth of its chunks, and whether the leading growing
 * site is one of its chunks. */
typedef struct {
    int pool;
    uint32_t units;
    uint64_t bytes, grown;
    int lead_hidden;
} vt_pool_finding;
void vt_pools_find(vt_analysis *a, const vt_proc *p, vt_pool_finding *out);
/* The verdict's reason and the setting or command that makes the pool's
 * blocks visible (with the program's argv) */
void vt_pools_advice(const vt_proc *p, int pool, char *reason, size_t rlen, char *command, size_t clen);
const char *vt_pool_key(int pool);  /* "cupy", "jax_xla", "tensorflow_bfc", "rmm" */
const char *vt_pool_name(int pool); /* "CuPy's MemoryPool", ... */
const char *rep_verdict_name(rep_verdict_kind k);

/* The OOM headline, said before the verdict: a process with an
 * out-of-memory request leads with its first one (the request with the
 * allocator's retries folded in; vt_replay_events.c on_failed), the walk
 * of who held CUDA tensors then (PyTorch's OOM observer), and how many
 * more requests ran out of memory.  0 when no request described ran out
 * of memory (probes never do: they are not the program's failures). */
typedef struct {
    uint32_t index;      /* into p->oom: its place in the OOM section */
    const vt_oom *o;
    const vt_walk *walk; /* holders.PID.oom.txt, or NULL */
    uint64_t more;       /* further out-of-memory requests */
} rep_oom_head;
int rep_oom_headline(const vt_proc *p, rep_oom_head *h);
/* A known probe's name (VT_PROBES: "handle_type") and what it is */
const char *rep_probe_name(int k);
const char *rep_probe_what(int k);

/* ---- a job of several processes (ranks) */

/* How the job's parts name a process: "rank R" (the traced process's
 * RANK), "rank R (pid P)" when another process of the report has the same
 * rank (two jobs in one report), "pid P" without a rank.  Into buf. */
const char *rep_proc_name(const vt_analysis *a, const vt_proc *p, char *buf, size_t len);
/* The same with where it ran: "rank R (pid P on HOST)" */
const char *rep_proc_label(const vt_analysis *a, const vt_proc *p, char *buf, size_t len);

/* The job's verdict: a leak anywhere, else cannot tell anywhere, else
 * none; how many processes leak, cannot tell, ran out of memory. */
typedef struct {
    rep_verdict_kind kind;
    size_t leaking, cannot_tell, oom;
} rep_job;
void rep_job_of(vt_analysis *a, rep_job *j);
/* How a process's trace ends, for a job where another ran out of memory:
 * "normal exit", "killed by signal 15", "no End record (killed or cut)" */
const char *rep_end_text(const vt_proc *p, char *buf, size_t len);
const char *rep_signal_text(int sig, char *buf, size_t len);
int rep_abnormal_end(const vt_proc *p);

/* Text parts that the job's text shares with each process's (the lead
 * replaces "verdict: " / nothing, continuation lines get indent) */
void rep_text_verdict(vt_analysis *a, vt_proc *p, FILE *o, const char *lead, const char *indent);
int rep_text_oom_headline(vt_analysis *a, vt_proc *p, FILE *o, const char *lead, const char *indent);
void rep_text_unit_stack(vt_analysis *a, const vt_proc *p, const vt_unit *u, FILE *o, const char *indent);
void rep_text_merged(vt_analysis *a, FILE *o);

#endif
