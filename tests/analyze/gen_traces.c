/* gen_traces.c - writes the synthetic traces of the analyzer's golden tests
 * with the core writer: `gen_traces OUTDIR`.  One scenario per file, each
 * built so that one section or edge case of the report has a known answer
 * (see the comment of each function).  Touches only OUTDIR. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "vt_gen.h"

static const char *g_dir;

static const char *P(const char *name)
{
    static char buf[4096];
    snprintf(buf, sizeof(buf), "%s/%s", g_dir, name);
    return buf;
}

#define TRAIN "/home/user/project/train.py"
#define TORCH_MOD "/usr/lib/python3.12/site-packages/torch/nn/modules/module.py"
#define CUDART "/opt/vt-test/cuda/lib64/libcudart.so.13"
#define LIBFOO "/nonexistent/lib/libfoo.so"
#define C10 "/opt/conda/lib/python3.12/site-packages/torch/lib/libc10_cuda.so"

/* python code keys */
enum { K_MAIN = 1, K_BUILD, K_BUF, K_CALL, K_STEP, K_KEEP, K_CACHE, K_TEMP, K_RUN };

static void common_defs(void)
{
    gen_device(0, "NVIDIA H200", 140 * GiB);
    gen_module(CUDART, 0x7f0000000000ull, 0x7f0000100000ull, 0x7f0000000000ull);
    gen_module(LIBFOO, 0x7f1000000000ull, 0x7f1000010000ull, 0x7f1000000000ull);
    gen_module(C10, 0x7f2000000000ull, 0x7f2000200000ull, 0x7f2000000000ull);
    gen_code(K_MAIN, TRAIN, "main");
    gen_code(K_BUILD, TRAIN, "build_model");
    gen_code(K_BUF, TRAIN, "make_buffer");
    gen_code(K_CALL, TORCH_MOD, "Module._call_impl");
    gen_code(K_STEP, TRAIN, "train_step");
    gen_code(K_KEEP, TRAIN, "keep_outputs");
    gen_code(K_CACHE, TRAIN, "cached_embedding");
    gen_code(K_TEMP, TRAIN, "forward");
    gen_code(K_RUN, TRAIN, "run");
}

/* a python stack under cudart: [cudart, torch module, fn:line, main:80] */
static gen_stack py_stack(uint64_t key, uint32_t line, int through_torch)
{
    gen_stack s = {.n = 0};
    gs_native(&s, 0x7f0000001234ull);
    if (through_torch)
        gs_py(&s, K_CALL, 1511);
    gs_py(&s, key, line);
    gs_py(&s, K_MAIN, 80);
    return s;
}

/* Leaks: weights freed only at teardown (after the last kernel) count as
 * live at the view; a buffer leaked in steps 2-4, a native-only site in a
 * library that is not on this machine, module globals, pinned host memory;
 * temporaries freed each step do not appear. */
static void gen_leak(const char *name, int variant)
{
    gen_proc gp = {.program = "train.py", .pid = 4242, .kernels = 1, .native = 1, .python = 1};
    gen_open(P(name), &gp);
    common_defs();
    gen_memusage(T(0), 0, 139 * GiB, 140 * GiB);
    gen_alloc(T(1 * MS), 0x10000000ull, 1 * MiB, 0, VT_MEM_DEVICE_STATIC, VT_API_MODULE_GLOBAL, NULL);
    gen_stack w = py_stack(K_BUILD, 20, 1);
    for (int i = 0; i < 4; i++)
        gen_alloc(T(2 * MS + i * 100000), 0x200000000ull + i * 0x10000000ull, 256 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &w);
    gen_stack tmp = py_stack(K_STEP, 51, 0);
    gen_stack buf = py_stack(K_BUF, 42, 0);
    gen_stack foo = {.n = 0};
    gs_native(&foo, 0x7f0000001300ull);
    gs_native(&foo, 0x7f1000001234ull);
    gs_native(&foo, 0x7f1000002000ull);
    gen_stack pin = py_stack(K_RUN, 33, 0);
    gen_alloc(T(3 * MS), 0x500000000ull, 2 * MiB, 0, VT_MEM_PINNED_HOST, VT_API_HOST_ALLOC, &pin);
    int nbuf = variant ? 5 : 3;
    for (int s = 0; s < 6; s++) {
        uint64_t t = 10 * MS + s * 10 * MS;
        gen_alloc(T(t + 1 * MS), 0x300000000ull, 64 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &tmp);
        gen_kernel(T(t + 2 * MS), "ampere_sgemm_128x64_nn", 0, 3 * MS);
        gen_free(T(t + 6 * MS), 0x300000000ull, 0);
        if (s == 0) {
            gen_alloc(T(15 * MS), 0x600000000ull, 8 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &foo);
            if (variant) {
                gen_stack extra = py_stack(K_CACHE, 77, 0);
                gen_alloc(T(16 * MS + 500000), 0x700000000ull, 32 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &extra);
            }
        }
        if (s >= 2 && s < 2 + nbuf)
            gen_alloc(T(t + 7 * MS), 0x400000000ull + s * 0x1000000ull, 16 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &buf);
    }
    gen_memusage(T(40 * MS), 0, 138 * GiB, 140 * GiB);
    /* teardown after the last kernel (ends at 65 ms) */
    for (int i = 0; i < 4; i++)
        gen_free(T(100 * MS + i * MS), 0x200000000ull + i * 0x10000000ull, 0);
    gen_close(VT_END_NORMAL, 0);
}

/* Growth: 40 steps of 10 ms.  keep_outputs appends 1 MiB per step (must be
 * flagged), cached_embedding fills 8 entries then replaces the oldest (must
 * not), forward allocates 512 MiB and frees it every step (must not).
 * Steps come from NVTX ranges "step N" or, with nvtx = 0, from the
 * repeating kernel sequence. */
static void gen_growth(const char *name, int nvtx, uint64_t teardown)
{
    gen_proc gp = {.program = "train.py", .pid = 5151, .kernels = 1, .native = 1, .python = 1};
    gen_open(P(name), &gp);
    common_defs();
    gen_stack keep = py_stack(K_KEEP, 64, 0);
    gen_stack cache = py_stack(K_CACHE, 77, 0);
    gen_stack temp = py_stack(K_TEMP, 91, 1);
    const int steps = 40;
    for (int k = 0; k < steps; k++) {
        uint64_t t = 10 * MS + (uint64_t)k * 10 * MS;
        char msg[32];
        snprintf(msg, sizeof(msg), "step %d", k);
        if (nvtx)
            gen_nvtx(T(t), VT_NVTX_PUSH, msg);
        gen_alloc(T(t + 1 * MS), 0x100000000ull, 512 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC_ASYNC, &temp);
        gen_kernel(T(t + 2 * MS), "gemm_fwd", 0, 1 * MS);
        gen_kernel(T(t + 4 * MS), "relu_bwd", 0, 1 * MS);
        gen_free(T(t + 6 * MS), 0x100000000ull, 0);
        gen_alloc(T(t + 7 * MS), 0x200000000ull + (uint64_t)k * 0x100000ull, 1 * MiB, 0, VT_MEM_DEVICE,
                  VT_API_MALLOC_ASYNC, &keep);
        gen_alloc(T(t + 7 * MS + 500000), 0x300000000ull + (uint64_t)k * 0x400000ull, 4 * MiB, 0, VT_MEM_DEVICE,
                  VT_API_MALLOC_ASYNC, &cache);
        if (k >= 8)
            gen_free(T(t + 7 * MS + 600000), 0x300000000ull + (uint64_t)(k - 8) * 0x400000ull, 0);
        gen_kernel(T(t + 8 * MS), "adam_step", 0, 500000);
        if (nvtx)
            gen_nvtx(T(t + 9 * MS), VT_NVTX_POP, NULL);
    }
    /* teardown (growth_late.zst: a minute later, after a pause without
     * allocations: the kept outputs' frees then must not blur the window
     * where they grew) */
    for (int k = 0; k < steps; k++)
        gen_free(T(teardown + (uint64_t)k * 1000), 0x200000000ull + (uint64_t)k * 0x100000ull, 0);
    for (int k = steps - 8; k < steps; k++)
        gen_free(T(teardown + 50 * MS + (uint64_t)k * 1000), 0x300000000ull + (uint64_t)k * 0x400000ull, 0);
    gen_close(VT_END_NORMAL, 0);
}

