/* test_marktab.c - the table of blocks allocated since a mark
 * (src/inject/vt_marktab.c): what a test leaves live and where, tensors
 * apart from the driver's blocks, the user's frame chosen over library
 * frames, deletion in long probe runs, a full table, and threads
 * allocating and freeing while the mark is set and cleared. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>

#include "vt_marktab.h"

/* codes are indexes into this table of "file\0function" */
static const char *const k_code[][2] = {
    {"/home/u/tests/test_model.py", "test_leaks"},
    {"/opt/venv/lib/python3.12/site-packages/torch/nn/modules/module.py", "_call_impl"},
    {"/usr/lib/python3.12/contextlib.py", "__enter__"},
    {"/home/u/src/vramtrace/src/python/vramtrace_pytest.py", "_begin"},
    {"/home/u/tests/helpers.py", "make"},
};

static int describe(uint64_t code, char *file, size_t nfile, char *func, size_t nfunc)
{
    if (code >= sizeof(k_code) / sizeof(k_code[0]))
        return -1;
    snprintf(file, nfile, "%s", k_code[code][0]);
    snprintf(func, nfunc, "%s", k_code[code][1]);
    return 0;
}

static vt_markframe fr(uint64_t code, uint32_t line)
{
    return (vt_markframe){.key = 1000 + code, .code = code, .line = line};
}

static void test_library_files(void **state)
{
    (void)state;
    assert_true(vt_marktab_is_library("/opt/venv/lib/python3.12/site-packages/torch/_tensor.py"));
    assert_true(vt_marktab_is_library("/usr/lib/python3/dist-packages/numpy/core.py"));
    assert_true(vt_marktab_is_library("/usr/lib/python3.12/threading.py"));
    assert_true(vt_marktab_is_library("/root/.pyenv/versions/3.12.1/lib/python3.12/contextlib.py"));
    assert_true(vt_marktab_is_library("<frozen importlib._bootstrap>"));
    assert_true(vt_marktab_is_library("/x/_pytest/python.py"));
    assert_true(vt_marktab_is_library("/x/src/python/vramtrace_pytest.py"));
    assert_true(vt_marktab_is_library(""));
    assert_true(vt_marktab_is_library(NULL));
    assert_false(vt_marktab_is_library("/home/u/tests/test_model.py"));
    assert_false(vt_marktab_is_library("/home/u/lib/python3tools/x.py"));
    assert_false(vt_marktab_is_library("test_x.py"));
}

static void test_leak_and_sites(void **state)
{
    (void)state;
    vt_marktab *m = vt_marktab_create(1024, 64);
    assert_non_null(m);
    assert_false(vt_marktab_active(vt_marktab_flag(m)));
    /* without a mark nothing is kept */
    vt_markframe user[] = {fr(1, 880), fr(0, 12)};
    vt_marktab_alloc(m, 0x1000, 4096, 0, 1, user, 2, describe);
    assert_int_equal(vt_marktab_begin(m), 0);
    assert_int_equal(vt_marktab_begin(m), -4);
    assert_true(vt_marktab_active(vt_marktab_flag(m)));
    vt_marktab_release(m, 0x1000, 1); /* allocated before the mark: ignored */
    /* a tensor kept (line 12, under torch's frame), one freed, one from a helper */
    vt_marktab_alloc(m, 0x2000, 1 << 20, 0, 1, user, 2, describe);
    vt_marktab_alloc(m, 0x3000, 2 << 20, 0, 1, user, 2, describe);
    vt_marktab_release(m, 0x3000, 1);
    vt_markframe helper[] = {fr(4, 7), fr(0, 20)};
    vt_marktab_alloc(m, 0x4000, 512, 1, 1, helper, 2, describe);
    /* the allocator's segment: a driver block at the same address as a tensor */
    vt_marktab_alloc(m, 0x2000, 20 << 20, 0, 0, user, 2, describe);
    vt_test_summary s;
    vt_test_site sites[4];
    int n = vt_marktab_end(m, 1, &s, sites, 4);
    assert_false(vt_marktab_active(vt_marktab_flag(m)));
    assert_int_equal(n, 2);
    assert_int_equal(s.abi, VT_TEST_ABI);
    assert_int_equal(s.flags, VT_TEST_F_TENSORS);
    assert_int_equal(s.allocs, 3);
    assert_int_equal(s.allocated_bytes, (1 << 20) + (2 << 20) + 512);
    assert_int_equal(s.leaked_bytes, (1 << 20) + 512);
    assert_int_equal(s.leaked_blocks, 2);
    assert_int_equal(s.peak_bytes, (1 << 20) + (2 << 20));
    assert_int_equal(s.reserved_bytes, 20 << 20);
    assert_int_equal(s.nsites, 2);
    assert_int_equal(s.ndevices, 2);
    assert_int_equal(s.device_live[0], 1 << 20);
    assert_int_equal(s.device_live[1], 512);
    assert_string_equal(sites[0].file, k_code[0][0]);
    assert_string_equal(sites[0].function, "test_leaks");
    assert_int_equal(sites[0].line, 12);
    assert_int_equal(sites[0].bytes, 1 << 20);
    assert_int_equal(sites[0].blocks, 1);
    assert_string_equal(sites[1].file, k_code[4][0]);
    assert_int_equal(sites[1].line, 7);
    assert_int_equal(sites[1].device, 1);
    assert_int_equal(vt_marktab_end(m, 1, &s, sites, 4), -1);

    /* without tensor events every block counts */
    assert_int_equal(vt_marktab_begin(m), 0);
    vt_marktab_alloc(m, 0x2000, 20 << 20, 0, 0, user, 2, describe);
    vt_markframe libonly[] = {fr(1, 5), fr(2, 9)};
    vt_marktab_alloc(m, 0x5000, 100, 0, 0, libonly, 2, describe); /* only library frames: the innermost */
    vt_marktab_alloc(m, 0x6000, 100, 0, 0, NULL, 0, describe);
    n = vt_marktab_end(m, 0, &s, sites, 1);
    assert_int_equal(n, 1);
    assert_int_equal(s.nsites, 3);
    assert_int_equal(s.leaked_bytes, (20 << 20) + 200);
    assert_int_equal(s.flags, VT_TEST_F_NOPY);
    assert_int_equal(sites[0].line, 12);
    assert_int_equal(vt_marktab_begin(m), 0);
    vt_marktab_alloc(m, 0x5000, 100, 0, 0, libonly, 2, describe);
    n = vt_marktab_end(m, 0, NULL, sites, 4);
    assert_int_equal(n, 1);
    assert_string_equal(sites[0].function, "_call_impl");
    assert_int_equal(sites[0].line, 5);
    vt_marktab_free(m);
    vt_marktab_free(NULL);
}

