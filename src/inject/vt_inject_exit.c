/* vt_inject_exit.c - the end of tracing: the self-time and unwinder notes,
 * finish (atexit), fatal signals (flush, then the previous handler), a
 * forked child (tracing off). */
#include "vt_inject_int.h"
/* ----------------------------------------------------------------- shutdown */

static void report_unwind_stats(void)
{
    vt_unwind_stats st;
    vt_unwinder_get_stats(g.uw, &st);
    if (!g.uw || !st.captures)
        return;
    char text[700], smp[300] = "";
    if (st.sampled) {
        double n = (double)st.sampled;
        snprintf(smp, sizeof(smp), "; one replay in 64 read %.0f bytes of the stack on %.1f pages, checked %.1f rbp "
                 "loads, found its entry at way %.1f of the memo (the predicted way in %.0f %%) after %.2f other "
                 "candidates (%.1f steps verified in vain)",
                 (double)st.sampled_span / n, (double)st.sampled_pages / n, (double)st.sampled_bp / n,
                 (double)st.sampled_way / n, 100.0 * (double)st.sampled_pred / n, (double)st.sampled_tried / n,
                 (double)st.sampled_wasted / n);
    }
    snprintf(text, sizeof(text),
             "native stacks: %llu captures, %llu frames, %llu rule-cache misses, %llu frame-pointer steps, %llu rescans; "
             "%llu walks replayed whole from the per-thread memo, %llu steps replayed by the others%s",
             (unsigned long long)st.captures, (unsigned long long)st.frames, (unsigned long long)st.cache_misses,
             (unsigned long long)st.fp_steps, (unsigned long long)st.rescans, (unsigned long long)st.memo_full,
             (unsigned long long)st.memo_steps, smp);
    note(VT_SEV_INFO, text);
    if (g.selftime)
        say("vramtrace: %s", text);
}

static void report_self_time(void)
{
    uint64_t tsc1 = __rdtsc(), ns1 = mono_ns();
    double ns_per_cyc = tsc1 > g_tsc0 ? (double)(ns1 - g_ns0) / (double)(tsc1 - g_tsc0) : 0;
    /* include this thread's pending counts */
    uint64_t n = atomic_load(&g_cb_n) + (t_in.cb_n & 63), timed = atomic_load(&g_cb_timed) + t_in.cb_timed;
    uint64_t cb = atomic_load(&g_cb_cyc) + t_in.cb_cyc, stk = atomic_load(&g_stk_cyc) + t_in.cap.stk_cyc;
    uint64_t uw = atomic_load(&g_uw_cyc) + t_in.cap.uw_cyc, push = atomic_load(&g_push_cyc) + t_in.push_cyc;
    double per = n ? ns_per_cyc / (double)n : 0.0;
    char text[600], clk[64] = ""; /* the push reads the clock unless the callback's TSC read gives the time */
    if (!g.tsc_events)
        snprintf(clk, sizeof(clk), " incl. one %.0f ns clock read", g.clk_ns);
    if (!g.selftime) {
        double mean = timed ? cb * ns_per_cyc / (double)timed : 0.0; /* of the callbacks timed */
        snprintf(text, sizeof(text),
                 "self time: %llu driver callbacks, mean %.0f ns (%llu of them timed), %.1f ms in all "
                 "(VRAMTRACE_SELFTIME=1 times every one and splits it); activity: %llu buffers, %llu records, %.1f ms",
                 (unsigned long long)n, mean, (unsigned long long)timed, mean * (double)n / 1e6,
                 (unsigned long long)act.buffers, (unsigned long long)act.records, act.cycles * ns_per_cyc / 1e6);
        note(VT_SEV_INFO, text);
        return;
    }
    snprintf(text, sizeof(text),
             "self time: %llu driver callbacks, mean %.0f ns (stack capture %.0f ns of it: native unwind %.0f, "
             "python+merge %.0f; writer push %.0f%s), %.1f ms in all; "
             "activity: %llu buffers, %llu records, %.1f ms",
             (unsigned long long)n, cb * per, stk * per, uw * per, (stk - uw) * per, push * per, clk,
             cb * ns_per_cyc / 1e6, (unsigned long long)act.buffers, (unsigned long long)act.records,
             act.cycles * ns_per_cyc / 1e6);
    note(VT_SEV_INFO, text);
    say("vramtrace: %s", text);
    say("vramtrace: %s", g.clock_note);
}

/* VRAMTRACE_TIMINGS (`record --timings` sets it): what the library took
 * at the start and at the exit, one line on stderr, quiet or not
 * (bench/run_cost.py reads it) */
