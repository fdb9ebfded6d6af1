/* test_writer_threads.c - many producer threads at once (run it under
 * -DVT_SANITIZE=thread too): every event is either in the file exactly once
 * or counted as dropped; per-thread order is kept; a tiny ring drops and the
 * counts reach the stream; rings are reused after threads exit; the writer
 * merges rings by time. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "vt_error.h"
#include "vt_writer.h"
#include "wt_decode.h"

#ifdef WT_TSAN
enum { NTHREADS = 8, PER_THREAD = 20000 }; /* TSan is ~10x slower */
#else
enum { NTHREADS = 8, PER_THREAD = 100000 };
#endif

typedef struct {
    vt_writer *w;
    int idx, n, retry;
    uint64_t ok, dropped;
} prod_arg;

static void *producer(void *p)
{
    prod_arg *a = p;
    vt_frame fr[4] = {{0x1000, 0, 0}, {0x2000 + (uint64_t)a->idx, 0, 0}, {0x3000, 0, 0}, {0x4000, 0, 0}};
    for (int i = 0; i < a->n; i++) {
        vt_event e;
        memset(&e, 0, sizeof(e));
        if (i % 3 == 2) {
            e.type = VT_EV_FREE;
            e.u.free.address = ((uint64_t)a->idx << 40) | (uint64_t)i;
            e.u.free.corr = (uint64_t)i;
        } else {
            e.type = VT_EV_ALLOC;
            e.u.alloc.address = ((uint64_t)a->idx << 40) | (uint64_t)i;
            e.u.alloc.size = 256;
            e.u.alloc.corr = (uint64_t)i;
            e.u.alloc.site.frames = fr;
            e.u.alloc.site.nframes = 4;
        }
        int rc = vt_writer_emit(a->w, &e);
        while (rc == VT_ERR_DROPPED && a->retry) {
            /* a retry is a new emit: the dropped one is counted anyway */
            a->dropped++;
            usleep(100);
            rc = vt_writer_emit(a->w, &e);
        }
        if (rc == 0)
            a->ok++;
        else if (a->retry)
            fail_msg("emit after retry: %d", rc);
        else if (rc == VT_ERR_DROPPED)
            a->dropped++;
        else
            fail_msg("emit: %d", rc);
    }
    return NULL;
}

