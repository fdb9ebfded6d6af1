/* vt_config.h - configuration of the injection library (src/inject).
 *
 * Read from the environment once, in InitializeInjection:
 *   VRAMTRACE_OUTPUT         path template: %p pid, %h host, %r rank, %n program,
 *                            %% a percent sign; default "vramtrace.%n.%p.zst"
 *   VRAMTRACE_KERNELS        0|1 (default 1): kernel activity records
 *   VRAMTRACE_NATIVE_STACKS  0|1|full (default 1): native stack of every allocation; where
 *                            Python frames are recorded, 1 ends the native frames at the
 *                            interpreter (the Python stack goes on from there) and full
 *                            keeps the native frames between Python frames too
 *   VRAMTRACE_PYTHON_STACKS  0|1 (default 1): Python frames (when available)
 *   VRAMTRACE_STACK_DEPTH    1..256 (default 32): frames per stack
 *   VRAMTRACE_FLUSH_MS       10..60000 (default 100): writer flush period
 *   VRAMTRACE_SAMPLE_MS      0 (off) or 10..60000 (default 200): pool and device memory sampling
 *   VRAMTRACE_STATIC         0|1 (default auto = -1): DEVICE_STATIC module globals from MEMORY2
 *                            activity; auto leaves it off for tensor-level allocators
 *   VRAMTRACE_QUIET          0|1 (default 0): no stderr messages
 *   VRAMTRACE_SELFTIME       0|1 (default 0): time the phases of each callback (stack walk,
 *                            Python, writer push) and print the self time on stderr at exit
 *   VRAMTRACE_STACK_REFS     0|1 (default 1): send a repeated call stack as a reference to
 *                            its first copy (per thread, by 128-bit fingerprint); 0 sends
 *                            every stack in full (for comparisons)
 *   VRAMTRACE_CLOCK          auto|tsc (default): the calibrated TSC where the kernel uses it,
 *                            else CLOCK_MONOTONIC, registered with CUPTI for its records too;
 *                            monotonic: CLOCK_MONOTONIC; cupti: CUPTI's own clock
 *                            (cuptiGetTimestamp), as before 2026-11-30
 *   VRAMTRACE_TORCH_SHIM     path of the PyTorch shim (libvt_torch.so, built by `vramtrace
 *                            record`): tensor events from PyTorch's caching allocator;
 *                            unset or empty: none
 * Boolean values: 0/1, false/true, no/yes, off/on (any case).  A value
 * that does not parse keeps the default and is reported in `warning`.
 * Pure functions, no global state: tested on the CPU.
 */
#ifndef VT_CONFIG_H
#define VT_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "vt_settings.h" /* ranges, defaults and clock modes, shared with `vramtrace record` */

enum { VT_CFG_CLOCK_AUTO = VT_SET_CLOCK_AUTO, VT_CFG_CLOCK_MONOTONIC = VT_SET_CLOCK_MONOTONIC, VT_CFG_CLOCK_CUPTI = VT_SET_CLOCK_CUPTI };

enum { VT_CFG_NATIVE_FULL = 2 }; /* native_stacks: 0 off, 1 on, 2 full */

typedef struct {
    char output[1024];
    int kernels;
    int native_stacks; /* 0, 1, VT_CFG_NATIVE_FULL */
    int python_stacks;
    int stack_depth;
    unsigned flush_ms;
    unsigned sample_ms;
    int static_mem;
    int quiet;
    int clock; /* VT_CFG_CLOCK_* */
    int selftime; /* VRAMTRACE_SELFTIME: time each callback's phases, print the self time at exit */
    int stack_refs; /* VRAMTRACE_STACK_REFS */
    char torch_shim[1024]; /* VRAMTRACE_TORCH_SHIM, "" = none */
    unsigned torch_shim_wait_s; /* VRAMTRACE_TORCH_SHIM_WAIT: for a shim still being built */
    char warning[256]; /* "" or the first problem found, e.g. "VRAMTRACE_STACK_DEPTH=abc ignored" */
} vt_inject_config;

/* getenv-like lookup, so tests can feed their own environment. */
typedef const char *(*vt_getenv_fn)(const char *name, void *arg);

/* Fill cfg from the environment (lookup NULL = getenv). Always succeeds. */
void vt_config_parse(vt_inject_config *cfg, vt_getenv_fn lookup, void *arg);

/* Parse a boolean: returns 0/1, or -1 if `s` is not a boolean. */
int vt_config_bool(const char *s);

typedef struct {
    uint32_t pid;
    const char *host;    /* NULL or "" -> "unknown" */
    const char *rank;    /* NULL -> "0" */
    const char *program; /* NULL or "" -> "unknown" */
} vt_output_vars;

/* Expand an output template into buf.  Substituted values are sanitized
 * (only [A-Za-z0-9._-] kept, others become '_'); an unknown %x is copied
 * as is.  Returns 0, or VT_ERR_TOO_LARGE if the result does not fit. */
int vt_config_expand_output(const char *tmpl, const vt_output_vars *vars, char *buf, size_t len);

/* Program name from argv (as in /proc/self/cmdline): basename of argv[0];
 * for a Python interpreter the script's basename without ".py", or the
 * module of "-m module", or "python" for "-c".  Writes into buf. */
void vt_config_program_name(const char *const *argv, int argc, char *buf, size_t len);

/* Rank from the environment: RANK, then OMPI_COMM_WORLD_RANK, SLURM_PROCID,
 * PMI_RANK; NULL if none. */
const char *vt_config_rank(vt_getenv_fn lookup, void *arg);

#endif
