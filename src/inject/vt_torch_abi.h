/* vt_torch_abi.h - the C boundary between libvramtrace.so and its PyTorch
 * shim (src/inject/torch/vt_torch_shim.cpp, built against the installed
 * torch's own headers by `vramtrace record` or CMake).
 *
 * The shim attaches a trace tracker to PyTorch's native caching allocator
 * (c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker) and turns
 * each TraceEntry into a vt_torch_entry handed to the library's callback.
 * The callback runs inside the allocator, with its per-device mutex held:
 * it must not call PyTorch, take the GIL or block.
 *
 * Plain C types only; bump VT_TORCH_ABI when this struct or the entry
 * point changes (the library refuses a shim of another ABI). */
#ifndef VT_TORCH_ABI_H
#define VT_TORCH_ABI_H

#include <stddef.h>
#include <stdint.h>

#define VT_TORCH_ABI 1u
#define VT_TORCH_ATTACH_SYMBOL "vt_torch_attach"

/* TraceEntry::Action values, as the shim checks them at compile time */
enum {
    VT_TORCH_ALLOC = 0,
    VT_TORCH_FREE_REQUESTED = 1,
    VT_TORCH_FREE_COMPLETED = 2,
    VT_TORCH_SEGMENT_ALLOC = 3,
    VT_TORCH_SEGMENT_FREE = 4,
    VT_TORCH_SEGMENT_MAP = 5,
    VT_TORCH_SEGMENT_UNMAP = 6,
    VT_TORCH_SNAPSHOT = 7,
    VT_TORCH_OOM = 8
};

typedef struct {
    uint32_t action; /* VT_TORCH_* */
    int32_t device;
    uint64_t addr;   /* OOM: the device's free bytes, as the allocator reports them */
    uint64_t size;   /* bytes (the block's rounded size) */
    uint64_t stream;
} vt_torch_entry;

typedef void (*vt_torch_fn)(const vt_torch_entry *e);

/* Attach fn.  abi: VT_TORCH_ABI of the caller.  Returns 0 when attached;
 * otherwise nonzero with a one-line reason in msg (another backend, an
 * exception from PyTorch, an ABI mismatch).  Never throws. */
typedef int (*vt_torch_attach_fn)(uint32_t abi, vt_torch_fn fn, char *msg, size_t msglen);

#endif
