/* vt_scopes.c - a compile unit's scope tree walked once, so that the
 * scopes of an address are found without walking it again (issue 35).
 * dwarf_getscopes walks the unit's DIEs from its root for every address
 * (and again, whole, for an inline's abstract origin; dwarf_getscopes_die
 * a third time): in the large units of libnccl or libpython that is most
 * of the 1-4 ms an address costs.  The answer here is dwarf_getscopes'
 * (elfutils 0.188):
 *
 *   - the path from the unit down, at each level the first child (in DIE
 *     order) whose PC ranges hold the address, descending only into scope
 *     DIEs (may_have_scopes) -- a DIE without ranges ends the descent;
 *   - when the path holds an inlined subroutine, dwarf_getscopes gives
 *     nothing unless the deepest one's abstract origin is a DIE of the unit
 *     it walks (no origin: an error; one in another unit: nothing).
 *
 * Units with imported units (dwz) or DIEs whose ranges cannot be read are
 * left to libdw (the caller asks dwarf_getscopes).  DIEs are libdw's: the
 * index lives no longer than the Dwarf.  Touches nothing else. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdlib.h>
#include <string.h>

#include "vt_analyze_int.h"
#include "vt_scopes.h"
#include "vt_grow.h"
#include "vt_map.h"

#define NO_PARENT UINT32_MAX

typedef struct {
    Dwarf_Die die;
    uint32_t parent; /* node index, NO_PARENT: a child of the unit */
    int tag;
    int reach; /* every ancestor has ranges that a pc can match (pc_match would descend) */
} sc_node;

typedef struct {
    uint64_t lo, hi; /* [lo, hi) */
    uint32_t node;
} sc_range;

typedef struct {
    uint64_t cu_off;
    int usable;
    sc_node *nodes;
    size_t nnodes, capnodes;
    sc_range *rg;
    size_t nrg, caprg;
    uint64_t *pmax;
    vt_map dies; /* die.addr -> 1: every DIE the unit's scope walk visits */
} sc_unit;

struct vt_scopes {
    sc_unit *units;
    size_t nunits, capunits;
    vt_map by_off; /* cu offset + 1 -> index + 1 */
};

static int may_have_scopes(int tag)
{
    switch (tag) {
    case DW_TAG_compile_unit:
    case DW_TAG_module:
    case DW_TAG_lexical_block:
    case DW_TAG_with_stmt:
    case DW_TAG_catch_block:
    case DW_TAG_try_block:
    case DW_TAG_entry_point:
    case DW_TAG_inlined_subroutine:
    case DW_TAG_subprogram:
    case DW_TAG_namespace:
    case DW_TAG_class_type:
    case DW_TAG_structure_type:
        return 1;
    default:
        return 0;
    }
}

/* the children of parent (a node index, or NO_PARENT for the unit), DIE
 * order, as __libdw_visit_scopes visits them; 0 or -1 (not indexable) */
static int walk(sc_unit *u, Dwarf_Die *pdie, uint32_t parent, int reach, int depth)
{
    Dwarf_Die child;
    int rc = dwarf_child(pdie, &child);
    if (rc)
        return rc < 0 ? -1 : 0;
    if (depth > 512)
        return -1;
    do {
        int tag = dwarf_tag(&child);
        if (tag == DW_TAG_imported_unit)
            return -1; /* dwz: the imported children walk in place; not here */
        if (vt_map_put(&u->dies, (uint64_t)(uintptr_t)child.addr, 1))
            return -1;
        /* its ranges, as dwarf_haspc reads them */
        Dwarf_Addr base, b, e;
        ptrdiff_t off = 0;
        size_t first = u->nrg;
        while ((off = dwarf_ranges(&child, off, &base, &b, &e)) > 0) {
            if (VT_GROW(u->rg, u->nrg, u->caprg, 256))
                return -1;
            u->rg[u->nrg++] = (sc_range){b, e, (uint32_t)u->nnodes};
        }
        if (off < 0)
            return -1; /* dwarf_getscopes may fail here: leave it to libdw */
        int has = u->nrg > first;
        if (VT_GROW(u->nodes, u->nnodes, u->capnodes, 256))
            return -1;
        uint32_t me = (uint32_t)u->nnodes++;
        u->nodes[me] = (sc_node){child, parent, tag, reach};
        if (!reach || !has)
            for (size_t k = first; k < u->nrg; k++)
                u->rg[k].node = UINT32_MAX; /* never on a pc's path */
        /* the walk goes on below scope DIEs whatever their ranges (the
         * origin search sees all of it); a pc's path only below matching
         * ones */
        if (may_have_scopes(tag) && dwarf_haschildren(&child) > 0 &&
            walk(u, &child, me, reach && has, depth + 1))
            return -1;
    } while ((rc = dwarf_siblingof(&child, &child)) == 0);
    return rc < 0 ? -1 : 0;
}

