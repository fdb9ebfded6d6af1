/* test_roundtrip.c - writer -> reader: every event kind the producers emit
 * (src/core/vt_writer.c), written with many small zstd frames, read back by
 * vt_reader with every field, time, correlation id, thread and call stack
 * (native frames through modules, Python frames through define_code)
 * compared; then every prefix of a small writer trace. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vt_error.h"
#include "vt_reader.h"
#include "vt_testenc.h"
#include "vt_writer.h"

#define NMOD 3
static const struct { const char *path; uint64_t start, end, bias; } mods[NMOD] = {
    {"/usr/lib/libcuda.so.1", 0x7f1000000000ull, 0x7f1000800000ull, 0x7f1000000000ull},
    {"/opt/torch/lib/libtorch_cuda.so", 0x7f2000000000ull, 0x7f2004000000ull, 0x7f1fffff0000ull},
    {"/usr/bin/python3.11", 0x400000ull, 0x900000ull, 0},
};
#define NCODE 4
static const struct { uint64_t key; const char *file, *fn; } codes[NCODE] = {
    {0xc0de0001, "train.py", "main"},
    {0xc0de0002, "model.py", "forward"},
    {0xc0de0003, "torch/nn/modules/module.py", "_call_impl"},
    {0xc0de0004, "model.py", "Linear.forward"},
};
static const char *const kernel_names[] = {"_Z4gemmPf", "void at::native::vectorized_elementwise_kernel<4>()",
                                           "ncclKernel_AllReduce_RING_LL_Sum_float", "_Z6reducePfi"};
static const char *const strs[] = {NULL, "", "forward", "step 1", "optimizer", "CUDA_ERROR_OUT_OF_MEMORY"};

static const vt_evtype kinds[] = {
    VT_EV_ALLOC, VT_EV_ALLOC, VT_EV_FREE, VT_EV_FREE, VT_EV_KERNEL, VT_EV_KERNEL, VT_EV_KERNEL,
    VT_EV_ALLOC_FAILED, VT_EV_VMM_RESERVE, VT_EV_VMM_ADDRESS_FREE, VT_EV_VMM_UNMAP, VT_EV_VMM_CREATE,
    VT_EV_VMM_RELEASE, VT_EV_VMM_MAP, VT_EV_POOL, VT_EV_POOL_USAGE, VT_EV_MEMORY_USAGE, VT_EV_NVTX,
    VT_EV_DROPPED, VT_EV_NOTE,
};

typedef struct {
    vt_event ev;
    vt_frame frames[12];
    char text[32];
} sent;

static uint64_t rnd(uint64_t *s)
{
    return vt_tenc_rand(s);
}
static uint64_t rbig(uint64_t *s)
{
    uint64_t x = rnd(s);
    return (x & 1) ? rnd(s) : (x >> 1) & 0xfffff;
}

static void random_site(uint64_t *s, sent *m, vt_site *site, int with_stack)
{
    site->tid = 100001 + (uint32_t)(rnd(s) % 3);
    if (!with_stack || rnd(s) % 4 == 0)
        return;
    uint32_t n = 1 + (uint32_t)(rnd(s) % 12);
    for (uint32_t i = 0; i < n; i++) {
        /* a few distinct stacks, sharing outer frames, so interning and parents work */
        uint64_t pick = (i + rnd(s) % 3) % 7;
        if (pick < 4) {
            int mi = (int)(pick % NMOD);
            m->frames[i] = (vt_frame){mods[mi].start + 0x1000 * (pick + 1) + i, 0, VT_FRAME_NATIVE};
        } else if (pick < 6) {
            m->frames[i] = (vt_frame){codes[pick % NCODE].key, 10 + (uint32_t)pick, VT_FRAME_PYTHON};
        } else {
            m->frames[i] = (vt_frame){0xdead0000 + i, 0, VT_FRAME_NATIVE}; /* in no module */
        }
    }
    site->frames = m->frames;
    site->nframes = n;
}

