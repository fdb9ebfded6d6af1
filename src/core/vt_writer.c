/* vt_writer.c - crash-safe trace writer (see vt_writer.h): the writer
 * thread (`vt-writer`), create, flush, emergency flush, close.  The parts
 * and how they share state: vt_writer_int.h. */
#include "vt_writer_int.h"
/* -------------------------------------------------------- writer thread */

static void vt_mark_off(vt_writer *w, const char *why)
{
    int exp = 0;
    if (atomic_compare_exchange_strong(&w->msg_claim, &exp, 1)) {
        size_t n = strlen(why);
        if (n >= sizeof(w->errmsg))
            n = sizeof(w->errmsg) - 1;
        memcpy(w->errmsg, why, n);
        w->errmsg[n] = 0;
        atomic_store_explicit(&w->msg_ready, 1, memory_order_release);
    }
    atomic_store(&w->off, 1);
}

static void *vt_thread_main(void *arg)
{
    vt_writer *w = arg;
    atomic_store(&w->thread_tid, (uint32_t)syscall(SYS_gettid));
    uint64_t done_local = 0, drain_local = 0, last_tick = vt_mono_ns();
    for (;;) {
        int exp = 0;
        if (!atomic_compare_exchange_strong(&w->enc_owner, &exp, 1)) {
            /* a signal handler is flushing */
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
            continue;
        }
        if (w->ended || atomic_load(&w->err)) {
            atomic_store(&w->enc_owner, 0);
            break;
        }
        uint64_t req = atomic_load(&w->flush_req);
        uint64_t dreq = atomic_load(&w->drain_req);
        int stop = atomic_load(&w->stop);
        long got = vt_enc_round(w);
        int esig = atomic_load(&w->emerg_sig);
        if (esig) {
            if (!w->emerg_deadline)
                w->emerg_deadline = vt_mono_ns() + VT_EMERGENCY_DRAIN_NS;
            while (got > 0 && vt_mono_ns() < w->emerg_deadline)
                got = vt_enc_round(w);
            vt_enc_discard_rest(w);
            vt_enc_finish(w, VT_END_SIGNAL, esig);
            vt_mark_off(w, "emergency flush done by the writer thread");
            atomic_store(&w->emerg_done, 1);
            atomic_store(&w->enc_owner, 0);
            break;
        }
        if (stop) {
            if (got >= 0)
                vt_enc_round(w); /* stragglers published meanwhile */
            vt_enc_discard_rest(w); /* emits racing with close: counted as dropped */
            vt_enc_finish(w, w->stop_reason, w->stop_sig);
            atomic_store(&w->enc_owner, 0);
            break;
        }
        vt_enc_report_drops(w);
        uint64_t now = vt_mono_ns();
        if (w->cfg.tick_fn && now - last_tick >= 100000000ull) {
            last_tick = now;
            w->cfg.tick_fn();
        }
        if (req != done_local || (w->dirty && now - w->dirty_since >= w->poll_ns))
            vt_enc_flush(w);
        /* how long to sleep, decided while the encoder state is ours */
        uint64_t nap = w->poll_ns;
        if (w->dirty) {
            uint64_t age = vt_mono_ns() - w->dirty_since;
            nap = age >= w->poll_ns ? 0 : w->poll_ns - age;
        }
        if (w->cfg.tick_fn && nap > 100000000ull) /* the tick's period */
            nap = 100000000ull;
        atomic_store(&w->enc_owner, 0);
        if (req != done_local || dreq != drain_local) {
            done_local = req;
            drain_local = dreq;
            pthread_mutex_lock(&w->mu);
            w->flush_done = req;
            w->drain_done = dreq;
            pthread_cond_broadcast(&w->cv);
            pthread_mutex_unlock(&w->mu);
        }
        struct timespec cpu;
        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
            atomic_store_explicit(&w->st_cpu, (uint64_t)cpu.tv_sec * 1000000000ull + (uint64_t)cpu.tv_nsec,
                                  memory_order_relaxed);
        if (atomic_load(&w->err))
            break;

        /* sleep until woken or the next poll */
        uint32_t seq = atomic_load(&w->wake_seq);
        atomic_store(&w->sleeping, 1);
        if (atomic_load(&w->flush_req) == done_local && atomic_load(&w->drain_req) == drain_local &&
            !atomic_load(&w->stop) && !atomic_load(&w->emerg_sig)) {
            uint64_t t = nap;
            if (t) {
                struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
                syscall(SYS_futex, (uint32_t *)&w->wake_seq, FUTEX_WAIT_PRIVATE, seq, &ts, NULL, 0);
            }
        }
        atomic_store(&w->sleeping, 0);
    }
    struct timespec cpu;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
        atomic_store_explicit(&w->st_cpu, (uint64_t)cpu.tv_sec * 1000000000ull + (uint64_t)cpu.tv_nsec,
                              memory_order_relaxed);
    pthread_mutex_lock(&w->mu);
    w->thread_exited = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* ---------------------------------------------------------- public API */

void vt_writer_config_default(vt_writer_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->path = NULL;
    cfg->fd = -1;
    cfg->flush_ms = 100;
    cfg->frame_bytes = 4u << 20;
    cfg->ring_bytes = 1u << 20;
    cfg->level = 3;
    cfg->clock = VT_CLOCK_MONOTONIC;
}

static int vt_enc_header(vt_writer *w, const vt_ev_header *hdr)
{
    vt_ev_header dflt;
    if (!hdr) {
        memset(&dflt, 0, sizeof(dflt));
        hdr = &dflt;
    }
    Vramtrace__Header h = VRAMTRACE__HEADER__INIT;
    h.magic = VT_FORMAT_MAGIC;
    h.format_version = VT_FORMAT_VERSION;
    h.tool_version = (char *)VT_TOOL_VERSION;
    h.pid = hdr->pid ? hdr->pid : (uint32_t)getpid();
    h.ppid = hdr->ppid ? hdr->ppid : (uint32_t)getppid();
    char host[256] = "";
    if (hdr->hostname)
        h.hostname = (char *)hdr->hostname;
    else if (gethostname(host, sizeof(host) - 1) == 0)
        h.hostname = host;
    if (hdr->program)
        h.program = (char *)hdr->program;
    char **argv = NULL; /* NULL entries become "" (protobuf-c would strlen them) */
    if (hdr->argv && hdr->argc) {
        argv = calloc(hdr->argc, sizeof(*argv));
        if (!argv)
            return VT_ERR_NOMEM;
        for (uint32_t i = 0; i < hdr->argc; i++)
            argv[i] = (char *)(hdr->argv[i] ? hdr->argv[i] : "");
        h.n_argv = hdr->argc;
        h.argv = argv;
    }
    Vramtrace__EnvVar *env = NULL, **envp = NULL;
    if (hdr->nenv && hdr->env_names && hdr->env_values) {
        env = calloc(hdr->nenv, sizeof(*env));
        envp = calloc(hdr->nenv, sizeof(*envp));
        if (!env || !envp) {
            free(env);
            free(envp);
            free(argv);
            return VT_ERR_NOMEM;
        }
        for (uint32_t i = 0; i < hdr->nenv; i++) {
            Vramtrace__EnvVar e = VRAMTRACE__ENV_VAR__INIT;
            e.name = (char *)(hdr->env_names[i] ? hdr->env_names[i] : "");
            e.value = (char *)(hdr->env_values[i] ? hdr->env_values[i] : "");
            env[i] = e;
            envp[i] = &env[i];
        }
        h.n_env = hdr->nenv;
        h.env = envp;
    }
    h.clock = (Vramtrace__ClockDomain)(hdr->clock ? hdr->clock : w->cfg.clock);
    h.trace_clock_ns = hdr->trace_clock_ns ? hdr->trace_clock_ns : vt_tnow(w);
    if (hdr->realtime_ns) {
        h.realtime_ns = hdr->realtime_ns;
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        h.realtime_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    }
    h.kernels = hdr->kernels != 0;
    h.native_stacks = hdr->native_stacks != 0;
    h.python_stacks = hdr->python_stacks != 0;
    VT_REC(r, header, HEADER, h);
    int rc = vt_enc_put(w, &r);
    free(env);
    free(envp);
    free(argv);
    if (rc)
        return rc;
    w->host_t = w->dev_t = h.trace_clock_ns;
    return vt_enc_sync(w);
}

static void vt_writer_destroy(vt_writer *w)
{
    if (!w)
        return;
    vt_unregister(w);
    vt_ring *r = atomic_load(&w->rings);
    while (r) {
        vt_ring *next = r->next;
        /* No producer may emit during free, but a thread holding this ring
         * may exit meanwhile: drop the data now, and the control page with
         * the last reference (ours or the thread's, see vt_ring_release). */
        munmap(r->data, r->cap);
        r->data = NULL;
        if (r->cwords) {
            for (unsigned k = 0; k < VT_SREF_SLOTS; k++)
                free(r->cwords[k].words);
            free(r->cwords);
            r->cwords = NULL;
        }
        if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1)
            vt_ring_unmap(r);
        r = next;
    }
    ZSTD_freeCCtx(w->zc);
    free(w->stage);
    free(w->out);
    vt_imap_free(&w->strings);
    vt_imap_free(&w->frames);
    vt_imap_free(&w->stacks);
    vt_imap_free(&w->launches);
    vt_imap_free(&w->rawstacks);
    vt_umap_free(&w->threads);
    vt_umap_free(&w->codes);
    free(w->mods);
    free(w->cur);
    free(w);
}

