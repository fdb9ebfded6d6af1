/* test_writer_roundtrip.c - every event kind written by vt_writer comes
 * back, decoded independently (wt_decode.c), with its values, ids, times and
 * correlation ids; interning and zstd frame/sync rules. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "vt_error.h"
#include "vt_writer.h"
#include "wt_decode.h"

static vt_writer *open_writer(const char *path, vt_writer_config *cfg)
{
    vt_writer_config c;
    if (!cfg) {
        vt_writer_config_default(&c);
        cfg = &c;
    }
    cfg->path = path;
    vt_writer *w = NULL;
    assert_int_equal(vt_writer_create(&w, cfg, NULL), 0);
    assert_non_null(w);
    return w;
}

static const char *S(const wt_trace *t, uint32_t id)
{
    assert_true(id >= 1 && id <= t->nstr);
    return t->str[id];
}

/* Every producer-visible kind, with distinct values. */
static void test_roundtrip_all_kinds(void **state)
{
    (void)state;
    char path[512];
    wt_tmp_path(path, sizeof(path), "all.vt");
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    vt_writer *w = NULL;
    cfg.path = path;
    const char *argv[] = {"python", "train.py", "--lr=3", NULL};
    const char *en[] = {"RANK", "WORLD_SIZE"}, *ev_[] = {"3", "8"};
    vt_ev_header hdr = {.pid = 4242, .ppid = 1, .hostname = "node7", .program = "train.py",
                        .argv = argv, .argc = 4, /* a NULL entry is written as "" */ .env_names = en, .env_values = ev_, .nenv = 2,
                        .clock = VT_CLOCK_CUPTI, .trace_clock_ns = 1000000, .realtime_ns = 1700000000000000000ull,
                        .kernels = 1, .native_stacks = 1, .python_stacks = 1};
    assert_int_equal(vt_writer_create(&w, &cfg, &hdr), 0);

    /* definitions the producer sends */
    static const uint8_t bid[20] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
    vt_event e;
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_MODULE;
    e.u.module = (vt_ev_module){.path = "/usr/lib/libtorch_cuda.so", .load_bias = 0x7f0000000000ull,
                                .start = 0x7f0000001000ull, .end = 0x7f0000900000ull, .build_id = bid,
                                .build_id_len = 20};
    assert_int_equal(vt_writer_emit(w, &e), 0);
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_DEVICE;
    e.u.device = (vt_ev_device){.index = 1, .name = "NVIDIA H100", .total_memory = 80ull << 30, .cc_major = 9,
                                .cc_minor = 0, .pci_bus_id = "0000:3b:00.0"};
    for (int i = 0; i < 16; i++)
        e.u.device.uuid[i] = (uint8_t)(0xa0 + i);
    assert_int_equal(vt_writer_emit(w, &e), 0);
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_THREAD;
    e.u.thread = (vt_ev_thread){.tid = 999999, .name = "pt_autograd_0"};
    assert_int_equal(vt_writer_emit(w, &e), 0);
    assert_int_equal(vt_writer_define_code(w, 0x5000, "model.py", "forward"), 0);

    vt_frame frames[3] = {{0x7f0000002345ull, 0, VT_FRAME_NATIVE},
                          {0x5000, 88, VT_FRAME_PYTHON},
                          {0x1234, 0, VT_FRAME_NATIVE}};
    uint64_t t0 = 2000000;

    memset(&e, 0, sizeof(e));
    e.type = VT_EV_ALLOC;
    e.time_ns = t0 + 10;
    e.u.alloc = (vt_ev_alloc){.address = 0x7e0000000000ull, .size = 1 << 20, .device = 1, .kind = VT_MEM_DEVICE,
                              .api = VT_API_MALLOC_ASYNC, .stream = 0x55, .pool = 0x66, .corr = 1000,
                              .site = {.frames = frames, .nframes = 3}};
    assert_int_equal(vt_writer_emit(w, &e), 0);

    memset(&e, 0, sizeof(e));
    e.type = VT_EV_FREE;
    e.time_ns = t0 + 20;
    e.u.free = (vt_ev_free){.address = 0x7e0000000000ull, .device = 1, .kind = VT_MEM_DEVICE,
                            .api = VT_API_MALLOC_ASYNC, .stream = 0x55, .corr = 998, .site = {.tid = 999999}};
    assert_int_equal(vt_writer_emit(w, &e), 0);

    memset(&e, 0, sizeof(e));
    e.type = VT_EV_ALLOC_FAILED;
    e.time_ns = t0 + 30;
    e.u.alloc_failed = (vt_ev_alloc_failed){.size = 1ull << 40, .device = 1, .kind = VT_MEM_MANAGED,
                                            .api = VT_API_MALLOC_MANAGED, .error = 2,
                                            .error_name = "CUDA_ERROR_OUT_OF_MEMORY", .stream = 7, .pool = 8,
                                            .corr = 1001, .site = {.frames = frames, .nframes = 3}};
    assert_int_equal(vt_writer_emit(w, &e), 0);

    memset(&e, 0, sizeof(e));
    e.type = VT_EV_VMM_RESERVE;
    e.time_ns = t0 + 40;
    e.u.vmm_range = (vt_ev_vmm_range){.address = 0x10000000, .size = 1 << 30, .corr = 1002,
                                      .site = {.frames = frames + 1, .nframes = 2}};
    assert_int_equal(vt_writer_emit(w, &e), 0);
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_VMM_CREATE;
    e.time_ns = t0 + 50;
    e.u.vmm_create = (vt_ev_vmm_create){.handle = 77, .size = 2 << 20, .device = 1, .kind = VT_MEM_DEVICE,
                                        .corr = 1003};
    assert_int_equal(vt_writer_emit(w, &e), 0);
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_VMM_MAP;
    e.time_ns = t0 + 60;
    e.u.vmm_map = (vt_ev_vmm_map){.address = 0x10000000, .size = 2 << 20, .offset = 0, .handle = 77, .corr = 1004};
    assert_int_equal(vt_writer_emit(w, &e), 0);
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_VMM_UNMAP;
    e.time_ns = t0 + 70;
    e.u.vmm_range = (vt_ev_vmm_range){.address = 0x10000000, .size = 2 << 20, .corr = 1005};
    assert_int_equal(vt_writer_emit(w, &e), 0);
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_VMM_RELEASE;
    e.time_ns = t0 + 80;
    e.u.vmm_release = (vt_ev_vmm_release){.handle = 77, .corr = 1006};
    assert_int_equal(vt_writer_emit(w, &e), 0);
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_VMM_ADDRESS_FREE;
    e.time_ns = t0 + 90;
    e.u.vmm_range = (vt_ev_vmm_range){.address = 0x10000000, .size = 1 << 30, .corr = 1007};
    assert_int_equal(vt_writer_emit(w, &e), 0);
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_POOL;
    e.time_ns = t0 + 100;
    e.u.pool = (vt_ev_pool){.op = VT_POOL_TRIM, .pool = 0x66, .device = 1, .value = 12345, .corr = 1008};
    assert_int_equal(vt_writer_emit(w, &e), 0);
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_POOL_USAGE;
    e.time_ns = t0 + 110;
    e.u.pool_usage = (vt_ev_pool_usage){.pool = 0x66, .device = 1, .reserved_current = 1, .reserved_high = 2,
                                        .used_current = 3, .used_high = 4};
    assert_int_equal(vt_writer_emit(w, &e), 0);
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_MEMORY_USAGE;
    e.time_ns = t0 + 120;
    e.u.memory_usage = (vt_ev_memory_usage){.device = 1, .free = 5ull << 30, .total = 80ull << 30};
    assert_int_equal(vt_writer_emit(w, &e), 0);
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_NVTX;
    e.time_ns = t0 + 130;
    e.u.nvtx = (vt_ev_nvtx){.op = VT_NVTX_START, .message = "forward", .domain = "torch", .range_id = 42};
    assert_int_equal(vt_writer_emit(w, &e), 0);
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_DROPPED;
    e.time_ns = t0 + 140;
    e.u.dropped = (vt_ev_dropped){.source = VT_DROP_CUPTI_ACTIVITY, .count = 17, .reason = "buffer full"};
    assert_int_equal(vt_writer_emit(w, &e), 0);
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_NOTE;
    e.time_ns = t0 + 150;
    e.u.note = (vt_ev_note){.severity = VT_SEV_WARNING, .text = "python stacks: unknown version"};
    assert_int_equal(vt_writer_emit(w, &e), 0);
    /* two kernels sharing a launch signature, one with another */
    for (int i = 0; i < 3; i++) {
        memset(&e, 0, sizeof(e));
        e.type = VT_EV_KERNEL;
        e.time_ns = 5000000 + (uint64_t)i * 1000;
        e.u.kernel = (vt_ev_kernel){.name = i == 2 ? "_Z6other" : "_Z4gemmPf", .device = 1, .stream = 7,
                                    .grid = {128, 2, 1}, .block = {256, 1, 1}, .shared_memory = 4096,
                                    .graph = i == 2, .graph_id = i == 2 ? 9 : 0, .duration_ns = 700 + (uint64_t)i,
                                    .corr = 2000 + (uint64_t)i};
        assert_int_equal(vt_writer_emit(w, &e), 0);
    }
    /* an event with corr 0 after nonzero ones must decode as 0 */
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_FREE;
    e.time_ns = t0 + 5;
    e.u.free = (vt_ev_free){.address = 0x42};
    assert_int_equal(vt_writer_emit(w, &e), 0);
    /* STRING and HEADER are the writer's own */
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_STRING;
    assert_int_equal(vt_writer_emit(w, &e), VT_ERR_INVALID);
    e.type = VT_EV_HEADER;
    assert_int_equal(vt_writer_emit(w, &e), VT_ERR_INVALID);

    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0); /* idempotent */
    vt_writer_stats st;
    vt_writer_get_stats(w, &st);
    assert_int_equal(st.emitted, 22);
    assert_int_equal(st.dropped, 0);
    vt_writer_free(w);

    wt_trace t;
    assert_int_equal(wt_decode_file(path, &t, 1), 0);
    assert_int_equal(t.errors, 0);
    assert_false(t.truncated);
    /* header */
    assert_non_null(t.header);
    assert_int_equal(t.header->magic, VT_FORMAT_MAGIC);
    assert_int_equal(t.header->format_version, VT_FORMAT_VERSION);
    assert_string_equal(t.header->tool_version, VT_TOOL_VERSION);
    assert_int_equal(t.header->pid, 4242);
    assert_string_equal(t.header->hostname, "node7");
    assert_string_equal(t.header->program, "train.py");
    assert_int_equal(t.header->n_argv, 4);
    assert_string_equal(t.header->argv[2], "--lr=3");
    assert_string_equal(t.header->argv[3], "");
    assert_int_equal(t.header->n_env, 2);
    assert_string_equal(t.header->env[1]->name, "WORLD_SIZE");
    assert_string_equal(t.header->env[1]->value, "8");
    assert_int_equal(t.header->clock, VRAMTRACE__CLOCK_DOMAIN__CLOCK_CUPTI);
    assert_int_equal(t.header->trace_clock_ns, 1000000);
    assert_int_equal(t.header->realtime_ns, 1700000000000000000ull);
    assert_true(t.header->kernels && t.header->native_stacks && t.header->python_stacks);
    assert_int_equal(t.nsync, 1);

    /* events in the order emitted (one thread; kernels have merge key 0 so
     * they may come first: check by type) */
    size_t seen = 0;
    uint32_t kern_launch[3] = {0};
    int nk = 0;
    uint32_t alloc_stack = 0, af_stack = 0;
    for (size_t i = 0; i < t.nev; i++) {
        const wt_ev *x = &t.ev[i];
        const Vramtrace__Record *r = x->rec;
        uint32_t fr[16];
        switch (x->type) {
        case VRAMTRACE__RECORD__BODY_MODULE:
            assert_int_equal(r->module->id, 1);
            assert_string_equal(r->module->path, "/usr/lib/libtorch_cuda.so");
            assert_int_equal(r->module->load_bias, 0x7f0000000000ull);
            assert_int_equal(r->module->start, 0x7f0000001000ull);
            assert_int_equal(r->module->end, 0x7f0000900000ull);
            assert_int_equal(r->module->build_id.len, 20);
            assert_memory_equal(r->module->build_id.data, bid, 20);
            break;
        case VRAMTRACE__RECORD__BODY_DEVICE:
            assert_int_equal(r->device->index, 1);
            assert_string_equal(r->device->name, "NVIDIA H100");
            assert_int_equal(r->device->uuid.len, 16);
            assert_int_equal(r->device->uuid.data[15], 0xaf);
            assert_int_equal(r->device->total_memory, 80ull << 30);
            assert_int_equal(r->device->cc_major, 9);
            assert_string_equal(r->device->pci_bus_id, "0000:3b:00.0");
            break;
        case VRAMTRACE__RECORD__BODY_ALLOC: {
            assert_int_equal(x->time, t0 + 10);
            assert_int_equal(x->corr, 1000);
            assert_int_equal(r->alloc->address, 0x7e0000000000ull);
            assert_int_equal(r->alloc->size, 1 << 20);
            assert_int_equal(r->alloc->device, 1);
            assert_int_equal(r->alloc->kind, VRAMTRACE__MEMORY_KIND__MEMORY_KIND_DEVICE);
            assert_int_equal(r->alloc->api, VRAMTRACE__ALLOC_API__ALLOC_API_MALLOC_ASYNC);
            assert_int_equal(r->alloc->stream, 0x55);
            assert_int_equal(r->alloc->pool, 0x66);
            /* thread: the calling thread, named from /proc */
            assert_true(r->alloc->thread >= 1);
            assert_int_equal(t.thread[r->alloc->thread]->tid, (uint32_t)gettid());
            assert_int_equal(wt_stack_frames(&t, r->alloc->stack, fr, 16), 3);
            const Vramtrace__Frame *f0 = t.frame[fr[0]], *f1 = t.frame[fr[1]], *f2 = t.frame[fr[2]];
            assert_int_equal(f0->kind, VRAMTRACE__FRAME_KIND__FRAME_NATIVE);
            assert_int_equal(f0->ip, 0x7f0000002345ull);
            assert_int_equal(f0->module, 1); /* inside the module's range */
            assert_int_equal(f1->kind, VRAMTRACE__FRAME_KIND__FRAME_PYTHON);
            assert_string_equal(S(&t, f1->file), "model.py");
            assert_string_equal(S(&t, f1->function), "forward");
            assert_int_equal(f1->line, 88);
            assert_int_equal(f2->ip, 0x1234);
            assert_int_equal(f2->module, 0); /* outside every module */
            alloc_stack = r->alloc->stack;
            seen |= 1;
            break;
        }
        case VRAMTRACE__RECORD__BODY_FREE:
            if (r->free->address == 0x42) {
                assert_int_equal(x->time, t0 + 5);
                assert_int_equal(x->corr, 0);
                seen |= 1 << 20;
                break;
            }
            assert_int_equal(x->time, t0 + 20);
            assert_int_equal(x->corr, 998);
            assert_int_equal(r->free->address, 0x7e0000000000ull);
            assert_int_equal(r->free->api, VRAMTRACE__ALLOC_API__ALLOC_API_MALLOC_ASYNC);
            assert_int_equal(r->free->stream, 0x55);
            assert_int_equal(r->free->stack, 0);
            /* explicit tid: the THREAD event named it */
            assert_int_equal(t.thread[r->free->thread]->tid, 999999);
            assert_string_equal(t.thread[r->free->thread]->name, "pt_autograd_0");
            seen |= 2;
            break;
        case VRAMTRACE__RECORD__BODY_ALLOC_FAILED:
            assert_int_equal(x->time, t0 + 30);
            assert_int_equal(x->corr, 1001);
            assert_int_equal(r->alloc_failed->size, 1ull << 40);
            assert_int_equal(r->alloc_failed->kind, VRAMTRACE__MEMORY_KIND__MEMORY_KIND_MANAGED);
            assert_int_equal(r->alloc_failed->api, VRAMTRACE__ALLOC_API__ALLOC_API_MALLOC_MANAGED);
            assert_int_equal(r->alloc_failed->error, 2);
            assert_string_equal(S(&t, r->alloc_failed->error_name), "CUDA_ERROR_OUT_OF_MEMORY");
            assert_int_equal(r->alloc_failed->stream, 7);
            assert_int_equal(r->alloc_failed->pool, 8);
            af_stack = r->alloc_failed->stack;
            seen |= 4;
            break;
        case VRAMTRACE__RECORD__BODY_VMM_RESERVE:
            assert_int_equal(x->time, t0 + 40);
            assert_int_equal(x->corr, 1002);
            assert_int_equal(r->vmm_reserve->address, 0x10000000);
            assert_int_equal(r->vmm_reserve->size, 1 << 30);
            assert_int_equal(wt_stack_frames(&t, r->vmm_reserve->stack, fr, 16), 2);
            assert_int_equal(t.frame[fr[0]]->kind, VRAMTRACE__FRAME_KIND__FRAME_PYTHON);
            seen |= 8;
            break;
        case VRAMTRACE__RECORD__BODY_VMM_CREATE:
            assert_int_equal(x->time, t0 + 50);
            assert_int_equal(x->corr, 1003);
            assert_int_equal(r->vmm_create->handle, 77);
            assert_int_equal(r->vmm_create->size, 2 << 20);
            assert_int_equal(r->vmm_create->device, 1);
            assert_int_equal(r->vmm_create->stack, 0);
            seen |= 16;
            break;
        case VRAMTRACE__RECORD__BODY_VMM_MAP:
            assert_int_equal(x->time, t0 + 60);
            assert_int_equal(x->corr, 1004);
            assert_int_equal(r->vmm_map->address, 0x10000000);
            assert_int_equal(r->vmm_map->handle, 77);
            assert_int_equal(r->vmm_map->size, 2 << 20);
            seen |= 32;
            break;
        case VRAMTRACE__RECORD__BODY_VMM_UNMAP:
            assert_int_equal(x->time, t0 + 70);
            assert_int_equal(x->corr, 1005);
            assert_int_equal(r->vmm_unmap->address, 0x10000000);
            seen |= 64;
            break;
        case VRAMTRACE__RECORD__BODY_VMM_RELEASE:
            assert_int_equal(x->time, t0 + 80);
            assert_int_equal(x->corr, 1006);
            assert_int_equal(r->vmm_release->handle, 77);
            seen |= 128;
            break;
        case VRAMTRACE__RECORD__BODY_VMM_ADDRESS_FREE:
            assert_int_equal(x->time, t0 + 90);
            assert_int_equal(x->corr, 1007);
            assert_int_equal(r->vmm_address_free->size, 1 << 30);
            seen |= 256;
            break;
        case VRAMTRACE__RECORD__BODY_POOL:
            assert_int_equal(x->time, t0 + 100);
            assert_int_equal(x->corr, 1008);
            assert_int_equal(r->pool->op, VRAMTRACE__POOL_OP__POOL_TRIM);
            assert_int_equal(r->pool->pool, 0x66);
            assert_int_equal(r->pool->value, 12345);
            seen |= 512;
            break;
        case VRAMTRACE__RECORD__BODY_POOL_USAGE:
            assert_int_equal(x->time, t0 + 110);
            assert_int_equal(r->pool_usage->pool, 0x66);
            assert_int_equal(r->pool_usage->reserved_current, 1);
            assert_int_equal(r->pool_usage->reserved_high, 2);
            assert_int_equal(r->pool_usage->used_current, 3);
            assert_int_equal(r->pool_usage->used_high, 4);
            seen |= 1024;
            break;
        case VRAMTRACE__RECORD__BODY_MEMORY_USAGE:
            assert_int_equal(x->time, t0 + 120);
            assert_int_equal(r->memory_usage->free, 5ull << 30);
            assert_int_equal(r->memory_usage->total, 80ull << 30);
            seen |= 2048;
            break;
        case VRAMTRACE__RECORD__BODY_NVTX:
            assert_int_equal(x->time, t0 + 130);
            assert_int_equal(r->nvtx->op, VRAMTRACE__NVTX_OP__NVTX_START);
            assert_string_equal(S(&t, r->nvtx->message), "forward");
            assert_string_equal(S(&t, r->nvtx->domain), "torch");
            assert_int_equal(r->nvtx->range_id, 42);
            assert_int_equal(t.thread[r->nvtx->thread]->tid, (uint32_t)gettid());
            seen |= 4096;
            break;
        case VRAMTRACE__RECORD__BODY_DROPPED:
            assert_int_equal(x->time, t0 + 140);
            assert_int_equal(r->dropped->source, VRAMTRACE__DROP_SOURCE__DROP_CUPTI_ACTIVITY);
            assert_int_equal(r->dropped->count, 17);
            assert_string_equal(S(&t, r->dropped->reason), "buffer full");
            seen |= 8192;
            break;
        case VRAMTRACE__RECORD__BODY_NOTE:
            assert_int_equal(x->time, t0 + 150);
            assert_int_equal(r->note->severity, VRAMTRACE__SEVERITY__SEVERITY_WARNING);
            assert_string_equal(r->note->text, "python stacks: unknown version");
            seen |= 16384;
            break;
        case VRAMTRACE__RECORD__BODY_KERNEL: {
            assert_true(nk < 3);
            assert_int_equal(x->time, 5000000 + (uint64_t)nk * 1000);
            assert_int_equal(x->corr, 2000 + (uint64_t)nk);
            assert_int_equal(r->kernel->duration_ns, 700 + (uint64_t)nk);
            assert_int_equal(r->kernel->graph_id, nk == 2 ? 9 : 0);
            const Vramtrace__Launch *l = t.launch[r->kernel->launch];
            assert_string_equal(S(&t, l->name), nk == 2 ? "_Z6other" : "_Z4gemmPf");
            assert_int_equal(l->device, 1);
            assert_int_equal(l->stream, 7);
            assert_int_equal(l->grid_x, 128);
            assert_int_equal(l->grid_y, 2);
            assert_int_equal(l->grid_z, 1);
            assert_int_equal(l->block_x, 256);
            assert_int_equal(l->shared_memory, 4096);
            assert_int_equal(l->graph, nk == 2);
            kern_launch[nk++] = r->kernel->launch;
            seen |= 32768;
            break;
        }
        case VRAMTRACE__RECORD__BODY_END:
            assert_int_equal(r->end->reason, VRAMTRACE__END_REASON__END_NORMAL);
            assert_int_equal(r->end->events, 22);
            assert_int_equal(r->end->dropped, 17); /* all sources */
            assert_int_equal(i, t.nev - 1);
            seen |= 65536;
            break;
        default:
            fail_msg("unexpected record type %d", x->type);
        }
    }
    assert_int_equal(seen, (1 << 17) - 1 + (1 << 20));
    assert_int_equal(nk, 3);
    assert_true(alloc_stack != 0);
    assert_int_equal(alloc_stack, af_stack); /* same frames, same stack id */
    assert_int_equal(kern_launch[0], kern_launch[1]); /* interned launch */
    assert_int_not_equal(kern_launch[0], kern_launch[2]);
    assert_int_equal(t.nlaunch, 2);
    assert_int_equal(t.nmodule, 1);
    wt_trace_free(&t);
    unlink(path);
}

