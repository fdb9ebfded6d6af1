/* test_reader_batch.c - KernelBatch, KernelBlock and MemBlock records
 * (Record.body 28, 29 and 30) in the reader (src/core/vt_reader_columns.c and its hook in
 * vt_reader.c): hand-built batches (protobuf-c packed, unpacked columns,
 * empty, unknown fields) and blocks (widths 0..64, exceptions, columns in
 * any order, graph ids in pieces) read as plain kernels with the shared
 * time and correlation bases; corrupt ones (columns that disagree, too
 * many kernels, a bad varint, width or exception) give VT_ERR_CORRUPT with
 * offsets and none of their kernels; writer traces (KernelBlock) with
 * batches split by flushes, zstd frames and other events read back in
 * emission order, values of every size through the writer's packer,
 * random damage in the decompressed stream; truncation at every byte of a
 * batched trace.  MemBlocks: hand-built (contexts of both kinds, columns
 * with exceptions and in any order, unknown fields, bases shared with
 * Alloc records), corrupt ones, a writer trace of allocations and frees
 * with more contexts than a block holds, kernels and flushes between,
 * small frames, read with vt_reader_next() and vt_reader_next_batch(),
 * and random damage. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "vt_error.h"
#include "vt_reader.h"
#include "vt_testenc.h"
#include "vt_writer.h"

/* ---- hand-made bytes ------------------------------------------------ */

typedef struct {
    uint8_t b[1 << 19];
    size_t n;
} buf;

static void put_varint(buf *b, uint64_t v)
{
    do {
        b->b[b->n++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        v >>= 7;
    } while (v);
}
static void put_tag(buf *b, uint32_t field, int wt)
{
    put_varint(b, ((uint64_t)field << 3) | (uint64_t)wt);
}
static void put_msg(buf *b, uint32_t field, const buf *m)
{
    put_tag(b, field, 2);
    put_varint(b, m->n);
    memcpy(b->b + b->n, m->b, m->n);
    b->n += m->n;
}
static uint64_t zz(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}
/* A packed column of `n` values. */
static void put_packed(buf *b, uint32_t field, const uint64_t *v, size_t n)
{
    static buf col;
    col.n = 0;
    for (size_t i = 0; i < n; i++)
        put_varint(&col, v[i]);
    put_msg(b, field, &col);
}
/* Record{body field = body} as a stream entry (28 KernelBatch, 29 KernelBlock). */
static void body_entry(vt_tenc *e, uint32_t field, const buf *body)
{
    static buf rec, ent;
    rec.n = ent.n = 0;
    put_msg(&rec, field, body);
    put_msg(&ent, 1, &rec);
    vt_tenc_stream_bytes(e, ent.b, ent.n);
}
static void batch_entry(vt_tenc *e, const buf *body)
{
    body_entry(e, 28, body);
}

/* A KernelBlock column (proto/vramtrace.proto), written bit by bit here
 * (independently of the writer): width, base, the m values minus base in
 * width bits, then an exception for every value that does not fit. */
static void put_col(buf *b, uint32_t field, unsigned width, int64_t base, const uint64_t *v, size_t m)
{
    static buf col;
    col.n = 0;
    col.b[col.n++] = (uint8_t)width;
    put_varint(&col, zz(base));
    size_t nbytes = (m * width + 7) / 8;
    memset(col.b + col.n, 0, nbytes);
    for (size_t j = 0; j < m; j++) {
        uint64_t x = v[j] - (uint64_t)base;
        for (unsigned k = 0; k < width; k++)
            if (k < 64 && (x >> k & 1)) /* a width over 64 (a corrupt column): zeros above */
                col.b[col.n + (j * width + k) / 8] |= (uint8_t)(1u << ((j * width + k) % 8));
    }
    col.n += nbytes;
    size_t prev = 0;
    for (size_t j = 0; j < m && width < 64; j++) {
        uint64_t hi = (v[j] - (uint64_t)base) >> width;
        if (!hi)
            continue;
        put_varint(&col, j - prev);
        put_varint(&col, hi);
        prev = j + 1;
    }
    put_msg(b, field, &col);
}

static vt_tenc *start_trace(void)
{
    vt_tenc *e = vt_tenc_new(1);
    vt_tenc_header(e, VT_FORMAT_MAGIC, VT_FORMAT_VERSION);
    vt_tenc_sync(e, 0, 1000, 500); /* host 1000, device 500 */
    vt_tenc_string(e, 1, "_Z4gemm");
    vt_tenc_string(e, 2, "_Z6reduce");
    for (uint32_t id = 1; id <= 2; id++) {
        Vramtrace__Launch l = VRAMTRACE__LAUNCH__INIT;
        l.id = id;
        l.name = id;
        l.device = id;
        l.stream = 7;
        l.grid_x = 128 * id;
        l.block_x = 256;
        l.graph = id == 2;
        vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_LAUNCH, &l);
    }
    return e;
}

static void expect_kernel(vt_reader *r, uint64_t t, uint32_t launch, uint64_t dur, uint64_t corr, uint64_t gid)
{
    vt_event ev;
    int rc = vt_reader_next(r, &ev);
    if (rc != 1)
        fail_msg("expected a kernel, got %d: %s", rc, vt_reader_errmsg(r));
    assert_int_equal(ev.type, VT_EV_KERNEL);
    assert_int_equal(ev.time_ns, t);
    assert_int_equal(ev.u.kernel.launch_id, launch);
    assert_int_equal(ev.u.kernel.duration_ns, dur);
    assert_int_equal(ev.u.kernel.corr, corr);
    assert_int_equal(ev.u.kernel.graph_id, gid);
    /* resolved through the Launch like a Kernel record */
    assert_string_equal(ev.u.kernel.name, launch == 1 ? "_Z4gemm" : "_Z6reduce");
    assert_int_equal(ev.u.kernel.name_id, launch);
    assert_int_equal(ev.u.kernel.device, launch);
    assert_int_equal(ev.u.kernel.stream, 7);
    assert_int_equal(ev.u.kernel.grid[0], 128 * launch);
    assert_int_equal(ev.u.kernel.block[0], 256);
    assert_int_equal(!!ev.u.kernel.graph, launch == 2);
}

static void expect_type(vt_reader *r, vt_evtype t)
{
    vt_event ev;
    int rc = vt_reader_next(r, &ev);
    if (rc != 1)
        fail_msg("expected %s, got %d: %s", vt_evtype_name(t), rc, vt_reader_errmsg(r));
    if (ev.type != t)
        fail_msg("expected %s, got %s", vt_evtype_name(t), vt_evtype_name(ev.type));
}

/* The End record, then the end of a complete trace with `unknown` fields
 * skipped and no unknown record. */
static void expect_end(vt_reader *r, uint64_t unknown)
{
    expect_type(r, VT_EV_END);
    vt_event ev;
    assert_int_equal(vt_reader_next(r, &ev), 0);
    vt_reader_stats st;
    vt_reader_get_stats(r, &st);
    assert_int_equal(st.unknown_fields, unknown);
    assert_int_equal(st.unknown_records, 0);
    assert_true(st.complete);
}

static void skip_defs(vt_reader *r)
{
    expect_type(r, VT_EV_HEADER);
    expect_type(r, VT_EV_SYNC);
    expect_type(r, VT_EV_STRING);
    expect_type(r, VT_EV_STRING);
    expect_type(r, VT_EV_LAUNCH);
    expect_type(r, VT_EV_LAUNCH);
}

/* ---- well-formed batches -------------------------------------------- */

