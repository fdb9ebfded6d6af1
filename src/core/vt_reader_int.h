/* vt_reader_int.h - the reader's private state, shared by its parts
 * (docs/ARCHITECTURE.md, "The reader"):
 *
 *   vt_reader_input.c     the file, zstd frames, framing, damage and resync
 *   vt_reader_tables.c    definition tables (strings, frames, stacks,
 *                         threads, modules, launches, devices, the header)
 *   vt_reader_messages.c  one decoder per protobuf message
 *   vt_reader.c           records into events, the hot path, the main loop
 *   vt_reader_columns.c   KernelBlock, KernelBatch and MemBlock columns
 *
 * How: the file is read in 1 MiB chunks (pread, so that after damage the
 * reader can go back and scan for the next zstd magic) and decompressed with
 * ZSTD_decompressStream one frame at a time into `raw`: a frame whole into
 * an 8 MiB buffer where the input can go back (ZSTD_d_stableOutBuffer: no
 * copy out of zstd's window), else, and for frames that do not fit or fail,
 * streaming through a small buffer (decompress_stable, stable_fallback);
 * entries (0x0A, varint len, Record) are decoded in place by the
 * hand-written protobuf decoder (protobuf-c unpack mallocs per message, too
 * slow for 30 M events/s): kernels, allocations and frees by a hot path
 * (vt_reader_fast.h; its varints with BMI2's pext where that is fast,
 * chosen at run time), one event per vt_reader_next() or several per
 * vt_reader_next_batch(); everything else by decode_record().  Entries
 * never straddle frames (docs/FORMAT.md), so every byte in `raw` belongs
 * to the frame starting at `frame_start`.
 * May touch: zstd and the C library only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_d_stableOutBuffer (1.4.0+) */
#include <zstd.h>
#include <zstd_errors.h>

#include "vt_error.h"
#include "vt_reader.h"
#include "vt_reader_columns.h"
#include "vt_wire.h"
#ifndef VT_READER_INT_H
#define VT_READER_INT_H

#define IN_CHUNK (1u << 20)
#define RAW_INIT (256u << 10)
#define RAW_MIN_FREE (64u << 10)
/* Whole-frame buffer: the writer ends a zstd frame after frame_bytes (4 MiB
 * by default) of records, so a frame is at most that plus one record. */
#define RAW_STABLE ((8u << 20) + (64u << 10))
/* A frame is verified (its checksum) before any of its records is handed
 * out when it fits in raw, which grows for it up to this; a larger frame
 * (not from this writer) is read the streaming way, unverified. */
#define RAW_VERIFY_MAX (64u << 20)
/* the largest raw buffer a freed reader leaves to the next (the reader
 * cache): one of the usual frame size, not one grown for a huge frame */
#define RAW_CACHE_MAX RAW_STABLE
#ifdef VT_READER_SMALL_BUFFERS
/* the fuzz build (-DVT_FUZZ=ON): the same paths with buffers a 64 KiB input
 * can outgrow, so that an input that inflates to megabytes (RLE blocks)
 * takes the large-frame and streaming paths without mapping and zeroing
 * tens of megabytes under ASan for every run */
#undef RAW_STABLE
#undef RAW_VERIFY_MAX
#undef IN_CHUNK
#define IN_CHUNK (64u << 10)
#define RAW_STABLE ((512u << 10) + (64u << 10))
#define RAW_VERIFY_MAX (1u << 20)
/* and every raw is kept: a grown one is 1 MiB at most here, and mapping
 * and faulting in a fresh one after each inflated input was a fifth of
 * an export's run */
#undef RAW_CACHE_MAX
#define RAW_CACHE_MAX RAW_VERIFY_MAX
#endif
/* Input per zstd call when decoding a frame whole: its output (~2.5x) is
 * then decoded into events while it is still in the L2 cache (with 1 MiB
 * per call, the simulated L2 read misses were 2.7x as many). */
#define STABLE_IN_STEP (64u << 10)
#define MAX_TABLE_IDS (1u << 28)
#define MAX_STACK_FRAMES_TOTAL (1u << 27) /* uint32 frame ids over all stacks */
#define MAX_STACK_DEPTH (1u << 24)
#define MAX_DEVICES 1024u
#define MAX_HEADER_LIST 4096u
#define MAX_GROUP_DEPTH 32
#define ARENA_BLOCK (64u << 10)
#define ARENA_FIRST (4u << 10)
#define TABLE_INIT 64u /* slots of a table at its first id; doubles */
#define ERR_LEN 512
#define WHY_LEN 200

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_I32 = 5 };
#define TAG(f, wt) (((uint64_t)(f) << 3) | (wt))

enum { ST_READ, ST_DISCARD, ST_RESYNC, ST_FINAL, ST_EOF };

typedef struct arena_blk {
    struct arena_blk *next;
    size_t used, cap;
    char data[];
} arena_blk;

