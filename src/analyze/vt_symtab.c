/* vt_symtab.c - a module's symbol table, sorted once, so that the symbol
 * of an address is found in O(log n) (issue 35).  libdwfl's
 * dwfl_module_addrinfo scans the whole table for every address: ~50 ns a
 * symbol, so 2.4 ms an address in a library of 46,000 symbols, and
 * seconds for the few thousand return addresses a PyTorch trace has in
 * libtorch_cuda.  The answer here is the one dwfl_module_addrinfo gives
 * (tests/analyze/test_symtab.c compares them on the machine's libraries):
 *
 *   - the global symbols are searched first, the local ones only when no
 *     global symbol with a size contains the address and no global symbol
 *     without a size sits exactly at it;
 *   - of the symbols with a size that contain the address, libdwfl's
 *     order of preference in table order (closer start, stronger binding,
 *     then the smaller one at the same start);
 *   - else the symbol without a size ("assembly label") in the address's
 *     section (found as libdwfl finds it) that no other symbol below the
 *     address extends past, the last one in table order.
 *
 * Where the index cannot decide cheaply (many nested symbols over one
 * address) the caller asks libdwfl.  Names point into libdwfl's data: the
 * index lives no longer than the Dwfl.  Touches nothing else. */
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "vt_analyze_int.h"

#define SCAN_MAX 256 /* symbols looked at below an address before asking libdwfl */

typedef struct {
    uint64_t value, end; /* [value, end); end == value: no size */
    const char *name;
    uint32_t idx;   /* in the table: libdwfl's order */
    uint16_t shndx; /* the section the value is in (this index's numbering), or an SHN_* >= LORESERVE */
    uint8_t bind;   /* libdwfl's binding_value: global 3, weak 2, local 1, else 0 */
} st_ent;

typedef struct {
    st_ent *e;
    size_t n;
    uint64_t *pmax; /* pmax[i]: the largest end of e[0..i] */
} st_phase;

typedef struct {
    uint64_t lo, hi;
    uint16_t ndx;
} st_sec;

struct vt_symtab {
    st_phase g, l; /* globals; locals (searched only as libdwfl does) */
    int has_locals;
    st_sec *sec; /* the ELF's SHF_ALLOC sections, by address */
    size_t nsec;
};

static int cmp_ent(const void *a, const void *b)
{
    const st_ent *x = a, *y = b;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* by start, then end, then section index: libdwfl's compare_secrefs
 * (elfutils 0.188; .init_array sorts before the .tbss that starts with it) */
static int cmp_sec(const void *a, const void *b)
{
    const st_sec *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    if (x->hi != y->hi)
        return x->hi < y->hi ? -1 : 1;
    return x->ndx < y->ndx ? -1 : x->ndx > y->ndx;
}

/* the section holding addr, 0 (SHN_UNDEF) for none, found the way
 * libdwfl's find_section does: every SHF_ALLOC section (.tbss and empty
 * ones too), the end counted in unless the next one starts there */
static uint16_t sec_of(const vt_symtab *t, uint64_t addr)
{
    size_t l = 0, u = t->nsec;
    while (l < u) {
        size_t idx = (l + u) / 2;
        if (addr < t->sec[idx].lo) {
            u = idx;
        } else if (addr > t->sec[idx].hi) {
            l = idx + 1;
        } else {
            if (addr == t->sec[idx].hi && idx + 1 < t->nsec && addr == t->sec[idx + 1].lo)
                ++idx;
            return t->sec[idx].ndx;
        }
    }
    return 0;
}

static int bind_value(unsigned char info)
{
    switch (GELF_ST_BIND(info)) {
    case STB_GLOBAL:
        return 3;
    case STB_WEAK:
        return 2;
    case STB_LOCAL:
        return 1;
    default:
        return 0;
    }
}

static int phase_fill(vt_symtab *t, st_phase *p, Dwfl_Module *mod, int from, int to)
{
    if (to <= from)
        return 0;
    p->e = malloc((size_t)(to - from) * sizeof(*p->e));
    if (!p->e)
        return -1;
    for (int i = from; i < to; i++) {
        GElf_Sym sym;
        GElf_Addr value;
        GElf_Word shndx;
        const char *name = dwfl_module_getsym_info(mod, i, &sym, &value, &shndx, NULL, NULL);
        if (!name || !name[0] || sym.st_shndx == SHN_UNDEF || GELF_ST_TYPE(sym.st_info) == STT_SECTION ||
            GELF_ST_TYPE(sym.st_info) == STT_FILE || GELF_ST_TYPE(sym.st_info) == STT_TLS)
            continue;
        if (value != sym.st_value)
            return -1; /* adjusted values (function descriptors): libdwfl tries both; not here */
        st_ent *e = &p->e[p->n++];
        e->value = value;
        e->end = value + sym.st_size;
        e->name = name;
        e->idx = (uint32_t)i;
        e->shndx = shndx >= SHN_LORESERVE ? (uint16_t)(shndx > 0xffff ? 0xffff : shndx) : sec_of(t, value);
        if (shndx < SHN_LORESERVE && e->shndx >= SHN_LORESERVE)
            return -1; /* more sections than this numbering holds */
        e->bind = (uint8_t)bind_value(sym.st_info);
    }
    qsort(p->e, p->n, sizeof(*p->e), cmp_ent);
    p->pmax = malloc((p->n ? p->n : 1) * sizeof(*p->pmax));
    if (!p->pmax)
        return -1;
    uint64_t m = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (p->e[i].end > m)
            m = p->e[i].end;
        p->pmax[i] = m;
    }
    return 0;
}

