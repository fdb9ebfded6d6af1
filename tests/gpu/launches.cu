// launches.cu - every way to launch a kernel, as CUPTI's kernel activity
// reports it: <<<>>> (cudaLaunchKernel), cudaLaunchKernelEx, a cooperative
// launch, and a CUDA graph (stream capture of three kernels, launched four
// times).  Kernels with static and dynamic shared memory.  Prints VT_EXPECT
// lines for vt_gpucheck: each kernel once, with its GPU duration and its
// static + dynamic shared memory, a graph's kernels one by one and marked
// as graph kernels, nothing for the launches made during the capture.
#include <string.h>
#include "vt_gputest.h"

__global__ void vt_plain_kernel(float *p) { p[threadIdx.x] += 1.0f; }

__global__ void vt_smem_kernel(float *p)
{
    __shared__ float tile[64]; // 256 bytes static
    extern __shared__ float dyn[];
    tile[threadIdx.x % 64] = p[threadIdx.x];
    dyn[threadIdx.x] = tile[(threadIdx.x + 1) % 64];
    __syncthreads();
    p[threadIdx.x] = dyn[threadIdx.x];
}

__global__ void vt_coop_kernel(float *p) { p[blockIdx.x * blockDim.x + threadIdx.x] *= 2.0f; }

__global__ void vt_graph_kernel(float *p, float f) { p[threadIdx.x] = p[threadIdx.x] * f + 1.0f; }

int main(void)
{
    float *d = NULL;
    CK(cudaMalloc(&d, 1 << 20));
    CK(cudaMemset(d, 0, 1 << 20));

    for (int i = 0; i < 5; i++)
        vt_plain_kernel<<<1, 128>>>(d);
    CK(cudaGetLastError());

    cudaLaunchConfig_t cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.gridDim = dim3(2, 3, 1);
    cfg.blockDim = dim3(64, 1, 1);
    cfg.dynamicSmemBytes = 1024;
    for (int i = 0; i < 3; i++)
        CK(cudaLaunchKernelEx(&cfg, vt_smem_kernel, d));

    int coop = 0;
    CK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, 0));
    if (coop) {
        void *args[] = {&d};
        for (int i = 0; i < 2; i++)
            CK(cudaLaunchCooperativeKernel((void *)vt_coop_kernel, dim3(4), dim3(32), args, 0, 0));
    }

    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < 3; i++)
        vt_graph_kernel<<<1, 32, 0, s>>>(d, 1.5f);
    CK(cudaStreamEndCapture(s, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < 4; i++)
        CK(cudaGraphLaunch(exec, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaDeviceSynchronize());
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(d));

    EXPECT("kernel vt_plain_kernel == 5");
    EXPECT("kernel vt_smem_kernel == 3");
    EXPECT("kernel_all vt_smem_kernel smem %d", 256 + 1024);
    EXPECT("kernel_all vt_plain_kernel graph 0");
    if (coop)
        EXPECT("kernel vt_coop_kernel == 2");
    EXPECT("kernel vt_graph_kernel == 12"); // 4 launches of 3, none at capture
    EXPECT("kernel_all vt_graph_kernel graph 1");
    EXPECT("kernel_all vt_plain_kernel timed 1");
    EXPECT("kernel_all vt_smem_kernel timed 1");
    printf("launches: done (cooperative launch %s)\n", coop ? "supported" : "not supported");
    return 0;
}
