/* vt_symbols.c - symbols that travel with a trace (issue 22, item 6; as
 * heaptrack's interpret step or perf's build-id cache): on the recording
 * host every native frame the trace references is resolved and written
 * beside the trace as TRACE.sym, keyed by the module's build id and the
 * address; a report elsewhere, where the binaries are missing or differ,
 * takes its function and file:line from there (vt_symbolizer_lookup).
 *
 * TRACE.sym is text, one entry per resolved address:
 *   vramtrace-symbols 1
 *   S <build-id hash, hex> <address in the file, hex> <status> <lines>
 *   L <line> <inlined 0|1> <function>\t<file>      (lines times, innermost first)
 * Tabs and newlines in names become spaces; an empty name is none.
 *
 * vt_symbols_write_all does several traces at once (`record`'s run): the
 * modules of all of them are gathered by build id with the addresses they
 * reference, the build-id cache (vt_symcache.c) answers what it can, and the
 * modules it cannot answer for are resolved by a pool of threads (bounded by
 * the processors), one module per thread with its own symbolizer, largest
 * first; each writes its new results back to the cache.  Each .sym is then
 * written from those results.
 * Touches: the traces (read), TRACE.sym (written through a temporary and
 * renamed), the binaries they name (read), the cache directory. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vt_analyze_int.h"
#include "vt_error.h"
#include "vt_grow.h"
#include "vt_reader.h"

#define SYM_MAX_FILE (256u << 20) /* a .sym larger than this is not read */
#define SYM_MAX_LINES 64          /* inline levels per address */
#define VT_SYM_BID_MAX 64         /* build-id bytes kept (GNU build ids are 20) */

typedef struct {
    char *path;
    uint8_t bid[VT_SYM_BID_MAX];
    uint32_t bid_len;
    uint64_t bias;
    size_t job;      /* index into the jobs, + 1 (0: none, no build id) */
} sym_mod;

typedef struct {
    uint64_t ip;
    uint32_t module;
} sym_frame;

/* one trace: its modules and native frames, as read */
typedef struct {
    const char *path;
    sym_mod *mods;
    size_t nmods, capmods;
    sym_frame *frs;
    size_t nfrs, capfrs;
    int rc;
    char msg[600];
} sym_trace;

/* one module (by build id) of all the traces: the addresses to resolve,
 * resolved by one thread with its own symbolizer */
typedef struct {
    const char *path;      /* the first trace's (owned by that trace) */
    const uint8_t *bid;
    uint32_t bid_len;
    uint64_t bidh;
    uint64_t *rels;
    size_t nrels, caprels;
    vt_map seen;           /* rel + 1 -> 1 */
    vt_symbolizer *sym;
    uint64_t size;         /* the file's bytes, for the order and the progress line */
    size_t nmiss;          /* addresses the cache lacks */
    int rc;
    char msg[600];
} sym_job;

typedef struct {
    sym_job **work;
    size_t nwork, next, ndone;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} sym_pool;

static void put_name(FILE *f, const char *s)
{
    for (; s && *s; s++)
        fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, f);
}

static void trace_free(sym_trace *t)
{
    for (size_t i = 0; i < t->nmods; i++)
        free(t->mods[i].path);
    free(t->mods);
    free(t->frs);
}

/* the modules and native frames of t->path */
static int trace_read(sym_trace *t)
{
    vt_reader *r;
    int rc = vt_reader_open(&r, t->path, t->msg, sizeof(t->msg));
    if (rc)
        return rc;
    vt_event ev;
    int read_rc;
    while ((read_rc = vt_reader_next(r, &ev)) != 0) {
        if (read_rc < 0) {
            if (read_rc == VT_ERR_CORRUPT || read_rc == VT_ERR_TOO_LARGE)
                continue; /* damage: what is readable still counts */
            break;
        }
        if (ev.type == VT_EV_MODULE) {
            const vt_ev_module *m = &ev.u.module;
            while (t->nmods <= m->id) {
                if (m->id > (1u << 20) || VT_GROW(t->mods, t->nmods, t->capmods, 64)) {
                    rc = VT_ERR_NOMEM;
                    goto out;
                }
                memset(&t->mods[t->nmods++], 0, sizeof(*t->mods));
            }
            sym_mod *d = &t->mods[m->id];
            free(d->path);
            d->path = m->path ? strdup(m->path) : NULL;
            d->bias = m->load_bias;
            d->bid_len = m->build_id_len < VT_SYM_BID_MAX ? m->build_id_len : VT_SYM_BID_MAX;
            if (m->build_id)
                memcpy(d->bid, m->build_id, d->bid_len);
        } else if (ev.type == VT_EV_FRAME && ev.u.frame.kind == VT_FRAME_NATIVE) {
            if (VT_GROW(t->frs, t->nfrs, t->capfrs, 1024)) {
                rc = VT_ERR_NOMEM;
                goto out;
            }
            t->frs[t->nfrs++] = (sym_frame){ev.u.frame.ip, ev.u.frame.module};
        }
    }
out:
    vt_reader_free(r);
    return rc;
}

