/* vt_writer_intern.c - definitions written once, referred to by id:
 * strings, threads, modules, code keys, frames, stacks, launches. */
#include "vt_writer_int.h"
#include "vt_grow.h"
/* ------------------------------------------------------------ interning
 *
 * Every intern function writes the definition first and only then takes
 * the id and registers the key: if writing fails (or, in a signal handler,
 * needs memory) no id is consumed and nothing refers to an undefined id;
 * if only the registration fails, the next use defines the key again under
 * a new id (harmless). */

static int vt_in_str(vt_writer *w, const char *s, size_t len, uint32_t *id)
{
    *id = 0;
    if (!s || !len)
        return 0;
    uint64_t h = vt_intern_hash(s, len, 1);
    uint32_t v = vt_imap_find(&w->strings, s, (uint32_t)len, h);
    if (v) {
        *id = v;
        return 0;
    }
    uint32_t nid = w->n_string + 1;
    Vramtrace__String m = VRAMTRACE__STRING__INIT;
    m.id = nid;
    /* protobuf-c packs strings with strlen(): embedded NULs cannot occur,
     * producers pass C strings */
    m.value = (char *)s;
    VT_REC(r, string, STRING, m);
    int rc = vt_enc_put(w, &r);
    if (rc)
        return rc;
    w->n_string = nid;
    vt_imap_insert(&w->strings, s, (uint32_t)len, h, nid, !w->no_alloc);
    *id = nid;
    return 0;
}

int vt_in_cstr(vt_writer *w, const char *s, uint32_t *id)
{
    return vt_in_str(w, s, s ? strlen(s) : 0, id);
}

static size_t vt_utoa(char *buf, uint32_t v)
{
    char tmp[16];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    return n;
}

