/* test_analyze.c - unit tests of src/analyze: events are fed directly to
 * the replay (as the reader would return them) and the state is checked
 * through the private header; symbolization is checked on this very
 * binary (C, inlined C, and a C++ template method). */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "vt_analyze.h"
#include "vt_analyze_int.h"
#include "vt_error.h"
#include "vt_page_pack.h"

#include <zlib.h>

#define MS 1000000ull
#define T0 1000000000ull

/* ------------------------------------------------------------ feeding */

static vt_analysis *new_analysis(vt_at_mode mode, uint64_t at_ns, const char *marker, int kernels)
{
    vt_analysis_config cfg;
    vt_analysis_config_default(&cfg);
    cfg.at_mode = mode;
    cfg.at_ns = at_ns;
    cfg.at_marker = marker;
    cfg.symbolize = 0;
    vt_analysis *a;
    assert_int_equal(vt_analysis_create(&a, &cfg), 0);
    assert_int_equal(vt_analysis_begin_process(a, "unit"), 0);
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_HEADER;
    ev.u.header.program = "unit";
    ev.u.header.kernels = kernels;
    assert_int_equal(vt_analysis_feed(a, &ev), 0);
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_SYNC;
    ev.u.sync.time_ns = T0;
    ev.u.sync.device_time_ns = T0;
    assert_int_equal(vt_analysis_feed(a, &ev), 0);
    return a;
}

static void feed(vt_analysis *a, vt_event *ev)
{
    assert_int_equal(vt_analysis_feed(a, ev), 0);
}

/* python stack `id` with one frame fn (string ids 2*id, 2*id+1; frame id = id) */
static void def_stack(vt_analysis *a, uint32_t id, const char *fn, uint32_t line)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_STRING;
    ev.u.string.id = 2 * id;
    ev.u.string.value = "/home/u/train.py";
    ev.u.string.len = strlen(ev.u.string.value);
    feed(a, &ev);
    ev.u.string.id = 2 * id + 1;
    ev.u.string.value = fn;
    ev.u.string.len = strlen(fn);
    feed(a, &ev);
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_FRAME;
    ev.u.frame.id = id;
    ev.u.frame.kind = VT_FRAME_PYTHON;
    ev.u.frame.file = 2 * id;
    ev.u.frame.function = 2 * id + 1;
    ev.u.frame.line = line;
    feed(a, &ev);
    uint32_t fr[1] = {id};
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_STACK;
    ev.u.stack.id = id;
    ev.u.stack.frames = fr;
    ev.u.stack.nframes = 1;
    feed(a, &ev);
}

static void alloc(vt_analysis *a, uint64_t t, uint64_t addr, uint64_t size, uint32_t stack)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_ALLOC;
    ev.time_ns = T0 + t;
    ev.u.alloc.address = addr;
    ev.u.alloc.size = size;
    ev.u.alloc.kind = VT_MEM_DEVICE;
    ev.u.alloc.api = VT_API_MALLOC;
    ev.u.alloc.site.stack = stack;
    feed(a, &ev);
}

static void dofree(vt_analysis *a, uint64_t t, uint64_t addr)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_FREE;
    ev.time_ns = T0 + t;
    ev.u.free.address = addr;
    feed(a, &ev);
}

static void kernel(vt_analysis *a, uint64_t t, uint64_t dur, uint32_t launch)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_KERNEL;
    ev.time_ns = T0 + t;
    ev.u.kernel.duration_ns = dur;
    ev.u.kernel.launch_id = launch;
    feed(a, &ev);
}

static void nvtx(vt_analysis *a, uint64_t t, vt_nvtxop op, const char *msg)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_NVTX;
    ev.time_ns = T0 + t;
    ev.u.nvtx.op = op;
    ev.u.nvtx.message = msg;
    feed(a, &ev);
}

static void nvtx_thr(vt_analysis *a, uint64_t t, vt_nvtxop op, const char *msg, uint32_t thread)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_NVTX;
    ev.time_ns = T0 + t;
    ev.u.nvtx.op = op;
    ev.u.nvtx.message = msg;
    ev.u.nvtx.site.thread = thread;
    feed(a, &ev);
}

static vt_unit *unit_of(vt_analysis *a, uint32_t stack)
{
    vt_proc *p = a->procs[0];
    for (size_t i = 0; i < p->nunits; i++)
        if (p->units[i].stack == stack)
            return &p->units[i];
    fail_msg("no unit for stack %u", stack);
    return NULL;
}

/* ------------------------------------------------------------ tests */

static void test_parse(void **state)
{
    (void)state;
    uint64_t v;
    assert_int_equal(vt_parse_bytes("100", &v), 0);
    assert_int_equal(v, 100);
    assert_int_equal(vt_parse_bytes("1G", &v), 0);
    assert_int_equal(v, 1ull << 30);
    assert_int_equal(vt_parse_bytes("512MiB", &v), 0);
    assert_int_equal(v, 512ull << 20);
    assert_int_equal(vt_parse_bytes("1.5k", &v), 0);
    assert_int_equal(v, 1536);
    assert_int_equal(vt_parse_bytes("lots", &v), VT_ERR_INVALID);
    assert_int_equal(vt_parse_bytes("-1", &v), VT_ERR_INVALID);
    assert_int_equal(vt_parse_bytes("1X", &v), VT_ERR_INVALID);
    assert_int_equal(vt_parse_duration("1.5s", &v), 0);
    assert_int_equal(v, 1500000000ull);
    assert_int_equal(vt_parse_duration("250ms", &v), 0);
    assert_int_equal(v, 250000000ull);
    assert_int_equal(vt_parse_duration("3", &v), 0);
    assert_int_equal(v, 3000000000ull);
    assert_int_equal(vt_parse_duration("step", &v), VT_ERR_INVALID);
    /* names, not numbers: --at takes them for marks */
    assert_int_equal(vt_parse_duration("inf", &v), VT_ERR_INVALID);
    assert_int_equal(vt_parse_duration("nan", &v), VT_ERR_INVALID);
    assert_int_equal(vt_parse_duration("", &v), VT_ERR_INVALID);
    /* numbers that are no time: said so, never a time of 0 */
    v = 7;
    assert_int_equal(vt_parse_duration("1e19", &v), VT_ERR_RANGE); /* past 2^64 ns: it wrapped to 0 */
    assert_int_equal(vt_parse_duration("1e300s", &v), VT_ERR_RANGE);
    assert_int_equal(vt_parse_duration("-1s", &v), VT_ERR_RANGE);
    assert_int_equal(vt_parse_duration("0x10", &v), VT_ERR_RANGE); /* hex was 16 s */
    assert_int_equal(vt_parse_duration("1h", &v), VT_ERR_RANGE);
    assert_int_equal(vt_parse_duration("6.5 s", &v), VT_ERR_RANGE);
    assert_int_equal(v, 7);
    assert_int_equal(vt_parse_duration("1e9s", &v), 0); /* 31 years: in range */
    assert_int_equal(v, 1000000000000000000ull);
    assert_int_equal(vt_parse_duration("1e3ms", &v), 0);
    assert_int_equal(v, 1000000000ull);
    assert_int_equal(vt_parse_duration(".5", &v), 0);
    assert_int_equal(v, 500000000ull);
}

