/* builtin-record.c - `vramtrace record [options] [--] CMD ARGS...`: run a
 * command with libvramtrace.so injected (CUDA_INJECTION64_PATH) and the
 * VRAMTRACE_* configuration set, pass its exit status through, then print
 * one summary of the traces it left.  The pure parts (options, environment,
 * names) live in record_env.c; this file owns the process handling: it
 * forks, execs, forwards signals, waits and reads the traces back with the
 * core reader.  It never loads the injection library itself.
 *
 * Exit status: the command's own; 128+N when signal N killed it (as shells
 * report it; the signal is not re-raised, so the summary is still printed);
 * 127 when the command does not exist, 126 when it cannot be executed;
 * 1 when libvramtrace.so is not found or the output directory cannot be
 * made; 2 for a usage error. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "builtin.h"
#include "record_env.h"
#include "record_torch.h"
#include "vt_settings.h"
#include "vt_error.h"
#include "vt_reader.h"
#include "vt_analyze.h"

#define PFX "vramtrace record: "

static void usage(FILE *f)
{
    fprintf(f,
            "usage: vramtrace record [options] [--] COMMAND [ARGS...]\n"
            "\n"
            "Run COMMAND with libvramtrace.so injected: every process of it that uses\n"
            "CUDA writes its own trace into the output directory. Then run\n"
            "`vramtrace report DIR`.\n"
            "\n"
            "options:\n"
            "  -o, --output-dir DIR     where the traces go (created if missing; default:\n"
            "                           a new ./vramtrace-NAME-YYYYmmdd-HHMMSS/)\n"
            "      --kernels, --no-kernels\n"
            "                           record kernel launches (default: on)\n"
            "      --native-stacks, --no-native-stacks\n"
            "                           native call stack of each allocation (default: on;\n"
            "                           with Python frames it ends where they begin)\n"
            "      --full-native-stacks also the native frames between Python frames\n"
            "      --python-stacks, --no-python-stacks\n"
            "                           Python call stack of each allocation (default: on)\n"
            "      --static, --no-static\n"
            "                           module globals (__device__ variables) (default: on)\n"
            "      --stack-depth N      frames kept per stack (1..256; default 32)\n"
            "      --flush-ms N         write the trace at least every N ms, so a crash\n"
            "                           loses at most that (10..60000; default 100)\n"
            "      --sample-ms N        sample pool and device memory use every N ms\n"
            "                           (0 = off, else 10..60000; default 200)\n"
            "      --no-holders         Python: do not name the objects that hold GPU\n"
            "                           tensors (a walk at exit and at the first failed\n"
            "                           allocation: holders.PID[.oom].txt beside the traces)\n"
            "      --holders-signal SIG Python: walk them also when the program gets SIG\n"
            "                           (USR1, USR2, ...; kill -USR2 PID): holders.PID.sig-N.txt\n"
            "      --no-symbolize       do not save the native frames' symbols beside the\n"
            "                           traces after the command (vramtrace symbolize)\n"
            "      --no-symbol-cache    read every library again instead of the symbol cache\n"
            "                           (~/.cache/vramtrace/symbols, or $VRAMTRACE_CACHE_DIR/\n"
            "                           symbols: each library is read once per build id;\n"
            "                           VRAMTRACE_SYMBOL_CACHE=0 is this option)\n"
            "      --timings            one line of what each step after the command took\n"
            "                           (also VRAMTRACE_TIMINGS=1)\n"
            "      --no-tensor-events   PyTorch: do not attach to the default caching\n"
            "                           allocator (tensor events and allocated vs reserved\n"
            "                           are then not recorded, only its segments)\n"
            "      --tensors            PyTorch: record another allocator instead, by adding\n"
            "                           backend:cudaMallocAsync to PYTORCH_CUDA_ALLOC_CONF\n"
            "                           and PYTORCH_ALLOC_CONF (your other keys are kept);\n"
            "                           the default allocator's tensors are recorded anyway\n"
            "      --clock MODE         time source of the events: auto (the TSC where\n"
            "                           invariant, else CLOCK_MONOTONIC), monotonic, cupti\n"
            "      --live               show `vramtrace top`'s view of the traces while the\n"
            "                           command runs: on a terminal (stdout) in the\n"
            "                           alternate screen, the command's stdout and stderr\n"
            "                           then going to DIR/output.log and its stdin being\n"
            "                           /dev/null; else a plain screen on stderr every second\n"
            "  -q, --quiet              no per-process message from the library\n"
            "  -h, --help               this text\n"
            "\n"
            "environment: VRAMTRACE_LIB=PATH uses that libvramtrace.so instead of the one\n"
            "beside the vramtrace binary (PREFIX/lib, or the build tree).\n"
            "\n"
            "signals: HUP, INT, QUIT, TERM, USR1 and USR2 sent to vramtrace are passed on\n"
            "to COMMAND; one typed on the terminal (Ctrl-C) reaches it once, directly.\n"
            "\n"
            "exit status: COMMAND's; 128+N if signal N killed it; 127 if COMMAND is not\n"
            "found, 126 if it cannot be run; 1 if libvramtrace.so is missing or the\n"
            "output directory cannot be made; 2 usage.\n");
}

/* ---- signals ------------------------------------------------------------- */