static void test_handmade_batches(void **state)
{
    (void)state;
    vt_tenc *e = start_trace();
    /* 1. protobuf-c's packing of a KernelBatch, with graph ids */
    uint32_t l1[] = {1, 2, 1};
    int64_t s1[] = {100, -30, 1000};
    uint64_t d1[] = {50, 60, 70};
    int64_t c1[] = {10, 1, -2};
    uint64_t g1[] = {0, 9, 0};
    Vramtrace__KernelBatch b = VRAMTRACE__KERNEL_BATCH__INIT;
    b.n_launch = b.n_start = b.n_duration_ns = b.n_corr = b.n_graph_id = 3;
    b.launch = l1;
    b.start = s1;
    b.duration_ns = d1;
    b.corr = c1;
    b.graph_id = g1;
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_KERNEL_BATCH, &b);
    /* 2. an alloc between: the correlation base is shared, host time apart */
    Vramtrace__Alloc a = VRAMTRACE__ALLOC__INIT;
    a.address = 0x1000;
    a.size = 64;
    a.corr = 5;
    vt_tenc_add(e, 20, VRAMTRACE__RECORD__BODY_ALLOC, &a);
    /* 3. a plain Kernel record continues from the batch's last kernel */
    Vramtrace__Kernel k = VRAMTRACE__KERNEL__INIT;
    k.launch = 2;
    k.duration_ns = 80;
    k.corr = 1;
    k.graph_id = 4;
    vt_tenc_add(e, 7, VRAMTRACE__RECORD__BODY_KERNEL, &k);
    /* 4. by hand: no graph_id column, `start` unpacked (one varint per
     * entry, split around the others), an unknown field, a column in two
     * packed pieces */
    static buf body;
    body.n = 0;
    uint64_t l4a[] = {1}, l4b[] = {1, 2};
    uint64_t d4[] = {5, 6, 7}, c4[] = {zz(3), zz(3), zz(3)};
    put_packed(&body, 1, l4a, 1);
    put_tag(&body, 2, 0);
    put_varint(&body, zz(10));
    put_packed(&body, 3, d4, 3);
    put_tag(&body, 2, 0);
    put_varint(&body, zz(10));
    put_tag(&body, 99, 0); /* unknown field of a newer writer */
    put_varint(&body, 12345);
    put_packed(&body, 1, l4b, 2);
    put_packed(&body, 4, c4, 3);
    put_tag(&body, 2, 0);
    put_varint(&body, zz(-5));
    batch_entry(e, &body);
    /* 5. an empty batch: no event */
    body.n = 0;
    batch_entry(e, &body);
    a.address = 0x2000;
    a.corr = 1;
    vt_tenc_add(e, 1, VRAMTRACE__RECORD__BODY_ALLOC, &a);
    vt_tenc_end(e, 9);
    vt_tenc_end_frame(e);

    size_t size;
    const uint8_t *d = vt_tenc_data(e, &size);
    vt_reader *r;
    assert_int_equal(vt_reader_open_mem(&r, d, size, "b.zst"), 0);
    skip_defs(r);
    /* start[0] from the device base 500, start[i] from the end of kernel i-1 */
    expect_kernel(r, 600, 1, 50, 10, 0);
    expect_kernel(r, 620, 2, 60, 11, 9);  /* 600 + 50 - 30 */
    expect_kernel(r, 1680, 1, 70, 9, 0);  /* 620 + 60 + 1000 */
    vt_event ev;
    assert_int_equal(vt_reader_next(r, &ev), 1);
    assert_int_equal(ev.type, VT_EV_ALLOC);
    assert_int_equal(ev.time_ns, 1020);
    assert_int_equal(ev.u.alloc.corr, 14);
    expect_kernel(r, 1687, 2, 80, 15, 4); /* the base is the batch's last start */
    expect_kernel(r, 1697, 1, 5, 18, 0);
    expect_kernel(r, 1712, 1, 6, 21, 0);
    expect_kernel(r, 1713, 2, 7, 24, 0);
    assert_int_equal(vt_reader_next(r, &ev), 1);
    assert_int_equal(ev.type, VT_EV_ALLOC);
    assert_int_equal(ev.time_ns, 1021);
    assert_int_equal(ev.u.alloc.corr, 25);
    expect_type(r, VT_EV_END);
    assert_int_equal(vt_reader_next(r, &ev), 0);
    vt_reader_stats st;
    vt_reader_get_stats(r, &st);
    assert_int_equal(st.unknown_fields, 1);
    assert_int_equal(st.unknown_records, 0);
    assert_int_equal(st.records, 6 + 1 + 1 + 1 + 1 + 1 + 1 + 1); /* defs, 2 batches, alloc, kernel, empty, alloc, end */
    assert_true(st.complete);
    vt_reader_free(r);
    vt_tenc_free(e);
}

/* ---- corrupt batches ------------------------------------------------ */

static void check_corrupt_field(uint32_t field, const buf *bad, const char *why);

/* One corrupt batch in frame 0 (after a good kernel), a good batch in
 * frame 1: the good kernel, then VT_ERR_CORRUPT with offsets and `why`,
 * none of the bad batch's kernels, then the next frame reads. */
static void check_corrupt(const buf *bad, const char *why)
{
    check_corrupt_field(28, bad, why);
}

static void check_corrupt_field(uint32_t field, const buf *bad, const char *why)
{
    vt_tenc *e = start_trace();
    Vramtrace__Kernel k = VRAMTRACE__KERNEL__INIT;
    k.launch = 1;
    k.duration_ns = 3;
    vt_tenc_add(e, 10, VRAMTRACE__RECORD__BODY_KERNEL, &k);
    vt_tenc_flush(e);
    body_entry(e, field, bad);
    vt_tenc_end_frame(e);
    vt_tenc_sync(e, 1, 2000, 9000);
    static buf good;
    good.n = 0;
    uint64_t l[] = {2, 2}, s[] = {zz(1), zz(2)}, dd[] = {4, 4}, c[] = {zz(7), zz(1)};
    put_packed(&good, 1, l, 2);
    put_packed(&good, 2, s, 2);
    put_packed(&good, 3, dd, 2);
    put_packed(&good, 4, c, 2);
    batch_entry(e, &good);
    vt_tenc_end(e, 3);
    vt_tenc_end_frame(e);
    size_t size;
    const uint8_t *d = vt_tenc_data(e, &size);
    vt_reader *r;
    assert_int_equal(vt_reader_open_mem(&r, d, size, "c.zst"), 0);
    skip_defs(r);
    expect_kernel(r, 510, 1, 3, 0, 0);
    vt_event ev;
    int rc = vt_reader_next(r, &ev);
    if (rc != VT_ERR_CORRUPT)
        fail_msg("expected VT_ERR_CORRUPT for \"%s\", got %d (%s)", why, rc, vt_reader_errmsg(r));
    const char *m = vt_reader_errmsg(r);
    if (!strstr(m, "c.zst: corrupt record at offset ") || !strstr(m, "(frame starting at offset 0, decompressed byte ") ||
        !strstr(m, why))
        fail_msg("message \"%s\" (wanted \"%s\")", m, why);
    /* resume at frame 1: its Sync, then the good batch */
    expect_type(r, VT_EV_SYNC);
    expect_kernel(r, 9001, 2, 4, 7, 0);
    expect_kernel(r, 9007, 2, 4, 8, 0);
    expect_type(r, VT_EV_END);
    assert_int_equal(vt_reader_next(r, &ev), 0);
    vt_reader_free(r);
    vt_tenc_free(e);
}

