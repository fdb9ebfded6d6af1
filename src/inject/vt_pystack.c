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
#define _GNU_SOURCE
#include "vt_pystack.h"

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "vt_error.h"
#include "vt_hot.h"

#define VT_AI __attribute__((always_inline)) static inline

/* Byte offsets of what we read, per minor version (-1: not in this
 * version).  What every capture reads comes first and fills one cache line
 * (up to ob_type); the rest serves line decoding and names. */
typedef struct {
    int32_t minor;
    int32_t ts_interp;   /* PyThreadState.interp */
    int32_t ts_frame;    /* 3.10 .frame (PyFrameObject*), 3.13 .current_frame */
    int32_t ts_cframe;   /* 3.11/3.12 .cframe */
    int32_t cf_current;  /* _PyCFrame.current_frame */
    int32_t f_previous;  /* f_back / previous */
    int32_t f_code;      /* f_code / f_executable */
    int32_t f_instr;     /* 3.10 int f_lasti; prev_instr (3.11/12); instr_ptr (3.13) */
    int32_t f_owner;     /* char owner */
    int32_t f_is_entry;  /* 3.11 bool is_entry */
    int32_t co_filename, co_name, co_qualname, co_linetable, co_firstlineno;
    int32_t ob_type;
    int32_t co_firsttraceable, co_adaptive;
    int32_t ob_size, bytes_sval;
    int32_t u_length, u_state, u_ascii_size, u_compact_size;
} vt_pylayout;
_Static_assert(offsetof(vt_pylayout, ob_type) < 64, "the capture's offsets in one line");

static const vt_pylayout k_layouts[] = {
    {10, 16, 24, -1, -1, 24, 32, 96, -1, -1, 104, 112, -1, 120, 40, 8, -1, -1, 16, 32, 16, 32, 48, 72},
    {11, 16, -1, 56, 8, 48, 32, 56, 69, 68, 112, 120, 128, 136, 72, 8, 168, 184, 16, 32, 16, 32, 48, 72},
    {12, 16, -1, 56, 0, 8, 0, 56, 70, -1, 112, 120, 128, 136, 68, 8, 176, 192, 16, 32, 16, 32, 40, 56},
    {13, 16, 72, -1, -1, 8, 0, 56, 70, -1, 112, 120, 128, 136, 68, 8, 184, 200, 16, 32, 16, 32, 40, 56},
};

/* PyASCIIObject.state bits (same in 3.10-3.13). */
#define U_KIND_MASK 0x1Cu
#define U_KIND_SHIFT 2
#define U_COMPACT 0x20u
#define U_ASCII 0x40u

#define OWNED_BY_GENERATOR 1
#define OWNED_BY_CSTACK 3

/* 3.13 _Py_DebugOffsets (at the start of _PyRuntime): byte offsets of the
 * uint64 fields we cross-check. */
#define DBG_COOKIE 0
#define DBG_VERSION 8
#define DBG_FREE_THREADED 16
#define DBG_TS_INTERP 176
#define DBG_TS_CURRENT_FRAME 184
#define DBG_IF_PREVIOUS 232
#define DBG_IF_EXECUTABLE 240
#define DBG_IF_INSTR_PTR 248
#define DBG_IF_OWNER 264
#define DBG_CO_FILENAME 280
#define DBG_CO_NAME 288
#define DBG_CO_QUALNAME 296
#define DBG_CO_LINETABLE 304
#define DBG_CO_FIRSTLINENO 312
#define DBG_CO_ADAPTIVE 344
#define DBG_OB_TYPE 360
#define DBG_BYTES_OB_SIZE 520
#define DBG_BYTES_SVAL 528
#define DBG_U_STATE 544
#define DBG_U_LENGTH 552
#define DBG_U_ASCII_SIZE 560
#define DBG_END 568

#define MAX_EVAL_RANGES 8
#define MAX_WALK_STEPS (4 * VT_PYSTACK_MAX_DEPTH + 64)
#define MAX_LINETABLE (1u << 24)
#define MAX_STR_LEN (1 << 20)

static struct {
    /* what every capture reads, in the first two lines */
    vt_pylayout L;
    int ready;
    int validated;  /* layouts checked on a real frame chain (atomic) */
    int code_watch; /* 3.12+: code objects' destruction counted (watch_code): the memo names them by address */
    uintptr_t code_type, main_interp;
    void *(*get_tstate)(void);
    int (*is_initialized)(void);

