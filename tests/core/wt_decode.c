/* wt_decode.c - independent test decoder, see wt_decode.h. */
#include "wt_decode.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

static void wt_err(wt_trace *t, const char *fmt, ...)
{
    if (!t->errors++) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(t->first_error, sizeof(t->first_error), fmt, ap);
        va_end(ap);
    }
}

#define GROW(arr, n, cap)                                                                            \
    do {                                                                                             \
        if ((n) >= (cap)) {                                                                          \
            (cap) = (cap) ? (cap) * 2 : 64;                                                          \
            (arr) = realloc((arr), (cap) * sizeof(*(arr)));                                          \
        }                                                                                            \
    } while (0)

/* Tables are indexed by id; grow to hold index id. */
static void *wt_table_set(void *tab, uint32_t id, void *val)
{
    void **t = realloc(tab, ((size_t)id + 1) * sizeof(void *));
    t[id] = val;
    return t;
}

static void wt_keep(wt_trace *t, Vramtrace__Record *r)
{
    GROW(t->defs, t->ndefs, t->capdefs);
    t->defs[t->ndefs++] = r;
}

#define REF(t, val, n, what)                                                                         \
    do {                                                                                             \
        if ((val) > (n))                                                                             \
            wt_err(t, "record %llu: %s %u used before its definition", (unsigned long long)(t)->nrecords, \
                   what, (unsigned)(val));                                                           \
    } while (0)

typedef struct {
    uint64_t host, dev, corr;
} wt_state;

/* A KernelBatch: its columns checked, then one kernel event per entry, as
 * if it were that many Kernel records (proto/vramtrace.proto). */
static void wt_batch_of(wt_trace *t, wt_state *s, const Vramtrace__Record *r, const Vramtrace__KernelBatch *b,
                        int keep)
{
    size_t n = b->n_launch;
    t->nbatches++;
    t->nbatched += n;
    if (r->ts_delta)
        wt_err(t, "KernelBatch with ts_delta %lld", (long long)r->ts_delta);
    if (b->n_start != n || b->n_duration_ns != n || b->n_corr != n || (b->n_graph_id && b->n_graph_id != n)) {
        wt_err(t, "KernelBatch columns disagree: %zu launch, %zu start, %zu duration, %zu corr, %zu graph_id", n,
               b->n_start, b->n_duration_ns, b->n_corr, b->n_graph_id);
        return;
    }
    if (n < 2)
        wt_err(t, "KernelBatch of %zu kernels (the writer batches runs of 2 or more)", n);
    if (t->end)
        wt_err(t, "record after End");
    uint64_t prev_start = s->dev;
    uint64_t base = s->dev; /* start[0] from the base, start[i] from the end of kernel i-1 */
    for (size_t i = 0; i < n; i++) {
        wt_ev e;
        memset(&e, 0, sizeof(e));
        e.type = VRAMTRACE__RECORD__BODY_KERNEL;
        s->dev = base + (uint64_t)b->start[i];
        base = s->dev + b->duration_ns[i];
        e.time = s->dev;
        const int64_t ts = (int64_t)(e.time - prev_start);
        prev_start = e.time;
        s->corr += (uint64_t)b->corr[i];
        e.corr = s->corr;
        e.a = b->launch[i];
        e.b = b->duration_ns[i];
        e.batch = (uint32_t)n;
        REF(t, b->launch[i], t->nlaunch, "launch");
        if (keep) {
            Vramtrace__Record *kr = malloc(sizeof(*kr));
            Vramtrace__Kernel *k = malloc(sizeof(*k));
            vramtrace__record__init(kr);
            vramtrace__kernel__init(k);
            k->launch = b->launch[i];
            k->duration_ns = b->duration_ns[i];
            k->graph_id = b->n_graph_id ? b->graph_id[i] : 0;
            k->corr = b->corr[i];
            kr->ts_delta = ts; /* what a Kernel record here would carry */
            kr->body_case = VRAMTRACE__RECORD__BODY_KERNEL;
            kr->kernel = k;
            e.rec = kr; /* freed like an unpacked record */
        }
        GROW(t->ev, t->nev, t->capev);
        t->ev[t->nev++] = e;
    }
}

static void wt_batch(wt_trace *t, wt_state *s, const Vramtrace__Record *r, int keep)
{
    wt_batch_of(t, s, r, r->kernel_batch, keep);
}

