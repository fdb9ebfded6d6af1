/* vt_writer_encode.c - ring entries into records, and the merge of every
 * ring by time (one round of the encoder). */
#include "vt_writer_int.h"
#include "vt_grow.h"
/* ------------------------------------------------------ entry -> record */

/* Turn the offsets stored by vt_push back into pointers. */
static inline const void *vt_fix(const vt_ent *e, const void *field)
{
    uintptr_t off = (uintptr_t)field;
    return off ? (const unsigned char *)e + off : NULL;
}

static int vt_enc_entry(vt_writer *w, vt_ring *ring, const vt_ent *e);

/* A short entry, expanded into the generic one it stands for. */
static int vt_enc_short(vt_writer *w, vt_ring *ring, const vt_sent *s)
{
    struct {
        vt_ent h;
        union {
            vt_ev_alloc alloc;
            vt_ev_free free;
        } u;
    } x;
    const int alloc = s->type == VT_ENT_ALLOC_S;
    x.h = (vt_ent){.size = sizeof(x), .type = alloc ? VT_EV_ALLOC : VT_EV_FREE, .sref = s->sref, .tid = s->tid,
                   .key = s->key, .time = s->key};
    const vt_site site = {.tid = s->tid};
    const vt_memkind kind = (vt_memkind)s->kind;
    const vt_allocapi api = (vt_allocapi)s->api;
    if (alloc)
        x.u.alloc = (vt_ev_alloc){.address = s->address, .size = s->bytes, .device = s->device, .kind = kind,
                                  .api = api, .stream = s->stream, .pool = s->pool, .corr = s->corr, .site = site};
    else
        x.u.free = (vt_ev_free){.address = s->address, .device = s->device, .kind = kind, .api = api,
                                .stream = s->stream, .corr = s->corr, .site = site};
    return vt_enc_entry(w, ring, &x.h);
}

