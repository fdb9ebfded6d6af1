/* vt_inject.c - libvramtrace.so: the CUPTI glue.  Loaded by the CUDA driver
 * through CUDA_INJECTION64_PATH, which calls InitializeInjection() once on
 * the first thread that initializes CUDA.
 *
 * What it does: reads the configuration (vt_config.h), opens the trace
 * writer on CUPTI's clock, subscribes to CUPTI driver-API callbacks for
 * every allocation family (exit side: results and addresses are known
 * there), resource callbacks (contexts -> Device records), NVTX callbacks,
 * and activity records (kernels; module globals from MEMORY2).  A sampler
 * thread reads pool usage (cuMemPoolGetAttribute) and the driver's view of
 * device memory (NVML, loaded with dlopen).  Allocation events carry the
 * native stack (vt_unwind.h) merged with Python frames (vt_pystack.h).
 *
 * Rules inside the host process: never exit/abort, never take the GIL, one
 * message on failure and then stay out of the way.  Driver calls made by
 * this library (sampler, device description) are marked with a thread-local
 * flag that makes the callbacks ignore them.
 *
 * Environment: see vt_config.h (VRAMTRACE_OUTPUT, _KERNELS, _NATIVE_STACKS,
 * _PYTHON_STACKS, _STACK_DEPTH, _FLUSH_MS, _SAMPLE_MS, _STATIC, _QUIET);
 * VRAMTRACE_SELFTIME=1 also prints the self-time note on stderr at exit.
 *
 * May touch: CUPTI, the CUDA driver (queries only), NVML, signal handlers
 * for fatal signals (chained), atexit, pthread_atfork, the environment
 * variable NVTX_INJECTION64_PATH (set when unset).
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cupti.h>
/* cupti.h brings generated_cuda_meta.h (the callback parameter structs) */
#include <generated_nvtx_meta.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "vt_bench_cupti.h"
#include "vt_capture.h"
#include "vt_clock.h"
#include "vt_config.h"
#include "vt_error.h"
#include "vt_hot.h"
#include "vt_event.h"
#include "vt_gate.h"
#include "vt_unwind.h"
#include "vt_writer.h"
#ifdef VT_HAVE_PYSTACK
#include "vt_pystack.h"
#endif

#define VT_MAX_DEVICES 64
#define VT_MAX_POOLS 256
#define VT_MAX_NVTX_DOMAINS 64
#define VT_ACT_BUF_BYTES (4u << 20)

/* ------------------------------------------------------------------ state */

typedef struct {
    _Atomic uint64_t pool; /* 0 = free slot */
    uint32_t device;
    uint64_t last[4];
} pool_slot;

static struct {
    /* What every driver callback reads, in the first line (set at init;
     * `used` and `static_on` written at most a few times): a callback runs
     * after the host's own work, with little of this cached. */
    vt_writer *w;
    vt_unwinder *uw;
    _Atomic int active;
    int pystack;
    _Atomic int used;      /* a context was created or memory allocated: keep the trace */
    _Atomic int static_on; /* MEMORY2 activity enabled */
    int selftime, stack_depth, stack_refs; /* cfg's */
    int tsc_events; /* the clock is vt_clock_now() on the TSC: an allocation's time from the callback's TSC read */

    vt_inject_config cfg;
    CUpti_SubscriberHandle sub;
    char out_path[1100];
    /* devices */
    _Atomic int described[VT_MAX_DEVICES];
    _Atomic int async_seen[VT_MAX_DEVICES];
    char pci[VT_MAX_DEVICES][32];
    uint64_t mem_last[VT_MAX_DEVICES];
    /* pools */
    pool_slot pools[VT_MAX_POOLS];
    /* NVTX domains: handle -> name (written once per slot) */
    _Atomic(void *) nvtx_dom[VT_MAX_NVTX_DOMAINS];
    char nvtx_dom_name[VT_MAX_NVTX_DOMAINS][64];
    /* sampler */
    pthread_t sampler;
    int sampler_started;
    int gate;            /* VRAMTRACE_BENCH_GATE started (bench only) */
    _Atomic int sampler_stop;
    /* signals */
    struct sigaction prev[32];
    int have_prev[32];
    _Atomic int in_signal;
    _Atomic int finished;
    _Atomic uint64_t stack_drops;
    _Atomic uint64_t alloc_count; /* allocation callbacks, for the MEMORY2 auto switch */
    /* clock of all events (setup_clock) */
    uint64_t (*clk)(void);
    double clk_ns;
    char clock_note[240];
} g __attribute__((aligned(64)));

#define VT_STATIC_MAX_RATE 500 /* allocations per second above which MEMORY2 goes off (auto) */

/* Per-thread state, in one object so that a callback looks it up once
 * (VT_TLS_ADDR): `internal` nonzero: our own driver calls, or the sampler
 * thread; the last context seen and its device; self time, i.e. TSC cycles
 * spent in our driver callbacks (of one callback in 16, chosen by
 * selftime_sampled(), or of all with VRAMTRACE_SELFTIME=1), added to the
 * totals every 64 callbacks and reported in a Note at the end.  With
 * VRAMTRACE_SELFTIME=1 (cfg.selftime) also per phase (stack walk, Python,
 * writer push) and on stderr: each rdtsc costs ~20 ns on the GPU
 * machine's VMs, so a callback reads the TSC once (at its start, which is
 * also the time of its event) and a second time only when timed. */
typedef struct {
    int internal;
    uint32_t dev;
    CUcontext ctx;
    uint64_t cb_n, cb_timed, cb_cyc, push_cyc;
    vt_capture_times cap; /* stack capture, native walk */
    vt_capture_scratch scratch; /* a capture's buffers (vt_capture.h) */
} inject_tls;
static __thread inject_tls t_in;

/* Held by the sampler while it queries pools, and by a context teardown
 * while it forgets that device's pools (cudaDeviceReset destroys them: the
 * sampler must never query a dead handle). */
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t g_cb_n, g_cb_timed, g_cb_cyc, g_stk_cyc, g_uw_cyc, g_push_cyc;
static uint64_t g_tsc0, g_ns0;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    if (g.cfg.quiet)
        return;
    char buf[1400];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(buf) - 2)
        n = (int)sizeof(buf) - 2;
    buf[n++] = '\n';
    ssize_t r = write(2, buf, (size_t)n);
    (void)r;
}

static uint64_t cupti_now(void)
{
    uint64_t t = 0;
    cuptiGetTimestamp(&t);
    return t;
}

static void note(vt_severity sev, const char *text)
{
    if (!g.w)
        return;
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_NOTE;
    ev.u.note.severity = sev;
    ev.u.note.text = text;
    vt_writer_emit(g.w, &ev);
}

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
}

