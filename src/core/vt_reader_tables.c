/* vt_reader_tables.c - the definition tables: arena, id tables, strings,
 * frames, stacks, threads, modules, launches, devices, and their lookups. */
#include "vt_reader_int.h"

static uint64_t table_limit(const vt_reader *r)
{
    uint64_t lim = VT_READER_TABLE_FLOOR + (uint64_t)VT_READER_TABLE_RATIO * r->st.bytes_in;
    return lim < VT_READER_MAX_TABLE_BYTES ? lim : VT_READER_MAX_TABLE_BYTES;
}

int rd_table_charge(vt_reader *r, uint64_t n, const char *what)
{
    uint64_t lim = table_limit(r);
    if (r->arena_bytes + n > lim) {
        r->over_budget = 1;
        rd_why(r, "%s would take the definition tables past %llu MiB, the limit for a file of which %llu KiB were read "
                  "(64 MiB + 32 x the compressed bytes, at most 1 GiB; real traces need far less)",
               what, (unsigned long long)(lim >> 20), (unsigned long long)(r->st.bytes_in >> 10));
        return -1;
    }
    if (r->budget && r->budget->used + n > r->budget->limit) {
        r->over_budget = 1;
        rd_why(r, "%s would take the definition tables of all files of this command past %llu MiB", what,
               (unsigned long long)(r->budget->limit >> 20));
        return -1;
    }
    r->arena_bytes += n;
    if (r->budget)
        r->budget->used += n;
    return 0;
}

int rd_table_full(vt_reader *r, const char *what)
{
    if (r->over_budget)
        return VT_ERR_LIMIT;
    return rd_why(r, "%s exceed the table limit", what);
}

void vt_reader_share_budget(vt_reader *r, vt_table_budget *b)
{
    r->budget = b;
}

void *rd_arena_alloc(vt_reader *r, size_t n, size_t align)
{
    if (rd_table_charge(r, n, "a string"))
        return NULL;
    arena_blk *b = r->arena;
    size_t at = b ? (b->used + align - 1) & ~(align - 1) : 0;
    if (!b || at + n > b->cap) {
        /* blocks double from ARENA_FIRST to ARENA_BLOCK: a small trace
         * (or a fuzz input) maps and zeroes kilobytes, not 64 KiB */
        size_t step = b ? (b->cap < ARENA_BLOCK / 2 ? b->cap * 2 : ARENA_BLOCK) : ARENA_FIRST;
        size_t cap = n > ARENA_BLOCK / 4 ? n : n > step ? ARENA_BLOCK : step;
        arena_blk *nb = malloc(sizeof(*nb) + cap);
        if (!nb)
            return NULL;
        nb->cap = cap;
        nb->used = 0;
        if (b && n > ARENA_BLOCK / 4) { /* big: keep filling the current block */
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            r->arena = nb;
        }
        b = nb;
        at = 0;
    }
    b->used = at + n;
    return b->data + at;
}

/* s[0, n) as a C string at d (room for 2n + 1): a NUL inside is kept as
 * C0 80 (vt_escape.h), so that no name is cut short at it; the length */
static size_t copy_str(char *d, const uint8_t *s, size_t n)
{
    const uint8_t *z = memchr(s, 0, n);
    if (!z) {
        memcpy(d, s, n);
        d[n] = 0;
        return n;
    }
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i]) {
            d[o++] = (char)s[i];
        } else {
            d[o++] = (char)0xc0;
            d[o++] = (char)0x80;
        }
    }
    d[o] = 0;
    return o;
}

static size_t nuls_in(const uint8_t *s, size_t n)
{
    size_t k = 0;
    for (const uint8_t *z; n && (z = memchr(s, 0, n)); n -= (size_t)(z + 1 - s), s = z + 1)
        k++;
    return k;
}

/* bytes as they are (a build id), terminated */
static const uint8_t *arena_raw(vt_reader *r, const uint8_t *s, size_t n)
{
    char *d = rd_arena_alloc(r, n + 1, 1);
    if (!d)
        return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return (const uint8_t *)d;
}

const char *rd_arena_str(vt_reader *r, const uint8_t *s, size_t n)
{
    char *d = rd_arena_alloc(r, n + nuls_in(s, n) + 1, 1);
    if (!d)
        return NULL;
    copy_str(d, s, n);
    return d;
}

/* Slot for definition `id` (zeroed if new).  *dup = 1 if already defined
 * (the first definition wins: ids are never reused).  NULL + why. */
