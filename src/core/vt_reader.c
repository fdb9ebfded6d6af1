/* vt_reader.c - streaming trace reader: zstd frames -> Records -> vt_event.
 *
 * How: the file is read in 1 MiB chunks (pread, so that after damage the
 * reader can go back and scan for the next zstd magic) and decompressed with
 * ZSTD_decompressStream one frame at a time into `raw`: a frame whole into
 * an 8 MiB buffer where the input can go back (ZSTD_d_stableOutBuffer: no
 * copy out of zstd's window), else, and for frames that do not fit or fail,
 * streaming through a small buffer (decompress_stable, stable_fallback);
 * entries (0x0A, varint len, Record) are decoded in place by the
 * hand-written protobuf decoder below (protobuf-c unpack mallocs per
 * message, too slow for 30 M events/s): kernels, allocations and frees by a
 * hot path (vt_reader_fast.h; its varints with BMI2's pext where that is
 * fast, chosen at run time), one event per vt_reader_next() or several per
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

#include "vt_error.h"
#include "vt_reader.h"
#include "vt_reader_batch.h"
#include "vt_wire.h"

#define IN_CHUNK (1u << 20)
#define RAW_INIT (256u << 10)
#define RAW_MIN_FREE (64u << 10)
/* Whole-frame buffer: the writer ends a zstd frame after frame_bytes (4 MiB
 * by default) of records, so a frame is at most that plus one record. */
#define RAW_STABLE ((8u << 20) + (64u << 10))
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
    uint64_t in_pos; /* next compressed byte for zstd */
    /* zstd */
    ZSTD_DCtx *dctx;
    int in_frame;
    uint64_t frame_start;
    uint64_t raw_base;   /* decompressed offset in the frame of raw[0] */
    size_t zerr;         /* zstd error code waiting to be reported */
    uint64_t zerr_at;
    int careful;          /* re-decoding a damaged frame byte by byte */
    uint64_t careful_skip;/* decompressed bytes to drop while doing so */
    int stable_ok;        /* frames may be decoded whole into raw (the input can go back) */
    int stable;           /* this frame is: ZSTD_d_stableOutBuffer, raw never moves */
    int zmode;            /* ZSTD_d_stableOutBuffer as set in dctx */
    uint64_t in_counted;  /* input counted in st.bytes_in so far */
    /* decompressed bytes: [rpos, rend) not decoded yet */
    uint8_t *raw;
    size_t rcap, rpos, rend;
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
    vt_kbatch kb; /* kernels of a KernelBatch record not returned yet (vt_reader_batch.c) */
    vt_mblock mb; /* allocations and frees of a MemBlock not returned yet (vt_reader_batch.c) */
};

/* ---- messages ------------------------------------------------------- */

static int set_final(vt_reader *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int set_final(vt_reader *r, int code, const char *fmt, ...)
{
    int n = snprintf(r->err, sizeof(r->err), "%s: ", r->name);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < sizeof(r->err))
        vsnprintf(r->err + n, sizeof(r->err) - (size_t)n, fmt, ap);
    va_end(ap);
    r->state = ST_FINAL;
    r->last_err = code;
    return code;
}

static int why(vt_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int why(vt_reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof(r->why), fmt, ap);
    va_end(ap);
    return VT_ERR_CORRUPT;
}

/* ---- input ---------------------------------------------------------- */

/* Make bytes at *pos available: *p, *n (n >= min(want, bytes left) unless
 * the input cannot go back, in which case *pos moves forward).  n == 0 at
 * the end of the input.  Returns 0 or VT_ERR_IO. */