static void test_map_random(void **state)
{
    (void)state;
    enum { N = 20000 };
    static uint64_t ref[N];
    vt_map m = {0};
    srand(7);
    for (int i = 0; i < 200000; i++) {
        int k = rand() % N;
        int op = rand() % 3;
        if (op == 0) {
            assert_int_equal(vt_map_put(&m, (uint64_t)k + 1, (uint64_t)i + 1), 0);
            ref[k] = (uint64_t)i + 1;
        } else if (op == 1) {
            uint64_t v = 0;
            int removed = vt_map_del(&m, (uint64_t)k + 1, &v);
            assert_int_equal(removed, ref[k] != 0);
            if (removed)
                assert_int_equal(v, ref[k]);
            ref[k] = 0;
        } else {
            uint64_t *v = vt_map_get(&m, (uint64_t)k + 1);
            if (ref[k])
                assert_true(v && *v == ref[k]);
            else
                assert_null(v);
        }
    }
    size_t n = 0;
    for (int k = 0; k < N; k++)
        n += ref[k] != 0;
    assert_int_equal(m.len, n);
    vt_map_free(&m);
}

/* the live blocks of the young table: its freed ones (unit VT_DEAD, which
 * is UINT32_MAX in vt_replay.c) keep their slots and are counted only when
 * the replay needs them, not kept */
static size_t young_live(const vt_blockmap *b)
{
    size_t n = 0;
    for (size_t i = 0; i < b->cap; i++)
        n += b->slots[i].addr && b->slots[i].unit != UINT32_MAX;
    return n;
}

/* random allocs/frees over a recycled address set vs a reference; the
 * live set (~30 k) exceeds the young table, so blocks move to the old one */
static void test_blocks_random(void **state)
{
    (void)state;
    enum { NA = 60000 };
    static uint64_t size[NA];
    vt_analysis *a = new_analysis(VT_AT_END, 0, NULL, 0);
    def_stack(a, 1, "f", 1);
    srand(11);
    uint64_t live = 0, t = 1;
    for (int i = 0; i < 400000; i++, t++) {
        int k = rand() % NA;
        uint64_t addr = 0x100000 + (uint64_t)k * 512;
        if (size[k]) {
            dofree(a, t, addr);
            live -= size[k];
            size[k] = 0;
        } else {
            size[k] = 1 + (uint64_t)(rand() % 100000);
            alloc(a, t, addr, size[k], 1);
            live += size[k];
        }
    }
    vt_proc *p = a->procs[0];
    assert_true(p->old.used > 0);
    assert_int_equal(p->unknown_frees + p->double_frees + p->overlap_allocs, 0);
    assert_int_equal(young_live(&p->blocks) + p->old.used, (size_t)vt_unit_live_count(unit_of(a, 1)));
    /* an allocation over a live block (its free lost), wherever it lives */
    int n_over = 0;
    for (int k = 0; k < NA && n_over < 50; k++)
        if (size[k]) {
            uint64_t addr = 0x100000 + (uint64_t)k * 512;
            alloc(a, t++, addr, 7, 1);
            live = live - size[k] + 7;
            size[k] = 7;
            n_over++;
        }
    assert_int_equal(p->overlap_allocs, 50);
    /* double frees are found wherever the block lived */
    int n_double = 0;
    for (int k = NA - 1; k >= 0 && n_double < 20; k--)
        if (size[k]) {
            uint64_t addr = 0x100000 + (uint64_t)k * 512;
            dofree(a, t++, addr);
            dofree(a, t++, addr);
            live -= size[k];
            size[k] = 0;
            n_double++;
        }
    assert_int_equal(p->double_frees, 20);
    assert_int_equal(vt_analysis_finish(a), 0);
    assert_int_equal(vt_analysis_leaked_bytes(a), live);
    assert_int_equal(p->dev[0].live[VT_MEM_DEVICE], (int64_t)live);
    assert_int_equal(unit_of(a, 1)->never_bytes, (int64_t)live);
    vt_analysis_free(a);
}

/* freed young blocks leave their address behind until the young table is
 * rebuilt or migrates: a new block there, a double free of it, and the
 * same address once its block has moved to the old table */
static void test_blocks_freed_young(void **state)
{
    (void)state;
    vt_analysis *a = new_analysis(VT_AT_END, 0, NULL, 0);
    def_stack(a, 1, "f", 1);
    vt_proc *p = a->procs[0];
    uint64_t t = 1;
    const uint64_t A = 0x7000000;
    alloc(a, t++, A, 10, 1);
    dofree(a, t++, A);
    alloc(a, t++, A, 20, 1);   /* where a freed block was: no overlap */
    dofree(a, t++, A);
    dofree(a, t++, A);         /* double free */
    assert_int_equal(p->double_frees, 1);
    assert_int_equal(p->overlap_allocs, 0);
    /* many short-lived blocks at new addresses: the dead ones are dropped
     * by rebuilding the table, which stays small */
    for (uint64_t i = 0; i < 200000; i++) {
        alloc(a, t++, 0x10000000 + i * 256, 1, 1);
        dofree(a, t++, 0x10000000 + i * 256);
    }
    assert_int_equal(young_live(&p->blocks), 0);
    assert_true(p->blocks.cap <= 4096);
    alloc(a, t++, A, 30, 1);
    /* 40 k long-lived blocks: A moves to the old table */
    for (uint64_t i = 0; i < 40000; i++)
        alloc(a, t++, 0x20000000 + i * 256, 2, 1);
    assert_true(p->old.used > 0);
    dofree(a, t++, A);         /* from the old table */
    dofree(a, t++, A);         /* double free */
    alloc(a, t++, A, 40, 1);
    alloc(a, t++, A, 50, 1);   /* over a live block */
    assert_int_equal(p->double_frees, 2);
    assert_int_equal(p->unknown_frees, 0);
    assert_int_equal(p->overlap_allocs, 1);
    assert_int_equal(young_live(&p->blocks) + p->old.used, 40001);
    assert_int_equal(vt_analysis_finish(a), 0);
    assert_int_equal(unit_of(a, 1)->live_bytes, 40000 * 2 + 50);
    assert_int_equal(unit_of(a, 1)->never_bytes, 40000 * 2 + 50);
    vt_analysis_free(a);
}

