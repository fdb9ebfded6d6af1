/* top_live.c - `vramtrace top` on a trace while the project's own writer
 * writes it (tests/analyze/vt_gen.h):
 *
 *   top_live VRAMTRACE WORKDIR
 *
 * 1. `vramtrace top --interval 0.1 TRACE` runs all along, its screens
 *    captured (stdout not a terminal: plain screens until the trace ends);
 * 2. a training loop of 12 steps is written slowly, each step flushed: the
 *    file then ends inside its unfinished last zstd frame (checked with
 *    the plain reader), and after each step `vramtrace top --once` and an
 *    in-process vt_live (one follower for the whole run) must show the
 *    kept buffer's live bytes and the steps growing step by step, the
 *    follower reading each byte of the file once (/proc/self/io rchar);
 * 3. the captured screens must show the numbers grow, and end with the
 *    trace;
 * 4. prefixes of the finished trace cut anywhere, then with garbage
 *    appended, must neither crash the follower nor stop it, and
 *    `top --once` on them exits 0.
 * Exit 0 when all holds; messages name what failed. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vt_gen.h"
#include "vt_live.h"
#include "vt_reader.h"

#define STEPS 12
#define TRAIN "/home/user/project/train.py"
enum { K_MAIN = 1, K_KEEP, K_FWD };

static int g_fail;
#define CHECK(c, ...)                                                                                        \
    do {                                                                                                     \
        if (!(c)) {                                                                                          \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #c);                                     \
            fprintf(stderr, __VA_ARGS__);                                                                    \
            fputc('\n', stderr);                                                                             \
            g_fail = 1;                                                                                      \
        }                                                                                                    \
    } while (0)

static uint64_t rchar(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    char line[128];
    uint64_t v = 0;
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "rchar:", 6))
            v = strtoull(line + 6, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

/* "20.0 MiB" -> bytes (the screen's rounding: within 1 %) */
static double parse_bytes(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    while (*end == ' ')
        end++;
    if (!strncmp(end, "KiB", 3))
        v *= 1024;
    else if (!strncmp(end, "MiB", 3))
        v *= 1024 * 1024;
    else if (!strncmp(end, "GiB", 3))
        v *= 1024.0 * 1024 * 1024;
    return v;
}

/* From one screen's text: the kept site's live bytes (-1 if absent) and
 * the steps (-1 if none yet). */
static void parse_screen(const char *text, double *keep, long *steps)
{
    *keep = -1;
    *steps = -1;
    const char *l = text;
    while (l && *l) {
        const char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - l) : strlen(l);
        char line[512];
        snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) - 1 ? n : sizeof(line) - 1), l);
        if (strstr(line, "keep_history (train.py:16)") && *keep < 0)
            *keep = parse_bytes(line);
        const char *st = strstr(line, "steps: ");
        if (st && st[7] >= '0' && st[7] <= '9')
            *steps = strtol(st + 7, NULL, 10);
        l = nl ? nl + 1 : NULL;
    }
}

static int run_once(const char *vt, const char *path, char *out, size_t len)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "COLUMNS=100 LINES=30 '%s' top --once '%s'", vt, path);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, len - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* the file ends inside an unfinished zstd frame (the plain reader says so) */
static int ends_in_frame(const char *path)
{
    vt_reader *r;
    char msg[256];
    if (vt_reader_open(&r, path, msg, sizeof(msg)))
        return 0;
    vt_event ev;
    int rc;
    while ((rc = vt_reader_next(r, &ev)) > 0)
        ;
    int in = rc == VT_ERR_TRUNCATED && strstr(vt_reader_errmsg(r), "inside a zstd frame");
    vt_reader_free(r);
    return in;
}

static const vt_live_site *find_keep(const vt_live_site *s, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (strstr(s[i].site, "keep_history (train.py:16)"))
            return &s[i];
    return NULL;
}

static void write_file(const char *path, const void *data, size_t n, int append)
{
    int fd = open(path, O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0644);
    if (fd < 0 || write(fd, data, n) != (ssize_t)n) {
        fprintf(stderr, "FAIL: write %s: %s\n", path, strerror(errno));
        exit(1);
    }
    close(fd);
}

