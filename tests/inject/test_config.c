/* test_config.c - configuration parsing, output naming and program names
 * of the injection library (src/inject/vt_config.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "vt_config.h"
#include "vt_error.h"

typedef struct { const char *const *kv; } fake_env; /* NULL-terminated name,value pairs */

static const char *fake_getenv(const char *name, void *arg)
{
    const fake_env *e = arg;
    for (const char *const *p = e->kv; p && *p; p += 2)
        if (strcmp(p[0], name) == 0)
            return p[1];
    return NULL;
}

static void test_defaults(void **state)
{
    (void)state;
    const char *kv[] = {NULL};
    fake_env e = {kv};
    vt_inject_config c;
    vt_config_parse(&c, fake_getenv, &e);
    assert_string_equal(c.output, "vramtrace.%n.%p.zst");
    assert_int_equal(c.kernels, 1);
    assert_int_equal(c.native_stacks, 1);
    assert_int_equal(c.python_stacks, 1);
    assert_int_equal(c.stack_depth, 32);
    assert_int_equal(c.flush_ms, 100);
    assert_int_equal(c.sample_ms, 200);
    assert_int_equal(c.static_mem, -1); /* auto */
    assert_int_equal(c.quiet, 0);
    assert_int_equal(c.selftime, 0);
    assert_int_equal(c.stack_refs, 1);
    assert_string_equal(c.warning, "");
}

static void test_values(void **state)
{
    (void)state;
    const char *kv[] = {"VRAMTRACE_OUTPUT", "/tmp/t.%r.zst", "VRAMTRACE_KERNELS", "off",
                        "VRAMTRACE_NATIVE_STACKS", "0", "VRAMTRACE_PYTHON_STACKS", "No",
                        "VRAMTRACE_STACK_DEPTH", "64", "VRAMTRACE_FLUSH_MS", "250",
                        "VRAMTRACE_SAMPLE_MS", "0", "VRAMTRACE_STATIC", "false", "VRAMTRACE_QUIET", "TRUE",
                        "VRAMTRACE_SELFTIME", "1", "VRAMTRACE_STACK_REFS", "off", NULL};
    fake_env e = {kv};
    vt_inject_config c;
    vt_config_parse(&c, fake_getenv, &e);
    assert_string_equal(c.output, "/tmp/t.%r.zst");
    assert_int_equal(c.kernels, 0);
    assert_int_equal(c.native_stacks, 0);
    assert_int_equal(c.python_stacks, 0);
    assert_int_equal(c.stack_depth, 64);
    assert_int_equal(c.flush_ms, 250);
    assert_int_equal(c.sample_ms, 0);
    assert_int_equal(c.static_mem, 0);
    assert_int_equal(c.quiet, 1);
    assert_int_equal(c.selftime, 1);
    assert_int_equal(c.stack_refs, 0);
    assert_string_equal(c.warning, "");
}

static void test_native_full(void **state)
{
    (void)state;
    const char *full[] = {"VRAMTRACE_NATIVE_STACKS", "FULL", NULL};
    fake_env e = {full};
    vt_inject_config c;
    vt_config_parse(&c, fake_getenv, &e);
    assert_int_equal(c.native_stacks, VT_CFG_NATIVE_FULL);
    assert_string_equal(c.warning, "");
    const char *bad[] = {"VRAMTRACE_NATIVE_STACKS", "fullish", NULL};
    e.kv = bad;
    vt_config_parse(&c, fake_getenv, &e);
    assert_int_equal(c.native_stacks, 1);
    assert_true(strstr(c.warning, "VRAMTRACE_NATIVE_STACKS") != NULL);
}

static void test_invalid_keeps_defaults(void **state)
{
    (void)state;
    const char *kv[] = {"VRAMTRACE_STACK_DEPTH", "abc", "VRAMTRACE_KERNELS", "maybe", "VRAMTRACE_FLUSH_MS", "5",
                        "VRAMTRACE_SAMPLE_MS", "3", NULL};
    fake_env e = {kv};
    vt_inject_config c;
    vt_config_parse(&c, fake_getenv, &e);
    assert_int_equal(c.stack_depth, 32);
    assert_int_equal(c.kernels, 1);
    assert_int_equal(c.flush_ms, 100);
    assert_int_equal(c.sample_ms, 200);
    assert_string_equal(c.warning, "VRAMTRACE_KERNELS=maybe ignored (invalid value)"); /* the first problem, in parse order */
    const char *kv2[] = {"VRAMTRACE_STACK_DEPTH", "0", NULL};
    e.kv = kv2;
    vt_config_parse(&c, fake_getenv, &e);
    assert_int_equal(c.stack_depth, 32);
    assert_true(strstr(c.warning, "VRAMTRACE_STACK_DEPTH=0") != NULL);
    const char *kv3[] = {"VRAMTRACE_STACK_DEPTH", "257", NULL};
    e.kv = kv3;
    vt_config_parse(&c, fake_getenv, &e);
    assert_int_equal(c.stack_depth, 32);
}

