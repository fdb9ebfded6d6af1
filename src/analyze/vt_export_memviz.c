/* vt_export_memviz.c - PyTorch's memory snapshot (the shape of
 * torch.cuda.memory._snapshot(), read by torch.cuda._memory_viz and
 * pytorch.org/memory_viz): a pickle (protocol 4) of
 *   {"device_traces": [[entry, ...] per device], "segments": [segment, ...]}
 * Entries from the replay as it happens: segment_alloc / segment_free for
 * every device block that is not a caching-allocator tensor (a driver
 * block, a caching-allocator segment), alloc / free_requested /
 * free_completed for every tensor and for every segment of one block (a
 * driver block; a caching-allocator segment of a trace without tensor
 * events), segment_map / segment_unmap for VMM mappings (in a process
 * without tensor events each mapping also the alloc / free of its one
 * block, or the Active Memory Timeline leaves it out), oom only for
 * allocations that failed with out-of-memory (as torch records them);
 * frames innermost first (Python frames where recorded, then native
 * ones).  Segments: the state after each process's last entry (the
 * trace's end, or --end's), as torch's snapshot is the state when it is
 * taken: a caching-allocator segment holds the tensors live inside it
 * and a run of adjacent live VMM mappings is one (expandable) segment
 * holding its tensors (without tensor events: its mappings as blocks),
 * gaps as inactive blocks so that the blocks tile
 * each segment; every other driver block is a segment of one block.  No
 * grouping by distance: the viewer needs every block inside a segment
 * the trace also allocates.  Each (process, device) of a job is a device
 * of the snapshot, in order of appearance (said on stderr), so processes
 * never share addresses.
 *
 * Each device's entries are written to a temporary file as they come, then
 * the pickle is assembled: memory stays O(live blocks + call sites).
 * Frame lists are pickled once per section and referred to by memo index
 * after that.  Touches: the output FILE, temporary files in $TMPDIR
 * (/tmp when unset), deleted from the start. */
#define _GNU_SOURCE /* O_TMPFILE, mkostemp */
#include "vt_escape.h"
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

/* a str of the pickle: valid UTF-8 always (vt_utf8_sanitize), or
 * pickle.load raises UnicodeDecodeError on the whole file */
