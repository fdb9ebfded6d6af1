/* bench_reader.c - reader throughput benchmark (not a test).
 *
 *   bench_reader [--events N] [--trace PATH] [--reps R] [--keep]
 *                [--kernels bursts|interleaved]
 *
 * Writes a large trace with the real writer (src/core/vt_writer.c), shaped
 * like a training loop: 70% kernels (a repeating sequence over 300 launch
 * signatures, durations within a few % of each signature's mean), 15%
 * allocations through a caching allocator (24 size classes, LIFO address
 * reuse, 2000 distinct call stacks of 8-24 native and Python frames, 8
 * threads), 14% frees, 1% NVTX ranges and memory samples.  Then reads it back on
 * one core, each pass in a fresh process so its peak RSS is its own:
 *   zstd      decompression only (ZSTD_decompressStream into a 128 KiB
 *             buffer, no parsing)
 *   zstd whole frames  decompression only the way the reader does it: each
 *             frame whole into one buffer (ZSTD_d_stableOutBuffer, no copy
 *             out of zstd's window), 64 KiB of input per call: the floor
 *   decode    vt_reader_next over every record (kernels resolved through
 *             their Launch, as always)
 *   decode, batches of 64  the same through vt_reader_next_batch (as
 *             `vramtrace report` reads)
 *   resolve   decode + what an analyzer does per event: flatten the call
 *             stack (vt_reader_stack), look up every frame, its module or
 *             strings, the thread
 * and prints events/s, MB/s and peak RSS; best of R passes.
 * Kernel records reach the writer in bursts by default, as in a traced
 * process, where CUPTI hands over activity buffers of hundreds to thousands
 * of kernels at once (the real traces in tests/data hold 93-98% of their
 * kernels in runs of 16 or more); --kernels interleaved mixes them one by
 * one with the allocations instead (a harder, unrealistic stream).
 * An existing --trace file is reused (delete it to regenerate).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_d_stableOutBuffer */
#include <zstd.h>

#include "vt_error.h"
#include "vt_reader.h"
#include "vt_writer.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time of the calling thread: the machine is shared, so rates are per
 * CPU-second of the one reading thread ("on one core"); wall time is shown
 * beside it. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

#define NLAUNCH 300
#define NSTACK 2000
#define NTHREAD 8
#define MAXDEPTH 24

typedef struct {
    vt_frame f[MAXDEPTH];
    uint32_t n;
} bstack;

static void emit(vt_writer *w, const vt_event *e, uint64_t *retries)
{
    int rc;
    while ((rc = vt_writer_emit(w, e)) == VT_ERR_DROPPED) {
        (*retries)++;
        usleep(200);
    }
    if (rc) {
        fprintf(stderr, "bench_reader: emit failed: %s\n", vt_strerror(rc));
        exit(1);
    }
}

static int g_bursts = 1;