/* the frame's module, when it has what a .sym entry needs */
static const sym_mod *frame_mod(const sym_trace *t, const sym_frame *fr)
{
    const sym_mod *m = fr->module < t->nmods ? &t->mods[fr->module] : NULL;
    if (!m || !m->path || !m->bid_len || fr->ip < m->bias)
        return NULL;
    return m;
}

static size_t job_find(sym_job *jobs, size_t njobs, const sym_mod *m)
{
    uint64_t h = vt_symbols_bid_hash(m->bid, m->bid_len);
    for (size_t j = 0; j < njobs; j++)
        if (jobs[j].bidh == h && jobs[j].bid_len == m->bid_len && !memcmp(jobs[j].bid, m->bid, m->bid_len))
            return j + 1;
    return 0;
}

static int job_add_rel(sym_job *j, uint64_t rel)
{
    if (vt_map_get(&j->seen, rel + 1))
        return 0;
    if (VT_GROW(j->rels, j->nrels, j->caprels, 256) || vt_map_put(&j->seen, rel + 1, 1))
        return VT_ERR_NOMEM;
    j->rels[j->nrels++] = rel;
    return 0;
}

static void job_run(sym_job *j)
{
    for (size_t k = 0; k < j->nrels; k++)
        (void)vt_symbolizer_lookup(j->sym, j->path, j->bid, j->bid_len, j->rels[k]);
    j->rc = vt_symbolizer_flush(j->sym, j->msg, sizeof(j->msg));
}