static void test_leak_oddities(void **state)
{
    (void)state;
    vt_analysis *a = new_analysis(VT_AT_AUTO, 0, NULL, 1);
    def_stack(a, 1, "weights", 10);
    def_stack(a, 2, "buffer", 20);
    alloc(a, 1 * MS, 0x1000, 100, 1);
    alloc(a, 2 * MS, 0x2000, 200, 1);
    alloc(a, 3 * MS, 0x3000, 50, 2);
    dofree(a, 4 * MS, 0x1000);
    dofree(a, 5 * MS, 0x1000);   /* double free */
    dofree(a, 6 * MS, 0x9990);   /* unknown */
    alloc(a, 7 * MS, 0x2000, 300, 2); /* over a live block */
    kernel(a, 50 * MS, 10 * MS, 1);   /* T = 60 ms */
    dofree(a, 70 * MS, 0x3000);       /* teardown: still live at T */
    alloc(a, 80 * MS, 0x4000, 1000, 1); /* after T, never freed: a leak all the same */
    assert_int_equal(vt_analysis_finish(a), 0);
    vt_proc *p = a->procs[0];
    assert_int_equal(p->double_frees, 1);
    assert_int_equal(p->unknown_frees, 1);
    assert_int_equal(p->overlap_allocs, 1);
    assert_int_equal(p->view_t, T0 + 60 * MS);
    /* 100 freed, 200 dropped by the overlap; the 1000 allocated after T
     * and never released count with the view's leaks, said apart */
    assert_int_equal(unit_of(a, 1)->at_bytes, 1000);
    assert_int_equal(unit_of(a, 1)->late_bytes, 1000);
    assert_int_equal(unit_of(a, 1)->late_count, 1);
    assert_int_equal(unit_of(a, 2)->at_bytes, 350); /* 50 (freed after T) + 300 */
    assert_int_equal(unit_of(a, 2)->at_count, 2);
    assert_int_equal(unit_of(a, 2)->never_bytes, 300);
    assert_int_equal(vt_analysis_leaked_bytes(a), 1300); /* never freed; the 50 freed at teardown apart */
    assert_int_equal(p->teardown_bytes, 50);
    assert_int_equal(unit_of(a, 1)->live_bytes, 1000);
    vt_analysis_free(a);
}

/* kernel records come one activity buffer late: the view must still use
 * the last kernel's end although the frees around it came first */
static void test_view_late_kernels(void **state)
{
    (void)state;
    vt_analysis *a = new_analysis(VT_AT_AUTO, 0, NULL, 1);
    def_stack(a, 1, "x", 1);
    def_stack(a, 2, "y", 2);
    alloc(a, 10 * MS, 0xa000, 10, 1);
    alloc(a, 20 * MS, 0xb000, 20, 2);
    dofree(a, 30 * MS, 0xa000);
    dofree(a, 100 * MS, 0xb000);
    kernel(a, 25 * MS, 15 * MS, 1); /* ends at 40 ms, arrives last */
    assert_int_equal(vt_analysis_finish(a), 0);
    assert_int_equal(unit_of(a, 1)->at_bytes, 0);
    assert_int_equal(unit_of(a, 2)->at_bytes, 20);
    assert_int_equal(unit_of(a, 2)->never_bytes, 0);
    vt_analysis_free(a);
}

/* the tail of pending view events stays small when kernels keep coming */
static void test_tail_bounded(void **state)
{
    (void)state;
    vt_analysis *a = new_analysis(VT_AT_AUTO, 0, NULL, 1);
    def_stack(a, 1, "x", 1);
    uint64_t t = 1000;
    for (int i = 0; i < 300000; i++) {
        alloc(a, t, 0x10000 + (uint64_t)(i % 64) * 4096, 100, 1);
        dofree(a, t + 10, 0x10000 + (uint64_t)(i % 64) * 4096);
        if (i % 16 == 15)
            kernel(a, t - 50000, 500, 1 + (uint32_t)(i % 5)); /* ends a little before the host time */
        t += 1000;
    }
    vt_proc *p = a->procs[0];
    assert_true(p->captail <= 8192);
    assert_false(p->tail_overflow);
    assert_int_equal(vt_analysis_finish(a), 0);
    assert_int_equal(vt_analysis_leaked_bytes(a), 0);
    vt_analysis_free(a);
}

/* list growth is flagged, a bounded cache and a big temporary are not */
static void growth_run(vt_analysis *a, int with_nvtx)
{
    def_stack(a, 1, "keep_outputs", 64);
    def_stack(a, 2, "cache", 77);
    def_stack(a, 3, "temp", 91);
    for (int k = 0; k < 60; k++) {
        uint64_t t = 10 * MS + (uint64_t)k * 10 * MS;
        if (with_nvtx)
            nvtx(a, t, VT_NVTX_PUSH, k % 2 ? "step 1" : "step 2");
        alloc(a, t + 1 * MS, 0x100000000ull, 1ull << 30, 3);
        kernel(a, t + 2 * MS, MS, 1);
        kernel(a, t + 3 * MS, MS, 2);
        dofree(a, t + 6 * MS, 0x100000000ull);
        alloc(a, t + 7 * MS, 0x200000000ull + (uint64_t)k * 0x100000ull, 1 << 20, 1);
        alloc(a, t + 7 * MS + 100, 0x300000000ull + (uint64_t)k * 0x400000ull, 4 << 20, 2);
        if (k >= 10)
            dofree(a, t + 7 * MS + 200, 0x300000000ull + (uint64_t)(k - 10) * 0x400000ull);
        kernel(a, t + 8 * MS, MS / 2, 3);
        if (with_nvtx)
            nvtx(a, t + 9 * MS, VT_NVTX_POP, NULL);
    }
    for (int k = 0; k < 60; k++) /* teardown frees everything */
        dofree(a, 900 * MS + (uint64_t)k, 0x200000000ull + (uint64_t)k * 0x100000ull);
    assert_int_equal(vt_analysis_finish(a), 0);
}

