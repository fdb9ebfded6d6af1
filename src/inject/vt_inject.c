/* vt_inject.c - libvramtrace_cupti.so: the CUPTI glue.  Loaded by
 * libvramtrace.so (vt_loader.c), which the CUDA driver loads through
 * CUDA_INJECTION64_PATH, once it has found the program's CUPTI; its
 * InitializeInjection() runs once, on the first thread that initializes
 * CUDA (naming this library in CUDA_INJECTION64_PATH works too, where
 * libcupti is on the loader's path).
 *
 * What it does: reads the configuration (vt_config.h), opens the trace
 * writer on CUPTI's clock, subscribes to CUPTI driver-API callbacks for
 * every allocation family (exit side: results and addresses are known
 * there), resource callbacks (contexts -> Device records), NVTX callbacks,
 * and activity records (kernels; module globals from MEMORY2).  A sampler
 * thread reads pool usage (cuMemPoolGetAttribute) and the driver's view of
 * device memory (NVML, loaded with dlopen).  Allocation events carry the
 * native stack (vt_unwind.h) merged with Python frames (vt_pystack.h).
 *
 * Rules inside the host process: never exit/abort, never take the GIL, one
 * message on failure and then stay out of the way.  Driver calls made by
 * this library (sampler, device description) are marked with a thread-local
 * flag that makes the callbacks ignore them.
 *
 * Environment: see vt_config.h (VRAMTRACE_OUTPUT, _KERNELS, _NATIVE_STACKS,
 * _PYTHON_STACKS, _STACK_DEPTH, _FLUSH_MS, _SAMPLE_MS, _STATIC, _QUIET);
 * VRAMTRACE_SELFTIME=1 also prints the self-time note on stderr at exit.
 *
 * May touch: CUPTI, the CUDA driver (queries only), NVML, signal handlers
 * for fatal signals (chained), atexit, pthread_atfork, the environment
 * variable NVTX_INJECTION64_PATH (set when unset).
 */
#include "vt_inject_int.h"

vt_inject_state g;
__thread inject_tls t_in;

/* Held by the sampler while it queries pools, and by a context teardown
 * while it forgets that device's pools (cudaDeviceReset destroys them: the
 * sampler must never query a dead handle). */
pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
_Atomic uint64_t g_cb_n;
_Atomic uint64_t g_cb_timed;
_Atomic uint64_t g_cb_cyc;
_Atomic uint64_t g_stk_cyc;
_Atomic uint64_t g_uw_cyc;
_Atomic uint64_t g_push_cyc;
uint64_t g_tsc0;
uint64_t g_ns0;

uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void say(const char *fmt, ...)
{
    if (g.cfg.quiet)
        return;
    char buf[1400];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(buf) - 2)
        n = (int)sizeof(buf) - 2;
    buf[n++] = '\n';
    ssize_t r = write(2, buf, (size_t)n);
    (void)r;
}

static uint64_t cupti_now(void)
{
    uint64_t t = 0;
    cuptiGetTimestamp(&t);
    return t;
}

void note(vt_severity sev, const char *text)
{
    if (!g.w)
        return;
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_NOTE;
    ev.u.note.severity = sev;
    ev.u.note.text = text;
    vt_writer_emit(g.w, &ev);
}

/* ----------------------------------------------------------------- header */

typedef struct {
    char *buf;
    const char *argv[VT_MAX_ARGV];
    int argc;
} cmdline;

static void read_cmdline(cmdline *c)
{
    memset(c, 0, sizeof(*c));
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    size_t cap = 65536, len = 0;
    c->buf = malloc(cap + 1);
    if (c->buf) {
        ssize_t r;
        while (len < cap && (r = read(fd, c->buf + len, cap - len)) > 0)
            len += (size_t)r;
        c->buf[len] = 0;
        for (size_t i = 0; i < len && c->argc < VT_MAX_ARGV; i += strlen(c->buf + i) + 1)
            c->argv[c->argc++] = c->buf + i;
    }
    close(fd);
}

