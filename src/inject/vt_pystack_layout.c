/* vt_pystack_layout.c - the byte offsets of what the walk reads, per CPython
 * minor version, checked at init against the running interpreter (type
 * objects, RESUME opcodes, PyCode_Addr2Line, 3.13 _Py_DebugOffsets);
 * init, and the test hooks that break a field on purpose. */
#include "vt_pystack_int.h"
static const vt_pylayout k_layouts[] = {
    {10, 16, 24, -1, -1, 24, 32, 96, -1, -1, 104, 112, -1, 120, 40, 8, -1, -1, 16, 32, 16, 32, 48, 72},
    {11, 16, -1, 56, 8, 48, 32, 56, 69, 68, 112, 120, 128, 136, 72, 8, 168, 184, 16, 32, 16, 32, 48, 72},
    {12, 16, -1, 56, 0, 8, 0, 56, 70, -1, 112, 120, 128, 136, 68, 8, 176, 192, 16, 32, 16, 32, 40, 56},
    {13, 16, 72, -1, -1, 8, 0, 56, 70, -1, 112, 120, 128, 136, 68, 8, 184, 200, 16, 32, 16, 32, 40, 56},
};
/* ---- init ---- */

int fail(int rc, const char *fmt, const char *arg)
{
    snprintf(g_py.why, sizeof g_py.why, fmt, arg ? arg : "");
    return rc;
}

/* 3.13: the interpreter publishes its offsets; ours must agree. */
static int check_debug_offsets(void)
{
    uintptr_t rt = (uintptr_t)dlsym(RTLD_DEFAULT, "_PyRuntime");
    uint8_t d[DBG_END];
    if (!rt || safe_read(d, rt, sizeof d) < 0)
        return fail(VT_ERR_CORRUPT, "3.13: _PyRuntime unreadable%s", NULL);
    if (memcmp(d + DBG_COOKIE, "xdebugpy", 8) != 0)
        return fail(VT_ERR_CORRUPT, "3.13: no _Py_DebugOffsets cookie%s", NULL);
    uint64_t v[DBG_END / 8];
    memcpy(v, d, sizeof v);
    if (v[DBG_FREE_THREADED / 8])
        return fail(VT_ERR_VERSION, "free-threaded build not supported%s", NULL);
    const vt_pylayout *L = &g_py.L;
    const struct { int dbg; long ours; const char *name; } chk[] = {
        {DBG_TS_INTERP, L->ts_interp, "thread_state.interp"},
        {DBG_TS_CURRENT_FRAME, L->ts_frame, "thread_state.current_frame"},
        {DBG_IF_PREVIOUS, L->f_previous, "interpreter_frame.previous"},
        {DBG_IF_EXECUTABLE, L->f_code, "interpreter_frame.executable"},
        {DBG_IF_INSTR_PTR, L->f_instr, "interpreter_frame.instr_ptr"},
        {DBG_IF_OWNER, L->f_owner, "interpreter_frame.owner"},
        {DBG_CO_FILENAME, L->co_filename, "code_object.filename"},
        {DBG_CO_NAME, L->co_name, "code_object.name"},
        {DBG_CO_QUALNAME, L->co_qualname, "code_object.qualname"},
        {DBG_CO_LINETABLE, L->co_linetable, "code_object.linetable"},
        {DBG_CO_FIRSTLINENO, L->co_firstlineno, "code_object.firstlineno"},
        {DBG_CO_ADAPTIVE, L->co_adaptive, "code_object.co_code_adaptive"},
        {DBG_OB_TYPE, L->ob_type, "pyobject.ob_type"},
        {DBG_BYTES_OB_SIZE, L->ob_size, "bytes_object.ob_size"},
        {DBG_BYTES_SVAL, L->bytes_sval, "bytes_object.ob_sval"},
        {DBG_U_STATE, L->u_state, "unicode_object.state"},
        {DBG_U_LENGTH, L->u_length, "unicode_object.length"},
        {DBG_U_ASCII_SIZE, L->u_ascii_size, "unicode_object.asciiobject_size"},
    };
    for (size_t i = 0; i < sizeof chk / sizeof chk[0]; i++)
        if ((long)v[chk[i].dbg / 8] != chk[i].ours)
            return fail(VT_ERR_CORRUPT, "_Py_DebugOffsets disagree on %s", chk[i].name);
    return 0;
}

