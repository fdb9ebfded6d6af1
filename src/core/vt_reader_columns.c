/* vt_reader_columns.c - the column records for the reader (see
 * vt_reader_columns.h): KernelBatch (varint columns, format 1), KernelBlock
 * (bit-packed kernel columns) and MemBlock (bit-packed allocation and free
 * columns with per-context templates).  A KernelBatch is read in one pass
 * into columns sized by the record's length (an entry takes at least a
 * byte) capped at VT_KBATCH_READ_MAX; its columns may come packed or, as
 * protobuf allows, one varint per entry, in any order and in pieces, their
 * lengths checked against each other at the end.  A block is decoded whole
 * and its events handed out from the columns.  Touches nothing but its own
 * memory.
 */
#include "vt_reader_columns.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_error.h"
#include "vt_wire.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define VT_KBATCH_PEXT 1
#include <immintrin.h>
#else
#define VT_KBATCH_PEXT 0
#endif

enum { C_LAUNCH, C_START, C_DUR, C_CORR, C_GRAPH, NCOL };
static const char *const col_name[NCOL] = {"launch", "start", "duration_ns", "corr", "graph_id"};

static int fail(char *why, size_t why_len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *why, size_t why_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
    return VT_ERR_CORRUPT;
}

/* Column of field `f` with wire type `wt`, -1 for a field to skip. */
static inline int column_of(uint64_t f, unsigned wt)
{
    if (f < 1 || f > NCOL || (wt != 0 && wt != 2))
        return -1;
    return (int)f - 1;
}

/* Skip an unknown field of message `msg` (wire_skip(); groups are
 * refused: proto3 has none). */
static int skip(const uint8_t **pp, const uint8_t *end, uint64_t tag, const char *msg, char *why, size_t why_len)
{
    switch (wire_skip(pp, end, (unsigned)(tag & 7))) {
    case WIRE_OK:
        return 0;
    case WIRE_BAD_VARINT:
        return fail(why, why_len, "bad varint in %s field %llu", msg, (unsigned long long)(tag >> 3));
    case WIRE_PAST_END:
        return fail(why, why_len, "%s field %llu runs past the end of the message", msg,
                    (unsigned long long)(tag >> 3));
    default:
        return fail(why, why_len, "invalid wire type %u in %s (field %llu)", (unsigned)(tag & 7), msg,
                    (unsigned long long)(tag >> 3));
    }
}

static int reserve(vt_kbatch *b, uint32_t n)
{
    if (n <= b->cap)
        return 0;
    uint32_t cap = b->cap ? b->cap : 256;
    while (cap < n)
        cap *= 2;
    uint64_t *l = realloc(b->launch, cap * sizeof(*l));
    if (l)
        b->launch = l;
    uint64_t *s = l ? realloc(b->start, cap * sizeof(*s)) : NULL;
    if (s)
        b->start = s;
    uint64_t *d = s ? realloc(b->dur, cap * sizeof(*d)) : NULL;
    if (d)
        b->dur = d;
    uint64_t *c = d ? realloc(b->corr, cap * sizeof(*c)) : NULL;
    if (c)
        b->corr = c;
    uint64_t *g = c ? realloc(b->graph, cap * sizeof(*g)) : NULL;
    if (!g)
        return VT_ERR_NOMEM; /* the arrays that grew are kept; cap is unchanged */
    b->graph = g;
    b->cap = cap;
    return 0;
}

/* Varint inside [*pp, end) with the one- and two-byte cases inline (almost
 * every entry of the writer's columns). */
static inline __attribute__((always_inline)) int rd_v(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    if (__builtin_expect(p < end && p[0] < 0x80, 1)) {
        *out = p[0];
        *pp = p + 1;
        return 0;
    }
    if (p + 1 < end && p[1] < 0x80) {
        *out = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
        *pp = p + 2;
        return 0;
    }
    return rd_varint(pp, end, out);
}

