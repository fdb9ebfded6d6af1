/* test_record_env.c - unit tests of the pure logic of `vramtrace record`
 * (src/cli/record_env.c): option parsing, PyTorch allocator configuration
 * merging, the environment plan, library lookup, output names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record_env.h"
#include "vt_error.h"

/* ---- option parsing ------------------------------------------------------ */

static int parse(vt_record_opts *o, char *err, int argc, char **argv)
{
    return vt_record_parse_args(o, argc, argv, err, 256);
}

static void test_parse_defaults(void **state)
{
    (void)state;
    char *argv[] = {"record", "--", "python3", "train.py", "--lr", "1"};
    vt_record_opts o;
    char err[256];
    assert_int_equal(parse(&o, err, 6, argv), 0);
    assert_null(o.outdir);
    assert_int_equal(o.kernels, -1);
    assert_int_equal(o.native_stacks, -1);
    assert_int_equal(o.python_stacks, -1);
    assert_int_equal(o.static_mem, -1);
    assert_int_equal(o.stack_depth, -1);
    assert_int_equal(o.flush_ms, -1);
    assert_int_equal(o.sample_ms, -1);
    assert_int_equal(o.quiet, 0);
    assert_int_equal(o.tensors, 0);
    assert_int_equal(o.live, 0);
    assert_int_equal(o.cmd_index, 2);
    assert_string_equal(argv[o.cmd_index], "python3");
}

static void test_parse_all_options(void **state)
{
    (void)state;
    char *argv[] = {"record", "-o", "out", "--no-kernels", "--native-stacks",
                    "--no-python-stacks", "--no-static", "--stack-depth", "16",
                    "--flush-ms=250", "--sample-ms", "0", "-q", "--tensors", "--live", "--",
                    "./a.out", "-o", "x"};
    int argc = sizeof(argv) / sizeof(argv[0]);
    vt_record_opts o;
    char err[256];
    assert_int_equal(parse(&o, err, argc, argv), 0);
    assert_string_equal(o.outdir, "out");
    assert_int_equal(o.kernels, 0);
    assert_int_equal(o.native_stacks, 1);
    assert_int_equal(o.python_stacks, 0);
    assert_int_equal(o.static_mem, 0);
    assert_int_equal(o.stack_depth, 16);
    assert_int_equal(o.flush_ms, 250);
    assert_int_equal(o.sample_ms, 0);
    assert_int_equal(o.quiet, 1);
    assert_int_equal(o.tensors, 1);
    assert_int_equal(o.live, 1);
    /* The command's own "-o x" is not ours. */
    assert_string_equal(argv[o.cmd_index], "./a.out");
    assert_int_equal(o.cmd_index, 16);
}

static void test_parse_forms(void **state)
{
    (void)state;
    vt_record_opts o;
    char err[256];
    /* -oDIR, --output-dir=DIR, last one wins, no "--" needed. */
    char *a1[] = {"record", "-oA", "--output-dir=B", "--kernels", "--no-kernels", "cmd", "--kernels"};
    assert_int_equal(parse(&o, err, 7, a1), 0);
    assert_string_equal(o.outdir, "B");
    assert_int_equal(o.kernels, 0);
    assert_int_equal(o.cmd_index, 5);
    /* "-" alone is a command (stdin script), not an option. */
    char *a2[] = {"record", "-"};
    assert_int_equal(parse(&o, err, 2, a2), 0);
    assert_int_equal(o.cmd_index, 1);
    /* No command at all: not a parse error, cmd_index == argc. */
    char *a3[] = {"record", "--tensors"};
    assert_int_equal(parse(&o, err, 2, a3), 0);
    assert_int_equal(o.cmd_index, 2);
    char *a4[] = {"record", "--tensors", "--"};
    assert_int_equal(parse(&o, err, 3, a4), 0);
    assert_int_equal(o.cmd_index, 3);
    char *a5[] = {"record", "-h"};
    assert_int_equal(parse(&o, err, 2, a5), 0);
    assert_int_equal(o.help, 1);
    char *a6[] = {"record", "--sample-ms=20", "x"};
    assert_int_equal(parse(&o, err, 3, a6), 0);
    assert_int_equal(o.sample_ms, 20);
}

