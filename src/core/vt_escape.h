/* vt_escape.h - names from a trace (argv, notes, functions, files, hosts,
 * threads, NVTX messages) made safe for where they go.  A trace is input:
 * its strings may hold control bytes (ESC sequences that clear a terminal,
 * set its title or write its clipboard; a newline that forges a report
 * line), invalid UTF-8 and NUL.  The reader keeps a NUL inside a string as
 * the two bytes C0 80 (modified UTF-8, as Java does), so a C string holds
 * the whole name; every function here shows that pair as a NUL.
 *
 * All functions are pure, thread-safe, and take NULL as "" unless said. */
#ifndef VT_ESCAPE_H
#define VT_ESCAPE_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef void (*vt_put_fn)(void *ctx, const char *p, size_t n);

/* Length (1..4) of the valid UTF-8 sequence at s (n bytes left), 0 when
 * the bytes there are not one (overlong, surrogate, past U+10FFFF, cut). */
size_t vt_utf8_len(const unsigned char *s, size_t n);

/* 1 when s[0..n) is C0 80, the reader's NUL */
static inline int vt_is_nul_pair(const unsigned char *s, size_t n)
{
    return n >= 2 && s[0] == 0xc0 && s[1] == 0x80;
}

/* For a terminal or a text report: printable ASCII and valid UTF-8 as they
 * are; \n \t \r as those two characters; other C0 bytes, DEL, C1 controls
 * (U+0080..U+009F: CSI and OSC in UTF-8) and every byte that is not UTF-8
 * as \xNN (the reader's NUL as \x00).  Flags: VT_ESC_QUOTE, '"' and '\\'
 * escaped too (dump's quoted strings); VT_ESC_KEEP_NL, newlines kept (a
 * whole rendered report, whose names were escaped already).  Never puts a
 * control byte other than a kept newline. */
#define VT_ESC_QUOTE 1
#define VT_ESC_KEEP_NL 2
void vt_esc_text(const char *s, size_t n, int flags, vt_put_fn put, void *ctx);

/* The same into buf (always terminated; a name that does not fit ends in
 * "..."); returns buf.  For printf's %s. */
const char *vt_esc_text_buf(const char *s, char *buf, size_t len);

/* A JSON string with its quotes (NULL: null): control bytes as \uXXXX
 * (the reader's NUL as \u0000), bytes that are not UTF-8 as \ufffd; with
 * html, '<' as \u003c too, so that a string inside a page's <script> can
 * neither close it nor open a comment. */
void vt_esc_json(const char *s, int html, vt_put_fn put, void *ctx);

/* For an export that carries UTF-8 (a pickle, Perfetto's strings): s made
 * valid UTF-8 into buf (bytes that are not UTF-8 become U+FFFD, the
 * reader's NUL the code point U+0000); the length written, at most
 * len - 1, buf always terminated (but may hold NULs: use the length).
 * Stops at a whole character. */
size_t vt_utf8_sanitize(const char *s, char *buf, size_t len);

/* 1 when s needs vt_utf8_sanitize (not valid UTF-8, or holds the NUL pair) */
int vt_utf8_needs_sanitize(const char *s);

#endif
