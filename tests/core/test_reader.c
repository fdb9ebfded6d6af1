/* test_reader.c - unit tests of the streaming reader (src/core/vt_reader.c)
 * on hand-built streams (tests/core/vt_testenc.c): every record kind
 * cross-checked against protobuf-c's unpack, truncation at every offset,
 * random corruption, hostile inputs, resume after a damaged frame. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zstd.h>

#include "reader_check.h"
#include "vt_error.h"
#include "vt_reader.h"
#include "vt_testenc.h"

/* ---- reference decoding with protobuf-c ------------------------------ */

typedef struct {
    Vramtrace__Record **rec;
    size_t n;
} ref_list;

/* Decompress the whole (valid) file and unpack every entry with protobuf-c. */
static ref_list ref_unpack(const uint8_t *data, size_t size)
{
    ref_list L = {0};
    size_t cap = 1 << 16, len = 0;
    uint8_t *raw = malloc(cap);
    ZSTD_DCtx *d = ZSTD_createDCtx();
    ZSTD_inBuffer in = {data, size, 0};
    while (in.pos < in.size) {
        if (cap - len < ZSTD_DStreamOutSize()) {
            cap *= 2;
            raw = realloc(raw, cap);
        }
        ZSTD_outBuffer out = {raw, cap, len};
        size_t rc = ZSTD_decompressStream(d, &out, &in);
        assert_false(ZSTD_isError(rc));
        len = out.pos;
    }
    ZSTD_freeDCtx(d);
    size_t p = 0;
    while (p < len) {
        assert_int_equal(raw[p], 0x0A);
        p++;
        uint64_t n = 0;
        for (int sh = 0;; sh += 7) {
            n |= (uint64_t)(raw[p] & 0x7f) << sh;
            if (!(raw[p++] & 0x80))
                break;
        }
        Vramtrace__Record *r = vramtrace__record__unpack(NULL, n, raw + p);
        assert_non_null(r);
        if ((L.n & (L.n - 1)) == 0) /* grow at powers of two */
            L.rec = realloc(L.rec, sizeof(*L.rec) * (L.n ? 2 * L.n : 1));
        L.rec[L.n++] = r;
        p += n;
    }
    free(raw);
    return L;
}

static void ref_free(ref_list *L)
{
    for (size_t i = 0; i < L->n; i++)
        vramtrace__record__free_unpacked(L->rec[i], NULL);
    free(L->rec);
}

/* Read everything from `r`; compare each event with the reference list
 * (the first `limit` of it); return the final code, *nevents the count. */
static int check_reader(vt_reader *r, const ref_list *L, size_t *nevents)
{
    check_model *m = calloc(1, sizeof(*m));
    vt_event ev;
    size_t i = 0;
    int rc;
    char why[512];
    while ((rc = vt_reader_next(r, &ev)) == 1) {
        if (i >= L->n)
            fail_msg("more events than records (%zu)", L->n);
        if (check_event(m, L->rec[i], &ev, why, sizeof(why)))
            fail_msg("record %zu: %s", i, why);
        i++;
    }
    *nevents = i;
    free(m);
    return rc;
}

static int read_and_check(const uint8_t *data, size_t size, size_t *nevents)
{
    ref_list L = ref_unpack(data, size);
    vt_reader *r;
    assert_int_equal(vt_reader_open_mem(&r, data, size, "mem.zst"), 0);
    int rc = check_reader(r, &L, nevents);
    if (rc)
        print_message("reader: %s\n", vt_reader_errmsg(r));
    assert_int_equal(*nevents, L.n);
    vt_reader_free(r);
    ref_free(&L);
    return rc;
}

/* ---- tests ----------------------------------------------------------- */

static void test_sample_all_kinds(void **state)
{
    (void)state;
    for (int frames = 1; frames <= 3; frames++) {
        vt_tenc *e = vt_tenc_new(1);
        vt_tenc_sample(e, frames);
        size_t size, n;
        const uint8_t *d = vt_tenc_data(e, &size);
        assert_int_equal(read_and_check(d, size, &n), 0);
        assert_true(n > 20);
        vt_tenc_free(e);
    }
}

/* Every record kind with random field values (all varint sizes, negative
 * deltas, ids that are defined or not), packed by protobuf-c, decoded by
 * the hand decoder, compared with protobuf-c's unpack. */
static void test_crosscheck_random(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        uint64_t rng = seed * 7919;
        vt_tenc *e = vt_tenc_new(seed & 1);
        Vramtrace__Record rec;
        vt_tenc_random_record(&rng, VRAMTRACE__RECORD__BODY_HEADER, 50, &rec);
        vt_tenc_rec(e, &rec);
        vt_tenc_random_record(&rng, VRAMTRACE__RECORD__BODY_SYNC, 50, &rec);
        vt_tenc_rec(e, &rec);
        for (int i = 0; i < 400; i++) {
            int c = 3 + (int)(vt_tenc_rand(&rng) % 25); /* SYNC..END */
            vt_tenc_random_record(&rng, (Vramtrace__Record__BodyCase)c, 50, &rec);
            vt_tenc_rec(e, &rec);
            if (vt_tenc_rand(&rng) % 50 == 0)
                vt_tenc_flush(e);
        }
        vt_tenc_end_frame(e);
        size_t size, n;
        const uint8_t *d = vt_tenc_data(e, &size);
        int rc = read_and_check(d, size, &n);
        /* complete only if an End record happened to be drawn */
        assert_true(rc == 0 || rc == VT_ERR_TRUNCATED);
        assert_int_equal(n, 402);
        vt_tenc_free(e);
        vt_tenc_random_reset();
    }
}

/* ---- helpers for hand-made bytes ----------------------------------- */

