/* vt_testenc.c - test helper: hand-built trace streams (protobuf-c + zstd).
 * See vt_testenc.h.  Test code only: aborts on allocation failure. */
#include "vt_testenc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "vt_event.h"

struct vt_tenc {
    ZSTD_CCtx *cctx;
    uint8_t *out;
    size_t len, cap;
    int open; /* a frame is open */
};

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) {
        fprintf(stderr, "vt_testenc: out of memory\n");
        abort();
    }
    return p;
}

vt_tenc *vt_tenc_new(int checksum)
{
    vt_tenc *e = calloc(1, sizeof(*e));
    e->cctx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(e->cctx, ZSTD_c_compressionLevel, 3);
    ZSTD_CCtx_setParameter(e->cctx, ZSTD_c_checksumFlag, checksum);
    return e;
}

void vt_tenc_free(vt_tenc *e)
{
    if (!e)
        return;
    ZSTD_freeCCtx(e->cctx);
    free(e->out);
    free(e);
}

static void compress(vt_tenc *e, const void *p, size_t n, ZSTD_EndDirective op)
{
    ZSTD_inBuffer in = {p, n, 0};
    for (;;) {
        if (e->cap - e->len < ZSTD_CStreamOutSize()) {
            e->cap = e->cap * 2 + ZSTD_CStreamOutSize();
            e->out = xrealloc(e->out, e->cap);
        }
        ZSTD_outBuffer out = {e->out, e->cap, e->len};
        size_t rem = ZSTD_compressStream2(e->cctx, &out, &in, op);
        if (ZSTD_isError(rem)) {
            fprintf(stderr, "vt_testenc: %s\n", ZSTD_getErrorName(rem));
            abort();
        }
        e->len = out.pos;
        if (op == ZSTD_e_continue ? in.pos == in.size : rem == 0)
            break;
    }
}

void vt_tenc_stream_bytes(vt_tenc *e, const void *p, size_t n)
{
    e->open = 1;
    compress(e, p, n, ZSTD_e_continue);
}

void vt_tenc_rec(vt_tenc *e, const Vramtrace__Record *rec)
{
    size_t n = vramtrace__record__get_packed_size(rec);
    uint8_t *buf = xrealloc(NULL, n + 11);
    size_t h = 0;
    buf[h++] = 0x0A;
    for (uint64_t v = n;; v >>= 7) {
        buf[h++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
        if (v < 0x80)
            break;
    }
    vramtrace__record__pack(rec, buf + h);
    vt_tenc_stream_bytes(e, buf, h + n);
    free(buf);
}

void vt_tenc_add(vt_tenc *e, int64_t ts_delta, Vramtrace__Record__BodyCase c, const void *msg)
{
    Vramtrace__Record r = VRAMTRACE__RECORD__INIT;
    r.ts_delta = ts_delta;
    r.body_case = c;
    r.header = (Vramtrace__Header *)msg; /* every union member is a pointer */
    vt_tenc_rec(e, &r);
}

void vt_tenc_flush(vt_tenc *e)
{
    if (e->open)
        compress(e, NULL, 0, ZSTD_e_flush);
}

void vt_tenc_end_frame(vt_tenc *e)
{
    if (e->open)
        compress(e, NULL, 0, ZSTD_e_end);
    e->open = 0;
}

void vt_tenc_file_bytes(vt_tenc *e, const void *p, size_t n)
{
    vt_tenc_end_frame(e);
    if (e->cap - e->len < n) {
        e->cap = e->cap * 2 + n;
        e->out = xrealloc(e->out, e->cap);
    }
    memcpy(e->out + e->len, p, n);
    e->len += n;
}

const uint8_t *vt_tenc_data(vt_tenc *e, size_t *size)
{
    *size = e->len;
    return e->out;
}

size_t vt_tenc_size(const vt_tenc *e)
{
    return e->len;
}

/* ---- standard records ----------------------------------------------- */

void vt_tenc_header(vt_tenc *e, uint32_t magic, uint32_t version)
{
    static char *argv[] = {"python3", "train.py", "--epochs=1"};
    Vramtrace__EnvVar env0 = VRAMTRACE__ENV_VAR__INIT, env1 = VRAMTRACE__ENV_VAR__INIT;
    Vramtrace__EnvVar *envs[] = {&env0, &env1};
    env0.name = "RANK";
    env0.value = "0";
    env1.name = "WORLD_SIZE";
    env1.value = "2";
    Vramtrace__Header h = VRAMTRACE__HEADER__INIT;
    h.magic = magic;
    h.format_version = version;
    h.tool_version = VT_TOOL_VERSION;
    h.pid = 4242;
    h.ppid = 4200;
    h.hostname = "testhost";
    h.n_argv = 3;
    h.argv = argv;
    h.program = "train.py";
    h.n_env = 2;
    h.env = envs;
    h.clock = VRAMTRACE__CLOCK_DOMAIN__CLOCK_CUPTI;
    h.trace_clock_ns = 1000000000ull;
    h.realtime_ns = 1796000000000000000ull;
    h.kernels = 1;
    h.native_stacks = 1;
    h.python_stacks = 1;
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_HEADER, &h);
}

