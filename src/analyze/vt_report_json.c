/* vt_report_json.c - `vramtrace report --json`: the same sections in the
 * stable schema "vramtrace.report/1" (docs/REPORT.md). */
#include "vt_report_int.h"
/* ------------------------------------------------------------ JSON */

static void json_frame(FILE *o, const vt_xframe *f, int user)
{
    fprintf(o, "{\"kind\":\"%s\"", f->python ? "python" : "native");
    fprintf(o, ",\"function\":");
    vt_json_str(o, f->function);
    fprintf(o, ",\"file\":");
    vt_json_str(o, f->file);
    fprintf(o, ",\"line\":%u", f->line);
    if (!f->python) {
        fprintf(o, ",\"module\":");
        vt_json_str(o, f->module);
        fprintf(o, ",\"offset\":\"0x%" PRIx64 "\",\"inlined\":%s,\"symbolized\":\"%s\"", f->offset,
                f->inlined ? "true" : "false", vt_sym_status_name(f->status));
    }
    fprintf(o, ",\"internal\":%s,\"user\":%s}", f->internal ? "true" : "false", user ? "true" : "false");
}

static void json_stack(vt_analysis *a, const vt_proc *p, uint32_t stack, FILE *o)
{
    vt_xframe fr[VT_MAX_STACK];
    int user = -1;
    uint32_t n = vt_site_frames(a, p, stack, fr, VT_MAX_STACK, &user);
    char op[96], node[96];
    vt_site_operator(fr, n, op, sizeof(op), node, sizeof(node));
    fputs("\"operator\":", o);
    vt_json_str(o, op[0] ? op : NULL);
    fputs(",\"autograd_node\":", o);
    vt_json_str(o, node[0] ? node : NULL);
    /* a stack with no frame of the user's (a framework thread) has none:
     * its first frame is only what the text headline falls back to */
    if (user >= 0 && fr[user].internal)
        user = -1;
    fprintf(o, ",\"user_frame\":");
    if (user >= 0)
        json_frame(o, &fr[user], 1);
    else
        fprintf(o, "null");
    fprintf(o, ",\"stack\":[");
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            fputc(',', o);
        json_frame(o, &fr[i], (int)i == user);
    }
    fprintf(o, "]");
}

static void json_site(vt_analysis *a, vt_proc *p, uint32_t unit, int64_t bytes, int64_t count, FILE *o);

/* "verdict": the answer first (docs/REPORT.md, "The verdict") */
static void json_verdict(vt_analysis *a, vt_proc *p, FILE *o)
{
    rep_verdict v;
    rep_verdict_of(a, p, &v);
    fprintf(o, ",\"verdict\":{\"kind\":\"%s\",\"allocator_mode\":\"%s\",\"tensor_level\":%s,\"steps\":%" PRIu64
               ",\"grown_bytes\":%" PRIu64,
            rep_verdict_name(v.kind), v.mode, v.tensor_level ? "true" : "false", v.steps, v.grown);
    if (v.have_unit) {
        fprintf(o, ",\"rate_bytes_per_s\":%.1f,\"rate_bytes_per_step\":", v.rate);
        if (v.per_step >= 0)
            fprintf(o, "%.1f", v.per_step);
        else
            fputs("null", o);
        const vt_unit *u = &p->units[v.unit];
        fprintf(o, ",\"confidence\":%.3f,\"site_grown_bytes\":%" PRId64 ",\"growing_sites\":%zu,", v.confidence,
                u->grown, p->ngrowth);
        if (v.test) {
            fputs("\"test\":{\"name\":", o);
            vt_json_str(o, v.test->name);
            fprintf(o, ",\"leaked_bytes\":%" PRIu64 ",\"leaked_blocks\":%" PRIu64 "},", v.test->leaked,
                    v.test->leaked_blocks);
        }
        fputs("\"site\":", o);
        json_site(a, p, v.unit, u->at_bytes, u->at_count, o);
    }
    if (v.cached >= 0)
        fprintf(o, ",\"pool_cached_bytes\":%" PRId64, v.cached);
    if (v.kind == REP_CANNOT_TELL) {
        fprintf(o, ",\"segments_grown_bytes\":%" PRIu64 ",\"reason\":", v.segments_grown);
        vt_json_str(o, v.reason);
        fputs(",\"command\":", o);
        vt_json_str(o, v.command);
        if (v.pool) /* a pool the trace cannot see into (vt_pools.c) */
            fprintf(o, ",\"pool\":{\"key\":\"%s\",\"name\":\"%s\"}", vt_pool_key(v.pool), vt_pool_name(v.pool));
    }
    fputc('}', o);
}

/* A holder's own fields, the object left open for the caller's last one:
 * {"path":..,"type":..,"tensors":..,"bytes":..,"graph_bytes":.. */
static void json_holder_open(FILE *o, const vt_holder *h)
{
    fputs("{\"path\":", o);
    vt_json_str(o, h->path);
    fputs(",\"type\":", o);
    vt_json_str(o, h->type);
    fprintf(o, ",\"tensors\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"graph_bytes\":%" PRIu64, h->tensors, h->bytes,
            h->graph_bytes);
}

