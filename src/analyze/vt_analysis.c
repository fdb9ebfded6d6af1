/* vt_analysis.c - the analysis object: processes, reading trace files and
 * directories through vt_reader (one streaming pass each), read errors,
 * progress on stderr, and the totals the CLI gates on.  May touch: the
 * trace files (read only) and stderr (progress). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vt_analyze_int.h"
#include "vt_error.h"
#include "vt_tracedir.h"
#include "vt_reader.h"
#include "vt_grow.h"

void vt_analysis_config_default(vt_analysis_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->at_mode = VT_AT_AUTO;
    cfg->top = 20;
    cfg->max_frames = 24;
    cfg->symbolize = 1;
}

int vt_analysis_create(vt_analysis **out, const vt_analysis_config *cfg)
{
    vt_analysis *a = calloc(1, sizeof(*a));
    if (!a)
        return VT_ERR_NOMEM;
    if (cfg)
        a->cfg = *cfg;
    else
        vt_analysis_config_default(&a->cfg);
    a->tables.limit = cfg && cfg->max_memory ? cfg->max_memory : VT_READER_COMMAND_TABLE_BYTES;
    a->budget = &a->tables;
    if (!a->cfg.top)
        a->cfg.top = 20;
    if (!a->cfg.max_frames)
        a->cfg.max_frames = 24;
    if (a->cfg.at_mode == VT_AT_MARKER) {
        if (!a->cfg.at_marker) {
            free(a);
            return VT_ERR_INVALID;
        }
        a->at_marker = strdup(a->cfg.at_marker);
        if (!a->at_marker) {
            free(a);
            return VT_ERR_NOMEM;
        }
        a->cfg.at_marker = a->at_marker;
    }
    if (a->cfg.steps_name) {
        a->steps_name = vt_nvtx_normalize(a->cfg.steps_name);
        if (!a->steps_name) {
            free(a->at_marker);
            free(a);
            return VT_ERR_NOMEM;
        }
        a->cfg.steps_name = a->steps_name;
    }
    if (a->cfg.symbolize && vt_symbolizer_create(&a->sym, a->cfg.sysroot)) {
        free(a->steps_name);
        free(a->at_marker);
        free(a);
        return VT_ERR_NOMEM;
    }
    char dir[4096];
    if (a->sym && a->cfg.symbol_cache && !vt_symcache_dir(dir, sizeof(dir)) &&
        vt_symbolizer_set_cache(a->sym, dir)) {
        vt_symbolizer_free(a->sym);
        free(a->steps_name);
        free(a->at_marker);
        free(a);
        return VT_ERR_NOMEM;
    }
    a->cfg.sysroot = NULL;
    *out = a;
    return 0;
}

void vt_analysis_free(vt_analysis *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < a->nprocs; i++)
        vt_proc_free(a->procs[i]);
    free(a->procs);
    free(a->files);
    if (a->sym) {
        /* what this report resolved, for the next one (a cache that cannot
         * be written costs only the next report's time: not said here) */
        char msg[600];
        (void)vt_symbolizer_flush(a->sym, msg, sizeof(msg));
    }
    vt_symbolizer_free(a->sym);
    for (unsigned i = 0; i < a->nall_errors; i++)
        free(a->all_errors[i]);
    free(a->at_marker);
    free(a->steps_name);
    free(a);
}

uint64_t vt_analysis_units(const vt_analysis *a)
{
    uint64_t n = 0;
    for (size_t i = 0; i < a->nprocs; i++)
        n += a->procs[i]->nunits;
    return n;
}

int vt_analysis_begin_process(vt_analysis *a, const char *name)
{
    if (a->finished)
        return VT_ERR_INVALID;
    if (VT_GROW(a->procs, a->nprocs, a->capprocs, 4))
            return VT_ERR_NOMEM;
    /* one budget for what the analysis keeps: definition tables, call
     * sites, processes (vt_analysis_config.max_memory) */
    if (vt_budget_take(a->budget, VT_PROC_COST)) {
        snprintf(a->budget_why, sizeof(a->budget_why),
                 "%s: not read: the analysis's memory budget of %llu MiB is spent (%zu processes, %llu call sites, "
                 "their names and stacks); a new process would pass it",
                 name, (unsigned long long)(a->budget->limit >> 20), a->nprocs, (unsigned long long)vt_analysis_units(a));
        vt_analysis_add_error(a, VT_ERR_LIMIT, a->budget_why);
        return VT_ERR_LIMIT;
    }
    vt_proc *p;
    int rc = vt_proc_create(&p, name);
    if (rc) {
        a->budget->used -= VT_PROC_COST;
        return rc;
    }
    p->budget = a->budget;
    p->view_mode = a->cfg.at_mode;
    p->index = (unsigned)a->nprocs;
    a->procs[a->nprocs++] = p;
    a->cur = p;
    return 0;
}

