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

static void unit_growth(vt_proc *p, vt_unit *u)
{
    u->growth_flag = 0;
    if (!u->floor || p->view_t <= u->g_t0)
        return;
    /* the site's window: from its first allocation to the view time, the
     * buckets wholly before T (teardown is not growth) */
    uint32_t bT = growth_bucket(u, p->view_t);
    uint32_t n = bT;
    if (n < 8)
        return;
    uint64_t *f = u->floor;
    uint64_t live = u->live_bytes > 0 ? (uint64_t)u->live_bytes : 0;
    for (uint32_t i = u->gcur + 1; i < n; i++) /* up to frees that came after the buckets, what was live before them */
        f[i] = u->g_late && u->g_t0 + ((uint64_t)(i + 1) << u->g_shift) <= u->g_late_t ? u->g_late_live : live;
    if (u->gcur + 1 < n)
        u->gcur = n - 1;
    uint32_t h = n / 2, m = n - h;
    const uint64_t *y = f + h;
    uint64_t lo = f[0];
    for (uint32_t i = 1; i < n; i++)
        if (f[i] < lo)
            lo = f[i];
    /* grown: from the lowest floor to the live bytes at the view (the last
     * floor when the view falls inside a temporary's lifetime) */
    uint64_t endv = u->at_bytes > 0 ? (uint64_t)u->at_bytes : 0;
    if (endv > f[n - 1] + (f[n - 1] - lo))
        endv = f[n - 1];
    u->grown = (endv > f[n - 1] ? endv : f[n - 1]) - lo;
    double tau = kendall_tau_b(y, m);
    /* least squares slope over the late window, bytes per bucket */
    double mx = (m - 1) / 2.0, my = 0, sxy = 0, sxx = 0;
    for (uint32_t i = 0; i < m; i++)
        my += (double)y[i];
    my /= m;
    for (uint32_t i = 0; i < m; i++) {
        sxy += (i - mx) * ((double)y[i] - my);
        sxx += (i - mx) * (i - mx);
    }
    double slope = sxx > 0 ? sxy / sxx : 0;
    uint32_t rises = 0;
    for (uint32_t i = 1; i < m; i++)
        if (y[i] > y[i - 1])
            rises++;
    /* "keeps rising": the floor rises in at least 3 of the 4 quarters of
     * the late window, the last one included (a cache that filled early in
     * the window and then held does not) */
    uint32_t qrise = 0;
    int last_q = 0;
    for (uint32_t q = 0; q < 4; q++) {
        uint32_t a = m * q / 4, b = m * (q + 1) / 4;
        if (b <= a)
            continue;
        uint64_t before = a ? y[a - 1] : y[0];
        int r = y[b - 1] > before;
        qrise += (uint32_t)r;
        if (q == 3)
            last_q = r;
    }
    double width_s = (double)(1ULL << u->g_shift) / 1e9;
    u->growth_rate = slope / width_s;
    u->growth_conf = tau > 0 ? tau : 0;
    u->growth_rises = rises;
    u->growth_per_step = -1;
    /* the late window must be long enough to call it "keeps rising": 4
     * steps where steps are known, else 8 ms (a burst of allocations just
     * before a crash is not growth) */
    uint64_t ta = u->g_t0 + ((uint64_t)h << u->g_shift), tb = u->g_t0 + ((uint64_t)n << u->g_shift);
    int long_enough = tb - ta >= 8000000;
    if (p->step_occ) {
        /* steps that started inside the late window */
        double steps = occ_count(p->step_occ, tb) - occ_count(p->step_occ, ta);
        if (steps >= 1)
            u->growth_per_step = u->growth_rate * (double)(tb - ta) / 1e9 / steps;
        long_enough = steps >= 4;
    }
    u->growth_flag = tau >= 0.5 && slope > 0 && qrise >= 3 && last_q && rises >= 2 && u->grown > 0 && long_enough;
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

static void detect_steps(vt_proc *p)
{
    free(p->step_source);
    p->step_source = NULL;
    p->steps = 0;
    p->step_period_ns = 0;
    p->step_occ = NULL;
    /* NVTX: a repeating range, preferring step-like names, then the outermost */
    int best = -1, best_named = 0;
    for (size_t i = 0; i < p->nnvtx; i++) {
        const vt_nvtx_stat *s = &p->nvtx[i];
        if (s->count < 3 || s->last_t <= s->first_t)
            continue;
        int named = strcasestr(s->msg, "step") || strcasestr(s->msg, "iter") || strcasestr(s->msg, "batch");
        if (best < 0) {
            best = (int)i;
            best_named = named;
            continue;
        }
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
        if (better) {
            best = (int)i;
            best_named = named;
        }
    }
    if (best >= 0) {
        const vt_nvtx_stat *s = &p->nvtx[best];
        p->step_occ = s->occ.t ? &s->occ : NULL;
        p->steps = s->count;
        p->step_period_ns = (double)(s->last_t - s->first_t) / (double)(s->count - 1);
        size_t len = strlen(s->msg) + 16;
        p->step_source = malloc(len);
        if (p->step_source)
            snprintf(p->step_source, len, "nvtx:%s", s->msg);
        return;
    }
    /* Kernels: launch signatures recurring at a regular gap (the same gap
     * for most of their occurrences); the gap shared by most signatures is
     * the loop's period (one occurrence per step). */
    uint64_t best_gap = 0;
    uint32_t best_members = 0;
    uint64_t best_count = 0;
    size_t anchor = 0;
    uint64_t *period = calloc(p->nlstats + 1, sizeof(uint64_t));
    if (!period)
        return;
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
        uint64_t maxc = 0;
        size_t anc = i;
        for (size_t j = 0; j < p->nlstats; j++) {
            if (period[j] != period[i])
                continue;
            const vt_launch_stat *o = &p->lstats[j];
            members++;
            if (o->count > maxc || (o->count == maxc && o->first_t < p->lstats[anc].first_t)) {
                maxc = o->count;
                anc = j;
            }
        }
        if (members > best_members || (members == best_members && period[i] > best_gap)) {
            best_members = members;
            best_gap = period[i];
            best_count = maxc;
            anchor = anc;
        }
    }
    free(period);
    if (best_members && best_count >= 3) {
        const vt_launch_stat *s = &p->lstats[anchor];
        p->step_occ = s->occ.t ? &s->occ : NULL;
        p->steps = s->count;
        p->step_period_ns = (double)(s->last_t - s->first_t) / (double)(s->count - 1);
        char buf[64];
        snprintf(buf, sizeof(buf), "kernels:%llu", (unsigned long long)best_gap);
        p->step_source = xstrdup(buf);
    }
}