void vt_tenc_sync(vt_tenc *e, uint64_t seq, uint64_t t, uint64_t dt)
{
    Vramtrace__Sync s = VRAMTRACE__SYNC__INIT;
    s.sequence = seq;
    s.time_ns = t;
    s.device_time_ns = dt;
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_SYNC, &s);
}

void vt_tenc_string(vt_tenc *e, uint32_t id, const char *str)
{
    Vramtrace__String s = VRAMTRACE__STRING__INIT;
    s.id = id;
    s.value = (char *)str;
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_STRING, &s);
}

void vt_tenc_end(vt_tenc *e, uint64_t events)
{
    Vramtrace__End m = VRAMTRACE__END__INIT;
    m.reason = VRAMTRACE__END_REASON__END_NORMAL;
    m.events = events;
    vt_tenc_add(e, 5, VRAMTRACE__RECORD__BODY_END, &m);
}

/* ---- the sample trace ------------------------------------------------- */

static void sample_defs(vt_tenc *e)
{
    Vramtrace__Device d = VRAMTRACE__DEVICE__INIT;
    static const uint8_t uuid[16] = {0x1b, 0x2c, 0x3d, 0x4e, 0x5f, 0x60, 0x71, 0x82,
                                     0x93, 0xa4, 0xb5, 0xc6, 0xd7, 0xe8, 0xf9, 0x0a};
    d.index = 0;
    d.name = "NVIDIA H200";
    d.uuid.data = (uint8_t *)uuid;
    d.uuid.len = 16;
    d.total_memory = 150754820096ull;
    d.cc_major = 9;
    d.cc_minor = 0;
    d.pci_bus_id = "00000000:19:00.0";
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_DEVICE, &d);

    Vramtrace__Thread t = VRAMTRACE__THREAD__INIT;
    t.id = 1;
    t.tid = 4242;
    t.name = "python3";
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_THREAD, &t);
    t.id = 2;
    t.tid = 4250;
    t.name = "pt_autograd_0";
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_THREAD, &t);

    vt_tenc_string(e, 1, "_Z10vectorAddPKfS0_Pfi");
    vt_tenc_string(e, 2, "void at::native::elementwise_kernel<128, 4>(int, \"quoted\")");
    vt_tenc_string(e, 3, "train.py");
    vt_tenc_string(e, 4, "forward");
    vt_tenc_string(e, 5, "CUDA_ERROR_OUT_OF_MEMORY");
    vt_tenc_string(e, 6, "step\t1\n");

    static const uint8_t bid[4] = {0xde, 0xad, 0xbe, 0xef};
    Vramtrace__Module m = VRAMTRACE__MODULE__INIT;
    m.id = 1;
    m.path = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
    m.load_bias = 0x7f0000000000ull;
    m.start = 0x7f0000000000ull;
    m.end = 0x7f0000400000ull;
    m.build_id.data = (uint8_t *)bid;
    m.build_id.len = 4;
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_MODULE, &m);

    Vramtrace__Frame f = VRAMTRACE__FRAME__INIT;
    f.id = 1;
    f.kind = VRAMTRACE__FRAME_KIND__FRAME_NATIVE;
    f.ip = 0x7f0000012345ull;
    f.module = 1;
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_FRAME, &f);
    f.id = 2;
    f.ip = 0x7f0000023456ull;
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_FRAME, &f);
    Vramtrace__Frame py = VRAMTRACE__FRAME__INIT;
    py.id = 3;
    py.kind = VRAMTRACE__FRAME_KIND__FRAME_PYTHON;
    py.function = 4;
    py.file = 3;
    py.line = 42;
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_FRAME, &py);

    uint32_t f1[] = {3}, f2[] = {1, 2};
    Vramtrace__Stack s = VRAMTRACE__STACK__INIT;
    s.id = 1;
    s.n_frame = 1;
    s.frame = f1;
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_STACK, &s);
    s.id = 2;
    s.n_frame = 2;
    s.frame = f2;
    s.parent = 1;
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_STACK, &s);

    Vramtrace__Launch l = VRAMTRACE__LAUNCH__INIT;
    l.id = 1;
    l.name = 1;
    l.device = 0;
    l.stream = 7;
    l.grid_x = 256;
    l.grid_y = 1;
    l.grid_z = 1;
    l.block_x = 128;
    l.block_y = 1;
    l.block_z = 1;
    l.shared_memory = 0;
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_LAUNCH, &l);
    l.id = 2;
    l.name = 2;
    l.stream = 13;
    l.grid_x = 1024;
    l.grid_y = 2;
    l.block_x = 256;
    l.shared_memory = 4096;
    l.graph = 1;
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_LAUNCH, &l);
}

