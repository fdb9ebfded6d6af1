/* vt_replay_events.c - the events off the hot path: failed allocations,
 * VMM, pools, NVTX ranges, the header and every other record. */
#include "vt_replay_int.h"
#include "vt_grow.h"
static void top_holders(vt_proc *p, uint32_t device, vt_oom *o)
{
    o->ntop = 0;
    for (size_t k = 0; k < p->nunits; k++) {
        const vt_unit *u = &p->units[k];
        /* with tensor events: tensors, not the segments that hold them */
        int counted = p->tensor_units ? u->kind == VT_MEM_TENSOR || (is_resident(u->kind) && !u->segment)
                                      : is_resident(u->kind);
        if (u->device != device || !counted || u->live_bytes <= 0)
            continue;
        /* insertion into a sorted top list; ties keep the lower unit index */
        uint32_t pos = o->ntop;
        while (pos > 0 && o->top_bytes[pos - 1] < u->live_bytes)
            pos--;
        if (pos >= VT_OOM_TOP)
            continue;
        uint32_t end = o->ntop < VT_OOM_TOP ? o->ntop : VT_OOM_TOP - 1;
        for (uint32_t j = end; j > pos; j--) {
            o->top_unit[j] = o->top_unit[j - 1];
            o->top_bytes[j] = o->top_bytes[j - 1];
            o->top_count[j] = o->top_count[j - 1];
        }
        o->top_unit[pos] = (uint32_t)k;
        o->top_bytes[pos] = u->live_bytes;
        o->top_count[pos] = vt_unit_live_count(u);
        if (o->ntop < VT_OOM_TOP)
            o->ntop++;
    }
    for (size_t k = 0; k < p->nunits; k++) {
        const vt_unit *u = &p->units[k];
        if (u->device == device && u->segment && u->live_bytes > 0)
            o->c10_reserved += (uint64_t)u->live_bytes;
    }
}

typedef struct { uint64_t a, b; } range;
static int range_cmp(const void *x, const void *y)
{
    const range *r = x, *q = y;
    return r->a < q->a ? -1 : r->a > q->a;
}

/* With tensor events: the largest range of the device's cudaMalloc
 * segments that no live tensor covers, i.e. the largest request the pool
 * could serve without a new segment (0 when none is free; -1 when it
 * cannot be told: expandable segments, or no memory for the scan).  Once
 * per described failure,
 * O(live blocks). */
/* the device's cudaMalloc segments and tensors live now, as ranges: 0, or
 * -1 out of memory (the arrays are the caller's to free either way) */
static int live_ranges(const vt_proc *p, uint32_t device, range **seg, size_t *ns, range **ten, size_t *nt)
{
    size_t cs = 0, ct = 0;
    for (int w = 0; w < 2; w++) {
        const vt_blockmap *tb = w ? &p->old : &p->blocks;
        for (size_t i = 0; i < tb->cap; i++) {
            const vt_block *b = &tb->slots[i];
            if (!b->addr || b->unit == VT_DEAD || p->units[b->unit].device != device)
                continue;
            if (p->units[b->unit].segment && !(b->addr & 1)) {
                if (VT_GROW(*seg, *ns, cs, 64))
                    return -1;
                (*seg)[(*ns)++] = (range){b->addr, b->addr + b->size};
            } else if (p->units[b->unit].kind == VT_MEM_TENSOR) {
                if (VT_GROW(*ten, *nt, ct, 256))
                    return -1;
                (*ten)[(*nt)++] = (range){b->addr & ~1ull, (b->addr & ~1ull) + b->size};
            }
        }
    }
    return 0;
}

static int64_t largest_free(const vt_proc *p, uint32_t device)
{
    range *seg = NULL, *ten = NULL;
    size_t ns = 0, nt = 0;
    /* no cudaMalloc segment (expandable segments are mapped ranges): cannot tell */
    if (live_ranges(p, device, &seg, &ns, &ten, &nt) || !ns) {
        free(seg);
        free(ten);
        return -1;
    }
    qsort(seg, ns, sizeof(*seg), range_cmp);
    if (nt) /* none live: ten is NULL, which qsort may not be given */
        qsort(ten, nt, sizeof(*ten), range_cmp);
    uint64_t best = 0;
    size_t j = 0;
    for (size_t i = 0; i < ns; i++) {
        uint64_t at = seg[i].a;
        while (j < nt && ten[j].b <= seg[i].a)
            j++;
        for (size_t k = j; k < nt && ten[k].a < seg[i].b; k++) {
            if (ten[k].a > at && ten[k].a - at > best)
                best = ten[k].a - at;
            if (ten[k].b > at)
                at = ten[k].b;
        }
        if (seg[i].b > at && seg[i].b - at > best)
            best = seg[i].b - at;
    }
    free(seg);
    free(ten);
    return (int64_t)best;
}