/* OOM with fragmentation: a stream-ordered pool holds 30 GiB, half of it
 * unused, and a 2 GiB request fails. */
static void gen_oom(void)
{
    gen_proc gp = {.program = "oom_test", .pid = 777, .kernels = 1, .native = 1, .python = 0};
    gen_open(P("oom.zst"), &gp);
    gen_device(0, "NVIDIA H100 PCIe", 32 * GiB);
    gen_module("/opt/app/bin/oom_test", 0x400000ull, 0x500000ull, 0);
    gen_module(CUDART, 0x7f0000000000ull, 0x7f0000100000ull, 0x7f0000000000ull);
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_POOL;
    ev.time_ns = T(1 * MS);
    ev.u.pool.op = VT_POOL_CREATE;
    ev.u.pool.pool = 0xabc000;
    gen_emit(&ev);
    gen_stack big = {.n = 0}, other = {.n = 0};
    gs_native(&big, 0x7f0000001234ull);
    gs_native(&big, 0x401000ull);
    gs_native(&big, 0x402000ull);
    gs_native(&other, 0x7f0000001234ull);
    gs_native(&other, 0x403000ull);
    gs_native(&other, 0x402000ull);
    for (int i = 0; i < 30; i++) {
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_ALLOC;
        ev.time_ns = T(2 * MS + (uint64_t)i * MS);
        ev.u.alloc.address = 0x1000000000ull + (uint64_t)i * GiB;
        ev.u.alloc.size = 1 * GiB;
        ev.u.alloc.kind = VT_MEM_DEVICE;
        ev.u.alloc.api = VT_API_MALLOC_FROM_POOL;
        ev.u.alloc.pool = 0xabc000;
        ev.u.alloc.site.frames = (i % 2) ? other.f : big.f;
        ev.u.alloc.site.nframes = 3;
        gen_emit(&ev);
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_POOL_USAGE;
        ev.time_ns = T(2 * MS + (uint64_t)i * MS + 500000);
        ev.u.pool_usage.pool = 0xabc000;
        ev.u.pool_usage.reserved_current = (uint64_t)(i + 1) * GiB;
        ev.u.pool_usage.used_current = (uint64_t)(i + 1) * GiB;
        ev.u.pool_usage.reserved_high = ev.u.pool_usage.reserved_current;
        ev.u.pool_usage.used_high = ev.u.pool_usage.used_current;
        gen_emit(&ev);
    }
    gen_kernel(T(33 * MS), "fill_kernel", 0, 1 * MS);
    for (int i = 1; i < 30; i += 2)
        gen_free(T(40 * MS + (uint64_t)i * 100000), 0x1000000000ull + (uint64_t)i * GiB, 0);
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_POOL_USAGE;
    ev.time_ns = T(45 * MS);
    ev.u.pool_usage.pool = 0xabc000;
    ev.u.pool_usage.reserved_current = 30 * GiB;
    ev.u.pool_usage.used_current = 15 * GiB;
    ev.u.pool_usage.reserved_high = 30 * GiB;
    ev.u.pool_usage.used_high = 30 * GiB;
    gen_emit(&ev);
    gen_memusage(T(46 * MS), 0, 1 * GiB, 32 * GiB);
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_ALLOC_FAILED;
    ev.time_ns = T(50 * MS);
    ev.u.alloc_failed.size = 2 * GiB;
    ev.u.alloc_failed.kind = VT_MEM_DEVICE;
    ev.u.alloc_failed.api = VT_API_MALLOC_FROM_POOL;
    ev.u.alloc_failed.error = 2;
    ev.u.alloc_failed.error_name = "CUDA_ERROR_OUT_OF_MEMORY";
    ev.u.alloc_failed.pool = 0xabc000;
    ev.u.alloc_failed.site.frames = other.f;
    ev.u.alloc_failed.site.nframes = 3;
    gen_emit(&ev);
    ev.time_ns = T(51 * MS);
    ev.u.alloc_failed.size = 0;
    ev.u.alloc_failed.error = 1;
    ev.u.alloc_failed.error_name = "CUDA_ERROR_INVALID_VALUE";
    gen_emit(&ev);
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_POOL;
    ev.time_ns = T(52 * MS);
    ev.u.pool.op = VT_POOL_TRIM;
    ev.u.pool.pool = 0xabc000;
    gen_emit(&ev);
    gen_close(VT_END_NORMAL, 0);
}

static void vmm(vt_evtype type, uint64_t t, uint64_t addr, uint64_t size, uint64_t handle, const gen_stack *s)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = type;
    ev.time_ns = t;
    switch (type) {
    case VT_EV_VMM_CREATE:
        ev.u.vmm_create.handle = handle;
        ev.u.vmm_create.size = size;
        ev.u.vmm_create.kind = VT_MEM_DEVICE;
        if (s) {
            ev.u.vmm_create.site.frames = s->f;
            ev.u.vmm_create.site.nframes = s->n;
        }
        break;
    case VT_EV_VMM_RELEASE:
        ev.u.vmm_release.handle = handle;
        break;
    case VT_EV_VMM_MAP:
        ev.u.vmm_map.address = addr;
        ev.u.vmm_map.size = size;
        ev.u.vmm_map.handle = handle;
        break;
    default:
        ev.u.vmm_range.address = addr;
        ev.u.vmm_range.size = size;
        if (s) {
            ev.u.vmm_range.site.frames = s->f;
            ev.u.vmm_range.site.nframes = s->n;
        }
        break;
    }
    gen_emit(&ev);
}

/* VMM as PyTorch's expandable segments use it: physical memory counted
 * once per cuMemCreate even when mapped twice; a release while mapped
 * takes effect at the last unmap; unknown handles/mappings are oddities. */
static void gen_vmm(void)
{
    gen_proc gp = {.program = "train.py", .pid = 6000, .kernels = 1, .native = 1, .python = 1,
                   .alloc_conf = "expandable_segments:True"};
    gen_open(P("vmm.zst"), &gp);
    common_defs();
    gen_stack s = {.n = 0};
    gs_native(&s, 0x7f2000004000ull); /* libc10_cuda */
    gs_py(&s, K_TEMP, 91);
    gs_py(&s, K_MAIN, 80);
    const uint64_t base = 0x7e0000000000ull;
    vmm(VT_EV_VMM_RESERVE, T(1 * MS), base, 64 * GiB, 0, &s);
    for (int i = 0; i < 4; i++) {
        vmm(VT_EV_VMM_CREATE, T(2 * MS + i * MS), 0, 20 * MiB, 100 + i, &s);
        vmm(VT_EV_VMM_MAP, T(2 * MS + i * MS + 100000), base + i * 20 * MiB, 20 * MiB, 100 + i, NULL);
    }
    /* handle 100 mapped a second time: still 20 MiB of physical memory */
    vmm(VT_EV_VMM_MAP, T(7 * MS), base + 32 * GiB, 20 * MiB, 100, NULL);
    gen_kernel(T(8 * MS), "vectorized_elementwise_kernel", 0, 1 * MS);
    /* release of 101 while mapped: freed at its unmap */
    vmm(VT_EV_VMM_RELEASE, T(10 * MS), 0, 0, 101, NULL);
    gen_kernel(T(11 * MS), "vectorized_elementwise_kernel", 0, 1 * MS);
    vmm(VT_EV_VMM_UNMAP, T(13 * MS), base + 20 * MiB, 20 * MiB, 0, NULL);
    vmm(VT_EV_VMM_UNMAP, T(14 * MS), base + 60 * GiB, 20 * MiB, 0, NULL);  /* unknown mapping */
    vmm(VT_EV_VMM_RELEASE, T(15 * MS), 0, 0, 999, NULL);                  /* unknown handle */
    gen_kernel(T(16 * MS), "vectorized_elementwise_kernel", 0, 1 * MS);
    gen_close(VT_END_NORMAL, 0);
}