static int vt_enc_entry(vt_writer *w, vt_ring *ring, const vt_ent *e)
{
    if (e->type == VT_ENT_ALLOC_S || e->type == VT_ENT_FREE_S)
        return vt_enc_short(w, ring, (const vt_sent *)e);
    const vt_layout *L = vt_layout_of(e->type);
    if (!L)
        return 0;
    union {
        vt_ev_alloc alloc;
        vt_ev_free free;
        vt_ev_alloc_failed af;
        vt_ev_vmm_range vr;
        vt_ev_vmm_create vc;
        vt_ev_vmm_release vrel;
        vt_ev_vmm_map vm;
        vt_ev_pool pool;
        vt_ev_pool_usage pu;
        vt_ev_memory_usage mu;
        vt_ev_kernel k;
        vt_ev_nvtx nvtx;
        vt_ev_module mod;
        vt_ev_thread th;
        vt_ev_device dev;
        vt_ev_dropped drop;
        vt_ev_note note;
        vt_code_payload code;
    } u;
    memcpy(&u, e + 1, L->size);
    unsigned char *ub = (unsigned char *)&u;
    for (int i = 0; i < 2; i++) {
        if (L->str[i] < 0)
            continue;
        const void *p;
        memcpy(&p, ub + L->str[i], sizeof(p));
        p = vt_fix(e, p);
        memcpy(ub + L->str[i], &p, sizeof(p));
    }
    vt_site *site = NULL;
    if (L->site >= 0) {
        site = (vt_site *)(ub + L->site);
        site->frames = vt_fix(e, site->frames);
    }
    if (e->type == VT_EV_MODULE)
        u.mod.build_id = vt_fix(e, u.mod.build_id);

    int rc = vt_enc_frame_check(w);
    if (!rc && e->type != VT_EV_KERNEL && e->type != VT_ENT_CODE)
        rc = vt_enc_kbatch(w); /* before this event's deltas are taken (corr is shared) */
    if (rc)
        return rc;

    uint32_t thread = 0, stack = 0;
    int want_stack = 0;
    switch (e->type) {
    case VT_EV_ALLOC: case VT_EV_FREE: case VT_EV_ALLOC_FAILED: case VT_EV_VMM_RESERVE:
    case VT_EV_VMM_CREATE: case VT_EV_POOL:
        want_stack = 1;
        break;
    default:
        break;
    }
    if (site) {
        if (e->sref) { /* a definition is remembered whatever the event */
            rc = vt_in_site_ref(w, ring, site, e, &thread, &stack);
            if (!want_stack)
                stack = 0;
        } else {
            rc = vt_in_site(w, site, e->nwords, want_stack, &thread, &stack);
        }
        if (rc)
            return rc;
    }

    Vramtrace__Record r = VRAMTRACE__RECORD__INIT;
    r.body_case = (Vramtrace__Record__BodyCase)e->type;
    union {
        Vramtrace__AllocFailed af;
        Vramtrace__VmmReserve vres;
        Vramtrace__VmmAddressFree vaf;
        Vramtrace__VmmUnmap vun;
        Vramtrace__VmmCreate vc;
        Vramtrace__VmmRelease vrel;
        Vramtrace__VmmMap vm;
        Vramtrace__Pool pool;
        Vramtrace__PoolUsage pu;
        Vramtrace__MemoryUsage mu;
        Vramtrace__Nvtx nvtx;
        Vramtrace__Device dev;
        Vramtrace__Dropped drop;
        Vramtrace__Note note;
    } m;
    switch (e->type) {
    case VT_EV_ALLOC: { /* joins the pending MemBlock */
        vt_mctx c = {.stream = u.alloc.stream, .pool = u.alloc.pool, .device = u.alloc.device, .thread = thread,
                     .kind = (uint32_t)u.alloc.kind, .api = (uint32_t)u.alloc.api};
        return vt_enc_mem(w, &c, e->time, u.alloc.address, u.alloc.size, stack, u.alloc.corr);
    }
    case VT_EV_FREE: {
        vt_mctx c = {.stream = u.free.stream, .device = u.free.device, .thread = thread, .stack = stack,
                     .free = 1, .kind = (uint32_t)u.free.kind, .api = (uint32_t)u.free.api};
        return vt_enc_mem(w, &c, e->time, u.free.address, 0, 0, u.free.corr);
    }
    case VT_EV_ALLOC_FAILED: {
        Vramtrace__AllocFailed x = VRAMTRACE__ALLOC_FAILED__INIT;
        rc = vt_in_cstr(w, u.af.error_name, &x.error_name);
        if (rc)
            return rc;
        x.size = u.af.size;
        x.device = u.af.device;
        x.kind = (Vramtrace__MemoryKind)u.af.kind;
        x.api = (Vramtrace__AllocApi)u.af.api;
        x.error = u.af.error;
        x.stream = u.af.stream;
        x.pool = u.af.pool;
        x.thread = thread;
        x.stack = stack;
        x.corr = vt_d_corr(w, u.af.corr);
        m.af = x;
        r.alloc_failed = &m.af;
        break;
    }
    case VT_EV_VMM_RESERVE: {
        Vramtrace__VmmReserve x = VRAMTRACE__VMM_RESERVE__INIT;
        x.address = u.vr.address;
        x.size = u.vr.size;
        x.thread = thread;
        x.stack = stack;
        x.corr = vt_d_corr(w, u.vr.corr);
        m.vres = x;
        r.vmm_reserve = &m.vres;
        break;
    }
    case VT_EV_VMM_ADDRESS_FREE: {
        Vramtrace__VmmAddressFree x = VRAMTRACE__VMM_ADDRESS_FREE__INIT;
        x.address = u.vr.address;
        x.size = u.vr.size;
        x.thread = thread;
        x.corr = vt_d_corr(w, u.vr.corr);
        m.vaf = x;
        r.vmm_address_free = &m.vaf;
        break;
    }
    case VT_EV_VMM_UNMAP: {
        Vramtrace__VmmUnmap x = VRAMTRACE__VMM_UNMAP__INIT;
        x.address = u.vr.address;
        x.size = u.vr.size;
        x.thread = thread;
        x.corr = vt_d_corr(w, u.vr.corr);
        m.vun = x;
        r.vmm_unmap = &m.vun;
        break;
    }
    case VT_EV_VMM_CREATE: {
        Vramtrace__VmmCreate x = VRAMTRACE__VMM_CREATE__INIT;
        x.handle = u.vc.handle;
        x.size = u.vc.size;
        x.device = u.vc.device;
        x.kind = (Vramtrace__MemoryKind)u.vc.kind;
        x.thread = thread;
        x.stack = stack;
        x.corr = vt_d_corr(w, u.vc.corr);
        m.vc = x;
        r.vmm_create = &m.vc;
        break;
    }
    case VT_EV_VMM_RELEASE: {
        Vramtrace__VmmRelease x = VRAMTRACE__VMM_RELEASE__INIT;
        x.handle = u.vrel.handle;
        x.thread = thread;
        x.corr = vt_d_corr(w, u.vrel.corr);
        m.vrel = x;
        r.vmm_release = &m.vrel;
        break;
    }
    case VT_EV_VMM_MAP: {
        Vramtrace__VmmMap x = VRAMTRACE__VMM_MAP__INIT;
        x.address = u.vm.address;
        x.size = u.vm.size;
        x.offset = u.vm.offset;
        x.handle = u.vm.handle;
        x.thread = thread;
        x.corr = vt_d_corr(w, u.vm.corr);
        m.vm = x;
        r.vmm_map = &m.vm;
        break;
    }
    case VT_EV_POOL: {
        Vramtrace__Pool x = VRAMTRACE__POOL__INIT;
        x.op = (Vramtrace__PoolOp)u.pool.op;
        x.pool = u.pool.pool;
        x.device = u.pool.device;
        x.value = u.pool.value;
        x.thread = thread;
        x.stack = stack;
        x.corr = vt_d_corr(w, u.pool.corr);
        m.pool = x;
        r.pool = &m.pool;
        break;
    }
    case VT_EV_POOL_USAGE: {
        Vramtrace__PoolUsage x = VRAMTRACE__POOL_USAGE__INIT;
        x.pool = u.pu.pool;
        x.device = u.pu.device;
        x.reserved_current = u.pu.reserved_current;
        x.reserved_high = u.pu.reserved_high;
        x.used_current = u.pu.used_current;
        x.used_high = u.pu.used_high;
        m.pu = x;
        r.pool_usage = &m.pu;
        break;
    }
    case VT_EV_MEMORY_USAGE: {
        Vramtrace__MemoryUsage x = VRAMTRACE__MEMORY_USAGE__INIT;
        x.device = u.mu.device;
        x.free = u.mu.free;
        x.total = u.mu.total;
        m.mu = x;
        r.memory_usage = &m.mu;
        break;
    }
    case VT_EV_KERNEL: {
        /* definitions first (they flush kernels still pending), then the
         * kernel joins the pending batch */
        uint32_t launch;
        rc = vt_in_launch(w, &u.k, &launch);
        if (rc)
            return rc;
        return vt_enc_kernel(w, launch, &u.k, e->time);
    }
    case VT_EV_NVTX: {
        Vramtrace__Nvtx x = VRAMTRACE__NVTX__INIT;
        rc = vt_in_cstr(w, u.nvtx.message, &x.message);
        if (!rc)
            rc = vt_in_cstr(w, u.nvtx.domain, &x.domain);
        if (rc)
            return rc;
        x.op = (Vramtrace__NvtxOp)u.nvtx.op;
        x.range_id = u.nvtx.range_id;
        x.thread = thread;
        m.nvtx = x;
        r.nvtx = &m.nvtx;
        break;
    }
    case VT_EV_DEVICE: {
        Vramtrace__Device x = VRAMTRACE__DEVICE__INIT;
        x.index = u.dev.index;
        x.name = (char *)(u.dev.name ? u.dev.name : "");
        x.uuid.data = u.dev.uuid;
        x.uuid.len = sizeof(u.dev.uuid);
        x.total_memory = u.dev.total_memory;
        x.cc_major = u.dev.cc_major;
        x.cc_minor = u.dev.cc_minor;
        x.pci_bus_id = (char *)(u.dev.pci_bus_id ? u.dev.pci_bus_id : "");
        m.dev = x;
        r.device = &m.dev;
        break;
    }
    case VT_EV_DROPPED: {
        Vramtrace__Dropped x = VRAMTRACE__DROPPED__INIT;
        rc = vt_in_cstr(w, u.drop.reason, &x.reason);
        if (rc)
            return rc;
        x.source = (Vramtrace__DropSource)u.drop.source;
        x.count = u.drop.count;
        w->other_dropped += u.drop.count;
        m.drop = x;
        r.dropped = &m.drop;
        break;
    }
    case VT_EV_NOTE: {
        Vramtrace__Note x = VRAMTRACE__NOTE__INIT;
        x.severity = (Vramtrace__Severity)u.note.severity;
        x.text = (char *)(u.note.text ? u.note.text : "");
        m.note = x;
        r.note = &m.note;
        break;
    }
    case VT_EV_MODULE:
        w->events++;
        return vt_in_module(w, &u.mod);
    case VT_EV_THREAD: {
        uint32_t id;
        w->events++;
        return vt_in_thread(w, u.th.tid ? u.th.tid : e->tid, u.th.name ? u.th.name : "", &id);
    }
    case VT_ENT_CODE:
        return vt_in_code(w, &u.code);
    default:
        return 0;
    }
    if (L->timed == 1)
        r.ts_delta = vt_d_host(w, e->time);
    else if (L->timed == 2)
        r.ts_delta = vt_d_dev(w, e->time);
    rc = vt_enc_put(w, &r);
    if (!rc)
        w->events++; /* every accepted emit counts, DEVICE included */
    return rc;
}

