/* vt_loader.c - libvramtrace.so: what CUDA_INJECTION64_PATH names.  It
 * finds the CUPTI the traced program uses, then loads the library proper
 * (libvramtrace_cupti.so, beside it) and hands over.
 *
 * Why a second object: the library proper links libcupti.so.N by soname
 * (DT_NEEDED).  A program whose CUPTI is not on the loader's default path
 * (PyTorch's pip wheels bring theirs in site-packages/nvidia/...) would make
 * that dlopen fail before any of our code ran, with the driver's terse
 * message.  This object needs only libc and libdl.  It looks, in order, for
 *   1. a libcupti.so already in the process (PyTorch loads its own): used as
 *      it is; one of another major version is refused, with a message;
 *   2. the same Python environment's nvidia-cuda-cupti, when this file lies
 *      in site-packages/vramtrace/lib/ (the wheel): ../../nvidia/cu13/lib,
 *      ../../nvidia/cuda_cupti/lib;
 *   3. the loader's default search (LD_LIBRARY_PATH, ld.so.cache);
 *   4. the toolkit's: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda.
 * Once a libcupti.so.N is loaded, the library proper's DT_NEEDED matches it
 * by soname.  Its start line names the file it uses.
 *
 * Runs inside the host process: never exits, never aborts; a failure says
 * so once on stderr (unless VRAMTRACE_QUIET) and returns, and the program
 * runs untraced.  Touches nothing of src/core: libc and libdl only. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef VT_CUPTI_SONAME
#define VT_CUPTI_SONAME "libcupti.so.13"
#endif
#ifndef VT_CUPTI_PIP_DIR
#define VT_CUPTI_PIP_DIR "cu13" /* nvidia-cuda-cupti 13's directory under nvidia/ */
#endif
#define VT_BODY_NAME "libvramtrace_cupti.so"

#define VT_EXPORT __attribute__((visibility("default")))

typedef int (*init_fn)(void);
typedef int (*attach_fn)(const char *);
typedef int (*event_fn)(uint32_t, int32_t, uint64_t, uint64_t);
typedef int (*test_begin_fn)(const char *);
typedef int (*test_end_fn)(const char *, void *, void *, uint32_t); /* vt_test_summary *, vt_test_site * */

static attach_fn g_attach;
static event_fn g_event;
static test_begin_fn g_test_begin;
static test_end_fn g_test_end;

static void say(const char *fmt, ...)
{
    const char *q = getenv("VRAMTRACE_QUIET");
    if (q && *q && strcmp(q, "0"))
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "vramtrace: %s; tracing disabled, the program runs as before\n", line);
}

/* A loaded libcupti.so*, by path, or "" (dl_iterate_phdr's callback). */
static int find_loaded(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const char *name = info->dlpi_name, *base = name ? strrchr(name, '/') : NULL;
    base = base ? base + 1 : name;
    if (base && !strncmp(base, "libcupti.so", 11)) {
        snprintf((char *)data, PATH_MAX, "%s", name);
        return 1;
    }
    return 0;
}

/* The directory this object lies in. */
static int own_dir(char *out, size_t len)
{
    Dl_info di;
    if (!dladdr((void *)&own_dir, &di) || !di.dli_fname)
        return -1;
    char real[PATH_MAX];
    const char *p = realpath(di.dli_fname, real) ? real : di.dli_fname;
    const char *slash = strrchr(p, '/');
    if (!slash)
        return -1;
    snprintf(out, len, "%.*s", (int)(slash - p), p);
    return 0;
}

