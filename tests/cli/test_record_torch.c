/* test_record_torch.c - `vramtrace record`'s PyTorch shim without torch
 * (src/cli/record_torch.c): version and ABI detection, cache names, the
 * interpreter of a command, and the build against a stand-in torch tree,
 * interpreter and compiler (shell scripts): built once, then found in the
 * cache; a failing compiler, a missing one and missing headers each give
 * one reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record_torch.h"

/* the embedded sources (generated into the vramtrace binary; here stand-ins) */
const char vt_torch_shim_cpp[] = "// shim\n";
const unsigned long vt_torch_shim_cpp_len = sizeof(vt_torch_shim_cpp) - 1;
const char vt_torch_abi_h[] = "// abi\n";
const unsigned long vt_torch_abi_h_len = sizeof(vt_torch_abi_h) - 1;
const char vt_py_holders[] = "# holders\n";
const unsigned long vt_py_holders_len = sizeof(vt_py_holders) - 1;
const char vt_py_sitecustomize[] = "# sitecustomize\n";
const unsigned long vt_py_sitecustomize_len = sizeof(vt_py_sitecustomize) - 1;
const char vt_py_cupy[] = "# cupy hook\n";
const unsigned long vt_py_cupy_len = sizeof(vt_py_cupy) - 1;
const char vt_py_pytest[] = "# pytest plugin\n";
const unsigned long vt_py_pytest_len = sizeof(vt_py_pytest) - 1;

static void test_version(void **state)
{
    (void)state;
    char v[64];
    assert_int_equal(vt_torch_parse_version("__version__ = '2.11.0+cu130'\n", v, sizeof(v)), 0);
    assert_string_equal(v, "2.11.0+cu130");
    /* __all__ names it first; annotated assignment */
    assert_int_equal(vt_torch_parse_version("__all__ = ['__version__', 'cuda']\n__version__: str = \"2.9.1\"\n", v,
                                            sizeof(v)),
                     0);
    assert_string_equal(v, "2.9.1");
    assert_int_equal(vt_torch_parse_version("version = '1'\n", v, sizeof(v)), -1);
    assert_int_equal(vt_torch_parse_version("__version__ = 2\n", v, sizeof(v)), -1);
    assert_int_equal(vt_torch_parse_version("__version__ = '2.11", v, sizeof(v)), -1);
    assert_int_equal(vt_torch_parse_version(NULL, v, sizeof(v)), -1);
}

static void test_abi_and_cache_name(void **state)
{
    (void)state;
    const unsigned char with[] = "xx_ZNSt7__cxx1112basic_stringIcEE", without[] = "_ZNSs4_Rep";
    assert_int_equal(vt_torch_cxx11_abi(with, sizeof(with)), 1);
    assert_int_equal(vt_torch_cxx11_abi(without, sizeof(without)), 0);
    char n[128];
    vt_torch_cache_name("2.11.0+cu130", 1, 0xabcdef01u, n, sizeof(n));
    assert_string_equal(n, "torch-2.11.0+cu130-abi1-abcdef01");
    vt_torch_cache_name("2.1/../x y", 0, 1, n, sizeof(n));
    assert_string_equal(n, "torch-2.1_.._x_y-abi0-00000001");
    vt_torch_cache_name("", 1, 2, n, sizeof(n));
    assert_string_equal(n, "torch-unknown-abi1-00000002");
    assert_int_not_equal(vt_torch_src_hash(), 0);
}

static char g_dir[PATH_MAX];

static void put(const char *rel, const char *text, int exec)
{
    char p[PATH_MAX + 64], d[PATH_MAX * 2];
    snprintf(p, sizeof(p), "%s/%s", g_dir, rel);
    snprintf(d, sizeof(d), "mkdir -p \"$(dirname '%s')\"", p);
    assert_int_equal(system(d), 0);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    if (exec)
        chmod(p, 0755);
}

static void test_python_of(void **state)
{
    (void)state;
    char out[PATH_MAX], p[PATH_MAX + 32];
    vt_torch_python_of("/usr/bin/python3.12", out, sizeof(out));
    assert_string_equal(out, "/usr/bin/python3.12");
    put("bin/torchrun", "#!/opt/venv/bin/python3\nprint(1)\n", 1);
    snprintf(p, sizeof(p), "%s/bin/torchrun", g_dir);
    vt_torch_python_of(p, out, sizeof(out));
    assert_string_equal(out, "/opt/venv/bin/python3");
    put("bin/envpy", "#!/usr/bin/env python3.11 -u\n", 1);
    snprintf(p, sizeof(p), "%s/bin/envpy", g_dir);
    vt_torch_python_of(p, out, sizeof(out));
    assert_string_equal(out, "python3.11");
    put("bin/sh-script", "#!/bin/sh\n", 1);
    snprintf(p, sizeof(p), "%s/bin/sh-script", g_dir);
    vt_torch_python_of(p, out, sizeof(out));
    assert_string_equal(out, "python3");
    vt_torch_python_of("./a.out", out, sizeof(out));
    assert_string_equal(out, "python3");
}

