/* test_got.c - vt_got_patch (src/inject/vt_got.h): another object's calls
 * of a function go to the replacement, whether its GOT is read-only
 * (-z relro -z now), lazily bound, or reached through a GLOB_DAT slot
 * (the function's address taken); RELRO pages are read-only again after;
 * the object holding `self` and skipped paths keep calling the original;
 * a second patch changes nothing. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "vt_got.h"

int vt_got_target(int x);
int vt_got_call_now(int x);
int vt_got_call_lazy(int x);
int vt_got_call_addr(int x);

static int repl(int x)
{
    return x + 100;
}

/* the mappings of the file whose path contains `name`, as /proc/self/maps
 * lists them (address ranges and permissions) */
static void maps_of(const char *name, char *out, size_t len)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    size_t n = 0;
    out[0] = 0;
    while (f && fgets(line, sizeof(line), f)) {
        char range[64], perms[8];
        if (!strstr(line, name) || sscanf(line, "%63s %7s", range, perms) != 2)
            continue;
        int k = snprintf(out + n, len - n, "%s %s\n", range, perms);
        if (k < 0 || (size_t)k >= len - n)
            break;
        n += (size_t)k;
    }
    if (f)
        fclose(f);
}

static void test_patch(void **state)
{
    (void)state;
    assert_int_equal(vt_got_call_now(1), 2);
    assert_int_equal(vt_got_call_lazy(1), 2);
    assert_int_equal(vt_got_call_addr(1), 2);
    /* the caller built with -z now: its GOT page read-only before and after */
    char before[4096], after[4096];
    maps_of("libvt_got_caller_now", before, sizeof(before));
    assert_non_null(strstr(before, " r--p"));
    const vt_got_hook hooks[] = {{"vt_got_target", (void *)repl}};
    static const char *const skip[] = {"libvt_got_callee"};
    char what[256];
    int n = vt_got_patch(hooks, 1, (const void *)&test_patch, skip, 1, what, sizeof(what));
    assert_true(n >= 3);
    assert_non_null(strstr(what, "libvt_got_caller"));
    assert_int_equal(vt_got_call_now(1), 101);
    assert_int_equal(vt_got_call_lazy(1), 101);
    assert_int_equal(vt_got_call_addr(1), 101);
    /* this program (it holds `self`) still calls the original */
    assert_int_equal(vt_got_target(1), 2);
    /* the RELRO page is read-only again: the same mappings, the same modes */
    maps_of("libvt_got_caller_now", after, sizeof(after));
    assert_string_equal(before, after);
    /* again: nothing more to set */
    assert_int_equal(vt_got_patch(hooks, 1, (const void *)&test_patch, skip, 1, NULL, 0), 0);
    assert_int_equal(vt_got_call_now(5), 105);
}

static void test_nothing_to_patch(void **state)
{
    (void)state;
    const vt_got_hook hooks[] = {{"vt_got_no_such_function", (void *)repl}};
    char what[64] = "x";
    assert_int_equal(vt_got_patch(hooks, 1, NULL, NULL, 0, what, sizeof(what)), 0);
    assert_string_equal(what, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patch),
        cmocka_unit_test(test_nothing_to_patch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
