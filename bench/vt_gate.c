/* vt_gate.c - see vt_gate.h.  Benchmark-only: started only when a library
 * is given VRAMTRACE_BENCH_GATE; touches nothing else in the process. */
#define _GNU_SOURCE
#include "vt_gate.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static struct {
    _Atomic uint32_t *word; /* [0] request, [1] applied */
    pthread_t thread;
    atomic_int stop;
    int started;
    vt_gate_apply_fn fn;
    void *arg;
    atomic_uint toggles;
} g_gate;

static void *gate_main(void *arg)
{
    (void)arg;
    uint32_t applied = atomic_load_explicit(&g_gate.word[1], memory_order_acquire);
    int on = 1;
    const struct timespec nap = {0, 200 * 1000};
    while (!atomic_load_explicit(&g_gate.stop, memory_order_relaxed)) {
        uint32_t req = atomic_load_explicit(&g_gate.word[0], memory_order_acquire);
        if (req != applied) {
            int want = (int)(req & 1);
            if (want != on) {
                g_gate.fn(want, g_gate.arg);
                on = want;
                atomic_fetch_add_explicit(&g_gate.toggles, 1, memory_order_relaxed);
            }
            applied = req;
            atomic_store_explicit(&g_gate.word[1], applied, memory_order_release);
        }
        nanosleep(&nap, NULL);
    }
    return NULL;
}

int vt_gate_start(const char *path, vt_gate_apply_fn fn, void *arg)
{
    if (g_gate.started || !path || !fn)
        return -EINVAL;
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < VT_GATE_SIZE) {
        close(fd);
        return -EINVAL;
    }
    void *p = mmap(NULL, VT_GATE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return -errno;
    g_gate.word = p;
    g_gate.fn = fn;
    g_gate.arg = arg;
    atomic_store(&g_gate.stop, 0);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 * 1024);
    int rc = pthread_create(&g_gate.thread, &a, gate_main, NULL);
    pthread_attr_destroy(&a);
    if (rc == 0)
        pthread_setname_np(g_gate.thread, "vt-gate");
    if (rc != 0) {
        munmap(p, VT_GATE_SIZE);
        g_gate.word = NULL;
        return -rc;
    }
    g_gate.started = 1;
    return 0;
}

void vt_gate_stop(void)
{
    if (!g_gate.started)
        return;
    atomic_store(&g_gate.stop, 1);
    pthread_join(g_gate.thread, NULL);
    munmap((void *)g_gate.word, VT_GATE_SIZE);
    g_gate.word = NULL;
    g_gate.started = 0;
}

void vt_gate_forget(void) { g_gate.started = 0; }

unsigned vt_gate_toggles(void) { return atomic_load(&g_gate.toggles); }