static int in_peek(vt_reader *r, uint64_t *pos, size_t want, const uint8_t **p, size_t *n)
{
    if (r->mem) {
        if (*pos > r->mem_size)
            *pos = r->mem_size;
        *p = r->mem + *pos;
        *n = r->mem_size - *pos;
        return 0;
    }
    if (want > IN_CHUNK)
        want = IN_CHUNK;
    uint64_t end = r->ib_off + r->ib_len;
    if (*pos >= r->ib_off && *pos < end && end - *pos >= want) {
        *p = r->ibuf + (*pos - r->ib_off);
        *n = end - *pos;
        return 0;
    }
    if (*pos < r->ib_off || *pos > end) {
        if (r->seekable) {
            r->ib_off = *pos;
            r->ib_len = 0;
            r->eof = 0;
        } else if (*pos < r->ib_off) {
            *pos = r->ib_off; /* a pipe cannot go back */
        } else {
            /* forward on a pipe: drop what is buffered, read and discard */
            r->ib_off = end;
            r->ib_len = 0;
            while (r->ib_off < *pos && !r->eof) {
                uint64_t gap = *pos - r->ib_off;
                ssize_t k = read(r->fd, r->ibuf, gap < IN_CHUNK ? gap : IN_CHUNK);
                if (k < 0 && errno == EINTR)
                    continue;
                if (k < 0)
                    return set_final(r, VT_ERR_IO, "read error at offset %llu: %s",
                                     (unsigned long long)r->ib_off, strerror(errno));
                if (k == 0)
                    r->eof = 1;
                r->ib_off += (uint64_t)k;
            }
            if (*pos > r->ib_off)
                *pos = r->ib_off;
        }
    }
    /* keep [*pos, end) and read more after it */
    size_t keep = (size_t)(r->ib_off + r->ib_len - *pos);
    if (*pos != r->ib_off) {
        memmove(r->ibuf, r->ibuf + (*pos - r->ib_off), keep);
        r->ib_off = *pos;
        r->ib_len = keep;
    }
    while (r->ib_len < want && r->ib_len < IN_CHUNK && !r->eof) {
        ssize_t k;
        if (r->seekable)
            k = pread(r->fd, r->ibuf + r->ib_len, IN_CHUNK - r->ib_len, (off_t)(r->ib_off + r->ib_len));
        else
            k = read(r->fd, r->ibuf + r->ib_len, IN_CHUNK - r->ib_len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return set_final(r, VT_ERR_IO, "read error at offset %llu: %s",
                             (unsigned long long)(r->ib_off + r->ib_len), strerror(errno));
        if (k == 0)
            r->eof = 1;
        r->ib_len += (size_t)k;
    }
    *p = r->ibuf;
    *n = r->ib_len;
    return 0;
}

/* ---- tables --------------------------------------------------------- */

static void *arena_alloc(vt_reader *r, size_t n, size_t align)
{
    if (r->arena_bytes + n > VT_READER_MAX_TABLE_BYTES)
        return NULL;
    arena_blk *b = r->arena;
    size_t at = b ? (b->used + align - 1) & ~(align - 1) : 0;
    if (!b || at + n > b->cap) {
        size_t cap = n > ARENA_BLOCK / 4 ? n : ARENA_BLOCK;
        arena_blk *nb = malloc(sizeof(*nb) + cap);
        if (!nb)
            return NULL;
        nb->cap = cap;
        nb->used = 0;
        if (b && n > ARENA_BLOCK / 4) { /* big: keep filling the current block */
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            r->arena = nb;
        }
        b = nb;
        at = 0;
    }
    b->used = at + n;
    r->arena_bytes += n;
    return b->data + at;
}

static const char *arena_str(vt_reader *r, const uint8_t *s, size_t n)
{
    char *d = arena_alloc(r, n + 1, 1);
    if (!d)
        return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

static inline const void *tab_get(const vt_table *t, uint32_t id, size_t esz)
{
    if (id == 0 || id >= t->cap)
        return NULL;
    const uint8_t *s = t->v + (size_t)id * esz;
    return *(const uint32_t *)s == id ? s : NULL;
}

/* Slot for definition `id` (zeroed if new).  *dup = 1 if already defined
 * (the first definition wins: ids are never reused).  NULL + why. */
static void *tab_put(vt_reader *r, vt_table *t, uint32_t id, size_t esz, const char *what, int *dup)
{
    *dup = 0;
    if (id == 0) {
        why(r, "%s with id 0", what);
        return NULL;
    }
    if (id >= t->cap) {
        /* Ids come in order of first use; gaps only where frames were lost.
         * So a table never grows past twice what was defined plus a slack,
         * whatever ids a damaged or hostile stream names. */
        if (id >= MAX_TABLE_IDS || id > 2ull * t->count + VT_READER_ID_SLACK) {
            why(r, "%s id %u is too far beyond the %u defined so far", what, id, t->count);
            return NULL;
        }
        uint64_t ncap = t->cap ? (uint64_t)t->cap * 2 : 1024;
        while (ncap <= id)
            ncap *= 2;
        if (ncap > MAX_TABLE_IDS)
            ncap = MAX_TABLE_IDS;
        uint64_t grow = (ncap - t->cap) * esz;
        if (r->arena_bytes + grow > VT_READER_MAX_TABLE_BYTES) {
            why(r, "%s table would exceed the %llu-byte limit of the tables", what,
                (unsigned long long)VT_READER_MAX_TABLE_BYTES);
            return NULL;
        }
        uint8_t *nv = realloc(t->v, (size_t)ncap * esz);
        if (!nv) {
            why(r, "out of memory for %s table", what);
            return NULL;
        }
        memset(nv + (size_t)t->cap * esz, 0, (size_t)(ncap - t->cap) * esz);
        t->v = nv;
        t->cap = (uint32_t)ncap;
        r->arena_bytes += grow;
    }
    uint8_t *s = t->v + (size_t)id * esz;
    if (*(uint32_t *)s == id) {
        *dup = 1;
        return s;
    }
    t->count++;
    return s;
}

static const char *str_get(const vt_reader *r, uint32_t id)
{
    const str_slot *s = tab_get(&r->strings, id, sizeof(str_slot));
    return s ? s->s : NULL;
}

static inline __attribute__((always_inline)) uint32_t tid_of(const vt_reader *r, uint32_t thread)
{
    const vt_ev_thread *t = tab_get(&r->threads, thread, sizeof(vt_ev_thread));
    return t ? t->tid : 0;
}

/* Per-record scratch: reserved once per record so pointers stay valid. */
static int scratch_reserve(vt_reader *r, size_t n)
{
    r->scratch_used = 0;
    if (n <= r->scratch_cap)
        return 0;
    size_t cap = r->scratch_cap ? r->scratch_cap : 4096;
    while (cap < n)
        cap *= 2;
    uint8_t *s = realloc(r->scratch, cap);
    if (!s)
        return VT_ERR_NOMEM;
    r->scratch = s;
    r->scratch_cap = cap;
    return 0;
}

static const char *scratch_str(vt_reader *r, const uint8_t *s, size_t n)
{
    if (r->scratch_used + n + 1 > r->scratch_cap)
        return ""; /* cannot happen: reserved 2x the record */
    char *d = (char *)r->scratch + r->scratch_used;
    memcpy(d, s, n);
    d[n] = 0;
    r->scratch_used += n + 1;
    return d;
}

/* ---- protobuf wire format ------------------------------------------- */


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

/* Skip an unknown field (wire_skip() in vt_wire.h), groups included:
 * proto2 writers may send them, so a group is skipped field by field up to
 * its end tag, nested at most MAX_GROUP_DEPTH deep, and counted once. */
static int skip_field(vt_reader *r, const uint8_t **pp, const uint8_t *end, uint64_t tag, int depth)
{
    uint64_t field = tag >> 3;
    if (field == 0 || field > 0x1fffffff)
        return why(r, "invalid field number %llu", (unsigned long long)field);
    if ((tag & 7) == WT_SGROUP) {
        if (depth >= MAX_GROUP_DEPTH)
            return why(r, "groups nested too deep");
        for (;;) {
            uint64_t t;
            if (*pp >= end)
                return why(r, "unterminated group %llu", (unsigned long long)field);
            if (rd_varint(pp, end, &t))
                return why(r, "bad tag in group %llu", (unsigned long long)field);
            if ((t & 7) == WT_EGROUP) {
                if ((t >> 3) != field)
                    return why(r, "group %llu ended by %llu", (unsigned long long)field,
                               (unsigned long long)(t >> 3));
                break;
            }
            int rc = skip_field(r, pp, end, t, depth + 1);
            if (rc)
                return rc;
            r->st.unknown_fields--; /* count the group once */
        }
        r->st.unknown_fields++;
        return 0;
    }
    switch (wire_skip(pp, end, (unsigned)(tag & 7))) {
    case WIRE_OK:
        r->st.unknown_fields++;
        return 0;
    case WIRE_BAD_VARINT:
        return why(r, "bad varint in unknown field %llu", (unsigned long long)field);
    case WIRE_PAST_END:
        switch (tag & 7) {
        case WT_I64:
            return why(r, "fixed64 field %llu past the end of its message", (unsigned long long)field);
        case WT_I32:
            return why(r, "fixed32 field %llu past the end of its message", (unsigned long long)field);
        default:
            return why(r, "length of field %llu past the end of its message", (unsigned long long)field);
        }
    default:
        return why(r, "invalid wire type %u (field %llu)", (unsigned)(tag & 7), (unsigned long long)field);
    }
}

/* Message decoding: FIELDS_BEGIN opens the tag loop; each case reads one
 * known field; anything else (unknown field, or a known field with another
 * wire type) is skipped and counted. */
#define FIELDS_BEGIN                                                          \
    while (p < end) {                                                         \
        uint64_t tag, v;                                                      \
        const uint8_t *q;                                                     \
        size_t n;                                                             \
        (void)v;                                                              \
        (void)q;                                                              \
        (void)n;                                                              \
        if (rd_varint_h(&p, end, r->hard, &tag))                              \
            return why(r, "bad tag in %s", MSG);                              \
        switch (tag) {
#define FIELDS_END                                                            \
        default:                                                              \
            if (skip_field(r, &p, end, tag, 0))                               \
                return VT_ERR_CORRUPT;                                        \
        }                                                                     \
    }
#define VARINT(f, stmt)                                                       \
    case TAG(f, WT_VARINT):                                                   \
        if (rd_varint_h(&p, end, r->hard, &v))                                \
            return why(r, "bad varint in %s field %d", MSG, f);               \
        stmt;                                                                 \
        break;
#define BYTES(f, stmt)                                                        \
    case TAG(f, WT_LEN):                                                      \
        if (rd_len(&p, end, r->hard, &q, &n))                                          \
            return why(r, "%s field %d runs past the end of the message", MSG, f); \
        stmt;                                                                 \
        break;

static int dec_sync(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_sync *s)
{
#define MSG "Sync"
    FIELDS_BEGIN
    VARINT(1, s->time_ns = v)
    VARINT(2, s->device_time_ns = v)
    VARINT(3, s->sequence = v)
    FIELDS_END
    return 0;
#undef MSG
}

static int dec_alloc(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_alloc *a, uint64_t *corr)
{
#define MSG "Alloc"
    FIELDS_BEGIN
    VARINT(1, a->address = v)
    VARINT(2, a->size = v)
    VARINT(3, a->device = (uint32_t)v)
    VARINT(4, a->kind = (vt_memkind)(int32_t)v)
    VARINT(5, a->api = (vt_allocapi)(int32_t)v)
    VARINT(6, a->stream = v)
    VARINT(7, a->pool = v)
    VARINT(8, a->site.thread = (uint32_t)v)
    VARINT(9, a->site.stack = (uint32_t)v)
    VARINT(10, *corr = v)
    FIELDS_END
    return 0;
#undef MSG
}

static int dec_free(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_free *a, uint64_t *corr)
{
#define MSG "Free"
    FIELDS_BEGIN
    VARINT(1, a->address = v)
    VARINT(2, a->device = (uint32_t)v)
    VARINT(3, a->kind = (vt_memkind)(int32_t)v)
    VARINT(4, a->api = (vt_allocapi)(int32_t)v)
    VARINT(5, a->stream = v)
    VARINT(6, a->site.thread = (uint32_t)v)
    VARINT(7, *corr = v)
    VARINT(8, a->site.stack = (uint32_t)v)
    FIELDS_END
    return 0;
#undef MSG
}

static int dec_alloc_failed(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_alloc_failed *a,
                            uint64_t *corr)
{
#define MSG "AllocFailed"
    FIELDS_BEGIN
    VARINT(1, a->size = v)
    VARINT(2, a->device = (uint32_t)v)
    VARINT(3, a->kind = (vt_memkind)(int32_t)v)
    VARINT(4, a->api = (vt_allocapi)(int32_t)v)
    VARINT(5, a->error = (int32_t)v)
    VARINT(6, a->error_name_id = (uint32_t)v)
    VARINT(7, a->stream = v)
    VARINT(8, a->pool = v)
    VARINT(9, a->site.thread = (uint32_t)v)
    VARINT(10, a->site.stack = (uint32_t)v)
    VARINT(11, *corr = v)
    FIELDS_END
    return 0;
#undef MSG
}

/* VmmReserve (5 fields, stack), VmmAddressFree and VmmUnmap (no stack). */
static int dec_vmm_range(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_vmm_range *a, uint64_t *corr,
                         int with_stack)
{
#define MSG "Vmm range"
    if (with_stack) {
        FIELDS_BEGIN
        VARINT(1, a->address = v)
        VARINT(2, a->size = v)
        VARINT(3, a->site.thread = (uint32_t)v)
        VARINT(4, a->site.stack = (uint32_t)v)
        VARINT(5, *corr = v)
        FIELDS_END
    } else {
        FIELDS_BEGIN
        VARINT(1, a->address = v)
        VARINT(2, a->size = v)
        VARINT(3, a->site.thread = (uint32_t)v)
        VARINT(4, *corr = v)
        FIELDS_END
    }
    return 0;
#undef MSG
}

static int dec_vmm_create(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_vmm_create *a, uint64_t *corr)
{
#define MSG "VmmCreate"
    FIELDS_BEGIN
    VARINT(1, a->handle = v)
    VARINT(2, a->size = v)
    VARINT(3, a->device = (uint32_t)v)
    VARINT(4, a->kind = (vt_memkind)(int32_t)v)
    VARINT(5, a->site.thread = (uint32_t)v)
    VARINT(6, a->site.stack = (uint32_t)v)
    VARINT(7, *corr = v)
    FIELDS_END
    return 0;
#undef MSG
}

static int dec_vmm_release(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_vmm_release *a,
                           uint64_t *corr)
{
#define MSG "VmmRelease"
    FIELDS_BEGIN
    VARINT(1, a->handle = v)
    VARINT(2, a->site.thread = (uint32_t)v)
    VARINT(3, *corr = v)
    FIELDS_END
    return 0;
#undef MSG
}

static int dec_vmm_map(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_vmm_map *a, uint64_t *corr)
{
#define MSG "VmmMap"
    FIELDS_BEGIN
    VARINT(1, a->address = v)
    VARINT(2, a->size = v)
    VARINT(3, a->offset = v)
    VARINT(4, a->handle = v)
    VARINT(5, a->site.thread = (uint32_t)v)
    VARINT(6, *corr = v)
    FIELDS_END
    return 0;
#undef MSG
}

static int dec_pool(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_pool *a, uint64_t *corr)
{
#define MSG "Pool"
    FIELDS_BEGIN
    VARINT(1, a->op = (vt_poolop)(int32_t)v)
    VARINT(2, a->pool = v)
    VARINT(3, a->device = (uint32_t)v)
    VARINT(4, a->value = v)
    VARINT(5, a->site.thread = (uint32_t)v)
    VARINT(6, a->site.stack = (uint32_t)v)
    VARINT(7, *corr = v)
    FIELDS_END
    return 0;
#undef MSG
}

static int dec_pool_usage(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_pool_usage *a)
{
#define MSG "PoolUsage"
    FIELDS_BEGIN
    VARINT(1, a->pool = v)
    VARINT(2, a->device = (uint32_t)v)
    VARINT(3, a->reserved_current = v)
    VARINT(4, a->reserved_high = v)
    VARINT(5, a->used_current = v)
    VARINT(6, a->used_high = v)
    FIELDS_END
    return 0;
#undef MSG
}

static int dec_kernel(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_kernel *k, uint64_t *corr)
{
#define MSG "Kernel"
    FIELDS_BEGIN
    VARINT(1, k->launch_id = (uint32_t)v)
    VARINT(2, k->duration_ns = v)
    VARINT(3, *corr = v)
    VARINT(4, k->graph_id = v)
    FIELDS_END
    return 0;
#undef MSG
}

static int dec_nvtx(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_nvtx *a)
{
#define MSG "Nvtx"
    FIELDS_BEGIN
    VARINT(1, a->op = (vt_nvtxop)(int32_t)v)
    VARINT(2, a->message_id = (uint32_t)v)
    VARINT(3, a->domain_id = (uint32_t)v)
    VARINT(4, a->range_id = v)
    VARINT(5, a->site.thread = (uint32_t)v)
    FIELDS_END
    return 0;
#undef MSG
}

static int dec_memory_usage(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_memory_usage *a)
{
#define MSG "MemoryUsage"
    FIELDS_BEGIN
    VARINT(1, a->device = (uint32_t)v)
    VARINT(2, a->free = v)
    VARINT(3, a->total = v)
    FIELDS_END
    return 0;
#undef MSG
}

static int dec_dropped(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_dropped *a)
{
#define MSG "Dropped"
    FIELDS_BEGIN
    VARINT(1, a->source = (vt_dropsource)(int32_t)v)
    VARINT(2, a->count = v)
    VARINT(3, a->reason_id = (uint32_t)v)
    FIELDS_END
    return 0;
#undef MSG
}

static int dec_note(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_note *a)
{
#define MSG "Note"
    a->text = "";
    FIELDS_BEGIN
    VARINT(1, a->severity = (vt_severity)(int32_t)v)
    BYTES(2, a->text = scratch_str(r, q, n))
    FIELDS_END
    return 0;
#undef MSG
}

static int dec_end(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_end *a)
{
#define MSG "End"
    FIELDS_BEGIN
    VARINT(1, a->reason = (vt_endreason)(int32_t)v)
    VARINT(2, a->signal = (int32_t)v)
    VARINT(3, a->events = v)
    VARINT(4, a->dropped = v)
    FIELDS_END
    return 0;
#undef MSG
}

static int dec_launch(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_launch *a)
{
#define MSG "Launch"
    FIELDS_BEGIN
    VARINT(1, a->id = (uint32_t)v)
    VARINT(2, a->name = (uint32_t)v)
    VARINT(3, a->device = (uint32_t)v)
    VARINT(4, a->stream = (uint32_t)v)
    VARINT(5, a->grid[0] = (uint32_t)v)
    VARINT(6, a->grid[1] = (uint32_t)v)
    VARINT(7, a->grid[2] = (uint32_t)v)
    VARINT(8, a->block[0] = (uint32_t)v)
    VARINT(9, a->block[1] = (uint32_t)v)
    VARINT(10, a->block[2] = (uint32_t)v)
    VARINT(11, a->shared_memory = (uint32_t)v)
    VARINT(12, a->graph = v != 0)
    FIELDS_END
    return 0;
#undef MSG
}

static int dec_frame(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_frame *a)
{
#define MSG "Frame"
    FIELDS_BEGIN
    VARINT(1, a->id = (uint32_t)v)
    VARINT(2, a->kind = (vt_framekind)(int32_t)v)
    VARINT(3, a->ip = v)
    VARINT(4, a->module = (uint32_t)v)
    VARINT(5, a->function = (uint32_t)v)
    VARINT(6, a->file = (uint32_t)v)
    VARINT(7, a->line = (uint32_t)v)
    FIELDS_END
    return 0;
#undef MSG
}

/* Strings of definitions point into the record until stored. */
static int dec_string(vt_reader *r, const uint8_t *p, const uint8_t *end, uint32_t *id, const uint8_t **s,
                      size_t *len)
{
#define MSG "String"
    FIELDS_BEGIN
    VARINT(1, *id = (uint32_t)v)
    BYTES(2, *s = q; *len = n)
    FIELDS_END
    return 0;
#undef MSG
}

typedef struct { const uint8_t *path, *build_id; size_t path_len, build_id_len; } module_raw;
static int dec_module(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_module *a, module_raw *m)
{
#define MSG "Module"
    FIELDS_BEGIN
    VARINT(1, a->id = (uint32_t)v)
    BYTES(2, m->path = q; m->path_len = n)
    VARINT(3, a->load_bias = v)
    VARINT(4, a->start = v)
    VARINT(5, a->end = v)
    BYTES(6, m->build_id = q; m->build_id_len = n)
    FIELDS_END
    return 0;
#undef MSG
}

static int dec_thread(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_thread *a, const uint8_t **nm,
                      size_t *nlen)
{
#define MSG "Thread"
    FIELDS_BEGIN
    VARINT(1, a->id = (uint32_t)v)
    VARINT(2, a->tid = (uint32_t)v)
    BYTES(3, *nm = q; *nlen = n)
    FIELDS_END
    return 0;
#undef MSG
}

typedef struct { const uint8_t *name, *uuid, *pci; size_t name_len, uuid_len, pci_len; } device_raw;
static int dec_device(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_device *a, device_raw *d)
{
#define MSG "Device"
    FIELDS_BEGIN
    VARINT(1, a->index = (uint32_t)v)
    BYTES(2, d->name = q; d->name_len = n)
    BYTES(3, d->uuid = q; d->uuid_len = n)
    VARINT(4, a->total_memory = v)
    VARINT(5, a->cc_major = (uint32_t)v)
    VARINT(6, a->cc_minor = (uint32_t)v)
    BYTES(7, d->pci = q; d->pci_len = n)
    FIELDS_END
    return 0;
#undef MSG
}

/* Stack frame ids go to `out` (room for `max`, enough: each takes >= 1
 * byte of the record); packed and unpacked encodings are both accepted. */
static int dec_stack(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_stack *a, uint32_t *out, size_t max)
{
#define MSG "Stack"
    uint32_t nf = 0;
    FIELDS_BEGIN
    VARINT(1, a->id = (uint32_t)v)
    VARINT(3, a->parent = (uint32_t)v)
    case TAG(2, WT_VARINT):
        if (rd_varint_h(&p, end, r->hard, &v) || nf >= max)
            return why(r, "bad frame id in Stack");
        out[nf++] = (uint32_t)v;
        break;
    case TAG(2, WT_LEN):
        if (rd_len(&p, end, r->hard, &q, &n))
            return why(r, "Stack frames run past the end of the message");
        for (const uint8_t *qe = q + n; q < qe;) {
            if (rd_varint_h(&q, qe, r->hard, &v) || nf >= max)
                return why(r, "bad packed frame id in Stack");
            out[nf++] = (uint32_t)v;
        }
        break;
    FIELDS_END
    a->frames = out;
    a->nframes = nf;
    return 0;
#undef MSG
}

/* Header: strings go straight to the arena (one header per trace). */
static int dec_header(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_header *h, int store)
{
#define MSG "Header"
    uint32_t nargv = 0, nenv = 0;
    const char **argv = NULL, **en = NULL, **ev = NULL;
    /* first pass: count the lists (unknown fields are counted in the second) */
    const uint8_t *p0 = p;
    uint64_t unknown0 = r->st.unknown_fields;
    FIELDS_BEGIN
    BYTES(7, nargv++)
    BYTES(9, nenv++)
    FIELDS_END
    p = p0;
    r->st.unknown_fields = unknown0;
    if (nargv > MAX_HEADER_LIST)
        nargv = MAX_HEADER_LIST;
    if (nenv > MAX_HEADER_LIST)
        nenv = MAX_HEADER_LIST;
    if (store) {
        argv = arena_alloc(r, sizeof(char *) * (nargv + 1), sizeof(char *));
        en = arena_alloc(r, sizeof(char *) * (nenv + 1), sizeof(char *));
        ev = arena_alloc(r, sizeof(char *) * (nenv + 1), sizeof(char *));
        if (!argv || !en || !ev)
            return why(r, "header does not fit the table limit");
    }
    h->hostname = h->program = h->tool_version = "";
    uint32_t ia = 0, ie = 0;
#define HSTR(dst)                                                             \
    do {                                                                      \
        const char *s_ = store ? arena_str(r, q, n) : "";                     \
        if (!s_)                                                              \
            return why(r, "header does not fit the table limit");             \
        dst = s_;                                                             \
    } while (0)
    FIELDS_BEGIN
    case TAG(1, WT_I32):
        if (end - p < 4)
            return why(r, "Header magic past the end of the message");
        h->magic = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        p += 4;
        break;
    VARINT(2, h->format_version = (uint32_t)v)
    BYTES(3, HSTR(h->tool_version))
    VARINT(4, h->pid = (uint32_t)v)
    VARINT(5, h->ppid = (uint32_t)v)
    BYTES(6, HSTR(h->hostname))
    BYTES(7, if (ia < nargv && store) HSTR(argv[ia++]))
    BYTES(8, HSTR(h->program))
    case TAG(9, WT_LEN): {
        if (rd_len(&p, end, r->hard, &q, &n))
            return why(r, "Header env runs past the end of the message");
        const uint8_t *ep = q, *ee = q + n, *nm = NULL, *val = NULL;
        size_t nml = 0, vall = 0;
        while (ep < ee) {
            uint64_t t;
            if (rd_varint(&ep, ee, &t))
                return why(r, "bad tag in EnvVar");
            if (t == TAG(1, WT_LEN) || t == TAG(2, WT_LEN)) {
                const uint8_t *s;
                size_t sl;
                if (rd_len(&ep, ee, r->hard, &s, &sl))
                    return why(r, "EnvVar string past the end");
                if (t == TAG(1, WT_LEN))
                    nm = s, nml = sl;
                else
                    val = s, vall = sl;
            } else if (skip_field(r, &ep, ee, t, 0)) {
                return VT_ERR_CORRUPT;
            }
        }
        if (store && ie < nenv) {
            en[ie] = arena_str(r, nm ? nm : (const uint8_t *)"", nml);
            ev[ie] = arena_str(r, val ? val : (const uint8_t *)"", vall);
            if (!en[ie] || !ev[ie])
                return why(r, "header does not fit the table limit");
            ie++;
        }
        break;
    }
    VARINT(10, h->clock = (vt_clock)(int32_t)v)
    VARINT(11, h->trace_clock_ns = v)
    VARINT(12, h->realtime_ns = v)
    VARINT(13, h->kernels = v != 0)
    VARINT(14, h->native_stacks = v != 0)
    VARINT(15, h->python_stacks = v != 0)
    FIELDS_END
#undef HSTR
    if (store) {
        argv[ia] = en[ie] = ev[ie] = NULL;
        h->argv = argv;
        h->argc = ia;
        h->env_names = en;
        h->env_values = ev;
        h->nenv = ie;
    }
    return 0;
#undef MSG
}

/* ---- records -------------------------------------------------------- */

/* Zero a small struct with plain moves: memset() of these sizes became
 * `rep stos`, whose start-up cost was 15% of decoding a kernel record. */
#define ZERO(p)                                                               \
    do {                                                                      \
        static const __typeof__(*(p)) zero_;                                  \
        *(p) = zero_;                                                         \
    } while (0)


static const vt_ev_kernel kernel_none;

/* Kernel fields that come from its Launch (zero if the launch is unknown). */
static inline __attribute__((always_inline)) void kernel_resolve(const vt_reader *r, vt_ev_kernel *k)
{
    const launch_slot *ls = tab_get(&r->launches, k->launch_id, sizeof(launch_slot));
    memcpy(k, ls ? &ls->k : &kernel_none, KERNEL_HEAD);
    if (__builtin_expect(ls && !k->name && k->name_id, 0)) /* its String came late */
        k->name = str_get(r, k->name_id);
}

/* Fast path for the records that make most of a trace (kernels, allocs,
 * frees), in the layout every protobuf encoder (the writer included)
 * produces: Record{ts_delta, body} and the body's varint fields 1..n in
 * order, each optional, every varint at most 8 bytes.  [p, end) is the
 * Record, at most 127 bytes (its length one byte).  Returns 1 if done,
 * 0 to take the generic path (which also reports any error).  Only between
 * records of a frame that is in sync (no header or Sync checks pending),
 * with at least FAST_SLACK readable bytes after the record.
 *
 * Why it looks like this: which kind comes next, and how many bytes a
 * duration, a size or a time delta takes, are data that no branch
 * predictor guesses, and a wrong guess costs more than decoding a varint.
 * So varints are decoded without a branch on their length: load 4 or 8
 * bytes, find the last byte from the continuation bits, squeeze the 7-bit
 * groups together with shifts (values of 9-10 bytes, rare, take the
 * generic path).  Small fields that are one byte in practice (enums, thread ids,
 * correlation deltas) keep a one-byte test, which is then well predicted. */
#define FAST_SLACK 128

/* p: the varint (8 readable bytes).  Sets var and moves p.  Up to 4 bytes
 * (28 bits: ids, sizes, durations, time deltas) with 32-bit masks, which
 * are immediates; longer ones (addresses, handles) with 64-bit ones.  That
 * one branch depends on the field much more than on the value, so it is
 * well predicted. */
#define FAST_VARINT_SHIFTS(var)                                               \
    do {                                                                      \
        uint32_t w_, t_;                                                      \
        memcpy(&w_, p, 4); /* little-endian, as every target of this code */  \
        t_ = ~w_ & 0x80808080u;                                               \
        if (__builtin_expect(t_ != 0, 1)) {                                   \
            p += ((unsigned)__builtin_ctz(t_) + 1) >> 3;                      \
            w_ &= t_ ^ (t_ - 1);                                              \
            w_ = ((w_ & 0x7f007f00u) >> 1) | (w_ & 0x007f007fu);             \
            w_ = ((w_ & 0x3fff0000u) >> 2) | (w_ & 0x00003fffu);             \
            var = w_;                                                         \
        } else {                                                              \
            uint64_t x_, s_;                                                  \
            memcpy(&x_, p, 8);                                                \
            s_ = ~x_ & 0x8080808080808080ull;                                 \
            if (__builtin_expect(s_ == 0, 0))                                 \
                return 0; /* 9 or 10 bytes: the generic path */               \
            p += ((unsigned)__builtin_ctzll(s_) + 1) >> 3;                    \
            x_ &= s_ ^ (s_ - 1);                                              \
            x_ = ((x_ & 0x7f007f007f007f00ull) >> 1) | (x_ & 0x007f007f007f007full); \
            x_ = ((x_ & 0x3fff00003fff0000ull) >> 2) | (x_ & 0x00003fff00003fffull); \
            x_ = ((x_ & 0x0fffffff00000000ull) >> 4) | (x_ & 0x000000000fffffffull); \
            var = x_;                                                         \
        }                                                                     \
    } while (0)

#if defined(__x86_64__) && defined(__GNUC__)
#define VT_READER_PEXT 1
/* In asm, for what the intrinsics do not give: the two masks as memory
 * operands of andn and pext (as immediates, GCC loads each into a register
 * with a movabs before every use, since the hot loop has no register to
 * spare for them), and tzcnt's carry flag as the test for "no stop bit in
 * 8 bytes" (GCC adds a test, and an xor that breaks a false dependency of
 * tzcnt on its output which only Haswell and Broadwell have): 9
 * instructions per varint, not 15. */
static const uint64_t varint_stops = 0x8080808080808080ull, varint_bits = 0x7f7f7f7f7f7f7f7full;
/* s = the stop bits of x (~x & 0x80..), tz = index of the first; returns
 * nonzero when there is none */
static inline __attribute__((always_inline)) int varint_stop(uint64_t x, uint64_t *s, uint64_t *tz)
{
    int none;
    __asm__("andn %[k], %[x], %[s]\n\ttzcnt %[s], %[tz]"
            : [s] "=r"(*s), [tz] "=r"(*tz), "=@ccc"(none)
            : [x] "r"(x), [k] "m"(varint_stops));
    return none;
}
/* pext(x, 0x7f..): the 7-bit groups squeezed together */
static inline __attribute__((always_inline)) uint64_t varint_squeeze(uint64_t x)
{
    uint64_t v;
    __asm__("pext %[k], %[x], %[v]" : [v] "=r"(v) : [x] "r"(x), [k] "m"(varint_bits));
    return v;
}
/* the varint ends at its stop bit tz (7, 15, .. 63): tz / 8 + 1 bytes */
#define FAST_VARINT_PEXT(var)                                                 \
    do {                                                                      \
        uint64_t x_, s_, tz_;                                                 \
        memcpy(&x_, p, 8);                                                    \
        if (__builtin_expect(varint_stop(x_, &s_, &tz_), 0))                  \
            return 0; /* 9 or 10 bytes: the generic path */                   \
        p += (tz_ >> 3) + 1;                                                  \
        var = varint_squeeze(x_ & (s_ ^ (s_ - 1)));                           \
    } while (0)
#else
#define VT_READER_PEXT 0
#endif

/* One optional varint field `n` of a body read in field order.  Fields
 * are not checked against `end` one by one: a varint that runs past it
 * leaves p > end, and the final p == end check fails.  p moves at most 9
 * bytes per field and 11 fields are read at most, so no read goes more
 * than FAST_SLACK bytes past `end`. */
#define FAST_FIELD(n, var)                                                    \
    if (*p == TAG(n, WT_VARINT)) {                                            \
        p++;                                                                  \
        FAST_VARINT(var);                                                     \
    }
/* ... for a field that is nearly always there (a kernel's launch and
 * duration), laid out in line, not jumped to and back */
#define FAST_FIELD_L(n, var)                                                  \
    if (__builtin_expect(*p == TAG(n, WT_VARINT), 1)) {                       \
        p++;                                                                  \
        FAST_VARINT(var);                                                     \
    }
/* The same for a field that is one byte in practice (enums, thread ids,
 * correlation deltas): that test is well predicted and cheaper. */
#define FAST_FIELD1(n, var)                                                   \
    if (*p == TAG(n, WT_VARINT)) {                                            \
        p++;                                                                  \
        if (__builtin_expect(*p < 0x80, 1))                                   \
            var = *p++;                                                       \
        else                                                                  \
            FAST_VARINT(var);                                                 \
    }
/* ... and one that is nearly always there (the thread), in line */
#define FAST_FIELD1_L(n, var)                                                 \
    if (__builtin_expect(*p == TAG(n, WT_VARINT), 1)) {                       \
        p++;                                                                  \
        if (__builtin_expect(*p < 0x80, 1))                                   \
            var = *p++;                                                       \
        else                                                                  \
            FAST_VARINT(var);                                                 \
    }

/* A value the fast path stored into the event, read back from there: a
 * load where the compiler would otherwise keep its own copy of the value
 * through the record's fields, on the stack (no register is free). */
#define FAST_REREAD(lv) (*(const volatile __typeof__(lv) *)&(lv))

/* The reader's running values that the fast path changes, held in locals
 * by its callers (stores into the events could alias them in r, which
 * would make the compiler reload them after every field), and the last
 * thread id's tid: the fast path does not change the tables, and a
 * Thread record (the slow path) clears r's copy, so a thread's tid stays
 * what it was from one call of the hot path to the next (it was looked up
 * again at the start of every batch: a mispredict per 64 records). */
typedef struct {
    uint64_t corr, host_time, device_time;
    uint32_t thr, tid; /* thread 0 is never defined: tid 0 */
} fast_state;

static inline __attribute__((always_inline)) void fast_load(const vt_reader *r, fast_state *fs)
{
    fs->corr = r->corr;
    fs->host_time = r->host_time;
    fs->device_time = r->device_time;
    fs->thr = r->fast_thr;
    fs->tid = r->fast_tid;
}

static inline __attribute__((always_inline)) void fast_store(vt_reader *r, const fast_state *fs)
{
    r->corr = fs->corr;
    r->host_time = fs->host_time;
    r->device_time = fs->device_time;
    r->fast_thr = fs->thr;
    r->fast_tid = fs->tid;
}

static inline __attribute__((always_inline)) uint32_t fast_tid(const vt_reader *r, fast_state *fs, uint32_t thr)
{
    if (__builtin_expect(thr != fs->thr, 0)) {
        fs->thr = thr;
        fs->tid = tid_of(r, thr);
    }
    return fs->tid;
}

/* The end of an Alloc or Free on the hot path (the event zeroed before:
 * no frames, the stack is by id): the thread and its tid, the running
 * correlation id (moved by dc, unzigzagged) into *corr. */
static inline __attribute__((always_inline)) void fast_site(const vt_reader *r, fast_state *fs, vt_site *s,
                                                            uint64_t *corr, uint64_t thr, uint64_t dc)
{
    s->thread = (uint32_t)thr;
    s->tid = fast_tid(r, fs, (uint32_t)thr);
    fs->corr += dc;
    *corr = fs->corr;
}

/* The same into the event's field `dst`, converted by the cast `CAST`
 * (enums through int32_t, as the slow path does); left as it is (zeroed
 * before) when absent. */
#define FAST_SET(n, dst, CAST)                                                \
    if (*p == TAG(n, WT_VARINT)) {                                            \
        uint64_t v_;                                                          \
        p++;                                                                  \
        FAST_VARINT(v_);                                                      \
        dst = CAST(v_);                                                       \
    }
/* FAST_SET for a field that is nearly always there (an address, a size, a
 * stack): its decoding laid out in line, not jumped to and back. */
#define FAST_SET_L(n, dst, CAST)                                              \
    if (__builtin_expect(*p == TAG(n, WT_VARINT), 1)) {                       \
        uint64_t v_;                                                          \
        p++;                                                                  \
        FAST_VARINT(v_);                                                      \
        dst = CAST(v_);                                                       \
    }
#define FAST_SET1(n, dst, CAST)                                               \
    if (*p == TAG(n, WT_VARINT)) {                                            \
        uint64_t v_;                                                          \
        p++;                                                                  \
        if (__builtin_expect(*p < 0x80, 1))                                   \
            v_ = *p++;                                                        \
        else                                                                  \
            FAST_VARINT(v_);                                                  \
        dst = CAST(v_);                                                       \
    }

/* A correlation delta (zigzag, one byte in practice) into var, unzigzagged
 * where it is present: an absent one (a delta of 0, common) costs no
 * decoding at all. */
#define FAST_ZIGZAG1(n, var) FAST_SET1(n, var, (uint64_t)unzigzag)

/* Two consecutive fields n and n + 1 that are one byte each in practice
 * (an allocation's kind and API): both tags and both values in one 4-byte
 * compare, else one by one. */
#define FAST_SET1_PAIR(n, dst1, CAST1, dst2, CAST2)                           \
    {                                                                         \
        const uint32_t tags_ = TAG(n, WT_VARINT) | TAG(n + 1, WT_VARINT) << 16; \
        uint32_t pw_;                                                         \
        memcpy(&pw_, p, 4);                                                   \
        if (__builtin_expect((pw_ & 0x80ff80ffu) == tags_, 1)) {              \
            dst1 = CAST1(uint64_t)((pw_ >> 8) & 0xff);                        \
            dst2 = CAST2(uint64_t)(pw_ >> 24);                                \
            p += 4;                                                           \
        } else {                                                              \
            FAST_SET1(n, dst1, CAST1)                                         \
            FAST_SET1(n + 1, dst2, CAST2)                                     \
        }                                                                     \
    }

#define FAST_ATTR static inline __attribute__((always_inline))
#define FAST_NAME fast_record
#define FAST_VARINT FAST_VARINT_SHIFTS
#include "vt_reader_fast.h"
#undef FAST_ATTR
#undef FAST_NAME
#undef FAST_VARINT

#if VT_READER_PEXT
/* The same with pext: a varint of up to 8 bytes in ~8 instructions (find
 * the end, mask, pext) instead of ~20-40 for the shifts.  Only where pext
 * is fast: BMI2 and not AMD Zen 1/2 (microcoded there). */
#define FAST_ATTR static inline __attribute__((always_inline, target("bmi,bmi2")))
#define FAST_NAME fast_record_pext
#define FAST_VARINT FAST_VARINT_PEXT
#include "vt_reader_fast.h"
#undef FAST_ATTR
#undef FAST_NAME
#undef FAST_VARINT
#endif
#undef FAST_FIELD
#undef FAST_FIELD1
#undef FAST_FIELD1_L
#undef FAST_FIELD_L
#undef FAST_SET_L
#undef FAST_SET
#undef FAST_SET1
#undef FAST_SET1_PAIR
#undef FAST_ZIGZAG1
#undef FAST_VARINT_SHIFTS
#undef FAST_VARINT_PEXT
/* Decode one Record [p, end) into *ev.  Returns 1 (event), 0 (record
 * skipped: unknown body), VT_ERR_CORRUPT (r->why says why), VT_ERR_VERSION
 * (message in r->why) or VT_ERR_NOMEM. */

static int decode_record(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_event *ev)
{
    uint64_t ts = 0, cd = 0;
    uint32_t body = 0;
    const uint8_t *bp = NULL, *be = NULL;
    int has_corr = 0, rc = 0;

    while (p < end) {
        uint64_t tag, v;
        if (rd_varint_h(&p, end, r->hard, &tag))
            return why(r, "bad tag in Record");
        if (tag == TAG(1, WT_VARINT)) {
            if (rd_varint_h(&p, end, r->hard, &v))
                return why(r, "bad ts_delta varint");
            ts = v;
        } else if ((tag & 7) == WT_LEN && (tag >> 3) >= 2 &&
                   ((tag >> 3) < VT_EV__MAX || (tag >> 3) == VT_REC_KERNEL_BATCH ||
                    (tag >> 3) == VT_REC_KERNEL_BLOCK || (tag >> 3) == VT_REC_MEM_BLOCK)) {
            const uint8_t *q;
            size_t n;
            if (rd_len(&p, end, r->hard, &q, &n))
                return why(r, "Record body runs past the end of the record");
            body = (uint32_t)(tag >> 3);
            bp = q;
            be = q + n;
        } else if (skip_field(r, &p, end, tag, 0)) {
            return VT_ERR_CORRUPT;
        }
    }
    int64_t delta = unzigzag(ts);

    if (r->need_sync && body != VT_EV_SYNC)
        return why(r, "zstd frame does not start with a Sync record");
    if (!r->any_record && r->st.resyncs == 0 && body != VT_EV_HEADER) {
        snprintf(r->why, sizeof(r->why), "not a vramtrace trace: the first record is not a header (%s)",
                 body ? vt_evtype_name((vt_evtype)body) : "no body");
        return VT_ERR_VERSION;
    }

    ev->type = (vt_evtype)body;
    switch (body) {
    case VT_EV_KERNEL: {
        vt_ev_kernel *k = &ev->u.kernel;
        ZERO(k);
        rc = dec_kernel(r, bp, be, k, &cd);
        has_corr = 1;
        kernel_resolve(r, k);
        break;
    }
    case VT_REC_KERNEL_BATCH:
    case VT_REC_KERNEL_BLOCK:
        /* n kernels: the first now, the rest from vt_reader_next() */
        rc = (body == VT_REC_KERNEL_BLOCK ? vt_kblock_decode : vt_kbatch_decode)(
            &r->kb, bp, be, r->hard, &r->device_time, &r->corr, &r->st.unknown_fields, r->why, sizeof(r->why));
        if (rc)
            return rc;
        r->any_record = 1;
        if (!r->kb.left)
            return 0; /* empty */
        vt_kbatch_next(&r->kb, ev);
        kernel_resolve(r, &ev->u.kernel);
        return 1;
    case VT_REC_MEM_BLOCK:
        /* n allocations and frees: the first now, the rest from vt_reader_next() */
        rc = vt_mblock_decode(&r->mb, bp, be, r->hard, &r->host_time, &r->corr, &r->st.unknown_fields, r->why,
                              sizeof(r->why));
        if (rc)
            return rc;
        r->any_record = 1;
        for (uint32_t k = 0; k < r->mb.nctx; k++) { /* the contexts' threads: Thread records come before */
            vt_event *t = &r->mb.tmpl[k];
            vt_site *st = t->type == VT_EV_ALLOC ? &t->u.alloc.site : &t->u.free.site;
            st->tid = tid_of(r, st->thread);
        }
        return vt_mblock_take(&r->mb, ev, 1);
    case VT_EV_ALLOC:
        ZERO(&ev->u.alloc);
        rc = dec_alloc(r, bp, be, &ev->u.alloc, &cd);
        ev->u.alloc.site.tid = tid_of(r, ev->u.alloc.site.thread);
        has_corr = 1;
        break;
    case VT_EV_FREE:
        ZERO(&ev->u.free);
        rc = dec_free(r, bp, be, &ev->u.free, &cd);
        ev->u.free.site.tid = tid_of(r, ev->u.free.site.thread);
        has_corr = 1;
        break;
    case VT_EV_ALLOC_FAILED: {
        vt_ev_alloc_failed *a = &ev->u.alloc_failed;
        ZERO(a);
        rc = dec_alloc_failed(r, bp, be, a, &cd);
        a->error_name = str_get(r, a->error_name_id);
        a->site.tid = tid_of(r, a->site.thread);
        has_corr = 1;
        break;
    }
    case VT_EV_VMM_RESERVE:
    case VT_EV_VMM_ADDRESS_FREE:
    case VT_EV_VMM_UNMAP:
        ZERO(&ev->u.vmm_range);
        rc = dec_vmm_range(r, bp, be, &ev->u.vmm_range, &cd, body == VT_EV_VMM_RESERVE);
        ev->u.vmm_range.site.tid = tid_of(r, ev->u.vmm_range.site.thread);
        has_corr = 1;
        break;
    case VT_EV_VMM_CREATE:
        ZERO(&ev->u.vmm_create);
        rc = dec_vmm_create(r, bp, be, &ev->u.vmm_create, &cd);
        ev->u.vmm_create.site.tid = tid_of(r, ev->u.vmm_create.site.thread);
        has_corr = 1;
        break;
    case VT_EV_VMM_RELEASE:
        ZERO(&ev->u.vmm_release);
        rc = dec_vmm_release(r, bp, be, &ev->u.vmm_release, &cd);
        ev->u.vmm_release.site.tid = tid_of(r, ev->u.vmm_release.site.thread);
        has_corr = 1;
        break;
    case VT_EV_VMM_MAP:
        ZERO(&ev->u.vmm_map);
        rc = dec_vmm_map(r, bp, be, &ev->u.vmm_map, &cd);
        ev->u.vmm_map.site.tid = tid_of(r, ev->u.vmm_map.site.thread);
        has_corr = 1;
        break;
    case VT_EV_POOL:
        ZERO(&ev->u.pool);
        rc = dec_pool(r, bp, be, &ev->u.pool, &cd);
        ev->u.pool.site.tid = tid_of(r, ev->u.pool.site.thread);
        has_corr = 1;
        break;
    case VT_EV_POOL_USAGE:
        ZERO(&ev->u.pool_usage);
        rc = dec_pool_usage(r, bp, be, &ev->u.pool_usage);
        break;
    case VT_EV_NVTX: {
        vt_ev_nvtx *a = &ev->u.nvtx;
        ZERO(a);
        rc = dec_nvtx(r, bp, be, a);
        a->message = str_get(r, a->message_id);
        a->domain = str_get(r, a->domain_id);
        a->site.tid = tid_of(r, a->site.thread);
        break;
    }
    case VT_EV_MEMORY_USAGE:
        ZERO(&ev->u.memory_usage);
        rc = dec_memory_usage(r, bp, be, &ev->u.memory_usage);
        break;
    case VT_EV_DROPPED:
        ZERO(&ev->u.dropped);
        rc = dec_dropped(r, bp, be, &ev->u.dropped);
        ev->u.dropped.reason = str_get(r, ev->u.dropped.reason_id);
        break;
    case VT_EV_NOTE:
        ZERO(&ev->u.note);
        if (scratch_reserve(r, 2 * (size_t)(be - bp) + 16))
            return VT_ERR_NOMEM;
        rc = dec_note(r, bp, be, &ev->u.note);
        break;
    case VT_EV_END:
        ZERO(&ev->u.end);
        rc = dec_end(r, bp, be, &ev->u.end);
        if (!rc)
            r->st.complete = 1;
        break;
    case VT_EV_SYNC:
        ZERO(&ev->u.sync);
        rc = dec_sync(r, bp, be, &ev->u.sync);
        if (rc)
            break;
        r->host_time = ev->u.sync.time_ns;
        r->device_time = ev->u.sync.device_time_ns;
        r->corr = 0;
        r->need_sync = 0;
        if (r->have_seq && ev->u.sync.sequence != r->last_seq + 1)
            r->st.sync_gaps++;
        r->have_seq = 1;
        r->last_seq = ev->u.sync.sequence;
        ev->time_ns = r->host_time;
        return 1; /* its ts_delta is ignored */
    case VT_EV_STRING: {
        uint32_t id = 0;
        const uint8_t *s = (const uint8_t *)"";
        size_t len = 0;
        int dup;
        rc = dec_string(r, bp, be, &id, &s, &len);
        if (rc)
            break;
        str_slot *slot = tab_put(r, &r->strings, id, sizeof(str_slot), "String", &dup);
        if (!slot)
            return VT_ERR_CORRUPT; /* why set by tab_put */
        if (!dup) {
            const char *d = arena_str(r, s, len);
            if (!d)
                return why(r, "strings exceed the table limit");
            slot->id = id;
            slot->len = (uint32_t)len;
            slot->s = d;
            ev->u.string.value = d;
        } else {
            if (scratch_reserve(r, len + 1))
                return VT_ERR_NOMEM;
            ev->u.string.value = scratch_str(r, s, len);
        }
        ev->u.string.id = id;
        ev->u.string.len = len;
        break;
    }
    case VT_EV_FRAME: {
        vt_ev_frame f = {0};
        int dup;
        rc = dec_frame(r, bp, be, &f);
        if (rc)
            break;
        vt_ev_frame *slot = tab_put(r, &r->frames, f.id, sizeof(vt_ev_frame), "Frame", &dup);
        if (!slot)
            return VT_ERR_CORRUPT; /* why set by tab_put */
        if (!dup)
            *slot = f;
        ev->u.frame = f;
        break;
    }
    case VT_EV_STACK: {
        vt_ev_stack *a = &ev->u.stack;
        memset(a, 0, sizeof(*a));
        size_t max = (size_t)(be - bp);
        if (scratch_reserve(r, max * sizeof(uint32_t) + 16))
            return VT_ERR_NOMEM;
        rc = dec_stack(r, bp, be, a, (uint32_t *)r->scratch, max);
        if (rc)
            break;
        int dup;
        stack_slot *slot = tab_put(r, &r->stacks, a->id, sizeof(stack_slot), "Stack", &dup);
        if (!slot)
            return VT_ERR_CORRUPT; /* why set by tab_put */
        if (dup)
            break;
        uint64_t depth = a->nframes;
        uint32_t parent = 0;
        if (a->parent) {
            /* Only a parent defined earlier is linked, so chains never loop;
             * a parent lost in a damaged frame ends the stack. */
            const stack_slot *ps = tab_get(&r->stacks, a->parent, sizeof(stack_slot));
            if (a->parent == a->id)
                return why(r, "stack %u is its own parent", a->id);
            if (ps) {
                depth += ps->depth;
                parent = a->parent;
            }
        }
        if (depth > MAX_STACK_DEPTH)
            return why(r, "stack %u is deeper than %u frames", a->id, MAX_STACK_DEPTH);
        if ((uint64_t)r->sf_len + a->nframes > MAX_STACK_FRAMES_TOTAL)
            return why(r, "stacks exceed the table limit");
        if (r->sf_len + a->nframes > r->sf_cap) {
            uint64_t cap = r->sf_cap ? r->sf_cap : 4096;
            while (cap < (uint64_t)r->sf_len + a->nframes)
                cap *= 2;
            if (r->arena_bytes + (cap - r->sf_cap) * sizeof(uint32_t) > VT_READER_MAX_TABLE_BYTES)
                return why(r, "stacks exceed the table limit");
            r->arena_bytes += (cap - r->sf_cap) * sizeof(uint32_t);
            uint32_t *nf = realloc(r->stack_frames, cap * sizeof(uint32_t));
            if (!nf)
                return VT_ERR_NOMEM;
            r->stack_frames = nf;
            r->sf_cap = (uint32_t)cap;
        }
        if (a->nframes)
            memcpy(r->stack_frames + r->sf_len, a->frames, a->nframes * sizeof(uint32_t));
        slot->id = a->id;
        slot->n = a->nframes;
        slot->parent = parent;
        slot->depth = (uint32_t)depth;
        slot->off = r->sf_len;
        r->sf_len += a->nframes;
        break;
    }
    case VT_EV_THREAD: {
        vt_ev_thread t = {0};
        const uint8_t *nm = (const uint8_t *)"";
        size_t nl = 0;
        int dup;
        rc = dec_thread(r, bp, be, &t, &nm, &nl);
        if (rc)
            break;
        vt_ev_thread *slot = tab_put(r, &r->threads, t.id, sizeof(vt_ev_thread), "Thread", &dup);
        r->fast_thr = r->fast_tid = 0; /* the hot path looks its thread up again */
        if (!slot)
            return VT_ERR_CORRUPT; /* why set by tab_put */
        if (!dup) {
            t.name = arena_str(r, nm, nl);
            if (!t.name)
                return why(r, "threads exceed the table limit");
            *slot = t;
        } else {
            if (scratch_reserve(r, nl + 1))
                return VT_ERR_NOMEM;
            t.name = scratch_str(r, nm, nl);
        }
        ev->u.thread = t;
        break;
    }
    case VT_EV_MODULE: {
        vt_ev_module m = {0};
        module_raw mr = {(const uint8_t *)"", (const uint8_t *)"", 0, 0};
        int dup;
        rc = dec_module(r, bp, be, &m, &mr);
        if (rc)
            break;
        vt_ev_module *slot = tab_put(r, &r->modules, m.id, sizeof(vt_ev_module), "Module", &dup);
        if (!slot)
            return VT_ERR_CORRUPT; /* why set by tab_put */
        m.build_id_len = (uint32_t)mr.build_id_len;
        if (!dup) {
            m.path = arena_str(r, mr.path, mr.path_len);
            m.build_id = (const uint8_t *)arena_str(r, mr.build_id, mr.build_id_len);
            if (!m.path || !m.build_id)
                return why(r, "modules exceed the table limit");
            *slot = m;
        } else {
            if (scratch_reserve(r, mr.path_len + mr.build_id_len + 2))
                return VT_ERR_NOMEM;
            m.path = scratch_str(r, mr.path, mr.path_len);
            m.build_id = (const uint8_t *)scratch_str(r, mr.build_id, mr.build_id_len);
        }
        ev->u.module = m;
        break;
    }
    case VT_EV_LAUNCH: {
        vt_ev_launch l = {0};
        int dup;
        rc = dec_launch(r, bp, be, &l);
        if (rc)
            break;
        launch_slot *slot = tab_put(r, &r->launches, l.id, sizeof(launch_slot), "Launch", &dup);
        if (!slot)
            return VT_ERR_CORRUPT; /* why set by tab_put */
        if (!dup) {
            slot->id = l.id;
            slot->l = l;
            vt_ev_kernel *t = &slot->k;
            t->name = str_get(r, l.name);
            t->name_id = l.name;
            t->device = l.device;
            t->stream = l.stream;
            memcpy(t->grid, l.grid, sizeof(t->grid));
            memcpy(t->block, l.block, sizeof(t->block));
            t->shared_memory = l.shared_memory;
            t->graph = l.graph;
        }
        ev->u.launch = l;
        break;
    }
    case VT_EV_DEVICE: {
        vt_ev_device d;
        device_raw dr = {(const uint8_t *)"", NULL, (const uint8_t *)"", 0, 0, 0};
        memset(&d, 0, sizeof(d));
        rc = dec_device(r, bp, be, &d, &dr);
        if (rc)
            break;
        if (dr.uuid)
            memcpy(d.uuid, dr.uuid, dr.uuid_len < 16 ? dr.uuid_len : 16);
        if (d.index >= MAX_DEVICES)
            return why(r, "device index %u out of range", d.index);
        if (!r->devices) {
            r->devices = calloc(MAX_DEVICES, sizeof(dev_slot));
            if (!r->devices)
                return VT_ERR_NOMEM;
        }
        dev_slot *slot = &r->devices[d.index];
        if (!slot->defined) {
            d.name = arena_str(r, dr.name, dr.name_len);
            d.pci_bus_id = arena_str(r, dr.pci, dr.pci_len);
            if (!d.name || !d.pci_bus_id)
                return why(r, "devices exceed the table limit");
            slot->defined = 1;
            slot->d = d;
        } else {
            if (scratch_reserve(r, dr.name_len + dr.pci_len + 2))
                return VT_ERR_NOMEM;
            d.name = scratch_str(r, dr.name, dr.name_len);
            d.pci_bus_id = scratch_str(r, dr.pci, dr.pci_len);
        }
        ev->u.device = d;
        break;
    }
    case VT_EV_HEADER: {
        vt_ev_header *h = &ev->u.header;
        int first = !r->have_header;
        memset(h, 0, sizeof(*h));
        rc = dec_header(r, bp, be, h, first);
        if (rc)
            break;
        if (first) {
            if (h->magic != VT_FORMAT_MAGIC) {
                snprintf(r->why, sizeof(r->why), "not a vramtrace trace: bad magic 0x%08x in the header (expected 0x%08x)",
                         h->magic, VT_FORMAT_MAGIC);
                return VT_ERR_VERSION;
            }
            if (h->format_version < VT_FORMAT_VERSION_MIN || h->format_version > VT_FORMAT_VERSION) {
                snprintf(r->why, sizeof(r->why),
                         "unsupported format version %u (this vramtrace reads versions %u to %u)",
                         h->format_version, VT_FORMAT_VERSION_MIN, VT_FORMAT_VERSION);
                return VT_ERR_VERSION;
            }
            r->header = *h;
            r->have_header = 1;
        } else {
            /* a second header (concatenated traces): strings not kept */
            h->argv = NULL;
            h->argc = 0;
            h->env_names = h->env_values = NULL;
            h->nenv = 0;
        }
        break;
    }
    default:
        /* a record kind from a newer format version: skip it, keep the clock */
        r->host_time += (uint64_t)delta;
        r->st.unknown_records++;
        r->any_record = 1;
        return 0;
    }
    if (rc)
        return rc;
    if (has_corr) {
        r->corr += cd ? (uint64_t)unzigzag(cd) : 0;
        /* every corr-bearing struct keeps `corr` where the decoder put it */
        switch (body) {
        case VT_EV_KERNEL: ev->u.kernel.corr = r->corr; break;
        case VT_EV_ALLOC: ev->u.alloc.corr = r->corr; break;
        case VT_EV_FREE: ev->u.free.corr = r->corr; break;
        case VT_EV_ALLOC_FAILED: ev->u.alloc_failed.corr = r->corr; break;
        case VT_EV_VMM_CREATE: ev->u.vmm_create.corr = r->corr; break;
        case VT_EV_VMM_RELEASE: ev->u.vmm_release.corr = r->corr; break;
        case VT_EV_VMM_MAP: ev->u.vmm_map.corr = r->corr; break;
        case VT_EV_POOL: ev->u.pool.corr = r->corr; break;
        default: ev->u.vmm_range.corr = r->corr; break;
        }
    }
    if (body == VT_EV_KERNEL) {
        r->device_time += (uint64_t)delta;
        ev->time_ns = r->device_time;
    } else {
        r->host_time += (uint64_t)delta;
        ev->time_ns = r->host_time;
    }
    return 1;
}

/* ---- frames and the main loop ---------------------------------------- */

static void drop_frame(vt_reader *r)
{
    ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
    r->in_frame = 0;
    r->careful = 0;
    r->careful_skip = 0;
    r->rpos = r->rend = 0;
    r->zerr = 0;
}

/* A recoverable error: report it, and on the next call resume after the
 * damage.  If zstd can still decode the frame, its rest is discarded
 * (ST_DISCARD); otherwise the input is scanned for the next zstd magic from
 * one byte past the start of the damaged frame. */
static int corrupt(vt_reader *r, int code, int zstd_ok, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int corrupt(vt_reader *r, int code, int zstd_ok, const char *fmt, ...)
{
    int n = snprintf(r->err, sizeof(r->err), "%s: ", r->name);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < sizeof(r->err))
        vsnprintf(r->err + n, sizeof(r->err) - (size_t)n, fmt, ap);
    va_end(ap);
    r->last_err = code;
    r->st.resyncs++;
    if (r->stable && r->in_frame)
        r->rpos = r->rend; /* zstd writes on at rend: raw must not move */
    else
        r->rpos = r->rend = 0;
    if (zstd_ok && r->in_frame) {
        r->state = ST_DISCARD;
        r->skip_hw = r->in_pos;
    } else if (zstd_ok) {
        r->state = ST_READ; /* the frame ended cleanly: the next starts at in_pos */
    } else {
        drop_frame(r);
        r->state = ST_RESYNC;
        r->resync_from = r->frame_start + 1;
        r->skip_from = r->frame_start;
    }
    r->need_sync = 1;
    return code;
}

static int resync(vt_reader *r)
{
    static const uint8_t magic[4] = {0x28, 0xB5, 0x2F, 0xFD};
    uint64_t pos = r->resync_from;
    drop_frame(r);
    for (;;) {
        const uint8_t *p = NULL;
        size_t n = 0;
        uint64_t at = pos;
        int rc = in_peek(r, &at, 4, &p, &n);
        if (rc)
            return rc;
        if (at > pos) /* a pipe moved us forward */
            pos = at;
        if (n < 4) {
            if (pos + n > r->skip_from)
                r->st.skipped_bytes += (pos + n) - r->skip_from;
            r->in_pos = pos + n;
            r->state = ST_READ;
            return 0;
        }
        const uint8_t *m = memmem(p, n, magic, 4);
        if (m) {
            uint64_t found = pos + (uint64_t)(m - p);
            if (found > r->skip_from)
                r->st.skipped_bytes += found - r->skip_from;
            r->in_pos = found;
            r->state = ST_READ;
            return 0;
        }
        pos += n - 3;
    }
}

/* Leave whole-frame decoding for this frame: decode it again from its
 * start the streaming way, dropping the bytes already produced (the
 * careful_skip mechanism).  For a frame larger than raw (then for the rest
 * of the stream: disable), and for any zstd error, which the streaming
 * way then finds again and reports as always. */
static void stable_fallback(vt_reader *r, int disable)
{
    size_t keep = r->rend - r->rpos;
    memmove(r->raw, r->raw + r->rpos, keep);
    r->raw_base += r->rpos;
    r->careful_skip = r->raw_base + keep; /* = bytes of the frame produced */
    r->rpos = 0;
    r->rend = keep;
    while (r->bcap < keep + RAW_MIN_FREE && r->bcap < r->rcap)
        r->bcap *= 2;
    if (r->bcap > r->rcap)
        r->bcap = r->rcap;
    ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
    r->zmode = ZSTD_isError(ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_stableOutBuffer, 0));
    r->stable = 0;
    if (disable || r->zmode)
        r->stable_ok = 0;
    r->in_pos = r->frame_start;
    r->zerr = 0;
}

/* decompress_more() for a frame decoded whole: zstd writes straight into
 * raw (no copy out of its window), which holds the frame from its first
 * byte: nothing moves until the frame ends. */
static int decompress_stable(vt_reader *r, size_t need)
{
    size_t start_end = r->rend;
    for (;;) {
        if (need > r->rcap - r->rpos || r->rend == r->rcap) {
            stable_fallback(r, 1); /* the frame does not fit */
            return 0;
        }
        const uint8_t *p;
        size_t n;
        uint64_t at = r->in_pos;
        int rc = in_peek(r, &at, 1, &p, &n);
        if (rc)
            return rc;
        if (n > STABLE_IN_STEP)
            n = STABLE_IN_STEP;
        ZSTD_inBuffer in = {p, n, 0};
        ZSTD_outBuffer out = {r->raw, r->rcap, r->rend};
        size_t ret = ZSTD_decompressStream(r->dctx, &out, &in);
        if (ZSTD_isError(ret)) {
            stable_fallback(r, 0);
            return 0;
        }
        size_t got = out.pos - r->rend;
        r->in_pos += in.pos;
        if (r->in_pos > r->in_counted) {
            r->st.bytes_in += r->in_pos - r->in_counted;
            r->in_counted = r->in_pos;
        }
        r->st.bytes_raw += got;
        r->rend += got;
        if (ret == 0) {
            r->in_frame = 0;
            return 0;
        }
        if (r->rend - r->rpos >= need)
            return 0;
        if (n == 0 && r->rend == start_end)
            return set_final(r, VT_ERR_TRUNCATED, "truncated at offset %llu (inside a zstd frame starting at offset %llu)",
                             (unsigned long long)r->in_pos, (unsigned long long)r->frame_start);
        start_end = r->rend;
    }
}

/* Decompress more of the current frame so that `need` bytes are available
 * at raw + rpos.  Returns 0 (progress, or the frame ended: in_frame = 0),
 * or a final error code. */
static int decompress_more(vt_reader *r, size_t need)
{
    if (r->stable)
        return decompress_stable(r, need);
    if (r->rpos && (need > r->bcap - r->rpos || r->bcap - r->rend < RAW_MIN_FREE)) {
        size_t keep = r->rend - r->rpos;
        memmove(r->raw, r->raw + r->rpos, keep);
        r->raw_base += r->rpos;
        r->rpos = 0;
        r->rend = keep;
    }
    if (need > r->bcap) {
        size_t cap = r->bcap;
        while (cap < need)
            cap *= 2;
        if (cap > r->rcap) {
            uint8_t *nr = realloc(r->raw, cap);
            if (!nr)
                return set_final(r, VT_ERR_NOMEM, "out of memory for a %zu-byte record", need);
            r->raw = nr;
            r->rcap = cap;
        }
        r->bcap = cap;
    }
    size_t start_end = r->rend;
    for (;;) {
        const uint8_t *p = NULL;
        size_t n = 0;
        uint64_t at = r->in_pos;
        int rc = in_peek(r, &at, 1, &p, &n);
        if (rc)
            return rc;
        if (r->careful && n > 1)
            n = 1;
        ZSTD_inBuffer in = {p, n, 0};
        ZSTD_outBuffer out = {r->raw, r->bcap, r->rend};
        size_t ret = ZSTD_decompressStream(r->dctx, &out, &in);
        size_t got = out.pos - r->rend;
        if (r->careful_skip && got) { /* decoded before the damage was found: already out */
            size_t d = got < r->careful_skip ? got : (size_t)r->careful_skip;
            memmove(r->raw + r->rend, r->raw + r->rend + d, got - d);
            r->careful_skip -= d;
            got -= d;
        }
        r->in_pos += in.pos;
        if (r->in_pos > r->in_counted) {
            r->st.bytes_in += r->in_pos - r->in_counted;
            r->in_counted = r->in_pos;
        }
        r->st.bytes_raw += got;
        r->rend += got;
        if (ZSTD_isError(ret)) {
            r->zerr = ret;
            r->zerr_at = r->in_pos; /* exact when careful; else somewhere in [in_pos, in_pos + n) */
            return 0;
        }
        if (ret == 0) {
            r->in_frame = 0;
            return 0;
        }
        if (r->rend - r->rpos >= need)
            return 0;
        if (n == 0 && r->rend == start_end) {
            /* end of input inside the frame: every complete record is out */
            return set_final(r, VT_ERR_TRUNCATED, "truncated at offset %llu (inside a zstd frame starting at offset %llu)",
                             (unsigned long long)r->in_pos, (unsigned long long)r->frame_start);
        }
        start_end = r->rend;
    }
}

/* zstd failed somewhere in the input of one call, and reports neither where
 * nor the output of the blocks it decoded before the damage.  Decode the
 * frame again one input byte at a time (slow, rare), dropping the output
 * already delivered, so that every block before the damage comes out and
 * the error gets its exact offset.  Returns 0 if that started, -1 if the
 * input cannot go back (a pipe): report the error at once. */
static int zstd_go_careful(vt_reader *r)
{
    const uint8_t *p;
    size_t n;
    uint64_t at = r->frame_start;
    /* Not for a frame found by scanning that has not shown its Sync yet:
     * likely garbage, and re-decoding every such candidate would make a
     * crafted file cost quadratic time. */
    if (r->careful || r->need_sync || in_peek(r, &at, 1, &p, &n) || at != r->frame_start)
        return -1;
    ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
    r->careful = 1;
    r->careful_skip = r->raw_base + r->rend; /* decompressed bytes of this frame already produced */
    r->zerr = 0;
    r->in_pos = r->frame_start;
    return 0;
}

/* Between frames: start the next one, or end the stream. */
static int begin_frame(vt_reader *r)
{
    const uint8_t *p;
    size_t n;
    uint64_t at = r->in_pos;
    int rc = in_peek(r, &at, 4, &p, &n);
    if (rc)
        return rc;
    r->in_pos = at;
    if (n == 0) {
        if (r->st.complete) {
            r->state = ST_EOF;
            return 0;
        }
        if (r->in_pos == 0)
            return set_final(r, VT_ERR_TRUNCATED, "truncated at offset 0 (empty file: no header)");
        return set_final(r, VT_ERR_TRUNCATED, "truncated at offset %llu (no end record: %s)",
                         (unsigned long long)r->in_pos,
                         r->st.resyncs ? "lost in damaged data, or the traced process did not finish writing"
                                       : "the traced process did not finish writing");
    }
    if (n < 4) {
        static const uint8_t zmagic[4] = {0x28, 0xB5, 0x2F, 0xFD};
        if (r->in_pos == 0 && memcmp(p, zmagic, n))
            return set_final(r, VT_ERR_VERSION, "not a vramtrace trace (only %zu bytes, not a zstd stream)", n);
        return set_final(r, VT_ERR_TRUNCATED, "truncated at offset %llu (inside a zstd frame header at offset %llu)",
                         (unsigned long long)(r->in_pos + n), (unsigned long long)r->in_pos);
    }
    uint32_t m = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    int skippable = (m & ZSTD_MAGIC_SKIPPABLE_MASK) == ZSTD_MAGIC_SKIPPABLE_START;
    if (m != ZSTD_MAGICNUMBER && !skippable) {
        if (r->in_pos == 0)
            return set_final(r, VT_ERR_VERSION, "not a vramtrace trace (not a zstd stream: starts with %02x %02x %02x %02x)",
                             p[0], p[1], p[2], p[3]);
        r->frame_start = r->in_pos;
        return corrupt(r, VT_ERR_CORRUPT, 0, "corrupt data at offset %llu: no zstd frame starts there",
                       (unsigned long long)r->in_pos);
    }
    r->frame_start = r->in_pos;
    r->in_frame = 1;
    r->careful = 0;
    r->careful_skip = 0;
    r->raw_base = 0;
    r->rpos = r->rend = 0;
    r->stable = 0;
    if (r->stable_ok && r->rcap < RAW_STABLE) {
        uint8_t *nr = realloc(r->raw, RAW_STABLE);
        if (nr) {
            r->raw = nr;
            r->rcap = RAW_STABLE;
        } else {
            r->stable_ok = 0;
        }
    }
    if (r->stable_ok != r->zmode) {
        ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
        if (ZSTD_isError(ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_stableOutBuffer, r->stable_ok)))
            r->stable_ok = 0; /* this zstd cannot: streaming, as before */
        else
            r->zmode = r->stable_ok;
    }
    r->stable = r->stable_ok && r->zmode;
    if (!skippable)
        r->st.frames++;
    return 0;
}

