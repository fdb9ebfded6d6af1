/* test_writer_files.c - output file rules and failures: mode 0600, O_EXCL,
 * never through a symlink; an unwritable directory, a full disk
 * (/dev/full) and a broken pipe disable tracing with exactly one stderr
 * line and never harm the process. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "vt_error.h"
#include "vt_writer.h"
#include "wt_decode.h"

/* Capture stderr into a file while `fn` runs; returns its text (malloc). */
typedef struct {
    int saved;
    char path[512];
} capture;

static void capture_start(capture *c, const char *name)
{
    fflush(stderr);
    wt_tmp_path(c->path, sizeof(c->path), name);
    int fd = open(c->path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    c->saved = dup(2);
    dup2(fd, 2);
    close(fd);
}

static char *capture_end(capture *c)
{
    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    FILE *f = fopen(c->path, "r");
    assert_non_null(f);
    char *buf = calloc(1, 8192);
    size_t n = fread(buf, 1, 8191, f);
    buf[n] = 0;
    fclose(f);
    unlink(c->path);
    return buf;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_mode_0600(void **state)
{
    (void)state;
    char path[512];
    wt_tmp_path(path, sizeof(path), "mode.vt");
    mode_t old = umask(0); /* 0600 must not come from the umask */
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.path = path;
    vt_writer *w = NULL;
    assert_int_equal(vt_writer_create(&w, &cfg, NULL), 0);
    umask(old);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_true(S_ISREG(st.st_mode));
    /* and the fd is close-on-exec */
    vt_writer_free(w);
    unlink(path);
}

static void test_refuses_existing(void **state)
{
    (void)state;
    char path[512];
    wt_tmp_path(path, sizeof(path), "exists.vt");
    FILE *f = fopen(path, "w");
    fputs("precious", f);
    fclose(f);
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.path = path;
    vt_writer *w = (vt_writer *)1;
    capture c;
    capture_start(&c, "err1.txt");
    int rc = vt_writer_create(&w, &cfg, NULL);
    char *err = capture_end(&c);
    assert_int_equal(rc, VT_ERR_EXISTS);
    assert_null(w);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "vramtrace: "));
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, ": disabled"));
    free(err);
    f = fopen(path, "r");
    char buf[32] = "";
    assert_non_null(fgets(buf, sizeof(buf), f));
    fclose(f);
    assert_string_equal(buf, "precious");
    /* quiet: no message */
    cfg.quiet = 1;
    capture_start(&c, "err2.txt");
    rc = vt_writer_create(&w, &cfg, NULL);
    err = capture_end(&c);
    assert_int_equal(rc, VT_ERR_EXISTS);
    assert_string_equal(err, "");
    free(err);
    unlink(path);
}

static void test_refuses_symlink(void **state)
{
    (void)state;
    char path[512], target[512], existing[512];
    wt_tmp_path(path, sizeof(path), "link.vt");
    wt_tmp_path(target, sizeof(target), "target.vt");
    wt_tmp_path(existing, sizeof(existing), "existing.vt");
    /* dangling symlink: following it would create the target */
    assert_int_equal(symlink(target, path), 0);
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.path = path;
    cfg.quiet = 1;
    vt_writer *w = NULL;
    assert_int_equal(vt_writer_create(&w, &cfg, NULL), VT_ERR_EXISTS);
    assert_null(w);
    assert_int_equal(access(target, F_OK), -1);
    unlink(path);
    /* symlink to an existing file: untouched */
    FILE *f = fopen(existing, "w");
    fputs("keep", f);
    fclose(f);
    assert_int_equal(symlink(existing, path), 0);
    assert_int_equal(vt_writer_create(&w, &cfg, NULL), VT_ERR_EXISTS);
    struct stat st;
    assert_int_equal(stat(existing, &st), 0);
    assert_int_equal(st.st_size, 4);
    unlink(path);
    unlink(existing);
}

static void test_unwritable_dir(void **state)
{
    (void)state;
    char dir[512], path[600];
    wt_tmp_path(dir, sizeof(dir), "ro");
    assert_int_equal(mkdir(dir, 0500), 0);
    snprintf(path, sizeof(path), "%s/t.vt", dir);
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    vt_writer *w = NULL;
    capture c;
    if (geteuid() != 0) { /* root writes anywhere: then the cases below */
        cfg.path = path;
        capture_start(&c, "err3.txt");
        assert_int_equal(vt_writer_create(&w, &cfg, NULL), VT_ERR_IO);
        char *err = capture_end(&c);
        assert_int_equal(count_lines(err), 1);
        assert_non_null(strstr(err, "Permission denied"));
        free(err);
        assert_null(w);
    }
    /* a "directory" that is a regular file, and /proc (unwritable to root) */
    char fpath[512], bad[600];
    wt_tmp_path(fpath, sizeof(fpath), "plainfile");
    FILE *f = fopen(fpath, "w");
    fclose(f);
    snprintf(bad, sizeof(bad), "%s/t.vt", fpath);
    const char *paths[] = {bad, "/proc/vramtrace_test.vt", "/nonexistent-dir/t.vt"};
    for (int i = 0; i < 3; i++) {
        cfg.path = paths[i];
        capture_start(&c, "err4.txt");
        int rc = vt_writer_create(&w, &cfg, NULL);
        char *err = capture_end(&c);
        assert_int_equal(rc, VT_ERR_IO);
        assert_null(w);
        assert_int_equal(count_lines(err), 1);
        assert_non_null(strstr(err, ": disabled"));
        free(err);
        /* tracing off: emits on the NULL writer are refused, harmlessly */
        vt_event e;
        memset(&e, 0, sizeof(e));
        e.type = VT_EV_FREE;
        assert_int_equal(vt_writer_emit(w, &e), VT_ERR_DISABLED);
        assert_true(vt_writer_disabled(w));
    }
    unlink(fpath);
    rmdir(dir);
}