static void run_threads(vt_writer *w, prod_arg *args, int n, int per, int retry)
{
    pthread_t th[64];
    for (int i = 0; i < n; i++) {
        args[i] = (prod_arg){.w = w, .idx = i + 1, .n = per, .retry = retry};
        assert_int_equal(pthread_create(&th[i], NULL, producer, &args[i]), 0);
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
}

/* Check the file: each event once, per-thread order, counts. */
static void check_accounting(const char *path, prod_arg *args, int n, int per)
{
    wt_trace t;
    assert_int_equal(wt_decode_file(path, &t, 0), 0);
    assert_int_equal(t.errors, 0);
    assert_false(t.truncated);
    assert_non_null(t.end);
    uint64_t ok = 0, dropped = 0;
    for (int i = 0; i < n; i++) {
        ok += args[i].ok;
        dropped += args[i].dropped;
    }
    uint8_t *seen = calloc((size_t)n * (size_t)per, 1);
    int64_t *last = calloc((size_t)n + 1, sizeof(int64_t));
    for (int i = 0; i <= n; i++)
        last[i] = -1;
    uint64_t written = 0;
    for (size_t i = 0; i < t.nev; i++) {
        const wt_ev *x = &t.ev[i];
        if (x->type != VRAMTRACE__RECORD__BODY_ALLOC && x->type != VRAMTRACE__RECORD__BODY_FREE)
            continue;
        int idx = (int)(x->a >> 40);
        int64_t seq = (int64_t)(x->a & 0xffffffffffull);
        assert_true(idx >= 1 && idx <= n && seq < per);
        assert_true(seq > last[idx]); /* per-thread order kept */
        last[idx] = seq;
        assert_int_equal(x->corr, (uint64_t)seq);
        assert_false(seen[(size_t)(idx - 1) * (size_t)per + (size_t)seq]);
        seen[(size_t)(idx - 1) * (size_t)per + (size_t)seq] = 1;
        if (x->type == VRAMTRACE__RECORD__BODY_ALLOC) {
            uint32_t f[8];
            assert_int_equal(wt_stack_frames(&t, x->stack, f, 8), 4);
            assert_int_equal(t.frame[f[1]]->ip, 0x2000 + (uint64_t)idx);
        }
        written++;
    }
    assert_int_equal(written, ok);
    assert_int_equal(t.end->events, ok);
    assert_int_equal(t.dropped_queue, dropped);
    assert_int_equal(t.end->dropped, dropped);
    /* every emit call is either in the file or counted as dropped */
    assert_int_equal(written + t.dropped_queue, ok + dropped);
    if (!args[0].retry)
        assert_int_equal(written + t.dropped_queue, (uint64_t)n * (uint64_t)per);
    else
        assert_int_equal(written, (uint64_t)n * (uint64_t)per);
    free(seen);
    free(last);
    wt_trace_free(&t);
}

static void test_many_threads(void **state)
{
    (void)state;
    char path[512];
    wt_tmp_path(path, sizeof(path), "threads.vt");
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.path = path;
    vt_writer *w = NULL;
    assert_int_equal(vt_writer_create(&w, &cfg, NULL), 0);
    prod_arg args[NTHREADS];
    run_threads(w, args, NTHREADS, PER_THREAD, 0);
    assert_int_equal(vt_writer_flush(w), 0);
    vt_writer_stats st;
    vt_writer_get_stats(w, &st);
    uint64_t ok = 0, dropped = 0;
    for (int i = 0; i < NTHREADS; i++) {
        ok += args[i].ok;
        dropped += args[i].dropped;
        /* no retry: every emit is either accepted or dropped */
        assert_int_equal(args[i].ok + args[i].dropped, PER_THREAD);
    }
    assert_int_equal(st.emitted, ok);
    assert_int_equal(st.dropped, dropped);
    assert_int_equal(ok + dropped, (uint64_t)NTHREADS * PER_THREAD);
    print_message("many_threads: %llu written, %llu dropped, %llu records, %llu -> %llu bytes\n",
                  (unsigned long long)ok, (unsigned long long)dropped, (unsigned long long)st.records,
                  (unsigned long long)st.bytes_raw, (unsigned long long)st.bytes_written);
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    vt_writer_free(w);
    check_accounting(path, args, NTHREADS, PER_THREAD);
    unlink(path);
}

/* Same with producers that retry after a drop (sleeping 100 us): every
 * one of the 800k events must reach the file, each exactly once, with
 * writer and producers working concurrently for a while. */
static void test_many_threads_all_written(void **state)
{
    (void)state;
    char path[512];
    wt_tmp_path(path, sizeof(path), "threads2.vt");
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.path = path;
    vt_writer *w = NULL;
    assert_int_equal(vt_writer_create(&w, &cfg, NULL), 0);
    prod_arg args[NTHREADS];
    run_threads(w, args, NTHREADS, PER_THREAD, 1);
    uint64_t ok = 0;
    for (int i = 0; i < NTHREADS; i++)
        ok += args[i].ok;
    assert_int_equal(ok, (uint64_t)NTHREADS * PER_THREAD);
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    vt_writer_free(w);
    check_accounting(path, args, NTHREADS, PER_THREAD);
    unlink(path);
}

/* A 4 KiB ring fills at once: drops are counted, reported in Dropped
 * records and End.dropped, and written + dropped == emitted. */
static void test_tiny_ring_drops(void **state)
{
    (void)state;
    char path[512];
    wt_tmp_path(path, sizeof(path), "tiny.vt");
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.path = path;
    cfg.ring_bytes = 4096;
    vt_writer *w = NULL;
    assert_int_equal(vt_writer_create(&w, &cfg, NULL), 0);
    prod_arg args[2];
    run_threads(w, args, 2, 50000, 0);
    vt_writer_stats st;
    vt_writer_get_stats(w, &st);
    assert_true(st.dropped > 0);
    assert_int_equal(st.dropped, args[0].dropped + args[1].dropped);
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    vt_writer_free(w);
    check_accounting(path, args, 2, 50000);
    unlink(path);
}

static void *small_producer(void *p)
{
    prod_arg *a = p;
    for (int i = 0; i < a->n; i++) {
        vt_event e;
        memset(&e, 0, sizeof(e));
        e.type = VT_EV_FREE;
        e.u.free.address = ((uint64_t)a->idx << 40) | (uint64_t)i;
        e.u.free.corr = (uint64_t)i;
        if (vt_writer_emit(a->w, &e) == 0)
            a->ok++;
        else
            a->dropped++;
    }
    return NULL;
}

/* 200 short-lived threads one after another: the rings of exited threads
 * are reused (the pthread key destructor frees them for the next thread). */
static void test_ring_reuse(void **state)
{
    (void)state;
    char path[512];
    wt_tmp_path(path, sizeof(path), "reuse.vt");
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.path = path;
    cfg.ring_bytes = 65536;
    vt_writer *w = NULL;
    assert_int_equal(vt_writer_create(&w, &cfg, NULL), 0);
    enum { NT = 200, PER = 50 };
    prod_arg *args = calloc(NT, sizeof(*args));
    for (int i = 0; i < NT; i++) {
        args[i] = (prod_arg){.w = w, .idx = i + 1, .n = PER};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, small_producer, &args[i]), 0);
        pthread_join(th, NULL);
    }
    vt_writer_stats st;
    vt_writer_get_stats(w, &st);
    assert_true(st.rings <= 2); /* not 200 */
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    vt_writer_free(w);
    check_accounting(path, args, NT, PER);
    free(args);
    unlink(path);
}