/* cut the finished trace at `cut`, follow it, append garbage, follow on */
static void damaged_tail(const char *vt, const char *dir, const uint8_t *data, size_t cut, int run_cli)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/cut.zst", dir);
    write_file(path, data, cut, 0);
    vt_live *lv;
    CHECK(vt_live_open(&lv, path) == 0, "open %s", path);
    CHECK(vt_live_poll(lv, 0) >= 0, "poll of a prefix of %zu bytes", cut);
    static const char garbage[] = "\x28\xb5\x2f\xfd garbage after the last frame \x1b[2J\x00\xff\xfe";
    write_file(path, garbage, sizeof(garbage), 1);
    CHECK(vt_live_poll(lv, 0) >= 0, "poll after garbage at %zu", cut);
    write_file(path, data, cut < 4096 ? cut : 4096, 1); /* more bytes after it: it goes on */
    CHECK(vt_live_poll(lv, 0) >= 0, "poll after more bytes at %zu", cut);
    vt_live_proc p;
    if (vt_live_nprocs(lv)) {
        CHECK(vt_live_proc_get(lv, 0, &p) == 0, "proc");
        vt_live_site s[20];
        vt_live_sites(lv, 0, VT_LIVE_SORT_GROWTH, s, 20);
    }
    vt_live_free(lv);
    if (run_cli) {
        char out[1 << 16];
        int rc = run_once(vt, path, out, sizeof(out));
        /* a file it could not read is a failure (as for report), shown
         * on the screen as a read error */
        CHECK(rc == 0 || (rc == 1 && strstr(out, "read error")), "top --once on a garbage tail (cut at %zu) exited %d", cut, rc);
        CHECK(!strchr(out, 0x1b), "an escape character from the trace reached the screen");
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: top_live VRAMTRACE WORKDIR\n");
        return 2;
    }
    const char *vt = argv[1], *dir = argv[2];
    char path[4096], screens[4096];
    mkdir(dir, 0755);
    snprintf(path, sizeof(path), "%s/live.zst", dir);
    snprintf(screens, sizeof(screens), "%s/screens.txt", dir);
    unlink(path);

    gen_proc gp = {.program = "train.py", .pid = 4242, .python = 1, .frame_bytes = 2048};
    gen_open(path, &gp);
    gen_device(0, "NVIDIA H200\x1b[2J", 140 * GiB); /* a name that would clear the screen */
    gen_module("/opt/vt-test/cuda/lib64/libcudart.so.13", 0x7f0000000000ull, 0x7f0000100000ull,
               0x7f0000000000ull);
    gen_code(K_MAIN, TRAIN, "main");
    gen_code(K_KEEP, TRAIN, "keep_history");
    gen_code(K_FWD, TRAIN, "forward");
    vt_writer_flush(g_w);

    /* 1. the view, all along */
    pid_t top = fork();
    if (top == 0) {
        int fd = open(screens, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        setenv("COLUMNS", "100", 1);
        setenv("LINES", "30", 1);
        execl(vt, vt, "top", "--interval", "0.1", path, (char *)NULL);
        _exit(127);
    }

    vt_live *lv;
    CHECK(vt_live_open(&lv, path) == 0, "vt_live_open");
    uint64_t read_by_follower = 0;
    uint64_t rchar_cost = rchar(); /* what reading /proc/self/io itself adds */
    rchar_cost = rchar() - rchar_cost;
    int unfinished = 0;
    long last_steps = -1;
    gen_stack keep = {.n = 0}, fwd = {.n = 0};
    gs_native(&keep, 0x7f0000001234ull);
    gs_py(&keep, K_KEEP, 16);
    gs_py(&keep, K_MAIN, 40);
    gs_native(&fwd, 0x7f0000001234ull);
    gs_py(&fwd, K_FWD, 22);
    gs_py(&fwd, K_MAIN, 39);

    /* 2. the loop, slowly */
    for (int i = 0; i < STEPS; i++) {
        uint64_t t0 = T(10 * MS + (uint64_t)i * 10 * MS);
        gen_nvtx(t0, VT_NVTX_PUSH, "step");
        for (int k = 0; k < 40; k++) { /* activations: allocated and freed every step */
            gen_alloc(t0 + 1000 + (uint64_t)k * 10000, 0x7e0000000000ull + (uint64_t)k * 4 * MiB, 4 * MiB, 0,
                      VT_MEM_DEVICE, VT_API_MALLOC, &fwd);
        }
        for (int k = 0; k < 40; k++)
            gen_free(t0 + 5 * MS + (uint64_t)k * 1000, 0x7e0000000000ull + (uint64_t)k * 4 * MiB, 0);
        /* the leak: 1 MiB kept per step */
        gen_alloc(t0 + 8 * MS, 0x7d0000000000ull + (uint64_t)i * MiB, 1 * MiB, 0, VT_MEM_DEVICE,
                  VT_API_MALLOC, &keep);
        gen_nvtx(t0 + 9 * MS, VT_NVTX_POP, NULL);
        CHECK(vt_writer_flush(g_w) == 0, "flush");
        unfinished += ends_in_frame(path);

        const double want = (double)(i + 1) * MiB;
        /* a fresh process, reading the file as it is now */
        char out[1 << 16];
        int rc = run_once(vt, path, out, sizeof(out));
        double k1;
        long steps;
        parse_screen(out, &k1, &steps);
        CHECK(rc == 0, "top --once exited %d", rc);
        CHECK(!strchr(out, 0x1b) && strstr(out, "H200\\x1b[2J"),
              "step %d: the device's name is not escaped:\n%s", i, out);
        CHECK(k1 > want * 0.99 && k1 < want * 1.01,
              "step %d: top --once shows %.0f live at keep_history, want %.0f\n%s", i, k1, want, out);
        CHECK(steps >= last_steps, "step %d: steps went from %ld to %ld", i, last_steps, steps);
        if (i >= 3)
            CHECK(steps == i + 1 || steps == i, "step %d: steps %ld", i, steps);
        last_steps = steps;

        /* the follower: what was appended since its last poll */
        uint64_t r0 = rchar();
        int64_t n = vt_live_poll(lv, 0);
        read_by_follower += rchar() - r0 - rchar_cost;
        CHECK(n > 0, "step %d: the follower read no event", i);
        vt_live_proc p;
        CHECK(vt_live_proc_get(lv, 0, &p) == 0, "proc");
        CHECK(p.state == VT_LIVE_READING, "step %d: state %d", i, p.state);
        CHECK(p.ndevices == 1 && p.dev[0].live == (int64_t)want, "step %d: device live %lld, want %.0f", i,
              p.ndevices ? (long long)p.dev[0].live : -1LL, want);
        vt_live_site s[20];
        unsigned ns = vt_live_sites(lv, 0, VT_LIVE_SORT_GROWTH, s, 20);
        const vt_live_site *ks = find_keep(s, ns);
        CHECK(ks && ks->live_bytes == (int64_t)want, "step %d: follower's keep_history %lld", i,
              ks ? (long long)ks->live_bytes : -1LL);
        if (i == STEPS - 1) {
            CHECK(ks && ks->growing, "keep_history is not flagged as growing after %d steps", STEPS);
            CHECK(ks && ks->per_step > 0.9 * MiB && ks->per_step < 1.1 * MiB, "per step %.0f",
                  ks ? ks->per_step : -1.0);
            CHECK(p.steps >= STEPS - 1, "follower's steps %llu", (unsigned long long)p.steps);
        }
        usleep(150 * 1000);
    }
    CHECK(unfinished > 0, "no read happened while the last zstd frame was unfinished");
    gen_close(VT_END_NORMAL, 0);

    struct stat st;
    stat(path, &st);
    uint64_t r0 = rchar();
    vt_live_poll(lv, 0);
    read_by_follower += rchar() - r0 - rchar_cost;
    vt_live_proc p;
    vt_live_proc_get(lv, 0, &p);
    CHECK(p.state == VT_LIVE_ENDED, "state %d after the End record", p.state);
    /* every byte once (a re-read of the file per poll would be 12 times it) */
    CHECK(read_by_follower <= (uint64_t)st.st_size + 1024, "the follower read %llu bytes of a %lld-byte file",
          (unsigned long long)read_by_follower, (long long)st.st_size);
    CHECK(read_by_follower >= (uint64_t)st.st_size, "the follower read %llu bytes of a %lld-byte file",
          (unsigned long long)read_by_follower, (long long)st.st_size);
    vt_live_free(lv);

    /* 3. the view that ran all along ends with the trace */
    int ws = 0;
    for (int k = 0; k < 300 && waitpid(top, &ws, WNOHANG) == 0; k++)
        usleep(100 * 1000);
    if (waitpid(top, &ws, WNOHANG) == 0) {
        kill(top, SIGKILL);
        waitpid(top, &ws, 0);
        CHECK(0, "top --interval 0.1 did not end after the trace ended");
    }
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "top --interval exit status 0x%x", ws);
    FILE *f = fopen(screens, "r");
    static char all[1 << 22];
    size_t n = f ? fread(all, 1, sizeof(all) - 1, f) : 0;
    all[n] = 0;
    if (f)
        fclose(f);
    /* screens are separated by an empty line */
    int nscreens = 0, distinct = 0;
    double prev = -1;
    char *save = NULL;
    for (char *scr = all; scr && *scr; scr = save) {
        char *sep = strstr(scr, "\n\n");
        if (sep) {
            sep[1] = 0;
            save = sep + 2;
        } else {
            save = NULL;
        }
        double k;
        long steps;
        parse_screen(scr, &k, &steps);
        nscreens++;
        CHECK(k >= prev, "screen %d: keep_history went down from %.0f to %.0f", nscreens, prev, k);
        if (k > prev)
            distinct++;
        prev = k;
        if (!save)
            CHECK(strstr(scr, "ended"), "the last screen does not say the trace ended:\n%s", scr);
    }
    CHECK(distinct >= 4, "only %d distinct values over %d screens", distinct, nscreens);
    CHECK(prev > STEPS * MiB * 0.99, "last screen shows %.0f", prev);

    /* 4. damaged tails */
    f = fopen(path, "rb");
    n = f ? fread(all, 1, sizeof(all), f) : 0;
    if (f)
        fclose(f);
    for (size_t cut = 1; cut < n; cut += n / 23 + 1)
        damaged_tail(vt, dir, (const uint8_t *)all, cut, cut % 3 == 1);
    damaged_tail(vt, dir, (const uint8_t *)all, n, 1);

    if (!g_fail)
        printf("ok: top followed %d steps (%d screens), %llu bytes read for a %zu-byte trace\n", STEPS,
               nscreens, (unsigned long long)read_by_follower, n);
    return g_fail;
}