/* Process one ring entry; an entry the encoder cannot intern without
 * allocating (signal mode) is dropped and counted. */
static int vt_enc_one(vt_writer *w, vt_ring *r, const vt_ent *e)
{
    int rc = vt_enc_entry(w, r, e);
    if (rc == VT_ERR_NOMEM) {
        w->enc_dropped++;
        return 0;
    }
    return rc;
}

static uint64_t vt_queue_drops(vt_writer *w)
{
    uint64_t n = atomic_load_explicit(&w->noring_dropped, memory_order_relaxed) + w->enc_dropped;
    for (vt_ring *r = atomic_load_explicit(&w->rings, memory_order_acquire); r; r = r->next)
        n += atomic_load_explicit(&r->dropped, memory_order_relaxed);
    return n;
}

int vt_enc_report_drops(vt_writer *w)
{
    uint64_t n = vt_queue_drops(w);
    if (n == w->drops_reported)
        return 0;
    Vramtrace__Dropped d = VRAMTRACE__DROPPED__INIT;
    d.source = VRAMTRACE__DROP_SOURCE__DROP_WRITER_QUEUE;
    d.count = n - w->drops_reported;
    VT_REC(r, dropped, DROPPED, d);
    int rc = vt_enc_put(w, &r); /* ts_delta 0: at the current host time */
    if (!rc)
        w->drops_reported = n;
    return rc;
}