static int next_slow(vt_reader *r, vt_event *ev) __attribute__((noinline));
static int next_slow_(vt_reader *r, vt_event *ev);

/* Hot path: the rest of a KernelBatch, or a whole short entry in the
 * buffer with FAST_SLACK bytes after it, in a frame in sync (r->fast, set
 * by next_slow). */
#define NEXT_BODY(FAST_RECORD)                                                \
    do {                                                                      \
        if (r->kb.left) { /* the rest of a KernelBatch */                     \
            vt_kbatch_next(&r->kb, ev);                                       \
            kernel_resolve(r, &ev->u.kernel);                                 \
            return 1;                                                         \
        }                                                                     \
        if (r->mb.left) { /* the rest of a MemBlock */                        \
            return vt_mblock_take(&r->mb, ev, 1);                             \
        }                                                                     \
        const uint8_t *p = r->raw + r->rpos, *pe = r->raw + r->rend;          \
        if (__builtin_expect(r->fast && pe - p >= 2 + FAST_SLACK && p[0] == 0x0A && p[1] < 0x80 && \
                                 pe - p >= 2 + FAST_SLACK + p[1], 1)) {       \
            fast_state fs_;                                                   \
            fast_load(r, &fs_);                                               \
            if (FAST_RECORD(r, &fs_, p + 2, p + 2 + p[1], ev)) {              \
                fast_store(r, &fs_);                                          \
                r->rpos += 2 + (size_t)p[1];                                  \
                r->st.records++;                                              \
                return 1;                                                     \
            }                                                                 \
        }                                                                     \
        return next_slow(r, ev);                                              \
    } while (0)

