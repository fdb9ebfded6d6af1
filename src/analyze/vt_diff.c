/* vt_diff.c - `vramtrace diff A B`: two finished analyses compared per call
 * site, matched by meaning (vt_unit_meaning_key: the user's frames and
 * symbol names, never raw offsets, so the same line in two builds or
 * two machines is one site): bytes live at the view
 * (leaks), at the peak, allocated in all, and growth.  Rows sorted by the
 * largest absolute change, then key.  Touches only the FILE given. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "vt_analyze_int.h"
#include "vt_report_int.h"
#include "vt_error.h"

typedef struct {
    const char *key;
    int side;              /* 0 = A, 1 = B */
    vt_analysis *an;
    uint32_t proc, unit;
    int64_t leak[2], peak[2], alloc[2], grown[2];
    uint64_t blocks[2];
    uint32_t stacks[2]; /* the side's units merged into the row (call
                         * stacks of the same lines the report lists apart) */
    int64_t rep[2];     /* the shown unit's leak and allocated bytes */
} vt_drow;

static int drow_key_cmp(const void *x, const void *y)
{
    const vt_drow *a = x, *b = y;
    int c = strcmp(a->key, b->key);
    if (c)
        return c;
    if (a->side != b->side)
        return a->side - b->side;
    if (a->proc != b->proc)
        return a->proc < b->proc ? -1 : 1;
    return a->unit < b->unit ? -1 : a->unit > b->unit;
}

static int64_t iabs64(int64_t v)
{
    return v < 0 ? -v : v;
}

static int drow_delta_cmp(const void *x, const void *y)
{
    const vt_drow *a = x, *b = y;
    int64_t da = iabs64(a->leak[1] - a->leak[0]), db = iabs64(b->leak[1] - b->leak[0]);
    if (da != db)
        return da > db ? -1 : 1;
    da = iabs64(a->peak[1] - a->peak[0]);
    db = iabs64(b->peak[1] - b->peak[0]);
    if (da != db)
        return da > db ? -1 : 1;
    da = iabs64(a->alloc[1] - a->alloc[0]);
    db = iabs64(b->alloc[1] - b->alloc[0]);
    if (da != db)
        return da > db ? -1 : 1;
    return strcmp(a->key, b->key);
}

static size_t diff_rows(vt_analysis *a, vt_analysis *b, vt_drow **out)
{
    size_t cap = 0, n = 0;
    vt_analysis *an[2] = {a, b};
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < an[s]->nprocs; i++)
            cap += an[s]->procs[i]->nunits;
    vt_drow *r = calloc(cap + 1, sizeof(*r));
    *out = r;
    if (!r)
        return 0;
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < an[s]->nprocs; i++) {
            vt_proc *p = an[s]->procs[i];
            for (size_t k = 0; k < p->nunits; k++) {
                vt_unit *u = &p->units[k];
                vt_drow *d = &r[n++];
                d->key = vt_unit_meaning_key(an[s], p, (uint32_t)k);
                d->side = s;
                d->an = an[s];
                d->proc = (uint32_t)i;
                d->unit = (uint32_t)k;
                /* what the side's leaked_bytes counts of this site, so that
                 * the rows add up to the totals (no module globals, no
                 * segments under tensors, no teardown) */
                d->leak[s] = u->kept_bytes;
                d->blocks[s] = (uint64_t)u->kept_count;
                /* live at the peak as the report's peak section counts
                 * it: with tensor events the tensors, not their segments */
                d->peak[s] = rep_counted(p, u) ? u->pk_bytes : 0;
                d->alloc[s] = (int64_t)u->alloc_bytes;
                d->grown[s] = u->growth_flag ? (int64_t)u->grown : 0;
                d->stacks[s] = 1;
                d->rep[0] = u->kept_bytes;
                d->rep[1] = (int64_t)u->alloc_bytes;
            }
        }
    qsort(r, n, sizeof(*r), drow_key_cmp);
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (w && !strcmp(r[w - 1].key, r[i].key)) {
            vt_drow *m = &r[w - 1];
            for (int s = 0; s < 2; s++) {
                m->leak[s] += r[i].leak[s];
                m->peak[s] += r[i].peak[s];
                m->alloc[s] += r[i].alloc[s];
                m->grown[s] += r[i].grown[s];
                m->blocks[s] += r[i].blocks[s];
                m->stacks[s] += r[i].stacks[s];
            }
            /* the stack shown is the merged unit that leaks most (else
             * allocates most): the one the report lists first */
            if (r[i].rep[0] > m->rep[0] || (r[i].rep[0] == m->rep[0] && r[i].rep[1] > m->rep[1])) {
                m->an = r[i].an;
                m->proc = r[i].proc;
                m->unit = r[i].unit;
                m->rep[0] = r[i].rep[0];
                m->rep[1] = r[i].rep[1];
            }
            continue;
        }
        r[w++] = r[i];
    }
    size_t k = 0;
    for (size_t i = 0; i < w; i++)
        if (r[i].leak[0] != r[i].leak[1] || r[i].peak[0] != r[i].peak[1] || r[i].alloc[0] != r[i].alloc[1] ||
            r[i].grown[0] != r[i].grown[1])
            r[k++] = r[i];
    qsort(r, k, sizeof(*r), drow_delta_cmp);
    return k;
}