/* Which known probe a failed call is (VT_PROBES), or VT_PROBE_NONE: the
 * error codes a library expects when it tries something and falls back. */
int vt_failed_probe(const vt_ev_alloc_failed *e)
{
    if (e->api == VT_API_VMM && (e->error == 800 || e->error == 801)) /* NOT_PERMITTED, NOT_SUPPORTED */
        return VT_PROBE_HANDLE_TYPE;
    if ((e->api == VT_API_MALLOC_ASYNC || e->api == VT_API_MALLOC_FROM_POOL) &&
        (e->error == 4 || e->error == 201 || e->error == 709)) /* DEINITIALIZED, INVALID_CONTEXT, CONTEXT_IS_DESTROYED */
        return VT_PROBE_NO_CONTEXT;
    return VT_PROBE_NONE;
}

/* Where a request came from: its stack below (outside) the allocator's
 * frames, hashed (FNV-1a over frame ids).  PyTorch's caching allocator
 * retries a failed cudaMalloc from another line of its own after freeing
 * its cache, and its shim reports the request from a third: below them
 * the stack is the same. */
static uint64_t origin_key(const vt_proc *p, uint32_t stack)
{
    uint32_t fr[VT_MAX_STACK];
    uint32_t n = vt_proc_stack(p, stack, fr, VT_MAX_STACK), from = 0;
    if (n > VT_MAX_STACK)
        n = VT_MAX_STACK;
    for (uint32_t i = 0; i < n; i++) {
        const vt_pframe *f = fr[i] < p->nframes ? &p->frames[fr[i]] : NULL;
        if (f && f->kind == VT_FRAME_NATIVE && f->module && f->module < p->nmodules && p->modules[f->module].alloc_lib)
            from = i + 1;
    }
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint32_t i = from; i < n; i++)
        h = (h ^ fr[i]) * 0x100000001b3ull;
    return n ? h : 0xffffffffffffffffull ^ stack;
}

/* The state of the device at a failed call, into o (its request's entry;
 * t_first and attempts are the caller's). */
static void describe_failed(vt_proc *p, const vt_ev_alloc_failed *e, uint32_t device, uint64_t t, vt_oom *o)
{
    const uint64_t t_first = o->t_first;
    const uint32_t attempts = o->attempts;
    free(o->error_name);
    memset(o, 0, sizeof(*o));
    o->t_first = t_first;
    o->attempts = attempts;
    o->t = t;
    o->size = e->size;
    o->device = device;
    o->stack = e->site.stack;
    o->thread = e->site.thread;
    o->kind = (uint8_t)(e->kind < VT_MEM__COUNT ? e->kind : 0);
    o->api = (uint8_t)(e->api < VT_API__COUNT ? e->api : 0);
    o->error = e->error;
    o->error_name = xstrdup(e->error_name);
    const vt_devstate *d = &p->dev[device];
    o->dev_live = d->live_dev;
    memcpy(o->kind_live, d->live, sizeof(o->kind_live));
    if (d->drv_samples) {
        o->drv_free = d->drv_last_free;
        o->drv_total = d->drv_total;
        o->drv_t = d->drv_last_t;
    }
    for (size_t i = 0; i < p->npools; i++)
        if (p->pools[i].device == device && p->pools[i].seen) {
            o->have_pool = 1;
            o->pool_reserved += p->pools[i].reserved_last;
            o->pool_used += p->pools[i].used_last;
        }
    top_holders(p, device, o);
    if (p->tensor_units) {
        o->have_tensors = 1;
        o->allocated = d->live[VT_MEM_TENSOR];
        o->reserved = d->reserved;
        o->largest_free = largest_free(p, device);
    }
}

