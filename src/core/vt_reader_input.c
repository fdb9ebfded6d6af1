/* vt_reader_input.c - the input of the reader: the file or a buffer, zstd
 * frames, framing errors, damage and resynchronization; open and free. */
#include "vt_reader_int.h"

#include <pthread.h>
/* ---- messages ------------------------------------------------------- */

static int set_final_v(vt_reader *r, int code, const char *fmt, va_list ap)
{
    int n = snprintf(r->err, sizeof(r->err), "%s: ", r->name);
    if (n >= 0 && (size_t)n < sizeof(r->err))
        vsnprintf(r->err + n, sizeof(r->err) - (size_t)n, fmt, ap);
    r->state = ST_FINAL;
    r->last_err = code;
    return code;
}

int rd_set_final(vt_reader *r, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_final_v(r, code, fmt, ap);
    va_end(ap);
    return code;
}

int rd_end_of_input(vt_reader *r, const char *fmt, ...)
{
    if (r->follow) {
        /* nothing is lost: zstd keeps its place in the frame, raw its
         * bytes, in_pos the next byte; the next call reads again */
        r->eof = 0;
        return VT_ERR_AGAIN;
    }
    va_list ap;
    va_start(ap, fmt);
    set_final_v(r, VT_ERR_TRUNCATED, fmt, ap);
    va_end(ap);
    return VT_ERR_TRUNCATED;
}

int rd_why(vt_reader *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof(r->why), fmt, ap);
    va_end(ap);
    return VT_ERR_CORRUPT;
}

/* ---- input ---------------------------------------------------------- */

/* Make bytes at *pos available: *p, *n (n >= min(want, bytes left) unless
 * the input cannot go back, in which case *pos moves forward).  n == 0 at
 * the end of the input.  Returns 0 or VT_ERR_IO. */
