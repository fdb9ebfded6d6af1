/* test_gate.c - the benchmark gate (bench/vt_gate.c): requests are
 * applied in order, only changes of the on bit call the apply function,
 * and every request is acknowledged. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "vt_gate.h"

static atomic_int calls, last_on = -1;

static void apply(int on, void *arg)
{
    (void)arg;
    atomic_fetch_add(&calls, 1);
    atomic_store(&last_on, on);
}

/* Write a request and wait (at most 5 s) until the gate thread applied it. */
static int request(_Atomic uint32_t *w, uint32_t req)
{
    atomic_store(&w[0], req);
    for (int i = 0; i < 5000; i++) {
        if (atomic_load(&w[1]) == req)
            return 0;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    return -1;
}

static void test_gate_toggles(void **state)
{
    (void)state;
    char path[] = "/tmp/vt_gate_testXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, VT_GATE_SIZE), 0);
    _Atomic uint32_t *w = mmap(NULL, VT_GATE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    assert_true(w != MAP_FAILED);
    close(fd);
    assert_int_equal(vt_gate_start(path, apply, NULL), 0);
    assert_int_equal(vt_gate_start(path, apply, NULL), -EINVAL); /* one per process */
    assert_int_equal(request(w, (1u << 1) | 0), 0);              /* off */
    assert_int_equal(atomic_load(&calls), 1);
    assert_int_equal(atomic_load(&last_on), 0);
    assert_int_equal(request(w, (2u << 1) | 0), 0); /* off again: acknowledged, not applied */
    assert_int_equal(atomic_load(&calls), 1);
    assert_int_equal(request(w, (3u << 1) | 1), 0); /* on */
    assert_int_equal(atomic_load(&calls), 2);
    assert_int_equal(atomic_load(&last_on), 1);
    assert_int_equal(vt_gate_toggles(), 2);
    vt_gate_stop();
    vt_gate_stop(); /* a second stop does nothing */
    munmap((void *)w, VT_GATE_SIZE);
    unlink(path);
}

static void test_gate_bad_file(void **state)
{
    (void)state;
    assert_int_equal(vt_gate_start("/nonexistent-dir/gate", apply, NULL), -ENOENT);
    char path[] = "/tmp/vt_gate_testXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd); /* empty: shorter than VT_GATE_SIZE */
    assert_int_equal(vt_gate_start(path, apply, NULL), -EINVAL);
    unlink(path);
    assert_int_equal(vt_gate_start(NULL, apply, NULL), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gate_toggles),
        cmocka_unit_test(test_gate_bad_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
