/* vt_live.c - the live model of `vramtrace top` (vt_live.h): followed
 * trace files fed to one replay as they grow, and the per-process,
 * per-device and per-site results read out of the replay's tables
 * without finishing it.  May touch: the trace files and their directory
 * (read only), the holders files beside them (vt_proc_join_holders). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vt_analyze_int.h"
#include "vt_error.h"
#include "vt_grow.h"
#include "vt_live.h"
#include "vt_reader.h"
#include "vt_report_int.h"
#include "vt_tracedir.h"

typedef struct {
    char *path;
    vt_reader *r;
    vt_proc *p;            /* in lv->a */
    int state;             /* VT_LIVE_* */
    int dirty;             /* events since the last growth update */
    unsigned holder_tries; /* ended without a holders file yet: looked for again */
    char err[512];         /* the last read error */
    uint64_t failed;       /* failed allocation calls */
    /* the last of them */
    uint64_t fail_t, fail_size;
    uint32_t fail_device, fail_stack;
    char fail_error[64];
} live_src;

struct vt_live {
    char *path;
    int is_dir;
    vt_analysis *a;
    live_src *src;
    size_t nsrc, capsrc;
    uint32_t *order;
    size_t ncap;
};

int vt_live_open(vt_live **out, const char *path)
{
    struct stat st;
    *out = NULL;
    if (stat(path, &st))
        return VT_ERR_NOT_FOUND;
    vt_live *lv = calloc(1, sizeof(*lv));
    if (!lv)
        return VT_ERR_NOMEM;
    lv->is_dir = S_ISDIR(st.st_mode);
    lv->path = strdup(path);
    vt_analysis_config cfg;
    vt_analysis_config_default(&cfg);
    cfg.top = 20;
    if (!lv->path || vt_analysis_create(&lv->a, &cfg)) {
        vt_live_free(lv);
        return VT_ERR_NOMEM;
    }
    *out = lv;
    return 0;
}

void vt_live_free(vt_live *lv)
{
    if (!lv)
        return;
    for (size_t i = 0; i < lv->nsrc; i++) {
        vt_reader_free(lv->src[i].r);
        free(lv->src[i].path);
    }
    free(lv->src);
    vt_analysis_free(lv->a);
    free(lv->order);
    free(lv->path);
    free(lv);
}

static int src_has(const vt_live *lv, const char *path)
{
    for (size_t i = 0; i < lv->nsrc; i++)
        if (!strcmp(lv->src[i].path, path))
            return 1;
    return 0;
}

/* Start following `path`: its reader (follow mode) and its process. */
static int src_add(vt_live *lv, const char *path)
{
    char msg[512];
    vt_reader *r = NULL;
    int rc = vt_reader_open(&r, path, msg, sizeof(msg));
    if (rc)
        return rc == VT_ERR_NOMEM ? rc : 0; /* gone again, or not readable: not a process */
    if (VT_GROW(lv->src, lv->nsrc, lv->capsrc, 4) || vt_analysis_begin_process(lv->a, path)) {
        vt_reader_free(r);
        return VT_ERR_NOMEM;
    }
    vt_reader_set_follow(r, 1);
    vt_reader_share_budget(r, lv->a->budget);
    live_src *s = &lv->src[lv->nsrc++];
    memset(s, 0, sizeof(*s));
    s->path = strdup(path);
    s->r = r;
    s->p = lv->a->procs[lv->a->nprocs - 1];
    if (!s->path)
        return VT_ERR_NOMEM;
    if (lv->a->sym) { /* the symbols that travelled with it */
        char sp[4200], sm[600];
        snprintf(sp, sizeof(sp), "%s.sym", path);
        vt_symbols_load(lv->a->sym, sp, sm, sizeof(sm));
    }
    return 0;
}

/* New trace files of the directory (the file itself the first time). */
static int scan(vt_live *lv)
{
    if (!lv->is_dir)
        return lv->nsrc ? 0 : src_add(lv, lv->path);
    char **names;
    size_t n;
    if (vt_tracedir_list(lv->path, "vramtrace top", &names, &n))
        return 0; /* the directory went away: keep what was read */
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++)
        if (!src_has(lv, names[i]))
            rc = src_add(lv, names[i]);
    vt_tracedir_free(names, n);
    return rc;
}

static void note_failed(live_src *s, const vt_event *ev)
{
    const vt_ev_alloc_failed *f = &ev->u.alloc_failed;
    s->failed++;
    s->fail_t = ev->time_ns;
    s->fail_size = f->size;
    s->fail_device = f->device;
    s->fail_stack = f->site.stack;
    snprintf(s->fail_error, sizeof(s->fail_error), "%s", f->error_name ? f->error_name : "");
}

