/* test_pystack_merge.c - C-level tests of vt_pystack outside any Python
 * interpreter: init refuses cleanly, capture is disabled, and the merge of
 * native and Python frames follows the documented rules.  Test-only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "vt_error.h"
#include "vt_pystack.h"

#define EVAL_A 0x1000 /* eval loop [0x1000, 0x2000) */
#define EVAL_B 0x9000 /* a second range [0x9000, 0x9100) */

static int setup(void **state)
{
    static int once;
    if (!once) {
        assert_int_equal(vt_pystack_test_add_eval(EVAL_A, 0x2000), 0);
        assert_int_equal(vt_pystack_test_add_eval(EVAL_B, 0x9100), 0);
        once = 1;
    }
    (void)state;
    return 0;
}

static vt_pyframe P(uint64_t key, uint32_t line, uint16_t nentry)
{
    return (vt_pyframe){.key = key, .code = key, .line = line, .nentry = nentry};
}

/* Compact expectation: "N<hex>" / "P<hex>:<line>", space separated. */
static void expect_frames(const vt_frame *f, int n, const char *want)
{
    char got[2048];
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        if (f[i].kind == VT_FRAME_NATIVE)
            o += (size_t)snprintf(got + o, sizeof got - o, "%sN%llx", i ? " " : "",
                                  (unsigned long long)f[i].pc);
        else
            o += (size_t)snprintf(got + o, sizeof got - o, "%sP%llx:%u", i ? " " : "",
                                  (unsigned long long)f[i].pc, f[i].line);
    }
    assert_string_equal(got, want);
}

static void test_init_outside_python(void **state)
{
    char why[160] = "unset";
    vt_pyframe fr[4];
    char a[16], b[16];
    (void)state;
    assert_int_equal(vt_pystack_init(why, sizeof why), VT_ERR_NOT_FOUND);
    assert_string_equal(why, "not a Python process");
    assert_int_equal(vt_pystack_init(NULL, 0), VT_ERR_NOT_FOUND); /* idempotent */
    assert_int_equal(vt_pystack_ready(), 0);
    assert_int_equal(vt_pystack_capture(fr, 4), VT_ERR_DISABLED);
    assert_int_equal(vt_pystack_describe(0x1000, a, sizeof a, b, sizeof b), VT_ERR_DISABLED);
    vt_frame out[4];
    assert_int_equal(vt_pystack_stack(NULL, 0, out, 4, 4, NULL, NULL), VT_ERR_DISABLED);
}

static void test_is_eval(void **state)
{
    (void)state;
    assert_false(vt_pystack_is_eval(EVAL_A)); /* a return address is never the entry */
    assert_true(vt_pystack_is_eval(EVAL_A + 1));
    assert_true(vt_pystack_is_eval(0x2000));  /* call as the last instruction */
    assert_false(vt_pystack_is_eval(0x2001));
    assert_true(vt_pystack_is_eval(EVAL_B + 0x10));
    assert_false(vt_pystack_is_eval(0));
}

/* 3.10 style: one Python frame per eval call. */
static void test_merge_one_per_eval(void **state)
{
    (void)state;
    uint64_t ips[] = {0x500, 0x501, 0x1500, 0x600, 0x1600, 0x700, 0x9050, 0x800};
    vt_pyframe py[] = {P(0xa0, 10, 1), P(0xb0, 20, 1), P(0xc0, 30, 1)};
    vt_frame out[32];
    int n = vt_pystack_merge(ips, 8, py, 3, out, 32);
    expect_frames(out, n, "N500 N501 Pa0:10 N600 Pb0:20 N700 Pc0:30 N800");
}

/* 3.11+ style: one eval call runs several frames (inlined Python calls). */
static void test_merge_groups(void **state)
{
    (void)state;
    uint64_t ips[] = {0x500, 0x1500, 0x600, 0x1600, 0x700};
    vt_pyframe py[] = {P(0xa0, 1, 0), P(0xb0, 2, 0), P(0xc0, 3, 1), P(0xd0, 4, 0), P(0xe0, 5, 1)};
    vt_frame out[32];
    int n = vt_pystack_merge(ips, 5, py, 5, out, 32);
    expect_frames(out, n, "N500 Pa0:1 Pb0:2 Pc0:3 N600 Pd0:4 Pe0:5 N700");
}

/* An eval call whose frames were all hidden (nentry 2) drops one more eval. */
static void test_merge_hidden_group(void **state)
{
    (void)state;
    uint64_t ips[] = {0x500, 0x1500, 0x600, 0x1600, 0x700, 0x1700, 0x800};
    vt_pyframe py[] = {P(0xa0, 1, 2), P(0xb0, 2, 1)};
    vt_frame out[32];
    int n = vt_pystack_merge(ips, 7, py, 2, out, 32);
    expect_frames(out, n, "N500 Pa0:1 N600 N700 Pb0:2 N800");
}

