/* test_record_cli.c - `vramtrace record` end to end, without a GPU: the
 * real binary runs tests/cli/record_child (which never loads CUDA, so the
 * library named by VRAMTRACE_LIB is never loaded: an empty file stands in
 * for it).  Checks the environment the command gets, exit statuses and
 * signals passed through, Ctrl-C on a terminal, errors, the output
 * directory and the summary.
 *
 * usage: test_record_cli VRAMTRACE RECORD_CHILD */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "record_env.h"

static const char *g_vramtrace, *g_child;
static char g_tmp[PATH_MAX];     /* per-test scratch directory */
static char g_fakelib[PATH_MAX + 32];

#define OUT_MAX 65536
static char g_out[OUT_MAX], g_err[OUT_MAX];

static void slurp(const char *path, char *buf, size_t len)
{
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = 0;
    fclose(f);
}

/* Run argv (NULL-terminated) in cwd with env changes ("NAME=V" sets,
 * "NAME" unsets); stdout/stderr into g_out/g_err.  Returns the wait status;
 * kills the run after 30 s. */
static int run(const char *cwd, const char *const *env, const char *const *argv)
{
    char outp[PATH_MAX + 16], errp[PATH_MAX + 16];
    snprintf(outp, sizeof(outp), "%s/.out", g_tmp);
    snprintf(errp, sizeof(errp), "%s/.err", g_tmp);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (cwd && chdir(cwd))
            _exit(200);
        for (int i = 0; env && env[i]; i++) {
            const char *eq = strchr(env[i], '=');
            if (eq) {
                char name[128];
                snprintf(name, sizeof(name), "%.*s", (int)(eq - env[i]), env[i]);
                setenv(name, eq + 1, 1);
            } else {
                unsetenv(env[i]);
            }
        }
        int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (o < 0 || e < 0)
            _exit(201);
        dup2(o, 1);
        dup2(e, 2);
        execv(argv[0], (char *const *)argv);
        _exit(202);
    }
    int ws = 0;
    for (int i = 0; i < 3000; i++) {
        pid_t r = waitpid(pid, &ws, WNOHANG);
        if (r == pid)
            break;
        if (i == 2999) {
            kill(pid, SIGKILL);
            waitpid(pid, &ws, 0);
            fail_msg("timeout: %s", argv[0]);
        }
        usleep(10000);
    }
    slurp(outp, g_out, sizeof(g_out));
    slurp(errp, g_err, sizeof(g_err));
    return ws;
}

static int exit_code(int ws)
{
    assert_true(WIFEXITED(ws));
    return WEXITSTATUS(ws);
}

static void check_contains(const char *hay, const char *needle)
{
    if (!strstr(hay, needle))
        fail_msg("expected '%s' in:\n%s", needle, hay);
}

static int count_traces(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        n += vt_record_is_trace_name(de->d_name);
    closedir(d);
    return n;
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_tmp, sizeof(g_tmp), "/tmp/vt_record_cliXXXXXX");
    if (!mkdtemp(g_tmp))
        return -1;
    /* Any readable file will do: non-CUDA commands never load it. */
    snprintf(g_fakelib, sizeof(g_fakelib), "%s/libvramtrace.so", g_tmp);
    FILE *f = fopen(g_fakelib, "w");
    if (!f)
        return -1;
    fclose(f);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_tmp);
    return system(cmd) == 0 ? 0 : -1;
}

static char g_libenv[PATH_MAX + 64];
static const char **lib_env(void)
{
    static const char *env[4];
    snprintf(g_libenv, sizeof(g_libenv), "VRAMTRACE_LIB=%s", g_fakelib);
    env[0] = g_libenv;
    env[1] = "RANK";
    env[2] = "PYTORCH_CUDA_ALLOC_CONF";
    env[3] = NULL;
    return env;
}

static void path_in_tmp(char *out, size_t len, const char *rel)
{
    snprintf(out, len, "%s/%s", g_tmp, rel);
}

/* ---- environment -------------------------------------------------------- */

