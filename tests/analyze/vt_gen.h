/* vt_gen.h - tiny helpers to write synthetic traces with the core writer
 * (tests/analyze generators and bench/analyze).  Deterministic: the
 * writer's clock is a variable set by the caller, header fields fixed.
 * Header-only (static functions) so each program includes it once. */
#ifndef VT_GEN_H
#define VT_GEN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vt_error.h"
#include "vt_writer.h"

#define MS 1000000ull
#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define GEN_BASE 1000000000000ull /* trace clock of the header (1000 s) */

static vt_writer *g_w;
static uint64_t g_now = GEN_BASE;
static unsigned long g_emitted;

static uint64_t gen_clock(void)
{
    return g_now;
}

static __attribute__((unused)) void gen_die(const char *what, int rc)
{
    fprintf(stderr, "gen: %s: %s\n", what, vt_strerror(rc));
    exit(1);
}

static uint32_t g_tid; /* the traced thread's tid in every site: the process's pid (gen_open), not the generator's */

static __attribute__((unused)) void gen_emit(vt_event *ev)
{
    if (ev->time_ns)
        g_now = ev->time_ns;
    vt_site *site = NULL;
    switch (ev->type) {
    case VT_EV_ALLOC: site = &ev->u.alloc.site; break;
    case VT_EV_FREE: site = &ev->u.free.site; break;
    case VT_EV_ALLOC_FAILED: site = &ev->u.alloc_failed.site; break;
    case VT_EV_NVTX: site = &ev->u.nvtx.site; break;
    case VT_EV_VMM_RESERVE: case VT_EV_VMM_ADDRESS_FREE: case VT_EV_VMM_UNMAP: site = &ev->u.vmm_range.site; break;
    case VT_EV_VMM_CREATE: site = &ev->u.vmm_create.site; break;
    case VT_EV_VMM_RELEASE: site = &ev->u.vmm_release.site; break;
    case VT_EV_VMM_MAP: site = &ev->u.vmm_map.site; break;
    case VT_EV_POOL: site = &ev->u.pool.site; break;
    default: break;
    }
    if (site && !site->tid)
        site->tid = g_tid;
    int rc;
    while ((rc = vt_writer_emit(g_w, ev)) == VT_ERR_DROPPED)
        vt_writer_flush(g_w);
    if (rc)
        gen_die("emit", rc);
    if ((++g_emitted & 0x3fff) == 0)
        vt_writer_flush(g_w);
}

typedef struct {
    const char *program;
    uint32_t pid;
    const char *rank;
    const char *alloc_conf;
    const char *env_name, *env_value; /* one more variable of the header (an allocator's setting) */
    int kernels, native, python;
    size_t frame_bytes; /* 0: the writer's default */
    const char *host;   /* NULL: "testhost" */
} gen_proc;

static __attribute__((unused)) void gen_open(const char *path, const gen_proc *gp)
{
    unlink(path);
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.path = path;
    cfg.clock_fn = gen_clock;
    cfg.clock = VT_CLOCK_MONOTONIC;
    cfg.ring_bytes = 64u << 20;
    cfg.flush_ms = 1000;
    if (gp->frame_bytes)
        cfg.frame_bytes = gp->frame_bytes;
    g_now = GEN_BASE;
    const char *names[4], *values[4];
    const char *argv[3] = {"python3", gp->program, "--epochs=1"};
    uint32_t nenv = 0;
    if (gp->rank) {
        names[nenv] = "RANK";
        values[nenv++] = gp->rank;
        names[nenv] = "WORLD_SIZE";
        values[nenv++] = "2";
    }
    if (gp->alloc_conf) {
        names[nenv] = "PYTORCH_CUDA_ALLOC_CONF";
        values[nenv++] = gp->alloc_conf;
    }
    if (gp->env_name) {
        names[nenv] = gp->env_name;
        values[nenv++] = gp->env_value;
    }
    vt_ev_header h;
    memset(&h, 0, sizeof(h));
    h.pid = gp->pid;
    g_tid = gp->pid;
    h.ppid = 1;
    h.hostname = gp->host ? gp->host : "testhost";
    h.program = gp->program;
    h.argv = argv;
    h.argc = 3;
    h.env_names = names;
    h.env_values = values;
    h.nenv = nenv;
    h.clock = VT_CLOCK_MONOTONIC;
    h.trace_clock_ns = GEN_BASE;
    h.realtime_ns = 1796000000000000000ull;
    h.kernels = gp->kernels;
    h.native_stacks = gp->native;
    h.python_stacks = gp->python;
    int rc = vt_writer_create(&g_w, &cfg, &h);
    if (rc)
        gen_die(path, rc);
}

static __attribute__((unused)) void gen_close(vt_endreason reason, int sig)
{
    int rc = vt_writer_close(g_w, reason, sig);
    if (rc)
        gen_die("close", rc);
    vt_writer_free(g_w);
    g_w = NULL;
}

static __attribute__((unused)) uint64_t T(uint64_t ns)
{
    return GEN_BASE + ns;
}

static __attribute__((unused)) void gen_device(uint32_t index, const char *name, uint64_t total)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_DEVICE;
    ev.u.device.index = index;
    ev.u.device.name = name;
    ev.u.device.total_memory = total;
    ev.u.device.cc_major = 9;
    gen_emit(&ev);
}