/* The entries of a packed column [q, qe) appended to out[*cnt ..], at
 * most `lim` in all.  Where 8 bytes are readable (up to `hard`, which may
 * lie past qe): 8 one-byte entries at once when the 8 bytes are (the
 * correlation column, mostly), else one varint without a branch on its
 * length (find its last byte from the continuation bits, squeeze out the
 * 7-bit groups; with 32-bit masks, immediates, up to 4 bytes): how many
 * bytes a duration or a gap takes varies from entry to entry, and no
 * branch predictor guesses that.  A varint that crosses qe leaves q past
 * it: caught by the final q == qe.  Returns 0, -1 (a bad varint) or -2
 * (more than lim entries). */
/* One entry at q (8 bytes readable) into out[k]; CHECKED: mind lim.
 * VARINT decodes a varint of up to 8 bytes at q into v (moving q), or
 * leaves st == 0 for a longer one. */
#define COL_ENTRY(CHECKED, VARINT)                                            \
    do {                                                                      \
        uint64_t x, v;                                                        \
        memcpy(&x, q, 8); /* little-endian, as every target of this code */   \
        if (!(x & 0x8080808080808080ull) && qe - q >= 8 && (!(CHECKED) || lim - k >= 8)) { \
            for (int j = 0; j < 8; j++)                                       \
                out[k + (uint32_t)j] = (x >> (8 * j)) & 0xff;                 \
            k += 8;                                                           \
            q += 8;                                                           \
            continue;                                                         \
        }                                                                     \
        VARINT();                                                             \
        out[k++] = v;                                                         \
    } while (0)

/* shifts: 32-bit masks (immediates) up to 4 bytes, 64-bit ones up to 8 */
#define VARINT_SHIFTS()                                                       \
    uint32_t w = (uint32_t)x, t = ~w & 0x80808080u;                           \
    if (__builtin_expect(t != 0, 1)) {                                        \
        q += ((unsigned)__builtin_ctz(t) + 1) >> 3;                           \
        w &= t ^ (t - 1);                                                     \
        w = ((w & 0x7f007f00u) >> 1) | (w & 0x007f007fu);                     \
        w = ((w & 0x3fff0000u) >> 2) | (w & 0x00003fffu);                     \
        v = w;                                                                \
    } else {                                                                  \
        uint64_t st = ~x & 0x8080808080808080ull;                             \
        if (__builtin_expect(!st, 0)) {                                       \
            if (rd_varint(&q, qe, &v)) /* 9 or 10 bytes */                    \
                return -1;                                                    \
        } else {                                                              \
            q += ((unsigned)__builtin_ctzll(st) + 1) >> 3;                    \
            x &= st ^ (st - 1);                                               \
            x = ((x & 0x7f007f007f007f00ull) >> 1) | (x & 0x007f007f007f007full); \
            x = ((x & 0x3fff00003fff0000ull) >> 2) | (x & 0x00003fff00003fffull); \
            x = ((x & 0x0fffffff00000000ull) >> 4) | (x & 0x000000000fffffffull); \
            v = x;                                                            \
        }                                                                     \
    }

/* pext (BMI2): mask up to the last byte, gather the 7-bit groups */
#define VARINT_PEXT()                                                         \
    uint64_t st = ~x & 0x8080808080808080ull;                                 \
    if (__builtin_expect(!st, 0)) {                                           \
        if (rd_varint(&q, qe, &v)) /* 9 or 10 bytes */                        \
            return -1;                                                        \
    } else {                                                                  \
        q += ((unsigned)__builtin_ctzll(st) + 1) >> 3;                        \
        v = _pext_u64(x & (st ^ (st - 1)), 0x7f7f7f7f7f7f7f7full);            \
    }

#define COL_PACKED(VARINT)                                                    \
    uint32_t k = *cnt;                                                        \
    if (hard - qe >= 8 && (size_t)(qe - q) <= (size_t)(lim - k)) {            \
        /* the usual case: 8 bytes readable at every entry, and as many      \
         * entries as bytes fit (every entry takes one) */                    \
        while (q < qe)                                                        \
            COL_ENTRY(0, VARINT);                                             \
    } else {                                                                  \
        while (q < qe) {                                                      \
            if (k == lim)                                                     \
                return -2;                                                    \
            if (hard - q >= 8) {                                              \
                COL_ENTRY(1, VARINT);                                         \
            } else {                                                          \
                uint64_t v;                                                   \
                if (rd_varint(&q, qe, &v))                                    \
                    return -1;                                                \
                out[k++] = v;                                                 \
            }                                                                 \
        }                                                                     \
    }                                                                         \
    if (q != qe)                                                              \
        return -1;                                                            \
    *cnt = k;                                                                 \
    return 0;

