/* gen_fixture.c - writes the small deterministic traces used by the CLI
 * golden tests (tests/cli) and seeded into the fuzz corpus:
 *   gen_fixture sample OUT   hand-built stream with every record kind, two
 *                            zstd frames (tests/core/vt_testenc.c)
 *   gen_fixture writer OUT   the same kind of content through the real
 *                            writer (src/core/vt_writer.c)
 *   gen_fixture corpus DIR   small valid and hostile seeds for the fuzz
 *                            corpus (tests/fuzz/corpus/seed-*)
 * Run by scripts/update-golden.sh --fixtures. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "vt_event.h"
#include "vt_testenc.h"
#include "vt_writer.h"

static int sample(const char *out)
{
    vt_tenc *e = vt_tenc_new(1);
    vt_tenc_sample(e, 2);
    size_t n;
    const uint8_t *d = vt_tenc_data(e, &n);
    FILE *f = fopen(out, "wb");
    if (!f || fwrite(d, 1, n, f) != n || fclose(f)) {
        perror(out);
        return 1;
    }
    vt_tenc_free(e);
    return 0;
}

static int emit(vt_writer *w, vt_event *e)
{
    int rc = vt_writer_emit(w, e);
    if (rc)
        fprintf(stderr, "gen_fixture: emit %d failed: %d\n", e->type, rc);
    memset(e, 0, sizeof(*e));
    return rc;
}

static int writer(const char *out)
{
    unlink(out);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(out);
        return 1;
    }
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.fd = fd;
    cfg.frame_bytes = 600; /* a few zstd frames even for this small trace */
    const char *argv[] = {"python3", "train.py", "--steps=2"};
    const char *en[] = {"RANK", "LOCAL_RANK", "WORLD_SIZE"}, *ev[] = {"1", "1", "2"};
    vt_ev_header hdr = {.pid = 31337, .ppid = 31300, .hostname = "gpu-node-3", .program = "train.py",
                        .argv = argv, .argc = 3, .env_names = en, .env_values = ev, .nenv = 3,
                        .clock = VT_CLOCK_CUPTI, .trace_clock_ns = 5000000000ull,
                        .realtime_ns = 1796036400000000000ull, .kernels = 1, .native_stacks = 1,
                        .python_stacks = 1};
    vt_writer *w;
    if (vt_writer_create(&w, &cfg, &hdr))
        return 1;
    /* tids above the largest possible pid_max: no /proc entry, no name */
    const uint32_t tid_main = 4194400, tid_bw = 4194401;
    vt_event e;
    memset(&e, 0, sizeof(e));
    static const uint8_t bid[8] = {0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0};
    e.type = VT_EV_MODULE;
    e.u.module = (vt_ev_module){.path = "/usr/lib/x86_64-linux-gnu/libcudart.so.12", .load_bias = 0x7f3a00000000ull,
                                .start = 0x7f3a00000000ull, .end = 0x7f3a00100000ull, .build_id = bid,
                                .build_id_len = 8};
    emit(w, &e);
    e.type = VT_EV_DEVICE;
    e.u.device = (vt_ev_device){.index = 0, .name = "NVIDIA H200", .total_memory = 150754820096ull,
                                .cc_major = 9, .cc_minor = 0, .pci_bus_id = "00000000:19:00.0"};
    for (int i = 0; i < 16; i++)
        e.u.device.uuid[i] = (uint8_t)(0x10 * i + i);
    emit(w, &e);
    vt_writer_define_code(w, 0x1001, "train.py", "main");
    vt_writer_define_code(w, 0x1002, "model.py", "Net.forward");
    vt_frame stack_a[] = {{0x7f3a00012340ull, 0, VT_FRAME_NATIVE}, {0x1002, 31, VT_FRAME_PYTHON},
                          {0x1001, 12, VT_FRAME_PYTHON}};
    vt_frame stack_b[] = {{0x7f3a00012350ull, 0, VT_FRAME_NATIVE}, {0x1001, 14, VT_FRAME_PYTHON}};
    uint64_t t = 5000100000ull;
    for (int step = 0; step < 2; step++) {
        e.type = VT_EV_NVTX;
        e.time_ns = t += 1000;
        e.u.nvtx = (vt_ev_nvtx){.op = VT_NVTX_PUSH, .message = "step", .site = {.tid = tid_main}};
        emit(w, &e);
        for (int i = 0; i < 3; i++) {
            e.type = VT_EV_ALLOC;
            e.time_ns = t += 2500;
            e.u.alloc = (vt_ev_alloc){.address = 0x7f2000000000ull + (uint64_t)(step * 3 + i) * 0x200000,
                                      .size = (uint64_t)(i + 1) << 20, .device = 0, .kind = VT_MEM_DEVICE,
                                      .api = VT_API_MALLOC, .corr = 100 + (uint64_t)(step * 10 + i),
                                      .site = {.frames = i == 2 ? stack_b : stack_a, .nframes = i == 2 ? 2 : 3,
                                               .tid = tid_main}};
            emit(w, &e);
            e.type = VT_EV_KERNEL;
            e.time_ns = t + 500;
            e.u.kernel = (vt_ev_kernel){.name = i ? "_Z6matmulPKfS0_Pfi" : "_Z4reluPfi", .device = 0, .stream = 7,
                                        .grid = {64, 1, 1}, .block = {256, 1, 1}, .duration_ns = 12000,
                                        .corr = 101 + (uint64_t)(step * 10 + i)};
            emit(w, &e);
        }
        e.type = VT_EV_FREE;
        e.time_ns = t += 3000;
        e.u.free = (vt_ev_free){.address = 0x7f2000000000ull + (uint64_t)(step * 3) * 0x200000, .device = 0,
                                .kind = VT_MEM_DEVICE, .api = VT_API_MALLOC, .corr = 150,
                                .site = {.tid = tid_bw}};
        emit(w, &e);
        e.type = VT_EV_MEMORY_USAGE;
        e.time_ns = t += 100;
        e.u.memory_usage = (vt_ev_memory_usage){.device = 0, .free = 140ull << 30, .total = 150754820096ull};
        emit(w, &e);
        e.type = VT_EV_NVTX;
        e.time_ns = t += 1000;
        e.u.nvtx = (vt_ev_nvtx){.op = VT_NVTX_POP, .site = {.tid = tid_main}};
        emit(w, &e);
    }
    e.type = VT_EV_ALLOC_FAILED;
    e.time_ns = t += 5000;
    e.u.alloc_failed = (vt_ev_alloc_failed){.size = 200ull << 30, .device = 0, .kind = VT_MEM_DEVICE,
                                            .api = VT_API_MALLOC, .error = 2,
                                            .error_name = "CUDA_ERROR_OUT_OF_MEMORY", .corr = 999,
                                            .site = {.frames = stack_a, .nframes = 3, .tid = tid_main}};
    emit(w, &e);
    int rc = vt_writer_close(w, VT_END_NORMAL, 0);
    vt_writer_free(w);
    return rc ? 1 : 0;
}

