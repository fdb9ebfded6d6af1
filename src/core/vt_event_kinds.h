/* vt_event_kinds.h - the one list of event kinds.  Each line names a kind
 * once; the enum (vt_event.h), the names (vt_names.c), the reader's
 * dispatch of threads and correlation ids (vt_reader.c) and the dump's call
 * sites (builtin-dump.c) are generated from it.  Adding a kind: a line here,
 * its message in proto/vramtrace.proto (field number = VALUE), its struct
 * and union member in vt_event.h, its decoder (vt_reader_messages.c) and
 * case in decode_record (vt_reader.c), its encoder case (vt_writer_encode.c)
 * and its printer case (builtin-dump.c); docs/ARCHITECTURE.md, "How to add".
 *
 *   X(ENUM, VALUE, NAME, MEMBER, SITE, CORR)
 *     ENUM    VT_EV_<ENUM>
 *     VALUE   the Record.body field number
 *     NAME    the printable name (dump, JSON, goldens: stable)
 *     MEMBER  the vt_event union member
 *     SITE    0: no site; 1: a vt_site with the thread only; 2: with the
 *             thread and the call stack
 *     CORR    1: a CUPTI correlation id (delta-coded in the stream)
 */
#ifndef VT_EVENT_KINDS_H
#define VT_EVENT_KINDS_H

#define VT_EVENT_KINDS(X)                                                   \
    X(HEADER, 2, "header", header, 0, 0)                                    \
    X(SYNC, 3, "sync", sync, 0, 0)                                          \
    X(STRING, 4, "string", string, 0, 0)                                    \
    X(STACK, 5, "stack", stack, 0, 0)                                       \
    X(FRAME, 6, "frame", frame, 0, 0)                                       \
    X(ALLOC, 7, "alloc", alloc, 2, 1)                                       \
    X(FREE, 8, "free", free, 2, 1)                                          \
    X(KERNEL, 9, "kernel", kernel, 0, 1)                                    \
    X(LAUNCH, 10, "launch", launch, 0, 0)                                   \
    X(ALLOC_FAILED, 11, "alloc_failed", alloc_failed, 2, 1)                 \
    X(MODULE, 12, "module", module, 0, 0)                                   \
    X(THREAD, 13, "thread", thread, 0, 0)                                   \
    X(NVTX, 14, "nvtx", nvtx, 1, 0)                                         \
    X(DEVICE, 15, "device", device, 0, 0)                                   \
    X(VMM_RESERVE, 16, "vmm_reserve", vmm_range, 2, 1)                      \
    X(VMM_ADDRESS_FREE, 17, "vmm_address_free", vmm_range, 1, 1)            \
    X(VMM_CREATE, 18, "vmm_create", vmm_create, 2, 1)                       \
    X(VMM_RELEASE, 19, "vmm_release", vmm_release, 1, 1)                    \
    X(VMM_MAP, 20, "vmm_map", vmm_map, 1, 1)                                \
    X(VMM_UNMAP, 21, "vmm_unmap", vmm_range, 1, 1)                          \
    X(POOL, 22, "pool", pool, 2, 1)                                         \
    X(POOL_USAGE, 23, "pool_usage", pool_usage, 0, 0)                       \
    X(MEMORY_USAGE, 24, "memory_usage", memory_usage, 0, 0)                 \
    X(DROPPED, 25, "dropped", dropped, 0, 0)                                \
    X(NOTE, 26, "note", note, 0, 0)                                         \
    X(END, 27, "end", end, 0, 0)

#endif
