/* vt_writer_blocks.c - runs of kernels and of allocations and frees held
 * back and written as KernelBlock and MemBlock columns (docs/FORMAT.md). */
#include "vt_writer_int.h"
/* A KernelBlock column (proto/vramtrace.proto) of m values into out:
 * width, zigzag base (the minimum, as int64 where `sign`), the values
 * minus base in width bits each, LSB first, then the exceptions: the
 * values that do not fit in width bits (their low bits are in place), as
 * varint pairs (index - previous index - 1, value >> width).  The width is
 * the one with the fewest bytes, exceptions counted (on the recorded H200
 * traces a rare long gap or correlation step would otherwise widen all
 * 256 entries: 0.5 B per kernel more).  `bytes`: widths of whole bytes and
 * base 0 (the launch column: a repeating sequence of kernels then repeats
 * byte for byte, a long zstd match).  Returns the column's length. */
static size_t vt_kcol(uint8_t *out, const uint64_t *v, uint32_t m, int sign, int bytes)
{
    uint64_t lo = 0;
    if (!bytes && m) {
        lo = v[0];
        for (uint32_t i = 1; i < m; i++)
            if (sign ? (int64_t)v[i] < (int64_t)lo : v[i] < lo)
                lo = v[i];
    }
    uint32_t len[65] = {0}; /* values by bit length */
    for (uint32_t i = 0; i < m; i++) {
        const uint64_t x = v[i] - lo;
        len[x ? 64 - __builtin_clzll(x) : 0]++;
    }
    /* bits for width w: m*w, plus per exception of l > w bits a byte of
     * index and the varint of its l - w high bits */
    unsigned width = 0, ls[65], nl = 0;
    for (unsigned l = 0; l <= 64; l++)
        if (len[l])
            ls[nl++] = l;
    uint64_t best = UINT64_MAX;
    unsigned top = nl ? ls[nl - 1] : 0;
    if (bytes)
        top = (top + 7) & ~7u;
    for (unsigned w = top;; w--) {
        if (!bytes || w % 8 == 0) {
            uint64_t cost = (uint64_t)m * w;
            for (unsigned j = nl; j-- && ls[j] > w;)
                cost += (uint64_t)len[ls[j]] * (8 + 8 * ((ls[j] - w + 6) / 7));
            if (cost <= best) {
                best = cost;
                width = w;
            }
        }
        if (!w)
            break;
    }
    size_t k = 0;
    out[k++] = (uint8_t)width;
    uint64_t z = ((uint64_t)lo << 1) ^ (uint64_t)((int64_t)lo >> 63);
    while (z >= 0x80) {
        out[k++] = (uint8_t)(z | 0x80);
        z >>= 7;
    }
    out[k++] = (uint8_t)z;
    if (!m)
        return k;
    const uint64_t lim = width < 64 ? (1ull << width) - 1 : UINT64_MAX;
    uint64_t acc = 0; /* nb pending bits */
    unsigned nb = 0;
    if (width <= 32) { /* < 32 pending + at most 32: 4 bytes out at a time */
        for (uint32_t i = 0; i < m && width; i++) {
            acc |= ((v[i] - lo) & lim) << nb;
            nb += width;
            if (nb >= 32) {
                const uint32_t w32 = (uint32_t)acc;
                memcpy(out + k, &w32, 4); /* little-endian, as every target of this code */
                k += 4;
                acc >>= 32;
                nb -= 32;
            }
        }
    } else { /* in chunks of at most 32 bits, bytes out one by one */
        for (uint32_t i = 0; i < m; i++) {
            uint64_t x = (v[i] - lo) & lim;
            for (unsigned left = width; left;) {
                const unsigned c = left > 32 ? 32 : left;
                acc |= (x & ((1ull << c) - 1)) << nb;
                nb += c;
                x >>= c;
                left -= c;
                for (; nb >= 8; nb -= 8, acc >>= 8)
                    out[k++] = (uint8_t)acc;
            }
        }
    }
    for (; nb > 0; nb = nb > 8 ? nb - 8 : 0, acc >>= 8)
        out[k++] = (uint8_t)acc;
    uint32_t prev = 0;
    for (uint32_t i = 0; i < m && width < 64; i++) {
        const uint64_t x = v[i] - lo;
        if (x <= lim)
            continue;
        for (uint64_t e = i - prev, hi = x >> width, j = 0; j < 2; j++, e = hi) {
            while (e >= 0x80) {
                out[k++] = (uint8_t)(e | 0x80);
                e >>= 7;
            }
            out[k++] = (uint8_t)e;
        }
        prev = i + 1;
    }
    return k;
}