static int cmp_rg(const void *a, const void *b)
{
    const sc_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static sc_unit *unit_get(vt_scopes *s, Dwarf_Die *cu)
{
    uint64_t off = dwarf_dieoffset(cu);
    uint64_t *v = vt_map_get(&s->by_off, off + 1);
    if (v)
        return &s->units[*v - 1];
    if (VT_GROW(s->units, s->nunits, s->capunits, 16))
        return NULL;
    sc_unit *u = &s->units[s->nunits];
    memset(u, 0, sizeof(*u));
    u->cu_off = off;
    if (vt_map_put(&s->by_off, off + 1, s->nunits + 1))
        return NULL;
    s->nunits++;
    u->usable = walk(u, cu, NO_PARENT, 1, 0) == 0;
    /* ranges of nodes off any path are dropped */
    size_t k = 0;
    for (size_t i = 0; i < u->nrg; i++)
        if (u->rg[i].node != UINT32_MAX && u->rg[i].hi > u->rg[i].lo)
            u->rg[k++] = u->rg[i];
    u->nrg = k;
    qsort(u->rg, u->nrg, sizeof(*u->rg), cmp_rg);
    u->pmax = malloc((u->nrg ? u->nrg : 1) * sizeof(*u->pmax));
    if (!u->pmax) {
        u->usable = 0;
        return u;
    }
    uint64_t m = 0;
    for (size_t i = 0; i < u->nrg; i++) {
        if (u->rg[i].hi > m)
            m = u->rg[i].hi;
        u->pmax[i] = m;
    }
    return u;
}

vt_scopes *vt_scopes_new(void)
{
    return calloc(1, sizeof(vt_scopes));
}

void vt_scopes_free(vt_scopes *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nunits; i++) {
        free(s->units[i].nodes);
        free(s->units[i].rg);
        free(s->units[i].pmax);
        vt_map_free(&s->units[i].dies);
    }
    free(s->units);
    vt_map_free(&s->by_off);
    free(s);
}

#define SC_MAX 4096 /* ranges over one pc looked at before asking libdw */

int vt_scopes_get(vt_scopes *s, Dwarf_Die *cu, uint64_t pc, Dwarf_Die *out, int max)
{
    sc_unit *u = unit_get(s, cu);
    if (!u || !u->usable)
        return -2;
    /* the nodes whose ranges hold pc (those on a possible path) */
    size_t lo = 0, hi = u->nrg;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (u->rg[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint32_t cand[256];
    size_t nc = 0, steps = 0;
    for (size_t k = lo; k > 0 && u->pmax[k - 1] > pc; k--) {
        if (++steps > SC_MAX || nc == 256)
            return -2;
        const sc_range *r = &u->rg[k - 1];
        if (r->hi > pc)
            cand[nc++] = r->node;
    }
    /* down from the unit: at each level the first child (DIE order =
     * node order) that holds pc */
    uint32_t cur = NO_PARENT, path[256];
    int np = 0, deepest_inl = -1;
    for (;;) {
        uint32_t next = UINT32_MAX;
        for (size_t i = 0; i < nc; i++)
            if (u->nodes[cand[i]].parent == cur && cand[i] < next)
                next = cand[i];
        if (next == UINT32_MAX)
            break;
        if (np == 256)
            return -2;
        path[np++] = next;
        if (u->nodes[next].tag == DW_TAG_inlined_subroutine)
            deepest_inl = np - 1;
        cur = next;
    }
    if (!np)
        return 0; /* no scope: dwarf_getscopes gives none */
    if (deepest_inl >= 0) {
        /* dwarf_getscopes then looks for its abstract origin in the unit */
        Dwarf_Attribute at;
        Dwarf_Die origin;
        if (!dwarf_formref_die(dwarf_attr(&u->nodes[path[deepest_inl]].die, DW_AT_abstract_origin, &at),
                               &origin))
            return -1;
        if (!vt_map_get(&u->dies, (uint64_t)(uintptr_t)origin.addr))
            return 0;
    }
    /* innermost first */
    int n = 0;
    for (int i = np - 1; i >= 0 && n < max; i--)
        out[n++] = u->nodes[path[i]].die;
    return n;
}