    int done, result;
    char why[200];
    char version[32];
    uintptr_t bytes_type, unicode_type;
    int (*addr2line)(void *code, int addr_bytes); /* PyCode_Addr2Line, init checks only */
    int validating; /* a thread is checking now (atomic) */
    int quiet;      /* VRAMTRACE_QUIET: no stderr line on a late failure */
    int neval;
    uint64_t eval_start[MAX_EVAL_RANGES], eval_end[MAX_EVAL_RANGES];
    uint64_t interp_lo, interp_hi; /* executable segment holding the interpreter */
    int pipe_fd[2];
} g __attribute__((aligned(64))) = {.pipe_fd = {-1, -1}};

VT_AI int ptr_ok(uintptr_t p) { return p >= 4096 && p < (1ull << 47) && !(p & 7); }

/* ---- fault-tolerant reads (init only) ---- */

static int safe_read(void *dst, uintptr_t src, size_t n)
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
    if (g.pipe_fd[0] < 0 && pipe(g.pipe_fd) < 0)
        return -1;
    for (size_t off = 0; off < n;) {
        size_t c = n - off < 4096 ? n - off : 4096;
        if (write(g.pipe_fd[1], (const char *)src + off, c) != (ssize_t)c)
            return -1;
        if (read(g.pipe_fd[0], (char *)dst + off, c) != (ssize_t)c)
            return -1;
        off += c;
    }
    return 0;
}

