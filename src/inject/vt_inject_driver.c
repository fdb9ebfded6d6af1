/* vt_inject_driver.c - the driver callbacks: the hot path of every
 * allocation and free (stack capture, emit), and the callback dispatch. */
#include "vt_inject_int.h"
#include "vt_actmux.h"
VT_HOT static uint32_t ctx_device(inject_tls *T, CUcontext ctx)
{
    if (ctx && ctx == T->ctx)
        return T->dev;
    uint32_t d = 0;
    if (ctx && cuptiGetDeviceId(ctx, &d) == CUPTI_SUCCESS) {
        T->ctx = ctx;
        T->dev = d;
    }
    return d;
}

/* ----------------------------------------------------------------- stacks */

/* The stack of the current allocation (vt_capture.h), with the library's
 * settings; phases timed with VRAMTRACE_SELFTIME=1. */
VT_HOT static void capture_site(inject_tls *T, vt_site *site)
{
    const vt_capture_cfg c = {g.w, g.uw, g.pystack, g.stack_depth, g.stack_refs};
    site->nframes = vt_capture_stack(&c, g.selftime ? &T->cap : NULL, &T->scratch, site->fp);
    site->frames = site->nframes ? T->scratch.fr : NULL;
}

/* ----------------------------------------------------------------- emit helpers */

VT_HOT static void emit(vt_event *ev)
{
    if (!g.selftime) {
        vt_writer_emit(g.w, ev);
        return;
    }
    uint64_t c0 = __rdtsc();
    vt_writer_emit(g.w, ev);
    t_in.push_cyc += __rdtsc() - c0;
}

/* now: the event's time (0: the writer reads the clock) */
VT_HOT static void emit_alloc(inject_tls *T, uint64_t addr, uint64_t size, uint32_t dev, vt_memkind kind,
                              vt_allocapi api, uint64_t stream, uint64_t pool, uint64_t corr, uint64_t now)
{
    vt_event ev; /* only what the writer reads of it: not the whole union zeroed */
    ev.type = VT_EV_ALLOC;
    ev.time_ns = now;
    ev.u.alloc = (vt_ev_alloc){.address = addr, .size = size, .device = dev, .kind = kind, .api = api,
                               .stream = stream, .pool = pool, .corr = corr};
    capture_site(T, &ev.u.alloc.site);
    emit(&ev);
    if (mark_on())
        mark_alloc(addr, size, dev, api);
    if (__builtin_expect(!atomic_load_explicit(&g.used, memory_order_relaxed), 0))
        atomic_store_explicit(&g.used, 1, memory_order_relaxed);
    if (g.static_on)
        atomic_fetch_add_explicit(&g.alloc_count, 1, memory_order_relaxed);
}

VT_HOT static void emit_free(uint64_t addr, uint32_t dev, vt_memkind kind, vt_allocapi api, uint64_t stream,
                             uint64_t corr, uint64_t now)
{
    vt_event ev; /* as in emit_alloc */
    ev.type = VT_EV_FREE;
    ev.time_ns = now;
    ev.u.free = (vt_ev_free){.address = addr, .device = dev, .kind = kind, .api = api, .stream = stream, .corr = corr};
    emit(&ev);
    if (mark_on())
        mark_free(addr, api);
}

void emit_failed(inject_tls *T, uint64_t size, uint32_t dev, vt_memkind kind, vt_allocapi api, CUresult err,
                        uint64_t stream, uint64_t pool, uint64_t corr)
{
    const char *name = NULL;
    int saved = T->internal; /* T is this thread's t_in */
    T->internal = 1;
    if (cuGetErrorName(err, &name) != CUDA_SUCCESS)
        name = NULL;
    T->internal = saved;
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_ALLOC_FAILED;
    ev.u.alloc_failed.size = size;
    ev.u.alloc_failed.device = dev;
    ev.u.alloc_failed.kind = kind;
    ev.u.alloc_failed.api = api;
    ev.u.alloc_failed.error = (int32_t)err;
    ev.u.alloc_failed.error_name = name ? name : "CUDA_ERROR_UNKNOWN";
    ev.u.alloc_failed.stream = stream;
    ev.u.alloc_failed.pool = pool;
    ev.u.alloc_failed.corr = corr;
    capture_site(T, &ev.u.alloc_failed.site);
    emit(&ev);
    atomic_store_explicit(&g.used, 1, memory_order_relaxed);
}

