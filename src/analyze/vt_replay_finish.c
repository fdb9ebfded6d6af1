/* vt_replay_finish.c - the end of a process: growth per unit (Kendall
 * tau, slope), leaks and growth ranked, steps detected. */
#include "vt_replay_int.h"
/* ------------------------------------------------------------ finishing */

/* Kendall tau-b of y against its index (x has no ties). */
static double kendall_tau_b(const uint64_t *y, uint32_t n)
{
    int64_t s = 0;
    uint64_t n0 = (uint64_t)n * (n - 1) / 2, ties = 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = i + 1; j < n; j++) {
            if (y[j] > y[i])
                s++;
            else if (y[j] < y[i])
                s--;
            else
                ties++;
        }
    if (n0 == 0 || ties >= n0)
        return 0.0;
    return (double)s / sqrt((double)n0 * (double)(n0 - ties));
}

/* The samples of a site over the growth window [w0, w1): the window is cut
 * into at most VT_GROWTH_BUCKETS groups, of whole steps when steps are
 * known (the kept occurrences of the step marker), else of equal time
 * from the site's first allocation; a group's sample is the lowest floor
 * of the site's spans that meet it.  The spans: each closed bucket to the
 * next one's start; the last, open bucket to the site's last allocation
 * (its floor then, g_last_floor); then the exact levels after that
 * allocation, from the log of the frees that followed it (vt_replay_int.h
 * growth_log).  So what came after the window (teardown, or a release
 * after the loop) changes no sample, a stretch without allocations is
 * sampled at its level, and a per-step temporary is at its floor in
 * every sample.  Returns the number of samples; ty: a sample's start,
 * sy: its step (or group) number. */
static uint32_t growth_samples(const vt_proc *p, const vt_unit *u, uint64_t w0, uint64_t w1, uint64_t *y,
                               uint64_t *ty, double *sy, uint64_t *yend)
{
    *yend = 0;
    int have_end = 0;
    const uint64_t *f = u->floor, *ts = u->floor + VT_GROWTH_BUCKETS;
    const vt_occ *o = p->step_occ;
    uint64_t T[VT_GROWTH_BUCKETS + 1];
    uint32_t G;
    if (o) {
        G = o->n < VT_GROWTH_BUCKETS ? o->n : VT_GROWTH_BUCKETS;
        for (uint32_t g = 0; g < G; g++) {
            T[g] = o->t[(uint64_t)g * o->n / G];
            sy[g] = (double)((uint64_t)g * o->n / G) * o->stride;
        }
    } else {
        if (ts[0] > w0)
            w0 = ts[0];
        G = VT_GROWTH_BUCKETS;
        for (uint32_t g = 0; g < G; g++) {
            T[g] = w0 + (uint64_t)((double)(w1 - w0) * g / G);
            sy[g] = g;
        }
    }
    if (!G || w1 <= T[0])
        return 0;
    T[G] = w1;
    uint8_t have[VT_GROWTH_BUCKETS] = {0};
    /* the spans: gcur closed buckets, the open one, the levels after it */
    const uint64_t *lg = u->floor + 2 * VT_GROWTH_BUCKETS;
    for (uint32_t b = 0; b <= u->gcur + 1 + u->g_nlog; b++) {
        uint64_t s0, s1, fl;
        if (b < u->gcur) {
            s0 = ts[b], s1 = ts[b + 1], fl = f[b];
        } else if (b == u->gcur) {
            s0 = ts[b], s1 = u->g_last_t, fl = u->g_last_floor;
        } else {
            uint32_t i = b - u->gcur - 1; /* 0: after the allocation, i: after the log's i-th free */
            s0 = i ? lg[2 * (i - 1)] : u->g_last_t;
            s1 = i < u->g_nlog ? lg[2 * i] : UINT64_MAX;
            fl = i ? lg[2 * (i - 1) + 1] : u->g_last_live;
            if (s1 < s0)
                s1 = s0;
        }
        if (s0 < w1 && s1 >= w1 && (!have_end || fl < *yend)) { /* the level where the window ends */
            *yend = fl;
            have_end = 1;
        }
        if (s1 <= T[0] || s0 >= T[G])
            continue;
        /* the groups [g0, g1] it meets: the last T[g] <= s0 (or 0), up to
         * the last T[g] < s1 */
        uint32_t g0 = 0, g1;
        while (g0 + 1 < G && T[g0 + 1] <= s0)
            g0++;
        for (g1 = g0; g1 + 1 < G && T[g1 + 1] < s1; g1++)
            ;
        for (uint32_t g = g0; g <= g1; g++)
            if (!have[g] || fl < y[g]) {
                y[g] = fl;
                have[g] = 1;
            }
    }
    uint32_t m = 0;
    for (uint32_t g = 0; g < G; g++)
        if (have[g]) {
            y[m] = y[g];
            ty[m] = T[g];
            sy[m] = sy[g];
            m++;
        }
    return m;
}

