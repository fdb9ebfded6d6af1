/* vt_pystack.c - read the calling thread's CPython frame chain without the
 * GIL (3.10-3.13) and merge it with a native stack.  See vt_pystack.h.
 *
 * Runs inside the traced process.  Captures: plain loads only, no Python
 * calls except the GIL-free PyGILState_GetThisThreadState() and
 * Py_IsInitialized(), no allocation (TLS caches aside), no locks, no output.
 * The layout check (init, or the first capture with frames) reads with
 * fault-tolerant reads (process_vm_readv on ourselves, or a pipe) and
 * compares with ground truth: type objects, RESUME opcodes, the
 * interpreter's own PyCode_Addr2Line (pure reads of a live code object),
 * the eval frames on our native stack, 3.13's _Py_DebugOffsets.  A wrong
 * table disables us with one message instead of crashing.
 * Layouts were learnt from each version's headers; tests/inject checks the
 * table against them (vt_pyoffsets_check).  No Python header is used here.
 * Touches nothing but its own state.
 */
#include "vt_pystack_int.h"

vt_pystate g_py = {.pipe_fd = {-1, -1}};

/* ---- fault-tolerant reads (init only) ---- */

int safe_read(void *dst, uintptr_t src, size_t n)
{
    if (src < 4096 || src + n < src)
        return -1;
    struct iovec l = {dst, n}, r = {(void *)src, n};
    ssize_t k = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
    if (k == (ssize_t)n)
        return 0;
    if (k >= 0 || (errno != ENOSYS && errno != EPERM))
        return -1;
    /* No process_vm_readv (seccomp): write() through a pipe reports EFAULT. */
    if (g_py.pipe_fd[0] < 0 && pipe(g_py.pipe_fd) < 0)
        return -1;
    for (size_t off = 0; off < n;) {
        size_t c = n - off < 4096 ? n - off : 4096;
        if (write(g_py.pipe_fd[1], (const char *)src + off, c) != (ssize_t)c)
            return -1;
        if (read(g_py.pipe_fd[0], (char *)dst + off, c) != (ssize_t)c)
            return -1;
        off += c;
    }
    return 0;
}

VT_AI int8_t rdc(int safe, uintptr_t addr, int *bad)
{
    int8_t v = 0;
    if (rd(safe, &v, addr, sizeof v) < 0)
        *bad = 1;
    return v;
}

/* ---- line tables ---- */

/* 3.10 co_linetable: (byte delta unsigned, line delta signed; -128 = no
 * line) pairs; addr in bytes.  PyCode_Addr2Line semantics. */
static int line_310(const uint8_t *t, size_t n, int line, int addr)
{
    int start = 0;
    for (size_t i = 0; i + 1 < n; i += 2) {
        int end = start + t[i];
        int ld = (int8_t)t[i + 1];
        int cur = -1;
        if (ld != -128) {
            line += ld;
            cur = line;
        }
        if (addr >= start && addr < end)
            return cur;
        start = end;
    }
    return -2; /* not covered: corrupt */
}

static int svarint(const uint8_t *t, size_t n, size_t i)
{
    unsigned v = 0, shift = 0;
    while (i < n && shift < 32) {
        unsigned b = t[i++];
        v |= (b & 63u) << shift;
        shift += 6;
        if (!(b & 64))
            break;
    }
    return (v & 1) ? -(int)(v >> 1) : (int)(v >> 1);
}

/* 3.11+ location table (Objects/locations.md); addr in code units. */
static int line_311(const uint8_t *t, size_t n, int line, int addr)
{
    int start = 0;
    size_t i = 0;
    while (i < n) {
        unsigned b = t[i];
        if (!(b & 0x80))
            return -2; /* not an entry start: corrupt */
        unsigned code = (b >> 3) & 15;
        int end = start + (int)(b & 7) + 1;
        if (code == 13 || code == 14)
            line += svarint(t, n, i + 1);
        else if (code >= 10 && code <= 12)
            line += (int)code - 10;
        if (addr >= start && addr < end)
            return code == 15 ? -1 : line;
        start = end;
        i++;
        while (i < n && !(t[i] & 0x80))
            i++;
    }
    return -2; /* not covered: corrupt */
}

/* ---- per-thread caches ---- */

/* Frame cache: (key, raw instruction position) -> line, or "incomplete".
 * The key already encodes the code object (address and a tag of its
 * filename, name, line table and first line), so a hit needs no decoding. */
