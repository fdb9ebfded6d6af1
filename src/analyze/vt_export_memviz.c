/* vt_export_memviz.c - PyTorch's memory snapshot (the shape of
 * torch.cuda.memory._snapshot(), read by torch.cuda._memory_viz and
 * pytorch.org/memory_viz): a pickle (protocol 4) of
 *   {"device_traces": [[entry, ...] per device], "segments": [segment, ...]}
 * Entries from the replay as it happens: alloc / free_requested /
 * free_completed for every block that is not a caching-allocator segment,
 * segment_alloc / segment_free for those, segment_map / segment_unmap for
 * VMM mappings, oom for failed allocations; frames innermost first (Python
 * frames where recorded, then native ones).  Segments: what was live at the
 * view time: each caching-allocator segment as recorded (one block: the
 * tensors inside it are not seen in that mode), every other block inside a
 * segment made of the live blocks that lie within 2 MiB of each other,
 * gaps as inactive blocks, so that the blocks tile each segment.  In a job
 * of several processes each (process, device) is a device of the snapshot,
 * in order of appearance (said on stderr).
 *
 * Each device's entries are written to a temporary file as they come, then
 * the pickle is assembled: memory stays O(live blocks + call sites).
 * Frame lists are pickled once per section and referred to by memo index
 * after that.  Touches: the output FILE, temporary files in $TMPDIR
 * (/tmp when unset), deleted from the start. */
#define _GNU_SOURCE /* O_TMPFILE, mkostemp */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vt_error.h"
#include "vt_export_int.h"
#include "vt_grow.h"

/* ------------------------------------------------------------ pickle */

#define PK_BATCH 1000 /* items between MARK and APPENDS/SETITEMS, as pickle does */

static void pk_u32(FILE *f, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    fwrite(b, 1, 4, f);
}

static void pk_str(FILE *f, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n < 256) {
        fputc(0x8c, f); /* SHORT_BINUNICODE */
        fputc((int)n, f);
    } else {
        fputc('X', f); /* BINUNICODE */
        pk_u32(f, (uint32_t)n);
    }
    if (n)
        fwrite(s, 1, n, f);
}

static void pk_int(FILE *f, int64_t v)
{
    if (v >= 0 && v < 256) {
        fputc('K', f); /* BININT1 */
        fputc((int)v, f);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        fputc('J', f); /* BININT */
        pk_u32(f, (uint32_t)(int32_t)v);
    } else {
        fputc(0x8a, f); /* LONG1: 8 bytes, little-endian two's complement */
        fputc(8, f);
        uint64_t u = (uint64_t)v;
        for (int k = 0; k < 8; k++)
            fputc((int)(uint8_t)(u >> (8 * k)), f);
    }
}

static void pk_key_str(FILE *f, const char *k, const char *v)
{
    pk_str(f, k);
    pk_str(f, v);
}

static void pk_key_int(FILE *f, const char *k, int64_t v)
{
    pk_str(f, k);
    pk_int(f, v);
}

static void pk_put(FILE *f, uint32_t idx)
{
    fputc('r', f); /* LONG_BINPUT */
    pk_u32(f, idx);
}

static void pk_get(FILE *f, uint32_t idx)
{
    fputc('j', f); /* LONG_BINGET */
    pk_u32(f, idx);
}

/* A list written item by item: ']' then MARK ... APPENDS per batch. */
typedef struct {
    FILE *f;
    uint32_t n;
} pk_list;

static void pk_list_begin(pk_list *l, FILE *f)
{
    l->f = f;
    l->n = 0;
    fputc(']', f); /* EMPTY_LIST */
}

static void pk_list_item(pk_list *l)
{
    if (l->n % PK_BATCH == 0) {
        if (l->n)
            fputc('e', l->f); /* APPENDS */
        fputc('(', l->f);     /* MARK */
    }
    l->n++;
}

static void pk_list_end(pk_list *l)
{
    if (l->n)
        fputc('e', l->f);
}

/* ------------------------------------------------------------ the export */

#define MV_MAX_DEVS 64
#define MV_GAP (2ull << 20)

typedef struct {
    uint64_t addr, size, t;
    uint32_t stack, unit;
    uint8_t kind, api, segment;
    uint8_t placed; /* a tensor written inside its segment (mv_snapshot) */
} mv_block;