/* Read n bytes at addr: a plain load when !safe (the compiler folds it). */
VT_AI int rd(int safe, void *dst, uintptr_t addr, size_t n)
{
    if (!safe) {
        memcpy(dst, (const void *)addr, n);
        return 0;
    }
    return safe_read(dst, addr, n);
}
VT_AI uintptr_t rdp(int safe, uintptr_t addr, int *bad)
{
    uintptr_t v = 0;
    if (rd(safe, &v, addr, sizeof v) < 0)
        *bad = 1;
    return v;
}
VT_AI int32_t rdi(int safe, uintptr_t addr, int *bad)
{
    int32_t v = 0;
    if (rd(safe, &v, addr, sizeof v) < 0)
        *bad = 1;
    return v;
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

#define SEEN_CACHE 1024
static __thread uint64_t t_seen[SEEN_CACHE];

VT_AI unsigned hash_slot(uint64_t k, unsigned bits)
{
    return (unsigned)((k * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

/* Two-way sets: two keys of one stack that hash alike do not evict each
 * other (which would define them again on every capture). */
VT_AI int seen_in(uint64_t *tab, uint64_t key)
{
    uint64_t *e = &tab[hash_slot(key, 10) & ~1u];
    if (e[0] == key)
        return 1;
    if (e[1] == key) { /* keep the most recent first */
        e[1] = e[0];
        e[0] = key;
        return 1;
    }
    e[1] = e[0];
    e[0] = key;
    return 0;
}

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
    const vt_pylayout *L = &g.L;
    int bad = 0;
    if (addr < 0)
        return first;
    if (rdp(safe, lt + L->ob_type, &bad) != g.bytes_type || bad)
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
    const vt_pylayout *L = &g.L;
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
    if (ft < 0 || ft >= size || safe_read(&op, code + g.L.co_adaptive + 2 * (uintptr_t)ft, 1) < 0)
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
    const vt_pylayout *L = &g.L;
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
    if (safe && *line >= -1 && g.addr2line) {
        /* ground truth: the interpreter's own decoder (pure reads of this
         * live code object, no allocation, no GIL needed) */
        int want = g.addr2line((void *)code, minor == 10 ? addr : addr * 2);
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
static uint64_t g_code_epoch __attribute__((aligned(64)));

static int on_code_event(int event, void *code)
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
    const vt_pylayout *L = &g.L;
    uintptr_t c = *(const uintptr_t *)(frame + L->f_code);
    uint64_t is_code = 0;
#ifdef VT_BENCH_PM_ADDR /* benchmarks only (bench/inject.cmake): nothing read of code objects */
    if (0) {
#else
    if (watch) { /* by address (g_code_epoch); 3.12's f_code is always a code object */
        is_code = minor == 12 || (ptr_ok(c) && *(const uintptr_t *)(c + L->ob_type) == g.code_type);
    } else if (ptr_ok(c) && *(const uintptr_t *)(c + L->ob_type) == g.code_type) {
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
    const long prev = g.L.f_previous;
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
    const int watch = __atomic_load_n(&g.code_watch, __ATOMIC_RELAXED);
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
    const vt_pylayout *L = &g.L;
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
        if (rdp(safe, code + L->ob_type, &bad) != g.code_type || bad) {
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
    const vt_pylayout *L = &g.L;
    if (L->ts_frame >= 0)
        return rdp(safe, ts + L->ts_frame, bad);
    uintptr_t cf = rdp(safe, ts + L->ts_cframe, bad);
    if (*bad || !ptr_ok(cf))
        return 0;
    return rdp(safe, cf + L->cf_current, bad);
}

static int validate_late(void);

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
    if (!__atomic_load_n(&g.ready, __ATOMIC_ACQUIRE))
        return VT_ERR_DISABLED;
    if (max > VT_PYSTACK_MAX_DEPTH)
        max = VT_PYSTACK_MAX_DEPTH;
    if (max <= 0 || !g.is_initialized())
        return 0;
    uintptr_t ts = (uintptr_t)g.get_tstate();
    if (!ptr_ok(ts) || *(const uintptr_t *)(ts + g.L.ts_interp) != g.main_interp)
        return 0;
    if (__builtin_expect(!__atomic_load_n(&g.validated, __ATOMIC_ACQUIRE), 0)) {
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
    const int minor = g.L.minor;
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

static size_t put_utf8(char *b, size_t n, size_t o, uint32_t c)
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

/* Copy a compact str object as UTF-8 into buf[0..n) (n >= 1). */
VT_AI int read_str(int safe, uintptr_t s, char *buf, size_t n)
{
    const vt_pylayout *L = &g.L;
    int bad = 0;
    buf[0] = 0;
    if (!ptr_ok(s) || rdp(safe, s + L->ob_type, &bad) != g.unicode_type || bad)
        return VT_ERR_CORRUPT;
    long len = (long)rdp(safe, s + L->u_length, &bad);
    uint32_t st = (uint32_t)rdi(safe, s + L->u_state, &bad);
    if (bad || len < 0 || len > MAX_STR_LEN || !(st & U_COMPACT))
        return VT_ERR_CORRUPT;
    unsigned kind = (st & U_KIND_MASK) >> U_KIND_SHIFT;
    if (kind != 1 && kind != 2 && kind != 4)
        return VT_ERR_CORRUPT;
    const uint8_t *d = (const uint8_t *)(s + ((st & U_ASCII) ? L->u_ascii_size : L->u_compact_size));
    uint8_t copy[2048];
    if (safe) { /* one fault-tolerant read of what fits, then decode the copy */
        size_t nb = (size_t)len * kind < sizeof copy ? (size_t)len * kind : sizeof copy;
        if (safe_read(copy, (uintptr_t)d, nb) < 0)
            return VT_ERR_CORRUPT;
        d = copy;
        len = (long)(nb / kind);
    }
    size_t o = 0;
    for (long i = 0; i < len; i++) {
        uint32_t c;
        if (kind == 1) {
            c = d[i];
        } else if (kind == 2) {
            uint16_t v;
            memcpy(&v, d + 2 * i, 2);
            c = v;
        } else {
            memcpy(&c, d + 4 * i, 4);
        }
        if (safe && c < 0x20)
            return VT_ERR_CORRUPT; /* init check: names and paths have no control characters */
        if (c > 0x10FFFF || (c >= 0xD800 && c < 0xE000))
            c = 0xFFFD;
        size_t k = put_utf8(buf, n, o, c);
        if (!k)
            break;
        o += k;
    }
    buf[o] = 0;
    return 0;
}

VT_AI int describe(int safe, uint64_t code, char *file, size_t nfile, char *func, size_t nfunc)
{
    const vt_pylayout *L = &g.L;
    int bad = 0, rc = VT_ERR_CORRUPT;
    if (!nfile || !nfunc)
        return VT_ERR_INVALID;
    file[0] = func[0] = 0;
    if (!ptr_ok(code) || rdp(safe, code + L->ob_type, &bad) != g.code_type || bad)
        goto fail;
    uintptr_t fn = rdp(safe, code + L->co_filename, &bad);
    uintptr_t qn = rdp(safe, code + (L->co_qualname >= 0 ? L->co_qualname : L->co_name), &bad);
    if (bad || read_str(safe, fn, file, nfile) < 0 || read_str(safe, qn, func, nfunc) < 0)
        goto fail;
    return 0;
fail:
    snprintf(file, nfile, "?");
    snprintf(func, nfunc, "?");
    return rc;
}

int vt_pystack_describe(uint64_t code, char *file, size_t nfile, char *func, size_t nfunc)
{
    if (!g.ready)
        return VT_ERR_DISABLED;
    return describe(0, code, file, nfile, func, nfunc);
}

/* ---- eval ranges and merge ---- */

int vt_pystack_test_add_eval(uint64_t start, uint64_t end)
{
    if (g.neval >= MAX_EVAL_RANGES)
        return VT_ERR_NOSPACE;
    g.eval_start[g.neval] = start;
    g.eval_end[g.neval] = end;
    g.neval++;
    return 0;
}

/* ip is a return address: the call lies in (start, end]. */
VT_AI int in_ranges(uint64_t ip, int n, const uint64_t *start, const uint64_t *end)
{
    for (int i = 0; i < n; i++)
        if (ip - start[i] - 1 < end[i] - start[i])
            return 1;
    return 0;
}

int vt_pystack_is_eval(uint64_t ip) { return in_ranges(ip, g.neval, g.eval_start, g.eval_end); }

int vt_pystack_eval_ranges(uint64_t *start, uint64_t *end, int max)
{
    for (int i = 0; i < g.neval && i < max; i++) {
        start[i] = g.eval_start[i];
        end[i] = g.eval_end[i];
    }
    return g.neval;
}

int vt_pystack_test_set_interp(uint64_t start, uint64_t end)
{
    g.interp_lo = start;
    g.interp_hi = end;
    return 0;
}

/* The executable PT_LOAD segment that holds `addr` (the interpreter's code). */
static int find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
    uint64_t addr = *(uint64_t *)arg;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && addr >= lo && addr < lo + ph->p_memsz) {
            g.interp_lo = lo;
            g.interp_hi = lo + ph->p_memsz;
            return 1;
        }
    }
    return 0;
}

static void add_eval_symbol(const char *name)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!p || !dladdr1(p, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym || !sym->st_size)
        return;
    vt_pystack_test_add_eval((uint64_t)(uintptr_t)p, (uint64_t)(uintptr_t)p + sym->st_size);
}

int vt_pystack_merge(const uint64_t *ips, int nips, const vt_pyframe *py, int npy,
                     vt_frame *out, int max)
{
    int n = 0, pi = 0, pending = 0;
    int truncated = npy > 0 && (py[npy - 1].flags & VT_PYFRAME_TRUNCATED);
    /* local copies: stores to out[] cannot alias them */
    uint64_t es[MAX_EVAL_RANGES], ee[MAX_EVAL_RANGES];
    const int ne = g.neval;
    memcpy(es, g.eval_start, sizeof es);
    memcpy(ee, g.eval_end, sizeof ee);
    int anyeval = 0;
    for (int i = 0; i < nips && !anyeval; i++)
        anyeval = in_ranges(ips[i], ne, es, ee);
    if (!anyeval && npy > 0) {
        /* No eval frame recognised (a stripped or cloned eval loop, or an
         * unwind that stopped early): the Python frames go where the stack
         * first enters the interpreter's code, else after the native ones. */
        int at = nips;
        for (int i = 0; i < nips && g.interp_hi; i++)
            if (ips[i] - 1 - g.interp_lo < g.interp_hi - g.interp_lo) {
                at = i;
                break;
            }
        for (int i = 0; i < at && n < max; i++)
            out[n++] = (vt_frame){.pc = ips[i], .line = 0, .kind = VT_FRAME_NATIVE};
        for (int i = 0; i < npy && n < max; i++)
            out[n++] = (vt_frame){.pc = py[i].key, .line = py[i].line, .kind = VT_FRAME_PYTHON};
        for (int i = at; i < nips && n < max; i++)
            out[n++] = (vt_frame){.pc = ips[i], .line = 0, .kind = VT_FRAME_NATIVE};
        return n;
    }
    for (int i = 0; i < nips && n < max; i++) {
        if (!in_ranges(ips[i], ne, es, ee)) {
            out[n++] = (vt_frame){.pc = ips[i], .line = 0, .kind = VT_FRAME_NATIVE};
            continue;
        }
        if (pending > 0) { /* an eval call whose Python frames were all hidden */
            pending--;
            continue;
        }
        if (pi >= npy) {
            if (!truncated)
                out[n++] = (vt_frame){.pc = ips[i], .line = 0, .kind = VT_FRAME_NATIVE};
            continue;
        }
        while (pi < npy && n < max) {
            const vt_pyframe *p = &py[pi++];
            out[n++] = (vt_frame){.pc = p->key, .line = p->line, .kind = VT_FRAME_PYTHON};
            if (p->nentry) {
                pending = p->nentry - 1;
                break;
            }
        }
    }
    while (pi < npy && n < max) {
        const vt_pyframe *p = &py[pi++];
        out[n++] = (vt_frame){.pc = p->key, .line = p->line, .kind = VT_FRAME_PYTHON};
    }
    return n;
}

int vt_pystack_stack(const uint64_t *ips, int nips, vt_frame *out, int max, int pydepth,
                     vt_pystack_define_fn define, void *ctx)
{
    vt_pyframe py[VT_PYSTACK_MAX_DEPTH];
    if (pydepth > VT_PYSTACK_MAX_DEPTH)
        pydepth = VT_PYSTACK_MAX_DEPTH;
    int npy = vt_pystack_capture(py, pydepth);
    if (npy < 0)
        return npy;
    return vt_pystack_finish(ips, nips, py, npy, out, max, define, ctx);
}

VT_HOT int vt_pystack_finish(const uint64_t *ips, int nips, const vt_pyframe *py, int npy, vt_frame *out, int max,
                      vt_pystack_define_fn define, void *ctx)
{
    uint64_t *seen = t_seen; /* one TLS lookup, not one per frame */
    __asm__("" : "+r"(seen));
    for (int i = 0; define && i < npy; i++) {
        if (seen_in(seen, py[i].key))
            continue;
        char file[512], func[256];
        describe(0, py[i].code, file, sizeof file, func, sizeof func);
        if (define(ctx, py[i].key, file, func) < 0)
            vt_pystack_unsee(py[i].key);
    }
    return vt_pystack_merge(ips, nips, py, npy, out, max);
}

/* ---- init ---- */

static int fail(int rc, const char *fmt, const char *arg)
{
    snprintf(g.why, sizeof g.why, fmt, arg ? arg : "");
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
    const vt_pylayout *L = &g.L;
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
    g.done = g.ready = g.result = 0;
    g.why[0] = 0;
    return 0;
}

/* Check the layouts on the calling thread's own frame chain with reads that
 * cannot fault: structure (types, pointers, bounds, RESUME at the first
 * traceable instruction, entry marks), lines against PyCode_Addr2Line,
 * names (filename != function; 3.11+ qualname ends with name).  Returns 1
 * checked, 0 nothing to check (no Python frame), or VT_ERR_CORRUPT with
 * g.why set. */
static int validate_here(void)
{
    int bad = 0;
    uintptr_t ts = (uintptr_t)g.get_tstate();
    if (!ts)
        return 0;
    if (!ptr_ok(ts) || rdp(1, ts + g.L.ts_interp, &bad) != g.main_interp || bad)
        return fail(VT_ERR_CORRUPT, "Python %s: thread state layout mismatch", g.version);
    vt_pyframe fr[VT_PYSTACK_MAX_DEPTH];
    if (g.L.ts_cframe >= 0) {
        /* 3.11/3.12: the _PyCFrame is the root one inside the thread state
         * or lives on this thread's C stack, in an eval loop below us */
        uintptr_t cf = rdp(1, ts + g.L.ts_cframe, &bad), here = (uintptr_t)&cf;
        if (bad || !ptr_ok(cf) ||
            !((cf >= ts && cf < ts + 4096) || (cf > here && cf - here < (64u << 20))))
            return fail(VT_ERR_CORRUPT, "Python %s: thread state cframe layout mismatch", g.version);
    }
    uintptr_t f = top_frame(1, ts, &bad);
    if (bad)
        return fail(VT_ERR_CORRUPT, "Python %s: unreadable frame pointer", g.version);
    int n = walk(1, g.L.minor, f, fr, VT_PYSTACK_MAX_DEPTH, NULL, NULL);
    if (n < 0)
        return fail(VT_ERR_CORRUPT, "Python %s: frame layout mismatch", g.version);
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
        return fail(VT_ERR_CORRUPT, "Python %s: frame chain shorter than the native stack", g.version);
    /* names: a neighbouring field is often a str too, so compare them:
     * a file named like its function is possible, in most frames it is
     * not; a qualified name ends with the name (code objects rebuilt with
     * replace() may differ: a majority must agree) */
    int same_file = 0, qual_ok = 0;
    for (int i = 0; i < n; i++) {
        char file[512], func[256], name[256];
        if (describe(1, fr[i].code, file, sizeof file, func, sizeof func) < 0 || !file[0] || !func[0])
            return fail(VT_ERR_CORRUPT, "Python %s: code object layout mismatch", g.version);
        if (g.L.co_qualname >= 0) {
            size_t lf, ln;
            if (read_str(1, rdp(1, fr[i].code + g.L.co_name, &bad), name, sizeof name) < 0 || bad)
                return fail(VT_ERR_CORRUPT, "Python %s: code name layout mismatch", g.version);
            lf = strlen(func);
            ln = strlen(name);
            qual_ok += lf >= ln && !strcmp(func + lf - ln, name);
        } else {
            snprintf(name, sizeof name, "%s", func);
        }
        same_file += !strcmp(file, name) || !strcmp(file, func);
    }
    if (n > 0 && (2 * same_file > n || (g.L.co_qualname >= 0 && 2 * qual_ok < n)))
        return fail(VT_ERR_CORRUPT, "Python %s: code name layout mismatch", g.version);
    if (!(fr[n - 1].flags & VT_PYFRAME_TRUNCATED) && fr[n - 1].nentry == 0)
        return fail(VT_ERR_CORRUPT, "Python %s: entry-frame layout mismatch", g.version);
    return 1;
}

/* First capture on a thread with frames when init could not check: check
 * now, once; on failure disable and say so once. */
static int validate_late(void)
{
    int expect = 0;
    if (!__atomic_compare_exchange_n(&g.validating, &expect, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return 0; /* another thread is checking: no frames this time */
    int rc = __atomic_load_n(&g.validated, __ATOMIC_ACQUIRE) ? 1 : validate_here();
    if (rc < 0) {
        g.result = rc;
        __atomic_store_n(&g.ready, 0, __ATOMIC_RELEASE);
        if (!g.quiet) {
            char line[256];
            int k = snprintf(line, sizeof line, "vramtrace: python stacks off: %s\n", g.why);
            if (k > 0 && write(2, line, (size_t)k < sizeof line ? (size_t)k : sizeof line - 1) < 0)
                k = 0;
        }
    } else if (rc == 1) {
        __atomic_store_n(&g.validated, 1, __ATOMIC_RELEASE);
    }
    if (g.pipe_fd[0] >= 0) {
        close(g.pipe_fd[0]);
        close(g.pipe_fd[1]);
        g.pipe_fd[0] = g.pipe_fd[1] = -1;
    }
    __atomic_store_n(&g.validating, 0, __ATOMIC_RELEASE);
    return rc;
}

/* 3.12+: count destroyed code objects (g_code_epoch), if this thread holds
 * the GIL now (as the thread that initializes CUDA in PyTorch does).  Never
 * takes it: without it, or without a free watcher slot, the memo keeps
 * naming code objects by their key. */
static void watch_code(unsigned minor)
{
    if (minor < 12 || g.code_watch)
        return;
    void *(*current)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyThreadState_GetUnchecked"); /* 3.13 */
    if (!current)
        current = (void *(*)(void))dlsym(RTLD_DEFAULT, "_PyThreadState_UncheckedGet"); /* 3.12 */
    int (*add)(int (*)(int, void *)) = (int (*)(int (*)(int, void *)))dlsym(RTLD_DEFAULT, "PyCode_AddWatcher");
    void (*clear)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "PyErr_Clear");
    /* the thread's state is attached (it holds the GIL) and is the one
     * PyGILState knows for this thread */
    void *ts = current ? current() : NULL;
    if (!add || !clear || !ts || ts != g.get_tstate())
        return;
    if (add(on_code_event) < 0) {
        clear(); /* no free slot: the exception it set is ours to drop */
        return;
    }
    __atomic_add_fetch(&g_code_epoch, 1, __ATOMIC_RELEASE); /* entries recorded by key are void */
    __atomic_store_n(&g.code_watch, 1, __ATOMIC_RELEASE);
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
    snprintf(g.version, sizeof g.version, "%u.%u.%u", major, minor, micro);
    if (major != 3 || minor < 10 || minor > 13)
        return fail(VT_ERR_VERSION, "unsupported Python %s (3.10-3.13 only)", g.version);
    for (size_t i = 0; i < sizeof k_layouts / sizeof k_layouts[0]; i++)
        if (k_layouts[i].minor == (int)minor)
            g.L = k_layouts[i];
    if (t_break_field)
        break_field(&g.L, t_break_field, t_break_delta);

    g.code_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyCode_Type");
    g.bytes_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyBytes_Type");
    g.unicode_type = (uintptr_t)dlsym(RTLD_DEFAULT, "PyUnicode_Type");
    g.get_tstate = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
    g.is_initialized = (int (*)(void))dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    g.addr2line = (int (*)(void *, int))dlsym(RTLD_DEFAULT, "PyCode_Addr2Line");
    void *(*get_main)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyInterpreterState_Main");
    void *(*thread_head)(void *) = (void *(*)(void *))dlsym(RTLD_DEFAULT, "PyInterpreterState_ThreadHead");
    if (!g.code_type || !g.bytes_type || !g.unicode_type || !g.get_tstate || !g.is_initialized ||
        !get_main || !thread_head || !g.addr2line)
        return fail(VT_ERR_NOT_FOUND, "Python %s: missing interpreter symbols", g.version);
    if (!g.is_initialized())
        return fail(VT_ERR_NOT_FOUND, "Python %s is not initialized yet", g.version);
    if (minor == 13) {
        int rc = check_debug_offsets();
        if (rc < 0)
            return rc;
    }
    g.main_interp = (uintptr_t)get_main();
    if (!ptr_ok(g.main_interp))
        return fail(VT_ERR_CORRUPT, "Python %s: no main interpreter", g.version);

    /* Layout check on real objects, with reads that cannot fault. */
    int bad = 0;
    uintptr_t ts = (uintptr_t)g.get_tstate();
    uintptr_t any = ts ? ts : (uintptr_t)thread_head((void *)g.main_interp);
    if (ptr_ok(any) && rdp(1, any + g.L.ts_interp, &bad) != g.main_interp)
        return fail(VT_ERR_CORRUPT, "Python %s: thread state layout mismatch", g.version);
    const char *q = getenv("VRAMTRACE_QUIET");
    g.quiet = q && *q && strcmp(q, "0") != 0;
    if (g.neval == 0)
        add_eval_symbol("_PyEval_EvalFrameDefault");
    if (!g.interp_hi) {
        uint64_t a = (uint64_t)(uintptr_t)g.is_initialized;
        dl_iterate_phdr(find_text, &a);
    }
    int rc = validate_here();
    if (rc < 0)
        return rc;
    g.validated = rc; /* 0: no Python frame here, the first capture that has some checks */
    watch_code(minor);
    return 0;
}

int vt_pystack_init(char *why, size_t n)
{
    if (!g.done) {
        g.result = do_init();
        g.ready = g.result == 0;
        g.done = 1;
        if (g.pipe_fd[0] >= 0) {
            close(g.pipe_fd[0]);
            close(g.pipe_fd[1]);
            g.pipe_fd[0] = g.pipe_fd[1] = -1;
        }
    }
    if (why && n)
        snprintf(why, n, "%s", g.result ? g.why : "");
    return g.result;
}

int vt_pystack_ready(void) { return g.ready; }

int vt_pystack_code_watch(void) { return __atomic_load_n(&g.code_watch, __ATOMIC_ACQUIRE); }

const char *vt_pystack_version(void) { return g.version; }

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
