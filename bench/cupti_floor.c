/* cupti_floor.c - libvt_cupti_floor.so: the cost floor of any CUPTI-based
 * tracer, for the GPU benchmarks.  It subscribes the same driver callbacks
 * as libvramtrace.so (allocation families) with an empty body, and enables
 * CONCURRENT_KERNEL activity whose buffers it discards.  Nothing else. */
#include <cupti.h>
#include <stdlib.h>

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

#define CB(n) CUPTI_DRIVER_TRACE_CBID_##n
__attribute__((visibility("default"))) int InitializeInjection(void);
int InitializeInjection(void)
{
    static const CUpti_CallbackId ids[] = {
        CB(cuMemAlloc_v2), CB(cuMemAllocPitch_v2), CB(cuMemFree_v2), CB(cuMemAllocHost_v2), CB(cuMemHostAlloc),
        CB(cuMemFreeHost), CB(cuMemHostRegister_v2), CB(cuMemHostUnregister), CB(cuMemAllocManaged),
        CB(cuMemAllocAsync), CB(cuMemAllocAsync_ptsz), CB(cuMemFreeAsync), CB(cuMemFreeAsync_ptsz),
        CB(cuMemAllocFromPoolAsync), CB(cuMemAllocFromPoolAsync_ptsz), CB(cuMemAddressReserve), CB(cuMemAddressFree),
        CB(cuMemCreate), CB(cuMemRelease), CB(cuMemMap), CB(cuMemUnmap)};
    CUpti_SubscriberHandle sub;
    if (cuptiSubscribe(&sub, empty_cb, NULL) != CUPTI_SUCCESS)
        return 1;
    if (!getenv("VT_FLOOR_NO_CALLBACKS")) /* with both set: the cost of a subscriber alone */
        for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
            cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, ids[i]);
    if (!getenv("VT_FLOOR_NO_KERNELS")) {
        cuptiActivityRegisterCallbacks(buf_req, buf_done);
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    }
    return 1;
}