static int col_packed(const uint8_t *q, const uint8_t *qe, const uint8_t *hard, uint64_t *out, uint32_t *cnt,
                      uint32_t lim)
{
    COL_PACKED(VARINT_SHIFTS)
}

#if VT_KBATCH_PEXT
static __attribute__((target("bmi,bmi2"))) int col_packed_pext(const uint8_t *q, const uint8_t *qe,
                                                                const uint8_t *hard, uint64_t *out, uint32_t *cnt,
                                                                uint32_t lim)
{
    COL_PACKED(VARINT_PEXT)
}
#endif
#undef COL_ENTRY
#undef VARINT_SHIFTS
#undef VARINT_PEXT
#undef COL_PACKED

/* Deltas -> absolute values (start[i] and corr[i] signed deltas, zigzag
 * if `zig`): start[0] from the device time base, start[i] from the end of
 * kernel i-1; the base ends at the last start (docs/FORMAT.md, "Times"). */
static inline __attribute__((always_inline)) void finish(vt_kbatch *b, uint32_t n, int zig, uint64_t *device_time,
                                                         uint64_t *corr)
{
    uint64_t base = *device_time, t = 0, k = *corr;
    for (uint32_t i = 0; i < n; i++) {
        t = base + (zig ? (uint64_t)unzigzag(b->start[i]) : b->start[i]);
        b->start[i] = t;
        base = t + b->dur[i];
        k += zig ? (uint64_t)unzigzag(b->corr[i]) : b->corr[i];
        b->corr[i] = k;
    }
    *device_time = t;
    *corr = k;
    b->n = b->left = n;
}

int vt_kbatch_decode(vt_kbatch *b, const uint8_t *p, const uint8_t *end, const uint8_t *hard,
                     uint64_t *device_time, uint64_t *corr, uint64_t *unknown, char *why, size_t why_len)
{
    b->n = b->left = 0;
    /* every entry takes at least one byte: the columns need at most
     * min(length, cap) slots, so they are sized before decoding (one pass) */
    size_t len = (size_t)(end - p);
    uint32_t lim = len < VT_KBATCH_READ_MAX ? (uint32_t)len : VT_KBATCH_READ_MAX;
    if (reserve(b, lim))
        return VT_ERR_NOMEM;
    uint32_t cnt[NCOL] = {0};
    uint64_t *col[NCOL] = {b->launch, b->start, b->dur, b->corr, b->graph};
    uint64_t nunknown = 0;
    while (p < end) {
        uint64_t tag, v;
        if (rd_v(&p, end, &tag))
            return fail(why, why_len, "bad tag in KernelBatch");
        if ((tag >> 3) == 0)
            return fail(why, why_len, "invalid field number 0 in KernelBatch");
        int c = column_of(tag >> 3, (unsigned)(tag & 7));
        if (c < 0) {
            if (skip(&p, end, tag, "KernelBatch", why, why_len))
                return VT_ERR_CORRUPT;
            nunknown++;
            continue;
        }
        if ((tag & 7) == 0) { /* one entry, not packed */
            if (p == end)
                break; /* a tag without its value at the end: ignored, as always */
            if (cnt[c] == lim)
                return fail(why, why_len, "KernelBatch with more than %u entries in column %s", VT_KBATCH_READ_MAX,
                            col_name[c]);
            if (rd_v(&p, end, &v))
                return fail(why, why_len, "bad varint in KernelBatch column %s", col_name[c]);
            col[c][cnt[c]++] = v;
            continue;
        }
        if (rd_v(&p, end, &v) || v > (uint64_t)(end - p))
            return fail(why, why_len, "KernelBatch column %s runs past the end of the message", col_name[c]);
        const uint8_t *q = p, *qe = p + v;
        p = qe;
        if (v && qe[-1] >= 0x80)
            return fail(why, why_len, "bad varint at the end of KernelBatch column %s", col_name[c]);
#if VT_KBATCH_PEXT
        int rc = b->pext ? col_packed_pext(q, qe, hard, col[c], &cnt[c], lim)
                         : col_packed(q, qe, hard, col[c], &cnt[c], lim);
#else
        int rc = col_packed(q, qe, hard, col[c], &cnt[c], lim);
#endif
        if (rc == -2)
            return fail(why, why_len, "KernelBatch with more than %u entries in column %s", VT_KBATCH_READ_MAX,
                        col_name[c]);
        if (rc)
            return fail(why, why_len, "bad varint in KernelBatch column %s", col_name[c]);
    }
    const uint32_t n = cnt[C_LAUNCH];
    for (int c = C_START; c < NCOL; c++)
        if (cnt[c] != n && !(c == C_GRAPH && cnt[c] == 0))
            return fail(why, why_len, "KernelBatch columns disagree: %u launch, %u %s", n, cnt[c], col_name[c]);
    *unknown += nunknown;
    if (n == 0)
        return 0;
    if (!cnt[C_GRAPH])
        memset(b->graph, 0, n * sizeof(*b->graph));
    finish(b, n, 1, device_time, corr);
    return 0;
}