/* Same stacks get the same id; stacks sharing outer frames share Stack
 * records through `parent`; deep stacks flatten back exactly. */
static void test_interning_stacks(void **state)
{
    (void)state;
    char path[512];
    wt_tmp_path(path, sizeof(path), "intern.vt");
    vt_writer *w = open_writer(path, NULL);
    enum { DEPTH = 30, NSTACK = 40 };
    vt_frame fr[NSTACK][DEPTH];
    for (int s = 0; s < NSTACK; s++)
        for (int d = 0; d < DEPTH; d++)
            /* outermost 24 frames common to all; innermost 6 differ */
            fr[s][d] = (vt_frame){.pc = d < 6 ? 0x100000u + (uint64_t)s * 64 + (uint64_t)d : 0x200000u + (uint64_t)d,
                                  .kind = VT_FRAME_NATIVE};
    for (int rep = 0; rep < 5; rep++) {
        for (int s = 0; s < NSTACK; s++) {
            vt_event e;
            memset(&e, 0, sizeof(e));
            e.type = VT_EV_ALLOC;
            e.u.alloc.address = (uint64_t)s;
            e.u.alloc.size = (uint64_t)rep;
            e.u.alloc.site.frames = fr[s];
            e.u.alloc.site.nframes = (uint32_t)(s == 0 ? 1 : DEPTH); /* stack 0: one frame */
            assert_int_equal(vt_writer_emit(w, &e), 0);
            assert_int_equal(vt_writer_define_code(w, 1, "a.py", "f"), 0); /* noise: same strings */
        }
    }
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    vt_writer_free(w);

    wt_trace t;
    assert_int_equal(wt_decode_file(path, &t, 0), 0);
    assert_int_equal(t.errors, 0);
    uint32_t ids[NSTACK] = {0};
    size_t nalloc = 0;
    for (size_t i = 0; i < t.nev; i++) {
        const wt_ev *x = &t.ev[i];
        if (x->type != VRAMTRACE__RECORD__BODY_ALLOC)
            continue;
        nalloc++;
        int s = (int)x->a;
        if (!ids[s])
            ids[s] = x->stack;
        assert_int_equal(ids[s], x->stack); /* same stack, same id */
        uint32_t f[64];
        size_t n = wt_stack_frames(&t, x->stack, f, 64);
        assert_int_equal(n, s == 0 ? 1 : DEPTH);
        for (size_t d = 0; d < n; d++)
            assert_int_equal(t.frame[f[d]]->ip, fr[s][d].pc);
    }
    assert_int_equal(nalloc, 5 * NSTACK);
    for (int a = 0; a < NSTACK; a++)
        for (int b = a + 1; b < NSTACK; b++)
            assert_int_not_equal(ids[a], ids[b]);
    /* sharing: 39 deep stacks of 30 frames, 24 common outer frames.  Without
     * sharing that would be 39 * 30 frame ids; with it far fewer. */
    size_t total = 0;
    for (uint32_t i = 1; i <= t.nstack; i++)
        total += t.stack[i]->n_frame;
    assert_true(total < 39 * 30 / 2);
    /* frames: 24 common + 39 * 6 distinct + 1 (stack 0 = frame of stack 1's first? no: its own) */
    assert_int_equal(t.nframe, 24 + 39 * 6 + 1);
    assert_int_equal(t.nstr, 2); /* "a.py" and "f" interned once */
    wt_trace_free(&t);
    unlink(path);
}

