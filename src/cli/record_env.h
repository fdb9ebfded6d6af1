/* record_env.h - the pure logic of `vramtrace record` (src/cli), kept apart
 * from process handling so that it is unit-tested without running anything:
 * option parsing, the environment handed to the traced command, PyTorch
 * allocator configuration merging, locating libvramtrace.so, and naming the
 * output directory and files.  Touches no global state except where a
 * function says so (none read the environment themselves: callers pass the
 * values in). */
#ifndef VT_RECORD_ENV_H
#define VT_RECORD_ENV_H

#include <stddef.h>
#include <time.h>

/* File name template given to the injection library in VRAMTRACE_OUTPUT,
 * relative to the output directory.  The library (src/inject/vt_config.h)
 * expands %n (program name: the script for Python), %h (host), %r (rank:
 * RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID or PMI_RANK; "0" when none) and
 * %p (pid), e.g. vramtrace.train.node1.r1.4242.zst: rank before pid, so
 * that a listing sorts by rank.  Every trace file of a recording matches
 * VT_RECORD_FILE_PREFIX*VT_RECORD_FILE_SUFFIX. */
#define VT_RECORD_FILE_TEMPLATE "vramtrace.%n.%h.r%r.%p.zst"
#define VT_RECORD_FILE_PREFIX "vramtrace."
#define VT_RECORD_FILE_SUFFIX ".zst"

/* Options of `vramtrace record`.  Tri-state switches: -1 = not given (the
 * library's default applies), 0 = off, 1 = on. */
typedef struct {
    const char *outdir; /* -o/--output-dir; NULL = a new directory in the cwd */
    int kernels;        /* --kernels / --no-kernels */
    int native_stacks;  /* --native-stacks / --no-native-stacks / --full-native-stacks (2) */
    int python_stacks;  /* --python-stacks / --no-python-stacks */
    int static_mem;     /* --static / --no-static: module globals */
    int stack_depth;    /* --stack-depth N; -1 = not given */
    int flush_ms;       /* --flush-ms N; -1 = not given */
    int sample_ms;      /* --sample-ms N (0 = off); -1 = not given */
    int quiet;          /* -q/--quiet: VRAMTRACE_QUIET=1 */
    const char *clock;  /* --clock MODE (auto|tsc|monotonic|cupti); NULL = not given */
    int tensors;        /* --tensors: PyTorch backend:cudaMallocAsync */
    int tensor_events;  /* 0 with --no-tensor-events: no PyTorch trace tracker (default 1) */
    int symbolize;      /* 0 with --no-symbolize: no TRACE.sym after the command (default 1) */
    int symbol_cache;   /* 0 with --no-symbol-cache: read every module again (default 1) */
    int timings;        /* --timings (or VRAMTRACE_TIMINGS=1): one line of the steps' times */
    int holders;        /* 0 with --no-holders: no holder walk in Python programs (default 1) */
    const char *holders_signal; /* --holders-signal SIG: also walk on that signal; NULL = not given */
    int live;           /* --live: vramtrace top's view while the command runs */
    int help;           /* -h/--help */
    int cmd_index;      /* argv index of the command to run; argc when none */
} vt_record_opts;

/* Parse `record [options] [--] CMD ARGS...` (argv[0] is "record").
 * Options stop at "--" or at the first argument that is not an option.
 * Returns 0, or VT_ERR_INVALID with a one-line message in err (errlen
 * bytes).  A missing command is not an error here (cmd_index == argc):
 * the caller decides. Strings in *o point into argv. */
int vt_record_parse_args(vt_record_opts *o, int argc, char **argv, char *err, size_t errlen);

/* Merge backend:cudaMallocAsync into a PyTorch allocator configuration
 * (`key:value,key:value`, values may be bracketed lists with commas inside,
 * e.g. roundup_power2_divisions:[256:1,512:2]).  `user` may be NULL or "".
 * The user's other keys are kept, in order, verbatim; a backend other than
 * cudaMallocAsync/async is replaced (a warning says so); keys that only the
 * native caching allocator honours are kept with a warning that they have no
 * effect.  Warnings go to `warn` (warnlen bytes, lines separated by '\n',
 * "" when none).  *out is malloc'ed; the caller frees it.  `var` names the
 * variable in warnings.  Returns 0 or VT_ERR_NOMEM. */