static void test_corrupt_batches(void **state)
{
    (void)state;
    static buf b;
    uint64_t v[4] = {1, 1, 1, 1};
    /* start has one entry fewer than launch */
    b.n = 0;
    put_packed(&b, 1, v, 3);
    put_packed(&b, 2, v, 2);
    put_packed(&b, 3, v, 3);
    put_packed(&b, 4, v, 3);
    check_corrupt(&b, "KernelBatch columns disagree: 3 launch, 2 start");
    /* duration missing */
    b.n = 0;
    put_packed(&b, 1, v, 2);
    put_packed(&b, 2, v, 2);
    put_packed(&b, 4, v, 2);
    check_corrupt(&b, "KernelBatch columns disagree: 2 launch, 0 duration_ns");
    /* graph_id neither empty nor n entries */
    b.n = 0;
    put_packed(&b, 1, v, 2);
    put_packed(&b, 2, v, 2);
    put_packed(&b, 3, v, 2);
    put_packed(&b, 4, v, 2);
    put_packed(&b, 5, v, 1);
    check_corrupt(&b, "KernelBatch columns disagree: 2 launch, 1 graph_id");
    /* corr longer than launch */
    b.n = 0;
    put_packed(&b, 1, v, 1);
    put_packed(&b, 2, v, 1);
    put_packed(&b, 3, v, 1);
    put_packed(&b, 4, v, 4);
    check_corrupt(&b, "KernelBatch columns disagree: 1 launch, 4 corr");
    /* columns without launch */
    b.n = 0;
    put_packed(&b, 2, v, 1);
    check_corrupt(&b, "KernelBatch columns disagree: 0 launch, 1 start");
    /* a packed column ending inside a varint */
    b.n = 0;
    put_tag(&b, 1, 2);
    put_varint(&b, 2);
    b.b[b.n++] = 0x01;
    b.b[b.n++] = 0x81;
    check_corrupt(&b, "bad varint at the end of KernelBatch column launch");
    /* an 11-byte varint inside a packed column */
    b.n = 0;
    put_tag(&b, 3, 2);
    put_varint(&b, 11);
    for (int i = 0; i < 10; i++)
        b.b[b.n++] = 0xff;
    b.b[b.n++] = 0x01;
    put_packed(&b, 1, v, 1);
    put_packed(&b, 2, v, 1);
    put_packed(&b, 4, v, 1);
    check_corrupt(&b, "bad varint in KernelBatch column duration_ns");
    /* a column longer than its message */
    b.n = 0;
    put_tag(&b, 1, 2);
    put_varint(&b, 50);
    b.b[b.n++] = 1;
    check_corrupt(&b, "KernelBatch column launch runs past the end of the message");
    /* more kernels than a reader accepts (65537 one-byte launch ids) */
    b.n = 0;
    static uint64_t many[65537];
    for (size_t i = 0; i < 65537; i++)
        many[i] = 1;
    put_packed(&b, 1, many, 65537);
    check_corrupt(&b, "KernelBatch with more than 65536 entries in column launch");
    /* the most a reader accepts is fine: 65536 kernels */
    vt_tenc *e = start_trace();
    b.n = 0;
    for (uint32_t f = 1; f <= 4; f++)
        put_packed(&b, f, many, 65536);
    batch_entry(e, &b);
    vt_tenc_end(e, 65536);
    vt_tenc_end_frame(e);
    size_t size;
    const uint8_t *d = vt_tenc_data(e, &size);
    vt_reader *r;
    assert_int_equal(vt_reader_open_mem(&r, d, size, "m.zst"), 0);
    skip_defs(r);
    vt_event ev;
    for (uint64_t i = 1; i <= 65536; i++) {
        assert_int_equal(vt_reader_next(r, &ev), 1);
        assert_int_equal(ev.type, VT_EV_KERNEL);
        assert_int_equal(ev.time_ns, 499); /* zigzag 1 = -1 after each 1-ns kernel */
        assert_int_equal(ev.u.kernel.corr, (uint64_t)0 - i);
    }
    expect_type(r, VT_EV_END);
    assert_int_equal(vt_reader_next(r, &ev), 0);
    vt_reader_free(r);
    vt_tenc_free(e);
}

/* ---- KernelBlock (Record.body 29) ------------------------------------ */

static void test_handmade_blocks(void **state)
{
    (void)state;
    vt_tenc *e = start_trace();
    static buf b;
    /* 1. 5 kernels: launch in bytes, signed gaps (one overlap), durations
     * of 7 bits with two exceptions (one of them the last entry), corr in
     * 2 bits, graph ids in two packed pieces, an unknown field */
    uint64_t l1[] = {1, 2, 2, 1, 2};
    uint64_t g1[] = {(uint64_t)-20, 5, 100, 7}; /* gaps of kernels 1..4 */
    uint64_t d1[] = {10, 3000, 40, 90, 1ull << 40};
    uint64_t c1[] = {1, 2, 3, 1, 2};
    uint64_t gid[] = {0, 3, 0, 0, 9};
    b.n = 0;
    put_tag(&b, 1, 0);
    put_varint(&b, 5);
    put_tag(&b, 2, 0);
    put_varint(&b, zz(100));
    put_col(&b, 3, 8, 0, l1, 5);
    put_col(&b, 4, 7, -20, g1, 4);
    put_col(&b, 5, 7, 10, d1, 5);
    put_tag(&b, 99, 0); /* unknown field of a newer writer */
    put_varint(&b, 1);
    put_col(&b, 6, 2, 1, c1, 5);
    put_packed(&b, 7, gid, 2);
    put_packed(&b, 7, gid + 2, 3);
    body_entry(e, 29, &b);
    /* 2. an alloc between: the correlation base is shared */
    Vramtrace__Alloc a = VRAMTRACE__ALLOC__INIT;
    a.address = 0x1000;
    a.corr = 5;
    vt_tenc_add(e, 20, VRAMTRACE__RECORD__BODY_ALLOC, &a);
    /* 3. one kernel, columns of width 0 (no bits), no gap column (0
     * entries), durations of 64 bits and 60 bits (the bit-by-bit path) */
    uint64_t l3[] = {2}, d3[] = {0xfedcba9876543210ull}, c3[] = {(uint64_t)-3};
    b.n = 0;
    put_tag(&b, 1, 0);
    put_varint(&b, 1);
    put_col(&b, 3, 0, 2, l3, 1);
    put_col(&b, 5, 64, 0, d3, 1);
    put_col(&b, 6, 0, -3, c3, 1);
    body_entry(e, 29, &b);
    uint64_t l4[] = {1, 1, 1}, g4[] = {1, 2}, d4[] = {5, 1ull << 59, 7}, c4[] = {0, 0, 1};
    b.n = 0;
    put_tag(&b, 1, 0);
    put_varint(&b, 3);
    put_col(&b, 6, 1, 0, c4, 3); /* columns in any order */
    put_col(&b, 5, 60, 0, d4, 3);
    put_col(&b, 4, 57, 0, g4, 2);
    put_col(&b, 3, 16, 0, l4, 3);
    put_tag(&b, 2, 0);
    put_varint(&b, zz(-1000));
    body_entry(e, 29, &b);
    vt_tenc_end(e, 9);
    vt_tenc_end_frame(e);

    size_t size;
    const uint8_t *d = vt_tenc_data(e, &size);
    vt_reader *r;
    assert_int_equal(vt_reader_open_mem(&r, d, size, "k.zst"), 0);
    skip_defs(r);
    /* device base 500: 600, then from the end of each kernel */
    expect_kernel(r, 600, 1, 10, 1, 0);
    expect_kernel(r, 590, 2, 3000, 3, 3);      /* 600 + 10 - 20 */
    expect_kernel(r, 3595, 2, 40, 6, 0);       /* 590 + 3000 + 5 */
    expect_kernel(r, 3735, 1, 90, 7, 0);       /* 3595 + 40 + 100 */
    expect_kernel(r, 3832, 2, 1ull << 40, 9, 9); /* 3735 + 90 + 7 */
    vt_event ev;
    assert_int_equal(vt_reader_next(r, &ev), 1);
    assert_int_equal(ev.type, VT_EV_ALLOC);
    assert_int_equal(ev.u.alloc.corr, 14);
    expect_kernel(r, 3832, 2, 0xfedcba9876543210ull, 11, 0); /* start0 0: the last start */
    expect_kernel(r, 2832, 1, 5, 11, 0);
    expect_kernel(r, 2838, 1, 1ull << 59, 11, 0);
    expect_kernel(r, 2838 + (1ull << 59) + 2, 1, 7, 12, 0);
    expect_end(r, 1);
    vt_reader_free(r);
    vt_tenc_free(e);
}

