/* vt_inject_activity.c - CUPTI activity records: kernels and module
 * globals (MEMORY2), drained on our own thread (`vt-drain`). */
#include "vt_inject_int.h"
#include "vt_actmux.h"
#include "vt_got.h"

/* ----------------------------------------------------------------- activity */

void CUPTIAPI on_buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
    *max_records = 0;
    *size = 0;
    *buf = NULL;
    if (vt_actmux_request(buf, size, max_records))
        return; /* a second CUPTI client's buffer (vt_actmux.h) */
    void *p = NULL;
    if (posix_memalign(&p, 8, VT_ACT_BUF_BYTES) == 0) {
        *buf = p;
        *size = VT_ACT_BUF_BYTES;
    }
}

/* ---- a second client's clock --------------------------------------------
 * CUPTI stamps activity records with one clock, the last one registered:
 * once torch.profiler (Kineto) registers its own, kernels' times are on
 * its clock (raw TSC cycles or nanoseconds).  Buffers completed after
 * that are mapped back to ours, linearly through two pairs of readings of
 * both clocks: one taken when it registered, the other the latest. */
static struct {
    _Atomic int on;
    uint64_t (*fn)(void);
    pthread_mutex_t mu;
    vt_clock_map map; /* under mu */
} gclk = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* a reading of both clocks: the guest's between two of ours, the
 * tightest of three */
static void clock_pair(uint64_t (*fn)(void), uint64_t *gt, uint64_t *ot)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 3; i++) {
        uint64_t a = g.clk(), x = fn(), b = g.clk();
        if (b - a < best) {
            best = b - a;
            *gt = x;
            *ot = a + (b - a) / 2;
        }
    }
}

/* the map for a buffer: off for one completed before the guest's clock,
 * else with the latest reading of both clocks */
static void clock_map_now(vt_clock_map *m, int guest_clock)
{
    if (!guest_clock || !atomic_load(&gclk.on)) {
        m->on = 0;
        return;
    }
    uint64_t gt, ot;
    clock_pair(gclk.fn, &gt, &ot);
    pthread_mutex_lock(&gclk.mu);
    if (gt > gclk.map.g0 + 1000000) { /* a span long enough for the rate */
        gclk.map.g1 = gt;
        gclk.map.o1 = ot;
    }
    *m = gclk.map;
    pthread_mutex_unlock(&gclk.mu);
    m->on = 1;
}

static void on_kernel(const CUpti_ActivityKernel10 *k, const vt_clock_map *cm)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_KERNEL;
    uint64_t start = vt_clock_map_apply(cm, k->start), end = vt_clock_map_apply(cm, k->end);
    ev.time_ns = start;
    ev.u.kernel.name = k->name ? k->name : "?";
    ev.u.kernel.device = k->deviceId;
    ev.u.kernel.stream = k->streamId;
    ev.u.kernel.grid[0] = (uint32_t)k->gridX;
    ev.u.kernel.grid[1] = (uint32_t)k->gridY;
    ev.u.kernel.grid[2] = (uint32_t)k->gridZ;
    ev.u.kernel.block[0] = (uint32_t)k->blockX;
    ev.u.kernel.block[1] = (uint32_t)k->blockY;
    ev.u.kernel.block[2] = (uint32_t)k->blockZ;
    ev.u.kernel.shared_memory = (uint32_t)(k->staticSharedMemory + k->dynamicSharedMemory);
    ev.u.kernel.graph = k->graphId != 0;
    ev.u.kernel.graph_id = k->graphId;
    ev.u.kernel.duration_ns = end > start ? end - start : 0;
    ev.u.kernel.corr = k->correlationId;
    vt_inject_emit(&ev);
}

static void on_memory(const CUpti_ActivityMemory4 *m, const vt_clock_map *cm)
{
    if (m->memoryKind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC)
        return;
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.time_ns = vt_clock_map_apply(cm, m->timestamp);
    if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) {
        ev.type = VT_EV_ALLOC;
        ev.u.alloc.address = m->address;
        ev.u.alloc.size = m->bytes;
        ev.u.alloc.device = m->deviceId;
        ev.u.alloc.kind = VT_MEM_DEVICE_STATIC;
        ev.u.alloc.api = VT_API_MODULE_GLOBAL;
        ev.u.alloc.corr = m->correlationId;
    } else if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) {
        ev.type = VT_EV_FREE;
        ev.u.free.address = m->address;
        ev.u.free.device = m->deviceId;
        ev.u.free.kind = VT_MEM_DEVICE_STATIC;
        ev.u.free.api = VT_API_MODULE_GLOBAL;
        ev.u.free.corr = m->correlationId;
    } else {
        return;
    }
    vt_inject_emit(&ev);
}