/* Drain in signal mode: ring by ring, no merge (no allocation). */
void vt_enc_drain_simple(vt_writer *w)
{
    for (vt_ring *r = atomic_load_explicit(&w->rings, memory_order_acquire); r; r = r->next) {
        if (!r->data)
            continue;
        uint64_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
        uint64_t lim = atomic_load_explicit(&r->head, memory_order_acquire);
        while (pos < lim) {
            const vt_ent *e = (const vt_ent *)(r->data + (pos & (r->cap - 1)));
            if (e->type != VT_ENT_PAD && vt_enc_one(w, r, e))
                return;
            pos += e->size;
            atomic_store_explicit(&r->tail, pos, memory_order_release);
        }
    }
}

static inline void vt_cursor_key(vt_cursor *c)
{
    while (c->pos < c->lim) {
        const vt_ent *e = (const vt_ent *)(c->ring->data + (c->pos & (c->ring->cap - 1)));
        if (e->type != VT_ENT_PAD) {
            c->key = e->key;
            return;
        }
        c->pos += e->size;
        atomic_store_explicit(&c->ring->tail, c->pos, memory_order_release);
    }
}

/* One round: everything published in every ring at the start, merged by
 * key (host time) so that frees and allocations from different threads
 * stay in order.  Returns entries processed or a negative error. */
