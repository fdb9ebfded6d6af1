/* vt_gputest.h - helpers for the CUDA test programs of tests/gpu: checked
 * CUDA calls and "VT_EXPECT ..." lines read by vt_gpucheck. */
#ifndef VT_GPUTEST_H
#define VT_GPUTEST_H
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                                                   \
    do {                                                                                        \
        cudaError_t e_ = (x);                                                                   \
        if (e_ != cudaSuccess) {                                                                \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)
#define CKD(x)                                                                 \
    do {                                                                       \
        CUresult e_ = (x);                                                     \
        if (e_ != CUDA_SUCCESS) {                                              \
            const char *s_ = "?";                                              \
            cuGetErrorName(e_, &s_);                                           \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_);    \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

/* one printf per line: threads print expectations concurrently */
#define EXPECT(fmt, ...)                                   \
    do {                                                   \
        printf("VT_EXPECT " fmt "\n", ##__VA_ARGS__);      \
        fflush(stdout);                                    \
    } while (0)

#define NOINLINE __attribute__((noinline))

/* what cuMemCreate and cuMemGetAllocationGranularity are asked for: pinned
 * device memory on device 0 */
static inline CUmemAllocationProp vt_device0_prop(void)
{
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    return prop;
}
#endif