static void test_corrupt_blocks(void **state)
{
    (void)state;
    static buf b;
    uint64_t v[4] = {1, 2, 3, 4};
#define HEAD(K)                                                               \
    do {                                                                      \
        b.n = 0;                                                              \
        put_tag(&b, 1, 0);                                                    \
        put_varint(&b, (K));                                                  \
    } while (0)
#define COLS(K)                                                               \
    do {                                                                      \
        put_col(&b, 3, 8, 0, v, (K));                                         \
        put_col(&b, 4, 3, 0, v, (K) - 1);                                     \
        put_col(&b, 5, 3, 0, v, (K));                                         \
        put_col(&b, 6, 3, 0, v, (K));                                         \
    } while (0)
    b.n = 0;
    put_col(&b, 3, 8, 0, v, 2);
    check_corrupt_field(29, &b, "KernelBlock without kernels");
    HEAD(65537);
    check_corrupt_field(29, &b, "KernelBlock of 65537 kernels (at most 65536)");
    HEAD(3);
    put_col(&b, 3, 8, 0, v, 3);
    put_col(&b, 4, 3, 0, v, 2);
    put_col(&b, 6, 3, 0, v, 3);
    check_corrupt_field(29, &b, "KernelBlock without its duration_ns column");
    HEAD(3);
    COLS(3);
    put_tag(&b, 5, 2); /* a later duration column wins: empty */
    put_varint(&b, 0);
    check_corrupt_field(29, &b, "empty KernelBlock column duration_ns");
    HEAD(3);
    COLS(3);
    put_tag(&b, 6, 2);
    put_varint(&b, 3);
    b.b[b.n++] = 65;
    b.b[b.n++] = 0;
    b.b[b.n++] = 0;
    check_corrupt_field(29, &b, "KernelBlock column corr with entries of 65 bits");
    HEAD(3);
    COLS(3);
    put_tag(&b, 3, 2); /* 3 entries of 8 bits in 2 bytes */
    put_varint(&b, 4);
    b.b[b.n++] = 8;
    b.b[b.n++] = 0;
    b.b[b.n++] = 1;
    b.b[b.n++] = 1;
    check_corrupt_field(29, &b, "KernelBlock column launch has 2 bytes for 3 entries of 8 bits");
    HEAD(3);
    COLS(3);
    put_tag(&b, 5, 2); /* base varint cut */
    put_varint(&b, 2);
    b.b[b.n++] = 8;
    b.b[b.n++] = 0x80;
    check_corrupt_field(29, &b, "bad base in KernelBlock column duration_ns");
    HEAD(3);
    COLS(3);
    put_tag(&b, 5, 2); /* 3 entries of 1 bit, an exception at entry 3 */
    put_varint(&b, 5);
    b.b[b.n++] = 1;
    b.b[b.n++] = 0;
    b.b[b.n++] = 0;
    b.b[b.n++] = 3;
    b.b[b.n++] = 1;
    check_corrupt_field(29, &b, "KernelBlock column duration_ns: an exception past its 3 entries");
    HEAD(3);
    COLS(3);
    put_tag(&b, 5, 2); /* two exceptions: entry 1, then entry 1 + 1 + 1 = 3 */
    put_varint(&b, 7);
    b.b[b.n++] = 1;
    b.b[b.n++] = 0;
    b.b[b.n++] = 0;
    b.b[b.n++] = 1;
    b.b[b.n++] = 1;
    b.b[b.n++] = 1;
    b.b[b.n++] = 1;
    check_corrupt_field(29, &b, "KernelBlock column duration_ns: an exception past its 3 entries");
    HEAD(1);
    COLS(1);
    put_tag(&b, 5, 2); /* width 64 with an exception */
    put_varint(&b, 12);
    b.b[b.n++] = 64;
    b.b[b.n++] = 0;
    for (int i = 0; i < 8; i++)
        b.b[b.n++] = 0;
    b.b[b.n++] = 0;
    b.b[b.n++] = 1;
    check_corrupt_field(29, &b, "KernelBlock column duration_ns: an exception past its 1 entries");
    HEAD(3);
    COLS(3);
    put_tag(&b, 6, 2); /* an exception without its value */
    put_varint(&b, 4);
    b.b[b.n++] = 1;
    b.b[b.n++] = 0;
    b.b[b.n++] = 0;
    b.b[b.n++] = 0;
    check_corrupt_field(29, &b, "bad exception in KernelBlock column corr");
    HEAD(3);
    COLS(3);
    put_packed(&b, 7, v, 2);
    check_corrupt_field(29, &b, "KernelBlock columns disagree: 3 kernels, 2 graph_id");
    HEAD(3);
    COLS(3);
    put_packed(&b, 7, v, 4);
    check_corrupt_field(29, &b, "KernelBlock with more graph_id entries than its 3 kernels");
    HEAD(3);
    COLS(3);
    put_tag(&b, 4, 2);
    put_varint(&b, 50);
    b.b[b.n++] = 1;
    check_corrupt_field(29, &b, "KernelBlock field 4 runs past the end of the message");
    HEAD(3);
    COLS(3);
    put_tag(&b, 0, 0);
    put_varint(&b, 0);
    check_corrupt_field(29, &b, "invalid field number 0 in KernelBlock");
#undef HEAD
#undef COLS
    /* the most a reader accepts is fine: 65536 kernels of width 0 */
    static uint64_t ones[65536];
    for (size_t i = 0; i < 65536; i++)
        ones[i] = 1;
    vt_tenc *e = start_trace();
    b.n = 0;
    put_tag(&b, 1, 0);
    put_varint(&b, 65536);
    put_col(&b, 3, 0, 1, ones, 65536);
    put_col(&b, 4, 0, 1, ones, 65535);
    put_col(&b, 5, 0, 1, ones, 65536);
    put_col(&b, 6, 0, 1, ones, 65536);
    body_entry(e, 29, &b);
    vt_tenc_end(e, 65536);
    vt_tenc_end_frame(e);
    size_t size;
    const uint8_t *d = vt_tenc_data(e, &size);
    vt_reader *r;
    assert_int_equal(vt_reader_open_mem(&r, d, size, "m.zst"), 0);
    skip_defs(r);
    vt_event ev;
    for (uint64_t i = 1; i <= 65536; i++) {
        assert_int_equal(vt_reader_next(r, &ev), 1);
        assert_int_equal(ev.type, VT_EV_KERNEL);
        assert_int_equal(ev.time_ns, 500 + 2 * (i - 1)); /* 1-ns kernels 1 ns apart */
        assert_int_equal(ev.u.kernel.corr, i);
    }
    expect_type(r, VT_EV_END);
    assert_int_equal(vt_reader_next(r, &ev), 0);
    vt_reader_free(r);
    vt_tenc_free(e);
}

/* ---- writer traces --------------------------------------------------- */

typedef struct {
    vt_event ev;
} sent;

static void mk_kernel(vt_event *e, uint64_t i)
{
    static const char *const names[] = {"_Z4gemm", "_Z6reduce", "ncclKernel_AllReduce", "_Z4copy"};
    memset(e, 0, sizeof(*e));
    e->type = VT_EV_KERNEL;
    e->time_ns = 5000000 + i * 1000 + (i % 7) * 13;
    e->u.kernel = (vt_ev_kernel){.name = names[(i * 7 / 3) % 4], .device = 0, .stream = (uint32_t)(i % 3),
                                 .grid = {64, 1, 1}, .block = {256, 1, 1}, .graph = i % 5 == 0,
                                 .graph_id = i % 5 == 0 ? i / 5 : 0, .duration_ns = 400 + (i * 37) % 900,
                                 .corr = 100 + i * 2};
}
static void mk_alloc(vt_event *e, uint64_t i)
{
    memset(e, 0, sizeof(*e));
    e->type = VT_EV_ALLOC;
    e->time_ns = 1000000 + i * 100;
    e->u.alloc = (vt_ev_alloc){.address = 0x7f0000000000ull + i * 512, .size = 512 + i, .corr = 100 + i * 2 + 1};
}

/* A run-structured trace from one thread: runs of 1..600 kernels between
 * allocations, some runs cut by vt_writer_flush() (and a reader checking
 * the flushed file at that moment), small zstd frames. */
static char *write_batched(uint64_t seed, size_t *n_out, sent **out, size_t frame_bytes, int check_flush)
{
    static char path[256];
    snprintf(path, sizeof(path), "/tmp/vt_reader_batch_%d_%llu.zst", (int)getpid(), (unsigned long long)seed);
    unlink(path);
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.path = path;
    cfg.frame_bytes = frame_bytes;
    cfg.ring_bytes = 8u << 20;
    cfg.clock = VT_CLOCK_MONOTONIC;
    vt_writer *w;
    vt_ev_header h = {.pid = 1, .ppid = 1, .hostname = "h", .program = "p", .kernels = 1,
                      .trace_clock_ns = 1000000, .realtime_ns = 1};
    assert_int_equal(vt_writer_create(&w, &cfg, &h), 0);
    size_t cap = 20000, n = 0;
    sent *s = calloc(cap, sizeof(*s));
    uint64_t rng = seed, ki = 0, ai = 0;
    static const size_t runs[] = {1, 2, 3, 255, 256, 257, 600, 1, 40, 511, 512, 513, 7};
    for (size_t round = 0; n < cap - 700; round++) {
        size_t run = runs[round % (sizeof(runs) / sizeof(runs[0]))];
        uint64_t cut = check_flush && round % 3 == 1 ? vt_tenc_rand(&rng) % run : (uint64_t)-1;
        for (size_t j = 0; j < run; j++) {
            mk_kernel(&s[n].ev, ki++);
            while (vt_writer_emit(w, &s[n].ev) == VT_ERR_DROPPED)
                usleep(100);
            n++;
            if (j == cut) {
                /* everything emitted so far is in the file now: a batch
                 * that was pending went out at the flush */
                assert_int_equal(vt_writer_flush(w), 0);
                vt_reader *r;
                char msg[256];
                assert_int_equal(vt_reader_open(&r, path, msg, sizeof(msg)), 0);
                vt_event ev;
                size_t got = 0;
                int rc;
                while ((rc = vt_reader_next(r, &ev)) == 1)
                    if (ev.type == VT_EV_KERNEL || ev.type == VT_EV_ALLOC)
                        got++;
                assert_int_equal(rc, VT_ERR_TRUNCATED);
                assert_int_equal(got, n);
                vt_reader_free(r);
            }
        }
        mk_alloc(&s[n].ev, ai++);
        while (vt_writer_emit(w, &s[n].ev) == VT_ERR_DROPPED)
            usleep(100);
        n++;
    }
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    vt_writer_free(w);
    *n_out = n;
    *out = s;
    return path;
}

