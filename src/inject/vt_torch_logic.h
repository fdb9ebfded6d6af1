/* vt_torch_logic.h - the pure parts of the PyTorch tracker's use, tested
 * on the CPU (tests/inject/test_torch_logic.c). */
#ifndef VT_TORCH_LOGIC_H
#define VT_TORCH_LOGIC_H

#include <stdint.h>
#include <string.h>

/* The layout check: the tracker's first segment entry (addr, size) against
 * the driver allocation CUPTI saw last on the same thread (last_addr,
 * last_size), inside which the allocator records it.  A cudaMalloc
 * segment is the same range; an expandable segment's map entry covers the
 * pages mapped by the call, the last cuMemMap among them: both end where
 * the driver's range ends, and the entry starts at or before it.  0 when
 * the entry cannot be that range (a shim built for another layout). */
static inline int vt_torch_layout_ok(uint64_t addr, uint64_t size, uint64_t last_addr, uint64_t last_size)
{
    if (!addr || !size || !last_addr || !last_size)
        return 0;
    if (addr > last_addr || size < last_size)
        return 0;
    return addr + size == last_addr + last_size;
}

/* Whether a module path is PyTorch's CUDA allocator library (libc10_cuda.so,
 * with or without a version suffix). */
static inline int vt_torch_is_c10_cuda(const char *path)
{
    if (!path)
        return 0;
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    return !strncmp(b, "libc10_cuda.", 12);
}

#endif