/* the test on samples y (times ty, step counts sy); fills the unit's
 * results, returns the flag */
static int growth_test(const vt_proc *p, vt_unit *u, const uint64_t *y, const uint64_t *ty, const double *sy,
                       uint32_t m, uint64_t yend)
{
    if (m < (p->step_occ ? VT_GROWTH_MIN_STEPS : VT_GROWTH_MIN_SAMPLES))
        return 0;
    /* without steps a burst of allocations kept (set-up, or just before a
     * crash) cannot be told from a loop: the rise must last */
    if (!p->step_occ && ty[m - 1] - ty[0] < VT_GROWTH_MIN_NS)
        return 0;
    uint32_t h = m / 2, n = m - h;
    const uint64_t *yl = y + h;
    uint64_t lo = y[0];
    for (uint32_t i = 1; i < m; i++)
        if (y[i] < lo)
            lo = y[i];
    double tau = kendall_tau_b(yl, n);
    /* least squares slope over the late half, bytes per second */
    double mx = 0, my = 0, sxy = 0, sxx = 0;
    for (uint32_t i = 0; i < n; i++) {
        mx += (double)(ty[h + i] - ty[h]) / 1e9;
        my += (double)yl[i];
    }
    mx /= n;
    my /= n;
    for (uint32_t i = 0; i < n; i++) {
        double x = (double)(ty[h + i] - ty[h]) / 1e9 - mx;
        sxy += x * ((double)yl[i] - my);
        sxx += x * x;
    }
    double slope = sxx > 0 ? sxy / sxx : 0;
    uint32_t rises = 0;
    for (uint32_t i = 1; i < n; i++)
        if (yl[i] > yl[i - 1])
            rises++;
    /* "keeps rising": the floor rises in at least 3 of the 4 quarters of
     * the late half, the last one included (a cache that filled early in
     * it and then held does not) */
    uint32_t qrise = 0;
    int last_q = 0;
    for (uint32_t q = 0; q < 4; q++) {
        uint32_t qa = n * q / 4, qb = n * (q + 1) / 4;
        if (qb <= qa)
            continue;
        uint64_t before = qa ? yl[qa - 1] : (h ? y[h - 1] : yl[0]);
        int r = yl[qb - 1] > before;
        qrise += (uint32_t)r;
        if (q == 3)
            last_q = r;
    }
    /* grown: from the lowest sample to the level where the window ends (the
     * last step's part too), or to the last sample if that is higher */
    uint64_t top = yend > y[m - 1] ? yend : y[m - 1];
    uint64_t grown = top > lo ? top - lo : 0;
    int flag = tau >= 0.5 && slope > 0 && qrise >= 3 && last_q && rises >= 2 && grown > 0;
    if (flag || !u->growth_samples) {
        u->grown = grown;
        u->growth_rate = slope;
        u->growth_conf = tau > 0 ? tau : 0;
        u->growth_rises = rises;
        u->growth_samples = m;
        u->growth_t0 = ty[0];
        u->growth_per_step = -1;
        if (p->step_occ && sy[m - 1] > sy[h]) /* over the late half, per step */
            u->growth_per_step = ((double)y[m - 1] - (double)y[h]) / (sy[m - 1] - sy[h]);
    }
    return flag;
}

/* Growth of one site over the process's growth window (see
 * docs/REPORT.md "Growth detection"). */
