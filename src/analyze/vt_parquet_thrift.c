/* vt_parquet_thrift.c - Thrift's compact protocol, the write half, for the
 * Parquet writer's page headers (vt_parquet.c), and the footer: the
 * FileMetaData of the schema, the row groups and their column chunks
 * (offsets, sizes, encodings, statistics) and the column orders.  Field headers
 * carry the id as a delta from the previous field of the same struct when
 * it fits in 4 bits (else the type byte and the id as a zigzag varint);
 * integers are zigzag varints; binaries a varint length and the bytes;
 * lists a size-and-type byte (size < 15) or 0xF0|type and a varint size;
 * a struct ends with a 0 byte.  Booleans as fields are the type nibble
 * itself (1 true, 2 false).  Errors (out of memory, nesting past 16) are
 * sticky in t->err.  Touches nothing but its buffer. */
#include <stdlib.h>
#include <string.h>

#include "vt_error.h"
#include "vt_parquet_int.h"

void vt_tw_reset(vt_tw *t)
{
    t->n = 0;
    t->err = 0;
    t->depth = 0;
    t->last[0] = 0;
}

void vt_tw_free(vt_tw *t)
{
    free(t->b);
    memset(t, 0, sizeof(*t));
}

static void put(vt_tw *t, const void *p, size_t n)
{
    if (t->err)
        return;
    if (t->n + n > t->cap) {
        size_t c = t->cap ? t->cap : 256;
        while (c < t->n + n)
            c *= 2;
        uint8_t *b = realloc(t->b, c);
        if (!b) {
            t->err = VT_ERR_NOMEM;
            return;
        }
        t->b = b;
        t->cap = c;
    }
    memcpy(t->b + t->n, p, n);
    t->n += n;
}

static void put1(vt_tw *t, uint8_t c)
{
    put(t, &c, 1);
}