static void same_event(const vt_event *g, const vt_event *w, size_t i)
{
    if (g->type != w->type || g->time_ns != w->time_ns)
        fail_msg("event %zu: got %s at %llu, sent %s at %llu", i, vt_evtype_name(g->type),
                 (unsigned long long)g->time_ns, vt_evtype_name(w->type), (unsigned long long)w->time_ns);
    if (g->type == VT_EV_KERNEL) {
        const vt_ev_kernel *a = &g->u.kernel, *b = &w->u.kernel;
        assert_string_equal(a->name, b->name);
        assert_int_equal(a->stream, b->stream);
        assert_int_equal(a->grid[0], b->grid[0]);
        assert_int_equal(!!a->graph, !!b->graph);
        assert_int_equal(a->graph_id, b->graph_id);
        assert_int_equal(a->duration_ns, b->duration_ns);
        assert_int_equal(a->corr, b->corr);
    } else if (g->type == VT_EV_ALLOC) {
        const vt_ev_alloc *a = &g->u.alloc, *b = &w->u.alloc;
        assert_int_equal(a->address, b->address);
        assert_int_equal(a->size, b->size);
        assert_int_equal(a->corr, b->corr);
        assert_int_equal(a->device, b->device);
        assert_int_equal(a->kind, b->kind);
        assert_int_equal(a->api, b->api);
        assert_int_equal(a->stream, b->stream);
        assert_int_equal(a->pool, b->pool);
        if (b->site.tid)
            assert_int_equal(a->site.tid, b->site.tid);
        assert_int_equal(!!a->site.stack, !!b->site.nframes); /* frames sent: a stack */
    } else {
        const vt_ev_free *a = &g->u.free, *b = &w->u.free;
        assert_int_equal(g->type, VT_EV_FREE);
        assert_int_equal(a->address, b->address);
        assert_int_equal(a->corr, b->corr);
        assert_int_equal(a->device, b->device);
        assert_int_equal(a->kind, b->kind);
        assert_int_equal(a->api, b->api);
        assert_int_equal(a->stream, b->stream);
        if (b->site.tid)
            assert_int_equal(a->site.tid, b->site.tid);
        assert_int_equal(!!a->site.stack, !!b->site.nframes);
    }
}

static void read_back(const char *path, const sent *s, size_t n, vt_reader_stats *st)
{
    vt_reader *r;
    char msg[256];
    assert_int_equal(vt_reader_open(&r, path, msg, sizeof(msg)), 0);
    vt_event ev;
    size_t i = 0;
    int rc;
    while ((rc = vt_reader_next(r, &ev)) == 1) {
        if (ev.type != VT_EV_KERNEL && ev.type != VT_EV_ALLOC)
            continue;
        assert_true(i < n);
        same_event(&ev, &s[i].ev, i);
        i++;
    }
    if (rc)
        fail_msg("%s", vt_reader_errmsg(r));
    assert_int_equal(i, n);
    vt_reader_get_stats(r, st);
    vt_reader_free(r);
}

static void test_writer_batches(void **state)
{
    (void)state;
    size_t n;
    sent *s;
    /* large frames: batches of up to 256 */
    char *path = write_batched(1, &n, &s, 4u << 20, 1);
    vt_reader_stats st;
    read_back(path, s, n, &st);
    assert_true(st.complete);
    assert_int_equal(st.unknown_fields + st.unknown_records, 0);
    /* far fewer records than events: the kernels came in batches */
    assert_true(st.records < n / 10);
    print_message("batched: %zu events in %llu records, %llu bytes\n", n, (unsigned long long)st.records,
                  (unsigned long long)st.bytes_in);
    unlink(path);
    free(s);
    /* 4 KiB frames: every frame ends with its batch, the next starts with a Sync */
    path = write_batched(2, &n, &s, 4096, 0);
    read_back(path, s, n, &st);
    assert_true(st.complete);
    assert_true(st.frames > 20);
    assert_int_equal(st.sync_gaps, 0);
    unlink(path);
    free(s);
}

/* Kernels with values of every size through the writer's KernelBlock
 * packer and back: 300 launches (ids past one byte), durations from 0 to
 * 2^64-1, gaps that go back (overlaps) or far ahead, correlation ids that
 * jump either way, graph ids: widths 0..64 and exceptions. */
static void test_writer_block_values(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof(path), "/tmp/vt_reader_block_%d.zst", (int)getpid());
    unlink(path);
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.path = path;
    cfg.ring_bytes = 8u << 20;
    vt_writer *w;
    assert_int_equal(vt_writer_create(&w, &cfg, NULL), 0);
    enum { N = 6000 };
    static sent s[N];
    static char names[300][16];
    uint64_t rng = 42, t = 1000000, corr = 100;
    for (size_t i = 0; i < N; i++) {
        vt_event *e = &s[i].ev;
        memset(e, 0, sizeof(*e));
        uint64_t r = vt_tenc_rand(&rng);
        unsigned scale = (unsigned)(vt_tenc_rand(&rng) % 64);
        uint64_t dur = r % 50 == 0 ? 0 : r % 50 == 1 ? UINT64_MAX : 1000 + (vt_tenc_rand(&rng) >> scale);
        if (i % 1000 < 300) /* a stretch of small, regular values */
            dur = 2000 + r % 64;
        int64_t gap = (int64_t)(vt_tenc_rand(&rng) % 20000);
        if (r % 97 == 0)
            gap = -(int64_t)(vt_tenc_rand(&rng) % 1000000000);
        else if (r % 89 == 0)
            gap = (int64_t)(vt_tenc_rand(&rng) >> 2);
        t += (uint64_t)gap;
        corr += r % 53 == 0 ? vt_tenc_rand(&rng) : 1 + r % 3;
        size_t k = (size_t)(i * 7 % 300);
        if (!names[k][0])
            snprintf(names[k], sizeof(names[k]), "_Z1k%zu", k);
        e->type = VT_EV_KERNEL;
        e->time_ns = t;
        e->u.kernel = (vt_ev_kernel){.name = names[k], .stream = (uint32_t)(k % 3), .grid = {64, 1, 1},
                                     .block = {32, 1, 1}, .graph = i >= 3000,
                                     .graph_id = i >= 3000 ? vt_tenc_rand(&rng) % 5 : 0, .duration_ns = dur,
                                     .corr = corr};
        t += dur;
        if (i == 2000) { /* all launches defined: runs of 256 from here */
            assert_int_equal(vt_writer_flush(w), 0);
        }
        while (vt_writer_emit(w, e) == VT_ERR_DROPPED)
            usleep(100);
    }
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    vt_writer_free(w);
    vt_reader_stats st;
    read_back(path, s, N, &st);
    assert_true(st.complete);
    print_message("block values: %d events in %llu records\n", (int)N, (unsigned long long)st.records);
    /* 600 launches (graph or not) with their strings, each first use alone, then blocks */
    assert_true(st.records < 600 * 3 + 100);
    unlink(path);
}

/* Random damage inside the decompressed stream of a KernelBlock trace
 * (1-3 bytes changed, recompressed without a checksum, so that the
 * damage reaches the decoder): never a crash (ASan/UBSan builds), every
 * event of the records before the first changed byte as written, then
 * either more events or a clear error. */