static const char *k_env_names[] = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "CUDA_VISIBLE_DEVICES",
                                    "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING", "CUDA_MODULE_LOADING",
                                    "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID", "XLA_PYTHON_CLIENT_ALLOCATOR",
                                    "XLA_PYTHON_CLIENT_PREALLOCATE", "TF_GPU_ALLOCATOR"};

/* ----------------------------------------------------------------- init */

static void module_cb(void *arg, const vt_module *m)
{
    (void)arg;
    if (!g.w)
        return;
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_MODULE;
    ev.u.module.path = m->path;
    ev.u.module.load_bias = m->load_bias;
    ev.u.module.start = m->start;
    ev.u.module.end = m->end;
    ev.u.module.build_id = m->build_id;
    ev.u.module.build_id_len = m->build_id_len;
    vt_writer_emit(g.w, &ev);
}

#ifdef VT_BENCH
/* VRAMTRACE_BENCH_GATE (bench/gpu_gate.py): switch everything a traced
 * step pays for (driver callbacks, NVTX, kernel and MEMORY2 activity) off
 * and on again, on the gate thread, between the benchmark's blocks of
 * steps.  The resource callbacks stay: contexts are not per step.  The
 * PyTorch shim's tracker stays attached (PyTorch keeps calling it); its
 * entries are ignored while off, as before the attach. */
static void gate_apply(int on, void *arg)
{
    (void)arg;
    t_in.internal = 1;
    int from = on ? VT_TORCH_GATED : VT_TORCH_ON;
    atomic_compare_exchange_strong(&g.torch_state, &from, on ? VT_TORCH_ON : VT_TORCH_GATED);
    enable_driver_callbacks(on);
    cuptiEnableDomain((uint32_t)on, g.sub, CUPTI_CB_DOMAIN_NVTX);
    if (g.cfg.kernels)
        (on ? cuptiActivityEnable : cuptiActivityDisable)(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (g.static_on)
        (on ? cuptiActivityEnable : cuptiActivityDisable)(CUPTI_ACTIVITY_KIND_MEMORY2);
}
#endif

/* ns per read of a clock: the best of 4 batches of 256 reads. */
static double clock_cost(uint64_t (*fn)(void))
{
    double best = 1e9;
    for (int b = 0; b < 4; b++) {
        uint64_t t0 = mono_ns();
        for (int i = 0; i < 256; i++)
            __asm__ __volatile__("" ::"r"(fn()));
        double ns = (double)(mono_ns() - t0) / 256.0;
        if (ns < best)
            best = ns;
    }
    return best;
}

/* The clock of every event, and of CUPTI's activity records: by default
 * our calibrated TSC (vt_clock.h), registered with CUPTI so that kernels and
 * allocations share one time base.  cuptiGetTimestamp() is CUPTI's
 * clock_gettime(CLOCK_REALTIME) behind a call: a syscall on VMs whose kernel
 * does not use the TSC, paid twice per tensor in tensor-level mode. */
static void setup_clock(void)
{
    typedef CUptiResult (*reg_fn)(CUpti_TimestampCallbackFunc);
    g.clk = cupti_now;
    const char *why = "VRAMTRACE_CLOCK=cupti";
    if (g.cfg.clock != VT_CFG_CLOCK_CUPTI) {
        vt_clock_init(g.cfg.clock == VT_CFG_CLOCK_AUTO);
        /* resolved at run time: an older libcupti.so.13 loaded first by the
         * process may lack it, and a missing symbol must not stop us loading */
        Dl_info di;
        void *h = dladdr((void *)&cuptiSubscribe, &di) && di.dli_fname ? dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD) : NULL;
        reg_fn reg = h ? (reg_fn)dlsym(h, "cuptiActivityRegisterTimestampCallback") : NULL;
        if (h)
            dlclose(h);
        g.reg_ts = reg;
        if (reg && reg(vt_clock_now) == CUPTI_SUCCESS) {
            g.clk = vt_clock_now;
        } else {
            why = reg ? "cuptiActivityRegisterTimestampCallback failed" : "this CUPTI cannot take our clock";
        }
    }
    char cs[32];
    if (vt_clock_kernel_source(cs, sizeof(cs)) != 0)
        snprintf(cs, sizeof(cs), "?");
    g.clk_ns = clock_cost(g.clk);
    double cupti_ns = g.clk == cupti_now ? g.clk_ns : clock_cost(cupti_now);
    if (g.clk == vt_clock_now)
        snprintf(g.clock_note, sizeof(g.clock_note),
                 "clock: %s, %.0f ns per read, registered with CUPTI (cuptiGetTimestamp: %.0f ns; kernel clocksource %s)",
                 vt_clock_name(vt_clock_source()), g.clk_ns, cupti_ns, cs);
    else
        snprintf(g.clock_note, sizeof(g.clock_note), "clock: cuptiGetTimestamp, %.0f ns per read (%s; kernel clocksource %s)",
                 g.clk_ns, why, cs);
}