void *rd_tab_put(vt_reader *r, vt_table *t, uint32_t id, size_t esz, const char *what, int *dup)
{
    *dup = 0;
    if (id == 0) {
        rd_why(r, "%s with id 0", what);
        return NULL;
    }
    if (id >= t->cap) {
        /* Ids come in order of first use; gaps only where frames were lost.
         * So a table never grows past twice what was defined plus a slack,
         * whatever ids a damaged or hostile stream names. */
        if (id >= MAX_TABLE_IDS || id > 2ull * t->count + VT_READER_ID_SLACK) {
            rd_why(r, "%s id %u is too far beyond the %u defined so far", what, id, t->count);
            return NULL;
        }
        uint64_t ncap = t->cap ? (uint64_t)t->cap * 2 : TABLE_INIT;
        while (ncap <= id)
            ncap *= 2;
        if (ncap > MAX_TABLE_IDS)
            ncap = MAX_TABLE_IDS;
        uint64_t grow = (ncap - t->cap) * esz;
        char tw[48];
        snprintf(tw, sizeof(tw), "the %s table", what);
        if (rd_table_charge(r, grow, tw))
            return NULL;
        uint8_t *nv = realloc(t->v, (size_t)ncap * esz);
        if (!nv) {
            rd_why(r, "out of memory for %s table", what);
            return NULL;
        }
        memset(nv + (size_t)t->cap * esz, 0, (size_t)(ncap - t->cap) * esz);
        t->v = nv;
        t->cap = (uint32_t)ncap;
    }
    uint8_t *s = t->v + (size_t)id * esz;
    if (*(uint32_t *)s == id) {
        *dup = 1;
        return s;
    }
    t->count++;
    return s;
}

const char *rd_str_get(const vt_reader *r, uint32_t id)
{
    const str_slot *s = rd_tab_get(&r->strings, id, sizeof(str_slot));
    return s ? s->s : NULL;
}

/* Per-record scratch: reserved once per record so pointers stay valid. */
int rd_scratch_reserve(vt_reader *r, size_t n)
{
    r->scratch_used = 0;
    if (n <= r->scratch_cap)
        return 0;
    size_t cap = r->scratch_cap ? r->scratch_cap : 4096;
    while (cap < n)
        cap *= 2;
    uint8_t *s = realloc(r->scratch, cap);
    if (!s)
        return VT_ERR_NOMEM;
    r->scratch = s;
    r->scratch_cap = cap;
    return 0;
}

const char *rd_scratch_str(vt_reader *r, const uint8_t *s, size_t n)
{
    size_t need = n + nuls_in(s, n) + 1;
    if (r->scratch_used + need > r->scratch_cap)
        return ""; /* cannot happen: reserved 2x the record */
    char *d = (char *)r->scratch + r->scratch_used;
    r->scratch_used += copy_str(d, s, n) + 1;
    return d;
}

/* ---- protobuf wire format ------------------------------------------- */

int vt_reader_unverified(const vt_reader *r)
{
    return r->frame_open;
}

const char *vt_reader_string(const vt_reader *r, uint32_t id)
{
    return rd_str_get(r, id);
}

const vt_ev_frame *vt_reader_frame(const vt_reader *r, uint32_t id)
{
    return rd_tab_get(&r->frames, id, sizeof(vt_ev_frame));
}

const vt_ev_thread *vt_reader_thread(const vt_reader *r, uint32_t id)
{
    return rd_tab_get(&r->threads, id, sizeof(vt_ev_thread));
}

const vt_ev_module *vt_reader_module(const vt_reader *r, uint32_t id)
{
    return rd_tab_get(&r->modules, id, sizeof(vt_ev_module));
}

const vt_ev_launch *vt_reader_launch(const vt_reader *r, uint32_t id)
{
    const launch_slot *s = rd_tab_get(&r->launches, id, sizeof(launch_slot));
    return s ? &s->l : NULL;
}

const vt_ev_device *vt_reader_device(const vt_reader *r, uint32_t index)
{
    if (!r->devices || index >= r->ndevices || !r->devices[index].defined)
        return NULL;
    return &r->devices[index].d;
}

const vt_ev_header *vt_reader_header(const vt_reader *r)
{
    return r->have_header ? &r->header : NULL;
}

