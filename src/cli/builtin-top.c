/* builtin-top.c - `vramtrace top [--once] [--interval S] TRACE|DIR`: the
 * live view of traces while they are written (vt_live.h), one screen
 * redrawn every interval, and `record --live`'s view of its command
 * (vt_top_watch).  Plain ANSI, no curses: the alternate screen, cursor
 * home, clear to the end of each line.  The terminal is put in
 * non-canonical mode without echo (signals stay on: Ctrl-C is SIGINT) and
 * restored on exit, on SIGINT/SIGTERM/SIGHUP and around SIGTSTP.  Every
 * name from a trace is printed with control characters escaped.
 * Touches: the traces (read), stdout, stdin and the terminal. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "builtin.h"
#include "vt_analyze.h"
#include "vt_error.h"
#include "vt_live.h"

#define PFX "vramtrace top: "
#define MAX_COLS 400
#define MAX_ROWS 200
/* events read per file and refresh: a large trace is caught up over a few
 * refreshes, the screen and the keys stay alive meanwhile */
#define POLL_EVENTS (4u << 20)

static void top_usage(FILE *f)
{
    fprintf(f, "usage: vramtrace top [options] TRACE|DIR\n"
               "\n"
               "The live view of traces being written (a running `vramtrace record`'s\n"
               "directory, or one trace): per process and device PyTorch's allocated vs\n"
               "reserved (or live bytes), the steps so far and the time per step, the\n"
               "growing call sites with their Python line, rate per step and holder, and\n"
               "the last failed allocation.  Reads only what was appended since the last\n"
               "refresh, the unfinished last zstd frame included.\n"
               "\n"
               "  --once               print one screen and exit (plain text when stdout is\n"
               "                       not a terminal: 80x24, or COLUMNS x LINES)\n"
               "  --interval S         seconds between refreshes (default 1; 0.1 .. 3600)\n"
               "  --sort growth|live|rate\n"
               "                       order of the call sites (default growth)\n"
               "  -h, --help           this text\n"
               "\n"
               "keys: q quit, Tab / Right / n next process, Left / p previous, 1-9 process,\n"
               "s next sort order.  When stdout is not a terminal (and without --once) a\n"
               "plain screen is printed every interval until every trace has ended.\n"
               "\n"
               "exit status: 0; 1 when TRACE|DIR does not exist; 2 usage.\n");
}

/* ---- text ---------------------------------------------------------------- */

typedef struct {
    int cols, rows;
    int n; /* lines written */
    char line[MAX_ROWS][MAX_COLS * 4 + 1];
} screen;

/* Escape control characters (C0, DEL, C1) and bytes that are not UTF-8:
 * a trace is untrusted input, and a name must not drive the terminal. */
static void esc(const char *s, char *out, size_t len)
{
    size_t w = 0;
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p && w + 5 < len) {
        unsigned c = *p;
        int n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        int ok = n > 0;
        for (int k = 1; ok && k < n; k++)
            ok = (p[k] & 0xC0) == 0x80;
        if (ok && n == 2 && c == 0xC2 && p[1] < 0xA0)
            ok = 0; /* U+0080..U+009F: C1 controls (CSI among them) */
        if (ok && n == 2 && c < 0xC2)
            ok = 0; /* overlong */
        if (ok && n == 1 && (c < 0x20 || c == 0x7F))
            ok = 0;
        if (!ok) {
            w += (size_t)snprintf(out + w, len - w, "\\x%02x", c);
            p++;
            continue;
        }
        if (w + (size_t)n >= len)
            break;
        memcpy(out + w, p, (size_t)n);
        w += (size_t)n;
        p += n;
    }
    out[w] = 0;
}

/* Whether the locale's characters are UTF-8 (an ellipsis can be drawn). */
static int utf8_locale(void)
{
    const char *v = getenv("LC_ALL");
    if (!v || !*v)
        v = getenv("LC_CTYPE");
    if (!v || !*v)
        v = getenv("LANG");
    return v && (strstr(v, "UTF-8") || strstr(v, "utf8") || strstr(v, "UTF8") || strstr(v, "utf-8"));
}

/* Cut a line at `cols` display columns (a UTF-8 character is one); a line
 * that was cut ends in an ellipsis ("..." where the locale is not UTF-8),
 * so that a cut number never reads as a smaller one ("peak 27"). */