/* The header (program, host, command line, the environment a report
 * names, the clock, what is recorded) and the writer on the output path
 * of the template.  -1 when tracing cannot start (said why). */
static int start_writer(char *pywhy, size_t pywhy_len)
{
    (void)pywhy;
    (void)pywhy_len;
    cmdline cl;
    read_cmdline(&cl);
    char program[256], host[256] = "";
    vt_config_program_name(cl.argv, cl.argc, program, sizeof(program));
    gethostname(host, sizeof(host) - 1);
    vt_output_vars vars = {.pid = (uint32_t)getpid(), .host = host, .rank = vt_config_rank(NULL, NULL), .program = program};
    if (vt_config_expand_output(g.cfg.output, &vars, g.out_path, sizeof(g.out_path)) != 0) {
        say("vramtrace: output path template too long; tracing disabled");
        free(cl.buf);
        return -1;
    }

    const char *names[sizeof(k_env_names) / sizeof(k_env_names[0])], *values[sizeof(names) / sizeof(names[0])];
    uint32_t nenv = 0;
    for (size_t i = 0; i < sizeof(k_env_names) / sizeof(k_env_names[0]) && nenv < VT_MAX_ENV; i++) {
        const char *v = getenv(k_env_names[i]);
        if (v) {
            names[nenv] = k_env_names[i];
            values[nenv++] = v;
        }
    }
    vt_ev_header hdr;
    memset(&hdr, 0, sizeof(hdr));
    hdr.pid = (uint32_t)getpid();
    hdr.ppid = (uint32_t)getppid();
    hdr.hostname = host;
    hdr.program = program;
    hdr.argv = cl.argv;
    hdr.argc = (uint32_t)cl.argc;
    hdr.env_names = names;
    hdr.env_values = values;
    hdr.nenv = nenv;
    hdr.clock = VT_CLOCK_CUPTI;
    struct timespec rt;
    hdr.trace_clock_ns = g.clk();
    clock_gettime(CLOCK_REALTIME, &rt);
    hdr.realtime_ns = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
    hdr.kernels = g.cfg.kernels;
    hdr.native_stacks = g.cfg.native_stacks;
#ifdef VT_HAVE_PYSTACK
    if (g.cfg.python_stacks) {
        if (vt_pystack_init(pywhy, pywhy_len) == 0)
            g.pystack = 1;
    }
#endif
    hdr.python_stacks = g.pystack;

    vt_writer_config wc;
    vt_writer_config_default(&wc);
    wc.path = g.out_path;
    wc.flush_ms = g.cfg.flush_ms;
    wc.quiet = g.cfg.quiet;
    wc.clock = VT_CLOCK_CUPTI;
    wc.clock_fn = g.clk;
    g.tsc_events = g.clk == vt_clock_now && vt_clock_source() == VT_CLOCKSRC_TSC;
    if (g.clk == vt_clock_now)
        wc.tick_fn = vt_clock_tick;
    wc.ring_bytes = 4u << 20; /* per producer thread; pages are touched only as used */
    int rc = vt_writer_create(&g.w, &wc, &hdr);
    free(cl.buf);
    if (rc != 0) {
        /* the writer printed why */
        return -1;
    }
    return 0;
}

