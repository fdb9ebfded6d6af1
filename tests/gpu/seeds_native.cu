// seeds_native.cu - a C++ CUDA program that leaks in named functions beside
// correct ones (tests/gpu/check_seeds.sh, issue 22 item 8): each of 20
// steps (NVTX ranges "stepN")
//   load_batch()      cudaMalloc 1 MiB, never freed           (the leak)
//   stage_async()     cudaMallocAsync 512 KiB, never freed    (the leak)
//   map_pages()       cuMemCreate 2 MiB + cuMemMap, never released (the leak)
//   scratch_ok()      cudaMalloc 8 MiB, a kernel, cudaFree     (correct)
//   pool_ok()         cudaMallocAsync 4 MiB, cudaFreeAsync     (correct)
// The CUDA runtime is linked statically (nvcc's default): the frames the
// report names must be these functions, never the runtime's.  Prints
// "SEED_NATIVE <function> <bytes leaked in all>" for each leak.
#include <nvtx3/nvToolsExt.h>

#include "vt_gputest.h"

static const int STEPS = 20;

__global__ void touch(char *p, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = (char)i;
}

extern "C" NOINLINE void *load_batch(void)
{
    void *p = nullptr;
    CK(cudaMalloc(&p, 1 << 20));
    touch<<<4, 256>>>((char *)p, 1024);
    return p; // kept by nobody: leaked
}

extern "C" NOINLINE void *stage_async(cudaStream_t s)
{
    void *p = nullptr;
    CK(cudaMallocAsync(&p, 512 << 10, s));
    return p; // never freed
}

struct Mapping {
    CUdeviceptr va;
    CUmemGenericAllocationHandle h;
};

extern "C" NOINLINE Mapping map_pages(size_t gran)
{
    CUmemAllocationProp prop = vt_device0_prop();
    Mapping m = {};
    CKD(cuMemCreate(&m.h, gran, &prop, 0));
    CKD(cuMemAddressReserve(&m.va, gran, 0, 0, 0));
    CKD(cuMemMap(m.va, gran, 0, m.h, 0));
    CUmemAccessDesc acc = {};
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CKD(cuMemSetAccess(m.va, gran, &acc, 1));
    return m; // never unmapped, never released
}

extern "C" NOINLINE void scratch_ok(void)
{
    void *p = nullptr;
    CK(cudaMalloc(&p, 8 << 20));
    touch<<<64, 256>>>((char *)p, 8 << 20);
    CK(cudaDeviceSynchronize());
    CK(cudaFree(p));
}

extern "C" NOINLINE void pool_ok(cudaStream_t s)
{
    void *p = nullptr;
    CK(cudaMallocAsync(&p, 4 << 20, s));
    touch<<<16, 256, 0, s>>>((char *)p, 4 << 20);
    CK(cudaFreeAsync(p, s));
}

int main(void)
{
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    CUmemAllocationProp prop = vt_device0_prop();
    size_t gran = 0;
    CKD(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    for (int i = 0; i < STEPS; i++) {
        char name[32];
        snprintf(name, sizeof(name), "step%d", i);
        nvtxRangePushA(name);
        load_batch();
        stage_async(s);
        map_pages(gran);
        scratch_ok();
        pool_ok(s);
        CK(cudaStreamSynchronize(s));
        nvtxRangePop();
    }
    printf("SEED_NATIVE load_batch %d\n", STEPS << 20);
    printf("SEED_NATIVE stage_async %d\n", STEPS * (512 << 10));
    printf("SEED_NATIVE map_pages %zu\n", (size_t)STEPS * gran);
    return 0;
}