static void random_event(uint64_t *s, uint64_t t, sent *m)
{
    memset(m, 0, sizeof(*m));
    vt_event *e = &m->ev;
    e->type = kinds[rnd(s) % (sizeof(kinds) / sizeof(kinds[0]))];
    e->time_ns = t;
    uint64_t corr = rnd(s) % 3 ? rbig(s) : 0;
    switch (e->type) {
    case VT_EV_ALLOC:
        e->u.alloc = (vt_ev_alloc){.address = rbig(s), .size = rbig(s), .device = (uint32_t)(rnd(s) % 8),
                                   .kind = (vt_memkind)(rnd(s) % VT_MEM__COUNT),
                                   .api = (vt_allocapi)(rnd(s) % VT_API__COUNT), .stream = rbig(s),
                                   .pool = rbig(s), .corr = corr};
        random_site(s, m, &e->u.alloc.site, 1);
        break;
    case VT_EV_FREE:
        e->u.free = (vt_ev_free){.address = rbig(s), .device = (uint32_t)(rnd(s) % 8),
                                 .kind = (vt_memkind)(rnd(s) % VT_MEM__COUNT),
                                 .api = (vt_allocapi)(rnd(s) % VT_API__COUNT), .stream = rbig(s), .corr = corr};
        random_site(s, m, &e->u.free.site, rnd(s) % 8 == 0);
        break;
    case VT_EV_ALLOC_FAILED:
        e->u.alloc_failed = (vt_ev_alloc_failed){.size = rbig(s), .device = 1, .kind = VT_MEM_DEVICE,
                                                 .api = VT_API_MALLOC, .error = -(int32_t)(rnd(s) % 1000),
                                                 .error_name = strs[rnd(s) % 6], .stream = rbig(s),
                                                 .pool = rbig(s), .corr = corr};
        random_site(s, m, &e->u.alloc_failed.site, 1);
        break;
    case VT_EV_VMM_RESERVE:
    case VT_EV_VMM_ADDRESS_FREE:
    case VT_EV_VMM_UNMAP:
        e->u.vmm_range = (vt_ev_vmm_range){.address = rbig(s), .size = rbig(s), .corr = corr};
        random_site(s, m, &e->u.vmm_range.site, e->type == VT_EV_VMM_RESERVE);
        break;
    case VT_EV_VMM_CREATE:
        e->u.vmm_create = (vt_ev_vmm_create){.handle = rbig(s), .size = rbig(s), .device = 2,
                                             .kind = VT_MEM_DEVICE, .corr = corr};
        random_site(s, m, &e->u.vmm_create.site, 1);
        break;
    case VT_EV_VMM_RELEASE:
        e->u.vmm_release = (vt_ev_vmm_release){.handle = rbig(s), .corr = corr};
        random_site(s, m, &e->u.vmm_release.site, 0);
        break;
    case VT_EV_VMM_MAP:
        e->u.vmm_map = (vt_ev_vmm_map){.address = rbig(s), .size = rbig(s), .offset = rbig(s), .handle = rbig(s),
                                       .corr = corr};
        random_site(s, m, &e->u.vmm_map.site, 0);
        break;
    case VT_EV_POOL:
        e->u.pool = (vt_ev_pool){.op = (vt_poolop)(rnd(s) % 4), .pool = rbig(s), .device = 3, .value = rbig(s),
                                 .corr = corr};
        random_site(s, m, &e->u.pool.site, 1);
        break;
    case VT_EV_POOL_USAGE:
        e->u.pool_usage = (vt_ev_pool_usage){.pool = rbig(s), .device = 1, .reserved_current = rbig(s),
                                             .reserved_high = rbig(s), .used_current = rbig(s),
                                             .used_high = rbig(s)};
        break;
    case VT_EV_MEMORY_USAGE:
        e->u.memory_usage = (vt_ev_memory_usage){.device = 1, .free = rbig(s), .total = rbig(s)};
        break;
    case VT_EV_KERNEL: {
        uint32_t k = (uint32_t)(rnd(s) % 4);
        e->u.kernel = (vt_ev_kernel){.name = kernel_names[k], .device = k & 1, .stream = 7 + k,
                                     .grid = {128 * k + 1, 2, 1}, .block = {256, k, 1},
                                     .shared_memory = 1024 * k, .graph = k == 3, .graph_id = k == 3 ? rbig(s) : 0,
                                     .duration_ns = rbig(s), .corr = corr};
        break;
    }
    case VT_EV_NVTX:
        e->u.nvtx = (vt_ev_nvtx){.op = (vt_nvtxop)(rnd(s) % 5), .message = strs[rnd(s) % 5],
                                 .domain = rnd(s) % 2 ? NULL : "torch", .range_id = rbig(s)};
        random_site(s, m, &e->u.nvtx.site, 0);
        break;
    case VT_EV_DROPPED:
        /* not WRITER_QUEUE: the writer's own drop reports are told apart by it */
        e->u.dropped = (vt_ev_dropped){.source = (vt_dropsource)(1 + rnd(s) % 3), .count = rbig(s),
                                       .reason = strs[rnd(s) % 5]};
        break;
    case VT_EV_NOTE:
        snprintf(m->text, sizeof(m->text), "note %llu \"q\"", (unsigned long long)(rnd(s) % 1000));
        e->u.note = (vt_ev_note){.severity = (vt_severity)(rnd(s) % 3), .text = m->text};
        break;
    default:
        break;
    }
}