/* What the trace says about its own making: CUPTI's version and file, the
 * clock, whether and how Python frames are read. */
static void note_setup(uint32_t cupti_version, const char *cupti_file, const char *pywhy)
{
    (void)pywhy;
    char text[1400];
    snprintf(text, sizeof(text), "CUPTI API version %u from %s", cupti_version, cupti_file);
    note(VT_SEV_INFO, text);
    note(VT_SEV_INFO, g.clock_note);
#ifdef VT_HAVE_PYSTACK
    if (g.cfg.python_stacks && !g.pystack && pywhy[0]) {
        snprintf(text, sizeof(text), "python stacks off: %s", pywhy);
        note(VT_SEV_INFO, text);
        /* not a Python process is the usual case: say nothing on stderr then */
    }
    if (g.pystack) {
        const char *how = vt_pystack_code_watch()
                              ? "python stacks: code objects by address (a code watcher counts their end)"
                              : "python stacks: code objects by their key (no code watcher: Python < 3.12, or "
                                "initialized by a thread without the GIL)";
        note(VT_SEV_INFO, how);
        if (g.selftime)
            say("vramtrace: %s", how);
    }
#else
    if (g.cfg.python_stacks)
        note(VT_SEV_INFO, "python stacks not built into this library");
#endif
}

/* The native unwinder, its frames to skip, and where it stops for Python. */
static void start_unwinder(void)
{
    if (g.cfg.native_stacks) {
        if (vt_unwinder_create(&g.uw, 16, module_cb, NULL) == 0) {
            vt_unwinder_skip_addr(g.uw, (const void *)&start_unwinder); /* this library */
            vt_unwinder_skip_prefix(g.uw, "libcupti");
            vt_unwinder_skip_prefix(g.uw, "libcuda.so");
#ifdef VT_HAVE_PYSTACK
            /* Where Python frames are read, the native walk ends at the
             * interpreter's first eval frame: the Python stack goes on from
             * there, and the native frames between outer Python frames
             * (interpreter and binding glue) cost a third of the walk. */
            uint64_t es[8], ee[8];
            int ne = g.pystack && g.cfg.native_stacks != VT_CFG_NATIVE_FULL ? vt_pystack_eval_ranges(es, ee, 8) : 0;
            if (ne > 0 && ne <= 8 && vt_unwinder_stop_at(g.uw, ne, es, ee) == 0)
                note(VT_SEV_INFO, "native stacks end where Python frames begin "
                                  "(VRAMTRACE_NATIVE_STACKS=full keeps the native frames between Python frames)");
#endif
        } else {
            note(VT_SEV_WARNING, "native unwinder could not start: no native stacks");
        }
    }
}

/* CUPTI's callbacks: driver API, resources, NVTX.  -1 when another client
 * holds CUPTI or a callback cannot be enabled (said why, trace closed). */