/* Up to max pending kernels of a KernelBlock or KernelBatch (r->kb.left >
 * 0) into ev: vt_kbatch_next() and kernel_resolve() for each, with the
 * columns, the count and the launch table in locals (the stores into the
 * events could alias the fields of r, which the compiler reloaded for
 * every kernel). */
static inline __attribute__((always_inline)) int kb_drain(vt_reader *r, vt_event *ev, int max)
{
    const uint32_t left = r->kb.left, take = left < (uint32_t)max ? left : (uint32_t)max;
    const size_t i0 = r->kb.n - left;
    const uint64_t *const start = r->kb.start + i0, *const launch = r->kb.launch + i0;
    const uint64_t *const dur = r->kb.dur + i0, *const corr = r->kb.corr + i0, *const graph = r->kb.graph + i0;
    const vt_table lt = r->launches;
    /* tab_get's two bounds (id != 0, id < cap) as one: id - 1 < cap - 1 */
    const uint32_t lt_top = lt.cap ? lt.cap - 1 : 0;
    for (uint32_t j = 0; j < take; j++) {
        vt_event *e = &ev[j];
        vt_ev_kernel *k = &e->u.kernel;
        e->type = VT_EV_KERNEL;
        e->time_ns = start[j];
        const uint32_t id = (uint32_t)launch[j];
        const launch_slot *ls = NULL;
        if (id - 1 < lt_top) {
            const launch_slot *s = (const launch_slot *)(lt.v + (size_t)id * sizeof(launch_slot));
            if (s->id == id)
                ls = s;
        }
        memcpy(k, ls ? &ls->k : &kernel_none, KERNEL_HEAD); /* kernel_resolve */
        if (__builtin_expect(ls && !k->name && k->name_id, 0)) /* its String came late */
            k->name = str_get(r, k->name_id);
        k->launch_id = id;
        k->duration_ns = dur[j];
        k->corr = corr[j];
        k->graph_id = graph[j];
    }
    r->kb.left = left - take;
    return (int)take;
}