static volatile sig_atomic_t g_child = 0;

/* Forward a signal sent to us (kill, timeout, a batch system) to the
 * command.  A signal the terminal generated (Ctrl-C, Ctrl-\) already went to
 * the whole foreground process group, which the command shares with us:
 * forwarding it would deliver it twice, so it is not. */
static void on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    pid_t c = (pid_t)g_child;
    if (c <= 0)
        return;
    if (si && si->si_code == SI_KERNEL)
        return;
    if (si && si->si_code == SI_USER && si->si_pid == c)
        return; /* from the command itself: do not bounce it back */
    int saved = errno;
    kill(c, sig);
    errno = saved;
}

static const int forwarded_signals[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2};
#define N_FORWARDED (sizeof(forwarded_signals) / sizeof(forwarded_signals[0]))

static void install_forwarding(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaction(forwarded_signals[i], &sa, NULL);
}

/* ---- output directory ---------------------------------------------------- */

/* mkdir -p; 0 or -1 with errno. */
static int mkdir_p(const char *path)
{
    char buf[PATH_MAX];
    if (strlen(path) >= sizeof(buf)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(buf, path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0777) && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, 0777) && errno != EEXIST)
        return -1;
    struct stat st;
    if (stat(buf, &st))
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* Names of the trace files in dir, sorted; *n entries.  NULL on error. */
static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char **list_traces(const char *dir, size_t *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    size_t cap = 16;
    char **v = malloc(cap * sizeof(*v));
    struct dirent *de;
    while (v && (de = readdir(d))) {
        if (!vt_record_is_trace_name(de->d_name))
            continue;
        if (*n == cap) {
            char **nv = realloc(v, 2 * cap * sizeof(*v));
            if (!nv)
                break;
            v = nv;
            cap *= 2;
        }
        if (!(v[*n] = strdup(de->d_name)))
            break;
        (*n)++;
    }
    closedir(d);
    if (v)
        qsort(v, *n, sizeof(*v), cmp_str);
    return v;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

static int in_list(char **v, size_t n, const char *s)
{
    return v && bsearch(&s, v, n, sizeof(*v), cmp_str) != NULL;
}

/* ---- reading the traces back ---------------------------------------------- */

typedef struct {
    uint64_t events, allocs, frees, failed, kernels;
    char rank[16];   /* RANK from the header, "" if none */
    uint32_t pid;
    int counted;     /* events were counted */
    int read_ok;     /* the reader could open it */
    int complete;    /* an End record was seen */
    char err[200];   /* the reader's message when it stopped early */
} trace_info;

static int is_definition(vt_evtype t)
{
    switch (t) {
    case VT_EV_HEADER: case VT_EV_SYNC: case VT_EV_STRING: case VT_EV_STACK:
    case VT_EV_FRAME: case VT_EV_MODULE: case VT_EV_THREAD: case VT_EV_LAUNCH:
    case VT_EV_DEVICE: case VT_EV_END:
        return 1;
    default:
        return 0;
    }
}

static void read_trace(const char *path, trace_info *ti)
{
    memset(ti, 0, sizeof(*ti));
    vt_reader *r = NULL;
    if (vt_reader_open(&r, path, ti->err, sizeof(ti->err)))
        return;
    ti->read_ok = ti->counted = 1;
    vt_event ev;
    int rc;
    for (;;) {
        rc = vt_reader_next(r, &ev);
        if (rc == 1) {
            if (ev.type == VT_EV_HEADER) {
                ti->pid = ev.u.header.pid;
                for (uint32_t i = 0; i < ev.u.header.nenv; i++)
                    if (!strcmp(ev.u.header.env_names[i], "RANK"))
                        snprintf(ti->rank, sizeof(ti->rank), "%s", ev.u.header.env_values[i]);
            }
            if (is_definition(ev.type))
                continue;
            ti->events++;
            ti->allocs += ev.type == VT_EV_ALLOC || ev.type == VT_EV_VMM_CREATE;
            ti->frees += ev.type == VT_EV_FREE || ev.type == VT_EV_VMM_RELEASE;
            ti->failed += ev.type == VT_EV_ALLOC_FAILED;
            ti->kernels += ev.type == VT_EV_KERNEL;
            continue;
        }
        if (rc == VT_ERR_CORRUPT)
            continue; /* the reader resumes at the next good frame */
        break;
    }
    if (rc < 0)
        snprintf(ti->err, sizeof(ti->err), "%s", vt_reader_errmsg(r));
    vt_reader_stats st;
    vt_reader_get_stats(r, &st);
    ti->complete = st.complete;
    vt_reader_free(r);
}

static void human_bytes(uint64_t b, char *out, size_t len)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int i = 0;
    while (v >= 1024 && i < 4) {
        v /= 1024;
        i++;
    }
    if (i == 0)
        snprintf(out, len, "%llu B", (unsigned long long)b);
    else
        snprintf(out, len, "%.1f %s", v, u[i]);
}

