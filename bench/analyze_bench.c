/* analyze_bench.c - throughput of `vramtrace report`'s replay.
 *
 *   analyze_bench [--events N] [--trace PATH] [--regen] [--replay-only N]
 *
 * Writes (once; reused if PATH exists) a synthetic training-loop trace of N
 * events (default 100 M) with the core writer: per 1 ms step 200 tensor
 * allocations and frees from 50 Python call sites over a recycled address
 * set, 100 kernels, one small leak.  Then replays it with the analyzer
 * (vt_analysis_add_file + finish + a JSON report to /dev/null) on one
 * thread and prints events/s (wall and per CPU second) and the peak RSS;
 * also the reader alone (in batches of 64, as the report reads), and (--replay-only N) the replay alone on the
 * first N events decoded in memory beforehand.
 * Touches: PATH (default /tmp/vt_analyze_bench.zst), stdout. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "vt_analyze.h"
#include "vt_gen.h"
#include "vt_reader.h"

static double now_s(int which)
{
    struct timespec ts;
    clock_gettime(which, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void generate(const char *path, uint64_t nevents)
{
    gen_proc gp = {.program = "bench.py", .pid = 1, .kernels = 1, .native = 1, .python = 1};
    gen_open(path, &gp);
    gen_device(0, "NVIDIA H200", 140 * GiB);
    gen_module("/opt/vt-test/cuda/lib64/libcudart.so.13", 0x7f0000000000ull, 0x7f0000100000ull, 0x7f0000000000ull);
    gen_code(1, "/home/user/bench.py", "main");
    for (int i = 0; i < 50; i++) {
        char fn[32];
        snprintf(fn, sizeof(fn), "layer_%d", i);
        gen_code(100 + (uint64_t)i, "/home/user/model.py", fn);
    }
    gen_stack st[50];
    for (int i = 0; i < 50; i++) {
        st[i].n = 0;
        gs_native(&st[i], 0x7f0000001234ull);
        gs_py(&st[i], 100 + (uint64_t)i, 10 + (uint32_t)i);
        gs_py(&st[i], 1, 99);
    }
    static const char *kn[8] = {"gemm_a", "gemm_b", "relu", "softmax", "layernorm", "adam", "dropout", "reduce"};
    uint64_t n = 0, step = 0, live[200];
    double t0 = now_s(CLOCK_MONOTONIC);
    while (n < nevents) {
        uint64_t t = 10 * MS + step * MS;
        for (int i = 0; i < 200 && n < nevents; i++, n++) {
            live[i] = 0x100000000ull + (uint64_t)((i * 7 + step) % 1000) * 0x200000ull;
            gen_alloc(T(t + (uint64_t)i * 2000), live[i], 4096ull << (i % 8), 0, VT_MEM_DEVICE, VT_API_MALLOC_ASYNC,
                      &st[i % 50]);
        }
        for (int i = 0; i < 100 && n < nevents; i++, n++)
            gen_kernel(T(t + (uint64_t)i * 5000), kn[i % 8], 0, 3000);
        for (int i = 0; i < 200 && n < nevents; i++, n++)
            gen_free(T(t + 500000 + (uint64_t)i * 2000), live[i], 0);
        if (n < nevents) { /* one small leak per step */
            gen_alloc(T(t + 999000), 0x9000000000ull + step * 4096, 512, 0, VT_MEM_DEVICE, VT_API_MALLOC_ASYNC, &st[7]);
            n++;
        }
        step++;
        if ((step & 1023) == 0) {
            fprintf(stderr, "\rgenerating: %llu M events", (unsigned long long)(n / 1000000));
        }
    }
    gen_close(VT_END_NORMAL, 0);
    fprintf(stderr, "\rgenerated %llu events in %.1f s\n", (unsigned long long)n, now_s(CLOCK_MONOTONIC) - t0);
}