uint32_t vt_reader_stack(const vt_reader *r, uint32_t id, uint32_t *frames, uint32_t max)
{
    const stack_slot *s = rd_tab_get(&r->stacks, id, sizeof(stack_slot));
    if (!s)
        return 0;
    uint32_t depth = s->depth; /* known at definition: no walk to count */
    /* Walk parents only for the frames wanted.  Each link holds at least
     * one frame (empty links are skipped at definition) and was defined
     * before its child, so this is at most `max` steps and ends. */
    for (uint32_t got = 0; s && got < max;) {
        for (uint32_t i = 0; i < s->n && got < max; i++)
            frames[got++] = r->stack_frames[s->off + i];
        s = s->parent ? rd_tab_get(&r->stacks, s->parent, sizeof(stack_slot)) : NULL;
    }
    return depth;
}

void vt_reader_get_stats(const vt_reader *r, vt_reader_stats *st)
{
    *st = r->st;
    st->table_bytes = r->arena_bytes;
}

/* ---- definitions: records that fill the tables ----------------------- */

/* Each takes the record's body [bp, be) and returns 0 or an error (r->why
 * says why); the event *ev is the definition as read. */

/* A String: kept in the table the first time its id is defined; a
 * repeated definition is handed out from the scratch buffer. */
int rd_def_string(vt_reader *r, const uint8_t *bp, const uint8_t *be, vt_event *ev)
{
    int rc = 0;
    uint32_t id = 0;
    const uint8_t *s = (const uint8_t *)"";
    size_t len = 0;
    int dup;
    rc = dec_string(r, bp, be, &id, &s, &len);
    if (rc)
        return rc;
    str_slot *slot = rd_tab_put(r, &r->strings, id, sizeof(str_slot), "String", &dup);
    if (!slot)
        return r->over_budget ? VT_ERR_LIMIT : VT_ERR_CORRUPT; /* why set by tab_put */
    if (!dup) {
        const char *d = rd_arena_str(r, s, len);
        if (!d)
            return rd_table_full(r, "strings");
        slot->id = id;
        slot->len = (uint32_t)strlen(d);
        slot->s = d;
        ev->u.string.value = d;
    } else {
        if (rd_scratch_reserve(r, 2 * len + 1))
            return VT_ERR_NOMEM;
        ev->u.string.value = rd_scratch_str(r, s, len);
    }
    ev->u.string.id = id;
    ev->u.string.len = strlen(ev->u.string.value); /* a NUL inside is C0 80 */
    return rc;
}

/* A Frame: kept the first time its id is defined. */
int rd_def_frame(vt_reader *r, const uint8_t *bp, const uint8_t *be, vt_event *ev)
{
    int rc = 0;
    vt_ev_frame f = {0};
    int dup;
    rc = dec_frame(r, bp, be, &f);
    if (rc)
        return rc;
    vt_ev_frame *slot = rd_tab_put(r, &r->frames, f.id, sizeof(vt_ev_frame), "Frame", &dup);
    if (!slot)
        return r->over_budget ? VT_ERR_LIMIT : VT_ERR_CORRUPT; /* why set by tab_put */
    if (!dup)
        *slot = f;
    ev->u.frame = f;
    return rc;
}

/* A Stack (frames, and a parent defined earlier): its frames appended to
 * the stack table; its depth is its own frames plus its parent's. */
int rd_def_stack(vt_reader *r, const uint8_t *bp, const uint8_t *be, vt_event *ev)
{
    int rc = 0;
    vt_ev_stack *a = &ev->u.stack;
    memset(a, 0, sizeof(*a));
    size_t max = (size_t)(be - bp);
    if (rd_scratch_reserve(r, max * sizeof(uint32_t) + 16))
        return VT_ERR_NOMEM;
    rc = dec_stack(r, bp, be, a, (uint32_t *)r->scratch, max);
    if (rc)
        return rc;
    int dup;
    stack_slot *slot = rd_tab_put(r, &r->stacks, a->id, sizeof(stack_slot), "Stack", &dup);
    if (!slot)
        return r->over_budget ? VT_ERR_LIMIT : VT_ERR_CORRUPT; /* why set by tab_put */
    if (dup)
        return rc;
    uint64_t depth = a->nframes;
    uint32_t parent = 0;
    if (a->parent) {
        /* Only a parent defined earlier is linked, so chains never loop;
         * a parent lost in a damaged frame ends the stack. */
        const stack_slot *ps = rd_tab_get(&r->stacks, a->parent, sizeof(stack_slot));
        if (a->parent == a->id)
            return rd_why(r, "stack %u is its own parent", a->id);
        if (ps) {
            depth += ps->depth;
            /* an empty parent adds nothing: link past it, so that every
             * link of a chain holds a frame and walks stay bounded */
            parent = ps->n ? a->parent : ps->parent;
        }
    }
    if (depth > MAX_STACK_DEPTH)
        return rd_why(r, "stack %u is deeper than %u frames", a->id, MAX_STACK_DEPTH);
    if ((uint64_t)r->sf_len + a->nframes > MAX_STACK_FRAMES_TOTAL)
        return rd_why(r, "stacks exceed the table limit");
    if (r->sf_len + a->nframes > r->sf_cap) {
        uint64_t cap = r->sf_cap ? r->sf_cap : 4096;
        while (cap < (uint64_t)r->sf_len + a->nframes)
            cap *= 2;
        if (rd_table_charge(r, (cap - r->sf_cap) * sizeof(uint32_t), "the stacks' frames"))
            return rd_table_full(r, "stacks");
        uint32_t *nf = realloc(r->stack_frames, cap * sizeof(uint32_t));
        if (!nf)
            return VT_ERR_NOMEM;
        r->stack_frames = nf;
        r->sf_cap = (uint32_t)cap;
    }
    if (a->nframes)
        memcpy(r->stack_frames + r->sf_len, a->frames, a->nframes * sizeof(uint32_t));
    slot->id = a->id;
    slot->n = a->nframes;
    slot->parent = parent;
    slot->depth = (uint32_t)depth;
    slot->off = r->sf_len;
    r->sf_len += a->nframes;
    return rc;
}

