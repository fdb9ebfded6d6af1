// threads.cu - 16 threads allocating and freeing at once (cudaMalloc and
// cudaMallocAsync), each size unique, so every event can be matched.
#include <pthread.h>
#include "vt_gputest.h"

#define NT 16
#define NA 100

extern "C" NOINLINE void *thread_alloc_site(size_t n, int async, cudaStream_t s)
{
    void *p = NULL;
    if (async)
        CK(cudaMallocAsync(&p, n, s));
    else
        CK(cudaMalloc(&p, n));
    return p;
}

static void *worker(void *arg)
{
    long t = (long)arg;
    CK(cudaSetDevice(0));
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    void *p[NA];
    for (int i = 0; i < NA; i++) {
        size_t n = 4096 * (size_t)(1 + t * NA + i) + 8 * (size_t)t;
        int async = i & 1;
        p[i] = thread_alloc_site(n, async, s);
        EXPECT("alloc %s %p %zu thread_alloc_site", async ? "malloc_async" : "malloc", p[i], n);
    }
    for (int i = 0; i < NA; i++) {
        if (i & 1)
            CK(cudaFreeAsync(p[i], s));
        else
            CK(cudaFree(p[i]));
        EXPECT("free %p", p[i]);
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaStreamDestroy(s));
    return NULL;
}

int main(void)
{
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    pthread_t th[NT];
    for (long t = 0; t < NT; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < NT; t++)
        pthread_join(th[t], NULL);
    EXPECT("threads >= 16");
    EXPECT("count dropped == 0");
    EXPECT("complete 1");
    return 0;
}