static void test_parse_errors(void **state)
{
    (void)state;
    vt_record_opts o;
    char err[256];
    char *a1[] = {"record", "--bogus", "x"};
    assert_int_equal(parse(&o, err, 3, a1), VT_ERR_INVALID);
    assert_non_null(strstr(err, "unknown option '--bogus'"));
    char *a2[] = {"record", "-o"};
    assert_int_equal(parse(&o, err, 2, a2), VT_ERR_INVALID);
    assert_non_null(strstr(err, "needs a value"));
    char *a3[] = {"record", "--stack-depth", "abc", "x"};
    assert_int_equal(parse(&o, err, 4, a3), VT_ERR_INVALID);
    assert_non_null(strstr(err, "--stack-depth"));
    char *a4[] = {"record", "--stack-depth", "0", "x"};
    assert_int_equal(parse(&o, err, 4, a4), VT_ERR_INVALID);
    char *a5[] = {"record", "--stack-depth=257", "x"};
    assert_int_equal(parse(&o, err, 3, a5), VT_ERR_INVALID);
    char *a6[] = {"record", "--flush-ms", "5", "x"};
    assert_int_equal(parse(&o, err, 4, a6), VT_ERR_INVALID);
    char *a7[] = {"record", "--sample-ms", "5", "x"};
    assert_int_equal(parse(&o, err, 4, a7), VT_ERR_INVALID);
    assert_non_null(strstr(err, "0 or"));
    char *a8[] = {"record", "--tensors=yes", "x"};
    assert_int_equal(parse(&o, err, 3, a8), VT_ERR_INVALID);
    assert_non_null(strstr(err, "takes no value"));
    char *a9[] = {"record", "-o", "", "x"};
    assert_int_equal(parse(&o, err, 4, a9), VT_ERR_INVALID);
    char *a10[] = {"record", "-x", "cmd"};
    assert_int_equal(parse(&o, err, 3, a10), VT_ERR_INVALID);
    char *c1[] = {"record", "--clock=sundial", "cmd"};
    assert_int_equal(parse(&o, err, 3, c1), VT_ERR_INVALID);
    assert_non_null(strstr(err, "--clock: 'sundial'"));
    char *c2[] = {"record", "--clock=TSC", "cmd"};
    assert_int_equal(parse(&o, err, 3, c2), 0);
    char *a11[] = {"record", "--flush-ms", "12x", "x"};
    assert_int_equal(parse(&o, err, 4, a11), VT_ERR_INVALID);
}

/* ---- allocator configuration --------------------------------------------- */

static char *merge(const char *user, char *warn)
{
    char *out = NULL;
    assert_int_equal(vt_record_merge_alloc_conf("PYTORCH_CUDA_ALLOC_CONF", user, &out, warn, 1024),
                     0);
    assert_non_null(out);
    return out;
}

static void test_merge_empty(void **state)
{
    (void)state;
    char warn[1024];
    char *m = merge(NULL, warn);
    assert_string_equal(m, "backend:cudaMallocAsync");
    assert_string_equal(warn, "");
    free(m);
    m = merge("", warn);
    assert_string_equal(m, "backend:cudaMallocAsync");
    free(m);
    m = merge(" , ,", warn);
    assert_string_equal(m, "backend:cudaMallocAsync");
    assert_string_equal(warn, "");
    free(m);
}

static void test_merge_keeps_keys(void **state)
{
    (void)state;
    char warn[1024];
    char *m = merge("pinned_use_cuda_host_register:True,release_lock_on_cudamalloc:True", warn);
    assert_string_equal(
        m, "pinned_use_cuda_host_register:True,release_lock_on_cudamalloc:True,backend:cudaMallocAsync");
    assert_string_equal(warn, "");
    free(m);
    /* expandable_segments:False is harmless: no warning. */
    m = merge("expandable_segments:False", warn);
    assert_string_equal(m, "expandable_segments:False,backend:cudaMallocAsync");
    assert_string_equal(warn, "");
    free(m);
}

static void test_merge_already_async(void **state)
{
    (void)state;
    char warn[1024];
    char *m = merge("backend:cudaMallocAsync", warn);
    assert_string_equal(m, "backend:cudaMallocAsync");
    assert_string_equal(warn, "");
    free(m);
    /* "async" is PyTorch's newer spelling: kept as the user wrote it. */
    m = merge("pinned_num_register_threads:8, backend : async", warn);
    assert_string_equal(m, "pinned_num_register_threads:8,backend : async");
    assert_string_equal(warn, "");
    free(m);
}