/* A failed call: a probe (counted apart), a retry of a request that
 * failed lately, or a new request.  A retry is a call from the same
 * thread, device and origin (origin_key) within VT_RETRY_NS of the
 * request's last call, of the same size, or the caching allocator's own
 * report of the request (its tensor-level failure, which closes it).  The
 * request's entry then describes its last call: what the allocator held
 * when it gave up. */
#define VT_RETRY_NS 2000000000ull
static void on_failed(vt_proc *p, const vt_ev_alloc_failed *e, uint64_t t)
{
    uint32_t device = e->device;
    const uint64_t call = p->failed_calls++;
    const int probe = vt_failed_probe(e);
    if (probe) {
        p->failed_probes++;
        p->probes[probe]++;
        return;
    }
    const int valid = check_device(p, &device), oom = e->error == 2; /* CUDA_ERROR_OUT_OF_MEMORY == cudaErrorMemoryAllocation */
    const int tensor = e->api == VT_API_CACHING_ALLOCATOR;
    const uint64_t key = origin_key(p, e->site.stack);
    vt_request *r = NULL;
    for (uint32_t k = 0; k < VT_REQ_RECENT; k++) {
        vt_request *q = &p->req[k];
        if (q->t && !q->closed && q->thread == e->site.thread && q->device == device && q->key == key && t >= q->t &&
            t - q->t <= VT_RETRY_NS && (q->size == e->size || tensor) && (!r || q->t > r->t))
            r = q;
    }
    if (r) {
        p->failed_retries++;
    } else {
        p->failed++;
        r = &p->req[p->req_next++ % VT_REQ_RECENT];
        memset(r, 0, sizeof(*r));
        r->key = key;
        r->thread = e->site.thread;
        r->device = device;
        if (valid && p->noom < VT_MAX_OOM_DETAIL) {
            vt_oom *o = &p->oom[p->noom++];
            memset(o, 0, sizeof(*o));
            o->t_first = t;
            r->detail = p->noom;
        }
    }
    r->t = t ? t : 1;
    r->size = e->size;
    r->closed = (uint8_t)tensor;
    if (oom && !r->oom) {
        r->oom = 1;
        p->failed_oom++;
    }
    if (call < VT_FAIL_MAP)
        p->fail_detail[call] = (uint8_t)r->detail;
    if (r->detail) {
        vt_oom *o = &p->oom[r->detail - 1];
        o->attempts++;
        describe_failed(p, e, device, t, o);
    }
}

static int vmm_release_now(vt_analysis *a, vt_proc *p, uint64_t handle, uint64_t t)
{
    uint64_t idx;
    if (!vt_map_del(&p->vmm_handles, handle, &idx))
        return 0;
    vt_vmm *v = &p->vmms[idx - 1];
    vt_replay_note_block(a, p, VT_BLOCK_END, v->handle, v->unit, v->size, v->t, t);
    int rc = account_free(a, p, v->unit, v->size, v->t, t);
    if (VT_GROW(p->vmm_free, p->nvmm_free, p->capvmm_free, 64))
            return VT_ERR_NOMEM;
    p->vmm_free[p->nvmm_free++] = (uint32_t)(idx - 1);
    return rc;
}

static int on_vmm_create(vt_analysis *a, vt_proc *p, const vt_ev_vmm_create *e, uint64_t t)
{
    uint32_t device = e->device, ui;
    if (!check_device(p, &device))
        return 0;
    if (vt_map_get(&p->vmm_handles, e->handle + 1)) {
        p->overlap_allocs++;
        int rc = vmm_release_now(a, p, e->handle + 1, t);
        if (rc)
            return rc;
    }
    unsigned kind = e->kind ? (e->kind < VT_MEM__COUNT ? e->kind : 0) : VT_MEM_DEVICE;
    if (!get_unit(p, e->site.stack, device, kind, VT_API_VMM, &ui))
        return p->over_budget ? VT_ERR_LIMIT : VT_ERR_NOMEM;
    uint32_t idx;
    if (p->nvmm_free) {
        idx = p->vmm_free[--p->nvmm_free];
    } else {
        if (VT_GROW(p->vmms, p->nvmms, p->capvmms, 64))
                return VT_ERR_NOMEM;
        idx = (uint32_t)p->nvmms++;
    }
    vt_vmm *v = &p->vmms[idx];
    memset(v, 0, sizeof(*v));
    v->handle = e->handle;
    v->size = clamp_size(p, e->size);
    v->t = t;
    v->unit = ui;
    if (vt_map_put(&p->vmm_handles, e->handle + 1, idx + 1))
        return VT_ERR_NOMEM;
    vt_replay_note_block(a, p, VT_BLOCK_BEGIN, v->handle, ui, v->size, t, t);
    return account_alloc(a, p, ui, v->size, t);
}