/* PyTorch's default caching allocator: few large cudaMalloc segments
 * from libc10_cuda, never freed. */
static void gen_caching(void)
{
    gen_proc gp = {.program = "train.py", .pid = 6100, .kernels = 1, .native = 1, .python = 1};
    gen_open(P("caching.zst"), &gp);
    common_defs();
    gen_stack s = {.n = 0};
    gs_native(&s, 0x7f0000001234ull);
    gs_native(&s, 0x7f2000004000ull);
    gs_py(&s, K_TEMP, 91);
    gs_py(&s, K_MAIN, 80);
    gen_stack s2 = {.n = 0};
    gs_native(&s2, 0x7f0000001234ull);
    gs_native(&s2, 0x7f2000004000ull);
    gs_py(&s2, K_BUILD, 20);
    gs_py(&s2, K_MAIN, 80);
    gen_alloc(T(1 * MS), 0x800000000ull, 2 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &s2);
    gen_alloc(T(2 * MS), 0x810000000ull, 20 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &s2);
    for (int i = 0; i < 3; i++) {
        gen_alloc(T(3 * MS + i * MS), 0x900000000ull + i * GiB, 512 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &s);
        gen_kernel(T(3 * MS + i * MS + 500000), "gemm", 0, 200000);
    }
    gen_close(VT_END_NORMAL, 0);
}

/* PyTorch's default caching allocator with its tensor events: segments
 * from libc10_cuda (reserved) hold TENSOR blocks (allocated) at the same
 * addresses.  Sixteen NVTX steps; each allocates a temporary (forward:91, freed)
 * and keeps one 512 KiB output (keep_outputs:50: the leak); weights
 * (build_model:20) held all along; a second segment grows for the kept
 * outputs (reserved growth, not a call site).  At the end a 8 MiB request
 * fails: 10 MiB are cached in the first segment, but its largest free
 * block is 6 MiB (fragmentation). */
/* teardown: caching_teardown.zst, the same run whose exit frees every
 * tensor after the last kernel, as a Python program's exit does once the
 * holder walk at exit has seen them (holders.sh joins the walk to them) */
static void gen_caching_tensors(int teardown)
{
    gen_proc gp = {.program = "train.py", .pid = 6200, .kernels = 1, .native = 1, .python = 1};
    gen_open(teardown ? P("caching_teardown.zst") : P("caching_tensors.zst"), &gp);
    common_defs();
    gen_stack seg = {.n = 0}, w = {.n = 0}, tmp = {.n = 0}, keep = {.n = 0};
    gs_native(&seg, 0x7f0000001234ull); /* cudaMalloc from the allocator */
    gs_native(&seg, 0x7f2000004000ull);
    gs_py(&seg, K_BUILD, 20);
    gs_py(&seg, K_MAIN, 80);
    gs_native(&w, 0x7f2000008000ull); /* the tracker's callback in the allocator */
    gs_py(&w, K_BUILD, 20);
    gs_py(&w, K_MAIN, 80);
    gs_native(&tmp, 0x7f2000008000ull);
    gs_py(&tmp, K_TEMP, 91);
    gs_py(&tmp, K_MAIN, 80);
    gs_native(&keep, 0x7f2000008000ull);
    gs_py(&keep, K_KEEP, 50);
    gs_py(&keep, K_MAIN, 80);
    const uint64_t A = 0x800000000ull, B = 0x900000000ull;
    gen_alloc(T(1 * MS), A, 20 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &seg);
    gen_alloc(T(1 * MS + 1000), A, 4 * MiB, 0, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, &w);
    gen_alloc(T(1 * MS + 2000), A + 4 * MiB, 4 * MiB, 0, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, &w);
    gen_alloc(T(1 * MS + 3000), A + 8 * MiB, 2 * MiB, 0, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, &w);
    gen_alloc(T(1 * MS + 4000), A + 16 * MiB, 4 * MiB, 0, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, &w);
    gen_free_tensor(T(1 * MS + 5000), A + 4 * MiB, 0); /* a hole of 4 MiB */
    uint64_t kept = 0;
    for (int i = 0; i < 16; i++) {
        uint64_t t0 = T(2 * MS + (uint64_t)i * 2 * MS);
        gen_nvtx(t0, VT_NVTX_PUSH, "step");
        if (i % 4 == 0) /* the kept outputs' segment grows */
            gen_alloc(t0 + 1000, B + (uint64_t)i / 4 * 2 * MiB, 2 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &seg);
        gen_alloc(t0 + 2000, A + 10 * MiB, 1 * MiB, 0, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, &tmp);
        gen_kernel(t0 + 3000, "gemm", 0, 500000);
        gen_free_tensor(t0 + 600000, A + 10 * MiB, 0);
        gen_alloc(t0 + 700000, B + kept, 512 * KiB, 0, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, &keep);
        kept += 512 * KiB;
        gen_nvtx(t0 + 1 * MS, VT_NVTX_POP, NULL);
    }
    gen_alloc_failed(0, T(35 * MS), 8 * MiB, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, 2, "CUDA_ERROR_OUT_OF_MEMORY",
                     &tmp);
    gen_kernel(T(36 * MS), "gemm", 0, 100000);
    if (teardown) {
        for (uint64_t k = 0; k < kept; k += 512 * KiB)
            gen_free_tensor(T(40 * MS) + k / KiB, B + k, 0);
        gen_free_tensor(T(41 * MS), A, 0);
        gen_free_tensor(T(41 * MS) + 100, A + 8 * MiB, 0);
        gen_free_tensor(T(41 * MS) + 200, A + 16 * MiB, 0);
    }
    gen_close(VT_END_NORMAL, 0);
}

static void failed_call(uint64_t t, uint64_t size, vt_memkind kind, vt_allocapi api, int error, const char *name,
                        const gen_stack *s)
{
    gen_alloc_failed(0, t, size, kind, api, error, name, s);
}

/* OOM first (issue 33): PyTorch's caching allocator with its tensor
 * events.  Two probes that are no failure: cuMemCreate refusing a handle
 * type (NOT_PERMITTED) and a thread's first cudaMallocAsync without a
 * context (INVALID_CONTEXT).  Then a 4 GiB request at train_step:60 fails
 * as PyTorch fails it: cudaMalloc, cudaMalloc again from another line of
 * the allocator after it freed its cache, then its own report of the
 * tensor request: one request of 3 calls.  The program catches it and
 * asks again (a second request, 2 calls); weights of 2 GiB held all
 * along (build_model:20). */