/* The same for the other parts (activity, NVTX, VMM and pools), off the
 * hot path: the driver callbacks' own calls stay within this file. */
void vt_inject_emit(vt_event *ev)
{
    emit(ev);
}

void vt_inject_capture_site(inject_tls *T, vt_site *site)
{
    capture_site(T, site);
}

void pool_track(uint64_t pool, uint32_t dev)
{
    if (!pool)
        return;
    int free_slot = -1;
    for (int i = 0; i < VT_MAX_POOLS; i++) {
        uint64_t p = atomic_load_explicit(&g.pools[i].pool, memory_order_acquire);
        if (p == pool)
            return;
        if (!p && free_slot < 0)
            free_slot = i;
    }
    for (int i = free_slot < 0 ? VT_MAX_POOLS : free_slot; i < VT_MAX_POOLS; i++) {
        uint64_t z = 0;
        g.pools[i].device = dev;
        memset(g.pools[i].last, 0xff, sizeof(g.pools[i].last));
        if (atomic_compare_exchange_strong(&g.pools[i].pool, &z, pool))
            return;
    }
}

void pool_untrack(uint64_t pool)
{
    for (int i = 0; i < VT_MAX_POOLS; i++) {
        uint64_t p = pool;
        if (atomic_compare_exchange_strong(&g.pools[i].pool, &p, 0))
            return;
    }
}

/* ----------------------------------------------------------------- PyTorch's trace tracker */

/* One TraceEntry of PyTorch's caching allocator (the shim's callback,
 * vt_torch_abi.h), inside the allocator with its mutex held: tensors as
 * TENSOR blocks of the CACHING_ALLOCATOR API with their stacks, the free
 * when it is requested (when memory_allocated() drops; the completed free
 * after stream uses only returns the block to the pool), a failed
 * allocation with the request's size.  Segments are left to CUPTI's
 * records of the driver calls, except the first, which checks the layout. */
VT_HOT void torch_on_entry(const vt_torch_entry *e)
{
    inject_tls *T = VT_TLS_ADDR(&t_in);
    if (T->internal || !atomic_load_explicit(&g.active, memory_order_relaxed))
        return;
    int s = atomic_load_explicit(&g.torch_state, memory_order_relaxed);
    if (__builtin_expect(s != VT_TORCH_ON, 0)) {
        if (s == VT_TORCH_CHECK && (e->action == VT_TORCH_SEGMENT_ALLOC || e->action == VT_TORCH_SEGMENT_MAP))
            torch_check_layout(T, e);
        return;
    }
    const uint32_t dev = e->device >= 0 ? (uint32_t)e->device : 0;
    switch (e->action) {
    case VT_TORCH_ALLOC: {
        const uint64_t now = g.tsc_events ? vt_clock_at(__rdtsc()) : 0;
        emit_alloc(T, e->addr, e->size, dev, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, e->stream, 0, 0, now);
        break;
    }
    case VT_TORCH_FREE_REQUESTED: {
        const uint64_t now = g.tsc_events ? vt_clock_at(__rdtsc()) : 0;
        emit_free(e->addr, dev, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, e->stream, 0, now);
        break;
    }
    case VT_TORCH_OOM:
        emit_failed(T, e->size, dev, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, CUDA_ERROR_OUT_OF_MEMORY, e->stream, 0, 0);
        break;
    default:
        break;
    }
}

/* Rough byte size of a CUDA array (format size x channels x extent). */
static uint64_t array_bytes(CUarray_format fmt, unsigned channels, size_t w, size_t h, size_t d)
{
    unsigned es;
    switch (fmt) {
    case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: es = 1; break;
    case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: es = 2; break;
    default: es = 4; break;
    }
    return (uint64_t)es * (channels ? channels : 1) * (w ? w : 1) * (h ? h : 1) * (d ? d : 1);
}