/* Test hook state: a layout field to get wrong on purpose. */
static const char *t_break_field;
static long t_break_delta;

static const struct {
    const char *name;
    size_t off;
} k_fields[] = {
#define F(n) {#n, offsetof(vt_pylayout, n)}
    F(ts_interp), F(ts_frame), F(ts_cframe), F(cf_current), F(f_previous), F(f_code),
    F(f_instr), F(f_owner), F(f_is_entry), F(co_filename), F(co_name), F(co_qualname),
    F(co_linetable), F(co_firstlineno), F(co_firsttraceable), F(co_adaptive), F(ob_type),
    F(ob_size), F(bytes_sval), F(u_length), F(u_state), F(u_ascii_size), F(u_compact_size),
#undef F
};

static int32_t *field_of(vt_pylayout *L, const char *name)
{
    for (size_t i = 0; i < sizeof k_fields / sizeof k_fields[0]; i++)
        if (!strcmp(k_fields[i].name, name))
            return (int32_t *)((char *)L + k_fields[i].off);
    return NULL;
}

static void break_field(vt_pylayout *L, const char *name, long delta)
{
    int32_t *f = field_of(L, name);
    if (f && *f >= 0)
        *f += (int32_t)delta;
}

int vt_pystack_test_reset(const char *field, long delta)
{
    static char name[64];
    t_break_field = NULL;
    if (field) {
        vt_pylayout probe = k_layouts[0];
        if (!field_of(&probe, field))
            return VT_ERR_INVALID;
        snprintf(name, sizeof name, "%s", field);
        t_break_field = name;
        t_break_delta = delta;
    }
    g_py.done = g_py.ready = g_py.result = 0;
    g_py.why[0] = 0;
    return 0;
}

/* Check the layouts on the calling thread's own frame chain with reads that
 * cannot fault: structure (types, pointers, bounds, RESUME at the first
 * traceable instruction, entry marks), lines against PyCode_Addr2Line,
 * names (filename != function; 3.11+ qualname ends with name).  Returns 1
 * checked, 0 nothing to check (no Python frame), or VT_ERR_CORRUPT with
 * g_py.why set. */
