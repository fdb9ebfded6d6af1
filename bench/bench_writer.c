/* bench_writer.c - benchmark of the trace writer (src/core/vt_writer.c):
 * producer cost per event (1 and 4 threads), writer throughput (events/s
 * encoded + compressed + written) and compressed bytes per event on a
 * simulated training loop (kernel-only, alloc/free-only and mixed).
 * Not a test: prints a report; results go to BENCHMARKS.md (## writer).
 *
 *   bench_writer [--steps N] [--dir DIR] [--level L] [--jitter PCT] [--paced MS] [--producer-only] [--keep]
 *
 * Writes its trace files in DIR (default /tmp) and removes them. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vt_error.h"
#include "vt_writer.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
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
static uint64_t rnd_range(uint64_t lo, uint64_t hi) /* [lo, hi] */
{
    return lo + rnd() % (hi - lo + 1);
}
/* Approximately normal (sum of 4 uniforms), mean 0, sd ~1. */
static double rnd_norm(void)
{
    double s = 0;
    for (int i = 0; i < 4; i++)
        s += (double)(rnd() % 1000000) / 1000000.0;
    return (s - 2.0) * 1.732;
}

static const char *g_dir = "/tmp";
static int g_level = 3;
static int g_keep = 0;
static int g_producer_only = 0; /* --producer-only: skip the size runs */
static int g_paced_ms = 0; /* --paced MS: sleep between steps (flushes every flush_ms/4 in between) */
static double g_jitter = 0.01; /* --jitter: kernel duration sd, fraction of the mean */ /* --keep: leave the size-run trace files */

/* ------------------------------------------------------- the workload */

enum { NSIG = 60, KPS = 400, NSTACK = 30, DEPTH = 20, NSIZES = 24, APS = 500 };

typedef struct {
    char name[200];
    uint32_t grid[3], block[3], smem;
    uint64_t dur; /* mean duration, ns */
} ksig;

static ksig g_sig[NSIG];
static int g_kseq[KPS];                 /* the fixed launch sequence of a step */
static vt_frame g_stack[NSTACK][DEPTH]; /* 30 distinct 20-frame stacks */
static uint64_t g_sizes[NSIZES];

static void workload_init(void)
{
    static const char *const base[] = {
        "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
        "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_7MeanOpsIffEEjfLi4EEEEEvT1_",
        "ampere_sgemm_128x64_tn",
        "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
        "_ZN2at6native27unrolled_elementwise_kernelINS0_13BinaryFunctorIffNS0_15MulFunctorIfEEEESt5arrayIPcLm3EE",
        "_ZN7cutlass6KernelI63cutlass_80_tensorop_f16_s16816gemm_relu_f16_256x128_32x3_nn_align8EEvNT_6ParamsE",
        "_ZN2at6native43_GLOBAL__N__softmax_warp_forwardIN3c104HalfEfLi10ELb0EEEvPT0_PKT_iii",
        "_ZN2at6native24index_elementwise_kernelILi128ELi4EZNS0_16gpu_index_kernelIZNS0_17index_kernel_implINS0_10OpaqueTypeILi4EEEEEvRNS_18TensorIteratorBaseEN3c108ArrayRefIlEESA_EUlPcPKclE_EEvSB_SA_SA_RKT_EUliE_EEviT1_",
        "flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::half_t>>",
        "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastIZZZNS0_23direct_copy_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE5_clEvEUlN3c104HalfEE_EEvS4_RKT_EUliE_EEviT1_",
    };
    for (int i = 0; i < NSIG; i++) {
        ksig *s = &g_sig[i];
        snprintf(s->name, sizeof(s->name), "%s_%d", base[i % 10], i / 10);
        s->grid[0] = (uint32_t)(1u << rnd_range(4, 12));
        s->grid[1] = (uint32_t)rnd_range(1, 4);
        s->grid[2] = 1;
        s->block[0] = (uint32_t)(32u << rnd_range(0, 4));
        s->block[1] = s->block[2] = 1;
        s->smem = (uint32_t)(rnd_range(0, 8) * 4096);
        s->dur = rnd_range(2000, 400000); /* 2 us .. 400 us */
    }
    for (int i = 0; i < KPS; i++)
        g_kseq[i] = i < NSIG ? i : (int)rnd_range(0, NSIG - 1);
    /* stacks: 12 common outer frames (python loop, torch dispatch), 8 own */
    for (int s = 0; s < NSTACK; s++)
        for (int d = 0; d < DEPTH; d++) {
            uint64_t pc = d >= 8 ? 0x7f3a10000000ull + (uint64_t)d * 0x1234 + (s % 3) * 0x100 * (d < 12)
                                 : 0x7f3a20000000ull + (uint64_t)s * 0x10000 + (uint64_t)d * 0x97;
            g_stack[s][d] = (vt_frame){.pc = pc, .kind = VT_FRAME_NATIVE};
        }
    for (int i = 0; i < NSIZES; i++)
        g_sizes[i] = (uint64_t)512 << rnd_range(0, 18); /* 512 B .. 128 MiB */
}