static void test_merge_conflicting_backend(void **state)
{
    (void)state;
    char warn[1024];
    char *m = merge("garbage_collection_threshold:0.6,backend:native,pinned_num_register_threads:4",
                    warn);
    /* Replaced in place, other keys kept in order. */
    assert_string_equal(
        m, "garbage_collection_threshold:0.6,backend:cudaMallocAsync,pinned_num_register_threads:4");
    assert_non_null(strstr(warn, "replaces your 'backend:native'"));
    assert_non_null(strstr(warn, "'garbage_collection_threshold:0.6' has no effect"));
    assert_non_null(strstr(warn, "PYTORCH_CUDA_ALLOC_CONF"));
    free(m);
    /* A second backend is dropped. */
    m = merge("backend:cudaMallocAsync,backend:native", warn);
    assert_string_equal(m, "backend:cudaMallocAsync");
    assert_non_null(strstr(warn, "second backend"));
    free(m);
}

static void test_merge_brackets(void **state)
{
    (void)state;
    char warn[1024];
    /* Commas inside [...] belong to the value. */
    char *m = merge("roundup_power2_divisions:[256:1,512:2,>:8],max_split_size_mb:256", warn);
    assert_string_equal(
        m, "roundup_power2_divisions:[256:1,512:2,>:8],max_split_size_mb:256,backend:cudaMallocAsync");
    assert_non_null(strstr(warn, "'roundup_power2_divisions:[256:1,512:2,>:8]' has no effect"));
    assert_non_null(strstr(warn, "'max_split_size_mb:256' has no effect"));
    free(m);
    m = merge("expandable_segments:True", warn);
    assert_string_equal(m, "expandable_segments:True,backend:cudaMallocAsync");
    assert_non_null(strstr(warn, "expandable_segments:True"));
    free(m);
}

/* ---- the environment plan ------------------------------------------------ */

static const char *fake_env[16][2];
static const char *fake_getenv(const char *name)
{
    for (int i = 0; i < 16 && fake_env[i][0]; i++)
        if (!strcmp(fake_env[i][0], name))
            return fake_env[i][1];
    return NULL;
}

static void set_fake_env(const char *const *kv)
{
    memset(fake_env, 0, sizeof(fake_env));
    for (int i = 0; kv && kv[2 * i]; i++) {
        fake_env[i][0] = kv[2 * i];
        fake_env[i][1] = kv[2 * i + 1];
    }
}

static void test_plan_minimal(void **state)
{
    (void)state;
    char *argv[] = {"record", "cmd"};
    vt_record_opts o;
    char err[256];
    assert_int_equal(parse(&o, err, 2, argv), 0);
    set_fake_env(NULL);
    vt_record_plan p;
    assert_int_equal(vt_record_plan_env(&p, &o, "/x/lib/libvramtrace.so", "/out", fake_getenv), 0);
    assert_int_equal(p.n, 2); /* only what was asked for: library defaults apply */
    assert_string_equal(vt_record_plan_get(&p, "CUDA_INJECTION64_PATH"), "/x/lib/libvramtrace.so");
    assert_string_equal(vt_record_plan_get(&p, "VRAMTRACE_OUTPUT"),
                        "/out/vramtrace.%n.%h.r%r.%p.zst");
    assert_null(vt_record_plan_get(&p, "VRAMTRACE_KERNELS"));
    assert_null(vt_record_plan_get(&p, "PYTORCH_CUDA_ALLOC_CONF"));
    assert_string_equal(p.warn, "");
    vt_record_plan_free(&p);
}