void vt_tw_varint(vt_tw *t, uint64_t v)
{
    uint8_t b[10];
    int n = 0;
    while (v >= 0x80) {
        b[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[n++] = (uint8_t)v;
    put(t, b, (size_t)n);
}

static uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

void vt_tw_field(vt_tw *t, int id, int type)
{
    int delta = id - t->last[t->depth];
    if (delta > 0 && delta <= 15) {
        put1(t, (uint8_t)(delta << 4 | type));
    } else {
        put1(t, (uint8_t)type);
        vt_tw_varint(t, zigzag(id));
    }
    t->last[t->depth] = (int16_t)id;
}

void vt_tw_i32(vt_tw *t, int id, int32_t v)
{
    vt_tw_field(t, id, VT_TT_I32);
    vt_tw_varint(t, zigzag(v));
}

void vt_tw_i64(vt_tw *t, int id, int64_t v)
{
    vt_tw_field(t, id, VT_TT_I64);
    vt_tw_varint(t, zigzag(v));
}

void vt_tw_bool(vt_tw *t, int id, int v)
{
    vt_tw_field(t, id, v ? VT_TT_BOOL_TRUE : VT_TT_BOOL_FALSE);
}

void vt_tw_val_bin(vt_tw *t, const void *p, size_t n)
{
    vt_tw_varint(t, n);
    put(t, p, n);
}

void vt_tw_bin(vt_tw *t, int id, const void *p, size_t n)
{
    vt_tw_field(t, id, VT_TT_BINARY);
    vt_tw_val_bin(t, p, n);
}

void vt_tw_list_bare(vt_tw *t, int elemtype, uint32_t n)
{
    if (n < 15) {
        put1(t, (uint8_t)(n << 4 | (unsigned)elemtype));
    } else {
        put1(t, (uint8_t)(0xF0 | elemtype));
        vt_tw_varint(t, n);
    }
}

void vt_tw_list(vt_tw *t, int id, int elemtype, uint32_t n)
{
    vt_tw_field(t, id, VT_TT_LIST);
    vt_tw_list_bare(t, elemtype, n);
}

void vt_tw_val_i32(vt_tw *t, int32_t v)
{
    vt_tw_varint(t, zigzag(v));
}

void vt_tw_begin(vt_tw *t, int id)
{
    if (id)
        vt_tw_field(t, id, VT_TT_STRUCT);
    if (t->depth + 1 >= (int)(sizeof(t->last) / sizeof(t->last[0]))) {
        t->err = VT_ERR_INVALID;
        return;
    }
    t->last[++t->depth] = 0;
}

void vt_tw_end(vt_tw *t)
{
    put1(t, 0);
    if (t->depth > 0)
        t->depth--;
}

/* ------------------------------------------------------------ the footer */

static void schema_leaf(vt_tw *t, const pq_column *c, const char *name, int repetition)
{
    vt_tw_begin(t, 0);
    vt_tw_i32(t, 1, c->c.type == VT_PQ_INT32 ? 1 : is_str(c) ? 6 : 2); /* INT32, BYTE_ARRAY, INT64 */
    vt_tw_i32(t, 3, repetition);
    vt_tw_bin(t, 4, name, strlen(name));
    if (is_str(c))
        vt_tw_i32(t, 6, 0); /* ConvertedType UTF8 */
    if (is_str(c) || c->c.type == VT_PQ_TIMESTAMP) {
        vt_tw_begin(t, 10); /* LogicalType */
        if (is_str(c)) {
            vt_tw_begin(t, 1); /* STRING */
            vt_tw_end(t);
        } else {
            vt_tw_begin(t, 8); /* TIMESTAMP */
            /* isAdjustedToUTC false: DuckDB reads the true form as its
             * TIMESTAMPTZ, in microseconds (kernels last a few); the
             * values are UTC all the same (docs/EXPORT.md) */
            vt_tw_bool(t, 1, 0);
            vt_tw_begin(t, 2); /* TimeUnit */
            vt_tw_begin(t, 3); /* NANOS */
            vt_tw_end(t);
            vt_tw_end(t);
            vt_tw_end(t);
        }
        vt_tw_end(t);
    }
    vt_tw_end(t);
}

int vt_pq_footer_write(vt_pq *w)
{
    vt_tw *t = &w->tw;
    vt_tw_reset(t);
    uint32_t nschema = 1;
    for (int k = 0; k < w->ncols; k++)
        nschema += w->cols[k].c.type == VT_PQ_STRING_LIST ? 3 : 1;
    vt_tw_i32(t, 1, 1); /* version */
    vt_tw_list(t, 2, VT_TT_STRUCT, nschema);
    vt_tw_begin(t, 0);
    vt_tw_bin(t, 4, "schema", 6);
    vt_tw_i32(t, 5, w->ncols);
    vt_tw_end(t);
    for (int k = 0; k < w->ncols; k++) {
        const pq_column *c = &w->cols[k];
        if (c->c.type != VT_PQ_STRING_LIST) {
            schema_leaf(t, c, c->c.name, c->c.optional ? 1 : 0);
            continue;
        }
        vt_tw_begin(t, 0); /* <optional|required> group NAME (LIST) */
        vt_tw_i32(t, 3, c->c.optional ? 1 : 0);
        vt_tw_bin(t, 4, c->c.name, strlen(c->c.name));
        vt_tw_i32(t, 5, 1);
        vt_tw_i32(t, 6, 3); /* ConvertedType LIST */
        vt_tw_begin(t, 10);
        vt_tw_begin(t, 3); /* LogicalType LIST */
        vt_tw_end(t);
        vt_tw_end(t);
        vt_tw_end(t);
        vt_tw_begin(t, 0); /* repeated group list */
        vt_tw_i32(t, 3, 2);
        vt_tw_bin(t, 4, "list", 4);
        vt_tw_i32(t, 5, 1);
        vt_tw_end(t);
        schema_leaf(t, c, "element", 0);
    }
    vt_tw_i64(t, 3, (int64_t)w->rows_total);
    vt_tw_list(t, 4, VT_TT_STRUCT, (uint32_t)w->ngroups);
    for (size_t g = 0; g < w->ngroups; g++) {
        vt_tw_begin(t, 0); /* RowGroup */
        vt_tw_list(t, 1, VT_TT_STRUCT, (uint32_t)w->ncols);
        for (int k = 0; k < w->ncols; k++) {
            const pq_column *c = &w->cols[k];
            const pq_chunk *ch = &c->ch[g];
            vt_tw_begin(t, 0); /* ColumnChunk */
            vt_tw_i64(t, 2, ch->has_dict ? ch->dict_off : ch->data_off);
            vt_tw_begin(t, 3); /* ColumnMetaData */
            vt_tw_i32(t, 1, c->c.type == VT_PQ_INT32 ? 1 : is_str(c) ? 6 : 2);
            /* the encodings its pages use: the values' (a dictionary page
             * is PLAIN), RLE when it has levels */
            int levels = c->max_def || c->max_rep;
            vt_tw_list(t, 2, VT_TT_I32, (uint32_t)(levels + (ch->has_dict ? 2 : 1)));
            if (ch->has_dict) {
                vt_tw_val_i32(t, 0); /* PLAIN */
                vt_tw_val_i32(t, 8); /* RLE_DICTIONARY */
            } else {
                vt_tw_val_i32(t, ch->delta ? 5 : 0); /* DELTA_BINARY_PACKED or PLAIN */
            }
            if (levels)
                vt_tw_val_i32(t, 3); /* RLE */
            int list = c->c.type == VT_PQ_STRING_LIST;
            vt_tw_list(t, 3, VT_TT_BINARY, list ? 3 : 1);
            vt_tw_val_bin(t, c->c.name, strlen(c->c.name));
            if (list) {
                vt_tw_val_bin(t, "list", 4);
                vt_tw_val_bin(t, "element", 7);
            }
            vt_tw_i32(t, 4, 6); /* ZSTD */
            vt_tw_i64(t, 5, ch->num_values);
            vt_tw_i64(t, 6, ch->unc);
            vt_tw_i64(t, 7, ch->comp);
            vt_tw_i64(t, 9, ch->data_off);
            if (ch->has_dict)
                vt_tw_i64(t, 11, ch->dict_off);
            vt_tw_begin(t, 12); /* Statistics */
            vt_tw_i64(t, 3, (int64_t)ch->nulls);
            if (ch->have_stats) {
                vt_tw_bin(t, 5, ch->max, ch->nmax);
                vt_tw_bin(t, 6, ch->min, ch->nmin);
            }
            vt_tw_end(t);
            vt_tw_end(t); /* ColumnMetaData */
            vt_tw_end(t); /* ColumnChunk */
        }
        vt_tw_i64(t, 2, w->groups[g].unc);
        vt_tw_i64(t, 3, w->groups[g].rows);
        vt_tw_i64(t, 6, w->groups[g].comp);
        vt_tw_end(t);
    }
    static const char by[] = "vramtrace version 0.1.0 (build vramtrace)";
    vt_tw_bin(t, 6, by, sizeof(by) - 1);
    vt_tw_list(t, 7, VT_TT_STRUCT, (uint32_t)w->ncols);
    for (int k = 0; k < w->ncols; k++) {
        vt_tw_begin(t, 0); /* ColumnOrder */
        vt_tw_begin(t, 1); /* TYPE_ORDER */
        vt_tw_end(t);
        vt_tw_end(t);
    }
    vt_tw_end(t); /* FileMetaData */
    if (t->err)
        return w->err = t->err;
    uint32_t len = (uint32_t)t->n;
    if (vt_pq_file_put(w, t->b, t->n) || vt_pq_file_put(w, &len, 4) || vt_pq_file_put(w, "PAR1", 4))
        return w->err;
    return 0;
}
