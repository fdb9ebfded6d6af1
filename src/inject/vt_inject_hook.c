/* vt_inject_hook.c - tensor events from a Python framework's own memory
 * hook (docs/ARCHITECTURE.md, "Tensor events from CuPy's memory hook").
 *
 * CuPy's MemoryPool hands out blocks of chunks it got from cudaMalloc;
 * CUPTI sees the chunks only.  CuPy's public hook API
 * (cupy.cuda.MemoryHook) tells Python code of every block it hands out
 * and takes back: src/python/vramtrace_cupy.py, installed by record's
 * sitecustomize, calls these two functions through ctypes (the library is
 * found by the path in CUDA_INJECTION64_PATH, already loaded: RTLD_NOLOAD).
 * They are, with InitializeInjection, all that libvramtrace.so exports
 * (exports.map).
 *
 * A block becomes a TENSOR block of the CACHING_ALLOCATOR API, as a
 * PyTorch tensor from the shim does (vt_inject_driver.c, torch_on_entry),
 * with the calling thread's stacks captured as for any allocation: the
 * Python frames are read from the thread's own frame chain, without the
 * GIL (ctypes releases it around the call; nothing here needs it).  The
 * chunks stay CUPTI's DEVICE blocks; the analyzer counts them as reserved.
 *
 * Never crashes the host: every argument is checked, calls before the
 * library is initialised, after it finished or from its own threads are
 * refused with a negative return, and nothing here blocks. */
#include "vt_inject_int.h" /* first: _GNU_SOURCE */

/* Pools whose hook may report (the Note names the pool: the analyzer's
 * vt_pools.c looks for it).  0: not attached. */
static _Atomic int g_hook_pool;

#define VT_HOOK_EXPORT __attribute__((visibility("default")))

/* Attach the hook of `pool` ("cupy").  Returns 0 when tensor events from
 * it will be recorded (the trace gets one Note, "CuPy memory hook: tensor
 * events on"), -1 when the library is not tracing (not initialised, or
 * finished), -2 for a pool it does not know.  Any thread; idempotent. */
VT_HOOK_EXPORT int vt_hook_attach(const char *pool);
int vt_hook_attach(const char *pool)
{
    if (!pool || strcmp(pool, "cupy"))
        return -2;
    if (!atomic_load(&g.active) || !g.w || atomic_load(&g.finished))
        return -1;
    int expect = 0;
    if (atomic_compare_exchange_strong(&g_hook_pool, &expect, 1))
        note(VT_SEV_INFO,
             "CuPy memory hook: tensor events on (cupy.cuda.MemoryHook; pool chunks are reserved memory)");
    return 0;
}

/* One event of the attached hook: action 0, a block of `size` bytes at
 * `addr` handed out on `device`; 1, that block taken back (size unused).
 * Returns 0 when recorded, negative when refused (not attached, not
 * tracing, a null address, an unknown action). */
VT_HOOK_EXPORT int vt_hook_event(uint32_t action, int32_t device, uint64_t addr, uint64_t size);
int vt_hook_event(uint32_t action, int32_t device, uint64_t addr, uint64_t size)
{
    inject_tls *T = VT_TLS_ADDR(&t_in);
    if (T->internal || !atomic_load_explicit(&g.active, memory_order_relaxed) ||
        !atomic_load_explicit(&g_hook_pool, memory_order_relaxed))
        return -1;
    if (!addr || action > 1 || (action == 0 && (!size || size > (1ull << 44))))
        return -2;
    const uint32_t dev = device >= 0 && device < VT_MAX_DEVICES ? (uint32_t)device : 0;
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.time_ns = g.tsc_events ? vt_clock_at(__rdtsc()) : 0;
    if (action == 0) {
        ev.type = VT_EV_ALLOC;
        ev.u.alloc = (vt_ev_alloc){.address = addr,
                                   .size = size,
                                   .device = dev,
                                   .kind = VT_MEM_TENSOR,
                                   .api = VT_API_CACHING_ALLOCATOR};
        vt_inject_capture_site(T, &ev.u.alloc.site);
    } else {
        ev.type = VT_EV_FREE;
        ev.u.free = (vt_ev_free){
            .address = addr, .device = dev, .kind = VT_MEM_TENSOR, .api = VT_API_CACHING_ALLOCATOR};
    }
    vt_inject_emit(&ev);
    if (mark_on()) {
        if (action == 0)
            mark_alloc(addr, size, dev, VT_API_CACHING_ALLOCATOR);
        else
            mark_free(addr, VT_API_CACHING_ALLOCATOR);
    }
    return 0;
}

int hook_attached(void)
{
    return atomic_load_explicit(&g_hook_pool, memory_order_relaxed) != 0;
}