/* Small frames: many zstd frames, each starting with a Sync; values and
 * times stay exact across the delta resets. */
static void test_frames_and_sync(void **state)
{
    (void)state;
    char path[512];
    wt_tmp_path(path, sizeof(path), "frames.vt");
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.frame_bytes = 2048;
    vt_writer *w = open_writer(path, &cfg);
    enum { N = 20000 };
    /* the second frame has the top bit set (packed as two words in the ring) */
    vt_frame fr[2] = {{0x1000, 0, 0}, {0xffffffff81002000ull, 0, 0}};
    for (int i = 0; i < N; i++) {
        vt_event e;
        memset(&e, 0, sizeof(e));
        if (i % 2) {
            e.type = VT_EV_KERNEL;
            e.time_ns = 1000000000ull + (uint64_t)i * 3000;
            e.u.kernel.name = i % 4 == 1 ? "k1" : "k2";
            e.u.kernel.duration_ns = (uint64_t)i;
            e.u.kernel.corr = (uint64_t)i * 2;
        } else {
            e.type = VT_EV_ALLOC;
            e.time_ns = 500000000ull + (uint64_t)i * 1000;
            e.u.alloc.address = 0x7000000000ull + (uint64_t)i * 512;
            e.u.alloc.size = (uint64_t)i;
            e.u.alloc.corr = (uint64_t)i * 2 + 1;
            e.u.alloc.site.frames = fr;
            e.u.alloc.site.nframes = 2;
        }
        /* this test wants every event: pace with vt_writer_drain() */
        assert_int_equal(vt_writer_emit(w, &e), 0);
        if (i % 1000 == 999) {
            assert_int_equal(vt_writer_drain(w), 0);
            vt_writer_stats ds;
            vt_writer_get_stats(w, &ds);
            assert_true(ds.records >= (uint64_t)i + 1); /* all encoded */
        }
    }
    assert_int_equal(vt_writer_flush(w), 0);
    vt_writer_stats st;
    vt_writer_get_stats(w, &st);
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    vt_writer_free(w);

    wt_trace t;
    assert_int_equal(wt_decode_file(path, &t, 0), 0);
    assert_int_equal(t.errors, 0);
    assert_true(t.nzframes > 20);
    assert_int_equal(t.nsync, t.nzframes);
    assert_true(st.frames >= t.nzframes - 1);
    size_t n = 0;
    uint64_t last_k = 0, last_a = 0;
    for (size_t i = 0; i < t.nev; i++) {
        const wt_ev *x = &t.ev[i];
        if (x->type == VRAMTRACE__RECORD__BODY_KERNEL) {
            uint64_t k = x->b;
            assert_true(k % 2 == 1);
            assert_true(!last_k || k > last_k);
            last_k = k;
            assert_int_equal(x->time, 1000000000ull + k * 3000);
            assert_int_equal(x->corr, k * 2);
            n++;
        } else if (x->type == VRAMTRACE__RECORD__BODY_ALLOC) {
            uint64_t k = x->b;
            assert_true(!last_a || k > last_a);
            last_a = k;
            assert_int_equal(x->time, 500000000ull + k * 1000);
            assert_int_equal(x->corr, k * 2 + 1);
            assert_int_equal(x->a, 0x7000000000ull + k * 512);
            uint32_t f[4];
            assert_int_equal(wt_stack_frames(&t, x->stack, f, 4), 2);
            assert_int_equal(t.frame[f[0]]->ip, 0x1000);
            assert_int_equal(t.frame[f[1]]->ip, 0xffffffff81002000ull);
            n++;
        }
    }
    assert_int_equal(n, N);
    assert_non_null(t.end);
    assert_int_equal(t.end->events, N);
    wt_trace_free(&t);
    unlink(path);
}