static void fit(char *s, int cols)
{
    int c = 0;
    char *at[4] = {NULL, NULL, NULL, NULL}; /* the starts of the last 3 characters kept */
    for (char *p = s; *p; p++) {
        if (((unsigned char)*p & 0xC0) == 0x80)
            continue;
        if (c++ == cols) {
            if (utf8_locale() && at[0] && strlen(at[0]) >= 3) /* room for 3 bytes and the NUL */
                memcpy(at[0], "\xe2\x80\xa6", 4); /* over the last character kept */
            else if (at[2])
                memcpy(at[2], "...", 4);
            else
                *p = 0;
            return;
        }
        at[2] = at[1];
        at[1] = at[0];
        at[0] = p;
    }
}

static void put(screen *sc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(screen *sc, const char *fmt, ...)
{
    if (sc->n >= sc->rows)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sc->line[sc->n], sizeof(sc->line[0]), fmt, ap);
    va_end(ap);
    fit(sc->line[sc->n], sc->cols);
    sc->n++;
}

static const char *bytes(char *b, double v)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    double a = fabs(v);
    while (a >= 1024 && i < 4) {
        a /= 1024;
        v /= 1024;
        i++;
    }
    if (i == 0)
        snprintf(b, 24, "%.0f B", v);
    else
        snprintf(b, 24, "%.*f %s", fabs(v) < 10 ? 2 : fabs(v) < 100 ? 1 : 0, v, u[i]);
    return b;
}

static const char *secs(char *b, double ns)
{
    if (ns >= 1e9)
        snprintf(b, 24, "%.2f s", ns / 1e9);
    else if (ns >= 1e6)
        snprintf(b, 24, "%.1f ms", ns / 1e6);
    else
        snprintf(b, 24, "%.0f us", ns / 1e3);
    return b;
}

static const char *const sort_names[VT_LIVE_SORT__COUNT] = {"growth", "live", "rate"};

typedef struct {
    vt_live *lv;
    const char *what; /* the path followed, as given */
    unsigned cur;     /* the process shown */
    int sort;
    double interval;
    int keys; /* keys are read (a terminal) */
} top_state;