/* Traces larger than this in all are not read back for the summary (it
 * would take more than a few seconds): `vramtrace report` reads them. */
#define SUMMARY_READ_MAX_BYTES (1ull << 30)
/* From this size on, the summary says that it reads (about a second). */
#define SUMMARY_SAY_BYTES (256ull << 20)
/* Files listed one by one in the summary. */
#define SUMMARY_LIST_MAX 16

/* Print the summary of a recording to stderr: the trace files that are in
 * absdir now and were not in `before`. */
static void summarize(const char *shown_dir, const char *absdir, char **before, size_t nbefore)
{
    size_t nafter = 0;
    char **after = list_traces(absdir, &nafter);
    size_t nnew = 0, nold = 0;
    uint64_t tot_bytes = 0, tot_events = 0, tot_allocs = 0, tot_frees = 0, tot_failed = 0,
             tot_kernels = 0;
    int unreadable = 0, incomplete = 0;
    char path[PATH_MAX + 256], hb[32];

    for (size_t i = 0; i < nafter; i++) {
        if (in_list(before, nbefore, after[i])) {
            nold++;
            continue;
        }
        nnew++;
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", absdir, after[i]);
        if (stat(path, &st) == 0)
            tot_bytes += (uint64_t)st.st_size;
    }
    if (nnew == 0) {
        fprintf(stderr,
                PFX "no trace: no process of the command used CUDA (or every one failed to "
                    "start tracing; see the messages above)\n");
        free_list(after, nafter);
        return;
    }
    int count = tot_bytes <= SUMMARY_READ_MAX_BYTES;

    fprintf(stderr, PFX "%zu process%s traced; traces in %s/\n", nnew, nnew == 1 ? "" : "es",
            shown_dir);
    if (count && tot_bytes >= SUMMARY_SAY_BYTES) {
        /* a second or more of reading: say so before it starts */
        human_bytes(tot_bytes, hb, sizeof(hb));
        fprintf(stderr, PFX "reading %s of traces back to count their events...\n", hb);
    }
    size_t listed = 0;
    for (size_t i = 0; i < nafter; i++) {
        if (in_list(before, nbefore, after[i]))
            continue;
        snprintf(path, sizeof(path), "%s/%s", absdir, after[i]);
        struct stat st;
        uint64_t size = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
        human_bytes(size, hb, sizeof(hb));
        trace_info ti;
        memset(&ti, 0, sizeof(ti));
        if (count)
            read_trace(path, &ti);
        int show = listed++ < SUMMARY_LIST_MAX;
        if (!count) {
            if (show)
                fprintf(stderr, "  %-44s %9s\n", after[i], hb);
            continue;
        }
        if (!ti.read_ok) {
            unreadable++;
            if (show)
                fprintf(stderr, "  %-44s %9s  unreadable: %s\n", after[i], hb, ti.err);
            continue;
        }
        tot_events += ti.events;
        tot_allocs += ti.allocs;
        tot_frees += ti.frees;
        tot_failed += ti.failed;
        tot_kernels += ti.kernels;
        if (!ti.complete)
            incomplete++;
        if (!show)
            continue;
        char rank[40] = "";
        if (ti.rank[0])
            snprintf(rank, sizeof(rank), "  rank %s", ti.rank);
        fprintf(stderr, "  %-44s %9s  %10llu events%s%s\n", after[i], hb,
                (unsigned long long)ti.events, rank,
                ti.complete ? "" : "  incomplete (the process died?)");
    }
    if (listed > SUMMARY_LIST_MAX)
        fprintf(stderr, "  ... and %zu more\n", listed - SUMMARY_LIST_MAX);
    human_bytes(tot_bytes, hb, sizeof(hb));
    if (!count)
        fprintf(stderr, PFX "%s of traces (too large to count events here; the report reads "
                            "them)\n", hb);
    else
        fprintf(stderr,
                PFX "%llu events: %llu allocations, %llu frees, %llu failed allocations, "
                    "%llu kernels (%s)\n",
                (unsigned long long)tot_events, (unsigned long long)tot_allocs,
                (unsigned long long)tot_frees, (unsigned long long)tot_failed,
                (unsigned long long)tot_kernels, hb);
    if (incomplete)
        fprintf(stderr,
                PFX "%d trace%s without an end record: the process ended without closing it "
                    "(killed, or crashed); what was flushed is kept\n",
                incomplete, incomplete == 1 ? "" : "s");
    if (unreadable)
        fprintf(stderr, PFX "%d trace%s could not be read\n", unreadable,
                unreadable == 1 ? "" : "s");
    if (nold) {
        fprintf(stderr,
                PFX "%s/ also holds %zu trace%s from earlier runs, which `vramtrace report "
                    "%s` would merge in\n",
                shown_dir, nold, nold == 1 ? "" : "s", shown_dir);
        fprintf(stderr, PFX "next: vramtrace report");
        for (size_t i = 0; i < nafter; i++)
            if (!in_list(before, nbefore, after[i]))
                fprintf(stderr, " %s/%s", shown_dir, after[i]);
        fprintf(stderr, "\n");
    } else {
        fprintf(stderr, PFX "next: vramtrace report %s\n", shown_dir);
    }
    free_list(after, nafter);
}

