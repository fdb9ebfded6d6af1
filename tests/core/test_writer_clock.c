/* test_writer_clock.c - the producers' clock (src/core/vt_clock.c): close to
 * CLOCK_MONOTONIC after calibration and while ticking, never going back on
 * one thread while another recalibrates, the monotonic fallback, a TSC
 * value mapped after it was read (vt_clock_at), and the writer thread
 * calling tick_fn. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <x86intrin.h>

#include "vt_clock.h"
#include "vt_writer.h"
#include "wt_decode.h"

/* Generous: this runs on shared 2-core VMs and under sanitizers, where a
 * thread can be preempted between two reads for milliseconds. */
#define TOL_NS 3000000ll

static uint64_t mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* now() lies between two CLOCK_MONOTONIC reads, within tol. */
static void assert_tracks(int64_t tol)
{
    int64_t best = INT64_MAX;
    for (int i = 0; i < 16; i++) { /* best of 16: preemption widens a bracket */
        uint64_t a = mono(), v = vt_clock_now(), b = mono();
        int64_t off = (int64_t)v < (int64_t)a ? (int64_t)(a - v) : (int64_t)v > (int64_t)b ? (int64_t)(v - b) : 0;
        if (off < best)
            best = off;
    }
    if (best > tol)
        fail_msg("clock off CLOCK_MONOTONIC by %lld ns", (long long)best);
}

static void test_tracks_monotonic(void **state)
{
    (void)state;
    vt_clocksrc s = vt_clock_init(1);
    print_message("clock source: %s\n", vt_clock_name(s));
    assert_tracks(TOL_NS);
    for (int i = 0; i < 30; i++) {
        sleep_ms(10);
        vt_clock_tick();
    }
    assert_tracks(TOL_NS);
    vt_clock_stats st;
    vt_clock_get_stats(&st);
    if (s == VT_CLOCKSRC_TSC) {
        assert_true(st.ticks >= 30);
        assert_true(st.tsc_khz > 100000 && st.tsc_khz < 20000000);
        print_message("tsc %llu kHz, last error %lld ns, %llu resets\n", (unsigned long long)st.tsc_khz,
                      (long long)st.last_error_ns, (unsigned long long)st.resets);
    }
}

static void test_fallback(void **state)
{
    (void)state;
    assert_int_equal(vt_clock_init(0), VT_CLOCKSRC_MONOTONIC);
    assert_int_equal(vt_clock_source(), VT_CLOCKSRC_MONOTONIC);
    assert_string_equal(vt_clock_name(VT_CLOCKSRC_MONOTONIC), "monotonic");
    vt_clock_tick(); /* nothing to do */
    assert_tracks(TOL_NS);
}

/* vt_clock_at(): a TSC value read earlier maps to the time it was read
 * (between two vt_clock_now() around the read, and before a later
 * read's), in order for values in order; 0 when the clock is not the
 * TSC, so that a caller falls back to reading the clock. */
static void test_clock_at(void **state)
{
    (void)state;
    if (vt_clock_init(1) != VT_CLOCKSRC_TSC) {
        assert_int_equal(vt_clock_at(__rdtsc()), 0);
        print_message("no TSC clock here: vt_clock_at() returns 0\n");
        return;
    }
    uint64_t prev = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t a = vt_clock_now();
        uint64_t tsc = __rdtsc();
        uint64_t b = vt_clock_now();
        uint64_t t = vt_clock_at(tsc);
        assert_true(t >= a && t <= b);
        assert_true(t >= prev);
        prev = t;
        if (i % 100 == 0)
            vt_clock_tick(); /* a map published between a read and its mapping */
    }
    /* a read mapped after a recalibration is still as far back as it was:
     * at least the 5 ms slept, at most what CLOCK_MONOTONIC saw around it
     * (a loaded machine may sleep far longer than asked) */
    uint64_t m0 = mono();
    uint64_t early = __rdtsc();
    sleep_ms(5);
    vt_clock_tick();
    uint64_t late = vt_clock_now();
    uint64_t m1 = mono();
    int64_t d = (int64_t)(late - vt_clock_at(early));
    if (d < 5000000ll - TOL_NS || d > (int64_t)(m1 - m0) + TOL_NS)
        fail_msg("a TSC read mapped after a tick is %lld ns back; %lld ns passed", (long long)d,
                 (long long)(m1 - m0));
    assert_int_equal(vt_clock_init(0), VT_CLOCKSRC_MONOTONIC);
    assert_int_equal(vt_clock_at(__rdtsc()), 0);
}

static _Atomic int stop_readers;

static void *reader_main(void *arg)
{
    uint64_t *back = arg, prev = vt_clock_now(), n = 0;
    while (!atomic_load_explicit(&stop_readers, memory_order_relaxed) || n < 100000) {
        uint64_t v = vt_clock_now();
        if (v < prev)
            (*back)++;
        prev = v;
        n++;
    }
    return NULL;
}

/* Readers on 3 threads while the map is republished every millisecond:
 * a thread never sees time go back. */
static void test_monotonic_under_ticks(void **state)
{
    (void)state;
    vt_clock_init(1);
    pthread_t th[3];
    uint64_t back[3] = {0};
    atomic_store(&stop_readers, 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&th[i], NULL, reader_main, &back[i]), 0);
    for (int i = 0; i < 200; i++) {
        vt_clock_tick();
        sleep_ms(1);
    }
    atomic_store(&stop_readers, 1);
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(back[i], 0);
    }
    assert_tracks(TOL_NS);
}

static _Atomic int ticks;
static void count_tick(void) { atomic_fetch_add(&ticks, 1); }

static void test_writer_ticks(void **state)
{
    (void)state;
    char path[512];
    wt_tmp_path(path, sizeof(path), "clock.vt");
    unlink(path);
    vt_clock_init(1);
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.path = path;
    cfg.flush_ms = 1000; /* ticks come every 100 ms regardless */
    cfg.clock_fn = vt_clock_now;
    cfg.tick_fn = count_tick;
    vt_writer *w = NULL;
    assert_int_equal(vt_writer_create(&w, &cfg, NULL), 0);
    /* two ticks, which take 200 ms on an idle machine; a loaded one may
     * not run the writer thread for a while: wait up to 20 s */
    for (int i = 0; i < 2000 && atomic_load(&ticks) < 2; i++)
        sleep_ms(10);
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    vt_writer_free(w);
    assert_true(atomic_load(&ticks) >= 2);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tracks_monotonic),
        cmocka_unit_test(test_fallback),
        cmocka_unit_test(test_clock_at),
        cmocka_unit_test(test_monotonic_under_ticks),
        cmocka_unit_test(test_writer_ticks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
