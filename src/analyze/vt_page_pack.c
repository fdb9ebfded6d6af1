/* vt_page_pack.c - the HTML page's data, packed: the JSON the page reads
 * (the report, the timelines, a diff) carries the same strings many times
 * over (a call site's key and frames in its leak row, its peak row and its
 * timeline, and again in every process of a job that runs the same code),
 * farther apart than deflate's 32 KiB window can see.  So first every value
 * string of 6 bytes or more that occurs twice is written once, into a
 * table, and referred to as "\u0001" + its index in base 36; then the
 * table, a newline and the rewritten JSON are gzipped and written in base64
 * for the page to inflate with the browser's DecompressionStream.  A job of
 * 31 processes goes from 26 MB to 0.5 MB.  Object keys are never replaced;
 * a string that itself begins with U+0001 always goes into the table, so a
 * reference can never be mistaken for data.  docs/REPORT.md "The page's
 * data".  Touches only the buffers it is given and returns. */
#include "vt_page_pack.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "vt_error.h"
#include "vt_hash.h"

#define PACK_MIN_LEN 6 /* shorter strings cost less than a reference */

typedef struct {
    const char *s; /* the string's JSON text, quotes included */
    uint32_t n;
    uint32_t count;
    uint32_t id; /* UINT32_MAX until written to the table */
} pack_ent;

typedef struct {
    pack_ent *e;
    size_t cap, used;
} pack_map;

typedef struct {
    char *p;
    size_t n, cap;
} pack_buf;

static int buf_put(pack_buf *b, const void *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap : 4096;
        while (c < b->n + n + 1)
            c *= 2;
        char *p = realloc(b->p, c);
        if (!p)
            return VT_ERR_NOMEM;
        b->p = p;
        b->cap = c;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    return 0;
}

static int map_grow(pack_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    pack_ent *e = calloc(cap, sizeof(*e));
    if (!e)
        return VT_ERR_NOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->e[i].s)
            continue;
        size_t k = vt_hash_bytes(m->e[i].s, m->e[i].n) & (cap - 1);
        while (e[k].s)
            k = (k + 1) & (cap - 1);
        e[k] = m->e[i];
    }
    free(m->e);
    m->e = e;
    m->cap = cap;
    return 0;
}

/* The entry of the string s[0..n), added with count 0 when new. */
static pack_ent *map_get(pack_map *m, const char *s, size_t n)
{
    if ((m->used + 1) * 2 > m->cap && map_grow(m))
        return NULL;
    size_t k = vt_hash_bytes(s, n) & (m->cap - 1);
    while (m->e[k].s) {
        if (m->e[k].n == n && !memcmp(m->e[k].s, s, n))
            return &m->e[k];
        k = (k + 1) & (m->cap - 1);
    }
    m->e[k] = (pack_ent){.s = s, .n = (uint32_t)n, .id = UINT32_MAX};
    m->used++;
    return &m->e[k];
}

/* The end of the JSON string that starts at s[i] (a quote): the index just
 * past its closing quote, or n when it does not close. */
static size_t string_end(const char *s, size_t i, size_t n)
{
    size_t from = i + 1;
    for (;;) {
        const char *q = from < n ? memchr(s + from, '"', n - from) : NULL;
        if (!q)
            return n;
        size_t at = (size_t)(q - s), b = at;
        while (b > i + 1 && s[b - 1] == '\\') /* an odd run of backslashes escapes it */
            b--;
        if ((at - b) % 2 == 0)
            return at + 1;
        from = at + 1;
    }
}

/* Whether the string ending at e is an object key: a ':' follows. */
static int is_key(const char *s, size_t e, size_t n)
{
    while (e < n && (s[e] == ' ' || s[e] == '\n' || s[e] == '\t' || s[e] == '\r'))
        e++;
    return e < n && s[e] == ':';
}

/* Whether the string's value begins with U+0001 (as the escape or raw). */
static int starts_with_mark(const char *s, size_t n)
{
    return (n > 1 && s[1] == '\x01') || (n >= 7 && !memcmp(s + 1, "\\u0001", 6));
}

/* Pass one: count the value strings. */
static int count_strings(pack_map *m, const char *js, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *q = memchr(js + i, '"', n - i);
        if (!q)
            break;
        i = (size_t)(q - js);
        size_t e = string_end(js, i, n);
        if (!is_key(js, e, n) && (e - i >= PACK_MIN_LEN + 2 || starts_with_mark(js + i, e - i))) {
            pack_ent *x = map_get(m, js + i, e - i);
            if (!x)
                return VT_ERR_NOMEM;
            x->count++;
        }
        i = e - 1;
    }
    return 0;
}