/* ---- running the command ------------------------------------------------- */

/* Symbols that travel (issue 22): each new trace's native frames resolved
 * here, where the binaries are, into TRACE.sym beside it; all the traces at
 * once through the build-id symbol cache (issue 35), so a library is read
 * once per build id on this host. */
static void save_symbols(const char *absdir, char **before, size_t nbefore, int quiet, int use_cache,
                         vt_symbols_stats *st)
{
    size_t nafter = 0, n = 0, bad = 0;
    char **after = list_traces(absdir, &nafter);
    char **paths = malloc((nafter ? nafter : 1) * sizeof(*paths));
    memset(st, 0, sizeof(*st));
    for (size_t i = 0; paths && i < nafter; i++) {
        if (in_list(before, nbefore, after[i]))
            continue;
        size_t len = strlen(absdir) + strlen(after[i]) + 2;
        if (!(paths[n] = malloc(len)))
            break;
        snprintf(paths[n++], len, "%s/%s", absdir, after[i]);
    }
    if (n)
        bad = (size_t)vt_cli_symbolize(paths, n, NULL, use_cache, 1, PFX, st);
    if (n && !quiet)
        fprintf(stderr, PFX "native symbols saved beside %zu trace%s (*.zst.sym) for reports on other machines%s\n",
                n - bad, n - bad == 1 ? "" : "s", bad ? "; see the errors above" : "");
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
    free_list(after, nafter);
}

