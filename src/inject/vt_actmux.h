/* vt_actmux.h - CUPTI's activity API shared with a second client in the
 * process (torch.profiler's Kineto, Nsight's own injection is not one).
 *
 * CUPTI keeps one pair of buffer callbacks per process: the client that
 * registers last gets every record, of every kind, and a client that
 * disables a kind disables it for both.  vramtrace registers first (at
 * cuInit) and then points other libraries' calls of
 * cuptiActivityRegisterCallbacks, cuptiActivityEnable and
 * cuptiActivityDisable at these functions (vt_got.h), and of cuptiSubscribe
 * and its kin (below: Kineto gives up on GPU activity when its subscribe
 * fails):
 *   - the guest's callbacks are kept here, never given to CUPTI;
 *   - while the guest has a kind enabled, CUPTI's buffer requests are
 *     answered with the guest's buffers; vramtrace reads its own records
 *     in them, then hands each back to the guest's completion callback
 *     (a buffer goes back to whoever gave it, whatever happened between);
 *   - the guest enabling its first kind flushes the buffers in flight, so
 *     that its records land in its buffers; the guest disabling a kind
 *     vramtrace needs (kernels) leaves it on in CUPTI.
 * A guest buffer holds vramtrace's kinds too (kernels it may not have
 * asked for).  CUPTI calls are made through `real`, so that the logic is
 * tested without CUPTI (tests/inject/test_actmux.c).  Kinds are CUPTI's
 * CUpti_ActivityKind values; results are CUptiResult values (0: success). */
#ifndef VT_ACTMUX_H
#define VT_ACTMUX_H

#include <stddef.h>
#include <stdint.h>

typedef void (*vt_actmux_req_fn)(uint8_t **buf, size_t *size, size_t *max_records);
typedef void (*vt_actmux_done_fn)(void *ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid);

typedef void (*vt_actmux_cb_fn)(void *ud, int domain, uint32_t cbid, const void *data);

typedef struct {
    int (*enable)(int kind);
    int (*disable)(int kind);
    int (*flush)(uint32_t flag);
    uint32_t flush_forced; /* CUPTI_ACTIVITY_FLAG_FLUSH_FORCED */
    /* callbacks, on vramtrace's own subscriber */
    int (*enable_cb)(uint32_t on, int domain, uint32_t cbid);
    int (*get_cb)(uint32_t *on, int domain, uint32_t cbid);
    uint32_t ncbid[16]; /* callback ids of each domain (CUPTI_*_CBID_SIZE) */
    int busy;           /* CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED */
} vt_actmux_real;

#define VT_ACTMUX_MAX_KIND 128
#define VT_ACTMUX_MAX_OWNED 256 /* guest buffers in flight at once */
#define VT_ACTMUX_DOMAINS 16
#define VT_ACTMUX_CBIDS 1024 /* CUDA 13.0: 807 driver, 523 runtime ids */

void vt_actmux_init(const vt_actmux_real *real);
/* vramtrace needs `kind` enabled (on) or no longer (off) */
void vt_actmux_keep(int kind, int on);

/* the guest's calls */
int vt_actmux_register(vt_actmux_req_fn req, vt_actmux_done_fn done);
int vt_actmux_enable(int kind);
int vt_actmux_disable(int kind);

/* The guest's callback subscription: CUPTI takes one subscriber per
 * process, vramtrace's; the guest gets a handle of its own (vt_actmux_sub)
 * and its callbacks are called from vramtrace's for the ids it enabled.
 * An id the guest enables is enabled on vramtrace's subscriber; one it
 * disables is disabled there unless vramtrace had it on before.  Results
 * are CUptiResult values. */
extern void *const vt_actmux_sub; /* the guest's subscriber handle */
int vt_actmux_subscribe(vt_actmux_cb_fn fn, void *ud);
int vt_actmux_unsubscribe(void);
int vt_actmux_enable_callback(uint32_t on, int domain, uint32_t cbid);
int vt_actmux_enable_domain(uint32_t on, int domain);
int vt_actmux_get_callback(uint32_t *on, int domain, uint32_t cbid);
/* from vramtrace's callback, first thing: the guest's callback if it
 * enabled this id (a load and a test when there is no guest) */
extern vt_actmux_cb_fn vt_actmux_guest_cb;
void vt_actmux_dispatch(int domain, uint32_t cbid, const void *data);
static inline void vt_actmux_callback(int domain, uint32_t cbid, const void *data)
{
    if (__builtin_expect(__atomic_load_n(&vt_actmux_guest_cb, __ATOMIC_RELAXED) != NULL, 0))
        vt_actmux_dispatch(domain, cbid, data);
}

/* vramtrace's buffer callbacks: a buffer request the guest answers (1:
 * *buf is the guest's; 0: give one of ours), and whether a completed
 * buffer is the guest's (1: taken out of the set; process it, then
 * vt_actmux_give it back) */
int vt_actmux_request(uint8_t **buf, size_t *size, size_t *max_records);
int vt_actmux_take(const uint8_t *buf);
void vt_actmux_give(void *ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid);

/* A time on the guest's clock (CUPTI's once the guest registered its
 * own: Kineto's raw TSC cycles or nanoseconds) as one on vramtrace's:
 * linear through two readings of both, (g0, o0) and (g1, o1); with one
 * reading (g1 <= g0) an offset.  Off: t as it is. */
typedef struct {
    int on;
    uint64_t g0, o0, g1, o1;
} vt_clock_map;

static inline uint64_t vt_clock_map_apply(const vt_clock_map *m, uint64_t t)
{
    if (!m->on || !t)
        return t;
    __int128 d = (__int128)t - (__int128)m->g0;
    if (m->g1 > m->g0)
        d = d * (__int128)((__int128)m->o1 - (__int128)m->o0) / (__int128)(m->g1 - m->g0);
    __int128 o = (__int128)m->o0 + d;
    return o < 0 ? 0 : (uint64_t)o;
}

/* what happened, for the trace's notes */
typedef struct {
    int registered;       /* the guest registered its callbacks */
    uint64_t guest_bufs;  /* buffers the guest gave */
    uint64_t kept_on;     /* disables of a kind vramtrace needs, not passed on */
    uint64_t set_full;    /* requests answered with our buffer: the set was full */
    int subscribed;       /* the guest subscribed to callbacks */
    uint64_t callbacks;   /* callbacks passed to it */
} vt_actmux_stats;
void vt_actmux_get_stats(vt_actmux_stats *st);

#endif