static void emit_failed(inject_tls *T, uint64_t size, uint32_t dev, vt_memkind kind, vt_allocapi api, CUresult err,
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

static void pool_track(uint64_t pool, uint32_t dev)
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

static void pool_untrack(uint64_t pool)
{
    for (int i = 0; i < VT_MAX_POOLS; i++) {
        uint64_t p = pool;
        if (atomic_compare_exchange_strong(&g.pools[i].pool, &p, 0))
            return;
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

#define P(type) const type *p = (const type *)cd->functionParams
#define CB(name) CUPTI_DRIVER_TRACE_CBID_##name

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
    case CB(cuMemPoolCreate): {
        P(cuMemPoolCreate_params);
        if (!ok) break;
        uint32_t pdev = p->poolProps && p->poolProps->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? (uint32_t)p->poolProps->location.id : dev;
        vt_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_POOL;
        ev.u.pool.op = VT_POOL_CREATE;
        ev.u.pool.pool = (uint64_t)(uintptr_t)*p->pool;
        ev.u.pool.device = pdev;
        ev.u.pool.corr = corr;
        capture_site(T, &ev.u.pool.site);
        emit(&ev);
        pool_track(ev.u.pool.pool, pdev);
        break;
    }
    case CB(cuMemPoolDestroy):
    case CB(cuMemPoolTrimTo):
    case CB(cuMemPoolSetAttribute): {
        if (!ok) break;
        vt_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_POOL;
        ev.u.pool.device = dev;
        ev.u.pool.corr = corr;
        if (cbid == CB(cuMemPoolDestroy)) {
            P(cuMemPoolDestroy_params);
            ev.u.pool.op = VT_POOL_DESTROY;
            ev.u.pool.pool = (uint64_t)(uintptr_t)p->pool;
            pool_untrack(ev.u.pool.pool);
        } else if (cbid == CB(cuMemPoolTrimTo)) {
            P(cuMemPoolTrimTo_params);
            ev.u.pool.op = VT_POOL_TRIM;
            ev.u.pool.pool = (uint64_t)(uintptr_t)p->pool;
            ev.u.pool.value = p->minBytesToKeep;
        } else {
            P(cuMemPoolSetAttribute_params);
            if (p->attr != CU_MEMPOOL_ATTR_RELEASE_THRESHOLD || !p->value)
                break;
            ev.u.pool.op = VT_POOL_SET_THRESHOLD;
            ev.u.pool.pool = (uint64_t)(uintptr_t)p->pool;
            ev.u.pool.value = *(const cuuint64_t *)p->value;
        }
        emit(&ev);
        break;
    }
    case CB(cuMemAddressReserve): {
        P(cuMemAddressReserve_params);
        if (!ok) break;
        vt_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_VMM_RESERVE;
        ev.u.vmm_range.address = *p->ptr;
        ev.u.vmm_range.size = p->size;
        ev.u.vmm_range.corr = corr;
        capture_site(T, &ev.u.vmm_range.site);
        emit(&ev);
        break;
    }
    case CB(cuMemAddressFree): {
        P(cuMemAddressFree_params);
        if (!ok) break;
        vt_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_VMM_ADDRESS_FREE;
        ev.u.vmm_range.address = p->ptr;
        ev.u.vmm_range.size = p->size;
        ev.u.vmm_range.corr = corr;
        emit(&ev);
        break;
    }
    case CB(cuMemCreate): {
        P(cuMemCreate_params);
        uint32_t pdev = dev;
        vt_memkind kind = VT_MEM_DEVICE;
        if (p->prop) {
            if (p->prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
                pdev = (uint32_t)p->prop->location.id;
            else
                kind = VT_MEM_PINNED_HOST;
        }
        if (!ok) {
            emit_failed(T, p->size, pdev, kind, VT_API_VMM, rc, 0, 0, corr);
            break;
        }
        vt_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_VMM_CREATE;
        ev.u.vmm_create.handle = (uint64_t)*p->handle;
        ev.u.vmm_create.size = p->size;
        ev.u.vmm_create.device = pdev;
        ev.u.vmm_create.kind = kind;
        ev.u.vmm_create.corr = corr;
        capture_site(T, &ev.u.vmm_create.site);
        emit(&ev);
        break;
    }
    case CB(cuMemRelease): {
        P(cuMemRelease_params);
        if (!ok) break;
        vt_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_VMM_RELEASE;
        ev.u.vmm_release.handle = (uint64_t)p->handle;
        ev.u.vmm_release.corr = corr;
        emit(&ev);
        break;
    }
    case CB(cuMemMap): {
        P(cuMemMap_params);
        if (!ok) break;
        vt_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_VMM_MAP;
        ev.u.vmm_map.address = p->ptr;
        ev.u.vmm_map.size = p->size;
        ev.u.vmm_map.offset = p->offset;
        ev.u.vmm_map.handle = (uint64_t)p->handle;
        ev.u.vmm_map.corr = corr;
        emit(&ev);
        break;
    }
    case CB(cuMemUnmap): {
        P(cuMemUnmap_params);
        if (!ok) break;
        vt_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_VMM_UNMAP;
        ev.u.vmm_range.address = p->ptr;
        ev.u.vmm_range.size = p->size;
        ev.u.vmm_range.corr = corr;
        emit(&ev);
        break;
    }
    default:
        break;
    }
}

/* ----------------------------------------------------------------- devices */

static void describe_device(uint32_t ordinal)
{
    if (ordinal >= VT_MAX_DEVICES)
        return;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&g.described[ordinal], &expected, 1))
        return;
    int saved = t_in.internal;
    t_in.internal = 1;
    CUdevice dev;
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_DEVICE;
    ev.u.device.index = ordinal;
    char name[256] = "", bus[32] = "";
    if (cuDeviceGet(&dev, (int)ordinal) == CUDA_SUCCESS) {
        size_t total = 0;
        int maj = 0, min = 0;
        CUuuid uuid;
        if (cuDeviceGetName(name, sizeof(name), dev) != CUDA_SUCCESS)
            name[0] = 0;
        if (cuDeviceTotalMem(&total, dev) == CUDA_SUCCESS)
            ev.u.device.total_memory = total;
        cuDeviceGetAttribute(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
        cuDeviceGetAttribute(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
        ev.u.device.cc_major = (uint32_t)maj;
        ev.u.device.cc_minor = (uint32_t)min;
        if (cuDeviceGetPCIBusId(bus, sizeof(bus), dev) != CUDA_SUCCESS)
            bus[0] = 0;
        if (cuDeviceGetUuid(&uuid, dev) == CUDA_SUCCESS)
            memcpy(ev.u.device.uuid, uuid.bytes, 16);
    }
    t_in.internal = saved;
    memcpy(g.pci[ordinal], bus, sizeof(bus));
    ev.u.device.name = name;
    ev.u.device.pci_bus_id = bus;
    emit(&ev);
}

static void on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd)
{
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
        atomic_store_explicit(&g.used, 1, memory_order_relaxed);
        uint32_t d = 0;
        if (rd->context && cuptiGetDeviceId(rd->context, &d) == CUPTI_SUCCESS)
            describe_device(d);
    } else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
        /* get the context's kernel records out before it goes */
        if (g.cfg.kernels || g.static_on)
            cuptiActivityFlushAll(0);
        uint32_t d = 0;
        if (rd->context && cuptiGetDeviceId(rd->context, &d) == CUPTI_SUCCESS) {
            pthread_mutex_lock(&pool_mu);
            for (int i = 0; i < VT_MAX_POOLS; i++)
                if (g.pools[i].device == d)
                    atomic_store(&g.pools[i].pool, 0);
            if (d < VT_MAX_DEVICES)
                atomic_store(&g.async_seen[d], 0);
            pthread_mutex_unlock(&pool_mu);
        }
        if (t_in.ctx == rd->context)
            t_in.ctx = NULL;
    }
}