/* ---- comparison ---------------------------------------------------------- */

static void same_str(const char *got, const char *want, const char *what)
{
    /* the writer interns NULL and "" alike as "no string" or as "" */
    if (!want || !*want) {
        if (got && *got)
            fail_msg("%s: got \"%s\", expected none", what, got);
        return;
    }
    if (!got || strcmp(got, want))
        fail_msg("%s: got \"%s\", expected \"%s\"", what, got ? got : "(null)", want);
}

static void same_site(vt_reader *r, const vt_site *got, const vt_site *want, int with_stack)
{
    assert_int_equal(got->tid, want->tid);
    const vt_ev_thread *th = vt_reader_thread(r, got->thread);
    assert_non_null(th);
    assert_int_equal(th->tid, want->tid);
    if (!with_stack)
        return;
    if (!want->nframes) {
        assert_int_equal(got->stack, 0);
        return;
    }
    uint32_t ids[64];
    uint32_t depth = vt_reader_stack(r, got->stack, ids, 64);
    assert_int_equal(depth, want->nframes);
    for (uint32_t i = 0; i < depth; i++) {
        const vt_ev_frame *f = vt_reader_frame(r, ids[i]);
        const vt_frame *w = &want->frames[i];
        assert_non_null(f);
        assert_int_equal(f->kind, w->kind);
        if (w->kind == VT_FRAME_NATIVE) {
            assert_int_equal(f->ip, w->pc);
            const char *want_mod = NULL;
            for (int m = 0; m < NMOD; m++)
                if (w->pc >= mods[m].start && w->pc < mods[m].end)
                    want_mod = mods[m].path;
            if (!want_mod) {
                assert_int_equal(f->module, 0);
            } else {
                const vt_ev_module *mod = vt_reader_module(r, f->module);
                assert_non_null(mod);
                assert_string_equal(mod->path, want_mod);
            }
        } else {
            int c = 0;
            while (codes[c].key != w->pc)
                c++;
            assert_string_equal(vt_reader_string(r, f->function), codes[c].fn);
            assert_string_equal(vt_reader_string(r, f->file), codes[c].file);
            assert_int_equal(f->line, w->line);
        }
    }
}

