/* vt_inject_devices.c - contexts and devices: a Device record per device
 * seen (resource callbacks), the pools of a context that goes away. */
#include "vt_inject_int.h"
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
    vt_inject_emit(&ev);
}

void on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd)
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