static int on_vmm_release(vt_analysis *a, vt_proc *p, const vt_ev_vmm_release *e, uint64_t t)
{
    uint64_t *idx = vt_map_get(&p->vmm_handles, e->handle + 1);
    if (!idx) {
        p->unknown_vmm_release++;
        return 0;
    }
    vt_vmm *v = &p->vmms[*idx - 1];
    if (v->released) {
        p->double_vmm_release++;
        return 0;
    }
    if (v->nmaps) { /* physical memory goes when its last mapping does */
        v->released = 1;
        return 0;
    }
    return vmm_release_now(a, p, e->handle + 1, t);
}

static int on_vmm_map(vt_proc *p, const vt_ev_vmm_map *e)
{
    uint64_t *idx = vt_map_get(&p->vmm_handles, e->handle + 1);
    if (idx)
        p->vmms[*idx - 1].nmaps++;
    uint64_t size = clamp_size(p, e->size);
    if (vt_map_put(&p->vmm_maps, e->address + 1, e->handle + 1) || vt_map_put(&p->vmm_map_size, e->address + 1, size))
        return VT_ERR_NOMEM;
    p->mapped += (int64_t)size;
    if (p->mapped > p->mapped_peak)
        p->mapped_peak = p->mapped;
    return 0;
}

static int on_vmm_unmap(vt_analysis *a, vt_proc *p, const vt_ev_vmm_range *e, uint64_t t)
{
    uint64_t h, sz = 0;
    if (!vt_map_del(&p->vmm_maps, e->address + 1, &h)) {
        p->unknown_unmaps++;
        return 0;
    }
    vt_map_del(&p->vmm_map_size, e->address + 1, &sz);
    p->mapped -= (int64_t)sz;
    uint64_t *idx = vt_map_get(&p->vmm_handles, h);
    if (!idx)
        return 0;
    vt_vmm *v = &p->vmms[*idx - 1];
    if (v->nmaps)
        v->nmaps--;
    if (!v->nmaps && v->released)
        return vmm_release_now(a, p, h, t);
    return 0;
}

static vt_pool *get_pool(vt_proc *p, uint64_t pool, uint32_t device)
{
    for (size_t i = 0; i < p->npools; i++)
        if (p->pools[i].pool == pool && p->pools[i].device == device)
            return &p->pools[i];
    if (VT_GROW(p->pools, p->npools, p->cappools, 8))
            return NULL;
    vt_pool *q = &p->pools[p->npools++];
    memset(q, 0, sizeof(*q));
    q->pool = pool;
    q->device = device;
    q->stride = 1;
    return q;
}

static int on_pool_usage(vt_proc *p, const vt_ev_pool_usage *e, uint64_t t)
{
    vt_pool *q = get_pool(p, e->pool, e->device);
    if (!q)
        return VT_ERR_NOMEM;
    if (e->reserved_current > q->reserved_high) {
        q->reserved_high = e->reserved_current;
        q->reserved_max_t = t;
    }
    if (e->reserved_high > q->reserved_high)
        q->reserved_high = e->reserved_high;
    if (e->used_current > q->used_high)
        q->used_high = e->used_current;
    if (e->used_high > q->used_high)
        q->used_high = e->used_high;
    q->reserved_last = e->reserved_current;
    q->used_last = e->used_current;
    if (!q->s) {
        q->s = calloc(VT_POOL_SAMPLES, sizeof(*q->s));
        if (!q->s)
            return VT_ERR_NOMEM;
    }
    if ((q->seen++ & (q->stride - 1)) == 0) { /* stride: a power of two */
        if (q->ns == VT_POOL_SAMPLES) { /* decimate: keep every other sample */
            for (size_t i = 0; i < VT_POOL_SAMPLES / 2; i++)
                q->s[i] = q->s[2 * i];
            q->ns = VT_POOL_SAMPLES / 2;
            q->stride *= 2;
            if (((q->seen - 1) & (q->stride - 1)) != 0)
                return 0;
        }
        q->s[q->ns].t = t;
        q->s[q->ns].reserved = e->reserved_current;
        q->s[q->ns].used = e->used_current;
        q->ns++;
    }
    return 0;
}

