/* wt_decode.h - an independent decoder of vramtrace files for the writer's
 * tests: zstd streaming decompression, the 0x0A/varint framing and
 * protobuf-c's vramtrace__record__unpack, with the delta rules of the
 * stream applied here again (never the project's reader).  It also checks
 * the stream rules: header then sync 0 first, a sync at the start of every
 * later zstd frame with increasing sequence, ids assigned in order and
 * every reference defined before use.  Test code only. */
#ifndef WT_DECODE_H
#define WT_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/vramtrace.pb-c.h"

/* One non-definition record (everything but header, sync, string, frame,
 * stack, thread, module, launch). */
typedef struct {
    int type;         /* Record body case */
    uint64_t time;    /* absolute: host time, or device start for kernels */
    uint64_t corr;    /* absolute correlation id (records with a corr field) */
    uint64_t a, b;    /* alloc: address,size; free: address; kernel: launch,duration */
    uint32_t thread, stack;
    uint32_t batch;   /* kernels: size of the KernelBatch it came in, 0 for a Kernel record */
    Vramtrace__Record *rec; /* only when decoded with keep (a kernel of a batch:
                             * a Record{ts_delta, kernel} made up here) */
} wt_ev;

typedef struct {
    char **str;            /* by id; [0] unused */
    uint32_t nstr;
    Vramtrace__Frame **frame;
    uint32_t nframe;
    Vramtrace__Stack **stack;
    uint32_t nstack;
    Vramtrace__Thread **thread;
    uint32_t nthread;
    Vramtrace__Launch **launch;
    uint32_t nlaunch;
    Vramtrace__Module **module;
    uint32_t nmodule;
    Vramtrace__Header *header;
    Vramtrace__End *end;
    wt_ev *ev;
    size_t nev, capev;
    uint64_t nrecords, nsync, nzframes;
    uint64_t nbatches, nbatched; /* KernelBatch and KernelBlock records, kernels in them */
    uint64_t nblocks;            /* of them KernelBlock records */
    uint64_t nmblocks, nmblocked; /* MemBlock records, allocations and frees in them */
    uint64_t dropped_queue;   /* sum of Dropped{WRITER_QUEUE}.count */
    uint64_t dropped_other;   /* sum of the other sources */
    int truncated;            /* the data stopped inside a frame or record */
    size_t raw_len;
    int errors;               /* stream rule violations */
    char first_error[256];
    /* internal */
    Vramtrace__Record **defs;
    size_t ndefs, capdefs;
} wt_trace;

/* Decode a file (keep != 0: keep every event's unpacked record in ev[].rec).
 * Returns 0, or -1 if the file cannot be read.  Truncation is not an
 * error: t->truncated tells. */
int wt_decode_file(const char *path, wt_trace *t, int keep);
int wt_decode_mem(const void *data, size_t len, wt_trace *t, int keep);
void wt_trace_free(wt_trace *t);

/* Flatten a stack into frame ids, innermost first.  Returns the depth. */
size_t wt_stack_frames(const wt_trace *t, uint32_t stack, uint32_t *out, size_t max);



/* WT_TSAN: built with -fsanitize=thread (slower; no threads in fork children). */
#if defined(__SANITIZE_THREAD__)
#define WT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WT_TSAN 1
#endif
#endif

/* WT_FORK_NO_THREADS: a fork child may not start threads that allocate:
 * TSan forbids it, and GCC's ASan allocator is not fork-safe (a lock held
 * by another thread of the parent at fork stays held in the child). */
#if defined(WT_TSAN) || defined(__SANITIZE_ADDRESS__)
#define WT_FORK_NO_THREADS 1
#endif

/* A fresh path "DIR/name" in a per-process temporary directory. */
void wt_tmp_path(char *buf, size_t n, const char *name);
/* Monotonic clock, ns. */
uint64_t wt_now(void);
#endif
