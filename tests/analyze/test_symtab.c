/* test_symtab.c - `test_symtab [LIB]...`: the sorted symbol table
 * (src/analyze/vt_symtab.c) gives the name dwfl_module_addrinfo gives, and
 * the scope index (vt_scopes.c) the DIEs that symbolization takes from
 * dwarf_getscopes and dwarf_getscopes_die (the innermost function or
 * inline and the chain of its callers), on
 * real shared objects: those named, and those this test has loaded (libc,
 * libdw, libelf, libstdc++, ...).  Addresses: spread evenly over the
 * executable sections, and each symbol's first byte, last byte, the byte
 * past its end and the byte before it (where the choices change).  Prints
 * per library the addresses compared, those the index left to libdwfl, and
 * the time of each way; exit 1 on any difference. */
#define _GNU_SOURCE
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vt_analyze_int.h"
#include "vt_scopes.h"

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

/* the DIEs resolve() uses: the first inline or function from the innermost
 * scope, then its physical callers up to the first function; n <= 0 none */
static int used_dies(Dwarf_Die *sc, int n, Dwarf_Die *chain, int nchain, void **out)
{
    int i = 0, k = 0;
    for (; i < n; i++) {
        int t = dwarf_tag(&sc[i]);
        if (t == DW_TAG_inlined_subroutine || t == DW_TAG_subprogram)
            break;
    }
    if (n <= 0 || i == n)
        return 0;
    out[k++] = sc[i].addr;
    if (dwarf_tag(&sc[i]) != DW_TAG_inlined_subroutine)
        return k;
    for (int j = 1; j < nchain && k < 64; j++) {
        int t = dwarf_tag(&chain[j]);
        if (t != DW_TAG_inlined_subroutine && t != DW_TAG_subprogram)
            continue;
        out[k++] = chain[j].addr;
        if (t == DW_TAG_subprogram)
            break;
    }
    return k;
}

static int check_scopes(const char *path)
{
    Dwfl *d = dwfl_begin(&cbs);
    dwfl_report_begin(d);
    Dwfl_Module *mod = dwfl_report_elf(d, path, path, -1, 0, false);
    dwfl_report_end(d, NULL, NULL);
    Dwarf_Addr bias;
    if (!mod || !dwfl_module_getdwarf(mod, &bias)) {
        dwfl_end(d);
        return 0;
    }
    GElf_Addr eb;
    Elf *elf = dwfl_module_getelf(mod, &eb);
    Elf_Scn *scn = NULL;
    uint64_t lo = 0, hi = 0;
    while (elf && (scn = elf_nextscn(elf, scn))) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR) && sh.sh_size > hi - lo) {
            lo = sh.sh_addr;
            hi = sh.sh_addr + sh.sh_size;
        }
    }
    vt_scopes *ix = vt_scopes_new();
    const int n = 1000;
    int bad = 0, fast = 0, withsc = 0;
    double t_old = 0, t_new = 0;
    for (int k = 0; k < n && hi > lo; k++) {
        uint64_t a = lo + (hi - lo) * (uint64_t)(2 * k + 1) / (2 * (uint64_t)n);
        Dwarf_Addr b = 0;
        Dwarf_Die *cu = dwfl_module_addrdie(mod, a, &b);
        if (!cu)
            continue;
        void *want[64], *got[64];
        double t0 = now();
        Dwarf_Die *sc = NULL, *chain = NULL;
        int ns = dwarf_getscopes(cu, a - b, &sc), nc = 0;
        int i = 0;
        while (i < ns && dwarf_tag(&sc[i]) != DW_TAG_inlined_subroutine &&
               dwarf_tag(&sc[i]) != DW_TAG_subprogram)
            i++;
        if (ns > 0 && i < ns)
            nc = dwarf_getscopes_die(&sc[i], &chain);
        int nw = used_dies(sc, ns, chain, nc, want);
        free(sc);
        free(chain);
        double t1 = now();
        Dwarf_Die pth[256];
        int np = vt_scopes_get(ix, cu, a - b, pth, 256), ng = 0;
        if (np > 0) {
            /* the chain starts at the chosen DIE in the path */
            int j = 0;
            while (j < np && dwarf_tag(&pth[j]) != DW_TAG_inlined_subroutine &&
                   dwarf_tag(&pth[j]) != DW_TAG_subprogram)
                j++;
            ng = j < np ? used_dies(pth + j, np - j, pth + j, np - j, got) : 0;
        }
        t_new += now() - t1;
        t_old += t1 - t0;
        if (np == -2)
            continue;
        fast++;
        withsc += nw > 0;
        if (nw != ng || memcmp(want, got, (size_t)nw * sizeof(*want))) {
            if (bad < 10)
                printf("FAIL: %s at %#llx: libdw %d DIEs, the index %d\n", path, (unsigned long long)a, nw,
                       ng);
            bad++;
        }
    }
    vt_scopes_free(ix);
    dwfl_end(d);
    printf(
        "%s: scopes of %d addresses (%d by the index, %d in a function): libdw %.0f us, the index %.1f us an "
        "address%s\n",
        path, n, fast, withsc, t_old * 1e6 / n, t_new * 1e6 / n, bad ? "; DIFFERENCES" : "");
    return bad != 0;
}

static int on_obj(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    int *fail = arg;
    const char *p = info->dlpi_name;
    if (p && *p == '/' && !strstr(p, "linux-vdso"))
        *fail |= check_lib(p) | check_scopes(p);
    return 0;
}

int main(int argc, char **argv)
{
    int fail = 0;
    elf_version(EV_CURRENT);
    for (int i = 1; i < argc; i++)
        fail |= check_lib(argv[i]) | check_scopes(argv[i]);
    dl_iterate_phdr(on_obj, &fail);
    if (!fail)
        printf("symtab: the indexes give libdwfl's names and libdw's scopes\n");
    return fail;
}
