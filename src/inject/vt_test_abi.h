/* vt_test_abi.h - the test entry point's C types (docs/ARCHITECTURE.md,
 * "Tests as ranges: the pytest plugin"): what vt_test_begin() and
 * vt_test_end() of libvramtrace.so take and fill, plain C types only, so
 * that src/python/vramtrace_pytest.py mirrors them with ctypes.Structure.
 * Bump VT_TEST_ABI when a field changes; the plugin checks it. */
#ifndef VT_TEST_ABI_H
#define VT_TEST_ABI_H

#include <stdint.h>

#define VT_TEST_ABI 1
#define VT_TEST_MAX_DEVICES 16

/* vt_test_summary.flags */
#define VT_TEST_F_TENSORS 1u /* tensor events on: the counted blocks are tensors; the rest is "reserved" */
#define VT_TEST_F_FULL 2u    /* the table was full: `dropped` blocks were not followed, counts are low */
#define VT_TEST_F_NOPY 4u    /* no Python frames: sites are "?" */

/* What a test allocated since vt_test_begin() and left live at
 * vt_test_end().  "Counted" blocks are what PyTorch counts in
 * memory_allocated(): with tensor events (PyTorch's shim, CuPy's hook)
 * the tensors, without them every block the driver handed out. */
typedef struct {
    uint32_t abi;   /* VT_TEST_ABI */
    uint32_t flags; /* VT_TEST_F_* */
    uint64_t allocated_bytes, allocs;    /* counted blocks allocated during the test */
    uint64_t leaked_bytes, leaked_blocks; /* ... of them still live at its end */
    uint64_t peak_bytes;                  /* the most of them live at once */
    uint64_t reserved_bytes;              /* with tensor events: the driver's blocks still live (segments) */
    uint64_t dropped;                     /* blocks not followed (VT_TEST_F_FULL) */
    uint32_t nsites;                      /* sites of the leaked blocks, all of them (more than returned) */
    uint32_t ndevices;                    /* entries of device_live that count */
    uint64_t device_live[VT_TEST_MAX_DEVICES]; /* leaked bytes per device */
} vt_test_summary;

/* One call site of leaked blocks: the user's frame (the innermost Python
 * frame outside site-packages, the standard library, pytest and vramtrace;
 * else the innermost), largest first. */
typedef struct {
    char file[256];
    char function[128];
    uint32_t line;
    int32_t device;
    uint64_t bytes, blocks;
} vt_test_site;

#endif
