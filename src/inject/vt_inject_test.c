/* vt_inject_test.c - tests as ranges, and what each left live
 * (docs/ARCHITECTURE.md, "Tests as ranges: the pytest plugin").
 *
 * src/python/vramtrace_pytest.py calls these two functions through ctypes
 * around each test (the library found by the path in CUDA_INJECTION64_PATH,
 * already loaded: RTLD_NOLOAD):
 *
 *   int vt_test_begin(const char *nodeid)
 *   int vt_test_end(const char *nodeid, vt_test_summary *sum,
 *                   vt_test_site *sites, uint32_t max_sites)
 *
 * In the trace a test is an NVTX range of the domain "vramtrace.test"
 * (START with the node id as its message, END by its range id), which the
 * analyzer turns into the report's tests section.  In the process, begin
 * sets the mark of the table of live blocks (vt_marktab.h): while it is
 * set the hot path (vt_inject_driver.c, vt_inject_hook.c) adds each
 * allocation with the user's Python frame, and removes each free; end
 * reads what is left (vt_test_abi.h) for the plugin to fail the test.
 *
 * Never crashes the host, never takes the GIL (ctypes releases it around
 * the call), no C++: arguments checked, calls refused before the library
 * is initialised, after it finished, from its own threads, and with a
 * negative return when the table cannot be made. */
#include "vt_inject_int.h" /* first: _GNU_SOURCE */
#include "vt_marktab.h"

#define VT_TEST_EXPORT __attribute__((visibility("default")))
#define VT_TEST_DOMAIN "vramtrace.test"
/* Live blocks since a test began that the table follows (more are
 * dropped and counted); call sites of them.  ~2.3 MiB, made at the first
 * test. */
#define VT_TEST_MAX_BLOCKS (1u << 16)
#define VT_TEST_MAX_SITES 1024u

_Atomic int g_mark_on; /* the hot path's flag: a test is open */
static _Atomic(vt_marktab *) g_tab;
static _Atomic uint64_t g_test_seq, g_test_open; /* range ids; the open one (0: none) */
static pthread_mutex_t g_tab_mu = PTHREAD_MUTEX_INITIALIZER;

static vt_marktab *table(void)
{
    vt_marktab *m = atomic_load(&g_tab);
    if (m)
        return m;
    pthread_mutex_lock(&g_tab_mu);
    m = atomic_load(&g_tab);
    if (!m) {
        m = vt_marktab_create(VT_TEST_MAX_BLOCKS, VT_TEST_MAX_SITES);
        if (m)
            atomic_store(&g_tab, m);
        else
            say("vramtrace: no memory for the test table; tests are ranges only\n");
    }
    pthread_mutex_unlock(&g_tab_mu);
    return m;
}

static void emit_range(vt_nvtxop op, const char *nodeid, uint64_t id)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_NVTX;
    ev.u.nvtx.op = op;
    ev.u.nvtx.message = nodeid;
    ev.u.nvtx.domain = VT_TEST_DOMAIN;
    ev.u.nvtx.range_id = id;
    vt_inject_emit(&ev);
}

static int tracing(const inject_tls *T)
{
    return !T->internal && atomic_load(&g.active) && g.w && !atomic_load(&g.finished);
}

/* Begin the test `nodeid` (pytest's node id; any text): a range starts in
 * the trace, and the table follows what it allocates.  Returns 0, -1 when
 * the library is not tracing, -2 for a NULL or empty id, -3 when the table
 * could not be made (the range is still recorded), -4 when a test is open
 * already (end it first).  Any thread; one test at a time per process. */
VT_TEST_EXPORT int vt_test_begin(const char *nodeid);
int vt_test_begin(const char *nodeid)
{
    inject_tls *T = VT_TLS_ADDR(&t_in);
    if (!nodeid || !*nodeid)
        return -2;
    if (!tracing(T))
        return -1;
    uint64_t none = 0, id = atomic_load(&g_test_seq) + 1;
    if (!atomic_compare_exchange_strong(&g_test_open, &none, id))
        return -4;
    atomic_store(&g_test_seq, id);
    emit_range(VT_NVTX_START, nodeid, id);
    vt_marktab *m = table();
    if (!m)
        return -3;
    if (vt_marktab_begin(m) == 0)
        atomic_store(&g_mark_on, 1);
    return 0;
}

