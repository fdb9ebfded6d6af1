/* vt_report_job.c - the text of a job of several processes (the ranks of
 * a torchrun or MPI job): its verdict first, naming each process by rank
 * (which leak, at which line, held by what; which ran out of memory and
 * how the others ended), then the rows merged by call site.  Renders the
 * report model (vt_report_model.c); touches only the FILE it is given. */
#include "vt_report_int.h"

/* at most this many names in a list of clean processes */
#define JOB_NAMES 8

/* "rank 0, rank 2 and 5 more": the processes for which pick() holds */
static void job_names(vt_analysis *a, FILE *o, int (*pick)(vt_analysis *, vt_proc *))
{
    char nb[96];
    size_t shown = 0, all = 0;
    for (size_t i = 0; i < a->nprocs; i++) {
        if (!pick(a, a->procs[i]))
            continue;
        if (all++ < JOB_NAMES)
            fprintf(o, "%s%s", shown++ ? ", " : "", rep_proc_name(a, a->procs[i], nb, sizeof(nb)));
    }
    if (all > shown)
        fprintf(o, " and %zu more", all - shown);
}

static int is_leak(vt_analysis *a, vt_proc *p)
{
    rep_verdict v;
    rep_verdict_of(a, p, &v);
    return v.kind == REP_LEAK;
}

static int is_tell(vt_analysis *a, vt_proc *p)
{
    rep_verdict v;
    rep_verdict_of(a, p, &v);
    return v.kind == REP_CANNOT_TELL;
}

static int is_clean(vt_analysis *a, vt_proc *p)
{
    rep_verdict v;
    rep_verdict_of(a, p, &v);
    return v.kind == REP_NO_LEAK;
}

static int is_oom(vt_analysis *a, vt_proc *p)
{
    rep_oom_head h;
    (void)a;
    return rep_oom_headline(p, &h);
}

static int no_oom(vt_analysis *a, vt_proc *p)
{
    return !is_oom(a, p);
}

/* The job's verdict: which processes leak (each with its verdict line:
 * the line, the holder, the growth), which cannot tell, which are clean
 * (named); then, when one ran out of memory, its headline and how each
 * other process's trace ends (a rank left waiting in a collective ends
 * without an OOM, killed by the launcher or by its own timeout). */
static void job_verdict(vt_analysis *a, FILE *o)
{
    rep_job j;
    rep_job_of(a, &j);
    char nb[160], lead[200], eb[96];
    size_t n = a->nprocs, clean = n - j.leaking - j.cannot_tell;
    fprintf(o, "verdict: ");
    if (j.leaking) {
        fprintf(o, "LEAK in ");
        job_names(a, o, is_leak);
        fprintf(o, " (%zu of %zu processes)", j.leaking, n);
    }
    if (j.cannot_tell) {
        fprintf(o, "%sCANNOT TELL in ", j.leaking ? "; " : "");
        job_names(a, o, is_tell);
        fprintf(o, " (%zu of %zu processes)", j.cannot_tell, n);
    }
    if (clean == n)
        fprintf(o, "no leak in any of the %zu processes (", n);
    else if (clean)
        fprintf(o, "; no leak in ");
    if (clean)
        job_names(a, o, is_clean);
    if (clean == n)
        fputc(')', o);
    fputc('\n', o);
    size_t shown = 0;
    for (size_t i = 0; i < n; i++) {
        vt_proc *p = a->procs[i];
        if (is_clean(a, p))
            continue;
        if (shown++ >= a->cfg.top)
            continue;
        snprintf(lead, sizeof(lead), "  %s: ", rep_proc_label(a, p, nb, sizeof(nb)));
        rep_text_verdict(a, p, o, lead, "    ");
    }
    if (shown > a->cfg.top)
        fprintf(o, "  (%zu more processes leak or cannot tell: their own parts above)\n", shown - a->cfg.top);
    /* how the processes that did not end normally ended (with an OOM, the
     * lines below say it for every process) */
    size_t abnormal = 0;
    for (size_t i = 0; !j.oom && i < n; i++)
        abnormal += (size_t)rep_abnormal_end(a->procs[i]);
    if (abnormal) {
        fprintf(o, "%zu of %zu processes did not end normally:", abnormal, n);
        for (size_t i = 0, k = 0; i < n; i++) {
            vt_proc *p = a->procs[i];
            if (!rep_abnormal_end(p))
                continue;
            if (k++ >= a->cfg.top) {
                fprintf(o, " and %zu more", abnormal - a->cfg.top);
                break;
            }
            fprintf(o, "%s %s: %s", k > 1 ? ";" : "", rep_proc_label(a, p, nb, sizeof(nb)), rep_end_text(p, eb, sizeof(eb)));
        }
        fputc('\n', o);
    }
    if (!j.oom)
        return;
    fprintf(o, "OUT OF MEMORY in ");
    job_names(a, o, is_oom);
    fprintf(o, " (%zu of %zu processes)", j.oom, n);
    if (j.oom < n) {
        fprintf(o, "; no request ran out of memory in ");
        job_names(a, o, no_oom);
    }
    fputc('\n', o);
    shown = 0; /* those that ran out of memory first, then the others */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n && shown < a->cfg.top; i++) {
            vt_proc *p = a->procs[i];
            if (is_oom(a, p) != !pass)
                continue;
            snprintf(lead, sizeof(lead), "  %s: ", rep_proc_label(a, p, nb, sizeof(nb)));
            if (!pass)
                rep_text_oom_headline(a, p, o, lead, "    ");
            else /* left waiting: where its trace ends, and how */
                fprintf(o, "%sno request ran out of memory; its trace ends at %.3f s, %s\n", lead,
                        rep_rel_s(p, p->t_last), rep_end_text(p, eb, sizeof(eb)));
            shown++;
        }
    if (n > shown)
        fprintf(o, "  (%zu more processes: their own parts above)\n", n - shown);
}

