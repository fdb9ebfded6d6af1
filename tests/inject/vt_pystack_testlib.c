/* vt_pystack_testlib.c - a shared library that exposes vt_pystack to Python
 * test scripts through ctypes (ctypes releases the GIL around the call, as
 * PyTorch does around CUDA work).  Test-only; touches only its own buffers.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "vt_error.h"
#include "vt_pystack.h"

#define VTPT_EXPORT __attribute__((visibility("default")))
#define TEXT_CAP (256 * 1024)

static __thread char t_text[TEXT_CAP];

VTPT_EXPORT int vtpt_init(char *why, int n) { return vt_pystack_init(why, (size_t)n); }

VTPT_EXPORT const char *vtpt_version(void) { return vt_pystack_version(); }

static size_t put_frames(char *b, size_t o, const vt_pyframe *fr, int n)
{
    for (int i = 0; i < n && o < TEXT_CAP - 1024; i++) {
        char file[512], func[256];
        if (vt_pystack_describe(fr[i].code, file, sizeof file, func, sizeof func) < 0)
            snprintf(func, sizeof func, "<describe failed>");
        o += (size_t)snprintf(b + o, TEXT_CAP - o, "%s\t%s\t%u\t%u\t%u\n", file, func, fr[i].line,
                              fr[i].nentry, fr[i].flags);
    }
    return o;
}

/* One capture of up to `max` frames as text: a line "n=<count>", then one
 * "file\tfunction\tline\tnentry\tflags" line per frame, innermost first. */
VTPT_EXPORT const char *vtpt_capture(int max)
{
    vt_pyframe fr[VT_PYSTACK_MAX_DEPTH];
    int n = vt_pystack_capture(fr, max);
    size_t o = (size_t)snprintf(t_text, TEXT_CAP, "n=%d\n", n);
    if (n > 0)
        put_frames(t_text, o, fr, n);
    return t_text;
}

/* One capture through vt_pystack_capture_walk: a line
 * "walk=<id> inplace=<0|1> n=<count>", then the frames as vtpt_capture. */
VTPT_EXPORT const char *vtpt_walk(int max)
{
    vt_pyframe buf[VT_PYSTACK_MAX_DEPTH];
    const vt_pyframe *fr = NULL;
    uint64_t walk = 0;
    int n = vt_pystack_capture_walk(buf, max, &fr, &walk);
    size_t o = (size_t)snprintf(t_text, TEXT_CAP, "walk=%llu inplace=%d n=%d\n", (unsigned long long)walk,
                                fr != buf, n);
    if (n > 0)
        put_frames(t_text, o, fr, n);
    return t_text;
}

/* Capture `iters` times; every capture must equal the first (keys, lines,
 * entries, flags).  Returns the number of mismatches, -1 if nothing was
 * captured. */
VTPT_EXPORT int vtpt_repeat(int iters, int max)
{
    vt_pyframe a[VT_PYSTACK_MAX_DEPTH], b[VT_PYSTACK_MAX_DEPTH];
    int na = vt_pystack_capture(a, max), bad = 0;
    if (na <= 0)
        return -1;
    for (int i = 0; i < iters; i++) {
        int nb = vt_pystack_capture(b, max);
        if (nb != na || memcmp(a, b, sizeof a[0] * (size_t)na) != 0)
            bad++;
    }
    return bad;
}

/* Mean ns per capture of up to `max` frames over `iters` captures. */
VTPT_EXPORT double vtpt_bench(int iters, int max)
{
    vt_pyframe fr[VT_PYSTACK_MAX_DEPTH];
    struct timespec t0, t1;
    volatile int sink = 0;
    sink += vt_pystack_capture(fr, max); /* warm the caches */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < iters; i++)
        sink += vt_pystack_capture(fr, max);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    (void)sink;
    double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
    return ns / iters;
}

/* Python frame count of vt_pystack_capture() on a thread Python never saw. */
static void *foreign(void *arg)
{
    vt_pyframe fr[8];
    *(int *)arg = vt_pystack_capture(fr, 8);
    return NULL;
}
VTPT_EXPORT int vtpt_capture_foreign_thread(void)
{
    pthread_t t;
    int n = -100;
    if (pthread_create(&t, NULL, foreign, &n) != 0)
        return -101;
    pthread_join(t, NULL);
    return n;
}

/* The merged stack of this call: glibc backtrace() for the native part.
 * Text: "neval=<eval frames in the native stack> npy=<n> nentry=<sum>" then
 * per merged frame "P\tfile\tfunction\tline" or "N\t0x<ip>\t<is_eval>". */
static const char *merged_text(int pymax, int drop_evals);
VTPT_EXPORT const char *vtpt_merged(int pymax) { return merged_text(pymax, 0); }
/* The same with the eval-loop frames removed from the native stack first,
 * as if the eval loop could not be recognised (stripped/cloned): exercises
 * the merge's fallback on a real stack. */
VTPT_EXPORT const char *vtpt_merged_noeval(int pymax) { return merged_text(pymax, 1); }