static void gen_oom_retry(void)
{
    gen_proc gp = {.program = "train.py", .pid = 6300, .kernels = 1, .native = 1, .python = 1};
    gen_open(P("oom_retry.zst"), &gp);
    common_defs();
    gen_stack seg = {.n = 0}, w = {.n = 0}, drv1 = {.n = 0}, drv2 = {.n = 0}, ten = {.n = 0}, vmm = {.n = 0};
    gs_native(&seg, 0x7f0000001234ull);
    gs_native(&seg, 0x7f2000004000ull);
    gs_py(&seg, K_BUILD, 20);
    gs_py(&seg, K_MAIN, 80);
    gs_native(&w, 0x7f2000008000ull);
    gs_py(&w, K_BUILD, 20);
    gs_py(&w, K_MAIN, 80);
    gs_native(&drv1, 0x7f0000001234ull); /* cudaMalloc from the allocator's first try */
    gs_native(&drv1, 0x7f2000004000ull);
    gs_py(&drv1, K_STEP, 60);
    gs_py(&drv1, K_MAIN, 80);
    gs_native(&drv2, 0x7f0000001234ull); /* its retry, after freeing cached blocks */
    gs_native(&drv2, 0x7f2000005000ull);
    gs_py(&drv2, K_STEP, 60);
    gs_py(&drv2, K_MAIN, 80);
    gs_native(&ten, 0x7f2000008000ull); /* the tracker's report of the request */
    gs_py(&ten, K_STEP, 60);
    gs_py(&ten, K_MAIN, 80);
    gs_native(&vmm, 0x7f2000006000ull);
    gs_py(&vmm, K_BUILD, 20);
    gs_py(&vmm, K_MAIN, 80);
    failed_call(T(1 * MS), 2 * MiB, VT_MEM_DEVICE, VT_API_VMM, 800, "CUDA_ERROR_NOT_PERMITTED", &vmm);
    failed_call(T(2 * MS), 2 * MiB, VT_MEM_DEVICE, VT_API_MALLOC_ASYNC, 201, "CUDA_ERROR_INVALID_CONTEXT", &vmm);
    const uint64_t A = 0x800000000ull;
    gen_alloc(T(3 * MS), A, 2 * GiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &seg);
    gen_alloc(T(3 * MS + 1000), A, 2 * GiB, 0, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, &w);
    for (int i = 0; i < 4; i++)
        gen_kernel(T(4 * MS + (uint64_t)i * MS), "gemm", 0, 500000);
    gen_memusage(T(9 * MS), 0, 1 * GiB, 140 * GiB);
    failed_call(T(10 * MS), 4 * GiB, VT_MEM_DEVICE, VT_API_MALLOC, 2, "CUDA_ERROR_OUT_OF_MEMORY", &drv1);
    failed_call(T(11 * MS), 4 * GiB, VT_MEM_DEVICE, VT_API_MALLOC, 2, "CUDA_ERROR_OUT_OF_MEMORY", &drv2);
    failed_call(T(11 * MS + 5000), 4 * GiB, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, 2, "CUDA_ERROR_OUT_OF_MEMORY", &ten);
    failed_call(T(20 * MS), 4 * GiB, VT_MEM_DEVICE, VT_API_MALLOC, 2, "CUDA_ERROR_OUT_OF_MEMORY", &drv1);
    failed_call(T(20 * MS + 5000), 4 * GiB, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, 2, "CUDA_ERROR_OUT_OF_MEMORY", &ten);
    gen_kernel(T(21 * MS), "gemm", 0, 100000);
    gen_close(VT_END_NORMAL, 0);
}

/* Oddities: double free, free of an address allocated before tracing,
 * an allocation over a live block, dropped events, a warning note, a trace
 * ended by a signal; the report shows them and goes on. */
static void gen_oddities(void)
{
    gen_proc gp = {.program = "odd", .pid = 31337, .kernels = 0, .native = 0, .python = 0};
    gen_open(P("oddities.zst"), &gp);
    gen_device(0, "NVIDIA H200", 140 * GiB);
    gen_alloc(T(1 * MS), 0xa000, 4096, 0, VT_MEM_DEVICE, VT_API_MALLOC, NULL);
    gen_free(T(2 * MS), 0xa000, 0);
    gen_free(T(3 * MS), 0xa000, 0);   /* double free */
    gen_free(T(4 * MS), 0xdead0000, 0); /* allocated before tracing */
    gen_alloc(T(5 * MS), 0xb000, 8192, 0, VT_MEM_DEVICE, VT_API_MALLOC, NULL);
    gen_alloc(T(6 * MS), 0xb000, 1024, 0, VT_MEM_DEVICE, VT_API_MALLOC, NULL); /* free not seen */
    gen_alloc(T(7 * MS), 0xc000, 1 * MiB, 0, VT_MEM_MANAGED, VT_API_MALLOC_MANAGED, NULL);
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_DROPPED;
    ev.time_ns = T(8 * MS);
    ev.u.dropped.source = VT_DROP_CUPTI_ACTIVITY;
    ev.u.dropped.count = 12;
    gen_emit(&ev);
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_NOTE;
    ev.time_ns = T(9 * MS);
    ev.u.note.severity = VT_SEV_WARNING;
    ev.u.note.text = "python stacks disabled: unknown Python version";
    gen_emit(&ev);
    gen_close(VT_END_SIGNAL, 11);
}

/* late_static.zst: a module's __device__ globals come from an activity
 * record, flushed after the allocations that follow them in time.  A 64 MiB
 * and a 12 MiB cudaMalloc (the peak, 76 MiB at 3 ms), a 1 MiB global made at
 * 3.5 ms while both were live, the 12 MiB freed at 4 ms, and only then the
 * global's record; a 2 MiB global made at 5 ms after that free arrives last.
 * The peak is 77 MiB at 3.5 ms (the 1 MiB global was live with both), with
 * the global among its call sites; the 2 MiB one is not in it. */
static void gen_late_static(void)
{
    gen_proc gp = {.program = "late_static", .pid = 4242, .kernels = 1, .native = 0, .python = 0};
    gen_open(P("late_static.zst"), &gp);
    gen_device(0, "NVIDIA H200", 140 * GiB);
    gen_alloc(T(1 * MS), 0x100000000ull, 64 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, NULL);
    gen_alloc(T(3 * MS), 0x200000000ull, 12 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, NULL);
    gen_kernel(T(3 * MS + 100000), "k", 0, 100000);
    gen_free(T(4 * MS), 0x200000000ull, 0);
    gen_alloc(T(3 * MS + 500000), 0x300000000ull, 1 * MiB, 0, VT_MEM_DEVICE_STATIC, VT_API_MODULE_GLOBAL, NULL);
    gen_kernel(T(6 * MS), "k", 0, 100000);
    gen_alloc(T(5 * MS), 0x400000000ull, 2 * MiB, 0, VT_MEM_DEVICE_STATIC, VT_API_MODULE_GLOBAL, NULL);
    gen_close(VT_END_NORMAL, 0);
}

/* Two ranks of one job: the same call site in both, one only in rank 1. */
static void gen_rank(int rank)
{
    char path[64];
    snprintf(path, sizeof(path), "ranks/rank%d.zst", rank);
    gen_proc gp = {.program = "train.py", .pid = 9000 + (uint32_t)rank, .rank = rank ? "1" : "0", .kernels = 1,
                   .native = 1, .python = 1};
    gen_open(P(path), &gp);
    gen_device((uint32_t)rank, "NVIDIA H200", 140 * GiB);
    gen_module(CUDART, 0x7f0000000000ull, 0x7f0000100000ull, 0x7f0000000000ull);
    /* a different load address per process: keys use module offsets */
    gen_module(LIBFOO, 0x7f1000000000ull + (uint64_t)rank * 0x100000000ull, 0x7f1000010000ull + (uint64_t)rank * 0x100000000ull,
               0x7f1000000000ull + (uint64_t)rank * 0x100000000ull);
    gen_code(K_BUF, TRAIN, "make_buffer");
    gen_code(K_MAIN, TRAIN, "main");
    gen_stack buf = {.n = 0};
    gs_native(&buf, 0x7f0000001234ull);
    gs_py(&buf, K_BUF, 42);
    gs_py(&buf, K_MAIN, 80);
    for (int i = 0; i <= rank; i++)
        gen_alloc(T(1 * MS + i * MS), 0x100000000ull + i * GiB, 100 * MiB, (uint32_t)rank, VT_MEM_DEVICE, VT_API_MALLOC, &buf);
    if (rank) {
        gen_stack foo = {.n = 0};
        gs_native(&foo, 0x7f1000001234ull + 0x100000000ull);
        gs_native(&foo, 0x7f1000002000ull + 0x100000000ull);
        gen_alloc(T(4 * MS), 0x200000000ull, 50 * MiB, 1, VT_MEM_DEVICE, VT_API_MALLOC, &foo);
    }
    gen_kernel(T(5 * MS), "all_reduce", (uint32_t)rank, 1 * MS);
    gen_close(VT_END_NORMAL, 0);
}