int vt_proc_finish(vt_analysis *a, vt_proc *p)
{
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
    /* at = live at the end: the view is the end, or the tail overflowed
     * (every event was counted from then on, see view_apply_slow) */
    const int at_live = p->view_mode == VT_AT_END || p->tail_overflow;
    /* blocks live at the end: allocated at or before T, they are live at
     * the view (their part of it, see view_pair) and never freed after it */
    for (int w = 0; w < 2; w++) {
        const vt_blockmap *tb = w ? &p->old : &p->blocks;
        for (size_t i = 0; i < tb->cap; i++) {
            const vt_block *b = &tb->slots[i];
            if (b->addr && b->unit != VT_DEAD && b->t <= p->view_t) {
                vt_unit *u = &p->units[b->unit];
                u->never_bytes += (int64_t)b->size;
                u->never_count++;
                if (!at_live) {
                    u->at_bytes += (int64_t)b->size;
                    u->at_count++;
                }
            }
        }
    }
    for (size_t i = 0; i < p->nvmms; i++) {
        const vt_vmm *v = &p->vmms[i];
        const uint64_t *live = vt_map_get(&p->vmm_handles, v->handle + 1);
        if (live && *live == i + 1 && v->t <= p->view_t) {
            vt_unit *u = &p->units[v->unit];
            u->never_bytes += (int64_t)v->size;
            u->never_count++;
            if (!at_live) {
                u->at_bytes += (int64_t)v->size;
                u->at_count++;
            }
        }
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
        pk_sync(p, u);
        if (u->allocs)
            u->dev->used = 1; /* (an allocation's one store less) */
        if (u->at_bytes > 0) {
            p->dev[u->device].at_kind[u->kind] += u->at_bytes;
            if (u->segment)
                p->dev[u->device].reserved_at += u->at_bytes;
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
    /* growth over [start, T): buckets wholly before T */
    detect_steps(p);
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
    /* the leak list: what came during the run first, then what was held
     * since the start, then what teardown freed (listed, not counted);
     * each part in its own order */
    size_t w = 0;
    uint32_t *tmp = malloc((p->nleak + 1) * sizeof(uint32_t));
    if (!tmp)
        return VT_ERR_NOMEM;
    for (int part = 0; part < 3; part++)
        for (size_t i = 0; i < p->nleak; i++) {
            const vt_unit *u = &p->units[p->leak_order[i]];
            if ((u->never_bytes <= 0 ? 2 : u->since_start) == part)
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