vt_act_state act = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .idle_cv = PTHREAD_COND_INITIALIZER};

#define VT_ACT_PACE 2048 /* records between writer flushes in the drain thread */

static void process_buffer(uint8_t *buf, size_t valid, int may_wait, int guest_clock)
{
    CUpti_Activity *rec = NULL;
    uint64_t n = 0, c0 = __rdtsc();
    vt_clock_map cm = {0, 0, 0, 0, 0};
    clock_map_now(&cm, guest_clock);
    while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
        switch (rec->kind) {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        case CUPTI_ACTIVITY_KIND_KERNEL: on_kernel((const CUpti_ActivityKernel10 *)rec, &cm); break;
        case CUPTI_ACTIVITY_KIND_MEMORY2: on_memory((const CUpti_ActivityMemory4 *)rec, &cm); break;
        default: break;
        }
        if (may_wait && (++n % VT_ACT_PACE) == 0)
            vt_writer_flush(g.w); /* let the writer drain our ring */
    }
    act.cycles += __rdtsc() - c0;
    act.records += n;
    act.buffers++;
}

void *drain_main(void *arg)
{
    (void)arg;
    t_in.internal = 1;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pthread_mutex_lock(&act.mu);
    for (;;) {
        while (!act.head && !act.stop)
            pthread_cond_wait(&act.cv, &act.mu);
        act_buf *b = act.head;
        if (!b)
            break; /* stop with an empty queue */
        act.head = b->next;
        if (!act.head)
            act.tail = NULL;
        act.busy = 1;
        pthread_mutex_unlock(&act.mu);
        if (g.w)
            process_buffer(b->buf, b->valid, 1, b->guest_clock);
        free(b->buf);
        free(b);
        pthread_mutex_lock(&act.mu);
        act.busy = 0;
        if (!act.head)
            pthread_cond_broadcast(&act.idle_cv);
    }
    pthread_mutex_unlock(&act.mu);
    return NULL;
}

/* Wait until the drain thread has processed everything queued so far. */
void drain_wait_idle(void)
{
    if (!act.started)
        return;
    pthread_mutex_lock(&act.mu);
    while (act.head || act.busy)
        pthread_cond_wait(&act.idle_cv, &act.mu);
    pthread_mutex_unlock(&act.mu);
}

void CUPTIAPI on_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
    int saved = t_in.internal;
    t_in.internal = 1;
    if (buf && vt_actmux_take(buf)) {
        /* the second client's: our records read now, then it goes back */
        if (valid && g.w)
            process_buffer(buf, valid, 0, atomic_load(&gclk.on));
        vt_actmux_give(ctx, stream, buf, size, valid);
        t_in.internal = saved;
        return;
    }
#ifdef VT_BENCH_DISCARD_ACTIVITY /* benchmarks only (bench/inject.cmake): buffers freed unread */
    valid = 0;
#endif
    if (buf && valid && g.w) {
        act_buf *b = act.started ? malloc(sizeof(*b)) : NULL;
        if (b) {
            b->next = NULL;
            b->buf = buf;
            b->valid = valid;
            b->guest_clock = atomic_load(&gclk.on);
            pthread_mutex_lock(&act.mu);
            if (act.tail)
                act.tail->next = b;
            else
                act.head = b;
            act.tail = b;
            pthread_cond_signal(&act.cv);
            pthread_mutex_unlock(&act.mu);
            buf = NULL; /* the drain thread frees it */
        } else {
            process_buffer(buf, valid, 0, atomic_load(&gclk.on));
        }
        size_t dropped = 0;
        if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped) {
            vt_event ev;
            memset(&ev, 0, sizeof(ev));
            ev.type = VT_EV_DROPPED;
            ev.u.dropped.source = VT_DROP_CUPTI_ACTIVITY;
            ev.u.dropped.count = dropped;
            ev.u.dropped.reason = "CUPTI activity buffer full";
            vt_inject_emit(&ev);
        }
    }
    free(buf);
    (void)size;
    t_in.internal = saved;
}

/* ---- a second CUPTI client (vt_actmux.h) ------------------------------
 * Other libraries' calls of these go here once share_cupti() has set
 * their GOT slots; CUPTI itself is called through act_real. */
static CUptiResult CUPTIAPI guest_register(CUpti_BuffersCallbackRequestFunc req, CUpti_BuffersCallbackCompleteFunc done)
{
    vt_actmux_register((vt_actmux_req_fn)req, (vt_actmux_done_fn)done);
    return CUPTI_SUCCESS;
}