/* The holder walks (src/python/vramtrace_holders.py) write their time on
 * the W line of holders.PID*.txt: the files of this run are those changed
 * since it started.  The walk at exit runs in a child that outlives the
 * program: *running counts those still at it (holders.PID.pending locked). */
static double holder_walk_seconds(const char *absdir, time_t since, unsigned *nwalks, unsigned *running)
{
    double sum = 0;
    *nwalks = *running = 0;
    DIR *d = opendir(absdir);
    if (!d)
        return 0;
    struct dirent *de;
    char path[PATH_MAX + 256], line[256];
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (!strncmp(de->d_name, "holders.", 8) && l > 16 && !strcmp(de->d_name + l - 8, ".pending")) {
            snprintf(path, sizeof(path), "%s/%s", absdir, de->d_name);
            int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
            if (fd >= 0) {
                if (flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK)
                    (*running)++;
                close(fd);
            }
            continue;
        }
        if (strncmp(de->d_name, "holders.", 8) || l < 12 || strcmp(de->d_name + l - 4, ".txt"))
            continue;
        snprintf(path, sizeof(path), "%s/%s", absdir, de->d_name);
        struct stat st;
        if (stat(path, &st) || st.st_mtime < since)
            continue;
        FILE *f = fopen(path, "r");
        unsigned long long visited;
        double secs;
        if (!f)
            continue;
        if (fgets(line, sizeof(line), f) && fgets(line, sizeof(line), f) &&
            sscanf(line, "W %llu %lf", &visited, &secs) == 2) {
            sum += secs;
            (*nwalks)++;
        }
        fclose(f);
    }
    closedir(d);
    return sum;
}

