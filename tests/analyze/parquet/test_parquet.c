/* test_parquet.c - the Parquet writer (src/analyze/vt_parquet.c) on its
 * edge cases, for readers to check: `test_parquet OUTDIR` writes
 * OUTDIR/edge.parquet (10,000 rows in row groups of 777: nulls, negative
 * INT32s, timestamps, a dictionary of 1,000 strings some with invalid
 * UTF-8, strings past the statistics' 64 bytes, lists null, empty and of
 * 1-5 items; numbers that DELTA_BINARY_PACKED takes: steps that stay for
 * whole miniblocks, and deltas that wrap past INT64 and INT32 limits) and
 * OUTDIR/edge.jsonl, the rows a reader must see (each
 * invalid byte read as U+FFFD); check_edge.mjs compares DuckDB's and
 * hyparquet's reading with it.  Also checks the writer's refusals (a null
 * in a required column, a value of the wrong type).  Exit 0 or 1. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_error.h"
#include "vt_parquet.h"

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

#define FFFD "\xEF\xBF\xBD"

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    char path[4096], jpath[4096];
    snprintf(path, sizeof(path), "%s/edge.parquet", argv[1]);
    snprintf(jpath, sizeof(jpath), "%s/edge.jsonl", argv[1]);
    static const vt_pq_col cols[] = {
        {"id", VT_PQ_INT64, 0},    {"small", VT_PQ_INT32, 1}, {"t", VT_PQ_TIMESTAMP, 1},
        {"name", VT_PQ_STRING, 0}, {"long", VT_PQ_STRING, 1}, {"items", VT_PQ_STRING_LIST, 1},
        {"same", VT_PQ_INT64, 0},  {"step", VT_PQ_INT64, 0},  {"wrap", VT_PQ_INT64, 1},
        {"wrap32", VT_PQ_INT32, 0},
    };
    enum { NCOLS = sizeof(cols) / sizeof(cols[0]) };
    vt_pq *w;
    int rc = vt_pq_create(&w, path, cols, NCOLS, 777);
    FILE *j = fopen(jpath, "w");
    if (rc || !j) {
        fprintf(stderr, "test_parquet: cannot write %s\n", path);
        return 1;
    }
    /* the raw strings and what a reader must read */
    static const char *raw[] = {
        "plain",         "caf\xC3\xA9",       "\xE2\x82\xAC euro", "smile \xF0\x9F\x98\x80",
        "bad \xFF byte", "overlong \xC0\xAF", "cut \xE2\x82",      "surrogate \xED\xA0\x80"};
    static const char *want[] = {"plain",
                                 "caf\xC3\xA9",
                                 "\xE2\x82\xAC euro",
                                 "smile \xF0\x9F\x98\x80",
                                 "bad " FFFD " byte",
                                 "overlong " FFFD FFFD,
                                 "cut " FFFD FFFD,
                                 "surrogate " FFFD FFFD FFFD};
    uint64_t x = 12345;
    for (int r = 0; r < 10000; r++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        char name[64], wname[64], lng[160];
        int k = (int)(x >> 33) % 8, d = (int)((x >> 40) % 1000);
        snprintf(name, sizeof(name), "%s %d", raw[k], d);
        snprintf(wname, sizeof(wname), "%s %d", want[k], d);
        vt_pq_int(w, 0, r);
        fprintf(j, "{\"id\":%d", r);
        if (r % 3) {
            int32_t v = (int32_t)(x >> 33) - (1 << 30); /* 31 bits, then half below 0 */
            vt_pq_int(w, 1, v);
            fprintf(j, ",\"small\":%d", v);
        } else {
            fprintf(j, ",\"small\":null");
        }
        if (r % 5) {
            int64_t t = 1796000000000000000ll + (int64_t)r * 1000003;
            vt_pq_int(w, 2, t);
            fprintf(j, ",\"t\":\"%lld\"", (long long)t); /* a string: JSON numbers are doubles */
        } else {
            fprintf(j, ",\"t\":null");
        }
        vt_pq_str(w, 3, name);
        fputs(",\"name\":", j);
        json_str(j, wname);
        if (r % 7 == 0) {
            memset(lng, 'a' + r % 26, 100);
            snprintf(lng + 100, sizeof(lng) - 100, "%d", r);
            vt_pq_str(w, 4, lng);
            fputs(",\"long\":", j);
            json_str(j, lng);
        } else {
            fputs(",\"long\":null", j);
        }
        int n = (int)((x >> 50) % 7) - 1; /* -1 null, 0 empty, 1..5 */
        fputs(",\"items\":", j);
        if (n < 0) {
            fputs("null", j);
        } else {
            char buf[5][32];
            const char *it[5];
            fputc('[', j);
            for (int i = 0; i < n; i++) {
                snprintf(buf[i], sizeof(buf[i]), "f%d", (int)((x >> (8 + 4 * i)) % 50));
                it[i] = buf[i];
                if (i)
                    fputc(',', j);
                json_str(j, buf[i]);
            }
            fputc(']', j);
            vt_pq_list(w, 5, it, (uint32_t)n);
        }
        vt_pq_int(w, 6, 42);
        fputs(",\"same\":42", j);
        /* small deltas around jumps from one end of the range to the other:
         * the wrapping a delta must survive, in a chunk still delta-coded */
        vt_pq_int(w, 7, r / 100);
        fprintf(j, ",\"step\":%d", r / 100);
        int64_t wr = r % 1000 == 500 ? INT64_MIN : r % 1000 == 501 ? INT64_MAX : r % 1000 == 502 ? -1 : (int64_t)r * 3;
        if (r % 11) {
            vt_pq_int(w, 8, wr);
            fprintf(j, ",\"wrap\":\"%lld\"", (long long)wr);
        } else {
            fputs(",\"wrap\":null", j);
        }
        int32_t w32 = r % 1000 == 250 ? INT32_MIN : r % 1000 == 251 ? INT32_MAX : r;
        vt_pq_int(w, 9, w32);
        fprintf(j, ",\"wrap32\":%d}\n", w32);
        if (vt_pq_row(w)) {
            fprintf(stderr, "test_parquet: row %d: %s\n", r, vt_strerror(vt_pq_err(w)));
            return 1;
        }
    }
    rc = vt_pq_close(w);
    vt_pq_free(w);
    fclose(j);
    if (rc) {
        fprintf(stderr, "test_parquet: close: %s\n", vt_strerror(rc));
        return 1;
    }
    /* refusals: a required column left null; a string into a number */
    snprintf(path, sizeof(path), "%s/refused.parquet", argv[1]);
    if (vt_pq_create(&w, path, cols, NCOLS, 0))
        return 1;
    vt_pq_int(w, 0, 1);
    if (vt_pq_row(w) != VT_ERR_INVALID) { /* name is required */
        fprintf(stderr, "test_parquet: a null in a required column was taken\n");
        return 1;
    }
    vt_pq_free(w);
    if (vt_pq_create(&w, path, cols, NCOLS, 0))
        return 1;
    vt_pq_str(w, 0, "x");
    if (vt_pq_err(w) != VT_ERR_INVALID) {
        fprintf(stderr, "test_parquet: a string in an INT64 column was taken\n");
        return 1;
    }
    vt_pq_free(w);
    remove(path);
    return 0;
}