static int subscribe(const char *cupti_file)
{
    char text[1400];
    CUptiResult cr = cuptiSubscribe(&g.sub, on_callback, NULL);
    if (cr != CUPTI_SUCCESS) {
        const char *es = NULL;
        cuptiGetResultString(cr, &es);
        snprintf(text, sizeof(text), "cuptiSubscribe failed (%s): another CUPTI client is active; not tracing",
                 es ? es : "?");
        say("vramtrace: %s", text);
        note(VT_SEV_ERROR, text);
        vt_writer_close(g.w, VT_END_ERROR, 0);
        return -1;
    }
    int er = enable_driver_callbacks(1);
    if (er == 0)
        er = cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
    if (er == 0)
        er = cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
    if (er != 0) {
        snprintf(text, sizeof(text), "cuptiEnableCallback failed (%d); not tracing", er);
        say("vramtrace: %s", text);
        note(VT_SEV_ERROR, text);
        cuptiUnsubscribe(g.sub);
        vt_writer_close(g.w, VT_END_ERROR, 0);
        return -1;
    }
    if (cuptiEnableDomain(1, g.sub, CUPTI_CB_DOMAIN_NVTX) != CUPTI_SUCCESS)
        note(VT_SEV_WARNING, "NVTX callbacks unavailable: no NVTX ranges");
    /* NVTX ranges reach CUPTI only if the NVTX library injects it; NVTX reads
     * this variable at the application's first NVTX call (ranges of an
     * application that used NVTX before initializing CUDA are not seen). */
    if (!getenv("NVTX_INJECTION64_PATH"))
        setenv("NVTX_INJECTION64_PATH", cupti_file, 0);
    return 0;
}

/* CUPTI's activity records (kernels; module globals when they are cheap
 * enough) and the drain thread that takes their buffers. */
static void start_activity(void)
{
    /* Module globals (DEVICE_STATIC) come from MEMORY2 activity records,
     * which CUPTI makes for every allocation (about +1 us each): fine for
     * a caching allocator, too dear when every tensor is an allocation.
     * auto (-1): off for PyTorch's tensor-level modes, and switched off by
     * the sampler when allocations exceed VT_STATIC_MAX_RATE per second. */
    g.static_on = g.cfg.static_mem > 0;
    if (g.cfg.static_mem < 0) {
        const char *ac = getenv("PYTORCH_CUDA_ALLOC_CONF"), *nc = getenv("PYTORCH_NO_CUDA_MEMORY_CACHING");
        int tensor_level = (ac && strstr(ac, "cudaMallocAsync")) || (nc && vt_config_bool(nc) == 1);
        g.static_on = !tensor_level;
        if (tensor_level)
            note(VT_SEV_INFO, "module globals (DEVICE_STATIC) not recorded: tensor-level allocator "
                              "(VRAMTRACE_STATIC=1 records them at about 1 us per allocation)");
    }
    g_tsc0 = __rdtsc();
    g_ns0 = mono_ns();
    if ((g.cfg.kernels || g.static_on) && pthread_create(&act.thread, NULL, drain_main, NULL) == 0) {
        act.started = 1;
        pthread_setname_np(act.thread, "vt-drain");
    }
    if (g.cfg.kernels || g.static_on) {
#ifdef VT_BENCH
        const char *attrs = getenv("VT_BENCH_CUPTI_ATTRS"); /* benchmarks only (vt_bench_cupti.h) */
        if (attrs && *attrs) {
            char bad[64], msg[160];
            int n = vt_bench_cupti_attrs(attrs, bad, sizeof(bad));
            if (n < 0)
                snprintf(msg, sizeof(msg), "benchmark: VT_BENCH_CUPTI_ATTRS: %s refused", bad);
            else
                snprintf(msg, sizeof(msg), "benchmark: CUPTI activity attributes %s", attrs);
            note(n < 0 ? VT_SEV_WARNING : VT_SEV_INFO, msg);
            say("vramtrace: %s", msg);
        }
#endif
        if (cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed) != CUPTI_SUCCESS) {
            note(VT_SEV_WARNING, "CUPTI activity API unavailable: no kernels, no module globals");
        } else {
            if (g.cfg.kernels && cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
                note(VT_SEV_WARNING, "kernel activity could not be enabled: no kernels");
            if (g.static_on && cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2) != CUPTI_SUCCESS) {
                note(VT_SEV_WARNING, "MEMORY2 activity could not be enabled: no module globals");
                g.static_on = 0;
            }
            cuptiActivityFlushPeriod(500);
            g.activity_on = 1;
        }
    }
}

