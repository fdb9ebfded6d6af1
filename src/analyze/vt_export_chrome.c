/* vt_export_chrome.c - the timeline as Chrome's JSON trace (chrome://tracing,
 * Perfetto's JSON importer): `M` names and sort order, `X` slices (a
 * thread per track: kernels one per stream and lane), `B`/`E` for NVTX
 * push/pop, `C` counters (one series "bytes" each), `i` instants, `b`/`e`
 * async events for allocations (they may overlap), the flamegraph samples
 * as instants whose args carry the stack.  `ts` and `dur` in microseconds
 * from the job's first time.  It stops past max_bytes (a browser cannot
 * open more), saying so.  Touches only the FILE. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "vt_error.h"
#include "vt_export_int.h"
#include "vt_grow.h"
#include "vt_outbuf.h"

typedef struct {
    uint32_t pid, tid;
    int kind;
    char *name;
} ct_track;

/* Its own output buffer: stdio's fwrite and fputc per piece were a fifth
 * of an export (BENCHMARKS.md); what is written is counted for max_bytes. */
#define CT_BUF (1u << 16)

typedef struct {
    vt_outbuf ob; /* in front of the output file */
    uint64_t t0, max_bytes;
    int first;
    ct_track *tracks; /* by track id */
    size_t ntracks, cap;
    vt_table_budget *budget; /* the export's one budget: the tracks are charged to it */
    char errmsg[300];
} ct;

/* a JSON string (vt_json_str's escaping) */
static void ct_str(ct *c, const char *s) { vt_json_str_to(s, vt_ob_put_cb, &c->ob); }

static int ct_check(ct *c)
{
    if (c->ob.ioerr)
        return VT_ERR_IO;
    if (c->ob.flushed + c->ob.n > c->max_bytes) {
        char lim[32];
        vt_fmt_bytes(lim, sizeof(lim), (double)c->max_bytes); /* 1000000: 976.56 KiB, not "0 MiB" */
        snprintf(c->errmsg, sizeof(c->errmsg),
                 "the Chrome JSON would be over %s (--max-bytes), more than a browser opens: export a window "
                 "(--start/--end), fewer counter points (--max-points), or --format perfetto",
                 lim);
        return VT_ERR_INVALID;
    }
    return 0;
}

static void ct_sep(ct *c)
{
    if (c->first)
        vt_ob_putc(&c->ob, '\n');
    else
        vt_ob_put(&c->ob, ",\n", 2);
    c->first = 0;
}

/* Numbers without printf (it was the next cost after the strings):
 * `pre` then the decimal of v (negative when neg). */
