/* vt_got.c - GOT slots of other objects set to replacements (vt_got.h).
 * Walks the loaded objects with dl_iterate_phdr, reads each one's dynamic
 * section (DT_SYMTAB, DT_STRTAB, DT_JMPREL, DT_RELA) and its relocations;
 * touches only slots inside one of the object's own segments. */
#define _GNU_SOURCE
#include "vt_got.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct {
    const vt_got_hook *hooks;
    int nhooks;
    const void *self;
    const char *const *skip;
    int nskip;
    char *what;
    size_t what_len;
    int patched;
    int err;
} got_walk;

/* glibc stores the dynamic section's addresses relocated on x86-64; an
 * object whose loader did not (d_ptr below its base) gets its base added */
static uintptr_t dyn_addr(const struct dl_phdr_info *info, ElfW(Addr) p)
{
    return p < info->dlpi_addr ? info->dlpi_addr + p : p;
}

/* the segment of the object that holds [a, a + n): PT_LOAD only */
static const ElfW(Phdr) *segment_of(const struct dl_phdr_info *info, uintptr_t a, size_t n, ElfW(Word) type)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != type)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (a >= lo && a + n <= lo + ph->p_memsz)
            return ph;
    }
    return NULL;
}

static int set_slot(const struct dl_phdr_info *info, void **slot, void *repl)
{
    if (*slot == repl)
        return 0;
    const ElfW(Phdr) *load = segment_of(info, (uintptr_t)slot, sizeof(*slot), PT_LOAD);
    if (!load)
        return 0; /* not the object's own memory: not ours to touch */
    int relro = segment_of(info, (uintptr_t)slot, sizeof(*slot), PT_GNU_RELRO) != NULL;
    if (!relro && !(load->p_flags & PF_W))
        return 0;
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t page = (uintptr_t)slot & ~(uintptr_t)(pg - 1);
    if (relro && mprotect((void *)page, (size_t)pg, PROT_READ | PROT_WRITE))
        return -1;
    __atomic_store_n(slot, repl, __ATOMIC_RELEASE);
    if (relro)
        mprotect((void *)page, (size_t)pg, PROT_READ);
    return 1;
}

static int walk_relocs(const struct dl_phdr_info *info, got_walk *w, const ElfW(Rela) *rel, size_t n,
                       const ElfW(Sym) *symtab, const char *strtab, size_t strsz)
{
    for (size_t i = 0; i < n; i++) {
        unsigned long type = ELF64_R_TYPE(rel[i].r_info);
        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
            continue;
        size_t si = ELF64_R_SYM(rel[i].r_info);
        if (!si)
            continue;
        const ElfW(Sym) *sym = &symtab[si];
        if (sym->st_name >= strsz)
            continue;
        const char *name = strtab + sym->st_name;
        for (int h = 0; h < w->nhooks; h++) {
            if (strcmp(name, w->hooks[h].name))
                continue;
            int rc = set_slot(info, (void **)(info->dlpi_addr + rel[i].r_offset), w->hooks[h].repl);
            if (rc < 0) {
                w->err = errno ? errno : EPERM;
                return -1;
            }
            w->patched += rc;
            break;
        }
    }
    return 0;
}

static int on_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    got_walk *w = arg;
    const char *path = info->dlpi_name ? info->dlpi_name : "";
    if (strstr(path, "linux-vdso") || strstr(path, "linux-gate"))
        return 0;
    for (int i = 0; i < w->nskip; i++)
        if (w->skip[i] && strstr(path, w->skip[i]))
            return 0;
    if (w->self && segment_of(info, (uintptr_t)w->self, 1, PT_LOAD))
        return 0;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn)
        return 0;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    size_t strsz = 0, pltsz = 0, relasz = 0, relaent = sizeof(ElfW(Rela));
    const ElfW(Rela) *jmprel = NULL, *rela = NULL;
    int pltrela = 1;
    for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn_addr(info, d->d_un.d_ptr); break;
        case DT_STRTAB: strtab = (const char *)dyn_addr(info, d->d_un.d_ptr); break;
        case DT_STRSZ: strsz = d->d_un.d_val; break;
        case DT_JMPREL: jmprel = (const ElfW(Rela) *)dyn_addr(info, d->d_un.d_ptr); break;
        case DT_PLTRELSZ: pltsz = d->d_un.d_val; break;
        case DT_PLTREL: pltrela = d->d_un.d_val == DT_RELA; break;
        case DT_RELA: rela = (const ElfW(Rela) *)dyn_addr(info, d->d_un.d_ptr); break;
        case DT_RELASZ: relasz = d->d_un.d_val; break;
        case DT_RELAENT: relaent = d->d_un.d_val; break;
        default: break;
        }
    }
    if (!symtab || !strtab || !strsz || relaent != sizeof(ElfW(Rela)))
        return 0;
    int before = w->patched;
    if (jmprel && pltrela &&
        walk_relocs(info, w, jmprel, pltsz / sizeof(ElfW(Rela)), symtab, strtab, strsz) < 0)
        goto failed;
    if (rela && walk_relocs(info, w, rela, relasz / sizeof(ElfW(Rela)), symtab, strtab, strsz) < 0)
        goto failed;
    if (w->patched > before && w->what && w->what_len)
        snprintf(w->what, w->what_len, "%s", *path ? path : "the program");
    return 0;
failed:
    if (w->what && w->what_len)
        snprintf(w->what, w->what_len, "%s", *path ? path : "the program");
    return 1; /* stop the walk */
}

int vt_got_patch(const vt_got_hook *hooks, int nhooks, const void *self, const char *const *skip, int nskip,
                 char *what, size_t what_len)
{
    got_walk w = {hooks, nhooks, self, skip, nskip, what, what_len, 0, 0};
    if (what && what_len)
        what[0] = 0;
    dl_iterate_phdr(on_object, &w);
    if (w.err) {
        errno = w.err;
        return -1;
    }
    return w.patched;
}