int vt_record_merge_alloc_conf(const char *var, const char *user, char **out, char *warn,
                               size_t warnlen);

/* Find libvramtrace.so.  If `override` (VRAMTRACE_LIB) is not NULL it is the
 * only candidate.  Otherwise, relative to the directory of `exe` (the
 * running binary, e.g. from /proc/self/exe): the install layout
 * ../lib/libvramtrace.so (and ../lib64), then the build trees
 * ./libvramtrace.so, ./src/inject/, ../inject/, ../../libvramtrace.so.
 * Writes the absolute, resolved path to out.  Returns 0, or
 * VT_ERR_NOT_FOUND with the candidates tried in `tried` (one per line). */
int vt_record_find_library(const char *exe, const char *override, char *out, size_t outlen,
                           char *tried, size_t triedlen);

/* A short name for the command, for the default output directory:
 * basename of argv[0]; for a Python interpreter the script's stem
 * (`python3 train.py` -> "train") or the module (`-m pkg.mod` -> "pkg.mod").
 * Characters other than [A-Za-z0-9._-] become '_'.  Writes "cmd" when
 * nothing is left. */
void vt_record_command_name(char *const *cmd, int ncmd, char *out, size_t outlen);

/* Default output directory name: "vramtrace-NAME-YYYYmmdd-HHMMSS" in local
 * time.  Returns 0, or VT_ERR_INVALID when it does not fit. */
int vt_record_default_dir(const char *name, time_t t, char *out, size_t outlen);

/* 1 when `name` (a file name, no directory) looks like a trace written by a
 * recording (VT_RECORD_FILE_PREFIX ... VT_RECORD_FILE_SUFFIX), else 0. */
int vt_record_is_trace_name(const char *name);

/* One variable to set in the command's environment. */
typedef struct {
    const char *name;
    char *value; /* owned by the plan */
} vt_record_var;

#define VT_RECORD_MAX_VARS 16

/* The environment a recording adds to the command's. */
typedef struct {
    vt_record_var vars[VT_RECORD_MAX_VARS];
    int n;
    char warn[1024]; /* warnings for the user, '\n'-separated; "" when none */
} vt_record_plan;

/* Build the variables: CUDA_INJECTION64_PATH=lib, VRAMTRACE_OUTPUT=
 * outdir/VT_RECORD_FILE_TEMPLATE, one VRAMTRACE_* per option given, and
 * with --tensors the merged allocator configuration.  `getenv_fn` reads the
 * current environment (getenv in the command; a stub in tests).  Returns 0
 * or a vt_err; free the plan with vt_record_plan_free() either way. */
int vt_record_plan_env(vt_record_plan *p, const vt_record_opts *o, const char *lib,
                       const char *outdir, const char *(*getenv_fn)(const char *));

/* Value of `name` in the plan, NULL if the plan does not set it. */
const char *vt_record_plan_get(const vt_record_plan *p, const char *name);

void vt_record_plan_free(vt_record_plan *p);

/* Exit status of `vramtrace record` for a waitpid() status: the command's
 * exit code, or 128 + signal number when a signal killed it (as shells do). */
int vt_record_exit_status(int wstatus);

/* The pytest plugin's module, which `record` names in PYTEST_PLUGINS
 * (src/python/vramtrace_pytest.py; inert without --vramtrace). */
#define VT_RECORD_PYTEST_PLUGIN "vramtrace_pytest"

/* PYTEST_PLUGINS for the command: `old` (may be NULL or "", pytest's
 * comma-separated list of modules) with VT_RECORD_PYTEST_PLUGIN added at
 * the end, unless it is there already.  Returns 0, or VT_ERR_INVALID when
 * out (outlen bytes) is too small. */
int vt_record_pytest_plugins(const char *old, char *out, size_t outlen);

#endif
