/* vt_inject_torch.c - tensor events from PyTorch's native caching allocator
 * (issue 23; docs/ARCHITECTURE.md, "Tensor events in PyTorch's caching
 * allocator").
 *
 * With VRAMTRACE_TORCH_SHIM set, the library waits for the first device
 * allocation whose call stack passes through libc10_cuda: that is the
 * caching allocator growing its first segment, before any tensor exists
 * (every tensor lives in a segment).  In that callback, on that thread,
 * it loads the shim and attaches its trace tracker.  Why there: the
 * allocator's per-device mutex is a recursive one and this thread holds
 * it, so registering (which takes it) cannot wait on another thread; the
 * allocator is initialised (its device allocators exist, an attach
 * before that would be a no-op); and the tracker then sees that very
 * segment, which the layout check compares with what CUPTI saw.  A
 * Python import hook would need the GIL-holding thread and still race the
 * first allocation.
 *
 * Any failure (no shim file, a shim of another ABI or torch, another
 * allocator backend, an exception, a layout mismatch) leaves one message
 * and a Note; the trace is then what it is without the shim. */
#include "vt_inject_int.h" /* first: _GNU_SOURCE */

#include <execinfo.h>

#include "vt_torch_logic.h"

static void torch_disable(const char *why)
{
    atomic_store(&g.torch_state, VT_TORCH_DISABLED);
    char text[512];
    snprintf(text, sizeof(text), "PyTorch tensor events off: %.400s; the trace holds the allocator's segments only", why);
    note(VT_SEV_WARNING, text);
    say("vramtrace: %s", text);
}

/* Whether the current call stack passes through libc10_cuda. */
static int stack_in_c10(void)
{
    void *ips[64];
    if (g.uw) {
        int n = vt_unwind_capture(g.uw, (uint64_t *)ips, 64);
        const vt_modmap *mm = vt_unwinder_modmap(g.uw);
        for (int i = 0; i < n && mm; i++) {
            const vt_module *m = vt_modmap_find(mm, ((uint64_t *)ips)[i]);
            if (m && vt_torch_is_c10_cuda(m->path))
                return 1;
        }
        return 0;
    }
    /* native stacks off: glibc's walk (~5 us), only until the attach */
    int n = backtrace(ips, 64);
    for (int i = 0; i < n; i++) {
        Dl_info di;
        if (dladdr(ips[i], &di) && vt_torch_is_c10_cuda(di.dli_fname))
            return 1;
    }
    return 0;
}

/* A shim that `vramtrace record` is building beside the program
 * (VRAMTRACE_TORCH_SHIM_WAIT > 0): wait for it here, at the allocator's
 * first segment (vt_torch_shim_wait).  This thread holds the allocator's
 * mutex: the program waits as it would have waited for the build before
 * it started, only less, since `import torch` ran meanwhile. */
static int shim_wait(char *why, size_t n)
{
    double waited = 0;
    if (vt_torch_shim_wait(g.cfg.torch_shim, g.cfg.torch_shim_wait_s, &waited, why, n))
        return -1;
    if (waited > 0) {
        char text[160];
        snprintf(text, sizeof(text), "PyTorch shim: waited %.2f s at the allocator's first segment for its build "
                 "(the first run with this torch)", waited);
        note(VT_SEV_INFO, text);
        say("vramtrace: %s", text);
    }
    return 0;
}

void torch_try_attach(inject_tls *T)
{
    if (!stack_in_c10())
        return;
    int expect = VT_TORCH_WAIT;
    if (!atomic_compare_exchange_strong(&g.torch_state, &expect, VT_TORCH_ATTACHING))
        return; /* another thread is at it */
    int saved = T->internal;
    T->internal = 1; /* the shim's loading makes no CUDA call; if it did, ours to ignore */
    char why[400];
    if (shim_wait(why, sizeof(why))) {
        T->internal = saved;
        torch_disable(why);
        return;
    }
    void *h = dlopen(g.cfg.torch_shim, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        T->internal = saved;
        snprintf(why, sizeof(why), "cannot load the shim (%.300s)", e ? e : "?"); /* dlerror names the file */
        torch_disable(why);
        return;
    }
    vt_torch_attach_fn attach = (vt_torch_attach_fn)dlsym(h, VT_TORCH_ATTACH_SYMBOL);
    char msg[256] = "";
    int rc = attach ? attach(VT_TORCH_ABI, torch_on_entry, msg, sizeof(msg)) : -1;
    T->internal = saved;
    if (!attach) {
        torch_disable("the shim has no " VT_TORCH_ATTACH_SYMBOL);
        return;
    }
    if (rc) {
        torch_disable(msg[0] ? msg : "the shim did not attach");
        return; /* the shim stays loaded: nothing of it is registered */
    }
    atomic_store(&g.torch_state, VT_TORCH_CHECK);
}

void torch_check_layout(inject_tls *T, const vt_torch_entry *e)
{
    if (atomic_load(&g.torch_state) != VT_TORCH_CHECK)
        return;
    if (vt_torch_layout_ok(e->action == VT_TORCH_SEGMENT_MAP, e->addr, e->size, T->seg_addr, T->seg_size)) {
        int expect = VT_TORCH_CHECK;
        if (atomic_compare_exchange_strong(&g.torch_state, &expect, VT_TORCH_ON))
            note(VT_SEV_INFO, "PyTorch caching allocator: tensor events on (trace tracker attached, layout checked)");
        return;
    }
    char why[300];
    snprintf(why, sizeof(why),
             "the shim's first segment (0x%llx, %llu bytes) is not the driver's (0x%llx, %llu bytes): "
             "a shim built for another torch",
             (unsigned long long)e->addr, (unsigned long long)e->size, (unsigned long long)T->seg_addr,
             (unsigned long long)T->seg_size);
    torch_disable(why);
}