static void test_env_passed(void **state)
{
    (void)state;
    char outdir[PATH_MAX + 16];
    path_in_tmp(outdir, sizeof(outdir), "out");
    const char *argv[] = {g_vramtrace, "record", "-o", outdir, "--no-kernels", "--stack-depth",
                          "12", "--flush-ms", "20", "--no-python-stacks", "-q", "--",
                          g_child, "env", "CUDA_INJECTION64_PATH", "VRAMTRACE_OUTPUT",
                          "VRAMTRACE_KERNELS", "VRAMTRACE_STACK_DEPTH", "VRAMTRACE_FLUSH_MS",
                          "VRAMTRACE_PYTHON_STACKS", "VRAMTRACE_NATIVE_STACKS", "VRAMTRACE_QUIET",
                          "PYTORCH_CUDA_ALLOC_CONF", "PYTEST_PLUGINS", NULL};
    assert_int_equal(exit_code(run(g_tmp, lib_env(), argv)), 0);
    char want[PATH_MAX * 2];
    snprintf(want, sizeof(want), "CUDA_INJECTION64_PATH=%s\n", g_fakelib);
    check_contains(g_out, want);
    /* An absolute template in the output directory (the command may chdir). */
    snprintf(want, sizeof(want), "VRAMTRACE_OUTPUT=%s/out/vramtrace.%%n.%%h.r%%r.%%p.zst\n", g_tmp);
    check_contains(g_out, want);
    check_contains(g_out, "VRAMTRACE_KERNELS=0\n");
    check_contains(g_out, "VRAMTRACE_STACK_DEPTH=12\n");
    check_contains(g_out, "VRAMTRACE_FLUSH_MS=20\n");
    check_contains(g_out, "VRAMTRACE_PYTHON_STACKS=0\n");
    check_contains(g_out, "VRAMTRACE_NATIVE_STACKS unset\n");
    check_contains(g_out, "VRAMTRACE_QUIET=1\n");
    check_contains(g_out, "PYTORCH_CUDA_ALLOC_CONF unset\n");
    check_contains(g_out, "PYTEST_PLUGINS=vramtrace_pytest\n"); /* the plugin, inert without --vramtrace */
    check_contains(g_err, "no trace");
}

static void test_env_tensors_merge(void **state)
{
    (void)state;
    char outdir[PATH_MAX + 16];
    path_in_tmp(outdir, sizeof(outdir), "out");
    char libenv[PATH_MAX + 64];
    snprintf(libenv, sizeof(libenv), "VRAMTRACE_LIB=%s", g_fakelib);
    const char *env[] = {libenv, "PYTORCH_CUDA_ALLOC_CONF=backend:native,max_split_size_mb:128",
                         "PYTORCH_ALLOC_CONF", NULL};
    const char *argv[] = {g_vramtrace, "record", "--tensors", "-o", outdir, g_child, "env",
                          "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", NULL};
    assert_int_equal(exit_code(run(g_tmp, env, argv)), 0);
    check_contains(g_out, "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync,max_split_size_mb:128\n");
    check_contains(g_out, "PYTORCH_ALLOC_CONF=backend:cudaMallocAsync,max_split_size_mb:128\n");
    check_contains(g_err, "warning: PYTORCH_CUDA_ALLOC_CONF: --tensors replaces your 'backend:native'");
    check_contains(g_err, "'max_split_size_mb:128' has no effect");
}

/* ---- exit status and signals --------------------------------------------- */

static void test_exit_status(void **state)
{
    (void)state;
    char outdir[PATH_MAX + 16];
    path_in_tmp(outdir, sizeof(outdir), "out");
    const char *a7[] = {g_vramtrace, "record", "-o", outdir, "--", g_child, "exit", "7", NULL};
    assert_int_equal(exit_code(run(g_tmp, lib_env(), a7)), 7);
    check_contains(g_err, "exited with status 7");
    const char *a0[] = {g_vramtrace, "record", "-o", outdir, "--", g_child, "exit", "0", NULL};
    assert_int_equal(exit_code(run(g_tmp, lib_env(), a0)), 0);
    const char *a255[] = {g_vramtrace, "record", "-o", outdir, g_child, "exit", "255", NULL};
    assert_int_equal(exit_code(run(g_tmp, lib_env(), a255)), 255);
}