static void emit_modules(vt_writer *w)
{
    vt_event e;
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_MODULE;
    e.u.module = (vt_ev_module){.path = "/usr/lib/python3/site-packages/torch/lib/libtorch_cuda.so",
                                .start = 0x7f3a10000000ull, .end = 0x7f3a18000000ull};
    vt_writer_emit(w, &e);
    e.u.module = (vt_ev_module){.path = "/usr/lib/python3/site-packages/torch/lib/libtorch_python.so",
                                .start = 0x7f3a20000000ull, .end = 0x7f3a28000000ull};
    vt_writer_emit(w, &e);
}

/* Emit with retry: the size benchmarks want every event in the file. */
static void emit_all(vt_writer *w, const vt_event *e)
{
    while (vt_writer_emit(w, e) == VT_ERR_DROPPED)
        usleep(200);
}

typedef struct {
    uint64_t dev_t, host_t, corr;
    /* caching allocator: per size class a LIFO free list of addresses */
    uint64_t freel[NSIZES][256];
    int nfree[NSIZES];
    uint64_t next_addr;
    struct {
        uint64_t addr;
        int size_class, ttl;
    } live[APS];
    int nlive;
} sim;

static void sim_init(sim *s)
{
    memset(s, 0, sizeof(*s));
    s->dev_t = 1000000000ull;
    s->host_t = 1000000000ull;
    s->corr = 1000;
    s->next_addr = 0x7f2200000000ull;
}

static void kernel_event(sim *s, int k, vt_event *e)
{
    const ksig *g = &g_sig[k];
    memset(e, 0, sizeof(*e));
    e->type = VT_EV_KERNEL;
    uint64_t dur = (uint64_t)((double)g->dur * (1.0 + g_jitter * rnd_norm()));
    s->dev_t += rnd_range(3000, 20000); /* gap after the previous kernel */
    e->time_ns = s->dev_t;
    s->dev_t += dur;
    s->corr += rnd_range(1, 3);
    e->u.kernel = (vt_ev_kernel){.name = g->name, .device = 0, .stream = 7,
                                 .grid = {g->grid[0], g->grid[1], g->grid[2]},
                                 .block = {g->block[0], g->block[1], g->block[2]},
                                 .shared_memory = g->smem, .duration_ns = dur, .corr = s->corr};
}

static void free_event(sim *s, int i, vt_event *e)
{
    memset(e, 0, sizeof(*e));
    e->type = VT_EV_FREE;
    s->host_t += rnd_range(1000, 30000);
    s->corr += rnd_range(1, 4);
    e->time_ns = s->host_t;
    e->u.free = (vt_ev_free){.address = s->live[i].addr, .device = 0, .kind = VT_MEM_DEVICE,
                             .api = VT_API_MALLOC_ASYNC, .stream = 0x55d0c0ffee00ull, .corr = s->corr};
    int c = s->live[i].size_class;
    if (s->nfree[c] < 256)
        s->freel[c][s->nfree[c]++] = s->live[i].addr;
    s->live[i] = s->live[--s->nlive];
}

/* One step's allocations: APS allocations from a fixed site sequence (the
 * sequence index picks size and stack), each freed after 1..60 later
 * allocations; what is still live at the end of the step is freed. */