static void test_plan_all(void **state)
{
    (void)state;
    char *argv[] = {"record", "--no-kernels", "--python-stacks", "--no-native-stacks", "--static",
                    "--stack-depth=8", "--flush-ms=50", "--sample-ms=1000", "-q", "--tensors",
                    "--clock", "monotonic", "cmd"};
    vt_record_opts o;
    char err[256];
    assert_int_equal(parse(&o, err, 13, argv), 0);
    const char *env[] = {"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:False",
                         "CUDA_INJECTION64_PATH", "/other/tool.so", NULL};
    set_fake_env(env);
    vt_record_plan p;
    assert_int_equal(vt_record_plan_env(&p, &o, "/l.so", "/o", fake_getenv), 0);
    assert_string_equal(vt_record_plan_get(&p, "CUDA_INJECTION64_PATH"), "/l.so");
    assert_string_equal(vt_record_plan_get(&p, "VRAMTRACE_KERNELS"), "0");
    assert_string_equal(vt_record_plan_get(&p, "VRAMTRACE_NATIVE_STACKS"), "0");
    assert_string_equal(vt_record_plan_get(&p, "VRAMTRACE_PYTHON_STACKS"), "1");
    assert_string_equal(vt_record_plan_get(&p, "VRAMTRACE_STATIC"), "1");
    assert_string_equal(vt_record_plan_get(&p, "VRAMTRACE_STACK_DEPTH"), "8");
    assert_string_equal(vt_record_plan_get(&p, "VRAMTRACE_FLUSH_MS"), "50");
    assert_string_equal(vt_record_plan_get(&p, "VRAMTRACE_SAMPLE_MS"), "1000");
    assert_string_equal(vt_record_plan_get(&p, "VRAMTRACE_QUIET"), "1");
    assert_string_equal(vt_record_plan_get(&p, "VRAMTRACE_CLOCK"), "monotonic");
    assert_string_equal(vt_record_plan_get(&p, "PYTORCH_CUDA_ALLOC_CONF"),
                        "expandable_segments:False,backend:cudaMallocAsync");
    /* PyTorch >= 2.9 reads PYTORCH_ALLOC_CONF first: it gets the same. */
    assert_string_equal(vt_record_plan_get(&p, "PYTORCH_ALLOC_CONF"),
                        "expandable_segments:False,backend:cudaMallocAsync");
    assert_non_null(strstr(p.warn, "/other/tool.so"));
    vt_record_plan_free(&p);
}

static void test_plan_full_native(void **state)
{
    (void)state;
    char *argv[] = {"record", "--full-native-stacks", "cmd"};
    vt_record_opts o;
    char err[256];
    assert_int_equal(parse(&o, err, 3, argv), 0);
    assert_int_equal(o.native_stacks, 2);
    const char *env[] = {NULL};
    set_fake_env(env);
    vt_record_plan p;
    assert_int_equal(vt_record_plan_env(&p, &o, "/l.so", "/o", fake_getenv), 0);
    assert_string_equal(vt_record_plan_get(&p, "VRAMTRACE_NATIVE_STACKS"), "full");
    vt_record_plan_free(&p);
}

static void test_plan_tensors_both_vars(void **state)
{
    (void)state;
    char *argv[] = {"record", "--tensors", "cmd"};
    vt_record_opts o;
    char err[256];
    assert_int_equal(parse(&o, err, 3, argv), 0);
    const char *env[] = {"PYTORCH_CUDA_ALLOC_CONF", "backend:native", "PYTORCH_ALLOC_CONF",
                         "max_split_size_mb:64", "PYTORCH_NO_CUDA_MEMORY_CACHING", "1", NULL};
    set_fake_env(env);
    vt_record_plan p;
    assert_int_equal(vt_record_plan_env(&p, &o, "/l.so", "/o", fake_getenv), 0);
    assert_string_equal(vt_record_plan_get(&p, "PYTORCH_CUDA_ALLOC_CONF"), "backend:cudaMallocAsync");
    assert_string_equal(vt_record_plan_get(&p, "PYTORCH_ALLOC_CONF"),
                        "max_split_size_mb:64,backend:cudaMallocAsync");
    assert_non_null(strstr(p.warn, "PYTORCH_CUDA_ALLOC_CONF: --tensors replaces your 'backend:native'"));
    assert_non_null(strstr(p.warn, "PYTORCH_ALLOC_CONF: 'max_split_size_mb:64' has no effect"));
    assert_non_null(strstr(p.warn, "PYTORCH_NO_CUDA_MEMORY_CACHING"));
    vt_record_plan_free(&p);

    /* The same warning is not said twice when both come from one value. */
    const char *env2[] = {"PYTORCH_CUDA_ALLOC_CONF", "backend:native", NULL};
    set_fake_env(env2);
    assert_int_equal(vt_record_plan_env(&p, &o, "/l.so", "/o", fake_getenv), 0);
    const char *first = strstr(p.warn, "replaces");
    assert_non_null(first);
    assert_null(strstr(first + 1, "replaces"));
    assert_string_equal(vt_record_plan_get(&p, "PYTORCH_ALLOC_CONF"), "backend:cudaMallocAsync");
    vt_record_plan_free(&p);
}