/* A KernelBlock column (proto/vramtrace.proto) of m entries, decoded bit
 * by bit (independently of the reader's decoder); -1 if malformed. */
static int wt_col(const ProtobufCBinaryData *c, size_t m, uint64_t *out)
{
    if (!c->len)
        return m ? -1 : 0;
    const uint8_t *q = c->data, *qe = c->data + c->len;
    unsigned width = *q++;
    uint64_t z = 0;
    for (unsigned sh = 0;; sh += 7) {
        if (q == qe || sh > 63)
            return -1;
        z |= (uint64_t)(*q & 0x7f) << sh;
        if (!(*q++ & 0x80))
            break;
    }
    const uint64_t base = (z >> 1) ^ (uint64_t)-(int64_t)(z & 1);
    if (width > 64 || (size_t)(qe - q) < (m * width + 7) / 8)
        return -1;
    for (size_t j = 0; j < m; j++) {
        uint64_t v = 0;
        for (unsigned k = 0; k < width; k++) {
            size_t bit = j * width + k;
            v |= (uint64_t)((q[bit / 8] >> (bit % 8)) & 1) << k;
        }
        out[j] = base + v;
    }
    q += (m * width + 7) / 8;
    for (size_t i = 0; q < qe; i++) { /* exceptions: (index - previous - 1, high bits) */
        uint64_t pair[2] = {0, 0};
        for (int h = 0; h < 2; h++)
            for (unsigned sh = 0;; sh += 7) {
                if (q == qe || sh > 63)
                    return -1;
                pair[h] |= (uint64_t)(*q & 0x7f) << sh;
                if (!(*q++ & 0x80))
                    break;
            }
        i += pair[0];
        if (i >= m || width == 64)
            return -1;
        out[i] += pair[1] << width;
    }
    return 0;
}

/* A KernelBlock: unpacked into KernelBatch columns, then the same. */
static void wt_block(wt_trace *t, wt_state *s, const Vramtrace__Record *r, int keep)
{
    const Vramtrace__KernelBlock *kb = r->kernel_block;
    const size_t n = kb->count;
    t->nblocks++;
    if (n == 0 || n > 65536) {
        wt_err(t, "KernelBlock of %zu kernels", n);
        return;
    }
    uint64_t *l = malloc(n * 8), *st = malloc(n * 8), *d = malloc(n * 8), *c = malloc(n * 8);
    uint32_t *l32 = malloc(n * 4);
    if (wt_col(&kb->launch, n, l) || wt_col(&kb->gap, n - 1, st + 1) || wt_col(&kb->duration_ns, n, d) ||
        wt_col(&kb->corr, n, c) || (kb->n_graph_id && kb->n_graph_id != n)) {
        wt_err(t, "KernelBlock with a malformed column");
    } else {
        st[0] = (uint64_t)kb->start0;
        for (size_t i = 0; i < n; i++)
            l32[i] = (uint32_t)l[i];
        Vramtrace__KernelBatch b = VRAMTRACE__KERNEL_BATCH__INIT;
        b.n_launch = b.n_start = b.n_duration_ns = b.n_corr = n;
        b.launch = l32;
        b.start = (int64_t *)st;
        b.duration_ns = d;
        b.corr = (int64_t *)c;
        b.n_graph_id = kb->n_graph_id;
        b.graph_id = kb->graph_id;
        wt_batch_of(t, s, r, &b, keep);
    }
    free(l);
    free(st);
    free(d);
    free(c);
    free(l32);
}

static int wt_record(wt_trace *t, wt_state *s, Vramtrace__Record *r, int keep);

/* A MemBlock: each event made up as the Alloc or Free record it stands
 * for (ts_delta and corr the deltas such a record carries), then taken
 * like one. */