static void test_clock(void **state)
{
    (void)state;
    vt_inject_config c;
    const char *const none[] = {NULL};
    fake_env e0 = {none};
    vt_config_parse(&c, fake_getenv, &e0);
    assert_int_equal(c.clock, VT_CFG_CLOCK_AUTO);
    const char *const names[][2] = {{"tsc", "0"}, {"AUTO", "0"}, {"monotonic", "1"}, {"cupti", "2"}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *const kv[] = {"VRAMTRACE_CLOCK", names[i][0], NULL};
        fake_env e = {kv};
        vt_config_parse(&c, fake_getenv, &e);
        assert_int_equal(c.clock, atoi(names[i][1]));
        assert_string_equal(c.warning, "");
    }
    const char *const bad[] = {"VRAMTRACE_CLOCK", "sundial", NULL};
    fake_env eb = {bad};
    vt_config_parse(&c, fake_getenv, &eb);
    assert_int_equal(c.clock, VT_CFG_CLOCK_AUTO);
    assert_string_equal(c.warning, "VRAMTRACE_CLOCK=sundial ignored (invalid value)");
}

static void test_bool(void **state)
{
    (void)state;
    assert_int_equal(vt_config_bool("1"), 1);
    assert_int_equal(vt_config_bool("yes"), 1);
    assert_int_equal(vt_config_bool("ON"), 1);
    assert_int_equal(vt_config_bool("0"), 0);
    assert_int_equal(vt_config_bool("Off"), 0);
    assert_int_equal(vt_config_bool(""), -1);
    assert_int_equal(vt_config_bool("2"), -1);
    assert_int_equal(vt_config_bool(NULL), -1);
}

static void test_expand(void **state)
{
    (void)state;
    char buf[256];
    vt_output_vars v = {.pid = 4242, .host = "gpu-node.7", .rank = "3", .program = "train"};
    assert_int_equal(vt_config_expand_output("vramtrace.%n.%p.zst", &v, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "vramtrace.train.4242.zst");
    assert_int_equal(vt_config_expand_output("/out/%h/r%r-%p-%%-%x.zst", &v, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "/out/gpu-node.7/r3-4242-%-%x.zst");
    /* sanitizing: a program name with '/' or spaces cannot escape the directory */
    vt_output_vars w = {.pid = 1, .host = NULL, .rank = NULL, .program = "../a b"};
    assert_int_equal(vt_config_expand_output("%n.%h.%r.%p", &w, buf, sizeof(buf)), 0);
    assert_string_equal(buf, ".._a_b.unknown.0.1");
    /* trailing lone % is kept */
    assert_int_equal(vt_config_expand_output("a%", &v, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "a%");
    /* too small */
    char small[8];
    assert_int_equal(vt_config_expand_output("vramtrace.%n.%p.zst", &v, small, sizeof(small)), VT_ERR_TOO_LARGE);
    assert_string_equal(small, "");
    char exact[5];
    assert_int_equal(vt_config_expand_output("%p", &v, exact, sizeof(exact)), 0);
    assert_string_equal(exact, "4242");
}

static void test_program_name(void **state)
{
    (void)state;
    char buf[64];
    const char *a1[] = {"/usr/bin/python3.12", "-u", "/home/x/train.py", "--lr", "1"};
    vt_config_program_name(a1, 5, buf, sizeof(buf));
    assert_string_equal(buf, "train");
    const char *a2[] = {"python3", "-m", "torch.distributed.run", "x.py"};
    vt_config_program_name(a2, 4, buf, sizeof(buf));
    assert_string_equal(buf, "torch.distributed.run");
    const char *a3[] = {"python", "-c", "import torch"};
    vt_config_program_name(a3, 3, buf, sizeof(buf));
    assert_string_equal(buf, "python");
    const char *a4[] = {"./build/tests/gpu/alloc_basic", "x"};
    vt_config_program_name(a4, 2, buf, sizeof(buf));
    assert_string_equal(buf, "alloc_basic");
    const char *a5[] = {"python3", "-X", "dev", "script"};
    vt_config_program_name(a5, 4, buf, sizeof(buf));
    assert_string_equal(buf, "script");
    vt_config_program_name(NULL, 0, buf, sizeof(buf));
    assert_string_equal(buf, "unknown");
}

static void test_rank(void **state)
{
    (void)state;
    const char *kv[] = {"SLURM_PROCID", "5", NULL};
    fake_env e = {kv};
    assert_string_equal(vt_config_rank(fake_getenv, &e), "5");
    const char *kv2[] = {"SLURM_PROCID", "5", "RANK", "2", NULL};
    e.kv = kv2;
    assert_string_equal(vt_config_rank(fake_getenv, &e), "2");
    const char *kv3[] = {NULL};
    e.kv = kv3;
    assert_null(vt_config_rank(fake_getenv, &e));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),   cmocka_unit_test(test_values), cmocka_unit_test(test_invalid_keeps_defaults),
        cmocka_unit_test(test_bool), cmocka_unit_test(test_clock),       cmocka_unit_test(test_expand), cmocka_unit_test(test_program_name),
        cmocka_unit_test(test_rank), cmocka_unit_test(test_native_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