/* Async-signal-safe read of /proc/self/task/TID/comm. */
static void vt_thread_comm(uint32_t tid, char *name, size_t cap)
{
    char path[64] = "/proc/self/task/";
    size_t n = strlen(path);
    n += vt_utoa(path + n, tid);
    memcpy(path + n, "/comm", 6);
    name[0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t k;
    do {
        k = read(fd, name, cap - 1);
    } while (k < 0 && errno == EINTR);
    close(fd);
    if (k <= 0)
        return;
    if (name[k - 1] == '\n')
        k--;
    name[k] = 0;
}

int vt_in_thread(vt_writer *w, uint32_t tid, const char *name, uint32_t *id)
{
    uint64_t v = vt_umap_find(&w->threads, tid);
    if (v && !name) {
        *id = (uint32_t)v;
        return 0;
    }
    uint32_t tidn = v ? (uint32_t)v : w->n_thread + 1;
    char comm[64];
    if (!name) {
        vt_thread_comm(tid, comm, sizeof(comm));
        name = comm;
    }
    Vramtrace__Thread m = VRAMTRACE__THREAD__INIT;
    m.id = tidn;
    m.tid = tid;
    m.name = (char *)name;
    VT_REC(r, thread, THREAD, m);
    int rc = vt_enc_put(w, &r);
    if (rc)
        return rc;
    if (!v) {
        w->n_thread = tidn;
        vt_umap_put(&w->threads, tid, tidn, !w->no_alloc);
    }
    *id = tidn;
    return 0;
}

static uint32_t vt_mod_lookup(const vt_writer *w, uint64_t ip)
{
    size_t lo = 0, hi = w->n_mods;
    while (lo < hi) { /* first range with start > ip */
        size_t mid = (lo + hi) / 2;
        if (w->mods[mid].start <= ip)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo && ip < w->mods[lo - 1].end)
        return w->mods[lo - 1].id;
    return 0;
}

int vt_in_module(vt_writer *w, const vt_ev_module *m)
{
    if (w->n_mods >= w->cap_mods && (w->no_alloc || VT_GROW(w->mods, w->n_mods, w->cap_mods, 64)))
        return VT_ERR_NOMEM;
    uint32_t id = w->n_module + 1;
    Vramtrace__Module pm = VRAMTRACE__MODULE__INIT;
    pm.id = id;
    pm.path = (char *)(m->path ? m->path : "");
    pm.load_bias = m->load_bias;
    pm.start = m->start;
    pm.end = m->end;
    pm.build_id.data = (uint8_t *)m->build_id;
    pm.build_id.len = m->build_id ? m->build_id_len : 0;
    VT_REC(r, module, MODULE, pm);
    int rc = vt_enc_put(w, &r);
    if (rc)
        return rc;
    w->n_module = id;
    vt_imap_clear(&w->rawstacks, !w->no_alloc); /* native frames may map to it now */
    w->raw_gen++;
    /* a new mapping replaces the ranges it overlaps (dlclose + dlopen) */
    size_t k = 0;
    for (size_t i = 0; i < w->n_mods; i++)
        if (!(w->mods[i].end > m->start && w->mods[i].start < m->end))
            w->mods[k++] = w->mods[i];
    w->n_mods = k;
    if (m->end > m->start) {
        size_t pos = 0;
        while (pos < w->n_mods && w->mods[pos].start < m->start)
            pos++;
        memmove(&w->mods[pos + 1], &w->mods[pos], (w->n_mods - pos) * sizeof(*w->mods));
        w->mods[pos] = (vt_modrange){m->start, m->end, id};
        w->n_mods++;
    }
    return 0;
}

int vt_in_code(vt_writer *w, const vt_code_payload *c)
{
    uint32_t file, func;
    int rc = vt_in_cstr(w, c->file, &file);
    if (!rc)
        rc = vt_in_cstr(w, c->function, &func);
    if (rc)
        return rc;
    uint64_t v = (1ull << 63) | ((uint64_t)(file & 0x7fffffffu) << 32) | func;
    uint64_t old = vt_umap_find(&w->codes, c->key);
    if (old == v)
        return 0;
    /* cached raw stacks may now resolve to other frames */
    if (old || w->raw_undef) {
        vt_imap_clear(&w->rawstacks, !w->no_alloc);
        w->raw_gen++;
        w->raw_undef = 0;
    }
    return vt_umap_put(&w->codes, c->key, v, !w->no_alloc);
}

static int vt_in_frame(vt_writer *w, const vt_frame *f, uint32_t *id)
{
    uint32_t key[4];
    if (f->kind == VT_FRAME_PYTHON) {
        uint64_t v = vt_umap_find(&w->codes, f->pc);
        if (!v)
            w->raw_undef = 1;
        key[0] = 1;
        key[1] = (uint32_t)(v >> 32) & 0x7fffffffu; /* file */
        key[2] = (uint32_t)v;                       /* function */
        key[3] = f->line;
    } else {
        key[0] = 0;
        key[1] = (uint32_t)f->pc;
        key[2] = (uint32_t)(f->pc >> 32);
        key[3] = vt_mod_lookup(w, f->pc);
    }
    uint64_t h = vt_intern_hash(key, sizeof(key), 2);
    uint32_t v = vt_imap_find(&w->frames, key, sizeof(key), h);
    if (v) {
        *id = v;
        return 0;
    }
    uint32_t nid = w->n_frame + 1;
    Vramtrace__Frame m = VRAMTRACE__FRAME__INIT;
    m.id = nid;
    if (key[0]) {
        m.kind = VRAMTRACE__FRAME_KIND__FRAME_PYTHON;
        m.file = key[1];
        m.function = key[2];
        m.line = key[3];
    } else {
        m.ip = f->pc;
        m.module = key[3];
    }
    VT_REC(r, frame, FRAME, m);
    int rc = vt_enc_put(w, &r);
    if (rc)
        return rc;
    w->n_frame = nid;
    vt_imap_insert(&w->frames, key, sizeof(key), h, nid, !w->no_alloc);
    *id = nid;
    return 0;
}

/* Intern the `len` outermost frames of ids[0..n) (innermost first) as a
 * chain: the outer part rounded down to a multiple of VT_STACK_CHUNK is the
 * parent, so stacks that share outer frames share Stack records. */
static int vt_in_suffix(vt_writer *w, const uint32_t *ids, uint32_t n, uint32_t len, uint32_t *id)
{
    const uint32_t *key = ids + (n - len);
    uint64_t h = vt_intern_hash(key, (size_t)len * 4, 3);
    uint32_t v = vt_imap_find(&w->stacks, key, len * 4, h);
    if (v) {
        *id = v;
        return 0;
    }
    uint32_t p = ((len - 1) / VT_STACK_CHUNK) * VT_STACK_CHUNK;
    uint32_t parent = 0;
    if (p) {
        int rc = vt_in_suffix(w, ids, n, p, &parent);
        if (rc)
            return rc;
    }
    uint32_t nid = w->n_stack + 1;
    Vramtrace__Stack m = VRAMTRACE__STACK__INIT;
    m.id = nid;
    m.n_frame = len - p;
    m.frame = (uint32_t *)key;
    m.parent = parent;
    VT_REC(r, stack, STACK, m);
    int rc = vt_enc_put(w, &r);
    if (rc)
        return rc;
    w->n_stack = nid;
    vt_imap_insert(&w->stacks, key, len * 4, h, nid, !w->no_alloc);
    *id = nid;
    return 0;
}

/* The stack of `nwords` packed frame words (see vt_frame_short). */
static int vt_in_words(vt_writer *w, const uint64_t *wd, uint32_t nwords, uint32_t *stack)
{
    int rc;
    /* fast path: these exact frames were seen before */
    uint32_t klen = nwords * 8;
    uint64_t h = vt_intern_hash(wd, klen, 5);
    uint32_t v = vt_imap_find(&w->rawstacks, wd, klen, h);
    if (v) {
        *stack = v;
        return 0;
    }
    uint32_t n = vt_frames_unpack(wd, nwords, w->ftmp);
    if (!n)
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        rc = vt_in_frame(w, &w->ftmp[i], &w->fids[i]);
        if (rc)
            return rc;
    }
    rc = vt_in_suffix(w, w->fids, n, n, stack);
    if (!rc)
        vt_imap_insert(&w->rawstacks, wd, klen, h, *stack, !w->no_alloc); /* a cache: may fail */
    return rc;
}