typedef struct { /* a section of the pickle: its entries, its memo of frame lists */
    FILE *f;
    pk_list list;
    vt_map memo; /* (proc << 32 | stack) + 1 -> memo index + 1 */
} mv_section;

typedef struct {
    vt_xjob *j;
    mv_section dev[MV_MAX_DEVS];
    int ndev;
    vt_map devmap;               /* (proc << 32 | device) + 1 -> section + 1 */
    mv_section seg;
    pk_list seglist;
    uint32_t next_memo;
    /* the live blocks of the process being replayed, for the segments */
    mv_block *live;
    mv_block *tens; /* a snapshot's scratch: one segment's tensors */
    size_t nlive, caplive;
    vt_map live_map; /* addr + 1 -> index + 1 */
    unsigned live_proc;
    int snapped;     /* the segments of live_proc were taken */
    uint64_t drv_free[MV_MAX_DEVS];
    vt_map map_dev; /* VMM mapping address + 1 -> device + 1 */
    int err;
    const char *tmpdir; /* where the spool files go: $TMPDIR, else /tmp */
    int tmpdir_env;     /* tmpdir came from $TMPDIR */
    int spool_errno;    /* why a spool file could not be made; 0: it could */
} mv;

static void mv_frames(mv *m, mv_section *s, const vt_proc *p, unsigned proc, uint32_t stack)
{
    FILE *f = s->f;
    uint64_t key = ((uint64_t)proc << 32 | stack) + 1;
    uint64_t *v = vt_map_get(&s->memo, key);
    if (v) {
        pk_get(f, (uint32_t)(*v - 1));
        return;
    }
    vt_xframe fr[VT_MAX_STACK];
    uint32_t n = vt_xjob_frames(m->j, p, stack, fr, VT_MAX_STACK);
    pk_list l;
    pk_list_begin(&l, f);
    for (uint32_t k = 0; k < n; k++) {
        const vt_xframe *x = &fr[k];
        char name[512];
        const char *file = x->file;
        if (x->function)
            snprintf(name, sizeof(name), "%s", x->function);
        else if (x->module)
            snprintf(name, sizeof(name), "%s+0x%" PRIx64,
                     strrchr(x->module, '/') ? strrchr(x->module, '/') + 1 : x->module, x->offset);
        else
            snprintf(name, sizeof(name), "??");
        if (!file)
            file = x->module ? x->module : "??";
        pk_list_item(&l);
        fputc('}', f); /* EMPTY_DICT */
        fputc('(', f);
        pk_key_str(f, "filename", file);
        pk_key_int(f, "line", x->line);
        pk_key_str(f, "name", name);
        fputc('u', f); /* SETITEMS */
    }
    pk_list_end(&l);
    uint32_t idx = m->next_memo++;
    pk_put(f, idx);
    if (vt_map_put(&s->memo, key, (uint64_t)idx + 1))
        m->err = VT_ERR_NOMEM;
}

/* A temporary file in m->tmpdir (tmpfile() knows only /tmp), never named
 * (O_TMPFILE) or unlinked at once; NULL with the reason in m->spool_errno. */
static FILE *spool_open(mv *m)
{
    const char *d = m->tmpdir;
    int fd = open(d, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) { /* a file system without O_TMPFILE */
        char path[4096];
        if (snprintf(path, sizeof(path), "%s/vramtrace-spool-XXXXXX", d) >= (int)sizeof(path))
            errno = ENAMETOOLONG;
        else if ((fd = mkostemp(path, O_CLOEXEC)) >= 0)
            unlink(path);
    }
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w+");
    if (!f) {
        m->spool_errno = errno ? errno : EIO;
        if (fd >= 0)
            close(fd);
    }
    return f;
}

static mv_section *mv_dev(mv *m, unsigned proc, uint32_t device)
{
    uint64_t key = ((uint64_t)proc << 32 | device) + 1;
    uint64_t *v = vt_map_get(&m->devmap, key);
    if (v)
        return &m->dev[*v - 1];
    if (m->ndev == MV_MAX_DEVS)
        return NULL;
    mv_section *s = &m->dev[m->ndev];
    s->f = spool_open(m);
    if (!s->f || vt_map_put(&m->devmap, key, (uint64_t)m->ndev + 1)) {
        m->err = s->f ? VT_ERR_NOMEM : VT_ERR_IO;
        return NULL;
    }
    pk_list_begin(&s->list, s->f);
    char label[600];
    vt_xjob_label(m->j->model->procs[proc], label, sizeof(label));
    fprintf(stderr, "vramtrace export: memory-viz device %d = %s GPU %u\n", m->ndev, label, device);
    m->ndev++;
    return s;
}