static void sample_events(vt_tenc *e, int frame)
{
    uint64_t base = 0x7f1200000000ull + (uint64_t)frame * 0x100000000ull;
    Vramtrace__Alloc a = VRAMTRACE__ALLOC__INIT;
    a.address = base;
    a.size = 1 << 20;
    a.device = 0;
    a.kind = VRAMTRACE__MEMORY_KIND__MEMORY_KIND_DEVICE;
    a.api = VRAMTRACE__ALLOC_API__ALLOC_API_MALLOC;
    a.thread = 1;
    a.stack = 2;
    a.corr = 11;
    vt_tenc_add(e, 1000, VRAMTRACE__RECORD__BODY_ALLOC, &a);
    a.address = base + 0x200000;
    a.size = 512;
    a.api = VRAMTRACE__ALLOC_API__ALLOC_API_MALLOC_ASYNC;
    a.stream = 0x55550000ull;
    a.pool = 0x66660000ull;
    a.thread = 2;
    a.stack = 1;
    a.corr = 2;
    vt_tenc_add(e, 250, VRAMTRACE__RECORD__BODY_ALLOC, &a);

    Vramtrace__Kernel k = VRAMTRACE__KERNEL__INIT;
    k.launch = 1;
    k.duration_ns = 4500;
    k.corr = 3;
    vt_tenc_add(e, 2000, VRAMTRACE__RECORD__BODY_KERNEL, &k);
    k.launch = 2;
    k.duration_ns = 120000;
    k.corr = -1;
    k.graph_id = 9;
    vt_tenc_add(e, 6000, VRAMTRACE__RECORD__BODY_KERNEL, &k);
    vt_tenc_flush(e);

    Vramtrace__Nvtx n = VRAMTRACE__NVTX__INIT;
    n.op = VRAMTRACE__NVTX_OP__NVTX_PUSH;
    n.message = 6;
    n.thread = 1;
    vt_tenc_add(e, 10, VRAMTRACE__RECORD__BODY_NVTX, &n);

    Vramtrace__AllocFailed af = VRAMTRACE__ALLOC_FAILED__INIT;
    af.size = 200ull << 30;
    af.device = 0;
    af.kind = VRAMTRACE__MEMORY_KIND__MEMORY_KIND_DEVICE;
    af.api = VRAMTRACE__ALLOC_API__ALLOC_API_MALLOC;
    af.error = 2;
    af.error_name = 5;
    af.thread = 1;
    af.stack = 2;
    af.corr = 4;
    vt_tenc_add(e, 300, VRAMTRACE__RECORD__BODY_ALLOC_FAILED, &af);

    Vramtrace__VmmReserve vr = VRAMTRACE__VMM_RESERVE__INIT;
    vr.address = 0x7e0000000000ull;
    vr.size = 1ull << 30;
    vr.thread = 1;
    vr.stack = 2;
    vr.corr = 1;
    vt_tenc_add(e, 40, VRAMTRACE__RECORD__BODY_VMM_RESERVE, &vr);
    Vramtrace__VmmCreate vc = VRAMTRACE__VMM_CREATE__INIT;
    vc.handle = 0x1001;
    vc.size = 2 << 20;
    vc.device = 0;
    vc.kind = VRAMTRACE__MEMORY_KIND__MEMORY_KIND_DEVICE;
    vc.thread = 1;
    vc.stack = 2;
    vc.corr = 1;
    vt_tenc_add(e, 40, VRAMTRACE__RECORD__BODY_VMM_CREATE, &vc);
    Vramtrace__VmmMap vm = VRAMTRACE__VMM_MAP__INIT;
    vm.address = 0x7e0000000000ull;
    vm.size = 2 << 20;
    vm.offset = 0;
    vm.handle = 0x1001;
    vm.thread = 1;
    vm.corr = 1;
    vt_tenc_add(e, 40, VRAMTRACE__RECORD__BODY_VMM_MAP, &vm);
    Vramtrace__VmmUnmap vu = VRAMTRACE__VMM_UNMAP__INIT;
    vu.address = 0x7e0000000000ull;
    vu.size = 2 << 20;
    vu.thread = 1;
    vu.corr = 1;
    vt_tenc_add(e, 40, VRAMTRACE__RECORD__BODY_VMM_UNMAP, &vu);
    Vramtrace__VmmRelease vl = VRAMTRACE__VMM_RELEASE__INIT;
    vl.handle = 0x1001;
    vl.thread = 1;
    vl.corr = 1;
    vt_tenc_add(e, 40, VRAMTRACE__RECORD__BODY_VMM_RELEASE, &vl);
    Vramtrace__VmmAddressFree va = VRAMTRACE__VMM_ADDRESS_FREE__INIT;
    va.address = 0x7e0000000000ull;
    va.size = 1ull << 30;
    va.thread = 1;
    va.corr = 1;
    vt_tenc_add(e, 40, VRAMTRACE__RECORD__BODY_VMM_ADDRESS_FREE, &va);

    Vramtrace__Pool p = VRAMTRACE__POOL__INIT;
    p.op = VRAMTRACE__POOL_OP__POOL_TRIM;
    p.pool = 0x66660000ull;
    p.device = 0;
    p.value = 1 << 20;
    p.thread = 2;
    p.corr = 1;
    vt_tenc_add(e, 60, VRAMTRACE__RECORD__BODY_POOL, &p);
    Vramtrace__PoolUsage pu = VRAMTRACE__POOL_USAGE__INIT;
    pu.pool = 0x66660000ull;
    pu.device = 0;
    pu.reserved_current = 32 << 20;
    pu.reserved_high = 64 << 20;
    pu.used_current = 512;
    pu.used_high = 1 << 20;
    vt_tenc_add(e, 60, VRAMTRACE__RECORD__BODY_POOL_USAGE, &pu);
    Vramtrace__MemoryUsage mu = VRAMTRACE__MEMORY_USAGE__INIT;
    mu.device = 0;
    mu.free = 100ull << 30;
    mu.total = 140ull << 30;
    vt_tenc_add(e, 60, VRAMTRACE__RECORD__BODY_MEMORY_USAGE, &mu);
    vt_tenc_flush(e);

    Vramtrace__Free fr = VRAMTRACE__FREE__INIT;
    fr.address = base;
    fr.device = 0;
    fr.kind = VRAMTRACE__MEMORY_KIND__MEMORY_KIND_DEVICE;
    fr.api = VRAMTRACE__ALLOC_API__ALLOC_API_MALLOC;
    fr.thread = 1;
    fr.corr = 1;
    vt_tenc_add(e, 700, VRAMTRACE__RECORD__BODY_FREE, &fr);
    fr.address = base + 0x200000;
    fr.api = VRAMTRACE__ALLOC_API__ALLOC_API_MALLOC_ASYNC;
    fr.stream = 0x55550000ull;
    fr.thread = 2;
    fr.corr = 0;
    vt_tenc_add(e, -100, VRAMTRACE__RECORD__BODY_FREE, &fr);
    n.op = VRAMTRACE__NVTX_OP__NVTX_POP;
    n.message = 0;
    vt_tenc_add(e, 10, VRAMTRACE__RECORD__BODY_NVTX, &n);

    Vramtrace__Dropped dr = VRAMTRACE__DROPPED__INIT;
    dr.source = VRAMTRACE__DROP_SOURCE__DROP_STACK;
    dr.count = 3;
    vt_tenc_add(e, 1, VRAMTRACE__RECORD__BODY_DROPPED, &dr);
    Vramtrace__Note no = VRAMTRACE__NOTE__INIT;
    no.severity = VRAMTRACE__SEVERITY__SEVERITY_WARNING;
    no.text = "python stacks: unknown \"3.14\" layout\\off";
    vt_tenc_add(e, 1, VRAMTRACE__RECORD__BODY_NOTE, &no);
}

