/* test_writer_batch.c - the writer's KernelBatch records, decoded
 * independently (wt_decode.c, protobuf-c): runs of kernels become batches
 * of 16..256 (shorter runs Kernel records), the stream order of
 * events and definitions is the emission order, a pending batch goes out
 * at every flush, zstd frame end, close and emergency flush, and every
 * kernel field (time, duration, correlation id, launch, graph id) comes
 * back. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "vt_error.h"
#include "vt_writer.h"
#include "wt_decode.h"

enum { MAXEV = 4096 };

typedef struct {
    vt_event ev[MAXEV];
    size_t n;
} sent;

static vt_writer *open_writer(const char *path, size_t frame_bytes)
{
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.path = path;
    cfg.flush_ms = 60000; /* no periodic flush cutting a batch at a random place */
    cfg.ring_bytes = 4u << 20;
    if (frame_bytes)
        cfg.frame_bytes = frame_bytes;
    vt_writer *w = NULL;
    assert_int_equal(vt_writer_create(&w, &cfg, NULL), 0);
    return w;
}

/* Kernel number k: times that go back now and then (other streams),
 * durations and correlation steps that vary, a graph id every 7th (the
 * launch signature is the name only, so that batch cuts are predictable). */
static void kernel(vt_writer *w, sent *s, uint64_t k, const char *name)
{
    vt_event *e = &s->ev[s->n++];
    memset(e, 0, sizeof(*e));
    e->type = VT_EV_KERNEL;
    e->time_ns = 2000000000ull + k * 5000 - (k % 11 == 3 ? 7000 : 0);
    e->u.kernel = (vt_ev_kernel){.name = name, .device = 0, .stream = 7, .grid = {64, 1, 1}, .block = {128, 1, 1},
                                 .graph_id = k % 7 == 0 ? 100 + k : 0,
                                 .duration_ns = 1000 + (k * 7919) % 3000, .corr = 50 + k * 3 - (k % 5 == 2)};
    assert_int_equal(vt_writer_emit(w, e), 0);
}

static void alloc(vt_writer *w, sent *s, uint64_t k)
{
    vt_event *e = &s->ev[s->n++];
    memset(e, 0, sizeof(*e));
    e->type = VT_EV_ALLOC;
    e->time_ns = 1000000000ull + k * 100;
    e->u.alloc = (vt_ev_alloc){.address = 0x7f0000000000ull + k * 4096, .size = 4096, .corr = 50 + k * 3 + 1};
    assert_int_equal(vt_writer_emit(w, e), 0);
}

/* The decoded events (Kernel and Alloc only) equal what was sent, in order. */
static void check_events(const wt_trace *t, const sent *s, size_t n)
{
    size_t i = 0;
    for (size_t j = 0; j < t->nev; j++) {
        const wt_ev *x = &t->ev[j];
        if (x->type != VRAMTRACE__RECORD__BODY_KERNEL && x->type != VRAMTRACE__RECORD__BODY_ALLOC)
            continue;
        assert_true(i < n);
        const vt_event *e = &s->ev[i];
        assert_int_equal(x->time, e->time_ns);
        if (x->type == VRAMTRACE__RECORD__BODY_KERNEL) {
            assert_int_equal(e->type, VT_EV_KERNEL);
            assert_int_equal(x->corr, e->u.kernel.corr);
            assert_int_equal(x->b, e->u.kernel.duration_ns);
            assert_true(x->a >= 1 && x->a <= t->nlaunch);
            const Vramtrace__Launch *l = t->launch[x->a];
            assert_string_equal(t->str[l->name], e->u.kernel.name);
            assert_int_equal(l->graph, e->u.kernel.graph != 0);
            if (x->rec)
                assert_int_equal(x->rec->kernel->graph_id, e->u.kernel.graph_id);
            assert_true(x->batch <= 256);
        } else {
            assert_int_equal(e->type, VT_EV_ALLOC);
            assert_int_equal(x->corr, e->u.alloc.corr);
            assert_int_equal(x->a, e->u.alloc.address);
        }
        i++;
    }
    assert_int_equal(i, n);
}

