/* vt_writer.h - crash-safe trace writer (src/core).
 *
 * Many producer threads call vt_writer_emit(); one background thread owned
 * by the writer ("vt-writer") encodes (protobuf-c), compresses (zstd
 * streaming) and writes.  Producers never take a lock and never block: each
 * thread gets its own single-producer ring (mmap'ed on its first emit,
 * registered on a lock-free list, given back by a pthread key destructor at
 * thread exit and reused by the next new thread); when it is full the event
 * is dropped and counted, and the count reaches the stream as a
 * Dropped{WRITER_QUEUE} record and in End.dropped.
 *
 * Order: within a thread, emission order.  Across threads the writer merges
 * what each round finds in the rings by host time (kernels, on the device
 * clock, go first), so that a free and a reuse of the same address by two
 * threads are not swapped.  All interning (strings, frames, stacks, threads,
 * launches, modules, Python code keys) happens on the writer thread.
 * Kernels that follow each other in that order are written as KernelBlock
 * records of 16..256, allocations and frees as MemBlock records
 * (docs/FORMAT.md); the stream order stays the same.
 *
 * Crash safety: the writer polls every flush_ms/4 and flushes (ZSTD_e_flush
 * + write) once data waited flush_ms/4, so an event is in the file about
 * flush_ms/2 after its emit (a SIGKILL loses at most that); a new
 * independent zstd frame starting with a Sync record every `frame_bytes` of
 * input; vt_writer_emergency_flush() for fatal-signal handlers; in a
 * fork()ed child every writer is disabled (pthread_atfork) and never touches
 * the parent's file (its fd copy is closed in the child).
 *
 * Errors (full disk, unwritable path, broken pipe): the writer disables
 * itself, prints one line "vramtrace: WHAT: disabled" on stderr (unless
 * quiet) and every later call is a cheap no-op returning VT_ERR_DISABLED.
 * It never calls exit() or abort(); the writer thread blocks asynchronous
 * signals, so a broken pipe is EPIPE, not SIGPIPE.
 */
#ifndef VT_WRITER_H
#define VT_WRITER_H

#include "vt_event.h"

typedef struct vt_writer vt_writer;

typedef struct {
    const char *path;   /* created with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600 */
    int fd;             /* if >= 0, write here instead of `path` (the writer closes it) */
    unsigned flush_ms;  /* an event is in the file within flush_ms (~flush_ms/2); default 100 */
    size_t frame_bytes; /* uncompressed bytes per independent zstd frame; default 4 MiB */
    size_t ring_bytes;  /* per producer thread ring; default 1 MiB */
    int level;          /* zstd level; default 3 (0 = default, at most 19, negative = faster) */
    int quiet;          /* no stderr message on failure */
    vt_clock clock;     /* the clock used by vt_writer_now(); default MONOTONIC */
    uint64_t (*clock_fn)(void); /* optional clock override (e.g. vt_clock_now) */
    void (*tick_fn)(void);      /* optional: called from the writer thread about every 100 ms
                                 * (e.g. vt_clock_tick); must not call the writer */
} vt_writer_config;

/* Fill `cfg` with the defaults above (path NULL, fd -1). */
void vt_writer_config_default(vt_writer_config *cfg);

/* Open the output and start the writer thread.  `hdr` becomes the Header
 * record (copied; magic, version and tool version are filled in).  On
 * success *out owns the file and the thread.  Returns 0 or a vt_err; on
 * failure *out is NULL and, unless quiet, one line was printed. */
int vt_writer_create(vt_writer **out, const vt_writer_config *cfg, const vt_ev_header *hdr);

/* Queue one event: ALLOC, FREE, ALLOC_FAILED, VMM_*, POOL, POOL_USAGE,
 * MEMORY_USAGE, KERNEL, NVTX, DROPPED (another source's count), NOTE, and
 * the definitions MODULE (the writer assigns its id; native frames inside
 * [start,end) refer to it), THREAD (names tid; emitted again for a known
 * tid it renames it: a Thread record with the same id), DEVICE.  Others
 * (HEADER, SYNC, STRING, STACK, FRAME, LAUNCH, END) are the writer's own:
 * VT_ERR_INVALID.  Copies everything it points to (strings, site frames:
 * at most 512, innermost kept; site.stack is ignored).  If ev->time_ns is 0
 * for a timed event the writer's clock is read.  site.tid 0 = the calling
 * thread.  Thread-safe, lock-free; the first emit of a thread maps its ring
 * (mmap) and registers a pthread key value.  Not async-signal-safe: a
 * handler must not emit while it may have interrupted an emit of its own
 * thread (they share the thread's ring).  Returns 0, VT_ERR_DROPPED (ring
 * full, counted), VT_ERR_DISABLED (also for w == NULL: tracing is off) or
 * VT_ERR_INVALID. */