/* Write the pending kernels: Kernel records for fewer than VT_KBATCH_MIN
 * (for a handful of kernels a block saves almost nothing and costs the
 * reader more per kernel: measured with bench_reader's interleaved mix),
 * else a KernelBlock (docs/FORMAT.md): start0 is the delta from the device
 * time base, gap[i-1] for i > 0 the gap since the end of kernel i-1
 * (start - (start + duration) of the previous one; smaller and more
 * regular than the start-to-start delta: -7 % bytes on the bench, -2 % on
 * real traces); corr[i] the delta a Kernel record would carry.  The device
 * time base ends at the last kernel's start, as after Kernel records. */
int vt_enc_kbatch(vt_writer *w)
{
    const uint32_t n = w->kb_n;
    if (!n)
        return 0;
    w->kb_n = 0;
    if (w->mb_n) { /* the pending allocations and frees came first */
        int rc = vt_enc_mblock(w);
        if (rc)
            return rc;
    }
    if (n < VT_KBATCH_MIN) {
        w->kb_graph_any = 0;
        for (uint32_t i = 0; i < n; i++) {
            Vramtrace__Kernel k = VRAMTRACE__KERNEL__INIT;
            k.launch = (uint32_t)w->kb_launch[i];
            k.duration_ns = w->kb_dur[i];
            k.graph_id = w->kb_graph[i];
            k.corr = vt_d_corr(w, (uint64_t)w->kb_corr[i]);
            VT_REC(r, kernel, KERNEL, k);
            r.ts_delta = vt_d_dev(w, (uint64_t)w->kb_start[i]);
            int rc = vt_enc_record(w, &r);
            if (rc)
                return rc;
        }
        return 0;
    }
    uint64_t base = w->dev_t;
    for (uint32_t i = 0; i < n; i++) { /* absolute -> delta, in place */
        const uint64_t st = (uint64_t)w->kb_start[i];
        w->kb_start[i] = (int64_t)(st - base);
        base = st + w->kb_dur[i];
        w->kb_corr[i] = vt_d_corr(w, (uint64_t)w->kb_corr[i]);
    }
    w->dev_t = base - w->kb_dur[n - 1]; /* the last kernel's start */
    Vramtrace__KernelBlock b = VRAMTRACE__KERNEL_BLOCK__INIT;
    b.count = n;
    b.start0 = w->kb_start[0];
    b.launch.data = w->kb_col[0];
    b.launch.len = vt_kcol(w->kb_col[0], w->kb_launch, n, 0, 1);
    b.gap.data = w->kb_col[1];
    b.gap.len = vt_kcol(w->kb_col[1], (const uint64_t *)w->kb_start + 1, n - 1, 1, 0);
    b.duration_ns.data = w->kb_col[2];
    b.duration_ns.len = vt_kcol(w->kb_col[2], w->kb_dur, n, 0, 0);
    b.corr.data = w->kb_col[3];
    b.corr.len = vt_kcol(w->kb_col[3], (const uint64_t *)w->kb_corr, n, 1, 0);
    if (w->kb_graph_any) {
        b.n_graph_id = n;
        b.graph_id = w->kb_graph;
    }
    w->kb_graph_any = 0;
    VT_REC(r, kernel_block, KERNEL_BLOCK, b); /* ts_delta 0 */
    return vt_enc_record(w, &r);
}

/* Queue one kernel (its Launch is defined); the batch goes out when full. */
int vt_enc_kernel(vt_writer *w, uint32_t launch, const vt_ev_kernel *k, uint64_t start)
{
    uint32_t i = w->kb_n++;
    w->kb_launch[i] = launch;
    w->kb_start[i] = (int64_t)start;
    w->kb_dur[i] = k->duration_ns;
    w->kb_corr[i] = (int64_t)k->corr;
    w->kb_graph[i] = k->graph_id;
    w->kb_graph_any |= k->graph_id != 0;
    w->events++;
    if (!w->dirty) { /* pending counts as unflushed data (flush_ms bound) */
        w->dirty = 1;
        w->dirty_since = vt_mono_ns();
    }
    return w->kb_n == VT_KBATCH_MAX ? vt_enc_kbatch(w) : 0;
}

/* Write the pending allocations and frees: Alloc and Free records for
 * fewer than VT_MBLOCK_MIN, else a MemBlock (docs/FORMAT.md).  Their time
 * and correlation deltas were taken when they were queued. */