/* A Thread: kept the first time; the hot path looks its thread up again. */
int rd_def_thread(vt_reader *r, const uint8_t *bp, const uint8_t *be, vt_event *ev)
{
    int rc = 0;
    vt_ev_thread t = {0};
    const uint8_t *nm = (const uint8_t *)"";
    size_t nl = 0;
    int dup;
    rc = dec_thread(r, bp, be, &t, &nm, &nl);
    if (rc)
        return rc;
    vt_ev_thread *slot = rd_tab_put(r, &r->threads, t.id, sizeof(vt_ev_thread), "Thread", &dup);
    r->fast_thr = r->fast_tid = 0; /* the hot path looks its thread up again */
    if (!slot)
        return r->over_budget ? VT_ERR_LIMIT : VT_ERR_CORRUPT; /* why set by tab_put */
    if (!dup) {
        t.name = rd_arena_str(r, nm, nl);
        if (!t.name)
            return rd_table_full(r, "threads");
        *slot = t;
    } else {
        if (rd_scratch_reserve(r, 2 * nl + 1))
            return VT_ERR_NOMEM;
        t.name = rd_scratch_str(r, nm, nl);
    }
    ev->u.thread = t;
    return rc;
}

/* A Module: path and build id kept the first time. */
int rd_def_module(vt_reader *r, const uint8_t *bp, const uint8_t *be, vt_event *ev)
{
    int rc = 0;
    vt_ev_module m = {0};
    module_raw mr = {(const uint8_t *)"", (const uint8_t *)"", 0, 0};
    int dup;
    rc = dec_module(r, bp, be, &m, &mr);
    if (rc)
        return rc;
    vt_ev_module *slot = rd_tab_put(r, &r->modules, m.id, sizeof(vt_ev_module), "Module", &dup);
    if (!slot)
        return r->over_budget ? VT_ERR_LIMIT : VT_ERR_CORRUPT; /* why set by tab_put */
    m.build_id_len = (uint32_t)mr.build_id_len;
    if (!dup) {
        m.path = rd_arena_str(r, mr.path, mr.path_len);
        m.build_id = arena_raw(r, mr.build_id, mr.build_id_len);
        if (!m.path || !m.build_id)
            return rd_table_full(r, "modules");
        *slot = m;
    } else {
        if (rd_scratch_reserve(r, 2 * mr.path_len + mr.build_id_len + 2))
            return VT_ERR_NOMEM;
        m.path = rd_scratch_str(r, mr.path, mr.path_len);
        uint8_t *bid = r->scratch + r->scratch_used; /* bytes as they are */
        memcpy(bid, mr.build_id, mr.build_id_len);
        bid[mr.build_id_len] = 0;
        r->scratch_used += mr.build_id_len + 1;
        m.build_id = bid;
    }
    ev->u.module = m;
    return rc;
}