/* ---- KernelBlock (Record.body 29): bit-packed columns ----------------- */

enum { B_LAUNCH, B_GAP, B_DUR, B_CORR, NBCOL };
static const char *const bcol_name[NBCOL] = {"launch", "gap", "duration_ns", "corr"};

/* Entries of `width` bits from the bit string at q, the last byte at
 * qe - 1, plus base, into out[0 .. m).  Where 8 bytes are readable from
 * every entry's first byte (up to `hard`) and an entry fits in 57 bits:
 * one unaligned load, a shift and a mask per entry; else bit by bit from
 * the bytes before qe. */
static void unpack(const uint8_t *q, const uint8_t *qe, const uint8_t *hard, unsigned width, uint64_t base,
                   uint64_t *out, uint32_t m)
{
    if (width == 0) { /* a constant column: two entries per step (GCC's -O2 does not vectorize it) */
        uint32_t j = 0;
        for (; j + 2 <= m; j += 2) {
            out[j] = base;
            out[j + 1] = base;
        }
        if (j < m)
            out[j] = base;
        return;
    }
    if (width <= 56 && hard - qe >= 7) {
        const uint64_t mask = (1ull << width) - 1;
        uint64_t off = 0;
        uint32_t j = 0;
        if (width <= 28) /* two entries per load (7 + 2 * 28 < 64) */
            for (; j + 2 <= m; j += 2, off += 2 * width) {
                uint64_t x;
                memcpy(&x, q + (off >> 3), 8); /* little-endian, as every target of this code */
                x >>= off & 7;
                out[j] = base + (x & mask);
                out[j + 1] = base + ((x >> width) & mask);
            }
        for (; j < m; j++, off += width) {
            uint64_t x;
            memcpy(&x, q + (off >> 3), 8);
            out[j] = base + ((x >> (off & 7)) & mask);
        }
        return;
    }
    uint64_t off = 0;
    for (uint32_t j = 0; j < m; j++) {
        uint64_t v = 0;
        for (unsigned k = 0; k < width; k++, off++)
            v |= (uint64_t)((q[off >> 3] >> (off & 7)) & 1) << k;
        out[j] = base + v;
    }
    (void)qe;
}

/* Column [q, qe) of m entries into out: width, base, bits (the length must
 * be exact).  Returns 0 or VT_ERR_CORRUPT with the reason. */