static int put(const char *dir, const char *name, vt_tenc *e)
{
    char path[4096];
    size_t n;
    const uint8_t *d = vt_tenc_data(e, &n);
    snprintf(path, sizeof(path), "%s/seed-%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(d, 1, n, f) != n || fclose(f)) {
        perror(path);
        return 1;
    }
    vt_tenc_free(e);
    return 0;
}

static vt_tenc *random_trace(uint64_t seed, int nrec, int frames)
{
    uint64_t rng = seed;
    vt_tenc *e = vt_tenc_new((int)(seed & 1));
    Vramtrace__Record rec;
    vt_tenc_random_record(&rng, VRAMTRACE__RECORD__BODY_HEADER, 6, &rec);
    vt_tenc_rec(e, &rec);
    vt_tenc_sync(e, 0, 100, 50);
    for (int f = 0; f < frames; f++) {
        if (f) {
            vt_tenc_end_frame(e);
            vt_tenc_sync(e, (uint64_t)f, 1000 * (uint64_t)f, 900 * (uint64_t)f);
        }
        for (int i = 0; i < nrec; i++) {
            int c = 4 + (int)(vt_tenc_rand(&rng) % 23);
            vt_tenc_random_record(&rng, (Vramtrace__Record__BodyCase)c, 6, &rec);
            vt_tenc_rec(e, &rec);
            if (i % 7 == 6)
                vt_tenc_flush(e);
        }
    }
    vt_tenc_end(e, 0);
    vt_tenc_end_frame(e);
    vt_tenc_random_reset();
    return e;
}

static int corpus(const char *dir)
{
    int rc = 0;
    rc |= put(dir, "random1", random_trace(1, 30, 1));
    rc |= put(dir, "random2", random_trace(2, 12, 3));
    rc |= put(dir, "random3", random_trace(3, 60, 2));
    vt_tenc *e = vt_tenc_new(1);
    vt_tenc_sample(e, 1);
    rc |= put(dir, "sample1", e);
    e = vt_tenc_new(0);
    vt_tenc_header(e, VT_FORMAT_MAGIC, 99);
    vt_tenc_end_frame(e);
    rc |= put(dir, "version99", e);
    e = vt_tenc_new(0);
    vt_tenc_header(e, VT_FORMAT_MAGIC, VT_FORMAT_VERSION);
    vt_tenc_sync(e, 0, 1, 1);
    static const uint8_t huge[] = {0x0A, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 0, 0, 0};
    vt_tenc_stream_bytes(e, huge, sizeof(huge));
    vt_tenc_end_frame(e);
    vt_tenc_sync(e, 1, 2, 2);
    vt_tenc_end(e, 0);
    vt_tenc_end_frame(e);
    rc |= put(dir, "hugelen", e);
    e = vt_tenc_new(0);
    vt_tenc_header(e, VT_FORMAT_MAGIC, VT_FORMAT_VERSION);
    vt_tenc_sync(e, 0, 1, 1);
    /* Alloc with unknown fields of every wire type and nested groups; a future record kind */
    static const uint8_t unk[] = {0x0A, 0x21, 0x08, 0x04, 0x3A, 0x1d, 0x08, 0x7b, 0xa0, 0x06, 0x05, 0xa9, 0x06,
                                  1, 2, 3, 4, 5, 6, 7, 8, 0xb2, 0x06, 0x01, 0x61, 0xa3, 0x06, 0xab, 0x06,
                                  0x08, 0x01, 0xac, 0x06, 0xa4, 0x06,
                                  0x0A, 0x05, 0x08, 0x02, 0xc2, 0x02, 0x00};
    vt_tenc_stream_bytes(e, unk, sizeof(unk));
    vt_tenc_end(e, 1);
    vt_tenc_end_frame(e);
    rc |= put(dir, "unknown", e);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "corpus"))
        return corpus(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "sample"))
        return sample(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "writer"))
        return writer(argv[2]);
    fprintf(stderr, "usage: gen_fixture sample|writer OUT.zst | corpus DIR\n");
    return 2;
}
