// alloc_vmm.cu - the driver's virtual memory management API, as PyTorch's
// expandable segments use it: reserve, create, map, set access, unmap,
// release, free the range.  Physical memory is accounted by VmmCreate.
#include "vt_gputest.h"

extern "C" NOINLINE CUmemGenericAllocationHandle vmm_create_site(size_t size)
{
    CUmemAllocationProp prop = vt_device0_prop();
    CUmemGenericAllocationHandle h;
    CKD(cuMemCreate(&h, size, &prop, 0));
    EXPECT("vmm_create %zu vmm_create_site", size);
    return h;
}

int main(void)
{
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    CUmemAllocationProp prop = vt_device0_prop();
    size_t gran = 0;
    CKD(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    size_t reserve = 64 * gran;
    CUdeviceptr base;
    CKD(cuMemAddressReserve(&base, reserve, 0, 0, 0));
    EXPECT("vmm_reserve %#llx %zu", (unsigned long long)base, reserve);
    CUmemGenericAllocationHandle h[4];
    for (int i = 0; i < 4; i++) {
        h[i] = vmm_create_site((size_t)(i + 1) * gran);
    }
    size_t off = 0;
    for (int i = 0; i < 4; i++) {
        size_t sz = (size_t)(i + 1) * gran;
        CKD(cuMemMap(base + off, sz, 0, h[i], 0));
        EXPECT("vmm_map %#llx %zu", (unsigned long long)(base + off), sz);
        CUmemAccessDesc acc = {};
        acc.location = prop.location;
        acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        CKD(cuMemSetAccess(base + off, sz, &acc, 1));
        off += sz;
    }
    CK(cudaMemset((void *)base, 1, off));
    CK(cudaDeviceSynchronize());
    off = 0;
    for (int i = 0; i < 4; i++) {
        size_t sz = (size_t)(i + 1) * gran;
        CKD(cuMemUnmap(base + off, sz));
        CKD(cuMemRelease(h[i]));
        off += sz;
    }
    CKD(cuMemAddressFree(base, reserve));
    EXPECT("count vmm_create == 4");
    EXPECT("count vmm_release == 4");
    EXPECT("count vmm_map == 4");
    EXPECT("count vmm_unmap == 4");
    EXPECT("count vmm_reserve == 1");
    EXPECT("count vmm_address_free == 1");
    EXPECT("complete 1");
    return 0;
}