static void mv_entry(mv *m, unsigned proc, const vt_proc *p, uint32_t device, const char *action, uint64_t addr,
                     uint64_t size, uint64_t t, uint32_t stack, int64_t device_free)
{
    mv_section *s = mv_dev(m, proc, device);
    if (!s)
        return;
    FILE *f = s->f;
    pk_list_item(&s->list);
    fputc('}', f);
    fputc('(', f);
    pk_key_str(f, "action", action);
    pk_key_int(f, "addr", (int64_t)addr);
    pk_key_int(f, "size", (int64_t)size);
    pk_key_int(f, "stream", 0);
    pk_key_int(f, "time_us", (int64_t)(vt_xjob_time(p, t) / 1000));
    if (device_free >= 0)
        pk_key_int(f, "device_free", device_free);
    pk_str(f, "frames");
    mv_frames(m, s, p, proc, stack);
    fputc('u', f);
}

/* ---- the set live at the view and its segments ---- */

static void mv_live_del(mv *m, uint64_t addr, unsigned api);

/* the live map's key: tensors of the caching allocator (its trace
 * tracker) apart from the segments at the same addresses */
static uint64_t mv_key(uint64_t addr, unsigned api)
{
    return (addr << 1 | (api == VT_API_CACHING_ALLOCATOR)) + 1;
}

static void mv_live_add(mv *m, const mv_block *b)
{
    mv_live_del(m, b->addr, b->api); /* a block over one whose free was not seen */
    if (VT_GROW(m->live, m->nlive, m->caplive, 1024) || vt_map_put(&m->live_map, mv_key(b->addr, b->api), m->nlive + 1)) {
        m->err = VT_ERR_NOMEM;
        return;
    }
    m->live[m->nlive++] = *b;
}

static void mv_live_del(mv *m, uint64_t addr, unsigned api)
{
    uint64_t idx;
    if (!vt_map_del(&m->live_map, mv_key(addr, api), &idx))
        return;
    size_t i = idx - 1, last = m->nlive - 1;
    if (i != last) {
        m->live[i] = m->live[last];
        uint64_t *v = vt_map_get(&m->live_map, mv_key(m->live[i].addr, m->live[i].api));
        if (v)
            *v = i + 1;
    }
    m->nlive--;
}