/* Many small zstd frames (1 KiB of input each), for damage tests: every
 * frame holds a few allocations and frees of one call site. */
static void gen_frames(void)
{
    gen_proc gp = {.program = "frames.py", .pid = 9100, .native = 1, .python = 1, .frame_bytes = 1024};
    gen_open(P("frames.zst"), &gp);
    gen_device(0, "NVIDIA H200", 140 * GiB);
    gen_module(CUDART, 0x7f0000000000ull, 0x7f0000100000ull, 0x7f0000000000ull);
    gen_code(K_BUF, TRAIN, "make_buffer");
    gen_stack buf = {.n = 0};
    gs_native(&buf, 0x7f0000001234ull);
    gs_py(&buf, K_BUF, 42);
    for (int i = 0; i < 8000; i++) {
        gen_alloc(T((uint64_t)i * 2 * MS), 0x100000000ull + (uint64_t)i * MiB, MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &buf);
        gen_free(T((uint64_t)i * 2 * MS + MS), 0x100000000ull + (uint64_t)i * MiB, 0);
    }
    gen_close(VT_END_NORMAL, 0);
}

/* ---- pools above CUDA (issue 33, src/analyze/vt_pools.c) ---- */

#define SITE "/opt/conda/lib/python3.12/site-packages"
#define CUPY_MEMORY SITE "/cupy/cuda/memory.cpython-312-x86_64-linux-gnu.so"
#define CUPY_RUNTIME SITE "/cupy_backends/cuda/api/runtime.cpython-312-x86_64-linux-gnu.so"
#define CTYPES "/opt/conda/lib/python3.12/lib-dynload/_ctypes.cpython-312-x86_64-linux-gnu.so"
#define XLA_EXT SITE "/jax_plugins/xla_cuda13/xla_cuda_plugin.so" /* jax 0.11: buffers come from the PJRT plugin */
enum { K_CUPY_ZEROS = 40, K_HOOK_EVENT, K_HOOK_MALLOC, K_JAX_API, K_JAX_PJIT };

static void pool_defs(void)
{
    gen_device(0, "NVIDIA H200", 140 * GiB);
    gen_module(CUDART, 0x7f0000000000ull, 0x7f0000100000ull, 0x7f0000000000ull);
    gen_module(CUPY_MEMORY, 0x7f3000000000ull, 0x7f3000100000ull, 0x7f3000000000ull);
    gen_module(CUPY_RUNTIME, 0x7f3100000000ull, 0x7f3100100000ull, 0x7f3100000000ull);
    gen_module(CTYPES, 0x7f3200000000ull, 0x7f3200100000ull, 0x7f3200000000ull);
    gen_module(XLA_EXT, 0x7f4000000000ull, 0x7f4010000000ull, 0x7f4000000000ull);
    gen_code(K_MAIN, TRAIN, "main");
    gen_code(K_KEEP, TRAIN, "keep_outputs");
    gen_code(K_TEMP, TRAIN, "forward");
    gen_code(K_CUPY_ZEROS, SITE "/cupy/_creation/basic.py", "zeros");
    gen_code(K_HOOK_EVENT, "/home/user/.cache/vramtrace/python-0123abcd/vramtrace_cupy.py", "_event");
    gen_code(K_HOOK_MALLOC, "/home/user/.cache/vramtrace/python-0123abcd/vramtrace_cupy.py", "malloc_postprocess");
    gen_code(K_JAX_API, SITE "/jax/_src/numpy/lax_numpy.py", "zeros");
    gen_code(K_JAX_PJIT, SITE "/jax/_src/pjit.py", "_pjit_call_impl");
}

/* a chunk of CuPy's pool: cudaMalloc from cupy_backends under the pool in
 * cupy/cuda/memory, for the array made at fn:line */
static gen_stack cupy_chunk_stack(uint64_t key, uint32_t line)
{
    gen_stack s = {.n = 0};
    gs_native(&s, 0x7f0000001234ull);
    gs_native(&s, 0x7f3100004000ull);
    gs_native(&s, 0x7f3000008000ull);
    gs_py(&s, K_CUPY_ZEROS, 223);
    gs_py(&s, key, line);
    gs_py(&s, K_MAIN, 80);
    return s;
}

/* CuPy's default pool, no hook: 24 steps of 2 ms; forward makes a 3 MiB
 * temporary, keep_outputs keeps 1 MiB a step (the leak, inside the pool).
 * The pool grows in 4 MiB chunks, each at whichever line asked when it was
 * full (issue 33: "blamed on the line of a per-step temporary").  The
 * trace holds chunks only: cannot tell, naming CuPy's pool. */
static void gen_cupy(int hook)
{
    gen_proc gp = {.program = "cupy_train.py", .pid = hook ? 7301 : 7300, .kernels = 1, .native = 1, .python = 1};
    gen_open(P(hook ? "cupy_hook.zst" : "cupy_pool.zst"), &gp);
    pool_defs();
    gen_stack chunk_tmp = cupy_chunk_stack(K_TEMP, 91), chunk_keep = cupy_chunk_stack(K_KEEP, 50);
    /* the hook's blocks: the library called through ctypes from
     * vramtrace_cupy.py, under CuPy's Python frames and the user's */
    gen_stack blk_tmp = {.n = 0}, blk_keep = {.n = 0};
    gen_stack *b[2] = {&blk_tmp, &blk_keep};
    for (int i = 0; i < 2; i++) {
        gs_native(b[i], 0x7f3200002000ull);
        gs_py(b[i], K_HOOK_EVENT, 71);
        gs_py(b[i], K_HOOK_MALLOC, 93);
        gs_py(b[i], K_CUPY_ZEROS, 223);
        gs_py(b[i], i ? K_KEEP : K_TEMP, i ? 50 : 91);
        gs_py(b[i], K_MAIN, 80);
    }
    const uint64_t C = 0x7f0000000000ull; /* chunks, 4 MiB each, one after another */
    uint64_t chunk_end = C, used = 0, nchunk = 0;
    gen_alloc(T(1 * MS), C, 4 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &chunk_tmp);
    chunk_end += 4 * MiB;
    nchunk++;
    if (hook) {
        vt_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_NOTE;
        ev.time_ns = T(1 * MS + 100);
        ev.u.note.severity = VT_SEV_INFO;
        ev.u.note.text = "CuPy memory hook: tensor events on (cupy.cuda.MemoryHook; pool chunks are reserved memory)";
        gen_emit(&ev);
    }
    /* the temporary's 3 MiB is reused at the top of the used part each step
     * (first fit after the kept blocks, as a best-fit pool would place it) */
    for (int k = 0; k < 24; k++) {
        uint64_t t0 = T(2 * MS + (uint64_t)k * 2 * MS);
        gen_nvtx(t0, VT_NVTX_PUSH, "step");
        uint64_t tmp_at = C + used;
        if (tmp_at + 3 * MiB > chunk_end) { /* full: a chunk at the temporary's line */
            gen_alloc(t0 + 1000, chunk_end, 4 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &chunk_tmp);
            chunk_end += 4 * MiB;
            nchunk++;
        }
        if (hook)
            gen_alloc(t0 + 2000, tmp_at, 3 * MiB, 0, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, &blk_tmp);
        gen_kernel(t0 + 3000, "cupy_add", 0, 500000);
        if (hook)
            gen_free_tensor(t0 + 600000, tmp_at, 0);
        if (C + used + 1 * MiB > chunk_end) {
            gen_alloc(t0 + 650000, chunk_end, 4 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &chunk_keep);
            chunk_end += 4 * MiB;
            nchunk++;
        }
        if (hook)
            gen_alloc(t0 + 700000, C + used, 1 * MiB, 0, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, &blk_keep);
        used += 1 * MiB;
        gen_kernel(t0 + 800000, "cupy_copy", 0, 100000);
        gen_nvtx(t0 + 1 * MS, VT_NVTX_POP, NULL);
    }
    /* teardown: the pool frees its chunks at exit */
    for (uint64_t i = 0; i < nchunk; i++)
        gen_free(T(100 * MS + i * 1000), C + i * 4 * MiB, 0);
    gen_close(VT_END_NORMAL, 0);
}