static int generate(const char *path, uint64_t nevents)
{
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.path = path;
    cfg.ring_bytes = 64u << 20;
    const char *argv[] = {"python3", "train.py"};
    vt_ev_header hdr = {.pid = 1, .ppid = 1, .hostname = "bench", .program = "train.py", .argv = argv,
                        .argc = 2, .clock = VT_CLOCK_CUPTI, .kernels = 1, .native_stacks = 1,
                        .python_stacks = 1};
    vt_writer *w;
    int rc = vt_writer_create(&w, &cfg, &hdr);
    if (rc)
        return rc;
    static const char *const mods[] = {"/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/opt/torch/lib/libtorch_cuda.so",
                                       "/opt/torch/lib/libc10_cuda.so", "/usr/bin/python3.11"};
    vt_event e;
    uint64_t retries = 0;
    for (int i = 0; i < 4; i++) {
        memset(&e, 0, sizeof(e));
        e.type = VT_EV_MODULE;
        e.u.module = (vt_ev_module){.path = mods[i], .load_bias = 0x7f0000000000ull + (uint64_t)i * 0x10000000,
                                    .start = 0x7f0000000000ull + (uint64_t)i * 0x10000000,
                                    .end = 0x7f0000000000ull + (uint64_t)i * 0x10000000 + 0x8000000};
        emit(w, &e, &retries);
    }
    for (int i = 0; i < 200; i++) {
        char file[64], fn[64];
        snprintf(file, sizeof(file), "model/layer%d.py", i % 40);
        snprintf(fn, sizeof(fn), "Block%d.forward", i);
        vt_writer_define_code(w, 0x100000 + (uint64_t)i, file, fn);
    }
    /* stacks: a shared outer part (Python main loop) and varied inner frames */
    bstack *stacks = calloc(NSTACK, sizeof(*stacks));
    for (int s = 0; s < NSTACK; s++) {
        bstack *b = &stacks[s];
        b->n = 8 + (uint32_t)(rnd() % (MAXDEPTH - 8));
        for (uint32_t i = 0; i < b->n; i++) {
            if (i < 4) /* native: allocator and runtime */
                b->f[i] = (vt_frame){0x7f0000000000ull + (rnd() % 4) * 0x10000000 + (rnd() % 4096) * 16, 0,
                                     VT_FRAME_NATIVE};
            else if (i >= b->n - 3) /* common outer frames */
                b->f[i] = (vt_frame){0x100000 + i, 10 + i, VT_FRAME_PYTHON};
            else
                b->f[i] = (vt_frame){0x100000 + rnd() % 200, 1 + (uint32_t)(rnd() % 500), VT_FRAME_PYTHON};
        }
    }
    /* A training loop: each step launches the same sequence of kernels
     * (durations within a few % of their signature's mean) and makes the
     * same allocations through a caching allocator (per size class LIFO
     * address reuse), freed a little later. */
    static char names[NLAUNCH][128];
    static uint64_t mean[NLAUNCH];
    for (int k = 0; k < NLAUNCH; k++) {
        snprintf(names[k], sizeof(names[k]),
                 "_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_22gpu_kernel_impl_%dEvRNS_18TensorIteratorBaseE", k);
        mean[k] = 2000 + rnd() % 400000;
    }
    enum { SEQ = 1000, NSIZE = 24 };
    static uint32_t seq[SEQ];
    for (int i = 0; i < SEQ; i++)
        seq[i] = (uint32_t)(rnd() % NLAUNCH);
    static uint64_t freel[NSIZE][256];
    static int nfree[NSIZE];
    static struct { uint64_t addr; int cls; } live[4096];
    uint32_t nlive = 0;
    uint64_t next_addr = 0x7f2200000000ull;
    uint64_t host = 1000000000ull, dev = 1000000000ull, corr = 1000;
    static vt_event pend[1024];
    uint32_t npend = 0, burst = 256;
    double t0 = now();
    for (uint64_t i = 0; i < nevents; i++) {
        memset(&e, 0, sizeof(e));
        uint64_t r = rnd() % 100;
        if (r < 70) { /* kernel */
            uint32_t k = seq[i % SEQ];
            uint64_t dur = mean[k] + mean[k] * (rnd() % 64) / 1000 - mean[k] * 32 / 1000;
            dev += 3000 + rnd() % 17000;
            corr += 1 + rnd() % 3;
            e.type = VT_EV_KERNEL;
            e.time_ns = dev;
            dev += dur;
            e.u.kernel = (vt_ev_kernel){.name = names[k], .device = 0, .stream = 7 + (k & 1),
                                        .grid = {64u << (k % 6), 1 + k % 3, 1}, .block = {128u << (k % 3), 1, 1},
                                        .shared_memory = (k % 4) * 4096, .duration_ns = dur, .corr = corr};
        } else if ((r < 85 && nlive < 4096) || nlive == 0) { /* alloc */
            int c = (int)((i / 7) % NSIZE);
            uint64_t size = 512ull << (c % 19), addr;
            if (nfree[c])
                addr = freel[c][--nfree[c]];
            else {
                addr = next_addr;
                next_addr += size;
            }
            live[nlive].addr = addr;
            live[nlive++].cls = c;
            const bstack *b = &stacks[rnd() % 16 == 0 ? 200 + rnd() % (NSTACK - 200) : (i / 3) % 200];
            host += 1000 + rnd() % 29000;
            corr += 1 + rnd() % 3;
            e.type = VT_EV_ALLOC;
            e.time_ns = host;
            e.u.alloc = (vt_ev_alloc){.address = addr, .size = size, .device = 0, .kind = VT_MEM_DEVICE,
                                      .api = VT_API_MALLOC_ASYNC, .stream = 0x55d0c0ffee00ull, .corr = corr,
                                      .site = {.frames = b->f, .nframes = b->n,
                                               .tid = 100 + (rnd() % 8 == 0 ? 1 + (uint32_t)(rnd() % (NTHREAD - 1)) : 0)}};
        } else if (r < 99) { /* free: mostly recent blocks */
            uint32_t j = nlive - 1 - (uint32_t)(rnd() % (nlive < 32 ? nlive : 32));
            host += 1000 + rnd() % 29000;
            corr += 1 + rnd() % 3;
            e.type = VT_EV_FREE;
            e.time_ns = host;
            e.u.free = (vt_ev_free){.address = live[j].addr, .device = 0, .kind = VT_MEM_DEVICE,
                                    .api = VT_API_MALLOC_ASYNC, .stream = 0x55d0c0ffee00ull, .corr = corr,
                                    .site = {.tid = 100}};
            int c = live[j].cls;
            if (nfree[c] < 256)
                freel[c][nfree[c]++] = live[j].addr;
            live[j] = live[--nlive];
        } else if (i % 2) {
            host += 1000;
            e.type = VT_EV_NVTX;
            e.time_ns = host;
            e.u.nvtx = (vt_ev_nvtx){.op = (i / 2) % 2 ? VT_NVTX_POP : VT_NVTX_PUSH, .message = "step",
                                    .site = {.tid = 100}};
        } else {
            host += 1000;
            e.type = VT_EV_MEMORY_USAGE;
            e.time_ns = host;
            e.u.memory_usage = (vt_ev_memory_usage){.device = 0, .free = 80ull << 30, .total = 141ull << 30};
        }
        if (e.type == VT_EV_KERNEL && g_bursts) {
            /* an activity buffer: handed over when full */
            pend[npend++] = e;
            if (npend == burst) {
                for (uint32_t k = 0; k < npend; k++)
                    emit(w, &pend[k], &retries);
                npend = 0;
                burst = 64 + (uint32_t)(rnd() % 960);
            }
            continue;
        }
        emit(w, &e, &retries);
    }
    for (uint32_t k = 0; k < npend; k++)
        emit(w, &pend[k], &retries);
    rc = vt_writer_close(w, VT_END_NORMAL, 0);
    vt_writer_stats st;
    vt_writer_get_stats(w, &st);
    double dt = now() - t0;
    fprintf(stderr,
            "generated %llu events (%llu records, %llu zstd frames) in %.1f s: %.1f MB compressed, %.2f bytes/event, "
            "%.1f MB raw; %llu emit retries (queue full)\n",
            (unsigned long long)st.emitted, (unsigned long long)st.records, (unsigned long long)st.frames, dt,
            (double)st.bytes_written / 1e6, (double)st.bytes_written / (double)st.emitted,
            (double)st.bytes_raw / 1e6, (unsigned long long)retries);
    vt_writer_free(w);
    free(stacks);
    return rc;
}

