/* vt_analyze.h - offline analysis of vramtrace traces (src/analyze).
 *
 * One vt_analysis replays one or more traces (one per process) in a single
 * streaming pass each, in memory bounded by the live blocks and the unique
 * definitions (stacks, frames, strings), never by the event count.  After
 * vt_analysis_finish() it can print a report (text or JSON, schema in
 * docs/REPORT.md) or be compared with another analysis (vt_diff_print).
 *
 * Events can come from a file (vt_analysis_add_file, through vt_reader) or
 * be fed one by one (vt_analysis_begin_process + vt_analysis_feed), the
 * latter with every definition (string, frame, stack, module, thread,
 * launch, device) fed before the events that use it, as the reader does.
 *
 * Uses src/core only (and elfutils libdwfl for symbolization).  Not
 * thread-safe: one analysis per thread.
 */
#ifndef VT_ANALYZE_H
#define VT_ANALYZE_H

#include <stdint.h>
#include <stdio.h>

#include "vt_event.h"

typedef struct vt_analysis vt_analysis;

/* Which moment the leak view ("what was live when the real work ended")
 * and the end of the growth window use. */
typedef enum {
    VT_AT_AUTO = 0,     /* end of the last kernel if kernels were traced, else end of trace */
    VT_AT_END = 1,      /* end of the trace (after any teardown) */
    VT_AT_TIME = 2,     /* at_ns after the start of each trace */
    VT_AT_MARKER = 3,   /* last NVTX mark / range start whose message is at_marker */
} vt_at_mode;

typedef struct {
    vt_at_mode at_mode;
    uint64_t at_ns;         /* VT_AT_TIME: ns since the trace start */
    const char *at_marker;  /* VT_AT_MARKER: NVTX message (copied) */
    unsigned top;           /* rows per section and process; default 20, 0 = default */
    unsigned max_frames;    /* frames shown per stack in text; default 24 */
    int symbolize;          /* resolve native frames with libdwfl; default on (1) */
    int symbol_cache;       /* through the build-id symbol cache (vt_symcache_dir): read
                             * first, what was resolved written back at free; default 0 */
    int native;             /* text: every native frame (default: the runtime's folded into one line) */
    int progress;           /* print progress on stderr when a file takes > 2 s */
    const char *sysroot;    /* optional prefix for module paths (binaries copied from another machine) */
    const char *steps_name; /* the NVTX range that counts the steps (trailing digits stripped), NULL: found */
    uint64_t max_memory;    /* one budget for all the analysis keeps: definition tables, call sites,
                             * processes; 0: 1 GiB.  Past it, reading stops with VT_ERR_LIMIT and an
                             * error naming what ran out (vt_analysis_error); what was read is kept */
} vt_analysis_config;

void vt_analysis_config_default(vt_analysis_config *cfg);

/* Returns 0 or a vt_err.  *out owned by the caller (vt_analysis_free). */
int vt_analysis_create(vt_analysis **out, const vt_analysis_config *cfg);
void vt_analysis_free(vt_analysis *a);

/* Replay one trace file as one process.  A read error ends that file: what
 * was read stays in the analysis and the error (file + offset) is kept
 * (vt_analysis_errors).  Returns 0 or the vt_err of the error. */
int vt_analysis_add_file(vt_analysis *a, const char *path);

/* Replay every *.zst file of a directory (sorted by name), each a process.
 * Returns 0, the first file error, or VT_ERR_NOT_FOUND when none. */
int vt_analysis_add_dir(vt_analysis *a, const char *dir);

/* Start a process fed by hand; `name` labels it (copied). */
int vt_analysis_begin_process(vt_analysis *a, const char *name);
/* Feed one event to the current process (see the header comment). */
int vt_analysis_feed(vt_analysis *a, const vt_event *ev);
/* Record a read error for the current process (message copied). */
void vt_analysis_add_error(vt_analysis *a, int err, const char *msg);

