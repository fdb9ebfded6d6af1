/* vt_settings.h - what libvramtrace.so can be told, in one place: the
 * ranges and defaults of its VRAMTRACE_* settings and the names of its
 * clock modes.  src/inject reads the settings from the environment
 * (vt_config.c); `vramtrace record` (src/cli) sets them and must accept
 * exactly what the library does.  Header only, no dependencies. */
#ifndef VT_SETTINGS_H
#define VT_SETTINGS_H

#include <strings.h>

/* The variables' names (README's table), written here only. */
#define VT_ENV_OUTPUT "VRAMTRACE_OUTPUT"
#define VT_ENV_KERNELS "VRAMTRACE_KERNELS"
#define VT_ENV_NATIVE_STACKS "VRAMTRACE_NATIVE_STACKS"
#define VT_ENV_PYTHON_STACKS "VRAMTRACE_PYTHON_STACKS"
#define VT_ENV_STACK_DEPTH "VRAMTRACE_STACK_DEPTH"
#define VT_ENV_FLUSH_MS "VRAMTRACE_FLUSH_MS"
#define VT_ENV_SAMPLE_MS "VRAMTRACE_SAMPLE_MS"
#define VT_ENV_STATIC "VRAMTRACE_STATIC"
#define VT_ENV_QUIET "VRAMTRACE_QUIET"
#define VT_ENV_SELFTIME "VRAMTRACE_SELFTIME"
#define VT_ENV_STACK_REFS "VRAMTRACE_STACK_REFS"
#define VT_ENV_CLOCK "VRAMTRACE_CLOCK"
#define VT_ENV_TORCH_SHIM "VRAMTRACE_TORCH_SHIM"
#define VT_ENV_TORCH_SHIM_WAIT "VRAMTRACE_TORCH_SHIM_WAIT"

#define VT_SET_STACK_DEPTH_DEFAULT 32
#define VT_SET_STACK_DEPTH_MIN 1
#define VT_SET_STACK_DEPTH_MAX 256
#define VT_SET_FLUSH_MS_DEFAULT 100
#define VT_SET_FLUSH_MS_MIN 10
#define VT_SET_FLUSH_MS_MAX 60000
#define VT_SET_SAMPLE_MS_DEFAULT 200 /* 0 = off, else MIN..MAX */
#define VT_SET_SAMPLE_MS_MIN 10
#define VT_SET_SAMPLE_MS_MAX 60000
/* seconds the library waits at the allocator's first segment for a shim
 * that `record` is still building (0: not at all) */
#define VT_SET_SHIM_WAIT_MAX 600

/* VRAMTRACE_CLOCK: auto (= tsc): the calibrated invariant TSC, else
 * CLOCK_MONOTONIC; monotonic; cupti: CUPTI's own clock. */
enum { VT_SET_CLOCK_AUTO = 0, VT_SET_CLOCK_MONOTONIC = 1, VT_SET_CLOCK_CUPTI = 2 };

/* The mode named by s (any case), or -1. */
static inline int vt_settings_clock(const char *s)
{
    if (!s)
        return -1;
    if (!strcasecmp(s, "auto") || !strcasecmp(s, "tsc"))
        return VT_SET_CLOCK_AUTO;
    if (!strcasecmp(s, "monotonic"))
        return VT_SET_CLOCK_MONOTONIC;
    if (!strcasecmp(s, "cupti"))
        return VT_SET_CLOCK_CUPTI;
    return -1;
}

#endif