/* Bytes from a record's start that the batch loop needs readable: its two
 * bytes of entry, at most 127 of Record (a one-byte length) and
 * FAST_SLACK; so that a start at most BATCH_ROOM before the end is the
 * only bound checked per record (the records in the last BATCH_ROOM bytes
 * of raw, a few per refill, take the slow path). */
#define BATCH_ROOM (2 + 127 + FAST_SLACK)

/* Up to max events: the rest of a KernelBatch, then the hot path in a
 * loop over a local cursor (r's position, record count and running values
 * written back once it stops); a record of the slow path (definitions,
 * a KernelBlock or KernelBatch, a refill of raw, errors) only as the first
 * event, alone, so that its pointers into the per-record scratch stay
 * valid and its errors come as from vt_reader_next(). */
#define BATCH_BODY(FAST_RECORD)                                               \
    do {                                                                      \
        int n = r->kb.left ? kb_drain(r, ev, max) : r->mb.left ? vt_mblock_take(&r->mb, ev, max) : 0; \
        if (n == max)                                                         \
            return n;                                                         \
        if (__builtin_expect(r->fast && r->rpos + BATCH_ROOM <= r->rend, 1)) { \
            const uint8_t *const raw = r->raw;                                \
            const uint8_t *p = raw + r->rpos;                                 \
            const uint8_t *const lim = raw + r->rend - BATCH_ROOM;            \
            /* the next event and the end: two registers (not ev, n, max) */ \
            vt_event *e = ev + n, *const e_end = ev + max;                    \
            fast_state fs_;                                                   \
            fast_load(r, &fs_);                                               \
            /* the record's end taken once: a store into the event may   \
             * alias raw (uint8_t), so p[1] read again after it would be a \
             * load and an add more per record */                         \
            while (e < e_end && p <= lim && p[0] == 0x0A && p[1] < 0x80) {    \
                const uint8_t *const q_ = p + 2 + p[1];                       \
                if (!FAST_RECORD(r, &fs_, p + 2, q_, e))                      \
                    break;                                                    \
                p = q_;                                                       \
                e++;                                                          \
            }                                                                 \
            fast_store(r, &fs_);                                              \
            r->rpos = (size_t)(p - raw);                                      \
            r->st.records += (uint64_t)(e - (ev + n));                        \
            n = (int)(e - ev);                                                \
        }                                                                     \
        if (n)                                                                \
            return n;                                                         \
        return next_slow(r, ev);                                              \
    } while (0)