static int in_peek(vt_reader *r, uint64_t *pos, size_t want, const uint8_t **p, size_t *n)
{
    if (r->mem) {
        if (*pos > r->mem_size)
            *pos = r->mem_size;
        *p = r->mem + *pos;
        *n = r->mem_size - *pos;
        return 0;
    }
    if (want > IN_CHUNK)
        want = IN_CHUNK;
    uint64_t end = r->ib_off + r->ib_len;
    if (*pos >= r->ib_off && *pos < end && end - *pos >= want) {
        *p = r->ibuf + (*pos - r->ib_off);
        *n = end - *pos;
        return 0;
    }
    if (*pos < r->ib_off || *pos > end) {
        if (r->seekable) {
            r->ib_off = *pos;
            r->ib_len = 0;
            r->eof = 0;
        } else if (*pos < r->ib_off) {
            *pos = r->ib_off; /* a pipe cannot go back */
        } else {
            /* forward on a pipe: drop what is buffered, read and discard */
            r->ib_off = end;
            r->ib_len = 0;
            while (r->ib_off < *pos && !r->eof) {
                uint64_t gap = *pos - r->ib_off;
                ssize_t k = read(r->fd, r->ibuf, gap < IN_CHUNK ? gap : IN_CHUNK);
                if (k < 0 && errno == EINTR)
                    continue;
                if (k < 0)
                    return rd_set_final(r, VT_ERR_IO, "read error at offset %llu: %s",
                                     (unsigned long long)r->ib_off, strerror(errno));
                if (k == 0)
                    r->eof = 1;
                r->ib_off += (uint64_t)k;
            }
            if (*pos > r->ib_off)
                *pos = r->ib_off;
        }
    }
    /* keep [*pos, end) and read more after it */
    size_t keep = (size_t)(r->ib_off + r->ib_len - *pos);
    if (*pos != r->ib_off) {
        memmove(r->ibuf, r->ibuf + (*pos - r->ib_off), keep);
        r->ib_off = *pos;
        r->ib_len = keep;
    }
    while (r->ib_len < want && r->ib_len < IN_CHUNK && !r->eof) {
        ssize_t k;
        if (r->seekable)
            k = pread(r->fd, r->ibuf + r->ib_len, IN_CHUNK - r->ib_len, (off_t)(r->ib_off + r->ib_len));
        else
            k = read(r->fd, r->ibuf + r->ib_len, IN_CHUNK - r->ib_len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return rd_set_final(r, VT_ERR_IO, "read error at offset %llu: %s",
                             (unsigned long long)(r->ib_off + r->ib_len), strerror(errno));
        if (k == 0)
            r->eof = 1;
        r->ib_len += (size_t)k;
    }
    *p = r->ibuf;
    *n = r->ib_len;
    return 0;
}

/* ---- tables --------------------------------------------------------- */

/* ---- frames and the main loop ---------------------------------------- */

void rd_drop_frame(vt_reader *r)
{
    ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
    r->in_frame = 0;
    r->frame_bad = 0;
    r->careful = 0;
    r->careful_skip = 0;
    r->rpos = r->rend = 0;
    r->zerr = 0;
}

/* A recoverable error: report it, and on the next call resume after the
 * damage.  If zstd can still decode the frame, its rest is discarded
 * (ST_DISCARD); otherwise the input is scanned for the next zstd magic from
 * one byte past the start of the damaged frame. */
int rd_corrupt(vt_reader *r, int code, int zstd_ok, const char *fmt, ...)
{
    int n = snprintf(r->err, sizeof(r->err), "%s: ", r->name);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < sizeof(r->err))
        vsnprintf(r->err + n, sizeof(r->err) - (size_t)n, fmt, ap);
    va_end(ap);
    r->last_err = code;
    r->st.resyncs++;
    if (r->stable && r->in_frame)
        r->rpos = r->rend; /* zstd writes on at rend: raw must not move */
    else
        r->rpos = r->rend = 0;
    if (zstd_ok && r->in_frame) {
        r->state = ST_DISCARD;
        r->skip_hw = r->in_pos;
    } else if (zstd_ok) {
        r->state = ST_READ; /* the frame ended cleanly: the next starts at in_pos */
    } else {
        rd_drop_frame(r);
        r->state = ST_RESYNC;
        r->resync_from = r->frame_start + 1;
        r->skip_from = r->frame_start;
    }
    r->need_sync = 1;
    return code;
}

int rd_resync(vt_reader *r)
{
    static const uint8_t magic[4] = {0x28, 0xB5, 0x2F, 0xFD};
    uint64_t pos = r->resync_from;
    rd_drop_frame(r);
    for (;;) {
        const uint8_t *p = NULL;
        size_t n = 0;
        uint64_t at = pos;
        int rc = in_peek(r, &at, 4, &p, &n);
        if (rc)
            return rc;
        if (at > pos) /* a pipe moved us forward */
            pos = at;
        if (n < 4) {
            if (pos + n > r->skip_from)
                r->st.skipped_bytes += (pos + n) - r->skip_from;
            r->in_pos = pos + n;
            r->state = ST_READ;
            return 0;
        }
        const uint8_t *m = memmem(p, n, magic, 4);
        if (m) {
            uint64_t found = pos + (uint64_t)(m - p);
            if (found > r->skip_from)
                r->st.skipped_bytes += found - r->skip_from;
            r->in_pos = found;
            r->state = ST_READ;
            return 0;
        }
        pos += n - 3;
    }
}

/* raw at a new capacity, keeping its first `keep` bytes (realloc would
 * copy the whole old buffer: under ASan, which never resizes in place,
 * every grown frame touched megabytes it then threw away).  NULL when
 * out of memory: raw is then as it was. */
static uint8_t *raw_resize(vt_reader *r, size_t cap, size_t keep)
{
    if (cap <= r->ralloc) { /* the allocation holds it: the bytes stay where they are */
        r->rcap = cap;
        return r->raw;
    }
    uint8_t *nr = malloc(cap);
    if (!nr)
        return NULL;
    if (keep)
        memcpy(nr, r->raw, keep);
    free(r->raw);
    r->raw = nr;
    r->rcap = r->ralloc = cap;
    return nr;
}

