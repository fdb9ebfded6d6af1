/* vt_export_perfetto.c - the timeline as Perfetto's native protobuf trace
 * (ui.perfetto.dev, trace_processor).  Hand-encoded TracePackets on one
 * packet sequence: a clock snapshot first (the job's wall clock declared
 * as BOOTTIME, MONOTONIC and REALTIME alike), then track descriptors before
 * the events of their tracks, slices as SLICE_BEGIN/SLICE_END pairs,
 * counters in bytes, instants, and live bytes by call site as instants
 * that carry an interned callstack and its weight (the UI's flamegraph).
 * Field numbers and types: Perfetto's official schema, as
 * tests/analyze/export/perfetto_fields.tsv records it (the subset proto
 * and every export are checked against that table in CI; docs/EXPORT.md).
 * Touches only the FILE. */
#include "vt_escape.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "vt_error.h"
#include "vt_export_int.h"
#include "vt_grow.h"

#define SEQ_ID 1
#define CLOCK_BOOTTIME 6

typedef struct {
    uint8_t *d;
    size_t n, cap;
    int oom;
} pb;

static void pb_raw(pb *b, const void *p, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->n + n)
            nc *= 2;
        uint8_t *nd = realloc(b->d, nc);
        if (!nd) {
            b->oom = 1;
            return;
        }
        b->d = nd;
        b->cap = nc;
    }
    memcpy(b->d + b->n, p, n);
    b->n += n;
}

static void pb_varint(pb *b, uint64_t v)
{
    if (__builtin_expect(b->n + 10 <= b->cap, 1)) { /* in place: most calls */
        uint8_t *d = b->d + b->n;
        size_t k = 0;
        while (v >= 0x80) {
            d[k++] = (uint8_t)(v | 0x80);
            v >>= 7;
        }
        d[k++] = (uint8_t)v;
        b->n += k;
        return;
    }
    uint8_t t[10];
    size_t k = 0;
    while (v >= 0x80) {
        t[k++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    t[k++] = (uint8_t)v;
    pb_raw(b, t, k);
}

static void pb_uint(pb *b, unsigned f, uint64_t v)
{
    pb_varint(b, (uint64_t)f << 3);
    pb_varint(b, v);
}

/* int64 and int32 alike: a negative int32 is sign-extended to ten bytes */
static void pb_int(pb *b, unsigned f, int64_t v) { pb_uint(b, f, (uint64_t)v); }

/* a double: wire type 1 (I64), the IEEE 754 bits little-endian */
static void pb_double(pb *b, unsigned f, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof(u));
    uint8_t t[8];
    for (int k = 0; k < 8; k++)
        t[k] = (uint8_t)(u >> (8 * k));
    pb_varint(b, (uint64_t)f << 3 | 1);
    pb_raw(b, t, sizeof(t));
}

static void pb_bytes(pb *b, unsigned f, const void *p, size_t n)
{
    pb_varint(b, (uint64_t)f << 3 | 2);
    pb_varint(b, n);
    pb_raw(b, p, n);
}

/* a string field: valid UTF-8 always (vt_utf8_sanitize); Perfetto's
 * strings are UTF-8 */
static void pb_str(pb *b, unsigned f, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n && vt_utf8_needs_sanitize(s)) {
        size_t cap = 3 * n + 1;
        char *t = malloc(cap);
        if (t) {
            pb_bytes(b, f, t, vt_utf8_sanitize(s, t, cap));
            free(t);
            return;
        }
        s = "?";
        n = 1;
    }
    pb_bytes(b, f, s ? s : "", n);
}
static void pb_msg(pb *b, unsigned f, const pb *m) { pb_bytes(b, f, m->d, m->n); }
static void pb_reset(pb *b) { b->n = 0; }

/* interned strings and stacks: iid by content */
#define ISTR_PCACHE 256
typedef struct {
    char **s;
    size_t n, cap;
    vt_table_budget *budget; /* the export's one budget (vt_analysis_config.max_memory) */
    int *over;               /* set when a string would pass it */
    vt_map map; /* hash -> index + 1 (chained by linear search on collision) */
    struct {
        const char *p;
        uint64_t iid;
    } pc[ISTR_PCACHE]; /* by the string's address: the same pointer is mostly the same string */
} istr;