/* One screen of the view into sc. */
static void render(top_state *t, screen *sc)
{
    char e1[1024], e2[1024], b1[24], b2[24], b3[24], b4[24];
    unsigned np = vt_live_nprocs(t->lv);
    sc->n = 0;
    esc(t->what, e1, sizeof(e1));
    /* the path's tail where the line is too narrow for all of it: the
     * trace's or the directory's own name stays in sight */
    char head[160];
    int hw = snprintf(head, sizeof(head), "vramtrace top: %u process%s, every %.1f s, sort %s: ", np, np == 1 ? "" : "es",
                      t->interval, sort_names[t->sort]);
    size_t plen = 0; /* display columns of the path */
    for (const char *q = e1; *q; q++)
        plen += ((unsigned char)*q & 0xC0) != 0x80;
    const char *tail = e1;
    if (hw > 0 && sc->cols > hw + 8 && plen > (size_t)(sc->cols - hw)) {
        size_t drop = plen - (size_t)(sc->cols - hw) + 3; /* + "..." */
        for (size_t c = 0; *tail && c < drop; tail++)
            c += ((unsigned char)tail[1] & 0xC0) != 0x80;
        put(sc, "%s...%s", head, tail);
    } else
        put(sc, "%s%s", head, e1);
    if (!np) {
        put(sc, "no trace yet");
        return;
    }
    if (t->cur >= np)
        t->cur = np - 1;
    if (np > 1) {
        char row[MAX_COLS * 4];
        size_t w = 0;
        for (unsigned i = 0; i < np && w + 64 < sizeof(row); i++) {
            vt_live_proc q;
            vt_live_proc_get(t->lv, i, &q);
            esc(q.program ? q.program : "?", e2, 48);
            w += (size_t)snprintf(row + w, sizeof(row) - w, "%s%s%u %s:%u%s", i ? "  " : "",
                                  i == t->cur ? "[" : " ", i + 1, e2, q.pid, i == t->cur ? "]" : " ");
        }
        put(sc, "%s", row);
    }
    vt_live_proc p;
    vt_live_proc_get(t->lv, t->cur, &p);
    esc(p.program ? p.program : "(no header yet)", e1, sizeof(e1));
    esc(p.host ? p.host : "?", e2, 256);
    put(sc, "%u %s pid %u on %s: %s, %.1f s traced, %s read, %llu records", t->cur + 1, e1, p.pid, e2,
        p.state == VT_LIVE_ENDED    ? "ended"
        : p.state == VT_LIVE_FAILED ? "stopped (read error)"
                                    : "no End yet",
        p.seconds, bytes(b1, (double)p.bytes), (unsigned long long)p.records);
    if (p.error) {
        esc(p.error, e1, sizeof(e1));
        put(sc, "  read error: %s", e1);
    }
    if (!p.ndevices)
        put(sc, p.state == VT_LIVE_READING ? "  no GPU memory yet" : "  no GPU memory");
    for (unsigned d = 0; d < p.ndevices; d++) {
        const vt_live_device *v = &p.dev[d];
        esc(v->name && v->name[0] ? v->name : "?", e1, 128);
        char tot[48] = "";
        if (v->total)
            snprintf(tot, sizeof(tot), " of %s", bytes(b4, (double)v->total));
        /* the device, then PyTorch's two numbers on a line of their own:
         * within 80 columns, no number cut */
        put(sc, "  dev %u %s: live %s, peak %s%s", v->index, e1, bytes(b1, (double)v->live), bytes(b2, (double)v->peak),
            tot);
        if (v->allocated >= 0)
            put(sc, "    PyTorch allocated %s / reserved %s", bytes(b1, (double)v->allocated),
                bytes(b2, (double)v->reserved));
    }
    if (p.steps) {
        esc(p.step_source ? p.step_source : "", e1, 128);
        put(sc, "  steps: %llu (%s), %s per step", (unsigned long long)p.steps, e1, secs(b1, p.step_ns));
    } else {
        put(sc, "  steps: none%s (no repeating NVTX range or kernel sequence)", p.state == VT_LIVE_READING ? " yet" : "");
    }
    if (p.failed) {
        char rt[48] = "";
        if (p.retries)
            snprintf(rt, sizeof(rt), " (+%llu retries)", (unsigned long long)p.retries);
        esc(p.fail_error ? p.fail_error : "", e2, 128);
        put(sc, "  failed allocations: %llu%s; the last: %s on device %u at %.3f s%s%s",
            (unsigned long long)p.failed, rt, bytes(b1, (double)p.fail_size), p.fail_device, p.fail_at,
            e2[0] ? ", " : "", e2);
        if (p.fail_site[0] && sc->rows >= 20) {
            esc(p.fail_site, e1, sizeof(e1));
            put(sc, "    at %s", e1);
        }
    } else if (p.probes) {
        put(sc, "  failed allocations: none (%llu probe%s)", (unsigned long long)p.probes, p.probes == 1 ? "" : "s");
    } else {
        put(sc, "  failed allocations: none");
    }
    int room = sc->rows - sc->n - 1 - (t->keys ? 1 : 0);
    if (room < 1)
        return;
    /* the rate per second where the width allows: the site keeps 28 columns */
    int wide = sc->cols >= 100;
    if (wide)
        put(sc, "%9s %6s %10s %9s %11s %3s  %s", "LIVE", "BLOCKS", "GROWN", "PER STEP", "PER SECOND", "DEV",
            "CALL SITE");
    else
        put(sc, "%9s %6s %10s %9s %3s  %s", "LIVE", "BLOCKS", "GROWN", "PER STEP", "DEV", "CALL SITE");
    static vt_live_site site[MAX_ROWS];
    unsigned ns =
        vt_live_sites(t->lv, t->cur, t->sort, site, (unsigned)room > MAX_ROWS ? MAX_ROWS : (unsigned)room);
    if (!ns)
        put(sc, "%9s", "-");
    for (unsigned i = 0; i < ns && sc->n < sc->rows - (t->keys ? 1 : 0); i++) {
        const vt_live_site *s = &site[i];
        char grown[32] = "-", step[24] = "-", rate[40] = "-";
        if (s->growing) {
            snprintf(grown, sizeof(grown), "+%s", bytes(b1, (double)s->grown));
            if (s->per_step >= 0)
                bytes(step, s->per_step);
            snprintf(rate, sizeof(rate), "%s/s", bytes(b2, s->per_s));
        }
        esc(s->site[0] ? s->site : "(no stack)", e1, sizeof(e1));
        if (wide)
            put(sc, "%9s %6lld %10s %9s %11s %3u  %s", bytes(b3, (double)s->live_bytes),
                (long long)s->live_count, grown, step, rate, s->device, e1);
        else
            put(sc, "%9s %6lld %10s %9s %3u  %s", bytes(b3, (double)s->live_bytes), (long long)s->live_count,
                grown, step, s->device, e1);
        /* who holds it, on its own line, while there is room for the rows above it */
        if (s->holder && sc->n < sc->rows - (t->keys ? 1 : 0) - 1) {
            esc(s->holder, e2, sizeof(e2));
            put(sc, "%*s held by %s", 10, "", e2);
        }
    }
    if (t->keys) {
        while (sc->n < sc->rows - 1)
            put(sc, "%s", "");
        put(sc, "q quit  Tab/Right/Left/1-9 process  s sort (%s)", sort_names[t->sort]);
    }
}

