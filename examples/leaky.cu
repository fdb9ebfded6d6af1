// leaky.cu - the small leaky CUDA program that scripts/demo.sh records with
// `vramtrace record` on a machine with a GPU.  Plain CUDA runtime, no
// library: every allocation comes from a named function, so the report's
// call sites read naturally.  What it does, per step of a pretend training
// loop:
//   - scratch_buffer(): 8 MiB temporary, freed at the end of the step (fine);
//   - cache_activations(): 1 MiB kept in a list that is never trimmed (the
//     leak that grows every step);
//   - once, load_weights(): 16 MiB, freed at exit (fine), and
//     forgotten_workspace(): 2 MiB whose pointer is dropped (a one-off leak).
// Built by tests/cli/tests.cmake when nvcc is found: build/examples/leaky.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(x)                                                                       \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            std::fprintf(stderr, "leaky: %s: %s\n", #x, cudaGetErrorString(e_));       \
            std::exit(1);                                                              \
        }                                                                              \
    } while (0)

static const int kSteps = 20;
static const size_t kMiB = 1u << 20;

__global__ void fill(float *p, size_t n, float v)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = v;
}

__global__ void axpy(float *y, const float *x, size_t n, float a)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        y[i] += a * x[i];
}

static void launch_fill(float *p, size_t bytes, float v)
{
    size_t n = bytes / sizeof(float);
    fill<<<(unsigned)((n + 255) / 256), 256>>>(p, n, v);
    CHECK(cudaGetLastError());
}

__attribute__((noinline)) static float *load_weights(size_t bytes)
{
    float *w = nullptr;
    CHECK(cudaMalloc(&w, bytes));
    launch_fill(w, bytes, 0.5f);
    return w;
}

__attribute__((noinline)) static void forgotten_workspace(void)
{
    float *ws = nullptr;
    CHECK(cudaMalloc(&ws, 2 * kMiB));
    launch_fill(ws, 2 * kMiB, 0.0f);
    // the pointer goes out of scope: never freed
}

__attribute__((noinline)) static float *scratch_buffer(size_t bytes)
{
    float *s = nullptr;
    CHECK(cudaMalloc(&s, bytes));
    return s;
}

__attribute__((noinline)) static float *cache_activations(const float *src, size_t bytes)
{
    float *a = nullptr;
    CHECK(cudaMalloc(&a, bytes));
    CHECK(cudaMemcpyAsync(a, src, bytes, cudaMemcpyDeviceToDevice));
    return a;
}

__attribute__((noinline)) static void train_step(int step, float *weights, float **history)
{
    float *scratch = scratch_buffer(8 * kMiB);
    launch_fill(scratch, 8 * kMiB, (float)step);
    size_t n = kMiB / sizeof(float);
    axpy<<<(unsigned)((n + 255) / 256), 256>>>(scratch, weights, n, 0.1f);
    CHECK(cudaGetLastError());
    history[step] = cache_activations(scratch, kMiB); // kept "for later": grows every step
    CHECK(cudaFree(scratch));
}

int main(void)
{
    int ndev = 0;
    CHECK(cudaGetDeviceCount(&ndev));
    float *weights = load_weights(16 * kMiB);
    forgotten_workspace();
    float *history[kSteps] = {};
    for (int step = 0; step < kSteps; step++)
        train_step(step, weights, history);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(weights));
    std::printf("leaky: %d steps on %d device(s); left %d MiB in history and 2 MiB forgotten\n",
                kSteps, ndev, kSteps);
    return 0;
}