typedef struct {
    vt_writer *w;
    int parity;
    pthread_barrier_t *bar;
} merge_arg;

static void *merge_producer(void *p)
{
    merge_arg *a = p;
    vt_event n;
    memset(&n, 0, sizeof(n));
    n.type = VT_EV_NOTE;
    n.time_ns = 1;
    n.u.note.text = "ring claimed";
    assert_int_equal(vt_writer_emit(a->w, &n), 0);
    pthread_barrier_wait(a->bar); /* both rings exist */
    pthread_barrier_wait(a->bar); /* the main thread flushed: the writer sleeps */
    for (int i = 0; i < 1000; i++) {
        vt_event e;
        memset(&e, 0, sizeof(e));
        uint64_t k = (uint64_t)i * 2 + (uint64_t)a->parity;
        e.type = a->parity ? VT_EV_FREE : VT_EV_ALLOC;
        e.time_ns = 1000000 + k * 10;
        if (a->parity)
            e.u.free.address = k;
        else
            e.u.alloc.address = k;
        assert_int_equal(vt_writer_emit(a->w, &e), 0);
    }
    return NULL;
}

/* Two threads with interleaved timestamps: the file is in time order
 * (alloc/free from different threads must not swap). */
static void test_merge_by_time(void **state)
{
    (void)state;
    char path[512];
    wt_tmp_path(path, sizeof(path), "merge.vt");
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.path = path;
    cfg.flush_ms = 20000; /* no periodic round while producing */
    vt_writer *w = NULL;
    assert_int_equal(vt_writer_create(&w, &cfg, NULL), 0);
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 3);
    merge_arg a0 = {w, 0, &bar}, a1 = {w, 1, &bar};
    pthread_t t0, t1;
    pthread_create(&t0, NULL, merge_producer, &a0);
    pthread_create(&t1, NULL, merge_producer, &a1);
    pthread_barrier_wait(&bar);
    assert_int_equal(vt_writer_flush(w), 0);
    pthread_barrier_wait(&bar);
    pthread_join(t0, NULL);
    pthread_join(t1, NULL);
    pthread_barrier_destroy(&bar);
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    vt_writer_free(w);
    wt_trace t;
    assert_int_equal(wt_decode_file(path, &t, 0), 0);
    assert_int_equal(t.errors, 0);
    uint64_t expect = 0;
    for (size_t i = 0; i < t.nev; i++) {
        if (t.ev[i].type != VRAMTRACE__RECORD__BODY_ALLOC && t.ev[i].type != VRAMTRACE__RECORD__BODY_FREE)
            continue;
        assert_int_equal(t.ev[i].a, expect);
        assert_int_equal(t.ev[i].time, 1000000 + expect * 10);
        expect++;
    }
    assert_int_equal(expect, 2000);
    wt_trace_free(&t);
    unlink(path);
}

typedef struct {
    vt_writer *w;
    pthread_barrier_t *bar;
    int rc;
} late_arg;

static void *late_exit_thread(void *p)
{
    late_arg *a = p;
    vt_event e;
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_FREE;
    e.u.free.address = 1;
    a->rc = vt_writer_emit(a->w, &e);
    pthread_barrier_wait(a->bar); /* emitted: the main thread frees the writer */
    pthread_barrier_wait(a->bar); /* freed: now exit (the key destructor runs) */
    return NULL;
}

/* The writer is freed while a thread still holds its ring; the thread
 * exits afterwards.  Its destructor must not touch freed memory (ASan). */
