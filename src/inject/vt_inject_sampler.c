/* vt_inject_sampler.c - the sampler thread (`vt-sampler`): pool usage
 * (cuMemPoolGetAttribute) and the driver view of device memory (NVML,
 * loaded with dlopen), every VRAMTRACE_SAMPLE_MS. */
#include "vt_inject_int.h"
#include "vt_actmux.h"
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
        vt_inject_emit(&ev);
    }
}

void *sampler_main(void *arg)
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
                vt_inject_emit(&ev);
            }
        }
        pthread_mutex_lock(&pool_mu);
        sample_pools();
        pthread_mutex_unlock(&pool_mu);
        uint64_t ac = atomic_exchange(&g.alloc_count, 0);
        if (g.static_on && g.cfg.static_mem < 0 && ac * 1000 > (uint64_t)VT_STATIC_MAX_RATE * g.cfg.sample_ms) {
            cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMORY2);
            vt_actmux_keep(CUPTI_ACTIVITY_KIND_MEMORY2, 0);
            g.static_on = 0;
            note(VT_SEV_INFO, "module globals (DEVICE_STATIC) no longer recorded: allocation rate too high "
                              "for MEMORY2 activity (VRAMTRACE_STATIC=1 keeps it on)");
        }
    }
    return NULL;
}