void vt_analysis_share_budget(vt_analysis *a, vt_table_budget *b)
{
    if (b && !a->nprocs)
        a->budget = b;
}

void vt_analysis_set_consumer(vt_analysis *a, vt_replay_fn fn, void *ctx)
{
    a->consumer = fn;
    a->consumer_ctx = fn ? ctx : NULL;
}

int vt_analysis_feed(vt_analysis *a, const vt_event *ev)
{
    if (!a->cur || a->finished)
        return VT_ERR_INVALID;
    return vt_proc_feed(a, a->cur, ev);
}

void vt_analysis_add_error(vt_analysis *a, int err, const char *msg)
{
    (void)err;
    if (a->cur && a->cur->nerrors < VT_MAX_ERRORS + 1)
        a->cur->errors[a->cur->nerrors++] = strdup(msg ? msg : vt_strerror(err));
    if (a->nall_errors < VT_MAX_ERRORS * 4)
        a->all_errors[a->nall_errors++] = strdup(msg ? msg : vt_strerror(err));
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int vt_analysis_add_file(vt_analysis *a, const char *path)
{
    char msg[512];
    vt_reader *r = NULL;
    struct stat fst;
    int have_id = stat(path, &fst) == 0 && S_ISREG(fst.st_mode);
    for (size_t i = 0; have_id && i < a->nfiles; i++)
        if (a->files[i].dev == (uint64_t)fst.st_dev && a->files[i].ino == (uint64_t)fst.st_ino &&
            a->files[i].proc < a->nprocs) {
            char note[700];
            snprintf(note, sizeof(note), "%s: the same file as this one, given again: read once", path);
            vt_proc_add_note(a->procs[a->files[i].proc], VT_SEV_WARNING, note);
            return 0;
        }
    /* A file that cannot be opened is an error, not an empty process. */
    int rc = vt_reader_open(&r, path, msg, sizeof(msg));
    if (rc) {
        char full[700];
        if (strstr(msg, path))
            snprintf(full, sizeof(full), "%s", msg);
        else
            snprintf(full, sizeof(full), "%s: %s", path, msg[0] ? msg : vt_strerror(rc));
        vt_analysis_add_error(a, rc, full);
        return rc;
    }
    rc = vt_analysis_begin_process(a, path);
    if (rc) {
        vt_reader_free(r);
        return rc;
    }
    if (have_id && !VT_GROW(a->files, a->nfiles, a->capfiles, 16)) {
        a->files[a->nfiles].dev = (uint64_t)fst.st_dev;
        a->files[a->nfiles].ino = (uint64_t)fst.st_ino;
        a->files[a->nfiles++].proc = a->nprocs - 1;
    }
    if (a->sym) { /* the symbols that travelled with it (vramtrace symbolize) */
        char sp[4200], sm[600];
        snprintf(sp, sizeof(sp), "%s.sym", path);
        int src = vt_symbols_load(a->sym, sp, sm, sizeof(sm));
        if (src && src != VT_ERR_NOT_FOUND)
            vt_proc_add_note(a->procs[a->nprocs - 1], VT_SEV_WARNING, sm);
    }
    vt_reader_share_budget(r, a->budget);
    struct stat st;
    uint64_t fsize = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
    int tty = a->cfg.progress && isatty(2);
    double t_start = now_s(), t_shown = 0;
    int shown = 0, errors = 0, first_err = 0;
    uint64_t n = 0, next_check = 1u << 20;
    /* events in batches: less per-event overhead in the reader and here;
     * 64 events (8 KiB) stay in L1 between the two */
    vt_event ev[64];
    for (;;) {
        int k = vt_reader_next_batch(r, ev, 64);
        if (k > 0) {
            int frc = vt_proc_feed_batch(a, a->cur, ev, k);
            if (frc) {
                if (frc == VT_ERR_LIMIT && a->cur->over_budget) /* what ran out, and where */
                    snprintf(msg, sizeof(msg),
                             "%s: at offset %llu: the analysis's memory budget of %llu MiB is spent: %llu call sites "
                             "(about %zu bytes each) in %zu processes (about %zu KiB each) and the definition tables; "
                             "a new call site would pass it; what was read before is reported",
                             path, (unsigned long long)vt_reader_offset(r), (unsigned long long)(a->budget->limit >> 20),
                             (unsigned long long)vt_analysis_units(a), (size_t)VT_UNIT_COST, a->nprocs,
                             (size_t)(VT_PROC_COST >> 10));
                else
                    snprintf(msg, sizeof(msg), "%s: replay failed at offset %llu: %s", path,
                             (unsigned long long)vt_reader_offset(r), vt_strerror(frc));
                vt_analysis_add_error(a, frc, msg);
                first_err = frc;
                break;
            }
            n += (uint64_t)k;
            if (vt_reader_unverified(r))
                a->cur->unverified_events += (uint64_t)k;
            if (tty && n >= next_check) {
                next_check = n + (1u << 20);
                double t = now_s();
                if (t - t_start > 2.0 && t - t_shown > 0.5) {
                    vt_reader_stats rs;
                    vt_reader_get_stats(r, &rs);
                    fprintf(stderr, "\rvramtrace report: %s: %.0f%% (%llu M events)", path,
                            fsize ? 100.0 * (double)rs.bytes_in / (double)fsize : 0.0,
                            (unsigned long long)(n / 1000000));
                    t_shown = t;
                    shown = 1;
                }
            }
            continue;
        }
        if (k == 0)
            break;
        /* the first errors in full, the rest counted (summary below) */
        if (errors++ < VT_MAX_ERRORS)
            vt_analysis_add_error(a, k, vt_reader_errmsg(r));
        if (!first_err)
            first_err = k;
        /* after corruption (or an oversized record) the reader resumes at
         * the next good frame: keep every good frame, however many are bad */
        if (k != VT_ERR_CORRUPT && k != VT_ERR_TOO_LARGE)
            break;
    }
    if (errors > VT_MAX_ERRORS) {
        vt_reader_stats rs;
        vt_reader_get_stats(r, &rs);
        snprintf(msg, sizeof(msg), "%s: %d more read errors not shown (%d in all, %llu bytes skipped)", path,
                 errors - VT_MAX_ERRORS, errors, (unsigned long long)rs.skipped_bytes);
        vt_analysis_add_error(a, first_err, msg);
    }
    if (shown)
        fprintf(stderr, "\r\033[K");
    vt_reader_free(r);
    if (first_err && a->cur && !a->cur->have_header && !a->cur->records) {
        /* not a trace at all (empty, text, random bytes): the error alone,
         * no made-up process */
        vt_proc_free(a->cur);
        a->procs[--a->nprocs] = NULL;
        a->cur = NULL;
    }
    return first_err;
}

int vt_analysis_add_dir(vt_analysis *a, const char *dir)
{
    char **names;
    size_t n;
    int rc = vt_tracedir_list(dir, "vramtrace", &names, &n);
    if (rc)
        return rc;
    if (!n)
        rc = VT_ERR_NOT_FOUND;
    for (size_t i = 0; i < n; i++) {
        int r2 = vt_analysis_add_file(a, names[i]);
        if (r2 && !rc)
            rc = r2;
        if (r2 == VT_ERR_NOMEM)
            break;
    }
    vt_tracedir_free(names, n);
    return rc;
}

int vt_analysis_finish(vt_analysis *a)
{
    if (a->finished)
        return 0;
    a->finished = 1;
    a->cur = NULL;
    for (size_t i = 0; i < a->nprocs; i++) {
        int rc = vt_proc_finish(a, a->procs[i]);
        if (rc)
            return rc;
        char msg[600];
        if (vt_proc_join_holders(a->procs[i], a->procs[i]->name, VT_HOLDERS_WAIT_S, msg, sizeof(msg)) && msg[0])
            vt_proc_add_note(a->procs[i], VT_SEV_WARNING, msg);
    }
    return 0;
}

uint64_t vt_analysis_leaked_bytes(const vt_analysis *a)
{
    uint64_t s = 0;
    for (size_t i = 0; i < a->nprocs; i++)
        s += a->procs[i]->leak_bytes;
    return s;
}

uint64_t vt_analysis_grown_bytes(const vt_analysis *a)
{
    uint64_t s = 0;
    for (size_t i = 0; i < a->nprocs; i++)
        s += a->procs[i]->grown_total;
    return s;
}

uint64_t vt_analysis_records(const vt_analysis *a)
{
    uint64_t s = 0;
    for (size_t i = 0; i < a->nprocs; i++)
        s += a->procs[i]->records;
    return s;
}

unsigned vt_analysis_nprocs(const vt_analysis *a)
{
    return (unsigned)a->nprocs;
}

unsigned vt_analysis_nerrors(const vt_analysis *a)
{
    return a->nall_errors;
}

const char *vt_analysis_error(const vt_analysis *a, unsigned i)
{
    return i < a->nall_errors ? a->all_errors[i] : NULL;
}

int vt_parse_duration(const char *s, uint64_t *ns)
{
    char *end;
    if (!s || !*s)
        return VT_ERR_INVALID;
    /* decimal only: digits, a point, an exponent (no sign, hex, inf or nan) */
    size_t k = 0, digits = 0;
    while (s[k] >= '0' && s[k] <= '9')
        k++, digits++;
    if (s[k] == '.')
        for (k++; s[k] >= '0' && s[k] <= '9'; k++)
            digits++;
    if (!digits)
        return s[0] == '-' || s[0] == '+' ? VT_ERR_RANGE : VT_ERR_INVALID;
    if (s[k] == 'e' || s[k] == 'E') {
        size_t e = k + 1 + (s[k + 1] == '+' || s[k + 1] == '-');
        if (s[e] >= '0' && s[e] <= '9') {
            for (k = e; s[k] >= '0' && s[k] <= '9'; k++)
                ;
        }
    }
    double v = strtod(s, &end);
    if (end != s + k || !(v >= 0))
        return VT_ERR_RANGE;
    double mul = 1e9;
    if (!*end || !strcmp(end, "s"))
        mul = 1e9;
    else if (!strcmp(end, "ms"))
        mul = 1e6;
    else if (!strcmp(end, "us"))
        mul = 1e3;
    else if (!strcmp(end, "ns"))
        mul = 1;
    else
        return VT_ERR_RANGE; /* a number with a unit it does not know */
    double x = v * mul + 0.5;
    if (!(x < 18446744073709551615.0)) /* past 2^64 ns (584 years), or not a number */
        return VT_ERR_RANGE;
    *ns = (uint64_t)x;
    return 0;
}

int vt_parse_bytes(const char *s, uint64_t *bytes)
{
    char *end;
    if (!s || !*s || *s == '-')
        return VT_ERR_INVALID;
    double v = strtod(s, &end);
    if (end == s || v < 0)
        return VT_ERR_INVALID;
    double mul = 1;
    switch (*end) {
    case 0: break;
    case 'k': case 'K': mul = 1024.0; end++; break;
    case 'm': case 'M': mul = 1024.0 * 1024; end++; break;
    case 'g': case 'G': mul = 1024.0 * 1024 * 1024; end++; break;
    case 't': case 'T': mul = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: return VT_ERR_INVALID;
    }
    if (*end == 'i')
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end)
        return VT_ERR_INVALID;
    *bytes = (uint64_t)(v * mul + 0.5);
    return 0;
}