/* Read what the file gained: until the reader has nothing more yet, the
 * End, a final error, or `max` events. */
static int64_t src_poll(vt_live *lv, live_src *s, uint64_t max)
{
    if (s->state != VT_LIVE_READING)
        return 0;
    vt_event ev[64];
    int64_t n = 0;
    lv->a->cur = s->p;
    while (!max || (uint64_t)n < max) {
        int k = vt_reader_next_batch(s->r, ev, 64);
        if (k > 0) {
            if (k == 1 && ev[0].type == VT_EV_ALLOC_FAILED)
                note_failed(s, &ev[0]);
            int frc = vt_proc_feed_batch(lv->a, s->p, ev, k);
            n += k;
            s->dirty = 1;
            if (frc) {
                snprintf(s->err, sizeof(s->err), "%s: replay failed: %s", s->path, vt_strerror(frc));
                s->state = VT_LIVE_FAILED;
                break;
            }
            continue;
        }
        if (k == VT_ERR_AGAIN)
            break;
        if (k == 0) {
            s->state = VT_LIVE_ENDED;
            break;
        }
        snprintf(s->err, sizeof(s->err), "%s", vt_reader_errmsg(s->r));
        if (k != VT_ERR_CORRUPT && k != VT_ERR_TOO_LARGE) {
            s->state = VT_LIVE_FAILED; /* final: what was read stays */
            break;
        }
        /* damage: the reader resumes at the next good frame */
    }
    if (s->state == VT_LIVE_ENDED) {
        /* complete: the report's own results, holders included */
        char msg[600];
        vt_reader_free(s->r);
        s->r = NULL;
        if (vt_proc_finish(lv->a, s->p) == VT_ERR_NOMEM)
            return VT_ERR_NOMEM;
        vt_proc_join_holders(s->p, s->p->name, 0, msg, sizeof(msg));
        s->dirty = 0;
    } else if (s->state == VT_LIVE_FAILED) {
        vt_reader_free(s->r);
        s->r = NULL;
    }
    return n;
}

int64_t vt_live_poll(vt_live *lv, uint64_t max_events)
{
    int rc = scan(lv);
    if (rc)
        return rc;
    int64_t total = 0;
    for (size_t i = 0; i < lv->nsrc; i++) {
        live_src *s = &lv->src[i];
        int64_t n = src_poll(lv, s, max_events);
        if (n < 0)
            return n;
        total += n;
        if (s->state == VT_LIVE_ENDED && !s->p->holders_file && s->holder_tries < 10) {
            /* the program's walk may write holders.PID.txt after the End */
            char msg[600];
            s->holder_tries++;
            vt_proc_join_holders(s->p, s->p->name, 0, msg, sizeof(msg));
        }
        if (s->dirty && s->state != VT_LIVE_ENDED) {
            vt_proc_live_growth(lv->a, s->p);
            s->dirty = 0;
        }
    }
    lv->a->cur = NULL;
    return total;
}

unsigned vt_live_nprocs(const vt_live *lv)
{
    return (unsigned)lv->nsrc;
}

/* "function (file:line)" of the user's frame of a stack, as the report
 * heads the site (a framework's thread named), the file's base name ("" if
 * no stack) */
static void site_text(vt_live *lv, const vt_proc *p, uint32_t stack, uint32_t thread, char *buf, size_t len)
{
    buf[0] = 0;
    if (!stack)
        return;
    rep_site_headline(lv->a, p, stack, thread, 1, buf, len);
}