/* A Launch: kept with the kernel fields its kernels take from it. */
int rd_def_launch(vt_reader *r, const uint8_t *bp, const uint8_t *be, vt_event *ev)
{
    int rc = 0;
    vt_ev_launch l = {0};
    int dup;
    rc = dec_launch(r, bp, be, &l);
    if (rc)
        return rc;
    launch_slot *slot = rd_tab_put(r, &r->launches, l.id, sizeof(launch_slot), "Launch", &dup);
    if (!slot)
        return r->over_budget ? VT_ERR_LIMIT : VT_ERR_CORRUPT; /* why set by tab_put */
    if (!dup) {
        slot->id = l.id;
        slot->l = l;
        vt_ev_kernel *t = &slot->k;
        t->name = rd_str_get(r, l.name);
        t->name_id = l.name;
        t->device = l.device;
        t->stream = l.stream;
        memcpy(t->grid, l.grid, sizeof(t->grid));
        memcpy(t->block, l.block, sizeof(t->block));
        t->shared_memory = l.shared_memory;
        t->graph = l.graph;
    }
    ev->u.launch = l;
    return rc;
}

/* A Device: kept by index the first time. */
int rd_def_device(vt_reader *r, const uint8_t *bp, const uint8_t *be, vt_event *ev)
{
    int rc = 0;
    vt_ev_device d;
    device_raw dr = {(const uint8_t *)"", NULL, (const uint8_t *)"", 0, 0, 0};
    memset(&d, 0, sizeof(d));
    rc = dec_device(r, bp, be, &d, &dr);
    if (rc)
        return rc;
    if (dr.uuid)
        memcpy(d.uuid, dr.uuid, dr.uuid_len < 16 ? dr.uuid_len : 16);
    if (d.index >= MAX_DEVICES) {
        /* no device has this index: the record goes out as it is, not kept
         * (the analyzer counts it among events with an invalid device); the
         * rest of its frame is read as before (it was all dropped) */
        if (rd_scratch_reserve(r, 2 * (dr.name_len + dr.pci_len) + 2))
            return VT_ERR_NOMEM;
        d.name = rd_scratch_str(r, dr.name, dr.name_len);
        d.pci_bus_id = rd_scratch_str(r, dr.pci, dr.pci_len);
        ev->u.device = d;
        return 0;
    }
    if (d.index >= r->ndevices) { /* grows to the highest index seen */
        uint32_t n = r->ndevices ? r->ndevices : 8;
        while (n <= d.index)
            n *= 2;
        if (n > MAX_DEVICES)
            n = MAX_DEVICES;
        dev_slot *nd = realloc(r->devices, n * sizeof(dev_slot));
        if (!nd)
            return VT_ERR_NOMEM;
        memset(nd + r->ndevices, 0, (n - r->ndevices) * sizeof(dev_slot));
        r->devices = nd;
        r->ndevices = n;
    }
    dev_slot *slot = &r->devices[d.index];
    if (!slot->defined) {
        d.name = rd_arena_str(r, dr.name, dr.name_len);
        d.pci_bus_id = rd_arena_str(r, dr.pci, dr.pci_len);
        if (!d.name || !d.pci_bus_id)
            return rd_table_full(r, "devices");
        slot->defined = 1;
        slot->d = d;
    } else {
        if (rd_scratch_reserve(r, 2 * (dr.name_len + dr.pci_len) + 2))
            return VT_ERR_NOMEM;
        d.name = rd_scratch_str(r, dr.name, dr.name_len);
        d.pci_bus_id = rd_scratch_str(r, dr.pci, dr.pci_len);
    }
    ev->u.device = d;
    return rc;
}

/* A Header: the first one is checked (magic, format version) and kept; a
 * second one (concatenated traces) is handed out without its strings. */
int rd_def_header(vt_reader *r, const uint8_t *bp, const uint8_t *be, vt_event *ev)
{
    int rc = 0;
    vt_ev_header *h = &ev->u.header;
    int first = !r->have_header;
    memset(h, 0, sizeof(*h));
    rc = dec_header(r, bp, be, h, first);
    if (rc)
        return rc;
    if (first) {
        if (h->magic != VT_FORMAT_MAGIC) {
            snprintf(r->why, sizeof(r->why), "not a vramtrace trace: bad magic 0x%08x in the header (expected 0x%08x)",
                     h->magic, VT_FORMAT_MAGIC);
            return VT_ERR_VERSION;
        }
        if (h->format_version < VT_FORMAT_VERSION_MIN || h->format_version > VT_FORMAT_VERSION) {
            snprintf(r->why, sizeof(r->why),
                     "unsupported format version %u (this vramtrace reads versions %u to %u)",
                     h->format_version, VT_FORMAT_VERSION_MIN, VT_FORMAT_VERSION);
            return VT_ERR_VERSION;
        }
        r->header = *h;
        r->have_header = 1;
    } else {
        /* a second header (concatenated traces): strings not kept */
        h->argv = NULL;
        h->argc = 0;
        h->env_names = h->env_values = NULL;
        h->nenv = 0;
    }
    return rc;
}