static void test_free_before_thread_exit(void **state)
{
    (void)state;
    char path[512];
    wt_tmp_path(path, sizeof(path), "late.vt");
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.path = path;
    vt_writer *w = NULL;
    assert_int_equal(vt_writer_create(&w, &cfg, NULL), 0);
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 2);
    late_arg a = {w, &bar, -1};
    pthread_t th;
    pthread_create(&th, NULL, late_exit_thread, &a);
    pthread_barrier_wait(&bar);
    vt_writer_free(w);
    pthread_barrier_wait(&bar);
    pthread_join(th, NULL);
    pthread_barrier_destroy(&bar);
    assert_int_equal(a.rc, 0);
    wt_trace t;
    assert_int_equal(wt_decode_file(path, &t, 0), 0);
    assert_int_equal(t.errors, 0);
    assert_non_null(t.end);
    assert_int_equal(t.end->events, 1);
    wt_trace_free(&t);
    unlink(path);
}

/* One thread alternating between more writers than it caches rings for:
 * evicted rings are released and claimed again; every event arrives. */
static void test_many_writers_one_thread(void **state)
{
    (void)state;
    enum { NW = 7, PER = 300 };
    char path[NW][512];
    vt_writer *w[NW];
    for (int i = 0; i < NW; i++) {
        char name[32];
        snprintf(name, sizeof(name), "multi%d.vt", i);
        wt_tmp_path(path[i], sizeof(path[i]), name);
        vt_writer_config cfg;
        vt_writer_config_default(&cfg);
        cfg.path = path[i];
        assert_int_equal(vt_writer_create(&w[i], &cfg, NULL), 0);
    }
    for (int k = 0; k < PER; k++) {
        for (int i = 0; i < NW; i++) {
            vt_event e;
            memset(&e, 0, sizeof(e));
            e.type = VT_EV_FREE;
            e.u.free.address = (uint64_t)k;
            assert_int_equal(vt_writer_emit(w[i], &e), 0);
        }
    }
    for (int i = 0; i < NW; i++) {
        vt_writer_stats st;
        vt_writer_get_stats(w[i], &st);
        assert_int_equal(st.emitted, PER);
        assert_int_equal(st.rings, 1); /* the released ring is claimed again */
        vt_writer_free(w[i]);
        wt_trace t;
        assert_int_equal(wt_decode_file(path[i], &t, 0), 0);
        assert_int_equal(t.errors, 0);
        assert_int_equal(t.end->events, PER);
        for (size_t j = 0; j + 1 < t.nev; j++)
            assert_int_equal(t.ev[j].a, j);
        wt_trace_free(&t);
        unlink(path[i]);
    }
}

static void *named_thread(void *p)
{
    vt_writer *w = p;
    pthread_setname_np(pthread_self(), "worker-7");
    vt_event e;
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_FREE;
    e.u.free.address = 77;
    assert_int_equal(vt_writer_emit(w, &e), 0);
    vt_writer_flush(w); /* the writer reads the name while the thread lives */
    return NULL;
}

/* Each OS thread gets a small id and a Thread record named from
 * /proc/self/task/TID/comm before its first event. */
static void test_thread_names(void **state)
{
    (void)state;
    char path[512];
    wt_tmp_path(path, sizeof(path), "names.vt");
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.path = path;
    vt_writer *w = NULL;
    assert_int_equal(vt_writer_create(&w, &cfg, NULL), 0);
    vt_event e;
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_FREE;
    e.u.free.address = 1;
    assert_int_equal(vt_writer_emit(w, &e), 0);
    pthread_t th;
    pthread_create(&th, NULL, named_thread, w);
    pthread_join(th, NULL);
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    vt_writer_free(w);
    wt_trace t;
    assert_int_equal(wt_decode_file(path, &t, 0), 0);
    assert_int_equal(t.errors, 0);
    assert_int_equal(t.nthread, 2);
    int seen = 0;
    for (size_t i = 0; i < t.nev; i++) {
        if (t.ev[i].type != VRAMTRACE__RECORD__BODY_FREE)
            continue;
        const Vramtrace__Thread *th2 = t.thread[t.ev[i].thread];
        if (t.ev[i].a == 77) {
            assert_string_equal(th2->name, "worker-7");
            assert_int_not_equal(th2->tid, (uint32_t)getpid());
        } else {
            assert_int_equal(th2->tid, (uint32_t)getpid());
        }
        seen++;
    }
    assert_int_equal(seen, 2);
    wt_trace_free(&t);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_threads),
        cmocka_unit_test(test_many_threads_all_written),
        cmocka_unit_test(test_tiny_ring_drops),
        cmocka_unit_test(test_ring_reuse),
        cmocka_unit_test(test_merge_by_time),
        cmocka_unit_test(test_free_before_thread_exit),
        cmocka_unit_test(test_many_writers_one_thread),
        cmocka_unit_test(test_thread_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