/* a stand-in torch tree and an interpreter that names it */
static void fake_torch(int headers)
{
    char s[PATH_MAX * 2];
    put("torch/version.py", "__all__ = ['__version__']\n__version__ = '9.9.0+test'\n", 0);
    put("torch/lib/libc10_cuda.so", "elf", 0);
    put("torch/lib/libc10.so", "....St7__cxx11....", 0);
    if (headers)
        put("torch/include/c10/cuda/CUDACachingAllocator.h", "// h\n", 0);
    else {
        snprintf(s, sizeof(s), "rm -rf '%s/torch/include'", g_dir);
        assert_int_equal(system(s), 0);
    }
    put("cuda/include/cuda_runtime_api.h", "// h\n", 0);
    snprintf(s, sizeof(s), "#!/bin/sh\necho '%s/torch'\n", g_dir);
    put("bin/python3", s, 1);
    snprintf(s, sizeof(s), "%s/cuda", g_dir);
    setenv("CUDA_HOME", s, 1);
    snprintf(s, sizeof(s), "%s/cache", g_dir);
    setenv("VRAMTRACE_CACHE_DIR", s, 1);
}

/* the stand-in torch with an empty cache; its interpreter's path in py */
static void fresh_torch(char *py, size_t n)
{
    char s[PATH_MAX * 2];
    snprintf(s, sizeof(s), "rm -rf '%s/cache'", g_dir);
    assert_int_equal(system(s), 0);
    fake_torch(1);
    snprintf(py, n, "%s/bin/python3", g_dir);
}

static int compiles(void)
{
    char p[PATH_MAX + 32];
    snprintf(p, sizeof(p), "%s/cxx.calls", g_dir);
    FILE *f = fopen(p, "r");
    int n = 0, c;
    while (f && (c = fgetc(f)) != EOF)
        n += c == '\n';
    if (f)
        fclose(f);
    return n;
}

static void test_build_and_cache(void **state)
{
    (void)state;
    char py[PATH_MAX + 32], out[PATH_MAX], why[PATH_MAX + 128], s[PATH_MAX * 2];
    fake_torch(1);
    snprintf(py, sizeof(py), "%s/bin/python3", g_dir);
    /* a compiler that writes its -o file and counts its calls */
    snprintf(s, sizeof(s),
             "#!/bin/sh\necho \"$@\" >>'%s/cxx.calls'\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && echo so >\"$2\"; shift; done\n",
             g_dir);
    put("bin/cxx-ok", s, 1);
    snprintf(s, sizeof(s), "%s/bin/cxx-ok", g_dir);
    setenv("CXX", s, 1);
    assert_int_equal(vt_record_torch_shim(py, 1, 0, NULL, out, sizeof(out), why, sizeof(why)), 1);
    assert_non_null(strstr(out, "/cache/torch-9.9.0+test-abi1-"));
    assert_int_equal(access(out, R_OK), 0);
    assert_int_equal(compiles(), 1);
    snprintf(s, sizeof(s), "%s/cxx.calls", g_dir);
    FILE *f = fopen(s, "r");
    char line[4096] = "";
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    assert_non_null(strstr(line, "-D_GLIBCXX_USE_CXX11_ABI=1"));
    assert_non_null(strstr(line, "/torch/include"));
    assert_non_null(strstr(line, "-lc10_cuda"));
    /* the second time: from the cache, no compiler */
    assert_int_equal(vt_record_torch_shim(py, 1, 0, NULL, out, sizeof(out), why, sizeof(why)), 1);
    assert_int_equal(compiles(), 1);
}

/* The build beside the program: 2 and the future path at once; the child
 * renames the shim into place, or leaves PATH.failed with the reason. */