/* ---- the replay's consumer interface ------------------------------------
 *
 * The report, the diff and the exporters read the replay's results; a
 * consumer set here also sees the replay as it happens: every event of
 * every process in stream order (definitions included), after the replay
 * applied it, with the blocks the event created or ended (an allocation
 * begins one; a free ends one; an allocation over a block whose free was
 * never seen ends that one first; VMM physical allocations and releases
 * likewise, the handle as the address) and the live bytes of the
 * process on the blocks' device afterwards.  The replay then takes the
 * hot paths where they apply, noting their blocks, and the full path for
 * the rest (the same results).
 * Pointers are valid during the call only. */
typedef enum { VT_BLOCK_BEGIN = 1, VT_BLOCK_END = 2 } vt_block_op;

typedef struct {
    vt_block_op op;
    uint64_t address;  /* VMM: the physical allocation's handle; a TENSOR block of the
                          CACHING_ALLOCATOR API lies inside a segment, at its address too:
                          tell them apart by api */
    uint64_t size;     /* bytes */
    uint64_t t_alloc;  /* its allocation's time (ns, the trace's clock) */
    uint64_t t;        /* this event's time */
    uint32_t device;
    uint32_t stack;    /* the call site of its allocation: a stack id of the process, 0 none */
    uint32_t unit;     /* the replay's accounting unit (call site x device x kind), stable across replays */
    uint8_t kind, api; /* vt_memkind, vt_allocapi of the call site's first allocation */
} vt_replay_block;

#define VT_REPLAY_MAX_BLOCKS 4

typedef struct {
    const vt_event *ev;
    unsigned proc;                 /* index of the process in the analysis */
    unsigned nblocks;              /* blocks begun or ended by this event */
    const vt_replay_block *blocks;
    /* after the event, on blocks[0].device (nblocks > 0): live bytes per
     * memory kind (vt_memkind), and in the resident kinds together */
    const int64_t *live_kind;
    int64_t live_device;
    /* with the caching allocator's tensor events (issue 23): its segments'
     * live bytes on that device (reserved; its tensors, allocated, are
     * live_kind[VT_MEM_TENSOR]); -1 without them */
    int64_t reserved;
} vt_replay_event;

/* Returns 0 to go on, or a vt_err that stops the replay of that file. */
typedef int (*vt_replay_fn)(void *ctx, const vt_replay_event *re);

/* Set (fn != NULL) or clear the consumer; before the files are added. */
void vt_analysis_set_consumer(vt_analysis *a, vt_replay_fn fn, void *ctx);

/* Close the replay: fix the view time, compute growth, steps, sorted
 * sections.  Call once, after every process was added. */
int vt_analysis_finish(vt_analysis *a);

/* Output (after finish).  Deterministic: same input, same bytes. */
int vt_report_text(vt_analysis *a, FILE *out);
int vt_report_json(vt_analysis *a, FILE *out);

/* The HTML page (viewer/, embedded): the JSON report with each process's
 * timeline and call-site histograms from a second replay of the same
 * inputs (files or directories); after finish. */
int vt_report_html(vt_analysis *a, char *const *inputs, int ninputs, FILE *out);

/* Compare two finished analyses per call site (A = before, B = after). */
int vt_diff_text(vt_analysis *a, vt_analysis *b, FILE *out);
int vt_diff_json(vt_analysis *a, vt_analysis *b, FILE *out);
int vt_diff_html(vt_analysis *a, vt_analysis *b, FILE *out);

/* After finish: 1 when the view asked for (--at) exists in no process: a
 * marker no process has (msg lists the markers the traces have), or a
 * time past the end of every trace (msg gives the longest duration). */
int vt_analysis_view_missing(const vt_analysis *a, char *msg, size_t len);

/* Symbols that travel (vt_symbols.c): resolve on this host every native
 * frame `trace` references and write them to TRACE.sym, which the analysis
 * reads beside the trace wherever a binary is missing or differs.  Counts
 * the native frames and those resolved; 0 or a vt_err with msg. */
