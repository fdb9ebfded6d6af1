/* vt_writer_produce.c - the producer side of the writer: per-thread state,
 * rings, fork, and vt_writer_emit() (no lock, no malloc, no syscall). */
#include "vt_writer_int.h"
/* --------------------------------------------------------------- globals */

_Atomic unsigned g_fork_gen;
_Atomic uint64_t g_serial;
_Atomic(vt_writer *) g_reg[VT_MAX_WRITERS];
pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;
static int g_key_ok;

typedef struct {
    uint64_t serial;
    vt_ring *ring;
} vt_tls_slot;
typedef struct {
    uint32_t tid;
    int registered;
    vt_tls_slot s[VT_TLS_SLOTS];
} vt_tls;
static __thread vt_tls t_tls;

static void vt_ring_release(vt_ring *r);

static void vt_tls_dtor(void *p)
{
    vt_tls *t = p;
    for (int i = 0; i < VT_TLS_SLOTS; i++) {
        if (t->s[i].ring)
            vt_ring_release(t->s[i].ring);
        t->s[i].ring = NULL;
        t->s[i].serial = 0;
    }
    t->registered = 0;
}

/* In a fork()ed child no writer may touch the parent's file: bump the
 * generation (every writer compares it on entry) and close the fd copies.
 * Only async-signal-safe calls here. */
static void vt_atfork_child(void)
{
    atomic_fetch_add(&g_fork_gen, 1);
    t_tls.tid = 0;
    for (int i = 0; i < VT_MAX_WRITERS; i++) {
        vt_writer *w = atomic_load(&g_reg[i]);
        /* closed once: unregistered here, so that a later fork of this
         * child does not close whatever reuses the fd number */
        atomic_store(&g_reg[i], NULL);
        if (w) {
            atomic_store_explicit(&w->off, 1, memory_order_relaxed);
            if (w->fd >= 0)
                close(w->fd);
        }
    }
}

/* Take `w` out of the fork registry if it is still there. */
void vt_unregister(vt_writer *w)
{
    if (w->reg_slot >= 0) {
        vt_writer *exp = w;
        atomic_compare_exchange_strong(&g_reg[w->reg_slot], &exp, NULL);
        w->reg_slot = -1;
    }
}

void vt_global_init(void)
{
    g_key_ok = pthread_key_create(&g_key, vt_tls_dtor) == 0;
    pthread_atfork(NULL, NULL, vt_atfork_child);
}