/* ----------------------------------------------------------------- NVTX */

static const char *nvtx_domain_name(nvtxDomainHandle_t h)
{
    if (!h)
        return NULL;
    for (int i = 0; i < VT_MAX_NVTX_DOMAINS; i++)
        if (atomic_load_explicit(&g.nvtx_dom[i], memory_order_acquire) == (void *)h)
            return g.nvtx_dom_name[i];
    return NULL;
}

static const char *nvtx_attr_message(const nvtxEventAttributes_t *a)
{
    if (!a || a->messageType != NVTX_MESSAGE_TYPE_ASCII)
        return NULL;
    return a->message.ascii;
}

static void emit_nvtx(vt_nvtxop op, const char *msg, const char *dom, uint64_t range_id)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_NVTX;
    ev.u.nvtx.op = op;
    ev.u.nvtx.message = msg;
    ev.u.nvtx.domain = dom;
    ev.u.nvtx.range_id = range_id;
    emit(&ev);
}

static void on_nvtx(CUpti_CallbackId cbid, const CUpti_NvtxData *nd)
{
    const void *pp = nd->functionParams;
    uint64_t rid = nd->functionReturnValue ? *(const nvtxRangeId_t *)nd->functionReturnValue : 0;
    switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA: emit_nvtx(VT_NVTX_PUSH, ((const nvtxRangePushA_params *)pp)->message, NULL, 0); break;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
        emit_nvtx(VT_NVTX_PUSH, nvtx_attr_message(((const nvtxRangePushEx_params *)pp)->eventAttrib), NULL, 0);
        break;
    case CUPTI_CBID_NVTX_nvtxRangePop: emit_nvtx(VT_NVTX_POP, NULL, NULL, 0); break;
    case CUPTI_CBID_NVTX_nvtxRangeStartA: emit_nvtx(VT_NVTX_START, ((const nvtxRangeStartA_params *)pp)->message, NULL, rid); break;
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
        emit_nvtx(VT_NVTX_START, nvtx_attr_message(((const nvtxRangeStartEx_params *)pp)->eventAttrib), NULL, rid);
        break;
    case CUPTI_CBID_NVTX_nvtxRangeEnd: emit_nvtx(VT_NVTX_END, NULL, NULL, ((const nvtxRangeEnd_params *)pp)->id); break;
    case CUPTI_CBID_NVTX_nvtxMarkA: emit_nvtx(VT_NVTX_MARK, ((const nvtxMarkA_params *)pp)->message, NULL, 0); break;
    case CUPTI_CBID_NVTX_nvtxMarkEx: emit_nvtx(VT_NVTX_MARK, nvtx_attr_message(((const nvtxMarkEx_params *)pp)->eventAttrib), NULL, 0); break;
    case CUPTI_CBID_NVTX_nvtxDomainCreateA: {
        const nvtxDomainCreateA_params *p = pp;
        nvtxDomainHandle_t h = nd->functionReturnValue ? *(const nvtxDomainHandle_t *)nd->functionReturnValue : NULL;
        if (!h || !p->name)
            break;
        for (int i = 0; i < VT_MAX_NVTX_DOMAINS; i++) {
            void *z = NULL;
            if (atomic_load(&g.nvtx_dom[i]) == NULL) {
                snprintf(g.nvtx_dom_name[i], sizeof(g.nvtx_dom_name[i]), "%s", p->name);
                if (atomic_compare_exchange_strong(&g.nvtx_dom[i], &z, (void *)h))
                    break;
            }
        }
        break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
        const nvtxDomainRangePushEx_params *p = pp;
        emit_nvtx(VT_NVTX_PUSH, nvtx_attr_message(p->core.eventAttrib), nvtx_domain_name(p->domain), 0);
        break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangePop: {
        const nvtxDomainRangePop_params *p = pp;
        emit_nvtx(VT_NVTX_POP, NULL, nvtx_domain_name(p->domain), 0);
        break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx: {
        const nvtxDomainRangeStartEx_params *p = pp;
        emit_nvtx(VT_NVTX_START, nvtx_attr_message(p->core.eventAttrib), nvtx_domain_name(p->domain), rid);
        break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainRangeEnd: {
        const nvtxDomainRangeEnd_params *p = pp;
        emit_nvtx(VT_NVTX_END, NULL, nvtx_domain_name(p->domain), p->core.id);
        break;
    }
    case CUPTI_CBID_NVTX_nvtxDomainMarkEx: {
        const nvtxDomainMarkEx_params *p = pp;
        emit_nvtx(VT_NVTX_MARK, nvtx_attr_message(p->core.eventAttrib), nvtx_domain_name(p->domain), 0);
        break;
    }
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

VT_HOT static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data)
{
    (void)ud;
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

/* ----------------------------------------------------------------- activity */

static void CUPTIAPI on_buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
    *max_records = 0;
    *size = 0;
    *buf = NULL;
    void *p = NULL;
    if (posix_memalign(&p, 8, VT_ACT_BUF_BYTES) == 0) {
        *buf = p;
        *size = VT_ACT_BUF_BYTES;
    }
}

static void on_kernel(const CUpti_ActivityKernel10 *k)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_KERNEL;
    ev.time_ns = k->start;
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
    ev.u.kernel.duration_ns = k->end > k->start ? k->end - k->start : 0;
    ev.u.kernel.corr = k->correlationId;
    emit(&ev);
}

static void on_memory(const CUpti_ActivityMemory4 *m)
{
    if (m->memoryKind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC)
        return;
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.time_ns = m->timestamp;
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
    emit(&ev);
}

/* Completed activity buffers go to our own drain thread: CUPTI's thread
 * returns at once, and the drain thread may wait for the writer (a buffer
 * holds ~15k kernels, more than a producer ring) without stalling CUPTI. */
typedef struct act_buf {
    struct act_buf *next;
    uint8_t *buf;
    size_t valid;
} act_buf;
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv, idle_cv;
    act_buf *head, *tail;
    int stop, busy, started;
    pthread_t thread;
    uint64_t records, buffers, cycles;
} act = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .idle_cv = PTHREAD_COND_INITIALIZER};