#define FRAME_CACHE 1024
typedef struct {
    uint64_t key;
    uintptr_t instr;
    int32_t line;
    int16_t kind; /* FR_EMIT or FR_SKIP */
    int16_t gen;  /* owned by a generator (never "incomplete") */
} vt_frame_ent;
static __thread vt_frame_ent t_frames[FRAME_CACHE];

__thread uint64_t t_seen[SEEN_CACHE];

int vt_pystack_seen(uint64_t key) { return seen_in(t_seen, key); }

void vt_pystack_unsee(uint64_t key)
{
    uint64_t *e = &t_seen[hash_slot(key, 10) & ~1u];
    if (e[0] == key)
        e[0] = 0;
    if (e[1] == key)
        e[1] = 0;
}

/* ---- the walk ---- */

enum { FR_STOP = -1, FR_EMIT = 0, FR_SKIP = 1 };

/* Line of a code object at `addr` (3.10: bytes; 3.11+: code units) from its
 * line table object `lt`.  -1: no line; -2: not the table we expect. */
VT_AI int table_line(int safe, int minor, uintptr_t lt, int first, int addr)
{
    const vt_pylayout *L = &g_py.L;
    int bad = 0;
    if (addr < 0)
        return first;
    if (rdp(safe, lt + L->ob_type, &bad) != g_py.bytes_type || bad)
        return -2;
    long n = (long)rdp(safe, lt + L->ob_size, &bad);
    if (bad || n < 0 || n > (long)MAX_LINETABLE)
        return -2;
    if (!safe) {
        const uint8_t *t = (const uint8_t *)(lt + L->bytes_sval);
        return minor == 10 ? line_310(t, (size_t)n, first, addr) : line_311(t, (size_t)n, first, addr);
    }
    uint8_t *copy = malloc(n ? (size_t)n : 1);
    int line = -2;
    if (copy && safe_read(copy, lt + L->bytes_sval, (size_t)n) == 0)
        line = minor == 10 ? line_310(copy, (size_t)n, first, addr) : line_311(copy, (size_t)n, first, addr);
    free(copy);
    return line;
}

/* The code key of `code` (type already checked); 0 if unreadable.  The
 * address and a tag of the file name, the name, the line table and the
 * first line: objects freed together are often made again at the same
 * addresses (a function redefined, code exec'd in a loop), so the name
 * counts by its content too, its cached hash (names are interned, their
 * hash is always there; PyASCIIObject.hash follows .length). */
VT_AI uint64_t code_key(int safe, uintptr_t code, uintptr_t *lt, int *first)
{
    const vt_pylayout *L = &g_py.L;
    int bad = 0;
    uintptr_t fn = rdp(safe, code + L->co_filename, &bad);
    uintptr_t qn = rdp(safe, code + (L->co_qualname >= 0 ? L->co_qualname : L->co_name), &bad);
    *lt = rdp(safe, code + L->co_linetable, &bad);
    *first = rdi(safe, code + L->co_firstlineno, &bad);
    if (bad || !ptr_ok(*lt) || !ptr_ok(qn))
        return 0;
    uint64_t qh = rdp(safe, qn + L->u_length + 8, &bad);
    if (bad)
        return 0;
    uint64_t h = (fn ^ (qn << 7) ^ (*lt << 13) ^ (uint64_t)(uint32_t)*first) * 0x9E3779B97F4A7C15ull;
    h = (h ^ qh) * 0xC2B2AE3D27D4EB4Full;
    return ((uint64_t)code >> 3) ^ ((h >> 44) << 44);
}

/* Init check of co_firsttraceable and co_code_adaptive: the first
 * traceable instruction is a RESUME (or its specialised/instrumented form). */
static int resume_at(uintptr_t code, int ft, long size, int minor)
{
    uint8_t op = 0;
    if (ft < 0 || ft >= size || safe_read(&op, code + g_py.L.co_adaptive + 2 * (uintptr_t)ft, 1) < 0)
        return 0;
    switch (minor) {
    case 11: return op == 151 || op == 150;            /* RESUME, RESUME_QUICK */
    /* 3.12+: sys.monitoring (and settrace through it) may put
     * INSTRUMENTED_LINE / INSTRUMENTED_INSTRUCTION there too */
    case 12: return op == 151 || op == 240 || op == 253 || op == 254;
    case 13: return op == 149 || op == 207 || op == 236 || op == 247 || op == 254;
    default: return 0;
    }
}