static void wt_mblock(wt_trace *t, wt_state *s, const Vramtrace__Record *r, int keep)
{
    const Vramtrace__MemBlock *mb = r->mem_block;
    const size_t n = mb->count;
    t->nmblocks++;
    if (r->ts_delta)
        wt_err(t, "MemBlock with ts_delta %lld", (long long)r->ts_delta);
    if (n == 0 || n > 65536 || mb->n_context == 0) {
        wt_err(t, "MemBlock of %zu events, %zu contexts", n, mb->n_context);
        return;
    }
    uint64_t *cx = malloc(n * 8), *tm = malloc(n * 8), *ad = malloc(n * 8), *co = malloc(n * 8);
    uint64_t *sz = malloc(n * 8), *sk = malloc(n * 8);
    size_t na = 0;
    int bad = wt_col(&mb->ctx, n, cx);
    for (size_t i = 0; !bad && i < n; i++) {
        if (cx[i] >= mb->n_context)
            bad = 1;
        else
            na += !mb->context[cx[i]]->free;
    }
    if (bad || wt_col(&mb->time, n, tm) || wt_col(&mb->address, n, ad) || wt_col(&mb->corr, n, co) ||
        wt_col(&mb->size, na, sz) || wt_col(&mb->stack, na, sk)) {
        wt_err(t, "MemBlock with a malformed column");
    } else {
        t->nmblocked += n;
        for (size_t i = 0, j = 0; i < n; i++) {
            const Vramtrace__MemContext *c = mb->context[cx[i]];
            Vramtrace__Record *x = malloc(sizeof(*x));
            vramtrace__record__init(x);
            x->ts_delta = (int64_t)tm[i];
            if (c->free) {
                Vramtrace__Free *f = malloc(sizeof(*f));
                vramtrace__free__init(f);
                f->address = ad[i];
                f->device = c->device;
                f->kind = c->kind;
                f->api = c->api;
                f->stream = c->stream;
                f->thread = c->thread;
                f->stack = c->stack;
                f->corr = (int64_t)co[i];
                x->body_case = VRAMTRACE__RECORD__BODY_FREE;
                x->free = f;
            } else {
                Vramtrace__Alloc *a = malloc(sizeof(*a));
                vramtrace__alloc__init(a);
                a->address = ad[i];
                a->size = sz[j];
                a->device = c->device;
                a->kind = c->kind;
                a->api = c->api;
                a->stream = c->stream;
                a->pool = c->pool;
                a->thread = c->thread;
                a->stack = (uint32_t)sk[j++];
                a->corr = (int64_t)co[i];
                x->body_case = VRAMTRACE__RECORD__BODY_ALLOC;
                x->alloc = a;
            }
            if (!wt_record(t, s, x, keep))
                vramtrace__record__free_unpacked(x, NULL);
        }
    }
    free(cx);
    free(tm);
    free(ad);
    free(co);
    free(sz);
    free(sk);
}

