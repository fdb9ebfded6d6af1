/* test_symtab.c - `test_symtab [LIB]...`: the sorted symbol table
 * (src/analyze/vt_symtab.c) gives the name dwfl_module_addrinfo gives, on
 * real shared objects: those named, and those this test has loaded (libc,
 * libdw, libelf, libstdc++, ...).  Addresses: spread evenly over the
 * executable sections, and each symbol's first byte, last byte, the byte
 * past its end and the byte before it (where the choices change).  Prints
 * per library the addresses compared, those the index left to libdwfl, and
 * the time of each way; exit 1 on any difference. */
#define _GNU_SOURCE
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vt_analyze_int.h"

static const Dwfl_Callbacks cbs = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int check_lib(const char *path)
{
    Dwfl *d = dwfl_begin(&cbs);
    dwfl_report_begin(d);
    Dwfl_Module *mod = dwfl_report_elf(d, path, path, -1, 0, false);
    dwfl_report_end(d, NULL, NULL);
    if (!mod) {
        dwfl_end(d);
        printf("%s: not an ELF file here, skipped\n", path);
        return 0;
    }
    int nsym = dwfl_module_getsymtab(mod);
    if (nsym < 2) {
        dwfl_end(d);
        printf("%s: no symbols, skipped\n", path);
        return 0;
    }
    /* dwfl scans every symbol per address: keep each library to ~2e7 looks */
    size_t budget = 20000000 / (size_t)nsym, cap = budget < 200 ? 200 : budget > 6000 ? 6000 : budget;
    uint64_t *addrs = malloc(cap * sizeof(*addrs));
    size_t n = 0;
    GElf_Addr bias;
    Elf *elf = dwfl_module_getelf(mod, &bias);
    Elf_Scn *scn = NULL;
    size_t spread = cap / 2;
    uint64_t exlo[64], exhi[64];
    int nex = 0;
    while (elf && (scn = elf_nextscn(elf, scn)) && nex < 64) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR) && sh.sh_size) {
            exlo[nex] = sh.sh_addr;
            exhi[nex++] = sh.sh_addr + sh.sh_size;
        }
    }
    for (int s = 0; s < nex; s++)
        for (size_t k = 0; k < spread / (size_t)nex && n < cap; k++)
            addrs[n++] = exlo[s] + (exhi[s] - exlo[s]) * (2 * k + 1) / (2 * (spread / (size_t)nex));
    int step = nsym / (int)((cap - n) / 4 + 1) + 1;
    for (int i = 1; i < nsym && n + 4 <= cap; i += step) {
        GElf_Sym sym;
        GElf_Addr v;
        if (!dwfl_module_getsym_info(mod, i, &sym, &v, NULL, NULL, NULL) || !v)
            continue;
        addrs[n++] = v;
        addrs[n++] = v - 1;
        addrs[n++] = v + sym.st_size;
        if (sym.st_size)
            addrs[n++] = v + sym.st_size - 1;
    }
    double t0 = now();
    vt_symtab *t = vt_symtab_build(mod);
    double t1 = now();
    int bad = 0;
    size_t undecided = 0;
    const char **mine = calloc(n, sizeof(*mine));
    if (t)
        for (size_t i = 0; i < n; i++) {
            int dec;
            mine[i] = vt_symtab_lookup(t, addrs[i], &dec);
            if (!dec) {
                undecided++;
                mine[i] = (const char *)1;
            }
        }
    double t2 = now();
    for (size_t i = 0; i < n; i++) {
        GElf_Off off;
        GElf_Sym sym;
        const char *ref = dwfl_module_addrinfo(mod, addrs[i], &off, &sym, NULL, NULL, NULL);
        if (!t || mine[i] == (const char *)1)
            continue;
        if ((ref == NULL) != (mine[i] == NULL) || (ref && strcmp(ref, mine[i]))) {
            if (bad < 10)
                printf("FAIL: %s at %#llx: libdwfl %s, the index %s\n", path, (unsigned long long)addrs[i],
                       ref ? ref : "(none)", mine[i] ? mine[i] : "(none)");
            bad++;
        }
    }
    double t3 = now();
    printf(
        "%s: %d symbols, %zu addresses, %zu left to libdwfl%s; index %.1f ms to build + %.2f us an address, "
        "libdwfl %.1f us an address%s\n",
        path, nsym, n, undecided, t ? "" : " (no index: all)", (t1 - t0) * 1e3,
        n ? (t2 - t1) * 1e6 / (double)n : 0, n ? (t3 - t2) * 1e6 / (double)n : 0, bad ? "; DIFFERENCES" : "");
    free(mine);
    free(addrs);
    vt_symtab_free(t);
    dwfl_end(d);
    return bad != 0;
}

static int on_obj(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    int *fail = arg;
    const char *p = info->dlpi_name;
    if (p && *p == '/' && !strstr(p, "linux-vdso"))
        *fail |= check_lib(p);
    return 0;
}

int main(int argc, char **argv)
{
    int fail = 0;
    elf_version(EV_CURRENT);
    for (int i = 1; i < argc; i++)
        fail |= check_lib(argv[i]);
    dl_iterate_phdr(on_obj, &fail);
    if (!fail)
        printf("symtab: the index gives libdwfl's names\n");
    return fail;
}