typedef struct {
    FILE *out;
    pb pkt, ev, sub, sub2, intern;
    pb obuf; /* packets not yet written (flushed at 1 MiB) */
    struct {
        const char *p;
        uint64_t iid;
    } keys[ISTR_PCACHE]; /* annotation names by address */
    istr names, paths, evnames, annots;
    vt_map frames;     /* (name iid << 40 | path iid << 20 | line) -> frame iid */
    uint64_t nframes;
    uint64_t *cs;      /* callstacks: concatenated frame iids, [len, ids...] per stack */
    size_t ncs_words, capcs;
    vt_map cs_map;     /* hash -> callstack iid */
    uint64_t ncs;
    uint64_t bytes;
    int started;
    vt_table_budget *budget; /* what the interned names, frames and stacks take is charged to it */
    int over_budget;
} pf;

/* Interned entries' cost to the budget: the copy or ids, the index and map
 * slot, the allocator's overhead. */
#define PF_STR_COST(len) ((len) + 1 + 64)
#define PF_FRAME_COST 48
#define PF_STACK_COST(m) (8 * ((uint64_t)(m) + 1) + 48)

/* why an entry could not be added: the budget, or memory */
static int pf_nomem(const pf *f) { return f->over_budget ? VT_ERR_LIMIT : VT_ERR_NOMEM; }

static int pf_flush(pf *f)
{
    int ok = fwrite(f->obuf.d, 1, f->obuf.n, f->out) == f->obuf.n;
    f->obuf.n = 0;
    return ok ? 0 : VT_ERR_IO;
}

static int pf_write(pf *f, pb *pkt)
{
    if (pkt->oom)
        return pf_nomem(f);
    uint8_t hdr[11];
    size_t k = 0;
    hdr[k++] = 1 << 3 | 2; /* Trace.packet */
    for (uint64_t v = pkt->n; ; v >>= 7) {
        hdr[k++] = (uint8_t)(v < 0x80 ? v : (v & 0x7f) | 0x80);
        if (v < 0x80)
            break;
    }
    f->bytes += k + pkt->n;
    pb_raw(&f->obuf, hdr, k);
    pb_raw(&f->obuf, pkt->d, pkt->n);
    pb_reset(pkt);
    if (f->obuf.oom)
        return pf_nomem(f);
    return f->obuf.n >= (1u << 20) ? pf_flush(f) : 0;
}

/* a packet on our sequence at t (0: no timestamp) */
static void pf_begin(pf *f, uint64_t t, int needs_state)
{
    pb_reset(&f->pkt);
    if (t)
        pb_uint(&f->pkt, 8, t);
    pb_uint(&f->pkt, 10, SEQ_ID);
    if (needs_state)
        pb_uint(&f->pkt, 13, 2); /* SEQ_NEEDS_INCREMENTAL_STATE */
}

static int pf_start(pf *f, uint64_t t)
{
    if (f->started)
        return 0;
    f->started = 1;
    /* the first packet: a clock snapshot, incremental state cleared */
    pb_reset(&f->pkt);
    pb_reset(&f->sub);
    static const unsigned clocks[3] = {CLOCK_BOOTTIME, 3 /* MONOTONIC */, 1 /* REALTIME */};
    for (int k = 0; k < 3; k++) {
        pb_reset(&f->sub2);
        pb_uint(&f->sub2, 1, clocks[k]);
        pb_uint(&f->sub2, 2, t);
        pb_msg(&f->sub, 1, &f->sub2);
    }
    pb_uint(&f->sub, 2, CLOCK_BOOTTIME);
    pb_uint(&f->pkt, 8, t);
    pb_msg(&f->pkt, 6, &f->sub);
    pb_uint(&f->pkt, 10, SEQ_ID);
    pb_uint(&f->pkt, 13, 3); /* INCREMENTAL_STATE_CLEARED | NEEDS_INCREMENTAL_STATE */
    return pf_write(f, &f->pkt);
}