static int bcol(const uint8_t *q, const uint8_t *qe, const uint8_t *hard, uint32_t m, uint64_t *out,
                const char *rec, const char *col, char *why, size_t why_len)
{
    if (!q) {
        if (m)
            return fail(why, why_len, "%s without its %s column", rec, col);
        return 0;
    }
    if (q == qe)
        return fail(why, why_len, "empty %s column %s", rec, col);
    const unsigned width = *q++;
    if (width > 64)
        return fail(why, why_len, "%s column %s with entries of %u bits", rec, col, width);
    uint64_t base;
    if (rd_varint(&q, qe, &base))
        return fail(why, why_len, "bad base in %s column %s", rec, col);
    const uint64_t need = ((uint64_t)m * width + 7) / 8;
    if ((uint64_t)(qe - q) < need)
        return fail(why, why_len, "%s column %s has %llu bytes for %u entries of %u bits", rec, col,
                    (unsigned long long)(qe - q), m, width);
    const uint8_t *x = q + need;
    unpack(q, x, hard, width, (uint64_t)unzigzag(base), out, m);
    /* exceptions: (index - previous index - 1, the bits above width) */
    for (uint32_t i = 0; x < qe; i++) {
        uint64_t d, hi;
        if (rd_v(&x, qe, &d) || rd_v(&x, qe, &hi))
            return fail(why, why_len, "bad exception in %s column %s", rec, col);
        if (width == 64 || d >= (uint64_t)(m - i))
            return fail(why, why_len, "%s column %s: an exception past its %u entries", rec, col, m);
        i += (uint32_t)d;
        out[i] += hi << width;
    }
    return 0;
}

int vt_kblock_decode(vt_kbatch *b, const uint8_t *p, const uint8_t *end, const uint8_t *hard,
                     uint64_t *device_time, uint64_t *corr, uint64_t *unknown, char *why, size_t why_len)
{
    b->n = b->left = 0;
    uint64_t n = 0, start0 = 0, nunknown = 0;
    const uint8_t *cq[NBCOL] = {0}, *ce[NBCOL] = {0};
    const uint8_t *gq[16];
    const uint8_t *ge[16];
    unsigned ng = 0;
    while (p < end) {
        uint64_t tag, v;
        if (rd_v(&p, end, &tag))
            return fail(why, why_len, "bad tag in KernelBlock");
        const uint64_t f = tag >> 3;
        const unsigned wt = (unsigned)(tag & 7);
        if (f == 0)
            return fail(why, why_len, "invalid field number 0 in KernelBlock");
        if ((f == 1 || f == 2) && wt == 0) {
            if (rd_v(&p, end, &v))
                return fail(why, why_len, "bad varint in KernelBlock field %llu", (unsigned long long)f);
            if (f == 1)
                n = v;
            else
                start0 = v;
        } else if (f >= 3 && f <= 7 && wt == 2) {
            if (rd_v(&p, end, &v) || v > (uint64_t)(end - p))
                return fail(why, why_len, "KernelBlock field %llu runs past the end of the message",
                            (unsigned long long)f);
            if (f == 7) { /* graph ids: packed, possibly in pieces */
                if (ng == 16)
                    return fail(why, why_len, "KernelBlock with graph_id in more than 16 pieces");
                gq[ng] = p;
                ge[ng++] = p + v;
            } else {
                cq[f - 3] = p;
                ce[f - 3] = p + v;
            }
            p += v;
        } else if (skip(&p, end, tag, "KernelBatch", why, why_len)) { /* sic: what it has always said */
            return VT_ERR_CORRUPT;
        } else {
            nunknown++;
        }
    }
    if (n == 0)
        return fail(why, why_len, "KernelBlock without kernels");
    if (n > VT_KBATCH_READ_MAX)
        return fail(why, why_len, "KernelBlock of %llu kernels (at most %u)", (unsigned long long)n,
                    VT_KBATCH_READ_MAX);
    if (reserve(b, (uint32_t)n))
        return VT_ERR_NOMEM;
    uint64_t *out[NBCOL] = {b->launch, b->start + 1, b->dur, b->corr};
    for (int c = 0; c < NBCOL; c++) {
        const uint32_t m = (uint32_t)n - (c == B_GAP);
        if (bcol(cq[c], ce[c], hard, m, out[c], "KernelBlock", bcol_name[c], why, why_len))
            return VT_ERR_CORRUPT;
    }
    b->start[0] = (uint64_t)unzigzag(start0);
    uint32_t gn = 0;
    for (unsigned i = 0; i < ng; i++) {
        const uint8_t *q = gq[i];
        if (ge[i] > q && ge[i][-1] >= 0x80)
            return fail(why, why_len, "bad varint at the end of KernelBlock column graph_id");
#if VT_KBATCH_PEXT
        int rc = b->pext ? col_packed_pext(q, ge[i], hard, b->graph, &gn, (uint32_t)n)
                         : col_packed(q, ge[i], hard, b->graph, &gn, (uint32_t)n);
#else
        int rc = col_packed(q, ge[i], hard, b->graph, &gn, (uint32_t)n);
#endif
        if (rc == -2)
            return fail(why, why_len, "KernelBlock with more graph_id entries than its %llu kernels",
                        (unsigned long long)n);
        if (rc)
            return fail(why, why_len, "bad varint in KernelBlock column graph_id");
    }
    if (gn == 0)
        memset(b->graph, 0, n * sizeof(*b->graph));
    else if (gn != n)
        return fail(why, why_len, "KernelBlock columns disagree: %llu kernels, %u graph_id", (unsigned long long)n,
                    gn);
    *unknown += nunknown;
    finish(b, (uint32_t)n, 0, device_time, corr);
    return 0;
}