static const char *merged_text(int pymax, int drop_evals)
{
    void *raw[512];
    uint64_t ips[512];
    vt_pyframe py[VT_PYSTACK_MAX_DEPTH];
    vt_frame out[768];
    int nraw = backtrace(raw, 512), nips = 0, neval = 0, sum = 0;
    for (int i = 0; i < nraw; i++) {
        uint64_t ip = (uint64_t)(uintptr_t)raw[i];
        int ev = vt_pystack_is_eval(ip);
        neval += ev;
        if (!(ev && drop_evals))
            ips[nips++] = ip;
    }
    int npy = vt_pystack_capture(py, pymax);
    for (int i = 0; i < npy; i++)
        sum += py[i].nentry;
    int n = vt_pystack_merge(ips, nips, py, npy < 0 ? 0 : npy, out, 768);
    size_t o = (size_t)snprintf(t_text, TEXT_CAP, "neval=%d npy=%d nentry=%d\n", neval, npy, sum);
    for (int i = 0; i < n && o < TEXT_CAP - 1024; i++) {
        if (out[i].kind == VT_FRAME_NATIVE) {
            Dl_info di;
            const char *mod = "?";
            if (dladdr((void *)(uintptr_t)(out[i].pc - 1), &di) && di.dli_fname) {
                mod = strrchr(di.dli_fname, '/') ? strrchr(di.dli_fname, '/') + 1 : di.dli_fname;
            }
            o += (size_t)snprintf(t_text + o, TEXT_CAP - o, "N\t0x%llx\t%d\t%s\n",
                                  (unsigned long long)out[i].pc, vt_pystack_is_eval(out[i].pc), mod);
            continue;
        }
        int j = 0;
        while (j < npy && py[j].key != out[i].pc)
            j++;
        char file[512] = "?", func[256] = "?";
        if (j < npy)
            vt_pystack_describe(py[j].code, file, sizeof file, func, sizeof func);
        o += (size_t)snprintf(t_text + o, TEXT_CAP - o, "P\t%s\t%s\t%u\n", file, func, out[i].line);
    }
    return t_text;
}

/* vt_pystack_stack() with a counting define callback, twice in a row:
 * returns "defs1 defs2 n1 n2 badkeys" (the second call must define nothing;
 * badkeys counts Python frames whose key was never defined). */
typedef struct {
    int defs;
    uint64_t keys[VT_PYSTACK_MAX_DEPTH];
    int nkeys;
} vtpt_defctx;
static int count_define(void *ctx, uint64_t key, const char *file, const char *function)
{
    vtpt_defctx *c = ctx;
    if (!file[0] || !function[0])
        return VT_ERR_INVALID;
    c->defs++;
    if (c->nkeys < VT_PYSTACK_MAX_DEPTH)
        c->keys[c->nkeys++] = key;
    return 0;
}
VTPT_EXPORT const char *vtpt_stack_twice(int pymax)
{
    vtpt_defctx c = {0};
    vt_frame out[VT_PYSTACK_MAX_MERGED];
    int n1 = vt_pystack_stack(NULL, 0, out, VT_PYSTACK_MAX_MERGED, pymax, count_define, &c);
    int d1 = c.defs;
    int badkeys = 0;
    for (int i = 0; i < n1; i++) {
        int found = 0;
        for (int j = 0; j < c.nkeys; j++)
            found |= c.keys[j] == out[i].pc;
        badkeys += out[i].kind == VT_FRAME_PYTHON && !found;
    }
    int n2 = vt_pystack_stack(NULL, 0, out, VT_PYSTACK_MAX_MERGED, pymax, count_define, &c);
    snprintf(t_text, TEXT_CAP, "%d %d %d %d %d", d1, c.defs - d1, n1, n2, badkeys);
    return t_text;
}

/* vtpt_capture(VT_PYSTACK_MAX_DEPTH) without arguments, so test code calls
 * the foreign function directly (no Python wrapper frame). */
VTPT_EXPORT const char *vtpt_capture0(void) { return vtpt_capture(VT_PYSTACK_MAX_DEPTH); }

static int noop_define(void *ctx, uint64_t key, const char *file, const char *function)
{
    (void)ctx, (void)key, (void)file, (void)function;
    return 0;
}

/* Mean ns per vt_pystack_stack() (capture + define check + merge with a
 * glibc backtrace() taken once, replayed each time) over `iters` calls. */
VTPT_EXPORT double vtpt_bench_stack(int iters, int max)
{
    void *raw[128];
    uint64_t ips[128];
    vt_frame out[VT_PYSTACK_MAX_MERGED];
    struct timespec t0, t1;
    volatile int sink = 0;
    int nips = backtrace(raw, 128);
    for (int i = 0; i < nips; i++)
        ips[i] = (uint64_t)(uintptr_t)raw[i];
    sink += vt_pystack_stack(ips, nips, out, VT_PYSTACK_MAX_MERGED, max, noop_define, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < iters; i++)
        sink += vt_pystack_stack(ips, nips, out, VT_PYSTACK_MAX_MERGED, max, noop_define, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    (void)sink;
    double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
    return ns / iters;
}

/* Depth of the native stack glibc backtrace() sees here (bench report). */
VTPT_EXPORT int vtpt_native_depth(void)
{
    void *raw[128];
    return backtrace(raw, 128);
}

/* Test hook: forget init, get one layout field wrong for the next one. */
VTPT_EXPORT int vtpt_reset(const char *field, long delta) { return vt_pystack_test_reset(field, delta); }

VTPT_EXPORT int vtpt_code_watch(void) { return vt_pystack_code_watch(); }

/* vt_pystack_init() on a new thread that has no Python thread state, so
 * that the layout check has to happen later, on the first capture that
 * finds Python frames. */
typedef struct {
    char *why;
    int n, rc;
} vtpt_initarg;
static void *init_thread(void *p)
{
    vtpt_initarg *a = p;
    a->rc = vt_pystack_init(a->why, (size_t)a->n);
    return NULL;
}
VTPT_EXPORT int vtpt_init_in_new_thread(char *why, int n)
{
    pthread_t t;
    vtpt_initarg a = {why, n, -100};
    if (pthread_create(&t, NULL, init_thread, &a) != 0)
        return -101;
    pthread_join(t, NULL);
    return a.rc;
}