/* CuPy's pool beside a growing native leak: the pool's one chunk, made
 * at the start, never grows; libfoo's cudaMalloc keeps 2 MiB a step.
 * Growth outside the pool is a leak whatever the pool hides. */
static void gen_cupy_native(void)
{
    gen_proc gp = {.program = "cupy_train.py", .pid = 7302, .kernels = 1, .native = 1, .python = 1};
    gen_open(P("cupy_native.zst"), &gp);
    pool_defs();
    gen_module(LIBFOO, 0x7f1000000000ull, 0x7f1000010000ull, 0x7f1000000000ull);
    gen_stack chunk = cupy_chunk_stack(K_TEMP, 91), foo = {.n = 0};
    gs_native(&foo, 0x7f0000001300ull);
    gs_native(&foo, 0x7f1000001234ull);
    gs_py(&foo, K_KEEP, 50);
    gs_py(&foo, K_MAIN, 80);
    gen_alloc(T(1 * MS), 0x7f0000000000ull, 64 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &chunk);
    for (int k = 0; k < 24; k++) {
        uint64_t t0 = T(2 * MS + (uint64_t)k * 2 * MS);
        gen_nvtx(t0, VT_NVTX_PUSH, "step");
        gen_kernel(t0 + 3000, "cupy_add", 0, 500000);
        gen_alloc(t0 + 700000, 0x7e0000000000ull + (uint64_t)k * 2 * MiB, 2 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &foo);
        gen_nvtx(t0 + 1 * MS, VT_NVTX_POP, NULL);
    }
    gen_free(T(100 * MS), 0x7f0000000000ull, 0);
    gen_close(VT_END_NORMAL, 0);
}

/* JAX, XLA's default allocator: one cuMemAlloc of 75 % of the device at
 * the first array (BFC's preallocation, from XLA's CUDA plugin under JAX's
 * dispatch frames), then 24 steps that keep 256 KiB each inside it (issue
 * 33) and allocate nothing the trace sees: cannot tell, naming XLA. */
static void gen_jax_bfc(void)
{
    gen_proc gp = {.program = "jax_train.py", .pid = 7400, .kernels = 1, .native = 1, .python = 1};
    gen_open(P("jax_bfc.zst"), &gp);
    pool_defs();
    gen_stack pre = {.n = 0};
    gs_native(&pre, 0x7f0000001234ull);
    gs_native(&pre, 0x7f4000123000ull);
    gs_native(&pre, 0x7f4000456000ull);
    gs_py(&pre, K_JAX_PJIT, 1203);
    gs_py(&pre, K_JAX_API, 3401);
    gs_py(&pre, K_TEMP, 12);
    gs_py(&pre, K_MAIN, 80);
    gen_alloc(T(1 * MS), 0x7f0000000000ull, 105 * GiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &pre);
    for (int k = 0; k < 24; k++) {
        uint64_t t0 = T(2 * MS + (uint64_t)k * 2 * MS);
        gen_kernel(t0 + 3000, "fusion_1", 0, 500000);
        gen_kernel(t0 + 800000, "copy_2", 0, 100000);
    }
    gen_free(T(100 * MS), 0x7f0000000000ull, 0);
    gen_close(VT_END_NORMAL, 0);
}

/* JAX with XLA_PYTHON_CLIENT_ALLOCATOR=platform: one cuMemAlloc per buffer
 * through XLA's CUDA plugin and JAX's dispatch frames; a 4 MiB temporary freed
 * each step and 256 KiB kept per step at keep_outputs (train.py:50):
 * the existing path names the leak at the user's line. */
static void gen_jax_platform(void)
{
    gen_proc gp = {.program = "jax_train.py", .pid = 7401, .kernels = 1, .native = 1, .python = 1,
                   .env_name = "XLA_PYTHON_CLIENT_ALLOCATOR", .env_value = "platform"};
    gen_open(P("jax_platform.zst"), &gp);
    pool_defs();
    gen_stack s[2];
    for (int i = 0; i < 2; i++) {
        s[i].n = 0;
        gs_native(&s[i], 0x7f0000001234ull);
        gs_native(&s[i], 0x7f4000123000ull);
        gs_native(&s[i], 0x7f4000789000ull);
        gs_py(&s[i], K_JAX_PJIT, 1203);
        gs_py(&s[i], K_JAX_API, 3401);
        gs_py(&s[i], i ? K_KEEP : K_TEMP, i ? 50 : 91);
        gs_py(&s[i], K_MAIN, 80);
    }
    for (int k = 0; k < 24; k++) {
        uint64_t t0 = T(2 * MS + (uint64_t)k * 2 * MS);
        gen_alloc(t0 + 1000, 0x7e0000000000ull, 4 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &s[0]);
        gen_kernel(t0 + 3000, "fusion_1", 0, 500000);
        gen_free(t0 + 600000, 0x7e0000000000ull, 0);
        gen_alloc(t0 + 700000, 0x7f0000000000ull + (uint64_t)k * 256 * KiB, 256 * KiB, 0, VT_MEM_DEVICE, VT_API_MALLOC,
                  &s[1]);
        gen_kernel(t0 + 800000, "copy_2", 0, 100000);
    }
    for (int k = 0; k < 24; k++)
        gen_free(T(100 * MS + (uint64_t)k * 1000), 0x7f0000000000ull + (uint64_t)k * 256 * KiB, 0);
    gen_close(VT_END_NORMAL, 0);
}

/* ---- a job of two ranks (issue 39): what torchrun leaves in one directory */

#define NCCL SITE "/nvidia/nccl/lib/libnccl.so.2"
#define DIST "/home/user/project/dist_job.py"
enum { K_HIST = 60, K_FWD, K_OOM_STEP };

/* One rank of a DDP job on its own GPU (device = rank), PyTorch's
 * caching allocator with its tensor events, 24 NVTX steps of 2 ms with an
 * all-reduce, and NCCL's own buffers (cudaMalloc from libnccl, outside
 * the allocator).  job_leak/: rank 1 keeps one 512 KiB output a step in
 * a module-level list (keep_outputs, dist_job.py:50; holders.9101.txt
 * names __main__.history), rank 0 is clean.  job_oom/: both hold 2 GiB of
 * weights; at step 8 rank 1 asks for 4 GiB more (train_step, dist_job.py:60;
 * holders.9201.oom.txt, the OOM walk) and exits; rank 0, left waiting in
 * the step's all-reduce, is killed by the launcher (signal 15). */