#define VT_ACT_PACE 2048 /* records between writer flushes in the drain thread */

static void process_buffer(uint8_t *buf, size_t valid, int may_wait)
{
    CUpti_Activity *rec = NULL;
    uint64_t n = 0, c0 = __rdtsc();
    while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
        switch (rec->kind) {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        case CUPTI_ACTIVITY_KIND_KERNEL: on_kernel((const CUpti_ActivityKernel10 *)rec); break;
        case CUPTI_ACTIVITY_KIND_MEMORY2: on_memory((const CUpti_ActivityMemory4 *)rec); break;
        default: break;
        }
        if (may_wait && (++n % VT_ACT_PACE) == 0)
            vt_writer_flush(g.w); /* let the writer drain our ring */
    }
    act.cycles += __rdtsc() - c0;
    act.records += n;
    act.buffers++;
}

static void *drain_main(void *arg)
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
            process_buffer(b->buf, b->valid, 1);
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
static void drain_wait_idle(void)
{
    if (!act.started)
        return;
    pthread_mutex_lock(&act.mu);
    while (act.head || act.busy)
        pthread_cond_wait(&act.idle_cv, &act.mu);
    pthread_mutex_unlock(&act.mu);
}

static void CUPTIAPI on_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
    int saved = t_in.internal;
    t_in.internal = 1;
#ifdef VT_BENCH_DISCARD_ACTIVITY /* benchmarks only (bench/inject.cmake): buffers freed unread */
    valid = 0;
#endif
    if (buf && valid && g.w) {
        act_buf *b = act.started ? malloc(sizeof(*b)) : NULL;
        if (b) {
            b->next = NULL;
            b->buf = buf;
            b->valid = valid;
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
            process_buffer(buf, valid, 0);
        }
        size_t dropped = 0;
        if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped) {
            vt_event ev;
            memset(&ev, 0, sizeof(ev));
            ev.type = VT_EV_DROPPED;
            ev.u.dropped.source = VT_DROP_CUPTI_ACTIVITY;
            ev.u.dropped.count = dropped;
            ev.u.dropped.reason = "CUPTI activity buffer full";
            emit(&ev);
        }
    }
    free(buf);
    (void)size;
    t_in.internal = saved;
}

/* ----------------------------------------------------------------- sampler */

typedef struct { unsigned long long total, free, used; } nvml_memory;
typedef int (*nvml_init_fn)(void);
typedef int (*nvml_by_bus_fn)(const char *, void **);
typedef int (*nvml_meminfo_fn)(void *, nvml_memory *);

static void sample_pools(void)
{
    for (uint32_t d = 0; d < VT_MAX_DEVICES; d++) {
        if (!atomic_load_explicit(&g.async_seen[d], memory_order_relaxed))
            continue;
        CUdevice dev;
        CUmemoryPool pool;
        if (cuDeviceGet(&dev, (int)d) == CUDA_SUCCESS && cuDeviceGetMemPool(&pool, dev) == CUDA_SUCCESS)
            pool_track((uint64_t)(uintptr_t)pool, d);
    }
    static const CUmemPool_attribute attrs[4] = {CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
                                                 CU_MEMPOOL_ATTR_USED_MEM_CURRENT, CU_MEMPOOL_ATTR_USED_MEM_HIGH};
    for (int i = 0; i < VT_MAX_POOLS; i++) {
        uint64_t pool = atomic_load_explicit(&g.pools[i].pool, memory_order_acquire);
        if (!pool)
            continue;
        cuuint64_t v[4] = {0, 0, 0, 0};
        int okc = 1;
        for (int a = 0; a < 4 && okc; a++)
            okc = cuMemPoolGetAttribute((CUmemoryPool)(uintptr_t)pool, attrs[a], &v[a]) == CUDA_SUCCESS;
        if (!okc)
            continue;
        if (memcmp(v, g.pools[i].last, sizeof(v)) == 0)
            continue;
        memcpy(g.pools[i].last, v, sizeof(v));
        vt_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_POOL_USAGE;
        ev.u.pool_usage.pool = pool;
        ev.u.pool_usage.device = g.pools[i].device;
        ev.u.pool_usage.reserved_current = v[0];
        ev.u.pool_usage.reserved_high = v[1];
        ev.u.pool_usage.used_current = v[2];
        ev.u.pool_usage.used_high = v[3];
        emit(&ev);
    }
}

static void *sampler_main(void *arg)
{
    (void)arg;
    t_in.internal = 1;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    void *nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    nvml_by_bus_fn by_bus = NULL;
    nvml_meminfo_fn meminfo = NULL;
    if (nvml) {
        nvml_init_fn init = (nvml_init_fn)dlsym(nvml, "nvmlInit_v2");
        by_bus = (nvml_by_bus_fn)dlsym(nvml, "nvmlDeviceGetHandleByPciBusId_v2");
        meminfo = (nvml_meminfo_fn)dlsym(nvml, "nvmlDeviceGetMemoryInfo");
        if (!init || !by_bus || !meminfo || init() != 0) {
            by_bus = NULL;
            meminfo = NULL;
        }
    }
    if (!meminfo)
        note(VT_SEV_WARNING, "NVML not available: no device memory usage samples");
    void *handles[VT_MAX_DEVICES] = {0};
    unsigned ticks = 0;
    while (!atomic_load(&g.sampler_stop)) {
        struct timespec ts = {g.cfg.sample_ms / 1000, (long)(g.cfg.sample_ms % 1000) * 1000000L};
        /* sleep in slices so that exit does not wait a whole period */
        for (long left = (long)g.cfg.sample_ms; left > 0 && !atomic_load(&g.sampler_stop); left -= 20) {
            struct timespec s = {0, (left < 20 ? left : 20) * 1000000L};
            nanosleep(&s, NULL);
        }
        (void)ts;
        if (atomic_load(&g.sampler_stop) || !atomic_load(&g.active))
            break;
        /* the driver's view every ~1 s: an NVML query can take milliseconds */
        if (meminfo && (++ticks * g.cfg.sample_ms >= 1000 || ticks == 1)) {
            if (ticks * g.cfg.sample_ms >= 1000)
                ticks = 1;
            for (uint32_t d = 0; d < VT_MAX_DEVICES; d++) {
                if (!atomic_load(&g.described[d]) || !g.pci[d][0])
                    continue;
                if (!handles[d] && by_bus(g.pci[d], &handles[d]) != 0)
                    continue;
                nvml_memory mi;
                if (meminfo(handles[d], &mi) != 0 || mi.free == g.mem_last[d])
                    continue;
                g.mem_last[d] = mi.free;
                vt_event ev;
                memset(&ev, 0, sizeof(ev));
                ev.type = VT_EV_MEMORY_USAGE;
                ev.u.memory_usage.device = d;
                ev.u.memory_usage.free = mi.free;
                ev.u.memory_usage.total = mi.total;
                emit(&ev);
            }
        }
        pthread_mutex_lock(&pool_mu);
        sample_pools();
        pthread_mutex_unlock(&pool_mu);
        uint64_t ac = atomic_exchange(&g.alloc_count, 0);
        if (g.static_on && g.cfg.static_mem < 0 && ac * 1000 > (uint64_t)VT_STATIC_MAX_RATE * g.cfg.sample_ms) {
            cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMORY2);
            g.static_on = 0;
            note(VT_SEV_INFO, "module globals (DEVICE_STATIC) no longer recorded: allocation rate too high "
                              "for MEMORY2 activity (VRAMTRACE_STATIC=1 keeps it on)");
        }
    }
    return NULL;
}