static double secs_between(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* --timings: what `record` took before the command (finding torch, its
 * shim) and every step after it, one line (bench/whole.py,
 * bench/symcache.sh read it) */
static void print_timings(double before, double program, double holders, unsigned nwalks, unsigned running, double summary,
                          int symbolized, double symbolize, const vt_symbols_stats *st)
{
    fprintf(stderr, PFX "timings: before it %.3f s; program %.3f s (holder walks %.3f s, %u done, %u still running); "
            "after it: summary %.3f s",
            before, program, holders, nwalks, running, summary);
    if (symbolized)
        fprintf(stderr,
                ", symbolize %.3f s (%u module%s, %u read, %.1f MiB; %llu address%s, %llu from the cache; "
                "%u thread%s)",
                symbolize, st->nmodules, st->nmodules == 1 ? "" : "s", st->nmodules_opened,
                (double)st->opened_bytes / (1 << 20), (unsigned long long)st->naddrs,
                st->naddrs == 1 ? "" : "es", (unsigned long long)st->naddrs_cached, st->threads,
                st->threads == 1 ? "" : "s");
    else
        fprintf(stderr, ", symbolize off");
    fprintf(stderr, "; total after it %.3f s\n", summary + symbolize);
}

static const char *lookup_env(const char *name)
{
    return getenv(name);
}

/* Create the output directory; fills absdir (resolved) and shown (as the
 * user would type it).  `created` is 1 for a default directory made here:
 * it is removed again when it stays empty.  One named with -o is kept. */
static int make_outdir(const vt_record_opts *o, char *const *cmd, int ncmd, char *absdir,
                       char *shown, size_t len, int *created)
{
    *created = 0;
    if (o->outdir) {
        if (mkdir_p(o->outdir)) {
            fprintf(stderr, PFX "cannot create output directory %s: %s\n", o->outdir,
                    strerror(errno));
            return -1;
        }
        snprintf(shown, len, "%s", o->outdir);
    } else {
        char name[80], dir[160];
        vt_record_command_name(cmd, ncmd, name, sizeof(name));
        if (vt_record_default_dir(name, time(NULL), dir, sizeof(dir))) {
            fprintf(stderr, PFX "cannot name the output directory\n");
            return -1;
        }
        /* A second recording in the same second gets a suffix. */
        int made = 0;
        for (int k = 1; k < 100 && !made; k++) {
            if (k == 1)
                snprintf(shown, len, "%s", dir);
            else
                snprintf(shown, len, "%s.%d", dir, k);
            if (mkdir(shown, 0777) == 0)
                made = 1;
            else if (errno != EEXIST)
                break;
        }
        if (!made) {
            fprintf(stderr, PFX "cannot create output directory %s: %s\n", shown,
                    strerror(errno));
            return -1;
        }
        *created = 1;
    }
    /* Trim trailing slashes of what is shown (except "/"). */
    size_t sl = strlen(shown);
    while (sl > 1 && shown[sl - 1] == '/')
        shown[--sl] = 0;
    if (!realpath(shown, absdir)) {
        fprintf(stderr, PFX "cannot resolve %s: %s\n", shown, strerror(errno));
        return -1;
    }
    return 0;
}

int cmd_record(int argc, char **argv)
{
    vt_record_opts o;
    char err[256];
    int status = 1;
    char **before = NULL;
    size_t nbefore = 0;
    vt_record_plan plan;
    memset(&plan, 0, sizeof(plan));
    struct timespec t_start;
    clock_gettime(CLOCK_MONOTONIC, &t_start);

    if (vt_record_parse_args(&o, argc, argv, err, sizeof(err))) {
        fprintf(stderr, PFX "%s\n", err);
        usage(stderr);
        return 2;
    }
    if (o.help) {
        usage(stdout);
        return 0;
    }
    if (o.cmd_index >= argc) {
        fprintf(stderr, PFX "no command given\n");
        usage(stderr);
        return 2;
    }
    char **cmd = argv + o.cmd_index;
    int ncmd = argc - o.cmd_index;

    /* The library: VRAMTRACE_LIB, else beside this binary. */
    char exe[PATH_MAX], lib[PATH_MAX], tried[2048];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[el > 0 ? el : 0] = 0;
    const char *override = getenv("VRAMTRACE_LIB");
    if (vt_record_find_library(exe, override, lib, sizeof(lib), tried, sizeof(tried))) {
        if (override && *override)
            fprintf(stderr, PFX "VRAMTRACE_LIB=%s: no such library\n", override);
        else
            fprintf(stderr,
                    PFX "libvramtrace.so not found; looked at:\n%s\n" PFX
                        "build it (it needs the CUDA toolkit with CUPTI), install it with "
                        "`cmake --install`, or set VRAMTRACE_LIB\n",
                    tried);
        return 1;
    }

    char absdir[PATH_MAX], shown[PATH_MAX];
    int created = 0;
    if (make_outdir(&o, cmd, ncmd, absdir, shown, sizeof(shown), &created))
        return 1;
    before = list_traces(absdir, &nbefore);

    int rc = vt_record_plan_env(&plan, &o, lib, absdir, lookup_env);
    if (rc) {
        fprintf(stderr, PFX "cannot prepare the environment: %s\n", vt_strerror(rc));
        goto cleanup;
    }
    if (plan.warn[0]) {
        /* One "warning:" prefix per line. */
        char *line = plan.warn, *nl;
        do {
            nl = strchr(line, '\n');
            fprintf(stderr, PFX "warning: %.*s\n", nl ? (int)(nl - line) : (int)strlen(line),
                    line);
            line = nl ? nl + 1 : NULL;
        } while (line);
    }
    for (int i = 0; i < plan.n; i++)
        if (setenv(plan.vars[i].name, plan.vars[i].value, 1)) {
            fprintf(stderr, PFX "setenv %s: %s\n", plan.vars[i].name, strerror(errno));
            goto cleanup;
        }
    /* PyTorch's default allocator: tensor events through the shim, built
     * for the program's torch on first use (record_torch.c); a failure
     * goes to the library as "!reason", which it notes in the trace. */
    if (o.tensor_events && !o.tensors && !getenv(VT_ENV_TORCH_SHIM)) {
        char py[PATH_MAX], shim[PATH_MAX], why[PATH_MAX + 128];
        vt_torch_python_of(cmd[0], py, sizeof(py));
        pid_t builder = 0;
        int sr = vt_record_torch_shim(py, o.quiet, 1, &builder, shim, sizeof(shim), why, sizeof(why));
        if (sr < 0) {
            fprintf(stderr, PFX "warning: PyTorch tensor events off: %s\n", why);
            char bang[PATH_MAX + 130];
            snprintf(bang, sizeof(bang), "!%s", why);
            setenv(VT_ENV_TORCH_SHIM, bang, 1);
        } else if (sr > 0) {
            setenv(VT_ENV_TORCH_SHIM, shim, 1);
            if (sr == 2) /* being built beside the program: the library waits for it */
                setenv(VT_ENV_TORCH_SHIM_WAIT, "300", 1);
        }
    }
    /* Python programs: who holds the memory, walked at exit (src/python,
     * issue 25) by our sitecustomize first on PYTHONPATH, which runs the
     * program's own; holders.PID.txt goes beside the traces.  The same
     * directory holds CuPy's hook and the pytest plugin (issue 37). */
    if (o.holders) {
        char pydir[PATH_MAX], why[PATH_MAX + 64];
        if (vt_record_python_dir(pydir, sizeof(pydir), why, sizeof(why))) {
            fprintf(stderr, PFX "warning: no holder walk: %s\n", why);
        } else {
            const char *old_pp = getenv("PYTHONPATH");
            size_t n = strlen(pydir) + (old_pp ? strlen(old_pp) : 0) + 2;
            char *pp = malloc(n);
            if (pp) {
                snprintf(pp, n, "%s%s%s", pydir, old_pp && *old_pp ? ":" : "", old_pp && *old_pp ? old_pp : "");
                setenv("PYTHONPATH", pp, 1);
                free(pp);
                setenv("VRAMTRACE_HOLDERS", absdir, 1);
                /* the pytest plugin: loaded by pytest, inert without --vramtrace */
                char plugins[4096];
                if (vt_record_pytest_plugins(getenv("PYTEST_PLUGINS"), plugins, sizeof(plugins)) == 0)
                    setenv("PYTEST_PLUGINS", plugins, 1);
                if (o.holders_signal)
                    setenv("VRAMTRACE_HOLDERS_SIGNAL", o.holders_signal, 1);
            }
        }
    }
    if (o.timings)
        setenv("VRAMTRACE_TIMINGS", "1", 1); /* the library's own line, at the program's exit */
    if (!o.quiet)
        fprintf(stderr, PFX "tracing %s into %s/\n", cmd[0], shown);

    /* Run it.  The forwarded signals are blocked across fork so that none
     * is lost between fork() and g_child being set; an exec failure comes
     * back through a close-on-exec pipe. */
    /* --live on a terminal: the view takes the screen, so the command's
     * output goes to a file beside the traces (said before and after) */
    int live_tty = o.live && isatty(1);
    char logpath[PATH_MAX + 16] = "";
    int logfd = -1;
    if (live_tty) {
        snprintf(logpath, sizeof(logpath), "%s/output.log", absdir);
        logfd = open(logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (logfd < 0) {
            fprintf(stderr, PFX "%s: %s; no live view\n", logpath, strerror(errno));
            live_tty = 0;
            o.live = 0;
        } else {
            fprintf(stderr, PFX "the command's output goes to %s while the live view is up\n", logpath);
        }
    }
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC)) {
        fprintf(stderr, PFX "pipe: %s\n", strerror(errno));
        goto cleanup;
    }
    sigset_t fwd, old;
    sigemptyset(&fwd);
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaddset(&fwd, forwarded_signals[i]);
    install_forwarding();
    sigprocmask(SIG_BLOCK, &fwd, &old);
    struct timespec t0, t1, t2, t3;
    time_t started = time(NULL);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, PFX "fork: %s\n", strerror(errno));
        sigprocmask(SIG_SETMASK, &old, NULL);
        close(pfd[0]);
        close(pfd[1]);
        goto cleanup;
    }
    if (pid == 0) {
        /* The child: default dispositions for what we catch (exec resets
         * them anyway), the original mask, then the command. */
        for (size_t i = 0; i < N_FORWARDED; i++)
            signal(forwarded_signals[i], SIG_DFL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        close(pfd[0]);
        if (logfd >= 0) {
            int nul = open("/dev/null", O_RDONLY);
            if (nul >= 0)
                dup2(nul, 0);
            dup2(logfd, 1);
            dup2(logfd, 2);
        }
        execvp(cmd[0], cmd);
        int e = errno;
        ssize_t w = write(pfd[1], &e, sizeof(e));
        (void)w;
        _exit(e == ENOENT ? 127 : 126);
    }
    g_child = pid;
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(pfd[1]);

    int exec_errno = 0;
    ssize_t got;
    do
        got = read(pfd[0], &exec_errno, sizeof(exec_errno));
    while (got < 0 && errno == EINTR);
    close(pfd[0]);

    int ws = 0;
    if (logfd >= 0)
        close(logfd);
    if (o.live && !got) { /* the command runs: watch its traces until it ends */
        vt_top_watch(absdir, pid, &ws);
    } else {
        while (waitpid(pid, &ws, 0) < 0) {
            if (errno != EINTR) {
                fprintf(stderr, PFX "waitpid: %s\n", strerror(errno));
                ws = 1 << 8;
                break;
            }
        }
    }
    g_child = 0;
    clock_gettime(CLOCK_MONOTONIC, &t1);

    if (got == (ssize_t)sizeof(exec_errno)) {
        if (exec_errno == ENOENT)
            fprintf(stderr, PFX "%s: command not found\n", cmd[0]);
        else
            fprintf(stderr, PFX "%s: cannot execute: %s\n", cmd[0], strerror(exec_errno));
        status = exec_errno == ENOENT ? 127 : 126;
        goto cleanup;
    }

    status = vt_record_exit_status(ws);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (WIFSIGNALED(ws))
        fprintf(stderr, PFX "%s killed by signal %d (%s) after %.1f s; exit status %d\n",
                cmd[0], WTERMSIG(ws), strsignal(WTERMSIG(ws)), secs, status);
    else
        fprintf(stderr, PFX "%s exited with status %d after %.1f s\n", cmd[0], status, secs);
    /* From here on a signal ends vramtrace as it normally would (a long
     * summary can be interrupted). */
    for (size_t i = 0; i < N_FORWARDED; i++)
        signal(forwarded_signals[i], SIG_DFL);
    if (live_tty)
        fprintf(stderr, PFX "the command's output: %s\n", logpath);
    summarize(shown, absdir, before, nbefore);
    clock_gettime(CLOCK_MONOTONIC, &t2);
    vt_symbols_stats sst;
    memset(&sst, 0, sizeof(sst));
    if (o.symbolize)
        save_symbols(absdir, before, nbefore, o.quiet, o.symbol_cache, &sst);
    clock_gettime(CLOCK_MONOTONIC, &t3);
    const char *tenv = getenv("VRAMTRACE_TIMINGS");
    if (o.timings || (tenv && *tenv && strcmp(tenv, "0"))) {
        unsigned nwalks, running;
        double hs = holder_walk_seconds(absdir, started - 1, &nwalks, &running);
        print_timings(secs_between(&t_start, &t0), secs, hs, nwalks, running, secs_between(&t1, &t2), o.symbolize, secs_between(&t2, &t3),
                      &sst);
    }

cleanup:
    /* A default directory that nothing was written to goes away again
     * (rmdir fails, as wanted, when it holds anything). */
    if (created)
        rmdir(absdir);
    vt_record_plan_free(&plan);
    free_list(before, nbefore);
    return status;
}