static int pf_process(void *ctx, uint64_t track, uint32_t pid, const char *name, const char *label)
{
    pf *f = ctx;
    pb_reset(&f->ev);
    pb_uint(&f->ev, 1, track);
    pb_reset(&f->sub);
    pb_int(&f->sub, 1, (int32_t)pid); /* ProcessDescriptor.pid is an int32 */
    pb_str(&f->sub, 6, name);
    pb_msg(&f->ev, 3, &f->sub);
    pb_uint(&f->ev, 11, 3); /* child_ordering EXPLICIT: sibling_order_rank */
    pb_str(&f->ev, 14, label);
    pf_begin(f, 0, 0);
    pb_msg(&f->pkt, 60, &f->ev);
    return pf_write(f, &f->pkt);
}

static int pf_track(void *ctx, uint64_t track, uint64_t parent, int kind, const char *name, const char *share,
                    uint32_t tid, int order)
{
    pf *f = ctx;
    pb_reset(&f->ev);
    pb_uint(&f->ev, 1, track);
    pb_uint(&f->ev, 5, parent);
    pb_str(&f->ev, 2, name);
    if (kind == VT_XT_COUNTER) {
        pb_reset(&f->sub);
        pb_uint(&f->sub, 3, 3); /* UNIT_SIZE_BYTES */
        if (share)
            pb_str(&f->sub, 7, share);
        pb_msg(&f->ev, 8, &f->sub);
    } else if (kind == VT_XT_THREAD) {
        (void)tid; /* a child track named for the thread: its pid may not be ours to claim */
    }
    pb_int(&f->ev, 12, order > 0 ? order : 0); /* sibling_order_rank: int32 */
    pf_begin(f, 0, 0);
    pb_msg(&f->pkt, 60, &f->ev);
    return pf_write(f, &f->pkt);
}

static uint64_t istr_get(istr *t, const char *s, int *fresh);
static void intern_string(pf *f, unsigned field, uint64_t iid, const char *s);

/* iid of an event name or annotation name, defined in this packet's
 * interned data when new (field: InternedData.event_names 2 or
 * debug_annotation_names 3, {iid 1, name 2}) */
static uint64_t pf_iid(pf *f, istr *t, unsigned field, const char *s)
{
    int fresh;
    uint64_t iid = istr_get(t, s ? s : "", &fresh);
    if (!iid) {
        f->pkt.oom = 1;
        return 0;
    }
    if (fresh)
        intern_string(f, field, iid, s ? s : "");
    return iid;
}

/* an annotation name's iid: keys are string literals, found by address */
static uint64_t pf_key_iid(pf *f, const char *key)
{
    const unsigned slot = (unsigned)(((uintptr_t)key >> 3) * 0x9E3779B97F4A7C15ull >> 56) % ISTR_PCACHE;
    if (f->keys[slot].p == key)
        return f->keys[slot].iid;
    uint64_t iid = pf_iid(f, &f->annots, 3, key);
    f->keys[slot].p = key;
    f->keys[slot].iid = iid;
    return iid;
}