static void damage(const char *path, const sent *s, size_t n, const char *what)
{
    FILE *f = fopen(path, "rb");
    static uint8_t comp[1 << 20];
    size_t csize = fread(comp, 1, sizeof(comp), f);
    fclose(f);
    unlink(path);
    assert_true(csize < sizeof(comp));
    static uint8_t raw[4 << 20], bad[4 << 20], out[4 << 20];
    size_t got = ZSTD_decompress(raw, sizeof(raw), comp, csize);
    assert_false(ZSTD_isError(got));
    /* entry starts: 0x0A varint(len) record */
    static size_t start[1 << 16];
    size_t ne = 0;
    for (size_t p = 0; p < got;) {
        assert_true(ne < sizeof(start) / sizeof(start[0]));
        start[ne++] = p;
        uint64_t len = 0;
        size_t q = p + 1;
        for (unsigned sh = 0;; sh += 7) {
            len |= (uint64_t)(raw[q] & 0x7f) << sh;
            if (!(raw[q++] & 0x80))
                break;
        }
        p = q + len;
    }
    uint64_t rng = 7;
    size_t corrupt = 0, clean = 0;
    for (int it = 0; it < 300; it++) {
        memcpy(bad, raw, got);
        size_t first = got;
        int flips = 1 + (int)(vt_tenc_rand(&rng) % 3);
        for (int k = 0; k < flips; k++) {
            size_t pos = (size_t)(vt_tenc_rand(&rng) % got);
            bad[pos] = (uint8_t)(vt_tenc_rand(&rng) % 3 == 0 ? bad[pos] ^ 0x80 : vt_tenc_rand(&rng));
            if (pos < first)
                first = pos;
        }
        size_t before = 0; /* entries wholly before the first change */
        while (before < ne && (before + 1 < ne ? start[before + 1] : got) <= first)
            before++;
        size_t cs = ZSTD_compress(out, sizeof(out), bad, got, 1);
        assert_false(ZSTD_isError(cs));
        vt_reader *r;
        assert_int_equal(vt_reader_open_mem(&r, out, cs, "x.zst"), 0);
        vt_event ev;
        int rc;
        size_t i = 0;
        vt_reader_stats st;
        while ((rc = vt_reader_next(r, &ev)) == 1) {
            vt_reader_get_stats(r, &st);
            if (st.records > before || st.resyncs)
                continue; /* from the damaged record on: anything, as long as nothing crashes */
            if (ev.type != VT_EV_KERNEL && ev.type != VT_EV_ALLOC && ev.type != VT_EV_FREE)
                continue;
            assert_true(i < n);
            same_event(&ev, &s[i].ev, i);
            i++;
        }
        if (rc < 0) {
            corrupt++;
            assert_non_null(strstr(vt_reader_errmsg(r), "x.zst: "));
        } else {
            clean++;
        }
        vt_reader_free(r);
    }
    print_message("%s corruption: %zu errors, %zu read through\n", what, corrupt, clean);
    assert_true(corrupt > 0);
}

static void test_block_corruption(void **state)
{
    (void)state;
    size_t n;
    sent *s;
    char *path = write_batched(3, &n, &s, 4u << 20, 0);
    damage(path, s, n, "block");
    unlink(path);
    free(s);
}

/* Every prefix of a small batched writer trace: a prefix of the events
 * (kernels of a batch never partly: a batch is one record), then
 * VT_ERR_TRUNCATED; the full file reads completely. */
static void test_batch_truncation(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof(path), "/tmp/vt_reader_batch_trunc_%d.zst", (int)getpid());
    unlink(path);
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.path = path;
    cfg.frame_bytes = 300;
    vt_writer *w;
    assert_int_equal(vt_writer_create(&w, &cfg, NULL), 0);
    enum { N = 80 };
    sent s[N];
    for (size_t i = 0; i < N; i++) {
        if (i % 40 == 39)
            mk_alloc(&s[i].ev, i);
        else {
            mk_kernel(&s[i].ev, i);
            s[i].ev.u.kernel.stream = 0; /* two launches: few definitions to cut the runs */
            s[i].ev.u.kernel.graph = 0;
            s[i].ev.u.kernel.name = i % 3 ? "_Z4gemm" : "_Z6reduce";
        }
        assert_int_equal(vt_writer_emit(w, &s[i].ev), 0);
        if (i == 60)
            assert_int_equal(vt_writer_flush(w), 0); /* a batch cut by a flush: 21 + 18 */
    }
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    vt_writer_free(w);
    FILE *f = fopen(path, "rb");
    static uint8_t data[1 << 16];
    size_t size = fread(data, 1, sizeof(data), f);
    fclose(f);
    unlink(path);
    assert_true(size > 100 && size < sizeof(data));
    size_t prev = 0;
    for (size_t len = 0; len <= size; len++) {
        uint8_t *pre = malloc(len ? len : 1);
        memcpy(pre, data, len);
        vt_reader *r;
        vt_event ev;
        int rc;
        size_t i = 0, all = 0;
        assert_int_equal(vt_reader_open_mem(&r, pre, len, "t.zst"), 0);
        while ((rc = vt_reader_next(r, &ev)) == 1) {
            all++;
            if (ev.type != VT_EV_KERNEL && ev.type != VT_EV_ALLOC)
                continue;
            assert_true(i < N);
            same_event(&ev, &s[i].ev, i);
            i++;
        }
        if (len == size) {
            assert_int_equal(rc, 0);
            assert_int_equal(i, N);
            vt_reader_stats st;
            vt_reader_get_stats(r, &st);
            assert_true(st.records + 50 < all); /* most kernels came in batches */
        } else {
            if (rc != VT_ERR_TRUNCATED)
                fail_msg("len %zu: %d %s", len, rc, vt_reader_errmsg(r));
            assert_non_null(strstr(vt_reader_errmsg(r), "t.zst: truncated at offset "));
        }
        assert_true(i >= prev);
        prev = i;
        vt_reader_free(r);
        free(pre);
    }
}

/* ---- MemBlock (Record.body 30) -------------------------------------- */

/* A MemContext into b (field 2 of the MemBlock). */
static void put_ctx(buf *b, int free_, uint32_t device, uint32_t kind, uint32_t api, uint64_t stream, uint64_t pool,
                    uint32_t thread, uint32_t stack, int unknown)
{
    static buf c;
    c.n = 0;
    const uint64_t v[9] = {0, (uint64_t)free_, device, kind, api, stream, pool, thread, stack};
    for (uint32_t f = 8; f >= 1; f--) { /* any order */
        if (!v[f])
            continue;
        put_tag(&c, f, 0);
        put_varint(&c, v[f]);
    }
    if (unknown) {
        put_tag(&c, 77, 0);
        put_varint(&c, 5);
    }
    put_msg(b, 2, &c);
}

static void expect_mem(vt_reader *r, vt_evtype type, uint64_t t, uint64_t address, uint64_t size, uint64_t corr,
                       uint32_t device, uint32_t kind, uint32_t api, uint64_t stream, uint64_t pool, uint32_t tid,
                       uint32_t stack)
{
    vt_event ev;
    int rc = vt_reader_next(r, &ev);
    if (rc != 1)
        fail_msg("expected %s, got %d: %s", vt_evtype_name(type), rc, vt_reader_errmsg(r));
    if (ev.type != type)
        fail_msg("expected %s, got %s", vt_evtype_name(type), vt_evtype_name(ev.type));
    assert_int_equal(ev.time_ns, t);
    if (type == VT_EV_ALLOC) {
        const vt_ev_alloc *a = &ev.u.alloc;
        assert_int_equal(a->address, address);
        assert_int_equal(a->size, size);
        assert_int_equal(a->corr, corr);
        assert_int_equal(a->device, device);
        assert_int_equal(a->kind, kind);
        assert_int_equal(a->api, api);
        assert_int_equal(a->stream, stream);
        assert_int_equal(a->pool, pool);
        assert_int_equal(a->site.tid, tid);
        assert_int_equal(a->site.stack, stack);
        assert_null(a->site.frames);
    } else {
        const vt_ev_free *a = &ev.u.free;
        assert_int_equal(a->address, address);
        assert_int_equal(a->corr, corr);
        assert_int_equal(a->device, device);
        assert_int_equal(a->kind, kind);
        assert_int_equal(a->api, api);
        assert_int_equal(a->stream, stream);
        assert_int_equal(a->site.tid, tid);
        assert_int_equal(a->site.stack, stack);
        (void)size;
        (void)pool;
    }
}

