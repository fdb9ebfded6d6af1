/* vt_names.c - printable names of the format's enums (stable: used in
 * `vramtrace dump`, JSON output and golden files). */
#include "vt_event.h"

#define VT_X_CHECK(E, V, N, M, S, C) _Static_assert(V > 0 && V < VT_EV__MAX, "VT_EV__MAX: 1 + the highest VALUE");
VT_EVENT_KINDS(VT_X_CHECK)
#undef VT_X_CHECK

const char *vt_evtype_name(vt_evtype t)
{
    static const char *const names[VT_EV__MAX] = {
#define VT_X_NAME(E, V, N, M, S, C) [VT_EV_##E] = N,
        VT_EVENT_KINDS(VT_X_NAME)
#undef VT_X_NAME
    };
    if ((unsigned)t >= VT_EV__MAX || !names[t])
        return "?";
    return names[t];
}

int vt_evtype_site(vt_evtype t)
{
    static const unsigned char site[VT_EV__MAX] = {
#define VT_X_SITE(E, V, N, M, S, C) [VT_EV_##E] = S,
        VT_EVENT_KINDS(VT_X_SITE)
#undef VT_X_SITE
    };
    return (unsigned)t < VT_EV__MAX ? site[t] : 0;
}

int vt_evtype_corr(vt_evtype t)
{
    static const unsigned char corr[VT_EV__MAX] = {
#define VT_X_CORR(E, V, N, M, S, C) [VT_EV_##E] = C,
        VT_EVENT_KINDS(VT_X_CORR)
#undef VT_X_CORR
    };
    return (unsigned)t < VT_EV__MAX ? corr[t] : 0;
}

const char *vt_memkind_name(vt_memkind k)
{
    static const char *const names[VT_MEM__COUNT] = {
        "unknown", "device", "device_static", "managed", "pinned_host", "array", "host_registered", "tensor",
    };
    return (unsigned)k < VT_MEM__COUNT ? names[k] : "?";
}

const char *vt_allocapi_name(vt_allocapi a)
{
    static const char *const names[VT_API__COUNT] = {
        "unknown", "malloc", "malloc_pitch", "malloc_async", "malloc_from_pool", "malloc_managed",
        "host_alloc", "host_register", "array", "module_global", "vmm", "caching_allocator",
    };
    return (unsigned)a < VT_API__COUNT ? names[a] : "?";
}