static void same_event(vt_reader *r, const vt_event *g, const vt_event *w)
{
    assert_int_equal(g->type, w->type);
    assert_int_equal(g->time_ns, w->time_ns);
    switch (w->type) {
    case VT_EV_ALLOC:
        assert_int_equal(g->u.alloc.address, w->u.alloc.address);
        assert_int_equal(g->u.alloc.size, w->u.alloc.size);
        assert_int_equal(g->u.alloc.device, w->u.alloc.device);
        assert_int_equal(g->u.alloc.kind, w->u.alloc.kind);
        assert_int_equal(g->u.alloc.api, w->u.alloc.api);
        assert_int_equal(g->u.alloc.stream, w->u.alloc.stream);
        assert_int_equal(g->u.alloc.pool, w->u.alloc.pool);
        assert_int_equal(g->u.alloc.corr, w->u.alloc.corr);
        same_site(r, &g->u.alloc.site, &w->u.alloc.site, 1);
        break;
    case VT_EV_FREE:
        assert_int_equal(g->u.free.address, w->u.free.address);
        assert_int_equal(g->u.free.device, w->u.free.device);
        assert_int_equal(g->u.free.kind, w->u.free.kind);
        assert_int_equal(g->u.free.api, w->u.free.api);
        assert_int_equal(g->u.free.stream, w->u.free.stream);
        assert_int_equal(g->u.free.corr, w->u.free.corr);
        same_site(r, &g->u.free.site, &w->u.free.site, 1);
        break;
    case VT_EV_ALLOC_FAILED:
        assert_int_equal(g->u.alloc_failed.size, w->u.alloc_failed.size);
        assert_int_equal(g->u.alloc_failed.device, w->u.alloc_failed.device);
        assert_int_equal(g->u.alloc_failed.kind, w->u.alloc_failed.kind);
        assert_int_equal(g->u.alloc_failed.api, w->u.alloc_failed.api);
        assert_int_equal(g->u.alloc_failed.error, w->u.alloc_failed.error);
        same_str(g->u.alloc_failed.error_name, w->u.alloc_failed.error_name, "error_name");
        assert_int_equal(g->u.alloc_failed.stream, w->u.alloc_failed.stream);
        assert_int_equal(g->u.alloc_failed.pool, w->u.alloc_failed.pool);
        assert_int_equal(g->u.alloc_failed.corr, w->u.alloc_failed.corr);
        same_site(r, &g->u.alloc_failed.site, &w->u.alloc_failed.site, 1);
        break;
    case VT_EV_VMM_RESERVE:
    case VT_EV_VMM_ADDRESS_FREE:
    case VT_EV_VMM_UNMAP:
        assert_int_equal(g->u.vmm_range.address, w->u.vmm_range.address);
        assert_int_equal(g->u.vmm_range.size, w->u.vmm_range.size);
        assert_int_equal(g->u.vmm_range.corr, w->u.vmm_range.corr);
        same_site(r, &g->u.vmm_range.site, &w->u.vmm_range.site, w->type == VT_EV_VMM_RESERVE);
        break;
    case VT_EV_VMM_CREATE:
        assert_int_equal(g->u.vmm_create.handle, w->u.vmm_create.handle);
        assert_int_equal(g->u.vmm_create.size, w->u.vmm_create.size);
        assert_int_equal(g->u.vmm_create.device, w->u.vmm_create.device);
        assert_int_equal(g->u.vmm_create.kind, w->u.vmm_create.kind);
        assert_int_equal(g->u.vmm_create.corr, w->u.vmm_create.corr);
        same_site(r, &g->u.vmm_create.site, &w->u.vmm_create.site, 1);
        break;
    case VT_EV_VMM_RELEASE:
        assert_int_equal(g->u.vmm_release.handle, w->u.vmm_release.handle);
        assert_int_equal(g->u.vmm_release.corr, w->u.vmm_release.corr);
        same_site(r, &g->u.vmm_release.site, &w->u.vmm_release.site, 0);
        break;
    case VT_EV_VMM_MAP:
        assert_int_equal(g->u.vmm_map.address, w->u.vmm_map.address);
        assert_int_equal(g->u.vmm_map.size, w->u.vmm_map.size);
        assert_int_equal(g->u.vmm_map.offset, w->u.vmm_map.offset);
        assert_int_equal(g->u.vmm_map.handle, w->u.vmm_map.handle);
        assert_int_equal(g->u.vmm_map.corr, w->u.vmm_map.corr);
        same_site(r, &g->u.vmm_map.site, &w->u.vmm_map.site, 0);
        break;
    case VT_EV_POOL:
        assert_int_equal(g->u.pool.op, w->u.pool.op);
        assert_int_equal(g->u.pool.pool, w->u.pool.pool);
        assert_int_equal(g->u.pool.device, w->u.pool.device);
        assert_int_equal(g->u.pool.value, w->u.pool.value);
        assert_int_equal(g->u.pool.corr, w->u.pool.corr);
        same_site(r, &g->u.pool.site, &w->u.pool.site, 1);
        break;
    case VT_EV_POOL_USAGE:
        assert_memory_equal(&g->u.pool_usage, &w->u.pool_usage, sizeof(vt_ev_pool_usage));
        break;
    case VT_EV_MEMORY_USAGE:
        assert_int_equal(g->u.memory_usage.device, w->u.memory_usage.device);
        assert_int_equal(g->u.memory_usage.free, w->u.memory_usage.free);
        assert_int_equal(g->u.memory_usage.total, w->u.memory_usage.total);
        break;
    case VT_EV_KERNEL: {
        const vt_ev_kernel *a = &g->u.kernel, *b = &w->u.kernel;
        assert_string_equal(a->name, b->name);
        assert_string_equal(vt_reader_string(r, a->name_id), b->name);
        assert_int_equal(a->device, b->device);
        assert_int_equal(a->stream, b->stream);
        assert_memory_equal(a->grid, b->grid, sizeof(a->grid));
        assert_memory_equal(a->block, b->block, sizeof(a->block));
        assert_int_equal(a->shared_memory, b->shared_memory);
        assert_int_equal(!!a->graph, !!b->graph);
        assert_int_equal(a->graph_id, b->graph_id);
        assert_int_equal(a->duration_ns, b->duration_ns);
        assert_int_equal(a->corr, b->corr);
        const vt_ev_launch *l = vt_reader_launch(r, a->launch_id);
        assert_non_null(l);
        assert_int_equal(l->name, a->name_id);
        break;
    }
    case VT_EV_NVTX:
        assert_int_equal(g->u.nvtx.op, w->u.nvtx.op);
        same_str(g->u.nvtx.message, w->u.nvtx.message, "nvtx message");
        same_str(g->u.nvtx.domain, w->u.nvtx.domain, "nvtx domain");
        assert_int_equal(g->u.nvtx.range_id, w->u.nvtx.range_id);
        same_site(r, &g->u.nvtx.site, &w->u.nvtx.site, 0);
        break;
    case VT_EV_DROPPED:
        assert_int_equal(g->u.dropped.source, w->u.dropped.source);
        assert_int_equal(g->u.dropped.count, w->u.dropped.count);
        same_str(g->u.dropped.reason, w->u.dropped.reason, "dropped reason");
        break;
    case VT_EV_NOTE:
        assert_int_equal(g->u.note.severity, w->u.note.severity);
        assert_string_equal(g->u.note.text, w->u.note.text);
        break;
    default:
        fail_msg("unexpected kind %d", w->type);
    }
}