/* Returns 1 if the record is kept (owned by t), 0 if it may be freed. */
static int wt_record(wt_trace *t, wt_state *s, Vramtrace__Record *r, int keep)
{
    int defn = 0;
    switch (r->body_case) {
    case VRAMTRACE__RECORD__BODY_HEADER:
    case VRAMTRACE__RECORD__BODY_STRING:
    case VRAMTRACE__RECORD__BODY_FRAME:
    case VRAMTRACE__RECORD__BODY_STACK:
    case VRAMTRACE__RECORD__BODY_THREAD:
    case VRAMTRACE__RECORD__BODY_MODULE:
    case VRAMTRACE__RECORD__BODY_LAUNCH:
        defn = 1;
        if (r->ts_delta)
            wt_err(t, "definition with ts_delta %lld", (long long)r->ts_delta);
        break;
    default:
        break;
    }
    switch (r->body_case) {
    case VRAMTRACE__RECORD__BODY_HEADER:
        if (t->nrecords != 0)
            wt_err(t, "header is record %llu", (unsigned long long)t->nrecords);
        t->header = r->header;
        wt_keep(t, r);
        return 1;
    case VRAMTRACE__RECORD__BODY_SYNC:
        s->host = r->sync->time_ns;
        s->dev = r->sync->device_time_ns;
        s->corr = 0;
        if (r->sync->sequence != t->nsync)
            wt_err(t, "sync sequence %llu, expected %llu", (unsigned long long)r->sync->sequence,
                   (unsigned long long)t->nsync);
        t->nsync++;
        return 0;
    case VRAMTRACE__RECORD__BODY_STRING:
        if (r->string->id != t->nstr + 1)
            wt_err(t, "string id %u, expected %u", r->string->id, t->nstr + 1);
        t->nstr = r->string->id;
        t->str = wt_table_set(t->str, t->nstr, r->string->value);
        wt_keep(t, r);
        return 1;
    case VRAMTRACE__RECORD__BODY_FRAME:
        if (r->frame->id != t->nframe + 1)
            wt_err(t, "frame id %u, expected %u", r->frame->id, t->nframe + 1);
        REF(t, r->frame->module, t->nmodule, "module");
        REF(t, r->frame->file, t->nstr, "string");
        REF(t, r->frame->function, t->nstr, "string");
        t->nframe = r->frame->id;
        t->frame = wt_table_set(t->frame, t->nframe, r->frame);
        wt_keep(t, r);
        return 1;
    case VRAMTRACE__RECORD__BODY_STACK:
        if (r->stack->id != t->nstack + 1)
            wt_err(t, "stack id %u, expected %u", r->stack->id, t->nstack + 1);
        for (size_t i = 0; i < r->stack->n_frame; i++)
            REF(t, r->stack->frame[i], t->nframe, "frame");
        if (r->stack->parent >= r->stack->id)
            wt_err(t, "stack %u has parent %u", r->stack->id, r->stack->parent);
        t->nstack = r->stack->id;
        t->stack = wt_table_set(t->stack, t->nstack, r->stack);
        wt_keep(t, r);
        return 1;
    case VRAMTRACE__RECORD__BODY_THREAD:
        if (r->thread->id > t->nthread + 1 || !r->thread->id)
            wt_err(t, "thread id %u, expected <= %u", r->thread->id, t->nthread + 1);
        if (r->thread->id == t->nthread + 1)
            t->nthread++;
        t->thread = wt_table_set(t->thread, r->thread->id, r->thread);
        if (r->thread->id > t->nthread)
            t->nthread = r->thread->id;
        wt_keep(t, r);
        return 1;
    case VRAMTRACE__RECORD__BODY_MODULE:
        if (r->module->id != t->nmodule + 1)
            wt_err(t, "module id %u, expected %u", r->module->id, t->nmodule + 1);
        t->nmodule = r->module->id;
        t->module = wt_table_set(t->module, t->nmodule, r->module);
        wt_keep(t, r);
        break; /* also an event */
    case VRAMTRACE__RECORD__BODY_LAUNCH:
        if (r->launch->id != t->nlaunch + 1)
            wt_err(t, "launch id %u, expected %u", r->launch->id, t->nlaunch + 1);
        REF(t, r->launch->name, t->nstr, "string");
        t->nlaunch = r->launch->id;
        t->launch = wt_table_set(t->launch, t->nlaunch, r->launch);
        wt_keep(t, r);
        return 1;
    case VRAMTRACE__RECORD__BODY_KERNEL_BATCH:
        wt_batch(t, s, r, keep);
        return 0;
    case VRAMTRACE__RECORD__BODY_KERNEL_BLOCK:
        wt_block(t, s, r, keep);
        return 0;
    case VRAMTRACE__RECORD__BODY_MEM_BLOCK:
        wt_mblock(t, s, r, keep);
        return 0;
    default:
        break;
    }
    (void)defn;

    wt_ev e;
    memset(&e, 0, sizeof(e));
    e.type = r->body_case;
    if (r->body_case == VRAMTRACE__RECORD__BODY_KERNEL) {
        s->dev += (uint64_t)r->ts_delta;
        e.time = s->dev;
    } else if (r->body_case != VRAMTRACE__RECORD__BODY_MODULE) {
        s->host += (uint64_t)r->ts_delta;
        e.time = s->host;
    }
    int64_t dc = 0;
    int has_corr = 1;
    switch (r->body_case) {
    case VRAMTRACE__RECORD__BODY_ALLOC:
        dc = r->alloc->corr;
        e.a = r->alloc->address;
        e.b = r->alloc->size;
        e.thread = r->alloc->thread;
        e.stack = r->alloc->stack;
        break;
    case VRAMTRACE__RECORD__BODY_FREE:
        dc = r->free->corr;
        e.a = r->free->address;
        e.thread = r->free->thread;
        e.stack = r->free->stack;
        break;
    case VRAMTRACE__RECORD__BODY_ALLOC_FAILED:
        dc = r->alloc_failed->corr;
        e.a = r->alloc_failed->size;
        e.thread = r->alloc_failed->thread;
        e.stack = r->alloc_failed->stack;
        REF(t, r->alloc_failed->error_name, t->nstr, "string");
        break;
    case VRAMTRACE__RECORD__BODY_VMM_RESERVE:
        dc = r->vmm_reserve->corr;
        e.thread = r->vmm_reserve->thread;
        e.stack = r->vmm_reserve->stack;
        break;
    case VRAMTRACE__RECORD__BODY_VMM_ADDRESS_FREE:
        dc = r->vmm_address_free->corr;
        e.thread = r->vmm_address_free->thread;
        break;
    case VRAMTRACE__RECORD__BODY_VMM_CREATE:
        dc = r->vmm_create->corr;
        e.thread = r->vmm_create->thread;
        e.stack = r->vmm_create->stack;
        break;
    case VRAMTRACE__RECORD__BODY_VMM_RELEASE:
        dc = r->vmm_release->corr;
        e.thread = r->vmm_release->thread;
        break;
    case VRAMTRACE__RECORD__BODY_VMM_MAP:
        dc = r->vmm_map->corr;
        e.thread = r->vmm_map->thread;
        break;
    case VRAMTRACE__RECORD__BODY_VMM_UNMAP:
        dc = r->vmm_unmap->corr;
        e.thread = r->vmm_unmap->thread;
        break;
    case VRAMTRACE__RECORD__BODY_POOL:
        dc = r->pool->corr;
        e.thread = r->pool->thread;
        e.stack = r->pool->stack;
        break;
    case VRAMTRACE__RECORD__BODY_KERNEL:
        dc = r->kernel->corr;
        e.a = r->kernel->launch;
        e.b = r->kernel->duration_ns;
        REF(t, r->kernel->launch, t->nlaunch, "launch");
        break;
    case VRAMTRACE__RECORD__BODY_NVTX:
        has_corr = 0;
        e.thread = r->nvtx->thread;
        REF(t, r->nvtx->message, t->nstr, "string");
        REF(t, r->nvtx->domain, t->nstr, "string");
        break;
    case VRAMTRACE__RECORD__BODY_DROPPED:
        has_corr = 0;
        REF(t, r->dropped->reason, t->nstr, "string");
        if (r->dropped->source == VRAMTRACE__DROP_SOURCE__DROP_WRITER_QUEUE)
            t->dropped_queue += r->dropped->count;
        else
            t->dropped_other += r->dropped->count;
        break;
    case VRAMTRACE__RECORD__BODY_END:
        has_corr = 0;
        t->end = r->end;
        break;
    default:
        has_corr = 0;
        break;
    }
    if (has_corr) {
        s->corr += (uint64_t)dc;
        e.corr = s->corr;
    }
    REF(t, e.thread, t->nthread, "thread");
    REF(t, e.stack, t->nstack, "stack");
    if (t->end && r->body_case != VRAMTRACE__RECORD__BODY_END)
        wt_err(t, "record after End");
    int kept = r->body_case == VRAMTRACE__RECORD__BODY_MODULE;
    if (r->body_case == VRAMTRACE__RECORD__BODY_END) {
        wt_keep(t, r);
        kept = 1;
    }
    if (keep) {
        e.rec = r;
        kept = 1;
    }
    GROW(t->ev, t->nev, t->capev);
    t->ev[t->nev++] = e;
    return kept;
}

