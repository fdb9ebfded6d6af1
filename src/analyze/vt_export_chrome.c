/* vt_export_chrome.c - the timeline as Chrome's JSON trace (chrome://tracing,
 * Perfetto's JSON importer): `M` names and sort order, `X` slices (a
 * thread per track: kernels one per stream and lane), `B`/`E` for NVTX
 * push/pop, `C` counters (one series "bytes" each), `i` instants, `b`/`e`
 * async events for allocations (they may overlap), the flamegraph samples
 * as instants whose args carry the stack.  `ts` and `dur` in microseconds
 * from the job's first time.  It stops past max_bytes (a browser cannot
 * open more), saying so.  Touches only the FILE. */
#define _GNU_SOURCE /* fopencookie */
#include <inttypes.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>

#include "vt_error.h"
#include "vt_export_int.h"
#include "vt_grow.h"

typedef struct {
    uint32_t pid, tid;
    int kind;
    char *name;
} ct_track;

typedef struct {
    FILE *out;       /* counts what it writes into `written`, then to `real` */
    FILE *real;
    uint64_t written;
    uint64_t t0, max_bytes;
    int first;
    ct_track *tracks; /* by track id */
    size_t ntracks, cap;
    char errmsg[300];
} ct;

static ssize_t ct_write(void *cookie, const char *buf, size_t n)
{
    ct *c = cookie;
    size_t w = fwrite(buf, 1, n, c->real);
    c->written += w;
    return w == n ? (ssize_t)n : -1;
}

static int ct_check(ct *c)
{
    if (ferror(c->out))
        return VT_ERR_IO;
    if (c->written > c->max_bytes) {
        snprintf(c->errmsg, sizeof(c->errmsg),
                 "the Chrome JSON would be over %" PRIu64 " MiB, more than a browser opens: export a window "
                 "(--start/--end), fewer counter points (--max-points), or --format perfetto",
                 c->max_bytes >> 20);
        return VT_ERR_INVALID;
    }
    return 0;
}

static void ct_sep(ct *c)
{
    fputs(c->first ? "\n" : ",\n", c->out);
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
    fwrite(pre, 1, pl, c->out);
    fwrite(q, 1, (size_t)(e - q), c->out);
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
    fwrite(b, 1, 4, c->out);
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
    fputs(",\"args\":{", c->out);
    for (int k = 0; k < n; k++) {
        if (k)
            fputc(',', c->out);
        vt_json_str(c->out, a[k].key);
        fputc(':', c->out);
        if (a[k].is_str)
            vt_json_str(c->out, a[k].s);
        else
            ct_i64(c, "", a[k].i);
    }
    fputc('}', c->out);
}

static ct_track *ct_get(ct *c, uint64_t track) { return track < c->ntracks ? &c->tracks[track] : NULL; }

static int ct_add(ct *c, uint64_t track, uint32_t pid, uint32_t tid, int kind, const char *name)
{
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
    fprintf(c->out, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%" PRIu32, what, pid);
    if (with_tid)
        fprintf(c->out, ",\"tid\":%" PRIu32, tid);
    if (name) {
        fputs(",\"args\":{\"name\":", c->out);
        vt_json_str(c->out, name);
        fputs("}}", c->out);
    } else {
        fprintf(c->out, ",\"args\":{\"sort_index\":%d}}", sort);
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
        fputs("{\"ph\":\"b\",\"cat\":\"allocation\",\"name\":", c->out);
        vt_json_str(c->out, name);
        fprintf(c->out, ",\"id\":\"0x%" PRIx64 "\"", id);
        ct_pidtid(c, t->pid, t->tid);
        ct_ts(c, t0);
        ct_args(c, a, n);
        fputs("}", c->out);
        ct_sep(c);
        fputs("{\"ph\":\"e\",\"cat\":\"allocation\",\"name\":", c->out);
        vt_json_str(c->out, name);
        fprintf(c->out, ",\"id\":\"0x%" PRIx64 "\"", id);
        ct_pidtid(c, t->pid, t->tid);
        ct_ts(c, t1);
        fputs("}", c->out);
        return ct_check(c);
    }
    fputs("{\"ph\":\"X\",\"name\":", c->out);
    vt_json_str(c->out, name);
    ct_pidtid(c, t->pid, t->tid);
    ct_ts(c, t0);
    ct_us(c, ",\"dur\":", t1 > t0 ? t1 - t0 : 0);
    ct_args(c, a, n);
    fputs("}", c->out);
    return ct_check(c);
}

static int ct_be(ct *c, uint64_t track, uint64_t t, const char *ph, const char *name, const vt_xarg *a, int n)
{
    const ct_track *tr = ct_get(c, track);
    if (!tr)
        return VT_ERR_INVALID;
    ct_sep(c);
    fprintf(c->out, "{\"ph\":\"%s\"", ph);
    if (name) {
        fputs(",\"name\":", c->out);
        vt_json_str(c->out, name);
    }
    ct_pidtid(c, tr->pid, tr->tid);
    ct_ts(c, t);
    if (ph[0] == 'i')
        fputs(",\"s\":\"t\"", c->out);
    ct_args(c, a, n);
    fputs("}", c->out);
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
    fputs("{\"ph\":\"C\",\"name\":", c->out);
    vt_json_str(c->out, tr->name);
    ct_num(c, ",\"pid\":", tr->pid, 0);
    ct_ts(c, t);
    ct_i64(c, ",\"args\":{\"bytes\":", v);
    fputs("}}", c->out);
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
    fputs("\n]}\n", c->out);
    if (fflush(c->out) || ferror(c->out) || ferror(c->real))
        return VT_ERR_IO;
    return fflush(c->real) ? VT_ERR_IO : 0;
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
    if (c->out)
        fclose(c->out); /* the counting stream: not the real output */
    free(c);
}

int vt_xsink_chrome(vt_xsink *s, FILE *out, uint64_t t0, uint64_t max_bytes)
{
    ct *c = calloc(1, sizeof(*c));
    if (!c)
        return VT_ERR_NOMEM;
    c->real = out;
    c->out = fopencookie(c, "w", (cookie_io_functions_t){.write = ct_write});
    if (!c->out) {
        free(c);
        return VT_ERR_NOMEM;
    }
    /* one thread writes: no lock per fputc (a quarter of the export's time) */
    __fsetlocking(c->out, FSETLOCKING_BYCALLER);
    c->t0 = t0;
    c->max_bytes = max_bytes ? max_bytes : VT_EXPORT_CHROME_MAX_BYTES_DEFAULT;
    c->first = 1;
    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"vramtrace export\"},\"traceEvents\":[", out);
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