int main(int argc, char **argv)
{
    uint64_t nevents = 100000000ull;
    const char *path = "/tmp/vt_analyze_bench.zst";
    int keep = 1;
    uint64_t replay_only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--events") && i + 1 < argc)
            nevents = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--trace") && i + 1 < argc)
            path = argv[++i];
        else if (!strcmp(argv[i], "--replay-only") && i + 1 < argc)
            replay_only = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--regen"))
            keep = 0;
        else {
            fprintf(stderr, "usage: analyze_bench [--events N] [--trace PATH] [--regen] [--replay-only N]\n");
            return 2;
        }
    }
    struct stat sb;
    if (replay_only) {
        /* the replay alone: decode the first N records into memory (feeding
         * the definitions as they come), then time feeding the events */
        vt_analysis_config c;
        vt_analysis_config_default(&c);
        c.symbolize = 0;
        vt_analysis *an;
        vt_reader *r;
        char msg[256];
        if (vt_analysis_create(&an, &c) || vt_analysis_begin_process(an, path) ||
            vt_reader_open(&r, path, msg, sizeof(msg)))
            return 1;
        vt_event *evs = malloc(replay_only * sizeof(vt_event));
        if (!evs)
            return 1;
        uint64_t n = 0;
        vt_event ev;
        while (n < replay_only && vt_reader_next(r, &ev) == 1) {
            switch (ev.type) {
            case VT_EV_ALLOC: case VT_EV_FREE: case VT_EV_KERNEL: case VT_EV_VMM_CREATE: case VT_EV_VMM_RELEASE:
            case VT_EV_MEMORY_USAGE: case VT_EV_POOL_USAGE:
                evs[n++] = ev;
                break;
            default:
                vt_analysis_feed(an, &ev); /* definitions, header, sync, nvtx... */
            }
        }
        double c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
        for (uint64_t i = 0; i < n; i++)
            vt_analysis_feed(an, &evs[i]);
        double c1 = now_s(CLOCK_PROCESS_CPUTIME_ID);
        printf("replay alone: %llu events in %.3f s CPU -> %.1f M events/s (%.1f ns/event)\n", (unsigned long long)n,
               c1 - c0, n / (c1 - c0) / 1e6, (c1 - c0) * 1e9 / n);
        free(evs);
        vt_reader_free(r);
        vt_analysis_free(an);
        return 0;
    }
    if (!keep || stat(path, &sb) != 0)
        generate(path, nevents);
    stat(path, &sb);

    /* the reader alone (decompression + decoding), for the split */
    {
        vt_reader *r;
        char msg[256];
        if (vt_reader_open(&r, path, msg, sizeof(msg))) {
            fprintf(stderr, "%s\n", msg);
            return 1;
        }
        vt_event ev[64];
        uint64_t k = 0;
        int got;
        double rw0 = now_s(CLOCK_MONOTONIC), rc0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
        while ((got = vt_reader_next_batch(r, ev, 64)) > 0) /* as the report reads */
            k += (uint64_t)got;
        double rw1 = now_s(CLOCK_MONOTONIC), rc1 = now_s(CLOCK_PROCESS_CPUTIME_ID);
        printf("reader alone: %llu records, %.2f s wall, %.2f s CPU -> %.1f M records/s per CPU second\n",
               (unsigned long long)k, rw1 - rw0, rc1 - rc0, k / (rc1 - rc0) / 1e6);
        vt_reader_free(r);
    }
    vt_analysis_config cfg;
    vt_analysis_config_default(&cfg);
    cfg.symbolize = 0;
    vt_analysis *a;
    if (vt_analysis_create(&a, &cfg))
        return 1;
    double w0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
    int rc = vt_analysis_add_file(a, path);
    double w1 = now_s(CLOCK_MONOTONIC), c1 = now_s(CLOCK_PROCESS_CPUTIME_ID);
    vt_analysis_finish(a);
    FILE *devnull = fopen("/dev/null", "w");
    vt_report_json(a, devnull);
    fclose(devnull);
    double w2 = now_s(CLOCK_MONOTONIC);
    if (rc) {
        fprintf(stderr, "read error: %s\n", vt_analysis_error(a, 0));
        return 1;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    uint64_t recs = vt_analysis_records(a);
    printf("trace: %s, %.1f MiB compressed, %llu records\n", path, (double)sb.st_size / (1 << 20), (unsigned long long)recs);
    printf("replay: %.2f s wall, %.2f s CPU -> %.1f M records/s wall, %.1f M records/s per CPU second\n", w1 - w0,
           c1 - c0, recs / (w1 - w0) / 1e6, recs / (c1 - c0) / 1e6);
    printf("finish + JSON report: %.3f s\n", w2 - w1);
    printf("peak RSS: %.1f MiB\n", ru.ru_maxrss / 1024.0);
    vt_analysis_free(a);
    return 0;
}
