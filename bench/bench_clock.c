/* bench_clock.c - what vt_clock_now() costs a producer: 10 M calls per
 * round, three rounds, while a second thread recalibrates the map every
 * 100 ms as the writer thread does; clock_gettime(CLOCK_MONOTONIC) beside
 * it.  Prints ns per call per round.  Run: build/bench/bench_clock
 * (BENCHMARKS.md ## writer). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "vt_clock.h"

#define CALLS 10000000

static atomic_int g_stop;

static uint64_t mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *ticker(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 100000000L};
    while (!atomic_load(&g_stop)) {
        nanosleep(&ts, NULL);
        vt_clock_tick();
    }
    return NULL;
}

int main(void)
{
    vt_clocksrc src = vt_clock_init(1);
    char ks[64];
    vt_clock_kernel_source(ks, sizeof(ks));
    printf("clock: %s (kernel: %s)\n", vt_clock_name(src), ks);
    pthread_t t;
    pthread_create(&t, NULL, ticker, NULL);
    volatile uint64_t sink = 0;
    for (int r = 0; r < 3; r++) {
        uint64_t a = mono();
        for (int i = 0; i < CALLS; i++)
            sink += vt_clock_now();
        uint64_t b = mono();
        for (int i = 0; i < CALLS; i++)
            sink += mono();
        uint64_t c = mono();
        printf("round %d: vt_clock_now %.1f ns, clock_gettime %.1f ns\n", r, (double)(b - a) / CALLS,
               (double)(c - b) / CALLS);
    }
    atomic_store(&g_stop, 1);
    pthread_join(t, NULL);
    return sink == 1;
}