/* Position -> line for a frame of `code` at raw position `instr` (3.10:
 * f_lasti; 3.11+: instruction pointer).  FR_SKIP for frames Python itself
 * hides (not started yet), FR_STOP when something does not add up. */
VT_AI int frame_line(int safe, int minor, uintptr_t code, uintptr_t instr, int owner, uintptr_t lt,
                     int first, int *line)
{
    const vt_pylayout *L = &g_py.L;
    int bad = 0, addr;
    if (minor == 10) {
        int lasti = (int)(int32_t)(uint32_t)instr;
        if (lasti > (1 << 28)) /* no code object is that long: a wrong read */
            return FR_STOP;
        addr = lasti < 0 ? -1 : lasti * 2;
    } else {
        long size = (long)rdp(safe, code + L->ob_size, &bad);
        int ft = rdi(safe, code + L->co_firsttraceable, &bad);
        if (bad || size < 0 || size > (1L << 28))
            return FR_STOP;
        long idx = ((long)instr - (long)(code + L->co_adaptive)) >> 1;
        if (safe && !resume_at(code, ft, size, minor))
            return FR_STOP;
        /* not started yet (3.11/3.12: prev_instr = first unit - 1): Python
         * hides these frames too */
        if (owner != OWNED_BY_GENERATOR && idx < ft && idx >= -1)
            return FR_SKIP;
        if (idx < 0 || idx >= size)
            return FR_STOP;
        addr = (int)idx;
    }
    *line = table_line(safe, minor, lt, first, addr);
    if (safe && *line >= -1 && g_py.addr2line) {
        /* ground truth: the interpreter's own decoder (pure reads of this
         * live code object, no allocation, no GIL needed) */
        int want = g_py.addr2line((void *)code, minor == 10 ? addr : addr * 2);
        if (want != *line)
            return FR_STOP;
    }
    return FR_EMIT;
}

VT_AI void boundary(vt_pyframe *out, int n)
{
    if (n > 0 && out[n - 1].nentry < 0xffff)
        out[n - 1].nentry++;
}

/* ---- per-thread memo of whole walks ---- */

/* Code objects destroyed since init, counted by a code watcher (3.12+,
 * PyCode_AddWatcher; watch_code).  While it is counted, the memo names a
 * code object by its address alone: a frame holds a reference to its code,
 * so every code object of a chain being read is alive, and one at the
 * address a memo entry recorded is the one it recorded unless a code object
 * was destroyed since (the entry keeps the count of its recording).  The
 * watcher runs at the start of code_dealloc, with the GIL, before the
 * memory can be reused. */
uint64_t g_code_epoch __attribute__((aligned(64)));

int on_code_event(int event, void *code)
{
    (void)code;
    if (event == 1) /* PY_CODE_EVENT_DESTROY (3.12, 3.13) */
        __atomic_add_fetch(&g_code_epoch, 1, __ATOMIC_RELEASE);
    return 0;
}

/* What a walk decides at a frame depends only on the frame's code object,
 * instruction position, owner and entry mark (and on the code object, which
 * cannot change while a frame runs it: the frame holds a reference).  A
 * capture first reads those four for the first PM_STEPS frames (pm_scan,
 * pm_read: the frames, which the interpreter has just run, and the fields
 * of their code objects that name them) into a 128-bit hash of the chain;
 * an entry of the memo with the same hash, the same length and ending the
 * same way gives the walk's frames as recorded, with the recording's id
 * (vt_pystack_capture_walk): no per-frame cache probe, no line decoding,
 * no fingerprint per frame.  The chain is not kept nor compared step by
 * step: a capture writes nothing of it and reads one line of the entry,
 * not ~800 bytes of each (what a capture touches, the host pays for
 * afterwards: bench/capture_pollution.sh).  Two chains with the same 128
 * bits are as unlikely as two stacks with the same fingerprint, which the
 * writer's stack references already trust (vt_fp.h).
 * Entries are found by the hash of the whole chain in four-way sets: a
 * training step cycles through dozens of allocating Python lines, many of
 * which share their innermost frames (a module's forward called from many
 * places), and a small fully associative LRU memo would miss every time. */