long vt_enc_round(vt_writer *w)
{
    size_t n = 0;
    for (vt_ring *r = atomic_load_explicit(&w->rings, memory_order_acquire); r; r = r->next) {
        if (VT_GROW(w->cur, n, w->cap_cur, 16))
            break; /* the other rings wait for the next round */
        vt_cursor *c = &w->cur[n];
        c->ring = r;
        c->pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
        c->lim = atomic_load_explicit(&r->head, memory_order_acquire);
        vt_cursor_key(c);
        if (c->pos < c->lim)
            n++;
    }
    long done = 0;
    while (n) {
        size_t b = 0;
        for (size_t i = 1; i < n; i++)
            if (w->cur[i].key < w->cur[b].key)
                b = i;
        vt_cursor *c = &w->cur[b];
        const vt_ent *e = (const vt_ent *)(c->ring->data + (c->pos & (c->ring->cap - 1)));
        int rc = vt_enc_one(w, c->ring, e);
        if (rc)
            return rc;
        c->pos += e->size;
        atomic_store_explicit(&c->ring->tail, c->pos, memory_order_release);
        vt_cursor_key(c);
        if (c->pos >= c->lim)
            w->cur[b] = w->cur[--n];
        if ((++done & 1023) == 0 && atomic_load_explicit(&w->emerg_sig, memory_order_relaxed)) {
            /* a fatal signal waits: drain for a bounded time only */
            uint64_t now = vt_mono_ns();
            if (!w->emerg_deadline)
                w->emerg_deadline = now + VT_EMERGENCY_DRAIN_NS;
            if (now >= w->emerg_deadline)
                break;
        }
    }
    return done;
}

/* Count what is left in the rings as dropped (the emergency flush ran out
 * of time) so that written + dropped still equals emitted. */
void vt_enc_discard_rest(vt_writer *w)
{
    for (vt_ring *r = atomic_load_explicit(&w->rings, memory_order_acquire); r; r = r->next) {
        if (!r->data)
            continue;
        uint64_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
        uint64_t lim = atomic_load_explicit(&r->head, memory_order_acquire);
        while (pos < lim) {
            const vt_ent *e = (const vt_ent *)(r->data + (pos & (r->cap - 1)));
            if (e->type != VT_ENT_PAD && e->type != VT_ENT_CODE)
                w->enc_dropped++;
            pos += e->size;
        }
        atomic_store_explicit(&r->tail, pos, memory_order_release);
    }
}

/* Final records: drop count, End, end of the zstd frame. */
int vt_enc_finish(vt_writer *w, vt_endreason reason, int sig)
{
    if (w->ended)
        return 0;
    int rc = vt_enc_report_drops(w);
    if (!rc) {
        Vramtrace__End m = VRAMTRACE__END__INIT;
        m.reason = (Vramtrace__EndReason)reason;
        m.signal = sig;
        m.events = w->events;
        m.dropped = w->drops_reported + w->other_dropped;
        VT_REC(r, end, END, m);
        r.ts_delta = vt_d_host(w, vt_tnow(w));
        rc = vt_enc_put(w, &r);
    }
    if (!rc)
        rc = vt_enc_feed(w, ZSTD_e_end);
    w->ended = 1;
    w->dirty = 0;
    return rc;
}
