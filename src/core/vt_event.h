/* vt_event.h - the in-memory form of one trace event.
 *
 * One struct serves both directions of the format:
 *   - producers fill it and hand it to vt_writer_emit(), which copies what it
 *     needs (inline strings, frames) before returning; the writer interns
 *     strings, stacks, threads and launch signatures and assigns their ids;
 *   - vt_reader_next() fills it from the stream with every id resolved to
 *     absolute values where the format interns them (launch signatures,
 *     times, correlation ids); strings and stacks stay ids, resolved with
 *     vt_reader_string() / vt_reader_stack().
 * Field meanings follow proto/vramtrace.proto and docs/FORMAT.md.
 * Depends on nothing but the C library.
 */
#ifndef VT_EVENT_H
#define VT_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include "vt_event_kinds.h"

#define VT_FORMAT_MAGIC 0x54524d56u /* bytes "VMRT" */
/* 2: allocations and frees in MemBlock records (a reader of version 1
 * would skip them and lose every block); 3: TENSOR blocks inside DEVICE
 * segments (a reader of version 2 would add their bytes to the segments'
 * and pair a tensor at a segment's address with the segment); readers read
 * 1 to 3 */
#define VT_FORMAT_VERSION 3u
#define VT_FORMAT_VERSION_MIN 1u
#define VT_TOOL_VERSION "0.1.0"

/* Values equal the proto enums. */
typedef enum {
    VT_MEM_UNKNOWN = 0,
    VT_MEM_DEVICE = 1,
    VT_MEM_DEVICE_STATIC = 2,
    VT_MEM_MANAGED = 3,
    VT_MEM_PINNED_HOST = 4,
    VT_MEM_ARRAY = 5,
    VT_MEM_HOST_REGISTERED = 6,
    VT_MEM_TENSOR = 7, /* inside a caching allocator's segment (a DEVICE block) */
    VT_MEM__COUNT
} vt_memkind;

typedef enum {
    VT_API_UNKNOWN = 0,
    VT_API_MALLOC = 1,
    VT_API_MALLOC_PITCH = 2,
    VT_API_MALLOC_ASYNC = 3,
    VT_API_MALLOC_FROM_POOL = 4,
    VT_API_MALLOC_MANAGED = 5,
    VT_API_HOST_ALLOC = 6,
    VT_API_HOST_REGISTER = 7,
    VT_API_ARRAY = 8,
    VT_API_MODULE_GLOBAL = 9,
    VT_API_VMM = 10,
    VT_API_CACHING_ALLOCATOR = 11, /* PyTorch's trace tracker, CuPy's memory hook: TENSOR blocks, own address space */
    VT_API__COUNT
} vt_allocapi;

typedef enum {
    VT_CLOCK_UNKNOWN = 0,
    VT_CLOCK_CUPTI = 1,
    VT_CLOCK_MONOTONIC = 2,
    VT_CLOCK_REALTIME = 3
} vt_clock;

/* Event types. Values equal the Record.body field numbers (one list:
 * vt_event_kinds.h). */
typedef enum {
    VT_EV_NONE = 0,
#define VT_X_ENUM(E, V, N, M, S, C) VT_EV_##E = V,
    VT_EVENT_KINDS(VT_X_ENUM)
#undef VT_X_ENUM
    VT_EV__MAX = 28 /* 1 + the highest VALUE */
} vt_evtype;

/* Name of an event type ("alloc", "free", ...), "?" when unknown. */
const char *vt_evtype_name(vt_evtype t);
/* 0: no call site, 1: a site with the thread only, 2: with the call stack */
int vt_evtype_site(vt_evtype t);
/* 1 when the kind carries a CUPTI correlation id */
int vt_evtype_corr(vt_evtype t);
const char *vt_memkind_name(vt_memkind k);  /* "device", "device_static", ... */
const char *vt_allocapi_name(vt_allocapi a); /* "malloc", "malloc_async", ... */

typedef enum { VT_FRAME_NATIVE = 0, VT_FRAME_PYTHON = 1 } vt_framekind;

/* A frame as a producer captures it.
 *   native: pc = instruction pointer;
 *   python: pc = a code key described earlier by vt_writer_define_code()
 *           (the producer's choice, e.g. the code object's address),
 *           line = the line being executed. */
typedef struct {
    uint64_t pc;
    uint32_t line;
    uint32_t kind; /* vt_framekind */
} vt_frame;