static void test_growth_classes(void **state)
{
    (void)state;
    for (int nv = 0; nv < 2; nv++) {
        vt_analysis *a = new_analysis(VT_AT_AUTO, 0, NULL, 1);
        growth_run(a, nv);
        vt_proc *p = a->procs[0];
        vt_unit *list = unit_of(a, 1), *cache = unit_of(a, 2), *temp = unit_of(a, 3);
        assert_true(list->growth_flag);
        assert_false(cache->growth_flag);
        assert_false(temp->growth_flag);
        assert_int_equal(p->ngrowth, 1);
        /* 1 MiB per 10 ms step: ~100 MiB/s, ~1 MiB/step */
        assert_true(list->growth_rate > 80.0 * (1 << 20) && list->growth_rate < 120.0 * (1 << 20));
        assert_int_equal(p->steps, 60);
        assert_true(p->step_period_ns > 9.9 * MS && p->step_period_ns < 10.1 * MS);
        assert_string_equal(p->step_source, nv ? "nvtx:step" : "kernels:3");
        assert_true(list->growth_conf > 0.9);
        assert_true(list->grown >= 55ull << 20);
        assert_int_equal(vt_analysis_grown_bytes(a), list->grown);
        vt_analysis_free(a);
    }
}

/* a list cleared every 10 steps (gradient accumulation) is a sawtooth,
 * not growth; a slow leak of 64 KiB every 4th step still is growth */
static void test_growth_sawtooth_slow(void **state)
{
    (void)state;
    vt_analysis *a = new_analysis(VT_AT_AUTO, 0, NULL, 1);
    def_stack(a, 1, "accumulate", 5);
    def_stack(a, 2, "slow_leak", 6);
    uint64_t nacc = 0;
    for (int k = 0; k < 200; k++) {
        uint64_t t = 10 * MS + (uint64_t)k * 10 * MS;
        alloc(a, t + 1 * MS, 0x100000000ull + (uint64_t)(k % 10) * 0x1000000ull, 8 << 20, 1);
        nacc++;
        if (k % 10 == 9) {
            for (int j = 0; j < 10; j++)
                dofree(a, t + 2 * MS + (uint64_t)j, 0x100000000ull + (uint64_t)j * 0x1000000ull);
            nacc = 0;
        }
        if (k % 4 == 0)
            alloc(a, t + 3 * MS, 0x900000000ull + (uint64_t)k * 0x10000ull, 64 << 10, 2);
        kernel(a, t + 4 * MS, MS, 1);
    }
    (void)nacc;
    assert_int_equal(vt_analysis_finish(a), 0);
    assert_false(unit_of(a, 1)->growth_flag);
    assert_true(unit_of(a, 2)->growth_flag);
    vt_analysis_free(a);
}

/* ---- growth by construction: a generated matrix of loops (issue 33) ----
 * Each loop has a per-step temporary of varying size, a bounded cache
 * (maxlen 4: a cache is told from a leak once it is full before the last
 * half of the steps), weights held since the start and, in leaky cells, a site
 * that keeps `leak` bytes a step: one block a step, or (graph) four blocks
 * a step of which three die within the step, as saved activations of a
 * kept autograd graph do.  After the loop 2 s of other kernels run (an
 * evaluation); the kept blocks are freed right after the loop (release 1)
 * or at teardown, 3 s later (release 0). */
typedef struct {
    uint64_t step_ns;
    uint32_t steps;
    uint64_t leak;
    int release, nvtx, graph; /* nvtx 2: no NVTX and no kernels (no steps at all) */
    uint32_t seed; /* 0: steps of equal length; else 0.5x-1.5x, from this seed */
    const char *steps_name;
} loop_cfg;

