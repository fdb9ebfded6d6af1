/* vt_writer_output.c - the encoder output: records into the staging
 * buffer, zstd frames and flushes, the file; the first error disables. */
#include "vt_writer_int.h"
/* ------------------------------------------------------------- errors */

void vt_fail(vt_writer *w, int err, const char *fmt, ...)
{
    int exp = 0;
    atomic_compare_exchange_strong(&w->err, &exp, err);
    atomic_store(&w->off, 1);
    exp = 0;
    if (!atomic_compare_exchange_strong(&w->msg_claim, &exp, 1))
        return;
    if (w->in_signal) {
        /* vsnprintf is not async-signal-safe: a fixed text */
        static const char m[] = "write failed during emergency flush";
        memcpy(w->errmsg, m, sizeof(m));
    } else {
        va_list ap;
        va_start(ap, fmt);
        int n = snprintf(w->errmsg, sizeof(w->errmsg), "%s: ", w->name);
        if (n > 0 && (size_t)n < sizeof(w->errmsg))
            vsnprintf(w->errmsg + n, sizeof(w->errmsg) - (size_t)n, fmt, ap);
        va_end(ap);
    }
    atomic_store_explicit(&w->msg_ready, 1, memory_order_release);
    if (!w->cfg.quiet && !w->in_signal)
        fprintf(stderr, "vramtrace: %s: disabled\n", w->errmsg);
}

/* ------------------------------------------------------------ encoder */

static int vt_write_all(vt_writer *w, const unsigned char *buf, size_t len)
{
    while (len) {
        ssize_t n = write(w->fd, buf, len);
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pfd = {.fd = w->fd, .events = POLLOUT};
            if (poll(&pfd, 1, 1000) > 0)
                continue;
            vt_fail(w, VT_ERR_IO, "write failed: output blocked for too long");
            return VT_ERR_IO;
        }
        int e = n < 0 ? errno : ENOSPC;
        vt_fail(w, e == ENOSPC || e == EDQUOT ? VT_ERR_NOSPACE : VT_ERR_IO, "write failed: %s", strerror(e));
        return atomic_load(&w->err);
    }
    return 0;
}

int vt_enc_feed(vt_writer *w, ZSTD_EndDirective mode)
{
    if (atomic_load_explicit(&w->err, memory_order_relaxed))
        return atomic_load(&w->err);
    ZSTD_inBuffer in = {w->stage, w->stage_len, 0};
    for (;;) {
        ZSTD_outBuffer out = {w->out, w->out_cap, 0};
        size_t rem = ZSTD_compressStream2(w->zc, &out, &in, mode);
        if (ZSTD_isError(rem)) {
            vt_fail(w, VT_ERR_IO, "zstd: %s", ZSTD_getErrorName(rem));
            return VT_ERR_IO;
        }
        if (out.pos) {
            int rc = vt_write_all(w, w->out, out.pos);
            if (rc)
                return rc;
            atomic_fetch_add_explicit(&w->st_written, out.pos, memory_order_relaxed);
        }
        if (mode == ZSTD_e_continue ? in.pos == in.size : rem == 0)
            break;
    }
    w->stage_len = 0;
    return 0;
}

/* Records whose size is bounded by construction (fixed fields, stacks of
 * at most VT_MAX_STACK frames) are packed without a get_packed_size() pass
 * first: their length prefix fits in two bytes. */
#define VT_SMALL_MAX 16383
static inline int vt_rec_small(Vramtrace__Record__BodyCase c)
{
    switch (c) {
    case VRAMTRACE__RECORD__BODY_HEADER:
    case VRAMTRACE__RECORD__BODY_STRING:
    case VRAMTRACE__RECORD__BODY_MODULE:
    case VRAMTRACE__RECORD__BODY_THREAD:
    case VRAMTRACE__RECORD__BODY_DEVICE:
    case VRAMTRACE__RECORD__BODY_NOTE:
        return 0; /* strings of any length */
    case VRAMTRACE__RECORD__BODY_KERNEL_BATCH:
        /* per kernel at most 5 + 4 * 10 bytes of varints, plus tags and lengths */
        return VT_KBATCH_MAX * 45 + 64 <= VT_SMALL_MAX;
    case VRAMTRACE__RECORD__BODY_KERNEL_BLOCK:
        /* per kernel at most 4 * 9 bytes of columns (no cheaper width than 64
         * bits; an exception's index may take a byte more than counted) and
         * a 10-byte graph id, plus tags and lengths */
        return VT_KBATCH_MAX * 46 + 4 * 11 + 64 <= VT_SMALL_MAX;
    case VRAMTRACE__RECORD__BODY_MEM_BLOCK:
        /* six columns of at most 12 + 9 bytes per entry (width byte, base,
         * a partial last byte; width 64 is never dearer than exceptions,
         * which add at most an index's second byte), contexts of at most
         * 2 + 7 * 11 bytes */
        return 6 * (12 + 9 * VT_MBLOCK_MAX) + VT_MBLOCK_CTX * 79 + 64 <= VT_SMALL_MAX;
    default:
        return 1;
    }
}