/* ----------------------------------------------------------------- shutdown */

static void report_unwind_stats(void)
{
    vt_unwind_stats st;
    vt_unwinder_get_stats(g.uw, &st);
    if (!g.uw || !st.captures)
        return;
    char text[700], smp[300] = "";
    if (st.sampled) {
        double n = (double)st.sampled;
        snprintf(smp, sizeof(smp), "; one replay in 64 read %.0f bytes of the stack on %.1f pages, checked %.1f rbp "
                 "loads, found its entry at way %.1f of the memo (the predicted way in %.0f %%) after %.2f other "
                 "candidates (%.1f steps verified in vain)",
                 (double)st.sampled_span / n, (double)st.sampled_pages / n, (double)st.sampled_bp / n,
                 (double)st.sampled_way / n, 100.0 * (double)st.sampled_pred / n, (double)st.sampled_tried / n,
                 (double)st.sampled_wasted / n);
    }
    snprintf(text, sizeof(text),
             "native stacks: %llu captures, %llu frames, %llu rule-cache misses, %llu frame-pointer steps, %llu rescans; "
             "%llu walks replayed whole from the per-thread memo, %llu steps replayed by the others%s",
             (unsigned long long)st.captures, (unsigned long long)st.frames, (unsigned long long)st.cache_misses,
             (unsigned long long)st.fp_steps, (unsigned long long)st.rescans, (unsigned long long)st.memo_full,
             (unsigned long long)st.memo_steps, smp);
    note(VT_SEV_INFO, text);
    if (g.selftime)
        say("vramtrace: %s", text);
}

static void report_self_time(void)
{
    uint64_t tsc1 = __rdtsc(), ns1 = mono_ns();
    double ns_per_cyc = tsc1 > g_tsc0 ? (double)(ns1 - g_ns0) / (double)(tsc1 - g_tsc0) : 0;
    /* include this thread's pending counts */
    uint64_t n = atomic_load(&g_cb_n) + (t_in.cb_n & 63), timed = atomic_load(&g_cb_timed) + t_in.cb_timed;
    uint64_t cb = atomic_load(&g_cb_cyc) + t_in.cb_cyc, stk = atomic_load(&g_stk_cyc) + t_in.cap.stk_cyc;
    uint64_t uw = atomic_load(&g_uw_cyc) + t_in.cap.uw_cyc, push = atomic_load(&g_push_cyc) + t_in.push_cyc;
    double per = n ? ns_per_cyc / (double)n : 0.0;
    char text[600], clk[64] = ""; /* the push reads the clock unless the callback's TSC read gives the time */
    if (!g.tsc_events)
        snprintf(clk, sizeof(clk), " incl. one %.0f ns clock read", g.clk_ns);
    if (!g.selftime) {
        double mean = timed ? cb * ns_per_cyc / (double)timed : 0.0; /* of the callbacks timed */
        snprintf(text, sizeof(text),
                 "self time: %llu driver callbacks, mean %.0f ns (%llu of them timed), %.1f ms in all "
                 "(VRAMTRACE_SELFTIME=1 times every one and splits it); activity: %llu buffers, %llu records, %.1f ms",
                 (unsigned long long)n, mean, (unsigned long long)timed, mean * (double)n / 1e6,
                 (unsigned long long)act.buffers, (unsigned long long)act.records, act.cycles * ns_per_cyc / 1e6);
        note(VT_SEV_INFO, text);
        return;
    }
    snprintf(text, sizeof(text),
             "self time: %llu driver callbacks, mean %.0f ns (stack capture %.0f ns of it: native unwind %.0f, "
             "python+merge %.0f; writer push %.0f%s), %.1f ms in all; "
             "activity: %llu buffers, %llu records, %.1f ms",
             (unsigned long long)n, cb * per, stk * per, uw * per, (stk - uw) * per, push * per, clk,
             cb * ns_per_cyc / 1e6, (unsigned long long)act.buffers, (unsigned long long)act.records,
             act.cycles * ns_per_cyc / 1e6);
    note(VT_SEV_INFO, text);
    say("vramtrace: %s", text);
    say("vramtrace: %s", g.clock_note);
}

static void finish(void)
{
    if (atomic_exchange(&g.finished, 1))
        return;
    vt_gate_stop(); /* before anything it could switch is torn down */
    if (g.gate) {
        char text[200];
        snprintf(text, sizeof(text), "benchmark gate (VRAMTRACE_BENCH_GATE): tracing switched %u times; "
                 "the trace holds only the on-blocks", vt_gate_toggles());
        note(VT_SEV_WARNING, text);
    }
    if (g.sampler_started) {
        atomic_store(&g.sampler_stop, 1);
        pthread_join(g.sampler, NULL);
        g.sampler_started = 0;
    }
    if (g.cfg.kernels || g.static_on) {
        int saved = t_in.internal;
        t_in.internal = 1;
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        t_in.internal = saved;
    }
    if (act.started) {
        drain_wait_idle();
        pthread_mutex_lock(&act.mu);
        act.stop = 1;
        pthread_cond_signal(&act.cv);
        pthread_mutex_unlock(&act.mu);
        pthread_join(act.thread, NULL);
        act.started = 0;
    }
    atomic_store(&g.active, 0);
    report_unwind_stats();
    report_self_time();
    vt_writer_stats st;
    vt_writer_get_stats(g.w, &st);
    int rc = vt_writer_close(g.w, VT_END_NORMAL, 0);
    /* A process that loaded CUDA but never created a context (a launcher
     * such as torchrun asking for the device count, a tool probing the
     * driver) leaves no trace behind: it holds no GPU memory to explain. */
    if (rc == 0 && !atomic_load(&g.used) && unlink(g.out_path) == 0) {
        say("vramtrace: removed %s: the process created no CUDA context", g.out_path);
        return;
    }
    if (rc == 0)
        say("vramtrace: wrote %s (%llu events, %llu dropped, %llu bytes)", g.out_path,
            (unsigned long long)st.emitted, (unsigned long long)st.dropped, (unsigned long long)st.bytes_written);
}