/* Leave whole-frame decoding for this frame: decode it again from its
 * start the streaming way, dropping the bytes already produced (the
 * careful_skip mechanism).  For a frame larger than raw (then for the rest
 * of the stream: disable), and for any zstd error, which the streaming
 * way then finds again and reports as always. */
static void stable_fallback(vt_reader *r, int disable)
{
    if (!r->frame_open) { /* this frame's records now go out as they come */
        r->frame_open = 1;
        r->st.frames_unverified++;
    }
    size_t keep = r->rend - r->rpos;
    memmove(r->raw, r->raw + r->rpos, keep);
    r->raw_base += r->rpos;
    r->careful_skip = r->raw_base + keep; /* = bytes of the frame produced */
    r->rpos = 0;
    r->rend = keep;
    while (r->bcap < keep + RAW_MIN_FREE && r->bcap < r->rcap)
        r->bcap *= 2;
    if (r->bcap > r->rcap)
        r->bcap = r->rcap;
    ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
    r->zmode = ZSTD_isError(ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_stableOutBuffer, 0));
    r->stable = 0;
    if (disable || r->zmode)
        r->stable_ok = 0;
    r->in_pos = r->frame_start;
    r->zerr = 0;
}

/* rd_decompress_more() for a frame decoded whole: zstd writes straight into
 * raw (no copy out of its window), which holds the frame from its first
 * byte: nothing moves until the frame ends.  Nothing of the frame is
 * handed out before its end, where zstd has checked its checksum (issue
 * 24: a flipped bit inside a frame altered events that went out before the
 * check): a frame that fails is skipped whole (frame_bad, reported by the
 * caller).  When the input ends inside the frame (a trace cut short), what
 * it decoded goes out unverified: there is no checksum to wait for. */
static int decompress_stable(vt_reader *r, size_t need)
{
    size_t start_end = r->rend;
    for (;;) {
        if (r->stable_full || need > r->rcap - r->rpos || r->rend == r->rcap) {
            r->stable_full = 0;
            /* the frame does not fit: a larger raw, and the frame again
             * from its start (zstd's output buffer cannot move under it) */
            size_t nc = r->rcap * 2 > RAW_VERIFY_MAX ? RAW_VERIFY_MAX : r->rcap * 2;
            /* the frame is decoded again from its start: nothing to keep */
            uint8_t *nr = r->rpos == 0 && !r->frame_open && nc > r->rcap && need <= nc ? raw_resize(r, nc, 0) : NULL;
            if (!nr) {
                /* too large to hold whole: what it holds goes out unverified,
                 * then the rest the streaming way */
                if (!r->frame_open && r->rend - r->rpos >= need) {
                    r->frame_open = 1;
                    r->st.frames_unverified++;
                    r->stable_full = 1; /* the next call goes the streaming way */
                    return 0;
                }
                stable_fallback(r, 1);
                return 0;
            }
            r->st.bytes_raw -= r->rend;
            r->rend = 0;
            start_end = 0;
            r->in_pos = r->frame_start;
            ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
            continue;
        }
        const uint8_t *p;
        size_t n;
        uint64_t at = r->in_pos;
        int rc = in_peek(r, &at, 1, &p, &n);
        if (rc)
            return rc;
        if (n > STABLE_IN_STEP)
            n = STABLE_IN_STEP;
        ZSTD_inBuffer in = {p, n, 0};
        ZSTD_outBuffer out = {r->raw, r->rcap, r->rend};
        size_t ret = ZSTD_decompressStream(r->dctx, &out, &in);
        if (ZSTD_isError(ret) && ZSTD_getErrorCode(ret) == ZSTD_error_dstSize_tooSmall) {
            r->stable_full = 1; /* as when raw is full */
            continue;
        }
        if (ZSTD_isError(ret)) {
            if (r->rpos) { /* records of it went out (the input ended inside it before): the old way */
                stable_fallback(r, 0);
                return 0;
            }
            r->zerr = ret;
            r->zerr_at = r->in_pos + in.pos;
            r->frame_bad = 1;
            r->in_pos += in.pos;
            r->rend = 0; /* none of it goes out */
            return 0;
        }
        size_t got = out.pos - r->rend;
        r->in_pos += in.pos;
        if (r->in_pos > r->in_counted) {
            r->st.bytes_in += r->in_pos - r->in_counted;
            r->in_counted = r->in_pos;
        }
        r->st.bytes_raw += got;
        r->rend += got;
        if (ret == 0) {
            r->in_frame = 0;
            return 0;
        }
        if (n == 0 && r->rend == start_end) {
            if (r->rend - r->rpos >= need) {
                if (!r->frame_open) {
                    r->frame_open = 1;
                    r->st.frames_unverified++;
                }
                return 0;
            }
            return rd_end_of_input(r, "truncated at offset %llu (inside a zstd frame starting at offset %llu)",
                             (unsigned long long)r->in_pos, (unsigned long long)r->frame_start);
        }
        start_end = r->rend;
    }
}