/* Without any explicit flush, an event reaches the file within flush_ms. */
static void test_periodic_flush(void **state)
{
    (void)state;
    char path[512];
    wt_tmp_path(path, sizeof(path), "periodic.vt");
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.flush_ms = 50;
    vt_writer *w = open_writer(path, &cfg);
    vt_event e;
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_FREE;
    e.u.free.address = 0xabcdef;
    assert_int_equal(vt_writer_emit(w, &e), 0);
    /* nominally there after flush_ms/2; poll (a loaded machine may delay
     * the writer thread), never calling vt_writer_flush */
    wt_trace t;
    uint64_t t0 = wt_now();
    for (;;) {
        usleep(10 * 1000);
        assert_int_equal(wt_decode_file(path, &t, 0), 0);
        if (t.nev || wt_now() - t0 > 5000000000ull)
            break;
        wt_trace_free(&t);
    }
    print_message("periodic flush: event in the file after %.0f ms (flush_ms 50)\n", (double)(wt_now() - t0) / 1e6);
    assert_int_equal(t.errors, 0);
    assert_int_equal(t.nev, 1);
    assert_int_equal(t.ev[0].a, 0xabcdef);
    assert_null(t.end);
    wt_trace_free(&t);
    vt_writer_free(w);
    assert_int_equal(wt_decode_file(path, &t, 0), 0);
    assert_non_null(t.end); /* free() closes with End */
    assert_false(t.truncated);
    wt_trace_free(&t);
    unlink(path);
}