static void ct_num(ct *c, const char *pre, uint64_t v, int neg)
{
    char b[48];
    size_t pl = strlen(pre);
    char *e = b + sizeof(b), *q = e;
    do {
        *--q = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    if (neg)
        *--q = '-';
    vt_ob_put(&c->ob, pre, pl);
    vt_ob_put(&c->ob, q, (size_t)(e - q));
}

static void ct_i64(ct *c, const char *pre, int64_t v)
{
    ct_num(c, pre, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, v < 0);
}

/* `pre` then ns as microseconds with three decimals ("12.345") */
static void ct_us(ct *c, const char *pre, uint64_t d)
{
    char b[4] = {'.', (char)('0' + d % 1000 / 100), (char)('0' + d % 100 / 10), (char)('0' + d % 10)};
    ct_num(c, pre, d / 1000, 0);
    vt_ob_put(&c->ob, b, 4);
}

/* ",\"id\":\"0x...\"" without printf (every allocation with --allocations) */
static void ct_id(ct *c, uint64_t v)
{
    static const char hex[] = "0123456789abcdef";
    char b[32], *e = b + sizeof(b), *q = e;
    *--q = '"';
    do {
        *--q = hex[v & 15];
        v >>= 4;
    } while (v);
    vt_ob_put(&c->ob, ",\"id\":\"0x", 9);
    vt_ob_put(&c->ob, q, (size_t)(e - q));
}

static void ct_pidtid(ct *c, uint32_t pid, uint32_t tid)
{
    ct_num(c, ",\"pid\":", pid, 0);
    ct_num(c, ",\"tid\":", tid, 0);
}

/* ",\"ts\":" and t in microseconds from the job's first time */
static void ct_ts(ct *c, uint64_t t) { ct_us(c, ",\"ts\":", t > c->t0 ? t - c->t0 : 0); }

static void ct_args(ct *c, const vt_xarg *a, int n)
{
    if (!n)
        return;
    vt_ob_puts(&c->ob, ",\"args\":{");
    for (int k = 0; k < n; k++) {
        if (k)
            vt_ob_putc(&c->ob, ',');
        ct_str(c, a[k].key);
        vt_ob_putc(&c->ob, ':');
        if (a[k].is_str)
            ct_str(c, a[k].s);
        else
            ct_i64(c, "", a[k].i);
    }
    vt_ob_putc(&c->ob, '}');
}

static ct_track *ct_get(ct *c, uint64_t track) { return track < c->ntracks ? &c->tracks[track] : NULL; }

static int ct_add(ct *c, uint64_t track, uint32_t pid, uint32_t tid, int kind, const char *name)
{
    const uint64_t cost = (track >= c->ntracks ? (track + 1 - c->ntracks) * sizeof(ct_track) : 0) +
                          (name ? strlen(name) : 0) + 1 + 32;
    if (vt_budget_take(c->budget, cost))
        return VT_ERR_LIMIT;
    while (c->ntracks <= track) {
        if (VT_GROW(c->tracks, c->ntracks, c->cap, 64))
            return VT_ERR_NOMEM;
        memset(&c->tracks[c->ntracks++], 0, sizeof(ct_track));
    }
    ct_track *t = &c->tracks[track];
    t->pid = pid;
    t->tid = tid;
    t->kind = kind;
    t->name = strdup(name ? name : "");
    return t->name ? 0 : VT_ERR_NOMEM;
}

static void ct_meta(ct *c, const char *what, uint32_t pid, int with_tid, uint32_t tid, const char *name, int sort)
{
    ct_sep(c);
    vt_ob_printf(&c->ob, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%" PRIu32, what, pid);
    if (with_tid)
        vt_ob_printf(&c->ob, ",\"tid\":%" PRIu32, tid);
    if (name) {
        vt_ob_puts(&c->ob, ",\"args\":{\"name\":");
        ct_str(c, name);
        vt_ob_puts(&c->ob, "}}");
    } else {
        vt_ob_printf(&c->ob, ",\"args\":{\"sort_index\":%d}}", sort);
    }
}

static int ct_process(void *ctx, uint64_t track, uint32_t pid, const char *name, const char *label)
{
    ct *c = ctx;
    (void)name;
    int rc = ct_add(c, track, pid, 0, -1, label);
    if (rc)
        return rc;
    ct_meta(c, "process_name", pid, 0, 0, label, 0);
    ct_meta(c, "process_sort_index", pid, 0, 0, NULL, (int)(track & 0x7fffffff));
    return ct_check(c);
}

static int ct_track_def(void *ctx, uint64_t track, uint64_t process, int kind, const char *name, const char *share,
                        uint32_t tid, int order)
{
    ct *c = ctx;
    (void)share;
    const ct_track *g = ct_get(c, process); /* the process, or a group of it */
    uint32_t pid = g ? g->pid : 0;
    /* slice tracks are threads of the process, with tids of their own
     * (above any real tid); counters are named series of the process */
    uint32_t t = kind == VT_XT_THREAD ? tid : (uint32_t)(1000000000u + track);
    int rc = ct_add(c, track, pid, t, kind, name);
    if (rc)
        return rc;
    if (kind != VT_XT_COUNTER) {
        ct_meta(c, "thread_name", pid, 1, t, name, 0);
        ct_meta(c, "thread_sort_index", pid, 1, t, NULL, order);
    }
    return ct_check(c);
}

static int ct_slice(void *ctx, uint64_t track, uint64_t t0, uint64_t t1, const char *name, int async, uint64_t id,
                    const vt_xarg *a, int n)
{
    ct *c = ctx;
    const ct_track *t = ct_get(c, track);
    if (!t)
        return VT_ERR_INVALID;
    ct_sep(c);
    if (async) {
        vt_ob_puts(&c->ob, "{\"ph\":\"b\",\"cat\":\"allocation\",\"name\":");
        ct_str(c, name);
        ct_id(c, id);
        ct_pidtid(c, t->pid, t->tid);
        ct_ts(c, t0);
        ct_args(c, a, n);
        vt_ob_puts(&c->ob, "}");
        ct_sep(c);
        vt_ob_puts(&c->ob, "{\"ph\":\"e\",\"cat\":\"allocation\",\"name\":");
        ct_str(c, name);
        ct_id(c, id);
        ct_pidtid(c, t->pid, t->tid);
        ct_ts(c, t1);
        vt_ob_puts(&c->ob, "}");
        return ct_check(c);
    }
    vt_ob_puts(&c->ob, "{\"ph\":\"X\",\"name\":");
    ct_str(c, name);
    ct_pidtid(c, t->pid, t->tid);
    ct_ts(c, t0);
    ct_us(c, ",\"dur\":", t1 > t0 ? t1 - t0 : 0);
    ct_args(c, a, n);
    vt_ob_puts(&c->ob, "}");
    return ct_check(c);
}

static int ct_be(ct *c, uint64_t track, uint64_t t, const char *ph, const char *name, const vt_xarg *a, int n)
{
    const ct_track *tr = ct_get(c, track);
    if (!tr)
        return VT_ERR_INVALID;
    ct_sep(c);
    vt_ob_printf(&c->ob, "{\"ph\":\"%s\"", ph);
    if (name) {
        vt_ob_puts(&c->ob, ",\"name\":");
        ct_str(c, name);
    }
    ct_pidtid(c, tr->pid, tr->tid);
    ct_ts(c, t);
    if (ph[0] == 'i')
        vt_ob_puts(&c->ob, ",\"s\":\"t\"");
    ct_args(c, a, n);
    vt_ob_puts(&c->ob, "}");
    return ct_check(c);
}

static int ct_begin(void *ctx, uint64_t track, uint64_t t, const char *name, const vt_xarg *a, int n)
{
    return ct_be(ctx, track, t, "B", name, a, n);
}

static int ct_end(void *ctx, uint64_t track, uint64_t t) { return ct_be(ctx, track, t, "E", NULL, NULL, 0); }

static int ct_instant(void *ctx, uint64_t track, uint64_t t, const char *name, const vt_xarg *a, int n)
{
    return ct_be(ctx, track, t, "i", name, a, n);
}

static int ct_counter(void *ctx, uint64_t track, uint64_t t, int64_t v)
{
    ct *c = ctx;
    const ct_track *tr = ct_get(c, track);
    if (!tr)
        return VT_ERR_INVALID;
    ct_sep(c);
    vt_ob_puts(&c->ob, "{\"ph\":\"C\",\"name\":");
    ct_str(c, tr->name);
    ct_num(c, ",\"pid\":", tr->pid, 0);
    ct_ts(c, t);
    ct_i64(c, ",\"args\":{\"bytes\":", v);
    vt_ob_puts(&c->ob, "}}");
    return ct_check(c);
}

static int ct_flame(void *ctx, uint64_t track, uint64_t t, const vt_xframe *fr, uint32_t n, uint64_t bytes,
                    const char *name)
{
    ct *c = ctx;
    /* the stack outermost first, ';'-joined (as folded stacks are) */
    size_t cap = 256, len = 0;
    char *s = malloc(cap);
    if (!s)
        return VT_ERR_NOMEM;
    s[0] = 0;
    for (uint32_t k = n; k-- > 0;) {
        char one[600];
        vt_xframe_format(&fr[k], one, sizeof(one));
        size_t l = strlen(one);
        if (len + l + 2 > cap) {
            while (len + l + 2 > cap)
                cap *= 2;
            char *ns = realloc(s, cap);
            if (!ns) {
                free(s);
                return VT_ERR_NOMEM;
            }
            s = ns;
        }
        if (len)
            s[len++] = ';';
        memcpy(s + len, one, l + 1);
        len += l;
    }
    vt_xarg a[2] = {VT_XARG_I("bytes", bytes), VT_XARG_S("stack", s)};
    int rc = ct_be(c, track, t, "i", name, a, 2);
    free(s);
    return rc;
}

static int ct_finish(void *ctx)
{
    ct *c = ctx;
    vt_ob_puts(&c->ob, "\n]}\n");
    vt_ob_flush(&c->ob);
    if (c->ob.ioerr || ferror(c->ob.f))
        return VT_ERR_IO;
    return fflush(c->ob.f) ? VT_ERR_IO : 0;
}

static const char *ct_errmsg(void *ctx)
{
    ct *c = ctx;
    return c->errmsg[0] ? c->errmsg : NULL;
}

static void ct_free(void *ctx)
{
    ct *c = ctx;
    for (size_t k = 0; k < c->ntracks; k++)
        free(c->tracks[k].name);
    free(c->tracks);
    free(c->ob.buf);
    free(c);
}

int vt_xsink_chrome(vt_xsink *s, FILE *out, uint64_t t0, uint64_t max_bytes, vt_table_budget *budget)
{
    ct *c = calloc(1, sizeof(*c));
    if (!c)
        return VT_ERR_NOMEM;
    c->budget = budget;
    char *buf = malloc(CT_BUF);
    if (!buf) {
        free(c);
        return VT_ERR_NOMEM;
    }
    vt_ob_init(&c->ob, out, buf, CT_BUF);
    c->t0 = t0;
    c->max_bytes = max_bytes ? max_bytes : VT_EXPORT_CHROME_MAX_BYTES_DEFAULT;
    c->first = 1;
    static const char head[] = "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"vramtrace export\"},"
                               "\"traceEvents\":[";
    vt_ob_put(&c->ob, head, sizeof(head) - 1);
    *s = (vt_xsink){.ctx = c,
                    .process = ct_process,
                    .track = ct_track_def,
                    .slice = ct_slice,
                    .begin = ct_begin,
                    .end = ct_end,
                    .counter = ct_counter,
                    .instant = ct_instant,
                    .flame = ct_flame,
                    .finish = ct_finish,
                    .errmsg = ct_errmsg,
                    .free = ct_free};
    return 0;
}
