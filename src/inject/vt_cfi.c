/* vt_cfi.c - DWARF call frame information of x86-64 into the unwinder's
 * rules: .eh_frame_hdr search, CIE and FDE parsing, the CFA program run up
 * to a pc.  May touch: the loaded objects' .eh_frame_hdr and .eh_frame. */
#include "vt_unwind_int.h"
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
uint64_t vt_cfi_compile_rule(const vt_module *m, uint64_t pc)
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