/* "step 12" -> "step": strip trailing digits and separators */
char *vt_nvtx_normalize(const char *m)
{
    if (!m)
        m = "";
    size_t n = strlen(m);
    while (n > 0 && strchr("0123456789 #:_-=/.", m[n - 1]))
        n--;
    if (n == 0)
        n = strlen(m);
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, m, n);
        s[n] = 0;
    }
    return s;
}

static int nvtx_stat(vt_proc *p, const char *msg, uint32_t *idx)
{
    char *norm = vt_nvtx_normalize(msg);
    if (!norm)
        return VT_ERR_NOMEM;
    for (size_t i = 0; i < p->nnvtx; i++)
        if (!strcmp(p->nvtx[i].msg, norm)) {
            free(norm);
            *idx = (uint32_t)i;
            return 0;
        }
    if (p->nnvtx >= 4096) { /* unique messages are bounded; ignore the rest */
        free(norm);
        return VT_ERR_TOO_LARGE;
    }
    if (VT_GROW(p->nvtx, p->nnvtx, p->capnvtx, 16)) {
            free(norm);
            return VT_ERR_NOMEM;
        }
    vt_nvtx_stat *s = &p->nvtx[p->nnvtx];
    memset(s, 0, sizeof(*s));
    s->msg = norm;
    s->min_depth = UINT32_MAX;
    *idx = (uint32_t)p->nnvtx++;
    return 0;
}

static uint32_t nv_thread_slot(vt_proc *p, uint32_t thread)
{
    for (uint32_t i = 0; i < p->nnv_thr; i++)
        if (p->nv_thr[i].thread == thread)
            return i;
    if (p->nnv_thr < 16) {
        p->nv_thr[p->nnv_thr].thread = thread;
        p->nv_thr[p->nnv_thr].depth = 0;
        return p->nnv_thr++;
    }
    return 15;
}

static void on_nvtx(vt_analysis *a, vt_proc *p, const vt_ev_nvtx *e, uint64_t t)
{
    if ((e->domain || e->domain_id) && vt_tests_nvtx(p, e, t))
        return; /* a test's range (vt_replay_tests.c), no step candidate */
    uint32_t ts = nv_thread_slot(p, e->site.thread);
    uint32_t *nv_depth = &p->nv_thr[ts].depth;
    vt_nvtx_open *nv_stack = p->nv_thr[ts].st;
    const char *msg = e->message ? e->message : vt_proc_string(p, e->message_id);
    uint32_t idx;
    if (e->op == VT_NVTX_POP) {
        if (*nv_depth > 0) {
            (*nv_depth)--;
            if (*nv_depth < 32) {
                vt_nvtx_open *o = &nv_stack[*nv_depth];
                if (o->msg < p->nnvtx && t >= o->t) {
                    p->nvtx[o->msg].dur_sum += t - o->t;
                    if (t > p->nvtx[o->msg].last_end)
                        p->nvtx[o->msg].last_end = t;
                }
            }
        }
        return;
    }
    if (e->op == VT_NVTX_END)
        return;
    if (p->view_mode == VT_AT_MARKER && msg && a->at_marker) {
        char *norm = vt_nvtx_normalize(msg);
        if (!strcmp(msg, a->at_marker) || (norm && !strcmp(norm, a->at_marker))) {
            cand_raise(p, t);
            p->marker_found = 1;
        }
        free(norm);
    }
    if (nvtx_stat(p, msg, &idx))
        return;
    vt_nvtx_stat *s = &p->nvtx[idx];
    uint32_t depth = e->op == VT_NVTX_PUSH ? *nv_depth : 0;
    if (!s->count || t < s->first_t)
        s->first_t = t;
    if (t > s->last_t)
        s->last_t = t;
    s->count++;
    occ_add(&s->occ, t, 1);
    if (depth < s->min_depth)
        s->min_depth = depth;
    if (e->op == VT_NVTX_PUSH) {
        if (*nv_depth < 32) {
            nv_stack[*nv_depth].msg = idx;
            nv_stack[*nv_depth].t = t;
        }
        (*nv_depth)++;
    }
}