/* Leaked bytes of the rows from `from` on (those past --top), per side. */
static void rest(const vt_drow *r, size_t from, size_t n, int64_t leak[2])
{
    leak[0] = leak[1] = 0;
    for (size_t i = from; i < n; i++) {
        leak[0] += r[i].leak[0];
        leak[1] += r[i].leak[1];
    }
}

static void totals(vt_analysis *a, int64_t *leak, int64_t *peak)
{
    *leak = *peak = 0;
    for (size_t i = 0; i < a->nprocs; i++) {
        *leak += (int64_t)a->procs[i]->leak_bytes;
        for (int d = 0; d < VT_MAX_DEVICES; d++)
            *peak += a->procs[i]->dev[d].peak;
    }
}

static int diff_text(vt_analysis *a, vt_analysis *b, FILE *o)
{
    char b1[32], b2[32], b3[32];
    int64_t la, pa, lb, pb;
    totals(a, &la, &pa);
    totals(b, &lb, &pb);
    fprintf(o, "vramtrace diff: A = %zu process%s, B = %zu process%s\n", a->nprocs, a->nprocs == 1 ? "" : "es", b->nprocs,
            b->nprocs == 1 ? "" : "es");
    vt_fmt_bytes(b1, 32, (double)la);
    vt_fmt_bytes(b2, 32, (double)lb);
    vt_fmt_bytes(b3, 32, (double)(lb - la));
    fprintf(o, "leaked at the view: A %s, B %s (%s%s)\n", b1, b2, lb >= la ? "+" : "", b3);
    vt_fmt_bytes(b1, 32, (double)pa);
    vt_fmt_bytes(b2, 32, (double)pb);
    vt_fmt_bytes(b3, 32, (double)(pb - pa));
    fprintf(o, "peak live (sum over devices): A %s, B %s (%s%s)\n", b1, b2, pb >= pa ? "+" : "", b3);
    vt_drow *r;
    size_t n = diff_rows(a, b, &r);
    fprintf(o, "\n%zu call site%s changed\n", n, n == 1 ? "" : "s");
    for (size_t i = 0; i < n && i < a->cfg.top; i++) {
        vt_drow *d = &r[i];
        vt_proc *p = d->an->procs[d->proc];
        const char *tag = d->alloc[0] == 0 ? "new in B" : d->alloc[1] == 0 ? "gone in B" : "changed";
        fprintf(o, "#%zu %s\n", i + 1, tag);
        vt_fmt_bytes(b1, 32, (double)d->leak[0]);
        vt_fmt_bytes(b2, 32, (double)d->leak[1]);
        vt_fmt_bytes(b3, 32, (double)(d->leak[1] - d->leak[0]));
        fprintf(o, "    leaked  A %12s  B %12s  (%s%s)\n", b1, b2, d->leak[1] >= d->leak[0] ? "+" : "", b3);
        vt_fmt_bytes(b1, 32, (double)d->peak[0]);
        vt_fmt_bytes(b2, 32, (double)d->peak[1]);
        vt_fmt_bytes(b3, 32, (double)(d->peak[1] - d->peak[0]));
        fprintf(o, "    at peak A %12s  B %12s  (%s%s)\n", b1, b2, d->peak[1] >= d->peak[0] ? "+" : "", b3);
        vt_fmt_bytes(b1, 32, (double)d->alloc[0]);
        vt_fmt_bytes(b2, 32, (double)d->alloc[1]);
        vt_fmt_bytes(b3, 32, (double)(d->alloc[1] - d->alloc[0]));
        fprintf(o, "    alloc'd A %12s  B %12s  (%s%s)\n", b1, b2, d->alloc[1] >= d->alloc[0] ? "+" : "", b3);
        if (d->grown[0] || d->grown[1]) {
            vt_fmt_bytes(b1, 32, (double)d->grown[0]);
            vt_fmt_bytes(b2, 32, (double)d->grown[1]);
            fprintf(o, "    growing A %12s  B %12s\n", b1, b2);
        }
        if (d->stacks[0] > 1 || d->stacks[1] > 1)
            fprintf(o, "    stacks  A %12u  B %12u  (merged by their lines; the report lists each)\n",
                    d->stacks[0], d->stacks[1]);
        /* as the report prints a site: the user's frame first, framework
         * frames folded (--native: every frame) */
        rep_text_unit_stack(d->an, p, &p->units[d->unit], o, "    ");
    }
    if (n > a->cfg.top) {
        int64_t ol[2];
        rest(r, a->cfg.top, n, ol);
        vt_fmt_bytes(b1, 32, (double)ol[0]);
        vt_fmt_bytes(b2, 32, (double)ol[1]);
        vt_fmt_bytes(b3, 32, (double)(ol[1] - ol[0]));
        fprintf(o, "... %zu more call site%s (leaked A %s, B %s: %s%s)\n", n - a->cfg.top, n - a->cfg.top == 1 ? "" : "s",
                b1, b2, ol[1] >= ol[0] ? "+" : "", b3);
    }
    free(r);
    return ferror(o) ? VT_ERR_IO : 0;
}