#if VT_READER_PEXT
static __attribute__((noinline, target("bmi,bmi2"))) int next_pext(vt_reader *r, vt_event *ev)
{
    NEXT_BODY(fast_record_pext);
}

/* The batch loops start on a cache line (aligned(64)), here and in the
 * replay's vt_proc_feed_batch: a change of code size elsewhere no longer
 * moves their hot loops within a line, which alone moved a timing series
 * by ~5 % (BENCHMARKS.md, `## analyze`, the replay's notes). */
static __attribute__((noinline, target("bmi,bmi2"), aligned(64))) int next_batch_pext(vt_reader *r, vt_event *ev,
                                                                                      int max)
{
    BATCH_BODY(fast_record_pext);
}
#endif

int vt_reader_next(vt_reader *r, vt_event *ev)
{
#if VT_READER_PEXT
    if (r->pext)
        return next_pext(r, ev); /* a jump: no frame of its own */
#endif
    NEXT_BODY(fast_record);
}

__attribute__((aligned(64))) int vt_reader_next_batch(vt_reader *r, vt_event *ev, int max)
{
    if (max <= 0)
        return VT_ERR_INVALID;
#if VT_READER_PEXT
    if (r->pext)
        return next_batch_pext(r, ev, max);
#endif
    BATCH_BODY(fast_record);
}
#undef BATCH_BODY
#undef BATCH_ROOM
#undef NEXT_BODY