static unsigned vlen(uint64_t v)
{
    unsigned n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* DebugAnnotation{name_iid 1, int_value 4 | string_value 6} straight into
 * the event (its length known beforehand) */
static void pf_args(pf *f, const vt_xarg *a, int n)
{
    for (int k = 0; k < n; k++) {
        uint64_t iid = pf_key_iid(f, a[k].key);
        const char *sv = a[k].is_str && a[k].s ? a[k].s : "";
        char *t = NULL;
        size_t sl = strlen(sv);
        if (sl && vt_utf8_needs_sanitize(sv) && (t = malloc(3 * sl + 1))) {
            sl = vt_utf8_sanitize(sv, t, 3 * sl + 1);
            sv = t;
        }
        uint64_t len = 1 + vlen(iid) + 1 + (a[k].is_str ? vlen(sl) + sl : vlen((uint64_t)a[k].i));
        pb_varint(&f->ev, 4 << 3 | 2);
        pb_varint(&f->ev, len);
        pb_uint(&f->ev, 1, iid);
        if (a[k].is_str)
            pb_bytes(&f->ev, 6, sv, sl);
        else
            pb_int(&f->ev, 4, a[k].i);
        free(t);
    }
}

/* A TrackEvent packet, assembled straight into the output buffer (its
 * length known once the event and any new interned names are encoded). */
static int pf_event(pf *f, uint64_t t, uint64_t track, unsigned type, const char *name, const vt_xarg *a, int n)
{
    pb_reset(&f->ev);
    pb_reset(&f->intern);
    pb_uint(&f->ev, 9, type);
    pb_uint(&f->ev, 11, track);
    if (name)
        pb_uint(&f->ev, 10, pf_iid(f, &f->evnames, 2, name));
    pf_args(f, a, n);
    if (f->ev.oom || f->intern.oom || f->pkt.oom)
        return pf_nomem(f);
    const int needs = name || n;
    uint64_t len = 1 + vlen(t) + 1 + vlen(SEQ_ID) + (needs ? 2 : 0) + 1 + vlen(f->ev.n) + f->ev.n +
                   (f->intern.n ? 1 + vlen(f->intern.n) + f->intern.n : 0);
    pb *o = &f->obuf;
    pb_varint(o, 1 << 3 | 2);
    pb_varint(o, len);
    pb_uint(o, 8, t);
    pb_uint(o, 10, SEQ_ID);
    if (needs)
        pb_uint(o, 13, 2);
    pb_bytes(o, 11, f->ev.d, f->ev.n);
    if (f->intern.n)
        pb_bytes(o, 12, f->intern.d, f->intern.n);
    f->bytes += len + 1 + vlen(len);
    if (o->oom)
        return pf_nomem(f);
    return o->n >= (1u << 20) ? pf_flush(f) : 0;
}

static int pf_slice(void *ctx, uint64_t track, uint64_t t0, uint64_t t1, const char *name, int async, uint64_t id,
                    const vt_xarg *a, int n)
{
    pf *f = ctx;
    (void)async; /* lanes keep slices of one track nested */
    (void)id;
    int rc = pf_event(f, t0, track, 1, name, a, n);
    return rc ? rc : pf_event(f, t1 > t0 ? t1 : t0, track, 2, NULL, NULL, 0);
}

static int pf_begin_slice(void *ctx, uint64_t track, uint64_t t, const char *name, const vt_xarg *a, int n)
{
    return pf_event(ctx, t, track, 1, name, a, n);
}

static int pf_end_slice(void *ctx, uint64_t track, uint64_t t) { return pf_event(ctx, t, track, 2, NULL, NULL, 0); }

static int pf_instant(void *ctx, uint64_t track, uint64_t t, const char *name, const vt_xarg *a, int n)
{
    return pf_event(ctx, t, track, 3, name, a, n);
}

static int pf_counter(void *ctx, uint64_t track, uint64_t t, int64_t v)
{
    pf *f = ctx;
    pb_reset(&f->ev);
    pb_uint(&f->ev, 9, 4);
    pb_uint(&f->ev, 11, track);
    pb_int(&f->ev, 30, v);
    pf_begin(f, t, 0);
    pb_msg(&f->pkt, 11, &f->ev);
    return pf_write(f, &f->pkt);
}

/* ---- interning ---- */

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return vt_hash64(h) | 1;
}