static void unit_growth(vt_proc *p, vt_unit *u)
{
    u->growth_flag = 0;
    u->growth_samples = 0;
    u->grown = 0;
    u->growth_rate = 0;
    u->growth_conf = 0;
    u->growth_rises = 0;
    u->growth_per_step = -1;
    if (!u->floor || u->allocs < 2)
        return;
    uint64_t y[VT_GROWTH_BUCKETS], ty[VT_GROWTH_BUCKETS];
    double sy[VT_GROWTH_BUCKETS];
    uint64_t yend;
    uint32_t m = growth_samples(p, u, p->grow_t0, p->grow_t1, y, ty, sy, &yend);
    if (p->step_occ) {
        u->growth_flag = growth_test(p, u, y, ty, sy, m, yend);
        return;
    }
    /* no steps: the site's own buckets, then coarser (neighbours merged,
     * the lower floor kept) while at least VT_GROWTH_MIN_SAMPLES remain,
     * so a site that allocates several blocks per iteration and keeps one
     * is seen at the resolution where its floor is the iteration's */
    for (;;) {
        if (growth_test(p, u, y, ty, sy, m, yend)) {
            u->growth_flag = 1;
            return;
        }
        if (m / 2 < VT_GROWTH_MIN_SAMPLES)
            return;
        for (uint32_t i = 0; i < m / 2; i++) {
            y[i] = y[2 * i] < y[2 * i + 1] ? y[2 * i] : y[2 * i + 1];
            ty[i] = ty[2 * i];
            sy[i] = sy[2 * i];
        }
        m /= 2;
    }
}

static int cmp_u64_desc(uint64_t a, uint64_t b)
{
    return a < b ? 1 : a > b ? -1 : 0;
}

static vt_proc *g_sort_proc; /* qsort has no context argument in C11 */

static int leak_cmp(const void *x, const void *y)
{
    const vt_unit *a = &g_sort_proc->units[*(const uint32_t *)x];
    const vt_unit *b = &g_sort_proc->units[*(const uint32_t *)y];
    /* what is never freed first, then what the view holds */
    int64_t ka = a->never_bytes < a->at_bytes ? a->never_bytes : a->at_bytes;
    int64_t kb = b->never_bytes < b->at_bytes ? b->never_bytes : b->at_bytes;
    int c = cmp_u64_desc((uint64_t)ka, (uint64_t)kb);
    if (c)
        return c;
    c = cmp_u64_desc((uint64_t)a->at_bytes, (uint64_t)b->at_bytes);
    if (c)
        return c;
    if (a->at_count != b->at_count)
        return a->at_count > b->at_count ? -1 : 1;
    return *(const uint32_t *)x < *(const uint32_t *)y ? -1 : 1;
}

static int growth_cmp(const void *x, const void *y)
{
    const vt_unit *a = &g_sort_proc->units[*(const uint32_t *)x];
    const vt_unit *b = &g_sort_proc->units[*(const uint32_t *)y];
    int c = cmp_u64_desc(a->grown, b->grown);
    if (c)
        return c;
    return *(const uint32_t *)x < *(const uint32_t *)y ? -1 : 1;
}

/* the kept occurrence of o that t falls after (t >= o->t[0]) */
static uint32_t occ_index(const vt_occ *o, uint64_t t) { return occ_upper(o, t) - 1; }

/* Work inside the occurrences of a step candidate: how many of the
 * intervals between its kept occurrences (the last one to `end`) hold the
 * start of some site's growth bucket or a kept kernel occurrence.  A
 * loop's step allocates (its temporaries, its activations) or at least
 * runs kernels (the caching allocator serves it from its pool); a
 * compiler pass or a range around set-up repeats with neither. */
static uint32_t occ_active(const vt_proc *p, const vt_occ *o, uint64_t end, uint32_t *intervals)
{
    *intervals = o->n;
    if (!o->n)
        return 0;
    uint8_t mark[VT_OCC_MAX] = {0};
    for (size_t k = 0; k < p->nunits; k++) {
        const vt_unit *u = &p->units[k];
        if (!u->floor)
            continue;
        const uint64_t *ts = u->floor + VT_GROWTH_BUCKETS;
        for (uint32_t b = 0; b <= u->gcur; b++)
            if (ts[b] >= o->t[0] && ts[b] <= end)
                mark[occ_index(o, ts[b])] = 1;
    }
    for (size_t k = 0; k < p->nlstats; k++) {
        const vt_occ *ko = &p->lstats[k].occ;
        for (uint32_t i = 0; ko->t && i < ko->n; i++)
            if (ko->t[i] >= o->t[0] && ko->t[i] <= end)
                mark[occ_index(o, ko->t[i])] = 1;
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < o->n; i++)
        n += mark[i];
    return n;
}

