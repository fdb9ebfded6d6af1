/* vt_pools.c - pools above CUDA that the trace cannot see into (issue 33,
 * docs/REPORT.md, "Pools the trace cannot see into").
 *
 * CuPy's MemoryPool, JAX/XLA's allocator (BFC, which preallocates 75 % of
 * the device), TensorFlow's BFC and RAPIDS RMM's pool resources get large
 * chunks from CUDA and hand out blocks inside them: the trace holds the
 * chunks, whose call sites are the allocations that made the pool grow,
 * and a block kept every step may never show as a chunk.  Such a pool is
 * recognized by the libraries and frames of its chunks' call stacks; the
 * verdict is then "cannot tell", naming the pool and what makes its blocks
 * visible, unless the trace holds the pool's blocks (CuPy's memory hook,
 * src/inject/vt_inject_hook.c, whose Note says it attached).
 *
 * Touches only the process's tables; symbolization (vt_site_frames) only
 * to refine a pool the modules found. */
#include <string.h>

#include "vt_report_int.h"

static const char *base_of(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

int vt_pool_of_path(const char *path)
{
    if (!path || !*path)
        return VT_POOL_NONE;
    const char *b = base_of(path);
    /* CuPy: cupy/cuda/memory.cpython-*.so (the pool, in Cython), and
     * cupy_backends' runtime wrappers under it */
    if ((strstr(path, "/cupy/cuda/") && !strncmp(b, "memory.", 7)) || strstr(path, "/cupy_backends/"))
        return VT_POOL_CUPY;
    /* TensorFlow before XLA: TensorFlow's own libraries carry XLA too */
    if (!strncmp(b, "libtensorflow_framework", 23) || !strncmp(b, "libtensorflow_cc", 16) ||
        !strncmp(b, "_pywrap_tensorflow", 18))
        return VT_POOL_TF;
    /* JAX: jaxlib's xla_extension / _jax, the CUDA PJRT plugin */
    if (!strncmp(b, "xla_extension", 13) || !strncmp(b, "libxla", 6) || !strncmp(b, "xla_cuda_plugin", 15) ||
        !strncmp(b, "pjrt_c_api_gpu_plugin", 21) || strstr(path, "/jaxlib/") ||
        strstr(path, "/jax_plugins/") || strstr(path, "/jax_cuda"))
        return VT_POOL_XLA;
    if (!strncmp(b, "librmm", 6) || strstr(path, "/rmm/"))
        return VT_POOL_RMM;
    return VT_POOL_NONE;
}

/* A Python frame of the pool itself (its Python-level functions). */
static int pool_of_python(const char *file, const char *fn)
{
    if (fn && !strncmp(fn, "cupy.cuda.memory.", 17))
        return VT_POOL_CUPY;
    if (file && strstr(file, "/cupy/cuda/memory"))
        return VT_POOL_CUPY;
    if (file && strstr(file, "/rmm/") && strstr(file, "memory_resource"))
        return VT_POOL_RMM;
    return VT_POOL_NONE;
}

int vt_pool_of_stack(const vt_proc *p, uint32_t stack)
{
    uint32_t fr[VT_MAX_STACK];
    uint32_t n = vt_proc_stack(p, stack, fr, VT_MAX_STACK);
    if (n > VT_MAX_STACK)
        n = VT_MAX_STACK;
    for (uint32_t i = 0; i < n; i++) {
        if (fr[i] >= p->nframes)
            continue;
        const vt_pframe *f = &p->frames[fr[i]];
        int k = VT_POOL_NONE;
        if (f->kind == VT_FRAME_NATIVE && f->module && f->module < p->nmodules)
            k = p->modules[f->module].pool;
        else if (f->kind == VT_FRAME_PYTHON)
            k = pool_of_python(vt_proc_string(p, f->file), vt_proc_string(p, f->function));
        if (k)
            return k;
    }
    return VT_POOL_NONE;
}

static const struct {
    const char *key, *name, *what;
} k_pools[VT_POOL__COUNT] = {
    [VT_POOL_CUPY] = {"cupy", "CuPy's MemoryPool", "hands out blocks inside cudaMalloc chunks"},
    [VT_POOL_XLA] = {"jax_xla", "JAX/XLA's BFC allocator",
                     "preallocates most of the device (75 %) and hands out buffers inside it"},
    [VT_POOL_TF] = {"tensorflow_bfc", "TensorFlow's BFC allocator",
                    "hands out tensors inside regions it keeps"},
    [VT_POOL_RMM] = {"rmm", "RAPIDS RMM's memory resource",
                     "may be a pool that hands out blocks inside its chunks"},
};

const char *vt_pool_key(int pool)
{
    return pool > 0 && pool < VT_POOL__COUNT ? k_pools[pool].key : "none";
}

const char *vt_pool_name(int pool)
{
    return pool > 0 && pool < VT_POOL__COUNT ? k_pools[pool].name : "";
}

/* Whether any symbolized frame of the unit's stack contains `s`; *named:
 * some frame of the pool's own library was symbolized. */
static int frames_say(vt_analysis *a, const vt_proc *p, const vt_unit *u, const char *s, int *named)
{
    vt_xframe fr[VT_MAX_STACK];
    uint32_t n = vt_site_frames(a, p, u->stack, fr, VT_MAX_STACK, NULL);
    int hit = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (fr[i].python || !fr[i].function)
            continue;
        if (fr[i].module && vt_pool_of_path(fr[i].module) == u->pool)
            *named = 1;
        if (strstr(fr[i].function, s))
            hit = 1;
    }
    return hit;
}