/* ---- the terminal --------------------------------------------------------- */

static struct termios g_saved;
static int g_raw = 0, g_alt = 0, g_tty_fd = -1;
static volatile sig_atomic_t g_quit = 0, g_stop = 0, g_resize = 0;

static void term_write(const char *s)
{
    size_t n = strlen(s);
    while (n) {
        ssize_t w = write(g_tty_fd >= 0 ? g_tty_fd : 1, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void term_leave(void)
{
    if (g_alt) {
        term_write("\033[?25h\033[?1049l");
        g_alt = 0;
    }
    if (g_raw) {
        tcsetattr(0, TCSAFLUSH, &g_saved);
        g_raw = 0;
    }
}

static void term_enter(int keys)
{
    static int registered;
    if (!registered++)
        atexit(term_leave); /* whatever way out, the terminal as it was */
    if (keys && tcgetattr(0, &g_saved) == 0) {
        struct termios t = g_saved;
        t.c_lflag &= (tcflag_t) ~(ICANON | ECHO); /* ISIG stays: Ctrl-C is SIGINT */
        t.c_cc[VMIN] = 0;
        t.c_cc[VTIME] = 0;
        if (tcsetattr(0, TCSAFLUSH, &t) == 0)
            g_raw = 1;
    }
    term_write("\033[?1049h\033[?25l\033[2J");
    g_alt = 1;
}

static void on_quit(int sig)
{
    (void)sig;
    g_quit = 1;
}

static void on_tstp(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void on_winch(int sig)
{
    (void)sig;
    g_resize = 1;
}

static void install(int sig, void (*fn)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = fn;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL); /* no SA_RESTART: the wait ends at once */
}

static void term_size(int fd, int *cols, int *rows)
{
    struct winsize ws;
    *cols = 80;
    *rows = 24;
    if (fd >= 0 && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row) {
        *cols = ws.ws_col;
        *rows = ws.ws_row;
    } else {
        const char *c = getenv("COLUMNS"), *l = getenv("LINES");
        if (c && atoi(c) >= 20)
            *cols = atoi(c);
        if (l && atoi(l) >= 5)
            *rows = atoi(l);
    }
    if (*cols > MAX_COLS)
        *cols = MAX_COLS;
    if (*rows > MAX_ROWS)
        *rows = MAX_ROWS;
}

static void draw_tty(top_state *t, screen *sc, int fd)
{
    term_size(fd, &sc->cols, &sc->rows);
    render(t, sc);
    size_t cap = (size_t)sc->rows * (sizeof(sc->line[0]) + 8) + 16;
    char *buf = malloc(cap);
    if (!buf)
        return;
    size_t w = (size_t)snprintf(buf, cap, "\033[H");
    for (int i = 0; i < sc->rows; i++)
        w += (size_t)snprintf(buf + w, cap - w, "%s\033[K%s", i < sc->n ? sc->line[i] : "",
                              i + 1 < sc->rows ? "\r\n" : "");
    term_write(buf);
    free(buf);
}

static void print_plain(top_state *t, screen *sc, FILE *f)
{
    term_size(-1, &sc->cols, &sc->rows);
    render(t, sc);
    for (int i = 0; i < sc->n; i++)
        fprintf(f, "%s\n", sc->line[i]);
    fflush(f);
}

/* A key (or an escape sequence) read from stdin: 1 to go on, 0 to quit. */
static int handle_keys(top_state *t)
{
    unsigned char k[16];
    ssize_t n = read(0, k, sizeof(k));
    unsigned np = vt_live_nprocs(t->lv);
    for (ssize_t i = 0; i < n; i++) {
        if (k[i] == 'q' || k[i] == 'Q')
            return 0;
        if (k[i] == '\t' || k[i] == 'n' ||
            (k[i] == 0x1b && i + 2 < n && k[i + 1] == '[' && k[i + 2] == 'C')) {
            if (np)
                t->cur = (t->cur + 1) % np;
        } else if (k[i] == 'p' || (k[i] == 0x1b && i + 2 < n && k[i + 1] == '[' && k[i + 2] == 'D') ||
                   (k[i] == 0x1b && i + 2 < n && k[i + 1] == '[' && k[i + 2] == 'Z')) {
            if (np)
                t->cur = (t->cur + np - 1) % np;
        } else if (k[i] >= '1' && k[i] <= '9') {
            if ((unsigned)(k[i] - '1') < np)
                t->cur = (unsigned)(k[i] - '1');
        } else if (k[i] == 's' || k[i] == 'S') {
            t->sort = (t->sort + 1) % VT_LIVE_SORT__COUNT;
        }
        if (k[i] == 0x1b && i + 2 < n && k[i + 1] == '[')
            i += 2;
    }
    return 1;
}

static int all_ended(vt_live *lv)
{
    unsigned np = vt_live_nprocs(lv);
    for (unsigned i = 0; i < np; i++) {
        vt_live_proc p;
        vt_live_proc_get(lv, i, &p);
        if (p.state == VT_LIVE_READING)
            return 0;
    }
    return np > 0;
}

/* The loop of the view: refresh every interval until q, a signal, the
 * child's end (child > 0; its status in *ws) or, when not drawing on a
 * terminal, the end of every trace.  out: 1 = the terminal (alternate
 * screen), 0 = plain screens on `plain`. */
static int view_loop(top_state *t, int tty, FILE *plain, pid_t child, int *ws)
{
    static screen sc;
    int keys = tty && isatty(0);
    t->keys = keys;
    if (tty) {
        if (child <= 0) { /* record --live keeps its own: they pass signals on to the command */
            install(SIGINT, on_quit);
            install(SIGTERM, on_quit);
            install(SIGHUP, on_quit);
        }
        install(SIGTSTP, on_tstp);
        install(SIGWINCH, on_winch);
        term_enter(keys);
    }
    int child_done = 0, on_time = 1;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (;;) {
        if (vt_live_poll(t->lv, POLL_EVENTS) == VT_ERR_NOMEM) {
            term_leave();
            fprintf(stderr, PFX "out of memory\n");
            return 1;
        }
        if (child > 0 && !child_done && waitpid(child, ws, WNOHANG) == child)
            child_done = 1;
        if (child_done) /* its last writes: read them once more */
            vt_live_poll(t->lv, 0);
        if (tty)
            draw_tty(t, &sc, g_tty_fd >= 0 ? g_tty_fd : 1);
        else
            print_plain(t, &sc, plain);
        if (child_done || (!tty && child <= 0 && all_ended(t->lv)))
            break;
        if (!tty) /* screens apart */
            fputc('\n', plain);
        /* wait for the next refresh, a key or a signal (after which the
         * screen is redrawn at once, and the refreshes keep their pace) */
        if (on_time) {
            next.tv_nsec += (long)(fmod(t->interval, 1.0) * 1e9);
            next.tv_sec += (time_t)t->interval + next.tv_nsec / 1000000000L;
            next.tv_nsec %= 1000000000L;
        }
        on_time = 0;
        for (;;) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            long ms = (long)(next.tv_sec - now.tv_sec) * 1000 + (next.tv_nsec - now.tv_nsec) / 1000000;
            if (ms <= 0) {
                next = now;
                on_time = 1;
                break;
            }
            struct pollfd pf = {.fd = 0, .events = POLLIN};
            int r = poll(&pf, keys ? 1 : 0, (int)ms);
            if (g_quit)
                goto out;
            if (g_stop) { /* Ctrl-Z: the terminal as it was, then stop for real */
                g_stop = 0;
                term_leave();
                signal(SIGTSTP, SIG_DFL);
                raise(SIGTSTP);
                install(SIGTSTP, on_tstp); /* continued */
                term_enter(keys);
                break;
            }
            if (g_resize) {
                g_resize = 0;
                break;
            }
            if (r > 0 && keys) {
                if (!handle_keys(t))
                    goto out;
                break;
            }
            if (child > 0 && !child_done && waitpid(child, ws, WNOHANG) == child) {
                child_done = 1;
                break;
            }
        }
    }
out:
    if (tty)
        term_leave();
    if (child > 0 && !child_done) /* the view closed: the command runs on */
        while (waitpid(child, ws, 0) < 0 && errno == EINTR)
            ;
    return 0;
}

static int parse_interval(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= 0.1 && v <= 3600))
        return -1;
    *out = v;
    return 0;
}