/* ---- MemBlock (Record.body 30): allocations and frees ---------------- */

enum { M_CTX, M_TIME, M_ADDR, M_SIZE, M_STACK, M_CORR, NMCOL };
static const char *const mcol_name[NMCOL] = {"ctx", "time", "address", "size", "stack", "corr"};

static int mreserve(vt_mblock *b, uint32_t n)
{
    if (n <= b->cap)
        return 0;
    uint32_t cap = b->cap ? b->cap : 256;
    while (cap < n)
        cap *= 2;
    uint64_t **col[NMCOL] = {&b->ctx, &b->time, &b->addr, &b->size, &b->stack, &b->corr};
    for (int c = 0; c < NMCOL; c++) {
        uint64_t *x = realloc(*col[c], cap * sizeof(uint64_t));
        if (!x)
            return VT_ERR_NOMEM; /* the arrays that grew are kept; cap is unchanged */
        *col[c] = x;
    }
    b->cap = cap;
    return 0;
}

/* One MemContext message [p, end) into the template *t (zeroed before). */
static int mcontext(const uint8_t *p, const uint8_t *end, vt_event *t, uint64_t *unknown, char *why,
                    size_t why_len)
{
    uint64_t v[9] = {0};
    while (p < end) {
        uint64_t tag;
        if (rd_v(&p, end, &tag))
            return fail(why, why_len, "bad tag in MemContext");
        const uint64_t f = tag >> 3;
        if (f >= 1 && f <= 8 && (tag & 7) == 0) {
            if (rd_v(&p, end, &v[f]))
                return fail(why, why_len, "bad varint in MemContext field %llu", (unsigned long long)f);
        } else if (f == 0) {
            return fail(why, why_len, "invalid field number 0 in MemContext");
        } else if (skip(&p, end, tag, "MemContext", why, why_len)) {
            return VT_ERR_CORRUPT;
        } else {
            (*unknown)++;
        }
    }
    /* enums through int32_t, as the reader's other paths */
    if (v[1]) {
        vt_ev_free *x = &t->u.free;
        t->type = VT_EV_FREE;
        x->device = (uint32_t)v[2];
        x->kind = (vt_memkind)(int32_t)v[3];
        x->api = (vt_allocapi)(int32_t)v[4];
        x->stream = v[5];
        x->site.thread = (uint32_t)v[7];
        x->site.stack = (uint32_t)v[8];
    } else {
        vt_ev_alloc *x = &t->u.alloc;
        t->type = VT_EV_ALLOC;
        x->device = (uint32_t)v[2];
        x->kind = (vt_memkind)(int32_t)v[3];
        x->api = (vt_allocapi)(int32_t)v[4];
        x->stream = v[5];
        x->pool = v[6];
        x->site.thread = (uint32_t)v[7];
    }
    return 0;
}

