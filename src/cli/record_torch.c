/* record_torch.c - building and caching the PyTorch shim for `record`
 * (record_torch.h). */
#define _GNU_SOURCE
#include "record_torch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern const char vt_torch_shim_cpp[], vt_torch_abi_h[], vt_py_holders[], vt_py_sitecustomize[], vt_py_cupy[], vt_py_pytest[];
extern const unsigned long vt_torch_shim_cpp_len, vt_torch_abi_h_len, vt_py_holders_len, vt_py_sitecustomize_len,
    vt_py_cupy_len, vt_py_pytest_len;

#define PFX "vramtrace: "

/* snprintf for paths and messages: -1 when it did not fit (cut) */
__attribute__((format(printf, 3, 4))) static int pathf(char *out, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(out, n, fmt, ap);
    va_end(ap);
    return r < 0 || (size_t)r >= n ? -1 : 0;
}

int vt_torch_parse_version(const char *text, char *out, size_t outlen)
{
    /* the assignment at the start of a line (`__all__` may name it first) */
    const char *p = text;
    while (p && (p = strstr(p, "__version__")) && p != text && p[-1] != '\n')
        p += 11;
    if (!p || !outlen)
        return -1;
    p += 11;
    while (*p == ' ' || *p == '\t' || *p == ':' || (*p >= 'a' && *p <= 'z'))
        p++; /* `__version__: str = ...` too */
    if (*p != '=')
        return -1;
    p++;
    while (*p == ' ' || *p == '\t')
        p++;
    char q = *p;
    if (q != '\'' && q != '"')
        return -1;
    const char *e = strchr(++p, q);
    if (!e || e == p || (size_t)(e - p) >= outlen || memchr(p, '\n', (size_t)(e - p)))
        return -1;
    memcpy(out, p, (size_t)(e - p));
    out[e - p] = 0;
    return 0;
}

int vt_torch_cxx11_abi(const unsigned char *data, size_t len)
{
    return data && memmem(data, len, "St7__cxx11", 10) != NULL;
}

void vt_torch_cache_name(const char *version, int abi, uint32_t src_hash, char *out, size_t outlen)
{
    char v[64];
    size_t i = 0;
    for (; version && version[i] && i + 1 < sizeof(v); i++) {
        char c = version[i];
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '+' ||
                 c == '_' || c == '-';
        v[i] = ok ? c : '_';
    }
    v[i] = 0;
    pathf(out, outlen, "torch-%s-abi%d-%08x", i ? v : "unknown", abi ? 1 : 0, src_hash);
}