/* Put one record into the staging buffer as it is, with nothing pending
 * before it: the block writers (vt_writer_blocks.c) call this. */
int vt_enc_record(vt_writer *w, const Vramtrace__Record *r)
{
    if (atomic_load_explicit(&w->err, memory_order_relaxed))
        return atomic_load(&w->err);
    const int small = vt_rec_small(r->body_case);
    size_t n = small ? 0 : vramtrace__record__get_packed_size(r);
    size_t need = small ? VT_SMALL_MAX + 3 : n + 11;
    if (w->stage_len + need > w->stage_cap) {
        int rc = vt_enc_feed(w, ZSTD_e_continue);
        if (rc)
            return rc;
        if (need > w->stage_cap) {
            if (w->no_alloc)
                return VT_ERR_NOMEM;
            unsigned char *ns = realloc(w->stage, need);
            if (!ns)
                return VT_ERR_NOMEM;
            w->stage = ns;
            w->stage_cap = need;
        }
    }
    unsigned char *p = w->stage + w->stage_len;
    size_t k = 0;
    p[k++] = 0x0A;
    if (small) {
        n = vramtrace__record__pack(r, p + 2);
        assert(n <= VT_SMALL_MAX);
        if (n < 128) {
            p[k++] = (unsigned char)n;
        } else {
            memmove(p + 3, p + 2, n);
            p[k++] = (unsigned char)(n | 0x80);
            p[k++] = (unsigned char)(n >> 7);
        }
    } else {
        uint64_t v = n;
        while (v >= 0x80) {
            p[k++] = (unsigned char)(v | 0x80);
            v >>= 7;
        }
        p[k++] = (unsigned char)v;
        vramtrace__record__pack(r, p + k);
    }
    w->stage_len += k + n;
    w->frame_in += k + n;
    atomic_fetch_add_explicit(&w->st_records, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->st_raw, k + n, memory_order_relaxed);
    if (!w->dirty) {
        w->dirty = 1;
        w->dirty_since = vt_mono_ns();
    }
    return 0;
}

/* Put one record, after the pending allocations and frees and (unless
 * it is one of theirs) the pending kernels: records keep the order of
 * their events. */
int vt_enc_put(vt_writer *w, const Vramtrace__Record *r)
{
    if (atomic_load_explicit(&w->err, memory_order_relaxed))
        return atomic_load(&w->err);
    if (w->mb_n && r->body_case != VRAMTRACE__RECORD__BODY_MEM_BLOCK) {
        /* pending allocations and frees first (their deltas are taken) */
        int rc = vt_enc_mblock(w);
        if (rc)
            return rc;
    }
    if (w->kb_n && r->body_case != VRAMTRACE__RECORD__BODY_KERNEL_BLOCK &&
        r->body_case != VRAMTRACE__RECORD__BODY_KERNEL && r->body_case != VRAMTRACE__RECORD__BODY_MEM_BLOCK &&
        r->body_case != VRAMTRACE__RECORD__BODY_ALLOC && r->body_case != VRAMTRACE__RECORD__BODY_FREE) {
        /* pending kernels first: records keep the order of their events.
         * Not before pending allocations and frees going out (above):
         * those came first, since one queued flushes the kernels. */
        int rc = vt_enc_kbatch(w);
        if (rc)
            return rc;
    }
    return vt_enc_record(w, r);
}

int vt_enc_sync(vt_writer *w)
{
    Vramtrace__Sync s = VRAMTRACE__SYNC__INIT;
    s.time_ns = w->host_t;
    s.device_time_ns = w->dev_t;
    s.sequence = w->seq++;
    Vramtrace__Record r = VRAMTRACE__RECORD__INIT;
    r.body_case = VRAMTRACE__RECORD__BODY_SYNC;
    r.sync = &s;
    w->corr = 0;
    w->frame_in = 0;
    atomic_fetch_add_explicit(&w->st_frames, 1, memory_order_relaxed);
    return vt_enc_put(w, &r);
}

/* Write what is pending: allocations and frees, kernels (in the order
 * they were queued: a kernel block puts the pending allocations first). */
static int vt_enc_pending(vt_writer *w)
{
    int rc = vt_enc_kbatch(w);
    return rc ? rc : vt_enc_mblock(w);
}

/* End the zstd frame when it holds frame_bytes of input; the next one
 * starts with a Sync. */
int vt_enc_frame_check(vt_writer *w)
{
    if (w->frame_in < w->cfg.frame_bytes)
        return 0;
    int rc = vt_enc_pending(w);
    if (!rc)
        rc = vt_enc_feed(w, ZSTD_e_end);
    if (rc)
        return rc;
    return vt_enc_sync(w);
}

int vt_enc_flush(vt_writer *w)
{
    int rc = vt_enc_pending(w);
    if (!rc)
        rc = vt_enc_feed(w, ZSTD_e_flush);
    w->dirty = 0;
    return rc;
}