static void say_timings(uint64_t t0, uint64_t t_flush, uint64_t t_drain, uint64_t t_close)
{
    const char *e = getenv("VRAMTRACE_TIMINGS");
    if (!e || !*e || !strcmp(e, "0"))
        return;
    char line[300];
    int n = snprintf(line, sizeof(line),
                     "vramtrace: library timings: start %.3f s; at exit %.3f s (activity flush %.3f s, "
                     "its thread %.3f s, trace close %.3f s)\n",
                     (double)g.init_ns / 1e9, (double)(t_close - t0) / 1e9, (double)(t_flush - t0) / 1e9,
                     (double)(t_drain - t_flush) / 1e9, (double)(t_close - t_drain) / 1e9);
    if (n > 0) {
        ssize_t w = write(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
        (void)w;
    }
}

static void finish(void)
{
    if (atomic_exchange(&g.finished, 1))
        return;
    const uint64_t t_fin = mono_ns();
#ifdef VT_BENCH
    vt_gate_stop(); /* before anything it could switch is torn down */
    if (g.gate) {
        char text[200];
        snprintf(text, sizeof(text), "benchmark gate (VRAMTRACE_BENCH_GATE): tracing switched %u times; "
                 "the trace holds only the on-blocks", vt_gate_toggles());
        note(VT_SEV_WARNING, text);
    }
#endif
    if (g.sampler_started) {
        atomic_store(&g.sampler_stop, 1);
        pthread_join(g.sampler, NULL);
        g.sampler_started = 0;
    }
    if (g.cfg.kernels || g.static_on) {
        int saved = t_in.internal;
        t_in.internal = 1;
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        t_in.internal = saved;
        share_activity_notes();
    }
    const uint64_t t_flush = mono_ns();
    if (act.started) {
        drain_wait_idle();
        pthread_mutex_lock(&act.mu);
        act.stop = 1;
        pthread_cond_signal(&act.cv);
        pthread_mutex_unlock(&act.mu);
        pthread_join(act.thread, NULL);
        act.started = 0;
    }
    atomic_store(&g.active, 0);
    const uint64_t t_drain = mono_ns();
    report_unwind_stats();
    report_self_time();
    vt_writer_stats st;
    vt_writer_get_stats(g.w, &st);
    int rc = vt_writer_close(g.w, VT_END_NORMAL, 0);
    say_timings(t_fin, t_flush, t_drain, mono_ns());
    /* A process that loaded CUDA but never created a context (a launcher
     * such as torchrun asking for the device count, a tool probing the
     * driver) leaves no trace behind: it holds no GPU memory to explain. */
    if (rc == 0 && !atomic_load(&g.used) && unlink(g.out_path) == 0) {
        say("vramtrace: removed %s: the process created no CUDA context", g.out_path);
        return;
    }
    if (rc == 0)
        say("vramtrace: wrote %s (%llu events, %llu dropped, %llu bytes)", g.out_path,
            (unsigned long long)st.emitted, (unsigned long long)st.dropped, (unsigned long long)st.bytes_written);
}

void on_exit_handler(void) { finish(); }

static const int k_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGINT};

static int sig_fatal(int sig) { return sig != SIGTERM && sig != SIGINT; }

static void on_signal(int sig, siginfo_t *si, void *uc)
{
    int saved_errno = errno;
    struct sigaction *prev = sig < 32 ? &g.prev[sig] : NULL;
    int prev_dfl = !prev || (!(prev->sa_flags & SA_SIGINFO) && prev->sa_handler == SIG_DFL);
    if ((sig_fatal(sig) || prev_dfl) && !atomic_exchange(&g.in_signal, 1)) {
        atomic_store(&g.active, 0);
        vt_writer_emergency_flush(g.w, sig);
    }
    errno = saved_errno;
    if (!prev || prev_dfl) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof(dfl));
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);
        raise(sig); /* pending until we return (the signal is blocked in its handler) */
        return;
    }
    if (prev->sa_flags & SA_SIGINFO) {
        prev->sa_sigaction(sig, si, uc);
    } else if (prev->sa_handler != SIG_IGN) {
        prev->sa_handler(sig);
    }
}

void install_signals(void)
{
    for (size_t i = 0; i < sizeof(k_signals) / sizeof(k_signals[0]); i++) {
        int sig = k_signals[i];
        struct sigaction old;
        if (sigaction(sig, NULL, &old) != 0)
            continue;
        if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN)
            continue; /* ignored: leave it so */
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = on_signal;
        /* keep the previous handler's restart/mask behaviour (Python relies
         * on EINTR for SIGINT) */
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK | (old.sa_flags & (SA_RESTART | SA_NODEFER));
        sa.sa_mask = old.sa_mask;
        g.prev[sig] = old;
        g.have_prev[sig] = 1;
        sigaction(sig, &sa, NULL);
    }
}

void on_fork_child(void)
{
    /* The writer disables itself in the child; stop producing too. */
    atomic_store(&g.active, 0);
    mark_fork_child();
    g.sampler_started = 0;
    act.started = 0;
#ifdef VT_BENCH
    vt_gate_forget();
#endif
    atomic_store(&g.finished, 1);
}