typedef enum { VT_POOL_CREATE = 0, VT_POOL_DESTROY = 1, VT_POOL_TRIM = 2, VT_POOL_SET_THRESHOLD = 3 } vt_poolop;
typedef enum { VT_NVTX_PUSH = 0, VT_NVTX_POP = 1, VT_NVTX_START = 2, VT_NVTX_END = 3, VT_NVTX_MARK = 4 } vt_nvtxop;
typedef enum { VT_DROP_WRITER_QUEUE = 0, VT_DROP_CUPTI_ACTIVITY = 1, VT_DROP_STACK = 2, VT_DROP_OTHER = 3 } vt_dropsource;
typedef enum { VT_SEV_INFO = 0, VT_SEV_WARNING = 1, VT_SEV_ERROR = 2 } vt_severity;
typedef enum { VT_END_NORMAL = 0, VT_END_SIGNAL = 1, VT_END_ERROR = 2 } vt_endreason;

#define VT_MAX_ENV 16
#define VT_MAX_ARGV 64

/* Call-site information shared by several event kinds.
 * Writer input: frames/nframes (innermost first) or stack = 0 for none;
 * `tid` is the OS thread id (0 = the calling thread's, filled by the writer).
 * fp: optional 128-bit fingerprint of the frames ({0, 0} = none), equal
 * for equal frames: the writer then sends the frames once per thread and
 * a 2-byte reference after; with vt_writer_site_sent() true the caller may
 * leave frames NULL.
 * Reader output: stack = interned Stack id (0 = none), thread = Thread id
 * (resolve with vt_reader_thread()), frames = NULL. */
typedef struct {
    const vt_frame *frames;
    uint32_t nframes;
    uint32_t stack;
    uint32_t tid;
    uint32_t thread;
    uint64_t fp[2];
} vt_site;

typedef struct {
    uint32_t pid, ppid;
    const char *hostname;
    const char *program;
    const char *const *argv; /* argc entries */
    uint32_t argc;
    const char *const *env_names; /* nenv entries each */
    const char *const *env_values;
    uint32_t nenv;
    vt_clock clock;
    uint64_t trace_clock_ns, realtime_ns;
    int kernels, native_stacks, python_stacks;
    uint32_t format_version; /* reader output only */
    uint32_t magic;          /* reader output only */
    const char *tool_version;/* reader output only */
} vt_ev_header;

typedef struct { uint64_t time_ns, device_time_ns, sequence; } vt_ev_sync;
typedef struct { uint32_t id; const char *value; size_t len; } vt_ev_string;
typedef struct {
    uint32_t id;
    const uint32_t *frames; /* frame ids, innermost first */
    uint32_t nframes;
    uint32_t parent;
} vt_ev_stack;
typedef struct {
    uint32_t id;
    vt_framekind kind;
    uint64_t ip;
    uint32_t module, function, file, line; /* function/file: string ids */
} vt_ev_frame;
typedef struct {
    uint32_t id;
    const char *path;
    uint64_t load_bias, start, end;
    const uint8_t *build_id;
    uint32_t build_id_len;
} vt_ev_module;
typedef struct { uint32_t id, tid; const char *name; } vt_ev_thread;
typedef struct {
    uint32_t index;
    const char *name;
    uint8_t uuid[16];
    uint64_t total_memory;
    uint32_t cc_major, cc_minor;
    const char *pci_bus_id;
} vt_ev_device;

typedef struct {
    uint64_t address, size;
    uint32_t device;
    vt_memkind kind;
    vt_allocapi api;
    uint64_t stream, pool, corr;
    vt_site site;
} vt_ev_alloc;
typedef struct {
    uint64_t address;
    uint32_t device;
    vt_memkind kind;
    vt_allocapi api;
    uint64_t stream, corr;
    vt_site site;
} vt_ev_free;
typedef struct {
    uint64_t size;
    uint32_t device;
    vt_memkind kind;
    vt_allocapi api;
    int32_t error;
    const char *error_name; /* writer input; reader: resolved too */
    uint32_t error_name_id; /* reader output */
    uint64_t stream, pool, corr;
    vt_site site;
} vt_ev_alloc_failed;

