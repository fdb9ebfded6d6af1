/* vt_reader_batch.c - KernelBatch decoding for the reader (see
 * vt_reader_batch.h).  One pass over the record into columns sized by the
 * record's length (an entry takes at least a byte) capped at
 * VT_KBATCH_READ_MAX; columns may come packed or, as protobuf allows, one
 * varint per entry, in any order and in pieces; their lengths are checked
 * against each other at the end.  Touches nothing but its own memory.
 */
#include "vt_reader_batch.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_error.h"
#include "vt_wire.h"

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

/* Skip an unknown field (no groups: proto3 has none). */
static int skip(const uint8_t **pp, const uint8_t *end, uint64_t tag, char *why, size_t why_len)
{
    uint64_t v;
    switch (tag & 7) {
    case 0:
        if (rd_varint(pp, end, &v))
            return fail(why, why_len, "bad varint in KernelBatch field %llu", (unsigned long long)(tag >> 3));
        return 0;
    case 1:
        if (end - *pp < 8)
            return fail(why, why_len, "KernelBatch field %llu runs past the end of the message",
                        (unsigned long long)(tag >> 3));
        *pp += 8;
        return 0;
    case 5:
        if (end - *pp < 4)
            return fail(why, why_len, "KernelBatch field %llu runs past the end of the message",
                        (unsigned long long)(tag >> 3));
        *pp += 4;
        return 0;
    case 2:
        if (rd_varint(pp, end, &v) || v > (uint64_t)(end - *pp))
            return fail(why, why_len, "KernelBatch field %llu runs past the end of the message",
                        (unsigned long long)(tag >> 3));
        *pp += v;
        return 0;
    default:
        return fail(why, why_len, "invalid wire type %u in KernelBatch (field %llu)", (unsigned)(tag & 7),
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
    uint32_t *l = realloc(b->launch, cap * sizeof(*l));
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

int vt_kbatch_decode(vt_kbatch *b, const uint8_t *p, const uint8_t *end, uint64_t *device_time,
                     uint64_t *corr, uint64_t *unknown, char *why, size_t why_len)
{
    b->n = b->left = 0;
    /* every entry takes at least one byte: the columns need at most
     * min(length, cap) slots, so they are sized before decoding (one pass) */
    size_t len = (size_t)(end - p);
    uint32_t lim = len < VT_KBATCH_READ_MAX ? (uint32_t)len : VT_KBATCH_READ_MAX;
    if (reserve(b, lim))
        return VT_ERR_NOMEM;
    uint32_t cnt[NCOL] = {0};
    uint64_t *col[NCOL] = {NULL, b->start, b->dur, b->corr, b->graph};
    uint64_t nunknown = 0;
    while (p < end) {
        uint64_t tag, v;
        if (rd_v(&p, end, &tag))
            return fail(why, why_len, "bad tag in KernelBatch");
        if ((tag >> 3) == 0)
            return fail(why, why_len, "invalid field number 0 in KernelBatch");
        int c = column_of(tag >> 3, (unsigned)(tag & 7));
        if (c < 0) {
            if (skip(&p, end, tag, why, why_len))
                return VT_ERR_CORRUPT;
            nunknown++;
            continue;
        }
        const uint8_t *q = p, *qe = end;
        if ((tag & 7) == 2) {
            if (rd_v(&p, end, &v) || v > (uint64_t)(end - p))
                return fail(why, why_len, "KernelBatch column %s runs past the end of the message", col_name[c]);
            q = p;
            qe = p + v;
            p = qe;
            if (v && qe[-1] >= 0x80)
                return fail(why, why_len, "bad varint at the end of KernelBatch column %s", col_name[c]);
        }
        uint32_t k = cnt[c];
        do {
            if (q == qe)
                break; /* an empty packed column */
            if (k == lim)
                return fail(why, why_len, "KernelBatch with more than %u entries in column %s", VT_KBATCH_READ_MAX,
                            col_name[c]);
            if (rd_v(&q, qe, &v))
                return fail(why, why_len, "bad varint in KernelBatch column %s", col_name[c]);
            if (c == C_LAUNCH)
                b->launch[k++] = (uint32_t)v;
            else
                col[c][k++] = v;
        } while ((tag & 7) == 2 && q < qe);
        cnt[c] = k;
        if ((tag & 7) == 0)
            p = q;
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

    /* deltas -> absolute values: start[0] from the device time base,
     * start[i] from the end of kernel i-1; the base ends at the last start */
    uint64_t base = *device_time, t = 0, k = *corr;
    for (uint32_t i = 0; i < n; i++) {
        t = base + (uint64_t)unzigzag(b->start[i]);
        b->start[i] = t;
        base = t + b->dur[i];
        k += (uint64_t)unzigzag(b->corr[i]);
        b->corr[i] = k;
    }
    *device_time = t;
    *corr = k;
    b->n = b->left = n;
    return 0;
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