static void test_handmade_mblocks(void **state)
{
    (void)state;
    vt_tenc *e = start_trace();
    Vramtrace__Thread th = VRAMTRACE__THREAD__INIT;
    th.id = 1;
    th.tid = 4242;
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_THREAD, &th);
    static buf b;
    /* 1. four events of three contexts: allocations on device 1 (pool,
     * stream, thread 1), a free of context 1 with a stack, a pinned
     * allocation; a time column with an exception (a long idle gap) and
     * a step back; addresses in bytes; an unknown field in the block and
     * in a context */
    uint64_t cx1[] = {0, 0, 1, 2};
    uint64_t t1[] = {10, (uint64_t)-3, (1ull << 40) + 5, 0};
    uint64_t a1[] = {0x7f0000001000ull, 0x7f0000002000ull, 0x7f0000001000ull, 0x200000ull};
    uint64_t s1[] = {64, 1ull << 33, 4096}; /* per allocation */
    uint64_t k1[] = {5, 6, 0};
    uint64_t c1[] = {1, 1, (uint64_t)-1, 100};
    b.n = 0;
    put_tag(&b, 1, 0);
    put_varint(&b, 4);
    put_ctx(&b, 0, 1, 1, 3, 0x55, 0x77, 1, 0, 1);
    put_ctx(&b, 1, 1, 1, 3, 0x55, 0, 1, 9, 0);
    put_ctx(&b, 0, 0, 4, 6, 0, 0, 0, 0, 0);
    put_col(&b, 3, 2, 0, cx1, 4);
    put_col(&b, 4, 5, -3, t1, 4);
    put_col(&b, 5, 48, 0, a1, 4);
    put_tag(&b, 99, 0); /* unknown field of a newer writer */
    put_varint(&b, 1);
    put_col(&b, 6, 13, 64, s1, 3);
    put_col(&b, 7, 3, 0, k1, 3);
    put_col(&b, 8, 2, -1, c1, 4);
    body_entry(e, 30, &b);
    /* 2. an Alloc record between: time and correlation bases shared */
    Vramtrace__Alloc a = VRAMTRACE__ALLOC__INIT;
    a.address = 0x3000;
    a.size = 8;
    a.corr = 5;
    vt_tenc_add(e, 20, VRAMTRACE__RECORD__BODY_ALLOC, &a);
    /* 3. frees only (no size or stack column), columns in any order,
     * width 0 */
    uint64_t cx3[] = {0, 0, 0}, t3[] = {7, 7, 7}, a3[] = {0x3000, 0x3000, 0x3000}, c3[] = {2, 2, 2};
    b.n = 0;
    put_col(&b, 8, 0, 2, c3, 3);
    put_col(&b, 5, 0, 0x3000, a3, 3);
    put_ctx(&b, 1, 2, 3, 5, 0, 0, 1, 0, 0);
    put_col(&b, 4, 0, 7, t3, 3);
    put_col(&b, 3, 0, 0, cx3, 3);
    put_tag(&b, 1, 0);
    put_varint(&b, 3);
    body_entry(e, 30, &b);
    vt_tenc_end(e, 9);
    vt_tenc_end_frame(e);

    size_t size;
    const uint8_t *d = vt_tenc_data(e, &size);
    vt_reader *r;
    assert_int_equal(vt_reader_open_mem(&r, d, size, "m.zst"), 0);
    skip_defs(r);
    expect_type(r, VT_EV_THREAD);
    /* host base 1000 */
    expect_mem(r, VT_EV_ALLOC, 1010, 0x7f0000001000ull, 64, 1, 1, 1, 3, 0x55, 0x77, 4242, 5);
    expect_mem(r, VT_EV_ALLOC, 1007, 0x7f0000002000ull, 1ull << 33, 2, 1, 1, 3, 0x55, 0x77, 4242, 6);
    expect_mem(r, VT_EV_FREE, 1012 + (1ull << 40), 0x7f0000001000ull, 0, 1, 1, 1, 3, 0x55, 0, 4242, 9);
    expect_mem(r, VT_EV_ALLOC, 1012 + (1ull << 40), 0x200000, 4096, 101, 0, 4, 6, 0, 0, 0, 0);
    expect_mem(r, VT_EV_ALLOC, 1032 + (1ull << 40), 0x3000, 8, 106, 0, 0, 0, 0, 0, 0, 0); /* no thread */
    for (uint64_t i = 1; i <= 3; i++)
        expect_mem(r, VT_EV_FREE, 1032 + (1ull << 40) + 7 * i, 0x3000, 0, 106 + 2 * i, 2, 3, 5, 0, 0, 4242, 0);
    expect_end(r, 2);
    vt_reader_free(r);
    vt_tenc_free(e);
}

static void test_corrupt_mblocks(void **state)
{
    (void)state;
    static buf b;
    uint64_t v[4] = {1, 2, 3, 4}, z[4] = {0, 0, 0, 0}, cx[4] = {0, 1, 0, 2};
#define MHEAD(K, NCTX)                                                        \
    do {                                                                      \
        b.n = 0;                                                              \
        put_tag(&b, 1, 0);                                                    \
        put_varint(&b, (K));                                                  \
        for (int c_ = 0; c_ < (NCTX); c_++)                                   \
            put_ctx(&b, c_ & 1, 0, 1, 3, (uint64_t)c_, 0, 0, 0, 0);          \
    } while (0)
    b.n = 0;
    put_ctx(&b, 0, 0, 1, 3, 0, 0, 0, 0, 0);
    put_col(&b, 3, 0, 0, z, 2);
    check_corrupt_field(30, &b, "MemBlock without events");
    MHEAD(65537, 1);
    check_corrupt_field(30, &b, "MemBlock of 65537 events (at most 65536)");
    MHEAD(2, 0);
    put_col(&b, 3, 0, 0, z, 2);
    check_corrupt_field(30, &b, "MemBlock without contexts");
    MHEAD(4, 2); /* contexts 0 (alloc) and 1 (free): entry 3 names 2 */
    put_col(&b, 3, 2, 0, cx, 4);
    check_corrupt_field(30, &b, "MemBlock event 3 names context 2 of 2");
    MHEAD(3, 2); /* 2 allocations, 1 free */
    put_col(&b, 3, 2, 0, cx, 3);
    put_col(&b, 4, 3, 0, v, 3);
    put_col(&b, 6, 3, 0, v, 2);
    put_col(&b, 7, 3, 0, v, 2);
    put_col(&b, 8, 3, 0, v, 3);
    check_corrupt_field(30, &b, "MemBlock without its address column");
    MHEAD(3, 2);
    put_col(&b, 3, 2, 0, cx, 3);
    put_col(&b, 4, 3, 0, v, 3);
    put_col(&b, 5, 3, 0, v, 3);
    put_col(&b, 6, 8, 0, v, 1); /* one size for two allocations */
    put_col(&b, 7, 3, 0, v, 2);
    put_col(&b, 8, 3, 0, v, 3);
    check_corrupt_field(30, &b, "MemBlock column size has 1 bytes for 2 entries of 8 bits");
    MHEAD(1, 1);
    put_col(&b, 3, 70, 0, z, 1);
    check_corrupt_field(30, &b, "MemBlock column ctx with entries of 70 bits");
    b.n = 0;
    put_tag(&b, 1, 0);
    put_varint(&b, 1);
    static buf c;
    c.n = 0;
    put_tag(&c, 0, 0);
    put_varint(&c, 1);
    put_msg(&b, 2, &c);
    check_corrupt_field(30, &b, "invalid field number 0 in MemContext");
    c.n = 0;
    put_tag(&c, 3, 0);
    c.b[c.n++] = 0x80; /* a varint cut by the end of the context */
    b.n = 0;
    put_msg(&b, 2, &c);
    check_corrupt_field(30, &b, "bad varint in MemContext field 3");
    MHEAD(1, 1);
    put_tag(&b, 5, 2);
    put_varint(&b, 100); /* 100 bytes announced, none there */
    check_corrupt_field(30, &b, "MemBlock field 5 runs past the end of the message");
    MHEAD(1, 257);
    check_corrupt_field(30, &b, "MemBlock with more than 256 contexts");
#undef MHEAD
}