int vt_mblock_decode(vt_mblock *b, const uint8_t *p, const uint8_t *end, const uint8_t *hard, uint64_t *host_time,
                     uint64_t *corr, uint64_t *unknown, char *why, size_t why_len)
{
    b->n = b->left = b->ai = b->nctx = 0;
    uint64_t n = 0, nunknown = 0;
    const uint8_t *cq[NMCOL] = {0}, *ce[NMCOL] = {0};
    /* field number -> column (3 ctx, 4 time, 5 address, 6 size, 7 stack, 8 corr) */
    static const int8_t col_of[9] = {-1, -1, -1, M_CTX, M_TIME, M_ADDR, M_SIZE, M_STACK, M_CORR};
    uint32_t nctx = 0;
    while (p < end) {
        uint64_t tag, v;
        if (rd_v(&p, end, &tag))
            return fail(why, why_len, "bad tag in MemBlock");
        const uint64_t f = tag >> 3;
        const unsigned wt = (unsigned)(tag & 7);
        if (f == 0)
            return fail(why, why_len, "invalid field number 0 in MemBlock");
        if (f == 1 && wt == 0) {
            if (rd_v(&p, end, &n))
                return fail(why, why_len, "bad varint in MemBlock field 1");
        } else if (f >= 2 && f <= 8 && wt == 2) {
            if (rd_v(&p, end, &v) || v > (uint64_t)(end - p))
                return fail(why, why_len, "MemBlock field %llu runs past the end of the message",
                            (unsigned long long)f);
            if (f == 2) {
                if (nctx == VT_MBLOCK_READ_CTX)
                    return fail(why, why_len, "MemBlock with more than %u contexts", VT_MBLOCK_READ_CTX);
                vt_event *t = &b->tmpl[nctx];
                memset(t, 0, sizeof(*t));
                if (mcontext(p, p + v, t, &nunknown, why, why_len))
                    return VT_ERR_CORRUPT;
                nctx++;
            } else {
                cq[col_of[f]] = p;
                ce[col_of[f]] = p + v;
            }
            p += v;
        } else if (skip(&p, end, tag, "MemBlock", why, why_len)) {
            return VT_ERR_CORRUPT;
        } else {
            nunknown++;
        }
    }
    if (n == 0)
        return fail(why, why_len, "MemBlock without events");
    if (n > VT_MBLOCK_READ_MAX)
        return fail(why, why_len, "MemBlock of %llu events (at most %u)", (unsigned long long)n, VT_MBLOCK_READ_MAX);
    if (nctx == 0)
        return fail(why, why_len, "MemBlock without contexts");
    if (mreserve(b, (uint32_t)n))
        return VT_ERR_NOMEM;
    const uint32_t m = (uint32_t)n;
    if (bcol(cq[M_CTX], ce[M_CTX], hard, m, b->ctx, "MemBlock", mcol_name[M_CTX], why, why_len))
        return VT_ERR_CORRUPT;
    uint32_t na = 0;
    for (uint32_t i = 0; i < m; i++) {
        if (b->ctx[i] >= nctx)
            return fail(why, why_len, "MemBlock event %u names context %llu of %u", i,
                        (unsigned long long)b->ctx[i], nctx);
        na += b->tmpl[b->ctx[i]].type == VT_EV_ALLOC;
    }
    for (int c = M_TIME; c < NMCOL; c++) {
        const uint32_t mc = c == M_SIZE || c == M_STACK ? na : m;
        uint64_t *out[NMCOL] = {0, b->time, b->addr, b->size, b->stack, b->corr};
        if (bcol(cq[c], ce[c], hard, mc, out[c], "MemBlock", mcol_name[c], why, why_len))
            return VT_ERR_CORRUPT;
    }
    /* deltas -> absolute values */
    uint64_t t = *host_time, k = *corr;
    for (uint32_t i = 0; i < m; i++) {
        t += b->time[i];
        k += b->corr[i];
        b->time[i] = t;
        b->corr[i] = k;
    }
    *host_time = t;
    *corr = k;
    *unknown += nunknown;
    b->nctx = nctx;
    b->n = b->left = m;
    return 0;
}

void vt_mblock_free(vt_mblock *b)
{
    if (!b)
        return;
    free(b->ctx);
    free(b->time);
    free(b->addr);
    free(b->size);
    free(b->stack);
    free(b->corr);
    b->ctx = b->time = b->addr = b->size = b->stack = b->corr = NULL;
    b->n = b->left = b->cap = b->ai = b->nctx = 0;
}

void vt_kbatch_free(vt_kbatch *b)
{
    if (!b)
        return;
    free(b->launch);
    free(b->start);
    free(b->dur);
    free(b->corr);
    free(b->graph);
    b->launch = NULL;
    b->start = b->dur = b->corr = b->graph = NULL;
    b->n = b->left = b->cap = 0;
}