void vt_symtab_free(vt_symtab *t)
{
    if (!t)
        return;
    free(t->g.e);
    free(t->g.pmax);
    free(t->l.e);
    free(t->l.pmax);
    free(t->sec);
    free(t);
}

vt_symtab *vt_symtab_build(Dwfl_Module *mod)
{
    int n = dwfl_module_getsymtab(mod);
    int fg = dwfl_module_getsymtab_first_global(mod);
    GElf_Addr bias = 0;
    Elf *elf = dwfl_module_getelf(mod, &bias);
    if (n <= 1 || fg < 0 || !elf || bias != 0)
        return NULL;
    vt_symtab *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    /* the sections, as libdwfl's same_section sees them (SHF_ALLOC, by
     * address; an address in none is in "section 0") */
    size_t nscn = 0;
    if (elf_getshdrnum(elf, &nscn) == 0 && nscn && nscn < SHN_LORESERVE) {
        t->sec = calloc(nscn, sizeof(*t->sec));
        if (!t->sec)
            goto fail;
        Elf_Scn *scn = NULL;
        while ((scn = elf_nextscn(elf, scn))) {
            GElf_Shdr sh;
            if (!gelf_getshdr(scn, &sh))
                goto fail;
            if (sh.sh_flags & SHF_ALLOC)
                t->sec[t->nsec++] = (st_sec){sh.sh_addr, sh.sh_addr + sh.sh_size, (uint16_t)elf_ndxscn(scn)};
        }
        qsort(t->sec, t->nsec, sizeof(*t->sec), cmp_sec);
    } else {
        goto fail;
    }
    if (phase_fill(t, &t->g, mod, fg == 0 ? 1 : fg, n))
        goto fail;
    t->has_locals = fg > 1;
    if (t->has_locals && phase_fill(t, &t->l, mod, 1, fg))
        goto fail;
    return t;
fail:
    vt_symtab_free(t);
    return NULL;
}

/* entries with value <= addr: the count (the first n of e) */
static size_t upto(const st_phase *p, uint64_t addr)
{
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->e[mid].value <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* libdwfl's choice among the sized symbols of p that contain addr (taken in
 * table order); NULL if none; *undecided when too many to look at */
static const st_ent *containing(const st_phase *p, uint64_t addr, int *undecided)
{
    size_t k = upto(p, addr);
    const st_ent *c[SCAN_MAX];
    size_t nc = 0, steps = 0;
    while (k > 0 && p->pmax[k - 1] > addr) {
        const st_ent *e = &p->e[--k];
        if (++steps > SCAN_MAX || nc == SCAN_MAX) {
            *undecided = 1;
            return NULL;
        }
        if (e->end > addr)
            c[nc++] = e; /* e->end > addr >= e->value: sized, contains it */
    }
    if (!nc)
        return NULL;
    /* in table order (insertion sort: a handful) */
    for (size_t i = 1; i < nc; i++)
        for (size_t j = i; j > 0 && c[j - 1]->idx > c[j]->idx; j--) {
            const st_ent *x = c[j];
            c[j] = c[j - 1];
            c[j - 1] = x;
        }
    const st_ent *best = NULL;
    for (size_t i = 0; i < nc; i++) {
        const st_ent *s = c[i];
        uint64_t ssz = s->end - s->value, bsz = best ? best->end - best->value : 0;
        if (!best || best->value < s->value || best->bind < s->bind)
            best = s;
        else if (best->value == s->value &&
                 ((bsz > ssz && best->bind <= s->bind) || (bsz >= ssz && best->bind < s->bind)))
            best = s;
    }
    return best;
}

/* the last (in table order) symbol without a size at exactly `value` whose
 * section is addr's (or absolute, when value == addr) */
static const st_ent *label_at(const st_phase *p, uint64_t value, uint64_t addr, uint16_t asec)
{
    size_t k = upto(p, value);
    const st_ent *best = NULL;
    while (k > 0 && p->e[k - 1].value == value) {
        const st_ent *e = &p->e[--k];
        if (e->end != e->value)
            continue;
        int same = e->shndx >= SHN_LORESERVE ? value == addr : e->shndx == asec;
        if (same && (!best || e->idx > best->idx))
            best = e;
    }
    return best;
}

const char *vt_symtab_lookup(const vt_symtab *t, uint64_t addr, int *decided)
{
    int undecided = 0;
    *decided = 0;
    const st_ent *c = containing(&t->g, addr, &undecided);
    if (undecided)
        return NULL;
    if (c) {
        *decided = 1;
        return c->name;
    }
    uint16_t asec = sec_of(t, addr);
    /* the locals unless a global label sits exactly at the address */
    int locals = t->has_locals && !label_at(&t->g, addr, addr, asec);
    if (locals) {
        c = containing(&t->l, addr, &undecided);
        if (undecided)
            return NULL;
        if (c) {
            *decided = 1;
            return c->name;
        }
    }
    /* no symbol with a size holds it: the label at the highest end below */
    size_t kg = upto(&t->g, addr), kl = locals ? upto(&t->l, addr) : 0;
    uint64_t m = kg ? t->g.pmax[kg - 1] : 0;
    if (kl && t->l.pmax[kl - 1] > m)
        m = t->l.pmax[kl - 1];
    *decided = 1;
    if (!kg && !kl)
        return NULL;
    const st_ent *e = locals ? label_at(&t->l, m, addr, asec) : NULL;
    if (!e)
        e = label_at(&t->g, m, addr, asec);
    return e ? e->name : NULL;
}