static __attribute__((unused)) void gen_module_bid(const char *path, uint64_t start, uint64_t end, uint64_t bias,
                                                   const uint8_t *bid, uint32_t bid_len)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_MODULE;
    ev.u.module.path = path;
    ev.u.module.start = start;
    ev.u.module.end = end;
    ev.u.module.load_bias = bias;
    ev.u.module.build_id = bid;
    ev.u.module.build_id_len = bid_len;
    gen_emit(&ev);
}

static __attribute__((unused)) void gen_module(const char *path, uint64_t start, uint64_t end, uint64_t bias)
{
    static const uint8_t bid[4] = {0xde, 0xad, 0xbe, 0xef};
    gen_module_bid(path, start, end, bias, bid, 4);
}

static __attribute__((unused)) void gen_code(uint64_t key, const char *file, const char *fn)
{
    int rc;
    while ((rc = vt_writer_define_code(g_w, key, file, fn)) == VT_ERR_DROPPED)
        vt_writer_flush(g_w);
    if (rc)
        gen_die("define_code", rc);
}

typedef struct {
    vt_frame f[16];
    uint32_t n;
} gen_stack;

static __attribute__((unused)) void gs_py(gen_stack *s, uint64_t key, uint32_t line)
{
    s->f[s->n].pc = key;
    s->f[s->n].line = line;
    s->f[s->n].kind = VT_FRAME_PYTHON;
    s->n++;
}

static __attribute__((unused)) void gs_native(gen_stack *s, uint64_t ip)
{
    s->f[s->n].pc = ip;
    s->f[s->n].line = 0;
    s->f[s->n].kind = VT_FRAME_NATIVE;
    s->n++;
}

static __attribute__((unused)) void gen_alloc(uint64_t t, uint64_t addr, uint64_t size, uint32_t dev, vt_memkind kind, vt_allocapi api,
                      const gen_stack *s)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_ALLOC;
    ev.time_ns = t;
    ev.u.alloc.address = addr;
    ev.u.alloc.size = size;
    ev.u.alloc.device = dev;
    ev.u.alloc.kind = kind;
    ev.u.alloc.api = api;
    if (s) {
        ev.u.alloc.site.frames = s->f;
        ev.u.alloc.site.nframes = s->n;
    }
    gen_emit(&ev);
}

/* a failed allocation on dev (error: the API's code, name its symbol) */
static __attribute__((unused)) void gen_alloc_failed(uint32_t dev, uint64_t t, uint64_t size, vt_memkind kind,
                                                     vt_allocapi api, int error, const char *name,
                                                     const gen_stack *s)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_ALLOC_FAILED;
    ev.time_ns = t;
    ev.u.alloc_failed.size = size;
    ev.u.alloc_failed.device = dev;
    ev.u.alloc_failed.kind = kind;
    ev.u.alloc_failed.api = api;
    ev.u.alloc_failed.error = error;
    ev.u.alloc_failed.error_name = name;
    if (s) {
        ev.u.alloc_failed.site.frames = s->f;
        ev.u.alloc_failed.site.nframes = s->n;
    }
    gen_emit(&ev);
}

/* a free of `api` (the replay keys the caching allocator's tensors apart) */
static __attribute__((unused)) void gen_free_as(uint64_t t, uint64_t addr, uint32_t dev, vt_memkind kind,
                                                vt_allocapi api)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_FREE;
    ev.time_ns = t;
    ev.u.free.address = addr;
    ev.u.free.device = dev;
    ev.u.free.kind = kind;
    ev.u.free.api = api;
    gen_emit(&ev);
}

static __attribute__((unused)) void gen_free(uint64_t t, uint64_t addr, uint32_t dev)
{
    gen_free_as(t, addr, dev, VT_MEM_DEVICE, VT_API_UNKNOWN);
}

/* a tensor's free in PyTorch's caching allocator (its trace tracker) */
static __attribute__((unused)) void gen_free_tensor(uint64_t t, uint64_t addr, uint32_t dev)
{
    gen_free_as(t, addr, dev, VT_MEM_TENSOR, VT_API_CACHING_ALLOCATOR);
}

static __attribute__((unused)) void gen_kernel(uint64_t t, const char *name, uint32_t dev, uint64_t dur)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_KERNEL;
    ev.time_ns = t;
    ev.u.kernel.name = name;
    ev.u.kernel.device = dev;
    ev.u.kernel.stream = 7;
    ev.u.kernel.grid[0] = ev.u.kernel.grid[1] = ev.u.kernel.grid[2] = 1;
    ev.u.kernel.block[0] = 128;
    ev.u.kernel.block[1] = ev.u.kernel.block[2] = 1;
    ev.u.kernel.duration_ns = dur;
    gen_emit(&ev);
}

static __attribute__((unused)) void gen_nvtx(uint64_t t, vt_nvtxop op, const char *msg)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_NVTX;
    ev.time_ns = t;
    ev.u.nvtx.op = op;
    ev.u.nvtx.message = msg;
    gen_emit(&ev);
}

static __attribute__((unused)) void gen_memusage(uint64_t t, uint32_t dev, uint64_t free_b, uint64_t total)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_MEMORY_USAGE;
    ev.time_ns = t;
    ev.u.memory_usage.device = dev;
    ev.u.memory_usage.free = free_b;
    ev.u.memory_usage.total = total;
    gen_emit(&ev);
}

#endif