/* cand_raise for the auto view (view_bound_update's mode test done) */
static void copy_header(vt_proc *p, const vt_ev_header *h)
{
    p->have_header = 1;
    p->pid = h->pid;
    p->trace_clock_ns = h->trace_clock_ns;
    p->realtime_ns = h->realtime_ns;
    p->ppid = h->ppid;
    free(p->host);
    p->host = xstrdup(h->hostname);
    free(p->program);
    p->program = xstrdup(h->program);
    p->format_version = h->format_version;
    free(p->tool_version);
    p->tool_version = xstrdup(h->tool_version);
    p->hdr_kernels = h->kernels;
    p->hdr_native = h->native_stacks;
    p->hdr_python = h->python_stacks;
    static const char *clocks[] = {"unknown", "cupti", "monotonic", "realtime"};
    free(p->clock);
    p->clock = xstrdup((unsigned)h->clock < 4 ? clocks[h->clock] : "unknown");
    for (uint32_t i = 0; i < p->argc; i++)
        free(p->argv[i]);
    free(p->argv);
    p->argv = NULL;
    p->argc = 0;
    if (h->argc && h->argv) {
        uint32_t n = h->argc > VT_MAX_ARGV ? VT_MAX_ARGV : h->argc;
        p->argv = calloc(n, sizeof(char *));
        if (p->argv) {
            for (uint32_t i = 0; i < n; i++)
                p->argv[i] = xstrdup(h->argv[i] ? h->argv[i] : "");
            p->argc = n;
        }
    }
    for (uint32_t i = 0; i < h->nenv && h->env_names && h->env_values; i++) {
        const char *n = h->env_names[i], *v = h->env_values[i];
        if (!n || !v)
            continue;
        if (!strcmp(n, "RANK")) {
            free(p->env_rank);
            p->env_rank = xstrdup(v);
        } else if (!strcmp(n, "WORLD_SIZE")) {
            free(p->env_world);
            p->env_world = xstrdup(v);
        } else if (!strcmp(n, "PYTORCH_CUDA_ALLOC_CONF")) {
            free(p->env_alloc_conf);
            p->env_alloc_conf = xstrdup(v);
        } else if (!strcmp(n, "XLA_PYTHON_CLIENT_ALLOCATOR")) {
            free(p->env_xla_alloc);
            p->env_xla_alloc = xstrdup(v);
        } else if (!strcmp(n, "TF_GPU_ALLOCATOR")) {
            free(p->env_tf_alloc);
            p->env_tf_alloc = xstrdup(v);
        }
    }
}

static int is_c10_path(const char *path)
{
    if (!path)
        return 0;
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    return !strncmp(b, "libc10_cuda", 11);
}