int vt_analysis_view_missing(const vt_analysis *a, char *msg, size_t len)
{
    if (!a->nprocs || (a->cfg.at_mode != VT_AT_MARKER && a->cfg.at_mode != VT_AT_TIME))
        return 0;
    uint64_t longest = 0;
    for (size_t i = 0; i < a->nprocs; i++) {
        const vt_proc *p = a->procs[i];
        if (a->cfg.at_mode == VT_AT_MARKER && p->marker_found)
            return 0;
        uint64_t d = p->t_last > p->t0 ? p->t_last - p->t0 : 0;
        if (a->cfg.at_mode == VT_AT_TIME && a->cfg.at_ns <= d + 500) /* the duration as printed (us) */
            return 0;
        if (d > longest)
            longest = d;
    }
    if (a->cfg.at_mode == VT_AT_TIME) {
        snprintf(msg, len, "--at %.6f s is past the end of every trace (the longest lasts %.6f s)",
                 (double)a->cfg.at_ns / 1e9, (double)longest / 1e9);
        return 1;
    }
    size_t n = (size_t)snprintf(msg, len, "--at '%s' matches no NVTX mark or range in the traces; they have:",
                                a->cfg.at_marker ? a->cfg.at_marker : "");
    unsigned shown = 0, total = 0;
    const size_t list = n < len ? n : len; /* the names from here, each once */
    for (size_t i = 0; i < a->nprocs; i++) {
        const vt_proc *p = a->procs[i];
        for (size_t k = 0; k < p->nnvtx; k++, total++) {
            char q[300];
            if (shown >= 12 || n + 4 >= len || !p->nvtx[k].msg)
                continue;
            snprintf(q, sizeof(q), "'%s'", p->nvtx[k].msg);
            if (strstr(msg + list, q))
                continue;
            n += (size_t)snprintf(msg + n, len - n, "%s %s", shown ? "," : "", q);
            shown++;
        }
    }
    if (!total && n < len)
        snprintf(msg + n, len - n, " none (no NVTX was recorded); use a time (--at 1.5s) or --at end");
    return 1;
}