/* ---- passes (each in a child) ---------------------------------------- */

typedef struct {
    double seconds, wall;
    uint64_t events, bytes_in, bytes_raw, checksum;
    long maxrss_kb;
} result;

static void pass_zstd(const char *path, result *res)
{
    int fd = open(path, O_RDONLY);
    size_t icap = ZSTD_DStreamInSize(), ocap = ZSTD_DStreamOutSize();
    uint8_t *ib = malloc(icap), *ob = malloc(ocap);
    ZSTD_DCtx *d = ZSTD_createDCtx();
    double t0 = cpu_now(), w0 = now();
    ssize_t n;
    while ((n = read(fd, ib, icap)) > 0) {
        ZSTD_inBuffer in = {ib, (size_t)n, 0};
        while (in.pos < in.size) {
            ZSTD_outBuffer out = {ob, ocap, 0};
            size_t rc = ZSTD_decompressStream(d, &out, &in);
            if (ZSTD_isError(rc)) {
                fprintf(stderr, "zstd: %s\n", ZSTD_getErrorName(rc));
                exit(1);
            }
            res->bytes_raw += out.pos;
            res->checksum += out.pos ? ob[0] : 0;
        }
        res->bytes_in += (uint64_t)n;
    }
    res->seconds = cpu_now() - t0;
    res->wall = now() - w0;
    ZSTD_freeDCtx(d);
    close(fd);
}