int vt_writer_create(vt_writer **out, const vt_writer_config *cfg_in, const vt_ev_header *hdr)
{
    if (!out)
        return VT_ERR_INVALID;
    *out = NULL;
    vt_writer_config cfg;
    if (cfg_in)
        cfg = *cfg_in;
    else
        vt_writer_config_default(&cfg);
    if (!cfg.path && cfg.fd < 0) {
        if (!cfg.quiet)
            fprintf(stderr, "vramtrace: no trace path given: disabled\n");
        return VT_ERR_INVALID;
    }
    if (!cfg.flush_ms)
        cfg.flush_ms = 100;
    if (!cfg.frame_bytes)
        cfg.frame_bytes = 4u << 20;
    if (!cfg.ring_bytes)
        cfg.ring_bytes = 1u << 20;
    if (!cfg.level)
        cfg.level = 3;
    if (cfg.level > 19) /* "ultra" levels need hundreds of MB inside the traced process */
        cfg.level = 19;
    pthread_once(&g_once, vt_global_init);

    vt_writer *w = aligned_alloc(64, (sizeof(*w) + 63) & ~(size_t)63); /* the producers' line */
    if (w)
        memset(w, 0, sizeof(*w));
    if (!w) {
        if (cfg.fd >= 0)
            close(cfg.fd);
        if (!cfg.quiet)
            fprintf(stderr, "vramtrace: out of memory: disabled\n");
        return VT_ERR_NOMEM;
    }
    int rc = 0;
    w->cfg = cfg;
    w->cfg.path = NULL; /* not kept: the caller owns it */
    w->reg_slot = -1;
    w->fd = -1;
    w->serial = atomic_fetch_add(&g_serial, 1) + 1;
    w->fork_gen = atomic_load(&g_fork_gen);
    w->clock_fn = cfg.clock_fn;
    w->clockid = cfg.clock == VT_CLOCK_REALTIME ? CLOCK_REALTIME : CLOCK_MONOTONIC;
    uint64_t cap = 4096;
    while (cap < cfg.ring_bytes && cap < (1ull << 30))
        cap <<= 1;
    w->ring_cap = cap;
    w->flush_ns = (uint64_t)cfg.flush_ms * 1000000ull;
    w->poll_ns = w->flush_ns / 4 ? w->flush_ns / 4 : 1;
    if (cfg.path)
        snprintf(w->name, sizeof(w->name), "%s", cfg.path);
    else
        snprintf(w->name, sizeof(w->name), "fd %d", cfg.fd);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);

    if (cfg.fd >= 0) {
        w->fd = cfg.fd;
    } else {
        w->fd = open(cfg.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (w->fd < 0) {
            int e = errno;
            if (e == EEXIST || e == ELOOP) {
                rc = VT_ERR_EXISTS;
                vt_fail(w, rc, "cannot create trace file: %s (refusing to overwrite an existing file or follow a symlink)",
                        strerror(e));
            } else {
                rc = e == ENOSPC || e == EDQUOT ? VT_ERR_NOSPACE : VT_ERR_IO;
                vt_fail(w, rc, "cannot create trace file: %s", strerror(e));
            }
            goto fail_free;
        }
    }

    w->zc = ZSTD_createCCtx();
    w->stage_cap = VT_STAGE_BYTES;
    w->stage = malloc(w->stage_cap);
    w->out_cap = ZSTD_CStreamOutSize();
    w->out = malloc(w->out_cap);
    if (!w->zc || !w->stage || !w->out || vt_imap_init(&w->strings, 1024) || vt_imap_init(&w->frames, 4096) ||
        vt_imap_init(&w->stacks, 1024) || vt_imap_init(&w->launches, 256) || vt_imap_init(&w->rawstacks, 1024) || vt_umap_init(&w->threads, 64) ||
        vt_umap_init(&w->codes, 1024)) {
        rc = VT_ERR_NOMEM;
        vt_fail(w, rc, "out of memory");
        goto fail_close;
    }
    if (ZSTD_isError(ZSTD_CCtx_setParameter(w->zc, ZSTD_c_compressionLevel, cfg.level)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(w->zc, ZSTD_c_checksumFlag, 1))) {
        rc = VT_ERR_INVALID;
        vt_fail(w, rc, "invalid zstd level %d", cfg.level);
        goto fail_close;
    }
#if VT_ZSTD_RAW_LITERALS
    /* Literals stored, not Huffman-coded: a reader decompresses the
     * bench's training loop ~1.4x faster (Huffman decoding was a quarter of
     * zstd's time there; KernelBlock columns are bits Huffman cannot
     * shrink), for 2-8 % more bytes (BENCHMARKS.md "## reader").  A zstd
     * without the parameter keeps Huffman literals. */
    (void)ZSTD_CCtx_setParameter(w->zc, ZSTD_c_literalCompressionMode, ZSTD_ps_disable);
#endif
    rc = vt_enc_header(w, hdr);
    /* Run zstd once now: it allocates its workspace on the first call, which
     * must not be the emergency flush inside a signal handler. */
    if (!rc)
        rc = vt_enc_feed(w, ZSTD_e_continue);
    if (rc) {
        if (!atomic_load(&w->err))
            vt_fail(w, rc, "cannot encode the header: %s", vt_strerror(rc));
        goto fail_close;
    }

    for (int i = 0; i < VT_MAX_WRITERS; i++) {
        vt_writer *exp = NULL;
        if (atomic_compare_exchange_strong(&g_reg[i], &exp, w)) {
            w->reg_slot = i;
            break;
        }
    }

    /* The writer thread blocks every signal it can: the host's handlers
     * run elsewhere and a broken pipe is an EPIPE, not a SIGPIPE. */
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int prc = pthread_create(&w->thread, NULL, vt_thread_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (prc) {
        rc = VT_ERR_NOMEM;
        vt_fail(w, rc, "cannot start the writer thread: %s", strerror(prc));
        goto fail_close;
    }
    w->thread_started = 1;
    pthread_setname_np(w->thread, "vt-writer");
    *out = w;
    return 0;

fail_close:
    vt_unregister(w);
    close(w->fd);
fail_free:
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    vt_writer_destroy(w);
    return rc;
}

/* Ask the writer thread for a round (and a zstd flush if `flush`) and
 * wait until it has done one that started after this call. */
static int vt_writer_request(vt_writer *w, int flush)
{
    if (!w)
        return VT_ERR_DISABLED;
    if (vt_is_off(w)) {
        int e = atomic_load(&w->err);
        return e ? e : VT_ERR_DISABLED;
    }
    _Atomic uint64_t *req = flush ? &w->flush_req : &w->drain_req;
    uint64_t *done = flush ? &w->flush_done : &w->drain_done;
    pthread_mutex_lock(&w->mu);
    uint64_t target = atomic_fetch_add(req, 1) + 1;
    pthread_mutex_unlock(&w->mu);
    vt_wake(w);
    pthread_mutex_lock(&w->mu);
    while (*done < target && !w->thread_exited) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
    int ok = *done >= target;
    pthread_mutex_unlock(&w->mu);
    int e = atomic_load(&w->err);
    if (e)
        return e;
    return ok ? 0 : VT_ERR_DISABLED;
}

int vt_writer_flush(vt_writer *w)
{
    return vt_writer_request(w, 1);
}

int vt_writer_drain(vt_writer *w)
{
    return vt_writer_request(w, 0);
}

void vt_writer_emergency_flush(vt_writer *w, int sig)
{
    if (!w || vt_forked(w) || atomic_load(&w->off) || atomic_load(&w->closed))
        return;
    int saved_errno = errno;
    int exp = 0;
    if (atomic_compare_exchange_strong(&w->enc_owner, &exp, 2)) {
        if (!w->ended && !atomic_load(&w->err)) {
            /* A pipe without reader must give EPIPE here, not a SIGPIPE
             * that replaces the signal being handled. */
            sigset_t pipe_set, old_mask, pend;
            sigemptyset(&pipe_set);
            sigaddset(&pipe_set, SIGPIPE);
            sigpending(&pend);
            int was_pending = sigismember(&pend, SIGPIPE);
            pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask);
            w->no_alloc = 1;
            w->in_signal = 1;
            vt_enc_drain_simple(w);
            vt_enc_discard_rest(w);
            vt_enc_finish(w, VT_END_SIGNAL, sig);
            w->no_alloc = 0;
            w->in_signal = 0;
            sigpending(&pend);
            if (!was_pending && sigismember(&pend, SIGPIPE)) {
                struct timespec zero = {0, 0};
                sigtimedwait(&pipe_set, NULL, &zero);
            }
            pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
            vt_mark_off(w, "emergency flush done in the signal handler");
        }
        atomic_store(&w->enc_owner, 0);
        errno = saved_errno;
        return;
    }
    /* The writer thread holds the encoder.  If we are that thread (a
     * fault inside the writer) nobody can finish: give up. */
    if ((uint32_t)syscall(SYS_gettid) == atomic_load(&w->thread_tid)) {
        errno = saved_errno;
        return;
    }
    exp = 0;
    atomic_compare_exchange_strong(&w->emerg_sig, &exp, sig ? sig : -1);
    vt_wake(w);
    for (int i = 0; i < VT_EMERGENCY_WAIT_MS; i++) {
        /* done by the writer thread, or by another handler (then `off`) */
        if (atomic_load(&w->emerg_done) || atomic_load(&w->err) || atomic_load(&w->off))
            break;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    errno = saved_errno;
}

int vt_writer_close(vt_writer *w, vt_endreason reason, int sig)
{
    if (!w)
        return 0;
    if (vt_forked(w)) {
        /* a fork child: the thread does not exist here and the file is the
         * parent's; nothing to write */
        atomic_store(&w->closed, 1);
        return 0;
    }
    if (atomic_exchange(&w->closed, 1))
        return atomic_load(&w->err);
    atomic_store(&w->off, 1); /* emits from now on are refused */
    if (w->thread_started) {
        w->stop_reason = reason;
        w->stop_sig = sig;
        atomic_store(&w->stop, 1);
        vt_wake(w);
        pthread_join(w->thread, NULL);
        w->thread_started = 0;
    }
    vt_unregister(w); /* before the fd number can be reused */
    if (w->fd >= 0) {
        close(w->fd);
        w->fd = -1;
    }
    vt_mark_off(w, "closed");
    return atomic_load(&w->err);
}

void vt_writer_free(vt_writer *w)
{
    if (!w)
        return;
    if (vt_forked(w)) {
        /* never join or lock in a fork child: the parent's thread is not
         * here and the mutex may have been copied locked */
        vt_writer_destroy(w);
        return;
    }
    vt_writer_close(w, VT_END_NORMAL, 0);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    vt_writer_destroy(w);
}

int vt_writer_disabled(const vt_writer *w)
{
    return !w || vt_is_off(w);
}

const char *vt_writer_errmsg(const vt_writer *w)
{
    if (!w)
        return "";
    if (vt_forked(w))
        return "disabled in a fork()ed child";
    if (atomic_load_explicit(&((vt_writer *)w)->msg_ready, memory_order_acquire))
        return w->errmsg;
    return "";
}

void vt_writer_get_stats(const vt_writer *w, vt_writer_stats *st)
{
    memset(st, 0, sizeof(*st));
    if (!w)
        return;
    vt_writer *ww = (vt_writer *)w;
    for (vt_ring *r = atomic_load_explicit(&ww->rings, memory_order_acquire); r; r = r->next) {
        st->emitted += atomic_load_explicit(&r->emitted, memory_order_relaxed);
        st->dropped += atomic_load_explicit(&r->dropped, memory_order_relaxed);
        st->rings++;
    }
    st->dropped += atomic_load_explicit(&ww->noring_dropped, memory_order_relaxed);
    st->records = atomic_load_explicit(&ww->st_records, memory_order_relaxed);
    st->bytes_raw = atomic_load_explicit(&ww->st_raw, memory_order_relaxed);
    st->bytes_written = atomic_load_explicit(&ww->st_written, memory_order_relaxed);
    st->frames = atomic_load_explicit(&ww->st_frames, memory_order_relaxed);
    st->writer_cpu_ns = atomic_load_explicit(&ww->st_cpu, memory_order_relaxed);
}
