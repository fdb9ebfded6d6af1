/* vt_unwind.c - module map (dl_iterate_phdr) and the x86-64 DWARF CFI
 * unwinder with a lock-free per-ip rule cache.  See vt_unwind.h.
 * Runs inside the traced process: never aborts; every stack read is bounds
 * checked; unknown CFI ends the walk.  May touch: the loaded objects'
 * program headers, .eh_frame_hdr/.eh_frame, the calling thread's stack.
 */
#define _GNU_SOURCE
#include "vt_unwind.h"

#include <elf.h>
#include <stddef.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vt_error.h"
#include "vt_hot.h"

/* ---------------------------------------------------------------- modmap */

struct vt_modmap {
    vt_module *mods; /* sorted by start */
    size_t n;
    char *strings;   /* all paths, one block */
};

typedef struct {
    vt_module *mods;
    size_t n, cap;
    char **paths;
} scan_ctx;

static void read_build_id(const struct dl_phdr_info *info, const ElfW(Phdr) *ph, vt_module *m)
{
    const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
    const uint8_t *end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
        const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
        size_t namesz = (nh->n_namesz + 3u) & ~3u, descsz = (nh->n_descsz + 3u) & ~3u;
        const uint8_t *name = p + sizeof(*nh), *desc = name + namesz;
        if (desc + descsz > end)
            return;
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
            uint32_t len = nh->n_descsz > VT_BUILD_ID_MAX ? VT_BUILD_ID_MAX : nh->n_descsz;
            memcpy(m->build_id, desc, len);
            m->build_id_len = len;
            return;
        }
        p = desc + descsz;
    }
}

static int scan_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    scan_ctx *c = arg;
    (void)size;
    vt_module m;
    memset(&m, 0, sizeof(m));
    m.load_bias = info->dlpi_addr;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            uint64_t s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
            if (s < lo) lo = s;
            if (e > hi) hi = e;
        } else if (ph->p_type == PT_GNU_EH_FRAME) {
            m.eh_frame_hdr = info->dlpi_addr + ph->p_vaddr;
        } else if (ph->p_type == PT_NOTE && m.build_id_len == 0) {
            read_build_id(info, ph, &m);
        }
    }
    if (hi <= lo)
        return 0;
    m.start = lo;
    m.end = hi;
    const char *path = info->dlpi_name;
    char exe[4096];
    if (!path || !*path) {
        /* the main program (or the vdso, which has a name on modern glibc) */
        ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        exe[k > 0 ? k : 0] = 0;
        path = exe;
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        vt_module *nm = realloc(c->mods, cap * sizeof(*nm));
        char **np = realloc(c->paths, cap * sizeof(*np));
        if (nm) c->mods = nm;
        if (np) c->paths = np;
        if (!nm || !np)
            return 1;
        c->cap = cap;
    }
    c->paths[c->n] = strdup(path);
    if (!c->paths[c->n])
        return 1;
    c->mods[c->n++] = m;
    return 0;
}