int vt_symbols_write(const char *trace, const char *sysroot, uint64_t *nframes, uint64_t *nresolved, char *msg,
                     size_t len);

/* The same for several traces at once, through the build-id symbol cache
 * (docs/FORMAT.md): the modules the traces reference are resolved once each,
 * only for the addresses not in the cache, several modules at a time. */
typedef struct {
    const char *sysroot;   /* look for the binaries under it; NULL: / */
    const char *cache_dir; /* the symbol cache; NULL or "": none */
    unsigned threads;      /* modules resolved at once; 0: the processors online */
    unsigned progress_ms;  /* when resolving runs longer, note() says what it reads; 0: never */
    /* messages for the user (a damaged cache file, progress), one line each
     * without a newline; NULL: none.  Called from the calling thread. */
    void (*note)(void *arg, const char *msg);
    void *arg;
    /* per trace i after it is written: its counts, or rc != 0 and msg */
    void (*done)(void *arg, size_t i, int rc, uint64_t nframes, uint64_t nresolved, const char *msg);
} vt_symbols_opts;
typedef struct {
    uint64_t nframes, nresolved;  /* native frames of all traces, those resolved */
    unsigned nmodules;            /* distinct modules (by build id) referenced */
    unsigned nmodules_opened;     /* of them read with libdwfl (the cache lacked an address) */
    uint64_t opened_bytes;        /* their size */
    uint64_t naddrs, naddrs_cached; /* addresses looked up, those the cache had */
    unsigned threads;             /* threads that resolved */
    unsigned cache_damaged;       /* cache files ignored as damaged (each noted once) */
    double resolve_seconds;       /* wall time of the resolving (0 when all cached) */
} vt_symbols_stats;
/* The symbol cache's directory: $VRAMTRACE_CACHE_DIR/symbols, else
 * $XDG_CACHE_HOME/vramtrace/symbols, else ~/.cache/vramtrace/symbols; 0, or
 * 1 when there is none (VRAMTRACE_SYMBOL_CACHE=0, no home) with out "". */
int vt_symcache_dir(char *out, size_t len);
/* 0 when every trace's .sym was written, else the number that failed (each
 * reported through done); a negative vt_err when nothing could start. */
int vt_symbols_write_all(char *const *traces, size_t n, const vt_symbols_opts *o, vt_symbols_stats *st);

/* After finish: totals used by --fail-on-leak / --fail-on-growth, summed
 * over the processes. */
uint64_t vt_analysis_leaked_bytes(const vt_analysis *a);
/* BYTES as the reports write them ("8.00 MiB", "512 B") into buf. */
void vt_fmt_bytes(char *buf, size_t len, double bytes);
uint64_t vt_analysis_grown_bytes(const vt_analysis *a);

/* Records replayed in all (every record of every trace, definitions included). */
uint64_t vt_analysis_records(const vt_analysis *a);

/* Number of processes, and read errors recorded ("FILE: ... at offset N"). */
unsigned vt_analysis_nprocs(const vt_analysis *a);
unsigned vt_analysis_nerrors(const vt_analysis *a);
const char *vt_analysis_error(const vt_analysis *a, unsigned i);

/* Parse "1.5s", "250ms", "10us", "42ns", "3" (seconds), "1e3ms" -> ns.  0;
 * VT_ERR_INVALID when s is not a number (it may be a name: --at MARK);
 * VT_ERR_RANGE when it is one but no time: negative, another unit, past
 * 2^64 ns. */
int vt_parse_duration(const char *s, uint64_t *ns);
/* Parse "1G", "512MiB", "100k", "12345" -> bytes (K/M/G/T = 1024^n).  0 or VT_ERR_INVALID. */
int vt_parse_bytes(const char *s, uint64_t *bytes);

#endif