static CUptiResult CUPTIAPI guest_enable(CUpti_ActivityKind kind)
{
    return (CUptiResult)vt_actmux_enable((int)kind);
}

static CUptiResult CUPTIAPI guest_disable(CUpti_ActivityKind kind)
{
    return (CUptiResult)vt_actmux_disable((int)kind);
}

static CUptiResult CUPTIAPI guest_subscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc fn, void *ud)
{
    if (!sub)
        return CUPTI_ERROR_INVALID_PARAMETER;
    int rc = vt_actmux_subscribe((vt_actmux_cb_fn)fn, ud);
    if (rc == 0)
        *sub = (CUpti_SubscriberHandle)vt_actmux_sub;
    return (CUptiResult)rc;
}

static CUptiResult CUPTIAPI guest_unsubscribe(CUpti_SubscriberHandle sub)
{
    if ((void *)sub != vt_actmux_sub)
        return cuptiUnsubscribe(sub);
    return (CUptiResult)vt_actmux_unsubscribe();
}

static CUptiResult CUPTIAPI guest_enable_callback(uint32_t on, CUpti_SubscriberHandle sub, CUpti_CallbackDomain dom,
                                                  CUpti_CallbackId cbid)
{
    if ((void *)sub != vt_actmux_sub)
        return cuptiEnableCallback(on, sub, dom, cbid);
    return (CUptiResult)vt_actmux_enable_callback(on, (int)dom, cbid);
}

static CUptiResult CUPTIAPI guest_enable_domain(uint32_t on, CUpti_SubscriberHandle sub, CUpti_CallbackDomain dom)
{
    if ((void *)sub != vt_actmux_sub)
        return cuptiEnableDomain(on, sub, dom);
    return (CUptiResult)vt_actmux_enable_domain(on, (int)dom);
}

static CUptiResult CUPTIAPI guest_enable_all_domains(uint32_t on, CUpti_SubscriberHandle sub)
{
    if ((void *)sub != vt_actmux_sub)
        return cuptiEnableAllDomains(on, sub);
    CUptiResult rc = CUPTI_SUCCESS;
    for (int d = 1; d < CUPTI_CB_DOMAIN_SIZE; d++) {
        CUptiResult r = (CUptiResult)vt_actmux_enable_domain(on, d);
        if (r != CUPTI_SUCCESS && rc == CUPTI_SUCCESS)
            rc = r;
    }
    return rc;
}

static CUptiResult CUPTIAPI guest_get_callback(uint32_t *on, CUpti_SubscriberHandle sub, CUpti_CallbackDomain dom,
                                               CUpti_CallbackId cbid)
{
    if ((void *)sub != vt_actmux_sub)
        return cuptiGetCallbackState(on, sub, dom, cbid);
    if (!on)
        return CUPTI_ERROR_INVALID_PARAMETER;
    return (CUptiResult)vt_actmux_get_callback(on, (int)dom, cbid);
}

/* cuptiFinalize would end vramtrace's subscription too: the guest's own
 * is ended instead (Kineto asks for it with TEARDOWN_CUPTI=1) */
static CUptiResult CUPTIAPI guest_finalize(void)
{
    vt_actmux_unsubscribe();
    note(VT_SEV_INFO, "a second CUPTI client called cuptiFinalize: its subscription ended, CUPTI kept for vramtrace");
    return CUPTI_SUCCESS;
}

/* The guest's clock becomes CUPTI's (its records must be on it); ours
 * maps the records back (vt_clock_map_apply).  What is in flight is flushed
 * first, on our clock. */
static CUptiResult CUPTIAPI guest_register_ts(CUpti_TimestampCallbackFunc fn)
{
    if (!fn)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (!g.reg_ts)
        return CUPTI_ERROR_NOT_SUPPORTED;
    int saved = t_in.internal;
    t_in.internal = 1;
    if (!atomic_load(&gclk.on))
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&gclk.mu);
    gclk.fn = fn;
    clock_pair(fn, &gclk.map.g0, &gclk.map.o0);
    gclk.map.g1 = gclk.map.g0;
    gclk.map.o1 = gclk.map.o0;
    pthread_mutex_unlock(&gclk.mu);
    CUptiResult r = g.reg_ts(fn);
    if (r == CUPTI_SUCCESS && !atomic_exchange(&gclk.on, 1))
        note(VT_SEV_INFO, "a second CUPTI client set CUPTI's clock: kernel times from then on mapped back to vramtrace's");
    t_in.internal = saved;
    return r;
}

static int real_enable(int kind)
{
    return (int)cuptiActivityEnable((CUpti_ActivityKind)kind);
}