/* the end of the last occurrence of an NVTX step: its pop when seen, else
 * the last start plus the mean period */
static uint64_t nvtx_end(const vt_nvtx_stat *s)
{
    if (s->last_end > s->last_t)
        return s->last_end;
    return s->last_t + (s->last_t - s->first_t) / (s->count - 1);
}

/* A step candidate the loop's work repeats with: at least 3 of its
 * intervals, and a tenth of them, allocate or run kernels. */
static int nvtx_qualifies(const vt_proc *p, const vt_nvtx_stat *s)
{
    if (s->count < 3 || s->last_t <= s->first_t || !s->msg[0] || !s->occ.t)
        return 0;
    uint32_t iv;
    uint32_t act = occ_active(p, &s->occ, nvtx_end(s), &iv);
    return act >= 3 && act * 10 >= iv;
}

static void set_steps(vt_proc *p, const vt_occ *occ, uint64_t count, uint64_t first_t, uint64_t last_t,
                      uint64_t end, const char *src)
{
    p->step_occ = occ && occ->t ? occ : NULL;
    p->steps = count;
    p->step_period_ns = (double)(last_t - first_t) / (double)(count - 1);
    p->step_source = xstrdup(src);
    p->grow_t0 = first_t;
    p->grow_t1 = end;
}

/* how regular a signature is: the share of its gaps that are its period */
static double lstat_regular(const vt_launch_stat *s, uint64_t gap)
{
    uint32_t c = 0;
    for (int k = 0; k < 4; k++)
        if (s->gap[k] == gap)
            c = s->gcnt[k];
    return s->count > 1 ? (double)c / (double)(s->count - 1) : 0;
}

/* Kernels: launch signatures recurring at a regular gap (the same gap for
 * most of their occurrences); the gap shared by most signatures is a
 * period of the loop.  A step that runs the same layer twice has
 * signatures at half its period: when some signatures (at least 2, and an
 * eighth as many) recur at a multiple of that gap, the smallest such
 * multiple is the step.  The steps are counted by the most regular of the
 * period's signatures (then the most frequent): a kernel the loop shares
 * with a warm-up or an evaluation after it has irregular gaps there.
 * Returns that signature's index + 1 and its gap, 0 when none. */
static size_t kernel_steps(const vt_proc *p, uint64_t *gap_out)
{
    uint64_t best_gap = 0;
    uint32_t best_members = 0;
    uint64_t *period = calloc(p->nlstats + 1, sizeof(uint64_t));
    if (!period)
        return 0;
    for (size_t i = 0; i < p->nlstats; i++) {
        const vt_launch_stat *s = &p->lstats[i];
        if (s->count < 3)
            continue;
        int top = 0;
        for (int k = 1; k < 4; k++)
            if (s->gcnt[k] > s->gcnt[top] || (s->gcnt[k] == s->gcnt[top] && s->gap[k] < s->gap[top]))
                top = k;
        if (s->gcnt[top] * 10 >= (s->count - 1) * 6) /* at least 60% of the gaps */
            period[i] = s->gap[top];
    }
    for (size_t i = 0; i < p->nlstats; i++) {
        if (!period[i])
            continue;
        uint32_t members = 0;
        for (size_t j = 0; j < p->nlstats; j++)
            members += period[j] == period[i];
        if (members > best_members || (members == best_members && period[i] > best_gap)) {
            best_members = members;
            best_gap = period[i];
        }
    }
    if (best_members) {
        uint64_t mult = 0;
        for (size_t i = 0; i < p->nlstats; i++) {
            uint64_t q = period[i];
            if (!q || q <= best_gap || q % best_gap || (mult && q >= mult))
                continue;
            uint32_t members = 0;
            for (size_t j = 0; j < p->nlstats; j++)
                members += period[j] == q;
            if (members >= 2 && members * 8 >= best_members)
                mult = q;
        }
        if (mult)
            best_gap = mult;
    }
    size_t anchor = 0;
    int found = 0;
    double best_reg = 0;
    for (size_t j = 0; j < p->nlstats; j++) {
        if (!best_members || period[j] != best_gap)
            continue;
        const vt_launch_stat *o = &p->lstats[j];
        double reg = lstat_regular(o, best_gap);
        const vt_launch_stat *b = &p->lstats[anchor];
        if (!found || reg > best_reg || (reg == best_reg && (o->count > b->count ||
                                                            (o->count == b->count && o->first_t < b->first_t)))) {
            anchor = j;
            best_reg = reg;
            found = 1;
        }
    }
    free(period);
    if (!found || p->lstats[anchor].count < 3)
        return 0;
    *gap_out = best_gap;
    return anchor + 1;
}