int vt_enc_mblock(vt_writer *w)
{
    const uint32_t n = w->mb_n, na = w->mb_na, nctx = w->mb_nctx;
    if (!n)
        return 0;
    w->mb_n = w->mb_na = w->mb_nctx = 0;
    if (n < VT_MBLOCK_MIN) {
        for (uint32_t i = 0, j = 0; i < n; i++) {
            const vt_mctx *c = &w->mb_cx[w->mb_ctx[i]];
            Vramtrace__Record r = VRAMTRACE__RECORD__INIT;
            Vramtrace__Alloc a = VRAMTRACE__ALLOC__INIT;
            Vramtrace__Free f = VRAMTRACE__FREE__INIT;
            r.ts_delta = (int64_t)w->mb_time[i];
            if (c->free) {
                f.address = w->mb_addr[i];
                f.device = c->device;
                f.kind = (Vramtrace__MemoryKind)c->kind;
                f.api = (Vramtrace__AllocApi)c->api;
                f.stream = c->stream;
                f.thread = c->thread;
                f.stack = c->stack;
                f.corr = (int64_t)w->mb_corr[i];
                r.body_case = VRAMTRACE__RECORD__BODY_FREE;
                r.free = &f;
            } else {
                a.address = w->mb_addr[i];
                a.size = w->mb_size[j];
                a.device = c->device;
                a.kind = (Vramtrace__MemoryKind)c->kind;
                a.api = (Vramtrace__AllocApi)c->api;
                a.stream = c->stream;
                a.pool = c->pool;
                a.thread = c->thread;
                a.stack = (uint32_t)w->mb_stack[j++];
                a.corr = (int64_t)w->mb_corr[i];
                r.body_case = VRAMTRACE__RECORD__BODY_ALLOC;
                r.alloc = &a;
            }
            int rc = vt_enc_record(w, &r);
            if (rc)
                return rc;
        }
        return 0;
    }
    Vramtrace__MemContext cm[VT_MBLOCK_CTX], *cp[VT_MBLOCK_CTX];
    for (uint32_t k = 0; k < nctx; k++) {
        const vt_mctx *c = &w->mb_cx[k];
        Vramtrace__MemContext x = VRAMTRACE__MEM_CONTEXT__INIT;
        x.free = c->free;
        x.device = c->device;
        x.kind = (Vramtrace__MemoryKind)c->kind;
        x.api = (Vramtrace__AllocApi)c->api;
        x.stream = c->stream;
        x.pool = c->pool;
        x.thread = c->thread;
        x.stack = c->stack;
        cm[k] = x;
        cp[k] = &cm[k];
    }
    Vramtrace__MemBlock b = VRAMTRACE__MEM_BLOCK__INIT;
    b.count = n;
    b.n_context = nctx;
    b.context = cp;
    b.ctx.data = w->mb_col[0];
    b.ctx.len = vt_kcol(w->mb_col[0], w->mb_ctx, n, 0, 0);
    b.time.data = w->mb_col[1];
    b.time.len = vt_kcol(w->mb_col[1], w->mb_time, n, 1, 0);
    b.address.data = w->mb_col[2];
    b.address.len = vt_kcol(w->mb_col[2], w->mb_addr, n, 0, VT_MB_ADDR_BYTES);
    b.corr.data = w->mb_col[3];
    b.corr.len = vt_kcol(w->mb_col[3], w->mb_corr, n, 1, 0);
    if (na) {
        b.size.data = w->mb_col[4];
        b.size.len = vt_kcol(w->mb_col[4], w->mb_size, na, 0, 0);
        b.stack.data = w->mb_col[5];
        b.stack.len = vt_kcol(w->mb_col[5], w->mb_stack, na, 0, 0);
    }
    VT_REC(r, mem_block, MEM_BLOCK, b); /* ts_delta 0 */
    return vt_enc_record(w, &r);
}

/* Queue one allocation (free = 0) or free of context *c (thread and
 * stack interned): its deltas now, in stream order; the block goes out
 * when full. */
int vt_enc_mem(vt_writer *w, const vt_mctx *c, uint64_t time, uint64_t address, uint64_t size,
                      uint32_t stack, uint64_t corr)
{
    uint32_t k = 0;
    while (k < w->mb_nctx && memcmp(&w->mb_cx[k], c, sizeof(*c)))
        k++;
    if (k == VT_MBLOCK_CTX) {
        int rc = vt_enc_mblock(w);
        if (rc)
            return rc;
        k = 0;
    }
    if (k == w->mb_nctx)
        w->mb_cx[w->mb_nctx++] = *c;
    const uint32_t i = w->mb_n++;
    w->mb_ctx[i] = k;
    w->mb_time[i] = (uint64_t)vt_d_host(w, time);
    w->mb_addr[i] = address;
    w->mb_corr[i] = (uint64_t)vt_d_corr(w, corr);
    if (!c->free) {
        w->mb_size[w->mb_na] = size;
        w->mb_stack[w->mb_na++] = stack;
    }
    w->events++;
    if (!w->dirty) { /* pending counts as unflushed data (flush_ms bound) */
        w->dirty = 1;
        w->dirty_since = vt_mono_ns();
    }
    return w->mb_n == VT_MBLOCK_MAX ? vt_enc_mblock(w) : 0;
}