static int alloc_step(sim *s, vt_writer *w, vt_event *out, int max)
{
    int n = 0;
    for (int i = 0; i < APS; i++) {
        for (int j = 0; j < s->nlive;) {
            if (--s->live[j].ttl <= 0) {
                free_event(s, j, &out[n]);
                if (w)
                    emit_all(w, &out[n]);
                else
                    n++;
            } else {
                j++;
            }
        }
        int site = (i * 7) % NSTACK;
        int c = (i * 5 + (int)(rnd() % 8 == 0)) % NSIZES;
        uint64_t addr;
        if (s->nfree[c])
            addr = s->freel[c][--s->nfree[c]];
        else {
            addr = s->next_addr;
            s->next_addr += (g_sizes[c] + 511) & ~511ull;
        }
        vt_event *e = &out[n];
        memset(e, 0, sizeof(*e));
        e->type = VT_EV_ALLOC;
        s->host_t += rnd_range(1000, 30000);
        s->corr += rnd_range(1, 4);
        e->time_ns = s->host_t;
        e->u.alloc = (vt_ev_alloc){.address = addr, .size = g_sizes[c], .device = 0, .kind = VT_MEM_DEVICE,
                                   .api = VT_API_MALLOC_ASYNC, .stream = 0x55d0c0ffee00ull, .corr = s->corr,
                                   .site = {.frames = g_stack[site], .nframes = DEPTH}};
        if (w)
            emit_all(w, e);
        else
            n++;
        s->live[s->nlive].addr = addr;
        s->live[s->nlive].size_class = c;
        s->live[s->nlive].ttl = (int)rnd_range(1, 60);
        s->nlive++;
    }
    while (s->nlive) {
        free_event(s, 0, &out[n]);
        if (w)
            emit_all(w, &out[n]);
        else
            n++;
    }
    (void)max;
    return n;
}

static vt_writer *open_writer(const char *name, char *path, size_t ring)
{
    snprintf(path, 512, "%s/bench_writer_%d_%s.vt", g_dir, (int)getpid(), name);
    unlink(path);
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.path = path;
    cfg.level = g_level;
    if (ring)
        cfg.ring_bytes = ring;
    vt_writer *w = NULL;
    if (vt_writer_create(&w, &cfg, NULL)) {
        fprintf(stderr, "cannot create %s\n", path);
        exit(1);
    }
    return w;
}

/* ------------------------------------------------- size per event */

typedef struct {
    uint64_t events, bytes, raw, cpu_ns;
    double secs;
} size_result;

static size_result run_mix(const char *name, int steps, int kernels, int allocs)
{
    char path[512];
    /* a ring large enough for the whole run: no drop, no retry, so that
     * emit..flush time is the writer's time (it runs on the other core) */
    vt_writer *w = open_writer(name, path, 1u << 30);
    emit_modules(w);
    sim s;
    sim_init(&s);
    uint64_t t0 = now_ns();
    static vt_event evbuf[4 * APS];
    for (int st = 0; st < steps; st++) {
        if (kernels) {
            for (int i = 0; i < KPS; i++) {
                vt_event e;
                kernel_event(&s, g_kseq[i], &e);
                emit_all(w, &e);
            }
        }
        if (allocs)
            alloc_step(&s, w, evbuf, 4 * APS);
        if (g_paced_ms)
            usleep((useconds_t)g_paced_ms * 1000);
    }
    vt_writer_flush(w);
    uint64_t t1 = now_ns();
    vt_writer_close(w, VT_END_NORMAL, 0);
    vt_writer_stats stt;
    vt_writer_get_stats(w, &stt);
    vt_writer_free(w);
    if (g_keep)
        printf("kept %s\n", path);
    else
        unlink(path);
    size_result r = {stt.emitted, stt.bytes_written, stt.bytes_raw, stt.writer_cpu_ns, (double)(t1 - t0) / 1e9};
    return r;
}

/* --------------------------------------------------- producer cost */

typedef struct {
    vt_writer *w;
    int kind; /* 0 kernel, 1 alloc with 20 frames and its time, 2 alloc: the writer reads the clock */
    int n;
    double ns;
    uint64_t dropped;
} prod_arg;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double thread_cpu_ns(void)
{
    struct timespec c;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c);
    return (double)c.tv_sec * 1e9 + (double)c.tv_nsec;
}

/* Steady state with the default 1 MiB ring: batches that fit in the ring
 * (so the number is the enqueue, not drops), the writer draining between
 * batches (vt_writer_flush, not timed).  Timed with this thread's CPU
 * clock: 4 threads on 2 cores must not count the time they wait for a
 * core.  The first batches (page faults of a new ring) are not counted. */