/* "oom_headline": OOM first (docs/REPORT.md, "The verdict"): the first
 * request that ran out of memory, its user frame, what the allocator held
 * then and the OOM walk's holders; its full description is
 * oom.events[event].  null when no request ran out of memory. */
static void json_oom_headline(vt_analysis *a, vt_proc *p, FILE *o)
{
    rep_oom_head h;
    fputs(",\"oom_headline\":", o);
    if (!rep_oom_headline(p, &h)) {
        fputs("null", o);
        return;
    }
    const vt_oom *e = h.o;
    fprintf(o, "{\"event\":%u,\"time_s\":%.6f,\"requested_bytes\":%" PRIu64 ",\"device\":%u,\"error_name\":", h.index,
            rep_rel_s(p, e->t_first), e->size, e->device);
    vt_json_str(o, e->error_name);
    fprintf(o, ",\"failed_calls\":%u,\"user_frame\":", e->attempts);
    vt_xframe fr[VT_MAX_STACK];
    int user = -1;
    uint32_t n = vt_site_frames(a, p, e->stack, fr, VT_MAX_STACK, &user);
    if (n && user >= 0 && !fr[user].internal)
        json_frame(o, &fr[user], 1);
    else
        fputs("null", o);
    fprintf(o, ",\"device_live_bytes\":%" PRId64, e->dev_live);
    if (e->have_tensors)
        fprintf(o, ",\"allocated_bytes\":%" PRId64 ",\"reserved_bytes\":%" PRId64, e->allocated, e->reserved);
    else
        fputs(",\"allocated_bytes\":null,\"reserved_bytes\":null", o);
    if (e->have_pool)
        fprintf(o, ",\"pool_reserved_bytes\":%" PRIu64 ",\"pool_used_bytes\":%" PRIu64, e->pool_reserved, e->pool_used);
    else
        fputs(",\"pool_reserved_bytes\":null,\"pool_used_bytes\":null", o);
    fputs(",\"walk_holders\":", o);
    if (h.walk) {
        fputc('[', o);
        for (uint32_t i = 0; i < h.walk->nh; i++) {
            if (i)
                fputc(',', o);
            json_holder_open(o, &h.walk->h[i]);
            fputc('}', o);
        }
        fputc(']', o);
    } else {
        fputs("null", o);
    }
    fprintf(o, ",\"more_out_of_memory\":%" PRIu64 "}", h.more);
}

/* "[Site, ...]" of the first --top rows */
static void json_site_rows(vt_analysis *a, vt_proc *p, const vt_row *r, size_t n, FILE *o)
{
    fputc('[', o);
    for (size_t i = 0; i < n && i < a->cfg.top; i++) {
        if (i)
            fputc(',', o);
        json_site(a, p, r[i].unit, r[i].bytes, r[i].count, o);
    }
    fputc(']', o);
}

static void json_site(vt_analysis *a, vt_proc *p, uint32_t unit, int64_t bytes, int64_t count, FILE *o)
{
    const vt_unit *u = &p->units[unit];
    fprintf(o, "{\"bytes\":%" PRId64 ",\"blocks\":%" PRId64 ",\"device\":%u,\"kind\":\"%s\",\"api\":\"%s\"", bytes,
            count, u->device, vt_memkind_name((vt_memkind)u->kind), vt_allocapi_name((vt_allocapi)u->api));
    fprintf(o, ",\"allocs\":%" PRIu64 ",\"alloc_bytes\":%" PRIu64 ",\"frees\":%" PRIu64, u->allocs, u->alloc_bytes, u->frees);
    fprintf(o, ",\"never_freed_bytes\":%" PRId64 ",\"never_freed_blocks\":%" PRId64 ",\"counted_bytes\":%" PRId64
               ",\"held_since_start\":%s",
            u->never_bytes, u->never_count, u->kept_bytes, u->since_start ? "true" : "false");
    fprintf(o, ",\"after_view_bytes\":%" PRId64 ",\"after_view_blocks\":%" PRId64, u->late_bytes, u->late_count);
    fprintf(o, ",\"mean_lifetime_s\":%.6f", u->frees ? (double)u->lifetime_sum / (double)u->frees / 1e9 : 0.0);
    uint32_t tid;
    const char *tname = rep_thread_name(p, u->thread, &tid);
    fprintf(o, ",\"thread\":");
    if (tname) {
        fprintf(o, "{\"tid\":%u,\"name\":", tid);
        vt_json_str(o, tname);
        fputc('}', o);
    } else {
        fputs("null", o);
    }
    if (p->holders_file) { /* who holds it (vt_holders.c): null when no Python object does */
        fputs(",\"held_by\":", o);
        if (u->holder && u->holder <= p->nholders) {
            json_holder_open(o, &p->holders[u->holder - 1]);
            fprintf(o, ",\"site_bytes_held\":%" PRIu64 "}", u->held_bytes);
        } else {
            fputs("null", o);
        }
    }
    fprintf(o, ",\"key\":");
    vt_json_str(o, vt_unit_key(a, p, unit));
    fputc(',', o);
    json_stack(a, p, u->stack, o);
    fputc('}', o);
}