/* Dense id -> slot tables.  Every slot starts with its uint32 id (0 = empty). */
typedef struct {
    uint8_t *v;
    uint32_t cap;   /* slots */
    uint32_t count; /* ids defined */
} vt_table;

typedef struct { uint32_t id, len; const char *s; } str_slot;
typedef struct { uint32_t id, n, parent, depth; uint32_t off; } stack_slot;
typedef struct { uint32_t defined; vt_ev_device d; } dev_slot;
/* A launch with its name resolved once (saves a dependent load per kernel). */
/* A launch with what a kernel event copies from it (name resolved, device,
 * stream, grid, block, ...) laid out as the head of a vt_ev_kernel, so that
 * a kernel record copies it with a few wide moves. */
#define KERNEL_HEAD offsetof(vt_ev_kernel, graph_id)
typedef struct { uint32_t id, pad_; vt_ev_kernel k; vt_ev_launch l; } launch_slot;

struct vt_reader {
    char name[256];
    /* input */
    int fd;
    const uint8_t *mem;
    size_t mem_size;
    uint8_t *ibuf;
    uint64_t ib_off; /* ibuf holds input bytes [ib_off, ib_off + ib_len) */
    size_t ib_len;
    int seekable;
    int eof;         /* a read returned 0 at ib_off + ib_len */
    int follow;      /* vt_reader_set_follow: the end of the input is "not yet" (VT_ERR_AGAIN) */
    uint64_t in_pos; /* next compressed byte for zstd */
    /* zstd */
    ZSTD_DCtx *dctx;
    int in_frame;
    uint64_t frame_start;
    uint64_t raw_base;   /* decompressed offset in the frame of raw[0] */
    size_t zerr;         /* zstd error code waiting to be reported */
    uint64_t zerr_at;
    int careful;          /* re-decoding a damaged frame byte by byte */
    int frame_bad;        /* the frame decoded whole failed (checksum or data): skip it whole */
    int frame_open;       /* this frame's records went out before its end (counted unverified) */
    int stable_full;      /* decoded whole, the frame did not fit (decompress_stable) */
    uint64_t careful_skip;/* decompressed bytes to drop while doing so */
    int stable_ok;        /* frames may be decoded whole into raw (the input can go back) */
    int stable;           /* this frame is: ZSTD_d_stableOutBuffer, raw never moves */
    int zmode;            /* ZSTD_d_stableOutBuffer as set in dctx */
    uint64_t in_counted;  /* input counted in st.bytes_in so far */
    /* decompressed bytes: [rpos, rend) not decoded yet */
    uint8_t *raw;
    size_t rcap, rpos, rend;
    size_t ralloc;        /* bytes allocated at raw (>= rcap): a buffer from
                           * the reader cache may be larger than rcap, which
                           * then grows into it as into a fresh one */
    size_t bcap;          /* streaming frames use raw[0, bcap) (<= rcap): zstd's
                           * output per call, so what a zstd error loses, stays
                           * as with a small buffer */
    /* decoder */
    int state, last_err;
    uint64_t resync_from;   /* scan for a zstd magic from here */
    uint64_t skip_from;     /* where the damaged data began (for skipped_bytes) */
    uint64_t skip_hw;       /* ST_DISCARD: input counted in skipped_bytes up to here */
    int need_sync;          /* after a resync: the frame must start with a Sync */
    int any_record;
    int fast;               /* vt_reader_next() may take its hot path */
    int pext;               /* ... with fast_record_pext() */
    uint64_t host_time, device_time, corr;
    uint32_t fast_thr, fast_tid; /* the hot path's last thread and its tid (fast_state); 0 after a Thread */
    uint64_t last_seq;
    int have_seq;
    /* tables */
    arena_blk *arena;
    uint64_t arena_bytes; /* strings, names, paths, and the tables' arrays */
    vt_table_budget *budget; /* shared with the other readers of a command, or NULL */
    int over_budget;         /* rd_table_charge failed: r->why says which limit */
    vt_table strings, frames, stacks, threads, modules, launches;
    uint32_t *stack_frames;
    uint32_t sf_len, sf_cap;
    dev_slot *devices;
    uint32_t ndevices;
    vt_ev_header header;
    int have_header;
    /* per-record scratch (inline strings, frames of a redefined stack) */
    uint8_t *scratch;
    size_t scratch_cap, scratch_used;
    vt_reader_stats st;
    const uint8_t *hard; /* raw + rend while decoding: readable bound for varints */
    char err[ERR_LEN];
    char why[WHY_LEN];
    vt_kbatch kb; /* kernels of a KernelBatch record not returned yet (vt_reader_columns.c) */
    vt_mblock mb; /* allocations and frees of a MemBlock not returned yet (vt_reader_columns.c) */
};
typedef struct { const uint8_t *path, *build_id; size_t path_len, build_id_len; } module_raw;
typedef struct { const uint8_t *name, *uuid, *pci; size_t name_len, uuid_len, pci_len; } device_raw;

/* ---- shared between the parts */