static void on_exit_handler(void) { finish(); }

static const int k_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGINT};

static int sig_fatal(int sig) { return sig != SIGTERM && sig != SIGINT; }

static void on_signal(int sig, siginfo_t *si, void *uc)
{
    int saved_errno = errno;
    struct sigaction *prev = sig < 32 ? &g.prev[sig] : NULL;
    int prev_dfl = !prev || (!(prev->sa_flags & SA_SIGINFO) && prev->sa_handler == SIG_DFL);
    if ((sig_fatal(sig) || prev_dfl) && !atomic_exchange(&g.in_signal, 1)) {
        atomic_store(&g.active, 0);
        vt_writer_emergency_flush(g.w, sig);
    }
    errno = saved_errno;
    if (!prev || prev_dfl) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof(dfl));
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);
        raise(sig); /* pending until we return (the signal is blocked in its handler) */
        return;
    }
    if (prev->sa_flags & SA_SIGINFO) {
        prev->sa_sigaction(sig, si, uc);
    } else if (prev->sa_handler != SIG_IGN) {
        prev->sa_handler(sig);
    }
}

static void install_signals(void)
{
    for (size_t i = 0; i < sizeof(k_signals) / sizeof(k_signals[0]); i++) {
        int sig = k_signals[i];
        struct sigaction old;
        if (sigaction(sig, NULL, &old) != 0)
            continue;
        if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN)
            continue; /* ignored: leave it so */
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = on_signal;
        /* keep the previous handler's restart/mask behaviour (Python relies
         * on EINTR for SIGINT) */
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK | (old.sa_flags & (SA_RESTART | SA_NODEFER));
        sa.sa_mask = old.sa_mask;
        g.prev[sig] = old;
        g.have_prev[sig] = 1;
        sigaction(sig, &sa, NULL);
    }
}

static void on_fork_child(void)
{
    /* The writer disables itself in the child; stop producing too. */
    atomic_store(&g.active, 0);
    g.sampler_started = 0;
    act.started = 0;
    vt_gate_forget();
    atomic_store(&g.finished, 1);
}

/* ----------------------------------------------------------------- header */

typedef struct {
    char *buf;
    const char *argv[VT_MAX_ARGV];
    int argc;
} cmdline;

static void read_cmdline(cmdline *c)
{
    memset(c, 0, sizeof(*c));
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    size_t cap = 65536, len = 0;
    c->buf = malloc(cap + 1);
    if (c->buf) {
        ssize_t r;
        while (len < cap && (r = read(fd, c->buf + len, cap - len)) > 0)
            len += (size_t)r;
        c->buf[len] = 0;
        for (size_t i = 0; i < len && c->argc < VT_MAX_ARGV; i += strlen(c->buf + i) + 1)
            c->argv[c->argc++] = c->buf + i;
    }
    close(fd);
}

static const char *k_env_names[] = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "CUDA_VISIBLE_DEVICES",
                                    "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING", "CUDA_MODULE_LOADING",
                                    "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID"};

/* ----------------------------------------------------------------- init */

static void module_cb(void *arg, const vt_module *m)
{
    (void)arg;
    if (!g.w)
        return;
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_MODULE;
    ev.u.module.path = m->path;
    ev.u.module.load_bias = m->load_bias;
    ev.u.module.start = m->start;
    ev.u.module.end = m->end;
    ev.u.module.build_id = m->build_id;
    ev.u.module.build_id_len = m->build_id_len;
    vt_writer_emit(g.w, &ev);
}

static int enable_driver_callbacks(int on)
{
    for (size_t i = 0; i < sizeof(k_driver_ids) / sizeof(k_driver_ids[0]); i++) {
        CUptiResult r = cuptiEnableCallback((uint32_t)on, g.sub, CUPTI_CB_DOMAIN_DRIVER_API, k_driver_ids[i]);
        if (r != CUPTI_SUCCESS)
            return (int)r;
    }
    return 0;
}

/* VRAMTRACE_BENCH_GATE (bench/gpu_gate.py): switch everything a traced
 * step pays for (driver callbacks, NVTX, kernel and MEMORY2 activity) off
 * and on again, on the gate thread, between the benchmark's blocks of
 * steps.  The resource callbacks stay: contexts are not per step. */
static void gate_apply(int on, void *arg)
{
    (void)arg;
    t_in.internal = 1;
    enable_driver_callbacks(on);
    cuptiEnableDomain((uint32_t)on, g.sub, CUPTI_CB_DOMAIN_NVTX);
    if (g.cfg.kernels)
        (on ? cuptiActivityEnable : cuptiActivityDisable)(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (g.static_on)
        (on ? cuptiActivityEnable : cuptiActivityDisable)(CUPTI_ACTIVITY_KIND_MEMORY2);
}

/* ns per read of a clock: the best of 4 batches of 256 reads. */
static double clock_cost(uint64_t (*fn)(void))
{
    double best = 1e9;
    for (int b = 0; b < 4; b++) {
        uint64_t t0 = mono_ns();
        for (int i = 0; i < 256; i++)
            __asm__ __volatile__("" ::"r"(fn()));
        double ns = (double)(mono_ns() - t0) / 256.0;
        if (ns < best)
            best = ns;
    }
    return best;
}

/* The clock of every event, and of CUPTI's activity records: by default
 * our calibrated TSC (vt_clock.h), registered with CUPTI so that kernels and
 * allocations share one time base.  cuptiGetTimestamp() is CUPTI's
 * clock_gettime(CLOCK_REALTIME) behind a call: a syscall on VMs whose kernel
 * does not use the TSC, paid twice per tensor in tensor-level mode. */
static void setup_clock(void)
{
    typedef CUptiResult (*reg_fn)(CUpti_TimestampCallbackFunc);
    g.clk = cupti_now;
    const char *why = "VRAMTRACE_CLOCK=cupti";
    if (g.cfg.clock != VT_CFG_CLOCK_CUPTI) {
        vt_clock_init(g.cfg.clock == VT_CFG_CLOCK_AUTO);
        /* resolved at run time: an older libcupti.so.13 loaded first by the
         * process may lack it, and a missing symbol must not stop us loading */
        Dl_info di;
        void *h = dladdr((void *)&cuptiSubscribe, &di) && di.dli_fname ? dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD) : NULL;
        reg_fn reg = h ? (reg_fn)dlsym(h, "cuptiActivityRegisterTimestampCallback") : NULL;
        if (h)
            dlclose(h);
        if (reg && reg(vt_clock_now) == CUPTI_SUCCESS) {
            g.clk = vt_clock_now;
        } else {
            why = reg ? "cuptiActivityRegisterTimestampCallback failed" : "this CUPTI cannot take our clock";
        }
    }
    char cs[32];
    if (vt_clock_kernel_source(cs, sizeof(cs)) != 0)
        snprintf(cs, sizeof(cs), "?");
    g.clk_ns = clock_cost(g.clk);
    double cupti_ns = g.clk == cupti_now ? g.clk_ns : clock_cost(cupti_now);
    if (g.clk == vt_clock_now)
        snprintf(g.clock_note, sizeof(g.clock_note),
                 "clock: %s, %.0f ns per read, registered with CUPTI (cuptiGetTimestamp: %.0f ns; kernel clocksource %s)",
                 vt_clock_name(vt_clock_source()), g.clk_ns, cupti_ns, cs);
    else
        snprintf(g.clock_note, sizeof(g.clock_note), "clock: cuptiGetTimestamp, %.0f ns per read (%s; kernel clocksource %s)",
                 g.clk_ns, why, cs);
}

