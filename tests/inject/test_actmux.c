/* test_actmux.c - CUPTI's activity API shared with a second client
 * (src/inject/vt_actmux.h), against a stand-in for CUPTI's calls: the
 * guest's callbacks never reach CUPTI; while it has a kind on, requests
 * are answered with its buffers and each goes back to it, even after it
 * stopped; its first enable flushes what is in flight; its disable of a
 * kind vramtrace needs stays on in CUPTI; a refused request and a full
 * set fall back to vramtrace's own buffer; the guest's callback
 * subscription (test_callbacks). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "vt_actmux.h"

enum { KERNEL = 10, MEMCPY = 1, RUNTIME = 5, FLUSH_FORCED = 1 };

static int cupti_on[2 * VT_ACTMUX_MAX_KIND], flushes, refuse;
static int real_enable(int k)
{
    cupti_on[k] = 1;
    return 0;
}
static int real_disable(int k)
{
    cupti_on[k] = 0;
    return 0;
}
static int real_flush(uint32_t flag)
{
    assert_int_equal(flag, FLUSH_FORCED);
    flushes++;
    return 0;
}

static uint32_t cb_on[VT_ACTMUX_DOMAINS][VT_ACTMUX_CBIDS];
static int real_enable_cb(uint32_t on, int d, uint32_t c)
{
    cb_on[d][c] = on;
    return 0;
}
static int real_get_cb(uint32_t *on, int d, uint32_t c)
{
    *on = cb_on[d][c];
    return 0;
}

static uint8_t guest_mem[VT_ACTMUX_MAX_OWNED + 8][64];
static int guest_given, guest_back, guest_back_valid;
static void guest_req(uint8_t **buf, size_t *size, size_t *max)
{
    if (refuse || guest_given == VT_ACTMUX_MAX_OWNED + 8) {
        *buf = NULL;
        *size = 0;
        return;
    }
    *buf = guest_mem[guest_given++];
    *size = 64;
    *max = 0;
}
static void guest_done(void *ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
    (void)ctx;
    (void)stream;
    assert_true(buf >= guest_mem[0] && buf < guest_mem[VT_ACTMUX_MAX_OWNED + 8]);
    assert_int_equal(size, 64);
    guest_back++;
    guest_back_valid += (int)valid;
}

static void test_share(void **state)
{
    (void)state;
    const vt_actmux_real real = {real_enable, real_disable, real_flush, FLUSH_FORCED,
                                 real_enable_cb, real_get_cb, {0}, 39};
    vt_actmux_init(&real);
    vt_actmux_keep(KERNEL, 1);
    cupti_on[KERNEL] = 1; /* vramtrace enabled it itself */
    uint8_t *b;
    size_t sz, mx;
    /* no guest yet: our buffers */
    assert_int_equal(vt_actmux_request(&b, &sz, &mx), 0);
    /* the guest registers: nothing changes until it enables a kind */
    assert_int_equal(vt_actmux_register(guest_req, guest_done), 0);
    assert_int_equal(vt_actmux_request(&b, &sz, &mx), 0);
    assert_int_equal(vt_actmux_enable(KERNEL), 0);
    assert_int_equal(flushes, 1); /* the buffers in flight ended first */
    assert_int_equal(vt_actmux_enable(MEMCPY), 0);
    assert_int_equal(flushes, 1); /* only for its first kind */
    assert_true(cupti_on[MEMCPY]);
    /* requests answered with its buffers */
    uint8_t *g1, *g2;
    assert_int_equal(vt_actmux_request(&g1, &sz, &mx), 1);
    assert_ptr_equal(g1, guest_mem[0]);
    assert_int_equal(sz, 64);
    assert_int_equal(vt_actmux_request(&g2, &sz, &mx), 1);
    /* a buffer of ours is not the guest's */
    uint8_t ours[8];
    assert_int_equal(vt_actmux_take(ours), 0);
    assert_int_equal(vt_actmux_take(g1), 1);
    assert_int_equal(vt_actmux_take(g1), 0); /* once */
    vt_actmux_give(NULL, 3, g1, 64, 40);
    assert_int_equal(guest_back, 1);
    assert_int_equal(guest_back_valid, 40);
    /* the guest stops: kernels stay on for vramtrace, memcpy goes off */
    assert_int_equal(vt_actmux_disable(KERNEL), 0);
    assert_true(cupti_on[KERNEL]);
    assert_int_equal(vt_actmux_disable(MEMCPY), 0);
    assert_false(cupti_on[MEMCPY]);
    /* requests are ours again, the buffer still in flight goes back to it */
    assert_int_equal(vt_actmux_request(&b, &sz, &mx), 0);
    assert_int_equal(vt_actmux_take(g2), 1);
    vt_actmux_give(NULL, 3, g2, 64, 8);
    assert_int_equal(guest_back, 2);
    vt_actmux_stats st;
    vt_actmux_get_stats(&st);
    assert_true(st.registered);
    assert_int_equal(st.guest_bufs, 2);
    assert_int_equal(st.kept_on, 1);
    /* a second session: a refused request is answered with ours */
    assert_int_equal(vt_actmux_enable(RUNTIME), 0);
    assert_int_equal(flushes, 2);
    refuse = 1;
    assert_int_equal(vt_actmux_request(&b, &sz, &mx), 0);
    refuse = 0;
    /* the set of buffers in flight full: ours, counted */
    int got = 0;
    for (int i = 0; i < VT_ACTMUX_MAX_OWNED + 4; i++)
        got += vt_actmux_request(&b, &sz, &mx);
    assert_int_equal(got, VT_ACTMUX_MAX_OWNED);
    vt_actmux_get_stats(&st);
    assert_true(st.set_full >= 4);
    /* unknown kinds (past the bitmap) count as on and off */
    assert_int_equal(vt_actmux_disable(RUNTIME), 0);
    assert_int_equal(vt_actmux_enable(VT_ACTMUX_MAX_KIND + 3), 0);
    assert_int_equal(vt_actmux_disable(VT_ACTMUX_MAX_KIND + 3), 0);
    assert_int_equal(vt_actmux_request(&b, &sz, &mx), 0); /* no kind on */
}

