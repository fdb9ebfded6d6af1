/* vt_inject_int.h - libvramtrace.so's state, shared by its parts
 * (docs/ARCHITECTURE.md, "Inside the traced process"):
 *
 *   vt_inject.c           start-up: InitializeInjection, the clock, the
 *                         header, the writer, CUPTI's subscription
 *   vt_inject_driver.c    the driver callbacks' hot path (allocations and
 *                         frees of every family), the callback dispatch
 *   vt_inject_vmm.c       driver callbacks off the hot path: VMM, pools
 *   vt_inject_devices.c   contexts and devices (resource callbacks)
 *   vt_inject_nvtx.c      NVTX ranges and marks
 *   vt_inject_activity.c  CUPTI activity: kernels, module globals, the
 *                         drain thread (`vt-drain`)
 *   vt_inject_sampler.c   pool and device memory samples (`vt-sampler`)
 *   vt_inject_exit.c      exit, fatal signals, fork
 *   vt_inject_torch.c     PyTorch's caching allocator: the shim's attach and checks
 *   vt_inject_hook.c      tensor events from a Python memory hook (CuPy), via ctypes
 *   vt_inject_test.c      tests as ranges and what each left live (pytest plugin), via ctypes
 *
 * Rules inside the host process: never exit/abort, never take the GIL, one
 * message on failure and then stay out of the way.  Driver calls made by
 * this library (sampler, device description) are marked with a thread-local
 * flag that makes the callbacks ignore them.
 */
#ifndef VT_INJECT_INT_H
#define VT_INJECT_INT_H

#define _GNU_SOURCE
#include <cuda.h>
#include <cupti.h>
/* cupti.h brings generated_cuda_meta.h (the callback parameter structs) */
#include <generated_nvtx_meta.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "vt_capture.h"
#include "vt_clock.h"
#include "vt_config.h"
#include "vt_error.h"
#include "vt_hot.h"
#include "vt_event.h"
#ifdef VT_BENCH /* benchmark builds only (bench/inject.cmake): the gate and CUPTI attributes */
#include "vt_bench_cupti.h"
#include "vt_gate.h"
#endif
#include "vt_torch_abi.h"
#include "vt_unwind.h"
#include "vt_writer.h"
#ifdef VT_HAVE_PYSTACK
#include "vt_pystack.h"
#endif

#define VT_MAX_DEVICES 64
#define VT_MAX_POOLS 256
#define VT_MAX_NVTX_DOMAINS 64
#define VT_ACT_BUF_BYTES (4u << 20)

/* ------------------------------------------------------------------ state */

typedef struct {
    _Atomic uint64_t pool; /* 0 = free slot */
    uint32_t device;
    uint64_t last[4];
} pool_slot;

typedef struct {
    /* What every driver callback reads, in the first line (set at init;
     * `used` and `static_on` written at most a few times): a callback runs
     * after the host's own work, with little of this cached. */
    vt_writer *w;
    vt_unwinder *uw;
    _Atomic int active;
    int pystack;
    _Atomic int used;      /* a context was created or memory allocated: keep the trace */
    _Atomic int static_on; /* MEMORY2 activity enabled */
    int activity_on;       /* our buffer callbacks registered with CUPTI */
    CUptiResult (*reg_ts)(CUpti_TimestampCallbackFunc); /* cuptiActivityRegisterTimestampCallback, if this CUPTI has it */
    int selftime, stack_depth, stack_refs; /* cfg's */
    int tsc_events; /* the clock is vt_clock_now() on the TSC: an allocation's time from the callback's TSC read */
    _Atomic int torch_state; /* VT_TORCH_*: PyTorch's trace tracker (vt_inject_torch.c) */
    uint64_t init_ns; /* InitializeInjection's own time (VRAMTRACE_TIMINGS) */

    vt_inject_config cfg;
    CUpti_SubscriberHandle sub;
    char out_path[1100];
    /* devices */
    _Atomic int described[VT_MAX_DEVICES];
    _Atomic int async_seen[VT_MAX_DEVICES];
    char pci[VT_MAX_DEVICES][32];
    uint64_t mem_last[VT_MAX_DEVICES];
    /* pools */
    pool_slot pools[VT_MAX_POOLS];
    /* NVTX domains: handle -> name (written once per slot) */
    _Atomic(void *) nvtx_dom[VT_MAX_NVTX_DOMAINS];
    char nvtx_dom_name[VT_MAX_NVTX_DOMAINS][64];
    /* sampler */
    pthread_t sampler;
    int sampler_started;
    int gate;            /* the benchmark gate started (VT_BENCH builds only) */
    _Atomic int sampler_stop;
    /* signals */
    struct sigaction prev[32];
    int have_prev[32];
    _Atomic int in_signal;
    _Atomic int finished;
    _Atomic uint64_t stack_drops;
    _Atomic uint64_t alloc_count; /* allocation callbacks, for the MEMORY2 auto switch */
    /* clock of all events (setup_clock) */
    uint64_t (*clk)(void);
    double clk_ns;
    char clock_note[240];
} __attribute__((aligned(64))) vt_inject_state;

/* The PyTorch shim's states (vt_inject_torch.c): OFF without a shim;
 * WAIT for the caching allocator's first segment; ATTACHING (one thread);
 * CHECK until the tracker's first segment entry matched CUPTI's; ON;
 * DISABLED after any failure (entries ignored from then on); GATED:
 * ON, switched off by the benchmark gate (VT_BENCH builds only). */
enum { VT_TORCH_OFF = 0, VT_TORCH_WAIT, VT_TORCH_ATTACHING, VT_TORCH_CHECK, VT_TORCH_ON, VT_TORCH_DISABLED, VT_TORCH_GATED };