/* iid of s (1..), 0 = out of memory; *fresh when just defined */
static uint64_t istr_get(istr *t, const char *s, int *fresh)
{
    *fresh = 0;
    const unsigned slot = (unsigned)(((uintptr_t)s >> 3) * 0x9E3779B97F4A7C15ull >> 56) % ISTR_PCACHE;
    if (t->pc[slot].p == s && !strcmp(t->s[t->pc[slot].iid - 1], s))
        return t->pc[slot].iid;
    uint64_t iid = 0;
    uint64_t h = str_hash(s);
    for (uint64_t probe = h;; probe = vt_hash64(probe) | 1) {
        uint64_t *v = vt_map_get(&t->map, probe);
        if (!v)
            break;
        if (!strcmp(t->s[*v - 1], s)) {
            iid = *v;
            break;
        }
    }
    if (iid) {
        t->pc[slot].p = s;
        t->pc[slot].iid = iid;
        return iid;
    }
    if (vt_budget_take(t->budget, PF_STR_COST(strlen(s)))) {
        *t->over = 1;
        return 0;
    }
    if (VT_GROW(t->s, t->n, t->cap, 64))
        return 0;
    char *c = strdup(s);
    if (!c)
        return 0;
    uint64_t probe = h;
    while (vt_map_get(&t->map, probe))
        probe = vt_hash64(probe) | 1;
    t->s[t->n++] = c;
    if (vt_map_put(&t->map, probe, t->n))
        return 0;
    *fresh = 1;
    t->pc[slot].p = s;
    t->pc[slot].iid = t->n;
    return t->n;
}

static void istr_free(istr *t)
{
    for (size_t k = 0; k < t->n; k++)
        free(t->s[k]);
    free(t->s);
    vt_map_free(&t->map);
}

static void intern_string(pf *f, unsigned field, uint64_t iid, const char *s)
{
    pb_reset(&f->sub2);
    pb_uint(&f->sub2, 1, iid);
    pb_str(&f->sub2, 2, s);
    pb_msg(&f->intern, field, &f->sub2);
}

static int pf_flame(void *ctx, uint64_t track, uint64_t t, const vt_xframe *fr, uint32_t n, uint64_t bytes,
                    const char *name)
{
    pf *f = ctx;
    pb_reset(&f->intern);
    uint64_t ids[VT_MAX_STACK + 1];
    uint32_t m = 0;
    for (uint32_t k = n; k-- > 0 && m < VT_MAX_STACK;) { /* outermost first */
        const vt_xframe *x = &fr[k];
        char fn[512];
        if (x->function)
            snprintf(fn, sizeof(fn), "%s", x->function);
        else if (x->module)
            snprintf(fn, sizeof(fn), "%s+0x%" PRIx64, strrchr(x->module, '/') ? strrchr(x->module, '/') + 1
                                                                               : x->module, x->offset);
        else
            snprintf(fn, sizeof(fn), "?");
        int fresh;
        uint64_t ni = istr_get(&f->names, fn, &fresh);
        if (!ni)
            return pf_nomem(f);
        if (fresh)
            intern_string(f, 5, ni, fn);
        uint64_t pi = 0;
        if (x->file) {
            pi = istr_get(&f->paths, x->file, &fresh);
            if (!pi)
                return pf_nomem(f);
            if (fresh)
                intern_string(f, 18, pi, x->file);
        }
        uint64_t key = (ni << 40 | (pi & 0xfffff) << 20 | (x->line & 0xfffff)) + 1;
        uint64_t *v = vt_map_get(&f->frames, key);
        uint64_t fid;
        if (v) {
            fid = *v;
        } else {
            if (vt_budget_take(f->budget, PF_FRAME_COST)) {
                f->over_budget = 1;
                return pf_nomem(f);
            }
            fid = ++f->nframes;
            if (vt_map_put(&f->frames, key, fid))
                return pf_nomem(f);
            pb_reset(&f->sub2);
            pb_uint(&f->sub2, 1, fid);
            pb_uint(&f->sub2, 2, ni);
            if (pi)
                pb_uint(&f->sub2, 5, pi);
            if (x->line)
                pb_uint(&f->sub2, 6, x->line);
            pb_msg(&f->intern, 6, &f->sub2);
        }
        ids[m++] = fid;
    }
    /* the callstack: by its frame ids */
    uint64_t h = 0x9e3779b97f4a7c15ull ^ m;
    for (uint32_t k = 0; k < m; k++)
        h = vt_hash64(h ^ ids[k]);
    h |= 1;
    uint64_t csid = 0;
    for (uint64_t probe = h;; probe = vt_hash64(probe) | 1) {
        uint64_t *v = vt_map_get(&f->cs_map, probe);
        if (!v) {
            h = probe;
            break;
        }
        uint64_t off = *v >> 32, id = *v & 0xffffffffu;
        if (f->cs[off] == m && !memcmp(&f->cs[off + 1], ids, m * sizeof(uint64_t))) {
            csid = id;
            break;
        }
    }
    if (!csid) {
        if (vt_budget_take(f->budget, PF_STACK_COST(m))) {
            f->over_budget = 1;
            return pf_nomem(f);
        }
        csid = ++f->ncs;
        size_t off = f->ncs_words;
        for (uint32_t k = 0; k <= m; k++)
            if (VT_GROW(f->cs, f->ncs_words, f->capcs, 1024))
                return pf_nomem(f);
            else
                f->cs[f->ncs_words++] = k ? ids[k - 1] : m;
        if (vt_map_put(&f->cs_map, h, (uint64_t)off << 32 | csid))
            return pf_nomem(f);
        pb_reset(&f->sub2);
        pb_uint(&f->sub2, 1, csid);
        for (uint32_t k = 0; k < m; k++)
            pb_uint(&f->sub2, 2, ids[k]);
        pb_msg(&f->intern, 7, &f->sub2);
    }
    pb_reset(&f->ev);
    pb_uint(&f->ev, 9, 3);
    pb_uint(&f->ev, 11, track);
    pb_uint(&f->ev, 10, pf_iid(f, &f->evnames, 2, name));
    pb_uint(&f->ev, 56, csid);
    pb_double(&f->ev, 57, (double)bytes); /* callstack_weight is a double */
    pb_reset(&f->sub);
    pb_uint(&f->sub, 1, pf_key_iid(f, "bytes"));
    pb_int(&f->sub, 4, (int64_t)bytes);
    pb_msg(&f->ev, 4, &f->sub);
    pf_begin(f, t, 1);
    pb_msg(&f->pkt, 11, &f->ev);
    if (f->intern.n)
        pb_msg(&f->pkt, 12, &f->intern);
    return pf_write(f, &f->pkt);
}