static uint32_t lcg(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static vt_analysis *synth_loop(const loop_cfg *c)
{
    vt_analysis_config cfg;
    vt_analysis_config_default(&cfg);
    cfg.symbolize = 0;
    cfg.steps_name = c->steps_name;
    vt_analysis *a;
    assert_int_equal(vt_analysis_create(&a, &cfg), 0);
    assert_int_equal(vt_analysis_begin_process(a, "loop"), 0);
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_HEADER;
    ev.u.header.program = "loop";
    ev.u.header.kernels = 1;
    feed(a, &ev);
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_SYNC;
    ev.u.sync.time_ns = T0;
    ev.u.sync.device_time_ns = T0;
    feed(a, &ev);
    def_stack(a, 1, "keep", 10);
    def_stack(a, 2, "temp", 11);
    def_stack(a, 3, "cache", 12);
    def_stack(a, 4, "weights", 13);
    alloc(a, 1 * MS, 0x10000000ull, 64 << 20, 4);
    for (int i = 0; i < 10; i++) { /* a compiler's passes before the loop: no allocations */
        nvtx(a, 2 * MS + (uint64_t)i * 100, VT_NVTX_PUSH, "XlaPassPipeline:#name=fusion");
        nvtx(a, 2 * MS + (uint64_t)i * 100 + 50, VT_NVTX_POP, NULL);
    }
    const uint64_t keep = 0x100000000000ull, cache = 0x200000000000ull, tmp = 0x300000000000ull;
    uint32_t rng = c->seed;
    uint64_t t = 100 * MS;
    for (uint32_t k = 0; k < c->steps; k++) {
        uint64_t d = c->step_ns;
        if (c->seed)
            d = c->step_ns / 2 + (uint64_t)lcg(&rng) % c->step_ns;
        if (c->nvtx == 1) {
            nvtx(a, t, VT_NVTX_PUSH, "step");
            nvtx(a, t + d / 100, VT_NVTX_PUSH, ""); /* an unnamed range inside each step */
            nvtx(a, t + d / 50, VT_NVTX_POP, NULL);
        }
        alloc(a, t + d / 10, tmp, (1 + k % 3) << 20, 2);
        for (uint32_t j = 0; j < 3 && c->nvtx < 2; j++)
            kernel(a, t + d * (2 + 2 * j) / 10, d / 20, 1 + j);
        if (c->leak && c->graph) {
            for (uint64_t j = 0; j < 4; j++)
                alloc(a, t + d * 3 / 10 + j, keep + ((uint64_t)k * 4 + j) * 0x10000000ull, c->leak, 1);
            for (uint64_t j = 1; j < 4; j++)
                dofree(a, t + d * 9 / 10 + j, keep + ((uint64_t)k * 4 + j) * 0x10000000ull);
        } else if (c->leak) {
            alloc(a, t + d * 8 / 10, keep + (uint64_t)k * 4 * 0x10000000ull, c->leak, 1);
        }
        dofree(a, t + d / 2, tmp);
        alloc(a, t + d * 7 / 10, cache + (uint64_t)k * 0x100000ull, 256 << 10, 3);
        if (k >= 4)
            dofree(a, t + d * 7 / 10 + 1, cache + (uint64_t)(k - 4) * 0x100000ull);
        if (c->nvtx == 1)
            nvtx(a, t + d * 95 / 100, VT_NVTX_POP, NULL);
        t += d;
    }
    uint64_t rel = c->release ? t + MS : t + 3000 * MS;
    for (uint32_t i = 0; i < 200 && c->nvtx < 2; i++) /* evaluation after the loop */
        kernel(a, t + 2 * MS + (uint64_t)i * 10 * MS, MS, 9);
    for (uint32_t k = 0; c->leak && k < c->steps; k++)
        dofree(a, rel + k, keep + (uint64_t)k * 4 * 0x10000000ull);
    for (uint32_t k = c->steps > 4 ? c->steps - 4 : 0; k < c->steps; k++)
        dofree(a, t + 3000 * MS + 10000 + k, cache + (uint64_t)k * 0x100000ull);
    assert_int_equal(vt_analysis_finish(a), 0);
    return a;
}

static void test_growth_matrix(void **state)
{
    (void)state;
    static const uint64_t step_ns[] = {100000, 1 * MS, 10 * MS, 10000 * MS};
    static const uint32_t steps[] = {8, 32, 300, 3000};
    static const uint64_t leaks[] = {0, 512, 64 << 10, 16 << 20};
    unsigned cells = 0;
    for (unsigned si = 0; si < 4; si++)
        for (unsigned ni = 0; ni < 4; ni++)
            for (unsigned li = 0; li < 4; li++)
                for (int rel = 0; rel < 2; rel++)
                    for (int nv = 0; nv < 3; nv++) {
                        loop_cfg c = {step_ns[si], steps[ni], leaks[li], rel, nv, (int)((si + ni + li) & 1), 0, NULL};
                        vt_analysis *a = synth_loop(&c);
                        vt_proc *p = a->procs[0];
                        char what[160];
                        snprintf(what, sizeof(what), "step %llu ns, %u steps, leak %llu, release %d, nvtx %d, graph %d",
                                 (unsigned long long)c.step_ns, c.steps, (unsigned long long)c.leak, rel, nv,
                                 c.graph);
                        /* the steps: the NVTX range "step" (not the compiler's passes, not
                         * the unnamed range), else the kernel period; both count the loop */
                        uint64_t want = nv < 2 ? c.steps : 0;
                        if (p->steps != want || p->kernel_steps != want)
                            fail_msg("%s: steps %llu, kernel steps %llu", what, (unsigned long long)p->steps,
                                     (unsigned long long)p->kernel_steps);
                        if (nv < 2)
                            assert_string_equal(p->step_source, nv ? "nvtx:step" : "kernels:3");
                        /* without steps a rise must last 16 ms to be told from a burst */
                        int sure = nv < 2 || c.step_ns * c.steps >= 20 * MS;
                        vt_unit *keep = c.leak && sure ? unit_of(a, 1) : NULL;
                        if (!c.leak && p->ngrowth)
                            fail_msg("%s: a clean loop flagged (%zu sites, stack %u)", what, p->ngrowth,
                                     p->units[p->growth_order[0]].stack);
                        if (keep && (!keep->growth_flag || p->ngrowth != 1))
                            fail_msg("%s: the kept site not flagged alone (flag %d, %zu sites, %u samples, "
                                     "conf %.2f)",
                                     what, keep->growth_flag, p->ngrowth, keep->growth_samples, keep->growth_conf);
                        if (keep && keep->grown < c.leak * c.steps / 2)
                            fail_msg("%s: grown %llu", what, (unsigned long long)keep->grown);
                        if (keep && nv < 2 && (keep->growth_per_step < 0.9 * (double)c.leak ||
                                       keep->growth_per_step > 1.1 * (double)c.leak))
                            fail_msg("%s: %.0f per step", what, keep->growth_per_step);
                        vt_analysis_free(a);
                        cells++;
                    }
    assert_int_equal(cells, 384);
}

/* steps of uneven length (a DataLoader's), 32 of them, a graph kept each
 * step: the same answer for every jitter */
static void test_growth_jitter(void **state)
{
    (void)state;
    for (uint32_t seed = 1; seed <= 20; seed++)
        for (int nv = 0; nv < 2; nv++) {
            loop_cfg c = {20 * MS, 32, 512 << 10, 0, nv, 1, seed, NULL};
            vt_analysis *a = synth_loop(&c);
            if (!unit_of(a, 1)->growth_flag || a->procs[0]->ngrowth != 1)
                fail_msg("seed %u nvtx %d: not flagged alone", seed, nv);
            vt_analysis_free(a);
        }
}

/* --steps NAME picks the range; a name no range has leaves the steps
 * unknown and growth is found over the whole run */
static void test_steps_named(void **state)
{
    (void)state;
    loop_cfg c = {1 * MS, 40, 1 << 20, 0, 1, 0, 0, "step 7"};
    vt_analysis *a = synth_loop(&c);
    assert_string_equal(a->procs[0]->step_source, "nvtx:step");
    assert_true(unit_of(a, 1)->growth_flag);
    vt_analysis_free(a);
    c.steps_name = "eval";
    c.nvtx = 2; /* no kernels either: growth over the whole run */
    c.step_ns = 2 * MS;
    a = synth_loop(&c);
    assert_int_equal(a->procs[0]->steps, 0);
    assert_true(a->procs[0]->steps_missing);
    assert_true(unit_of(a, 1)->growth_flag);
    assert_int_equal(a->procs[0]->ngrowth, 1);
    vt_analysis_free(a);
}

/* steps from kernels despite a warm-up with extra kernels */
static void test_steps_kernels_warmup(void **state)
{
    (void)state;
    vt_analysis *a = new_analysis(VT_AT_AUTO, 0, NULL, 1);
    for (int k = 0; k < 30; k++) {
        uint64_t t = (uint64_t)k * 5 * MS;
        if (k < 2)
            for (uint32_t w = 0; w < 7; w++)
                kernel(a, t + 100 + w, 10, 100 + w); /* autotuning, once */
        for (uint32_t j = 0; j < 6; j++)
            kernel(a, t + 1000 + j * 1000, 500, 1 + j);
        kernel(a, t + 9000, 500, 1); /* launch 1 twice per step */
    }
    assert_int_equal(vt_analysis_finish(a), 0);
    vt_proc *p = a->procs[0];
    assert_int_equal(p->steps, 30);
    assert_true(p->step_period_ns > 4.9 * MS && p->step_period_ns < 5.1 * MS);
    vt_analysis_free(a);
}

/* the live set at the peak, per site, with lazy snapshots */
static void test_peak_sets(void **state)
{
    (void)state;
    vt_analysis *a = new_analysis(VT_AT_END, 0, NULL, 0);
    def_stack(a, 1, "a", 1);
    def_stack(a, 2, "b", 2);
    def_stack(a, 3, "c", 3);
    alloc(a, 1, 0x1000, 100, 1);
    alloc(a, 2, 0x2000, 50, 2); /* peak 150 */
    dofree(a, 3, 0x2000);
    alloc(a, 4, 0x3000, 30, 2); /* 130 */
    vt_proc *p = a->procs[0];
    assert_int_equal(p->dev[0].peak, 150);
    dofree(a, 5, 0x1000);       /* 30 */
    alloc(a, 6, 0x4000, 140, 3); /* 170: new peak {b:30, c:140} */
    alloc(a, 7, 0x5000, 10, 3);  /* 180 */
    dofree(a, 8, 0x4000);
    assert_int_equal(vt_analysis_finish(a), 0);
    assert_int_equal(p->dev[0].peak, 180);
    assert_int_equal(p->dev[0].peak_t, T0 + 7);
    assert_int_equal(unit_of(a, 1)->pk_bytes, 0);
    assert_int_equal(unit_of(a, 2)->pk_bytes, 30);
    assert_int_equal(unit_of(a, 3)->pk_bytes, 150);
    assert_int_equal(unit_of(a, 3)->pk_count, 2);
    vt_analysis_free(a);
}

static void vmm_ev(vt_analysis *a, vt_evtype type, uint64_t t, uint64_t addr, uint64_t size, uint64_t handle)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = type;
    ev.time_ns = T0 + t;
    if (type == VT_EV_VMM_CREATE) {
        ev.u.vmm_create.handle = handle;
        ev.u.vmm_create.size = size;
        ev.u.vmm_create.kind = VT_MEM_DEVICE;
        ev.u.vmm_create.site.stack = 1;
    } else if (type == VT_EV_VMM_RELEASE) {
        ev.u.vmm_release.handle = handle;
    } else if (type == VT_EV_VMM_MAP) {
        ev.u.vmm_map.address = addr;
        ev.u.vmm_map.size = size;
        ev.u.vmm_map.handle = handle;
    } else {
        ev.u.vmm_range.address = addr;
        ev.u.vmm_range.size = size;
    }
    feed(a, &ev);
}