static int mod_cmp(const void *a, const void *b)
{
    const vt_module *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

int vt_modmap_scan(vt_modmap **out)
{
    scan_ctx c = {0};
    vt_modmap *m = NULL;
    int rc = VT_ERR_NOMEM;
    *out = NULL;
    if (dl_iterate_phdr(scan_cb, &c) != 0)
        goto cleanup;
    size_t total = 0;
    for (size_t i = 0; i < c.n; i++)
        total += strlen(c.paths[i]) + 1;
    m = calloc(1, sizeof(*m));
    if (!m)
        goto cleanup;
    m->strings = malloc(total ? total : 1);
    m->mods = calloc(c.n ? c.n : 1, sizeof(vt_module));
    if (!m->strings || !m->mods)
        goto cleanup;
    char *s = m->strings;
    for (size_t i = 0; i < c.n; i++) {
        size_t l = strlen(c.paths[i]) + 1;
        memcpy(s, c.paths[i], l);
        c.mods[i].path = s;
        s += l;
    }
    memcpy(m->mods, c.mods, c.n * sizeof(vt_module));
    m->n = c.n;
    qsort(m->mods, m->n, sizeof(vt_module), mod_cmp);
    *out = m;
    m = NULL;
    rc = 0;
cleanup:
    for (size_t i = 0; i < c.n; i++)
        free(c.paths[i]);
    free(c.paths);
    free(c.mods);
    vt_modmap_free(m);
    return rc;
}

void vt_modmap_free(vt_modmap *m)
{
    if (!m)
        return;
    free(m->mods);
    free(m->strings);
    free(m);
}

size_t vt_modmap_count(const vt_modmap *m) { return m ? m->n : 0; }
const vt_module *vt_modmap_get(const vt_modmap *m, size_t i) { return m && i < m->n ? &m->mods[i] : NULL; }

const vt_module *vt_modmap_find(const vt_modmap *m, uint64_t addr)
{
    if (!m || m->n == 0)
        return NULL;
    size_t lo = 0, hi = m->n; /* last module with start <= addr */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (m->mods[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const vt_module *mod = &m->mods[lo - 1];
    return addr < mod->end ? mod : NULL;
}

/* ---------------------------------------------------------------- rules */

/* Rule word layout (bit 0 = valid so that 0 means empty):
 *   [1:2]  kind: 0 normal, 1 outermost (RA undefined), 2 unknown
 *   [3]    CFA register: 0 rsp, 1 rbp
 *   [4:23] CFA offset (bytes, 0..2^20-1)
 *   [24:27] return address at CFA - 8*n
 *   [28:37] saved rbp at CFA - 8*m, 0 = rbp unchanged
 *   [38]   the ip lies in a skipped module (cache entries only)
 *   [39:63] tag (hash bits of the ip) */
enum { R_NORMAL = 0, R_OUTERMOST = 1, R_UNKNOWN = 2 };
#define R_SKIP (1ull << 38)
#define R_TAG_SHIFT 39
#define R_BODY_MASK ((1ull << R_TAG_SHIFT) - 1)

static inline uint64_t rule_pack(int kind, int cfa_bp, uint64_t off, unsigned ra_n, unsigned bp_n)
{
    return 1ull | (uint64_t)kind << 1 | (uint64_t)(cfa_bp & 1) << 3 | (off & 0xfffff) << 4 |
           (uint64_t)(ra_n & 0xf) << 24 | (uint64_t)(bp_n & 0x3ff) << 28;
}
#define RULE_KIND(r) ((int)(((r) >> 1) & 3))
#define RULE_CFA_BP(r) ((int)(((r) >> 3) & 1))
#define RULE_OFF(r) (((r) >> 4) & 0xfffff)
#define RULE_RA_N(r) ((unsigned)(((r) >> 24) & 0xf))
#define RULE_BP_N(r) ((unsigned)(((r) >> 28) & 0x3ff))

/* ---------------------------------------------------------------- DWARF */

#define DW_EH_PE_omit 0xff
#define DW_EH_PE_absptr 0x00
#define DW_EH_PE_uleb128 0x01
#define DW_EH_PE_udata2 0x02
#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_udata8 0x04
#define DW_EH_PE_sleb128 0x09
#define DW_EH_PE_sdata2 0x0a
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_sdata8 0x0c
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_datarel 0x30
#define DW_EH_PE_indirect 0x80

typedef struct {
    const uint8_t *p, *end;
    int bad;
} rd;

static uint64_t rd_uleb(rd *r)
{
    uint64_t v = 0;
    unsigned shift = 0;
    while (r->p < r->end) {
        uint8_t b = *r->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80))
            return v;
    }
    r->bad = 1;
    return 0;
}

static int64_t rd_sleb(rd *r)
{
    int64_t v = 0;
    unsigned shift = 0;
    uint8_t b = 0;
    while (r->p < r->end) {
        b = *r->p++;
        if (shift < 64)
            v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
        shift += 7;
        if (!(b & 0x80)) {
            if (shift < 64 && (b & 0x40))
                v |= -((int64_t)1 << shift);
            return v;
        }
    }
    r->bad = 1;
    return 0;
}

static uint64_t rd_fixed(rd *r, size_t n)
{
    if ((size_t)(r->end - r->p) < n) {
        r->bad = 1;
        r->p = r->end;
        return 0;
    }
    uint64_t v = 0;
    memcpy(&v, r->p, n); /* little endian */
    r->p += n;
    return v;
}

static uint64_t rd_encoded(rd *r, uint8_t enc, uint64_t datarel)
{
    if (enc == DW_EH_PE_omit)
        return 0;
    uint64_t here = (uint64_t)(uintptr_t)r->p, v;
    switch (enc & 0x0f) {
    case DW_EH_PE_absptr: v = rd_fixed(r, 8); break;
    case DW_EH_PE_uleb128: v = rd_uleb(r); break;
    case DW_EH_PE_udata2: v = rd_fixed(r, 2); break;
    case DW_EH_PE_udata4: v = rd_fixed(r, 4); break;
    case DW_EH_PE_udata8: v = rd_fixed(r, 8); break;
    case DW_EH_PE_sleb128: v = (uint64_t)rd_sleb(r); break;
    case DW_EH_PE_sdata2: v = (uint64_t)(int64_t)(int16_t)rd_fixed(r, 2); break;
    case DW_EH_PE_sdata4: v = (uint64_t)(int64_t)(int32_t)rd_fixed(r, 4); break;
    case DW_EH_PE_sdata8: v = rd_fixed(r, 8); break;
    default: r->bad = 1; return 0;
    }
    switch (enc & 0x70) {
    case 0: break;
    case DW_EH_PE_pcrel: v += here; break;
    case DW_EH_PE_datarel: v += datarel; break;
    default: r->bad = 1; return 0; /* textrel/funcrel/aligned: not used on x86-64 Linux */
    }
    if (enc & DW_EH_PE_indirect) {
        /* only pointers into the object's own data; used for personality only */
        v = 0;
    }
    return v;
}

enum { REG_SAME = 0, REG_UNDEF, REG_OFFSET, REG_OTHER };
#define NREG 17 /* 0..15 GPRs, 16 = return address */
typedef struct {
    uint8_t type[NREG];
    int64_t off[NREG];
    int cfa_reg;
    int64_t cfa_off;
    int cfa_expr;
} cfa_state;

typedef struct {
    const uint8_t *insns, *insns_end;
    uint64_t code_align;
    int64_t data_align;
    unsigned ra_reg;
    uint8_t fde_enc;
    int signal_frame;
    int has_z;
} cie_info;

static int parse_cie(const uint8_t *p, const uint8_t *limit, uint64_t datarel, cie_info *ci)
{
    rd r = {p, limit, 0};
    uint64_t len = rd_fixed(&r, 4);
    if (len == 0xffffffffu)
        len = rd_fixed(&r, 8);
    if (r.bad || len == 0 || len > (uint64_t)(limit - r.p))
        return -1;
    const uint8_t *end = r.p + len;
    r.end = end;
    if (rd_fixed(&r, 4) != 0) /* CIE id in .eh_frame */
        return -1;
    uint8_t version = (uint8_t)rd_fixed(&r, 1);
    const char *aug = (const char *)r.p;
    while (r.p < end && *r.p)
        r.p++;
    if (r.p >= end)
        return -1;
    r.p++;
    if (aug[0] == 'e' && aug[1] == 'h')
        rd_fixed(&r, 8);
    ci->code_align = rd_uleb(&r);
    ci->data_align = rd_sleb(&r);
    ci->ra_reg = version == 1 ? (unsigned)rd_fixed(&r, 1) : (unsigned)rd_uleb(&r);
    ci->fde_enc = DW_EH_PE_absptr;
    ci->signal_frame = 0;
    ci->has_z = aug[0] == 'z';
    if (aug[0] == 'z') {
        uint64_t alen = rd_uleb(&r);
        const uint8_t *aend = r.p + alen;
        if (r.bad || aend > end)
            return -1;
        for (const char *a = aug + 1; *a; a++) {
            if (*a == 'R')
                ci->fde_enc = (uint8_t)rd_fixed(&r, 1);
            else if (*a == 'P') {
                uint8_t penc = (uint8_t)rd_fixed(&r, 1);
                rd_encoded(&r, penc & 0x7f, datarel);
            } else if (*a == 'L')
                rd_fixed(&r, 1);
            else if (*a == 'S')
                ci->signal_frame = 1;
            else if (*a == 'B' || *a == 'G')
                ;
            else
                break; /* unknown: the augmentation length lets us skip the rest */
        }
        r.p = aend;
    } else if (aug[0] != 0) {
        return -1;
    }
    if (r.bad || ci->ra_reg >= NREG)
        return -1;
    ci->insns = r.p;
    ci->insns_end = end;
    return 0;
}

/* Execute a CFA program until the location passes `target`.
 * Returns 0, or -1 on anything malformed/unsupported in a way that matters. */
static int run_cfa(const uint8_t *p, const uint8_t *end, const cie_info *ci, uint64_t loc, uint64_t target,
                   cfa_state *st, const cfa_state *initial, uint64_t datarel)
{
    cfa_state stack[8];
    int sp = 0;
    rd r = {p, end, 0};
    while (r.p < r.end && !r.bad) {
        uint8_t op = *r.p++;
        uint8_t hi = op & 0xc0, lo = op & 0x3f;
        uint64_t reg, delta;
        int64_t off;
        if (hi == 0x40) { /* advance_loc */
            loc += lo * ci->code_align;
            if (loc > target)
                return 0;
            continue;
        }
        if (hi == 0x80) { /* offset */
            off = (int64_t)rd_uleb(&r) * ci->data_align;
            if (lo < NREG) { st->type[lo] = REG_OFFSET; st->off[lo] = off; }
            continue;
        }
        if (hi == 0xc0) { /* restore */
            if (lo < NREG && initial) { st->type[lo] = initial->type[lo]; st->off[lo] = initial->off[lo]; }
            continue;
        }
        switch (op) {
        case 0x00: break; /* nop */
        case 0x01: loc = rd_encoded(&r, ci->fde_enc, datarel); if (loc > target) return 0; break;
        case 0x02: delta = rd_fixed(&r, 1); goto adv;
        case 0x03: delta = rd_fixed(&r, 2); goto adv;
        case 0x04: delta = rd_fixed(&r, 4);
        adv:
            loc += delta * ci->code_align;
            if (loc > target)
                return 0;
            break;
        case 0x05: /* offset_extended */
            reg = rd_uleb(&r); off = (int64_t)rd_uleb(&r) * ci->data_align;
            if (reg < NREG) { st->type[reg] = REG_OFFSET; st->off[reg] = off; }
            break;
        case 0x06: /* restore_extended */
            reg = rd_uleb(&r);
            if (reg < NREG && initial) { st->type[reg] = initial->type[reg]; st->off[reg] = initial->off[reg]; }
            break;
        case 0x07: reg = rd_uleb(&r); if (reg < NREG) st->type[reg] = REG_UNDEF; break;
        case 0x08: reg = rd_uleb(&r); if (reg < NREG) st->type[reg] = REG_SAME; break;
        case 0x09: reg = rd_uleb(&r); rd_uleb(&r); if (reg < NREG) st->type[reg] = REG_OTHER; break;
        case 0x0a:
            if (sp >= 8) return -1;
            stack[sp++] = *st;
            break;
        case 0x0b: {
            if (sp <= 0) return -1;
            /* restore_state keeps the CFA rule? No: DWARF restores the whole row. */
            *st = stack[--sp];
            break;
        }
        case 0x0c: st->cfa_reg = (int)rd_uleb(&r); st->cfa_off = (int64_t)rd_uleb(&r); st->cfa_expr = 0; break;
        case 0x0d: st->cfa_reg = (int)rd_uleb(&r); st->cfa_expr = 0; break;
        case 0x0e: st->cfa_off = (int64_t)rd_uleb(&r); break;
        case 0x0f: { uint64_t n = rd_uleb(&r); r.p += n; st->cfa_expr = 1; break; }
        case 0x10: case 0x16: {
            reg = rd_uleb(&r); uint64_t n = rd_uleb(&r); r.p += n;
            if (reg < NREG) st->type[reg] = REG_OTHER;
            break;
        }
        case 0x11:
            reg = rd_uleb(&r); off = rd_sleb(&r) * ci->data_align;
            if (reg < NREG) { st->type[reg] = REG_OFFSET; st->off[reg] = off; }
            break;
        case 0x12: st->cfa_reg = (int)rd_uleb(&r); st->cfa_off = rd_sleb(&r) * ci->data_align; st->cfa_expr = 0; break;
        case 0x13: st->cfa_off = rd_sleb(&r) * ci->data_align; break;
        case 0x14: reg = rd_uleb(&r); rd_uleb(&r); if (reg < NREG) st->type[reg] = REG_OTHER; break;
        case 0x15: reg = rd_uleb(&r); rd_sleb(&r); if (reg < NREG) st->type[reg] = REG_OTHER; break;
        case 0x2e: rd_uleb(&r); break; /* GNU_args_size */
        case 0x2f:
            reg = rd_uleb(&r); off = -(int64_t)rd_uleb(&r) * ci->data_align;
            if (reg < NREG) { st->type[reg] = REG_OFFSET; st->off[reg] = off; }
            break;
        default:
            return -1;
        }
        if (r.p > r.end)
            return -1;
    }
    return r.bad ? -1 : 0;
}

/* Find the FDE for pc in the module's .eh_frame_hdr and compile the rule. */
static uint64_t compile_rule(const vt_module *m, uint64_t pc)
{
    const uint64_t unknown = rule_pack(R_UNKNOWN, 0, 0, 0, 0);
    if (!m || !m->eh_frame_hdr)
        return unknown;
    const uint8_t *hdr = (const uint8_t *)(uintptr_t)m->eh_frame_hdr;
    const uint8_t *mod_end = (const uint8_t *)(uintptr_t)m->end;
    if (hdr + 4 > mod_end || hdr[0] != 1)
        return unknown;
    uint64_t datarel = m->eh_frame_hdr;
    rd r = {hdr + 4, mod_end, 0};
    rd_encoded(&r, hdr[1], datarel); /* eh_frame_ptr */
    uint64_t count = rd_encoded(&r, hdr[2], datarel);
    if (r.bad || hdr[3] != 0x3b || count == 0)
        return unknown; /* only the datarel|sdata4 table is searched */
    const int32_t *tab = (const int32_t *)r.p;
    if ((const uint8_t *)(tab + 2 * count) > mod_end)
        return unknown;
    int64_t rel = (int64_t)(pc - datarel);
    size_t lo = 0, hi = count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if ((int64_t)tab[2 * mid] <= rel)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return unknown;
    const uint8_t *fde = hdr + tab[2 * (lo - 1) + 1];
    if (fde < (const uint8_t *)(uintptr_t)m->start || fde + 8 > mod_end)
        return unknown;

    rd f = {fde, mod_end, 0};
    uint64_t len = rd_fixed(&f, 4);
    if (len == 0xffffffffu)
        len = rd_fixed(&f, 8);
    if (f.bad || len > (uint64_t)(mod_end - f.p))
        return unknown;
    const uint8_t *fend = f.p + len;
    f.end = fend;
    const uint8_t *cie_ptr_field = f.p;
    uint32_t cie_off = (uint32_t)rd_fixed(&f, 4);
    if (cie_off == 0)
        return unknown; /* that is a CIE */
    const uint8_t *cie = cie_ptr_field - cie_off;
    if (cie < (const uint8_t *)(uintptr_t)m->start)
        return unknown;
    cie_info ci;
    if (parse_cie(cie, mod_end, datarel, &ci) != 0)
        return unknown;
    uint64_t pc_begin = rd_encoded(&f, ci.fde_enc, datarel);
    uint64_t pc_range = rd_encoded(&f, ci.fde_enc & 0x0f, datarel);
    if (f.bad || pc < pc_begin || pc >= pc_begin + pc_range)
        return unknown;
    if (ci.signal_frame)
        return unknown;
    /* The FDE has augmentation data (with its length) iff the CIE's
     * augmentation string starts with 'z'. */
    if (ci.has_z) {
        uint64_t alen = rd_uleb(&f);
        f.p += alen;
    }
    if (f.bad || f.p > fend)
        return unknown;

    cfa_state st, init;
    memset(&st, 0, sizeof(st));
    st.cfa_reg = 7;
    if (run_cfa(ci.insns, ci.insns_end, &ci, 0, UINT64_MAX, &st, NULL, datarel) != 0)
        return unknown;
    init = st;
    if (run_cfa(f.p, fend, &ci, pc_begin, pc, &st, &init, datarel) != 0)
        return unknown;

    if (st.type[ci.ra_reg] == REG_UNDEF)
        return rule_pack(R_OUTERMOST, 0, 0, 0, 0);
    if (st.cfa_expr || (st.cfa_reg != 7 && st.cfa_reg != 6) || st.cfa_off < 0 || st.cfa_off > 0xfffff)
        return unknown;
    if (st.type[ci.ra_reg] != REG_OFFSET)
        return unknown;
    int64_t ra = st.off[ci.ra_reg];
    if (ra >= 0 || (-ra) % 8 || -ra / 8 > 15)
        return unknown;
    unsigned bp_n = 0;
    if (st.type[6] == REG_OFFSET) {
        int64_t bo = st.off[6];
        if (bo >= 0 || (-bo) % 8 || -bo / 8 > 1023)
            return unknown;
        bp_n = (unsigned)(-bo / 8);
    } else if (st.type[6] != REG_SAME && st.type[6] != REG_UNDEF) {
        return unknown;
    }
    return rule_pack(R_NORMAL, st.cfa_reg == 6, (uint64_t)st.cfa_off, (unsigned)(-ra / 8), bp_n);
}

/* ---------------------------------------------------------------- unwinder */

#define MAX_SKIP 8
struct vt_unwinder {
    /* what a replay reads, first (the unwinder is 64-byte aligned) */
    _Atomic uint64_t epoch; /* bumped whenever cached rules or skip flags change: memos die */
    uint64_t uid;           /* this unwinder among all created (memos name it) */
    _Atomic(uint64_t) *cache;
    unsigned bits;
    _Atomic(vt_modmap *) map;
    vt_modmap **retired; /* old snapshots, freed with the unwinder */
    size_t nretired, capretired;
    atomic_flag scanning;
    _Atomic uint64_t last_scan_ns;
    vt_module_cb cb;
    void *cb_arg;
    char skip_prefix[MAX_SKIP][32];
    int nskip_prefix;
    uint64_t skip_addr[MAX_SKIP];
    int nskip_addr;
    int nstop; /* vt_unwinder_stop_at */
    uint64_t stop_start[MAX_SKIP], stop_end[MAX_SKIP];
    _Atomic uint64_t subs;  /* the loader's unload count when the map was made */
    /* counters, added to by every capturing thread: a line of their own */
    _Alignas(64) _Atomic uint64_t st_captures, st_frames, st_misses, st_fp, st_rescans, st_unknown, st_memo_full,
        st_memo_steps;
    /* one whole replay in 64, described (memo_sample) */
    _Atomic uint64_t st_smp_n, st_smp_span, st_smp_pages, st_smp_bp, st_smp_way, st_smp_pred, st_smp_tried,
        st_smp_wasted;
};
static _Atomic uint64_t g_unwinder_uids;

/* The loader's count of unloaded objects (dlpi_subs), ~0 if unknown: a
 * change means a module of our map may be gone (dlclose), and its
 * .eh_frame with it, so the map is rescanned before any CFI is read. */
static int subs_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    unsigned long long *out = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs))
        *out = info->dlpi_subs;
    return 1; /* the first object carries the counters */
}