/* ---- writing ------------------------------------------------------------- */

static char *tmp_file(int *fd)
{
    char *path = strdup("/tmp/vt_roundtrip_XXXXXX");
    *fd = mkstemp(path);
    assert_true(*fd >= 0);
    return path;
}

static void emit(vt_writer *w, const vt_event *e)
{
    int rc;
    for (int tries = 0; (rc = vt_writer_emit(w, e)) == VT_ERR_DROPPED && tries < 100000; tries++)
        usleep(50); /* queue full: let the writer thread catch up */
    assert_int_equal(rc, 0);
}

/* Write `n` random events (seed) into a new file; returns its path. */
static char *write_trace(uint64_t seed, size_t n, size_t frame_bytes, sent **out)
{
    int fd;
    char *path = tmp_file(&fd);
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.fd = fd;
    cfg.frame_bytes = frame_bytes;
    cfg.quiet = 1;
    cfg.ring_bytes = 16 << 20;
    const char *argv[] = {"python3", "train.py"};
    vt_ev_header hdr = {.pid = 77, .ppid = 1, .hostname = "h", .program = "train.py", .argv = argv, .argc = 2,
                        .clock = VT_CLOCK_CUPTI, .trace_clock_ns = 1, .realtime_ns = 2, .kernels = 1,
                        .native_stacks = 1, .python_stacks = 1};
    vt_writer *w = NULL;
    assert_int_equal(vt_writer_create(&w, &cfg, &hdr), 0);
    vt_event e;
    for (int i = 0; i < NMOD; i++) {
        memset(&e, 0, sizeof(e));
        e.type = VT_EV_MODULE;
        e.u.module = (vt_ev_module){.path = mods[i].path, .load_bias = mods[i].bias, .start = mods[i].start,
                                    .end = mods[i].end};
        emit(w, &e);
    }
    for (int i = 0; i < NCODE; i++)
        assert_int_equal(vt_writer_define_code(w, codes[i].key, codes[i].file, codes[i].fn), 0);
    sent *s = calloc(n, sizeof(*s));
    uint64_t rng = seed;
    for (size_t i = 0; i < n; i++) {
        random_event(&rng, 1000000 + i * 10, &s[i]);
        emit(w, &s[i].ev);
    }
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    vt_writer_free(w);
    *out = s;
    return path;
}

