/* vt_writer.h - crash-safe trace writer (src/core).
 *
 * Many producer threads call vt_writer_emit(); one background thread owned
 * by the writer encodes (protobuf-c), compresses (zstd) and writes.
 * Producers never take a lock and never block: each thread has its own
 * single-producer ring; when it is full the event is dropped and counted, and
 * the count reaches the stream as a Dropped record.
 *
 * Crash safety: a zstd flush at least every `flush_ms`; a new independent
 * zstd frame (starting with a Sync record) every `frame_bytes` of input;
 * vt_writer_emergency_flush() for fatal-signal handlers; in a fork()ed child
 * every writer is disabled and never touches the parent's file.
 *
 * Errors (full disk, unwritable path): the writer disables itself, prints one
 * line on stderr (unless quiet) and every later call is a cheap no-op.
 * It never calls exit() or abort().
 */
#ifndef VT_WRITER_H
#define VT_WRITER_H

#include "vt_event.h"

typedef struct vt_writer vt_writer;

typedef struct {
    const char *path;   /* created with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600 */
    int fd;             /* if >= 0, write here instead of `path` (the writer closes it) */
    unsigned flush_ms;  /* max time between zstd flushes; default 100 */
    size_t frame_bytes; /* uncompressed bytes per independent zstd frame; default 4 MiB */
    size_t ring_bytes;  /* per producer thread ring; default 1 MiB */
    int level;          /* zstd level; default 3 */
    int quiet;          /* no stderr message on failure */
    vt_clock clock;     /* the clock used by vt_writer_now(); default MONOTONIC */
    uint64_t (*clock_fn)(void); /* optional clock override (e.g. cuptiGetTimestamp) */
} vt_writer_config;

/* Fill `cfg` with the defaults above (path NULL, fd -1). */
void vt_writer_config_default(vt_writer_config *cfg);

/* Open the output and start the writer thread.  `hdr` becomes the Header
 * record (copied; magic, version and tool version are filled in).  On
 * success *out owns the file and the thread.  Returns 0 or a vt_err; on
 * failure *out is NULL and, unless quiet, one line was printed. */
int vt_writer_create(vt_writer **out, const vt_writer_config *cfg, const vt_ev_header *hdr);

/* Queue one event (any type but HEADER/SYNC/END/STACK/FRAME/LAUNCH, which
 * the writer makes itself).  Copies everything it points to.  If
 * ev->time_ns is 0 for a timed event the writer's clock is read.
 * Thread-safe, lock-free, async-signal-unsafe.  Returns 0, VT_ERR_DROPPED
 * (queue full, counted) or VT_ERR_DISABLED. */
int vt_writer_emit(vt_writer *w, const vt_event *ev);

/* Describe a Python code key used in vt_frame.pc of VT_FRAME_PYTHON frames.
 * A key may be redefined (code objects are freed and addresses reused):
 * frames captured after the redefinition use the new description.
 * Same thread-safety and return values as vt_writer_emit(). */
int vt_writer_define_code(vt_writer *w, uint64_t key, const char *file, const char *function);

/* The writer's clock, in ns. */
uint64_t vt_writer_now(const vt_writer *w);

/* Block until every event emitted before the call is written and flushed
 * (zstd flush + write).  Not for use inside signal handlers. */
int vt_writer_flush(vt_writer *w);

/* Async-signal-safe best effort: write what is queued, end the zstd frame,
 * append an End(reason=SIGNAL) record.  Waits a bounded time if the writer
 * thread is busy.  After it, the writer is disabled. */
void vt_writer_emergency_flush(vt_writer *w, int sig);

/* Write End, flush, stop the thread, close the file.  Idempotent.  Returns
 * the first error that disabled the writer, or 0. */
int vt_writer_close(vt_writer *w, vt_endreason reason, int sig);

/* Close (as vt_writer_close(w, VT_END_NORMAL, 0) if still open) and free.
 * vt_writer_free(NULL) does nothing. */
void vt_writer_free(vt_writer *w);

/* Nonzero once disabled (error, fork child, closed). */
int vt_writer_disabled(const vt_writer *w);
/* Why it was disabled ("" if not). Valid until vt_writer_free(). */
const char *vt_writer_errmsg(const vt_writer *w);

typedef struct {
    uint64_t emitted;        /* events accepted by vt_writer_emit */
    uint64_t dropped;        /* events dropped (queue full) */
    uint64_t records;        /* records encoded, definitions included */
    uint64_t bytes_raw;      /* uncompressed bytes */
    uint64_t bytes_written;  /* compressed bytes written to the file */
    uint64_t frames;         /* zstd frames started */
    uint64_t rings;          /* producer rings allocated (reused after thread exit) */
    uint64_t writer_cpu_ns;  /* CPU time used by the writer thread so far */
} vt_writer_stats;
void vt_writer_get_stats(const vt_writer *w, vt_writer_stats *st);

#endif
