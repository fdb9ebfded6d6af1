// gpu_micro.cu - microbenchmarks for the tracer's per-call cost:
// cudaMalloc+cudaFree (1 MiB), cudaMallocAsync+cudaFreeAsync (64 KiB),
// empty kernel launches.  Prints "name ns_per_op" lines (median of 5 batches).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>
#include <vector>

__global__ void empty_kernel() {}

static double now_ns()
{
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <class F> static double median_ns(int n, F f)
{
    std::vector<double> v;
    for (int b = 0; b < 5; b++) {
        double t0 = now_ns();
        for (int i = 0; i < n; i++) f(i);
        cudaDeviceSynchronize();
        v.push_back((now_ns() - t0) / n);
    }
    std::sort(v.begin(), v.end());
    return v[2];
}

__attribute__((noinline)) void *alloc_site(size_t n)
{
    void *p;
    cudaMalloc(&p, n);
    return p;
}
__attribute__((noinline)) void *alloc_async_site(size_t n, cudaStream_t s)
{
    void *p;
    cudaMallocAsync(&p, n, s);
    return p;
}

int main()
{
    cudaFree(0);
    cudaStream_t s;
    cudaStreamCreate(&s);
    for (int i = 0; i < 1000; i++) empty_kernel<<<1, 1, 0, s>>>();
    cudaDeviceSynchronize();
    double launch = median_ns(20000, [&](int i) {
        empty_kernel<<<1, 1, 0, s>>>();
        if ((i & 1023) == 1023) cudaStreamSynchronize(s);
    });
    double mf = median_ns(3000, [&](int) { cudaFree(alloc_site(1 << 20)); });
    double ma = median_ns(20000, [&](int) { cudaFreeAsync(alloc_async_site(65536, s), s); });
    printf("launch %.0f\nmalloc_free %.0f\nmalloc_async_free %.0f\n", launch, mf, ma);
    return 0;
}
