/* unwind_chain.h - the call chain used by test_unwind.c and bench_unwind.c. */
#ifndef UNWIND_CHAIN_H
#define UNWIND_CHAIN_H
#include <stdint.h>
#include "vt_unwind.h"
typedef struct {
    uint64_t ips[256];
    int n, max;
    uint64_t xkey; /* vt_unwind_capture_keyed's key (0: none) */
    uint64_t walk; /* the walk id it gave */
    int inplace;   /* ask for the frames in place (copied into ips afterwards) */
    int was_inplace; /* they came from the memo, not ips */
    void *bt[64];
    int nbt;
} chain_result;
int chain_c(vt_unwinder *u, chain_result *r, int x);
int chain_b(vt_unwinder *u, chain_result *r, int x);
int chain_a(vt_unwinder *u, chain_result *r, int x);
int chain_rec(vt_unwinder *u, chain_result *r, int depth);
int chain_x(vt_unwinder *u, chain_result *r, int x);
int chain_y(vt_unwinder *u, chain_result *r, int x);
int chain_pick(vt_unwinder *u, chain_result *r, int which);
int chain_rbp_data(vt_unwinder *u, chain_result *r, int x);
#endif