/* Decompress more of the current frame so that `need` bytes are available
 * at raw + rpos.  Returns 0 (progress, or the frame ended: in_frame = 0),
 * or a final error code. */
int rd_decompress_more(vt_reader *r, size_t need)
{
    if (r->stable)
        return decompress_stable(r, need);
    if (r->rpos && (need > r->bcap - r->rpos || r->bcap - r->rend < RAW_MIN_FREE)) {
        size_t keep = r->rend - r->rpos;
        memmove(r->raw, r->raw + r->rpos, keep);
        r->raw_base += r->rpos;
        r->rpos = 0;
        r->rend = keep;
    }
    if (need > r->bcap) {
        size_t cap = r->bcap;
        while (cap < need)
            cap *= 2;
        if (cap > r->rcap && !raw_resize(r, cap, r->rend))
            return rd_set_final(r, VT_ERR_NOMEM, "out of memory for a %zu-byte record", need);
        r->bcap = cap;
    }
    size_t start_end = r->rend;
    for (;;) {
        const uint8_t *p = NULL;
        size_t n = 0;
        uint64_t at = r->in_pos;
        int rc = in_peek(r, &at, 1, &p, &n);
        if (rc)
            return rc;
        if (r->careful && n > 1)
            n = 1;
        ZSTD_inBuffer in = {p, n, 0};
        ZSTD_outBuffer out = {r->raw, r->bcap, r->rend};
        size_t ret = ZSTD_decompressStream(r->dctx, &out, &in);
        size_t got = out.pos - r->rend;
        if (r->careful_skip && got) { /* decoded before the damage was found: already out */
            size_t d = got < r->careful_skip ? got : (size_t)r->careful_skip;
            memmove(r->raw + r->rend, r->raw + r->rend + d, got - d);
            r->careful_skip -= d;
            got -= d;
        }
        r->in_pos += in.pos;
        if (r->in_pos > r->in_counted) {
            r->st.bytes_in += r->in_pos - r->in_counted;
            r->in_counted = r->in_pos;
        }
        r->st.bytes_raw += got;
        r->rend += got;
        if (ZSTD_isError(ret)) {
            r->zerr = ret;
            r->zerr_at = r->in_pos; /* exact when careful; else somewhere in [in_pos, in_pos + n) */
            return 0;
        }
        if (ret == 0) {
            r->in_frame = 0;
            return 0;
        }
        if (r->rend - r->rpos >= need)
            return 0;
        if (n == 0 && r->rend == start_end) {
            /* end of input inside the frame: every complete record is out */
            return rd_end_of_input(r, "truncated at offset %llu (inside a zstd frame starting at offset %llu)",
                             (unsigned long long)r->in_pos, (unsigned long long)r->frame_start);
        }
        start_end = r->rend;
    }
}

