/* record_child.c - a stand-in for the traced command in the CLI tests of
 * `vramtrace record` (tests/cli/test_record_cli.c).  It never loads
 * CUDA; where a test needs the files a CUDA process would leave, it plays
 * the injection library's part: it expands VRAMTRACE_OUTPUT the way
 * src/inject does (%n program, %h host, %r rank or "0", %p pid) and writes
 * a trace there with the core writer.
 *
 *   record_child env NAME...     print NAME=VALUE (or "NAME unset") lines
 *   record_child exit N          exit with status N
 *   record_child kill SIG        die by signal SIG (a number)
 *   record_child wait-signal     print "ready", then count SIGINT/SIGTERM;
 *                                300 ms after the first, exit 100 + count
 *                                (exit 99 when none came within 20 s)
 *   record_child trace N         write a trace of N allocations + N frees
 *   record_child fork-trace N    fork; parent and child each write one
 *   record_child fork-quiet N    fork a child that never "uses CUDA" (writes
 *                                nothing, like a DataLoader worker); the
 *                                parent writes one trace
 *   record_child procs K N       K processes (forked), each writes a trace
 *   record_child trace-die N     write N allocations, flush, then SIGKILL
 *                                itself: a trace without an end record
 *   record_child trace-slow N MS N allocations of 1 MiB kept, one every MS
 *                                ms, each flushed and said on stdout
 *                                ("allocated I"), then "done" (record --live)
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "record_env.h"
#include "vt_error.h"
#include "vt_writer.h"

static volatile sig_atomic_t g_count;

static void on_sig(int sig)
{
    (void)sig;
    g_count++;
}

/* Expand the template as the library does (test double of src/inject). */
static void expand(const char *tmpl, char *out, size_t len)
{
    char host[256] = "unknown";
    gethostname(host, sizeof(host) - 1);
    const char *rank = getenv("RANK");
    size_t o = 0;
    for (const char *t = tmpl; *t && o + 32 < len; t++) {
        if (*t != '%' || !t[1]) {
            out[o++] = *t;
            continue;
        }
        t++;
        const char *s = NULL;
        char num[24];
        switch (*t) {
        case 'n': s = "record_child"; break;
        case 'h': s = host; break;
        case 'r': s = rank && *rank ? rank : "0"; break;
        case 'p': snprintf(num, sizeof(num), "%d", (int)getpid()); s = num; break;
        case '%': s = "%"; break;
        default: out[o++] = '%'; out[o++] = *t; continue;
        }
        o += (size_t)snprintf(out + o, len - o, "%s", s);
    }
    out[o < len ? o : len - 1] = 0;
}

static int write_trace_ex(int n, int die)
{
    const char *tmpl = getenv("VRAMTRACE_OUTPUT");
    if (!tmpl) {
        fprintf(stderr, "record_child: VRAMTRACE_OUTPUT unset\n");
        return 1;
    }
    char path[4096];
    expand(tmpl, path, sizeof(path));
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.path = path;
    vt_ev_header h;
    memset(&h, 0, sizeof(h));
    h.pid = (uint32_t)getpid();
    h.ppid = (uint32_t)getppid();
    h.hostname = "test";
    h.program = "record_child";
    const char *names[1] = {"RANK"}, *values[1] = {getenv("RANK")};
    if (values[0]) {
        h.env_names = names;
        h.env_values = values;
        h.nenv = 1;
    }
    h.clock = VT_CLOCK_MONOTONIC;
    vt_writer *w = NULL;
    if (vt_writer_create(&w, &cfg, &h))
        return 1;
    for (int i = 0; i < n; i++) {
        vt_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_ALLOC;
        ev.u.alloc.address = 0x7f0000000000ull + (uint64_t)i * 4096;
        ev.u.alloc.size = 4096;
        ev.u.alloc.kind = VT_MEM_DEVICE;
        ev.u.alloc.api = VT_API_MALLOC;
        while (vt_writer_emit(w, &ev) == VT_ERR_DROPPED)
            vt_writer_flush(w);
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_FREE;
        ev.u.free.address = 0x7f0000000000ull + (uint64_t)i * 4096;
        ev.u.free.kind = VT_MEM_DEVICE;
        ev.u.free.api = VT_API_MALLOC;
        while (vt_writer_emit(w, &ev) == VT_ERR_DROPPED)
            vt_writer_flush(w);
    }
    if (die) {
        vt_writer_flush(w);
        signal(SIGKILL, SIG_DFL);
        raise(SIGKILL);
    }
    int rc = vt_writer_close(w, VT_END_NORMAL, 0);
    vt_writer_free(w);
    return rc ? 1 : 0;
}