/* Events after close and on NULL are refused; free(NULL) is a no-op. */
static void test_lifecycle(void **state)
{
    (void)state;
    char path[512];
    wt_tmp_path(path, sizeof(path), "life.vt");
    vt_writer_free(NULL);
    vt_event e;
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_FREE;
    assert_int_equal(vt_writer_emit(NULL, &e), VT_ERR_DISABLED);
    assert_int_equal(vt_writer_flush(NULL), VT_ERR_DISABLED);
    vt_writer_emergency_flush(NULL, 11);
    vt_writer *w = open_writer(path, NULL);
    assert_false(vt_writer_disabled(w));
    assert_string_equal(vt_writer_errmsg(w), "");
    assert_int_equal(vt_writer_emit(w, &e), 0);
    assert_int_equal(vt_writer_flush(w), 0);
    assert_int_equal(vt_writer_close(w, VT_END_ERROR, 0), 0);
    assert_true(vt_writer_disabled(w));
    assert_int_equal(vt_writer_emit(w, &e), VT_ERR_DISABLED);
    assert_int_equal(vt_writer_define_code(w, 1, "a", "b"), VT_ERR_DISABLED);
    assert_int_equal(vt_writer_flush(w), VT_ERR_DISABLED);
    vt_writer_emergency_flush(w, 11); /* no effect after close */
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    vt_writer_free(w);
    wt_trace t;
    assert_int_equal(wt_decode_file(path, &t, 0), 0);
    assert_int_equal(t.errors, 0);
    assert_non_null(t.end);
    assert_int_equal(t.end->reason, VRAMTRACE__END_REASON__END_ERROR);
    assert_int_equal(t.end->events, 1);
    wt_trace_free(&t);
    unlink(path);
}

static void emit_module(vt_writer *w, const char *path, uint64_t start, uint64_t end)
{
    vt_event e;
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_MODULE;
    e.u.module.path = path;
    e.u.module.start = start;
    e.u.module.end = end;
    assert_int_equal(vt_writer_emit(w, &e), 0);
}

/* Allocation whose site carries a fingerprint: the frames go only when
 * the writer has not seen it from this thread (as the library does).
 * Returns 1 if it went as a reference. */
static int emit_alloc_fp(vt_writer *w, uint64_t addr, const vt_frame *fr, uint32_t n, uint64_t fp0, uint64_t fp1)
{
    vt_event e;
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_ALLOC;
    e.u.alloc.address = addr;
    e.u.alloc.site.fp[0] = fp0;
    e.u.alloc.site.fp[1] = fp1;
    int sent = vt_writer_site_sent(w, e.u.alloc.site.fp);
    if (!sent) {
        e.u.alloc.site.frames = fr;
        e.u.alloc.site.nframes = n;
    }
    assert_int_equal(vt_writer_emit(w, &e), 0);
    return sent;
}

/* The same captured frames mean something else after a code key is
 * redefined, a module is loaded over their addresses, or a key used before
 * its definition gets one: each allocation resolves with what was known
 * when it was emitted (the writer's stack cache must not serve stale
 * answers).  refs: every site with a fingerprint, so that each allocation
 * after the first of its stack goes as a 2-byte reference (the encoder
 * interns its copy of the frames again after a module load or a code
 * definition); and then one allocation with a fingerprint never sent and
 * no frames (no stack, no harm). */
