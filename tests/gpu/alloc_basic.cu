// alloc_basic.cu - synchronous allocation families: cudaMalloc, pitch, 3D,
// managed, pinned host (cudaHostAlloc, cudaMallocHost), registered host,
// arrays; a __device__ global (DEVICE_STATIC); leaks in named functions;
// kernels; NVTX ranges.  Prints VT_EXPECT lines for vt_gpucheck.
#include <nvtx3/nvToolsExt.h>
#include <string.h>
#include "vt_gputest.h"

__device__ float vt_static_table[1 << 18]; // 1 MiB module global

__global__ void vt_scale_kernel(float *p, int n, float f)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = p[i] * f + vt_static_table[i % (1 << 18)];
}

extern "C" NOINLINE void *alloc_device_in_named_function(size_t n)
{
    void *p = NULL;
    CK(cudaMalloc(&p, n));
    EXPECT("alloc malloc %p %zu alloc_device_in_named_function", p, n);
    return p;
}

extern "C" NOINLINE void leak_in_named_function_a(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 1 << 20));
    EXPECT("alloc malloc %p %d leak_in_named_function_a", p, 1 << 20);
    EXPECT("leak %p", p);
}

extern "C" NOINLINE void leak_in_named_function_b(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 3 << 20));
    EXPECT("alloc malloc %p %d leak_in_named_function_b", p, 3 << 20);
    EXPECT("leak %p", p);
}

extern "C" NOINLINE void pitch_and_3d(void)
{
    void *p = NULL;
    size_t pitch = 0;
    CK(cudaMallocPitch(&p, &pitch, 1000, 37));
    EXPECT("alloc malloc_pitch %p %zu pitch_and_3d", p, pitch * 37);
    CK(cudaFree(p));
    EXPECT("free %p", p);
    cudaPitchedPtr pp;
    CK(cudaMalloc3D(&pp, make_cudaExtent(300, 20, 5)));
    EXPECT("alloc malloc_pitch %p %zu pitch_and_3d", pp.ptr, pp.pitch * 20 * 5);
    CK(cudaFree(pp.ptr));
    EXPECT("free %p", pp.ptr);
}

extern "C" NOINLINE void managed_and_host(void)
{
    void *m = NULL, *h1 = NULL, *h2 = NULL;
    CK(cudaMallocManaged(&m, 5 << 20));
    EXPECT("alloc malloc_managed %p %d managed_and_host", m, 5 << 20);
    CK(cudaHostAlloc(&h1, 2 << 20, cudaHostAllocDefault));
    EXPECT("alloc host_alloc %p %d managed_and_host", h1, 2 << 20);
    CK(cudaMallocHost(&h2, 777777));
    EXPECT("alloc host_alloc %p %d managed_and_host", h2, 777777);
    size_t rsz = 4 << 20;
    void *r = aligned_alloc(4096, rsz);
    memset(r, 0, rsz);
    CK(cudaHostRegister(r, rsz, cudaHostRegisterDefault));
    EXPECT("alloc host_register %p %zu managed_and_host", r, rsz);
    CK(cudaHostUnregister(r));
    EXPECT("free %p", r);
    free(r);
    CK(cudaFree(m));
    EXPECT("free %p", m);
    CK(cudaFreeHost(h1));
    EXPECT("free %p", h1);
    CK(cudaFreeHost(h2));
    EXPECT("free %p", h2);
}

extern "C" NOINLINE void arrays(void)
{
    cudaChannelFormatDesc d = cudaCreateChannelDesc<float4>();
    cudaArray_t a = NULL;
    CK(cudaMallocArray(&a, &d, 256, 128));
    // the array handle is the "address"; size = 16 B x 256 x 128
    EXPECT("alloc array %p %d arrays", (void *)a, 16 * 256 * 128);
    CK(cudaFreeArray(a));
    EXPECT("free %p", (void *)a);
}

int main(void)
{
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    nvtxRangePushA("setup");
    const size_t sizes[] = {256, 4096, 1 << 20, 12345679, 64 << 20};
    void *ptrs[5];
    for (int i = 0; i < 5; i++)
        ptrs[i] = alloc_device_in_named_function(sizes[i]);
    nvtxRangePop();
    EXPECT("nvtx setup");
    nvtxRangePushA("compute");
    int n = (int)(sizes[4] / sizeof(float));
    for (int k = 0; k < 100; k++)
        vt_scale_kernel<<<(n + 255) / 256, 256>>>((float *)ptrs[4], n, 1.0001f);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    nvtxRangePop();
    EXPECT("nvtx compute");
    EXPECT("kernel vt_scale_kernel == 100");
    for (int i = 0; i < 5; i++) {
        CK(cudaFree(ptrs[i]));
        EXPECT("free %p", ptrs[i]);
    }
    pitch_and_3d();
    managed_and_host();
    arrays();
    leak_in_named_function_a();
    leak_in_named_function_b();
    EXPECT("count alloc:module_global >= 1");
    EXPECT("count device >= 1");
    EXPECT("count module >= 3");
    EXPECT("complete 1");
    return 0;
}