static int is_definition(vt_evtype t)
{
    return t == VT_EV_HEADER || t == VT_EV_SYNC || t == VT_EV_STRING || t == VT_EV_FRAME || t == VT_EV_STACK ||
           t == VT_EV_MODULE || t == VT_EV_THREAD || t == VT_EV_LAUNCH || t == VT_EV_DEVICE;
}

static void test_writer_roundtrip(void **state)
{
    (void)state;
    const size_t n = 60000;
    sent *s;
    char *path = write_trace(11, n, 16 << 10, &s);
    vt_reader *r;
    char msg[256];
    assert_int_equal(vt_reader_open(&r, path, msg, sizeof(msg)), 0);
    vt_event ev;
    size_t i = 0;
    int rc, seen_kind[VT_EV__MAX] = {0};
    while ((rc = vt_reader_next(r, &ev)) == 1) {
        if (is_definition(ev.type) || ev.type == VT_EV_END)
            continue;
        if (ev.type == VT_EV_DROPPED && ev.u.dropped.source == VT_DROP_WRITER_QUEUE)
            continue; /* emit() retried after a full queue; nothing was lost */
        assert_true(i < n);
        same_event(r, &ev, &s[i].ev);
        seen_kind[ev.type] = 1;
        i++;
    }
    if (rc)
        fail_msg("%s", vt_reader_errmsg(r));
    assert_int_equal(i, n);
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
        assert_true(seen_kind[kinds[k]]);
    vt_reader_stats st;
    vt_reader_get_stats(r, &st);
    assert_true(st.complete);
    assert_true(st.frames > 10); /* many zstd frames, all joined by Syncs */
    assert_int_equal(st.sync_gaps, 0);
    assert_int_equal(st.unknown_fields, 0);
    assert_non_null(vt_reader_header(r));
    assert_int_equal(vt_reader_header(r)->pid, 77);
    print_message("roundtrip: %zu events, %llu records, %llu frames, %llu bytes (%.2f bytes/record)\n", n,
                  (unsigned long long)st.records, (unsigned long long)st.frames,
                  (unsigned long long)st.bytes_in, (double)st.bytes_in / (double)st.records);
    vt_reader_free(r);
    unlink(path);
    free(path);
    free(s);
}

/* Every prefix of a small writer trace: a prefix of the events, then
 * VT_ERR_TRUNCATED; the full file reads completely. */
static void test_writer_truncation(void **state)
{
    (void)state;
    sent *s;
    char *path = write_trace(5, 150, 1024, &s);
    FILE *f = fopen(path, "rb");
    static uint8_t data[1 << 20];
    size_t size = fread(data, 1, sizeof(data), f);
    fclose(f);
    assert_true(size > 100 && size < sizeof(data));
    size_t prev = 0;
    for (size_t len = 0; len <= size; len++) {
        uint8_t *pre = malloc(len ? len : 1);
        memcpy(pre, data, len);
        vt_reader *r;
        vt_event ev;
        int rc;
        size_t i = 0;
        assert_int_equal(vt_reader_open_mem(&r, pre, len, "w.zst"), 0);
        while ((rc = vt_reader_next(r, &ev)) == 1) {
            if (is_definition(ev.type) || ev.type == VT_EV_END ||
                (ev.type == VT_EV_DROPPED && ev.u.dropped.source == VT_DROP_WRITER_QUEUE))
                continue;
            assert_true(i < 150);
            same_event(r, &ev, &s[i].ev);
            i++;
        }
        if (len == size) {
            assert_int_equal(rc, 0);
            assert_int_equal(i, 150);
        } else {
            if (rc != VT_ERR_TRUNCATED)
                fail_msg("len %zu: %d %s", len, rc, vt_reader_errmsg(r));
            assert_non_null(strstr(vt_reader_errmsg(r), "w.zst: truncated at offset "));
        }
        assert_true(i >= prev);
        prev = i;
        vt_reader_free(r);
        free(pre);
    }
    unlink(path);
    free(path);
    free(s);
}