/* zstd failed somewhere in the input of one call, and reports neither where
 * nor the output of the blocks it decoded before the damage.  Decode the
 * frame again one input byte at a time (slow, rare), dropping the output
 * already delivered, so that every block before the damage comes out and
 * the error gets its exact offset.  Returns 0 if that started, -1 if the
 * input cannot go back (a pipe): report the error at once. */
int rd_zstd_go_careful(vt_reader *r)
{
    const uint8_t *p;
    size_t n;
    uint64_t at = r->frame_start;
    /* Not for a frame found by scanning that has not shown its Sync yet:
     * likely garbage, and re-decoding every such candidate would make a
     * crafted file cost quadratic time. */
    if (r->careful || r->need_sync || r->frame_bad || in_peek(r, &at, 1, &p, &n) || at != r->frame_start)
        return -1;
    ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
    r->careful = 1;
    r->careful_skip = r->raw_base + r->rend; /* decompressed bytes of this frame already produced */
    r->zerr = 0;
    r->in_pos = r->frame_start;
    return 0;
}

/* Between frames: start the next one, or end the stream. */
int rd_begin_frame(vt_reader *r)
{
    const uint8_t *p;
    size_t n;
    uint64_t at = r->in_pos;
    int rc = in_peek(r, &at, 4, &p, &n);
    if (rc)
        return rc;
    r->in_pos = at;
    if (n == 0) {
        if (r->st.complete) {
            r->state = ST_EOF;
            return 0;
        }
        if (r->in_pos == 0)
            return rd_end_of_input(r, "truncated at offset 0 (empty file: no header)");
        return rd_end_of_input(r, "truncated at offset %llu (no end record: %s)",
                         (unsigned long long)r->in_pos,
                         r->st.resyncs ? "lost in damaged data, or the traced process did not finish writing"
                                       : "the traced process did not finish writing");
    }
    if (n < 4) {
        static const uint8_t zmagic[4] = {0x28, 0xB5, 0x2F, 0xFD};
        if (r->in_pos == 0 && memcmp(p, zmagic, n))
            return rd_set_final(r, VT_ERR_VERSION, "not a vramtrace trace (only %zu bytes, not a zstd stream)", n);
        return rd_end_of_input(r, "truncated at offset %llu (inside a zstd frame header at offset %llu)",
                         (unsigned long long)(r->in_pos + n), (unsigned long long)r->in_pos);
    }
    uint32_t m = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    int skippable = (m & ZSTD_MAGIC_SKIPPABLE_MASK) == ZSTD_MAGIC_SKIPPABLE_START;
    if (m != ZSTD_MAGICNUMBER && !skippable) {
        if (r->in_pos == 0)
            return rd_set_final(r, VT_ERR_VERSION, "not a vramtrace trace (not a zstd stream: starts with %02x %02x %02x %02x)",
                             p[0], p[1], p[2], p[3]);
        r->frame_start = r->in_pos;
        return rd_corrupt(r, VT_ERR_CORRUPT, 0, "corrupt data at offset %llu: no zstd frame starts there",
                       (unsigned long long)r->in_pos);
    }
    r->frame_start = r->in_pos;
    r->in_frame = 1;
    r->frame_bad = 0;
    r->frame_open = 0;
    r->stable_full = 0;
    r->careful = 0;
    r->careful_skip = 0;
    r->raw_base = 0;
    r->rpos = r->rend = 0;
    r->stable = 0;
    if (r->stable_ok && r->rcap < RAW_STABLE && !raw_resize(r, RAW_STABLE, 0)) /* empty: rpos = rend = 0 */
        r->stable_ok = 0;
    if (r->stable_ok != r->zmode) {
        ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
        if (ZSTD_isError(ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_stableOutBuffer, r->stable_ok)))
            r->stable_ok = 0; /* this zstd cannot: streaming, as before */
        else
            r->zmode = r->stable_ok;
    }
    r->stable = r->stable_ok && r->zmode;
    if (!skippable)
        r->st.frames++;
    if (!skippable && !r->stable) { /* a pipe, or after a frame too large to hold */
        r->frame_open = 1;
        r->st.frames_unverified++;
    }
    return 0;
}