static void test_runs(void **state)
{
    (void)state;
    char path[512];
    wt_tmp_path(path, sizeof(path), "runs.vt");
    vt_writer *w = open_writer(path, 0);
    static sent s;
    s.n = 0;
    uint64_t k = 0, a = 0;
    kernel(w, &s, k++, "k_a"); /* runs of 1, 2, 15: Kernel records */
    alloc(w, &s, a++);
    for (int i = 0; i < 2; i++)
        kernel(w, &s, k++, "k_a");
    alloc(w, &s, a++);
    for (int i = 0; i < 15; i++)
        kernel(w, &s, k++, "k_a");
    alloc(w, &s, a++);
    for (int i = 0; i < 16; i++) /* the shortest batch */
        kernel(w, &s, k++, "k_a");
    alloc(w, &s, a++);
    for (int i = 0; i < 600; i++) /* 600 with a new launch after 300: 256 + 44 | 256 + 44 */
        kernel(w, &s, k++, i < 300 ? "k_a" : "k_b");
    alloc(w, &s, a++);
    for (int i = 0; i < 512; i++) /* exactly two full batches */
        kernel(w, &s, k++, i % 2 ? "k_a" : "k_b");
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    vt_writer_free(w);

    wt_trace t;
    assert_int_equal(wt_decode_file(path, &t, 1), 0);
    if (t.errors)
        fail_msg("%s", t.first_error);
    assert_false(t.truncated);
    check_events(&t, &s, s.n);
    /* batch sizes in order, one entry per record */
    uint32_t sizes[64];
    size_t ns = 0;
    for (size_t j = 0; j < t.nev; j++) {
        const wt_ev *x = &t.ev[j];
        if (x->type != VRAMTRACE__RECORD__BODY_KERNEL)
            continue;
        assert_true(ns < 64);
        sizes[ns++] = x->batch;
        j += x->batch ? x->batch - 1 : 0;
    }
    const uint32_t want[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 1 + 2 + 15 */
                             16, 256, 44, 256, 44, 256, 256};
    assert_int_equal(ns, sizeof(want) / sizeof(want[0]));
    assert_memory_equal(sizes, want, sizeof(want));
    assert_int_equal(t.nbatches, 7);
    assert_int_equal(t.nblocks, 7); /* the writer writes KernelBlock, not KernelBatch */
    assert_int_equal(t.nbatched, s.n - 5 - 18); /* 5 allocs, 18 single kernels */
    assert_non_null(t.end);
    assert_int_equal(t.end->events, s.n);
    wt_trace_free(&t);
    unlink(path);
}

/* A flush writes the pending batch; so does a zstd frame end (small
 * frames); kernels between Syncs keep their absolute values. */
static void test_flush_and_frames(void **state)
{
    (void)state;
    char path[512];
    wt_tmp_path(path, sizeof(path), "flush.vt");
    vt_writer *w = open_writer(path, 1024);
    static sent s;
    s.n = 0;
    uint64_t k = 0;
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 37 + round * 11; i++)
            kernel(w, &s, k++, round % 3 ? "k_x" : "k_y");
        alloc(w, &s, (uint64_t)round);
        for (int i = 0; i < 5; i++)
            kernel(w, &s, k++, "k_x");
        assert_int_equal(vt_writer_flush(w), 0);
        /* the file holds everything emitted so far, the last kernels included */
        wt_trace t;
        assert_int_equal(wt_decode_file(path, &t, 0), 0);
        if (t.errors)
            fail_msg("%s", t.first_error);
        assert_true(t.truncated); /* the frame is still open */
        check_events(&t, &s, s.n);
        wt_trace_free(&t);
    }
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    vt_writer_free(w);
    wt_trace t;
    assert_int_equal(wt_decode_file(path, &t, 1), 0);
    if (t.errors)
        fail_msg("%s", t.first_error);
    assert_true(t.nzframes > 10);
    assert_int_equal(t.nsync, t.nzframes);
    assert_true(t.nbatches >= 19); /* the 20 long runs (the first one cut by a definition) */
    check_events(&t, &s, s.n);
    assert_int_equal(t.end->events, s.n);
    wt_trace_free(&t);
    unlink(path);
}

/* Kernels pending in the batch when a fatal signal's emergency flush runs
 * are written before End{SIGNAL}. */
static void test_emergency_flush(void **state)
{
    (void)state;
    char path[512];
    wt_tmp_path(path, sizeof(path), "emerg.vt");
    vt_writer *w = open_writer(path, 0);
    static sent s;
    s.n = 0;
    for (uint64_t k = 0; k < 100; k++)
        kernel(w, &s, k, "k_e");
    assert_int_equal(vt_writer_drain(w), 0); /* encoded: pending in the batch, not flushed */
    for (uint64_t k = 100; k < 130; k++)
        kernel(w, &s, k, "k_e"); /* and some still in the ring */
    vt_writer_emergency_flush(w, SIGSEGV);
    assert_true(vt_writer_disabled(w));
    vt_writer_free(w);
    wt_trace t;
    assert_int_equal(wt_decode_file(path, &t, 1), 0);
    if (t.errors)
        fail_msg("%s", t.first_error);
    assert_false(t.truncated);
    check_events(&t, &s, s.n);
    assert_non_null(t.end);
    assert_int_equal(t.end->reason, VRAMTRACE__END_REASON__END_SIGNAL);
    assert_int_equal(t.end->signal, SIGSEGV);
    assert_int_equal(t.end->events, 130);
    assert_true(t.nbatches >= 1);
    wt_trace_free(&t);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs),
        cmocka_unit_test(test_flush_and_frames),
        cmocka_unit_test(test_emergency_flush),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