static void pk_str(FILE *f, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    char small[512], *tmp = NULL;
    if (n && vt_utf8_needs_sanitize(s)) {
        size_t cap = 3 * n + 1;
        char *b = cap <= sizeof(small) ? small : (tmp = malloc(cap));
        if (b) {
            n = vt_utf8_sanitize(s, b, cap);
            s = b;
        } else {
            s = "?";
            n = 1;
        }
    }
    if (n < 256) {
        fputc(0x8c, f); /* SHORT_BINUNICODE */
        fputc((int)n, f);
    } else {
        fputc('X', f); /* BINUNICODE */
        pk_u32(f, (uint32_t)n);
    }
    if (n)
        fwrite(s, 1, n, f);
    free(tmp);
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

/* what a live block is to the snapshot */
enum { MV_RAW, MV_SEGMENT, MV_TENSOR, MV_MAPPING };

typedef struct {
    uint64_t addr, size;
    uint32_t stack, device;
    uint8_t kind; /* vt_memkind */
    uint8_t role; /* MV_*: a driver block (its own segment), a caching-allocator
                   * segment, a tensor inside one of those or of a mapping, a
                   * VMM mapping (expandable segments) */
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
    if (vt_budget_take(m->j->model->budget, 32)) /* the memo's map slot, charged to the export's budget */
        m->err = VT_ERR_LIMIT;
    else if (vt_map_put(&s->memo, key, (uint64_t)idx + 1))
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

/* ---- the set live at the end and its segments ---- */

static void mv_live_del(mv *m, uint64_t addr, unsigned role);

/* the live map's key: tensors and mappings apart from the segments and
 * blocks at the same addresses */
static uint64_t mv_key(uint64_t addr, unsigned role)
{
    unsigned ns = role == MV_TENSOR ? 1 : role == MV_MAPPING ? 2 : 0;
    return (addr << 2 | ns) + 1;
}

static void mv_live_add(mv *m, const mv_block *b)
{
    mv_live_del(m, b->addr, b->role); /* a block over one whose free was not seen */
    if (VT_GROW(m->live, m->nlive, m->caplive, 1024) ||
        vt_map_put(&m->live_map, mv_key(b->addr, b->role), m->nlive + 1)) {
        m->err = VT_ERR_NOMEM;
        return;
    }
    m->live[m->nlive++] = *b;
}

static void mv_live_del(mv *m, uint64_t addr, unsigned role)
{
    uint64_t idx;
    if (!vt_map_del(&m->live_map, mv_key(addr, role), &idx))
        return;
    size_t i = idx - 1, last = m->nlive - 1;
    if (i != last) {
        m->live[i] = m->live[last];
        uint64_t *v = vt_map_get(&m->live_map, mv_key(m->live[i].addr, m->live[i].role));
        if (v)
            *v = i + 1;
    }
    m->nlive--;
}

/* by device, tensors after the rest, then by address */
static int blk_cmp(const void *a, const void *b)
{
    const mv_block *x = a, *y = b;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    if ((x->role == MV_TENSOR) != (y->role == MV_TENSOR))
        return x->role == MV_TENSOR ? 1 : -1;
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
                             uint32_t stack, int expandable, const mv_block *b, size_t n)
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
    pk_key_str(f, "segment_type", end - start > (1u << 20) ? "large" : "small");
    pk_str(f, "segment_pool_id");
    fputc('(', f); /* the tuple (0, 0) */
    pk_int(f, 0);
    pk_int(f, 0);
    fputc('t', f); /* TUPLE */
    pk_key_int(f, "is_expandable", expandable);
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

/* The segments of process proc from its blocks live at the end of its
 * entries (torch's snapshot: the segments when it is taken, the trace up
 * to then).  A caching-allocator segment holds the tensors inside it; a
 * run of adjacent VMM mappings is one expandable segment with the tensors
 * inside it, or, without tensor events, with each mapping as a block;
 * every other driver block is a segment of one block, as the
 * trace's segment_alloc before its alloc says. */
static void mv_snapshot(mv *m, unsigned proc)
{
    if (m->snapped)
        return;
    m->snapped = 1;
    const vt_proc *p = m->j->model->procs[proc];
    if (m->nlive)
        qsort(m->live, m->nlive, sizeof(*m->live), blk_cmp);
    size_t k = 0;
    while (k < m->nlive) {
        /* one device: its containers [k, t0), its tensors [t0, e) */
        const uint32_t dev = m->live[k].device;
        size_t t0 = k, e;
        while (t0 < m->nlive && m->live[t0].device == dev && m->live[t0].role != MV_TENSOR)
            t0++;
        e = t0;
        while (e < m->nlive && m->live[e].device == dev)
            e++;
        mv_section *s = mv_dev(m, proc, dev);
        if (!s) {
            k = e;
            continue;
        }
        const int sd = (int)(s - m->dev);
        size_t ti = t0;
        while (k < t0) {
            const mv_block *b = &m->live[k];
            uint64_t end = b->addr + b->size;
            size_t nk = k + 1;
            if (b->role == MV_MAPPING) /* adjacent mappings: one segment */
                while (nk < t0 && m->live[nk].role == MV_MAPPING && m->live[nk].addr == end)
                    end += m->live[nk++].size;
            while (ti < e && m->live[ti].addr < b->addr) /* tensors of no segment: not drawable */
                ti++;
            size_t te = ti;
            while (te < e && m->live[te].addr < end)
                te++;
            if (b->role == MV_RAW || (b->role == MV_SEGMENT && !p->tensor_units)) /* its own block */
                mv_segment_write(m, p, proc, sd, b->addr, end, b->stack, 0, b, 1);
            else if (b->role == MV_MAPPING && !p->tensor_units) /* each mapping its own block */
                mv_segment_write(m, p, proc, sd, b->addr, end, b->stack, 1, b, nk - k);
            else
                mv_segment_write(m, p, proc, sd, b->addr, end, b->stack, b->role == MV_MAPPING, &m->live[ti],
                                 te - ti);
            ti = te;
            k = nk;
        }
        k = e;
    }
}

/* t is before the --start window: the entries leave it out, the live
 * set has it (blocks live at the window's start are in the segments
 * without an alloc, as torch's are from before _record_memory_history) */
static int mv_before_window(const mv *m, const vt_proc *p, uint64_t t)
{
    return m->j->cfg->have_start && t < p->t0 + m->j->cfg->start_ns;
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
    if (proc != m->live_proc) { /* a new process: the previous one's segments */
        mv_snapshot(m, m->live_proc);
        m->live_proc = proc;
        m->snapped = 0;
        m->nlive = 0;
        vt_map_free(&m->live_map);
    }
    const uint64_t t = ev->time_ns;
    const int inw = vt_xjob_in_window(m->j, p, t);
    /* the segments are the state at the last entry: what the entries do,
     * the live set does, and before the window too */
    if (!inw && !mv_before_window(m, p, t))
        return m->err;
    for (unsigned k = 0; k < re->nblocks; k++) {
        const vt_replay_block *b = &re->blocks[k];
        /* physical handles: their mappings are the segments.  A block's
         * api is its call site's first allocation's: a site that also
         * called cudaMalloc makes a handle look like a driver block at
         * the handle's value, so the VMM events that note them say it */
        if (b->api == VT_API_VMM || ev->type == VT_EV_VMM_CREATE || ev->type == VT_EV_VMM_RELEASE ||
            ev->type == VT_EV_VMM_UNMAP)
            continue;
        if (b->kind == VT_MEM_PINNED_HOST || b->kind == VT_MEM_HOST_REGISTERED)
            continue; /* host memory: not the device's */
        const vt_unit *u = b->unit < lp->nunits ? &lp->units[b->unit] : NULL;
        /* a caching-allocator segment; a tensor inside one (or inside a
         * mapping); any other block is a segment of its own: the viewer
         * draws a block only inside a segment the trace also carries, and
         * a segment-level trace (no tensor events) says when each segment
         * was filled, not that it was full from the start */
        const int role = u && u->segment ? MV_SEGMENT : b->api == VT_API_CACHING_ALLOCATOR ? MV_TENSOR : MV_RAW;
        const int own_block = role == MV_RAW || (role == MV_SEGMENT && !p->tensor_units);
        if (b->op == VT_BLOCK_BEGIN) {
            mv_block mb = {b->address, b->size, b->stack, b->device, b->kind, (uint8_t)role};
            mv_live_add(m, &mb);
            if (!inw)
                continue;
            if (role != MV_TENSOR)
                mv_entry(m, proc, p, b->device, "segment_alloc", b->address, b->size, b->t, b->stack, -1);
            if (role == MV_TENSOR || own_block)
                mv_entry(m, proc, p, b->device, "alloc", b->address, b->size, b->t, b->stack, -1);
        } else {
            mv_live_del(m, b->address, role);
            if (!inw)
                continue;
            if (role == MV_TENSOR || own_block) {
                mv_entry(m, proc, p, b->device, "free_requested", b->address, b->size, b->t, b->stack, -1);
                mv_entry(m, proc, p, b->device, "free_completed", b->address, b->size, b->t, b->stack, -1);
            }
            if (role != MV_TENSOR)
                mv_entry(m, proc, p, b->device, "segment_free", b->address, b->size, b->t, b->stack, -1);
        }
    }
    switch (ev->type) {
    case VT_EV_MEMORY_USAGE:
        if (ev->u.memory_usage.device < MV_MAX_DEVS)
            m->drv_free[ev->u.memory_usage.device] = ev->u.memory_usage.free + 1;
        break;
    case VT_EV_ALLOC_FAILED: {
        /* torch records only running out of memory ('oom'); other failures
         * (CUDA_ERROR_NOT_PERMITTED, INVALID_CONTEXT) leave no entry */
        const vt_ev_alloc_failed *e = &ev->u.alloc_failed;
        if (!inw || e->error != 2) /* CUDA_ERROR_OUT_OF_MEMORY == cudaErrorMemoryAllocation */
            break;
        int64_t fr = e->device < MV_MAX_DEVS && m->drv_free[e->device] ? (int64_t)m->drv_free[e->device] - 1 : 0;
        mv_entry(m, proc, p, e->device, "oom", 0, e->size, t, e->site.stack, fr);
        break;
    }
    case VT_EV_VMM_MAP:
    case VT_EV_VMM_UNMAP: {
        /* the device of a mapping: its physical allocation's */
        uint32_t dev = 0;
        const int map = ev->type == VT_EV_VMM_MAP;
        const uint64_t addr = map ? ev->u.vmm_map.address : ev->u.vmm_range.address;
        const uint64_t size = map ? ev->u.vmm_map.size : ev->u.vmm_range.size;
        const uint32_t stack = map ? ev->u.vmm_map.site.stack : ev->u.vmm_range.site.stack;
        if (map) {
            uint64_t *h = vt_map_get(&lp->vmm_handles, ev->u.vmm_map.handle + 1);
            if (h && lp->vmms[*h - 1].unit < lp->nunits)
                dev = lp->units[lp->vmms[*h - 1].unit].device;
            if (vt_map_put(&m->map_dev, addr + 1, (uint64_t)dev + 1))
                m->err = VT_ERR_NOMEM;
            mv_block mb = {addr, size, stack, dev, VT_MEM_DEVICE, MV_MAPPING};
            mv_live_add(m, &mb);
        } else {
            uint64_t d;
            if (vt_map_del(&m->map_dev, addr + 1, &d))
                dev = (uint32_t)(d - 1);
            mv_live_del(m, addr, MV_MAPPING);
        }
        if (!inw)
            break;
        /* a segment-level trace (no tensor events): each mapping is also
         * the block inside it, alloc after its segment_map, free before
         * its segment_unmap, as a driver block's; else the Active Memory
         * Timeline has none of the mapped memory */
        if (!map && !p->tensor_units) {
            mv_entry(m, proc, p, dev, "free_requested", addr, size, t, stack, -1);
            mv_entry(m, proc, p, dev, "free_completed", addr, size, t, stack, -1);
        }
        mv_entry(m, proc, p, dev, map ? "segment_map" : "segment_unmap", addr, size, t, stack, -1);
        if (map && !p->tensor_units)
            mv_entry(m, proc, p, dev, "alloc", addr, size, t, stack, -1);
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