/* ---- lifetime and lookups ------------------------------------------- */

/* The last freed readers' zstd contexts, raw and input buffers, kept per
 * thread (two of each) for the next readers: a directory of many small
 * traces (and an export, which has two readers open at once) would
 * otherwise map, zero and fault in the 8 MiB raw buffer and zstd's
 * window anew for every file.  A
 * thread's cache goes with the thread (the key's destructor). */
#define CACHE_SLOTS 2 /* readers of a thread open at once: an export's analysis beside its replay */
typedef struct {
    ZSTD_DCtx *dctx;
    uint8_t *raw;
    size_t ralloc;
    uint8_t *ibuf; /* IN_CHUNK bytes */
} cache_slot;
typedef struct {
    cache_slot s[CACHE_SLOTS];
} reader_cache;
static pthread_key_t g_cache_key;
static pthread_once_t g_cache_once = PTHREAD_ONCE_INIT;
static int g_cache_ok;

static void cache_drop(void *v)
{
    reader_cache *c = v;
    if (c) {
        for (int i = 0; i < CACHE_SLOTS; i++) {
            ZSTD_freeDCtx(c->s[i].dctx);
            free(c->s[i].raw);
            free(c->s[i].ibuf);
        }
        free(c);
    }
}

static void cache_init(void)
{
    g_cache_ok = pthread_key_create(&g_cache_key, cache_drop) == 0;
}

static reader_cache *cache_get(int create)
{
    pthread_once(&g_cache_once, cache_init);
    if (!g_cache_ok)
        return NULL;
    reader_cache *c = pthread_getspecific(g_cache_key);
    if (!c && create) {
        c = calloc(1, sizeof(*c));
        if (c && pthread_setspecific(g_cache_key, c)) {
            free(c);
            c = NULL;
        }
    }
    return c;
}

static int reader_new(vt_reader **out, const char *name)
{
    vt_reader *r = calloc(1, sizeof(*r));
    if (!r)
        return VT_ERR_NOMEM;
    r->fd = -1;
    snprintf(r->name, sizeof(r->name), "%s", name ? name : "<memory>");
    reader_cache *c = cache_get(0);
    cache_slot *cd = NULL, *cr = NULL;
    for (int i = 0; c && i < CACHE_SLOTS; i++) {
        if (!cd && c->s[i].dctx)
            cd = &c->s[i];
        if (!cr && c->s[i].raw)
            cr = &c->s[i];
    }
    if (cd) {
        r->dctx = cd->dctx;
        cd->dctx = NULL;
        ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_and_parameters);
    } else {
        r->dctx = ZSTD_createDCtx();
    }
    if (cr) {
        r->raw = cr->raw;
        r->ralloc = cr->ralloc;
        cr->raw = NULL;
    } else {
        r->raw = malloc(RAW_INIT);
        r->ralloc = RAW_INIT;
    }
    r->rcap = RAW_INIT;
    r->bcap = RAW_INIT;
    if (!r->dctx || !r->raw) {
        vt_reader_free(r);
        return VT_ERR_NOMEM;
    }
    ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_windowLogMax, VT_READER_WINDOW_LOG_MAX);
    r->state = ST_READ;
#if VT_READER_PEXT
    /* VT_READER_NO_PEXT=1: the shift-based decoder everywhere (tests run
     * both); pext is microcoded, slow, on AMD Zen 1 and 2 */
    const char *np = getenv("VT_READER_NO_PEXT");
    __builtin_cpu_init();
    r->pext = !(np && *np == '1') && __builtin_cpu_supports("bmi2") && !__builtin_cpu_is("znver1") &&
              !__builtin_cpu_is("znver2");
    r->kb.pext = r->pext;