void vt_tenc_sample(vt_tenc *e, int nframes)
{
    vt_tenc_header(e, VT_FORMAT_MAGIC, VT_FORMAT_VERSION);
    vt_tenc_sync(e, 0, 1000000000ull, 999000000ull);
    sample_defs(e);
    for (int i = 0; i < nframes; i++) {
        if (i) {
            vt_tenc_end_frame(e);
            vt_tenc_sync(e, (uint64_t)i, 1000000000ull + (uint64_t)i * 1000000ull,
                         999000000ull + (uint64_t)i * 1000000ull);
        }
        sample_events(e, i);
    }
    vt_tenc_end(e, 22ull * (uint64_t)nframes);
    vt_tenc_end_frame(e);
}

/* ---- random records (cross-check against protobuf-c) ------------------ */

static uint8_t *bump;
static size_t bump_len, bump_cap;
static void **bump_blocks;
static size_t nblocks;

static void *balloc(size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (bump_len + n > bump_cap) {
        bump_cap = n > 65536 ? n : 65536;
        bump = xrealloc(NULL, bump_cap);
        memset(bump, 0, bump_cap);
        bump_blocks = xrealloc(bump_blocks, (nblocks + 1) * sizeof(void *));
        bump_blocks[nblocks++] = bump;
        bump_len = 0;
    }
    void *p = bump + bump_len;
    bump_len += n;
    return p;
}