static void emit_some(vt_writer *w, int n, int *ok, int *disabled)
{
    for (int i = 0; i < n; i++) {
        vt_event e;
        memset(&e, 0, sizeof(e));
        e.type = VT_EV_ALLOC;
        e.u.alloc.address = (uint64_t)i;
        int rc = vt_writer_emit(w, &e);
        if (rc == 0)
            (*ok)++;
        else if (rc == VT_ERR_DISABLED)
            (*disabled)++;
    }
}

/* Full disk: /dev/full passed as fd.  One line, then everything is a
 * cheap VT_ERR_DISABLED. */
static void test_disk_full(void **state)
{
    (void)state;
    int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.fd = fd;
    cfg.flush_ms = 10;
    vt_writer *w = NULL;
    capture c;
    capture_start(&c, "err5.txt");
    assert_int_equal(vt_writer_create(&w, &cfg, NULL), 0);
    int ok = 0, dis = 0;
    emit_some(w, 100, &ok, &dis);
    int rc = vt_writer_flush(w);
    usleep(50 * 1000);
    emit_some(w, 100, &ok, &dis);
    rc = rc ? rc : vt_writer_flush(w);
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), VT_ERR_NOSPACE);
    char *err = capture_end(&c);
    assert_int_equal(rc, VT_ERR_NOSPACE);
    assert_true(vt_writer_disabled(w));
    assert_non_null(strstr(vt_writer_errmsg(w), "No space left on device"));
    assert_true(dis >= 100);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "vramtrace: fd "));
    assert_non_null(strstr(err, "No space left on device: disabled\n"));
    free(err);
    vt_event e;
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_FREE;
    assert_int_equal(vt_writer_emit(w, &e), VT_ERR_DISABLED);
    vt_writer_free(w);
}

/* A pipe whose reader is gone: EPIPE, not a SIGPIPE that kills the host. */
static void test_broken_pipe(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    close(p[0]);
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.fd = p[1];
    vt_writer *w = NULL;
    capture c;
    capture_start(&c, "err6.txt");
    assert_int_equal(vt_writer_create(&w, &cfg, NULL), 0);
    int ok = 0, dis = 0;
    emit_some(w, 10, &ok, &dis);
    int rc = vt_writer_flush(w);
    vt_writer_free(w);
    char *err = capture_end(&c);
    assert_int_equal(rc, VT_ERR_IO);
    assert_int_equal(count_lines(err), 1);
    assert_non_null(strstr(err, "Broken pipe: disabled"));
    free(err);
}

/* Bad configurations are refused; out-of-range zstd levels are clamped. */
static void test_invalid_config(void **state)
{
    (void)state;
    vt_writer *w = (vt_writer *)1;
    vt_writer_config cfg;
    vt_writer_config_default(&cfg);
    cfg.quiet = 1;
    assert_int_equal(vt_writer_create(&w, &cfg, NULL), VT_ERR_INVALID); /* no path, no fd */
    assert_null(w);
    assert_int_equal(vt_writer_create(NULL, &cfg, NULL), VT_ERR_INVALID);
    char path[512];
    wt_tmp_path(path, sizeof(path), "level.vt");
    cfg.path = path;
    cfg.level = -100000; /* zstd clamps levels (a low one: level 22 would allocate hundreds of MB) */
    assert_int_equal(vt_writer_create(&w, &cfg, NULL), 0);
    vt_event e;
    memset(&e, 0, sizeof(e));
    e.type = VT_EV_FREE;
    assert_int_equal(vt_writer_emit(w, &e), 0);
    assert_int_equal(vt_writer_close(w, VT_END_NORMAL, 0), 0);
    vt_writer_free(w);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mode_0600),
        cmocka_unit_test(test_refuses_existing),
        cmocka_unit_test(test_refuses_symlink),
        cmocka_unit_test(test_unwritable_dir),
        cmocka_unit_test(test_disk_full),
        cmocka_unit_test(test_broken_pipe),
        cmocka_unit_test(test_invalid_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