static uint64_t loader_subs(void)
{
    unsigned long long s = ~0ull;
    dl_iterate_phdr(subs_cb, &s);
    return s;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void mark_skips(vt_unwinder *u, vt_modmap *m)
{
    for (size_t i = 0; i < m->n; i++) {
        vt_module *mod = &m->mods[i];
        const char *base = strrchr(mod->path, '/');
        base = base ? base + 1 : mod->path;
        mod->skip = 0;
        for (int k = 0; k < u->nskip_prefix; k++)
            if (strncmp(base, u->skip_prefix[k], strlen(u->skip_prefix[k])) == 0)
                mod->skip = 1;
        for (int k = 0; k < u->nskip_addr; k++)
            if (u->skip_addr[k] >= mod->start && u->skip_addr[k] < mod->end)
                mod->skip = 1;
    }
}

static int same_module(const vt_module *a, const vt_module *b)
{
    return a->start == b->start && a->end == b->end && strcmp(a->path, b->path) == 0;
}

/* Drop every compiled rule (code may have moved, or skip flags changed):
 * the epoch moves with them, which retires every thread's memo. */
static void forget_rules(vt_unwinder *u)
{
    size_t n = (size_t)1 << u->bits;
    for (size_t i = 0; i < n; i++)
        atomic_store_explicit(&u->cache[i], 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&u->epoch, 1, memory_order_release);
}

/* Rescan; report new modules; publish.  Returns nonzero if done. */
static int rescan(vt_unwinder *u, int force)
{
    uint64_t t = now_ns();
    if (!force && t - atomic_load_explicit(&u->last_scan_ns, memory_order_relaxed) < 100000000ull)
        return 0;
    if (atomic_flag_test_and_set_explicit(&u->scanning, memory_order_acquire))
        return 0;
    atomic_store_explicit(&u->last_scan_ns, t, memory_order_relaxed);
    uint64_t subs = loader_subs(); /* before the scan: an unload during it is seen next time */
    vt_modmap *nm = NULL, *old = atomic_load_explicit(&u->map, memory_order_acquire);
    int done = 0;
    if (vt_modmap_scan(&nm) != 0)
        goto out;
    mark_skips(u, nm);
    int removed = 0;
    if (old) {
        for (size_t i = 0; i < old->n; i++) {
            const vt_module *o = &old->mods[i];
            const vt_module *n = vt_modmap_find(nm, o->start);
            if (!n || !same_module(n, o))
                removed = 1;
        }
    }
    if (old && u->nretired == u->capretired) {
        size_t cap = u->capretired ? u->capretired * 2 : 16;
        vt_modmap **r = realloc(u->retired, cap * sizeof(*r));
        if (!r) {
            vt_modmap_free(nm);
            goto out;
        }
        u->retired = r;
        u->capretired = cap;
    }
    for (size_t i = 0; i < nm->n; i++) {
        const vt_module *n = &nm->mods[i];
        const vt_module *o = old ? vt_modmap_find(old, n->start) : NULL;
        if (!o || !same_module(n, o)) {
            if (u->cb)
                u->cb(u->cb_arg, n);
        }
    }
    if (removed) /* code may have moved */
        forget_rules(u);
    atomic_store_explicit(&u->map, nm, memory_order_release);
    atomic_store_explicit(&u->subs, subs, memory_order_release);
    if (old)
        u->retired[u->nretired++] = old;
    atomic_fetch_add_explicit(&u->st_rescans, 1, memory_order_relaxed);
    done = 1;
out:
    atomic_flag_clear_explicit(&u->scanning, memory_order_release);
    return done;
}

int vt_unwinder_create(vt_unwinder **out, unsigned cache_bits, vt_module_cb cb, void *cb_arg)
{
    *out = NULL;
    if (cache_bits == 0)
        cache_bits = 16;
    if (cache_bits > 24)
        return VT_ERR_INVALID;
    vt_unwinder *u = aligned_alloc(64, (sizeof(*u) + 63) & ~(size_t)63);
    if (u)
        memset(u, 0, sizeof(*u));
    if (!u)
        return VT_ERR_NOMEM;
    u->bits = cache_bits;
    u->uid = atomic_fetch_add(&g_unwinder_uids, 1) + 1;
    u->cache = calloc((size_t)1 << cache_bits, sizeof(*u->cache));
    if (!u->cache) {
        free(u);
        return VT_ERR_NOMEM;
    }
    atomic_flag_clear(&u->scanning);
    u->cb = cb;
    u->cb_arg = cb_arg;
    rescan(u, 1);
    if (!atomic_load(&u->map)) {
        vt_unwinder_free(u);
        return VT_ERR_NOMEM;
    }
    *out = u;
    return 0;
}

void vt_unwinder_free(vt_unwinder *u)
{
    if (!u)
        return;
    for (size_t i = 0; i < u->nretired; i++)
        vt_modmap_free(u->retired[i]);
    free(u->retired);
    vt_modmap_free(atomic_load(&u->map));
    free((void *)u->cache);
    free(u);
}

void vt_unwinder_skip_prefix(vt_unwinder *u, const char *prefix)
{
    if (!u || u->nskip_prefix >= MAX_SKIP)
        return;
    snprintf(u->skip_prefix[u->nskip_prefix++], sizeof(u->skip_prefix[0]), "%s", prefix);
    vt_modmap *m = atomic_load(&u->map);
    if (m)
        mark_skips(u, m);
    forget_rules(u); /* cached rules carry the skip flag */
}

void vt_unwinder_skip_addr(vt_unwinder *u, const void *addr)
{
    if (!u || u->nskip_addr >= MAX_SKIP)
        return;
    u->skip_addr[u->nskip_addr++] = (uint64_t)(uintptr_t)addr;
    vt_modmap *m = atomic_load(&u->map);
    if (m)
        mark_skips(u, m);
    forget_rules(u); /* cached rules carry the skip flag */
}

int vt_unwinder_stop_at(vt_unwinder *u, int n, const uint64_t *start, const uint64_t *end)
{
    if (!u || n < 0 || n > MAX_SKIP || (n && (!start || !end)))
        return VT_ERR_INVALID;
    for (int i = 0; i < n; i++) {
        u->stop_start[i] = start[i];
        u->stop_end[i] = end[i];
    }
    u->nstop = n;
    atomic_fetch_add_explicit(&u->epoch, 1, memory_order_release); /* memos of other walks die */
    return 0;
}

/* ip is a return address: the call lies in (start, end]. */
static inline int in_stop(const vt_unwinder *u, uint64_t ip)
{
    for (int i = 0; i < u->nstop; i++)
        if (ip - u->stop_start[i] - 1 < u->stop_end[i] - u->stop_start[i])
            return 1;
    return 0;
}

const vt_modmap *vt_unwinder_modmap(const vt_unwinder *u) { return u ? atomic_load(&((vt_unwinder *)u)->map) : NULL; }

static inline uint64_t hash_ip(uint64_t ip) { return ip * 0x9E3779B97F4A7C15ull; }

static uint64_t lookup_rule(vt_unwinder *u, vt_modmap **mapp, uint64_t ip, const vt_module **modp, int *in_module)
{
    uint64_t h = hash_ip(ip);
    size_t idx = (size_t)(h >> (64 - u->bits));
    uint64_t tag = (h >> 22) & ((1ull << (64 - R_TAG_SHIFT)) - 1);
    uint64_t e = atomic_load_explicit(&u->cache[idx], memory_order_relaxed);
    *modp = NULL;
    if (e && (e >> R_TAG_SHIFT) == tag) {
        *in_module = 1;
        return e & R_BODY_MASK;
    }
    atomic_fetch_add_explicit(&u->st_misses, 1, memory_order_relaxed);
    /* A miss reads a module's CFI: make sure no module was unloaded since
     * the map was made (one dl_iterate_phdr step, misses are rare). */
    if (loader_subs() != atomic_load_explicit(&u->subs, memory_order_acquire)) {
        if (!rescan(u, 1)) { /* another thread is rescanning: no rule this time */
            *in_module = 0;
            return rule_pack(R_UNKNOWN, 0, 0, 0, 0);
        }
        *mapp = atomic_load_explicit(&u->map, memory_order_acquire);
    }
    const vt_module *m = vt_modmap_find(*mapp, ip);
    if (!m && rescan(u, 0)) {
        *mapp = atomic_load_explicit(&u->map, memory_order_acquire);
        m = vt_modmap_find(*mapp, ip);
    }
    *modp = m;
    if (!m) {
        *in_module = 0;
        return rule_pack(R_UNKNOWN, 0, 0, 0, 0);
    }
    *in_module = 1;
    uint64_t rule = compile_rule(m, ip - 1) | (m->skip ? R_SKIP : 0);
    atomic_store_explicit(&u->cache[idx], rule | tag << R_TAG_SHIFT, memory_order_relaxed);
    return rule;
}

/* Per-thread memo of recent walks.  A walk is a pure function of its
 * start state (ip, sp, bp), the rules of the ips it meets, and the stack
 * words it reads; the memo keeps, per step, the state and every word read
 * with its address.  When a new walk starts from the same state, re-reading
 * those words and finding the same values proves the same walk: no rule
 * lookups (the costly part: a cache-missing hash probe per frame in a big
 * process).  A saved rbp is verified only where the walk used it: code
 * without frame pointers keeps data in rbp, which differs from call to
 * call without changing the walk.  The first differing word leaves a
 * verified prefix, and the walk goes on from the state there.  Rules are
 * the same while the epoch is (it moves when cached rules are dropped). */
#ifndef VT_MEMO_WAYS
#define VT_MEMO_WAYS 32
#endif
#define MEMO_WAYS VT_MEMO_WAYS
#define MEMO_STEPS 48
#define MEMO_NONE 0xffffffffu /* memo.off: the step read no word (it ended the walk) */
typedef struct {
    uint64_t sp;            /* the step's stack pointer (rbp is read again on resuming) */
    uint64_t bp_at, bp_val; /* bp_at 0: rbp kept */
} memo_cold;
/* An entry, laid out for the replay, which reads the first line, then the
 * word offsets and the ips in a row: 12 bytes a step.  The word a step
 * reads is the return address, i.e. the next step's ip, so the ips double
 * as the values to verify, and a replay hands them out in place. */
typedef struct {
    uint64_t sp0, ip0, xkey; /* the start state and the caller's key */
    uint64_t epoch, uid;
    int max, nsteps, first_rec, n;
    int bp0_used;
    uint64_t bp0;
    uint64_t bp_used; /* bit i: the rbp loaded at step i was used (by a CFA or a frame-pointer step) */
    uint64_t walk;    /* this recording's id (g_walk_ids) */
    uint32_t off[MEMO_STEPS];     /* the return address word step i read, as an offset from sp0 */
    uint64_t ip[MEMO_STEPS + 1];  /* ip[i]: step i's ip; ip[i + 1]: the word step i read */
    /* the rbp loads in bp_used, as offsets from sp0 of where and what (a
     * used rbp points into the stack above sp0): 8 bytes a check, in a
     * row, where c[] would spread them over 24 */
    struct {
        uint32_t at, val;
    } bpc[MEMO_STEPS];
    memo_cold c[MEMO_STEPS];
} __attribute__((aligned(64))) memo;
_Static_assert(MEMO_STEPS <= 64, "bp_used is a 64-bit mask");

/* The unwinder's per-thread state, in one object so that a capture looks
 * it up once (VT_TLS_ADDR): the stack bounds, the counts not yet added to
 * the unwinder's totals, and the memo.  The memo is fully associative: the
 * sites of one program often reach the allocator at the same stack depth,
 * and must not evict each other; the caller's key (e.g. the innermost
 * Python frame) tells most of them apart before any word is read.
 * Candidates are found through a tag per entry (a hash of its start state
 * and key; 0: empty): 256 bytes in a row, not a line per entry. */
typedef struct {
    uint64_t stack_lo, stack_hi;
    int stack_state; /* 0 unknown, 1 known, 2 failed */
    uint32_t memo_age;
    uint64_t captures, frames, memo_full;
    uint64_t tag[MEMO_WAYS];
    uint32_t ages[MEMO_WAYS];
    /* next[w]: the way this thread's capture after one in way w used last
     * time; last: the way of the last capture.  A program repeats its
     * sequence of allocations (a training step), so the way after `last`
     * is tried first: sites at one depth with one key (threads without
     * Python frames) share a tag, and each candidate tried in vain costs
     * the steps it shares with the right one. */
    uint8_t next[MEMO_WAYS];
    uint32_t last;
    memo memo[MEMO_WAYS];
} uw_tls;
static __thread uw_tls t_uw;

/* Stack bounds of the calling thread, cached per thread. */
static int stack_bounds(uw_tls *T, uint64_t sp, uint64_t *lo, uint64_t *hi)
{
    if (T->stack_state == 0) {
        /* once per thread: the pthread stack (reads /proc/self/maps for
         * the main thread) */
        pthread_attr_t attr;
        void *addr = NULL;
        size_t size = 0;
        T->stack_state = 2;
        if (pthread_getattr_np(pthread_self(), &attr) == 0) {
            int rc = pthread_attr_getstack(&attr, &addr, &size);
            pthread_attr_destroy(&attr);
            if (rc == 0 && addr && size) {
                T->stack_lo = (uint64_t)(uintptr_t)addr;
                T->stack_hi = T->stack_lo + size;
                T->stack_state = 1;
            }
        }
    }
    /* on another stack (sigaltstack, a coroutine): no walk this time */
    if (T->stack_state != 1 || sp < T->stack_lo || sp >= T->stack_hi)
        return -1;
    *lo = T->stack_lo;
    *hi = T->stack_hi;
    return 0;
}

void vt_unwinder_get_stats(const vt_unwinder *u, vt_unwind_stats *st)
{
    vt_unwinder *w = (vt_unwinder *)u;
    memset(st, 0, sizeof(*st));
    if (!u)
        return;
    /* totals are added per thread in batches of 64 captures: include the
     * calling thread's pending part */
    st->captures = atomic_load(&w->st_captures) + (t_uw.captures & 63);
    st->frames = atomic_load(&w->st_frames) + t_uw.frames;
    st->cache_misses = atomic_load(&w->st_misses);
    st->cache_hits = st->frames > st->cache_misses ? st->frames - st->cache_misses : 0;
    st->fp_steps = atomic_load(&w->st_fp);
    st->rescans = atomic_load(&w->st_rescans);
    st->stops_unknown = atomic_load(&w->st_unknown);
    st->memo_full = atomic_load(&w->st_memo_full) + (t_uw.memo_full & 63);
    st->memo_steps = atomic_load(&w->st_memo_steps);
    st->sampled = atomic_load(&w->st_smp_n);
    st->sampled_span = atomic_load(&w->st_smp_span);
    st->sampled_pages = atomic_load(&w->st_smp_pages);
    st->sampled_bp = atomic_load(&w->st_smp_bp);
    st->sampled_way = atomic_load(&w->st_smp_way);
    st->sampled_pred = atomic_load(&w->st_smp_pred);
    st->sampled_tried = atomic_load(&w->st_smp_tried);
    st->sampled_wasted = atomic_load(&w->st_smp_wasted);
}

static _Atomic uint64_t g_walk_ids; /* the last id given to a recorded walk */

static inline uint64_t memo_tag(uint64_t sp0, uint64_t ip0, uint64_t xkey)
{
    uint64_t h = (sp0 ^ (ip0 * 0x9E3779B97F4A7C15ull) ^ (xkey * 0xC2B2AE3D27D4EB4Full));
    h ^= h >> 29;
    return h | 1;
}

/* The walk uses rbp: the load it came from becomes part of the proof. */
#define USE_BP()                                                                                              \
    do {                                                                                                      \
        if (bp_src < 0)                                                                                       \
            bp0_used = 1;                                                                                     \
        else if (bp_src < MEMO_STEPS)                                                                         \
            mm->bp_used |= 1ull << bp_src;                                                                    \
    } while (0)

/* Steps of m whose words still hold, from the start. */
static inline int memo_verify(const memo *m)
{
    const unsigned char *sp0 = (const unsigned char *)(uintptr_t)m->sp0;
    int i = 0;
    for (; i < m->nsteps; i++) {
#ifdef VT_BENCH_UW_VERIFY /* benchmarks only (bench/inject.cmake): steps past the first N taken as verified (unsafe) */
        if (i >= VT_BENCH_UW_VERIFY)
            return m->nsteps;
#endif
        uint32_t o = m->off[i];
        if (o != MEMO_NONE && *(const uint64_t *)(const void *)(sp0 + o) != m->ip[i + 1])
            break;
#ifndef VT_BENCH_UW_NOBP /* benchmarks only: rbp loads not verified (unsafe) */
        if (__builtin_expect((m->bp_used >> i) & 1, 0) &&
            *(const uint64_t *)(const void *)(sp0 + m->bpc[i].at) != m->sp0 + m->bpc[i].val)
            break;
#endif
    }
    return i;
}

#if defined(__x86_64__)
/* What one whole replay read of the host's stack: from sp0 to the last
 * word, the 4 KiB pages those words lie on (the words go up the stack in
 * order), the rbp loads it checked, where in the memo its entry was found
 * (the tag scan's length), whether it was the predicted way, and the other
 * candidates verified before it (same tag, a differing word) with the steps
 * they verified.  Called for one replay in 64, in the branch that adds the
 * batch of 64 to the totals: nothing on the others. */
static __attribute__((noinline, cold)) void memo_sample(vt_unwinder *u, const memo *m, int way, int pred,
                                                        uint32_t tried, uint32_t wasted)
{
    uint64_t span = 0, pages = 0, page = ~0ull;
    for (int i = 0; i < m->nsteps && i < MEMO_STEPS; i++) {
        if (m->off[i] == MEMO_NONE)
            continue;
        uint64_t a = m->sp0 + m->off[i];
        if (m->off[i] + 8ull > span)
            span = m->off[i] + 8ull;
        if (a >> 12 != page) {
            pages++;
            page = a >> 12;
        }
    }
    uint64_t used = m->bp_used & (m->nsteps >= 64 ? ~0ull : (1ull << m->nsteps) - 1);
    atomic_fetch_add_explicit(&u->st_smp_n, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&u->st_smp_span, span, memory_order_relaxed);
    atomic_fetch_add_explicit(&u->st_smp_pages, pages, memory_order_relaxed);
    atomic_fetch_add_explicit(&u->st_smp_bp, (uint64_t)__builtin_popcountll(used), memory_order_relaxed);
    atomic_fetch_add_explicit(&u->st_smp_way, (uint64_t)way, memory_order_relaxed);
    atomic_fetch_add_explicit(&u->st_smp_pred, (uint64_t)(pred != 0), memory_order_relaxed);
    atomic_fetch_add_explicit(&u->st_smp_tried, tried, memory_order_relaxed);
    atomic_fetch_add_explicit(&u->st_smp_wasted, wasted, memory_order_relaxed);
}

/* Way w served this thread's capture: the most recently used, and the
 * way that follows the previous capture's (tried first next time). */
static inline void memo_used(uw_tls *T, int w)
{
    T->ages[w] = ++T->memo_age;
    T->next[T->last] = (uint8_t)w;
    T->last = (uint32_t)w;
}

/* Counted per thread, added to the totals in batches: a shared counter
 * per capture would bounce a cache line between every allocating thread. */
static inline void count_capture(uw_tls *T, vt_unwinder *u, int n)
{
    T->captures++;
    T->frames += (uint64_t)n;
    if ((T->captures & 63) == 0) {
        atomic_fetch_add_explicit(&u->st_captures, 64, memory_order_relaxed);
        atomic_fetch_add_explicit(&u->st_frames, T->frames, memory_order_relaxed);
        T->frames = 0;
    }
}

/* The walk itself, recorded into the memo: from the start, or resumed
 * after the verified prefix of `best` (best_i steps). */
static __attribute__((noinline)) int unwind_walk(uw_tls *T, vt_unwinder *u, uint64_t ip, uint64_t sp, uint64_t bp,
                                                 uint64_t *ips, int max, uint64_t xkey, uint64_t *walk, uint64_t hi,
                                                 uint64_t epoch, uint64_t tag, const memo *best, int best_i)
{
    uint64_t walk_id = 0;
    uint64_t *tags = T->tag;
    uint32_t *ages = T->ages;
    vt_modmap *map = atomic_load_explicit(&u->map, memory_order_acquire);
    int n = 0, skipping = u->nskip_prefix || u->nskip_addr, step = 0, first_rec = -1;
    int bp_src = -1, bp0_used = 0, clean = 1; /* bp_src: step whose load gave rbp, -1: bp0 */
    const uint64_t ip0 = ip, sp0 = sp, bp0 = bp;
    memo *mm;

    /* no whole walk: record into a free entry, else the least recently used */
    int mw = 0;
    for (int w = 0; w < MEMO_WAYS && tags[mw]; w++)
        if (!tags[w] || (int32_t)(ages[w] - ages[mw]) < 0)
            mw = w;
    mm = &T->memo[mw];
    if (best) {
        /* a verified prefix of i steps: resume in step i's state, the
         * prefix copied into the entry this walk will fill */
        int i = best_i, fr = best->first_rec;
        if (best != mm) {
            memcpy(mm->off, best->off, (size_t)i * sizeof(uint32_t));
            memcpy(mm->ip, best->ip, (size_t)(i + 1) * sizeof(uint64_t));
            memcpy(mm->c, best->c, (size_t)i * sizeof(memo_cold));
            mm->bp_used = best->bp_used;
            mm->bp0_used = best->bp0_used;
        }
        /* rbp now: the last load before step i, read again (unverified
         * loads may differ from the memo), or bp0 */
        for (int k = 0; k < i; k++)
            if (mm->c[k].bp_at)
                bp_src = k;
        if (bp_src >= 0) {
            bp = *(const uint64_t *)(uintptr_t)mm->c[bp_src].bp_at;
            mm->c[bp_src].bp_val = bp;
        }
        bp0_used = mm->bp0_used;
        ip = best->ip[i];
        sp = best->c[i].sp;
        step = i;
        if (fr >= 0 && fr < i) {
            first_rec = fr;
            skipping = 0;
            n = i - fr;
            for (int k = 0; k < n; k++)
                ips[k] = mm->ip[fr + k];
        }
        atomic_fetch_add_explicit(&u->st_memo_steps, (uint64_t)i, memory_order_relaxed);
    }
    tags[mw] = 0; /* rewritten below */
    for (int guard = step; guard < 512 && n < max && ip; guard++, step++) {
        const int rec = step < MEMO_STEPS;
        memo_cold *mc = rec ? &mm->c[step] : NULL;
        if (rec) {
            mm->ip[step] = ip;
            mm->off[step] = MEMO_NONE;
            mc->sp = sp;
            mc->bp_at = 0;
            mm->bp_used &= ~(1ull << step);
        } else {
            clean = 0;
        }
        const vt_module *m;
        int in_module;
        uint64_t rule = lookup_rule(u, &map, ip, &m, &in_module);
        if (m || !in_module) /* a miss: the rule came from the CFI, or from nowhere for now */
            clean = 0;
        if (skipping && !(rule & R_SKIP))
            skipping = 0;
        if (!skipping) {
            if (first_rec < 0)
                first_rec = step;
            ips[n++] = ip;
            if (__builtin_expect(u->nstop, 0) && in_stop(u, ip)) { /* where Python frames take over */
                step++;
                break;
            }
        }
        int kind = RULE_KIND(rule);
        if (kind == R_OUTERMOST) {
            step++;
            break;
        }
        uint64_t cfa, nip, nbp = bp;
        if (kind == R_NORMAL) {
            if (RULE_CFA_BP(rule))
                USE_BP();
            cfa = (RULE_CFA_BP(rule) ? bp : sp) + RULE_OFF(rule);
            uint64_t ra_at = cfa - 8ull * RULE_RA_N(rule);
            if (cfa <= sp || cfa > hi || ra_at < sp || ra_at + 8 > hi) {
                step++;
                break;
            }
            nip = *(const uint64_t *)(uintptr_t)ra_at;
            unsigned bn = RULE_BP_N(rule);
            if (rec) {
                if (ra_at - sp0 < MEMO_NONE)
                    mm->off[step] = (uint32_t)(ra_at - sp0);
                else
                    clean = 0; /* too far for the memo */
                mm->ip[step + 1] = nip;
            }
            if (bn) {
                uint64_t bp_at = cfa - 8ull * bn;
                if (bp_at < sp || bp_at + 8 > hi) {
                    step++;
                    break;
                }
                nbp = *(const uint64_t *)(uintptr_t)bp_at;
                bp_src = step;
                if (mc) {
                    mc->bp_at = bp_at;
                    mc->bp_val = nbp;
                }
            }
        } else {
            /* unknown: one bounds-checked frame-pointer step */
            USE_BP();
            if (bp < sp || bp + 16 > hi || (bp & 7)) {
                atomic_fetch_add_explicit(&u->st_unknown, 1, memory_order_relaxed);
                step++;
                break;
            }
            cfa = bp + 16;
            nip = *(const uint64_t *)(uintptr_t)(bp + 8);
            nbp = *(const uint64_t *)(uintptr_t)bp;
            bp_src = step;
            if (rec) {
                if (bp + 8 - sp0 < MEMO_NONE)
                    mm->off[step] = (uint32_t)(bp + 8 - sp0);
                else
                    clean = 0;
                mm->ip[step + 1] = nip;
                mc->bp_at = bp;
                mc->bp_val = nbp;
            }
            atomic_fetch_add_explicit(&u->st_fp, 1, memory_order_relaxed);
            (void)in_module;
        }
        sp = cfa;
        bp = nbp;
        ip = nip;
        if (ip < 4096) {
            step++;
            break;
        }
    }
    int keep = clean && step <= MEMO_STEPS && first_rec >= 0;
    /* the used rbp loads, compact (a load or value out of reach: not memoized) */
    for (uint64_t used = keep ? mm->bp_used & ((1ull << step) - 1) : 0; used; used &= used - 1) {
        int k = __builtin_ctzll(used);
        uint64_t at = mm->c[k].bp_at - sp0, val = mm->c[k].bp_val - sp0;
        if (at > UINT32_MAX - 8 || val > UINT32_MAX) {
            keep = 0;
            break;
        }
        mm->bpc[k].at = (uint32_t)at;
        mm->bpc[k].val = (uint32_t)val;
    }
    if (keep) {
        mm->sp0 = sp0;
        mm->ip0 = ip0;
        mm->xkey = xkey;
        mm->bp0 = bp0;
        mm->epoch = epoch;
        mm->uid = u->uid;
        mm->max = max;
        mm->nsteps = step;
        mm->first_rec = first_rec;
        mm->bp0_used = bp0_used;
        mm->n = n;
        mm->walk = walk_id = atomic_fetch_add_explicit(&g_walk_ids, 1, memory_order_relaxed) + 1;
        tags[mw] = tag;
        memo_used(T, mw);
    }
    if (walk)
        *walk = walk_id;
    count_capture(T, u, n);
    return n;
}
#endif

/* Replay a remembered walk from this start while the words it read still
 * hold; else walk, from the longest verified prefix.  This part runs at
 * nearly every allocation of a big program, after microseconds of other
 * work: it reads the tags, one entry's first line, then its offsets and
 * ips in a row, and is kept small and apart from the walk (hot). */
static inline __attribute__((always_inline)) int unwind_from(vt_unwinder *u, uint64_t ip, uint64_t sp, uint64_t bp,
                                                             uint64_t *ips, int max, uint64_t xkey, uint64_t *walk,
                                                             const uint64_t **frames)
{
    if (walk)
        *walk = 0;
    if (frames)
        *frames = ips;
#if defined(__x86_64__)
    if (!u || max <= 0)
        return 0;
    uint64_t lo, hi;
    uw_tls *T = VT_TLS_ADDR(&t_uw);
    if (stack_bounds(T, sp, &lo, &hi) != 0)
        return 0;
    uint64_t epoch = atomic_load_explicit(&u->epoch, memory_order_acquire);
    const uint64_t tag = memo_tag(sp, ip, xkey);
    const uint64_t *tags = T->tag;
    const memo *best = NULL;
    int best_i = 0;
    uint32_t tried = 0, wasted = 0; /* candidates verified in vain, their steps */
    /* the predicted way first, then the others in order */
    const int p = T->next[T->last];
    for (int k = -1; k < MEMO_WAYS; k++) {
        const int w = k < 0 ? p : k;
        if (tags[w] != tag || (k >= 0 && w == p))
            continue;
        memo *m = &T->memo[w];
        if (m->sp0 != sp || m->ip0 != ip || m->xkey != xkey || m->max != max || m->epoch != epoch ||
            m->uid != u->uid || (m->bp0_used && m->bp0 != bp))
            continue;
        int i = memo_verify(m);
        if (i == m->nsteps) { /* the whole walk */
            int n = m->n;
            if (frames)
                *frames = m->ip + m->first_rec; /* in place, until this thread's next walk */
            else
                memcpy(ips, m->ip + m->first_rec, (size_t)n * sizeof(uint64_t));
            if (walk)
                *walk = m->walk;
            memo_used(T, w);
            if ((++T->memo_full & 63) == 0) { /* batched, as in count_capture */
                atomic_fetch_add_explicit(&u->st_memo_full, 64, memory_order_relaxed);
                memo_sample(u, m, w, k < 0, tried, wasted);
            }
            count_capture(T, u, n);
            return n;
        }
        tried++;
        wasted += (uint32_t)i + 1;
        if (i > best_i) {
            best = m;
            best_i = i;
        }
    }
    return unwind_walk(T, u, ip, sp, bp, ips, max, xkey, walk, hi, epoch, tag, best, best_i);
#else
    (void)u; (void)ip; (void)sp; (void)bp; (void)ips; (void)max; (void)xkey;
    return 0;
#endif
}

int vt_unwind_from(vt_unwinder *u, uint64_t ip, uint64_t sp, uint64_t bp, uint64_t *ips, int max)
{
    return unwind_from(u, ip, sp, bp, ips, max, 0, NULL, NULL);
}

VT_HOT __attribute__((noinline, optimize("no-omit-frame-pointer"))) int vt_unwind_capture_keyed(vt_unwinder *u,
                                                                                         uint64_t *ips, int max,
                                                                                         uint64_t xkey, uint64_t *walk,
                                                                                         const uint64_t **frames)
{
#if defined(__x86_64__)
    /* With a frame pointer, our frame gives the caller's state exactly:
     * return address at [rbp+8], caller's rsp = rbp+16, caller's rbp = [rbp]. */
    const uint64_t *fp = (const uint64_t *)__builtin_frame_address(0);
    uint64_t ip = fp[1], sp = (uint64_t)(uintptr_t)(fp + 2), bp = fp[0];
    int n = unwind_from(u, ip, sp, bp, ips, max, xkey, walk, frames);
    __asm__ volatile("" ::: "memory"); /* keep this a real call frame (no tail call) */
    return n;
#else
    (void)u; (void)ips; (void)max; (void)xkey;
    if (walk)
        *walk = 0;
    if (frames)
        *frames = ips;
    return 0;
#endif
}

int vt_unwind_rule_describe(vt_unwinder *u, uint64_t ip, int *cfa_reg_is_bp, int64_t *cfa_off, int *ra_n, int *bp_n,
                            int *outermost)
{
    vt_modmap *map = atomic_load(&u->map);
    const vt_module *m = vt_modmap_find(map, ip);
    if (!m)
        return VT_ERR_NOT_FOUND;
    uint64_t r = compile_rule(m, ip - 1);
    if (RULE_KIND(r) == R_UNKNOWN)
        return VT_ERR_INVALID;
    *outermost = RULE_KIND(r) == R_OUTERMOST;
    *cfa_reg_is_bp = RULE_CFA_BP(r);
    *cfa_off = (int64_t)RULE_OFF(r);
    *ra_n = (int)RULE_RA_N(r);
    *bp_n = (int)RULE_BP_N(r);
    return 0;
}