/* Native unwind capped before the interpreter: Python frames follow it. */
static void test_merge_native_short(void **state)
{
    (void)state;
    uint64_t ips[] = {0x500, 0x600};
    vt_pyframe py[] = {P(0xa0, 1, 1), P(0xb0, 2, 1)};
    vt_frame out[32];
    int n = vt_pystack_merge(ips, 2, py, 2, out, 32);
    expect_frames(out, n, "N500 N600 Pa0:1 Pb0:2");
    n = vt_pystack_merge(NULL, 0, py, 2, out, 32); /* native stacks off */
    expect_frames(out, n, "Pa0:1 Pb0:2");
    n = vt_pystack_merge(ips, 2, NULL, 0, out, 32); /* no Python */
    expect_frames(out, n, "N500 N600");
}

/* More eval frames than groups: kept if the capture was complete, dropped
 * if it was truncated (their frames are the ones cut off). */
static void test_merge_extra_evals(void **state)
{
    (void)state;
    uint64_t ips[] = {0x500, 0x1500, 0x600, 0x1600, 0x700};
    vt_pyframe py[] = {P(0xa0, 1, 1)};
    vt_frame out[32];
    int n = vt_pystack_merge(ips, 5, py, 1, out, 32);
    expect_frames(out, n, "N500 Pa0:1 N600 N1600 N700");
    py[0].flags = VT_PYFRAME_TRUNCATED;
    n = vt_pystack_merge(ips, 5, py, 1, out, 32);
    expect_frames(out, n, "N500 Pa0:1 N600 N700");
}

/* The output never exceeds max, even in the middle of a group. */
static void test_merge_max(void **state)
{
    (void)state;
    uint64_t ips[] = {0x500, 0x1500, 0x600};
    vt_pyframe py[] = {P(0xa0, 1, 0), P(0xb0, 2, 0), P(0xc0, 3, 1)};
    vt_frame out[8];
    for (int max = 0; max <= 5; max++) {
        memset(out, 0xee, sizeof out);
        int n = vt_pystack_merge(ips, 3, py, 3, out, max);
        assert_int_equal(n, max);
        assert_int_equal(out[max].pc, 0xeeeeeeeeeeeeeeeeull);
    }
    int n = vt_pystack_merge(ips, 3, py, 3, out, 3);
    expect_frames(out, n, "N500 Pa0:1 Pb0:2");
}

/* No eval frame recognised (stripped or cloned eval loop): the Python
 * frames go where the stack enters the interpreter, innermost first. */
static void test_merge_no_eval(void **state)
{
    (void)state;
    uint64_t ips[] = {0x500, 0x600, 0x5010, 0x5020, 0x700};
    vt_pyframe py[] = {P(0xa0, 1, 0), P(0xb0, 2, 1)};
    vt_frame out[32];
    vt_pystack_test_set_interp(0x5000, 0x6000);
    int n = vt_pystack_merge(ips, 5, py, 2, out, 32);
    expect_frames(out, n, "N500 N600 Pa0:1 Pb0:2 N5010 N5020 N700");
    n = vt_pystack_merge(ips, 2, py, 2, out, 32); /* unwind stopped before it */
    expect_frames(out, n, "N500 N600 Pa0:1 Pb0:2");
    vt_pystack_test_set_interp(0, 0);
    n = vt_pystack_merge(ips, 5, py, 2, out, 32); /* range unknown: after */
    expect_frames(out, n, "N500 N600 N5010 N5020 N700 Pa0:1 Pb0:2");
    n = vt_pystack_merge(ips, 5, py, 2, out, 4);
    expect_frames(out, n, "N500 N600 N5010 N5020");
}

static void test_seen(void **state)
{
    (void)state;
    assert_int_equal(vt_pystack_seen(0x1234), 0);
    assert_int_equal(vt_pystack_seen(0x1234), 1);
    vt_pystack_unsee(0x1234);
    assert_int_equal(vt_pystack_seen(0x1234), 0);
    assert_int_equal(vt_pystack_seen(0x1234), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_outside_python), cmocka_unit_test(test_is_eval),
        cmocka_unit_test(test_merge_one_per_eval),  cmocka_unit_test(test_merge_groups),
        cmocka_unit_test(test_merge_hidden_group),  cmocka_unit_test(test_merge_native_short),
        cmocka_unit_test(test_merge_extra_evals),   cmocka_unit_test(test_merge_max),
        cmocka_unit_test(test_merge_no_eval),       cmocka_unit_test(test_seen),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
