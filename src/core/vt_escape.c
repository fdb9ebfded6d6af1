/* vt_escape.c - names from a trace made safe for a terminal, JSON, a page
 * or a UTF-8 export (vt_escape.h).  The one place that decides what a
 * hostile name may do: dump, the reports, diff and the exporters call it. */
#include "vt_escape.h"

#include <string.h>

size_t vt_utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, cp = c & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return len;
}

static const char hexd[] = "0123456789abcdef";

static void put_hex(vt_put_fn put, void *ctx, unsigned char b)
{
    char x[4] = {'\\', 'x', hexd[b >> 4], hexd[b & 15]};
    put(ctx, x, 4);
}

/* nonzero when a byte of v is zero */
static inline uint64_t has_zero(uint64_t v)
{
    return (v - 0x0101010101010101ull) & ~v & 0x8080808080808080ull;
}

/* nonzero when one of the 8 bytes at p is not printable ASCII (a control,
 * DEL, a byte >= 0x80), or, quoting, a quote or a backslash */
static inline uint64_t word_special(const unsigned char *p, int quote)
{
    uint64_t w;
    memcpy(&w, p, 8);
    uint64_t bad = has_zero(w & 0xe0e0e0e0e0e0e0e0ull) | (w & 0x8080808080808080ull) | has_zero(w ^ 0x7f7f7f7f7f7f7f7full);
    if (quote)
        bad |= has_zero(w ^ 0x2222222222222222ull) | has_zero(w ^ 0x5c5c5c5c5c5c5c5cull);
    return bad;
}

void vt_esc_text(const char *s, size_t n, int flags, vt_put_fn put, void *ctx)
{
    int quote = flags & VT_ESC_QUOTE, keep_nl = flags & VT_ESC_KEEP_NL;
    const unsigned char *p = (const unsigned char *)(s ? s : ""), *e = p + (s ? n : 0), *run = p;
    while (p < e) {
        /* printable ASCII eight bytes a step: a report is mostly that */
        while (e - p >= 8 && !word_special(p, quote))
            p += 8;
        if (p >= e)
            break;
        unsigned char ch = *p;
        if ((ch >= 0x20 && ch < 0x7f && !(quote && (ch == '"' || ch == '\\'))) || (ch == '\n' && keep_nl)) {
            p++;
            continue;
        }
        size_t l = ch >= 0x80 ? vt_utf8_len(p, (size_t)(e - p)) : 0;
        if (l && !(l == 2 && ch == 0xc2 && p[1] < 0xa0)) { /* valid, not a C1 control */
            p += l;
            continue;
        }
        if (p > run)
            put(ctx, (const char *)run, (size_t)(p - run));
        if (vt_is_nul_pair(p, (size_t)(e - p))) {
            put(ctx, "\\x00", 4);
            p += 2;
        } else if (l == 2) { /* C1 control: both bytes */
            put_hex(put, ctx, p[0]);
            put_hex(put, ctx, p[1]);
            p += 2;
        } else {
            switch (ch) {
            case '\n': put(ctx, "\\n", 2); break;
            case '\t': put(ctx, "\\t", 2); break;
            case '\r': put(ctx, "\\r", 2); break;
            case '"': put(ctx, "\\\"", 2); break;
            case '\\': put(ctx, "\\\\", 2); break;
            default: put_hex(put, ctx, ch);
            }
            p++;
        }
        run = p;
    }
    if (p > run)
        put(ctx, (const char *)run, (size_t)(p - run));
}

typedef struct {
    char *buf;
    size_t n, cap; /* cap: room for text, the terminator and "..." excluded */
    int cut;
} sbuf;

static void sbuf_put(void *ctx, const char *p, size_t n)
{
    sbuf *b = ctx;
    if (b->cut)
        return;
    if (b->n + n > b->cap) {
        b->cut = 1;
        return; /* an escape is never split: it goes whole or not at all */
    }
    memcpy(b->buf + b->n, p, n);
    b->n += n;
}

const char *vt_esc_text_buf(const char *s, char *buf, size_t len)
{
    if (len < 8) {
        if (len)
            buf[0] = 0;
        return buf;
    }
    sbuf b = {buf, 0, len - 4, 0};
    /* the whole text first; a cut name keeps whole characters, then "..." */
    size_t n = s ? strlen(s) : 0;
    vt_esc_text(s, n, 0, sbuf_put, &b);
    if (b.cut) {
        while (b.n && ((unsigned char)buf[b.n - 1] & 0xc0) == 0x80)
            b.n--; /* a UTF-8 sequence cut inside: drop its tail ... */
        if (b.n && (unsigned char)buf[b.n - 1] >= 0xc0)
            b.n--; /* ... and its lead */
        memcpy(buf + b.n, "...", 3);
        b.n += 3;
    }
    buf[b.n] = 0;
    return buf;
}

void vt_esc_json(const char *s, int html, vt_put_fn put, void *ctx)
{
    if (!s) {
        put(ctx, "null", 4);
        return;
    }
    put(ctx, "\"", 1);
    const unsigned char *p = (const unsigned char *)s, *run = p;
    size_t left = strlen(s);
    const unsigned char *e = p + left;
    while (p < e) {
        unsigned char ch = *p;
        if (ch >= 0x20 && ch < 0x80 && ch != '"' && ch != '\\' && !(html && ch == '<')) {
            p++;
            continue;
        }
        size_t l = ch >= 0x80 ? vt_utf8_len(p, (size_t)(e - p)) : 0;
        if (l) {
            p += l;
            continue;
        }
        if (p > run)
            put(ctx, (const char *)run, (size_t)(p - run));
        switch (ch) {
        case '"': put(ctx, "\\\"", 2); break;
        case '\\': put(ctx, "\\\\", 2); break;
        case '\n': put(ctx, "\\n", 2); break;
        case '\r': put(ctx, "\\r", 2); break;
        case '\t': put(ctx, "\\t", 2); break;
        default:
            if (ch < 0x20 || ch == '<') {
                char u[6] = {'\\', 'u', '0', '0', hexd[ch >> 4], hexd[ch & 15]};
                put(ctx, u, 6);
            } else if (vt_is_nul_pair(p, (size_t)(e - p))) {
                put(ctx, "\\u0000", 6);
                p++;
            } else {
                put(ctx, "\\ufffd", 6); /* not UTF-8 */
            }
        }
        p++;
        run = p;
    }
    if (p > run)
        put(ctx, (const char *)run, (size_t)(p - run));
    put(ctx, "\"", 1);
}

int vt_utf8_needs_sanitize(const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)p);
    for (size_t i = 0; i < n;) {
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        size_t l = vt_utf8_len(p + i, n - i);
        if (!l)
            return 1;
        i += l;
    }
    return 0;
}

size_t vt_utf8_sanitize(const char *s, char *buf, size_t len)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)p), o = 0;
    if (!len)
        return 0;
    for (size_t i = 0; i < n;) {
        size_t l = p[i] < 0x80 ? 1 : vt_utf8_len(p + i, n - i);
        const char *w = (const char *)p + i;
        size_t wl = l;
        if (!l) {
            if (vt_is_nul_pair(p + i, n - i)) {
                w = "\0";
                wl = 1;
                l = 2;
            } else {
                w = "\xef\xbf\xbd"; /* U+FFFD */
                wl = 3;
                l = 1;
            }
        }
        if (o + wl > len - 1)
            break;
        memcpy(buf + o, w, wl);
        o += wl;
        i += l;
    }
    buf[o] = 0;
    return o;
}