/* Allocations and frees through the writer's MemBlocks and back: two
 * producer threads' tids given by the sites, 20 streams at random in
 * half of the events (more contexts than a block holds), pinned and managed kinds, stacks on allocations
 * and on some frees, kernels and flushes between, addresses and sizes of
 * every size, small zstd frames; read with vt_reader_next() and with
 * vt_reader_next_batch(). */
static char *write_mem(uint64_t seed, size_t *n_out, sent **out, size_t frame_bytes)
{
    static char path[256];
    snprintf(path, sizeof(path), "/tmp/vt_reader_mblock_%d_%llu.zst", (int)getpid(), (unsigned long long)seed);
    unlink(path);
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.path = path;
    cfg.frame_bytes = frame_bytes;
    cfg.ring_bytes = 8u << 20;
    cfg.clock = VT_CLOCK_MONOTONIC;
    vt_writer *w;
    vt_ev_header h = {.pid = 1, .ppid = 1, .hostname = "h", .program = "p", .kernels = 1, .native_stacks = 1,
                      .trace_clock_ns = 1000000, .realtime_ns = 1};
    assert_int_equal(vt_writer_create(&w, &cfg, &h), 0);
    enum { N = 12000 };
    sent *s = calloc(N + 1, sizeof(*s));
    static vt_frame fr[8][3];
    for (int k = 0; k < 8; k++)
        for (int j = 0; j < 3; j++)
            fr[k][j] = (vt_frame){.kind = VT_FRAME_NATIVE, .pc = 0x400000ull + (uint64_t)k * 0x100 + (uint64_t)j};
    uint64_t rng = seed, t = 2000000, corr = 10, live[64] = {0};
    for (size_t i = 0; i < N; i++) {
        vt_event *e = &s[i].ev;
        memset(e, 0, sizeof(*e));
        const uint64_t r = vt_tenc_rand(&rng);
        t += r % 97 == 0 ? vt_tenc_rand(&rng) >> 20 : r % 5000;
        corr += r % 61 == 0 ? vt_tenc_rand(&rng) >> 8 : 1;
        e->time_ns = t;
        const size_t slot = (size_t)(r >> 8) % 64;
        if (i % 500 == 250) { /* a kernel between: the block goes out first */
            mk_kernel(e, i);
            e->time_ns = t;
        } else if (!live[slot] || r % 3 == 0) {
            e->type = VT_EV_ALLOC;
            const unsigned scale = (unsigned)(vt_tenc_rand(&rng) % 48);
            live[slot] = r % 41 == 0 ? vt_tenc_rand(&rng) : 0x7f0000000000ull + ((vt_tenc_rand(&rng) >> scale) & ~0xffull);
            e->u.alloc = (vt_ev_alloc){.address = live[slot], .size = r % 29 == 0 ? vt_tenc_rand(&rng) : 512ull << (r % 20),
                                       .device = (uint32_t)(r % 2), .kind = r % 11 == 0 ? VT_MEM_PINNED_HOST
                                                                          : r % 13 == 0 ? VT_MEM_MANAGED : VT_MEM_DEVICE,
                                       .api = r % 11 == 0 ? VT_API_HOST_ALLOC : VT_API_MALLOC_ASYNC,
                                       .stream = 0x5000 + (i % 300 < 150 ? r % 20 : 0) * 16, .pool = r % 7 == 0 ? 0x9000 : 0,
                                       .corr = corr};
            e->u.alloc.site.tid = i % 1000 < 500 ? 1001 : 1002;
            if (r % 4) {
                e->u.alloc.site.frames = fr[r % 8];
                e->u.alloc.site.nframes = 3;
            }
        } else {
            e->type = VT_EV_FREE;
            e->u.free = (vt_ev_free){.address = live[slot], .device = (uint32_t)(r % 2), .kind = VT_MEM_DEVICE,
                                     .api = VT_API_MALLOC_ASYNC, .stream = 0x5000 + (i % 300 < 150 ? r % 20 : 0) * 16, .corr = corr};
            e->u.free.site.tid = i % 1000 < 500 ? 1001 : 1002;
            if (r % 50 == 0) {
                e->u.free.site.frames = fr[r % 8];
                e->u.free.site.nframes = 3;
            }
            live[slot] = 0;
        }
        while (vt_writer_emit(w, e) == VT_ERR_DROPPED)
            usleep(100);
        if (i % 500 == 250 && i > 1000) {
            /* an NVTX mark after the kernel (its launch known by now):
             * allocations and a kernel pending at once meet another
             * record, and go out in the order they came */
            vt_event m;
            memset(&m, 0, sizeof(m));
            m.type = VT_EV_NVTX;
            m.time_ns = t;
            m.u.nvtx.op = VT_NVTX_MARK;
            m.u.nvtx.message = "mark";
            while (vt_writer_emit(w, &m) == VT_ERR_DROPPED)
                usleep(100);
        }
        if (i % 2000 == 1999 && i + 1 < N)
            assert_int_equal(vt_writer_flush(w), 0); /* a block cut by a flush */
    }
    /* the last event a kernel: allocations and a kernel pending at the
     * close, written before End in the order they came */
    mk_kernel(&s[N].ev, 250);
    s[N].ev.time_ns = t;
    while (vt_writer_emit(w, &s[N].ev) == VT_ERR_DROPPED)
        usleep(100);
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    vt_writer_free(w);
    *n_out = N + 1;
    *out = s;
    return path;
}

static void test_writer_mblocks(void **state)
{
    (void)state;
    size_t n;
    sent *s;
    for (int pass = 0; pass < 2; pass++) {
        char *path = write_mem(5 + (uint64_t)pass, &n, &s, pass ? 4096 : 4u << 20);
        vt_reader *r;
        char msg[256];
        /* one by one */
        assert_int_equal(vt_reader_open(&r, path, msg, sizeof(msg)), 0);
        vt_event ev;
        size_t i = 0;
        int rc;
        while ((rc = vt_reader_next(r, &ev)) == 1) {
            if (ev.type != VT_EV_KERNEL && ev.type != VT_EV_ALLOC && ev.type != VT_EV_FREE)
                continue;
            assert_true(i < n);
            same_event(&ev, &s[i].ev, i);
            i++;
        }
        if (rc)
            fail_msg("%s", vt_reader_errmsg(r));
        assert_int_equal(i, n);
        vt_reader_stats st;
        vt_reader_get_stats(r, &st);
        print_message("mem blocks (frames of %s): %zu events in %llu records, %llu frames\n", pass ? "4 KiB" : "4 MiB",
                      n, (unsigned long long)st.records, (unsigned long long)st.frames);
        assert_true(st.records < n / 4); /* most came in blocks */
        if (pass)
            assert_true(st.frames > 10);
        vt_reader_free(r);
        /* in batches of 7 (blocks drained across calls) */
        assert_int_equal(vt_reader_open(&r, path, msg, sizeof(msg)), 0);
        vt_event evs[7];
        i = 0;
        while ((rc = vt_reader_next_batch(r, evs, 7)) > 0) {
            for (int k = 0; k < rc; k++) {
                if (evs[k].type != VT_EV_KERNEL && evs[k].type != VT_EV_ALLOC && evs[k].type != VT_EV_FREE)
                    continue;
                assert_true(i < n);
                same_event(&evs[k], &s[i].ev, i);
                i++;
            }
        }
        if (rc)
            fail_msg("%s", vt_reader_errmsg(r));
        assert_int_equal(i, n);
        vt_reader_free(r);
        if (!pass)
            damage(path, s, n, "mem block");
        unlink(path);
        free(s);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handmade_batches),
        cmocka_unit_test(test_corrupt_batches),
        cmocka_unit_test(test_handmade_blocks),
        cmocka_unit_test(test_corrupt_blocks),
        cmocka_unit_test(test_writer_batches),
        cmocka_unit_test(test_writer_block_values),
        cmocka_unit_test(test_block_corruption),
        cmocka_unit_test(test_batch_truncation),
        cmocka_unit_test(test_handmade_mblocks),
        cmocka_unit_test(test_corrupt_mblocks),
        cmocka_unit_test(test_writer_mblocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