static void gen_job_rank(int oom, int rank)
{
    char path[96];
    uint32_t pid = (oom ? 9200u : 9100u) + (uint32_t)rank;
    uint32_t dev = (uint32_t)rank;
    /* named as vramtrace record names a rank's trace */
    snprintf(path, sizeof(path), "%s/vramtrace.dist_job.testhost.r%d.%u.zst", oom ? "job_oom" : "job_leak", rank, pid);
    gen_proc gp = {.program = "dist_job.py", .pid = pid, .rank = rank ? "1" : "0", .kernels = 1, .native = 1, .python = 1};
    gen_open(P(path), &gp);
    gen_device(dev, "NVIDIA H200", 140 * GiB);
    gen_module(CUDART, 0x7f0000000000ull, 0x7f0000100000ull, 0x7f0000000000ull);
    gen_module(C10, 0x7f2000000000ull, 0x7f2000200000ull, 0x7f2000000000ull);
    gen_module(NCCL, 0x7f5000000000ull, 0x7f5001000000ull, 0x7f5000000000ull);
    gen_code(K_MAIN, DIST, "main");
    gen_code(K_BUILD, DIST, "build_model");
    gen_code(K_KEEP, DIST, "keep_outputs");
    gen_code(K_STEP, DIST, "train_step");
    gen_code(K_FWD, DIST, "forward");
    gen_stack seg = {.n = 0}, w = {.n = 0}, tmp = {.n = 0}, keep = {.n = 0}, nccl = {.n = 0}, big = {.n = 0},
              drv = {.n = 0};
    gs_native(&seg, 0x7f0000001234ull); /* cudaMalloc from the allocator */
    gs_native(&seg, 0x7f2000004000ull);
    gs_py(&seg, K_BUILD, 20);
    gs_py(&seg, K_MAIN, 80);
    gs_native(&w, 0x7f2000008000ull); /* the tracker's callback in the allocator */
    gs_py(&w, K_BUILD, 20);
    gs_py(&w, K_MAIN, 80);
    gs_native(&tmp, 0x7f2000008000ull);
    gs_py(&tmp, K_FWD, 91);
    gs_py(&tmp, K_MAIN, 80);
    gs_native(&keep, 0x7f2000008000ull);
    gs_py(&keep, K_KEEP, 50);
    gs_py(&keep, K_MAIN, 80);
    gs_native(&nccl, 0x7f0000001234ull); /* NCCL's communicator init: no frame of the user's */
    gs_native(&nccl, 0x7f5000010000ull);
    gs_native(&nccl, 0x7f5000020000ull);
    gs_native(&big, 0x7f2000008000ull);
    gs_py(&big, K_STEP, 60);
    gs_py(&big, K_MAIN, 80);
    gs_native(&drv, 0x7f0000001234ull);
    gs_native(&drv, 0x7f2000004000ull);
    gs_py(&drv, K_STEP, 60);
    gs_py(&drv, K_MAIN, 80);
    const uint64_t A = 0x800000000ull, B = 0x900000000ull, N = 0xa00000000ull;
    uint64_t wbytes = oom ? 2 * GiB : 8 * MiB;
    gen_alloc(T(1 * MS), A, wbytes + 4 * MiB, dev, VT_MEM_DEVICE, VT_API_MALLOC, &seg);
    gen_alloc(T(1 * MS + 1000), A, wbytes, dev, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, &w);
    for (int i = 0; i < 3; i++) /* NCCL's channels and proxy buffers */
        gen_alloc(T(1 * MS + 5000 + (uint64_t)i * 1000), N + (uint64_t)i * 8 * MiB, 4 * MiB, dev, VT_MEM_DEVICE,
                  VT_API_MALLOC, &nccl);
    gen_memusage(T(1 * MS + 9000), dev, 139 * GiB - wbytes, 140 * GiB);
    int steps = oom ? 8 : 24;
    uint64_t kept = 0;
    for (int i = 0; i < steps; i++) {
        uint64_t t0 = T(2 * MS + (uint64_t)i * 2 * MS);
        gen_nvtx(t0, VT_NVTX_PUSH, "step");
        gen_alloc(t0 + 2000, A + wbytes, 1 * MiB, dev, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, &tmp);
        gen_kernel(t0 + 3000, "gemm", dev, 400000);
        gen_kernel(t0 + 500000, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", dev, 100000);
        gen_free_tensor(t0 + 600000, A + wbytes, dev);
        if (!oom && rank == 1) {
            if (i % 4 == 0) /* the kept outputs' segment grows */
                gen_alloc(t0 + 650000, B + (uint64_t)i / 4 * 2 * MiB, 2 * MiB, dev, VT_MEM_DEVICE, VT_API_MALLOC, &seg);
            gen_alloc(t0 + 700000, B + kept, 512 * KiB, dev, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, &keep);
            kept += 512 * KiB;
        }
        gen_nvtx(t0 + 1 * MS, VT_NVTX_POP, NULL);
    }
    uint64_t t = T(2 * MS + (uint64_t)steps * 2 * MS);
    if (oom && rank == 1) { /* step 8 asks for 4 GiB: the allocator's cudaMalloc fails, then the request */
        gen_nvtx(t, VT_NVTX_PUSH, "step");
        gen_memusage(t + 1000, dev, 1 * GiB, 140 * GiB);
        gen_alloc_failed(dev, t + 2000, 4 * GiB, VT_MEM_DEVICE, VT_API_MALLOC, 2, "CUDA_ERROR_OUT_OF_MEMORY", &drv);
        gen_alloc_failed(dev, t + 3000, 4 * GiB, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, 2, "CUDA_ERROR_OUT_OF_MEMORY", &big);
        gen_close(VT_END_NORMAL, 0); /* the exception ends the program */
        return;
    }
    if (oom) { /* rank 0: step 8's all-reduce waits for rank 1 until the launcher kills it */
        gen_nvtx(t, VT_NVTX_PUSH, "step");
        gen_kernel(t + 3000, "gemm", dev, 400000);
        g_now = t + 30 * MS;
        gen_close(VT_END_SIGNAL, 15);
        return;
    }
    /* teardown after the last kernel: NCCL's buffers, the weights */
    for (int i = 0; i < 3; i++)
        gen_free(t + 5 * MS + (uint64_t)i * 1000, N + (uint64_t)i * 8 * MiB, dev);
    gen_close(VT_END_NORMAL, 0);
}

/* Beside job_leak/ and job_oom/: the holders files the walks wrote, and
 * each rank's expect.rank{R}.json as tests/gpu/dist_job.py writes it
 * (what torch said), so that tests/gpu/check_dist.py, the checker of the
 * GPU run and of its fixtures, is itself tested here (ctest
 * analyze.dist.synthetic). */
static void gen_job_files(void)
{
    FILE *f = fopen(P("job_leak/holders.9101.txt"), "w");
    if (!f)
        gen_die("job_leak/holders.9101.txt", VT_ERR_IO);
    fprintf(f, "vramtrace-holders 1\nW 20480 0.080000 0 -\nH 24 12582912 0 list\t__main__.history\n");
    for (int k = 0; k < 24; k++)
        fprintf(f, "P %llx %u 0\n", 0x900000000ull + (unsigned long long)k * 512 * KiB, (unsigned)(512 * KiB));
    fclose(f);
    f = fopen(P("job_oom/holders.9201.oom.txt"), "w");
    if (!f)
        gen_die("job_oom/holders.9201.oom.txt", VT_ERR_IO);
    fprintf(f, "vramtrace-holders 1\nW 20480 0.050000 0 -\nO 1 4294967296 2147483648 2147483648\n"
               "H 1 2147483648 0 Linear\t__main__.model.fc.weight\n");
    fclose(f);
    for (int oom = 0; oom < 2; oom++)
        for (int r = 0; r < 2; r++) {
            char name[64];
            snprintf(name, sizeof(name), "%s/expect.rank%d.json", oom ? "job_oom" : "job_leak", r);
            f = fopen(P(name), "w");
            if (!f)
                gen_die(name, VT_ERR_IO);
            /* allocated: the weights, and rank 1's kept outputs */
            unsigned long long alloc = oom ? 2 * GiB : 8 * MiB + (r ? 12 * MiB : 0);
            fprintf(f, "{\"mode\": \"%s\", \"rank\": %d, \"world\": 2, \"pid\": %u, \"steps\": %d, "
                       "\"leak_rank\": %d, \"oom_rank\": %d, \"file\": \"dist_job.py\", "
                       "\"leak_line\": 50, \"leak_function\": \"keep_outputs\", \"leak_holder\": \"__main__.history\", "
                       "\"oom_line\": 60, \"oom_function\": \"train_step\", \"oom_holder\": \"__main__.model.fc.weight\", "
                       "\"outcome\": \"%s\", \"allocated\": %llu, \"kept_bytes\": %llu}\n",
                    oom ? "oom1" : "leak1", r, (oom ? 9200u : 9100u) + (unsigned)r, oom ? 8 : 24, oom ? -1 : 1, oom ? 1 : -1,
                    oom ? (r ? "oom" : "started") : "done", alloc, (unsigned long long)(!oom && r ? 12 * MiB : 0));
            fclose(f);
        }
}

/* A pytest run under the plugin (src/python/vramtrace_pytest.py): each
 * test's call an NVTX range of the domain "vramtrace.test" (START with the
 * node id, END by range id), PyTorch's tensor events.  test_clean grows
 * the allocator's first segment (reserved, not the test's) and frees its
 * tensor; test_leaks keeps a 4 MiB tensor (test_model.py:14) and frees a
 * temporary; test_caches grows a 32 MiB segment for a 16 MiB tensor it
 * frees (the cache is no leak; its peak is 16 MiB); test_crash leaves
 * 1 MiB and the process stops inside it (no END). */
#define TESTS "/home/user/project/tests/test_model.py"
#define PYTEST_PY "/usr/lib/python3/dist-packages/_pytest/python.py"
enum { K_TCLEAN = 100, K_TLEAKS, K_TCACHES, K_TCRASH, K_PYFUNC };

static void test_range(uint64_t t, vt_nvtxop op, const char *nodeid, uint64_t id)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_NVTX;
    ev.time_ns = t;
    ev.u.nvtx.op = op;
    ev.u.nvtx.message = nodeid;
    ev.u.nvtx.domain = "vramtrace.test";
    ev.u.nvtx.range_id = id;
    gen_emit(&ev);
}

