/* gen_symtrace.c - `gen_symtrace OUT MODULE BUILDID_HEX OFFSET_HEX`: a trace
 * with one allocation whose stack is a native frame in MODULE at OFFSET
 * (the return address after a call there) and a Python frame, MODULE
 * recorded with its real build id: what `vramtrace symbolize` resolves
 * and a report elsewhere reads back (tests/analyze/symbols.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_gen.h"

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: gen_symtrace OUT MODULE BUILDID_HEX OFFSET_HEX\n");
        return 2;
    }
    uint8_t bid[64];
    size_t n = strlen(argv[3]) / 2;
    if (n > sizeof(bid) || n == 0)
        return 2;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(argv[3] + 2 * i, "%2x", &v) != 1)
            return 2;
        bid[i] = (uint8_t)v;
    }
    const uint64_t base = 0x7f5000000000ull, off = strtoull(argv[4], NULL, 16);
    gen_proc gp = {.program = "symtest", .pid = 4321, .kernels = 0, .native = 1, .python = 1};
    gen_open(argv[1], &gp);
    gen_device(0, "NVIDIA H200", 140 * GiB);
    gen_module_bid(argv[2], base, base + 0x100000, base, bid, (uint32_t)n);
    gen_code(1, "/home/user/train.py", "main");
    gen_stack s = {.n = 0};
    gs_native(&s, base + 0x10); /* innermost: the address itself */
    gs_native(&s, base + off);  /* a return address: the call before it */
    gs_py(&s, 1, 7);
    gen_alloc(T(1 * MS), 0x800000000ull, 8 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &s);
    gen_close(VT_END_NORMAL, 0);
    return 0;
}