static void test_vmm_once(void **state)
{
    (void)state;
    vt_analysis *a = new_analysis(VT_AT_END, 0, NULL, 0);
    def_stack(a, 1, "segment", 5);
    vt_proc *p = a->procs[0];
    vmm_ev(a, VT_EV_VMM_RESERVE, 1, 0x10000000, 1 << 30, 0);
    vmm_ev(a, VT_EV_VMM_CREATE, 2, 0, 2 << 20, 7);
    vmm_ev(a, VT_EV_VMM_CREATE, 3, 0, 2 << 20, 8);
    vmm_ev(a, VT_EV_VMM_MAP, 4, 0x10000000, 2 << 20, 7);
    vmm_ev(a, VT_EV_VMM_MAP, 5, 0x10200000, 2 << 20, 8);
    vmm_ev(a, VT_EV_VMM_MAP, 6, 0x20000000, 2 << 20, 7); /* second mapping of 7 */
    assert_int_equal(p->dev[0].live[VT_MEM_DEVICE], 4 << 20);
    assert_int_equal(p->mapped, 6 << 20);
    vmm_ev(a, VT_EV_VMM_RELEASE, 7, 0, 0, 7);           /* still mapped twice */
    assert_int_equal(p->dev[0].live[VT_MEM_DEVICE], 4 << 20);
    vmm_ev(a, VT_EV_VMM_UNMAP, 8, 0x10000000, 2 << 20, 0);
    assert_int_equal(p->dev[0].live[VT_MEM_DEVICE], 4 << 20);
    vmm_ev(a, VT_EV_VMM_UNMAP, 9, 0x20000000, 2 << 20, 0); /* last mapping: freed */
    assert_int_equal(p->dev[0].live[VT_MEM_DEVICE], 2 << 20);
    vmm_ev(a, VT_EV_VMM_RELEASE, 10, 0, 0, 8);          /* not mapped? it is: deferred */
    assert_int_equal(p->dev[0].live[VT_MEM_DEVICE], 2 << 20);
    vmm_ev(a, VT_EV_VMM_UNMAP, 11, 0x10200000, 2 << 20, 0);
    assert_int_equal(p->dev[0].live[VT_MEM_DEVICE], 0);
    vmm_ev(a, VT_EV_VMM_RELEASE, 12, 0, 0, 8);          /* unknown now */
    vmm_ev(a, VT_EV_VMM_UNMAP, 13, 0x30000000, 2 << 20, 0);
    vmm_ev(a, VT_EV_VMM_ADDRESS_FREE, 14, 0x10000000, 1 << 30, 0);
    assert_int_equal(p->unknown_vmm_release, 1);
    assert_int_equal(p->unknown_unmaps, 1);
    assert_int_equal(p->va_reserved, 0);
    assert_int_equal(p->va_reserved_peak, 1 << 30);
    assert_int_equal(vt_analysis_finish(a), 0);
    assert_int_equal(p->dev[0].peak, 4 << 20);
    assert_int_equal(unit_of(a, 1)->allocs, 2);
    vt_analysis_free(a);
}

/* --at MARKER: the last NVTX mark with that message */
static void test_at_marker(void **state)
{
    (void)state;
    vt_analysis *a = new_analysis(VT_AT_MARKER, 0, "eval", 1);
    def_stack(a, 1, "x", 1);
    alloc(a, 1 * MS, 0x1000, 10, 1);
    nvtx(a, 2 * MS, VT_NVTX_MARK, "eval");
    alloc(a, 3 * MS, 0x2000, 20, 1);
    dofree(a, 4 * MS, 0x1000);
    nvtx(a, 5 * MS, VT_NVTX_MARK, "eval 2");
    dofree(a, 6 * MS, 0x2000);
    alloc(a, 7 * MS, 0x3000, 40, 1);
    assert_int_equal(vt_analysis_finish(a), 0);
    vt_proc *p = a->procs[0];
    assert_true(p->marker_found);
    assert_int_equal(p->view_t, T0 + 5 * MS);
    /* the 20 live at the view were freed after it; the 40 allocated after
     * it were never released */
    assert_int_equal(vt_analysis_leaked_bytes(a), 40);
    assert_int_equal(unit_of(a, 1)->late_bytes, 40);
    assert_int_equal(p->teardown_bytes, 20);
    vt_analysis_free(a);
}

/* NVTX nesting is per thread: a loader thread's ranges interleaved with
 * the main thread's steps do not make the steps look nested */