int wt_decode_mem(const void *data, size_t len, wt_trace *t, int keep)
{
    memset(t, 0, sizeof(*t));
    /* 1. decompress frame by frame, remembering where each frame starts */
    ZSTD_DCtx *dc = ZSTD_createDCtx();
    size_t cap = 1 << 20, n = 0;
    unsigned char *raw = malloc(cap);
    size_t *fstart = NULL, nf = 0, capf = 0;
    ZSTD_inBuffer in = {data, len, 0};
    int in_frame = 0;
    while (in.pos < in.size) {
        if (!in_frame) {
            GROW(fstart, nf, capf);
            fstart[nf++] = n;
            in_frame = 1;
        }
        if (cap - n < (1 << 16)) {
            cap *= 2;
            raw = realloc(raw, cap);
        }
        ZSTD_outBuffer out = {raw + n, cap - n, 0};
        size_t rc = ZSTD_decompressStream(dc, &out, &in);
        n += out.pos;
        if (ZSTD_isError(rc)) {
            t->truncated = 1;
            break;
        }
        if (rc == 0) {
            in_frame = 0;
            t->nzframes++;
        } else if (in.pos == in.size && out.pos < out.size) {
            t->truncated = 1; /* input ended inside a frame */
            break;
        }
    }
    ZSTD_freeDCtx(dc);
    t->raw_len = n;

    /* 2. records */
    wt_state s = {0, 0, 0};
    size_t pos = 0, fi = 0;
    while (pos < n) {
        int at_frame_start = 0;
        while (fi < nf && fstart[fi] <= pos) {
            if (fstart[fi] == pos)
                at_frame_start = 1;
            else if (fstart[fi] < pos && fi > 0)
                wt_err(t, "a zstd frame starts inside a record at raw offset %zu", fstart[fi]);
            fi++;
        }
        if (raw[pos] != 0x0A) {
            wt_err(t, "bad tag 0x%02x at raw offset %zu", raw[pos], pos);
            break;
        }
        uint64_t l = 0;
        size_t p = pos + 1;
        int shift = 0, ok = 0;
        while (p < n && shift < 64) {
            l |= (uint64_t)(raw[p] & 0x7f) << shift;
            if (!(raw[p++] & 0x80)) {
                ok = 1;
                break;
            }
            shift += 7;
        }
        if (!ok || l > (16u << 20) || p + l > n) {
            t->truncated = 1;
            break;
        }
        Vramtrace__Record *r = vramtrace__record__unpack(NULL, l, raw + p);
        if (!r) {
            wt_err(t, "unpack failed at raw offset %zu", pos);
            break;
        }
        if (t->nrecords == 1 && r->body_case != VRAMTRACE__RECORD__BODY_SYNC)
            wt_err(t, "second record is not a sync");
        if (at_frame_start && pos > 0 && r->body_case != VRAMTRACE__RECORD__BODY_SYNC)
            wt_err(t, "zstd frame at raw offset %zu does not start with a sync", pos);
        if (t->nrecords == 0 && r->body_case != VRAMTRACE__RECORD__BODY_HEADER)
            wt_err(t, "first record is not the header");
        if (!wt_record(t, &s, r, keep))
            vramtrace__record__free_unpacked(r, NULL);
        t->nrecords++;
        pos = p + l;
    }
    free(raw);
    free(fstart);
    return 0;
}