/* ----------------------------------------------------------------- driver callbacks */


static const CUpti_CallbackId k_driver_ids[] = {
    CB(cuMemAlloc), CB(cuMemAlloc_v2), CB(cuMemAllocPitch), CB(cuMemAllocPitch_v2),
    CB(cuMemFree), CB(cuMemFree_v2),
    CB(cuMemAllocHost), CB(cuMemAllocHost_v2), CB(cuMemHostAlloc), CB(cuMemFreeHost),
    CB(cuMemHostRegister), CB(cuMemHostRegister_v2), CB(cuMemHostUnregister),
    CB(cuMemAllocManaged),
    CB(cuArrayCreate_v2), CB(cuArray3DCreate_v2), CB(cuArrayDestroy),
    CB(cuMipmappedArrayCreate), CB(cuMipmappedArrayDestroy),
    CB(cuMemAllocAsync), CB(cuMemAllocAsync_ptsz), CB(cuMemFreeAsync), CB(cuMemFreeAsync_ptsz),
    CB(cuMemAllocFromPoolAsync), CB(cuMemAllocFromPoolAsync_ptsz),
    CB(cuMemPoolCreate), CB(cuMemPoolDestroy), CB(cuMemPoolTrimTo), CB(cuMemPoolSetAttribute),
    CB(cuMemAddressReserve), CB(cuMemAddressFree), CB(cuMemCreate), CB(cuMemRelease),
    CB(cuMemMap), CB(cuMemUnmap),
};

