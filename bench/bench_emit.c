/* bench_emit.c - CPU cost of what libvramtrace.so does per allocation
 * callback besides CUPTI itself: read the clock, capture the native stack
 * (vt_unwind_capture), and queue the event (vt_writer_emit), with the
 * writer thread running.  Compares clocks (CLOCK_MONOTONIC; CUPTI's
 * cuptiGetTimestamp when built with CUPTI).
 *   bench_emit [EVENTS] [DEPTH]            (writes a trace to /tmp)
 *   bench_emit push [EVENTS] [SITES] [COLD_KIB] [REFS] [FREES]
 *     the push alone (vt_writer_emit) of an allocation whose stack is one
 *     of SITES stacks of 45 frames (29 native, 16 Python, as in a PyTorch
 *     transformer step), each push timed alone; with COLD_KIB > 0 that much
 *     memory is written between pushes (the host program's work evicting
 *     the caches); REFS=1: with a fingerprint (vt_fp.h, computed in the
 *     timed part; the native part is a walk id, as when the unwinder
 *     replays its memo) and the frames only when vt_writer_site_sent() says no,
 *     as the library does; FREES=1: each allocation followed by the free
 *     of an earlier one (tensor-level mode), timed with it, the time per
 *     push is then the mean of the two.  Events carry their time, as the
 *     library's do.  Prints the min and median of 5 rounds. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef VT_BENCH_CUPTI
#include <cupti.h>
#endif

#include "vt_fp.h"
#include "vt_unwind.h"
#include "vt_writer.h"

static vt_writer *W;
static vt_unwinder *U;
static volatile int sink;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

#ifdef VT_BENCH_CUPTI
static uint64_t cupti_clock(void)
{
    uint64_t t = 0;
    cuptiGetTimestamp(&t);
    return t;
}
#endif

static __attribute__((noinline)) void one_event(uint64_t i, int stacks)
{
    vt_frame fr[64];
    uint64_t ips[64];
    int n = stacks ? vt_unwind_capture(U, ips, 32) : 0;
    for (int k = 0; k < n; k++) {
        fr[k].pc = ips[k];
        fr[k].line = 0;
        fr[k].kind = VT_FRAME_NATIVE;
    }
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_ALLOC;
    ev.u.alloc.address = 0x7f0000000000ull + (i << 12);
    ev.u.alloc.size = 4096 + (i & 1023) * 512;
    ev.u.alloc.kind = VT_MEM_DEVICE;
    ev.u.alloc.api = VT_API_MALLOC_ASYNC;
    ev.u.alloc.corr = i;
    ev.u.alloc.site.frames = fr;
    ev.u.alloc.site.nframes = (uint32_t)n;
    vt_writer_emit(W, &ev);
}

static __attribute__((noinline)) void chain(int d, uint64_t i, int stacks)
{
    if (d > 0) {
        chain(d - 1, i, stacks);
        sink += d;
        return;
    }
    if (stacks >= 0)
        one_event(i, stacks);
}

/* W on a fresh file /tmp/bench_emit.PID.zst (4 MiB rings, as the
 * library); clock_cupti: CUPTI's clock.  0, or -1 (no CUPTI build). */
static int open_writer(char *path, size_t n, int clock_cupti)
{
    snprintf(path, n, "/tmp/bench_emit.%d.zst", (int)getpid());
    unlink(path);
    vt_writer_config c;
    vt_writer_config_default(&c);
    c.path = path;
    c.ring_bytes = 4u << 20;
#ifdef VT_BENCH_CUPTI
    if (clock_cupti) {
        c.clock = VT_CLOCK_CUPTI;
        c.clock_fn = cupti_clock;
    }
#else
    if (clock_cupti)
        return -1;
#endif
    vt_ev_header h;
    memset(&h, 0, sizeof(h));
    h.pid = (uint32_t)getpid();
    h.program = "bench_emit";
    return vt_writer_create(&W, &c, &h) != 0 ? -1 : 0;
}