static void check_redefinitions(int refs)
{
    char path[512];
    wt_tmp_path(path, sizeof(path), refs ? "redef-refs.vt" : "redef.vt");
    vt_writer *w = open_writer(path, NULL);
    vt_frame fr[2] = {{0x7000, 10, VT_FRAME_PYTHON}, {0x500100, 0, VT_FRAME_NATIVE}};
    vt_frame undef[1] = {{0x8000, 3, VT_FRAME_PYTHON}};
    /* fingerprints of fr and undef; 0 = none (frames every time) */
    const uint64_t A0 = refs ? 0x1111 : 0, A1 = refs ? 0x2222000000000001ull : 0;
    const uint64_t B0 = refs ? 0x3333 : 0, B1 = refs ? 0x4444000000000001ull : 0;
    int nref = 0;
    assert_int_equal(vt_writer_define_code(w, 0x7000, "a.py", "f"), 0);
    nref += emit_alloc_fp(w, 1, fr, 2, A0, A1);      /* a.py:f, no module */
    nref += emit_alloc_fp(w, 2, fr, 2, A0, A1);      /* same */
    emit_module(w, "/lib/one.so", 0x500000, 0x600000);
    nref += emit_alloc_fp(w, 3, fr, 2, A0, A1);      /* a.py:f, one.so */
    assert_int_equal(vt_writer_define_code(w, 0x7000, "b.py", "g"), 0);
    nref += emit_alloc_fp(w, 4, fr, 2, A0, A1);      /* b.py:g, one.so */
    emit_module(w, "/lib/two.so", 0x500000, 0x580000); /* replaces one.so there */
    nref += emit_alloc_fp(w, 5, fr, 2, A0, A1);      /* b.py:g, two.so */
    nref += emit_alloc_fp(w, 6, undef, 1, B0, B1);   /* undefined key: no names */
    assert_int_equal(vt_writer_define_code(w, 0x8000, "c.py", "h"), 0);
    nref += emit_alloc_fp(w, 7, undef, 1, B0, B1);   /* c.py:h */
    if (refs) {
        uint64_t never[2] = {0x5555, 0x6666000000000001ull};
        assert_int_equal(vt_writer_site_sent(w, never), 0);
        emit_alloc_fp(w, 8, NULL, 0, never[0], never[1]);
    }
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    vt_writer_free(w);
    assert_int_equal(nref, refs ? 5 : 0); /* 2, 3, 4, 5 and 7 */

    static const struct {
        const char *file, *func, *module;
    } want[8] = {{0},
                 {"a.py", "f", NULL},
                 {"a.py", "f", NULL},
                 {"a.py", "f", "/lib/one.so"},
                 {"b.py", "g", "/lib/one.so"},
                 {"b.py", "g", "/lib/two.so"},
                 {NULL, NULL, NULL},
                 {"c.py", "h", NULL}};
    wt_trace t;
    assert_int_equal(wt_decode_file(path, &t, 0), 0);
    assert_int_equal(t.errors, 0);
    int n = 0;
    uint32_t stack12 = 0;
    for (size_t i = 0; i < t.nev; i++) {
        const wt_ev *x = &t.ev[i];
        if (x->type != VRAMTRACE__RECORD__BODY_ALLOC)
            continue;
        int a = (int)x->a;
        n++;
        if (a == 8) {
            assert_int_equal(x->stack, 0);
            continue;
        }
        uint32_t f[4];
        size_t depth = wt_stack_frames(&t, x->stack, f, 4);
        assert_int_equal(depth, a >= 6 ? 1 : 2);
        const Vramtrace__Frame *py = t.frame[f[0]];
        assert_int_equal(py->kind, VRAMTRACE__FRAME_KIND__FRAME_PYTHON);
        assert_int_equal(py->line, a >= 6 ? 3 : 10);
        if (want[a].file) {
            assert_string_equal(S(&t, py->file), want[a].file);
            assert_string_equal(S(&t, py->function), want[a].func);
        } else {
            assert_int_equal(py->file, 0);
            assert_int_equal(py->function, 0);
        }
        if (a < 6) {
            const Vramtrace__Frame *nat = t.frame[f[1]];
            assert_int_equal(nat->ip, 0x500100);
            if (want[a].module)
                assert_string_equal(t.module[nat->module]->path, want[a].module);
            else
                assert_int_equal(nat->module, 0);
        }
        if (a == 1)
            stack12 = x->stack;
        if (a == 2)
            assert_int_equal(x->stack, stack12); /* unchanged meaning: same stack */
    }
    assert_int_equal(n, refs ? 8 : 7);
    wt_trace_free(&t);
    unlink(path);
}

static void test_redefinitions(void **state)
{
    (void)state;
    check_redefinitions(0);
}

static void test_redefinitions_refs(void **state)
{
    (void)state;
    check_redefinitions(1);
}

/* Stack references across threads and slots: fingerprints that share a
 * slot replace each other there (the frames go again), each thread has its
 * own slots, and a thread that takes over the ring of one that ended
 * refers to stacks that thread sent.  Every allocation's stack has its own
 * frames (ip = 0x1000 * stack number + depth). */
#define REF_STACKS 6
typedef struct {
    vt_writer *w;
    int base, rounds, refs;
} ref_job;

static void ref_frames(int k, vt_frame *fr, uint32_t *n)
{
    *n = (uint32_t)(3 + k % 3);
    for (uint32_t d = 0; d < *n; d++)
        fr[d] = (vt_frame){(uint64_t)0x1000 * (uint64_t)(k + 1) + d, 0, VT_FRAME_NATIVE};
}

static void *ref_thread(void *arg)
{
    ref_job *j = arg;
    for (int r = 0; r < j->rounds; r++)
        for (int k = 0; k < REF_STACKS; k++) {
            vt_frame fr[8];
            uint32_t n;
            ref_frames(k, fr, &n);
            /* stacks 0/1 and 2/3 share a slot (same top bits of fp[1]) */
            uint64_t fp1 = ((uint64_t)(k / 2 + 1) << 52) | (uint64_t)k << 1 | 1;
            j->refs += emit_alloc_fp(j->w, (uint64_t)(j->base + r * REF_STACKS + k), fr, n, 0x77 + (uint64_t)k,
                                     k < 4 ? fp1 : (uint64_t)(k + 9) << 52 | 1);
        }
    return NULL;
}

