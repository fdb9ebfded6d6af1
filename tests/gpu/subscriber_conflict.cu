// subscriber_conflict.cu - another CUPTI client subscribes before CUDA
// starts; libvramtrace.so's own cuptiSubscribe then fails: it must say so
// once and stay out of the way (the program runs normally, exit 0).
#include <cupti.h>
#include "vt_gputest.h"

static void CUPTIAPI other_tool(void *, CUpti_CallbackDomain, CUpti_CallbackId, const void *) {}

int main(void)
{
    CUpti_SubscriberHandle sub;
    if (cuptiSubscribe(&sub, other_tool, NULL) != CUPTI_SUCCESS) {
        fprintf(stderr, "could not subscribe first\n");
        return 2;
    }
    void *p = NULL;
    CK(cudaMalloc(&p, 1 << 20));
    CK(cudaFree(p));
    printf("program ran normally\n");
    return 0;
}