typedef struct {
    uint8_t b[1 << 16];
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
static void put_bytes(buf *b, const void *p, size_t n)
{
    memcpy(b->b + b->n, p, n);
    b->n += n;
}
/* Append message `m` as length-delimited field `field` of `b`. */
static void put_msg(buf *b, uint32_t field, const buf *m)
{
    put_tag(b, field, 2);
    put_varint(b, m->n);
    put_bytes(b, m->b, m->n);
}
/* A stream entry (0x0A, len, record) around record bytes. */
static void tenc_entry(vt_tenc *e, const buf *rec)
{
    static buf ent;
    ent.n = 0;
    put_msg(&ent, 1, rec);
    vt_tenc_stream_bytes(e, ent.b, ent.n);
}

static vt_tenc *start_trace(void)
{
    vt_tenc *e = vt_tenc_new(1);
    vt_tenc_header(e, VT_FORMAT_MAGIC, VT_FORMAT_VERSION);
    vt_tenc_sync(e, 0, 1000, 500);
    return e;
}

static void add_alloc(vt_tenc *e, int64_t dt, uint64_t addr, uint64_t size)
{
    Vramtrace__Alloc a = VRAMTRACE__ALLOC__INIT;
    a.address = addr;
    a.size = size;
    vt_tenc_add(e, dt, VRAMTRACE__RECORD__BODY_ALLOC, &a);
}

/* Open `data` and read it to its first non-event result. */
static int read_all(const uint8_t *d, size_t n, size_t *events, vt_reader **keep)
{
    vt_reader *r;
    vt_event ev;
    int rc;
    assert_int_equal(vt_reader_open_mem(&r, d, n, "t.zst"), 0);
    *events = 0;
    while ((rc = vt_reader_next(r, &ev)) == 1)
        (*events)++;
    if (keep)
        *keep = r;
    else
        vt_reader_free(r);
    return rc;
}

static void assert_contains(const char *hay, const char *needle)
{
    if (!strstr(hay, needle))
        fail_msg("\"%s\" does not contain \"%s\"", hay, needle);
}

/* ---- truncation --------------------------------------------------------- */

/* A small trace (every kind, 3 frames, flush points); every prefix is read:
 * the events are a prefix of the full list (checked field by field), the
 * error is VT_ERR_TRUNCATED with "truncated at offset", the count never
 * decreases, and everything before a flush point is there once the file
 * reaches that point. */
static void test_truncate_every_offset(void **state)
{
    (void)state;
    uint64_t rng = 99;
    vt_tenc *e = vt_tenc_new(1);
    size_t flush_size[64], flush_count[64], nflush = 0, count = 0;
    Vramtrace__Record rec;
    vt_tenc_random_record(&rng, VRAMTRACE__RECORD__BODY_HEADER, 8, &rec);
    vt_tenc_rec(e, &rec);
    vt_tenc_sync(e, 0, 1000, 2000);
    count = 2;
    for (int i = 0; i < 120; i++) {
        int c = 4 + (int)(vt_tenc_rand(&rng) % 23); /* STRING..NOTE */
        vt_tenc_random_record(&rng, (Vramtrace__Record__BodyCase)c, 8, &rec);
        vt_tenc_rec(e, &rec);
        count++;
        if (i % 15 == 14) {
            if (i % 45 == 44) {
                vt_tenc_end_frame(e);
                vt_tenc_sync(e, (uint64_t)(i / 45 + 1), 5000, 6000);
                count++;
            } else {
                vt_tenc_flush(e);
            }
            flush_size[nflush] = vt_tenc_size(e);
            flush_count[nflush++] = count - (i % 45 == 44); /* the new sync is not flushed yet */
        }
    }
    vt_tenc_end(e, 0);
    vt_tenc_end_frame(e);
    size_t size;
    const uint8_t *d = vt_tenc_data(e, &size);
    uint8_t *copy = malloc(size);
    memcpy(copy, d, size);
    ref_list L = ref_unpack(copy, size);
    size_t prev = 0;
    for (size_t len = 0; len <= size; len++) {
        vt_reader *r;
        size_t n;
        /* a heap copy of exactly len bytes, so ASan sees any overread */
        uint8_t *pre = malloc(len ? len : 1);
        memcpy(pre, copy, len);
        assert_int_equal(vt_reader_open_mem(&r, pre, len, "cut.zst"), 0);
        int rc = check_reader(r, &L, &n);
        if (len == size) {
            assert_int_equal(rc, 0);
            assert_int_equal(n, L.n);
        } else {
            if (rc != VT_ERR_TRUNCATED)
                fail_msg("len %zu: rc %d: %s", len, rc, vt_reader_errmsg(r));
            assert_contains(vt_reader_errmsg(r), "cut.zst: truncated at offset ");
            vt_event ev;
            assert_int_equal(vt_reader_next(r, &ev), VT_ERR_TRUNCATED); /* final */
        }
        assert_true(n >= prev);
        prev = n;
        for (size_t f = 0; f < nflush; f++)
            if (len >= flush_size[f] && n < flush_count[f])
                fail_msg("len %zu: %zu events, but %zu were flushed by offset %zu", len, n, flush_count[f],
                         flush_size[f]);
        vt_reader_free(r);
        free(pre);
    }
    ref_free(&L);
    free(copy);
    vt_tenc_free(e);
    vt_tenc_random_reset();
}

/* ---- corruption --------------------------------------------------------- */

static void read_damaged(const uint8_t *d, size_t n, const char *name)
{
    vt_reader *r;
    vt_event ev;
    int rc, errors = 0;
    assert_int_equal(vt_reader_open_mem(&r, d, n, name), 0);
    for (int iter = 0;; iter++) {
        assert_true(iter < 1000000);
        rc = vt_reader_next(r, &ev);
        if (rc == 1)
            continue;
        if (rc == VT_ERR_CORRUPT || rc == VT_ERR_TOO_LARGE) {
            const char *msg = vt_reader_errmsg(r);
            assert_true(strncmp(msg, name, strlen(name)) == 0);
            assert_contains(msg, " at offset ");
            assert_true(++errors < 100000);
            continue;
        }
        break;
    }
    assert_true(rc == 0 || rc == VT_ERR_TRUNCATED || rc == VT_ERR_VERSION);
    if (rc) {
        assert_true(strncmp(vt_reader_errmsg(r), name, strlen(name)) == 0);
        assert_int_equal(vt_reader_next(r, &ev), rc);
    }
    vt_reader_get_stats(r, &(vt_reader_stats){0});
    vt_reader_free(r);
}

static void test_random_corruption(void **state)
{
    (void)state;
    for (int checksum = 0; checksum <= 1; checksum++) {
        vt_tenc *e = vt_tenc_new(checksum);
        vt_tenc_sample(e, 4);
        size_t size;
        const uint8_t *d = vt_tenc_data(e, &size);
        uint8_t *c = malloc(size);
        for (uint64_t seed = 1; seed <= 1500; seed++) {
            uint64_t rng = seed;
            memcpy(c, d, size);
            int flips = 1 + (int)(vt_tenc_rand(&rng) % 8);
            for (int i = 0; i < flips; i++) {
                size_t at = vt_tenc_rand(&rng) % size;
                switch (vt_tenc_rand(&rng) % 3) {
                case 0: c[at] ^= (uint8_t)(1u << (vt_tenc_rand(&rng) % 8)); break;
                case 1: c[at] = (uint8_t)vt_tenc_rand(&rng); break;
                default: c[at] = 0; break;
                }
            }
            read_damaged(c, size, "bad.zst");
        }
        free(c);
        vt_tenc_free(e);
    }
}

/* Damage inside the compressed data of the middle frame: every event of
 * frames 1 and 3 comes out, one error names the middle frame's offset. */
static void test_resume_after_damaged_frame(void **state)
{
    (void)state;
    for (int how = 0; how < 3; how++) {
        vt_tenc *e = start_trace();
        for (int i = 0; i < 50; i++)
            add_alloc(e, 10, 0x1000 + (uint64_t)i, 100);
        vt_tenc_end_frame(e);
        size_t f2 = vt_tenc_size(e);
        vt_tenc_sync(e, 1, 2000, 500);
        for (int i = 0; i < 50; i++)
            add_alloc(e, 10, 0x2000 + (uint64_t)i * 977, 200 + (uint64_t)i * 31);
        vt_tenc_end_frame(e);
        size_t f3 = vt_tenc_size(e);
        vt_tenc_sync(e, 2, 3000, 500);
        for (int i = 0; i < 50; i++)
            add_alloc(e, 10, 0x3000 + (uint64_t)i, 300);
        vt_tenc_end(e, 150);
        vt_tenc_end_frame(e);
        size_t size;
        uint8_t *d = (uint8_t *)vt_tenc_data(e, &size);
        if (how == 0) /* the middle of the frame: a checksum or block error */
            for (size_t i = f2 + (f3 - f2) / 2; i < f2 + (f3 - f2) / 2 + 6; i++)
                d[i] ^= 0x5a;
        else if (how == 1) /* the magic number: no frame starts there */
            d[f2] = 0;
        else /* the block header right after the frame header */
            memset(d + f2 + 6, 0xff, 3);
        vt_reader *r;
        vt_event ev;
        int rc;
        assert_int_equal(vt_reader_open_mem(&r, d, size, "mid.zst"), 0);
        uint64_t seen1 = 0, seen3 = 0, errors = 0;
        while ((rc = vt_reader_next(r, &ev)) != 0) {
            if (rc == VT_ERR_CORRUPT) {
                char want[64];
                snprintf(want, sizeof(want), "offset %zu", f2);
                assert_contains(vt_reader_errmsg(r), want);
                errors++;
                continue;
            }
            assert_int_equal(rc, 1);
            if (ev.type == VT_EV_ALLOC && ev.u.alloc.size == 100) {
                assert_int_equal(ev.u.alloc.address, 0x1000 + seen1);
                assert_int_equal(ev.time_ns, 1000 + 10 * (seen1 + 1));
                seen1++;
            }
            if (ev.type == VT_EV_ALLOC && ev.u.alloc.size == 300) {
                assert_int_equal(ev.u.alloc.address, 0x3000 + seen3);
                assert_int_equal(ev.time_ns, 3000 + 10 * (seen3 + 1));
                seen3++;
            }
        }
        assert_int_equal(errors, 1);
        assert_int_equal(seen1, 50);
        assert_int_equal(seen3, 50);
        vt_reader_stats st;
        vt_reader_get_stats(r, &st);
        assert_true(st.complete);
        assert_int_equal(st.resyncs, 1);
        assert_true(st.skipped_bytes > 0);
        vt_reader_free(r);
        vt_tenc_free(e);
    }
}

/* Damage in a later block of one frame: nothing of the frame is handed
 * out (issue 24: it is decoded whole and checked before any of its records
 * goes out; the blocks before the damage may hold altered bytes that only
 * the checksum would catch), the frame is counted as failed, the error
 * names the frame.  From a pipe no frame is held whole: its records go out
 * as they are decoded, counted as unverified (test_pipe). */
static void test_damage_in_later_block(void **state)
{
    (void)state;
    for (int how = 0; how < 2; how++) {
        vt_tenc *e = start_trace();
        size_t flush_at[5];
        for (int b = 0; b < 5; b++) {
            for (int i = 0; i < 20; i++)
                add_alloc(e, 10, 0x1000 + (uint64_t)(b * 20 + i), 4096 + (uint64_t)i * 8);
            vt_tenc_flush(e);
            flush_at[b] = vt_tenc_size(e);
        }
        vt_tenc_end(e, 100);
        vt_tenc_end_frame(e);
        size_t size;
        uint8_t *d = (uint8_t *)vt_tenc_data(e, &size);
        if (how == 0)
            memset(d + flush_at[2], 0xff, 3); /* block header of the 4th block */
        else
            d[flush_at[2] + (flush_at[3] - flush_at[2]) / 2] ^= 0x10; /* inside it: checksum or decode error */
        vt_reader *r;
        vt_event ev;
        int rc;
        uint64_t good = 0;
        assert_int_equal(vt_reader_open_mem(&r, d, size, "blk.zst"), 0);
        uint64_t allocs = 0;
        while ((rc = vt_reader_next(r, &ev)) == 1) {
            allocs += ev.type == VT_EV_ALLOC;
            if (ev.type == VT_EV_ALLOC && ev.u.alloc.address == 0x1000 + good)
                good++;
        }
        assert_int_equal(allocs, 0);
        assert_int_equal(rc, VT_ERR_CORRUPT);
        print_message("%s (block 4 at [%zu, %zu))\n", vt_reader_errmsg(r), flush_at[2], flush_at[3]);
        assert_non_null(strstr(vt_reader_errmsg(r), "(frame starting at offset 0)"));
        assert_non_null(strstr(vt_reader_errmsg(r), "none of its records used"));
        vt_reader_stats st;
        vt_reader_get_stats(r, &st);
        assert_int_equal(st.frames_failed, 1);
        while ((rc = vt_reader_next(r, &ev)) != 0 && rc != VT_ERR_TRUNCATED)
            ;
        vt_reader_free(r);
        vt_tenc_free(e);
    }
}

/* Garbage bytes between two frames: error with the offset, then resume. */
static void test_garbage_between_frames(void **state)
{
    (void)state;
    vt_tenc *e = start_trace();
    add_alloc(e, 1, 0x10, 1);
    vt_tenc_end_frame(e);
    size_t g = vt_tenc_size(e);
    vt_tenc_file_bytes(e, "garbage!garbage!", 16);
    vt_tenc_sync(e, 1, 5000, 0);
    add_alloc(e, 1, 0x20, 2);
    vt_tenc_end(e, 2);
    vt_tenc_end_frame(e);
    size_t size, n;
    const uint8_t *d = vt_tenc_data(e, &size);
    vt_reader *r;
    vt_event ev;
    assert_int_equal(vt_reader_open_mem(&r, d, size, "g.zst"), 0);
    n = 0;
    int rc;
    while ((rc = vt_reader_next(r, &ev)) == 1)
        n++;
    assert_int_equal(n, 3);
    assert_int_equal(rc, VT_ERR_CORRUPT);
    char want[80];
    snprintf(want, sizeof(want), "g.zst: corrupt data at offset %zu", g);
    assert_contains(vt_reader_errmsg(r), want);
    while ((rc = vt_reader_next(r, &ev)) == 1)
        n++;
    assert_int_equal(rc, 0);
    assert_int_equal(n, 3 + 3);
    vt_reader_stats st;
    vt_reader_get_stats(r, &st);
    assert_int_equal(st.skipped_bytes, 16);
    vt_reader_free(r);
    vt_tenc_free(e);
}

/* ---- hostile inputs ----------------------------------------------------- */

static void test_empty_and_not_zstd(void **state)
{
    (void)state;
    size_t n;
    vt_reader *r;
    assert_int_equal(read_all((const uint8_t *)"", 0, &n, &r), VT_ERR_TRUNCATED);
    assert_string_equal(vt_reader_errmsg(r), "t.zst: truncated at offset 0 (empty file: no header)");
    vt_reader_free(r);
    const char *txt = "hello, this is not a trace\n";
    assert_int_equal(read_all((const uint8_t *)txt, strlen(txt), &n, &r), VT_ERR_VERSION);
    assert_contains(vt_reader_errmsg(r), "t.zst: not a vramtrace trace");
    assert_int_equal(n, 0);
    vt_reader_free(r);
    assert_int_equal(read_all((const uint8_t *)"\x28\xb5", 2, &n, NULL), VT_ERR_TRUNCATED);
    assert_int_equal(read_all((const uint8_t *)"ab", 2, &n, NULL), VT_ERR_VERSION);
    /* a zstd frame of text */
    char c[256];
    size_t cn = ZSTD_compress(c, sizeof(c), txt, strlen(txt), 1);
    int rc = read_all((const uint8_t *)c, cn, &n, &r);
    assert_int_equal(n, 0);
    assert_true(rc == VT_ERR_CORRUPT || rc == VT_ERR_VERSION);
    vt_reader_free(r);
    read_damaged((const uint8_t *)c, cn, "t.zst");
}

static void test_bad_magic_and_version(void **state)
{
    (void)state;
    size_t size, n;
    vt_reader *r;
    vt_tenc *e = vt_tenc_new(1);
    vt_tenc_header(e, 0x12345678, VT_FORMAT_VERSION);
    vt_tenc_sync(e, 0, 1, 1);
    vt_tenc_end(e, 0);
    vt_tenc_end_frame(e);
    const uint8_t *d = vt_tenc_data(e, &size);
    assert_int_equal(read_all(d, size, &n, &r), VT_ERR_VERSION);
    assert_contains(vt_reader_errmsg(r), "bad magic 0x12345678");
    assert_int_equal(n, 0);
    assert_null(vt_reader_header(r));
    vt_reader_free(r);
    vt_tenc_free(e);

    e = vt_tenc_new(1);
    vt_tenc_header(e, VT_FORMAT_MAGIC, 99);
    vt_tenc_sync(e, 0, 1, 1);
    vt_tenc_end_frame(e);
    d = vt_tenc_data(e, &size);
    assert_int_equal(read_all(d, size, &n, &r), VT_ERR_VERSION);
    assert_contains(vt_reader_errmsg(r), "t.zst: header at offset ");
    assert_contains(vt_reader_errmsg(r), ": unsupported format version 99 (this vramtrace reads versions 1 to 3)");
    vt_reader_free(r);
    vt_tenc_free(e);

    e = vt_tenc_new(1); /* no header */
    vt_tenc_sync(e, 0, 1, 1);
    vt_tenc_end(e, 0);
    vt_tenc_end_frame(e);
    d = vt_tenc_data(e, &size);
    assert_int_equal(read_all(d, size, &n, &r), VT_ERR_VERSION);
    assert_contains(vt_reader_errmsg(r), "first record is not a header (sync)");
    vt_reader_free(r);
    vt_tenc_free(e);
}

static void test_huge_lengths(void **state)
{
    (void)state;
    size_t size, n;
    vt_reader *r;
    vt_event ev;
    /* entry length 2^40, then 17 MiB, then an 11-byte varint */
    static const uint8_t huge[] = {0x0A, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20};
    static const uint8_t big[] = {0x0A, 0x80, 0x80, 0x88, 0x08}; /* 17 MiB */
    static const uint8_t over[] = {0x0A, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    const uint8_t *cases[] = {huge, big, over};
    size_t lens[] = {sizeof(huge), sizeof(big), sizeof(over)};
    for (int c = 0; c < 3; c++) {
        vt_tenc *e = start_trace();
        add_alloc(e, 1, 1, 1);
        vt_tenc_stream_bytes(e, cases[c], lens[c]);
        vt_tenc_stream_bytes(e, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 20);
        vt_tenc_end_frame(e);
        vt_tenc_sync(e, 1, 9000, 0);
        add_alloc(e, 1, 2, 2);
        vt_tenc_end(e, 2);
        vt_tenc_end_frame(e);
        const uint8_t *d = vt_tenc_data(e, &size);
        int rc = read_all(d, size, &n, &r);
        assert_int_equal(n, 3);
        if (c < 2) {
            assert_int_equal(rc, VT_ERR_TOO_LARGE);
            assert_contains(vt_reader_errmsg(r), "exceeds the 16777216-byte limit");
        } else {
            assert_int_equal(rc, VT_ERR_CORRUPT);
            assert_contains(vt_reader_errmsg(r), "bad record length");
        }
        assert_contains(vt_reader_errmsg(r), "frame starting at offset 0");
        /* resumes at the second frame */
        n = 0;
        while ((rc = vt_reader_next(r, &ev)) == 1)
            n++;
        assert_int_equal(rc, 0);
        assert_int_equal(n, 3);
        vt_reader_free(r);
        vt_tenc_free(e);
    }
}

/* Unknown fields of every wire type (groups nested) inside a known message,
 * in the Record and at the Trace level; a record with an unknown body. */
static void test_unknown_fields_and_records(void **state)
{
    (void)state;
    buf body = {0}, rec = {0}, grp = {0};
    put_tag(&body, 1, 0);
    put_varint(&body, 0xabcdef);          /* address */
    put_tag(&body, 100, 0);
    put_varint(&body, 1ull << 60);        /* unknown varint */
    put_tag(&body, 101, 1);
    put_bytes(&body, "12345678", 8);      /* unknown fixed64 */
    put_tag(&body, 102, 2);
    put_varint(&body, 3);
    put_bytes(&body, "abc", 3);           /* unknown bytes */
    put_tag(&body, 103, 5);
    put_bytes(&body, "1234", 4);          /* unknown fixed32 */
    put_tag(&body, 104, 3);               /* group 104 { group 105 { varint } } */
    put_tag(&body, 105, 3);
    put_tag(&body, 1, 0);
    put_varint(&body, 7);
    put_tag(&body, 105, 4);
    put_tag(&body, 104, 4);
    put_tag(&body, 2, 0);
    put_varint(&body, 4096);              /* size, after the unknowns */
    put_tag(&body, 3, 2);                 /* known field, wrong wire type: skipped */
    put_varint(&body, 1);
    put_bytes(&body, "x", 1);
    put_tag(&rec, 1, 0);
    put_varint(&rec, 20);                 /* ts_delta +10 */
    put_tag(&rec, 999, 0);
    put_varint(&rec, 5);                  /* unknown Record field */
    put_msg(&rec, 7, &body);

    buf newkind = {0}, nk = {0};
    put_tag(&nk, 1, 0);
    put_varint(&nk, 1);
    put_tag(&newkind, 1, 0);
    put_varint(&newkind, 200);            /* +100 */
    put_msg(&newkind, 40, &nk);           /* a record kind from the future */
    (void)grp;

    vt_tenc *e = start_trace();
    tenc_entry(e, &rec);
    tenc_entry(e, &newkind);
    static const uint8_t trace_unknown[] = {0x10, 0x05, 0x1A, 0x02, 'h', 'i'}; /* Trace fields 2, 3 */
    vt_tenc_stream_bytes(e, trace_unknown, sizeof(trace_unknown));
    add_alloc(e, 1, 0x99, 9);
    vt_tenc_end(e, 3);
    vt_tenc_end_frame(e);
    size_t size;
    const uint8_t *d = vt_tenc_data(e, &size);
    vt_reader *r;
    vt_event ev;
    assert_int_equal(vt_reader_open_mem(&r, d, size, "u.zst"), 0);
    assert_int_equal(vt_reader_next(r, &ev), 1);
    assert_int_equal(ev.type, VT_EV_HEADER);
    assert_int_equal(vt_reader_next(r, &ev), 1);
    assert_int_equal(ev.type, VT_EV_SYNC);
    assert_int_equal(vt_reader_next(r, &ev), 1);
    assert_int_equal(ev.type, VT_EV_ALLOC);
    assert_int_equal(ev.u.alloc.address, 0xabcdef);
    assert_int_equal(ev.u.alloc.size, 4096);
    assert_int_equal(ev.u.alloc.device, 0);
    assert_int_equal(ev.time_ns, 1010);
    assert_int_equal(vt_reader_next(r, &ev), 1); /* the unknown record is skipped */
    assert_int_equal(ev.type, VT_EV_ALLOC);
    assert_int_equal(ev.u.alloc.address, 0x99);
    assert_int_equal(ev.time_ns, 1010 + 100 + 1); /* its delta still counts */
    assert_int_equal(vt_reader_next(r, &ev), 1);
    assert_int_equal(ev.type, VT_EV_END);
    assert_int_equal(vt_reader_next(r, &ev), 0);
    vt_reader_stats st;
    vt_reader_get_stats(r, &st);
    assert_int_equal(st.unknown_records, 1);
    /* 5 in Alloc (the group once) + wrong-type field 3 + Record field 999
     * + the future body (field 40) + 2 Trace fields */
    assert_int_equal(st.unknown_fields, 5 + 1 + 1 + 1 + 2);
    assert_true(st.complete);
    vt_reader_free(r);
    vt_tenc_free(e);
}

static void test_hostile_records(void **state)
{
    (void)state;
    /* each: a record that must be refused, then a good frame */
    buf recs[8];
    memset(recs, 0, sizeof(recs));
    int nrec = 0;
    buf m;
    /* groups nested 100 deep */
    m.n = 0;
    for (int i = 0; i < 100; i++)
        put_tag(&m, 50, 3);
    put_msg(&recs[nrec++], 7, &m);
    /* invalid wire type 6 */
    m.n = 0;
    put_tag(&m, 50, 6);
    put_msg(&recs[nrec++], 7, &m);
    /* string id far beyond anything defined: no 16 GiB table */
    m.n = 0;
    put_tag(&m, 1, 0);
    put_varint(&m, 0xfffffff0u);
    put_tag(&m, 2, 2);
    put_varint(&m, 1);
    put_bytes(&m, "x", 1);
    put_msg(&recs[nrec++], 4, &m);
    /* a body length past the record */
    m.n = 0;
    put_tag(&recs[nrec], 7, 2);
    put_varint(&recs[nrec], 1000);
    put_bytes(&recs[nrec++], "ab", 2);
    /* stack that is its own parent */
    m.n = 0;
    put_tag(&m, 1, 0);
    put_varint(&m, 5);
    put_tag(&m, 3, 0);
    put_varint(&m, 5);
    put_msg(&recs[nrec++], 5, &m);
    /* field number 0 */
    m.n = 0;
    put_tag(&m, 0, 0);
    put_varint(&m, 1);
    put_msg(&recs[nrec++], 8, &m);
    /* truncated varint at the end of a message */
    m.n = 0;
    put_tag(&m, 1, 0);
    m.b[m.n++] = 0x80;
    put_msg(&recs[nrec++], 8, &m);
    for (int i = 0; i < nrec; i++) {
        vt_tenc *e = start_trace();
        add_alloc(e, 1, 1, 1);
        tenc_entry(e, &recs[i]);
        add_alloc(e, 1, 2, 2); /* lost with the rest of the frame */
        vt_tenc_end_frame(e);
        vt_tenc_sync(e, 1, 9000, 0);
        add_alloc(e, 1, 3, 3);
        vt_tenc_end(e, 2);
        vt_tenc_end_frame(e);
        size_t size, n;
        vt_reader *r;
        vt_event ev;
        const uint8_t *d = vt_tenc_data(e, &size);
        int rc = read_all(d, size, &n, &r);
        if (rc != VT_ERR_CORRUPT)
            fail_msg("case %d: rc %d %s", i, rc, vt_reader_errmsg(r));
        assert_int_equal(n, 3);
        assert_contains(vt_reader_errmsg(r), "t.zst: corrupt record at offset ");
        print_message("case %d: %s\n", i, vt_reader_errmsg(r));
        n = 0;
        uint64_t last = 0;
        while ((rc = vt_reader_next(r, &ev)) == 1) {
            n++;
            if (ev.type == VT_EV_ALLOC)
                last = ev.u.alloc.address;
        }
        assert_int_equal(rc, 0);
        assert_int_equal(n, 3);
        assert_int_equal(last, 3);
        vt_reader_free(r);
        vt_tenc_free(e);
    }
}

static void test_record_crossing_frames(void **state)
{
    (void)state;
    vt_tenc *e = start_trace();
    add_alloc(e, 1, 1, 1);
    static const uint8_t part[] = {0x0A, 0x10, 0x08, 0x02};
    vt_tenc_stream_bytes(e, part, sizeof(part));
    vt_tenc_end_frame(e);
    size_t f2 = vt_tenc_size(e);
    vt_tenc_sync(e, 1, 9000, 0);
    add_alloc(e, 1, 3, 3);
    vt_tenc_end(e, 2);
    vt_tenc_end_frame(e);
    size_t size, n;
    vt_reader *r;
    vt_event ev;
    const uint8_t *d = vt_tenc_data(e, &size);
    assert_int_equal(read_all(d, size, &n, &r), VT_ERR_CORRUPT);
    assert_int_equal(n, 3);
    assert_contains(vt_reader_errmsg(r), "crosses the end of its zstd frame");
    n = 0;
    while (vt_reader_next(r, &ev) == 1)
        n++;
    assert_int_equal(n, 3);
    (void)f2;
    vt_reader_free(r);
    vt_tenc_free(e);
}

/* After a damaged frame the next frame must start with a Sync. */
static void test_resume_needs_sync(void **state)
{
    (void)state;
    vt_tenc *e = start_trace();
    vt_tenc_stream_bytes(e, "\x0A\x01\xff", 3); /* corrupt record */
    vt_tenc_end_frame(e);
    add_alloc(e, 1, 7, 7);                      /* frame without a Sync: skipped */
    vt_tenc_end_frame(e);
    vt_tenc_sync(e, 2, 100, 0);
    add_alloc(e, 1, 8, 8);
    vt_tenc_end(e, 2);
    vt_tenc_end_frame(e);
    size_t size, n;
    vt_reader *r;
    vt_event ev;
    const uint8_t *d = vt_tenc_data(e, &size);
    assert_int_equal(read_all(d, size, &n, &r), VT_ERR_CORRUPT);
    assert_int_equal(n, 2);
    assert_int_equal(vt_reader_next(r, &ev), VT_ERR_CORRUPT);
    assert_contains(vt_reader_errmsg(r), "does not start with a Sync record");
    assert_int_equal(vt_reader_next(r, &ev), 1);
    assert_int_equal(ev.type, VT_EV_SYNC);
    assert_int_equal(vt_reader_next(r, &ev), 1);
    assert_int_equal(ev.u.alloc.address, 8);
    assert_int_equal(ev.time_ns, 101);
    assert_int_equal(vt_reader_next(r, &ev), 1);
    assert_int_equal(vt_reader_next(r, &ev), 0);
    vt_reader_stats st;
    vt_reader_get_stats(r, &st);
    assert_int_equal(st.sync_gaps, 1);
    vt_reader_free(r);
    vt_tenc_free(e);
}

/* zstd skippable frames (e.g. a container's metadata) are passed over,
 * before the first frame too; the header is still required first. */
static void test_skippable_frames(void **state)
{
    (void)state;
    static const uint8_t skip[] = {0x50, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 'a', 'b', 'c'};
    for (int bad = 0; bad <= 1; bad++) {
        vt_tenc *e = vt_tenc_new(1);
        vt_tenc_file_bytes(e, skip, sizeof(skip));
        if (!bad)
            vt_tenc_header(e, VT_FORMAT_MAGIC, VT_FORMAT_VERSION);
        vt_tenc_sync(e, 0, 10, 10);
        add_alloc(e, 1, 1, 1);
        vt_tenc_end_frame(e);
        vt_tenc_file_bytes(e, skip, sizeof(skip));
        vt_tenc_sync(e, 1, 20, 20);
        vt_tenc_end(e, 1);
        vt_tenc_end_frame(e);
        size_t size, n;
        const uint8_t *d = vt_tenc_data(e, &size);
        vt_reader *r;
        int rc = read_all(d, size, &n, &r);
        if (rc != (bad ? VT_ERR_VERSION : 0))
            fail_msg("bad=%d: rc %d: %s", bad, rc, vt_reader_errmsg(r));
        if (!bad) {
            assert_int_equal(rc, 0);
            assert_int_equal(n, 5);
        } else {
            assert_int_equal(rc, VT_ERR_VERSION);
            assert_contains(vt_reader_errmsg(r), "first record is not a header");
        }
        vt_reader_free(r);
        vt_tenc_free(e);
    }
}

/* ---- tables -------------------------------------------------------------- */

static void test_tables_and_stacks(void **state)
{
    (void)state;
    vt_tenc *e = vt_tenc_new(1);
    vt_tenc_sample(e, 1);
    size_t size;
    const uint8_t *d = vt_tenc_data(e, &size);
    vt_reader *r;
    vt_event ev;
    assert_int_equal(vt_reader_open_mem(&r, d, size, "s.zst"), 0);
    assert_null(vt_reader_header(r));
    int rc;
    while ((rc = vt_reader_next(r, &ev)) == 1)
        ;
    assert_int_equal(rc, 0);
    const vt_ev_header *h = vt_reader_header(r);
    assert_non_null(h);
    assert_int_equal(h->pid, 4242);
    assert_string_equal(h->hostname, "testhost");
    assert_int_equal(h->argc, 3);
    assert_string_equal(h->argv[2], "--epochs=1");
    assert_int_equal(h->nenv, 2);
    assert_string_equal(h->env_names[1], "WORLD_SIZE");
    assert_string_equal(h->env_values[1], "2");
    assert_string_equal(vt_reader_string(r, 1), "_Z10vectorAddPKfS0_Pfi");
    assert_null(vt_reader_string(r, 0));
    assert_null(vt_reader_string(r, 7));
    assert_null(vt_reader_string(r, 1u << 31));
    assert_int_equal(vt_reader_thread(r, 2)->tid, 4250);
    assert_string_equal(vt_reader_thread(r, 2)->name, "pt_autograd_0");
    assert_string_equal(vt_reader_module(r, 1)->path, "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
    assert_int_equal(vt_reader_module(r, 1)->build_id_len, 4);
    assert_int_equal(vt_reader_frame(r, 3)->line, 42);
    assert_int_equal(vt_reader_frame(r, 3)->kind, VT_FRAME_PYTHON);
    assert_int_equal(vt_reader_launch(r, 2)->grid[0], 1024);
    assert_string_equal(vt_reader_device(r, 0)->name, "NVIDIA H200");
    assert_null(vt_reader_device(r, 1));
    assert_null(vt_reader_device(r, 1u << 30));
    uint32_t fr[8];
    assert_int_equal(vt_reader_stack(r, 2, fr, 8), 3); /* 1, 2 then parent 1: 3 */
    assert_int_equal(fr[0], 1);
    assert_int_equal(fr[1], 2);
    assert_int_equal(fr[2], 3);
    assert_int_equal(vt_reader_stack(r, 2, fr, 1), 3);
    assert_int_equal(vt_reader_stack(r, 9, fr, 8), 0);
    vt_reader_free(r);
    vt_tenc_free(e);
    vt_reader_free(NULL);
}

/* A 400 k-deep chain of stacks, every other link empty (issue: dump and
 * report walked the whole chain for each stack, quadratic: ~half an hour for
 * a 2 MB file).  Reading it and asking every stack for its depth and first
 * frames is linear now; before, this test ran into the ctest timeout. */
static void test_deep_stack_chain(void **state)
{
    (void)state;
    enum { N = 400000 };
    vt_tenc *e = start_trace();
    Vramtrace__Frame f = VRAMTRACE__FRAME__INIT;
    f.id = 1;
    f.kind = VRAMTRACE__FRAME_KIND__FRAME_NATIVE;
    f.ip = 0x1000;
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_FRAME, &f);
    uint32_t one[] = {1};
    for (uint32_t id = 1; id <= N; id++) {
        Vramtrace__Stack s = VRAMTRACE__STACK__INIT;
        s.id = id;
        s.parent = id - 1;
        s.n_frame = (id & 1) ? 1 : 0; /* odd ids hold a frame, even are empty */
        s.frame = one;
        vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_STACK, &s);
    }
    vt_tenc_end(e, 0);
    vt_tenc_end_frame(e);
    size_t size;
    const uint8_t *d = vt_tenc_data(e, &size);
    vt_reader *r;
    assert_int_equal(vt_reader_open_mem(&r, d, size, "deep.zst"), 0);
    vt_event ev;
    int rc;
    uint64_t sum = 0, n = 0;
    uint32_t fr[4];
    while ((rc = vt_reader_next(r, &ev)) == 1)
        if (ev.type == VT_EV_STACK) {
            uint32_t id = ev.u.stack.id;
            uint32_t depth = vt_reader_stack(r, id, fr, 4);
            if (depth != (id + 1) / 2)
                fail_msg("stack %u: depth %u, expected %u", id, depth, (id + 1) / 2);
            for (uint32_t i = 0; i < (depth < 4 ? depth : 4); i++)
                assert_int_equal(fr[i], 1);
            assert_int_equal(vt_reader_stack(r, id, NULL, 0), depth);
            sum += depth;
            n++;
        }
    if (rc)
        fail_msg("deep chain: rc %d: %s", rc, vt_reader_errmsg(r));
    assert_int_equal(n, N);
    assert_true(sum > 0);
    vt_reader_free(r);
    vt_tenc_free(e);
}

/* 200 k distinct 1000-byte strings compress to almost nothing: the tables
 * may not hold more than 64 MiB + 32 x the compressed bytes read, so the
 * reader stops with VT_ERR_LIMIT (final), a message naming the limit and
 * the offset, and the strings defined before it kept. */
static void test_table_budget(void **state)
{
    (void)state;
    vt_tenc *e = start_trace();
    char str[1001];
    memset(str, 'x', 1000);
    str[1000] = 0;
    for (uint32_t id = 1; id <= 200000; id++) {
        snprintf(str, 11, "%010u", id);
        str[10] = 'x';
        vt_tenc_string(e, id, str);
    }
    vt_tenc_end(e, 0);
    vt_tenc_end_frame(e);
    size_t size;
    const uint8_t *d = vt_tenc_data(e, &size);
    vt_reader *r;
    assert_int_equal(vt_reader_open_mem(&r, d, size, "strings.zst"), 0);
    vt_table_budget b = {.limit = 1ull << 40, .used = 0};
    vt_reader_share_budget(r, &b);
    vt_event ev;
    int rc;
    uint32_t strings = 0;
    while ((rc = vt_reader_next(r, &ev)) == 1)
        strings += ev.type == VT_EV_STRING;
    assert_int_equal(rc, VT_ERR_LIMIT);
    assert_contains(vt_reader_errmsg(r), "strings.zst: record at offset");
    assert_contains(vt_reader_errmsg(r), "MiB, the limit for a file");
    assert_int_equal(vt_reader_next(r, &ev), VT_ERR_LIMIT); /* final */
    vt_reader_stats st;
    vt_reader_get_stats(r, &st);
    uint64_t lim = VT_READER_TABLE_FLOOR + VT_READER_TABLE_RATIO * st.bytes_in;
    assert_true(st.table_bytes <= lim);
    assert_true(st.table_bytes > (VT_READER_TABLE_FLOOR * 9) / 10);
    assert_int_equal(b.used, st.table_bytes);
    assert_true(strings > 50000 && strings < 200000);
    assert_non_null(vt_reader_string(r, 1));
    vt_reader_free(r);

    /* the budget shared by the files of one command stops the second file */
    vt_table_budget small = {.limit = 48ull << 20, .used = 0};
    assert_int_equal(vt_reader_open_mem(&r, d, size, "a.zst"), 0);
    vt_reader_share_budget(r, &small);
    while ((rc = vt_reader_next(r, &ev)) == 1)
        ;
    assert_int_equal(rc, VT_ERR_LIMIT);
    assert_contains(vt_reader_errmsg(r), "of all files of this command past 48 MiB");
    assert_true(small.used <= small.limit);
    vt_reader_free(r);
    vt_tenc_free(e);
}

/* ---- files ---------------------------------------------------------------- */

static char *write_tmp(const uint8_t *d, size_t n)
{
    char *path = strdup("/tmp/vt_reader_test_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, d, n), (ssize_t)n);
    close(fd);
    return path;
}

/* Follow mode (vramtrace top): the file grows by pieces of 1 to 97 bytes,
 * cut anywhere (inside zstd frame headers, blocks, records); after each
 * piece the reader hands out what is complete and says VT_ERR_AGAIN, and
 * in the end it has handed out every record once, in order, field by
 * field as a reader of the whole file does, with each compressed byte
 * read once. */
static void test_follow_growing_file(void **state)
{
    (void)state;
    uint64_t rng = 7;
    vt_tenc *e = vt_tenc_new(1);
    Vramtrace__Record rec;
    vt_tenc_random_record(&rng, VRAMTRACE__RECORD__BODY_HEADER, 8, &rec);
    vt_tenc_rec(e, &rec);
    vt_tenc_sync(e, 0, 1000, 2000);
    for (int i = 0; i < 150; i++) {
        int c = 4 + (int)(vt_tenc_rand(&rng) % 23);
        vt_tenc_random_record(&rng, (Vramtrace__Record__BodyCase)c, 8, &rec);
        vt_tenc_rec(e, &rec);
        if (i % 20 == 19)
            vt_tenc_flush(e);
        if (i % 50 == 49) {
            vt_tenc_end_frame(e);
            vt_tenc_sync(e, (uint64_t)(i / 50 + 1), 5000, 6000);
        }
    }
    vt_tenc_end(e, 0);
    vt_tenc_end_frame(e);
    size_t size;
    const uint8_t *d = vt_tenc_data(e, &size);
    ref_list L = ref_unpack(d, size);
    char *path = write_tmp(d, 0);
    int fd = open(path, O_WRONLY | O_APPEND);
    assert_true(fd >= 0);
    vt_reader *r;
    char msg[256];
    assert_int_equal(vt_reader_open(&r, path, msg, sizeof(msg)), 0);
    vt_reader_set_follow(r, 1);
    check_model *m = calloc(1, sizeof(*m));
    char why[512];
    size_t at = 0, i = 0;
    int rc = VT_ERR_AGAIN, agains = 0;
    while (rc == VT_ERR_AGAIN) {
        vt_event ev;
        while ((rc = vt_reader_next(r, &ev)) == 1) {
            if (i >= L.n)
                fail_msg("more events than records (%zu)", L.n);
            if (check_event(m, L.rec[i], &ev, why, sizeof(why)))
                fail_msg("record %zu (file at %zu bytes): %s", i, at, why);
            i++;
        }
        if (rc == VT_ERR_AGAIN) {
            agains++;
            assert_true(at < size); /* only while the file is not whole */
            size_t piece = 1 + (size_t)(vt_tenc_rand(&rng) % 97);
            if (piece > size - at)
                piece = size - at;
            assert_int_equal(write(fd, d + at, piece), (ssize_t)piece);
            at += piece;
        }
    }
    if (rc)
        fail_msg("rc %d: %s", rc, vt_reader_errmsg(r));
    assert_int_equal(i, L.n);
    assert_true(agains > 20);
    vt_reader_stats st;
    vt_reader_get_stats(r, &st);
    assert_int_equal(st.bytes_in, size);
    assert_true(st.complete);
    free(m);
    vt_reader_free(r);
    close(fd);
    unlink(path);
    free(path);
    ref_free(&L);
    vt_tenc_free(e);
    vt_tenc_random_reset();
}

/* A file of several MiB (chunked reads, frames across chunk boundaries),
 * read from a file and compared with the reference; then damaged in many
 * places (resync through pread). */
static void test_large_file(void **state)
{
    (void)state;
    uint64_t rng = 4242;
    vt_tenc *e = vt_tenc_new(1);
    Vramtrace__Record rec;
    vt_tenc_random_record(&rng, VRAMTRACE__RECORD__BODY_HEADER, 200, &rec);
    vt_tenc_rec(e, &rec);
    vt_tenc_sync(e, 0, 0, 0);
    uint64_t seq = 1;
    while (vt_tenc_size(e) < (3u << 20)) {
        for (int i = 0; i < 2000; i++) {
            int c = 4 + (int)(vt_tenc_rand(&rng) % 23);
            vt_tenc_random_record(&rng, (Vramtrace__Record__BodyCase)c, 200, &rec);
            vt_tenc_rec(e, &rec);
        }
        vt_tenc_end_frame(e);
        vt_tenc_sync(e, seq++, 0, 0);
        vt_tenc_random_reset();
    }
    vt_tenc_end(e, 0);
    vt_tenc_end_frame(e);
    size_t size, n;
    const uint8_t *d = vt_tenc_data(e, &size);
    ref_list L = ref_unpack(d, size);
    char *path = write_tmp(d, size);
    vt_reader *r;
    char msg[256];
    assert_int_equal(vt_reader_open(&r, path, msg, sizeof(msg)), 0);
    assert_int_equal(check_reader(r, &L, &n), 0);
    assert_int_equal(n, L.n);
    vt_reader_stats st;
    vt_reader_get_stats(r, &st);
    assert_int_equal(st.bytes_in, size);
    assert_int_equal(st.frames, seq);
    vt_reader_free(r);
    ref_free(&L);

    /* damage every 300 KiB, read from the file */
    uint8_t *c = malloc(size);
    memcpy(c, d, size);
    for (size_t at = 1000; at < size; at += 300000)
        memset(c + at, 0xA5, 16);
    FILE *f = fopen(path, "wb");
    fwrite(c, 1, size, f);
    fclose(f);
    assert_int_equal(vt_reader_open(&r, path, msg, sizeof(msg)), 0);
    vt_event ev;
    int rc, errors = 0;
    size_t events = 0;
    while ((rc = vt_reader_next(r, &ev)) != 0) {
        if (rc == 1) {
            events++;
            continue;
        }
        assert_true(rc == VT_ERR_CORRUPT || rc == VT_ERR_TOO_LARGE);
        assert_contains(vt_reader_errmsg(r), path);
        errors++;
    }
    vt_reader_get_stats(r, &st);
    assert_true(errors >= 1);
    assert_true(st.complete);
    assert_true(events > L.n / 2);
    print_message("large: %zu of %zu events after %d errors, %llu bytes skipped\n", events, L.n, errors,
                  (unsigned long long)st.skipped_bytes);
    vt_reader_free(r);
    unlink(path);
    free(path);
    free(c);
    vt_tenc_free(e);
    vt_tenc_random_reset();
}

static void test_open_errors(void **state)
{
    (void)state;
    vt_reader *r = (vt_reader *)1;
    char msg[256];
    assert_int_equal(vt_reader_open(&r, "/nonexistent/x.zst", msg, sizeof(msg)), VT_ERR_NOT_FOUND);
    assert_null(r);
    assert_string_equal(msg, "/nonexistent/x.zst: No such file or directory");
    assert_int_equal(vt_reader_open(&r, "/tmp", msg, sizeof(msg)), VT_ERR_IO);
    assert_string_equal(msg, "/tmp: is a directory");
    assert_int_equal(vt_reader_open(&r, "/tmp", NULL, 0), VT_ERR_IO);
}

/* A pipe: no going back, still reads everything and survives damage. */
static void test_pipe(void **state)
{
    (void)state;
    vt_tenc *e = vt_tenc_new(1);
    vt_tenc_sample(e, 3);
    size_t size;
    const uint8_t *d = vt_tenc_data(e, &size);
    for (int damaged = 0; damaged <= 1; damaged++) {
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            uint8_t *c = malloc(size);
            memcpy(c, d, size);
            if (damaged)
                c[size / 2] ^= 0xff;
            ssize_t w = write(fds[1], c, size);
            _exit(w == (ssize_t)size ? 0 : 1);
        }
        close(fds[1]);
        char path[64], msg[256];
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[0]);
        vt_reader *r;
        vt_event ev;
        assert_int_equal(vt_reader_open(&r, path, msg, sizeof(msg)), 0);
        int rc;
        size_t n = 0;
        while ((rc = vt_reader_next(r, &ev)) != 0 && rc != VT_ERR_TRUNCATED) {
            if (rc == 1)
                n++;
            else
                assert_true(damaged && (rc == VT_ERR_CORRUPT || rc == VT_ERR_TOO_LARGE));
        }
        if (!damaged) {
            assert_int_equal(rc, 0);
            assert_true(n > 60);
        }
        vt_reader_stats st;
        vt_reader_get_stats(r, &st);
        assert_true(st.frames_unverified > 0 && st.frames_unverified == st.frames);
        vt_reader_free(r);
        close(fds[0]);
        int status;
        waitpid(pid, &status, 0);
    }
    vt_tenc_free(e);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sample_all_kinds),
        cmocka_unit_test(test_crosscheck_random),
        cmocka_unit_test(test_truncate_every_offset),
        cmocka_unit_test(test_random_corruption),
        cmocka_unit_test(test_resume_after_damaged_frame),
        cmocka_unit_test(test_garbage_between_frames),
        cmocka_unit_test(test_damage_in_later_block),
        cmocka_unit_test(test_empty_and_not_zstd),
        cmocka_unit_test(test_bad_magic_and_version),
        cmocka_unit_test(test_huge_lengths),
        cmocka_unit_test(test_unknown_fields_and_records),
        cmocka_unit_test(test_hostile_records),
        cmocka_unit_test(test_record_crossing_frames),
        cmocka_unit_test(test_resume_needs_sync),
        cmocka_unit_test(test_skippable_frames),
        cmocka_unit_test(test_tables_and_stacks),
        cmocka_unit_test(test_deep_stack_chain),
        cmocka_unit_test(test_table_budget),
        cmocka_unit_test(test_large_file),
        cmocka_unit_test(test_follow_growing_file),
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_pipe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
