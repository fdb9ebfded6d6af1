/* vt_names.c - printable names of the format's enums (stable: used in
 * `vramtrace dump`, JSON output and golden files). */
#include "vt_event.h"

const char *vt_evtype_name(vt_evtype t)
{
    static const char *const names[VT_EV__MAX] = {
        [VT_EV_HEADER] = "header", [VT_EV_SYNC] = "sync", [VT_EV_STRING] = "string",
        [VT_EV_STACK] = "stack", [VT_EV_FRAME] = "frame", [VT_EV_ALLOC] = "alloc",
        [VT_EV_FREE] = "free", [VT_EV_KERNEL] = "kernel", [VT_EV_LAUNCH] = "launch",
        [VT_EV_ALLOC_FAILED] = "alloc_failed", [VT_EV_MODULE] = "module",
        [VT_EV_THREAD] = "thread", [VT_EV_NVTX] = "nvtx", [VT_EV_DEVICE] = "device",
        [VT_EV_VMM_RESERVE] = "vmm_reserve", [VT_EV_VMM_ADDRESS_FREE] = "vmm_address_free",
        [VT_EV_VMM_CREATE] = "vmm_create", [VT_EV_VMM_RELEASE] = "vmm_release",
        [VT_EV_VMM_MAP] = "vmm_map", [VT_EV_VMM_UNMAP] = "vmm_unmap", [VT_EV_POOL] = "pool",
        [VT_EV_POOL_USAGE] = "pool_usage", [VT_EV_MEMORY_USAGE] = "memory_usage",
        [VT_EV_DROPPED] = "dropped", [VT_EV_NOTE] = "note", [VT_EV_END] = "end",
    };
    if ((unsigned)t >= VT_EV__MAX || !names[t])
        return "?";
    return names[t];
}

const char *vt_memkind_name(vt_memkind k)
{
    static const char *const names[VT_MEM__COUNT] = {
        "unknown", "device", "device_static", "managed", "pinned_host", "array", "host_registered",
    };
    return (unsigned)k < VT_MEM__COUNT ? names[k] : "?";
}

const char *vt_allocapi_name(vt_allocapi a)
{
    static const char *const names[VT_API__COUNT] = {
        "unknown", "malloc", "malloc_pitch", "malloc_async", "malloc_from_pool", "malloc_managed",
        "host_alloc", "host_register", "array", "module_global", "vmm",
    };
    return (unsigned)a < VT_API__COUNT ? names[a] : "?";
}
