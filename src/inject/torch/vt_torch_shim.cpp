// vt_torch_shim.cpp - PyTorch's caching-allocator trace tracker for
// libvramtrace.so (docs/ARCHITECTURE.md, "Tensor events in PyTorch's
// caching allocator").
//
// Compiled against the installed torch's own headers, because
// attachAllocatorTraceTracker is an inline call on the allocator object and
// TraceEntry a C++ struct: `vramtrace record` builds it on first use and
// caches it per torch version and C++ ABI; CMake builds it when it finds
// torch (VT_TORCH_SHIM).  libvramtrace.so loads it (dlopen) only when
// libc10_cuda is in the process, and calls vt_torch_attach() from inside the
// allocator's first segment allocation (see vt_inject_torch.c).
//
// Nothing crosses the C boundary but plain values: every exception is
// caught here; the tracker copies five fields and calls the library's
// function, never PyTorch, never the GIL.
//
// -DVT_TORCH_WRONG_LAYOUT builds the variant the GPU tests use to prove
// the library's layout check: each field read one place off (the address
// where the size is, the size where the stream is), as a shim built for
// another TraceEntry would.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <type_traits>

#include <c10/cuda/CUDACachingAllocator.h>

#include "../vt_torch_abi.h"

namespace {

namespace CA = c10::cuda::CUDACachingAllocator;
using Entry = CA::TraceEntry;
using Action = Entry::Action;

static_assert(static_cast<int>(Action::ALLOC) == VT_TORCH_ALLOC, "TraceEntry::Action");
static_assert(static_cast<int>(Action::FREE_REQUESTED) == VT_TORCH_FREE_REQUESTED, "TraceEntry::Action");
static_assert(static_cast<int>(Action::FREE_COMPLETED) == VT_TORCH_FREE_COMPLETED, "TraceEntry::Action");
static_assert(static_cast<int>(Action::SEGMENT_ALLOC) == VT_TORCH_SEGMENT_ALLOC, "TraceEntry::Action");
static_assert(static_cast<int>(Action::SEGMENT_FREE) == VT_TORCH_SEGMENT_FREE, "TraceEntry::Action");
static_assert(static_cast<int>(Action::SEGMENT_MAP) == VT_TORCH_SEGMENT_MAP, "TraceEntry::Action");
static_assert(static_cast<int>(Action::SEGMENT_UNMAP) == VT_TORCH_SEGMENT_UNMAP, "TraceEntry::Action");
static_assert(static_cast<int>(Action::SNAPSHOT) == VT_TORCH_SNAPSHOT, "TraceEntry::Action");
static_assert(static_cast<int>(Action::OOM) == VT_TORCH_OOM, "TraceEntry::Action");

// A field as 64 bits, whatever integer, enum or pointer type this torch
// gives it (stream_ is a cudaStream_t in some versions, an id in others).
template <class T>
uint64_t as_u64(const T &v)
{
    if constexpr (std::is_pointer_v<T>)
        return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(v));
    else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>)
        return static_cast<uint64_t>(v);
    else
        return 0;
}

vt_torch_fn g_fn = nullptr;

void on_entry(const Entry &te) noexcept
{
    vt_torch_entry e;
    e.action = static_cast<uint32_t>(te.action_);
    e.device = static_cast<int32_t>(te.device_);
#ifdef VT_TORCH_WRONG_LAYOUT
    e.addr = as_u64(te.size_);
    e.size = as_u64(te.stream_);
#else
    e.addr = as_u64(te.addr_);
    e.size = as_u64(te.size_);
#endif
    e.stream = as_u64(te.stream_);
    g_fn(&e);
}

void say(char *msg, size_t n, const char *what, const char *detail)
{
    if (msg && n)
        std::snprintf(msg, n, "%s%s%s", what, detail && *detail ? ": " : "", detail ? detail : "");
}

} // namespace

extern "C" __attribute__((visibility("default"))) int vt_torch_attach(uint32_t abi, vt_torch_fn fn, char *msg,
                                                                     size_t msglen) noexcept
{
    if (abi != VT_TORCH_ABI || !fn) {
        say(msg, msglen, "the shim was built for another libvramtrace.so", nullptr);
        return 1;
    }
    try {
        CA::CUDAAllocator *a = CA::get();
        if (!a) {
            say(msg, msglen, "no CUDA allocator in this process", nullptr);
            return 1;
        }
        std::string name = a->name();
        if (name != "native") { // backend:cudaMallocAsync has no trace trackers (it throws)
            say(msg, msglen, "PyTorch's allocator backend is not native", name.c_str());
            return 1;
        }
        g_fn = fn;
        CA::attachAllocatorTraceTracker([](const Entry &te) { on_entry(te); });
        return 0;
    } catch (const std::exception &ex) {
        say(msg, msglen, "attachAllocatorTraceTracker failed", ex.what());
    } catch (...) {
        say(msg, msglen, "attachAllocatorTraceTracker failed", "unknown exception");
    }
    return 1;
}
