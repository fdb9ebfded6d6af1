/* gen_symcache.c - `gen_symcache OUT MODULE BUILDID_HEX OFFSETS [MODULE
 * BUILDID_HEX OFFSETS]...`: a trace whose allocations' stacks are native
 * frames in real shared objects, each MODULE recorded with its real build
 * id and one allocation per address of OFFSETS (a file, one hex offset in
 * the module a line): what the build-id symbol cache resolves once and
 * answers after (tests/analyze/symcache.sh, bench/symcache.py). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_gen.h"

static size_t parse_bid(const char *hex, uint8_t *bid, size_t cap)
{
    size_t n = strlen(hex) / 2;
    if (n > cap || n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1)
            return 0;
        bid[i] = (uint8_t)v;
    }
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 5 || (argc - 2) % 3) {
        fprintf(stderr,
                "usage: gen_symcache OUT MODULE BUILDID_HEX OFFSETS [MODULE BUILDID_HEX OFFSETS]...\n");
        return 2;
    }
    gen_proc gp = {.program = "symcache", .pid = 4322, .kernels = 0, .native = 1, .python = 1};
    gen_open(argv[1], &gp);
    gen_device(0, "NVIDIA H200", 140 * GiB);
    gen_code(1, "/home/user/train.py", "main");
    uint64_t addr = 0x800000000ull, t = 1;
    for (int a = 2, m = 0; a + 2 < argc; a += 3, m++) {
        uint8_t bid[64];
        size_t n = parse_bid(argv[a + 1], bid, sizeof(bid));
        if (!n)
            return 2;
        /* each module 8 GiB of address space apart, its file at offset 0 */
        const uint64_t base = 0x7f0000000000ull + (uint64_t)m * 0x200000000ull;
        gen_module_bid(argv[a], base, base + 0x1ffffffffull, base, bid, (uint32_t)n);
        FILE *f = fopen(argv[a + 2], "r");
        if (!f) {
            perror(argv[a + 2]);
            return 1;
        }
        unsigned long long off;
        while (fscanf(f, "%llx", &off) == 1) {
            gen_stack s = {.n = 0};
            gs_native(&s, base + off);
            gs_py(&s, 1, 7);
            gen_alloc(T(t++ * MS), addr, 1 * MiB, 0, VT_MEM_DEVICE, VT_API_MALLOC, &s);
            addr += 2 * MiB;
        }
        fclose(f);
    }
    gen_close(VT_END_NORMAL, 0);
    return 0;
}