#define PM_SETS 16
#define PM_WAYS 4
#define PM_STEPS 48 /* longer walks are not kept (VRAMTRACE_STACK_DEPTH 32 and a few shims fit) */
/* A chain as the memo sees it: the first k frames from the innermost one
 * (shims and hidden frames included), and whether the chain ends there. */
typedef struct {
    uint64_t tag;  /* a hash of the frames' values, k and ended; never 0 */
    uint64_t tag2; /* a second, independent one */
    int k, ended;
} pm_chain;
typedef struct {
    pm_chain c;
    uint64_t epoch; /* g_code_epoch when recorded */
    int max;        /* the capture's cap */
    int n;   /* frames in out */
    uint64_t walk;
    vt_pyframe out[PM_STEPS];
} pm_entry;
/* How a walk ended: after nsteps frames read (-1: stopped on something
 * unexpected, not a walk to keep), at the chain's end or truncated. */
typedef struct {
    int nsteps, ended;
} pm_end;
typedef struct {
    uint64_t tag[PM_SETS][PM_WAYS]; /* 0: empty */
    uint32_t age[PM_SETS][PM_WAYS]; /* clock at the last use */
    uint32_t clock;
    pm_entry e[PM_SETS][PM_WAYS];
} pm_memo;
static __thread pm_memo t_pm;
static uint64_t g_pm_walks; /* the last id given to a recorded walk (atomic) */

/* The values a walk's decision at `frame` depends on (plain loads: the
 * fast path only).  A code object is named by its key (code_key: its
 * address and a tag of its file name, name, line table and first line),
 * as the per-frame cache names it: a code object freed and another one
 * allocated at the same address is told apart as surely as there.  Any
 * other executable (3.13) by its address.  Instruction positions are
 * user-space pointers (< 2^47) or, on 3.10, an int: owner, entry mark and
 * "a code object" fit above them. */