static void test_killed_by_signal(void **state)
{
    (void)state;
    char outdir[PATH_MAX + 16], sig[8];
    path_in_tmp(outdir, sizeof(outdir), "out");
    snprintf(sig, sizeof(sig), "%d", SIGTERM);
    const char *argv[] = {g_vramtrace, "record", "-o", outdir, "--", g_child, "kill", sig, NULL};
    int ws = run(g_tmp, lib_env(), argv);
    /* Documented: 128 + signal, as a shell reports it; not re-raised. */
    assert_int_equal(exit_code(ws), 128 + SIGTERM);
    check_contains(g_err, "killed by signal 15");
    snprintf(sig, sizeof(sig), "%d", SIGSEGV);
    assert_int_equal(exit_code(run(g_tmp, lib_env(), argv)), 128 + SIGSEGV);
}

/* Start vramtrace record -- record_child wait-signal with stdout on a pipe;
 * returns its pid once the child printed "ready". */
static pid_t start_waiting(int *outfd)
{
    char outdir[PATH_MAX + 16];
    path_in_tmp(outdir, sizeof(outdir), "out");
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("VRAMTRACE_LIB", g_fakelib, 1);
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 2);
        execl(g_vramtrace, g_vramtrace, "record", "-o", outdir, "--", g_child, "wait-signal",
              (char *)NULL);
        _exit(202);
    }
    close(p[1]);
    char buf[64];
    size_t got = 0;
    struct pollfd pf = {p[0], POLLIN, 0};
    while (got < 6 && poll(&pf, 1, 10000) == 1) {
        ssize_t n = read(p[0], buf + got, sizeof(buf) - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    buf[got] = 0;
    assert_non_null(strstr(buf, "ready"));
    *outfd = p[0];
    return pid;
}

static void test_signal_forwarded(void **state)
{
    (void)state;
    int sigs[] = {SIGTERM, SIGINT};
    for (int i = 0; i < 2; i++) {
        int fd;
        pid_t pid = start_waiting(&fd);
        /* Sent to vramtrace alone (kill, timeout, a batch system): the
         * command must get it, exactly once. */
        assert_int_equal(kill(pid, sigs[i]), 0);
        int ws;
        assert_int_equal(waitpid(pid, &ws, 0), pid);
        close(fd);
        assert_int_equal(exit_code(ws), 101);
    }
}

static void test_terminal_ctrl_c(void **state)
{
    (void)state;
    /* Ctrl-C on a terminal goes to the whole foreground process group:
     * the command must see it once, not once more forwarded by vramtrace. */
    char outdir[PATH_MAX + 16];
    path_in_tmp(outdir, sizeof(outdir), "out");
    int master;
    pid_t pid = forkpty(&master, NULL, NULL, NULL);
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("VRAMTRACE_LIB", g_fakelib, 1);
        execl(g_vramtrace, g_vramtrace, "record", "-q", "-o", outdir, "--", g_child, "wait-signal",
              (char *)NULL);
        _exit(202);
    }
    char buf[4096];
    size_t got = 0;
    struct pollfd pf = {master, POLLIN, 0};
    while (!strstr(buf, "ready") && got < sizeof(buf) - 1 && poll(&pf, 1, 10000) == 1) {
        ssize_t n = read(master, buf + got, sizeof(buf) - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
        buf[got] = 0;
    }
    assert_non_null(strstr(buf, "ready"));
    assert_int_equal(write(master, "\003", 1), 1);
    /* Drain the terminal until vramtrace is gone. */
    int ws;
    for (int i = 0; i < 1000; i++) {
        if (waitpid(pid, &ws, WNOHANG) == pid)
            break;
        if (poll(&pf, 1, 10) == 1 && read(master, buf, sizeof(buf)) < 0)
            usleep(10000);
    }
    close(master);
    assert_int_equal(exit_code(ws), 101);
}

/* ---- errors ---------------------------------------------------------------- */

static void test_missing_library(void **state)
{
    (void)state;
    char outdir[PATH_MAX + 16];
    path_in_tmp(outdir, sizeof(outdir), "out");
    const char *env[] = {"VRAMTRACE_LIB=/nonexistent/libvramtrace.so", NULL};
    const char *argv[] = {g_vramtrace, "record", "-o", outdir, "--", g_child, "env", "X", NULL};
    assert_int_equal(exit_code(run(g_tmp, env, argv)), 1);
    check_contains(g_err, "VRAMTRACE_LIB=/nonexistent/libvramtrace.so: no such library");
    assert_string_equal(g_out, ""); /* the command did not run */
    struct stat st;
    assert_int_not_equal(stat(outdir, &st), 0); /* nothing created */

    /* Without VRAMTRACE_LIB: a binary alone in a directory finds nothing and
     * says where it looked. */
    char bindir[PATH_MAX + 16], exe[2 * PATH_MAX], cmd[8 * PATH_MAX];
    path_in_tmp(bindir, sizeof(bindir), "lonely/a/b/bin");
    snprintf(exe, sizeof(exe), "%s/vramtrace", bindir);
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && cp '%s' '%s'", bindir, g_vramtrace, exe);
    assert_int_equal(system(cmd), 0);
    const char *env2[] = {"VRAMTRACE_LIB", NULL};
    const char *argv2[] = {exe, "record", "-o", outdir, "--", g_child, "exit", "0", NULL};
    assert_int_equal(exit_code(run(g_tmp, env2, argv2)), 1);
    check_contains(g_err, "libvramtrace.so not found");
    check_contains(g_err, "lonely/a/b/bin/../lib/libvramtrace.so");
    check_contains(g_err, "VRAMTRACE_LIB");
}

static void test_command_not_found(void **state)
{
    (void)state;
    char cwd[PATH_MAX + 16];
    path_in_tmp(cwd, sizeof(cwd), "nf");
    assert_int_equal(mkdir(cwd, 0755), 0);
    const char *argv[] = {g_vramtrace, "record", "--", "vt-no-such-command-xyz", "a", NULL};
    assert_int_equal(exit_code(run(cwd, lib_env(), argv)), 127);
    check_contains(g_err, "vt-no-such-command-xyz: command not found");
    /* The default output directory made for it is gone again. */
    assert_int_equal(count_entries(cwd), 0);

    /* Exists but is not executable: 126, as shells say. */
    char noexec[PATH_MAX + 16];
    path_in_tmp(noexec, sizeof(noexec), "noexec.sh");
    FILE *f = fopen(noexec, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\nexit 0\n", f);
    fclose(f);
    chmod(noexec, 0644);
    const char *argv2[] = {g_vramtrace, "record", "--", noexec, NULL};
    assert_int_equal(exit_code(run(cwd, lib_env(), argv2)), 126);
    check_contains(g_err, "cannot execute");
    assert_int_equal(count_entries(cwd), 0);
}

static void test_bad_outdir(void **state)
{
    (void)state;
    char file[PATH_MAX + 16], sub[PATH_MAX + 32];
    path_in_tmp(file, sizeof(file), "plainfile");
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(sub, sizeof(sub), "%s/x", file);
    const char *a1[] = {g_vramtrace, "record", "-o", file, "--", g_child, "env", "X", NULL};
    assert_int_equal(exit_code(run(g_tmp, lib_env(), a1)), 1);
    check_contains(g_err, "cannot create output directory");
    assert_string_equal(g_out, "");
    const char *a2[] = {g_vramtrace, "record", "-o", sub, "--", g_child, "env", "X", NULL};
    assert_int_equal(exit_code(run(g_tmp, lib_env(), a2)), 1);
    /* -o a/b/c creates the missing parents. */
    char deep[PATH_MAX + 32];
    path_in_tmp(deep, sizeof(deep), "a/b/c");
    const char *a3[] = {g_vramtrace, "record", "-o", deep, "--", g_child, "trace", "1", NULL};
    assert_int_equal(exit_code(run(g_tmp, lib_env(), a3)), 0);
    assert_int_equal(count_traces(deep), 1);
}

static void test_usage_errors(void **state)
{
    (void)state;
    const char *a1[] = {g_vramtrace, "record", NULL};
    assert_int_equal(exit_code(run(g_tmp, lib_env(), a1)), 2);
    check_contains(g_err, "no command given");
    const char *a2[] = {g_vramtrace, "record", "--frobnicate", "--", "true", NULL};
    assert_int_equal(exit_code(run(g_tmp, lib_env(), a2)), 2);
    check_contains(g_err, "unknown option '--frobnicate'");
    const char *a3[] = {g_vramtrace, "record", "--stack-depth", "0", "--", "true", NULL};
    assert_int_equal(exit_code(run(g_tmp, lib_env(), a3)), 2);
    const char *a4[] = {g_vramtrace, "record", "--help", NULL};
    assert_int_equal(exit_code(run(g_tmp, lib_env(), a4)), 0);
    check_contains(g_out, "usage: vramtrace record");
    check_contains(g_out, "--tensors");
    const char *a5[] = {g_vramtrace, "--help", NULL};
    assert_int_equal(exit_code(run(g_tmp, lib_env(), a5)), 0);
    check_contains(g_out, "record");
}

/* ---- output naming and the summary ---------------------------------------- */

static void test_one_trace_named(void **state)
{
    (void)state;
    char outdir[PATH_MAX + 16];
    path_in_tmp(outdir, sizeof(outdir), "one");
    const char *argv[] = {g_vramtrace, "record", "-o", outdir, "--", g_child, "trace", "25", NULL};
    assert_int_equal(exit_code(run(g_tmp, lib_env(), argv)), 0);
    assert_int_equal(count_traces(outdir), 1);
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    char want[600];
    /* vramtrace.PROGRAM.HOST.rRANK.PID.zst; no rank -> r0. */
    snprintf(want, sizeof(want), "vramtrace.record_child.%s.r0.", host);
    check_contains(g_err, want);
    check_contains(g_err, "1 process traced; traces in ");
    check_contains(g_err, outdir);
    char next[PATH_MAX + 64];
    snprintf(next, sizeof(next), "next: vramtrace report %s\n", outdir);
    check_contains(g_err, next);
    check_contains(g_err, "50 events: 25 allocations, 25 frees, 0 failed allocations, 0 kernels");
}

static void test_rank_in_name(void **state)
{
    (void)state;
    char outdir[PATH_MAX + 16], libenv[PATH_MAX + 64];
    path_in_tmp(outdir, sizeof(outdir), "ranked");
    snprintf(libenv, sizeof(libenv), "VRAMTRACE_LIB=%s", g_fakelib);
    const char *env[] = {libenv, "RANK=3", NULL};
    const char *argv[] = {g_vramtrace, "record", "-o", outdir, "--", g_child, "trace", "2", NULL};
    assert_int_equal(exit_code(run(g_tmp, env, argv)), 0);
    check_contains(g_err, ".r3.");
    check_contains(g_err, "rank 3");
}

static void test_multi_process(void **state)
{
    (void)state;
    char outdir[PATH_MAX + 16];
    path_in_tmp(outdir, sizeof(outdir), "multi");
    const char *argv[] = {g_vramtrace, "record", "-o", outdir, "--", g_child, "fork-trace", "3",
                          NULL};
    assert_int_equal(exit_code(run(g_tmp, lib_env(), argv)), 0);
    assert_int_equal(count_traces(outdir), 2);
    check_contains(g_err, "2 processes traced");
    check_contains(g_err, "12 events: 6 allocations, 6 frees");

    /* A worker that never uses CUDA leaves nothing: one trace. */
    char outdir2[PATH_MAX + 16];
    path_in_tmp(outdir2, sizeof(outdir2), "workers");
    const char *argv2[] = {g_vramtrace, "record", "-o", outdir2, "--", g_child, "fork-quiet", "3",
                           NULL};
    assert_int_equal(exit_code(run(g_tmp, lib_env(), argv2)), 0);
    assert_int_equal(count_traces(outdir2), 1);
    assert_int_equal(count_entries(outdir2), 2); /* the trace and its symbols (TRACE.sym) */
    check_contains(g_err, "1 process traced");
    check_contains(g_err, "native symbols saved beside 1 trace (*.zst.sym)");
}

/* --timings (or VRAMTRACE_TIMINGS=1): one line of each step after the
 * command, the holder walks' own time read from their files (issue 35) */
static void test_timings(void **state)
{
    (void)state;
    char outdir[PATH_MAX + 16], script[2 * PATH_MAX + 200];
    path_in_tmp(outdir, sizeof(outdir), "timed");
    snprintf(script, sizeof(script),
             "mkdir -p %s && printf 'vramtrace-holders 1\\nW 10 0.250000 0 -\\n' >%s/holders.1.txt && "
             "exec %s trace 2", outdir, outdir, g_child);
    const char *argv[] = {g_vramtrace, "record", "--timings", "-o", outdir, "--", "sh", "-c", script, NULL};
    assert_int_equal(exit_code(run(g_tmp, lib_env(), argv)), 0);
    check_contains(g_err, "vramtrace record: timings: before it ");
    check_contains(g_err, " s; program ");
    check_contains(g_err, "(holder walks 0.250 s, 1 done, 0 still running); after it: summary ");
    check_contains(g_err, ", symbolize ");
    check_contains(g_err, "; total after it ");

    char outdir2[PATH_MAX + 16], tenv[] = "VRAMTRACE_TIMINGS=1", libenv[PATH_MAX + 64];
    path_in_tmp(outdir2, sizeof(outdir2), "timed2");
    snprintf(libenv, sizeof(libenv), "VRAMTRACE_LIB=%s", g_fakelib);
    const char *env[] = {libenv, tenv, NULL};
    const char *argv2[] = {g_vramtrace, "record", "--no-symbolize", "-o", outdir2, "--", g_child, "trace", "2", NULL};
    assert_int_equal(exit_code(run(g_tmp, env, argv2)), 0);
    check_contains(g_err, "(holder walks 0.000 s, 0 done, 0 still running); after it: summary ");
    check_contains(g_err, ", symbolize off; total after it ");
}

static void test_many_processes(void **state)
{
    (void)state;
    char outdir[PATH_MAX + 16];
    path_in_tmp(outdir, sizeof(outdir), "many");
    const char *argv[] = {g_vramtrace, "record", "-o", outdir, "--", g_child, "procs", "20", "2",
                          NULL};
    assert_int_equal(exit_code(run(g_tmp, lib_env(), argv)), 0);
    assert_int_equal(count_traces(outdir), 20);
    check_contains(g_err, "20 processes traced");
    /* 16 listed one per line, then a count; every one counted. */
    check_contains(g_err, "  ... and 4 more\n");
    check_contains(g_err, "80 events: 40 allocations, 40 frees");
}

static void test_incomplete_trace(void **state)
{
    (void)state;
    /* The command dies by SIGKILL midway: 137, and its trace, without an
     * end record, is counted and flagged. */
    char outdir[PATH_MAX + 16];
    path_in_tmp(outdir, sizeof(outdir), "died");
    const char *argv[] = {g_vramtrace, "record", "-o", outdir, "--", g_child, "trace-die", "30",
                          NULL};
    assert_int_equal(exit_code(run(g_tmp, lib_env(), argv)), 128 + SIGKILL);
    check_contains(g_err, "killed by signal 9");
    check_contains(g_err, "1 process traced");
    check_contains(g_err, "incomplete (the process died?)");
    check_contains(g_err, "1 trace without an end record");
    check_contains(g_err, "60 events: 30 allocations, 30 frees");
}

static void test_earlier_traces(void **state)
{
    (void)state;
    char outdir[PATH_MAX + 16], old[PATH_MAX + 64];
    path_in_tmp(outdir, sizeof(outdir), "reused");
    assert_int_equal(mkdir(outdir, 0755), 0);
    snprintf(old, sizeof(old), "%s/vramtrace.old.host.r0.1.zst", outdir);
    FILE *f = fopen(old, "w");
    assert_non_null(f);
    fclose(f);
    const char *argv[] = {g_vramtrace, "record", "-o", outdir, "--", g_child, "trace", "1", NULL};
    assert_int_equal(exit_code(run(g_tmp, lib_env(), argv)), 0);
    check_contains(g_err, "1 process traced");
    check_contains(g_err, "also holds 1 trace from earlier runs");
    /* The next command names the new file, not the directory. */
    const char *next = strstr(g_err, "next: vramtrace report ");
    assert_non_null(next);
    assert_null(strstr(next, "vramtrace.old."));
    check_contains(next, "vramtrace.record_child.");
}

static void test_default_outdir(void **state)
{
    (void)state;
    char cwd[PATH_MAX + 16];
    path_in_tmp(cwd, sizeof(cwd), "def");
    assert_int_equal(mkdir(cwd, 0755), 0);
    const char *argv[] = {g_vramtrace, "record", "--", g_child, "trace", "1", NULL};
    assert_int_equal(exit_code(run(cwd, lib_env(), argv)), 0);
    DIR *d = opendir(cwd);
    assert_non_null(d);
    struct dirent *de;
    char found[256] = "";
    while ((de = readdir(d)))
        if (!strncmp(de->d_name, "vramtrace-record_child-", 23))
            snprintf(found, sizeof(found), "%s", de->d_name);
    closedir(d);
    assert_true(found[0]);
    char sub[PATH_MAX + 300];
    snprintf(sub, sizeof(sub), "%s/%s", cwd, found);
    assert_int_equal(count_traces(sub), 1);
    /* The next command is given as the user would type it, relative. */
    char next[400];
    snprintf(next, sizeof(next), "next: vramtrace report %s\n", found);
    check_contains(g_err, next);

    /* A second run in the same second gets its own directory. */
    assert_int_equal(exit_code(run(cwd, lib_env(), argv)), 0);
    assert_int_equal(count_entries(cwd), 2);

    /* Nothing traced: the empty default directory is removed. */
    const char *argv2[] = {g_vramtrace, "record", "--", g_child, "exit", "0", NULL};
    assert_int_equal(exit_code(run(cwd, lib_env(), argv2)), 0);
    assert_int_equal(count_entries(cwd), 2);
    check_contains(g_err, "no trace");
}

static void test_installed_layout(void **state)
{
    (void)state;
    /* PREFIX/bin/vramtrace finds PREFIX/lib/libvramtrace.so by itself. */
    char prefix[PATH_MAX + 16], cmd[8 * PATH_MAX], exe[2 * PATH_MAX], lib[2 * PATH_MAX];
    path_in_tmp(prefix, sizeof(prefix), "prefix");
    snprintf(exe, sizeof(exe), "%s/bin/vramtrace", prefix);
    snprintf(lib, sizeof(lib), "%s/lib/libvramtrace.so", prefix);
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s/bin' '%s/lib' && cp '%s' '%s' && : > '%s'", prefix,
             prefix, g_vramtrace, exe, lib);
    assert_int_equal(system(cmd), 0);
    const char *env[] = {"VRAMTRACE_LIB", NULL};
    char outdir[PATH_MAX + 16];
    path_in_tmp(outdir, sizeof(outdir), "out");
    const char *argv[] = {exe, "record", "-o", outdir, "--", g_child, "env",
                          "CUDA_INJECTION64_PATH", NULL};
    assert_int_equal(exit_code(run(g_tmp, env, argv)), 0);
    char want[3 * PATH_MAX];
    snprintf(want, sizeof(want), "CUDA_INJECTION64_PATH=%s\n", lib);
    check_contains(g_out, want);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s VRAMTRACE RECORD_CHILD\n", argv[0]);
        return 2;
    }
    g_vramtrace = argv[1];
    g_child = argv[2];
    /* A library path must not leak in from the caller's environment. */
    unsetenv("CUDA_INJECTION64_PATH");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_env_passed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_env_tensors_merge, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exit_status, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed_by_signal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_signal_forwarded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_terminal_ctrl_c, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_library, setup, teardown),
        cmocka_unit_test_setup_teardown(test_command_not_found, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_outdir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_usage_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_trace_named, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rank_in_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_multi_process, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_processes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_incomplete_trace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_earlier_traces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_default_outdir, setup, teardown),
        cmocka_unit_test_setup_teardown(test_installed_layout, setup, teardown),
    };
    return cmocka_run_group_tests_name("record_cli", tests, NULL, NULL);
}