/* many blocks in a small table: long probe runs, frees in any order */
static void test_probe_runs(void **state)
{
    (void)state;
    vt_marktab *m = vt_marktab_create(3000, 16);
    assert_non_null(m);
    vt_markframe user[] = {fr(0, 1)};
    assert_int_equal(vt_marktab_begin(m), 0);
    for (uint64_t i = 1; i <= 3000; i++)
        vt_marktab_alloc(m, i * 512, 10, 0, 1, user, 1, describe);
    for (uint64_t i = 1; i <= 3000; i += 2)
        vt_marktab_release(m, i * 512, 1);
    for (uint64_t i = 1; i <= 3000; i += 2) /* again: already gone */
        vt_marktab_release(m, i * 512, 1);
    vt_marktab_release(m, 2 * 512, 0); /* the other class: not this block */
    vt_test_summary s;
    vt_marktab_end(m, 1, &s, NULL, 0);
    assert_int_equal(s.leaked_blocks, 1500);
    assert_int_equal(s.leaked_bytes, 15000);
    assert_int_equal(s.dropped, 0);
    /* each even block still findable after the shifts */
    assert_int_equal(vt_marktab_begin(m), 0);
    for (uint64_t i = 1; i <= 3000; i++)
        vt_marktab_alloc(m, i * 4096, 10, 0, 1, user, 1, describe);
    for (uint64_t i = 3000; i >= 1; i--)
        vt_marktab_release(m, i * 4096, 1);
    vt_marktab_end(m, 1, &s, NULL, 0);
    assert_int_equal(s.leaked_blocks, 0);
    assert_int_equal(s.peak_bytes, 30000);
    vt_marktab_free(m);
}

static void test_full(void **state)
{
    (void)state;
    vt_marktab *m = vt_marktab_create(100, 2);
    assert_non_null(m);
    assert_int_equal(vt_marktab_begin(m), 0);
    for (uint32_t i = 0; i < 150; i++) {
        vt_markframe f[] = {fr(i % 5, 10 + i % 7)};
        vt_marktab_alloc(m, 0x10000 + i * 0x100, 1, 0, 1, f, 1, describe);
    }
    vt_test_summary s;
    vt_test_site sites[8];
    int n = vt_marktab_end(m, 1, &s, sites, 8);
    assert_true(s.flags & VT_TEST_F_FULL);
    assert_int_equal(s.dropped, 50);
    assert_int_equal(s.leaked_blocks, 100);
    assert_int_equal(n, 3); /* two sites, then the rest in one */
    int other = 0;
    for (int i = 0; i < n; i++)
        other += !strcmp(sites[i].function, "(other sites)");
    assert_int_equal(other, 1);
    vt_marktab_forget(m);
    assert_int_equal(vt_marktab_begin(m), 0);
    vt_marktab_end(m, 1, &s, NULL, 0);
    assert_int_equal(s.leaked_blocks, 0);
    vt_marktab_free(m);
}

typedef struct {
    vt_marktab *m;
    uint64_t base;
} thr_arg;

static void *churn(void *p)
{
    thr_arg *a = p;
    vt_markframe user[] = {fr(0, 3)};
    for (uint64_t r = 0; r < 200; r++)
        for (uint64_t i = 0; i < 50; i++) {
            vt_marktab_alloc(a->m, a->base + i * 512, 512, 0, 1, user, 1, describe);
            vt_marktab_release(a->m, a->base + i * 512, 1);
        }
    return NULL;
}

/* threads allocate and free while the mark is set and cleared: nothing is
 * left and nothing breaks (TSan and ASan builds run it too) */
static void test_threads(void **state)
{
    (void)state;
    vt_marktab *m = vt_marktab_create(4096, 64);
    assert_non_null(m);
    pthread_t t[4];
    thr_arg a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (thr_arg){m, (uint64_t)(i + 1) << 32};
        assert_int_equal(pthread_create(&t[i], NULL, churn, &a[i]), 0);
    }
    vt_test_summary s;
    for (int r = 0; r < 50; r++) {
        vt_marktab_begin(m);
        vt_marktab_end(m, 1, &s, NULL, 0);
        assert_true(s.leaked_blocks <= 4);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(vt_marktab_begin(m), 0);
    vt_marktab_end(m, 1, &s, NULL, 0);
    assert_int_equal(s.leaked_blocks, 0);
    vt_marktab_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_library_files), cmocka_unit_test(test_leak_and_sites),
        cmocka_unit_test(test_probe_runs),    cmocka_unit_test(test_full),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