static int next_slow(vt_reader *r, vt_event *ev)
{
    int rc = next_slow_(r, ev);
    /* the hot path of vt_reader_next() only for a frame in sync */
    r->fast = rc == 1 && r->state == ST_READ && r->any_record && !r->need_sync;
    return rc;
}

static int next_slow_(vt_reader *r, vt_event *ev)
{
    for (;;) {
        switch (r->state) {
        case ST_FINAL:
            return r->last_err;
        case ST_EOF:
            return 0;
        case ST_RESYNC: {
            int rc = resync(r);
            if (rc)
                return rc;
            continue;
        }
        case ST_DISCARD:
            if (r->zerr) {
                drop_frame(r);
                r->state = ST_RESYNC;
                r->resync_from = r->frame_start + 1;
                /* bytes before were counted while discarding */
                r->skip_from = r->in_pos > r->skip_hw ? r->in_pos : r->skip_hw;
                continue;
            }
            if (!r->in_frame) {
                r->state = ST_READ;
                continue;
            }
            {
                int rc;
                if (r->stable) {
                    /* raw holds the frame from its start: drop, never move */
                    r->rpos = r->rend;
                    rc = decompress_more(r, 1);
                    if (r->stable)
                        r->rpos = r->rend;
                    else
                        r->rpos = r->rend = 0;
                } else {
                    r->rpos = r->rend = 0;
                    rc = decompress_more(r, r->bcap);
                    r->rpos = r->rend = 0;
                }
                /* input passed over; a stable_fallback() reads some again */
                if (r->in_pos > r->skip_hw) {
                    r->st.skipped_bytes += r->in_pos - r->skip_hw;
                    r->skip_hw = r->in_pos;
                }
                if (rc)
                    return rc;
            }
            continue;
        default:
            break;
        }

        size_t avail = r->rend - r->rpos;
        size_t need = 2;
        if (avail >= 2) {
            const uint8_t *p = r->raw + r->rpos, *pe = p + avail;
            const uint8_t *q = p + 1;
            uint64_t len;
            if (__builtin_expect(p[0] == 0x0A, 1)) {
                if (rd_varint(&q, pe, &len)) {
                    if (avail >= 11)
                        return corrupt(r, VT_ERR_CORRUPT, 1,
                                       "corrupt record at offset %llu (frame starting at offset %llu, decompressed byte %llu): bad record length",
                                       (unsigned long long)r->in_pos, (unsigned long long)r->frame_start,
                                       (unsigned long long)(r->raw_base + r->rpos));
                    need = 11;
                } else if (len > VT_READER_MAX_RECORD) {
                    return corrupt(r, VT_ERR_TOO_LARGE, 1,
                                   "corrupt record at offset %llu (frame starting at offset %llu, decompressed byte %llu): record length %llu exceeds the %u-byte limit",
                                   (unsigned long long)r->in_pos, (unsigned long long)r->frame_start,
                                   (unsigned long long)(r->raw_base + r->rpos), (unsigned long long)len,
                                   VT_READER_MAX_RECORD);
                } else {
                    size_t hl = (size_t)(q - p);
                    need = hl + (size_t)len;
                    if (need <= avail) {
                        r->hard = pe;
                        int rc = decode_record(r, q, q + len, ev);
                        if (__builtin_expect(rc == 1, 1)) {
                            r->rpos += need;
                            r->st.records++;
                            r->any_record = 1;
                            return 1;
                        }
                        if (rc == 0) {
                            r->rpos += need;
                            r->st.records++;
                            continue;
                        }
                        if (rc == VT_ERR_VERSION)
                            return set_final(r, rc, "%s", r->why);
                        if (rc == VT_ERR_NOMEM)
                            return set_final(r, rc, "out of memory");
                        return corrupt(r, rc, 1,
                                       "corrupt record at offset %llu (frame starting at offset %llu, decompressed byte %llu): %s",
                                       (unsigned long long)r->in_pos, (unsigned long long)r->frame_start,
                                       (unsigned long long)(r->raw_base + r->rpos), r->why);
                    }
                }
            } else {
                /* A Trace field other than `record`: from a newer writer, or damage. */
                uint64_t tag;
                q = p;
                if (rd_varint(&q, pe, &tag)) {
                    if (avail >= 10)
                        goto bad_entry;
                    need = avail + 1;
                } else if ((tag >> 3) == 1 || (tag >> 3) == 0 || (tag & 7) == WT_SGROUP ||
                           (tag & 7) == WT_EGROUP || (tag & 7) > WT_I32) {
                    goto bad_entry;
                } else {
                    const uint8_t *s = q;
                    uint64_t skip = 0;
                    int ok = 1;
                    switch (tag & 7) {
                    case WT_VARINT: ok = !rd_varint(&s, pe, &skip); skip = 0; break;
                    case WT_I64: skip = 8; break;
                    case WT_I32: skip = 4; break;
                    case WT_LEN: ok = !rd_varint(&s, pe, &skip); break;
                    }
                    if (!ok) {
                        if (avail >= 20)
                            goto bad_entry;
                        need = avail + 1;
                    } else if (skip > VT_READER_MAX_RECORD) {
                        goto bad_entry;
                    } else {
                        need = (size_t)(s - p) + (size_t)skip;
                        if (need <= avail) {
                            r->rpos += need;
                            r->st.unknown_fields++;
                            continue;
                        }
                    }
                }
            }
        }
        /* not enough bytes for the next entry */
        if (r->zerr) {
            size_t e = r->zerr;
            if (zstd_go_careful(r) == 0)
                continue;
            if (r->state == ST_FINAL)
                return r->last_err;
            return corrupt(r, VT_ERR_CORRUPT, 0, "corrupt zstd frame at offset %llu (frame starting at offset %llu): %s",
                           (unsigned long long)r->zerr_at, (unsigned long long)r->frame_start,
                           ZSTD_getErrorName(e));
        }
        if (r->in_frame) {
            int rc = decompress_more(r, need);
            if (rc)
                return rc;
            continue;
        }
        if (avail)
            return corrupt(r, VT_ERR_CORRUPT, 1,
                           "corrupt record at offset %llu (frame starting at offset %llu, decompressed byte %llu): a record crosses the end of its zstd frame",
                           (unsigned long long)r->in_pos, (unsigned long long)r->frame_start,
                           (unsigned long long)(r->raw_base + r->rpos));
        int rc = begin_frame(r);
        if (rc)
            return rc;
        continue;
    bad_entry:
        return corrupt(r, VT_ERR_CORRUPT, 1,
                       "corrupt record at offset %llu (frame starting at offset %llu, decompressed byte %llu): expected a record (byte 0x0a), found 0x%02x",
                       (unsigned long long)r->in_pos, (unsigned long long)r->frame_start,
                       (unsigned long long)(r->raw_base + r->rpos), r->raw[r->rpos]);
    }
}