static void test_build_background(void **state)
{
    (void)state;
    char py[PATH_MAX + 32], out[PATH_MAX], why[PATH_MAX + 128], s[PATH_MAX * 2];
    fresh_torch(py, sizeof(py));
    /* a slow compiler: the call returns before it is done */
    snprintf(s, sizeof(s),
             "#!/bin/sh\nsleep 0.3\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && echo so >\"$2\"; shift; done\n");
    put("bin/cxx-slow", s, 1);
    snprintf(s, sizeof(s), "%s/bin/cxx-slow", g_dir);
    setenv("CXX", s, 1);
    pid_t b = 0;
    assert_int_equal(vt_record_torch_shim(py, 1, 1, &b, out, sizeof(out), why, sizeof(why)), 2);
    assert_true(b > 0);
    assert_int_not_equal(access(out, F_OK), 0); /* not yet */
    int ws = 0;
    assert_int_equal(waitpid(b, &ws, 0), b);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    assert_int_equal(access(out, R_OK), 0);
    char failed[PATH_MAX + 16];
    snprintf(failed, sizeof(failed), "%s.failed", out);
    assert_int_not_equal(access(failed, F_OK), 0);
    /* cached now: 1, no builder */
    assert_int_equal(vt_record_torch_shim(py, 1, 1, &b, out, sizeof(out), why, sizeof(why)), 1);
    assert_int_equal(b, 0);
    /* a failing build: the reason in PATH.failed */
    snprintf(s, sizeof(s), "rm -rf '%s/cache'", g_dir);
    assert_int_equal(system(s), 0);
    put("bin/cxx-bad", "#!/bin/sh\nexit 1\n", 1);
    snprintf(s, sizeof(s), "%s/bin/cxx-bad", g_dir);
    setenv("CXX", s, 1);
    assert_int_equal(vt_record_torch_shim(py, 1, 1, &b, out, sizeof(out), why, sizeof(why)), 2);
    assert_int_equal(waitpid(b, &ws, 0), b);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 1);
    assert_int_not_equal(access(out, F_OK), 0);
    snprintf(failed, sizeof(failed), "%s.failed", out);
    FILE *f = fopen(failed, "r");
    assert_non_null(f);
    char line[PATH_MAX + 300] = "";
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    assert_non_null(strstr(line, "did not build against torch 9.9.0+test"));
}

static void test_build_failures(void **state)
{
    (void)state;
    char py[PATH_MAX + 32], out[PATH_MAX], why[PATH_MAX + 128], s[PATH_MAX * 2];
    fresh_torch(py, sizeof(py));
    put("bin/cxx-bad", "#!/bin/sh\necho 'error: no such header' >&2\nexit 1\n", 1);
    snprintf(s, sizeof(s), "%s/bin/cxx-bad", g_dir);
    setenv("CXX", s, 1);
    assert_int_equal(vt_record_torch_shim(py, 1, 0, NULL, out, sizeof(out), why, sizeof(why)), -1);
    assert_non_null(strstr(why, "did not build against torch 9.9.0+test"));
    assert_non_null(strstr(why, "build.log"));
    setenv("CXX", "/nonexistent/c++", 1);
    assert_int_equal(vt_record_torch_shim(py, 1, 0, NULL, out, sizeof(out), why, sizeof(why)), -1);
    assert_non_null(strstr(why, "no C++ compiler"));
    fake_torch(0);
    assert_int_equal(vt_record_torch_shim(py, 1, 0, NULL, out, sizeof(out), why, sizeof(why)), -1);
    assert_non_null(strstr(why, "no C++ headers"));
    /* no torch at all: nothing to do, no reason */
    put("bin/python-notorch", "#!/bin/sh\necho\n", 1);
    snprintf(py, sizeof(py), "%s/bin/python-notorch", g_dir);
    why[0] = 'x';
    assert_int_equal(vt_record_torch_shim(py, 1, 0, NULL, out, sizeof(out), why, sizeof(why)), 0);
    assert_int_equal(why[0], 0);
    assert_int_equal(vt_record_torch_shim("/nonexistent/python3", 1, 0, NULL, out, sizeof(out), why, sizeof(why)), 0);
}

static void test_python_dir(void **state)
{
    (void)state;
    char s[PATH_MAX * 2], out[PATH_MAX], why[PATH_MAX + 64];
    snprintf(s, sizeof(s), "%s/pycache", g_dir);
    setenv("VRAMTRACE_CACHE_DIR", s, 1);
    assert_int_equal(vt_record_python_dir(out, sizeof(out), why, sizeof(why)), 0);
    assert_non_null(strstr(out, "/pycache/python-"));
    char f[PATH_MAX * 2];
    snprintf(f, sizeof(f), "%s/sitecustomize.py", out);
    assert_int_equal(access(f, R_OK), 0);
    snprintf(f, sizeof(f), "%s/vramtrace_holders.py", out);
    assert_int_equal(access(f, R_OK), 0);
    snprintf(f, sizeof(f), "%s/vramtrace_cupy.py", out);
    assert_int_equal(access(f, R_OK), 0);
    snprintf(f, sizeof(f), "%s/vramtrace_pytest.py", out);
    assert_int_equal(access(f, R_OK), 0);
    char again[PATH_MAX];
    assert_int_equal(vt_record_python_dir(again, sizeof(again), why, sizeof(why)), 0);
    assert_string_equal(out, again);
}

int main(void)
{
    snprintf(g_dir, sizeof(g_dir), "/tmp/vt-record-torch-%d", (int)getpid());
    mkdir(g_dir, 0700);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),       cmocka_unit_test(test_abi_and_cache_name),
        cmocka_unit_test(test_python_of),     cmocka_unit_test(test_build_and_cache), cmocka_unit_test(test_build_background),
        cmocka_unit_test(test_build_failures), cmocka_unit_test(test_python_dir),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char s[PATH_MAX + 16];
    snprintf(s, sizeof(s), "rm -rf '%s'", g_dir);
    if (system(s)) {
    }
    return rc;
}