VT_AI void pm_read(int minor, int watch, uintptr_t frame, uint64_t *code, uint64_t *state)
{
    const vt_pylayout *L = &g_py.L;
    uintptr_t c = *(const uintptr_t *)(frame + L->f_code);
    uint64_t is_code = 0;
#ifdef VT_BENCH_PM_ADDR /* benchmarks only (bench/inject.cmake): nothing read of code objects */
    if (0) {
#else
    if (watch) { /* by address (g_code_epoch); 3.12's f_code is always a code object */
        is_code = minor == 12 || (ptr_ok(c) && *(const uintptr_t *)(c + L->ob_type) == g_py.code_type);
    } else if (ptr_ok(c) && *(const uintptr_t *)(c + L->ob_type) == g_py.code_type) {
#endif
        uintptr_t lt;
        int first;
        uint64_t key = code_key(0, c, &lt, &first);
        if (key) {
            c = key;
            is_code = 1;
        }
    }
    *code = c;
    uint64_t instr = minor == 10 ? *(const uint32_t *)(frame + L->f_instr) : *(const uintptr_t *)(frame + L->f_instr);
    uint64_t owner = minor >= 11 ? *(const uint8_t *)(frame + L->f_owner) : 0;
    uint64_t entry = minor == 11 ? *(const uint8_t *)(frame + L->f_is_entry) != 0 : 0;
    *state = (instr & ((1ull << 48) - 1)) | owner << 48 | entry << 56 | is_code << 57;
}

/* Read the chain from f and hash it into c; 0, or -1 on a pointer a walk
 * would stop at (then no memo).  Two hashes: h, rotate and xor (the set and
 * the tag), and h2, a 64x64->128 multiply folded per step (the mixing of
 * vt_fp.h); neither is on the frames' pointer chase, which they overlap.
 * state never has bits 58-63 set, so state ^ PM_K3 is never 0. */
#define PM_K2 0xA0761D6478BD642Full
#define PM_K3 0xE7037ED1A0B428DBull
VT_AI int pm_scan_loop(int minor, int watch, uintptr_t f, pm_chain *c)
{
    uint64_t h = 0, h2 = PM_K2;
    int k = 0;
    uintptr_t fr = f;
    const long prev = g_py.L.f_previous;
    for (; k < PM_STEPS && fr; k++) {
        if (!ptr_ok(fr))
            return -1;
        uint64_t code, state;
        pm_read(minor, watch, fr, &code, &state);
        h = ((h << 7) | (h >> 57)) ^ code ^ (state * 0x9E3779B97F4A7C15ull);
        unsigned __int128 m = (unsigned __int128)(h2 ^ code) * (state ^ PM_K3);
        h2 = (uint64_t)m ^ (uint64_t)(m >> 64);
        fr = *(const uintptr_t *)(fr + prev);
    }
    c->k = k;
    c->ended = !fr;
    h = (h ^ ((uint64_t)k << 1) ^ ((uint64_t)c->ended << 9)) * 0xC2B2AE3D27D4EB4Full;
    c->tag = (h ^ (h >> 29)) | 1;
    unsigned __int128 m = (unsigned __int128)(h2 ^ (uint64_t)k ^ ((uint64_t)c->ended << 8)) * (h | PM_K3);
    c->tag2 = (uint64_t)m ^ (uint64_t)(m >> 64);
    return 0;
}

/* The code watcher's state is read once per scan, not per frame; on 3.12
 * under it (PyTorch on the GPU machine) a frame is four loads and the two
 * hashes, nothing else. */
VT_AI int pm_scan(int minor, uintptr_t f, pm_chain *c)
{
    const int watch = __atomic_load_n(&g_py.code_watch, __ATOMIC_RELAXED);
    if (minor == 12 && watch)
        return pm_scan_loop(12, 1, f, c);
    return pm_scan_loop(minor, watch, f, c);
}

/* One copy of the scan per version, as of the walk: the version's layout
 * questions fold away (the scan is most of a repeated capture). */
#define VT_SCAN_FOR(m) \
    VT_HOT static __attribute__((noinline)) int pm_scan##m(uintptr_t f, pm_chain *c) { return pm_scan(m, f, c); }
VT_SCAN_FOR(10)
VT_SCAN_FOR(11)
VT_SCAN_FOR(12)
VT_SCAN_FOR(13)

VT_AI unsigned pm_set(uint64_t tag) { return (unsigned)(tag >> 60) % PM_SETS; }

/* Walk from `frame` (the innermost frame pointer read from the tstate).
 * safe: init-time validation, fault-tolerant reads, no cache, returns
 * VT_ERR_CORRUPT on anything unexpected; else the capture fast path, which
 * stops early instead.  Returns the count. */
VT_AI int walk(int safe, int minor, uintptr_t frame, vt_pyframe *out, int max, vt_frame_ent *cache,
               pm_end *rec)
{
    const vt_pylayout *L = &g_py.L;
    int n = 0, bad = 0, steps = 0;
    for (; frame; steps++) {
        if (steps >= MAX_WALK_STEPS || !ptr_ok(frame))
            goto stop;
        uintptr_t next = rdp(safe, frame + L->f_previous, &bad);
        int owner = minor >= 11 ? rdc(safe, frame + L->f_owner, &bad) : 0;
        if (bad)
            goto stop;
        if (minor >= 12 && owner == OWNED_BY_CSTACK) {
            boundary(out, n); /* the shim of one C-level eval call */
            frame = next;
            continue;
        }
        uintptr_t code = rdp(safe, frame + L->f_code, &bad);
        if (bad || !ptr_ok(code))
            goto stop;
        if (rdp(safe, code + L->ob_type, &bad) != g_py.code_type || bad) {
            if (minor == 13) { /* a non-code executable: not a Python frame */
                frame = next;
                continue;
            }
            goto stop;
        }
        uintptr_t instr = minor == 10 ? (uint32_t)rdi(safe, frame + L->f_instr, &bad)
                                      : rdp(safe, frame + L->f_instr, &bad);
        uintptr_t lt;
        int first, line = 0, kind;
        uint64_t key = code_key(safe, code, &lt, &first);
        if (bad || !key)
            goto stop;
        const int16_t gen = owner == OWNED_BY_GENERATOR;
        vt_frame_ent *e = cache ? &cache[hash_slot(key ^ instr, 10)] : NULL;
        if (e && e->key == key && e->instr == instr && e->gen == gen) {
            kind = e->kind;
            line = e->line;
        } else {
            kind = frame_line(safe, minor, code, instr, owner, lt, first, &line);
            if (kind == FR_STOP || (safe && line < -1))
                goto stop;
            if (e)
                *e = (vt_frame_ent){.key = key, .instr = instr, .line = line, .kind = (int16_t)kind, .gen = gen};
        }
        int entry = minor == 10 || (minor == 11 && rdc(safe, frame + L->f_is_entry, &bad));
        if (kind == FR_EMIT) {
            if (n == max) {
                out[n - 1].flags |= VT_PYFRAME_TRUNCATED;
                if (rec) {
                    rec->nsteps = steps + 1;
                    rec->ended = 0;
                }
                return n;
            }
            out[n].key = key;
            out[n].code = code;
            out[n].line = line > 0 ? (uint32_t)line : 0;
            out[n].nentry = 0;
            out[n].flags = 0;
            n++;
        }
        if (entry)
            boundary(out, n);
        frame = next;
    }
    if (rec) {
        rec->nsteps = steps;
        rec->ended = 1;
    }
    return n;
stop:
    if (rec)
        rec->nsteps = -1;
    return safe ? VT_ERR_CORRUPT : n;
}

#define VT_WALK_FOR(m)                                                                        \
    VT_HOT static __attribute__((noinline)) int walk##m(uintptr_t f, vt_pyframe *out, int max, \
                                                        vt_frame_ent *cache, pm_end *rec)      \
    {                                                                                          \
        return walk(0, m, f, out, max, cache, rec);                                            \
    }