/* Events one at a time from vt_reader_next_batch(r, .., max): returns 1
 * with *ev, or the batch call's final code. */
typedef struct { vt_event ev[64]; int n, i; } batcher;
static int batch_next(vt_reader *r, batcher *b, int max, const vt_event **ev)
{
    if (b->i == b->n) {
        int rc = vt_reader_next_batch(r, b->ev, max);
        if (rc <= 0)
            return rc;
        assert_true(rc <= max);
        b->n = rc;
        b->i = 0;
    }
    *ev = &b->ev[b->i++];
    return 1;
}

/* vt_reader_next_batch() yields the events of vt_reader_next(): a long
 * trace with several batch sizes, and every prefix of a short one. */
static void test_writer_batches(void **state)
{
    (void)state;
    const size_t n = 60000;
    sent *s;
    char *path = write_trace(11, n, 16 << 10, &s);
    static const int maxes[] = {1, 3, 64};
    for (size_t m = 0; m < 3; m++) {
        vt_reader *r;
        char msg[256];
        assert_int_equal(vt_reader_open(&r, path, msg, sizeof(msg)), 0);
        batcher b = {.n = 0, .i = 0};
        const vt_event *ev;
        size_t i = 0;
        int rc;
        while ((rc = batch_next(r, &b, maxes[m], &ev)) == 1) {
            if (is_definition(ev->type) || ev->type == VT_EV_END ||
                (ev->type == VT_EV_DROPPED && ev->u.dropped.source == VT_DROP_WRITER_QUEUE))
                continue;
            assert_true(i < n);
            same_event(r, ev, &s[i].ev);
            i++;
        }
        if (rc)
            fail_msg("%s", vt_reader_errmsg(r));
        assert_int_equal(i, n);
        assert_int_equal(vt_reader_next_batch(r, b.ev, 64), 0);
        assert_int_equal(vt_reader_next_batch(r, b.ev, 0), VT_ERR_INVALID);
        vt_reader_free(r);
    }
    unlink(path);
    free(path);
    free(s);

    path = write_trace(5, 150, 1024, &s);
    FILE *f = fopen(path, "rb");
    static uint8_t data[1 << 20];
    size_t size = fread(data, 1, sizeof(data), f);
    fclose(f);
    for (size_t len = 0; len <= size; len = len + 7 < size || len == size ? len + 7 : size) {
        vt_reader *r;
        batcher b = {.n = 0, .i = 0};
        const vt_event *ev;
        int rc;
        size_t i = 0;
        assert_int_equal(vt_reader_open_mem(&r, data, len, "w.zst"), 0);
        while ((rc = batch_next(r, &b, 64, &ev)) == 1) {
            if (is_definition(ev->type) || ev->type == VT_EV_END ||
                (ev->type == VT_EV_DROPPED && ev->u.dropped.source == VT_DROP_WRITER_QUEUE))
                continue;
            same_event(r, ev, &s[i].ev);
            i++;
        }
        if (len == size) {
            assert_int_equal(rc, 0);
            assert_int_equal(i, 150);
        } else {
            assert_int_equal(rc, VT_ERR_TRUNCATED);
            assert_int_equal(vt_reader_next_batch(r, b.ev, 64), VT_ERR_TRUNCATED); /* final */
        }
        vt_reader_free(r);
    }
    unlink(path);
    free(path);
    free(s);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writer_roundtrip),
        cmocka_unit_test(test_writer_truncation),
        cmocka_unit_test(test_writer_batches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