static void *prod_thread(void *p)
{
    prod_arg *a = p;
    enum { BATCH = 1000 };
    sim s;
    sim_init(&s);
    vt_event *ev = malloc(BATCH * sizeof(vt_event));
    for (int i = 0; i < BATCH; i++) {
        if (a->kind == 0) {
            kernel_event(&s, g_kseq[i % KPS], &ev[i]);
        } else {
            memset(&ev[i], 0, sizeof(ev[i]));
            ev[i].type = VT_EV_ALLOC;
            ev[i].time_ns = a->kind == 2 ? 0 : 1000000000ull + (uint64_t)i * 1000; /* 0: the writer reads its clock */
            ev[i].u.alloc = (vt_ev_alloc){.address = 0x7f0000000000ull + (uint64_t)i * 512, .size = 512,
                                          .kind = VT_MEM_DEVICE, .api = VT_API_MALLOC_ASYNC, .corr = (uint64_t)i,
                                          .site = {.frames = g_stack[i % NSTACK], .nframes = DEPTH}};
        }
    }
    int nb = a->n / BATCH, counted = 0;
    double *per = malloc((size_t)nb * sizeof(double));
    for (int round = 0; round < nb; round++) {
        double c0 = thread_cpu_ns();
        for (int i = 0; i < BATCH; i++)
            if (vt_writer_emit(a->w, &ev[i]) != 0)
                a->dropped++;
        double c1 = thread_cpu_ns();
        if (round >= 5)
            per[counted++] = (c1 - c0) / BATCH;
        vt_writer_flush(a->w);
    }
    qsort(per, (size_t)counted, sizeof(double), cmp_double);
    a->ns = per[counted / 2]; /* median batch: robust on a shared machine */
    free(per);
    free(ev);
    return NULL;
}

static double producer_cost(int nthreads, int kind, uint64_t *dropped)
{
    char path[512];
    vt_writer *w = open_writer("prod", path, 0);
    pthread_t th[16];
    prod_arg a[16];
    for (int i = 0; i < nthreads; i++) {
        a[i] = (prod_arg){.w = w, .kind = kind, .n = 200000};
        pthread_create(&th[i], NULL, prod_thread, &a[i]);
    }
    double sum = 0;
    *dropped = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(th[i], NULL);
        sum += a[i].ns;
        *dropped += a[i].dropped;
    }
    vt_writer_free(w);
    unlink(path);
    return sum / nthreads;
}

int main(int argc, char **argv)
{
    int steps = 300;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            g_dir = argv[++i];
        else if (!strcmp(argv[i], "--jitter") && i + 1 < argc)
            g_jitter = atof(argv[++i]) / 100.0;
        else if (!strcmp(argv[i], "--producer-only"))
            g_producer_only = 1;
        else if (!strcmp(argv[i], "--paced") && i + 1 < argc)
            g_paced_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--keep"))
            g_keep = 1;
        else if (!strcmp(argv[i], "--level") && i + 1 < argc)
            g_level = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--steps N] [--dir DIR] [--level L] [--jitter PCT] [--paced MS] [--producer-only] [--keep]\n", argv[0]);
            return 2;
        }
    }
    workload_init();
    if (g_paced_ms) { /* only the size runs, at a training-loop pace */
        printf("paced: one step every %d ms (the writer flushes every 25 ms)\n", g_paced_ms);
        goto mixes;
    }
    printf("vramtrace writer benchmark: %d steps, zstd level %d, kernel duration jitter %.1f%%, %ld CPUs online\n",
           steps, g_level, g_jitter * 100, sysconf(_SC_NPROCESSORS_ONLN));

    {
        struct timespec ts;
        uint64_t t0 = now_ns();
        for (int i = 0; i < 1000000; i++)
            clock_gettime(CLOCK_MONOTONIC, &ts);
        printf("for reference: clock_gettime(CLOCK_MONOTONIC) here costs %.1f ns\n", (double)(now_ns() - t0) / 1e6);
    }
    static const char *const kname[] = {"kernel (name copied), time given   ", "alloc + 20 frames, time given      ",
                                        "alloc + 20 frames, writer reads clock"};
    for (int th = 1; th <= 4; th += 3)
        for (int k = 0; k < 3; k++) {
            uint64_t d;
            double c = producer_cost(th, k, &d);
            printf("producer cost, %s, %d thread%s: %6.1f ns/event (median of batches, thread CPU time; drops %llu)\n",
                   kname[k], th, th > 1 ? "s" : " ", c, (unsigned long long)d);
        }

    if (g_producer_only)
        return 0;
mixes:;
    struct {
        const char *name;
        int k, a;
    } mixes[] = {{"kernels", 1, 0}, {"allocs", 0, 1}, {"mixed", 1, 1}};
    for (int m = 0; m < 3; m++) {
        size_result r = run_mix(mixes[m].name, steps, mixes[m].k, mixes[m].a);
        printf("mix %-8s: %8llu events, %5.2f B/event compressed (%5.2f raw), writer %5.2f M events/s of "
               "writer CPU (%4.0f ns/event), %5.2f M events/s emit..flush wall\n",
               mixes[m].name, (unsigned long long)r.events, (double)r.bytes / (double)r.events,
               (double)r.raw / (double)r.events, (double)r.events / ((double)r.cpu_ns / 1e9) / 1e6,
               (double)r.cpu_ns / (double)r.events, (double)r.events / r.secs / 1e6);
    }
    return 0;
}