/* escaped once more as a whole, as the report (vt_report_text) */
int vt_diff_text(vt_analysis *a, vt_analysis *b, FILE *o)
{
    if (!a->finished || !b->finished)
        return VT_ERR_INVALID;
    return rep_text_escaped(a, b, NULL, diff_text, o);
}

int vt_diff_json(vt_analysis *a, vt_analysis *b, FILE *o)
{
    if (!a->finished || !b->finished)
        return VT_ERR_INVALID;
    int64_t la, pa, lb, pb;
    totals(a, &la, &pa);
    totals(b, &lb, &pb);
    fprintf(o, "{\"schema\":\"vramtrace.diff/1\",\"a\":{\"processes\":%zu,\"leaked_bytes\":%" PRId64 ",\"peak_bytes\":%" PRId64
               "},\"b\":{\"processes\":%zu,\"leaked_bytes\":%" PRId64 ",\"peak_bytes\":%" PRId64 "},\"sites\":[",
            a->nprocs, la, pa, b->nprocs, lb, pb);
    vt_drow *r;
    size_t n = diff_rows(a, b, &r);
    for (size_t i = 0; i < n && i < a->cfg.top; i++) {
        vt_drow *d = &r[i];
        vt_proc *p = d->an->procs[d->proc];
        fprintf(o, "%s{\"key\":", i ? ",\n" : "");
        vt_json_str(o, d->key);
        fprintf(o, ",\"status\":\"%s\"", d->alloc[0] == 0 ? "new" : d->alloc[1] == 0 ? "gone" : "changed");
        fprintf(o, ",\"leaked_bytes\":[%" PRId64 ",%" PRId64 "],\"leaked_blocks\":[%" PRIu64 ",%" PRIu64 "]", d->leak[0],
                d->leak[1], d->blocks[0], d->blocks[1]);
        fprintf(o, ",\"peak_bytes\":[%" PRId64 ",%" PRId64 "],\"alloc_bytes\":[%" PRId64 ",%" PRId64 "],\"grown_bytes\":[%" PRId64
                   ",%" PRId64 "],\"stacks\":[%u,%u]",
                d->peak[0], d->peak[1], d->alloc[0], d->alloc[1], d->grown[0], d->grown[1], d->stacks[0], d->stacks[1]);
        vt_xframe fr[VT_MAX_STACK];
        int user = -1;
        uint32_t nf = vt_site_frames(d->an, p, p->units[d->unit].stack, fr, VT_MAX_STACK, &user);
        char line[1200];
        fprintf(o, ",\"user_frame\":");
        if (user >= 0 && !fr[user].internal) {
            vt_xframe_format(&fr[user], line, sizeof(line));
            vt_json_str(o, line);
        } else
            fprintf(o, "null");
        fprintf(o, ",\"stack\":[");
        for (uint32_t k = 0; k < nf; k++) {
            vt_xframe_format(&fr[k], line, sizeof(line));
            if (k)
                fputc(',', o);
            vt_json_str(o, line);
        }
        fprintf(o, "]}");
    }
    int64_t ol[2] = {0, 0};
    size_t shown = n < a->cfg.top ? n : a->cfg.top;
    rest(r, shown, n, ol);
    fprintf(o, "],\"sites_total\":%zu,\"others\":{\"sites\":%zu,\"leaked_bytes\":[%" PRId64 ",%" PRId64 "]}}\n", n,
            n - shown, ol[0], ol[1]);
    free(r);
    return ferror(o) ? VT_ERR_IO : 0;
}