static void run(const char *what, int clock_cupti, int stacks, int nev, int depth)
{
    char path[256];
    if (open_writer(path, sizeof(path), clock_cupti) != 0)
        return;
    /* paced like a training step: bursts of 500 events, then a short pause */
    double t = 0;
    int done = 0;
    while (done < nev) {
        double t0 = now();
        for (int k = 0; k < 500 && done < nev; k++, done++)
            chain(depth, (uint64_t)done, stacks);
        t += now() - t0;
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    vt_writer_flush(W); /* everything encoded and written, so that the bytes are counted */
    vt_writer_stats st;
    vt_writer_get_stats(W, &st);
    vt_writer_free(W);
    unlink(path);
    printf("%-34s %8.0f ns/event  (%llu events, %llu dropped, %.2f B/event)\n", what, t / nev,
           (unsigned long long)st.emitted, (unsigned long long)st.dropped,
           st.emitted ? (double)st.bytes_written / (double)st.emitted : 0.0);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double push_round(int nev, int sites, int cold_kib, unsigned char *cold, int refs, int frees)
{
    enum { NAT = 29, PY = 16, NF = NAT + PY };
    char path[256];
    if (open_writer(path, sizeof(path), 0) != 0)
        return -1;
    vt_frame *fr = calloc((size_t)sites * NF, sizeof(vt_frame));
    for (int s = 0; s < sites; s++)
        for (int k = 0; k < NF; k++) {
            vt_frame *f = &fr[s * NF + k];
            if (k < NAT) {
                f->pc = 0x7f1234560000ull + (uint64_t)k * 0x1234 + (uint64_t)s * 0x40;
                f->kind = VT_FRAME_NATIVE;
            } else {
                f->pc = 0x5550000000ull + (uint64_t)(k - NAT) * 0x300 + (uint64_t)(s % 7) * 0x10;
                f->line = 10 + (uint32_t)k + (uint32_t)s;
                f->kind = VT_FRAME_PYTHON;
            }
        }
    /* the same stacks as the library holds them before merging: return
     * addresses, then Python frames of 3 words (vt_pyframe) */
    enum { CAPW = NAT + 3 * PY };
    uint64_t *cap = calloc((size_t)sites * CAPW, sizeof(uint64_t));
    for (int s = 0; s < sites; s++)
        for (int k = 0; k < NF; k++) {
            const vt_frame *f = &fr[s * NF + k];
            uint64_t *cw = &cap[s * CAPW];
            if (k < NAT)
                cw[k] = f->pc;
            else
                memcpy(&cw[NAT + 3 * (k - NAT)], (uint64_t[3]){f->pc, f->pc, f->line}, 24);
        }
    double t = 0;
    for (int i = 0; i < nev; i++) {
        if (cold_kib)
            for (size_t o = 0; o < (size_t)cold_kib << 10; o += 64)
                cold[o] += 1;
        vt_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_ALLOC;
        ev.u.alloc.address = 0x7f0000000000ull + ((uint64_t)i << 12);
        ev.u.alloc.size = 4096 + (uint64_t)(i & 1023) * 512;
        ev.u.alloc.kind = VT_MEM_DEVICE;
        ev.u.alloc.api = VT_API_MALLOC_ASYNC;
        ev.u.alloc.corr = (uint64_t)i;
        const vt_frame *f = &fr[(i % sites) * NF];
        double t0 = now();
        if (refs) /* the library's fingerprint: native words, then Python frames */
            vt_fp_capture((uint64_t)(i % sites) + 1, &cap[(i % sites) * CAPW], NAT, 0, &cap[(i % sites) * CAPW + NAT], PY, ev.u.alloc.site.fp);
        if (!refs || !vt_writer_site_sent(W, ev.u.alloc.site.fp)) {
            ev.u.alloc.site.frames = f;
            ev.u.alloc.site.nframes = NF;
        }
        ev.time_ns = (uint64_t)t0;
        vt_writer_emit(W, &ev);
        if (frees) {
            vt_event fe;
            memset(&fe, 0, sizeof(fe));
            fe.type = VT_EV_FREE;
            fe.time_ns = (uint64_t)t0 + 1;
            fe.u.free.address = 0x7f0000000000ull + ((uint64_t)(i > 8 ? i - 8 : i) << 12);
            fe.u.free.kind = VT_MEM_DEVICE;
            fe.u.free.api = VT_API_MALLOC_ASYNC;
            fe.u.free.corr = (uint64_t)i + 1;
            vt_writer_emit(W, &fe);
        }
        t += now() - t0;
        if (i % 500 == 499) {
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
    }
    vt_writer_free(W);
    unlink(path);
    free(fr);
    free(cap);
    return t / nev / (frees ? 2 : 1);
}

static int run_push(int argc, char **argv)
{
    int nev = argc > 2 ? atoi(argv[2]) : 20000;
    int sites = argc > 3 ? atoi(argv[3]) : 64;
    int cold_kib = argc > 4 ? atoi(argv[4]) : 0;
    int refs = argc > 5 ? atoi(argv[5]) : 0;
    int frees = argc > 6 ? atoi(argv[6]) : 0;
    unsigned char *cold = cold_kib ? calloc((size_t)cold_kib, 1024) : NULL;
    double tnull = 1e9;
    for (int i = 0; i < 1000; i++) {
        double t0 = now(), t1 = now();
        if (t1 - t0 < tnull)
            tnull = t1 - t0;
    }
    double r[5];
    for (int k = 0; k < 5; k++)
        r[k] = push_round(nev, sites < 1 ? 1 : sites, cold_kib, cold, refs, frees) - tnull / (frees ? 2 : 1);
    qsort(r, 5, sizeof(r[0]), cmp_double);
    printf("push, 45 frames, %d sites, %d KiB touched between pushes, %s%s: min %.0f / median %.0f ns per push\n",
           sites, cold_kib, refs ? "references" : "frames every time", frees ? ", a free after each" : "", r[0], r[2]);
    free(cold);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "push"))
        return run_push(argc, argv);
    int nev = argc > 1 ? atoi(argv[1]) : 50000;
    int depth = argc > 2 ? atoi(argv[2]) : 40;
    if (vt_unwinder_create(&U, 0, NULL, NULL) != 0)
        return 1;
    chain(depth, 0, 0);
    {
        double t0 = now();
        for (int i = 0; i < nev; i++)
            chain(depth, (uint64_t)i, -1);
        printf("%-34s %8.0f ns/event  (the call chain alone, subtract it)\n", "baseline", (now() - t0) / nev);
    }
    run("emit, monotonic clock, no stack", 0, 0, nev, depth);
    run("emit, monotonic clock, 32 frames", 0, 1, nev, depth);
    run("emit, CUPTI clock, no stack", 1, 0, nev, depth);
    run("emit, CUPTI clock, 32 frames", 1, 1, nev, depth);
    vt_unwinder_free(U);
    return 0;
}