int vt_writer_emit(vt_writer *w, const vt_event *ev);

/* Describe a Python code key used in vt_frame.pc of VT_FRAME_PYTHON frames.
 * A key may be redefined (code objects are freed and addresses reused):
 * frames captured after the redefinition use the new description.
 * Same thread-safety and return values as vt_writer_emit(). */
int vt_writer_define_code(vt_writer *w, uint64_t key, const char *file, const char *function);

/* 1 if the calling thread has already sent the frames of fingerprint
 * fp[2] (vt_site.fp) to `w`: an event whose site carries that fingerprint
 * may then leave its frames NULL.  0 otherwise.  Lock-free, no side effect. */
int vt_writer_site_sent(vt_writer *w, const uint64_t fp[2]);

/* The writer's clock, in ns. */
uint64_t vt_writer_now(const vt_writer *w);

/* Block until every event emitted before the call (by any thread, as far
 * as the call happens after those emits) is encoded, flushed (zstd flush)
 * and written.  Returns 0, the error that disabled the writer, or
 * VT_ERR_DISABLED.  Not for use inside signal handlers. */
int vt_writer_flush(vt_writer *w);

/* Block until every event emitted before the call has left the rings and
 * been encoded, without forcing a zstd flush (cheaper than
 * vt_writer_flush(), and no small zstd block): for a producer that must
 * not drop, e.g. a thread copying a large CUPTI buffer, to pace itself.
 * Same returns as vt_writer_flush(). */
int vt_writer_drain(vt_writer *w);

/* Async-signal-safe best effort: write what is queued, append
 * End{reason=SIGNAL, signal=sig}, end the zstd frame.  No malloc, no lock:
 * if the encoder is free (atomic try-acquire) the handler encodes itself
 * (events whose interning would need memory are dropped and counted);
 * otherwise it asks the writer thread, which drains for at most 100 ms, and
 * waits at most 1 s.  Does nothing in the writer thread itself, in a fork
 * child, or once disabled/closed.  Preserves errno.  After it, the writer
 * is disabled. */
void vt_writer_emergency_flush(vt_writer *w, int sig);

/* Drain, write End{reason, sig}, end the zstd frame, stop the thread,
 * close the file.  Idempotent (later calls return the same).  Returns the
 * first error that disabled the writer, or 0.  In a fork child: marks it
 * closed and returns 0 (the parent's thread and file are not touched).
 * No emit may run concurrently with vt_writer_free(); with close it may
 * (such events may be lost, never harmful). */
int vt_writer_close(vt_writer *w, vt_endreason reason, int sig);

/* Close (as vt_writer_close(w, VT_END_NORMAL, 0) if still open) and free.
 * vt_writer_free(NULL) does nothing. */
void vt_writer_free(vt_writer *w);

/* Nonzero once disabled (error, fork child, closed). */
int vt_writer_disabled(const vt_writer *w);
/* Why it was disabled ("" if not): "PATH: write failed: ...", "closed",
 * "emergency flush done ...".  Valid until vt_writer_free(). */
const char *vt_writer_errmsg(const vt_writer *w);

typedef struct {
    uint64_t emitted;        /* events accepted by vt_writer_emit (End.events when all is written) */
    uint64_t dropped;        /* ring entries dropped (queue full; define_code included) */
    uint64_t records;        /* records encoded, definitions included */
    uint64_t bytes_raw;      /* uncompressed bytes */
    uint64_t bytes_written;  /* compressed bytes written to the file */
    uint64_t frames;         /* zstd frames started */
    uint64_t rings;          /* producer rings allocated (reused after thread exit) */
    uint64_t writer_cpu_ns;  /* CPU time used by the writer thread so far */
} vt_writer_stats;
void vt_writer_get_stats(const vt_writer *w, vt_writer_stats *st);

#endif