/* ---- library lookup ------------------------------------------------------ */

static char tmpdir[PATH_MAX];

static void touch(const char *rel)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
}

static void mkd(const char *rel)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
    assert_int_equal(mkdir(path, 0755), 0);
}

static void test_find_library(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/vt_record_libXXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    char exe[PATH_MAX + 64], out[PATH_MAX], tried[4096], want[PATH_MAX + 64];

    /* Install layout: PREFIX/bin/vramtrace, PREFIX/lib/libvramtrace.so. */
    mkd("bin");
    mkd("lib");
    touch("lib/libvramtrace.so");
    snprintf(exe, sizeof(exe), "%s/bin/vramtrace", tmpdir);
    assert_int_equal(vt_record_find_library(exe, NULL, out, sizeof(out), tried, sizeof(tried)), 0);
    snprintf(want, sizeof(want), "%s/lib/libvramtrace.so", tmpdir);
    assert_string_equal(out, want); /* resolved: no "bin/.." left */

    /* Build tree: build/src/cli/vramtrace, build/src/inject/libvramtrace.so. */
    mkd("src");
    mkd("src/cli");
    mkd("src/inject");
    touch("src/inject/libvramtrace.so");
    snprintf(exe, sizeof(exe), "%s/src/cli/vramtrace", tmpdir);
    assert_int_equal(vt_record_find_library(exe, NULL, out, sizeof(out), tried, sizeof(tried)), 0);
    snprintf(want, sizeof(want), "%s/src/inject/libvramtrace.so", tmpdir);
    assert_string_equal(out, want);

    /* build/vramtrace beside build/libvramtrace.so wins over the rest. */
    touch("libvramtrace.so");
    snprintf(exe, sizeof(exe), "%s/vramtrace", tmpdir);
    assert_int_equal(vt_record_find_library(exe, NULL, out, sizeof(out), tried, sizeof(tried)), 0);
    snprintf(want, sizeof(want), "%s/libvramtrace.so", tmpdir);
    assert_string_equal(out, want);

    /* The override is the only candidate, found or not. */
    assert_int_equal(vt_record_find_library(exe, "/nonexistent/libvramtrace.so", out, sizeof(out),
                                            tried, sizeof(tried)),
                     VT_ERR_NOT_FOUND);
    assert_string_equal(tried, "/nonexistent/libvramtrace.so");
    snprintf(want, sizeof(want), "%s/lib/libvramtrace.so", tmpdir);
    assert_int_equal(vt_record_find_library("/nowhere/vramtrace", want, out, sizeof(out), tried,
                                            sizeof(tried)),
                     0);
    assert_string_equal(out, want);

    /* A directory is not a library. */
    assert_int_equal(vt_record_find_library(exe, tmpdir, out, sizeof(out), tried, sizeof(tried)),
                     VT_ERR_NOT_FOUND);

    /* Nothing there: every place tried is listed. */
    assert_int_equal(vt_record_find_library("/nowhere/bin/vramtrace", NULL, out, sizeof(out), tried,
                                            sizeof(tried)),
                     VT_ERR_NOT_FOUND);
    assert_non_null(strstr(tried, "/nowhere/bin/../lib/libvramtrace.so"));
    assert_non_null(strstr(tried, "/nowhere/bin/libvramtrace.so"));

    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    assert_int_equal(system(cmd), 0);
}

/* ---- names and exit status -------------------------------------------------- */

static void name_of(const char *expect, int n, ...)
{
    char *cmd[8];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        cmd[i] = va_arg(ap, char *);
    va_end(ap);
    char out[80];
    vt_record_command_name(cmd, n, out, sizeof(out));
    assert_string_equal(out, expect);
}