int vt_live_proc_get(vt_live *lv, unsigned i, vt_live_proc *o)
{
    if (i >= lv->nsrc)
        return VT_ERR_INVALID;
    live_src *s = &lv->src[i];
    const vt_proc *p = s->p;
    memset(o, 0, sizeof(*o));
    o->file = s->path;
    o->program = p->program;
    o->host = p->host;
    o->pid = p->pid;
    o->state = s->state;
    o->error = s->err[0] ? s->err : NULL;
    o->records = p->records;
    if (s->r) {
        vt_reader_stats rs;
        vt_reader_get_stats(s->r, &rs);
        o->bytes = rs.bytes_in;
    } else {
        struct stat st;
        o->bytes = stat(s->path, &st) == 0 ? (uint64_t)st.st_size : 0;
    }
    o->seconds = p->have_t0 && p->t_last > p->t0 ? (double)(p->t_last - p->t0) / 1e9 : 0;
    o->tensors = p->tensor_units > 0;
    o->steps = p->steps;
    o->step_ns = p->step_period_ns;
    o->step_source = p->step_source;
    for (uint32_t d = 0; d < p->ndev_seen && d < VT_MAX_DEVICES && o->ndevices < VT_LIVE_MAX_DEVICES; d++) {
        const vt_devstate *ds = &p->dev[d];
        if (!ds->peak && !ds->live_dev && !ds->reserved && !ds->live[VT_MEM_TENSOR])
            continue;
        vt_live_device *v = &o->dev[o->ndevices++];
        v->index = d;
        v->name = ds->name;
        v->total = ds->total;
        v->live = ds->live_dev;
        v->peak = ds->peak;
        v->allocated = o->tensors ? ds->live[VT_MEM_TENSOR] : -1;
        v->reserved = o->tensors ? ds->reserved : -1;
    }
    o->failed = p->failed;
    o->retries = p->failed_retries;
    o->probes = p->failed_probes;
    if (s->failed) {
        o->fail_size = s->fail_size;
        o->fail_at = s->fail_t > p->t0 ? (double)(s->fail_t - p->t0) / 1e9 : 0;
        o->fail_device = s->fail_device;
        o->fail_error = s->fail_error[0] ? s->fail_error : NULL;
        site_text(lv, p, s->fail_stack, 0, o->fail_site, sizeof(o->fail_site));
    }
    return 0;
}

static const vt_proc *g_sort_p; /* qsort has no context argument in C11 */
static int g_sort_key;

static double sort_value(const vt_unit *u, int key)
{
    switch (key) {
    case VT_LIVE_SORT_LIVE:
        return (double)u->live_bytes;
    case VT_LIVE_SORT_RATE:
        return u->growth_flag ? u->growth_rate : 0;
    default:
        return u->growth_flag ? (double)u->grown : 0;
    }
}

static int site_cmp(const void *x, const void *y)
{
    const vt_unit *a = &g_sort_p->units[*(const uint32_t *)x], *b = &g_sort_p->units[*(const uint32_t *)y];
    if (g_sort_key != VT_LIVE_SORT_LIVE && a->growth_flag != b->growth_flag)
        return a->growth_flag ? -1 : 1;
    double va = sort_value(a, g_sort_key), vb = sort_value(b, g_sort_key);
    if (va != vb)
        return va > vb ? -1 : 1;
    if (a->live_bytes != b->live_bytes)
        return a->live_bytes > b->live_bytes ? -1 : 1;
    return *(const uint32_t *)x < *(const uint32_t *)y ? -1 : 1; /* stable: unit order */
}

unsigned vt_live_sites(vt_live *lv, unsigned i, int sort, vt_live_site *out, unsigned max)
{
    if (i >= lv->nsrc || !max)
        return 0;
    const vt_proc *p = lv->src[i].p;
    if (p->nunits + 1 > lv->ncap) {
        uint32_t *o = realloc(lv->order, (p->nunits + 1) * sizeof(*o));
        if (!o)
            return 0;
        lv->order = o;
        lv->ncap = p->nunits + 1;
    }
    size_t n = 0;
    for (size_t k = 0; k < p->nunits; k++) {
        const vt_unit *u = &p->units[k];
        if (u->segment && p->tensor_units)
            continue; /* reserved: shown per device */
        if (u->live_bytes > 0 || u->growth_flag)
            lv->order[n++] = (uint32_t)k;
    }
    g_sort_p = p;
    g_sort_key = sort >= 0 && sort < VT_LIVE_SORT__COUNT ? sort : 0;
    qsort(lv->order, n, sizeof(uint32_t), site_cmp);
    unsigned w = 0;
    for (size_t k = 0; k < n && w < max; k++) {
        const vt_unit *u = &p->units[lv->order[k]];
        vt_live_site *s = &out[w++];
        memset(s, 0, sizeof(*s));
        site_text(lv, p, u->stack, u->thread, s->site, sizeof(s->site));
        s->device = u->device;
        s->kind = vt_memkind_name((vt_memkind)u->kind);
        s->live_bytes = u->live_bytes;
        s->live_count = vt_unit_live_count(u);
        s->growing = u->growth_flag;
        s->grown = u->grown;
        s->per_step = u->growth_flag ? u->growth_per_step : -1;
        s->per_s = u->growth_flag ? u->growth_rate : 0;
        if (p->holders_file && u->holder && u->holder <= p->nholders)
            s->holder = p->holders[u->holder - 1].path;
    }
    return w;
}
