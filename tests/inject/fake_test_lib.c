/* fake_test_lib.c - a stand-in for libvramtrace.so's test entry points
 * (src/inject/vt_inject_test.c) with the same C signatures, over the real
 * table (vt_marktab.c), for the pytest plugin's tests
 * (tests/inject/test_pytest_plugin.py) on a machine without a GPU.
 *
 * A stand-in torch loads it as CUDA would (at its first "CUDA" call) and
 * calls fake_cuda_init() as CUDA calls InitializeInjection: a test open
 * before that waits in VRAMTRACE_TEST_PENDING, as with the library.  Its
 * tensors and segments come through fake_alloc/fake_free with the Python
 * frames the stand-in read (file, function, line), as the library reads
 * them from the thread's frame chain.  Each range is written to
 * fake_ranges ("B nodeid\n", "E\n") for the test to compare. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vt_marktab.h"

#define EXPORT __attribute__((visibility("default")))
#define NCODE 256

EXPORT char fake_ranges[8192];
EXPORT int fake_started, fake_tensors;
static vt_marktab *tab;
static int open_test;
static char *code_file[NCODE], *code_func[NCODE];
static int ncode;

static void log_range(const char *what)
{
    size_t n = strlen(fake_ranges);
    snprintf(fake_ranges + n, sizeof(fake_ranges) - n, "%s\n", what);
}

EXPORT int vt_test_begin(const char *nodeid)
{
    if (!nodeid || !*nodeid)
        return -2;
    if (!fake_started)
        return -1;
    if (open_test)
        return -4;
    open_test = 1;
    char line[600];
    snprintf(line, sizeof(line), "B %s", nodeid);
    log_range(line);
    return vt_marktab_begin(tab) == 0 ? 0 : -3;
}

EXPORT int vt_test_end(const char *nodeid, vt_test_summary *sum, vt_test_site *sites, uint32_t max_sites)
{
    (void)nodeid;
    if (!open_test)
        return -1;
    open_test = 0;
    log_range("E");
    int n = vt_marktab_end(tab, fake_tensors, sum, sites, max_sites);
    return n < 0 ? -3 : n;
}

EXPORT void fake_cuda_init(void)
{
    if (fake_started)
        return;
    tab = vt_marktab_create(1024, 64);
    fake_started = 1;
    const char *v = getenv("VRAMTRACE_TEST_PENDING"); /* "PID:NODEID", as vt_inject_test.c reads it */
    char *end = NULL;
    long pid = v ? strtol(v, &end, 10) : 0;
    if (v && end && *end == ':' && pid == (long)getpid() && end[1])
        vt_test_begin(end + 1);
}

static int describe(uint64_t code, char *file, size_t nfile, char *func, size_t nfunc)
{
    if (code >= (uint64_t)ncode)
        return -1;
    snprintf(file, nfile, "%s", code_file[code]);
    snprintf(func, nfunc, "%s", code_func[code]);
    return 0;
}

static uint32_t code_of(const char *file, const char *func)
{
    for (int i = 0; i < ncode; i++)
        if (!strcmp(code_file[i], file) && !strcmp(code_func[i], func))
            return (uint32_t)i;
    if (ncode == NCODE)
        return NCODE;
    code_file[ncode] = strdup(file);
    code_func[ncode] = strdup(func);
    return (uint32_t)ncode++;
}

/* A block: tensor 1 for a tensor (then tensor events are on), 0 for the
 * allocator's segment; frames innermost first. */
EXPORT void fake_alloc(uint64_t addr, uint64_t size, uint32_t dev, int tensor, int nfr, const char **files,
                       const char **funcs, const uint32_t *lines)
{
    vt_markframe fr[16];
    if (nfr > 16)
        nfr = 16;
    for (int i = 0; i < nfr; i++) {
        uint32_t c = code_of(files[i], funcs[i]);
        fr[i] = (vt_markframe){.key = c + 1, .code = c, .line = lines[i]};
    }
    if (tensor)
        fake_tensors = 1;
    vt_marktab_alloc(tab, addr, size, dev, tensor, fr, nfr, describe);
}

EXPORT void fake_free(uint64_t addr, int tensor)
{
    vt_marktab_release(tab, addr, tensor);
}