static void test_command_name(void **state)
{
    (void)state;
    name_of("a.out", 1, "./build/a.out");
    name_of("train", 3, "python3", "train.py", "--x");
    name_of("train", 4, "/usr/bin/python3.12", "-u", "dir/train.py", "1");
    name_of("torch.distributed.run", 5, "python3", "-m", "torch.distributed.run",
            "--nproc_per_node=2", "ddp.py");
    name_of("prog", 4, "python", "-W", "ignore", "prog.py");
    name_of("python", 3, "python", "-c", "print(1)");
    name_of("my_prog", 1, "my prog");
    name_of("cmd", 1, "..");
    name_of("cmd", 0);
}

static void test_default_dir(void **state)
{
    (void)state;
    setenv("TZ", "UTC", 1);
    char out[128];
    /* 2026-11-30 10:15:42 UTC */
    assert_int_equal(vt_record_default_dir("train", (time_t)1796033742, out, sizeof(out)), 0);
    assert_string_equal(out, "vramtrace-train-20261130-101542");
    char small[10];
    assert_int_equal(vt_record_default_dir("train", 0, small, sizeof(small)), VT_ERR_INVALID);
}

static void test_trace_names(void **state)
{
    (void)state;
    assert_true(vt_record_is_trace_name("vramtrace.train.host.r0.123.zst"));
    assert_false(vt_record_is_trace_name("vramtrace.train.host.r0.123.zst.tmp"));
    assert_false(vt_record_is_trace_name("other.zst"));
    assert_false(vt_record_is_trace_name("vramtrace..zst"));
    assert_false(vt_record_is_trace_name("vramtrace.zst"));
}

static void test_exit_status(void **state)
{
    (void)state;
    /* Real statuses from real children. */
    for (int code = 0; code < 256; code += 85) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(code);
        int ws;
        assert_int_equal(waitpid(pid, &ws, 0), pid);
        assert_int_equal(vt_record_exit_status(ws), code);
    }
    int sigs[] = {SIGTERM, SIGKILL, SIGINT, SIGSEGV};
    for (size_t i = 0; i < 4; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            signal(sigs[i], SIG_DFL);
            raise(sigs[i]);
            _exit(99);
        }
        int ws;
        assert_int_equal(waitpid(pid, &ws, 0), pid);
        assert_int_equal(vt_record_exit_status(ws), 128 + sigs[i]);
    }
}

static void test_pytest_plugins(void **state)
{
    (void)state;
    char out[128];
    assert_int_equal(vt_record_pytest_plugins(NULL, out, sizeof(out)), 0);
    assert_string_equal(out, "vramtrace_pytest");
    assert_int_equal(vt_record_pytest_plugins("", out, sizeof(out)), 0);
    assert_string_equal(out, "vramtrace_pytest");
    assert_int_equal(vt_record_pytest_plugins("xdist.plugin", out, sizeof(out)), 0);
    assert_string_equal(out, "xdist.plugin,vramtrace_pytest");
    assert_int_equal(vt_record_pytest_plugins("a, vramtrace_pytest ,b", out, sizeof(out)), 0);
    assert_string_equal(out, "a, vramtrace_pytest ,b");
    assert_int_equal(vt_record_pytest_plugins("vramtrace_pytest_other", out, sizeof(out)), 0);
    assert_string_equal(out, "vramtrace_pytest_other,vramtrace_pytest");
    assert_int_equal(vt_record_pytest_plugins("a", out, 8), VT_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_defaults),
        cmocka_unit_test(test_parse_all_options),
        cmocka_unit_test(test_parse_forms),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_merge_empty),
        cmocka_unit_test(test_merge_keeps_keys),
        cmocka_unit_test(test_merge_already_async),
        cmocka_unit_test(test_merge_conflicting_backend),
        cmocka_unit_test(test_merge_brackets),
        cmocka_unit_test(test_plan_minimal),
        cmocka_unit_test(test_plan_all),
        cmocka_unit_test(test_plan_full_native),
        cmocka_unit_test(test_plan_tensors_both_vars),
        cmocka_unit_test(test_find_library),
        cmocka_unit_test(test_command_name),
        cmocka_unit_test(test_default_dir),
        cmocka_unit_test(test_trace_names),
        cmocka_unit_test(test_exit_status),
        cmocka_unit_test(test_pytest_plugins),
    };
    return cmocka_run_group_tests_name("record_env", tests, NULL, NULL);
}