/* tsc: read at the callback's start */
VT_HOT static void on_driver(inject_tls *T, CUpti_CallbackId cbid, const CUpti_CallbackData *cd, uint64_t tsc)
{
    const uint64_t now = g.tsc_events ? vt_clock_at(tsc) : 0;
    CUresult rc = cd->functionReturnValue ? *(const CUresult *)cd->functionReturnValue : CUDA_SUCCESS;
    int ok = rc == CUDA_SUCCESS;
    uint64_t corr = cd->correlationId;
    uint32_t dev = ctx_device(T, cd->context);

    switch (cbid) {
    case CB(cuMemAlloc_v2): {
        P(cuMemAlloc_v2_params);
        if (ok) torch_seen_segment(T, *p->dptr, p->bytesize);
        if (ok) emit_alloc(T, *p->dptr, p->bytesize, dev, VT_MEM_DEVICE, VT_API_MALLOC, 0, 0, corr, now);
        else emit_failed(T, p->bytesize, dev, VT_MEM_DEVICE, VT_API_MALLOC, rc, 0, 0, corr);
        break;
    }
    case CB(cuMemAlloc): {
        P(cuMemAlloc_params);
        if (ok) emit_alloc(T, *p->dptr, p->bytesize, dev, VT_MEM_DEVICE, VT_API_MALLOC, 0, 0, corr, now);
        else emit_failed(T, p->bytesize, dev, VT_MEM_DEVICE, VT_API_MALLOC, rc, 0, 0, corr);
        break;
    }
    case CB(cuMemAllocPitch_v2): {
        P(cuMemAllocPitch_v2_params);
        if (ok) emit_alloc(T, *p->dptr, (uint64_t)*p->pPitch * p->Height, dev, VT_MEM_DEVICE, VT_API_MALLOC_PITCH, 0, 0, corr, now);
        else emit_failed(T, (uint64_t)p->WidthInBytes * p->Height, dev, VT_MEM_DEVICE, VT_API_MALLOC_PITCH, rc, 0, 0, corr);
        break;
    }
    case CB(cuMemAllocPitch): {
        P(cuMemAllocPitch_params);
        if (ok) emit_alloc(T, *p->dptr, (uint64_t)*p->pPitch * p->Height, dev, VT_MEM_DEVICE, VT_API_MALLOC_PITCH, 0, 0, corr, now);
        else emit_failed(T, (uint64_t)p->WidthInBytes * p->Height, dev, VT_MEM_DEVICE, VT_API_MALLOC_PITCH, rc, 0, 0, corr);
        break;
    }
    case CB(cuMemFree_v2): {
        P(cuMemFree_v2_params);
        if (ok && p->dptr) emit_free(p->dptr, dev, VT_MEM_UNKNOWN, VT_API_MALLOC, 0, corr, now);
        break;
    }
    case CB(cuMemFree): {
        P(cuMemFree_params);
        if (ok && p->dptr) emit_free(p->dptr, dev, VT_MEM_UNKNOWN, VT_API_MALLOC, 0, corr, now);
        break;
    }
    case CB(cuMemAllocHost_v2): {
        P(cuMemAllocHost_v2_params);
        if (ok) emit_alloc(T, (uint64_t)(uintptr_t)*p->pp, p->bytesize, dev, VT_MEM_PINNED_HOST, VT_API_HOST_ALLOC, 0, 0, corr, now);
        else emit_failed(T, p->bytesize, dev, VT_MEM_PINNED_HOST, VT_API_HOST_ALLOC, rc, 0, 0, corr);
        break;
    }
    case CB(cuMemAllocHost): {
        P(cuMemAllocHost_params);
        if (ok) emit_alloc(T, (uint64_t)(uintptr_t)*p->pp, p->bytesize, dev, VT_MEM_PINNED_HOST, VT_API_HOST_ALLOC, 0, 0, corr, now);
        else emit_failed(T, p->bytesize, dev, VT_MEM_PINNED_HOST, VT_API_HOST_ALLOC, rc, 0, 0, corr);
        break;
    }
    case CB(cuMemHostAlloc): {
        P(cuMemHostAlloc_params);
        if (ok) emit_alloc(T, (uint64_t)(uintptr_t)*p->pp, p->bytesize, dev, VT_MEM_PINNED_HOST, VT_API_HOST_ALLOC, 0, 0, corr, now);
        else emit_failed(T, p->bytesize, dev, VT_MEM_PINNED_HOST, VT_API_HOST_ALLOC, rc, 0, 0, corr);
        break;
    }
    case CB(cuMemFreeHost): {
        P(cuMemFreeHost_params);
        if (ok && p->p) emit_free((uint64_t)(uintptr_t)p->p, dev, VT_MEM_PINNED_HOST, VT_API_HOST_ALLOC, 0, corr, now);
        break;
    }
    case CB(cuMemHostRegister_v2): {
        P(cuMemHostRegister_v2_params);
        if (ok) emit_alloc(T, (uint64_t)(uintptr_t)p->p, p->bytesize, dev, VT_MEM_HOST_REGISTERED, VT_API_HOST_REGISTER, 0, 0, corr, now);
        else emit_failed(T, p->bytesize, dev, VT_MEM_HOST_REGISTERED, VT_API_HOST_REGISTER, rc, 0, 0, corr);
        break;
    }
    case CB(cuMemHostRegister): {
        P(cuMemHostRegister_params);
        if (ok) emit_alloc(T, (uint64_t)(uintptr_t)p->p, p->bytesize, dev, VT_MEM_HOST_REGISTERED, VT_API_HOST_REGISTER, 0, 0, corr, now);
        else emit_failed(T, p->bytesize, dev, VT_MEM_HOST_REGISTERED, VT_API_HOST_REGISTER, rc, 0, 0, corr);
        break;
    }
    case CB(cuMemHostUnregister): {
        P(cuMemHostUnregister_params);
        if (ok) emit_free((uint64_t)(uintptr_t)p->p, dev, VT_MEM_HOST_REGISTERED, VT_API_HOST_REGISTER, 0, corr, now);
        break;
    }
    case CB(cuMemAllocManaged): {
        P(cuMemAllocManaged_params);
        if (ok) emit_alloc(T, *p->dptr, p->bytesize, dev, VT_MEM_MANAGED, VT_API_MALLOC_MANAGED, 0, 0, corr, now);
        else emit_failed(T, p->bytesize, dev, VT_MEM_MANAGED, VT_API_MALLOC_MANAGED, rc, 0, 0, corr);
        break;
    }
    case CB(cuArrayCreate_v2): {
        P(cuArrayCreate_v2_params);
        const CUDA_ARRAY_DESCRIPTOR *d = p->pAllocateArray;
        uint64_t sz = d ? array_bytes(d->Format, d->NumChannels, d->Width, d->Height, 1) : 0;
        if (ok) emit_alloc(T, (uint64_t)(uintptr_t)*p->pHandle, sz, dev, VT_MEM_ARRAY, VT_API_ARRAY, 0, 0, corr, now);
        else emit_failed(T, sz, dev, VT_MEM_ARRAY, VT_API_ARRAY, rc, 0, 0, corr);
        break;
    }
    case CB(cuArray3DCreate_v2): {
        P(cuArray3DCreate_v2_params);
        const CUDA_ARRAY3D_DESCRIPTOR *d = p->pAllocateArray;
        uint64_t sz = d ? array_bytes(d->Format, d->NumChannels, d->Width, d->Height, d->Depth) : 0;
        if (ok) emit_alloc(T, (uint64_t)(uintptr_t)*p->pHandle, sz, dev, VT_MEM_ARRAY, VT_API_ARRAY, 0, 0, corr, now);
        else emit_failed(T, sz, dev, VT_MEM_ARRAY, VT_API_ARRAY, rc, 0, 0, corr);
        break;
    }
    case CB(cuMipmappedArrayCreate): {
        P(cuMipmappedArrayCreate_params);
        const CUDA_ARRAY3D_DESCRIPTOR *d = p->pMipmappedArrayDesc;
        uint64_t sz = d ? array_bytes(d->Format, d->NumChannels, d->Width, d->Height, d->Depth) : 0;
        sz = sz + sz / 3; /* all levels: about 4/3 of the base */
        if (ok) emit_alloc(T, (uint64_t)(uintptr_t)*p->pHandle, sz, dev, VT_MEM_ARRAY, VT_API_ARRAY, 0, 0, corr, now);
        else emit_failed(T, sz, dev, VT_MEM_ARRAY, VT_API_ARRAY, rc, 0, 0, corr);
        break;
    }
    case CB(cuArrayDestroy): {
        P(cuArrayDestroy_params);
        if (ok) emit_free((uint64_t)(uintptr_t)p->hArray, dev, VT_MEM_ARRAY, VT_API_ARRAY, 0, corr, now);
        break;
    }
    case CB(cuMipmappedArrayDestroy): {
        P(cuMipmappedArrayDestroy_params);
        if (ok) emit_free((uint64_t)(uintptr_t)p->hMipmappedArray, dev, VT_MEM_ARRAY, VT_API_ARRAY, 0, corr, now);
        break;
    }
    case CB(cuMemAllocAsync):
    case CB(cuMemAllocAsync_ptsz): {
        P(cuMemAllocAsync_params); /* same layout for _ptsz */
        if (dev < VT_MAX_DEVICES && !atomic_load_explicit(&g.async_seen[dev], memory_order_relaxed))
            atomic_store(&g.async_seen[dev], 1);
        if (ok) emit_alloc(T, *p->dptr, p->bytesize, dev, VT_MEM_DEVICE, VT_API_MALLOC_ASYNC, (uint64_t)(uintptr_t)p->hStream, 0, corr, now);
        else emit_failed(T, p->bytesize, dev, VT_MEM_DEVICE, VT_API_MALLOC_ASYNC, rc, (uint64_t)(uintptr_t)p->hStream, 0, corr);
        break;
    }
    case CB(cuMemFreeAsync):
    case CB(cuMemFreeAsync_ptsz): {
        P(cuMemFreeAsync_params);
        if (ok && p->dptr) emit_free(p->dptr, dev, VT_MEM_UNKNOWN, VT_API_MALLOC_ASYNC, (uint64_t)(uintptr_t)p->hStream, corr, now);
        break;
    }
    case CB(cuMemAllocFromPoolAsync):
    case CB(cuMemAllocFromPoolAsync_ptsz): {
        P(cuMemAllocFromPoolAsync_params);
        uint64_t pool = (uint64_t)(uintptr_t)p->pool;
        pool_track(pool, dev);
        if (ok) emit_alloc(T, *p->dptr, p->bytesize, dev, VT_MEM_DEVICE, VT_API_MALLOC_FROM_POOL, (uint64_t)(uintptr_t)p->hStream, pool, corr, now);
        else emit_failed(T, p->bytesize, dev, VT_MEM_DEVICE, VT_API_MALLOC_FROM_POOL, rc, (uint64_t)(uintptr_t)p->hStream, pool, corr);
        break;
    }
    case CB(cuMemPoolCreate):
    case CB(cuMemPoolDestroy):
    case CB(cuMemPoolTrimTo):
    case CB(cuMemPoolSetAttribute):
    case CB(cuMemAddressReserve):
    case CB(cuMemAddressFree):
    case CB(cuMemCreate):
    case CB(cuMemRelease):
    case CB(cuMemMap):
    case CB(cuMemUnmap):
        on_driver_vmm(T, cbid, cd, dev, rc, corr);
        break;
    default:
        break;
    }
}