/* Everything but allocations, frees and kernels (counted by the caller). */
int feed_other(vt_analysis *a, vt_proc *p, const vt_event *ev)
{
    int rc = 0;
    uint64_t t = ev->time_ns;
    switch (ev->type) {
    case VT_EV_HEADER:
        copy_header(p, &ev->u.header);
        if (p->view_mode == VT_AT_AUTO && !ev->u.header.kernels)
            p->view_mode = VT_AT_END;
        view_bound_update(p);
        return 0;
    case VT_EV_SYNC:
        if (!p->have_t0) {
            p->have_t0 = 1;
            p->t0 = ev->u.sync.time_ns;
        }
        if (ev->u.sync.time_ns > p->t_last)
            p->t_last = ev->u.sync.time_ns;
        return 0;
    case VT_EV_STRING: {
        const vt_ev_string *s = &ev->u.string;
        if ((rc = grow_table((void **)&p->strings, &p->nstrings, sizeof(char *), s->id)))
            return rc == VT_ERR_CORRUPT ? 0 : rc;
        free(p->strings[s->id]);
        size_t len = s->value ? (s->len ? s->len : strlen(s->value)) : 0;
        p->strings[s->id] = malloc(len + 1);
        if (!p->strings[s->id])
            return VT_ERR_NOMEM;
        if (len)
            memcpy(p->strings[s->id], s->value, len);
        p->strings[s->id][len] = 0;
        return 0;
    }
    case VT_EV_FRAME: {
        const vt_ev_frame *f = &ev->u.frame;
        if ((rc = grow_table((void **)&p->frames, &p->nframes, sizeof(vt_pframe), f->id)))
            return rc == VT_ERR_CORRUPT ? 0 : rc;
        vt_pframe *d = &p->frames[f->id];
        d->kind = f->kind;
        d->ip = f->ip;
        d->module = f->module;
        d->function = f->function;
        d->file = f->file;
        d->line = f->line;
        return 0;
    }
    case VT_EV_STACK: {
        const vt_ev_stack *s = &ev->u.stack;
        if ((rc = grow_table((void **)&p->stacks, &p->nstacks, sizeof(vt_pstack), s->id)))
            return rc == VT_ERR_CORRUPT ? 0 : rc;
        vt_pstack *d = &p->stacks[s->id];
        free(d->frames);
        d->frames = NULL;
        d->nframes = 0;
        if (s->nframes) {
            d->frames = malloc(s->nframes * sizeof(uint32_t));
            if (!d->frames)
                return VT_ERR_NOMEM;
            memcpy(d->frames, s->frames, s->nframes * sizeof(uint32_t));
            d->nframes = s->nframes;
        }
        d->parent = s->parent;
        return 0;
    }
    case VT_EV_MODULE: {
        const vt_ev_module *m = &ev->u.module;
        if ((rc = grow_table((void **)&p->modules, &p->nmodules, sizeof(vt_pmodule), m->id)))
            return rc == VT_ERR_CORRUPT ? 0 : rc;
        vt_pmodule *d = &p->modules[m->id];
        free(d->path);
        free(d->build_id);
        d->path = xstrdup(m->path ? m->path : "");
        d->load_bias = m->load_bias;
        d->start = m->start;
        d->end = m->end;
        d->build_id = NULL;
        d->build_id_len = 0;
        if (m->build_id_len && m->build_id) {
            d->build_id = malloc(m->build_id_len);
            if (d->build_id) {
                memcpy(d->build_id, m->build_id, m->build_id_len);
                d->build_id_len = m->build_id_len;
            }
        }
        d->c10 = is_c10_path(d->path);
        const char *base = strrchr(d->path, '/');
        d->alloc_lib = d->c10 || !strncmp(base ? base + 1 : d->path, "libvt_torch", 11);
        d->pool = vt_pool_of_path(d->path);
        return 0;
    }
    case VT_EV_LAUNCH: {
        const vt_ev_launch *l = &ev->u.launch;
        if ((rc = grow_table((void **)&p->launch_name, &p->nlaunches, sizeof(uint32_t), l->id)))
            return rc == VT_ERR_CORRUPT ? 0 : rc;
        p->launch_name[l->id] = l->name;
        return 0;
    }
    case VT_EV_DEVICE: {
        const vt_ev_device *d = &ev->u.device;
        if (d->index >= VT_MAX_DEVICES) {
            p->bad_device++; /* shown among the oddities */
            return 0;
        }
        vt_devstate *s = &p->dev[d->index];
        s->present = 1;
        free(s->name);
        s->name = xstrdup(d->name ? d->name : "");
        s->total = d->total_memory;
        s->cc_major = d->cc_major;
        s->cc_minor = d->cc_minor;
        if (d->index + 1 > p->ndev_seen)
            p->ndev_seen = d->index + 1;
        return 0;
    }
    case VT_EV_THREAD:
        if (p->nthr < sizeof(p->thr) / sizeof(p->thr[0])) {
            p->thr[p->nthr].id = ev->u.thread.id;
            p->thr[p->nthr].tid = ev->u.thread.tid;
            snprintf(p->thr[p->nthr].name, sizeof(p->thr[0].name), "%s", ev->u.thread.name ? ev->u.thread.name : "");
            p->nthr++;
        }
        return 0;
    default:
        break;
    }
    /* timed events */
    if (!p->have_t0) {
        p->have_t0 = 1;
        p->t0 = t;
    }
    if (t > p->t_last && ev->type != VT_EV_KERNEL)
        p->t_last = t;
    if (ev->type != VT_EV_KERNEL && ev->type != VT_EV_MEMORY_USAGE && ev->type != VT_EV_POOL_USAGE) {
        if (t > p->t_seq)
            p->t_seq = t;
        else if (t < p->t_seq)
            time_back_note(p, t, p->t_seq);
    }
    switch (ev->type) {
    case VT_EV_ALLOC_FAILED:
        on_failed(p, &ev->u.alloc_failed, t);
        break;
    case VT_EV_VMM_CREATE:
        rc = on_vmm_create(a, p, &ev->u.vmm_create, t);
        break;
    case VT_EV_VMM_RELEASE:
        rc = on_vmm_release(a, p, &ev->u.vmm_release, t);
        break;
    case VT_EV_VMM_MAP:
        rc = on_vmm_map(p, &ev->u.vmm_map);
        break;
    case VT_EV_VMM_UNMAP:
        rc = on_vmm_unmap(a, p, &ev->u.vmm_range, t);
        break;
    case VT_EV_VMM_RESERVE:
    {
        uint64_t size = clamp_size(p, ev->u.vmm_range.size);
        if (vt_map_put(&p->vmm_reserves, ev->u.vmm_range.address + 1, size))
            return VT_ERR_NOMEM;
        p->va_reserved += (int64_t)size;
    }
        if (p->va_reserved > p->va_reserved_peak)
            p->va_reserved_peak = p->va_reserved;
        break;
    case VT_EV_VMM_ADDRESS_FREE: {
        uint64_t sz;
        if (vt_map_del(&p->vmm_reserves, ev->u.vmm_range.address + 1, &sz))
            p->va_reserved -= (int64_t)sz;
        break;
    }
    case VT_EV_POOL: {
        vt_pool *q = get_pool(p, ev->u.pool.pool, ev->u.pool.device);
        if (!q)
            return VT_ERR_NOMEM;
        if (ev->u.pool.op == VT_POOL_CREATE)
            q->creates++;
        else if (ev->u.pool.op == VT_POOL_DESTROY)
            q->destroys++;
        else if (ev->u.pool.op == VT_POOL_TRIM)
            q->trims++;
        break;
    }
    case VT_EV_POOL_USAGE:
        rc = on_pool_usage(p, &ev->u.pool_usage, t);
        break;
    case VT_EV_NVTX:
        on_nvtx(a, p, &ev->u.nvtx, t);
        if (p->tensor_units) /* allocated vs reserved at every mark and range */
            for (uint32_t dv = 0; dv < p->ndev_seen && dv < VT_MAX_DEVICES; dv++)
                if (p->dev[dv].reserved || p->dev[dv].live[VT_MEM_TENSOR])
                    alloc_series_point(p, &p->dev[dv], t);
        break;
    case VT_EV_MEMORY_USAGE: {
        uint32_t dv = ev->u.memory_usage.device;
        if (dv >= VT_MAX_DEVICES)
            break;
        vt_devstate *d = &p->dev[dv];
        const vt_ev_memory_usage *m = &ev->u.memory_usage;
        uint64_t used = m->total > m->free ? m->total - m->free : 0;
        d->drv_samples++;
        d->drv_total = m->total;
        d->drv_last_free = m->free;
        d->drv_last_t = t;
        if (p->tensor_units && (d->reserved || d->live[VT_MEM_TENSOR]))
            alloc_series_point(p, d, t);
        if (used > d->drv_max_used || d->drv_samples == 1) {
            d->drv_max_used = used;
            d->drv_max_t = t;
            d->drv_traced_then = d->live_dev;
        }
        break;
    }
    case VT_EV_DROPPED:
        if ((unsigned)ev->u.dropped.source < 4)
            p->dropped[ev->u.dropped.source] += ev->u.dropped.count;
        break;
    case VT_EV_NOTE:
        add_note(p, ev->u.note.severity, ev->u.note.text);
        break;
    case VT_EV_END:
        p->complete = 1;
        p->end_reason = ev->u.end.reason;
        p->end_signal = ev->u.end.signal;
        p->end_events = ev->u.end.events;
        p->end_dropped = ev->u.end.dropped;
        break;
    default:
        break;
    }
    return rc;
}
