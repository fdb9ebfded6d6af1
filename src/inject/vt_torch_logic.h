/* vt_torch_logic.h - the pure parts of the PyTorch tracker's use, tested
 * on the CPU (tests/inject/test_torch_logic.c). */
#ifndef VT_TORCH_LOGIC_H
#define VT_TORCH_LOGIC_H

#include <stdint.h>
#include <string.h>

/* The layout check: the tracker's first segment entry (action, addr,
 * size) against the driver allocation CUPTI saw last on the same thread
 * (last_addr, last_size), inside which the allocator records it.  A
 * cudaMalloc segment (SEGMENT_ALLOC) is the same range; an expandable
 * segment's map entry (SEGMENT_MAP) covers the pages mapped by the call,
 * the last cuMemMap among them: it ends where that range ends and starts
 * at or before it.  0 when the entry cannot be that range (a shim built
 * for another layout). */
static inline int vt_torch_layout_ok(int map, uint64_t addr, uint64_t size, uint64_t last_addr, uint64_t last_size)
{
    if (!addr || !size || !last_addr || !last_size || size > (1ull << 44)) /* no device maps 16 TiB */
        return 0;
    if (!map)
        return addr == last_addr && size == last_size;
    if (addr > last_addr || size < last_size || size - last_size != last_addr - addr)
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