static int write_trace_slow(int n, int ms)
{
    const char *tmpl = getenv("VRAMTRACE_OUTPUT");
    if (!tmpl)
        return 1;
    char path[4096];
    expand(tmpl, path, sizeof(path));
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.path = path;
    vt_ev_header h;
    memset(&h, 0, sizeof(h));
    h.pid = (uint32_t)getpid();
    h.hostname = "test";
    h.program = "record_child";
    h.clock = VT_CLOCK_MONOTONIC;
    vt_writer *w = NULL;
    if (vt_writer_create(&w, &cfg, &h))
        return 1;
    for (int i = 0; i < n; i++) {
        vt_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.type = VT_EV_ALLOC;
        ev.u.alloc.address = 0x7f0000000000ull + (uint64_t)i * (1u << 20);
        ev.u.alloc.size = 1u << 20;
        ev.u.alloc.kind = VT_MEM_DEVICE;
        ev.u.alloc.api = VT_API_MALLOC;
        while (vt_writer_emit(w, &ev) == VT_ERR_DROPPED)
            vt_writer_flush(w);
        vt_writer_flush(w);
        printf("allocated %d\n", i + 1);
        fflush(stdout);
        usleep((useconds_t)ms * 1000);
    }
    int rc = vt_writer_close(w, VT_END_NORMAL, 0);
    vt_writer_free(w);
    printf("done\n");
    return rc ? 1 : 0;
}

static int write_trace(int n)
{
    return write_trace_ex(n, 0);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    const char *mode = argv[1];
    if (!strcmp(mode, "env")) {
        for (int i = 2; i < argc; i++) {
            const char *v = getenv(argv[i]);
            if (v)
                printf("%s=%s\n", argv[i], v);
            else
                printf("%s unset\n", argv[i]);
        }
        return 0;
    }
    if (!strcmp(mode, "exit") && argc > 2)
        return atoi(argv[2]);
    if (!strcmp(mode, "kill") && argc > 2) {
        int sig = atoi(argv[2]);
        signal(sig, SIG_DFL);
        raise(sig);
        return 98;
    }
    if (!strcmp(mode, "wait-signal")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_sig;
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        printf("ready\n");
        fflush(stdout);
        for (int i = 0; i < 2000 && !g_count; i++)
            usleep(10000);
        if (!g_count)
            return 99;
        usleep(300000); /* a duplicate would arrive by now */
        return 100 + g_count;
    }
    int n = argc > 2 ? atoi(argv[2]) : 10;
    if (!strcmp(mode, "trace"))
        return write_trace(n);
    if (!strcmp(mode, "trace-slow") && argc > 3)
        return write_trace_slow(n, atoi(argv[3]));
    if (!strcmp(mode, "trace-die"))
        return write_trace_ex(n, 1);
    if (!strcmp(mode, "procs") && argc > 3) {
        int k = atoi(argv[2]), per = atoi(argv[3]), bad = 0;
        fflush(NULL);
        for (int i = 0; i < k; i++) {
            pid_t pid = fork();
            if (pid == 0)
                _exit(write_trace(per));
            if (pid < 0)
                return 1;
        }
        for (int i = 0; i < k; i++) {
            int ws;
            if (wait(&ws) < 0 || !WIFEXITED(ws) || WEXITSTATUS(ws))
                bad++;
        }
        return bad ? 1 : 0;
    }
    if (!strcmp(mode, "fork-trace") || !strcmp(mode, "fork-quiet")) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0)
            _exit(!strcmp(mode, "fork-trace") ? write_trace(n) : 0);
        int ws, rc = write_trace(n);
        if (waitpid(pid, &ws, 0) != pid || !WIFEXITED(ws) || WEXITSTATUS(ws))
            return 1;
        return rc;
    }
    fprintf(stderr, "record_child: unknown mode %s\n", mode);
    return 2;
}
