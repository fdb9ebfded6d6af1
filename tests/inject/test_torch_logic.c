/* test_torch_logic.c - the pure parts of the PyTorch tracker's use
 * (src/inject/vt_torch_logic.h): the layout check against what CUPTI saw,
 * and which module is PyTorch's CUDA allocator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "vt_torch_logic.h"

static void test_layout(void **state)
{
    (void)state;
    const uint64_t a = 0x7f1c42000000ull, s = 2u << 20;
    /* cudaMalloc segment: the same range */
    assert_true(vt_torch_layout_ok(0, a, s, a, s));
    assert_false(vt_torch_layout_ok(0, a, s + 512, a, s));
    assert_false(vt_torch_layout_ok(0, a + 512, s, a, s));
    /* the wrong-layout shim: the size where the address is, the stream where the size is */
    assert_false(vt_torch_layout_ok(0, s, 0, a, s));
    assert_false(vt_torch_layout_ok(0, s, 0x55d0c0ffee00ull, a, s));
    /* swapped fields */
    assert_false(vt_torch_layout_ok(0, s, a, a, s));
    /* expandable segment: the map entry ends where the last cuMemMap ends */
    assert_true(vt_torch_layout_ok(1, a, 3 * s, a + 2 * s, s));
    assert_true(vt_torch_layout_ok(1, a, s, a, s));
    assert_false(vt_torch_layout_ok(1, a, 3 * s, a + s, s));
    assert_false(vt_torch_layout_ok(1, a + 4 * s, s, a, s));
    assert_false(vt_torch_layout_ok(1, s, a, a, s));
    assert_false(vt_torch_layout_ok(1, 0, s, a, s));
    assert_false(vt_torch_layout_ok(0, a, s, 0, 0)); /* no driver allocation seen */
}

static void test_c10_cuda(void **state)
{
    (void)state;
    assert_true(vt_torch_is_c10_cuda("/opt/venv/lib/python3.12/site-packages/torch/lib/libc10_cuda.so"));
    assert_true(vt_torch_is_c10_cuda("libc10_cuda.so.2.11"));
    assert_false(vt_torch_is_c10_cuda("/x/libc10.so"));
    assert_false(vt_torch_is_c10_cuda("/x/libc10_cuda_extra/libtorch_cuda.so"));
    assert_false(vt_torch_is_c10_cuda(NULL));
}

/* the shim that `record` builds beside the program: the wait's ends */
static char g_shim[256];

/* written beside and renamed, as record_torch.c's builder does: a waiter
 * never sees it half written */
static void put(const char *suffix, const char *text)
{
    char p[300], t[310];
    snprintf(p, sizeof(p), "%s%s", g_shim, suffix);
    snprintf(t, sizeof(t), "%s.tmp", p);
    FILE *f = fopen(t, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(rename(t, p), 0);
}

static void drop(const char *suffix)
{
    char p[300];
    snprintf(p, sizeof(p), "%s%s", g_shim, suffix);
    unlink(p);
}

static void *later(void *arg)
{
    struct timespec ts = {0, 150 * 1000 * 1000};
    nanosleep(&ts, NULL);
    put((const char *)arg, "the shim did not build against torch 9.9 (log: x/build.log)\n");
    return NULL;
}

static void test_shim_wait(void **state)
{
    (void)state;
    char dir[] = "/tmp/vt_shimwait.XXXXXX";
    assert_non_null(mkdtemp(dir));
    snprintf(g_shim, sizeof(g_shim), "%s/libvt_torch.so", dir);
    char why[400] = "";
    double waited = -1;
    /* no wait asked: whatever is there */
    assert_int_equal(vt_torch_shim_wait(g_shim, 0, &waited, why, sizeof(why)), 0);
    assert_true(waited == 0);
    /* the builder holds the lock; the shim appears while we wait */
    char lockp[300];
    snprintf(lockp, sizeof(lockp), "%s.lock", g_shim);
    int lk = open(lockp, O_RDWR | O_CREAT, 0600);
    assert_true(lk >= 0);
    assert_int_equal(flock(lk, LOCK_EX), 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, later, ""), 0);
    assert_int_equal(vt_torch_shim_wait(g_shim, 30, &waited, why, sizeof(why)), 0);
    pthread_join(t, NULL);
    assert_true(waited >= 0.1 && waited < 10);
    /* there already: no wait */
    assert_int_equal(vt_torch_shim_wait(g_shim, 30, &waited, why, sizeof(why)), 0);
    assert_true(waited == 0);
    /* the build fails: SHIM.failed's line is the reason */
    drop("");
    assert_int_equal(pthread_create(&t, NULL, later, ".failed"), 0);
    assert_int_equal(vt_torch_shim_wait(g_shim, 30, &waited, why, sizeof(why)), -1);
    pthread_join(t, NULL);
    assert_string_equal(why, "the shim did not build against torch 9.9 (log: x/build.log)");
    drop(".failed");
    /* a build that never ends: the limit */
    assert_int_equal(vt_torch_shim_wait(g_shim, 1, &waited, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "did not finish within 1 s"));
    /* the builder died without a word: the lock is free */
    close(lk);
    double t0 = vt_torch_now_s();
    assert_int_equal(vt_torch_shim_wait(g_shim, 30, &waited, why, sizeof(why)), -1);
    assert_non_null(strstr(why, "ended without a result"));
    assert_true(vt_torch_now_s() - t0 < 5);
    drop(".lock");
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_layout), cmocka_unit_test(test_c10_cuda),
                                       cmocka_unit_test(test_shim_wait)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
