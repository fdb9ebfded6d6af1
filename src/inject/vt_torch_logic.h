/* vt_torch_logic.h - the pure parts of the PyTorch tracker's use, tested
 * on the CPU (tests/inject/test_torch_logic.c). */
#ifndef VT_TORCH_LOGIC_H
#define VT_TORCH_LOGIC_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

/* The layout check: the tracker's first segment entry (action, addr,
 * size) against the driver allocation CUPTI saw last on the same thread
 * (last_addr, last_size), inside which the allocator records it.  A
 * cudaMalloc segment (SEGMENT_ALLOC) is the same range; an expandable
 * segment's map entry (SEGMENT_MAP) covers the pages mapped by the call,
 * the last cuMemMap among them: it ends where that range ends and starts
 * at or before it.  0 when the entry cannot be that range (a shim built
 * for another layout). */
static inline int vt_torch_layout_ok(int map, uint64_t addr, uint64_t size, uint64_t last_addr, uint64_t last_size)
{
    if (!addr || !size || !last_addr || !last_size || size > (1ull << 44)) /* no device maps 16 TiB */
        return 0;
    if (!map)
        return addr == last_addr && size == last_size;
    if (addr > last_addr || size < last_size || size - last_size != last_addr - addr)
        return 0;
    return addr + size == last_addr + last_size;
}

/* Whether a module path is PyTorch's CUDA allocator library (libc10_cuda.so,
 * with or without a version suffix). */
static inline int vt_torch_is_c10_cuda(const char *path)
{
    if (!path)
        return 0;
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    return !strncmp(b, "libc10_cuda.", 12);
}

static inline double vt_torch_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Wait for a shim that `vramtrace record` is building (record_torch.c):
 * until SHIM exists (0, the seconds waited in *waited), SHIM.failed
 * appears (-1, its first line in why), the builder lets go of SHIM.lock
 * without either, or wait_s seconds pass (-1, why says which).  wait_s 0:
 * no wait, 0 whatever is there (dlopen then names what is missing). */
static inline int vt_torch_shim_wait(const char *shim, unsigned wait_s, double *waited, char *why, size_t n)
{
    *waited = 0;
    if (!wait_s || access(shim, F_OK) == 0)
        return 0;
    char failed[1100], lock[1100];
    snprintf(failed, sizeof(failed), "%s.failed", shim);
    snprintf(lock, sizeof(lock), "%s.lock", shim);
    const double t0 = vt_torch_now_s();
    int ended = 0; /* the builder let go of SHIM.lock: one more look, then no */
    for (;;) {
        if (access(shim, F_OK) == 0)
            break;
        int fd = open(failed, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            char r[300];
            ssize_t k = read(fd, r, sizeof(r) - 1);
            close(fd);
            r[k > 0 ? k : 0] = 0;
            r[strcspn(r, "\n")] = 0;
            snprintf(why, n, "%s", r[0] ? r : "the shim did not build");
            return -1;
        }
        if (ended) {
            snprintf(why, n, "the shim's build ended without a result (see build.log beside %.250s)", shim);
            return -1;
        }
        int lk = open(lock, O_RDONLY | O_CLOEXEC);
        if (lk < 0 || flock(lk, LOCK_SH | LOCK_NB) == 0)
            ended = 1;
        if (lk >= 0)
            close(lk);
        if (vt_torch_now_s() - t0 > (double)wait_s) {
            snprintf(why, n, "the shim's build did not finish within %u s (VRAMTRACE_TORCH_SHIM_WAIT)", wait_s);
            return -1;
        }
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    *waited = vt_torch_now_s() - t0;
    if (*waited <= 0)
        *waited = 1e-9;
    return 0;
}

#endif