static void *worker(void *arg)
{
    sym_pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        sym_job *j = p->next < p->nwork ? p->work[p->next++] : NULL;
        pthread_mutex_unlock(&p->mu);
        if (!j)
            return NULL;
        job_run(j);
        pthread_mutex_lock(&p->mu);
        p->ndone++;
        pthread_cond_signal(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
}

static int cmp_job_size(const void *a, const void *b)
{
    const sym_job *x = *(sym_job *const *)a, *y = *(sym_job *const *)b;
    return x->size > y->size ? -1 : x->size < y->size;
}

static void human(uint64_t b, char *out, size_t len)
{
    if (b >= (1ull << 30))
        snprintf(out, len, "%.1f GiB", (double)b / (1ull << 30));
    else if (b >= (1ull << 20))
        snprintf(out, len, "%.0f MiB", (double)b / (1ull << 20));
    else
        snprintf(out, len, "%.0f KiB", (double)b / (1ull << 10));
}

static void note(const vt_symbols_opts *o, const char *msg)
{
    if (o->note)
        o->note(o->arg, msg);
}

/* what the wait is for, once it runs past progress_ms: the largest files */
static void note_progress(const vt_symbols_opts *o, sym_job **work, size_t nwork)
{
    char line[600];
    size_t naddr = 0, at;
    for (size_t i = 0; i < nwork; i++)
        naddr += work[i]->nmiss;
    at = (size_t)snprintf(line, sizeof(line), "symbolizing %zu librar%s (", nwork, nwork == 1 ? "y" : "ies");
    for (size_t i = 0; i < nwork && i < 3 && at < sizeof(line); i++) {
        const char *b = strrchr(work[i]->path, '/');
        char hb[32];
        human(work[i]->size, hb, sizeof(hb));
        at += (size_t)snprintf(line + at, sizeof(line) - at, "%s%s %s", i ? ", " : "", b ? b + 1 : work[i]->path, hb);
    }
    if (at < sizeof(line))
        snprintf(line + at, sizeof(line) - at, "%s) for %zu address%s; once per build id, then cached...",
                 nwork > 3 ? ", ..." : "", naddr, naddr == 1 ? "" : "es");
    note(o, line);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* resolve every job's missing addresses, work[0..nwork) largest first */
static int resolve_all(const vt_symbols_opts *o, sym_job **work, size_t nwork, vt_symbols_stats *st)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    size_t nt = o->threads ? o->threads : (ncpu > 0 ? (size_t)ncpu : 1);
    if (nt > nwork)
        nt = nwork;
    if (nt > 64)
        nt = 64;
    sym_pool p = {.work = work, .nwork = nwork};
    pthread_t th[64];
    size_t started = 0;
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    double t0 = now_s();
    for (; started < nt; started++)
        if (pthread_create(&th[started], NULL, worker, &p))
            break;
    if (!started) /* no thread to be had: this one does it */
        worker(&p);
    st->threads = started ? (unsigned)started : 1;
    /* wait, saying why once it takes longer than progress_ms */
    int said = 0;
    pthread_mutex_lock(&p.mu);
    while (p.ndone < p.nwork) {
        if (!said && o->progress_ms) {
            struct timespec dl;
            clock_gettime(CLOCK_REALTIME, &dl);
            uint64_t ns = (uint64_t)dl.tv_nsec + (uint64_t)o->progress_ms * 1000000ull;
            dl.tv_sec += (time_t)(ns / 1000000000ull);
            dl.tv_nsec = (long)(ns % 1000000000ull);
            if (pthread_cond_timedwait(&p.cv, &p.mu, &dl) == ETIMEDOUT && p.ndone < p.nwork) {
                said = 1;
                pthread_mutex_unlock(&p.mu);
                note_progress(o, work, nwork);
                pthread_mutex_lock(&p.mu);
            }
        } else {
            pthread_cond_wait(&p.cv, &p.mu);
        }
    }
    pthread_mutex_unlock(&p.mu);
    for (size_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_cond_destroy(&p.cv);
    pthread_mutex_destroy(&p.mu);
    st->resolve_seconds = now_s() - t0;
    if (said) {
        char line[200];
        snprintf(line, sizeof(line), "symbolized in %.1f s (the next run of the same binaries reads the cache)",
                 st->resolve_seconds);
        note(o, line);
    }
    return 0;
}

/* TRACE.sym from the jobs' results: every address now known to them */
static int trace_write_sym(sym_trace *t, sym_job *jobs, uint64_t *nframes, uint64_t *nresolved)
{
    char tmp[4200], dst[4200];
    snprintf(dst, sizeof(dst), "%s.sym", t->path);
    snprintf(tmp, sizeof(tmp), "%s.sym.%d", t->path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(t->msg, sizeof(t->msg), "%.500s: %s", tmp, strerror(errno));
        return VT_ERR_IO;
    }
    fputs("vramtrace-symbols 1\n", f);
    vt_map done = {0};
    for (size_t i = 0; i < t->nfrs; i++) {
        const sym_mod *m = frame_mod(t, &t->frs[i]);
        if (!m || !m->job)
            continue;
        sym_job *j = &jobs[m->job - 1];
        (*nframes)++;
        uint64_t off = t->frs[i].ip - m->bias;
        int any = 0;
        /* as the report asks: the address itself (the innermost frame) and
         * the call before a return address (every other frame) */
        for (int k = 0; k < 2; k++) {
            if (k && !off)
                break;
            uint64_t rel = off - (uint64_t)k;
            uint64_t key = vt_symbols_key(j->bidh, rel);
            if (vt_map_get(&done, key))
                continue;
            const vt_symres *res = vt_symbolizer_lookup(j->sym, j->path, j->bid, j->bid_len, rel);
            if (!res->nlines || vt_map_put(&done, key, 1))
                continue;
            any = 1;
            uint32_t nl = res->nlines < SYM_MAX_LINES ? res->nlines : SYM_MAX_LINES;
            fprintf(f, "S %" PRIx64 " %" PRIx64 " %d %u\n", j->bidh, rel, res->status, nl);
            for (uint32_t l = 0; l < nl; l++) {
                fprintf(f, "L %u %d ", res->lines[l].line, res->lines[l].inlined ? 1 : 0);
                put_name(f, res->lines[l].function);
                fputc('\t', f);
                put_name(f, res->lines[l].file);
                fputc('\n', f);
            }
        }
        *nresolved += any;
    }
    vt_map_free(&done);
    if (fclose(f) || rename(tmp, dst)) {
        snprintf(t->msg, sizeof(t->msg), "%.500s: %s", dst, strerror(errno));
        unlink(tmp);
        return VT_ERR_IO;
    }
    chmod(dst, 0644);
    return 0;
}

int vt_symbols_write_all(char *const *traces, size_t n, const vt_symbols_opts *o, vt_symbols_stats *st)
{
    memset(st, 0, sizeof(*st));
    sym_trace *ts = calloc(n ? n : 1, sizeof(*ts));
    sym_job *jobs = NULL;
    sym_job **work = NULL;
    size_t njobs = 0, capjobs = 0, nwork = 0;
    int rc = 0, failed = 0;
    if (!ts)
        return VT_ERR_NOMEM;
    /* read every trace; gather each module's addresses across them */
    for (size_t i = 0; i < n; i++) {
        sym_trace *t = &ts[i];
        t->path = traces[i];
        if ((t->rc = trace_read(t)))
            continue;
        for (size_t k = 0; k < t->nfrs && !rc; k++) {
            sym_mod *m = (sym_mod *)frame_mod(t, &t->frs[k]);
            if (!m)
                continue;
            if (!m->job && !(m->job = job_find(jobs, njobs, m))) {
                if (VT_GROW(jobs, njobs, capjobs, 16)) {
                    rc = VT_ERR_NOMEM;
                    break;
                }
                sym_job *j = &jobs[njobs];
                memset(j, 0, sizeof(*j));
                j->path = m->path;
                j->bid = m->bid;
                j->bid_len = m->bid_len;
                j->bidh = vt_symbols_bid_hash(m->bid, m->bid_len);
                m->job = ++njobs;
            }
            sym_job *j = &jobs[m->job - 1];
            uint64_t off = t->frs[k].ip - m->bias;
            if (job_add_rel(j, off) || (off && job_add_rel(j, off - 1)))
                rc = VT_ERR_NOMEM;
        }
    }
    /* the symbolizers, and what the cache already has (no file opened) */
    for (size_t i = 0; i < njobs && !rc; i++) {
        sym_job *j = &jobs[i];
        if ((rc = vt_symbolizer_create(&j->sym, o->sysroot)) ||
            (rc = vt_symbolizer_set_cache(j->sym, o->cache_dir)))
            break;
        for (size_t k = 0; k < j->nrels; k++)
            j->nmiss += !vt_symbolizer_cached(j->sym, j->path, j->bid, j->bid_len, j->rels[k]);
        st->naddrs += j->nrels;
        st->naddrs_cached += j->nrels - j->nmiss;
        const char *cm = vt_symbolizer_cache_msg(j->sym);
        if (cm[0])
            note(o, cm);
    }
    if (!rc && njobs && !(work = malloc(njobs * sizeof(*work))))
        rc = VT_ERR_NOMEM;
    for (size_t i = 0; i < njobs && !rc; i++) {
        if (!jobs[i].nmiss)
            continue;
        char full[4200];
        struct stat sb;
        snprintf(full, sizeof(full), "%s%s", o->sysroot ? o->sysroot : "", jobs[i].path);
        jobs[i].size = stat(full, &sb) == 0 ? (uint64_t)sb.st_size : 0;
        work[nwork++] = &jobs[i];
    }
    if (!rc && nwork) {
        /* largest first: the longest job starts at once */
        qsort(work, nwork, sizeof(*work), cmp_job_size);
        rc = resolve_all(o, work, nwork, st);
    }
    st->nmodules = (unsigned)njobs;
    for (size_t i = 0; i < njobs && !rc; i++) {
        vt_symbolizer_stats ss;
        vt_symbolizer_get_stats(jobs[i].sym, &ss);
        st->nmodules_opened += ss.opened > 0;
        st->opened_bytes += ss.opened_bytes;
        st->cache_damaged += ss.cache_damaged;
        if (jobs[i].rc && jobs[i].msg[0]) {
            char line[700];
            snprintf(line, sizeof(line), "symbol cache not written: %s", jobs[i].msg);
            note(o, line);
        }
    }
    /* each trace's .sym */
    for (size_t i = 0; i < n; i++) {
        sym_trace *t = &ts[i];
        uint64_t nf = 0, nr = 0;
        if (!t->rc && rc)
            t->rc = rc;
        if (!t->rc)
            t->rc = trace_write_sym(t, jobs, &nf, &nr);
        st->nframes += nf;
        st->nresolved += nr;
        failed += t->rc != 0;
        if (o->done)
            o->done(o->arg, i, t->rc, nf, nr, t->msg);
    }
    for (size_t i = 0; i < njobs; i++) {
        free(jobs[i].rels);
        vt_map_free(&jobs[i].seen);
        vt_symbolizer_free(jobs[i].sym);
    }
    free(jobs);
    free(work);
    for (size_t i = 0; i < n; i++)
        trace_free(&ts[i]);
    free(ts);
    return failed;
}

typedef struct {
    uint64_t *nframes, *nresolved;
    char *msg;
    size_t len;
    int rc;
} one_trace;

static void one_done(void *arg, size_t i, int rc, uint64_t nframes, uint64_t nresolved, const char *msg)
{
    one_trace *ot = arg;
    (void)i;
    ot->rc = rc;
    *ot->nframes = nframes;
    *ot->nresolved = nresolved;
    snprintf(ot->msg, ot->len, "%s", msg);
}

int vt_symbols_write(const char *trace, const char *sysroot, uint64_t *nframes, uint64_t *nresolved, char *msg,
                     size_t len)
{
    *nframes = *nresolved = 0;
    msg[0] = 0;
    one_trace ot = {nframes, nresolved, msg, len, 0};
    vt_symbols_opts o = {.sysroot = sysroot, .threads = 1, .done = one_done, .arg = &ot};
    vt_symbols_stats st;
    char *v[1] = {(char *)trace};
    int rc = vt_symbols_write_all(v, 1, &o, &st);
    return rc > 0 ? ot.rc : rc;
}

static char *dup_or_null(const char *b, const char *e)
{
    if (e <= b)
        return NULL;
    char *s = malloc((size_t)(e - b) + 1);
    if (s) {
        memcpy(s, b, (size_t)(e - b));
        s[e - b] = 0;
    }
    return s;
}

int vt_symline_parse(const char *line, size_t len, vt_symline *out)
{
    unsigned lno;
    int inl, pos = 0;
    /* exactly one space: a scanf space would eat the tab of an empty name */
    /* a NUL inside the line is damage (the cache's lines are read with their
     * length, TRACE.sym's up to the first NUL): never a name cut short */
    if (memchr(line, 0, len) ||
        sscanf(line, "L %u %d%n", &lno, &inl, &pos) != 2 || !pos || (size_t)pos >= len || line[pos++] != ' ')
        return -1;
    const char *fn = line + pos, *end = line + len, *tab = memchr(fn, '\t', (size_t)(end - fn));
    if (!tab)
        return -1;
    *out = (vt_symline){dup_or_null(fn, tab), dup_or_null(tab + 1, end), lno, inl ? 1 : 0};
    return 0;
}

int vt_symbols_load(vt_symbolizer *s, const char *path, char *msg, size_t len)
{
    msg[0] = 0;
    struct stat st;
    if (stat(path, &st) || !S_ISREG(st.st_mode))
        return VT_ERR_NOT_FOUND;
    if ((uint64_t)st.st_size > SYM_MAX_FILE) {
        snprintf(msg, len, "%s: %lld bytes, more than a symbols file holds: not read", path, (long long)st.st_size);
        return VT_ERR_TOO_LARGE;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(msg, len, "%s: %s", path, strerror(errno));
        return VT_ERR_IO;
    }
    char line[8192];
    uint64_t ln = 0;
    int rc = 0;
    if (!fgets(line, sizeof(line), f) || strcmp(line, "vramtrace-symbols 1\n")) {
        snprintf(msg, len, "%s: line 1: not a vramtrace symbols file (version 1)", path);
        fclose(f);
        return VT_ERR_VERSION;
    }
    ln = 1;
    vt_symbolizer_saw_travel(s);
    vt_symline lines[SYM_MAX_LINES];
    while (fgets(line, sizeof(line), f)) {
        ln++;
        uint64_t bidh, rel;
        int status;
        unsigned nl;
        if (sscanf(line, "S %" SCNx64 " %" SCNx64 " %d %u", &bidh, &rel, &status, &nl) != 4 || nl == 0 ||
            nl > SYM_MAX_LINES || status < 0 || status > VT_SYM_NO_DEBUG_INFO) {
            snprintf(msg, len, "%s: line %" PRIu64 ": expected an entry (S HASH ADDRESS STATUS LINES)", path, ln);
            rc = VT_ERR_CORRUPT;
            break;
        }
        unsigned got = 0;
        for (; got < nl && fgets(line, sizeof(line), f); got++) {
            ln++;
            if (vt_symline_parse(line, strcspn(line, "\n"), &lines[got]))
                break;
        }
        if (got == nl) {
            vt_symres res = {status, lines, nl};
            rc = vt_symbolizer_add_travel(s, bidh, rel, &res);
        } else {
            snprintf(msg, len, "%s: line %" PRIu64 ": expected %u lines of the entry (L LINE INLINED FUNCTION\\tFILE)",
                     path, ln, nl);
            rc = VT_ERR_CORRUPT;
        }
        for (unsigned k = 0; k < got; k++) {
            free(lines[k].function);
            free(lines[k].file);
        }
        if (rc)
            break;
    }
    fclose(f);
    return rc;
}