static void *try_open(const char *dir, const char *sub)
{
    if (!dir || !*dir)
        return NULL;
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s/%s/" VT_CUPTI_SONAME, dir, sub) >= (int)sizeof(path))
        return NULL;
    if (access(path, R_OK))
        return NULL;
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

/* Make a libcupti.so.N of our major version part of the process: 0, or -1
 * with the reason said. */
static int load_cupti(const char *here)
{
    char loaded[PATH_MAX] = "";
    dl_iterate_phdr(find_loaded, loaded);
    if (loaded[0]) {
        void *h = dlopen(VT_CUPTI_SONAME, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (h)
            return 0; /* the program's own, with the soname we link: used */
        say("the program loaded %s, but this vramtrace is built for %s (another CUDA major version)", loaded,
            VT_CUPTI_SONAME);
        return -1;
    }
    if (here && (try_open(here, "../../nvidia/" VT_CUPTI_PIP_DIR "/lib") ||
                 try_open(here, "../../nvidia/cuda_cupti/lib")))
        return 0;
    if (dlopen(VT_CUPTI_SONAME, RTLD_NOW | RTLD_LOCAL))
        return 0;
    const char *envs[] = {"CUDA_HOME", "CUDA_PATH"};
    for (int i = 0; i < 2; i++) {
        const char *d = getenv(envs[i]);
        if (try_open(d, "lib64") || try_open(d, "extras/CUPTI/lib64") ||
            try_open(d, "targets/x86_64-linux/lib"))
            return 0;
    }
    if (try_open("/usr/local/cuda", "lib64") || try_open("/usr/local/cuda", "extras/CUPTI/lib64") ||
        try_open("/usr/local/cuda", "targets/x86_64-linux/lib"))
        return 0;
    say("%s not found: not loaded by the program, not in this Python environment (pip install "
        "nvidia-cuda-cupti), not on LD_LIBRARY_PATH, not in $CUDA_HOME or /usr/local/cuda",
        VT_CUPTI_SONAME);
    return -1;
}

VT_EXPORT int InitializeInjection(void);
int InitializeInjection(void)
{
    static int once;
    if (__atomic_exchange_n(&once, 1, __ATOMIC_ACQ_REL))
        return 1;
    char here[PATH_MAX], body[PATH_MAX + 32];
    if (own_dir(here, sizeof(here))) {
        say("cannot tell where libvramtrace.so lies");
        return 1;
    }
    if (load_cupti(here))
        return 1; /* never make the driver fail */
    snprintf(body, sizeof(body), "%s/" VT_BODY_NAME, here);
    void *h = dlopen(body, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        say("cannot load the library proper: %s", dlerror());
        return 1;
    }
    init_fn init = (init_fn)dlsym(h, "InitializeInjection");
    attach_fn attach = (attach_fn)dlsym(h, "vt_hook_attach");
    event_fn event = (event_fn)dlsym(h, "vt_hook_event");
    if (!init || !attach || !event) {
        say("%s lacks its entry points", body);
        return 1;
    }
    __atomic_store_n(&g_event, event, __ATOMIC_RELEASE);
    __atomic_store_n(&g_attach, attach, __ATOMIC_RELEASE);
    /* the pytest plugin's (vt_inject_test.c): a library proper without them
     * answers -1 (not tracing) */
    __atomic_store_n(&g_test_begin, (test_begin_fn)dlsym(h, "vt_test_begin"), __ATOMIC_RELEASE);
    __atomic_store_n(&g_test_end, (test_end_fn)dlsym(h, "vt_test_end"), __ATOMIC_RELEASE);
    return init();
}

/* The memory hooks' entry points (vt_inject_hook.c), passed on; -1 (not
 * tracing) while the library proper is not loaded. */
VT_EXPORT int vt_hook_attach(const char *pool);
int vt_hook_attach(const char *pool)
{
    attach_fn f = __atomic_load_n(&g_attach, __ATOMIC_ACQUIRE);
    return f ? f(pool) : -1;
}

VT_EXPORT int vt_hook_event(uint32_t action, int32_t device, uint64_t addr, uint64_t size);
int vt_hook_event(uint32_t action, int32_t device, uint64_t addr, uint64_t size)
{
    event_fn f = __atomic_load_n(&g_event, __ATOMIC_ACQUIRE);
    return f ? f(action, device, addr, size) : -1;
}

/* The pytest plugin's entry points (vt_inject_test.c, vt_test_abi.h),
 * passed on; -1 (not tracing) while the library proper is not loaded. */
VT_EXPORT int vt_test_begin(const char *nodeid);
int vt_test_begin(const char *nodeid)
{
    test_begin_fn f = __atomic_load_n(&g_test_begin, __ATOMIC_ACQUIRE);
    return f ? f(nodeid) : -1;
}

VT_EXPORT int vt_test_end(const char *nodeid, void *sum, void *sites, uint32_t max_sites);
int vt_test_end(const char *nodeid, void *sum, void *sites, uint32_t max_sites)
{
    test_end_fn f = __atomic_load_n(&g_test_end, __ATOMIC_ACQUIRE);
    return f ? f(nodeid, sum, sites, max_sites) : -1;
}