static void test_nvtx_threads(void **state)
{
    (void)state;
    vt_analysis *a = new_analysis(VT_AT_AUTO, 0, NULL, 1);
    def_stack(a, 1, "activation", 5);
    for (int k = 0; k < 10; k++) {
        uint64_t t = (uint64_t)k * 10 * MS;
        nvtx_thr(a, t + 1, VT_NVTX_PUSH, "load batch", 2);      /* loader thread, opened first */
        nvtx_thr(a, t + 2, VT_NVTX_PUSH, "iteration", 1);      /* main thread */
        nvtx_thr(a, t + 3, VT_NVTX_POP, NULL, 2);
        nvtx_thr(a, t + 4, VT_NVTX_PUSH, "forward", 1);
        alloc(a, t + 5, 0x1000, 64, 1); /* a step allocates (steps repeat with the allocations) */
        nvtx_thr(a, t + 6, VT_NVTX_POP, NULL, 1);
        dofree(a, t + 7, 0x1000);
        nvtx_thr(a, t + 9 * MS, VT_NVTX_POP, NULL, 1);
    }
    assert_int_equal(vt_analysis_finish(a), 0);
    vt_proc *p = a->procs[0];
    assert_int_equal(p->steps, 10);
    /* "iteration" and "load batch" are both step-like names at depth 0:
     * the tie goes to the most frequent, then the name; "forward" is depth 1 */
    assert_non_null(p->step_source);
    for (size_t i = 0; i < p->nnvtx; i++)
        if (!strcmp(p->nvtx[i].msg, "forward"))
            assert_int_equal(p->nvtx[i].min_depth, 1);
        else
            assert_int_equal(p->nvtx[i].min_depth, 0);
    vt_analysis_free(a);
}

/* ------------------------------------------------------------ symbols */

typedef struct {
    const void *pc;
    char path[4096];
    uint64_t bias;
    uint8_t bid[64];
    uint32_t bid_len;
    int found;
} obj_info;

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    obj_info *o = data;
    uintptr_t pc = (uintptr_t)o->pc;
    int inside = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && pc >= info->dlpi_addr + ph->p_vaddr &&
            pc < info->dlpi_addr + ph->p_vaddr + ph->p_memsz)
            inside = 1;
    }
    if (!inside)
        return 0;
    o->bias = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const char *n = (const char *)(info->dlpi_addr + ph->p_vaddr), *end = n + ph->p_memsz;
        while (n + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)n;
            const char *name = n + sizeof(*nh);
            const char *desc = name + ((nh->n_namesz + 3) & ~3u);
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) && nh->n_descsz <= 64) {
                memcpy(o->bid, desc, nh->n_descsz);
                o->bid_len = nh->n_descsz;
            }
            n = desc + ((nh->n_descsz + 3) & ~3u);
        }
    }
    o->found = 1;
    return 1;
}

static void self_object(const void *pc, obj_info *o)
{
    memset(o, 0, sizeof(*o));
    o->pc = pc;
    dl_iterate_phdr(phdr_cb, o);
    assert_true(o->found);
    ssize_t n = readlink("/proc/self/exe", o->path, sizeof(o->path) - 1);
    assert_true(n > 0);
    o->path[n] = 0;
}

__attribute__((noinline)) static void *return_address(void)
{
    return __builtin_return_address(0);
}

static int g_line_outer, g_line_inner;

static inline __attribute__((always_inline)) void *inlined_helper(void)
{
    g_line_inner = __LINE__ + 1;
    void *ra = return_address();
    return ra;
}

__attribute__((noinline)) static void *outer_function(void)
{
    g_line_outer = __LINE__ + 1;
    void *r = inlined_helper();
    asm volatile("" ::: "memory");
    return r;
}

void *vt_test_cxx_pc(void);

static void test_symbolize(void **state)
{
    (void)state;
    vt_symbolizer *s;
    assert_int_equal(vt_symbolizer_create(&s, NULL), 0);
    void *ra = outer_function();
    obj_info o;
    self_object(ra, &o);
    assert_true(o.bid_len > 0);
    /* a return address: look up the call instruction (ra - 1) */
    uint64_t rel = (uint64_t)(uintptr_t)ra - o.bias - 1;
    const vt_symres *r = vt_symbolizer_lookup(s, o.path, o.bid, o.bid_len, rel);
    assert_int_equal(r->status, VT_SYM_OK);
    assert_int_equal(r->nlines, 2);
    assert_string_equal(r->lines[0].function, "inlined_helper");
    assert_true(r->lines[0].inlined);
    assert_int_equal(r->lines[0].line, g_line_inner);
    assert_non_null(strstr(r->lines[0].file, "test_analyze.c"));
    assert_string_equal(r->lines[1].function, "outer_function");
    assert_false(r->lines[1].inlined);
    assert_int_equal(r->lines[1].line, g_line_outer);
    /* cached: the same result object */
    assert_ptr_equal(vt_symbolizer_lookup(s, o.path, o.bid, o.bid_len, rel), r);
    /* C++: demangled */
    void *cpc = vt_test_cxx_pc();
    r = vt_symbolizer_lookup(s, o.path, o.bid, o.bid_len, (uint64_t)(uintptr_t)cpc - o.bias);
    assert_int_equal(r->status, VT_SYM_OK);
    assert_true(r->nlines >= 1);
    assert_non_null(strstr(r->lines[r->nlines - 1].function, "vtt::Grabber<int>::grab(int)"));
    assert_non_null(strstr(r->lines[r->nlines - 1].file, "cxx_frame.cc"));
    /* a different build-id: not read */
    uint8_t bad[20] = {1, 2, 3};
    r = vt_symbolizer_lookup(s, o.path, bad, 20, rel);
    assert_int_equal(r->status, VT_SYM_BUILD_ID_MISMATCH);
    assert_int_equal(r->nlines, 0);
    r = vt_symbolizer_lookup(s, "/nonexistent/libx.so", NULL, 0, 0x1234);
    assert_int_equal(r->status, VT_SYM_NOT_FOUND);
    /* without a build-id in the trace the file is used as is */
    r = vt_symbolizer_lookup(s, o.path, NULL, 0, rel);
    assert_int_equal(r->status, VT_SYM_OK);
    vt_symbolizer_free(s);
    /* --sysroot: the binary copied under another root */
    char root[] = "/tmp/vt_sysroot_XXXXXX", dst[8192];
    static char cmd[32768];
    assert_non_null(mkdtemp(root));
    assert_int_equal(vt_symbolizer_create(&s, root), 0);
    r = vt_symbolizer_lookup(s, o.path, o.bid, o.bid_len, rel);
    assert_int_equal(r->status, VT_SYM_NOT_FOUND);
    vt_symbolizer_free(s);
    snprintf(dst, sizeof(dst), "%s%s", root, o.path);
    snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\" && cp '%s' '%s'", dst, o.path, dst);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(vt_symbolizer_create(&s, root), 0);
    r = vt_symbolizer_lookup(s, o.path, o.bid, o.bid_len, rel);
    assert_int_equal(r->status, VT_SYM_OK);
    assert_string_equal(r->lines[r->nlines - 1].function, "outer_function");
    vt_symbolizer_free(s);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