VT_WALK_FOR(10)
VT_WALK_FOR(11)
VT_WALK_FOR(12)
VT_WALK_FOR(13)

/* Innermost frame pointer of thread state `ts`, 0 if none. */
VT_AI uintptr_t top_frame(int safe, uintptr_t ts, int *bad)
{
    const vt_pylayout *L = &g_py.L;
    if (L->ts_frame >= 0)
        return rdp(safe, ts + L->ts_frame, bad);
    uintptr_t cf = rdp(safe, ts + L->ts_cframe, bad);
    if (*bad || !ptr_ok(cf))
        return 0;
    return rdp(safe, cf + L->cf_current, bad);
}

/* The frames of the memo's walk of chain c when it holds one for this cap
 * (copied to out, or handed out in place), else -1. */
VT_AI int pm_replay(pm_memo *pm, const pm_chain *c, uint64_t epoch, int max, vt_pyframe *out,
                    const vt_pyframe **frames, uint64_t *walk)
{
    const unsigned set = pm_set(c->tag);
    for (int w = 0; w < PM_WAYS; w++) {
        const pm_entry *m = &pm->e[set][w];
        if (pm->tag[set][w] != c->tag || m->c.tag2 != c->tag2 || m->max != max || m->c.k != c->k ||
            m->c.ended != c->ended || m->epoch != epoch)
            continue;
        if (frames)
            *frames = m->out; /* valid until this thread's next capture */
        else
            memcpy(out, m->out, (size_t)m->n * sizeof(vt_pyframe));
        if (walk)
            *walk = m->walk;
        pm->age[set][w] = ++pm->clock;
        return m->n;
    }
    return -1;
}

VT_HOT int vt_pystack_capture(vt_pyframe *out, int max) { return vt_pystack_capture_walk(out, max, NULL, NULL); }