/* Whether the n-th callback of a thread times itself: one in 16, by the
 * top bits of a Weyl sequence (no short period, so that a program's own
 * cycle of allocations and frees does not always land on the same kind). */
static inline int selftime_sampled(uint64_t n)
{
    return (n * 0x9E3779B97F4A7C15ull) >> 60 == 0;
}

VT_HOT void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data)
{
    (void)ud;
    vt_actmux_callback((int)dom, cbid, data); /* a second CUPTI client's, if it enabled this id */
    /* half the driver callbacks are API entries, where nothing is done:
     * they return before the thread-local lookup */
    if (dom == CUPTI_CB_DOMAIN_DRIVER_API && ((const CUpti_CallbackData *)data)->callbackSite != CUPTI_API_EXIT)
        return;
    inject_tls *T = VT_TLS_ADDR(&t_in);
    if (T->internal || !atomic_load_explicit(&g.active, memory_order_relaxed))
        return;
#ifdef VT_BENCH_EMPTY_CALLBACKS /* benchmarks only (bench/inject.cmake): all of the library but its driver callbacks' bodies */
    if (dom == CUPTI_CB_DOMAIN_DRIVER_API)
        return;
#endif
    switch (dom) {
    case CUPTI_CB_DOMAIN_DRIVER_API: { /* an API's exit */
        uint64_t c0 = __rdtsc();
        on_driver(T, cbid, data, c0);
        if (g.selftime || selftime_sampled(T->cb_n)) {
            T->cb_cyc += __rdtsc() - c0;
            T->cb_timed++;
        }
        if ((++T->cb_n & 63) == 0) {
            atomic_fetch_add_explicit(&g_cb_n, 64, memory_order_relaxed);
            atomic_fetch_add_explicit(&g_cb_timed, T->cb_timed, memory_order_relaxed);
            atomic_fetch_add_explicit(&g_cb_cyc, T->cb_cyc, memory_order_relaxed);
            atomic_fetch_add_explicit(&g_stk_cyc, T->cap.stk_cyc, memory_order_relaxed);
            atomic_fetch_add_explicit(&g_uw_cyc, T->cap.uw_cyc, memory_order_relaxed);
            atomic_fetch_add_explicit(&g_push_cyc, T->push_cyc, memory_order_relaxed);
            T->cb_timed = T->cb_cyc = T->cap.stk_cyc = T->cap.uw_cyc = T->push_cyc = 0;
        }
        break;
    }
    case CUPTI_CB_DOMAIN_RESOURCE: on_resource(cbid, data); break;
    case CUPTI_CB_DOMAIN_NVTX: on_nvtx(cbid, data); break;
    default: break;
    }
}

int enable_driver_callbacks(int on)
{
    for (size_t i = 0; i < sizeof(k_driver_ids) / sizeof(k_driver_ids[0]); i++) {
        CUptiResult r = cuptiEnableCallback((uint32_t)on, g.sub, CUPTI_CB_DOMAIN_DRIVER_API, k_driver_ids[i]);
        if (r != CUPTI_SUCCESS)
            return (int)r;
    }
    return 0;
}