typedef struct { uint64_t address, size, corr; vt_site site; } vt_ev_vmm_range;       /* RESERVE, ADDRESS_FREE, UNMAP */
typedef struct { uint64_t handle, size; uint32_t device; vt_memkind kind; uint64_t corr; vt_site site; } vt_ev_vmm_create;
typedef struct { uint64_t handle, corr; vt_site site; } vt_ev_vmm_release;
typedef struct { uint64_t address, size, offset, handle, corr; vt_site site; } vt_ev_vmm_map;
typedef struct { vt_poolop op; uint64_t pool; uint32_t device; uint64_t value, corr; vt_site site; } vt_ev_pool;
typedef struct {
    uint64_t pool;
    uint32_t device;
    uint64_t reserved_current, reserved_high, used_current, used_high;
} vt_ev_pool_usage;

/* A kernel. Writer input: the launch fields are interned into a Launch.
 * Reader output: launch fields resolved from the Launch, name_id is the
 * string id and name its value (NULL if the string is unknown). */
typedef struct {
    const char *name;
    uint32_t name_id;
    uint32_t device, stream;
    uint32_t grid[3], block[3];
    uint32_t shared_memory;
    int graph;
    uint64_t graph_id;
    uint64_t duration_ns;
    uint64_t corr;
    uint32_t launch_id; /* reader output */
} vt_ev_kernel;

/* Launch definitions are produced by the writer and returned by the reader
 * (which also uses them to resolve kernels). */
typedef struct {
    uint32_t id, name, device, stream;
    uint32_t grid[3], block[3];
    uint32_t shared_memory;
    int graph;
} vt_ev_launch;

typedef struct {
    vt_nvtxop op;
    const char *message; /* writer input; reader: resolved */
    const char *domain;
    uint32_t message_id, domain_id; /* reader output */
    uint64_t range_id;
    vt_site site; /* tid/thread only */
} vt_ev_nvtx;
typedef struct { uint32_t device; uint64_t free, total; } vt_ev_memory_usage;
typedef struct { vt_dropsource source; uint64_t count; const char *reason; uint32_t reason_id; } vt_ev_dropped;
typedef struct { vt_severity severity; const char *text; } vt_ev_note;
typedef struct { vt_endreason reason; int32_t signal; uint64_t events, dropped; } vt_ev_end;

typedef struct {
    vt_evtype type;
    uint64_t time_ns; /* absolute; kernels: start on the device clock. Writer: 0 for definitions */
    union {
        vt_ev_header header;
        vt_ev_sync sync;
        vt_ev_string string;
        vt_ev_stack stack;
        vt_ev_frame frame;
        vt_ev_module module;
        vt_ev_thread thread;
        vt_ev_device device;
        vt_ev_launch launch;
        vt_ev_alloc alloc;
        vt_ev_free free;
        vt_ev_alloc_failed alloc_failed;
        vt_ev_vmm_range vmm_range;
        vt_ev_vmm_create vmm_create;
        vt_ev_vmm_release vmm_release;
        vt_ev_vmm_map vmm_map;
        vt_ev_pool pool;
        vt_ev_pool_usage pool_usage;
        vt_ev_kernel kernel;
        vt_ev_nvtx nvtx;
        vt_ev_memory_usage memory_usage;
        vt_ev_dropped dropped;
        vt_ev_note note;
        vt_ev_end end;
    } u;
} vt_event;

/* The vt_site of an event whose kind has one (SITE 1 or 2), or NULL;
 * vt_event_stack_site: only where the site carries a call stack (SITE 2). */
#define VT_X_SITE_0(E, M)
#define VT_X_SITE_1(E, M) case VT_EV_##E: return &ev->u.M.site;
#define VT_X_SITE_2(E, M) case VT_EV_##E: return &ev->u.M.site;
#define VT_X_STACK_0(E, M)
#define VT_X_STACK_1(E, M)
#define VT_X_STACK_2(E, M) case VT_EV_##E: return &ev->u.M.site;
#define VT_X_SITE(E, V, N, M, S, C) VT_X_SITE_##S(E, M)
#define VT_X_STACK(E, V, N, M, S, C) VT_X_STACK_##S(E, M)
static inline vt_site *vt_event_site(vt_event *ev)
{
    switch (ev->type) {
    VT_EVENT_KINDS(VT_X_SITE)
    default: return NULL;
    }
}
static inline const vt_site *vt_event_stack_site(const vt_event *ev)
{
    switch (ev->type) {
    VT_EVENT_KINDS(VT_X_STACK)
    default: return NULL;
    }
}
#undef VT_X_SITE
#undef VT_X_STACK

#endif