/* Steps: a named NVTX range (--steps), else a repeating NVTX range the
 * allocations repeat with (step-like names first, then the outermost,
 * then the most frequent), else the kernel period.  The kernel detector
 * runs in any case (kernel_steps: its count, to check it against NVTX).
 * Sets the growth window [grow_t0, grow_t1): the steps, or without them
 * from the start to the last allocation (at most the view). */
static void detect_steps(const vt_analysis *a, vt_proc *p)
{
    free(p->step_source);
    p->step_source = NULL;
    p->steps = 0;
    p->kernel_steps = 0;
    p->step_period_ns = 0;
    p->step_occ = NULL;
    p->steps_missing = 0;
    p->grow_t0 = 0;
    p->grow_t1 = p->view_t;
    uint64_t gap = 0;
    size_t k = kernel_steps(p, &gap);
    if (k)
        p->kernel_steps = p->lstats[k - 1].count;
    int best = -1, best_named = 0;
    unsigned tried = 0; /* candidates checked against the allocations (bounded: a hostile trace has 4096) */
    for (size_t i = 0; i < p->nnvtx; i++) {
        const vt_nvtx_stat *s = &p->nvtx[i];
        if (a->cfg.steps_name) {
            if (!strcmp(s->msg, a->cfg.steps_name) && s->count >= 2 && s->last_t > s->first_t) {
                best = (int)i;
                break;
            }
            continue;
        }
        int named = strcasestr(s->msg, "step") || strcasestr(s->msg, "iter") || strcasestr(s->msg, "batch");
        if (best >= 0) {
            const vt_nvtx_stat *b = &p->nvtx[best];
            int better;
            if (named != best_named)
                better = named;
            else if (s->min_depth != b->min_depth)
                better = s->min_depth < b->min_depth;
            else if (s->count != b->count)
                better = s->count > b->count;
            else
                better = strcmp(s->msg, b->msg) < 0;
            if (!better)
                continue;
        }
        if (s->count < 3 || tried >= 64)
            continue;
        tried++;
        if (!nvtx_qualifies(p, s))
            continue;
        best = (int)i;
        best_named = named;
    }
    if (a->cfg.steps_name && best < 0)
        p->steps_missing = 1;
    if (best >= 0) {
        const vt_nvtx_stat *s = &p->nvtx[best];
        size_t len = strlen(s->msg) + 16;
        char *src = malloc(len);
        if (src)
            snprintf(src, len, "nvtx:%s", s->msg);
        set_steps(p, &s->occ, s->count, s->first_t, s->last_t, nvtx_end(s), src ? src : "nvtx:");
        free(src);
    } else if (k && !a->cfg.steps_name) {
        const vt_launch_stat *s = &p->lstats[k - 1];
        char buf[64];
        snprintf(buf, sizeof(buf), "kernels:%llu", (unsigned long long)gap);
        /* the window ends where the last step's anchor kernel started: where
         * the step itself ends is not known (a release right after the loop
         * must not fall inside it) */
        set_steps(p, &s->occ, s->count, s->first_t, s->last_t, s->last_t, buf);
    }
    if (!p->steps) {
        /* without steps: up to the last allocation of the process, where the
         * work that allocates ended (without kernels the view is the end of
         * the trace: teardown would be inside the window) */
        uint64_t last = 0;
        for (size_t i = 0; i < p->nunits; i++)
            if (p->units[i].allocs && p->units[i].g_last_t > last)
                last = p->units[i].g_last_t;
        if (last)
            p->grow_t1 = last + 1;
    }
    if (p->grow_t1 > p->view_t)
        p->grow_t1 = p->view_t;
    /* the steps the growth window holds: a view (--at) before the last
     * steps sees only the steps begun before it */
    p->steps_view = p->steps;
    if (p->steps && p->grow_t0 >= p->view_t)
        p->steps_view = 0;
    else if (p->steps && p->step_occ) {
        double n = occ_count(p->step_occ, p->view_t);
        if (n < (double)p->steps)
            p->steps_view = (uint64_t)n;
    }
}