static int init_once(void)
{
    int saved = t_in.internal;
    t_in.internal = 1; /* no callbacks on this thread while we set up */
    vt_config_parse(&g.cfg, NULL, NULL);
    g.selftime = g.cfg.selftime;
    g.stack_depth = g.cfg.stack_depth;
    g.stack_refs = g.cfg.stack_refs;
    if (g.cfg.warning[0])
        say("vramtrace: %s", g.cfg.warning);

    uint32_t cupti_version = 0;
    cuptiGetVersion(&cupti_version);
    Dl_info di;
    const char *cupti_path = dladdr((void *)&cuptiSubscribe, &di) && di.dli_fname ? di.dli_fname : "libcupti.so";
    char cupti_file[1024];
    snprintf(cupti_file, sizeof(cupti_file), "%s", cupti_path);

    setup_clock();

    cmdline cl;
    read_cmdline(&cl);
    char program[256], host[256] = "";
    vt_config_program_name(cl.argv, cl.argc, program, sizeof(program));
    gethostname(host, sizeof(host) - 1);
    vt_output_vars vars = {.pid = (uint32_t)getpid(), .host = host, .rank = vt_config_rank(NULL, NULL), .program = program};
    if (vt_config_expand_output(g.cfg.output, &vars, g.out_path, sizeof(g.out_path)) != 0) {
        say("vramtrace: output path template too long; tracing disabled");
        free(cl.buf);
        t_in.internal = saved;
        return -1;
    }

    const char *names[sizeof(k_env_names) / sizeof(k_env_names[0])], *values[sizeof(names) / sizeof(names[0])];
    uint32_t nenv = 0;
    for (size_t i = 0; i < sizeof(k_env_names) / sizeof(k_env_names[0]) && nenv < VT_MAX_ENV; i++) {
        const char *v = getenv(k_env_names[i]);
        if (v) {
            names[nenv] = k_env_names[i];
            values[nenv++] = v;
        }
    }
    vt_ev_header hdr;
    memset(&hdr, 0, sizeof(hdr));
    hdr.pid = (uint32_t)getpid();
    hdr.ppid = (uint32_t)getppid();
    hdr.hostname = host;
    hdr.program = program;
    hdr.argv = cl.argv;
    hdr.argc = (uint32_t)cl.argc;
    hdr.env_names = names;
    hdr.env_values = values;
    hdr.nenv = nenv;
    hdr.clock = VT_CLOCK_CUPTI;
    struct timespec rt;
    hdr.trace_clock_ns = g.clk();
    clock_gettime(CLOCK_REALTIME, &rt);
    hdr.realtime_ns = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
    hdr.kernels = g.cfg.kernels;
    hdr.native_stacks = g.cfg.native_stacks;
#ifdef VT_HAVE_PYSTACK
    char pywhy[160] = "";
    if (g.cfg.python_stacks) {
        if (vt_pystack_init(pywhy, sizeof(pywhy)) == 0)
            g.pystack = 1;
    }
#endif
    hdr.python_stacks = g.pystack;

    vt_writer_config wc;
    vt_writer_config_default(&wc);
    wc.path = g.out_path;
    wc.flush_ms = g.cfg.flush_ms;
    wc.quiet = g.cfg.quiet;
    wc.clock = VT_CLOCK_CUPTI;
    wc.clock_fn = g.clk;
    g.tsc_events = g.clk == vt_clock_now && vt_clock_source() == VT_CLOCKSRC_TSC;
    if (g.clk == vt_clock_now)
        wc.tick_fn = vt_clock_tick;
    wc.ring_bytes = 4u << 20; /* per producer thread; pages are touched only as used */
    int rc = vt_writer_create(&g.w, &wc, &hdr);
    free(cl.buf);
    if (rc != 0) {
        /* the writer printed why */
        t_in.internal = saved;
        return -1;
    }

    char text[1400];
    snprintf(text, sizeof(text), "CUPTI API version %u from %s", cupti_version, cupti_file);
    note(VT_SEV_INFO, text);
    note(VT_SEV_INFO, g.clock_note);
#ifdef VT_HAVE_PYSTACK
    if (g.cfg.python_stacks && !g.pystack && pywhy[0]) {
        snprintf(text, sizeof(text), "python stacks off: %s", pywhy);
        note(VT_SEV_INFO, text);
        /* not a Python process is the usual case: say nothing on stderr then */
    }
    if (g.pystack) {
        const char *how = vt_pystack_code_watch()
                              ? "python stacks: code objects by address (a code watcher counts their end)"
                              : "python stacks: code objects by their key (no code watcher: Python < 3.12, or "
                                "initialized by a thread without the GIL)";
        note(VT_SEV_INFO, how);
        if (g.selftime)
            say("vramtrace: %s", how);
    }
#else
    if (g.cfg.python_stacks)
        note(VT_SEV_INFO, "python stacks not built into this library");
#endif

    if (g.cfg.native_stacks) {
        if (vt_unwinder_create(&g.uw, 16, module_cb, NULL) == 0) {
            vt_unwinder_skip_addr(g.uw, (const void *)&init_once);
            vt_unwinder_skip_prefix(g.uw, "libcupti");
            vt_unwinder_skip_prefix(g.uw, "libcuda.so");
#ifdef VT_HAVE_PYSTACK
            /* Where Python frames are read, the native walk ends at the
             * interpreter's first eval frame: the Python stack goes on from
             * there, and the native frames between outer Python frames
             * (interpreter and binding glue) cost a third of the walk. */
            uint64_t es[8], ee[8];
            int ne = g.pystack && g.cfg.native_stacks != VT_CFG_NATIVE_FULL ? vt_pystack_eval_ranges(es, ee, 8) : 0;
            if (ne > 0 && ne <= 8 && vt_unwinder_stop_at(g.uw, ne, es, ee) == 0)
                note(VT_SEV_INFO, "native stacks end where Python frames begin "
                                  "(VRAMTRACE_NATIVE_STACKS=full keeps the native frames between Python frames)");
#endif
        } else {
            note(VT_SEV_WARNING, "native unwinder could not start: no native stacks");
        }
    }

    CUptiResult cr = cuptiSubscribe(&g.sub, on_callback, NULL);
    if (cr != CUPTI_SUCCESS) {
        const char *es = NULL;
        cuptiGetResultString(cr, &es);
        snprintf(text, sizeof(text), "cuptiSubscribe failed (%s): another CUPTI client is active; not tracing",
                 es ? es : "?");
        say("vramtrace: %s", text);
        note(VT_SEV_ERROR, text);
        vt_writer_close(g.w, VT_END_ERROR, 0);
        t_in.internal = saved;
        return -1;
    }
    int er = enable_driver_callbacks(1);
    if (er == 0)
        er = cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
    if (er == 0)
        er = cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
    if (er != 0) {
        snprintf(text, sizeof(text), "cuptiEnableCallback failed (%d); not tracing", er);
        say("vramtrace: %s", text);
        note(VT_SEV_ERROR, text);
        cuptiUnsubscribe(g.sub);
        vt_writer_close(g.w, VT_END_ERROR, 0);
        t_in.internal = saved;
        return -1;
    }
    if (cuptiEnableDomain(1, g.sub, CUPTI_CB_DOMAIN_NVTX) != CUPTI_SUCCESS)
        note(VT_SEV_WARNING, "NVTX callbacks unavailable: no NVTX ranges");
    /* NVTX ranges reach CUPTI only if the NVTX library injects it; NVTX reads
     * this variable at the application's first NVTX call (ranges of an
     * application that used NVTX before initializing CUDA are not seen). */
    if (!getenv("NVTX_INJECTION64_PATH"))
        setenv("NVTX_INJECTION64_PATH", cupti_file, 0);

    /* Module globals (DEVICE_STATIC) come from MEMORY2 activity records,
     * which CUPTI makes for every allocation (about +1 us each): fine for
     * a caching allocator, too dear when every tensor is an allocation.
     * auto (-1): off for PyTorch's tensor-level modes, and switched off by
     * the sampler when allocations exceed VT_STATIC_MAX_RATE per second. */
    g.static_on = g.cfg.static_mem > 0;
    if (g.cfg.static_mem < 0) {
        const char *ac = getenv("PYTORCH_CUDA_ALLOC_CONF"), *nc = getenv("PYTORCH_NO_CUDA_MEMORY_CACHING");
        int tensor_level = (ac && strstr(ac, "cudaMallocAsync")) || (nc && vt_config_bool(nc) == 1);
        g.static_on = !tensor_level;
        if (tensor_level)
            note(VT_SEV_INFO, "module globals (DEVICE_STATIC) not recorded: tensor-level allocator "
                              "(VRAMTRACE_STATIC=1 records them at about 1 us per allocation)");
    }
    g_tsc0 = __rdtsc();
    g_ns0 = mono_ns();
    if ((g.cfg.kernels || g.static_on) && pthread_create(&act.thread, NULL, drain_main, NULL) == 0) {
        act.started = 1;
        pthread_setname_np(act.thread, "vt-drain");
    }
    if (g.cfg.kernels || g.static_on) {
        const char *attrs = getenv("VT_BENCH_CUPTI_ATTRS"); /* benchmarks only (vt_bench_cupti.h) */
        if (attrs && *attrs) {
            char bad[64], msg[160];
            int n = vt_bench_cupti_attrs(attrs, bad, sizeof(bad));
            if (n < 0)
                snprintf(msg, sizeof(msg), "benchmark: VT_BENCH_CUPTI_ATTRS: %s refused", bad);
            else
                snprintf(msg, sizeof(msg), "benchmark: CUPTI activity attributes %s", attrs);
            note(n < 0 ? VT_SEV_WARNING : VT_SEV_INFO, msg);
            say("vramtrace: %s", msg);
        }
        if (cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed) != CUPTI_SUCCESS) {
            note(VT_SEV_WARNING, "CUPTI activity API unavailable: no kernels, no module globals");
        } else {
            if (g.cfg.kernels && cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
                note(VT_SEV_WARNING, "kernel activity could not be enabled: no kernels");
            if (g.static_on && cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2) != CUPTI_SUCCESS) {
                note(VT_SEV_WARNING, "MEMORY2 activity could not be enabled: no module globals");
                g.static_on = 0;
            }
            cuptiActivityFlushPeriod(500);
        }
    }

    atomic_store(&g.active, 1);
    if (g.cfg.sample_ms) {
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 256 * 1024);
        if (pthread_create(&g.sampler, &a, sampler_main, NULL) == 0) {
            g.sampler_started = 1;
            pthread_setname_np(g.sampler, "vt-sampler");
        }
        pthread_attr_destroy(&a);
    }
    const char *gate = getenv("VRAMTRACE_BENCH_GATE");
    if (gate && *gate) {
        int gr = vt_gate_start(gate, gate_apply, NULL);
        if (gr == 0)
            g.gate = 1;
        else
            say("vramtrace: VRAMTRACE_BENCH_GATE=%s: %s; no benchmark gate", gate, strerror(-gr));
    }
    atexit(on_exit_handler);
    pthread_atfork(NULL, NULL, on_fork_child);
    install_signals();
    say("vramtrace: recording to %s (CUPTI %u%s%s%s)", g.out_path, cupti_version, g.cfg.kernels ? ", kernels" : "",
        g.uw ? ", native stacks" : "", g.pystack ? ", python stacks" : "");
    t_in.internal = saved;
    return 0;
}

__attribute__((visibility("default"))) int InitializeInjection(void);
int InitializeInjection(void)
{
    static atomic_int once;
    if (atomic_exchange(&once, 1))
        return 1;
    init_once();
    return 1; /* never make the driver fail */
}