#endif
    *out = r;
    return 0;
}

int vt_reader_open_mem(vt_reader **out, const void *data, size_t size, const char *name)
{
    *out = NULL;
    vt_reader *r;
    int rc = reader_new(&r, name);
    if (rc)
        return rc;
    r->mem = data ? data : (const uint8_t *)"";
    r->mem_size = data ? size : 0;
    r->stable_ok = 1;
    *out = r;
    return 0;
}

int vt_reader_open(vt_reader **out, const char *path, char *errmsg, size_t errmsg_len)
{
    vt_reader *r = NULL;
    struct stat sb;
    int rc;
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        rc = errno == ENOENT ? VT_ERR_NOT_FOUND : VT_ERR_IO;
        if (errmsg && errmsg_len)
            snprintf(errmsg, errmsg_len, "%s: %s", path, strerror(errno));
        return rc;
    }
    if (fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        if (errmsg && errmsg_len)
            snprintf(errmsg, errmsg_len, "%s: is a directory", path);
        rc = VT_ERR_IO;
        goto close_fd;
    }
    rc = reader_new(&r, path);
    if (rc) {
        if (errmsg && errmsg_len)
            snprintf(errmsg, errmsg_len, "%s: out of memory", path);
        goto close_fd;
    }
    r->fd = fd;
    r->seekable = S_ISREG(sb.st_mode) && lseek(fd, 0, SEEK_CUR) >= 0;
    r->stable_ok = r->seekable; /* a pipe cannot go back for stable_fallback() */
    reader_cache *c = cache_get(0);
    cache_slot *ci = NULL;
    for (int i = 0; c && i < CACHE_SLOTS && !ci; i++)
        if (c->s[i].ibuf)
            ci = &c->s[i];
    if (ci) {
        r->ibuf = ci->ibuf;
        ci->ibuf = NULL;
    } else {
        r->ibuf = malloc(IN_CHUNK);
    }
    if (!r->ibuf) {
        if (errmsg && errmsg_len)
            snprintf(errmsg, errmsg_len, "%s: out of memory", path);
        vt_reader_free(r);
        return VT_ERR_NOMEM;
    }
    *out = r;
    return 0;
close_fd:
    close(fd);
    return rc;
}

void vt_reader_set_follow(vt_reader *r, int on)
{
    r->follow = on && !r->mem;
}

const char *vt_reader_errmsg(const vt_reader *r)
{
    return r->last_err ? r->err : "";
}

uint64_t vt_reader_offset(const vt_reader *r)
{
    return r->frame_start;
}

void vt_reader_free(vt_reader *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    /* keep the context, the input buffer and a raw buffer of at most
     * RAW_CACHE_MAX for the next reader of this thread */
    reader_cache *c = r->dctx || r->raw || r->ibuf ? cache_get(1) : NULL;
    for (int i = 0; c && i < CACHE_SLOTS; i++) {
        cache_slot *k = &c->s[i];
        if (!k->dctx && r->dctx) {
            k->dctx = r->dctx;
            r->dctx = NULL;
        }
        if (!k->raw && r->raw && r->ralloc <= RAW_CACHE_MAX) {
            k->raw = r->raw;
            k->ralloc = r->ralloc;
            r->raw = NULL;
        }
        if (!k->ibuf && r->ibuf) {
            k->ibuf = r->ibuf;
            r->ibuf = NULL;
        }
    }
    ZSTD_freeDCtx(r->dctx);
    free(r->ibuf);
    free(r->raw);
    free(r->scratch);
    for (arena_blk *b = r->arena, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(r->strings.v);
    free(r->frames.v);
    free(r->stacks.v);
    free(r->threads.v);
    free(r->modules.v);
    free(r->launches.v);
    free(r->stack_frames);
    free(r->devices);
    vt_kbatch_free(&r->kb);
    vt_mblock_free(&r->mb);
    free(r);
}
