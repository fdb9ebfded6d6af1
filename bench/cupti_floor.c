/* cupti_floor.c - libvt_cupti_floor.so: the cost floor of any CUPTI-based
 * tracer, for the GPU benchmarks.  It subscribes the same driver callbacks
 * as libvramtrace.so (allocation families) with an empty body, and enables
 * CONCURRENT_KERNEL activity whose buffers it discards.  Nothing else.
 * VRAMTRACE_BENCH_GATE=FILE: the same in-process on/off switch as the
 * library's (src/inject/vt_gate.h), for bench/gpu_gate.py. */
#include <cupti.h>
#include <stdlib.h>

#include "vt_gate.h"

#define CB(n) CUPTI_DRIVER_TRACE_CBID_##n
static const CUpti_CallbackId ids[] = {
    CB(cuMemAlloc_v2), CB(cuMemAllocPitch_v2), CB(cuMemFree_v2), CB(cuMemAllocHost_v2), CB(cuMemHostAlloc),
    CB(cuMemFreeHost), CB(cuMemHostRegister_v2), CB(cuMemHostUnregister), CB(cuMemAllocManaged),
    CB(cuMemAllocAsync), CB(cuMemAllocAsync_ptsz), CB(cuMemFreeAsync), CB(cuMemFreeAsync_ptsz),
    CB(cuMemAllocFromPoolAsync), CB(cuMemAllocFromPoolAsync_ptsz), CB(cuMemAddressReserve), CB(cuMemAddressFree),
    CB(cuMemCreate), CB(cuMemRelease), CB(cuMemMap), CB(cuMemUnmap)};
static CUpti_SubscriberHandle sub;
static int callbacks_on, kernels_on;

static void set_callbacks(int on)
{
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
        cuptiEnableCallback((uint32_t)on, sub, CUPTI_CB_DOMAIN_DRIVER_API, ids[i]);
}

static void gate_apply(int on, void *arg)
{
    (void)arg;
    if (callbacks_on)
        set_callbacks(on);
    if (kernels_on)
        (on ? cuptiActivityEnable : cuptiActivityDisable)(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

static void stop_gate(void) { vt_gate_stop(); }

static void CUPTIAPI empty_cb(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *data)
{
    (void)u; (void)d; (void)id; (void)data;
}
static void CUPTIAPI buf_req(uint8_t **buf, size_t *size, size_t *max)
{
    *size = 4u << 20;
    *max = 0;
    *buf = aligned_alloc(8, *size);
}
static void CUPTIAPI buf_done(CUcontext c, uint32_t s, uint8_t *buf, size_t size, size_t valid)
{
    (void)c; (void)s; (void)size; (void)valid;
    free(buf);
}

__attribute__((visibility("default"))) int InitializeInjection(void);
int InitializeInjection(void)
{
    if (cuptiSubscribe(&sub, empty_cb, NULL) != CUPTI_SUCCESS)
        return 1;
    callbacks_on = !getenv("VT_FLOOR_NO_CALLBACKS"); /* with both set: the cost of a subscriber alone */
    if (callbacks_on)
        set_callbacks(1);
    kernels_on = !getenv("VT_FLOOR_NO_KERNELS");
    if (kernels_on) {
        cuptiActivityRegisterCallbacks(buf_req, buf_done);
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    }
    const char *gate = getenv("VRAMTRACE_BENCH_GATE");
    if (gate && *gate && vt_gate_start(gate, gate_apply, NULL) == 0)
        atexit(stop_gate);
    return 1;
}
