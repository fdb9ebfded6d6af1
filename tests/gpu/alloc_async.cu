// alloc_async.cu - stream-ordered allocation: cudaMallocAsync/cudaFreeAsync
// (device default pool), an explicit pool with cudaMallocFromPoolAsync,
// pool trim, release threshold, destroy; pool usage sampled while
// allocations are live.
#include <unistd.h>
#include "vt_gputest.h"

extern "C" NOINLINE void *async_alloc_site(size_t n, cudaStream_t s)
{
    void *p = NULL;
    CK(cudaMallocAsync(&p, n, s));
    EXPECT("alloc malloc_async %p %zu async_alloc_site", p, n);
    return p;
}

extern "C" NOINLINE void *pool_alloc_site(cudaMemPool_t pool, size_t n, cudaStream_t s)
{
    void *p = NULL;
    CK(cudaMallocFromPoolAsync(&p, n, pool, s));
    EXPECT("alloc malloc_from_pool %p %zu pool_alloc_site", p, n);
    return p;
}

int main(void)
{
    CK(cudaSetDevice(0));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    void *p[64];
    for (int i = 0; i < 64; i++)
        p[i] = async_alloc_site((size_t)(i + 1) * 65536, s);
    CK(cudaStreamSynchronize(s));
    usleep(500 * 1000); // the sampler reads the default pool's usage
    for (int i = 0; i < 64; i++) {
        CK(cudaFreeAsync(p[i], s));
        EXPECT("free %p", p[i]);
    }
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t pool;
    CK(cudaMemPoolCreate(&pool, &props));
    uint64_t thr = 64 << 20;
    CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &thr));
    void *q[16];
    for (int i = 0; i < 16; i++)
        q[i] = pool_alloc_site(pool, (size_t)(i + 1) << 20, s);
    CK(cudaStreamSynchronize(s));
    usleep(500 * 1000);
    for (int i = 0; i < 16; i++) {
        CK(cudaFreeAsync(q[i], s));
        EXPECT("free %p", q[i]);
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaMemPoolTrimTo(pool, 0));
    CK(cudaMemPoolDestroy(pool));
    CK(cudaStreamDestroy(s));
    EXPECT("count pool >= 4"); // create, set threshold, trim, destroy
    EXPECT("count pool_usage >= 2");
    EXPECT("count memory_usage >= 1");
    EXPECT("complete 1");
    return 0;
}
