/* vt_pystack_int.h - what the Python frame reader's parts share
 * (vt_pystack.h):
 *
 *   vt_pystack.c         the walk of a thread's frame chain (per-thread
 *                        caches, the memo of whole walks), the capture,
 *                        code objects' file and function names
 *   vt_pystack_layout.c  per-version layouts (3.10-3.13), their checks
 *                        against the running interpreter, init
 *   vt_pystack_merge.c   the interpreter's eval ranges, the merge of native
 *                        and Python frames
 *
 * Runs inside the traced process: plain loads, no GIL, no allocation.
 */
#ifndef VT_PYSTACK_INT_H
#define VT_PYSTACK_INT_H

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

typedef struct {
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
} __attribute__((aligned(64))) vt_pystate;
#define SEEN_CACHE 1024

/* ---- shared between the parts */

/* vt_pystack.c: the walk's pieces with fault-tolerant reads, for the checks */
uintptr_t vt_py_top_frame_safe(uintptr_t ts, int *bad);
int vt_py_walk_safe(uintptr_t f, vt_pyframe *out, int max);
int vt_py_describe_safe(uint64_t code, char *file, size_t nfile, char *func, size_t nfunc);
int vt_py_read_str_safe(uintptr_t s, char *buf, size_t n);

extern vt_pystate g_py;
int safe_read(void *dst, uintptr_t src, size_t n);
extern __thread uint64_t t_seen[SEEN_CACHE];
extern uint64_t g_code_epoch __attribute__((aligned(64)));
int on_code_event(int event, void *code);
size_t put_utf8(char *b, size_t n, size_t o, uint32_t c);
int find_text(struct dl_phdr_info *info, size_t size, void *arg);
void add_eval_symbol(const char *name);
int fail(int rc, const char *fmt, const char *arg);
int validate_late(void);

VT_AI int ptr_ok(uintptr_t p) { return p >= 4096 && p < (1ull << 47) && !(p & 7); }
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
/* Copy a compact str object as UTF-8 into buf[0..n) (n >= 1). */
VT_AI int read_str(int safe, uintptr_t s, char *buf, size_t n)
{
    const vt_pylayout *L = &g_py.L;
    int bad = 0;
    buf[0] = 0;
    if (!ptr_ok(s) || rdp(safe, s + L->ob_type, &bad) != g_py.unicode_type || bad)
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
    const vt_pylayout *L = &g_py.L;
    int bad = 0, rc = VT_ERR_CORRUPT;
    if (!nfile || !nfunc)
        return VT_ERR_INVALID;
    file[0] = func[0] = 0;
    if (!ptr_ok(code) || rdp(safe, code + L->ob_type, &bad) != g_py.code_type || bad)
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

#endif