static int blk_cmp(const void *a, const void *b)
{
    const mv_block *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void mv_block_dict(mv *m, const vt_proc *p, unsigned proc, uint64_t size, const char *state, const mv_block *b)
{
    FILE *f = m->seg.f;
    fputc('}', f);
    fputc('(', f);
    pk_key_int(f, "size", (int64_t)size);
    pk_key_int(f, "requested_size", b ? (int64_t)size : 0);
    pk_key_str(f, "state", state);
    pk_str(f, "frames");
    if (b) {
        mv_frames(m, &m->seg, p, proc, b->stack);
    } else {
        fputc(']', f);
    }
    fputc('u', f);
}

/* One segment [start, end) of the snapshot, named by `stack`, with the
 * blocks b[0..n) (sorted by address) as active_allocated and what lies
 * between them inactive, so that the blocks tile it; a block overlapping
 * what came before (a free not seen) is left out. */
static void mv_segment_write(mv *m, const vt_proc *p, unsigned proc, int device, uint64_t start, uint64_t end,
                             const char *type, uint32_t stack, const mv_block *b, size_t n)
{
    FILE *f = m->seg.f;
    uint64_t used = 0;
    for (size_t k = 0; k < n; k++)
        used += b[k].size;
    pk_list_item(&m->seglist);
    fputc('}', f);
    fputc('(', f);
    pk_key_int(f, "device", device);
    pk_key_int(f, "address", (int64_t)start);
    pk_key_int(f, "total_size", (int64_t)(end - start));
    pk_key_int(f, "allocated_size", (int64_t)used);
    pk_key_int(f, "active_size", (int64_t)used);
    pk_key_int(f, "requested_size", (int64_t)used);
    pk_key_int(f, "stream", 0);
    pk_key_str(f, "segment_type", type);
    pk_str(f, "segment_pool_id");
    fputc('(', f); /* the tuple (0, 0) */
    pk_int(f, 0);
    pk_int(f, 0);
    fputc('t', f); /* TUPLE */
    pk_key_int(f, "is_expandable", 0);
    pk_str(f, "frames");
    mv_frames(m, &m->seg, p, proc, stack);
    pk_str(f, "blocks");
    pk_list bl;
    pk_list_begin(&bl, f);
    uint64_t at = start;
    for (size_t k = 0; k < n; k++) {
        if (b[k].addr < at || b[k].addr + b[k].size > end)
            continue;
        if (b[k].addr > at) {
            pk_list_item(&bl);
            mv_block_dict(m, p, proc, b[k].addr - at, "inactive", NULL);
        }
        pk_list_item(&bl);
        mv_block_dict(m, p, proc, b[k].size, "active_allocated", &b[k]);
        at = b[k].addr + b[k].size;
    }
    if (end > at) {
        pk_list_item(&bl);
        mv_block_dict(m, p, proc, end - at, "inactive", NULL);
    }
    pk_list_end(&bl);
    fputc('u', f);
}

/* live blocks b[0..n) of one device and kind, within MV_GAP of each
 * other, as one segment; a caching-allocator segment (n = 1) as recorded */
static void mv_segment(mv *m, const vt_proc *p, unsigned proc, int device, const mv_block *b, size_t n)
{
    mv_segment_write(m, p, proc, device, b[0].addr, b[n - 1].addr + b[n - 1].size, "large", b[0].stack, b, n);
}

/* A caching-allocator segment with the caching allocator's tensors inside
 * it (t[0..nt), sorted by address, within the segment), as torch's own
 * snapshot has them. */
static void mv_segment_tensors(mv *m, const vt_proc *p, unsigned proc, int device, const mv_block *sg, const mv_block *t,
                               size_t nt)
{
    mv_segment_write(m, p, proc, device, sg->addr, sg->addr + sg->size, sg->size > (1u << 20) ? "large" : "small",
                     sg->stack, t, nt);
}

/* The segments of process proc from its live blocks now (the view). */
static void mv_snapshot(mv *m, unsigned proc)
{
    if (m->snapped)
        return;
    m->snapped = 1;
    const vt_proc *p = m->j->model->procs[proc];
    if (m->nlive)
        qsort(m->live, m->nlive, sizeof(*m->live), blk_cmp);
    /* the caching allocator's tensors: one run of the sort (their kind) */
    size_t ten_lo = 0, ten_n = 0;
    while (ten_lo < m->nlive && m->live[ten_lo].kind != VT_MEM_TENSOR)
        ten_lo++;
    while (ten_lo + ten_n < m->nlive && m->live[ten_lo + ten_n].kind == VT_MEM_TENSOR)
        ten_n++;
    if (ten_n && !(m->tens = malloc(ten_n * sizeof(*m->tens)))) {
        m->err = VT_ERR_NOMEM;
        return;
    }
    /* by device: the blocks live[] of one device are not contiguous in
     * the sort (by kind, address); take each device in turn */
    for (int d = 0; d < MV_MAX_DEVS; d++) {
        uint64_t key = ((uint64_t)proc << 32 | (uint32_t)d) + 1;
        uint64_t *v = vt_map_get(&m->devmap, key);
        if (!v)
            continue;
        int sd = (int)*v - 1;
        size_t k = 0;
        while (k < m->nlive) {
            const mv_block *b = &m->live[k];
            const vt_unit *u = &m->j->live->procs[proc]->units[b->unit];
            if (u->device != (uint32_t)d || b->kind == VT_MEM_PINNED_HOST || b->kind == VT_MEM_HOST_REGISTERED) {
                k++;
                continue;
            }
            if (b->segment && ten_n) { /* a caching-allocator segment, with the tensors inside it */
                size_t lo = ten_lo, hi = ten_lo + ten_n;
                while (lo < hi) { /* the first tensor at or after the segment's start */
                    size_t mid = (lo + hi) / 2;
                    if (m->live[mid].addr < b->addr)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                size_t e = lo;
                while (e < ten_lo + ten_n && m->live[e].addr < b->addr + b->size)
                    e++;
                size_t w = 0; /* this device's only */
                for (size_t x = lo; x < e; x++)
                    if (m->j->live->procs[proc]->units[m->live[x].unit].device == (uint32_t)d) {
                        m->tens[w++] = m->live[x];
                        m->live[x].placed = 1;
                    }
                mv_segment_tensors(m, p, proc, sd, b, m->tens, w);
                k++;
                continue;
            }
            if (b->placed) { /* inside its segment, above (segments sort first) */
                k++;
                continue;
            }
            if (b->segment) { /* a caching-allocator segment: as recorded */
                mv_segment(m, p, proc, sd, b, 1);
                k++;
                continue;
            }
            size_t e = k + 1;
            while (e < m->nlive && !m->live[e].segment && !m->live[e].placed && m->live[e].kind == b->kind &&
                   m->j->live->procs[proc]->units[m->live[e].unit].device == (uint32_t)d &&
                   m->live[e].addr >= m->live[e - 1].addr + m->live[e - 1].size &&
                   m->live[e].addr - (m->live[e - 1].addr + m->live[e - 1].size) <= MV_GAP)
                e++;
            mv_segment(m, p, proc, sd, b, e - k);
            k = e;
        }
    }
    free(m->tens);
    m->tens = NULL;
}

static int mv_on_event(void *ctx, const vt_replay_event *re)
{
    mv *m = ctx;
    if (m->err)
        return m->err;
    const unsigned proc = re->proc;
    const vt_proc *p = m->j->model->procs[proc];
    const vt_proc *lp = m->j->live->procs[proc];
    const vt_event *ev = re->ev;
    if (proc != m->live_proc) { /* a new process: the previous one's view, if never reached */
        mv_snapshot(m, m->live_proc);
        m->live_proc = proc;
        m->snapped = 0;
        m->nlive = 0;
        vt_map_free(&m->live_map);
    }
    const uint64_t t = ev->time_ns;
    int inw = vt_xjob_in_window(m->j, p, t);
    for (unsigned k = 0; k < re->nblocks; k++) {
        const vt_replay_block *b = &re->blocks[k];
        if (b->api == VT_API_VMM)
            continue; /* physical handles: their mappings are the segments */
        const vt_unit *u = b->unit < lp->nunits ? &lp->units[b->unit] : NULL;
        int segment = u && u->segment;
        /* the blocks live at the view by their times (module globals come
         * late, from CUPTI's activity records, with earlier times): in the
         * set when allocated at or before the view, out when freed then */
        const uint64_t view = p->view_t ? p->view_t : UINT64_MAX;
        if (b->op == VT_BLOCK_BEGIN) {
            mv_block mb = {b->address, b->size, b->t_alloc, b->stack, b->unit, b->kind, b->api, (uint8_t)segment, 0};
            if (b->t_alloc <= view)
                mv_live_add(m, &mb);
            if (inw)
                mv_entry(m, proc, p, b->device, segment ? "segment_alloc" : "alloc", b->address, b->size, b->t,
                         b->stack, -1);
        } else {
            if (b->t <= view)
                mv_live_del(m, b->address, b->api);
            if (!inw)
                continue;
            if (segment) {
                mv_entry(m, proc, p, b->device, "segment_free", b->address, b->size, b->t, b->stack, -1);
            } else {
                mv_entry(m, proc, p, b->device, "free_requested", b->address, b->size, b->t, b->stack, -1);
                mv_entry(m, proc, p, b->device, "free_completed", b->address, b->size, b->t, b->stack, -1);
            }
        }
    }
    if (!inw)
        return m->err;
    switch (ev->type) {
    case VT_EV_MEMORY_USAGE:
        if (ev->u.memory_usage.device < MV_MAX_DEVS)
            m->drv_free[ev->u.memory_usage.device] = ev->u.memory_usage.free + 1;
        break;
    case VT_EV_ALLOC_FAILED: {
        const vt_ev_alloc_failed *e = &ev->u.alloc_failed;
        int64_t fr = e->device < MV_MAX_DEVS && m->drv_free[e->device] ? (int64_t)m->drv_free[e->device] - 1 : 0;
        mv_entry(m, proc, p, e->device, "oom", 0, e->size, t, e->site.stack, fr);
        break;
    }
    case VT_EV_VMM_MAP:
    case VT_EV_VMM_UNMAP: {
        /* the device of a mapping: its physical allocation's */
        uint32_t dev = 0;
        if (ev->type == VT_EV_VMM_MAP) {
            uint64_t *h = vt_map_get(&lp->vmm_handles, ev->u.vmm_map.handle + 1);
            if (h && lp->vmms[*h - 1].unit < lp->nunits)
                dev = lp->units[lp->vmms[*h - 1].unit].device;
            if (vt_map_put(&m->map_dev, ev->u.vmm_map.address + 1, (uint64_t)dev + 1))
                m->err = VT_ERR_NOMEM;
        } else {
            uint64_t d;
            if (vt_map_del(&m->map_dev, ev->u.vmm_range.address + 1, &d))
                dev = (uint32_t)(d - 1);
        }
        mv_entry(m, proc, p, dev, ev->type == VT_EV_VMM_MAP ? "segment_map" : "segment_unmap",
                 ev->type == VT_EV_VMM_MAP ? ev->u.vmm_map.address : ev->u.vmm_range.address,
                 ev->type == VT_EV_VMM_MAP ? ev->u.vmm_map.size : ev->u.vmm_range.size, t,
                 ev->type == VT_EV_VMM_MAP ? 0 : ev->u.vmm_range.site.stack, -1);
        break;
    }
    default:
        break;
    }
    return m->err;
}

static int mv_copy(FILE *from, FILE *to)
{
    char buf[1 << 16];
    size_t n;
    if (fflush(from) || fseek(from, 0, SEEK_SET))
        return VT_ERR_IO;
    while ((n = fread(buf, 1, sizeof(buf), from)) > 0)
        if (fwrite(buf, 1, n, to) != n)
            return VT_ERR_IO;
    return ferror(from) ? VT_ERR_IO : 0;
}

int vt_export_memviz(vt_xjob *j, char *err, size_t errlen)
{
    mv *m = calloc(1, sizeof(*m));
    if (!m)
        return VT_ERR_NOMEM;
    m->j = j;
    const char *env = getenv("TMPDIR");
    m->tmpdir_env = env && *env;
    m->tmpdir = m->tmpdir_env ? env : "/tmp";
    m->seg.f = spool_open(m);
    int rc = m->seg.f ? 0 : VT_ERR_IO;
    if (!rc) {
        pk_list_begin(&m->seglist, m->seg.f);
        rc = vt_xjob_replay(j, mv_on_event, m);
    }
    if (!rc && m->err)
        rc = m->err;
    if (!rc) {
        mv_snapshot(m, m->live_proc);
        pk_list_end(&m->seglist);
    }
    if (!rc) {
        FILE *o = j->out;
        fputc(0x80, o); /* PROTO 4 */
        fputc(4, o);
        fputc('}', o);
        fputc('(', o);
        pk_str(o, "device_traces");
        fputc(']', o);
        if (m->ndev) {
            fputc('(', o);
            for (int d = 0; d < m->ndev && !rc; d++) {
                pk_list_end(&m->dev[d].list);
                rc = mv_copy(m->dev[d].f, o);
            }
            fputc('e', o);
        }
        pk_str(o, "segments");
        if (!rc)
            rc = mv_copy(m->seg.f, o);
        fputc('u', o);
        fputc('.', o); /* STOP */
        if (!rc && (fflush(o) || ferror(o)))
            rc = VT_ERR_IO;
    }
    for (int d = 0; d < m->ndev; d++) {
        if (m->dev[d].f)
            fclose(m->dev[d].f);
        vt_map_free(&m->dev[d].memo);
    }
    if (m->seg.f)
        fclose(m->seg.f);
    vt_map_free(&m->seg.memo);
    vt_map_free(&m->devmap);
    vt_map_free(&m->live_map);
    vt_map_free(&m->map_dev);
    free(m->live);
    vt_analysis_free(j->live);
    j->live = NULL;
    if (m->spool_errno)
        snprintf(err, errlen, "memory-viz: cannot create a temporary file in %s%s: %s", m->tmpdir,
                 m->tmpdir_env ? " ($TMPDIR)" : "", strerror(m->spool_errno));
    free(m);
    return rc;
}
