/* vt_reader_columns.h - the reader's decoder of column records (src/core):
 * KernelBatch, KernelBlock and MemBlock.
 *
 * A KernelBatch (Record.body field 28, proto/vramtrace.proto) is n kernels
 * in packed columns, a KernelBlock (29) the same bit-packed, a MemBlock
 * (30) n allocations and frees in bit-packed columns with contexts.
 * vt_reader.c decodes the whole record at once with vt_kbatch_decode(),
 * vt_kblock_decode() or vt_mblock_decode() (every column checked before
 * any event is returned, so a corrupt record yields none of its events),
 * then hands out ordinary VT_EV_KERNEL, VT_EV_ALLOC and VT_EV_FREE events
 * (vt_kbatch_next(), vt_mblock_take(), or in batches): consumers never see
 * a block.  Memory: the columns of one record, at most 65536 events
 * (2.5 and 3 MiB), kept for reuse until vt_kbatch_free() and
 * vt_mblock_free().  Depends on the C library only.
 */
#ifndef VT_READER_COLUMNS_H
#define VT_READER_COLUMNS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "vt_event.h"

/* Record.body field number of KernelBatch.  Not a vt_evtype: the reader
 * turns a batch into VT_EV_KERNEL events. */
#define VT_REC_KERNEL_BATCH 28u
/* Record.body field number of KernelBlock (bit-packed columns). */
#define VT_REC_KERNEL_BLOCK 29u
/* Kernels per batch a reader accepts (the writer writes at most 256). */
#define VT_KBATCH_READ_MAX 65536u

typedef struct {
    uint32_t left;  /* kernels not yet returned */
    uint32_t n;     /* kernels in the batch */
    uint32_t cap;   /* capacity of the columns */
    int pext;       /* decode varints with BMI2's pext (set by the reader where it is fast) */
    uint64_t *launch; /* 64-bit like the other columns: one decoder for all */
    uint64_t *start; /* absolute device times */
    uint64_t *dur;
    uint64_t *corr;  /* absolute correlation ids */
    uint64_t *graph;
} vt_kbatch;

/* Decode the KernelBatch message [p, end) (the Record body); bytes up to
 * `hard` (>= end) may be read, though not used (whole-word varint loads).  On success
 * returns 0: b->n = b->left = the number of kernels (0 for an empty
 * batch), *device_time = the last kernel's start and *corr its correlation
 * id (docs/FORMAT.md, "Times").  On failure returns VT_ERR_CORRUPT (the
 * reason in why[why_len]) or VT_ERR_NOMEM; then b is empty and the bases
 * are unchanged.  *unknown counts skipped unknown fields. */
int vt_kbatch_decode(vt_kbatch *b, const uint8_t *p, const uint8_t *end, const uint8_t *hard,
                     uint64_t *device_time, uint64_t *corr, uint64_t *unknown, char *why, size_t why_len);

/* The same for a KernelBlock message [p, end) (count 0 is corrupt). */
int vt_kblock_decode(vt_kbatch *b, const uint8_t *p, const uint8_t *end, const uint8_t *hard,
                     uint64_t *device_time, uint64_t *corr, uint64_t *unknown, char *why, size_t why_len);

/* The next pending kernel into *ev (b->left > 0): type, time_ns (start),
 * launch_id, duration_ns, corr, graph_id.  The launch fields (name,
 * device, grid...) are the caller's to resolve. */
static inline void vt_kbatch_next(vt_kbatch *b, vt_event *ev)
{
    uint32_t i = b->n - b->left--;
    ev->type = VT_EV_KERNEL;
    ev->time_ns = b->start[i];
    ev->u.kernel.launch_id = (uint32_t)b->launch[i];
    ev->u.kernel.duration_ns = b->dur[i];
    ev->u.kernel.corr = b->corr[i];
    ev->u.kernel.graph_id = b->graph[i];
}

/* Release the columns; the batch is empty and reusable afterwards. */
void vt_kbatch_free(vt_kbatch *b);

/* Record.body field number of MemBlock (allocations and frees). */
#define VT_REC_MEM_BLOCK 30u
/* Events and contexts per MemBlock a reader accepts (the writer writes at
 * most 256 and 16). */
#define VT_MBLOCK_READ_MAX 65536u
#define VT_MBLOCK_READ_CTX 256u

/* A decoded MemBlock: per event its context, absolute time and
 * correlation id, address; per allocation (in order) size and stack; per
 * context a template event (type, device, kind, API, stream, pool,
 * thread, a free's stack; the rest zero), whose site.tid the reader
 * fills in.  Memory: the columns of one block (at most
 * VT_MBLOCK_READ_MAX events, 3 MiB) kept for reuse until vt_mblock_free(),
 * and the templates (in place, ~60 KiB). */
typedef struct {
    uint32_t left;  /* events not yet returned */
    uint32_t n;     /* events in the block */
    uint32_t ai;    /* allocations returned */
    uint32_t cap;   /* capacity of the columns */
    uint32_t nctx;
    uint64_t *ctx, *time, *addr, *corr; /* per event */
    uint64_t *size, *stack;             /* per allocation */
    vt_event tmpl[VT_MBLOCK_READ_CTX];
} vt_mblock;

/* Decode the MemBlock message [p, end) (bytes up to `hard` readable, as
 * for vt_kbatch_decode).  On success returns 0: b->n = b->left = the
 * number of events, *host_time and *corr those of its last event.  On
 * failure VT_ERR_CORRUPT (reason in why) or VT_ERR_NOMEM; then b is empty
 * and the bases unchanged.  *unknown counts skipped unknown fields. */
int vt_mblock_decode(vt_mblock *b, const uint8_t *p, const uint8_t *end, const uint8_t *hard, uint64_t *host_time,
                     uint64_t *corr, uint64_t *unknown, char *why, size_t why_len);

/* Up to max pending events (b->left > 0) into ev[0 .. max): each its
 * template's head (everything before the site's fingerprint) and its own
 * fields, the columns in locals (stores into the events could alias b's
 * fields).  Returns the count taken. */
static inline __attribute__((always_inline)) int vt_mblock_take(vt_mblock *b, vt_event *ev, int max)
{
    const uint32_t left = b->left, take = left < (uint32_t)max ? left : (uint32_t)max;
    const size_t i0 = b->n - left;
    const uint64_t *const ctx = b->ctx + i0, *const time = b->time + i0;
    const uint64_t *const addr = b->addr + i0, *const corr = b->corr + i0;
    const uint64_t *const size = b->size + b->ai, *const stack = b->stack + b->ai;
    const vt_event *const tmpl = b->tmpl;
    uint32_t a = 0;
    for (uint32_t j = 0; j < take; j++) {
        vt_event *e = &ev[j];
        const vt_event *t = &tmpl[ctx[j]];
        e->type = t->type;
        e->time_ns = time[j];
        if (t->type == VT_EV_ALLOC) {
            memcpy(&e->u.alloc, &t->u.alloc, offsetof(vt_ev_alloc, site.fp));
            e->u.alloc.address = addr[j];
            e->u.alloc.size = size[a];
            e->u.alloc.site.stack = (uint32_t)stack[a++];
            e->u.alloc.corr = corr[j];
        } else {
            memcpy(&e->u.free, &t->u.free, offsetof(vt_ev_free, site.fp));
            e->u.free.address = addr[j];
            e->u.free.corr = corr[j];
        }
    }
    b->ai += a;
    b->left = left - take;
    return (int)take;
}

/* Release the columns; the block is empty and reusable afterwards. */
void vt_mblock_free(vt_mblock *b);

#endif