int cmd_top(int argc, char **argv)
{
    int once = 0;
    const char *path = NULL;
    top_state t;
    memset(&t, 0, sizeof(t));
    t.interval = 1.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--once")) {
            once = 1;
        } else if (!strcmp(a, "--interval") && i + 1 < argc) {
            if (parse_interval(argv[++i], &t.interval)) {
                fprintf(stderr, PFX "--interval: seconds from 0.1 to 3600, not '%s'\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--sort") && i + 1 < argc) {
            const char *v = argv[++i];
            t.sort = -1;
            for (int k = 0; k < VT_LIVE_SORT__COUNT; k++)
                if (!strcmp(v, sort_names[k]))
                    t.sort = k;
            if (t.sort < 0) {
                fprintf(stderr, PFX "--sort: growth, live or rate, not '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            top_usage(stdout);
            return 0;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, PFX "unknown option '%s'\n", a);
            top_usage(stderr);
            return 2;
        } else if (!path) {
            path = a;
        } else {
            fprintf(stderr, PFX "one TRACE or DIR only\n");
            return 2;
        }
    }
    if (!path) {
        top_usage(stderr);
        return 2;
    }
    int rc = vt_live_open(&t.lv, path);
    if (rc) {
        fprintf(stderr, PFX "%s: %s\n", path,
                rc == VT_ERR_NOT_FOUND ? "no such file or directory" : vt_strerror(rc));
        return 1;
    }
    t.what = path;
    int status = 0;
    if (once) {
        /* everything there is now, then one screen */
        int64_t n;
        while ((n = vt_live_poll(t.lv, 0)) > 0)
            ;
        static screen sc;
        if (n == VT_ERR_NOMEM) {
            fprintf(stderr, PFX "out of memory\n");
            status = 1;
        } else if (isatty(1)) {
            term_size(1, &sc.cols, &sc.rows);
            render(&t, &sc);
            for (int i = 0; i < sc.n; i++)
                printf("%s\n", sc.line[i]);
        } else {
            print_plain(&t, &sc, stdout);
        }
        /* a file that could not be read: its error on stderr as well, and
         * the status report gives (the screen says it too) */
        for (unsigned i = 0; !status && i < vt_live_nprocs(t.lv); i++) {
            vt_live_proc q;
            vt_live_proc_get(t.lv, i, &q);
            if (q.state == VT_LIVE_FAILED && q.error) {
                char e1[600];
                esc(q.error, e1, sizeof(e1));
                fprintf(stderr, PFX "%s\n", e1);
                status = 1;
            }
        }
    } else {
        status = view_loop(&t, isatty(1), stdout, 0, NULL);
    }
    vt_live_free(t.lv);
    return status;
}

/* record --live (builtin-record.c): the view of `dir` while `child` runs,
 * on the terminal when stdout is one, else a plain screen on stderr every
 * interval; returns when the child has ended, its wait status in *ws.
 * 0, or 1 when the view could not run (the child is then waited for). */
int vt_top_watch(const char *dir, pid_t child, int *ws)
{
    top_state t;
    memset(&t, 0, sizeof(t));
    t.interval = 1.0;
    t.what = dir;
    int rc = vt_live_open(&t.lv, dir);
    if (rc) {
        while (waitpid(child, ws, 0) < 0 && errno == EINTR)
            ;
        return 1;
    }
    int tty = isatty(1);
    if (tty)
        g_tty_fd = 1;
    rc = view_loop(&t, tty, stderr, child, ws);
    vt_live_free(t.lv);
    return rc;
}