static int real_disable(int kind)
{
    return (int)cuptiActivityDisable((CUpti_ActivityKind)kind);
}

static int real_flush(uint32_t flag)
{
    return (int)cuptiActivityFlushAll(flag);
}

static int real_enable_cb(uint32_t on, int dom, uint32_t cbid)
{
    return (int)cuptiEnableCallback(on, g.sub, (CUpti_CallbackDomain)dom, (CUpti_CallbackId)cbid);
}

static int real_get_cb(uint32_t *on, int dom, uint32_t cbid)
{
    return (int)cuptiGetCallbackState(on, g.sub, (CUpti_CallbackDomain)dom, (CUpti_CallbackId)cbid);
}

void share_cupti(int activity_on)
{
    static vt_actmux_real act_real = {real_enable, real_disable, real_flush, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED,
                                      real_enable_cb, real_get_cb, {0}, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED};
    act_real.ncbid[CUPTI_CB_DOMAIN_DRIVER_API] = CUPTI_DRIVER_TRACE_CBID_SIZE;
    act_real.ncbid[CUPTI_CB_DOMAIN_RUNTIME_API] = CUPTI_RUNTIME_TRACE_CBID_SIZE;
    act_real.ncbid[CUPTI_CB_DOMAIN_RESOURCE] = CUPTI_CBID_RESOURCE_SIZE;
    act_real.ncbid[CUPTI_CB_DOMAIN_SYNCHRONIZE] = CUPTI_CBID_SYNCHRONIZE_SIZE;
    act_real.ncbid[CUPTI_CB_DOMAIN_NVTX] = CUPTI_CBID_NVTX_SIZE;
    act_real.ncbid[CUPTI_CB_DOMAIN_STATE] = CUPTI_CBID_STATE_SIZE;
    vt_actmux_init(&act_real);
    if (g.cfg.kernels)
        vt_actmux_keep(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 1);
    if (g.static_on)
        vt_actmux_keep(CUPTI_ACTIVITY_KIND_MEMORY2, 1);
    const vt_got_hook hooks[] = {
        {"cuptiSubscribe", (void *)guest_subscribe},
        {"cuptiUnsubscribe", (void *)guest_unsubscribe},
        {"cuptiEnableCallback", (void *)guest_enable_callback},
        {"cuptiEnableDomain", (void *)guest_enable_domain},
        {"cuptiEnableAllDomains", (void *)guest_enable_all_domains},
        {"cuptiGetCallbackState", (void *)guest_get_callback},
        {"cuptiFinalize", (void *)guest_finalize},
        /* only when our buffer callbacks are CUPTI's: else the guest's go there */
        {"cuptiActivityRegisterCallbacks", (void *)guest_register},
        {"cuptiActivityEnable", (void *)guest_enable},
        {"cuptiActivityDisable", (void *)guest_disable},
        {"cuptiActivityRegisterTimestampCallback", (void *)guest_register_ts},
    };
    int nhooks = (int)(sizeof(hooks) / sizeof(hooks[0])) - (activity_on ? 0 : 4);
    static const char *const skip[] = {"libcupti", "libnvperf"};
    char what[256], msg[400];
    int n = vt_got_patch(hooks, nhooks, (const void *)&share_cupti, skip, 2, what, sizeof(what));
    if (n < 0) {
        snprintf(msg, sizeof(msg),
                 "cannot share CUPTI with %s (%s): a second CUPTI client there (torch.profiler) sees no GPU "
                 "activity while vramtrace records",
                 what[0] ? what : "a library", strerror(errno));
        note(VT_SEV_WARNING, msg);
        say("vramtrace: %s", msg);
    } else if (n > 0) {
        snprintf(msg, sizeof(msg), "CUPTI shared with other CUPTI clients (%d call sites, the last in %s): "
                                   "torch.profiler and vramtrace both get callbacks and kernel records",
                 n, what);
        note(VT_SEV_INFO, msg);
    }
}

/* what the second client did, for the trace's notes at the end */
void share_activity_notes(void)
{
    vt_actmux_stats st;
    vt_actmux_get_stats(&st);
    if (!st.registered && !st.subscribed)
        return;
    char msg[400];
    snprintf(msg, sizeof(msg),
             "a second CUPTI client (torch.profiler) shared CUPTI: %llu callbacks passed to it, %llu of its activity "
             "buffers read and handed back, %llu disables of kernels kept on for vramtrace%s",
             (unsigned long long)st.callbacks, (unsigned long long)st.guest_bufs, (unsigned long long)st.kept_on,
             st.set_full ? "; some of its records went to vramtrace only (too many buffers in flight)" : "");
    note(VT_SEV_INFO, msg);
}