static void json_proc(vt_analysis *a, vt_proc *p, FILE *o)
{
    char view[256];
    fprintf(o, "{\"file\":");
    vt_json_str(o, p->name);
    fprintf(o, ",\"pid\":%u,\"ppid\":%u,\"host\":", p->pid, p->ppid);
    vt_json_str(o, p->host);
    fprintf(o, ",\"program\":");
    vt_json_str(o, p->program);
    json_oom_headline(a, p, o);
    json_verdict(a, p, o);
    if (p->holders_file) {
        fputs(",\"holders\":{\"file\":", o);
        vt_json_str(o, p->holders_file);
        fprintf(o, ",\"objects_walked\":%" PRIu64 ",\"walk_s\":%.6f,\"limit_reached\":%s,\"list\":[", p->walk_objects,
                p->walk_seconds, p->walk_limited ? "true" : "false");
        for (size_t k = 0; k < p->nholders && k < 20; k++) {
            if (k)
                fputc(',', o);
            json_holder_open(o, &p->holders[k]);
            fprintf(o, ",\"bytes_in_live_blocks\":%" PRIu64 "}", p->holders[k].joined_bytes);
        }
        fputs("]}", o);
    }
    if (p->nwalks) { /* the walks before the end: at the first failed allocation, on a signal */
        fputs(",\"walks\":[", o);
        for (uint32_t w = 0; w < p->nwalks; w++) {
            const vt_walk *k = &p->walks[w];
            fprintf(o, "%s{\"when\":\"%s\",\"signal\":", w ? "," : "", k->signal ? "signal" : "oom");
            if (k->signal)
                fprintf(o, "%d", k->signal);
            else
                fputs("null", o);
            if (!k->signal)
                fprintf(o, ",\"device\":%u,\"request_bytes\":%" PRIu64 ",\"device_allocated_bytes\":%" PRIu64
                           ",\"device_free_bytes\":%" PRIu64,
                        k->device, k->request, k->dev_allocated, k->dev_free);
            fprintf(o, ",\"objects_walked\":%" PRIu64 ",\"walk_s\":%.6f,\"limit_reached\":%s,\"holders\":[", k->objects,
                    k->seconds, k->limited ? "true" : "false");
            for (uint32_t i = 0; i < k->nh; i++) {
                if (i)
                    fputc(',', o);
                json_holder_open(o, &k->h[i]);
                fputc('}', o);
            }
            fputs("]}", o);
        }
        fputc(']', o);
    }
    fprintf(o, ",\"argv\":[");
    for (uint32_t i = 0; i < p->argc; i++) {
        if (i)
            fputc(',', o);
        vt_json_str(o, p->argv[i]);
    }
    fprintf(o, "],\"rank\":");
    vt_json_str(o, p->env_rank);
    fprintf(o, ",\"pytorch_cuda_alloc_conf\":");
    vt_json_str(o, p->env_alloc_conf);
    fprintf(o, ",\"format_version\":%u,\"tool_version\":", p->format_version);
    vt_json_str(o, p->tool_version);
    fprintf(o, ",\"clock\":");
    vt_json_str(o, p->clock);
    fprintf(o, ",\"unverified_events\":%" PRIu64, p->unverified_events);
    fprintf(o, ",\"complete\":%s,\"end_reason\":%s,\"end_signal\":", p->complete ? "true" : "false",
            !p->complete ? "null" : p->end_reason == VT_END_NORMAL ? "\"normal\"" : p->end_reason == VT_END_SIGNAL ? "\"signal\"" : "\"error\"");
    if (p->complete && p->end_reason == VT_END_SIGNAL)
        fprintf(o, "%d", p->end_signal);
    else
        fputs("null", o);
    fprintf(o, ",\"recorded\":{\"kernels\":%s,\"native_stacks\":%s,\"python_stacks\":%s}", p->hdr_kernels ? "true" : "false",
            p->hdr_native ? "true" : "false", p->hdr_python ? "true" : "false");
    fprintf(o, ",\"duration_s\":%.6f", rep_duration_s(p));
    fprintf(o, ",\"events\":{");
    int first = 1;
    for (int t = 0; t < VT_EV__MAX; t++) {
        if (!p->nev[t])
            continue;
        fprintf(o, "%s\"%s\":%" PRIu64, first ? "" : ",", vt_evtype_name((vt_evtype)t), p->nev[t]);
        first = 0;
    }
    fprintf(o, "},\"records\":%" PRIu64, p->records);
    /* summary: devices */
    fprintf(o, ",\"devices\":[");
    first = 1;
    for (uint32_t d = 0; d < p->ndev_seen && d < VT_MAX_DEVICES; d++) {
        const vt_devstate *s = &p->dev[d];
        if (!s->present && !s->used && !s->drv_samples)
            continue;
        fprintf(o, "%s{\"index\":%u,\"name\":", first ? "" : ",", d);
        first = 0;
        vt_json_str(o, s->present ? s->name : NULL);
        fprintf(o, ",\"total_bytes\":%" PRIu64 ",\"peak_live_bytes\":%" PRId64 ",\"peak_time_s\":%.6f", s->total, s->peak,
                rep_rel_s(p, s->peak_t));
        fprintf(o, ",\"by_kind\":{");
        int fk = 1;
        for (int k = 0; k < VT_MEM__COUNT; k++) {
            if (!s->peak_kind[k])
                continue;
            fprintf(o, "%s\"%s\":{\"peak_bytes\":%" PRId64 ",\"peak_time_s\":%.6f,\"at_view_bytes\":%" PRId64
                       ",\"at_end_bytes\":%" PRId64 "}",
                    fk ? "" : ",", vt_memkind_name((vt_memkind)k), s->peak_kind[k], rep_rel_s(p, s->peak_kind_t[k]),
                    s->at_kind[k], s->live[k]);
            fk = 0;
        }
        fprintf(o, "}");
        if (p->tensor_units && (s->peak_kind[VT_MEM_TENSOR] || s->reserved_peak)) {
            /* PyTorch's caching allocator, with its tensor events */
            int64_t cached = s->reserved_at - s->at_kind[VT_MEM_TENSOR], outside = s->at_kind[VT_MEM_DEVICE] - s->reserved_at;
            fprintf(o, ",\"caching_allocator\":{\"allocated\":{\"peak_bytes\":%" PRId64 ",\"peak_time_s\":%.6f,\"at_view_bytes\":%" PRId64
                       ",\"at_end_bytes\":%" PRId64 "},\"reserved\":{\"peak_bytes\":%" PRId64 ",\"peak_time_s\":%.6f,\"at_view_bytes\":%" PRId64
                       ",\"at_end_bytes\":%" PRId64 "},\"cached_at_view_bytes\":%" PRId64 ",\"outside_at_view_bytes\":%" PRId64 ",\"series\":[",
                    s->peak_kind[VT_MEM_TENSOR], rep_rel_s(p, s->peak_kind_t[VT_MEM_TENSOR]), s->at_kind[VT_MEM_TENSOR],
                    s->live[VT_MEM_TENSOR], s->reserved_peak, rep_rel_s(p, s->reserved_peak_t), s->reserved_at, s->reserved,
                    cached > 0 ? cached : 0, outside > 0 ? outside : 0);
            for (uint32_t i = 0; i < s->nseries; i++)
                fprintf(o, "%s[%.6f,%" PRId64 ",%" PRId64 "]", i ? "," : "", rep_rel_s(p, s->series[i].t), s->series[i].allocated,
                        s->series[i].reserved);
            fprintf(o, "]}");
        }
        fprintf(o, ",\"driver\":");
        if (s->drv_samples)
            fprintf(o, "{\"samples\":%" PRIu64 ",\"total_bytes\":%" PRIu64 ",\"max_used_bytes\":%" PRIu64
                       ",\"max_used_time_s\":%.6f,\"traced_live_then_bytes\":%" PRId64 ",\"untraced_bytes\":%" PRId64 "}",
                    s->drv_samples, s->drv_total, s->drv_max_used, rep_rel_s(p, s->drv_max_t), s->drv_traced_then,
                    (int64_t)s->drv_max_used - s->drv_traced_then);
        else
            fprintf(o, "null");
        fputc('}', o);
    }
    fprintf(o, "]");
    fprintf(o, ",\"oddities\":{\"unknown_frees\":%" PRIu64 ",\"double_frees\":%" PRIu64 ",\"overlapping_allocs\":%" PRIu64
               ",\"unknown_vmm_releases\":%" PRIu64 ",\"double_vmm_releases\":%" PRIu64 ",\"unknown_unmaps\":%" PRIu64
               ",\"zero_addresses\":%" PRIu64 ",\"invalid_devices\":%" PRIu64 ",\"absurd_sizes\":%" PRIu64,
            p->unknown_frees, p->double_frees, p->overlap_allocs, p->unknown_vmm_release, p->double_vmm_release,
            p->unknown_unmaps, p->zero_frees, p->bad_device, p->absurd_sizes);
    fprintf(o, ",\"partial_overlaps\":%" PRIu64 ",\"time_backwards\":%" PRIu64 ",\"time_backwards_max_s\":%.6f",
            p->partial_overlaps, p->time_back, (double)p->time_back_max / 1e9);
    fprintf(o, ",\"dropped\":{\"writer_queue\":%" PRIu64 ",\"cupti_activity\":%" PRIu64 ",\"stack\":%" PRIu64 ",\"other\":%" PRIu64 "}}",
            p->dropped[0], p->dropped[1], p->dropped[2], p->dropped[3]);
    fprintf(o, ",\"notes\":[");
    for (uint32_t i = 0; i < p->nnotes; i++) {
        fprintf(o, "%s{\"severity\":\"%s\",\"text\":", i ? "," : "",
                p->note_sev[i] == VT_SEV_ERROR ? "error" : p->note_sev[i] == VT_SEV_WARNING ? "warning" : "info");
        vt_json_str(o, p->notes[i]);
        fputc('}', o);
    }
    fprintf(o, "],\"read_errors\":[");
    for (uint32_t i = 0; i < p->nerrors; i++) {
        if (i)
            fputc(',', o);
        vt_json_str(o, p->errors[i]);
    }
    fprintf(o, "]");
    /* leaks */
    rep_view_text(a, p, view, sizeof(view));
    fprintf(o, ",\"view\":{\"mode\":\"%s\",\"time_s\":%.6f,\"description\":", rep_view_mode_name(p->view_mode), rep_rel_s(p, p->view_t));
    vt_json_str(o, view);
    fprintf(o, ",\"exact\":%s}", p->tail_overflow ? "false" : "true");
    fprintf(o, ",\"leaks\":{\"bytes\":%" PRIu64 ",\"blocks\":%" PRIu64 ",\"freed_at_teardown_counted_bytes\":%" PRIu64
               ",\"teardown_bytes\":%" PRIu64 ",\"teardown_blocks\":%" PRIu64 ",\"held_since_start_bytes\":%" PRIu64
               ",\"module_globals_bytes\":%" PRIu64 ",\"module_globals_blocks\":%" PRIu64 ",\"sites_total\":%zu,\"sites\":[",
            p->leak_bytes, p->leak_blocks, p->leak_td_bytes, p->teardown_bytes, p->teardown_blocks, p->held_bytes,
            p->static_bytes, p->static_blocks, p->nleak);
    for (size_t i = 0; i < p->nleak && i < a->cfg.top; i++) {
        const vt_unit *u = &p->units[p->leak_order[i]];
        if (i)
            fputc(',', o);
        json_site(a, p, p->leak_order[i], u->at_bytes, u->at_count, o);
    }
    fprintf(o, "]}");
    /* growth */
    fprintf(o, ",\"growth\":{\"steps\":");
    if (p->steps)
        fprintf(o, "{\"count\":%" PRIu64 ",\"source\":\"%s\",\"name\":", p->steps,
                !strncmp(p->step_source, "nvtx:", 5) ? "nvtx" : "kernels");
    if (p->steps) {
        if (!strncmp(p->step_source, "nvtx:", 5))
            vt_json_str(o, p->step_source + 5);
        else
            fprintf(o, "null");
        fprintf(o, ",\"period_s\":%.6f,\"kernel_count\":%" PRIu64 "}", p->step_period_ns / 1e9, p->kernel_steps);
    } else
        fprintf(o, "null");
    fprintf(o, ",\"grown_bytes\":%" PRIu64 ",\"sites\":[", p->grown_total);
    for (size_t i = 0; i < p->ngrowth && i < a->cfg.top; i++) {
        const vt_unit *u = &p->units[p->growth_order[i]];
        fprintf(o, "%s{\"grown_bytes\":%" PRIu64 ",\"rate_bytes_per_s\":%.1f,\"rate_bytes_per_step\":", i ? "," : "",
                u->grown, u->growth_rate);
        if (p->steps)
            fprintf(o, "%.1f", u->growth_per_step >= 0 ? u->growth_per_step : u->growth_rate * p->step_period_ns / 1e9);
        else
            fprintf(o, "null");
        fprintf(o, ",\"confidence\":%.3f,\"rises\":%u,\"window_start_s\":%.6f,\"samples\":%u,\"site\":",
                u->growth_conf, u->growth_rises, rep_rel_s(p, u->growth_t0), u->growth_samples);
        json_site(a, p, p->growth_order[i], u->at_bytes, u->at_count, o);
        fputc('}', o);
    }
    fprintf(o, "]}");
    /* peak */
    fprintf(o, ",\"peak\":[");
    first = 1;
    for (uint32_t d = 0; d < p->ndev_seen && d < VT_MAX_DEVICES; d++) {
        const vt_devstate *s = &p->dev[d];
        if (!s->peak)
            continue;
        vt_row *r;
        size_t n = rep_peak_rows(p, d, 0, &r);
        fprintf(o, "%s{\"device\":%u,\"bytes\":%" PRId64 ",\"time_s\":%.6f,", first ? "" : ",", d, s->peak,
                rep_rel_s(p, s->peak_t));
        if (p->tensor_units)
            fprintf(o, "\"cached_bytes\":%" PRId64 ",", rep_peak_cached(p, d));
        fprintf(o, "\"sites_total\":%zu,\"sites\":", n);
        first = 0;
        json_site_rows(a, p, r, n, o);
        free(r);
        /* with tensor events: the tensors at PyTorch's allocated peak */
        if (p->tensor_units && s->peak_kind[VT_MEM_TENSOR] > 0) {
            n = rep_peak_rows(p, d, 1, &r);
            fprintf(o, ",\"allocated\":{\"bytes\":%" PRId64 ",\"time_s\":%.6f,\"sites_total\":%zu,\"sites\":",
                    s->peak_kind[VT_MEM_TENSOR], rep_rel_s(p, s->peak_kind_t[VT_MEM_TENSOR]), n);
            json_site_rows(a, p, r, n, o);
            fputc('}', o);
            free(r);
        }
        fputc('}', o);
    }
    fprintf(o, "]");
    /* oom */
    /* failed: the program's requests (retries folded in, probes apart) */
    fprintf(o, ",\"oom\":{\"failed\":%" PRIu64 ",\"out_of_memory\":%" PRIu64 ",\"failed_calls\":%" PRIu64
               ",\"retries\":%" PRIu64 ",\"probes\":{\"count\":%" PRIu64 ",\"by_kind\":{",
            p->failed, p->failed_oom, p->failed_calls, p->failed_retries, p->failed_probes);
    for (int k = 1, pf = 1; k < VT_PROBE__COUNT; k++)
        if (p->probes[k]) {
            fprintf(o, "%s\"%s\":%" PRIu64, pf ? "" : ",", rep_probe_name(k), p->probes[k]);
            pf = 0;
        }
    fputs("}},\"events\":[", o);
    for (uint32_t i = 0; i < p->noom; i++) {
        const vt_oom *e = &p->oom[i];
        fprintf(o, "%s{\"time_s\":%.6f,\"last_time_s\":%.6f,\"failed_calls\":%u,\"requested_bytes\":%" PRIu64
                   ",\"device\":%u,\"kind\":\"%s\",\"api\":\"%s\",\"error\":%d,\"error_name\":",
                i ? "," : "", rep_rel_s(p, e->t_first), rep_rel_s(p, e->t), e->attempts, e->size, e->device,
                vt_memkind_name((vt_memkind)e->kind), vt_allocapi_name((vt_allocapi)e->api), e->error);
        vt_json_str(o, e->error_name);
        fputc(',', o);
        json_stack(a, p, e->stack, o);
        fprintf(o, ",\"device_live_bytes\":%" PRId64 ",\"device_total_bytes\":%" PRIu64, e->dev_live, p->dev[e->device].total);
        fprintf(o, ",\"by_kind\":{");
        int fk = 1;
        for (int k = 0; k < VT_MEM__COUNT; k++)
            if (e->kind_live[k]) {
                fprintf(o, "%s\"%s\":%" PRId64, fk ? "" : ",", vt_memkind_name((vt_memkind)k), e->kind_live[k]);
                fk = 0;
            }
        fprintf(o, "},\"driver\":");
        if (e->drv_t)
            fprintf(o, "{\"free_bytes\":%" PRIu64 ",\"total_bytes\":%" PRIu64 ",\"time_s\":%.6f}", e->drv_free, e->drv_total,
                    rep_rel_s(p, e->drv_t));
        else
            fprintf(o, "null");
        fprintf(o, ",\"pool\":");
        if (e->have_pool) {
            uint64_t unused = e->pool_reserved > e->pool_used ? e->pool_reserved - e->pool_used : 0;
            fprintf(o, "{\"reserved_bytes\":%" PRIu64 ",\"used_bytes\":%" PRIu64 ",\"unused_bytes\":%" PRIu64
                       ",\"fragmentation\":%s}",
                    e->pool_reserved, e->pool_used, unused, unused >= e->size && e->size && e->error == 2 ? "true" : "false");
        } else
            fprintf(o, "null");
        fprintf(o, ",\"caching_allocator_segments_bytes\":%" PRIu64, e->c10_reserved);
        if (e->have_tensors) {
            int64_t cached = e->reserved > e->allocated ? e->reserved - e->allocated : 0;
            fprintf(o, ",\"caching_allocator\":{\"allocated_bytes\":%" PRId64 ",\"reserved_bytes\":%" PRId64
                       ",\"cached_bytes\":%" PRId64 ",\"largest_free_block_bytes\":",
                    e->allocated, e->reserved, cached);
            if (e->largest_free >= 0)
                fprintf(o, "%" PRId64 ",\"fragmentation\":%s}", e->largest_free,
                        (uint64_t)cached >= e->size && (uint64_t)e->largest_free < e->size ? "true" : "false");
            else
                fprintf(o, "null,\"fragmentation\":null}");
        }
        fprintf(o, ",\"top_holders\":[");
        for (uint32_t k = 0; k < e->ntop; k++) {
            if (k)
                fputc(',', o);
            json_site(a, p, e->top_unit[k], e->top_bytes[k], e->top_count[k], o);
        }
        fprintf(o, "]}");
    }
    fprintf(o, "]}");
    /* tests: the pytest plugin's ranges (vt_replay_tests.c), in order */
    fprintf(o, ",\"tests\":[");
    for (size_t i = 0; i < p->ntests; i++) {
        const vt_test *x = &p->tests[i];
        fprintf(o, "%s{\"name\":", i ? "," : "");
        vt_json_str(o, x->name);
        fprintf(o, ",\"start_s\":%.6f,\"duration_s\":%.6f,\"ended\":%s,\"allocated_bytes\":%" PRIu64
                   ",\"allocs\":%" PRIu64 ",\"leaked_bytes\":%" PRIu64 ",\"leaked_blocks\":%" PRIu64
                   ",\"peak_bytes\":%" PRIu64 ",\"call_sites\":%u,\"sites\":[",
                rep_rel_s(p, x->t0), (double)(x->t1 - x->t0) / 1e9, x->ended ? "true" : "false", x->allocated,
                x->allocs, x->leaked, x->leaked_blocks, x->peak, x->nsites);
        for (uint32_t s = 0; s < x->nsites && s < VT_TEST_SITES; s++) {
            if (s)
                fputc(',', o);
            json_site(a, p, x->site[s].unit, (int64_t)x->site[s].bytes, (int64_t)x->site[s].blocks, o);
        }
        fputs("]}", o);
    }
    fputc(']', o);
    /* allocator */
    int tl;
    const char *mode = rep_allocator_mode(p, &tl);
    fprintf(o, ",\"allocator\":{\"mode\":\"%s\",\"tensor_level\":%s,\"caching_allocator\":{\"segment_allocs\":%" PRIu64
               ",\"call_sites\":%u,\"peak_bytes\":%" PRIu64 "},\"advice\":",
            mode, tl ? "true" : "false", p->c10_allocs, p->c10_units, p->c10_bytes_peak);
    if (!tl && (!strcmp(mode, "pytorch_caching") || !strcmp(mode, "pytorch_expandable")))
        vt_json_str(o, "blocks are caching-allocator segments; for tensor-level call sites record with `vramtrace record` "
                       "(its PyTorch shim; the notes say why it did not attach) or `vramtrace record --tensors` "
                       "(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync)");
    else
        fprintf(o, "null");
    fprintf(o, ",\"vmm\":{\"reserved_peak_bytes\":%" PRId64 ",\"mapped_peak_bytes\":%" PRId64 "}", p->va_reserved_peak, p->mapped_peak);
    fprintf(o, ",\"pools\":[");
    for (size_t i = 0; i < p->npools; i++) {
        const vt_pool *q = &p->pools[i];
        fprintf(o, "%s{\"pool\":\"0x%" PRIx64 "\",\"device\":%u,\"reserved_peak_bytes\":%" PRIu64 ",\"used_peak_bytes\":%" PRIu64
                   ",\"reserved_last_bytes\":%" PRIu64 ",\"used_last_bytes\":%" PRIu64 ",\"creates\":%" PRIu64
                   ",\"destroys\":%" PRIu64 ",\"trims\":%" PRIu64 ",\"samples\":[",
                i ? "," : "", q->pool, q->device, q->reserved_high, q->used_high, q->reserved_last, q->used_last, q->creates,
                q->destroys, q->trims);
        for (size_t k = 0; k < q->ns; k++)
            fprintf(o, "%s[%.6f,%" PRIu64 ",%" PRIu64 "]", k ? "," : "", rep_rel_s(p, q->s[k].t), q->s[k].reserved, q->s[k].used);
        fprintf(o, "]}");
    }
    fprintf(o, "]}}");
}

