/* vt_live.h - the live model behind `vramtrace top` (src/analyze).
 *
 * Follows a trace file, or every trace of a directory (new files are
 * picked up as they appear), while the traced processes write them: each
 * file is read by one vt_reader in follow mode (vt_reader_set_follow), so
 * a poll reads only what was appended since the last one, the unfinished
 * last zstd frame included, and never a byte twice.  Its events go into the
 * replay (one vt_analysis, one process per file), whose tables are all the
 * memory it keeps: live blocks, call sites, definitions, never the events.
 * Steps and growth come from the replay's own detectors run over what was
 * read so far (vt_proc_live_growth); once a trace's End record is read
 * the process is finished as the report finishes it (growth, holders).
 *
 * Names in the results come from the trace, which is untrusted: a caller
 * printing them to a terminal must escape control characters.
 * Not thread-safe. */
#ifndef VT_LIVE_H
#define VT_LIVE_H

#include <stdint.h>

typedef struct vt_live vt_live;

/* Follow `path` (a trace file, or a directory of traces).  Nothing is read
 * before the first vt_live_poll().  Returns 0 or a vt_err (VT_ERR_NOT_FOUND:
 * no such file or directory); *out owned by the caller (vt_live_free). */
int vt_live_open(vt_live **out, const char *path);
/* vt_live_free(NULL) does nothing. */
void vt_live_free(vt_live *lv);

/* Read what every followed file gained since the last poll (at most
 * `max_events` events per file, 0 = no limit), a directory's new files
 * included, and bring steps and growth up to date.  Read errors (a damaged
 * or garbage tail) are kept per process (vt_live_proc.error) and reading
 * resumes after them.  Returns the number of events read (>= 0), or
 * VT_ERR_NOMEM. */
int64_t vt_live_poll(vt_live *lv, uint64_t max_events);

enum { VT_LIVE_READING = 0, VT_LIVE_ENDED = 1, VT_LIVE_FAILED = 2 };

#define VT_LIVE_MAX_DEVICES 8

typedef struct {
    uint32_t index;    /* CUDA device index */
    const char *name;  /* from the trace, or NULL */
    uint64_t total;    /* device memory (0: unknown) */
    int64_t live;      /* traced device-resident live bytes */
    int64_t peak;      /* their peak so far */
    int64_t allocated; /* with tensor events: the caching allocator's tensors */
    int64_t reserved;  /*   and its segments; both -1 without tensor events */
} vt_live_device;

typedef struct {
    const char *file;    /* trace path */
    const char *program; /* from the header (NULL before it) */
    const char *host;
    uint32_t pid;
    int state;               /* VT_LIVE_* */
    const char *error;       /* the last read error, or NULL */
    uint64_t records;        /* records replayed */
    uint64_t bytes;          /* compressed bytes read (the file's offset) */
    double seconds;          /* trace time from its first to its last event */
    int tensors;             /* the caching allocator's tensor events are in the trace */
    uint64_t steps;          /* steps so far (0: none found yet) */
    double step_ns;          /* time per step */
    const char *step_source; /* "nvtx:NAME" or "kernels:N", or NULL */
    unsigned ndevices;
    vt_live_device dev[VT_LIVE_MAX_DEVICES];
    uint64_t failed;  /* failed allocation requests so far (as the report counts them) */
    uint64_t retries; /* ... more failed calls that were the allocator's retries of them */
    uint64_t probes;  /* ... failed calls that were probes (not the program's requests) */
    /* the last one */
    uint64_t fail_size;
    double fail_at; /* seconds since the trace's start */
    uint32_t fail_device;
    const char *fail_error; /* the driver's error name, or NULL */
    char fail_site[256];    /* its call site, "function (file:line)", or "" */
} vt_live_proc;

typedef struct {
    char site[256]; /* the user's frame, "function (file:line)" */
    uint32_t device;
    const char *kind; /* memory kind name */
    int64_t live_bytes;
    int64_t live_count; /* blocks */
    int growing;        /* the growth test flags it (so far) */
    uint64_t grown;     /* bytes grown over the window */
    double per_step;    /* bytes per step (< 0: unknown) */
    double per_s;       /* bytes per second */
    const char *holder; /* who holds it (once the trace ended, with holders), or NULL */
} vt_live_site;

enum { VT_LIVE_SORT_GROWTH = 0, VT_LIVE_SORT_LIVE = 1, VT_LIVE_SORT_RATE = 2, VT_LIVE_SORT__COUNT };

unsigned vt_live_nprocs(const vt_live *lv);
/* Process i (in the order of file names).  Pointers valid until the next
 * poll.  Returns 0 or VT_ERR_INVALID. */
int vt_live_proc_get(vt_live *lv, unsigned i, vt_live_proc *out);
/* Its call sites with live bytes or growth, sorted (growing first, then by
 * `sort`), at most max into out.  Returns the number written. */
unsigned vt_live_sites(vt_live *lv, unsigned i, int sort, vt_live_site *out, unsigned max);

#endif
