/* vt_parquet_thrift.c - Thrift's compact protocol, the write half, for the
 * Parquet writer's page headers and footer (vt_parquet.c).  Field headers
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
#include "vt_parquet.h"

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
