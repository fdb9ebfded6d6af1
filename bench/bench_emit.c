/* bench_emit.c - CPU cost of what libvramtrace.so does per allocation
 * callback besides CUPTI itself: read the clock, capture the native stack
 * (vt_unwind_capture), and queue the event (vt_writer_emit), with the
 * writer thread running.  Compares clocks (CLOCK_MONOTONIC; CUPTI's
 * cuptiGetTimestamp when built with CUPTI).
 *   bench_emit [EVENTS] [DEPTH]            (writes a trace to /tmp) */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef VT_BENCH_CUPTI
#include <cupti.h>
#endif

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

static void run(const char *what, int clock_cupti, int stacks, int nev, int depth)
{
    char path[256];
    snprintf(path, sizeof(path), "/tmp/bench_emit.%d.zst", (int)getpid());
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
        return;
#endif
    vt_ev_header h;
    memset(&h, 0, sizeof(h));
    h.pid = (uint32_t)getpid();
    h.program = "bench_emit";
    if (vt_writer_create(&W, &c, &h) != 0)
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
    vt_writer_stats st;
    vt_writer_get_stats(W, &st);
    vt_writer_free(W);
    unlink(path);
    printf("%-34s %8.0f ns/event  (%llu events, %llu dropped, %.2f B/event)\n", what, t / nev,
           (unsigned long long)st.emitted, (unsigned long long)st.dropped,
           st.emitted ? (double)st.bytes_written / (double)st.emitted : 0.0);
}

int main(int argc, char **argv)
{
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