static int guest_calls, guest_last;
static void guest_cb(void *ud, int domain, uint32_t cbid, const void *data)
{
    assert_ptr_equal(ud, &guest_calls);
    assert_ptr_equal(data, &guest_last);
    (void)domain;
    guest_calls++;
    guest_last = (int)cbid;
}

enum { DRIVER = 1, RUNTIME_D = 2, RESOURCE = 3, CTX_CREATED = 1, LAUNCH = 307 };

/* the guest's subscription: a handle of its own, its ids enabled on ours
 * and passed to it; an id vramtrace had on stays on when the guest turns
 * it off; a second subscribe is refused; unsubscribe turns its ids off */
static void test_callbacks(void **state)
{
    (void)state;
    vt_actmux_real real = {real_enable, real_disable, real_flush, FLUSH_FORCED, real_enable_cb, real_get_cb, {0}, 39};
    real.ncbid[RUNTIME_D] = 523;
    vt_actmux_init(&real);
    cb_on[RESOURCE][CTX_CREATED] = 1; /* vramtrace's own */
    vt_actmux_callback(RESOURCE, CTX_CREATED, &guest_last);
    assert_int_equal(guest_calls, 0); /* no guest: nothing */
    assert_non_null(vt_actmux_sub);
    assert_int_equal(vt_actmux_subscribe(guest_cb, &guest_calls), 0);
    assert_int_equal(vt_actmux_subscribe(guest_cb, &guest_calls), 39);
    vt_actmux_callback(RESOURCE, CTX_CREATED, &guest_last);
    assert_int_equal(guest_calls, 0); /* subscribed, nothing enabled */
    assert_int_equal(vt_actmux_enable_callback(1, RESOURCE, CTX_CREATED), 0);
    assert_int_equal(vt_actmux_enable_callback(1, DRIVER, LAUNCH), 0);
    assert_int_equal(cb_on[DRIVER][LAUNCH], 1);
    uint32_t on = 0;
    assert_int_equal(vt_actmux_get_callback(&on, DRIVER, LAUNCH), 0);
    assert_int_equal(on, 1);
    vt_actmux_callback(RESOURCE, CTX_CREATED, &guest_last);
    vt_actmux_callback(DRIVER, LAUNCH, &guest_last);
    vt_actmux_callback(DRIVER, LAUNCH + 1, &guest_last); /* not its */
    assert_int_equal(guest_calls, 2);
    assert_int_equal(guest_last, LAUNCH);
    /* off: the driver id goes off in CUPTI, the resource id was ours first */
    assert_int_equal(vt_actmux_enable_callback(0, DRIVER, LAUNCH), 0);
    assert_int_equal(cb_on[DRIVER][LAUNCH], 0);
    assert_int_equal(vt_actmux_enable_callback(0, RESOURCE, CTX_CREATED), 0);
    assert_int_equal(cb_on[RESOURCE][CTX_CREATED], 1);
    vt_actmux_callback(RESOURCE, CTX_CREATED, &guest_last);
    assert_int_equal(guest_calls, 2);
    /* a whole domain, then unsubscribe: every id it turned on goes off */
    assert_int_equal(vt_actmux_enable_domain(1, RUNTIME_D), 0);
    assert_int_equal(cb_on[RUNTIME_D][1], 1);
    assert_int_equal(cb_on[RUNTIME_D][522], 1);
    assert_int_equal(cb_on[RUNTIME_D][523], 0);
    vt_actmux_callback(RUNTIME_D, 211, &guest_last);
    assert_int_equal(guest_calls, 3);
    /* out of range: no crash, not passed on */
    vt_actmux_callback(99, 1, &guest_last);
    vt_actmux_callback(RUNTIME_D, 5000, &guest_last);
    assert_int_equal(guest_calls, 3);
    assert_int_equal(vt_actmux_unsubscribe(), 0);
    assert_int_equal(cb_on[RUNTIME_D][211], 0);
    assert_int_equal(cb_on[RESOURCE][CTX_CREATED], 1);
    vt_actmux_callback(RUNTIME_D, 211, &guest_last);
    assert_int_equal(guest_calls, 3);
    vt_actmux_stats st;
    vt_actmux_get_stats(&st);
    assert_int_equal(st.callbacks, 3);
    assert_false(st.subscribed);
    /* and it may subscribe again */
    assert_int_equal(vt_actmux_subscribe(guest_cb, &guest_calls), 0);
    assert_int_equal(vt_actmux_unsubscribe(), 0);
}