VT_HOT int vt_pystack_capture_walk(vt_pyframe *out, int max, const vt_pyframe **frames, uint64_t *walk)
{
    if (frames)
        *frames = out;
    if (walk)
        *walk = 0;
    if (!__atomic_load_n(&g_py.ready, __ATOMIC_ACQUIRE))
        return VT_ERR_DISABLED;
    if (max > VT_PYSTACK_MAX_DEPTH)
        max = VT_PYSTACK_MAX_DEPTH;
    if (max <= 0 || !g_py.is_initialized())
        return 0;
    uintptr_t ts = (uintptr_t)g_py.get_tstate();
    if (!ptr_ok(ts) || *(const uintptr_t *)(ts + g_py.L.ts_interp) != g_py.main_interp)
        return 0;
    if (__builtin_expect(!__atomic_load_n(&g_py.validated, __ATOMIC_ACQUIRE), 0)) {
        /* not checked yet: only fault-tolerant reads until it is */
        static __thread unsigned backoff;
        int bad = 0;
        uintptr_t f = top_frame(1, ts, &bad);
        if (bad || !f || (backoff && --backoff))
            return 0;
        int rc = validate_late();
        if (rc < 0)
            return VT_ERR_DISABLED;
        if (rc == 0) {
            backoff = 256; /* nothing to check here: try again later */
            return 0;
        }
    }
    int bad = 0;
    uintptr_t f = top_frame(0, ts, &bad);
    if (!ptr_ok(f))
        return 0;
    const int minor = g_py.L.minor;
    pm_chain c;
    const uint64_t epoch = __atomic_load_n(&g_code_epoch, __ATOMIC_ACQUIRE); /* before the chain is read */
    int sc;
    switch (minor) {
    case 10: sc = pm_scan10(f, &c); break;
    case 11: sc = pm_scan11(f, &c); break;
    case 12: sc = pm_scan12(f, &c); break;
    default: sc = pm_scan13(f, &c); break;
    }
    int n, keep = sc == 0;
    pm_memo *pm = VT_TLS_ADDR(&t_pm);
    if (keep && (n = pm_replay(pm, &c, epoch, max, out, frames, walk)) >= 0)
        return n;
    pm_end end = {-1, 0};
    vt_frame_ent *cache = VT_TLS_ADDR(&t_frames[0]); /* one TLS lookup, not one per frame */
    switch (minor) { /* one specialised copy of the loop per version */
    case 10: n = walk10(f, out, max, cache, &end); break;
    case 11: n = walk11(f, out, max, cache, &end); break;
    case 12: n = walk12(f, out, max, cache, &end); break;
    default: n = walk13(f, out, max, cache, &end); break;
    }
    /* kept when the scan covered every frame the walk read, and ended
     * where the walk did: into the set's free or least recently used way */
    if (keep && end.nsteps >= 0 && end.nsteps <= c.k && (!end.ended || (c.ended && end.nsteps == c.k))) {
        const unsigned set = pm_set(c.tag);
        int w = 0;
        for (int i = 1; i < PM_WAYS && pm->tag[set][w]; i++)
            if (!pm->tag[set][i] || (int32_t)(pm->age[set][i] - pm->age[set][w]) < 0)
                w = i;
        pm_entry *m = &pm->e[set][w];
        m->c = c;
        m->epoch = epoch;
        memcpy(m->out, out, (size_t)n * sizeof(vt_pyframe));
        m->n = n;
        m->max = max;
        m->walk = __atomic_add_fetch(&g_pm_walks, 1, __ATOMIC_RELAXED);
        pm->tag[set][w] = c.tag;
        pm->age[set][w] = ++pm->clock;
        if (walk)
            *walk = m->walk;
    }
    return n;
}

/* ---- strings ---- */

size_t put_utf8(char *b, size_t n, size_t o, uint32_t c)
{
    char tmp[4];
    size_t k;
    if (c < 0x80) {
        tmp[0] = (char)c;
        k = 1;
    } else if (c < 0x800) {
        tmp[0] = (char)(0xC0 | (c >> 6));
        tmp[1] = (char)(0x80 | (c & 63));
        k = 2;
    } else if (c < 0x10000) {
        tmp[0] = (char)(0xE0 | (c >> 12));
        tmp[1] = (char)(0x80 | ((c >> 6) & 63));
        tmp[2] = (char)(0x80 | (c & 63));
        k = 3;
    } else {
        tmp[0] = (char)(0xF0 | ((c >> 18) & 7));
        tmp[1] = (char)(0x80 | ((c >> 12) & 63));
        tmp[2] = (char)(0x80 | ((c >> 6) & 63));
        tmp[3] = (char)(0x80 | (c & 63));
        k = 4;
    }
    if (o + k >= n)
        return 0; /* no room: stop at a character boundary */
    memcpy(b + o, tmp, k);
    return k;
}

int vt_pystack_describe(uint64_t code, char *file, size_t nfile, char *func, size_t nfunc)
{
    if (!g_py.ready)
        return VT_ERR_DISABLED;
    return describe(0, code, file, nfile, func, nfunc);
}

/* The walk's pieces with fault-tolerant reads, for the layout checks of
 * vt_pystack_layout.c (out of line: the capture keeps its own inlined). */
uintptr_t vt_py_top_frame_safe(uintptr_t ts, int *bad) { return top_frame(1, ts, bad); }
int vt_py_walk_safe(uintptr_t f, vt_pyframe *out, int max) { return walk(1, g_py.L.minor, f, out, max, NULL, NULL); }
int vt_py_describe_safe(uint64_t code, char *file, size_t nfile, char *func, size_t nfunc)
{
    return describe(1, code, file, nfile, func, nfunc);
}
int vt_py_read_str_safe(uintptr_t s, char *buf, size_t n) { return read_str(1, s, buf, n); }