/* Pass two: the table (a JSON array) and the JSON with references. */
static int rewrite(pack_map *m, const char *js, size_t n, pack_buf *tab, pack_buf *out)
{
    uint32_t next = 0;
    int rc = buf_put(tab, "[", 1);
    size_t from = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const char *q = memchr(js + i, '"', n - i);
        if (!q)
            break;
        i = (size_t)(q - js);
        size_t e = string_end(js, i, n);
        if (!is_key(js, e, n) && (e - i >= PACK_MIN_LEN + 2 || starts_with_mark(js + i, e - i))) {
            pack_ent *x = map_get(m, js + i, e - i);
            if (!x)
                return VT_ERR_NOMEM;
            if (x->count > 1 || starts_with_mark(js + i, e - i)) {
                if (x->id == UINT32_MAX) {
                    x->id = next++;
                    if ((x->id && (rc = buf_put(tab, ",", 1))) || (rc = buf_put(tab, js + i, e - i)))
                        break;
                }
                char ref[24] = "\"\\u0001";
                size_t k = 7;
                char digits[16];
                int nd = 0;
                uint32_t v = x->id;
                do {
                    digits[nd++] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
                    v /= 36;
                } while (v);
                while (nd)
                    ref[k++] = digits[--nd];
                ref[k++] = '"';
                if ((rc = buf_put(out, js + from, i - from)) || (rc = buf_put(out, ref, k)))
                    break;
                from = e;
            }
        }
        i = e - 1;
    }
    if (!rc)
        rc = buf_put(out, js + from, n - from);
    if (!rc)
        rc = buf_put(tab, "]\n", 2);
    return rc;
}

static int gzip_into(const pack_buf *a, const pack_buf *b, pack_buf *z)
{
    z_stream s;
    memset(&s, 0, sizeof(s));
    /* a window no larger than the data (the same output for less memory:
     * a small page's deflate took 256 KiB and its page faults for a few
     * KiB of JSON), and hash chains scaled with it */
    int wbits = 9;
    while (wbits < 15 && ((size_t)1 << wbits) < a->n + b->n)
        wbits++;
    int mem = wbits - 7 < 1 ? 1 : wbits - 7;
    if (deflateInit2(&s, Z_DEFAULT_COMPRESSION, Z_DEFLATED, wbits + 16, mem, Z_DEFAULT_STRATEGY) != Z_OK)
        return VT_ERR_NOMEM;
    size_t bound = deflateBound(&s, (uLong)(a->n + b->n)) + 64;
    z->p = malloc(bound);
    z->cap = bound;
    int rc = z->p ? 0 : VT_ERR_NOMEM;
    const pack_buf *in[2] = {a, b};
    s.next_out = (Bytef *)z->p;
    s.avail_out = (uInt)bound;
    for (int k = 0; k < 2 && !rc; k++) {
        s.next_in = (Bytef *)in[k]->p;
        s.avail_in = (uInt)in[k]->n;
        int zr = deflate(&s, k == 1 ? Z_FINISH : Z_NO_FLUSH);
        if (zr != Z_OK && zr != Z_STREAM_END)
            rc = VT_ERR_NOMEM;
        else if (k == 1 && zr != Z_STREAM_END)
            rc = VT_ERR_NOMEM;
    }
    z->n = bound - s.avail_out;
    deflateEnd(&s);
    return rc;
}

static int base64_to(FILE *out, const unsigned char *p, size_t n)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char line[4096];
    size_t k = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n)
            v |= p[i + 2];
        line[k++] = t[(v >> 18) & 63];
        line[k++] = t[(v >> 12) & 63];
        line[k++] = i + 1 < n ? t[(v >> 6) & 63] : '=';
        line[k++] = i + 2 < n ? t[v & 63] : '=';
        if (k + 4 > sizeof(line)) {
            fwrite(line, 1, k, out);
            k = 0;
        }
    }
    fwrite(line, 1, k, out);
    return ferror(out) ? VT_ERR_IO : 0;
}

int vt_page_pack(const char *json, size_t n, FILE *out)
{
    if (n > UINT32_MAX)
        return VT_ERR_NOMEM; /* zlib's counters and the entries' lengths */
    pack_map m = {0};
    pack_buf tab = {0}, body = {0}, z = {0};
    int rc = count_strings(&m, json, n);
    if (!rc)
        rc = rewrite(&m, json, n, &tab, &body);
    free(m.e);
    if (!rc && tab.n + body.n > UINT32_MAX)
        rc = VT_ERR_NOMEM;
    if (!rc)
        rc = gzip_into(&tab, &body, &z);
    free(tab.p);
    free(body.p);
    if (!rc) {
        fputs("window.VT_PACKED = \"", out);
        rc = base64_to(out, (const unsigned char *)z.p, z.n);
        fputs("\";", out);
    }
    free(z.p);
    return rc;
}
