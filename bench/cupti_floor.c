/* cupti_floor.c - libvt_cupti_floor.so: the cost floor of any CUPTI-based
 * tracer, for the GPU benchmarks.  It subscribes the same driver callbacks
 * as libvramtrace.so (allocation families) with an empty body, and enables
 * CONCURRENT_KERNEL activity whose buffers it discards.  Nothing else.
 * VRAMTRACE_BENCH_GATE=FILE: the same in-process on/off switch as the
 * library's (src/inject/vt_gate.h), for bench/gpu_gate.py.
 * VT_FLOOR_CALLBACKS picks the callbacks, to tell apart what they cost:
 *   all (default)  the library's driver callbacks;
 *   async          cuMemAllocAsync and cuMemFreeAsync only (what a
 *                  `backend:cudaMallocAsync` step calls);
 *   unused         cuArrayCreate_v2 only (a PyTorch step never calls it:
 *                  the cost of the driver domain being on at all);
 *   runtime-async  cudaMallocAsync and cudaFreeAsync in the runtime domain.
 * VT_FLOOR_LAUNCH=1: also the launch APIs' callbacks (cuLaunchKernel and
 * kin, cuGraphLaunch), with the same empty body: the CUPTI cost of taking
 * kernels from their launch calls instead of kernel activity.
 * VT_BENCH_CUPTI_ATTRS: CUPTI activity attributes (src/inject/vt_bench_cupti.h). */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_bench_cupti.h"
#include "vt_gate.h"

#define CB(n) CUPTI_DRIVER_TRACE_CBID_##n
static const CUpti_CallbackId ids[] = {
    CB(cuMemAlloc_v2), CB(cuMemAllocPitch_v2), CB(cuMemFree_v2), CB(cuMemAllocHost_v2), CB(cuMemHostAlloc),
    CB(cuMemFreeHost), CB(cuMemHostRegister_v2), CB(cuMemHostUnregister), CB(cuMemAllocManaged),
    CB(cuMemAllocAsync), CB(cuMemAllocAsync_ptsz), CB(cuMemFreeAsync), CB(cuMemFreeAsync_ptsz),
    CB(cuMemAllocFromPoolAsync), CB(cuMemAllocFromPoolAsync_ptsz), CB(cuMemAddressReserve), CB(cuMemAddressFree),
    CB(cuMemCreate), CB(cuMemRelease), CB(cuMemMap), CB(cuMemUnmap)};
static const CUpti_CallbackId async_ids[] = {CB(cuMemAllocAsync), CB(cuMemAllocAsync_ptsz), CB(cuMemFreeAsync),
                                              CB(cuMemFreeAsync_ptsz)};
static const CUpti_CallbackId unused_ids[] = {CB(cuArrayCreate_v2)};
static const CUpti_CallbackId runtime_ids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020, CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020, CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020};
static const CUpti_CallbackId launch_ids[] = {
    CB(cuLaunchKernel), CB(cuLaunchKernel_ptsz), CB(cuLaunchKernelEx), CB(cuLaunchKernelEx_ptsz),
    CB(cuLaunchCooperativeKernel), CB(cuLaunchCooperativeKernel_ptsz), CB(cuGraphLaunch), CB(cuGraphLaunch_ptsz)};
static int launch_on;
static CUpti_SubscriberHandle sub;
static int callbacks_on, kernels_on;
static const CUpti_CallbackId *cb_ids = ids;
static size_t cb_n = sizeof(ids) / sizeof(ids[0]);
static CUpti_CallbackDomain cb_domain = CUPTI_CB_DOMAIN_DRIVER_API;

static void set_callbacks(int on)
{
    for (size_t i = 0; i < cb_n; i++)
        cuptiEnableCallback((uint32_t)on, sub, cb_domain, cb_ids[i]);
    for (size_t i = 0; launch_on && i < sizeof(launch_ids) / sizeof(launch_ids[0]); i++)
        cuptiEnableCallback((uint32_t)on, sub, CUPTI_CB_DOMAIN_DRIVER_API, launch_ids[i]);
}

static void pick_callbacks(const char *which)
{
    if (!which || !strcmp(which, "all"))
        return;
#define PICK(a) (cb_ids = (a), cb_n = sizeof(a) / sizeof((a)[0]))
    if (!strcmp(which, "async"))
        PICK(async_ids);
    else if (!strcmp(which, "unused"))
        PICK(unused_ids);
    else if (!strcmp(which, "runtime-async")) {
        PICK(runtime_ids);
        cb_domain = CUPTI_CB_DOMAIN_RUNTIME_API;
    }
#undef PICK
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
    pick_callbacks(getenv("VT_FLOOR_CALLBACKS"));
    launch_on = getenv("VT_FLOOR_LAUNCH") != NULL;
    if (callbacks_on)
        set_callbacks(1);
    kernels_on = !getenv("VT_FLOOR_NO_KERNELS");
    char bad[64];
    if (vt_bench_cupti_attrs(getenv("VT_BENCH_CUPTI_ATTRS"), bad, sizeof(bad)) < 0)
        fprintf(stderr, "cupti_floor: VT_BENCH_CUPTI_ATTRS: %s refused\n", bad);
    if (kernels_on) {
        cuptiActivityRegisterCallbacks(buf_req, buf_done);
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    }
    const char *gate = getenv("VRAMTRACE_BENCH_GATE");
    if (gate && *gate && vt_gate_start(gate, gate_apply, NULL) == 0)
        atexit(stop_gate);
    return 1;
}