/* ---- lifetime and lookups ------------------------------------------- */

static int reader_new(vt_reader **out, const char *name)
{
    vt_reader *r = calloc(1, sizeof(*r));
    if (!r)
        return VT_ERR_NOMEM;
    r->fd = -1;
    snprintf(r->name, sizeof(r->name), "%s", name ? name : "<memory>");
    r->dctx = ZSTD_createDCtx();
    r->raw = malloc(RAW_INIT);
    r->rcap = r->bcap = RAW_INIT;
    if (!r->dctx || !r->raw) {
        vt_reader_free(r);
        return VT_ERR_NOMEM;
    }
    ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_windowLogMax, VT_READER_WINDOW_LOG_MAX);
    r->state = ST_READ;
#if VT_READER_PEXT
    /* VT_READER_NO_PEXT=1: the shift-based decoder everywhere (tests run
     * both); pext is microcoded, slow, on AMD Zen 1 and 2 */
    const char *np = getenv("VT_READER_NO_PEXT");
    __builtin_cpu_init();
    r->pext = !(np && *np == '1') && __builtin_cpu_supports("bmi2") && !__builtin_cpu_is("znver1") &&
              !__builtin_cpu_is("znver2");
    r->kb.pext = r->pext;
#endif
    *out = r;
    return 0;
}

int vt_reader_open_mem(vt_reader **out, const void *data, size_t size, const char *name)
{
    *out = NULL;
    vt_reader *r;
    int rc = reader_new(&r, name);
    if (rc)
        return rc;
    r->mem = data ? data : (const uint8_t *)"";
    r->mem_size = data ? size : 0;
    r->stable_ok = 1;
    *out = r;
    return 0;
}

int vt_reader_open(vt_reader **out, const char *path, char *errmsg, size_t errmsg_len)
{
    vt_reader *r = NULL;
    struct stat sb;
    int rc;
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        rc = errno == ENOENT ? VT_ERR_NOT_FOUND : VT_ERR_IO;
        if (errmsg && errmsg_len)
            snprintf(errmsg, errmsg_len, "%s: %s", path, strerror(errno));
        return rc;
    }
    if (fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        if (errmsg && errmsg_len)
            snprintf(errmsg, errmsg_len, "%s: is a directory", path);
        rc = VT_ERR_IO;
        goto close_fd;
    }
    rc = reader_new(&r, path);
    if (rc) {
        if (errmsg && errmsg_len)
            snprintf(errmsg, errmsg_len, "%s: out of memory", path);
        goto close_fd;
    }
    r->fd = fd;
    r->seekable = S_ISREG(sb.st_mode) && lseek(fd, 0, SEEK_CUR) >= 0;
    r->stable_ok = r->seekable; /* a pipe cannot go back for stable_fallback() */
    r->ibuf = malloc(IN_CHUNK);
    if (!r->ibuf) {
        if (errmsg && errmsg_len)
            snprintf(errmsg, errmsg_len, "%s: out of memory", path);
        vt_reader_free(r);
        return VT_ERR_NOMEM;
    }
    *out = r;
    return 0;
close_fd:
    close(fd);
    return rc;
}

const char *vt_reader_errmsg(const vt_reader *r)
{
    return r->last_err ? r->err : "";
}

uint64_t vt_reader_offset(const vt_reader *r)
{
    return r->frame_start;
}

const char *vt_reader_string(const vt_reader *r, uint32_t id)
{
    return str_get(r, id);
}

const vt_ev_frame *vt_reader_frame(const vt_reader *r, uint32_t id)
{
    return tab_get(&r->frames, id, sizeof(vt_ev_frame));
}

const vt_ev_thread *vt_reader_thread(const vt_reader *r, uint32_t id)
{
    return tab_get(&r->threads, id, sizeof(vt_ev_thread));
}

const vt_ev_module *vt_reader_module(const vt_reader *r, uint32_t id)
{
    return tab_get(&r->modules, id, sizeof(vt_ev_module));
}

const vt_ev_launch *vt_reader_launch(const vt_reader *r, uint32_t id)
{
    const launch_slot *s = tab_get(&r->launches, id, sizeof(launch_slot));
    return s ? &s->l : NULL;
}

const vt_ev_device *vt_reader_device(const vt_reader *r, uint32_t index)
{
    if (!r->devices || index >= MAX_DEVICES || !r->devices[index].defined)
        return NULL;
    return &r->devices[index].d;
}

const vt_ev_header *vt_reader_header(const vt_reader *r)
{
    return r->have_header ? &r->header : NULL;
}

uint32_t vt_reader_stack(const vt_reader *r, uint32_t id, uint32_t *frames, uint32_t max)
{
    const stack_slot *s = tab_get(&r->stacks, id, sizeof(stack_slot));
    uint32_t depth = 0;
    /* Walk parents: each was defined before its child (see VT_EV_STACK),
     * so the chain ends; guarded anyway. */
    for (uint32_t guard = 0; s && guard < MAX_STACK_DEPTH; guard++) {
        for (uint32_t i = 0; i < s->n; i++, depth++)
            if (depth < max)
                frames[depth] = r->stack_frames[s->off + i];
        if (!s->parent)
            break;
        s = tab_get(&r->stacks, s->parent, sizeof(stack_slot));
    }
    return depth;
}

void vt_reader_get_stats(const vt_reader *r, vt_reader_stats *st)
{
    *st = r->st;
}

void vt_reader_free(vt_reader *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    ZSTD_freeDCtx(r->dctx);
    free(r->ibuf);
    free(r->raw);
    free(r->scratch);
    for (arena_blk *b = r->arena, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(r->strings.v);
    free(r->frames.v);
    free(r->stacks.v);
    free(r->threads.v);
    free(r->modules.v);
    free(r->launches.v);
    free(r->stack_frames);
    free(r->devices);
    vt_kbatch_free(&r->kb);
    vt_mblock_free(&r->mb);
    free(r);
}
