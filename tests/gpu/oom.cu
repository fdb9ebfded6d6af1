// oom.cu - failed allocations: an impossible cudaMalloc, cudaMallocAsync and
// cudaMallocManaged-free path, each from a named function; the program
// goes on and ends normally.
#include "vt_gputest.h"

extern "C" NOINLINE void try_huge_allocation(void)
{
    void *p = NULL;
    size_t huge = (size_t)1 << 40; // 1 TiB
    cudaError_t e = cudaMalloc(&p, huge);
    printf("cudaMalloc(1 TiB): %s\n", cudaGetErrorName(e));
    if (e != cudaSuccess)
        EXPECT("failed malloc %zu try_huge_allocation", huge);
    cudaGetLastError();
}

extern "C" NOINLINE void try_huge_async(cudaStream_t s)
{
    void *p = NULL;
    size_t huge = (size_t)3 << 40;
    cudaError_t e = cudaMallocAsync(&p, huge, s);
    printf("cudaMallocAsync(3 TiB): %s\n", cudaGetErrorName(e));
    if (e != cudaSuccess)
        EXPECT("failed malloc_async %zu try_huge_async", huge);
    cudaGetLastError();
}

int main(void)
{
    CK(cudaSetDevice(0));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    try_huge_allocation();
    try_huge_async(s);
    void *ok = NULL;
    CK(cudaMalloc(&ok, 1 << 20));
    EXPECT("alloc malloc %p %d main", ok, 1 << 20);
    CK(cudaFree(ok));
    EXPECT("count alloc_failed >= 2");
    EXPECT("complete 1");
    return 0;
}