int wt_decode_file(const char *path, wt_trace *t, int keep)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        memset(t, 0, sizeof(*t));
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    for (;;) {
        if (n == cap)
            buf = realloc(buf, cap *= 2);
        size_t k = fread(buf + n, 1, cap - n, f);
        if (!k)
            break;
        n += k;
    }
    fclose(f);
    int rc = wt_decode_mem(buf, n, t, keep);
    free(buf);
    return rc;
}

void wt_trace_free(wt_trace *t)
{
    for (size_t i = 0; i < t->nev; i++)
        if (t->ev[i].rec && t->ev[i].rec->body_case != VRAMTRACE__RECORD__BODY_MODULE &&
            t->ev[i].rec->body_case != VRAMTRACE__RECORD__BODY_END)
            vramtrace__record__free_unpacked(t->ev[i].rec, NULL);
    for (size_t i = 0; i < t->ndefs; i++)
        vramtrace__record__free_unpacked(t->defs[i], NULL);
    free(t->defs);
    free(t->ev);
    free(t->str);
    free(t->frame);
    free(t->stack);
    free(t->thread);
    free(t->launch);
    free(t->module);
    memset(t, 0, sizeof(*t));
}

size_t wt_stack_frames(const wt_trace *t, uint32_t stack, uint32_t *out, size_t max)
{
    size_t n = 0;
    while (stack && stack <= t->nstack) {
        const Vramtrace__Stack *s = t->stack[stack];
        for (size_t i = 0; i < s->n_frame; i++) {
            if (n < max)
                out[n] = s->frame[i];
            n++;
        }
        stack = s->parent;
    }
    return n;
}

#include <time.h>
#include <unistd.h>

void wt_tmp_path(char *buf, size_t n, const char *name)
{
    static char dir[256];
    if (!dir[0]) {
        snprintf(dir, sizeof(dir), "/tmp/vt_writer_test.XXXXXX");
        if (!mkdtemp(dir))
            abort();
    }
    snprintf(buf, n, "%s/%s", dir, name);
    unlink(buf);
}

uint64_t wt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
