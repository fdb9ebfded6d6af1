/* unwind_chain.c - a known call chain for the unwinder tests, compiled twice:
 * with and without frame pointers (see tests.cmake).  Each level does work
 * after its call so that no call becomes a tail call. */
#include <alloca.h>
#include <execinfo.h>
#include <string.h>

#include "unwind_chain.h"

/* per thread: the threaded unwinder tests call these at once (no race) */
static _Thread_local volatile int chain_sink;

__attribute__((noinline)) int chain_c(vt_unwinder *u, chain_result *r, int x)
{
    const uint64_t *fr = NULL;
    r->n = vt_unwind_capture_keyed(u, r->ips, r->max, r->xkey, &r->walk, r->inplace ? &fr : NULL);
    r->was_inplace = r->inplace && fr != r->ips;
    if (r->was_inplace)
        memcpy(r->ips, fr, (size_t)r->n * sizeof(uint64_t));
    r->nbt = backtrace(r->bt, 64);
    chain_sink += x;
    return r->n + x;
}

/* alloca makes the compiler keep rbp as the CFA register even without
 * frame pointers: exercises rbp-based rules. */
__attribute__((noinline)) int chain_b(vt_unwinder *u, chain_result *r, int x)
{
    char *buf = alloca((size_t)x + 16);
    memset(buf, x, (size_t)x + 16);
    int v = chain_c(u, r, buf[x / 2]);
    chain_sink += buf[3];
    return v + 1;
}

/* a large frame: CFA offset above 4 KiB */
__attribute__((noinline)) int chain_a(vt_unwinder *u, chain_result *r, int x)
{
    volatile char big[6000];
    big[x] = (char)x;
    int v = chain_b(u, r, x + 3);
    return v + big[x];
}

__attribute__((noinline)) int chain_rec(vt_unwinder *u, chain_result *r, int depth)
{
    if (depth == 0)
        return chain_a(u, r, 5);
    int v = chain_rec(u, r, depth - 1);
    chain_sink += depth;
    return v + 1;
}

/* Two callers of chain_c with the same frame shape, under one parent: the
 * capture starts at the same stack pointer from both, so the second walk
 * finds the first one's memo and must notice the different return address. */
__attribute__((noinline)) int chain_x(vt_unwinder *u, chain_result *r, int x)
{
    int v = chain_c(u, r, x);
    chain_sink += 1;
    return v + 1;
}

__attribute__((noinline)) int chain_y(vt_unwinder *u, chain_result *r, int x)
{
    int v = chain_c(u, r, x);
    chain_sink += 2;
    return v + 2;
}

__attribute__((noinline)) int chain_pick(vt_unwinder *u, chain_result *r, int which)
{
    int v = which ? chain_y(u, r, 1) : chain_x(u, r, 1);
    chain_sink += v;
    return v;
}

/* chain_rbp_data(u, r, x): calls chain_x(u, r, 1) with a value derived from
 * x in rbp, as code without frame pointers keeps data there.  Frames below
 * save that rbp; a walk must not depend on it unless it uses it. */
__asm__(".text\n"
        ".globl chain_rbp_data\n"
        ".type chain_rbp_data, @function\n"
        "chain_rbp_data:\n"
        ".cfi_startproc\n"
        "  push %rbp\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset %rbp, -16\n"
        "  imul $0x12345, %rdx, %rbp\n"
        "  mov $1, %edx\n"
        "  call chain_x\n"
        "  pop %rbp\n"
        ".cfi_def_cfa_offset 8\n"
        "  ret\n"
        ".cfi_endproc\n"
        ".size chain_rbp_data, .-chain_rbp_data\n");