static uint32_t fnv(uint32_t h, const char *s, unsigned long n)
{
    for (unsigned long i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

uint32_t vt_torch_src_hash(void)
{
    uint32_t h = fnv(2166136261u, vt_torch_shim_cpp, vt_torch_shim_cpp_len);
    return fnv(h, vt_torch_abi_h, vt_torch_abi_h_len);
}

static int is_python_name(const char *s)
{
    const char *b = strrchr(s, '/');
    b = b ? b + 1 : s;
    return !strncmp(b, "python", 6);
}

void vt_torch_python_of(const char *cmd0, char *out, size_t outlen)
{
    pathf(out, outlen, "python3");
    if (!cmd0 || !*cmd0)
        return;
    if (is_python_name(cmd0)) {
        pathf(out, outlen, "%s", cmd0);
        return;
    }
    /* a script (torchrun, accelerate, ...): its #! interpreter */
    char path[PATH_MAX];
    if (strchr(cmd0, '/'))
        pathf(path, sizeof(path), "%s", cmd0);
    else {
        const char *pe = getenv("PATH");
        path[0] = 0;
        while (pe && *pe) {
            const char *c = strchr(pe, ':');
            size_t l = c ? (size_t)(c - pe) : strlen(pe);
            pathf(path, sizeof(path), "%.*s/%s", (int)l, pe, cmd0);
            if (access(path, X_OK) == 0)
                break;
            path[0] = 0;
            pe = c ? c + 1 : NULL;
        }
    }
    FILE *f = path[0] ? fopen(path, "r") : NULL;
    char line[512];
    if (f && fgets(line, sizeof(line), f) && !strncmp(line, "#!", 2)) {
        char *s = line + 2;
        while (*s == ' ')
            s++;
        char *e = s + strcspn(s, " \t\r\n");
        char *arg = e + strspn(e, " \t");
        *e = 0;
        const char *b = strrchr(s, '/');
        if (b && !strcmp(b + 1, "env") && *arg) { /* #!/usr/bin/env python3 */
            arg[strcspn(arg, " \t\r\n")] = 0;
            s = arg;
        }
        if (is_python_name(s))
            pathf(out, outlen, "%s", s);
    }
    if (f)
        fclose(f);
}

/* Run argv with stdout into out (NUL-terminated, truncated) and stderr into
 * logfd (or /dev/null); the exit status or -1. */
static int run_capture(char *const argv[], char *out, size_t outlen, int logfd)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC))
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (pid == 0) {
        int nul = open("/dev/null", O_RDWR);
        dup2(nul, 0);
        dup2(pfd[1], 1);
        dup2(logfd >= 0 ? logfd : nul, 2);
        if (!out)
            dup2(logfd >= 0 ? logfd : nul, 1);
        unsetenv("CUDA_INJECTION64_PATH"); /* never trace our own helpers */
        execvp(argv[0], argv);
        _exit(127);
    }
    close(pfd[1]);
    size_t n = 0;
    char sink[256];
    for (;;) {
        char *dst = out && n + 1 < outlen ? out + n : sink;
        size_t room = out && n + 1 < outlen ? outlen - 1 - n : sizeof(sink);
        ssize_t r = read(pfd[0], dst, room);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (dst != sink)
            n += (size_t)r;
    }
    close(pfd[0]);
    if (out && outlen)
        out[n] = 0;
    int ws;
    while (waitpid(pid, &ws, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

static char *read_small(const char *path, size_t max, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(max + 1);
    size_t n = buf ? fread(buf, 1, max, f) : 0;
    fclose(f);
    if (buf)
        buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

static int mkdirs(const char *path)
{
    char tmp[PATH_MAX];
    pathf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0700) && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(tmp, 0700) && errno != EEXIST ? -1 : 0;
}

static int write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* the CUDA runtime headers that c10/cuda includes */
static int find_cuda_include(const char *torch_dir, char *out, size_t outlen)
{
    const char *envs[] = {"CUDA_HOME", "CUDA_PATH"};
    char c[PATH_MAX];
    for (int i = 0; i < 2; i++) {
        const char *e = getenv(envs[i]);
        if (e && *e) {
            pathf(c, sizeof(c), "%s/include/cuda_runtime_api.h", e);
            if (exists(c)) {
                pathf(out, outlen, "%s/include", e);
                return 0;
            }
        }
    }
    const char *fixed[] = {"/usr/local/cuda/include", "/usr/include"};
    for (int i = 0; i < 2; i++) {
        pathf(c, sizeof(c), "%s/cuda_runtime_api.h", fixed[i]);
        if (exists(c)) {
            pathf(out, outlen, "%s", fixed[i]);
            return 0;
        }
    }
    /* the pip wheels': site-packages/nvidia/{cu13,cuda_runtime}/include */
    const char *wheels[] = {"nvidia/cu13/include", "nvidia/cu12/include", "nvidia/cuda_runtime/include"};
    for (int i = 0; i < 3; i++) {
        pathf(c, sizeof(c), "%s/../%s/cuda_runtime_api.h", torch_dir, wheels[i]);
        if (exists(c)) {
            pathf(out, outlen, "%s/../%s", torch_dir, wheels[i]);
            return 0;
        }
    }
    return -1;
}

/* $VRAMTRACE_CACHE_DIR, else $XDG_CACHE_HOME/vramtrace, ~/.cache/vramtrace */
static void cache_dir(char *cache, size_t len)
{
    const char *cd = getenv("VRAMTRACE_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (cd && *cd)
        pathf(cache, len, "%s", cd);
    else if (xdg && *xdg)
        pathf(cache, len, "%s/vramtrace", xdg);
    else if (home && *home)
        pathf(cache, len, "%s/.cache/vramtrace", home);
    else
        pathf(cache, len, "/tmp/vramtrace-cache-%d", (int)getuid());
}

int vt_record_python_dir(char *out, size_t outlen, char *why, size_t whylen)
{
    /* the holder walk, CuPy's hook, the pytest plugin and the sitecustomize
     * that loads the first two (pytest loads the plugin: PYTEST_PLUGINS) */
    static const struct {
        const char *name;
        const char *data;
        const unsigned long *len;
    } files[] = {{"vramtrace_holders.py", vt_py_holders, &vt_py_holders_len},
                 {"vramtrace_cupy.py", vt_py_cupy, &vt_py_cupy_len},
                 {"vramtrace_pytest.py", vt_py_pytest, &vt_py_pytest_len},
                 {"sitecustomize.py", vt_py_sitecustomize, &vt_py_sitecustomize_len}};
    enum { NFILES = sizeof(files) / sizeof(files[0]) };
    char cache[PATH_MAX], dir[PATH_MAX + 64], f[NFILES][PATH_MAX + 96], t[PATH_MAX + 128];
    cache_dir(cache, sizeof(cache));
    uint32_t h = 2166136261u;
    for (int i = 0; i < NFILES; i++)
        h = fnv(h, files[i].data, *files[i].len);
    pathf(dir, sizeof(dir), "%s/python-%08x", cache, h);
    int missing = 0;
    for (int i = 0; i < NFILES; i++) {
        pathf(f[i], sizeof(f[i]), "%s/%s", dir, files[i].name);
        missing |= !exists(f[i]);
    }
    if (missing) {
        /* written under temporary names, renamed: concurrent records see whole
         * files; sitecustomize.py, which imports the others, last */
        if (mkdirs(dir)) {
            pathf(why, whylen, "cannot create %s: %s", dir, strerror(errno));
            return -1;
        }
        for (int i = 0; i < NFILES; i++) {
            pathf(t, sizeof(t), "%s.%d", f[i], (int)getpid());
            if (write_file(t, files[i].data, *files[i].len) || rename(t, f[i])) {
                pathf(why, whylen, "cannot write %s: %s", f[i], strerror(errno));
                unlink(t);
                return -1;
            }
        }
    }
    pathf(out, outlen, "%s", dir);
    return 0;
}

int vt_record_torch_shim(const char *python, int quiet, int background, pid_t *builder, char *out, size_t outlen,
                         char *why, size_t whylen)
{
    if (builder)
        *builder = 0;
    why[0] = 0;
    /* where torch is, without importing it (an import costs seconds) */
    char *const find[] = {(char *)python, "-c",
                          "import importlib.util as u\n"
                          "s = u.find_spec('torch')\n"
                          "print(s.submodule_search_locations[0] if s and s.submodule_search_locations else '')",
                          NULL};
    char torch_dir[PATH_MAX];
    if (run_capture(find, torch_dir, sizeof(torch_dir), -1) != 0)
        return 0; /* no such interpreter: no torch to speak of */
    torch_dir[strcspn(torch_dir, "\r\n")] = 0;
    if (!torch_dir[0])
        return 0;
    char p[PATH_MAX + 64];
    pathf(p, sizeof(p), "%s/lib/libc10_cuda.so", torch_dir);
    if (!exists(p))
        return 0; /* a CPU-only torch */
    pathf(p, sizeof(p), "%s/version.py", torch_dir);
    char *vtext = read_small(p, 1 << 16, NULL);
    char version[64] = "unknown";
    if (!vtext || vt_torch_parse_version(vtext, version, sizeof(version)))
        pathf(version, sizeof(version), "unknown");
    free(vtext);
    pathf(p, sizeof(p), "%s/lib/libc10.so", torch_dir);
    size_t clen = 0;
    char *c10 = read_small(p, 64u << 20, &clen);
    int abi = c10 ? vt_torch_cxx11_abi((const unsigned char *)c10, clen) : 1;
    free(c10);

    char cache[PATH_MAX], name[128];
    cache_dir(cache, sizeof(cache));
    vt_torch_cache_name(version, abi, vt_torch_src_hash(), name, sizeof(name));
    char dir[PATH_MAX + 160], so[PATH_MAX + 200];
    pathf(dir, sizeof(dir), "%s/%s", cache, name);
    pathf(so, sizeof(so), "%s/libvt_torch.so", dir);
    if (exists(so)) {
        pathf(out, outlen, "%s", so);
        return 1;
    }

    char inc[PATH_MAX + 64];
    pathf(inc, sizeof(inc), "%s/include/c10/cuda/CUDACachingAllocator.h", torch_dir);
    if (!exists(inc)) {
        pathf(why, whylen, "torch %s at %s has no C++ headers (include/c10/cuda)", version, torch_dir);
        return -1;
    }
    char cuda_inc[PATH_MAX + 64];
    if (find_cuda_include(torch_dir, cuda_inc, sizeof(cuda_inc))) {
        pathf(why, whylen, "no CUDA runtime headers (cuda_runtime_api.h) for the shim: set CUDA_HOME");
        return -1;
    }
    char src[PATH_MAX + 200], tdir[PATH_MAX + 200], logp[PATH_MAX + 200], tmp[PATH_MAX + 220];
    pathf(src, sizeof(src), "%s/src/torch/vt_torch_shim.cpp", dir);
    pathf(tdir, sizeof(tdir), "%s/src/torch", dir);
    pathf(logp, sizeof(logp), "%s/build.log", dir);
    pathf(tmp, sizeof(tmp), "%s/libvt_torch.so.%d", dir, (int)getpid());
    char abih[PATH_MAX + 200];
    pathf(abih, sizeof(abih), "%s/src/vt_torch_abi.h", dir);
    /* One build at a time: SHIM.lock, held by the builder until it ends
     * (the library sees a build that died without a word by it); a
     * record that finds it held waits for that build's result instead. */
    char lockp[PATH_MAX + 220];
    pathf(lockp, sizeof(lockp), "%s.lock", so);
    int lk = mkdirs(tdir) ? -1 : open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lk < 0) {
        pathf(why, whylen, "cannot write into %s: %s", dir, strerror(errno));
        return -1;
    }
    if (flock(lk, background ? LOCK_EX | LOCK_NB : LOCK_EX)) {
        close(lk);
        if (!background || errno != EWOULDBLOCK) {
            pathf(why, whylen, "cannot lock %s: %s", lockp, strerror(errno));
            return -1;
        }
        pathf(out, outlen, "%s", so); /* another record builds it */
        return 2;
    }
    if (exists(so)) { /* built while we waited */
        close(lk);
        pathf(out, outlen, "%s", so);
        return 1;
    }
    if (write_file(src, vt_torch_shim_cpp, vt_torch_shim_cpp_len) ||
        write_file(abih, vt_torch_abi_h, vt_torch_abi_h_len)) {
        pathf(why, whylen, "cannot write the shim's sources into %s: %s", dir, strerror(errno));
        close(lk);
        return -1;
    }
    const char *cxx = getenv("CXX");
    if (!cxx || !*cxx)
        cxx = "c++";
    int logfd = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    char d_abi[40], i1[PATH_MAX + 80], i2[PATH_MAX + 80], l1[PATH_MAX + 80], r1[PATH_MAX + 96];
    pathf(d_abi, sizeof(d_abi), "-D_GLIBCXX_USE_CXX11_ABI=%d", abi);
    pathf(i1, sizeof(i1), "-I%s/include", torch_dir);
    pathf(i2, sizeof(i2), "-I%s", cuda_inc);
    pathf(l1, sizeof(l1), "-L%s/lib", torch_dir);
    pathf(r1, sizeof(r1), "-Wl,-rpath,%s/lib", torch_dir);
    char *const cc[] = {(char *)cxx, "-std=c++17", "-O2", "-fPIC", "-shared", "-fvisibility=hidden", d_abi, i1, i2,
                        src, "-o", tmp, l1, r1, "-lc10_cuda", "-lc10", NULL};
    if (logfd >= 0) {
        for (int i = 0; cc[i]; i++)
            dprintf(logfd, "%s%s", i ? " " : "", cc[i]);
        dprintf(logfd, "\n");
    }
    /* The compiler runs beside the program (the library waits for its
     * result at the allocator's first segment, after `import torch`), in
     * a child that outlives nothing but this process: it renames the shim
     * into place, or leaves SHIM.failed with the reason. */
    char failed[PATH_MAX + 220];
    pathf(failed, sizeof(failed), "%s.failed", so);
    unlink(failed);
    if (!quiet)
        fprintf(stderr, PFX "building the PyTorch allocator shim for torch %s beside the program (once; cached in %s)\n",
                version, dir);
    fflush(NULL);
    pid_t pid = background ? fork() : 0;
    if (pid < 0) {
        pathf(why, whylen, "fork: %s", strerror(errno));
        if (logfd >= 0)
            close(logfd);
        close(lk);
        return -1;
    }
    if (pid == 0) {
        int rc = run_capture(cc, NULL, 0, logfd);
        char reason[PATH_MAX + 300];
        reason[0] = 0;
        if (rc != 0 || rename(tmp, so)) {
            unlink(tmp);
            if (rc == 127)
                pathf(reason, sizeof(reason), "no C++ compiler (%s) to build the shim; set CXX", cxx);
            else
                pathf(reason, sizeof(reason), "the shim did not build against torch %s (log: %s)", version, logp);
        }
        if (logfd >= 0)
            close(logfd);
        if (reason[0]) {
            char ftmp[PATH_MAX + 240];
            pathf(ftmp, sizeof(ftmp), "%s.%d", failed, (int)getpid());
            if (write_file(ftmp, reason, strlen(reason)) == 0)
                rename(ftmp, failed);
        }
        close(lk); /* the lock goes with the last descriptor: the builder's */
        if (background)
            _exit(reason[0] ? 1 : 0);
        if (reason[0]) {
            pathf(why, whylen, "%s", reason);
            return -1;
        }
        pathf(out, outlen, "%s", so);
        return 1;
    }
    if (logfd >= 0)
        close(logfd);
    close(lk); /* the builder holds the lock now */
    if (builder)
        *builder = pid;
    pathf(out, outlen, "%s", so);
    return 2;
}