uint64_t vt_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void vt_wake(vt_writer *w)
{
    atomic_fetch_add(&w->wake_seq, 1);
    syscall(SYS_futex, (uint32_t *)&w->wake_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* ------------------------------------------------------------ ring ops */

static vt_ring *vt_ring_new(uint64_t cap)
{
    void *m = mmap(NULL, VT_RING_HDR + cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    vt_ring *r = m; /* zero-filled */
    r->cap = cap;
    r->data = (unsigned char *)m + VT_RING_HDR;
    return r;
}

void vt_ring_unmap(vt_ring *r)
{
    if (r->data)
        munmap(r, VT_RING_HDR + r->cap);
    else
        munmap(r, VT_RING_HDR);
}

static void vt_ring_release(vt_ring *r)
{
    atomic_store_explicit(&r->state, 0, memory_order_release);
    if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1)
        vt_ring_unmap(r);
}

static vt_ring *vt_ring_claim(vt_writer *w)
{
    for (vt_ring *r = atomic_load_explicit(&w->rings, memory_order_acquire); r; r = r->next) {
        int exp = 0;
        if (atomic_load_explicit(&r->state, memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong_explicit(&r->state, &exp, 1, memory_order_acquire,
                                                    memory_order_relaxed)) {
            atomic_fetch_add(&r->refs, 1);
            return r;
        }
    }
    vt_ring *r = vt_ring_new(w->ring_cap);
    if (!r)
        return NULL;
    atomic_store_explicit(&r->state, 1, memory_order_relaxed);
    atomic_store_explicit(&r->refs, 2, memory_order_relaxed);
    vt_ring *head = atomic_load_explicit(&w->rings, memory_order_relaxed);
    do {
        r->next = head;
    } while (!atomic_compare_exchange_weak_explicit(&w->rings, &head, r, memory_order_release,
                                                    memory_order_relaxed));
    return r;
}

static vt_ring *vt_tls_ring_slow(vt_writer *w)
{
    for (int i = 1; i < VT_TLS_SLOTS; i++) {
        if (t_tls.s[i].serial == w->serial) {
            vt_tls_slot s = t_tls.s[i];
            memmove(&t_tls.s[1], &t_tls.s[0], (size_t)i * sizeof(s));
            t_tls.s[0] = s;
            return s.ring;
        }
    }
    if (!t_tls.registered && g_key_ok) {
        pthread_setspecific(g_key, &t_tls);
        t_tls.registered = 1;
    }
    vt_ring *r = vt_ring_claim(w);
    if (!r)
        return NULL;
    if (t_tls.s[VT_TLS_SLOTS - 1].ring)
        vt_ring_release(t_tls.s[VT_TLS_SLOTS - 1].ring);
    memmove(&t_tls.s[1], &t_tls.s[0], (VT_TLS_SLOTS - 1) * sizeof(vt_tls_slot));
    t_tls.s[0].serial = w->serial;
    t_tls.s[0].ring = r;
    return r;
}

static inline vt_ring *vt_tls_ring(vt_tls *t, vt_writer *w)
{
    if (__builtin_expect(t->s[0].serial == w->serial, 1))
        return t->s[0].ring;
    return vt_tls_ring_slow(w);
}

/* Reserve `size` contiguous bytes (size <= cap/2), writing a PAD entry when
 * the space before the end of the buffer is too short.  NULL when full. */
static inline unsigned char *vt_ring_reserve(vt_ring *r, uint64_t size, uint64_t *newhead)
{
    const uint64_t cap = r->cap;
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t off = head & (cap - 1);
    uint64_t contig = cap - off;
    uint64_t need = size <= contig ? size : contig + size;
    if (head + need - r->cached_tail > cap) {
        r->cached_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (head + need - r->cached_tail > cap)
            return NULL;
    }
    if (size > contig) {
        vt_ent *pad = (vt_ent *)(r->data + off);
        pad->size = (uint32_t)contig;
        pad->type = VT_ENT_PAD;
        head += contig;
        off = 0;
    }
    *newhead = head + size;
    return r->data + off;
}

static inline void vt_count(_Atomic uint64_t *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, memory_order_relaxed);
}

/* Frames travel packed in the ring: a native frame without line whose pc
 * has the top bit clear is one word (the pc); any other is two words:
 * (1 << 63 | kind << 32 | line), pc. */
_Static_assert(sizeof(vt_frame) == 16 && offsetof(vt_frame, kind) == offsetof(vt_frame, line) + 4,
               "vt_push reads line and kind as one word");
static inline __attribute__((unused)) int vt_frame_short(const vt_frame *f) /* the rule; vt_push inlines it */
{
    return f->kind == VT_FRAME_NATIVE && !f->line && !(f->pc >> 63);
}

/* Unpack `nwords` words into at most VT_MAX_STACK frames; returns the count. */
uint32_t vt_frames_unpack(const uint64_t *wd, uint32_t nwords, vt_frame *out)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < nwords && n < VT_MAX_STACK; n++) {
        if (wd[i] >> 63) {
            out[n].kind = (uint32_t)(wd[i] >> 32) & 0x7fffffffu;
            out[n].line = (uint32_t)wd[i];
            out[n].pc = i + 1 < nwords ? wd[i + 1] : 0;
            i += 2;
        } else {
            out[n].kind = VT_FRAME_NATIVE;
            out[n].line = 0;
            out[n].pc = wd[i];
            i += 1;
        }
    }
    return n;
}