#define VT_STATIC_MAX_RATE 500 /* allocations per second above which MEMORY2 goes off (auto) */

/* Per-thread state, in one object so that a callback looks it up once
 * (VT_TLS_ADDR): `internal` nonzero: our own driver calls, or the sampler
 * thread; the last context seen and its device; self time, i.e. TSC cycles
 * spent in our driver callbacks (of one callback in 16, chosen by
 * selftime_sampled(), or of all with VRAMTRACE_SELFTIME=1), added to the
 * totals every 64 callbacks and reported in a Note at the end.  With
 * VRAMTRACE_SELFTIME=1 (cfg.selftime) also per phase (stack walk, Python,
 * writer push) and on stderr: each rdtsc costs ~20 ns on the GPU
 * machine's VMs, so a callback reads the TSC once (at its start, which is
 * also the time of its event) and a second time only when timed. */
typedef struct {
    int internal;
    uint32_t dev;
    CUcontext ctx;
    uint64_t cb_n, cb_timed, cb_cyc, push_cyc;
    vt_capture_times cap; /* stack capture, native walk */
    uint64_t seg_addr, seg_size; /* the last device allocation or map, for the PyTorch layout check */
    vt_capture_scratch scratch; /* a capture's buffers (vt_capture.h) */
} inject_tls;
/* Completed activity buffers go to our own drain thread: CUPTI's thread
 * returns at once, and the drain thread may wait for the writer (a buffer
 * holds ~15k kernels, more than a producer ring) without stalling CUPTI. */
typedef struct act_buf {
    struct act_buf *next;
    uint8_t *buf;
    size_t valid;
    int guest_clock; /* completed after a second client set CUPTI's clock */
} act_buf;
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv, idle_cv;
    act_buf *head, *tail;
    int stop, busy, started;
    pthread_t thread;
    uint64_t records, buffers, cycles;
} vt_act_state;

#define P(type) const type *p = (const type *)cd->functionParams
#define CB(name) CUPTI_DRIVER_TRACE_CBID_##name

/* ---- shared between the parts */

void on_driver_vmm(inject_tls *T, CUpti_CallbackId cbid, const CUpti_CallbackData *cd, uint32_t dev, CUresult rc,
                   uint64_t corr);

extern vt_inject_state g;
extern __thread inject_tls t_in;
extern pthread_mutex_t pool_mu;
extern _Atomic uint64_t g_cb_n;
extern _Atomic uint64_t g_cb_timed;
extern _Atomic uint64_t g_cb_cyc;
extern _Atomic uint64_t g_stk_cyc;
extern _Atomic uint64_t g_uw_cyc;
extern _Atomic uint64_t g_push_cyc;
extern uint64_t g_tsc0;
extern uint64_t g_ns0;
uint64_t mono_ns(void);
void say(const char *fmt, ...);
void note(vt_severity sev, const char *text);
void emit_failed(inject_tls *T, uint64_t size, uint32_t dev, vt_memkind kind, vt_allocapi api, CUresult err,
                        uint64_t stream, uint64_t pool, uint64_t corr);
void vt_inject_emit(vt_event *ev);
void vt_inject_capture_site(inject_tls *T, vt_site *site);
void pool_track(uint64_t pool, uint32_t dev);
void pool_untrack(uint64_t pool);
void on_resource(CUpti_CallbackId cbid, const CUpti_ResourceData *rd);
void on_nvtx(CUpti_CallbackId cbid, const CUpti_NvtxData *nd);
VT_HOT void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data);
void CUPTIAPI on_buffer_requested(uint8_t **buf, size_t *size, size_t *max_records);
extern vt_act_state act;
void *drain_main(void *arg);
void drain_wait_idle(void);
void CUPTIAPI on_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid);
/* CUPTI shared with a second client (vt_actmux.h): set up after our
 * subscription (and the activity API's, when activity_on); what the
 * client did, noted at the end */
void share_cupti(int activity_on);
void share_activity_notes(void);
void *sampler_main(void *arg);
void on_exit_handler(void);
void install_signals(void);
void on_fork_child(void);
int enable_driver_callbacks(int on);
void torch_try_attach(inject_tls *T);
void torch_check_layout(inject_tls *T, const vt_torch_entry *e);
void torch_on_entry(const vt_torch_entry *e);
int hook_attached(void); /* a Python memory hook reports tensor events (vt_inject_hook.c) */
/* Tests (vt_inject_test.c): while one is open (g_mark_on), every
 * allocation and free also goes to its table of live blocks; the hot path
 * pays the flag's load and a predicted branch otherwise. */
extern _Atomic int g_mark_on;
void mark_alloc(uint64_t addr, uint64_t size, uint32_t dev, vt_allocapi api);
void mark_free(uint64_t addr, vt_allocapi api);
void mark_fork_child(void);
void test_begin_pending(void); /* at start: the test open before CUDA loaded the library */
static inline int mark_on(void)
{
    return __builtin_expect(atomic_load_explicit(&g_mark_on, memory_order_relaxed), 0);
}
/* A device allocation or map (addr, size) seen by a driver callback: while
 * the PyTorch shim waits or checks, remember it and try to attach. */
static inline void torch_seen_segment(inject_tls *T, uint64_t addr, uint64_t size)
{
    int s = atomic_load_explicit(&g.torch_state, memory_order_relaxed);
    if (__builtin_expect(s != VT_TORCH_WAIT && s != VT_TORCH_CHECK, 1))
        return;
    T->seg_addr = addr;
    T->seg_size = size;
    if (s == VT_TORCH_WAIT)
        torch_try_attach(T);
}

#endif