/* The sampler thread and, in benchmark builds, the gate. */
static void start_threads(void)
{
    if (g.cfg.sample_ms) {
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 256 * 1024);
        if (pthread_create(&g.sampler, &a, sampler_main, NULL) == 0) {
            g.sampler_started = 1;
            pthread_setname_np(g.sampler, "vt-sampler");
        }
        pthread_attr_destroy(&a);
    }
#ifdef VT_BENCH
    const char *gate = getenv("VRAMTRACE_BENCH_GATE");
    if (gate && *gate) {
        int gr = vt_gate_start(gate, gate_apply, NULL);
        if (gr == 0)
            g.gate = 1;
        else
            say("vramtrace: VRAMTRACE_BENCH_GATE=%s: %s; no benchmark gate", gate, strerror(-gr));
    }
#endif
}

static int init_once(void)
{
    int saved = t_in.internal;
    t_in.internal = 1; /* no callbacks on this thread while we set up */
    vt_config_parse(&g.cfg, NULL, NULL);
    g.selftime = g.cfg.selftime;
    g.stack_depth = g.cfg.stack_depth;
    g.stack_refs = g.cfg.stack_refs;
    if (g.cfg.warning[0])
        say("vramtrace: %s", g.cfg.warning);

    uint32_t cupti_version = 0;
    cuptiGetVersion(&cupti_version);
    Dl_info di;
    const char *cupti_path = dladdr((void *)&cuptiSubscribe, &di) && di.dli_fname ? di.dli_fname : "libcupti.so";
    char cupti_file[1024];
    snprintf(cupti_file, sizeof(cupti_file), "%s", cupti_path);

    setup_clock();

    char pywhy[160] = "";
    if (start_writer(pywhy, sizeof(pywhy)) != 0) {
        t_in.internal = saved;
        return -1;
    }
    note_setup(cupti_version, cupti_file, pywhy);
    start_unwinder();
    if (g.cfg.torch_shim[0] == '!') { /* `vramtrace record` could not build it: why */
        char text[1100];
        snprintf(text, sizeof(text), "PyTorch tensor events off: %.900s; the trace holds the allocator's segments only",
                 g.cfg.torch_shim + 1);
        note(VT_SEV_WARNING, text);
    } else if (g.cfg.torch_shim[0]) {
        atomic_store(&g.torch_state, VT_TORCH_WAIT);
        char text[1100];
        snprintf(text, sizeof(text), "PyTorch shim %.1000s: attaches at the caching allocator's first segment",
                 g.cfg.torch_shim);
        note(VT_SEV_INFO, text);
    }
    if (subscribe(cupti_file) != 0) {
        t_in.internal = saved;
        return -1;
    }
    start_activity();
    share_cupti(g.activity_on);

    atomic_store(&g.active, 1);
    start_threads();
    atexit(on_exit_handler);
    pthread_atfork(NULL, NULL, on_fork_child);
    install_signals();
    /* which CUPTI: the program's own (PyTorch's, in site-packages) or the
     * toolkit's, by its file (libvramtrace.so found it, vt_loader.c) */
    say("vramtrace: recording to %s (CUPTI %u %s%s%s%s)", g.out_path, cupti_version, cupti_file,
        g.cfg.kernels ? ", kernels" : "", g.uw ? ", native stacks" : "", g.pystack ? ", python stacks" : "");
    t_in.internal = saved;
    test_begin_pending();
    return 0;
}


__attribute__((visibility("default"))) int InitializeInjection(void);
int InitializeInjection(void)
{
    static atomic_int once;
    if (atomic_exchange(&once, 1))
        return 1;
    uint64_t t0 = mono_ns();
    init_once();
    g.init_ns = mono_ns() - t0;
    return 1; /* never make the driver fail */
}
