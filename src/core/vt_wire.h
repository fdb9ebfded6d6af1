/* vt_wire.h - protobuf wire primitives shared by the reader's decoders
 * (vt_reader.c, vt_reader_columns.c): varints, zigzag, skipping a field.
 * Internal to src/core; header-only so that the hot paths inline them. */
#ifndef VT_WIRE_H
#define VT_WIRE_H

#include <stdint.h>
#include <string.h>

static inline int rd_varint_slow(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (p >= end)
            return -1;
        uint8_t b = *p++;
        if (i == 9 && b > 1)
            return -1;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = v;
            *pp = p;
            return 0;
        }
    }
    return -1;
}

/* 3..10 bytes with at least 10 readable: up to 8 bytes without a loop
 * (find the last byte from the continuation bits, then squeeze out the
 * 7-bit groups with shifts), longer ones byte by byte. */
static inline int rd_varint_long(const uint8_t **pp, uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t x;
    memcpy(&x, p, 8); /* little-endian, as every target of this code */
    uint64_t stop = ~x & 0x8080808080808080ull;
    if (stop) {
        unsigned len = ((unsigned)__builtin_ctzll(stop) >> 3) + 1;
        if (len < 8)
            x &= (1ull << (8 * len)) - 1;
        x = ((x & 0x7f007f007f007f00ull) >> 1) | (x & 0x007f007f007f007full);
        x = ((x & 0x3fff00003fff0000ull) >> 2) | (x & 0x00003fff00003fffull);
        x = ((x & 0x0fffffff00000000ull) >> 4) | (x & 0x000000000fffffffull);
        *pp = p + len;
        *out = x;
        return 0;
    }
    uint64_t v = 0, b;
    int i;
    for (i = 0; i < 9; i++) {
        b = p[i];
        v |= (b & 0x7f) << (7 * i);
        if (b < 0x80)
            goto done;
    }
    b = p[9];
    if (b > 1)
        return -1;
    v |= b << 63;
done:
    *pp = p + i + 1;
    *out = v;
    return 0;
}

/* Read a varint of the message ending at `end`.  `hard` bounds the bytes
 * that may be read (the end of the decompressed data in memory): when 10
 * are readable the varint is decoded without per-byte checks and then
 * checked against `end`, which makes the last fields of small messages as
 * fast as the others. */
static inline __attribute__((always_inline)) int rd_varint_h(const uint8_t **pp, const uint8_t *end,
                                                              const uint8_t *hard, uint64_t *out)
{
    const uint8_t *p = *pp;
    if (__builtin_expect(hard - p >= 10 && p < end, 1)) {
        uint64_t b0 = p[0];
        if (b0 < 0x80) {
            *out = b0;
            *pp = p + 1;
            return 0;
        }
        uint64_t b1 = p[1];
        if (b1 < 0x80) {
            if (p + 2 > end)
                return -1;
            *out = (b0 & 0x7f) | b1 << 7;
            *pp = p + 2;
            return 0;
        }
        uint64_t b2 = p[2];
        if (b2 < 0x80) {
            if (p + 3 > end)
                return -1;
            *out = (b0 & 0x7f) | (b1 & 0x7f) << 7 | b2 << 14;
            *pp = p + 3;
            return 0;
        }
        if (rd_varint_long(pp, out))
            return -1;
        return *pp > end ? -1 : 0;
    }
    return rd_varint_slow(pp, end, out);
}

static inline __attribute__((always_inline)) int rd_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    return rd_varint_h(pp, end, end, out);
}

static inline int64_t unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Results of wire_skip(). */
enum { WIRE_OK = 0, WIRE_BAD_VARINT = -1, WIRE_PAST_END = -2, WIRE_BAD_TYPE = -3 };

/* Skip the value of a field of wire type `wt` (the tag already read) in
 * [*pp, end): varint (0), fixed64 (1), length-delimited (2), fixed32 (5).
 * Groups (3, 4) and the unused types 6, 7 are WIRE_BAD_TYPE: a caller that
 * accepts groups (the reader's skip_field) handles them before calling
 * this.  WIRE_BAD_VARINT is for a bad varint value (wire type 0); a bad or
 * too long length is WIRE_PAST_END.  *pp moves only on WIRE_OK. */
static inline int wire_skip(const uint8_t **pp, const uint8_t *end, unsigned wt)
{
    const uint8_t *p = *pp;
    uint64_t v;
    switch (wt) {
    case 0:
        if (rd_varint(&p, end, &v))
            return WIRE_BAD_VARINT;
        break;
    case 1:
        if (end - p < 8)
            return WIRE_PAST_END;
        p += 8;
        break;
    case 5:
        if (end - p < 4)
            return WIRE_PAST_END;
        p += 4;
        break;
    case 2:
        if (rd_varint(&p, end, &v) || v > (uint64_t)(end - p))
            return WIRE_PAST_END;
        p += v;
        break;
    default:
        return WIRE_BAD_TYPE;
    }
    *pp = p;
    return WIRE_OK;
}

#endif