/* end to end: a native stack into this binary, user frame and text */
static void test_site_frames_native(void **state)
{
    (void)state;
    vt_analysis_config cfg;
    vt_analysis_config_default(&cfg);
    vt_analysis *a;
    assert_int_equal(vt_analysis_create(&a, &cfg), 0);
    assert_int_equal(vt_analysis_begin_process(a, "self"), 0);
    void *ra = outer_function();
    obj_info o;
    self_object(ra, &o);
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_MODULE;
    ev.u.module.id = 1;
    ev.u.module.path = o.path;
    ev.u.module.load_bias = o.bias;
    ev.u.module.build_id = o.bid;
    ev.u.module.build_id_len = o.bid_len;
    feed(a, &ev);
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_MODULE;
    ev.u.module.id = 2;
    ev.u.module.path = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
    feed(a, &ev);
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_FRAME;
    ev.u.frame.id = 1;
    ev.u.frame.ip = 0x1000;
    ev.u.frame.module = 2;
    feed(a, &ev);
    ev.u.frame.id = 2;
    ev.u.frame.ip = (uint64_t)(uintptr_t)ra;
    ev.u.frame.module = 1;
    feed(a, &ev);
    uint32_t fr[2] = {1, 2};
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_STACK;
    ev.u.stack.id = 1;
    ev.u.stack.frames = fr;
    ev.u.stack.nframes = 2;
    feed(a, &ev);
    vt_xframe xf[16];
    int user = -1;
    uint32_t n = vt_site_frames(a, a->procs[0], 1, xf, 16, &user);
    assert_int_equal(n, 3); /* libcuda frame + inlined helper + outer */
    assert_int_equal(user, 1);
    assert_true(xf[0].internal);
    assert_string_equal(xf[1].function, "inlined_helper");
    char line[512];
    vt_xframe_format(&xf[2], line, sizeof(line));
    assert_non_null(strstr(line, "outer_function ("));
    assert_non_null(strstr(line, "test_analyze.c:"));
    vt_xframe_format(&xf[0], line, sizeof(line));
    assert_non_null(strstr(line, "libcuda.so.1+0x"));
    vt_analysis_free(a);
}

static void test_json_str(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    vt_json_str(f, "a\"b\\c\n\x01 \xc3\xa9 \xff \xe2\x82 end");
    fputc(' ', f);
    vt_json_str(f, NULL);
    fclose(f);
    assert_string_equal(buf, "\"a\\\"b\\\\c\\n\\u0001 \xc3\xa9 \\ufffd \\ufffd\\ufffd end\" null");
    free(buf);
}

/* The page's packed data (vt_page_pack.c): base64 of gzip of the string
 * table, a newline and the JSON with references.  Repeated value strings
 * of 6 bytes and more go to the table once; keys and short strings stay;
 * a string that begins with U+0001 always goes to the table, so that no
 * value is read as a reference. */
static size_t unbase64(const char *s, size_t n, unsigned char *out)
{
    size_t k = 0;
    uint32_t v = 0;
    int bits = 0;
    for (size_t i = 0; i < n && s[i] != '='; i++) {
        const char *t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const char *c = strchr(t, s[i]);
        assert_non_null(c);
        v = v << 6 | (uint32_t)(c - t);
        if ((bits += 6) >= 8)
            out[k++] = (unsigned char)(v >> (bits -= 8));
    }
    return k;
}

static void test_page_pack(void **state)
{
    (void)state;
    static const char js[] = "{\"a\":\"\\u0001x\",\"b\":[\"abcdefg\",\"abcdefg\",\"abc\",\"abc\"],"
                             "\"abcdefg\":\"unique-string\",\"c\":\"\\u0001x\"}";
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    assert_int_equal(vt_page_pack(js, sizeof(js) - 1, m), 0);
    fclose(m);
    const char *pre = "window.VT_PACKED = \"";
    assert_memory_equal(buf, pre, strlen(pre));
    const char *b64 = buf + strlen(pre), *end = strchr(b64, '"');
    assert_non_null(end);
    unsigned char *z = malloc(len);
    size_t zn = unbase64(b64, (size_t)(end - b64), z);
    char text[1024];
    z_stream s;
    memset(&s, 0, sizeof(s));
    assert_int_equal(inflateInit2(&s, 15 + 16), Z_OK);
    s.next_in = z;
    s.avail_in = (uInt)zn;
    s.next_out = (Bytef *)text;
    s.avail_out = sizeof(text) - 1;
    assert_int_equal(inflate(&s, Z_FINISH), Z_STREAM_END);
    text[sizeof(text) - 1 - s.avail_out] = 0;
    inflateEnd(&s);
    assert_string_equal(text, "[\"\\u0001x\",\"abcdefg\"]\n"
                              "{\"a\":\"\\u00010\",\"b\":[\"\\u00011\",\"\\u00011\",\"abc\",\"abc\"],"
                              "\"abcdefg\":\"unique-string\",\"c\":\"\\u00010\"}");
    free(z);
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_json_str),
        cmocka_unit_test(test_map_random),
        cmocka_unit_test(test_blocks_random),
        cmocka_unit_test(test_blocks_freed_young),
        cmocka_unit_test(test_leak_oddities),
        cmocka_unit_test(test_view_late_kernels),
        cmocka_unit_test(test_tail_bounded),
        cmocka_unit_test(test_growth_classes),
        cmocka_unit_test(test_growth_sawtooth_slow),
        cmocka_unit_test(test_growth_matrix),
        cmocka_unit_test(test_growth_jitter),
        cmocka_unit_test(test_steps_named),
        cmocka_unit_test(test_steps_kernels_warmup),
        cmocka_unit_test(test_peak_sets),
        cmocka_unit_test(test_vmm_once),
        cmocka_unit_test(test_at_marker),
        cmocka_unit_test(test_nvtx_threads),
        cmocka_unit_test(test_symbolize),
        cmocka_unit_test(test_site_frames_native),
        cmocka_unit_test(test_page_pack),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