/* A block still live at the end of the trace.  Allocated at or before the
 * view, it is live there (its part of at_bytes, unless the view is the end,
 * where every live block counts) and never freed.  Allocated after the view
 * and never released, it is a leak all the same: counted with the view's
 * (at_bytes) so every section lists it, and said apart (late_bytes). */
static void never_freed(vt_proc *p, vt_unit *u, uint64_t size, uint64_t t, int at_live)
{
    u->never_bytes += (int64_t)size;
    u->never_count++;
    if (t > p->view_t) {
        u->late_bytes += (int64_t)size;
        u->late_count++;
    }
    if (!at_live) {
        u->at_bytes += (int64_t)size;
        u->at_count++;
    }
}

/* Live blocks at the end whose ranges overlap in part: an allocation inside
 * a live block, not at its address (an allocation at the same address is
 * counted as it comes: overlap_allocs).  A tensor lies inside its segment
 * and a VMM handle is no address: those are left out. */
typedef struct {
    uint64_t addr, end;
} ov_range;
typedef struct {
    const vt_proc *p;
    ov_range *r;
    size_t n, cap;
    int nomem;
} ov_ctx;

static int ov_add(void *ctx, uint64_t addr, uint64_t size, uint64_t t, uint32_t unit)
{
    ov_ctx *c = ctx;
    (void)t;
    const vt_unit *u = &c->p->units[unit];
    if (u->kind == VT_MEM_TENSOR || u->api == VT_API_VMM || u->segment || !size)
        return 0;
    if (c->n == c->cap) {
        size_t ncap = c->cap ? 2 * c->cap : 1024;
        ov_range *nr = realloc(c->r, ncap * sizeof(*nr));
        if (!nr) {
            c->nomem = 1;
            return 1;
        }
        c->r = nr;
        c->cap = ncap;
    }
    c->r[c->n].addr = addr;
    c->r[c->n].end = addr + size < addr ? UINT64_MAX : addr + size;
    c->n++;
    return 0;
}