/* The user frame of a stack, or null (none of the user's) */
static void json_user_frame(vt_analysis *a, vt_proc *p, uint32_t stack, FILE *o)
{
    vt_xframe fr[VT_MAX_STACK];
    int user = -1;
    uint32_t n = vt_site_frames(a, p, stack, fr, VT_MAX_STACK, &user);
    if (n && user >= 0 && !fr[user].internal)
        json_frame(o, &fr[user], 1);
    else
        fputs("null", o);
}

/* merged.verdict.processes: each process of the job named as the text
 * names it (rep_proc_name), its verdict's kind, the leading growing
 * site's user frame and holder, its out-of-memory request, how its trace
 * ends (docs/REPORT.md, "A job's ranks") */
static void json_job_procs(vt_analysis *a, FILE *o)
{
    char nb[128];
    fputs(",\"processes\":[", o);
    for (size_t i = 0; i < a->nprocs; i++) {
        vt_proc *p = a->procs[i];
        rep_verdict v;
        rep_oom_head h;
        rep_verdict_of(a, p, &v);
        fprintf(o, "%s{\"process\":%zu,\"name\":", i ? "," : "", i);
        vt_json_str(o, rep_proc_name(a, p, nb, sizeof(nb)));
        fputs(",\"rank\":", o);
        vt_json_str(o, p->env_rank);
        fprintf(o, ",\"pid\":%u,\"host\":", p->pid);
        vt_json_str(o, p->host);
        fprintf(o, ",\"kind\":\"%s\",\"grown_bytes\":%" PRIu64 ",\"user_frame\":", rep_verdict_name(v.kind), v.grown);
        const vt_unit *u = v.kind == REP_LEAK && v.have_unit ? &p->units[v.unit] : NULL;
        if (u)
            json_user_frame(a, p, u->stack, o);
        else
            fputs("null", o);
        fputs(",\"held_by\":", o);
        if (u && p->holders_file && u->holder && u->holder <= p->nholders) {
            json_holder_open(o, &p->holders[u->holder - 1]);
            fputc('}', o);
        } else {
            fputs("null", o);
        }
        fputs(",\"out_of_memory\":", o);
        if (rep_oom_headline(p, &h)) {
            fprintf(o, "{\"requested_bytes\":%" PRIu64 ",\"device\":%u,\"time_s\":%.6f,\"user_frame\":", h.o->size,
                    h.o->device, rep_rel_s(p, h.o->t_first));
            json_user_frame(a, p, h.o->stack, o);
            fputs(",\"walk_holders\":", o);
            if (h.walk) {
                fputc('[', o);
                for (uint32_t k = 0; k < h.walk->nh && k < 3; k++) {
                    if (k)
                        fputc(',', o);
                    json_holder_open(o, &h.walk->h[k]);
                    fputc('}', o);
                }
                fputc(']', o);
            } else {
                fputs("null", o);
            }
            fputc('}', o);
        } else {
            fputs("null", o);
        }
        fprintf(o, ",\"complete\":%s,\"end_reason\":%s,\"end_signal\":", p->complete ? "true" : "false",
                !p->complete ? "null" : p->end_reason == VT_END_NORMAL ? "\"normal\"" : p->end_reason == VT_END_SIGNAL ? "\"signal\"" : "\"error\"");
        if (p->complete && p->end_reason == VT_END_SIGNAL)
            fprintf(o, "%d", p->end_signal);
        else
            fputs("null", o);
        fprintf(o, ",\"duration_s\":%.6f}", rep_rel_s(p, p->t_last));
    }
    fputc(']', o);
}