int rd_set_final(vt_reader *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The input ended where more may come (inside a frame, or between frames
 * before the End record): VT_ERR_AGAIN when following (the next read
 * starts at the same place), else the final VT_ERR_TRUNCATED with the
 * message. */
int rd_end_of_input(vt_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int rd_why(vt_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 0 when the tables may grow by n bytes (and charges them), else -1 with
 * r->why naming the limit. */
int rd_table_charge(vt_reader *r, uint64_t n, const char *what);
/* The error of a table that could not grow: VT_ERR_LIMIT after a budget
 * (r->why set by rd_table_charge), else VT_ERR_CORRUPT "<what> exceed ...". */
int rd_table_full(vt_reader *r, const char *what);
void *rd_arena_alloc(vt_reader *r, size_t n, size_t align);
const char *rd_arena_str(vt_reader *r, const uint8_t *s, size_t n);
void *rd_tab_put(vt_reader *r, vt_table *t, uint32_t id, size_t esz, const char *what, int *dup);
const char *rd_str_get(const vt_reader *r, uint32_t id);
int rd_scratch_reserve(vt_reader *r, size_t n);
const char *rd_scratch_str(vt_reader *r, const uint8_t *s, size_t n);
/* vt_reader_tables.c: definition records */
int rd_def_string(vt_reader *r, const uint8_t *bp, const uint8_t *be, vt_event *ev);
int rd_def_frame(vt_reader *r, const uint8_t *bp, const uint8_t *be, vt_event *ev);
int rd_def_stack(vt_reader *r, const uint8_t *bp, const uint8_t *be, vt_event *ev);
int rd_def_thread(vt_reader *r, const uint8_t *bp, const uint8_t *be, vt_event *ev);
int rd_def_module(vt_reader *r, const uint8_t *bp, const uint8_t *be, vt_event *ev);
int rd_def_launch(vt_reader *r, const uint8_t *bp, const uint8_t *be, vt_event *ev);
int rd_def_device(vt_reader *r, const uint8_t *bp, const uint8_t *be, vt_event *ev);
int rd_def_header(vt_reader *r, const uint8_t *bp, const uint8_t *be, vt_event *ev);

int rd_skip_field(vt_reader *r, const uint8_t **pp, const uint8_t *end, uint64_t tag, int depth);
int dec_sync(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_sync *s);
int dec_alloc(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_alloc *a, uint64_t *corr);
int dec_free(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_free *a, uint64_t *corr);
int dec_alloc_failed(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_alloc_failed *a,
                            uint64_t *corr);
int dec_vmm_range(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_vmm_range *a, uint64_t *corr,
                         int with_stack);
int dec_vmm_create(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_vmm_create *a, uint64_t *corr);
int dec_vmm_release(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_vmm_release *a,
                           uint64_t *corr);
int dec_vmm_map(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_vmm_map *a, uint64_t *corr);
int dec_pool(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_pool *a, uint64_t *corr);
int dec_pool_usage(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_pool_usage *a);
int dec_kernel(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_kernel *k, uint64_t *corr);
int dec_nvtx(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_nvtx *a);
int dec_memory_usage(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_memory_usage *a);
int dec_dropped(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_dropped *a);
int dec_note(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_note *a);
int dec_end(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_end *a);
int dec_launch(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_launch *a);
int dec_frame(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_frame *a);
int dec_string(vt_reader *r, const uint8_t *p, const uint8_t *end, uint32_t *id, const uint8_t **s,
                      size_t *len);
int dec_module(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_module *a, module_raw *m);
int dec_thread(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_thread *a, const uint8_t **nm,
                      size_t *nlen);
int dec_device(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_device *a, device_raw *d);
int dec_stack(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_stack *a, uint32_t *out, size_t max);
int dec_header(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_header *h, int store);
void rd_drop_frame(vt_reader *r);
int rd_corrupt(vt_reader *r, int code, int zstd_ok, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int rd_resync(vt_reader *r);
int rd_decompress_more(vt_reader *r, size_t need);
int rd_zstd_go_careful(vt_reader *r);
int rd_begin_frame(vt_reader *r);

static inline const void *rd_tab_get(const vt_table *t, uint32_t id, size_t esz)
{
    if (id == 0 || id >= t->cap)
        return NULL;
    const uint8_t *s = t->v + (size_t)id * esz;
    return *(const uint32_t *)s == id ? s : NULL;
}
static inline __attribute__((always_inline)) uint32_t tid_of(const vt_reader *r, uint32_t thread)
{
    const vt_ev_thread *t = rd_tab_get(&r->threads, thread, sizeof(vt_ev_thread));
    return t ? t->tid : 0;
}
static inline int rd_len(const uint8_t **pp, const uint8_t *end, const uint8_t *hard, const uint8_t **q, size_t *n)
{
    uint64_t v;
    if (rd_varint_h(pp, end, hard, &v) || v > (uint64_t)(end - *pp))
        return -1;
    *q = *pp;
    *n = (size_t)v;
    *pp += v;
    return 0;
}

#endif