static int ov_cmp(const void *x, const void *y)
{
    const ov_range *a = x, *b = y;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static void partial_overlaps(vt_proc *p)
{
    ov_ctx c = {p, NULL, 0, 0, 0};
    vt_proc_live_blocks(p, ov_add, &c);
    if (!c.nomem && c.n > 1) {
        qsort(c.r, c.n, sizeof(*c.r), ov_cmp);
        uint64_t end = c.r[0].end;
        for (size_t i = 1; i < c.n; i++) {
            if (c.r[i].addr < end)
                p->partial_overlaps++;
            if (c.r[i].end > end)
                end = c.r[i].end;
        }
    }
    free(c.r);
}

int vt_proc_finish(vt_analysis *a, vt_proc *p)
{
    partial_overlaps(p);
    int trc = vt_tests_finish(p); /* a test the process never ended */
    if (trc)
        return trc;
    /* the view time */
    switch (p->view_mode) {
    case VT_AT_TIME:
        p->view_t = p->t0 + a->cfg.at_ns;
        break;
    case VT_AT_END:
        p->view_t = p->t_last;
        break;
    default:
        if (p->cand_set) {
            p->view_t = p->cand;
        } else {
            p->view_t = p->t_last;
            p->view_mode = VT_AT_END;
        }
        break;
    }
    tail_end(p, p->view_t, p->view_mode == VT_AT_END);
    late_free_end(p, p->view_t);
    /* at = live at the end: the view is the end, or the tail overflowed
     * (every event was counted from then on, see view_apply_slow) */
    const int at_live = p->view_mode == VT_AT_END || p->tail_overflow;
    /* blocks live at the end: allocated at or before T, they are live at
     * the view (their part of it, see view_pair) and never freed after it */
    for (int w = 0; w < 2; w++) {
        const vt_blockmap *tb = w ? &p->old : &p->blocks;
        for (size_t i = 0; i < tb->cap; i++) {
            const vt_block *b = &tb->slots[i];
            if (b->addr && b->unit != VT_DEAD)
                never_freed(p, &p->units[b->unit], b->size, b->t, at_live);
        }
    }
    for (size_t i = 0; i < p->nvmms; i++) {
        const vt_vmm *v = &p->vmms[i];
        const uint64_t *live = vt_map_get(&p->vmm_handles, v->handle + 1);
        if (live && *live == i + 1)
            never_freed(p, &p->units[v->unit], v->size, v->t, at_live);
    }
    p->leak_bytes = p->leak_blocks = p->static_bytes = p->static_blocks = 0;
    p->reserved_grown = 0;
    for (uint32_t d = 0; d < VT_MAX_DEVICES; d++)
        p->dev[d].reserved_at = 0;
    if (p->tensor_units) /* the series ends at the end */
        for (uint32_t d = 0; d < p->ndev_seen && d < VT_MAX_DEVICES; d++)
            if (p->dev[d].series)
                alloc_series_point(p, &p->dev[d], p->t_last);
    p->teardown_bytes = p->teardown_blocks = p->held_bytes = 0;
    for (size_t k = 0; k < p->nunits; k++) {
        vt_unit *u = &p->units[k];
        if (at_live) {
            u->at_bytes = u->live_bytes;
            u->at_count = vt_unit_live_count(u);
        }
        if (u->at_bytes < 0)
            u->at_bytes = 0;
        if (u->at_count < 0)
            u->at_count = 0;
        u->kept_bytes = u->kept_count = 0;
        pk_sync(p, u);
        if (u->allocs)
            u->dev->used = 1; /* (an allocation's one store less) */
        if (u->at_bytes > 0) {
            /* the device at the view: without what was allocated after it */
            p->dev[u->device].at_kind[u->kind] += u->at_bytes - u->late_bytes;
            if (u->segment)
                p->dev[u->device].reserved_at += u->at_bytes - u->late_bytes;
            if (u->segment && p->tensor_units)
                continue; /* reserved, not a leak: the tensors inside it are counted */
            if (u->kind == VT_MEM_DEVICE_STATIC) {
                /* module globals live as long as their module: by design,
                 * shown apart and not counted as leaks */
                p->static_bytes += (uint64_t)u->at_bytes;
                p->static_blocks += (uint64_t)u->at_count;
                continue;
            }
            /* a leak is live at the view and never freed; what the
             * process freed after the view (its teardown) is apart */
            int64_t kept = at_live ? u->at_bytes : u->never_bytes < u->at_bytes ? u->never_bytes : u->at_bytes;
            int64_t kept_n = at_live ? u->at_count : u->never_count < u->at_count ? u->never_count : u->at_count;
            u->kept_bytes = kept;
            u->kept_count = kept_n;
            p->leak_bytes += (uint64_t)kept;
            p->leak_blocks += (uint64_t)kept_n;
            p->teardown_bytes += (uint64_t)(u->at_bytes - kept);
            p->teardown_blocks += (uint64_t)(u->at_count - kept_n);
        }
    }
    /* leak order */
    free(p->leak_order);
    p->leak_order = malloc((p->nunits + 1) * sizeof(uint32_t));
    free(p->growth_order);
    p->growth_order = malloc((p->nunits + 1) * sizeof(uint32_t));
    if (!p->leak_order || !p->growth_order)
        return VT_ERR_NOMEM;
    p->nleak = 0;
    for (size_t k = 0; k < p->nunits; k++)
        if (p->units[k].at_bytes > 0 && p->units[k].kind != VT_MEM_DEVICE_STATIC &&
            !(p->units[k].segment && p->tensor_units))
            p->leak_order[p->nleak++] = (uint32_t)k;
    g_sort_proc = p;
    qsort(p->leak_order, p->nleak, sizeof(uint32_t), leak_cmp);
    /* growth over the steps (or [start, T) without them) */
    detect_steps(a, p);
    p->ngrowth = 0;
    p->grown_total = 0;
    for (size_t k = 0; k < p->nunits; k++) {
        vt_unit *u = &p->units[k];
        unit_growth(p, u);
        if (u->growth_flag && u->segment && p->tensor_units) {
            /* with tensor events a growing segment is the pool following
             * its tensors: reserved growth, said apart, not a call site */
            p->reserved_grown += u->grown;
            u->growth_flag = 0;
        }
        if (u->growth_flag) {
            p->growth_order[p->ngrowth++] = (uint32_t)k;
            p->grown_total += u->grown;
        }
    }
    qsort(p->growth_order, p->ngrowth, sizeof(uint32_t), growth_cmp);
    /* of the leaks, what was held since the start: allocated before the
     * first step and not growing (weights, optimizer state, workspaces) */
    const uint64_t first_step = p->step_occ && p->step_occ->n ? p->step_occ->t[0] : 0;
    for (size_t k = 0; k < p->nunits; k++)
        p->units[k].since_start = 0;
    for (size_t k = 0; first_step && k < p->nunits; k++) {
        vt_unit *u = &p->units[k];
        if (u->kind == VT_MEM_DEVICE_STATIC || u->growth_flag || !u->allocs || u->g_t0 > first_step ||
            (u->segment && p->tensor_units))
            continue;
        int64_t kept = u->never_bytes < u->at_bytes ? u->never_bytes : u->at_bytes;
        if (p->view_mode == VT_AT_END || p->tail_overflow)
            kept = u->at_bytes;
        if (kept > 0) {
            p->held_bytes += (uint64_t)kept;
            u->since_start = 1;
        }
    }
    /* the leak list: what grew, the rest of what came during the run,
     * what was held since the start, then what teardown freed (listed, not
     * counted); each part in its own order (VT_LEAK_PART) */
    for (size_t k = 0; k < p->nunits; k++)
        p->units[k].test_kept = 0;
    for (size_t i = 0; i < p->ntests; i++)
        for (uint32_t j = 0; p->tests[i].leaked >= (1u << 20) && j < p->tests[i].nsites && j < VT_TEST_SITES; j++)
            if (p->tests[i].site[j].unit < p->nunits)
                p->units[p->tests[i].site[j].unit].test_kept = 1;
    /* A site that grew, or that a test left live, is a leak whether or not
     * the interpreter's exit freed it (a Python program frees its globals'
     * tensors at exit): what teardown freed of it counts with the leaks,
     * so that the total, --fail-on-leak and the verdict agree. */
    p->leak_td_bytes = p->leak_td_blocks = 0;
    for (size_t k = 0; k < p->nunits; k++) {
        vt_unit *u = &p->units[k];
        if (!u->growth_flag && !u->test_kept)
            continue;
        if (u->kind == VT_MEM_DEVICE_STATIC || (u->segment && p->tensor_units) || u->at_bytes <= u->kept_bytes)
            continue;
        int64_t tb = u->at_bytes - u->kept_bytes, tn = u->at_count - u->kept_count;
        u->kept_bytes = u->at_bytes;
        u->kept_count = u->at_count;
        p->leak_bytes += (uint64_t)tb;
        p->leak_blocks += (uint64_t)tn;
        p->leak_td_bytes += (uint64_t)tb;
        p->leak_td_blocks += (uint64_t)tn;
        p->teardown_bytes -= (uint64_t)tb;
        p->teardown_blocks -= (uint64_t)tn;
    }
    size_t w = 0;
    uint32_t *tmp = malloc((p->nleak + 1) * sizeof(uint32_t));
    if (!tmp)
        return VT_ERR_NOMEM;
    for (int part = 0; part < 4; part++)
        for (size_t i = 0; i < p->nleak; i++) {
            const vt_unit *u = &p->units[p->leak_order[i]];
            if (VT_LEAK_PART(u) == part)
                tmp[w++] = p->leak_order[i];
        }
    memcpy(p->leak_order, tmp, p->nleak * sizeof(uint32_t));
    free(tmp);
    if (p->tail_overflow)
        add_note(p, VT_SEV_WARNING,
                 "vramtrace report: the end of real work came too late in the stream to keep every event after "
                 "it; the leak view may count frees made during teardown");
    return 0;
}

/* The live view (vt_live.c): steps and growth of a process still being
 * replayed, by the same detectors as at the finish, over what was read
 * so far (the growth window ends at the last event).  Touches only what
 * vt_proc_finish() recomputes (steps, the growth results of the units). */
void vt_proc_live_growth(vt_analysis *a, vt_proc *p)
{
    const uint64_t view = p->view_t;
    p->view_t = p->t_last + 1;
    detect_steps(a, p);
    for (size_t k = 0; k < p->nunits; k++) {
        vt_unit *u = &p->units[k];
        if (u->live_bytes <= 0 && !u->growth_flag) {
            u->growth_flag = 0;
            u->growth_per_step = -1;
            continue;
        }
        unit_growth(p, u);
        if (u->growth_flag && u->segment && p->tensor_units)
            u->growth_flag = 0; /* reserved growth: the pool following its tensors */
    }
    p->step_occ = NULL; /* points into tables that the next events may move */
    p->view_t = view;
}
