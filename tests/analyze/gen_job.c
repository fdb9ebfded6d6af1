/* gen_job.c - a synthetic training job for the Parquet export's tests and
 * bench (docs/EXPORT.md, "Parquet"): `gen_job OUTDIR NTRACES [STEPS]`
 * writes OUTDIR/vt-nodeNN-PID.zst, one trace per rank (RANK set, 8 ranks
 * a host, pid 20000 + rank), each STEPS steps (default 40) of a training
 * loop: weights allocated once, per step a temporary freed in the step and
 * two kernels, NVTX step ranges.  Known answers: every rank whose number
 * is 7 mod 10 keeps 1 MiB per step from train.py:64 (keep_outputs: it
 * grows); every rank 3 mod 10 has one cudaMalloc of 4 GiB fail out of
 * memory at train.py:60 in step 10.  Deterministic; touches only OUTDIR. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "vt_gen.h"

#define TRAIN "/home/user/project/train.py"
#define CUDART "/opt/vt-test/cuda/lib64/libcudart.so.13"

enum { K_MAIN = 1, K_BUILD, K_STEP, K_KEEP, K_TEMP };

static gen_stack py2(uint64_t key, uint32_t line)
{
    gen_stack s = {.n = 0};
    gs_native(&s, 0x7f0000001234ull);
    gs_py(&s, key, line);
    gs_py(&s, K_MAIN, 100);
    return s;
}

static void one_rank(const char *dir, int rank, int steps)
{
    char path[4096], host[32], rk[16];
    snprintf(host, sizeof(host), "node%02d", rank / 8);
    snprintf(rk, sizeof(rk), "%d", rank);
    uint32_t pid = 20000u + (uint32_t)rank;
    snprintf(path, sizeof(path), "%s/vt-%s-%u.zst", dir, host, pid);
    gen_proc gp = {
        .program = "train.py", .pid = pid, .rank = rk, .kernels = 1, .native = 1, .python = 1, .host = host};
    gen_open(path, &gp);
    gen_device(0, "NVIDIA H200", 140 * GiB);
    gen_module(CUDART, 0x7f0000000000ull, 0x7f0000100000ull, 0x7f0000000000ull);
    gen_code(K_MAIN, TRAIN, "main");
    gen_code(K_BUILD, TRAIN, "build_model");
    gen_code(K_STEP, TRAIN, "train_step");
    gen_code(K_KEEP, TRAIN, "keep_outputs");
    gen_code(K_TEMP, TRAIN, "forward");
    gen_stack build = py2(K_BUILD, 20), temp = py2(K_TEMP, 91), keep = py2(K_KEEP, 64), big = py2(K_STEP, 60);
    gen_alloc(T(1 * MS), 0x10000000000ull, 2 * GiB + (uint64_t)rank * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC,
              &build);
    for (int k = 0; k < steps; k++) {
        uint64_t t = 10 * MS + (uint64_t)k * 10 * MS;
        gen_nvtx(T(t), VT_NVTX_PUSH, "step");
        gen_alloc(T(t + 1 * MS), 0x20000000000ull, 512 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC_ASYNC, &temp);
        gen_kernel(T(t + 2 * MS), "gemm_fwd", 0, 1 * MS);
        if (rank % 10 == 3 && k == 10) {
            gen_alloc_failed(0, T(t + 3 * MS), 4 * GiB, VT_MEM_DEVICE, VT_API_MALLOC, 2, "cudaErrorMemoryAllocation",
                             &big);
        }
        gen_kernel(T(t + 4 * MS), "relu_bwd", 0, 1 * MS);
        gen_free(T(t + 6 * MS), 0x20000000000ull, 0);
        if (rank % 10 == 7)
            gen_alloc(T(t + 7 * MS), 0x30000000000ull + (uint64_t)k * 0x100000ull, 1 * MiB, 0, VT_MEM_DEVICE,
                      VT_API_MALLOC_ASYNC, &keep);
        gen_nvtx(T(t + 9 * MS), VT_NVTX_POP, NULL);
    }
    gen_close(VT_END_NORMAL, 0);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: gen_job OUTDIR NTRACES [STEPS]\n");
        return 2;
    }
    int n = atoi(argv[2]), steps = argc > 3 ? atoi(argv[3]) : 40;
    mkdir(argv[1], 0777);
    for (int r = 0; r < n; r++)
        one_rank(argv[1], r, steps);
    return 0;
}