static int validate_here(void)
{
    int bad = 0;
    uintptr_t ts = (uintptr_t)g_py.get_tstate();
    if (!ts)
        return 0;
    if (!ptr_ok(ts) || rdp(1, ts + g_py.L.ts_interp, &bad) != g_py.main_interp || bad)
        return fail(VT_ERR_CORRUPT, "Python %s: thread state layout mismatch", g_py.version);
    vt_pyframe fr[VT_PYSTACK_MAX_DEPTH];
    if (g_py.L.ts_cframe >= 0) {
        /* 3.11/3.12: the _PyCFrame is the root one inside the thread state
         * or lives on this thread's C stack, in an eval loop below us */
        uintptr_t cf = rdp(1, ts + g_py.L.ts_cframe, &bad), here = (uintptr_t)&cf;
        if (bad || !ptr_ok(cf) ||
            !((cf >= ts && cf < ts + 4096) || (cf > here && cf - here < (64u << 20))))
            return fail(VT_ERR_CORRUPT, "Python %s: thread state cframe layout mismatch", g_py.version);
    }
    uintptr_t f = vt_py_top_frame_safe(ts, &bad);
    if (bad)
        return fail(VT_ERR_CORRUPT, "Python %s: unreadable frame pointer", g_py.version);
    int n = vt_py_walk_safe(f, fr, VT_PYSTACK_MAX_DEPTH);
    if (n < 0)
        return fail(VT_ERR_CORRUPT, "Python %s: frame layout mismatch", g_py.version);
    /* Our own native stack says how many C-level eval calls are running:
     * at least that many entry marks (the unwind may stop early, never
     * invent frames), and frames if there is any. */
    void *raw[256];
    int nraw = backtrace(raw, 256), nev = 0, marks = 0;
    for (int i = 0; i < nraw; i++)
        nev += vt_pystack_is_eval((uint64_t)(uintptr_t)raw[i]);
    for (int i = 0; i < n; i++)
        marks += fr[i].nentry;
    if (n == 0 && nev == 0)
        return 0;
    if (nev > marks && !(n > 0 && (fr[n - 1].flags & VT_PYFRAME_TRUNCATED)))
        return fail(VT_ERR_CORRUPT, "Python %s: frame chain shorter than the native stack", g_py.version);
    /* names: a neighbouring field is often a str too, so compare them:
     * a file named like its function is possible, in most frames it is
     * not; a qualified name ends with the name (code objects rebuilt with
     * replace() may differ: a majority must agree) */
    int same_file = 0, qual_ok = 0;
    for (int i = 0; i < n; i++) {
        char file[512], func[256], name[256];
        if (vt_py_describe_safe(fr[i].code, file, sizeof file, func, sizeof func) < 0 || !file[0] || !func[0])
            return fail(VT_ERR_CORRUPT, "Python %s: code object layout mismatch", g_py.version);
        if (g_py.L.co_qualname >= 0) {
            size_t lf, ln;
            if (vt_py_read_str_safe(rdp(1, fr[i].code + g_py.L.co_name, &bad), name, sizeof name) < 0 || bad)
                return fail(VT_ERR_CORRUPT, "Python %s: code name layout mismatch", g_py.version);
            lf = strlen(func);
            ln = strlen(name);
            qual_ok += lf >= ln && !strcmp(func + lf - ln, name);
        } else {
            snprintf(name, sizeof name, "%s", func);
        }
        same_file += !strcmp(file, name) || !strcmp(file, func);
    }
    if (n > 0 && (2 * same_file > n || (g_py.L.co_qualname >= 0 && 2 * qual_ok < n)))
        return fail(VT_ERR_CORRUPT, "Python %s: code name layout mismatch", g_py.version);
    if (!(fr[n - 1].flags & VT_PYFRAME_TRUNCATED) && fr[n - 1].nentry == 0)
        return fail(VT_ERR_CORRUPT, "Python %s: entry-frame layout mismatch", g_py.version);
    return 1;
}

/* First capture on a thread with frames when init could not check: check
 * now, once; on failure disable and say so once. */