static void pass_zstd_whole(const char *path, result *res)
{
    enum { IN = 1 << 20, STEP = 64 << 10, OUT = (8 << 20) + (64 << 10) };
    int fd = open(path, O_RDONLY);
    uint8_t *ib = malloc(IN), *ob = malloc(OUT);
    ZSTD_DCtx *d = ZSTD_createDCtx();
    if (ZSTD_isError(ZSTD_DCtx_setParameter(d, ZSTD_d_stableOutBuffer, 1))) {
        fprintf(stderr, "zstd: no ZSTD_d_stableOutBuffer\n");
        exit(1);
    }
    double t0 = cpu_now(), w0 = now();
    ZSTD_outBuffer out = {ob, OUT, 0};
    ssize_t n;
    while ((n = read(fd, ib, IN)) > 0) {
        ZSTD_inBuffer in = {ib, 0, 0};
        while (in.pos < (size_t)n) {
            in.size = in.pos + STEP < (size_t)n ? in.pos + STEP : (size_t)n;
            size_t before = out.pos;
            size_t rc = ZSTD_decompressStream(d, &out, &in);
            if (ZSTD_isError(rc)) {
                fprintf(stderr, "zstd: %s\n", ZSTD_getErrorName(rc));
                exit(1);
            }
            res->bytes_raw += out.pos - before;
            if (rc == 0) { /* frame done: the next one starts at the buffer's start */
                res->checksum += out.pos ? ob[out.pos - 1] : 0;
                out.pos = 0;
            }
        }
        res->bytes_in += (uint64_t)n;
    }
    res->seconds = cpu_now() - t0;
    res->wall = now() - w0;
    ZSTD_freeDCtx(d);
    free(ib);
    free(ob);
    close(fd);
}

static void pass_read(const char *path, int resolve, result *res)
{
    vt_reader *r;
    char msg[512];
    if (vt_reader_open(&r, path, msg, sizeof(msg))) {
        fprintf(stderr, "%s\n", msg);
        exit(1);
    }
    vt_event ev;
    uint32_t frames[256];
    uint64_t sum = 0, n = 0;
    int rc;
    double t0 = cpu_now(), w0 = now();
    if (resolve == 3) {
        vt_event evs[64];
        while ((rc = vt_reader_next_batch(r, evs, 64)) > 0) {
            for (int i = 0; i < rc; i++)
                sum += evs[i].time_ns;
            n += (uint64_t)rc;
        }
    } else if (!resolve) {
        while ((rc = vt_reader_next(r, &ev)) == 1) {
            n++;
            sum += ev.time_ns;
        }
    } else {
        while ((rc = vt_reader_next(r, &ev)) == 1) {
            n++;
            sum += ev.time_ns;
            const vt_site *site = NULL;
            if (ev.type == VT_EV_ALLOC)
                site = &ev.u.alloc.site;
            else if (ev.type == VT_EV_FREE)
                site = &ev.u.free.site;
            else if (ev.type == VT_EV_KERNEL)
                sum += ev.u.kernel.name ? (uint8_t)ev.u.kernel.name[0] : 0;
            if (site) {
                const vt_ev_thread *t = vt_reader_thread(r, site->thread);
                sum += t ? t->tid : 0;
                uint32_t depth = vt_reader_stack(r, site->stack, frames, 256);
                for (uint32_t i = 0; i < depth && i < 256; i++) {
                    const vt_ev_frame *f = vt_reader_frame(r, frames[i]);
                    if (!f)
                        continue;
                    if (f->kind == VT_FRAME_NATIVE) {
                        const vt_ev_module *m = vt_reader_module(r, f->module);
                        sum += f->ip - (m ? m->load_bias : 0);
                    } else {
                        const char *fn = vt_reader_string(r, f->function);
                        sum += f->line + (fn ? (uint8_t)fn[0] : 0);
                    }
                }
            }
        }
    }
    res->seconds = cpu_now() - t0;
    res->wall = now() - w0;
    if (rc) {
        fprintf(stderr, "read: %s\n", vt_reader_errmsg(r));
        exit(1);
    }
    vt_reader_stats st;
    vt_reader_get_stats(r, &st);
    res->events = n;
    res->bytes_in = st.bytes_in;
    res->bytes_raw = st.bytes_raw;
    res->checksum = sum;
    vt_reader_free(r);
}

