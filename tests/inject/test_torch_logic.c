/* test_torch_logic.c - the pure parts of the PyTorch tracker's use
 * (src/inject/vt_torch_logic.h): the layout check against what CUPTI saw,
 * and which module is PyTorch's CUDA allocator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_layout), cmocka_unit_test(test_c10_cuda)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