/* End the open test: its range ends in the trace; *sum (may be NULL) gets
 * what it allocated and left live, sites[0..max_sites) (may be NULL) the
 * call sites of what it left, largest first.  Returns the number of sites
 * written (>= 0), -1 when no test is open (or the library is not
 * tracing), -3 when the table could not be made (the range is ended).
 * `nodeid` is for symmetry and checks only: NULL or the begin's id. */
VT_TEST_EXPORT int vt_test_end(const char *nodeid, vt_test_summary *sum, vt_test_site *sites, uint32_t max_sites);
int vt_test_end(const char *nodeid, vt_test_summary *sum, vt_test_site *sites, uint32_t max_sites)
{
    (void)nodeid;
    inject_tls *T = VT_TLS_ADDR(&t_in);
    uint64_t id = atomic_exchange(&g_test_open, 0);
    if (!id)
        return -1;
    atomic_store(&g_mark_on, 0);
    vt_marktab *m = atomic_load(&g_tab);
    const int tensors = atomic_load(&g.torch_state) == VT_TORCH_ON || hook_attached();
    int n = m ? vt_marktab_end(m, tensors, sum, sites, max_sites) : -3;
    if (tracing(T))
        emit_range(VT_NVTX_END, NULL, id);
    if (n == -1) /* the table was not marked (a begin that could not mark) */
        n = -3;
    return n;
}

/* At the library's start (init_once, in the thread whose CUDA call
 * started it): the plugin had a test open before CUDA loaded the library,
 * and left "PID:NODEID" in VRAMTRACE_TEST_PENDING; that test begins now,
 * before its first allocation.  Only in that process: a child the test
 * started inherits the variable but runs no test of its own. */
void test_begin_pending(void)
{
    const char *v = getenv("VRAMTRACE_TEST_PENDING");
    char *end = NULL;
    if (!v || !*v)
        return;
    long pid = strtol(v, &end, 10);
    if (end && *end == ':' && pid == (long)getpid() && end[1])
        vt_test_begin(end + 1);
}

#ifdef VT_HAVE_PYSTACK
static int describe_code(uint64_t code, char *file, size_t nfile, char *func, size_t nfunc)
{
    return vt_pystack_describe(code, file, nfile, func, nfunc);
}
#endif

#define VT_TEST_PYFRAMES 24

/* An allocation while a test is open (the hot path checked g_mark_on):
 * the calling thread's Python frames, read as the capture reads them (no
 * GIL), name its site. */
void mark_alloc(uint64_t addr, uint64_t size, uint32_t dev, vt_allocapi api)
{
    vt_marktab *m = atomic_load_explicit(&g_tab, memory_order_acquire);
    if (!m || api == VT_API_HOST_ALLOC || api == VT_API_HOST_REGISTER)
        return;
    int npy = 0;
    vt_markframe fr[VT_TEST_PYFRAMES];
#ifdef VT_HAVE_PYSTACK
    vt_pyframe py[VT_TEST_PYFRAMES];
    if (g.pystack) {
        npy = vt_pystack_capture(py, VT_TEST_PYFRAMES);
        if (npy < 0)
            npy = 0;
        for (int i = 0; i < npy; i++)
            fr[i] = (vt_markframe){.key = py[i].key, .code = py[i].code, .line = py[i].line};
    }
    vt_marktab_alloc(m, addr, size, dev, api == VT_API_CACHING_ALLOCATOR, fr, npy, describe_code);
#else
    vt_marktab_alloc(m, addr, size, dev, api == VT_API_CACHING_ALLOCATOR, fr, npy, NULL);
#endif
}

void mark_free(uint64_t addr, vt_allocapi api)
{
    vt_marktab *m = atomic_load_explicit(&g_tab, memory_order_acquire);
    if (m && api != VT_API_HOST_ALLOC && api != VT_API_HOST_REGISTER)
        vt_marktab_release(m, addr, api == VT_API_CACHING_ALLOCATOR);
}

void mark_fork_child(void)
{
    atomic_store(&g_mark_on, 0);
    atomic_store(&g_test_open, 0);
    vt_marktab_forget(atomic_load(&g_tab));
}