/* kernel times on the guest's clock mapped back: TSC cycles at 2.5 per
 * ns, nanoseconds with another zero, one reading only, off */
static void test_clock_map(void **state)
{
    (void)state;
    vt_clock_map m = {1, 1000000000ull, 5000, 3500000000ull, 1000005000ull}; /* 2.5e9 cycles = 1e9 ns */
    assert_int_equal(vt_clock_map_apply(&m, 1000000000ull), 5000);
    assert_int_equal(vt_clock_map_apply(&m, 1250000000ull), 100005000ull);  /* 0.25e9 cycles = 100 ms */
    assert_int_equal(vt_clock_map_apply(&m, 999997500ull), 4000);           /* before the first reading */
    assert_int_equal(vt_clock_map_apply(&m, 1000ull), 0);                  /* far before: clamped */
    vt_clock_map n = {1, 81000000000ull, 4000000000ull, 81000000000ull, 4000000000ull};
    assert_int_equal(vt_clock_map_apply(&n, 81762674013ull), 4762674013ull); /* one reading: an offset */
    n.on = 0;
    assert_int_equal(vt_clock_map_apply(&n, 81762674013ull), 81762674013ull);
    n.on = 1;
    assert_int_equal(vt_clock_map_apply(&n, 0), 0); /* no time stays none */
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_share), cmocka_unit_test(test_callbacks),
                                       cmocka_unit_test(test_clock_map)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