static int pf_finish(void *ctx)
{
    pf *f = ctx;
    int rc = pf_flush(f);
    return rc ? rc : fflush(f->out) ? VT_ERR_IO : 0;
}

static void pf_free(void *ctx)
{
    pf *f = ctx;
    free(f->pkt.d);
    free(f->ev.d);
    free(f->sub.d);
    free(f->sub2.d);
    free(f->intern.d);
    free(f->obuf.d);
    istr_free(&f->names);
    istr_free(&f->paths);
    istr_free(&f->evnames);
    istr_free(&f->annots);
    vt_map_free(&f->frames);
    vt_map_free(&f->cs_map);
    free(f->cs);
    free(f);
}

int vt_xsink_perfetto(vt_xsink *s, FILE *out, vt_table_budget *budget)
{
    pf *f = calloc(1, sizeof(*f));
    if (!f)
        return VT_ERR_NOMEM;
    f->out = out;
    f->budget = budget;
    istr *ts[] = {&f->names, &f->paths, &f->evnames, &f->annots};
    for (int k = 0; k < 4; k++) {
        ts[k]->budget = budget;
        ts[k]->over = &f->over_budget;
    }
    *s = (vt_xsink){.ctx = f,
                    .process = pf_process,
                    .track = pf_track,
                    .slice = pf_slice,
                    .begin = pf_begin_slice,
                    .end = pf_end_slice,
                    .counter = pf_counter,
                    .instant = pf_instant,
                    .flame = pf_flame,
                    .finish = pf_finish,
                    .free = pf_free};
    return 0;
}

/* The clock snapshot goes first, at the job's first time. */
int vt_xsink_perfetto_start(vt_xsink *s, uint64_t t0)
{
    return pf_start(s->ctx, t0 ? t0 : 1);
}