void vt_tenc_random_reset(void)
{
    for (size_t i = 0; i < nblocks; i++)
        free(bump_blocks[i]);
    free(bump_blocks);
    bump_blocks = NULL;
    nblocks = 0;
    bump = NULL;
    bump_len = bump_cap = 0;
}

uint64_t vt_tenc_rand(uint64_t *s)
{
    /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Values of every size class: 0, small, 32-bit, full 64-bit. */
static uint64_t rv(uint64_t *s)
{
    uint64_t x = vt_tenc_rand(s);
    switch (x & 3) {
    case 0: return 0;
    case 1: return (x >> 8) & 0x7f;
    case 2: return (x >> 8) & 0xffffffffu;
    default: return vt_tenc_rand(s);
    }
}
static uint32_t r32(uint64_t *s) { return (uint32_t)rv(s); }
static int64_t rs(uint64_t *s) { return (int64_t)rv(s) * ((vt_tenc_rand(s) & 1) ? -1 : 1); }
static uint32_t rid(uint64_t *s, uint32_t maxid) { return (uint32_t)(vt_tenc_rand(s) % (maxid + 1)); }
static uint32_t rsmall(uint64_t *s, uint32_t n) { return (uint32_t)(vt_tenc_rand(s) % n); }

static char *rstr(uint64_t *s)
{
    size_t n = rsmall(s, 40);
    char *p = balloc(n + 1);
    for (size_t i = 0; i < n; i++)
        p[i] = (char)(' ' + rsmall(s, 95));
    p[n] = 0;
    return p;
}

static ProtobufCBinaryData rbytes(uint64_t *s, size_t max)
{
    ProtobufCBinaryData b;
    b.len = rsmall(s, (uint32_t)max + 1);
    b.data = balloc(b.len + 1);
    for (size_t i = 0; i < b.len; i++)
        b.data[i] = (uint8_t)vt_tenc_rand(s);
    return b;
}

#define NEW(T, init) T *m = balloc(sizeof(T)); { T z_ = init; *m = z_; }

void vt_tenc_random_record(uint64_t *s, Vramtrace__Record__BodyCase c, uint32_t maxid, Vramtrace__Record *rec)
{
    Vramtrace__Record r0 = VRAMTRACE__RECORD__INIT;
    *rec = r0;
    rec->ts_delta = c == VRAMTRACE__RECORD__BODY_SYNC ? 0 : rs(s);
    rec->body_case = c;
    switch (c) {
    case VRAMTRACE__RECORD__BODY_HEADER: {
        NEW(Vramtrace__Header, VRAMTRACE__HEADER__INIT);
        m->magic = VT_FORMAT_MAGIC;
        m->format_version = VT_FORMAT_VERSION;
        m->tool_version = rstr(s);
        m->pid = r32(s);
        m->ppid = r32(s);
        m->hostname = rstr(s);
        m->n_argv = rsmall(s, 6);
        m->argv = balloc(sizeof(char *) * (m->n_argv + 1));
        for (size_t i = 0; i < m->n_argv; i++)
            m->argv[i] = rstr(s);
        m->program = rstr(s);
        m->n_env = rsmall(s, 4);
        m->env = balloc(sizeof(void *) * (m->n_env + 1));
        for (size_t i = 0; i < m->n_env; i++) {
            Vramtrace__EnvVar *ev = balloc(sizeof(*ev));
            Vramtrace__EnvVar z = VRAMTRACE__ENV_VAR__INIT;
            *ev = z;
            ev->name = rstr(s);
            ev->value = rstr(s);
            m->env[i] = ev;
        }
        m->clock = (Vramtrace__ClockDomain)rsmall(s, 4);
        m->trace_clock_ns = rv(s);
        m->realtime_ns = rv(s);
        m->kernels = rsmall(s, 2);
        m->native_stacks = rsmall(s, 2);
        m->python_stacks = rsmall(s, 2);
        rec->header = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_SYNC: {
        NEW(Vramtrace__Sync, VRAMTRACE__SYNC__INIT);
        m->time_ns = rv(s);
        m->device_time_ns = rv(s);
        m->sequence = rv(s);
        rec->sync = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_STRING: {
        NEW(Vramtrace__String, VRAMTRACE__STRING__INIT);
        m->id = 1 + rid(s, maxid - 1);
        m->value = rstr(s);
        rec->string = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_STACK: {
        NEW(Vramtrace__Stack, VRAMTRACE__STACK__INIT);
        m->id = 1 + rid(s, maxid - 1);
        m->n_frame = rsmall(s, 70);
        m->frame = balloc(sizeof(uint32_t) * (m->n_frame + 1));
        for (size_t i = 0; i < m->n_frame; i++)
            m->frame[i] = r32(s);
        m->parent = rid(s, m->id - 1);
        rec->stack = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_FRAME: {
        NEW(Vramtrace__Frame, VRAMTRACE__FRAME__INIT);
        m->id = 1 + rid(s, maxid - 1);
        m->kind = (Vramtrace__FrameKind)rsmall(s, 2);
        m->ip = rv(s);
        m->module = r32(s);
        m->function = r32(s);
        m->file = r32(s);
        m->line = r32(s);
        rec->frame = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_ALLOC: {
        NEW(Vramtrace__Alloc, VRAMTRACE__ALLOC__INIT);
        m->address = rv(s);
        m->size = rv(s);
        m->device = r32(s);
        m->kind = (Vramtrace__MemoryKind)rsmall(s, 7);
        m->api = (Vramtrace__AllocApi)rsmall(s, 11);
        m->stream = rv(s);
        m->pool = rv(s);
        m->thread = rid(s, maxid);
        m->stack = rid(s, maxid);
        m->corr = rs(s);
        rec->alloc = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_FREE: {
        NEW(Vramtrace__Free, VRAMTRACE__FREE__INIT);
        m->address = rv(s);
        m->device = r32(s);
        m->kind = (Vramtrace__MemoryKind)rsmall(s, 7);
        m->api = (Vramtrace__AllocApi)rsmall(s, 11);
        m->stream = rv(s);
        m->thread = rid(s, maxid);
        m->corr = rs(s);
        m->stack = rid(s, maxid);
        rec->free = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_KERNEL: {
        NEW(Vramtrace__Kernel, VRAMTRACE__KERNEL__INIT);
        m->launch = rid(s, maxid);
        m->duration_ns = rv(s);
        m->corr = rs(s);
        m->graph_id = rv(s);
        rec->kernel = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_LAUNCH: {
        NEW(Vramtrace__Launch, VRAMTRACE__LAUNCH__INIT);
        m->id = 1 + rid(s, maxid - 1);
        m->name = rid(s, maxid);
        m->device = r32(s);
        m->stream = r32(s);
        m->grid_x = r32(s);
        m->grid_y = r32(s);
        m->grid_z = r32(s);
        m->block_x = r32(s);
        m->block_y = r32(s);
        m->block_z = r32(s);
        m->shared_memory = r32(s);
        m->graph = rsmall(s, 2);
        rec->launch = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_ALLOC_FAILED: {
        NEW(Vramtrace__AllocFailed, VRAMTRACE__ALLOC_FAILED__INIT);
        m->size = rv(s);
        m->device = r32(s);
        m->kind = (Vramtrace__MemoryKind)rsmall(s, 7);
        m->api = (Vramtrace__AllocApi)rsmall(s, 11);
        m->error = (int32_t)rs(s);
        m->error_name = rid(s, maxid);
        m->stream = rv(s);
        m->pool = rv(s);
        m->thread = rid(s, maxid);
        m->stack = rid(s, maxid);
        m->corr = rs(s);
        rec->alloc_failed = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_MODULE: {
        NEW(Vramtrace__Module, VRAMTRACE__MODULE__INIT);
        m->id = 1 + rid(s, maxid - 1);
        m->path = rstr(s);
        m->load_bias = rv(s);
        m->start = rv(s);
        m->end = rv(s);
        m->build_id = rbytes(s, 20);
        rec->module = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_THREAD: {
        NEW(Vramtrace__Thread, VRAMTRACE__THREAD__INIT);
        m->id = 1 + rid(s, maxid - 1);
        m->tid = r32(s);
        m->name = rstr(s);
        rec->thread = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_NVTX: {
        NEW(Vramtrace__Nvtx, VRAMTRACE__NVTX__INIT);
        m->op = (Vramtrace__NvtxOp)rsmall(s, 5);
        m->message = rid(s, maxid);
        m->domain = rid(s, maxid);
        m->range_id = rv(s);
        m->thread = rid(s, maxid);
        rec->nvtx = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_DEVICE: {
        NEW(Vramtrace__Device, VRAMTRACE__DEVICE__INIT);
        m->index = rsmall(s, 8);
        m->name = rstr(s);
        m->uuid = rbytes(s, 16);
        m->total_memory = rv(s);
        m->cc_major = r32(s);
        m->cc_minor = r32(s);
        m->pci_bus_id = rstr(s);
        rec->device = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_VMM_RESERVE: {
        NEW(Vramtrace__VmmReserve, VRAMTRACE__VMM_RESERVE__INIT);
        m->address = rv(s);
        m->size = rv(s);
        m->thread = rid(s, maxid);
        m->stack = rid(s, maxid);
        m->corr = rs(s);
        rec->vmm_reserve = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_VMM_ADDRESS_FREE: {
        NEW(Vramtrace__VmmAddressFree, VRAMTRACE__VMM_ADDRESS_FREE__INIT);
        m->address = rv(s);
        m->size = rv(s);
        m->thread = rid(s, maxid);
        m->corr = rs(s);
        rec->vmm_address_free = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_VMM_CREATE: {
        NEW(Vramtrace__VmmCreate, VRAMTRACE__VMM_CREATE__INIT);
        m->handle = rv(s);
        m->size = rv(s);
        m->device = r32(s);
        m->kind = (Vramtrace__MemoryKind)rsmall(s, 7);
        m->thread = rid(s, maxid);
        m->stack = rid(s, maxid);
        m->corr = rs(s);
        rec->vmm_create = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_VMM_RELEASE: {
        NEW(Vramtrace__VmmRelease, VRAMTRACE__VMM_RELEASE__INIT);
        m->handle = rv(s);
        m->thread = rid(s, maxid);
        m->corr = rs(s);
        rec->vmm_release = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_VMM_MAP: {
        NEW(Vramtrace__VmmMap, VRAMTRACE__VMM_MAP__INIT);
        m->address = rv(s);
        m->size = rv(s);
        m->offset = rv(s);
        m->handle = rv(s);
        m->thread = rid(s, maxid);
        m->corr = rs(s);
        rec->vmm_map = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_VMM_UNMAP: {
        NEW(Vramtrace__VmmUnmap, VRAMTRACE__VMM_UNMAP__INIT);
        m->address = rv(s);
        m->size = rv(s);
        m->thread = rid(s, maxid);
        m->corr = rs(s);
        rec->vmm_unmap = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_POOL: {
        NEW(Vramtrace__Pool, VRAMTRACE__POOL__INIT);
        m->op = (Vramtrace__PoolOp)rsmall(s, 4);
        m->pool = rv(s);
        m->device = r32(s);
        m->value = rv(s);
        m->thread = rid(s, maxid);
        m->stack = rid(s, maxid);
        m->corr = rs(s);
        rec->pool = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_POOL_USAGE: {
        NEW(Vramtrace__PoolUsage, VRAMTRACE__POOL_USAGE__INIT);
        m->pool = rv(s);
        m->device = r32(s);
        m->reserved_current = rv(s);
        m->reserved_high = rv(s);
        m->used_current = rv(s);
        m->used_high = rv(s);
        rec->pool_usage = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_MEMORY_USAGE: {
        NEW(Vramtrace__MemoryUsage, VRAMTRACE__MEMORY_USAGE__INIT);
        m->device = r32(s);
        m->free = rv(s);
        m->total = rv(s);
        rec->memory_usage = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_DROPPED: {
        NEW(Vramtrace__Dropped, VRAMTRACE__DROPPED__INIT);
        m->source = (Vramtrace__DropSource)rsmall(s, 4);
        m->count = rv(s);
        m->reason = rid(s, maxid);
        rec->dropped = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_NOTE: {
        NEW(Vramtrace__Note, VRAMTRACE__NOTE__INIT);
        m->severity = (Vramtrace__Severity)rsmall(s, 3);
        m->text = rstr(s);
        rec->note = m;
        break;
    }
    case VRAMTRACE__RECORD__BODY_END: {
        NEW(Vramtrace__End, VRAMTRACE__END__INIT);
        m->reason = (Vramtrace__EndReason)rsmall(s, 3);
        m->signal = (int32_t)rs(s);
        m->events = rv(s);
        m->dropped = rv(s);
        rec->end = m;
        break;
    }
    default:
        rec->body_case = VRAMTRACE__RECORD__BODY__NOT_SET;
        break;
    }
}