static gen_stack test_stack(uint64_t key, uint32_t line, int segment)
{
    gen_stack s = {.n = 0};
    if (segment)
        gs_native(&s, 0x7f0000001234ull); /* cudaMalloc from the allocator */
    gs_native(&s, segment ? 0x7f2000004000ull : 0x7f2000008000ull);
    gs_py(&s, key, line);
    gs_py(&s, K_PYFUNC, 195);
    return s;
}

static void gen_pytest(void)
{
    gen_proc gp = {.program = "pytest", .pid = 6300, .kernels = 1, .native = 1, .python = 1};
    gen_open(P("pytest.zst"), &gp);
    common_defs();
    gen_code(K_TCLEAN, TESTS, "test_clean");
    gen_code(K_TLEAKS, TESTS, "test_leaks");
    gen_code(K_TCACHES, TESTS, "test_caches");
    gen_code(K_TCRASH, TESTS, "test_crash");
    gen_code(K_PYFUNC, PYTEST_PY, "pytest_pyfunc_call");
    const uint64_t A = 0x800000000ull, B = 0x900000000ull;
    gen_stack seg1 = test_stack(K_TCLEAN, 6, 1), clean = test_stack(K_TCLEAN, 6, 0);
    gen_stack keep = test_stack(K_TLEAKS, 14, 0), tmp = test_stack(K_TLEAKS, 15, 0);
    gen_stack seg2 = test_stack(K_TCACHES, 19, 1), big = test_stack(K_TCACHES, 19, 0);
    gen_stack crash = test_stack(K_TCRASH, 24, 0);
    /* test_clean */
    test_range(T(1 * MS), VT_NVTX_START, "tests/test_model.py::test_clean", 1);
    gen_alloc(T(1 * MS + 1000), A, 20 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &seg1);
    gen_alloc(T(1 * MS + 2000), A, 1 * MiB, 0, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, &clean);
    gen_kernel(T(1 * MS + 3000), "fill", 0, 100000);
    gen_free_tensor(T(1 * MS + 200000), A, 0);
    test_range(T(2 * MS), VT_NVTX_END, NULL, 1);
    /* test_leaks */
    test_range(T(3 * MS), VT_NVTX_START, "tests/test_model.py::test_leaks", 2);
    gen_alloc(T(3 * MS + 1000), A, 4 * MiB, 0, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, &keep);
    gen_alloc(T(3 * MS + 2000), A + 4 * MiB, 2 * MiB, 0, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, &tmp);
    gen_kernel(T(3 * MS + 3000), "add", 0, 100000);
    gen_free_tensor(T(3 * MS + 200000), A + 4 * MiB, 0);
    test_range(T(4 * MS), VT_NVTX_END, NULL, 2);
    /* test_caches */
    test_range(T(5 * MS), VT_NVTX_START, "tests/test_model.py::test_caches", 3);
    gen_alloc(T(5 * MS + 1000), B, 32 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &seg2);
    gen_alloc(T(5 * MS + 2000), B, 16 * MiB, 0, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, &big);
    gen_kernel(T(5 * MS + 3000), "gemm", 0, 100000);
    gen_free_tensor(T(5 * MS + 300000), B, 0);
    test_range(T(6 * MS), VT_NVTX_END, NULL, 3);
    /* test_crash: no end */
    test_range(T(7 * MS), VT_NVTX_START, "tests/test_model.py::test_crash", 4);
    gen_alloc(T(7 * MS + 1000), A + 4 * MiB, 1 * MiB, 0, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR, &crash);
    gen_kernel(T(7 * MS + 3000), "add", 0, 100000);
    gen_close(VT_END_SIGNAL, 11);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_traces OUTDIR\n");
        return 2;
    }
    g_dir = argv[1];
    mkdir(g_dir, 0755);
    mkdir(P("ranks"), 0755);
    mkdir(P("job_leak"), 0755);
    mkdir(P("job_oom"), 0755);
    gen_leak("leak.zst", 0);
    gen_leak("leak2.zst", 1);
    gen_growth("growth_nvtx.zst", 1, 600 * MS);
    gen_growth("growth_kernels.zst", 0, 600 * MS);
    gen_growth("growth_late.zst", 1, 60000 * MS);
    gen_oom();
    gen_vmm();
    gen_caching();
    gen_caching_tensors(0);
    gen_caching_tensors(1);
    gen_oom_retry();
    gen_oddities();
    gen_rank(0);
    gen_rank(1);
    for (int oom = 0; oom < 2; oom++)
        for (int r = 0; r < 2; r++)
            gen_job_rank(oom, r);
    gen_job_files();
    gen_frames();
    gen_cupy(0);
    gen_cupy(1);
    gen_cupy_native();
    gen_jax_bfc();
    gen_jax_platform();
    gen_pytest();
    gen_late_static();
    return 0;
}