int vt_report_json(vt_analysis *a, FILE *o)
{
    if (!a->finished)
        return VT_ERR_INVALID;
    fprintf(o, "{\"schema\":\"vramtrace.report/1\",\"processes\":[");
    for (size_t i = 0; i < a->nprocs; i++) {
        if (i)
            fputs(",\n", o);
        json_proc(a, a->procs[i], o);
    }
    fprintf(o, "],\"merged\":");
    if (a->nprocs > 1) {
        uint64_t lb = 0;
        for (size_t i = 0; i < a->nprocs; i++)
            lb += a->procs[i]->leak_bytes;
        fprintf(o, "{\"leaked_bytes\":%" PRIu64 ",\"grown_bytes\":%" PRIu64, lb, vt_analysis_grown_bytes(a));
        /* the job's verdict: a leak anywhere, else cannot tell anywhere,
         * else none; each process named (vt_report_job.c says the same) */
        rep_job j;
        rep_job_of(a, &j);
        fprintf(o, ",\"verdict\":{\"kind\":\"%s\",\"processes_leaking\":%zu,\"processes_cannot_tell\":%zu"
                   ",\"processes_out_of_memory\":%zu",
                rep_verdict_name(j.kind), j.leaking, j.cannot_tell, j.oom);
        json_job_procs(a, o);
        fputc('}', o);
        static const char *names[] = {"leaks", "peak", "growth"};
        for (int w = 0; w < 3; w++) {
            vt_mrow *r;
            size_t n = rep_merged_rows(a, w, &r);
            fprintf(o, ",\"%s\":[", names[w]);
            for (size_t i = 0; i < n && i < a->cfg.top; i++) {
                vt_proc *p = a->procs[r[i].proc];
                fprintf(o, "%s{\"processes\":%u,\"bytes\":%" PRId64 ",\"blocks\":%" PRId64, i ? "," : "", r[i].nproc,
                        r[i].bytes, r[i].count);
                /* the first processes the key is in, named (merged.verdict.processes) */
                fputs(",\"process_names\":[", o);
                for (uint32_t k = 0; k < r[i].nproc && k < VT_MROW_PROCS; k++) {
                    char nb[96];
                    if (k)
                        fputc(',', o);
                    vt_json_str(o, rep_proc_name(a, a->procs[r[i].procs[k]], nb, sizeof(nb)));
                }
                fputc(']', o);
                if (w == 2)
                    fprintf(o, ",\"rate_bytes_per_s\":%.1f", r[i].rate);
                fprintf(o, ",\"site\":");
                json_site(a, p, r[i].unit, r[i].bytes, r[i].count, o);
                fputc('}', o);
            }
            fprintf(o, "]");
            free(r);
        }
        fputc('}', o);
    } else
        fprintf(o, "null");
    fprintf(o, ",\"leaked_bytes\":%" PRIu64 ",\"grown_bytes\":%" PRIu64 ",\"errors\":[", vt_analysis_leaked_bytes(a),
            vt_analysis_grown_bytes(a));
    for (unsigned i = 0; i < a->nall_errors; i++) {
        if (i)
            fputc(',', o);
        vt_json_str(o, a->all_errors[i]);
    }
    fprintf(o, "]}\n");
    return ferror(o) ? VT_ERR_IO : 0;
}