int validate_late(void)
{
    int expect = 0;
    if (!__atomic_compare_exchange_n(&g_py.validating, &expect, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return 0; /* another thread is checking: no frames this time */
    int rc = __atomic_load_n(&g_py.validated, __ATOMIC_ACQUIRE) ? 1 : validate_here();
    if (rc < 0) {
        g_py.result = rc;
        __atomic_store_n(&g_py.ready, 0, __ATOMIC_RELEASE);
        if (!g_py.quiet) {
            char line[256];
            int k = snprintf(line, sizeof line, "vramtrace: python stacks off: %s\n", g_py.why);
            if (k > 0 && write(2, line, (size_t)k < sizeof line ? (size_t)k : sizeof line - 1) < 0)
                k = 0;
        }
    } else if (rc == 1) {
        __atomic_store_n(&g_py.validated, 1, __ATOMIC_RELEASE);
    }
    if (g_py.pipe_fd[0] >= 0) {
        close(g_py.pipe_fd[0]);
        close(g_py.pipe_fd[1]);
        g_py.pipe_fd[0] = g_py.pipe_fd[1] = -1;
    }
    __atomic_store_n(&g_py.validating, 0, __ATOMIC_RELEASE);
    return rc;
}

/* 3.12+: count destroyed code objects (g_code_epoch), if this thread holds
 * the GIL now (as the thread that initializes CUDA in PyTorch does).  Never
 * takes it: without it, or without a free watcher slot, the memo keeps
 * naming code objects by their key. */
static void watch_code(unsigned minor)
{
    if (minor < 12 || g_py.code_watch)
        return;
    void *(*current)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyThreadState_GetUnchecked"); /* 3.13 */
    if (!current)
        current = (void *(*)(void))dlsym(RTLD_DEFAULT, "_PyThreadState_UncheckedGet"); /* 3.12 */
    int (*add)(int (*)(int, void *)) = (int (*)(int (*)(int, void *)))dlsym(RTLD_DEFAULT, "PyCode_AddWatcher");
    void (*clear)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "PyErr_Clear");
    /* the thread's state is attached (it holds the GIL) and is the one
     * PyGILState knows for this thread */
    void *ts = current ? current() : NULL;
    if (!add || !clear || !ts || ts != g_py.get_tstate())
        return;
    if (add(on_code_event) < 0) {
        clear(); /* no free slot: the exception it set is ours to drop */
        return;
    }
    __atomic_add_fetch(&g_code_epoch, 1, __ATOMIC_RELEASE); /* entries recorded by key are void */
    __atomic_store_n(&g_py.code_watch, 1, __ATOMIC_RELEASE);
}

static int do_init(void)
{
    unsigned major = 0, minor = 0, micro = 0;
    const unsigned long *hex = dlsym(RTLD_DEFAULT, "Py_Version");
    const char *(*getver)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
    if (hex) {
        major = (unsigned)(*hex >> 24) & 0xff;
        minor = (unsigned)(*hex >> 16) & 0xff;
        micro = (unsigned)(*hex >> 8) & 0xff;
    } else if (getver) {
        if (sscanf(getver(), "%u.%u.%u", &major, &minor, &micro) < 2)
            return fail(VT_ERR_VERSION, "unparsable Py_GetVersion()%s", NULL);
    } else {
        return fail(VT_ERR_NOT_FOUND, "not a Python process%s", NULL);
    }
    snprintf(g_py.version, sizeof g_py.version, "%u.%u.%u", major, minor, micro);
    if (major != 3 || minor < 10 || minor > 13)
        return fail(VT_ERR_VERSION, "unsupported Python %s (3.10-3.13 only)", g_py.version);
    for (size_t i = 0; i < sizeof k_layouts / sizeof k_layouts[0]; i++)
        if (k_layouts[i].minor == (int)minor)
            g_py.L = k_layouts[i];
    if (t_break_field)
        break_field(&g_py.L, t_break_field, t_break_delta);

    g_py.code_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyCode_Type");
    g_py.bytes_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyBytes_Type");
    g_py.unicode_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyUnicode_Type");
    g_py.get_tstate = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
    g_py.is_initialized = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    g_py.addr2line = (int (*)(void *, int))dlsym(RTLD_DEFAULT, "PyCode_Addr2Line");
    void *(*get_main)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyInterpreterState_Main");
    void *(*thread_head)(void *) = (void *(*)(void *))dlsym(RTLD_DEFAULT, "PyInterpreterState_ThreadHead");
    if (!g_py.code_type || !g_py.bytes_type || !g_py.unicode_type || !g_py.get_tstate || !g_py.is_initialized ||
        !get_main || !thread_head || !g_py.addr2line)
        return fail(VT_ERR_NOT_FOUND, "Python %s: missing interpreter symbols", g_py.version);
    if (!g_py.is_initialized())
        return fail(VT_ERR_NOT_FOUND, "Python %s is not initialized yet", g_py.version);
    if (minor == 13) {
        int rc = check_debug_offsets();
        if (rc < 0)
            return rc;
    }
    g_py.main_interp = (uintptr_t)get_main();
    if (!ptr_ok(g_py.main_interp))
        return fail(VT_ERR_CORRUPT, "Python %s: no main interpreter", g_py.version);

    /* Layout check on real objects, with reads that cannot fault. */
    int bad = 0;
    uintptr_t ts = (uintptr_t)g_py.get_tstate();
    uintptr_t any = ts ? ts : (uintptr_t)thread_head((void *)g_py.main_interp);
    if (ptr_ok(any) && rdp(1, any + g_py.L.ts_interp, &bad) != g_py.main_interp)
        return fail(VT_ERR_CORRUPT, "Python %s: thread state layout mismatch", g_py.version);
    const char *q = getenv("VRAMTRACE_QUIET");
    g_py.quiet = q && *q && strcmp(q, "0") != 0;
    if (g_py.neval == 0)
        add_eval_symbol("_PyEval_EvalFrameDefault");
    if (!g_py.interp_hi) {
        uint64_t a = (uint64_t)(uintptr_t)g_py.is_initialized;
        dl_iterate_phdr(find_text, &a);
    }
    int rc = validate_here();
    if (rc < 0)
        return rc;
    g_py.validated = rc; /* 0: no Python frame here, the first capture that has some checks */
    watch_code(minor);
    return 0;
}

int vt_pystack_init(char *why, size_t n)
{
    if (!g_py.done) {
        g_py.result = do_init();
        g_py.ready = g_py.result == 0;
        g_py.done = 1;
        if (g_py.pipe_fd[0] >= 0) {
            close(g_py.pipe_fd[0]);
            close(g_py.pipe_fd[1]);
            g_py.pipe_fd[0] = g_py.pipe_fd[1] = -1;
        }
    }
    if (why && n)
        snprintf(why, n, "%s", g_py.result ? g_py.why : "");
    return g_py.result;
}

int vt_pystack_ready(void) { return g_py.ready; }

int vt_pystack_code_watch(void) { return __atomic_load_n(&g_py.code_watch, __ATOMIC_ACQUIRE); }

const char *vt_pystack_version(void) { return g_py.version; }

long vt_pystack_layout_offset(int minor, const char *field)
{
    const vt_pylayout *L = NULL;
    for (size_t i = 0; i < sizeof k_layouts / sizeof k_layouts[0]; i++)
        if (k_layouts[i].minor == minor)
            L = &k_layouts[i];
    if (!L || !field)
        return -1;
    vt_pylayout copy = *L;
    const int32_t *f = field_of(&copy, field);
    if (f)
        return *f;
    if (minor == 13 && !strncmp(field, "dbg_", 4)) {
        static const struct { const char *name; long off; } d[] = {
            {"dbg_ts_interp", DBG_TS_INTERP}, {"dbg_ts_current_frame", DBG_TS_CURRENT_FRAME},
            {"dbg_if_previous", DBG_IF_PREVIOUS}, {"dbg_if_executable", DBG_IF_EXECUTABLE},
            {"dbg_if_instr_ptr", DBG_IF_INSTR_PTR}, {"dbg_if_owner", DBG_IF_OWNER},
            {"dbg_co_filename", DBG_CO_FILENAME}, {"dbg_co_name", DBG_CO_NAME},
            {"dbg_co_qualname", DBG_CO_QUALNAME}, {"dbg_co_linetable", DBG_CO_LINETABLE},
            {"dbg_co_firstlineno", DBG_CO_FIRSTLINENO}, {"dbg_co_adaptive", DBG_CO_ADAPTIVE},
            {"dbg_ob_type", DBG_OB_TYPE}, {"dbg_bytes_ob_size", DBG_BYTES_OB_SIZE},
            {"dbg_bytes_sval", DBG_BYTES_SVAL}, {"dbg_u_state", DBG_U_STATE},
            {"dbg_u_length", DBG_U_LENGTH}, {"dbg_u_ascii_size", DBG_U_ASCII_SIZE},
            {"dbg_free_threaded", DBG_FREE_THREADED}, {"dbg_version", DBG_VERSION},
        };
        for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
            if (!strcmp(d[i].name, field))
                return d[i].off;
    }
    return -1;
}