/* Publish an entry up to `newhead`; `event`: count it as emitted.
 * Backlog over a quarter of the ring: wake the writer if it sleeps.  Only
 * the producer that clears `sleeping` makes the syscall. */
static inline __attribute__((always_inline)) void vt_publish(vt_writer *w, vt_ring *r, uint64_t newhead, int event)
{
    atomic_store_explicit(&r->head, newhead, memory_order_release);
    if (event)
        vt_count(&r->emitted);
    if (__builtin_expect(newhead - r->cached_tail > r->cap / 4, 0)) {
        r->cached_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (newhead - r->cached_tail > r->cap / 4 && atomic_load_explicit(&w->sleeping, memory_order_relaxed)) {
            int one = 1;
            if (atomic_compare_exchange_strong(&w->sleeping, &one, 0))
                vt_wake(w);
        }
    }
}

/* The push of one entry.  Always inlined: vt_writer_emit() has copies
 * for allocations and frees (the type a constant: the layout, the
 * payload's size and the string and module steps fold away, and the
 * payload is copied in line instead of by a call to memcpy), vt_push()
 * the one for any type. */
static inline __attribute__((always_inline)) int vt_push_body(vt_writer *w, unsigned type, const void *payload,
                                                             uint64_t time_ns)
{
    const vt_layout *L = vt_layout_of(type);
    if (!L)
        return VT_ERR_INVALID;
    const unsigned char *base = payload;
    struct {
        const void *src;
        uint64_t len;
        int off;
    } v[3];
    int nv = 0;
    uint32_t nframes = 0, nwords = 0;
    const vt_frame *frames = NULL;
    uint64_t total = sizeof(vt_ent) + A8(L->size);
    vt_tls *t = VT_TLS_ADDR(&t_tls); /* one TLS lookup (a __tls_get_addr call in the .so) */
    vt_ring *r = vt_tls_ring(t, w);
    if (!r) {
        atomic_fetch_add_explicit(&w->noring_dropped, 1, memory_order_relaxed);
        return VT_ERR_DROPPED;
    }
    unsigned sref = 0;
    uint64_t *fpslot = NULL; /* the slot these frames define */
    if (L->site >= 0) {
        const vt_site *s = (const vt_site *)(base + L->site);
        int ref = 0;
        if (s->fp[0] | s->fp[1]) {
            unsigned k = vt_sref_slot(s->fp);
            uint64_t *f = vt_ring_fps(r) + 2 * k;
            if (f[0] == s->fp[0] && f[1] == s->fp[1]) {
                sref = k + 1; /* sent before: the reference alone */
                ref = 1;
            } else if (s->frames && s->nframes) {
                sref = (k + 1) | VT_SREF_DEFINE;
                fpslot = f;
            } /* else not sent and no frames: no stack */
        }
        if (!ref && s->frames && s->nframes) {
            nframes = s->nframes < VT_MAX_STACK ? s->nframes : VT_MAX_STACK;
            frames = s->frames;
            /* packed: one word per plain native frame, two otherwise;
             * reserve the worst case, publish the size actually used */
            total += (uint64_t)nframes * 16;
        }
    }
#pragma GCC unroll 2 /* unrolled first, so that a constant type folds the layout's string slots away */
    for (int i = 0; i < 2; i++) {
        if (L->str[i] < 0)
            continue;
        const char *s;
        memcpy(&s, base + L->str[i], sizeof(s));
        if (!s)
            continue;
        v[nv].src = s;
        v[nv].len = strlen(s) + 1;
        v[nv].off = L->str[i];
        total += A8(v[nv].len);
        nv++;
    }
    if (type == VT_EV_MODULE) {
        const vt_ev_module *m = payload;
        if (m->build_id && m->build_id_len) {
            v[nv].src = m->build_id;
            v[nv].len = m->build_id_len;
            v[nv].off = (int)offsetof(vt_ev_module, build_id);
            total += A8(v[nv].len);
            nv++;
        }
    }

    uint64_t newhead;
    unsigned char *p = total <= r->cap / 2 ? vt_ring_reserve(r, total, &newhead) : NULL;
    if (!p) {
        vt_count(&r->dropped);
        return VT_ERR_DROPPED;
    }
    vt_ent *e = (vt_ent *)p;
    e->size = (uint32_t)total;
    e->type = (uint16_t)type;
    e->sref = (uint16_t)sref;
    e->nwords = 0;
    if (__builtin_expect(!t->tid, 0))
        t->tid = (uint32_t)syscall(SYS_gettid);
    e->tid = t->tid;
    if (L->timed && !time_ns)
        time_ns = vt_tnow(w);
    e->time = time_ns;
    e->key = L->timed == 2 ? 0 : (time_ns ? time_ns : vt_tnow(w));
    unsigned char *pl = p + sizeof(vt_ent);
    memcpy(pl, payload, L->size);
    if (type == VT_EV_MODULE)
        ((vt_ev_module *)pl)->build_id = NULL; /* unless copied below */
    uint64_t off = sizeof(vt_ent) + A8(L->size);
    for (int i = 0; i < nv; i++) {
        memcpy(p + off, v[i].src, v[i].len);
        const void *enc = (const void *)(uintptr_t)off;
        memcpy(pl + v[i].off, &enc, sizeof(enc));
        off += A8(v[i].len);
    }
    if (L->site >= 0) {
        vt_site *s = (vt_site *)(pl + L->site);
        s->nframes = nframes;
        s->frames = NULL;
        if (nframes) {
            uint64_t *wd = (uint64_t *)(p + off), *w0 = wd;
            for (uint32_t i = 0; i < nframes; i++) {
                const vt_frame *f = &frames[i];
                uint64_t pc = f->pc, line_kind;
                memcpy(&line_kind, &f->line, sizeof(line_kind)); /* line and kind at once */
                if (__builtin_expect(!(line_kind | (pc >> 63)), 1)) { /* vt_frame_short() */
                    *wd++ = pc;
                } else {
                    *wd++ = (1ull << 63) | ((uint64_t)(f->kind & 0x7fffffffu) << 32) | f->line;
                    *wd++ = pc;
                }
            }
            nwords = (uint32_t)(wd - w0);
            s->frames = (const vt_frame *)(uintptr_t)off;
            e->nwords = nwords;
            uint64_t unused = (uint64_t)nframes * 16 - (uint64_t)nwords * 8;
            e->size -= (uint32_t)unused;
            newhead -= unused;
        }
        if (!s->tid)
            s->tid = e->tid;
        if (fpslot) { /* defined: later events of this site send the slot */
            fpslot[0] = s->fp[0];
            fpslot[1] = s->fp[1];
        }
    }
    vt_publish(w, r, newhead, type != VT_ENT_CODE); /* emitted == events in the stream; drops count every entry */
    return 0;
}