/* which processes a merged row is in, when it is not in all of them and
 * they are few: " (rank 1)" */
static void row_names(vt_analysis *a, const vt_mrow *m, FILE *o)
{
    char nb[96];
    if (m->nproc >= a->nprocs || m->nproc > VT_MROW_PROCS)
        return;
    fputs(" (", o);
    for (uint32_t k = 0; k < m->nproc; k++)
        fprintf(o, "%s%s", k ? ", " : "", rep_proc_name(a, a->procs[m->procs[k]], nb, sizeof(nb)));
    fputc(')', o);
}

void rep_text_merged(vt_analysis *a, FILE *o)
{
    static const char *titles[] = {"leaks (each process at its own view time)", "peak live sets, summed",
                                   "growth (call sites flagged in any process)"};
    char b1[32], b2[32];
    fprintf(o, "\n== all %zu processes merged, by call site ==\n", a->nprocs);
    job_verdict(a, o);
    uint64_t lb = 0, pk = 0;
    for (size_t i = 0; i < a->nprocs; i++) {
        lb += a->procs[i]->leak_bytes;
        for (uint32_t d = 0; d < VT_MAX_DEVICES; d++)
            pk += (uint64_t)a->procs[i]->dev[d].peak;
    }
    fprintf(o, "leaked at the view: %s; sum of per-device peaks: %s\n", rep_bytes(b1, (double)lb),
            rep_bytes(b2, (double)pk));
    for (int w = 0; w < 3; w++) {
        vt_mrow *r;
        size_t n = rep_merged_rows(a, w, &r);
        fprintf(o, "\n-- merged %s: %zu call site%s --\n", titles[w], n, n == 1 ? "" : "s");
        for (size_t i = 0; i < n && i < a->cfg.top; i++) {
            const vt_proc *p = a->procs[r[i].proc];
            const vt_unit *u = &p->units[r[i].unit];
            if (w == 2)
                fprintf(o, "#%zu +%s, %s/s in %u process%s", i + 1, rep_bytes(b1, (double)r[i].grown),
                        rep_bytes(b2, r[i].rate), r[i].nproc, r[i].nproc == 1 ? "" : "es");
            else
                fprintf(o, "#%zu %s in %" PRId64 " block%s, %s, in %u process%s", i + 1,
                        rep_bytes(b1, (double)r[i].bytes), r[i].count, r[i].count == 1 ? "" : "s",
                        vt_memkind_name((vt_memkind)u->kind), r[i].nproc, r[i].nproc == 1 ? "" : "es");
            row_names(a, &r[i], o);
            fputc('\n', o);
            rep_text_unit_stack(a, p, u, o, "    ");
        }
        free(r);
    }
}
