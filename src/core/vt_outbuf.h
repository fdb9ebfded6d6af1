/* vt_outbuf.h - an output buffer in front of a FILE: text is copied into
 * a large buffer and handed to stdio in large pieces (stdio's per-call
 * cost was nine tenths of a dump and most of a Chrome export; BENCHMARKS.md).
 * Counts what it handed over (flushed) and remembers a failed write
 * (ioerr).  Used by `vramtrace dump` and the Chrome exporter. */
#ifndef VT_OUTBUF_H
#define VT_OUTBUF_H
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    FILE *f;
    char *buf;
    size_t n, cap;    /* bytes in buf, its size */
    uint64_t flushed; /* bytes given to f */
    int ioerr;        /* a write to f failed */
} vt_outbuf;

static inline void vt_ob_init(vt_outbuf *b, FILE *f, char *buf, size_t cap)
{
    b->f = f;
    b->buf = buf;
    b->cap = cap;
    b->n = 0;
    b->flushed = 0;
    b->ioerr = 0;
}

static inline void vt_ob_flush(vt_outbuf *b)
{
    if (b->n && fwrite(b->buf, 1, b->n, b->f) != b->n)
        b->ioerr = 1;
    b->flushed += b->n;
    b->n = 0;
}

static inline __attribute__((always_inline)) void vt_ob_put(vt_outbuf *b, const char *p, size_t n)
{
    if (__builtin_expect(b->n + n > b->cap, 0)) {
        vt_ob_flush(b);
        if (n > b->cap) { /* larger than the buffer: straight through */
            if (fwrite(p, 1, n, b->f) != n)
                b->ioerr = 1;
            b->flushed += n;
            return;
        }
    }
    memcpy(b->buf + b->n, p, n);
    b->n += n;
}

static inline void vt_ob_putc(vt_outbuf *b, char ch)
{
    if (__builtin_expect(b->n == b->cap, 0))
        vt_ob_flush(b);
    b->buf[b->n++] = ch;
}

static inline __attribute__((always_inline)) void vt_ob_puts(vt_outbuf *b, const char *s) { vt_ob_put(b, s, strlen(s)); }

/* for vt_json_str_to() and other writers with a (ctx, bytes, n) callback */
static inline void vt_ob_put_cb(void *ctx, const char *p, size_t n) { vt_ob_put(ctx, p, n); }

/* printf into the buffer; a text longer than 1 KiB (a long value of a
 * crafted trace) is formatted into its own allocation, not cut */
__attribute__((format(printf, 2, 3))) static inline void vt_ob_printf(vt_outbuf *b, const char *fmt, ...)
{
    char s[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(s, sizeof(s), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof(s)) {
        vt_ob_put(b, s, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big)
        return;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    vt_ob_put(b, big, (size_t)n);
    free(big);
}
#endif