/* Each pass runs in a fresh process (fork + exec of this program with
 * --pass), so that its peak RSS is its own and not the generator's. */
static int run_pass(const char *self, const char *path, int kind, result *res)
{
    int pfd[2];
    if (pipe(pfd))
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        char k[16], fd[16];
        snprintf(k, sizeof(k), "%d", kind);
        snprintf(fd, sizeof(fd), "%d", pfd[1]);
        execl(self, self, "--pass", k, path, fd, (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    ssize_t n = read(pfd[0], res, sizeof(*res));
    close(pfd[0]);
    int status;
    waitpid(pid, &status, 0);
    return n == (ssize_t)sizeof(*res) && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int pass_main(int kind, const char *path, int fd)
{
    result r = {0};
    if (kind == 0)
        pass_zstd(path, &r);
    else if (kind == 3)
        pass_zstd_whole(path, &r);
    else if (kind == 4)
        pass_read(path, 3, &r);
    else
        pass_read(path, kind == 2, &r);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    r.maxrss_kb = ru.ru_maxrss;
    return write(fd, &r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 1;
}

int main(int argc, char **argv)
{
    uint64_t nevents = 30000000;
    const char *path = "/tmp/vt_bench_reader.zst";
    int reps = 3, keep = 0;
    if (argc == 5 && !strcmp(argv[1], "--pass"))
        return pass_main(atoi(argv[2]), argv[3], atoi(argv[4]));
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--events") && i + 1 < argc)
            nevents = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--trace") && i + 1 < argc)
            path = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--keep"))
            keep = 1;
        else if (!strcmp(argv[i], "--kernels") && i + 1 < argc && !strcmp(argv[i + 1], "bursts"))
            g_bursts = 1, i++;
        else if (!strcmp(argv[i], "--kernels") && i + 1 < argc && !strcmp(argv[i + 1], "interleaved"))
            g_bursts = 0, i++;
        else {
            fprintf(stderr, "usage: bench_reader [--events N] [--trace PATH] [--reps R] [--keep]"
                            " [--kernels bursts|interleaved]\n");
            return 2;
        }
    }
    struct stat sb;
    int generated = 0;
    if (stat(path, &sb) != 0) {
        int rc = generate(path, nevents);
        if (rc) {
            fprintf(stderr, "bench_reader: cannot write %s: %s\n", path, vt_strerror(rc));
            return 1;
        }
        generated = 1;
        stat(path, &sb);
    }
    static const char *const names[] = {"zstd only", "decode", "decode+resolve", "zstd whole frames",
                                        "decode, batches of 64"};
    static const int order[] = {0, 3, 1, 4, 2};
    printf("trace: %s, %.1f MB\n", path, (double)sb.st_size / 1e6);
    printf("| pass | records | CPU s | wall s | M records/s | ns/record | MB/s compressed | MB/s raw | peak RSS |\n");
    printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (int oi = 0; oi < 5; oi++) {
        int kind = order[oi];
        result best = {0};
        for (int rep = 0; rep < reps; rep++) {
            result r = {0};
            if (run_pass("/proc/self/exe", path, kind, &r)) {
                fprintf(stderr, "bench_reader: pass %s failed\n", names[kind]);
                return 1;
            }
            if (!rep || r.seconds < best.seconds)
                best = r;
        }
        char evs[32], ns[32];
        if (kind == 0 || kind == 3) {
            snprintf(evs, sizeof(evs), "-");
            snprintf(ns, sizeof(ns), "-");
        } else {
            snprintf(evs, sizeof(evs), "%.1f", (double)best.events / best.seconds / 1e6);
            snprintf(ns, sizeof(ns), "%.1f", best.seconds * 1e9 / (double)best.events);
        }
        printf("| %s | %llu | %.3f | %.3f | %s | %s | %.0f | %.0f | %.1f MB |\n", names[kind],
               (unsigned long long)best.events, best.seconds, best.wall, evs, ns,
               (double)best.bytes_in / best.seconds / 1e6, (double)best.bytes_raw / best.seconds / 1e6,
               (double)best.maxrss_kb / 1024.0);
        fflush(stdout);
    }
    if (generated && !keep)
        unlink(path);
    return 0;
}