/* `s->frames` points at `nwords` packed words. */
int vt_in_site(vt_writer *w, const vt_site *s, uint32_t nwords, int want_stack, uint32_t *thread,
                      uint32_t *stack)
{
    int rc = vt_in_thread(w, s->tid, NULL, thread);
    if (rc)
        return rc;
    *stack = 0;
    if (!want_stack || !s->nframes || !s->frames)
        return 0;
    return vt_in_words(w, (const uint64_t *)s->frames, nwords, stack);
}

/* A site sent as a stack reference (e->sref): a definition (frames
 * follow; remember the stack and a copy of the words) or a reference (the
 * stack remembered, interned again from the copy if the raw-stack cache
 * was cleared since). */
int vt_in_site_ref(vt_writer *w, vt_ring *r, const vt_site *s, const vt_ent *e, uint32_t *thread,
                          uint32_t *stack)
{
    unsigned k = (e->sref & ~VT_SREF_DEFINE) - 1u;
    if (k >= VT_SREF_SLOTS)
        return vt_in_site(w, s, e->nwords, 1, thread, stack);
    vt_csref *c = &vt_ring_csref(r)[k];
    if (!r->cwords && !w->no_alloc)
        r->cwords = calloc(VT_SREF_SLOTS, sizeof(vt_cwords));
    vt_cwords *cw = r->cwords ? &r->cwords[k] : NULL;
    if (e->sref & VT_SREF_DEFINE) {
        int rc = vt_in_site(w, s, e->nwords, 1, thread, stack);
        c->stack = rc ? 0 : *stack;
        c->gen = w->raw_gen;
        if (!cw)
            return rc;
        cw->nwords = 0;
        if (e->nwords > cw->cap && !w->no_alloc) {
            uint64_t *nw = realloc(cw->words, (size_t)e->nwords * 8);
            if (nw) {
                cw->words = nw;
                cw->cap = e->nwords;
            }
        }
        if (e->nwords <= cw->cap && s->frames) {
            memcpy(cw->words, s->frames, (size_t)e->nwords * 8);
            cw->nwords = e->nwords;
        }
        return rc;
    }
    int rc = vt_in_thread(w, s->tid, NULL, thread);
    *stack = 0;
    if (rc)
        return rc;
    if ((c->stack && c->gen == w->raw_gen) || !cw || !cw->nwords) {
        *stack = c->stack; /* without a copy: the stack found before */
        return 0;
    }
    rc = vt_in_words(w, cw->words, cw->nwords, stack);
    if (!rc) {
        c->stack = *stack;
        c->gen = w->raw_gen;
    }
    return rc;
}

int vt_in_launch(vt_writer *w, const vt_ev_kernel *k, uint32_t *id)
{
    uint32_t name;
    int rc = vt_in_cstr(w, k->name, &name);
    if (rc)
        return rc;
    uint32_t key[11] = {name, k->device, k->stream, k->grid[0], k->grid[1], k->grid[2],
                        k->block[0], k->block[1], k->block[2], k->shared_memory, k->graph != 0};
    uint64_t h = vt_intern_hash(key, sizeof(key), 4);
    uint32_t v = vt_imap_find(&w->launches, key, sizeof(key), h);
    if (v) {
        *id = v;
        return 0;
    }
    uint32_t nid = w->n_launch + 1;
    Vramtrace__Launch m = VRAMTRACE__LAUNCH__INIT;
    m.id = nid;
    m.name = name;
    m.device = k->device;
    m.stream = k->stream;
    m.grid_x = k->grid[0];
    m.grid_y = k->grid[1];
    m.grid_z = k->grid[2];
    m.block_x = k->block[0];
    m.block_y = k->block[1];
    m.block_z = k->block[2];
    m.shared_memory = k->shared_memory;
    m.graph = k->graph != 0;
    VT_REC(r, launch, LAUNCH, m);
    rc = vt_enc_put(w, &r);
    if (rc)
        return rc;
    w->n_launch = nid;
    vt_imap_insert(&w->launches, key, sizeof(key), h, nid, !w->no_alloc);
    *id = nid;
    return 0;
}