static int env_is(const char *v, const char *want)
{
    return v && !strcmp(v, want);
}

/* Whether a unit of a pool's library is a chunk of a pool whose blocks
 * the trace cannot see (1), or one allocation per block (0): the
 * stream-ordered allocator (its blocks are the driver's, seen one by
 * one), XLA's platform allocator, CuPy or RMM without their pool where
 * symbols say so.  Without symbols, a pool: the conservative answer. */
static int unit_hidden(vt_analysis *a, const vt_proc *p, const vt_unit *u)
{
    if (!u->pool || u->kind == VT_MEM_TENSOR || !rep_resident(u->kind))
        return 0;
    if (u->api == VT_API_MALLOC_ASYNC || u->api == VT_API_MALLOC_FROM_POOL)
        return 0; /* TF_GPU_ALLOCATOR=cuda_malloc_async, XLA's cuda_async, RMM's async resource */
    int named = 0;
    switch (u->pool) {
    case VT_POOL_CUPY: /* cupy.cuda.set_allocator(None): cudaMalloc per block, no MemoryPool frame */
        return frames_say(a, p, u, "MemoryPool", &named) || !named;
    case VT_POOL_XLA:
        return !env_is(p->env_xla_alloc, "platform");
    case VT_POOL_TF:
        return !env_is(p->env_tf_alloc, "cuda_malloc_async");
    case VT_POOL_RMM: /* rmm.reinitialize(pool_allocator=False): cuda_memory_resource */
        if (frames_say(a, p, u, "pool_memory_resource", &named) ||
            frames_say(a, p, u, "arena_memory_resource", &named))
            return 1;
        return !(named && frames_say(a, p, u, "cuda_memory_resource", &named));
    default:
        return 0;
    }
}

/* Whether the trace holds the pool's own blocks (item 5): CuPy's memory
 * hook attached (its Note) and recorded tensor blocks. */
static int pool_covered(const vt_proc *p, int pool)
{
    if (pool != VT_POOL_CUPY || !p->tensor_units)
        return 0;
    for (uint32_t k = 0; k < p->nnotes; k++)
        if (p->notes[k] && strstr(p->notes[k], "CuPy memory hook: tensor events on"))
            return 1;
    return 0;
}

void vt_pools_find(vt_analysis *a, const vt_proc *p, vt_pool_finding *out)
{
    memset(out, 0, sizeof(*out));
    uint64_t bytes[VT_POOL__COUNT] = {0};
    for (size_t k = 0; k < p->nunits; k++) {
        const vt_unit *u = &p->units[k];
        if (!u->pool || u->pool >= VT_POOL__COUNT || !u->alloc_bytes || pool_covered(p, u->pool) ||
            !unit_hidden(a, p, u))
            continue;
        bytes[u->pool] += u->alloc_bytes;
        out->units++;
        if (u->growth_flag)
            out->grown += u->grown;
    }
    for (int k = 1; k < VT_POOL__COUNT; k++)
        if (bytes[k] > (out->pool ? bytes[out->pool] : 0))
            out->pool = k;
    out->bytes = out->pool ? bytes[out->pool] : 0;
    if (p->ngrowth) {
        const vt_unit *u = &p->units[p->growth_order[0]];
        out->lead_hidden = u->pool && !pool_covered(p, u->pool) && unit_hidden(a, p, u);
    }
}

/* "... -- ARGV" into buf */
static void with_argv(const vt_proc *p, char *buf, size_t len, const char *pre)
{
    size_t n = (size_t)snprintf(buf, len, "%s", pre);
    for (uint32_t k = 0; k < p->argc && n < len; k++)
        n += (size_t)snprintf(buf + n, len - n, " %s", p->argv[k]);
}

void vt_pools_advice(const vt_proc *p, int pool, char *reason, size_t rlen, char *command, size_t clen)
{
    if (pool <= 0 || pool >= VT_POOL__COUNT) {
        reason[0] = command[0] = 0;
        return;
    }
    snprintf(
        reason, rlen,
        "allocations come from %s, which %s; the trace sees its chunks, not the blocks inside them, so a "
        "leak inside the pool may show as no growth, or as the line that made the pool grow",
        k_pools[pool].name, k_pools[pool].what);
    char run[480];
    switch (pool) {
    case VT_POOL_CUPY:
        with_argv(p, run, sizeof(run), "vramtrace record --");
        snprintf(command, clen,
                 "%s (its CuPy memory hook records the pool's blocks; VRAMTRACE_CUPY_HOOK unset), or call "
                 "cupy.cuda.set_allocator(None) before allocating",
                 run);
        break;
    case VT_POOL_XLA:
        with_argv(
            p, run, sizeof(run),
            "XLA_PYTHON_CLIENT_ALLOCATOR=platform XLA_PYTHON_CLIENT_PREALLOCATE=false vramtrace record --");
        snprintf(command, clen, "%s", run);
        break;
    case VT_POOL_TF:
        with_argv(p, run, sizeof(run), "TF_GPU_ALLOCATOR=cuda_malloc_async vramtrace record --");
        snprintf(command, clen, "%s", run);
        break;
    default:
        with_argv(p, run, sizeof(run), "vramtrace record --");
        snprintf(command, clen, "rmm.reinitialize(pool_allocator=False) in the program, then %s", run);
        break;
    }
}