/* The push of a short entry (vt_sent) for an allocation (alloc = 1) or a
 * free, always inlined with alloc a constant.  Returns 1, having done
 * nothing, when the event needs the generic entry: frames to send, a
 * field over a byte, another thread's site. */
static inline __attribute__((always_inline)) int vt_push_short(vt_writer *w, const vt_event *ev, int alloc)
{
    const vt_site *s = alloc ? &ev->u.alloc.site : &ev->u.free.site;
    uint32_t dev = alloc ? ev->u.alloc.device : ev->u.free.device;
    uint32_t kind = alloc ? (uint32_t)ev->u.alloc.kind : (uint32_t)ev->u.free.kind;
    uint32_t api = alloc ? (uint32_t)ev->u.alloc.api : (uint32_t)ev->u.free.api;
    int has_frames = s->frames && s->nframes;
    if ((dev | kind | api) > 255 || s->tid || (has_frames && !(s->fp[0] | s->fp[1])))
        return 1;
    vt_tls *t = VT_TLS_ADDR(&t_tls);
    vt_ring *r = vt_tls_ring(t, w);
    if (!r) {
        atomic_fetch_add_explicit(&w->noring_dropped, 1, memory_order_relaxed);
        return VT_ERR_DROPPED;
    }
    unsigned sref = 0;
    if (s->fp[0] | s->fp[1]) {
        unsigned k = vt_sref_slot(s->fp);
        const uint64_t *f = vt_ring_fps(r) + 2 * k;
        if (f[0] == s->fp[0] && f[1] == s->fp[1])
            sref = k + 1;
        else if (has_frames)
            return 1; /* these frames define the slot */
    }
    const uint64_t size = alloc ? sizeof(vt_sent) : VT_SENT_FREE_SIZE;
    uint64_t newhead;
    vt_sent *e = (vt_sent *)vt_ring_reserve(r, size, &newhead);
    if (!e) {
        vt_count(&r->dropped);
        return VT_ERR_DROPPED;
    }
    if (__builtin_expect(!t->tid, 0))
        t->tid = (uint32_t)syscall(SYS_gettid);
    e->size = (uint32_t)size;
    e->type = alloc ? VT_ENT_ALLOC_S : VT_ENT_FREE_S;
    e->sref = (uint16_t)sref;
    e->tid = t->tid;
    e->device = (uint8_t)dev;
    e->kind = (uint8_t)kind;
    e->api = (uint8_t)api;
    e->pad = 0;
    e->key = ev->time_ns ? ev->time_ns : vt_tnow(w);
    if (alloc) {
        e->address = ev->u.alloc.address;
        e->corr = ev->u.alloc.corr;
        e->stream = ev->u.alloc.stream;
        e->bytes = ev->u.alloc.size;
        e->pool = ev->u.alloc.pool;
    } else {
        e->address = ev->u.free.address;
        e->corr = ev->u.free.corr;
        e->stream = ev->u.free.stream;
    }
    vt_publish(w, r, newhead, 1);
    return 0;
}