static void test_stack_refs_threads(void **state)
{
    (void)state;
    char path[512];
    wt_tmp_path(path, sizeof(path), "refs-threads.vt");
    vt_writer *w = open_writer(path, NULL);
    enum { ROUNDS = 50, PAR = 3 };
    ref_job jobs[PAR + 1];
    pthread_t th[PAR];
    for (int i = 0; i < PAR; i++) {
        jobs[i] = (ref_job){w, 1 + i * 100000, ROUNDS, 0};
        assert_int_equal(pthread_create(&th[i], NULL, ref_thread, &jobs[i]), 0);
    }
    for (int i = 0; i < PAR; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    /* after the others ended: this thread may take over one of their rings */
    jobs[PAR] = (ref_job){w, 1 + PAR * 100000, ROUNDS, 0};
    pthread_create(&th[0], NULL, ref_thread, &jobs[PAR]);
    pthread_join(th[0], NULL);
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    vt_writer_free(w);
    for (int i = 0; i <= PAR; i++) {
        /* stacks 4 and 5 go in full once per ring; 0-3 every time (shared slots) */
        assert_true(jobs[i].refs >= 2 * (ROUNDS - 1));
        assert_true(jobs[i].refs <= 2 * ROUNDS);
    }
    assert_int_equal(jobs[PAR].refs, 2 * ROUNDS); /* the ring it took had them */

    wt_trace t;
    assert_int_equal(wt_decode_file(path, &t, 0), 0);
    assert_int_equal(t.errors, 0);
    size_t n = 0;
    for (size_t i = 0; i < t.nev; i++) {
        const wt_ev *x = &t.ev[i];
        if (x->type != VRAMTRACE__RECORD__BODY_ALLOC)
            continue;
        int k = (int)((x->a - 1) % 100000 % REF_STACKS);
        vt_frame want[8];
        uint32_t wn;
        ref_frames(k, want, &wn);
        uint32_t f[8];
        size_t depth = wt_stack_frames(&t, x->stack, f, 8);
        assert_int_equal(depth, wn);
        for (uint32_t d = 0; d < wn; d++)
            assert_int_equal(t.frame[f[d]]->ip, want[d].pc);
        n++;
    }
    assert_int_equal(n, (PAR + 1) * ROUNDS * REF_STACKS);
    wt_trace_free(&t);
    unlink(path);
}

/* Allocations and frees go through the ring in a short entry when their
 * stack needs no frames there (a reference, or none) and device, kind and
 * API fit a byte; otherwise in the generic one.  Both kinds, at the
 * boundaries and with extreme values, come back with every field. */
static void test_short_entries(void **state)
{
    (void)state;
    char path[512];
    wt_tmp_path(path, sizeof(path), "short.vt");
    vt_writer *w = open_writer(path, NULL);
    vt_frame fr[2] = {{0x400100, 0, VT_FRAME_NATIVE}, {0x400200, 0, VT_FRAME_NATIVE}};
    const uint64_t FP0 = 0x1234, FP1 = 0x7777000000000001ull, BIG = ~0ull;
    enum { N = 10 };
    static const struct {
        int alloc;
        uint32_t device, kind, api, tid; /* tid: the site's (0: the calling thread) */
        int stack;                       /* 0 none, 1 frames with the fingerprint, 2 the fingerprint sent before */
    } c[N] = {
        {1, 0, VT_MEM_DEVICE, VT_API_MALLOC_ASYNC, 0, 1},   /* defines the slot: generic */
        {1, 255, VT_MEM_DEVICE, VT_API_MALLOC_ASYNC, 0, 2}, /* short, a reference */
        {1, 256, VT_MEM_DEVICE, VT_API_MALLOC_ASYNC, 0, 2}, /* device over a byte: generic */
        {1, 7, VT_MEM_MANAGED, VT_API_VMM, 0, 0},           /* short, no stack */
        {1, 7, VT_MEM_DEVICE, VT_API_MALLOC, 4242, 2},      /* another thread's site: generic */
        {0, 0, VT_MEM_DEVICE, VT_API_MALLOC_ASYNC, 0, 0},   /* short */
        {0, 255, VT_MEM_PINNED_HOST, VT_API_HOST_ALLOC, 0, 0},
        {0, 1000, VT_MEM_DEVICE, VT_API_MALLOC, 0, 0},      /* generic */
        {0, 3, VT_MEM_DEVICE, VT_API_MALLOC, 4242, 0},      /* generic */
        {0, 3, VT_MEM_DEVICE, VT_API_MALLOC, 0, 2},         /* short, a free with a stack reference */
    };
    for (int i = 0; i < N; i++) {
        vt_event e;
        memset(&e, 0, sizeof(e));
        e.type = c[i].alloc ? VT_EV_ALLOC : VT_EV_FREE;
        e.time_ns = 5000 + (uint64_t)i * 10;
        vt_site site = {.tid = c[i].tid};
        if (c[i].stack) {
            site.fp[0] = FP0;
            site.fp[1] = FP1;
            assert_int_equal(vt_writer_site_sent(w, site.fp), c[i].stack == 2);
        }
        if (c[i].stack == 1) {
            site.frames = fr;
            site.nframes = 2;
        }
        if (c[i].alloc)
            e.u.alloc = (vt_ev_alloc){.address = BIG - (uint64_t)i, .size = BIG - 7 - (uint64_t)i, .device = c[i].device,
                                      .kind = (vt_memkind)c[i].kind, .api = (vt_allocapi)c[i].api,
                                      .stream = BIG - 100 - (uint64_t)i, .pool = BIG - 200 - (uint64_t)i,
                                      .corr = (uint64_t)1 << (40 + i), .site = site};
        else
            e.u.free = (vt_ev_free){.address = BIG - (uint64_t)i, .device = c[i].device, .kind = (vt_memkind)c[i].kind,
                                    .api = (vt_allocapi)c[i].api, .stream = BIG - 100 - (uint64_t)i,
                                    .corr = (uint64_t)1 << (40 + i), .site = site};
        assert_int_equal(vt_writer_emit(w, &e), 0);
    }
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    vt_writer_free(w);

    wt_trace t;
    assert_int_equal(wt_decode_file(path, &t, 1), 0);
    assert_int_equal(t.errors, 0);
    int j = 0;
    const uint32_t self = (uint32_t)syscall(SYS_gettid);
    for (size_t k = 0; k < t.nev; k++) {
        const wt_ev *x = &t.ev[k];
        if (x->type != VRAMTRACE__RECORD__BODY_ALLOC && x->type != VRAMTRACE__RECORD__BODY_FREE)
            continue;
        assert_true(j < N);
        assert_int_equal(x->type, c[j].alloc ? VRAMTRACE__RECORD__BODY_ALLOC : VRAMTRACE__RECORD__BODY_FREE);
        assert_int_equal(x->time, 5000 + (uint64_t)j * 10);
        assert_int_equal(x->corr, (uint64_t)1 << (40 + j));
        assert_int_equal(x->a, BIG - (uint64_t)j);
        uint32_t device, kind, api;
        uint64_t stream;
        if (c[j].alloc) {
            const Vramtrace__Alloc *a = x->rec->alloc;
            assert_int_equal(a->size, BIG - 7 - (uint64_t)j);
            assert_int_equal(a->pool, BIG - 200 - (uint64_t)j);
            device = a->device, kind = (uint32_t)a->kind, api = (uint32_t)a->api, stream = a->stream;
        } else {
            const Vramtrace__Free *f = x->rec->free;
            device = f->device, kind = (uint32_t)f->kind, api = (uint32_t)f->api, stream = f->stream;
        }
        assert_int_equal(device, c[j].device);
        assert_int_equal(kind, c[j].kind);
        assert_int_equal(api, c[j].api);
        assert_int_equal(stream, BIG - 100 - (uint64_t)j);
        assert_true(x->thread > 0 && x->thread <= t.nthread);
        assert_int_equal(t.thread[x->thread]->tid, c[j].tid ? c[j].tid : self);
        if (c[j].stack) {
            uint32_t f[4];
            assert_int_equal(wt_stack_frames(&t, x->stack, f, 4), 2);
            assert_int_equal(t.frame[f[0]]->ip, 0x400100);
            assert_int_equal(t.frame[f[1]]->ip, 0x400200);
        } else {
            assert_int_equal(x->stack, 0);
        }
        j++;
    }
    assert_int_equal(j, N);
    wt_trace_free(&t);
    unlink(path);
}

static uint64_t prng(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Property test: 30000 random events of random kinds with random field
 * values (extreme times and correlation ids included, random stacks of
 * native and Python frames, random strings, small frames): each comes back
 * in order with its kind, time, correlation id and main value. */
static void test_random_events(void **state)
{
    (void)state;
    char path[512];
    wt_tmp_path(path, sizeof(path), "random.vt");
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.frame_bytes = 65536;
    cfg.ring_bytes = 64u << 20;
    vt_writer *w = open_writer(path, &cfg);
    enum { N = 30000 };
    static const vt_evtype kinds[] = {VT_EV_ALLOC, VT_EV_FREE, VT_EV_ALLOC_FAILED, VT_EV_VMM_RESERVE,
                                      VT_EV_VMM_ADDRESS_FREE, VT_EV_VMM_CREATE, VT_EV_VMM_RELEASE, VT_EV_VMM_MAP,
                                      VT_EV_VMM_UNMAP, VT_EV_POOL, VT_EV_NVTX, VT_EV_NOTE};
    static const int body[] = {VRAMTRACE__RECORD__BODY_ALLOC, VRAMTRACE__RECORD__BODY_FREE,
                               VRAMTRACE__RECORD__BODY_ALLOC_FAILED, VRAMTRACE__RECORD__BODY_VMM_RESERVE,
                               VRAMTRACE__RECORD__BODY_VMM_ADDRESS_FREE, VRAMTRACE__RECORD__BODY_VMM_CREATE,
                               VRAMTRACE__RECORD__BODY_VMM_RELEASE, VRAMTRACE__RECORD__BODY_VMM_MAP,
                               VRAMTRACE__RECORD__BODY_VMM_UNMAP, VRAMTRACE__RECORD__BODY_POOL,
                               VRAMTRACE__RECORD__BODY_NVTX, VRAMTRACE__RECORD__BODY_NOTE};
    int *kind = malloc(N * sizeof(int));
    uint64_t *tm = malloc(N * sizeof(uint64_t)), *corr = malloc(N * sizeof(uint64_t)), *val = malloc(N * sizeof(uint64_t));
    uint64_t x = 0x1234567887654321ull;
    char str[64];
    vt_frame fr[40];
    for (int i = 0; i < 50; i++)
        assert_int_equal(vt_writer_define_code(w, 0x9000 + (uint64_t)i, i % 2 ? "a.py" : "b.py", "fn"), 0);
    for (int i = 0; i < N; i++) {
        int k = (int)(prng(&x) % (sizeof(kinds) / sizeof(kinds[0])));
        kind[i] = k;
        /* times: increasing, with occasional big jumps and a few going back */
        uint64_t r = prng(&x);
        tm[i] = (i ? tm[i - 1] : 1) + (r % 7 == 0 ? (r >> 20) : r % 5000);
        if (r % 97 == 0 && tm[i] > 100000)
            tm[i] -= 100000;
        corr[i] = prng(&x) % 5 == 0 ? 0 : (prng(&x) % 3 == 0 ? prng(&x) : (uint64_t)i * 3);
        val[i] = prng(&x);
        uint32_t nf = (uint32_t)(prng(&x) % 40);
        for (uint32_t f = 0; f < nf; f++) {
            uint64_t q = prng(&x);
            if (q % 4 == 0)
                fr[f] = (vt_frame){.pc = 0x9000 + q % 60, .line = (uint32_t)(q >> 40) % 3000, .kind = VT_FRAME_PYTHON};
            else
                fr[f] = (vt_frame){.pc = 0x400000 + (q % 64) * 16 + (q % 11 == 0 ? (1ull << 63) : 0),
                                   .kind = VT_FRAME_NATIVE};
        }
        vt_site site = {.frames = fr, .nframes = nf};
        snprintf(str, sizeof(str), "s%llu", (unsigned long long)(prng(&x) % 300));
        vt_event e;
        memset(&e, 0, sizeof(e));
        e.type = kinds[k];
        e.time_ns = tm[i];
        switch (kinds[k]) {
        case VT_EV_ALLOC: e.u.alloc = (vt_ev_alloc){.address = val[i], .size = ~val[i], .corr = corr[i], .site = site}; break;
        case VT_EV_FREE: e.u.free = (vt_ev_free){.address = val[i], .corr = corr[i], .site = site}; break;
        case VT_EV_ALLOC_FAILED:
            e.u.alloc_failed = (vt_ev_alloc_failed){.size = val[i], .error_name = str, .corr = corr[i], .site = site};
            break;
        case VT_EV_VMM_RESERVE: case VT_EV_VMM_ADDRESS_FREE: case VT_EV_VMM_UNMAP:
            e.u.vmm_range = (vt_ev_vmm_range){.address = val[i], .size = 1, .corr = corr[i], .site = site};
            break;
        case VT_EV_VMM_CREATE: e.u.vmm_create = (vt_ev_vmm_create){.handle = val[i], .corr = corr[i], .site = site}; break;
        case VT_EV_VMM_RELEASE: e.u.vmm_release = (vt_ev_vmm_release){.handle = val[i], .corr = corr[i]}; break;
        case VT_EV_VMM_MAP: e.u.vmm_map = (vt_ev_vmm_map){.address = val[i], .corr = corr[i]}; break;
        case VT_EV_POOL: e.u.pool = (vt_ev_pool){.pool = val[i], .corr = corr[i], .site = site}; break;
        case VT_EV_NVTX: e.u.nvtx = (vt_ev_nvtx){.op = VT_NVTX_MARK, .message = str, .range_id = val[i]}; break;
        case VT_EV_NOTE: e.u.note = (vt_ev_note){.text = str}; break;
        default: break;
        }
        assert_int_equal(vt_writer_emit(w, &e), 0);
    }
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    vt_writer_free(w);
    wt_trace t;
    assert_int_equal(wt_decode_file(path, &t, 1), 0);
    assert_int_equal(t.errors, 0);
    assert_true(t.nzframes > 5);
    size_t j = 0;
    for (size_t i = 0; i < t.nev; i++) {
        const wt_ev *ev = &t.ev[i];
        const Vramtrace__Record *r = ev->rec;
        if (ev->type == VRAMTRACE__RECORD__BODY_END)
            continue;
        assert_true(j < N);
        assert_int_equal(ev->type, body[kind[j]]);
        assert_int_equal(ev->time, tm[j]);
        int has_corr = ev->type != VRAMTRACE__RECORD__BODY_NVTX && ev->type != VRAMTRACE__RECORD__BODY_NOTE;
        if (has_corr)
            assert_int_equal(ev->corr, corr[j]);
        uint64_t v = 0;
        switch (ev->type) {
        case VRAMTRACE__RECORD__BODY_ALLOC: v = r->alloc->address; assert_int_equal(r->alloc->size, ~val[j]); break;
        case VRAMTRACE__RECORD__BODY_FREE: v = r->free->address; break;
        case VRAMTRACE__RECORD__BODY_ALLOC_FAILED: v = r->alloc_failed->size; break;
        case VRAMTRACE__RECORD__BODY_VMM_RESERVE: v = r->vmm_reserve->address; break;
        case VRAMTRACE__RECORD__BODY_VMM_ADDRESS_FREE: v = r->vmm_address_free->address; break;
        case VRAMTRACE__RECORD__BODY_VMM_UNMAP: v = r->vmm_unmap->address; break;
        case VRAMTRACE__RECORD__BODY_VMM_CREATE: v = r->vmm_create->handle; break;
        case VRAMTRACE__RECORD__BODY_VMM_RELEASE: v = r->vmm_release->handle; break;
        case VRAMTRACE__RECORD__BODY_VMM_MAP: v = r->vmm_map->address; break;
        case VRAMTRACE__RECORD__BODY_POOL: v = r->pool->pool; break;
        case VRAMTRACE__RECORD__BODY_NVTX: v = r->nvtx->range_id; break;
        default: v = val[j]; break;
        }
        assert_int_equal(v, val[j]);
        j++;
    }
    assert_int_equal(j, N);
    assert_int_equal(t.end->events, N);
    free(kind);
    free(tm);
    free(corr);
    free(val);
    wt_trace_free(&t);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_all_kinds),
        cmocka_unit_test(test_interning_stacks),
        cmocka_unit_test(test_frames_and_sync),
        cmocka_unit_test(test_periodic_flush),
        cmocka_unit_test(test_lifecycle),
        cmocka_unit_test(test_random_events),
        cmocka_unit_test(test_redefinitions),
        cmocka_unit_test(test_redefinitions_refs),
        cmocka_unit_test(test_stack_refs_threads),
        cmocka_unit_test(test_short_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