VT_HOT static __attribute__((noinline)) int vt_push(vt_writer *w, unsigned type, const void *payload,
                                                    uint64_t time_ns)
{
    return vt_push_body(w, type, payload, time_ns);
}

VT_HOT int vt_writer_emit(vt_writer *w, const vt_event *ev)
{
    if (!w)
        return VT_ERR_DISABLED;
    if (!ev)
        return VT_ERR_INVALID;
    if (vt_is_off(w))
        return VT_ERR_DISABLED;
    /* the allocation callbacks' events: their own copies */
    if (ev->type == VT_EV_ALLOC) {
        int rc = vt_push_short(w, ev, 1);
        return rc != 1 ? rc : vt_push_body(w, VT_EV_ALLOC, &ev->u, ev->time_ns);
    }
    if (ev->type == VT_EV_FREE) {
        int rc = vt_push_short(w, ev, 0);
        return rc != 1 ? rc : vt_push_body(w, VT_EV_FREE, &ev->u, ev->time_ns);
    }
    if ((unsigned)ev->type == VT_ENT_CODE)
        return VT_ERR_INVALID;
    return vt_push(w, (unsigned)ev->type, &ev->u, ev->time_ns);
}

VT_HOT int vt_writer_define_code(vt_writer *w, uint64_t key, const char *file, const char *function)
{
    if (!w)
        return VT_ERR_DISABLED;
    if (vt_is_off(w))
        return VT_ERR_DISABLED;
    vt_code_payload c = {key, file, function};
    return vt_push(w, VT_ENT_CODE, &c, 0);
}

VT_HOT int vt_writer_site_sent(vt_writer *w, const uint64_t fp[2])
{
    if (!w || !(fp[0] | fp[1]) || vt_is_off(w))
        return 0;
    vt_tls *t = &t_tls;
    if (t->s[0].serial != w->serial) /* not this thread's current ring: ask vt_push */
        return 0;
    const uint64_t *f = vt_ring_fps(t->s[0].ring) + 2 * vt_sref_slot(fp);
    return f[0] == fp[0] && f[1] == fp[1];
}

uint64_t vt_writer_now(const vt_writer *w)
{
    if (!w) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    }
    return vt_tnow(w);
}
