/* vt_writer.c - crash-safe trace writer (see vt_writer.h).
 *
 * Producers (any thread): vt_writer_emit() serializes the event into the
 * calling thread's single-producer ring (mmap'ed, registered on a lock-free
 * list, reused after thread exit) and returns; no lock, no malloc, no
 * syscall on the fast path.  A full ring drops and counts.
 *
 * Encoder (the writer thread, or a signal handler during an emergency
 * flush, whoever holds `enc_owner`): merges the rings by time, interns
 * strings/threads/frames/stacks/launches/modules/code keys, encodes each
 * Record with protobuf-c into a staging buffer as `0x0A varint(len) bytes`,
 * compresses with ZSTD_compressStream2 and writes to the file.  Time and
 * correlation deltas follow docs/FORMAT.md ("Stream rules").  Kernels are
 * held back in a preallocated batch and written as one column-packed
 * KernelBatch record per run of consecutive kernels (a run shorter than
 * VT_KBATCH_MIN as plain Kernel records): the batch goes out before any other record (so the
 * stream order of events and definitions is exactly that of one record per
 * kernel), when VT_KBATCH_MAX kernels are pending, and before every zstd
 * flush and frame end.  Allocations and frees are held back the same way
 * and written as one MemBlock per run (bit-packed columns; contexts for
 * what repeats: device, kind, API, stream, pool, thread), a run shorter
 * than VT_MBLOCK_MIN as Alloc and Free records.
 *
 * Touches: its output file descriptor, /proc/self/task/TID/comm (thread
 * names), stderr (one line when it disables itself).  Never exit/abort.
 */
#define _GNU_SOURCE
#include "vt_writer.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_c_literalCompressionMode */
#include <zstd.h>

#include "proto/vramtrace.pb-c.h"
#include "vt_error.h"
#include "vt_hot.h"
#include "vt_intern.h"

#define VT_ENT_PAD 0       /* ring filler up to the end of the buffer */
#define VT_ENT_CODE 100    /* vt_writer_define_code() */
#define VT_MAX_STACK 512   /* deeper stacks keep their innermost frames */
#define VT_STACK_CHUNK 8   /* stacks are interned as chains of 8-frame outer suffixes */
#define VT_TLS_SLOTS 4     /* writers a thread remembers at once */
#define VT_MAX_WRITERS 64  /* fork registry (closing fds in the child) */
#define VT_RING_CTL 4096   /* ring control page, then the fingerprint table, then data */
#define VT_SREF_BITS 12    /* stack references: slots per ring (direct-mapped by fingerprint) */
#define VT_SREF_SLOTS (1u << VT_SREF_BITS)
#define VT_SREF_DEFINE 0x8000u /* vt_ent.sref: these frames define the slot (else: a reference) */
#define VT_RING_HDR (VT_RING_CTL + VT_SREF_SLOTS * (16 + 8)) /* + fingerprints, + the encoder's slots */
#define VT_STAGE_BYTES (256u << 10)
#define VT_EMERGENCY_WAIT_MS 1000 /* a signal handler waits at most this for the writer thread */
#define VT_EMERGENCY_DRAIN_NS (100ull * 1000000) /* the writer thread's drain budget then */
#define VT_KBATCH_MAX 256  /* kernels per KernelBatch record (bounded: packed without a size pass) */
/* a KernelBlock or MemBlock column of m entries (vt_kcol): width, base, up
 * to 64 bits an entry, exceptions at worst, slack for the packer's 4-byte stores */
#define VT_COL_BYTES(m) (1 + 10 + (m) * (8 + 2 * 10) + 8)
#ifndef VT_ZSTD_RAW_LITERALS
#define VT_ZSTD_RAW_LITERALS 1 /* zstd literals stored raw (faster to read; see vt_writer_create) */
#endif
#ifndef VT_KBATCH_MIN
#define VT_KBATCH_MIN 16   /* shorter runs: Kernel records (as small, and faster to read) */
#endif
#define VT_MBLOCK_MAX 256  /* allocations and frees per MemBlock record */
#define VT_MBLOCK_CTX 16   /* contexts per MemBlock (a 17th distinct one starts a new block) */
#ifndef VT_MBLOCK_MIN
#define VT_MBLOCK_MIN 16   /* shorter runs: Alloc and Free records */
#endif
#ifndef VT_MB_ADDR_BYTES
#define VT_MB_ADDR_BYTES 1 /* MemBlock addresses in whole bytes from 0: zstd matches a reused address */
#endif

/* What the events of a MemBlock share (proto MemContext). */
typedef struct {
    uint64_t stream, pool;
    uint32_t device, thread, stack;
    uint32_t free, kind, api;
} vt_mctx;

/* ---------------------------------------------------------------- ring */

typedef struct vt_ring {
    /* producer's cache line: all a push reads and writes of the ring but
     * the entry itself (cap and data are immutable while the ring is used) */
    _Atomic uint64_t head;
    uint64_t cached_tail;
    _Atomic uint64_t emitted;
    _Atomic uint64_t dropped;
    uint64_t cap;
    unsigned char *data; /* NULL once the writer freed it */
    char pad0[64 - 48];
    /* consumer's */
    _Atomic uint64_t tail;
    char pad1[64 - 8];
    _Atomic int state; /* 1 owned by a thread, 0 free for reuse */
    _Atomic int refs;  /* writer + owning thread */
    struct vt_ring *next; /* immutable once published */
    struct vt_cwords *cwords; /* the encoder's copies of the frames per slot (its own; may be NULL) */
} vt_ring;

/* Stack references.  A producer that gives a site fingerprint (vt_site.fp)
 * sends the frames once, marked as defining the slot the fingerprint maps
 * to in its ring, and after that only the slot number (vt_ent.sref).  Both
 * tables follow the ring's control page (mapped with it, zero-filled, so
 * that the emergency flush finds them too): the fingerprints per slot,
 * written by the producer alone, then the encoder's stack id per slot.
 * When it may allocate, the encoder also keeps a copy of each slot's
 * frames, to intern them again after its raw-stack cache was cleared (a
 * module loaded, a code key defined again). */
typedef struct {
    uint32_t stack; /* 0: unknown */
    uint32_t gen;   /* w->raw_gen when `stack` was found */
} vt_csref;

typedef struct vt_cwords {
    uint64_t *words;
    uint32_t nwords; /* packed frame words in `words` (0: no copy) */
    uint32_t cap;
} vt_cwords;

static inline uint64_t *vt_ring_fps(vt_ring *r) /* two words per slot */
{
    return (uint64_t *)((unsigned char *)r + VT_RING_CTL);
}

static inline vt_csref *vt_ring_csref(vt_ring *r)
{
    return (vt_csref *)((unsigned char *)r + VT_RING_CTL + VT_SREF_SLOTS * 16);
}

static inline unsigned vt_sref_slot(const uint64_t fp[2])
{
    return (unsigned)(fp[1] >> (64 - VT_SREF_BITS));
}

/* Entry header; the payload (a copy of the vt_event union member) follows,
 * then variable data; pointers in the payload hold offsets from the entry. */
typedef struct {
    uint32_t size; /* whole entry, multiple of 8 */
    uint16_t type;
    uint16_t sref; /* 0, or stack reference slot + 1 (| VT_SREF_DEFINE: frames follow) */
    uint32_t tid;
    uint32_t nwords; /* packed frame words at site.frames */
    uint64_t key;  /* merge order: host time, 0 for kernels */
    uint64_t time; /* event time (kernels: device start) */
} vt_ent;

/* Short entries: an allocation or a free (most of what a program in
 * tensor-level mode sends) whose stack needs no frames in the ring (a slot
 * reference, or none), with device, kind and API in a byte each.  64 bytes
 * for an allocation, 48 for a free, where the generic entry takes 128 and
 * 112: a producer writes and the encoder reads half the lines.  size,
 * type, sref, tid and key are where vt_ent has them (the merge reads
 * `key`); the event's time is the key.  vt_enc_entry() expands them. */
#define VT_ENT_ALLOC_S 101
#define VT_ENT_FREE_S 102
typedef struct {
    uint32_t size;
    uint16_t type;
    uint16_t sref; /* 0, or the referenced slot + 1 (never a definition) */
    uint32_t tid;
    uint8_t device, kind, api, pad;
    uint64_t key;
    uint64_t address, corr, stream;
    uint64_t bytes, pool; /* allocations only */
} vt_sent;
#define VT_SENT_FREE_SIZE offsetof(vt_sent, bytes)
_Static_assert(offsetof(vt_sent, size) == offsetof(vt_ent, size) && offsetof(vt_sent, type) == offsetof(vt_ent, type) &&
                   offsetof(vt_sent, sref) == offsetof(vt_ent, sref) && offsetof(vt_sent, tid) == offsetof(vt_ent, tid) &&
                   offsetof(vt_sent, key) == offsetof(vt_ent, key),
               "a short entry's header fields are where vt_ent has them");
_Static_assert(sizeof(vt_sent) == 64 && VT_SENT_FREE_SIZE == 48, "short entries: one line, three quarters");

typedef struct {
    uint64_t key;
    const char *file;
    const char *function;
} vt_code_payload;

/* --------------------------------------------------------------- writer */

typedef struct {
    vt_ring *ring;
    uint64_t pos, lim, key;
} vt_cursor;

typedef struct {
    uint64_t start, end;
    uint32_t id;
} vt_modrange;

struct vt_writer {
    /* What every producer reads, in the first line (the struct is 64-byte
     * aligned): a push runs after the host's own work, with little of this
     * cached.  All immutable after create but `off`, written once. */
    uint64_t serial;
    uint64_t (*clock_fn)(void); /* cfg.clock_fn */
    clockid_t clockid;
    unsigned fork_gen;
    int reg_slot;      /* in the fork registry (-1: not): a fork child sets `off` then */
    _Atomic int off;   /* emits refused: error, emergency, closed, a fork child */

    /* immutable after create */
    vt_writer_config cfg;
    uint64_t ring_cap;
    uint64_t flush_ns, poll_ns;
    int fd;
    char name[256];

    /* shared state */
    _Atomic int err;   /* first error */
    _Atomic int msg_claim, msg_ready;
    char errmsg[512];
    _Atomic(vt_ring *) rings;
    _Atomic uint64_t noring_dropped;
    _Atomic uint32_t wake_seq;
    _Atomic int sleeping;
    _Atomic int enc_owner; /* 0 free, 1 writer thread, 2 signal handler */
    _Atomic int emerg_sig, emerg_done;
    _Atomic int stop;
    vt_endreason stop_reason;
    int stop_sig;
    _Atomic int closed;
    _Atomic uint32_t thread_tid;
    pthread_t thread;
    int thread_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    _Atomic uint64_t flush_req, drain_req;
    uint64_t flush_done, drain_done; /* under mu */
    int thread_exited;   /* under mu */
    _Atomic uint64_t st_records, st_raw, st_written, st_frames, st_cpu;

    /* encoder state: only the holder of enc_owner */
    ZSTD_CCtx *zc;
    unsigned char *stage, *out;
    size_t stage_len, stage_cap, out_cap;
    uint64_t frame_in, seq;
    uint64_t host_t, dev_t, corr;
    int dirty;
    uint64_t dirty_since;
    int ended;
    int no_alloc, in_signal;
    uint64_t emerg_deadline;  /* writer thread: stop draining at this time (0 = none) */
    uint64_t events;          /* events written */
    uint64_t drops_reported;  /* WRITER_QUEUE drops already in the stream */
    uint64_t other_dropped;   /* counts from producer Dropped records */
    uint64_t enc_dropped;     /* events the encoder could not intern (signal mode) */
    vt_imap strings, frames, stacks, launches;
    vt_imap rawstacks; /* producer frames as captured -> stack id (a cache) */
    uint32_t raw_gen;  /* bumped whenever rawstacks is cleared */
    int raw_undef;     /* the cache holds a Python frame of an undefined code key */
    vt_umap threads, codes;
    uint32_t n_string, n_frame, n_stack, n_thread, n_module, n_launch;
    vt_modrange *mods;
    size_t n_mods, cap_mods;
    uint32_t fids[VT_MAX_STACK];
    vt_frame ftmp[VT_MAX_STACK];
    vt_cursor *cur;
    size_t cap_cur;
    /* pending kernels (absolute values; deltas are taken when the batch is
     * written, at its place in the stream).  Part of the writer: no
     * allocation, usable by the emergency flush. */
    uint32_t kb_n;
    int kb_graph_any;
    uint64_t kb_launch[VT_KBATCH_MAX]; /* 64-bit: one column packer for all */
    int64_t kb_start[VT_KBATCH_MAX];
    uint64_t kb_dur[VT_KBATCH_MAX];
    int64_t kb_corr[VT_KBATCH_MAX];
    uint64_t kb_graph[VT_KBATCH_MAX];
    uint8_t kb_col[4][VT_COL_BYTES(VT_KBATCH_MAX)]; /* packed KernelBlock columns */
    /* pending allocations and frees (deltas taken when queued, in stream
     * order: the block goes out before any other record).  Part of the
     * writer like the kernels. */
    uint32_t mb_n, mb_na, mb_nctx;
    uint64_t mb_ctx[VT_MBLOCK_MAX];
    uint64_t mb_time[VT_MBLOCK_MAX]; /* host time deltas (int64) */
    uint64_t mb_addr[VT_MBLOCK_MAX];
    uint64_t mb_corr[VT_MBLOCK_MAX]; /* correlation id deltas (int64) */
    uint64_t mb_size[VT_MBLOCK_MAX];  /* per allocation */
    uint64_t mb_stack[VT_MBLOCK_MAX]; /* per allocation */
    vt_mctx mb_cx[VT_MBLOCK_CTX];
    uint8_t mb_col[6][VT_COL_BYTES(VT_MBLOCK_MAX)]; /* packed MemBlock columns */
};

/* --------------------------------------------------------------- globals */

static _Atomic unsigned g_fork_gen;
static _Atomic uint64_t g_serial;
static _Atomic(vt_writer *) g_reg[VT_MAX_WRITERS];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
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
static void vt_unregister(vt_writer *w)
{
    if (w->reg_slot >= 0) {
        vt_writer *exp = w;
        atomic_compare_exchange_strong(&g_reg[w->reg_slot], &exp, NULL);
        w->reg_slot = -1;
    }
}

static void vt_global_init(void)
{
    g_key_ok = pthread_key_create(&g_key, vt_tls_dtor) == 0;
    pthread_atfork(NULL, NULL, vt_atfork_child);
}

static inline int vt_forked(const vt_writer *w)
{
    return w->fork_gen != atomic_load_explicit(&g_fork_gen, memory_order_relaxed);
}

/* A writer in the fork registry is switched off in a fork child by the
 * atfork handler: its producers read one line, not also the generation. */
static inline int vt_is_off(const vt_writer *w)
{
    return atomic_load_explicit(&w->off, memory_order_relaxed) || (w->reg_slot < 0 && vt_forked(w));
}

static inline uint64_t vt_tnow(const vt_writer *w)
{
    if (w->clock_fn)
        return w->clock_fn();
    struct timespec ts;
    clock_gettime(w->clockid, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t vt_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void vt_wake(vt_writer *w)
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

static void vt_ring_unmap(vt_ring *r)
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

/* ------------------------------------------------------- event layout */

typedef struct {
    uint16_t size;    /* sizeof the union member, 0 = not accepted from producers */
    int16_t site;     /* offset of a vt_site, -1 none */
    int16_t str[2];   /* offsets of const char * fields, -1 none */
    int16_t timed;    /* 1 host time, 2 device time, 0 definition */
} vt_layout;

#define L_SITE(T, m) (int16_t) offsetof(T, m)
#define L_STR(T, m) (int16_t) offsetof(T, m)

static inline const vt_layout *vt_layout_of(unsigned type)
{
    static const vt_layout tab[] = {
        [VT_EV_ALLOC] = {sizeof(vt_ev_alloc), L_SITE(vt_ev_alloc, site), {-1, -1}, 1},
        [VT_EV_FREE] = {sizeof(vt_ev_free), L_SITE(vt_ev_free, site), {-1, -1}, 1},
        [VT_EV_ALLOC_FAILED] = {sizeof(vt_ev_alloc_failed), L_SITE(vt_ev_alloc_failed, site),
                                {L_STR(vt_ev_alloc_failed, error_name), -1}, 1},
        [VT_EV_VMM_RESERVE] = {sizeof(vt_ev_vmm_range), L_SITE(vt_ev_vmm_range, site), {-1, -1}, 1},
        [VT_EV_VMM_ADDRESS_FREE] = {sizeof(vt_ev_vmm_range), L_SITE(vt_ev_vmm_range, site), {-1, -1}, 1},
        [VT_EV_VMM_UNMAP] = {sizeof(vt_ev_vmm_range), L_SITE(vt_ev_vmm_range, site), {-1, -1}, 1},
        [VT_EV_VMM_CREATE] = {sizeof(vt_ev_vmm_create), L_SITE(vt_ev_vmm_create, site), {-1, -1}, 1},
        [VT_EV_VMM_RELEASE] = {sizeof(vt_ev_vmm_release), L_SITE(vt_ev_vmm_release, site), {-1, -1}, 1},
        [VT_EV_VMM_MAP] = {sizeof(vt_ev_vmm_map), L_SITE(vt_ev_vmm_map, site), {-1, -1}, 1},
        [VT_EV_POOL] = {sizeof(vt_ev_pool), L_SITE(vt_ev_pool, site), {-1, -1}, 1},
        [VT_EV_POOL_USAGE] = {sizeof(vt_ev_pool_usage), -1, {-1, -1}, 1},
        [VT_EV_MEMORY_USAGE] = {sizeof(vt_ev_memory_usage), -1, {-1, -1}, 1},
        [VT_EV_KERNEL] = {sizeof(vt_ev_kernel), -1, {L_STR(vt_ev_kernel, name), -1}, 2},
        [VT_EV_NVTX] = {sizeof(vt_ev_nvtx), L_SITE(vt_ev_nvtx, site),
                        {L_STR(vt_ev_nvtx, message), L_STR(vt_ev_nvtx, domain)}, 1},
        [VT_EV_MODULE] = {sizeof(vt_ev_module), -1, {L_STR(vt_ev_module, path), -1}, 0},
        [VT_EV_THREAD] = {sizeof(vt_ev_thread), -1, {L_STR(vt_ev_thread, name), -1}, 0},
        [VT_EV_DEVICE] = {sizeof(vt_ev_device), -1,
                          {L_STR(vt_ev_device, name), L_STR(vt_ev_device, pci_bus_id)}, 0},
        [VT_EV_DROPPED] = {sizeof(vt_ev_dropped), -1, {L_STR(vt_ev_dropped, reason), -1}, 1},
        [VT_EV_NOTE] = {sizeof(vt_ev_note), -1, {L_STR(vt_ev_note, text), -1}, 1},
        [VT_ENT_CODE] = {sizeof(vt_code_payload), -1,
                         {L_STR(vt_code_payload, file), L_STR(vt_code_payload, function)}, 0},
    };
    if (type >= sizeof(tab) / sizeof(tab[0]) || !tab[type].size)
        return NULL;
    return &tab[type];
}

#define A8(x) (((x) + 7) & ~(uint64_t)7)

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
static uint32_t vt_frames_unpack(const uint64_t *wd, uint32_t nwords, vt_frame *out)
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

/* ------------------------------------------------------------- errors */

static void vt_fail(vt_writer *w, int err, const char *fmt, ...)
{
    int exp = 0;
    atomic_compare_exchange_strong(&w->err, &exp, err);
    atomic_store(&w->off, 1);
    exp = 0;
    if (!atomic_compare_exchange_strong(&w->msg_claim, &exp, 1))
        return;
    if (w->in_signal) {
        /* vsnprintf is not async-signal-safe: a fixed text */
        static const char m[] = "write failed during emergency flush";
        memcpy(w->errmsg, m, sizeof(m));
    } else {
        va_list ap;
        va_start(ap, fmt);
        int n = snprintf(w->errmsg, sizeof(w->errmsg), "%s: ", w->name);
        if (n > 0 && (size_t)n < sizeof(w->errmsg))
            vsnprintf(w->errmsg + n, sizeof(w->errmsg) - (size_t)n, fmt, ap);
        va_end(ap);
    }
    atomic_store_explicit(&w->msg_ready, 1, memory_order_release);
    if (!w->cfg.quiet && !w->in_signal)
        fprintf(stderr, "vramtrace: %s: disabled\n", w->errmsg);
}

/* ------------------------------------------------------------ encoder */

static int vt_write_all(vt_writer *w, const unsigned char *buf, size_t len)
{
    while (len) {
        ssize_t n = write(w->fd, buf, len);
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pfd = {.fd = w->fd, .events = POLLOUT};
            if (poll(&pfd, 1, 1000) > 0)
                continue;
            vt_fail(w, VT_ERR_IO, "write failed: output blocked for too long");
            return VT_ERR_IO;
        }
        int e = n < 0 ? errno : ENOSPC;
        vt_fail(w, e == ENOSPC || e == EDQUOT ? VT_ERR_NOSPACE : VT_ERR_IO, "write failed: %s", strerror(e));
        return atomic_load(&w->err);
    }
    return 0;
}

static int vt_enc_feed(vt_writer *w, ZSTD_EndDirective mode)
{
    if (atomic_load_explicit(&w->err, memory_order_relaxed))
        return atomic_load(&w->err);
    ZSTD_inBuffer in = {w->stage, w->stage_len, 0};
    for (;;) {
        ZSTD_outBuffer out = {w->out, w->out_cap, 0};
        size_t rem = ZSTD_compressStream2(w->zc, &out, &in, mode);
        if (ZSTD_isError(rem)) {
            vt_fail(w, VT_ERR_IO, "zstd: %s", ZSTD_getErrorName(rem));
            return VT_ERR_IO;
        }
        if (out.pos) {
            int rc = vt_write_all(w, w->out, out.pos);
            if (rc)
                return rc;
            atomic_fetch_add_explicit(&w->st_written, out.pos, memory_order_relaxed);
        }
        if (mode == ZSTD_e_continue ? in.pos == in.size : rem == 0)
            break;
    }
    w->stage_len = 0;
    return 0;
}

/* Records whose size is bounded by construction (fixed fields, stacks of
 * at most VT_MAX_STACK frames) are packed without a get_packed_size() pass
 * first: their length prefix fits in two bytes. */
#define VT_SMALL_MAX 16383
static inline int vt_rec_small(Vramtrace__Record__BodyCase c)
{
    switch (c) {
    case VRAMTRACE__RECORD__BODY_HEADER:
    case VRAMTRACE__RECORD__BODY_STRING:
    case VRAMTRACE__RECORD__BODY_MODULE:
    case VRAMTRACE__RECORD__BODY_THREAD:
    case VRAMTRACE__RECORD__BODY_DEVICE:
    case VRAMTRACE__RECORD__BODY_NOTE:
        return 0; /* strings of any length */
    case VRAMTRACE__RECORD__BODY_KERNEL_BATCH:
        /* per kernel at most 5 + 4 * 10 bytes of varints, plus tags and lengths */
        return VT_KBATCH_MAX * 45 + 64 <= VT_SMALL_MAX;
    case VRAMTRACE__RECORD__BODY_KERNEL_BLOCK:
        /* per kernel at most 4 * 9 bytes of columns (no cheaper width than 64
         * bits; an exception's index may take a byte more than counted) and
         * a 10-byte graph id, plus tags and lengths */
        return VT_KBATCH_MAX * 46 + 4 * 11 + 64 <= VT_SMALL_MAX;
    case VRAMTRACE__RECORD__BODY_MEM_BLOCK:
        /* six columns of at most 12 + 9 bytes per entry (width byte, base,
         * a partial last byte; width 64 is never dearer than exceptions,
         * which add at most an index's second byte), contexts of at most
         * 2 + 7 * 11 bytes */
        return 6 * (12 + 9 * VT_MBLOCK_MAX) + VT_MBLOCK_CTX * 79 + 64 <= VT_SMALL_MAX;
    default:
        return 1;
    }
}

static int vt_enc_kbatch(vt_writer *w);
static int vt_enc_mblock(vt_writer *w);

static int vt_enc_put(vt_writer *w, const Vramtrace__Record *r)
{
    if (atomic_load_explicit(&w->err, memory_order_relaxed))
        return atomic_load(&w->err);
    if (w->mb_n && r->body_case != VRAMTRACE__RECORD__BODY_MEM_BLOCK) {
        /* pending allocations and frees first (their deltas are taken) */
        int rc = vt_enc_mblock(w);
        if (rc)
            return rc;
    }
    if (w->kb_n && r->body_case != VRAMTRACE__RECORD__BODY_KERNEL_BLOCK &&
        r->body_case != VRAMTRACE__RECORD__BODY_KERNEL && r->body_case != VRAMTRACE__RECORD__BODY_MEM_BLOCK &&
        r->body_case != VRAMTRACE__RECORD__BODY_ALLOC && r->body_case != VRAMTRACE__RECORD__BODY_FREE) {
        /* pending kernels first: records keep the order of their events.
         * Not before pending allocations and frees going out (above):
         * those came first, since one queued flushes the kernels. */
        int rc = vt_enc_kbatch(w);
        if (rc)
            return rc;
    }
    const int small = vt_rec_small(r->body_case);
    size_t n = small ? 0 : vramtrace__record__get_packed_size(r);
    size_t need = small ? VT_SMALL_MAX + 3 : n + 11;
    if (w->stage_len + need > w->stage_cap) {
        int rc = vt_enc_feed(w, ZSTD_e_continue);
        if (rc)
            return rc;
        if (need > w->stage_cap) {
            if (w->no_alloc)
                return VT_ERR_NOMEM;
            unsigned char *ns = realloc(w->stage, need);
            if (!ns)
                return VT_ERR_NOMEM;
            w->stage = ns;
            w->stage_cap = need;
        }
    }
    unsigned char *p = w->stage + w->stage_len;
    size_t k = 0;
    p[k++] = 0x0A;
    if (small) {
        n = vramtrace__record__pack(r, p + 2);
        assert(n <= VT_SMALL_MAX);
        if (n < 128) {
            p[k++] = (unsigned char)n;
        } else {
            memmove(p + 3, p + 2, n);
            p[k++] = (unsigned char)(n | 0x80);
            p[k++] = (unsigned char)(n >> 7);
        }
    } else {
        uint64_t v = n;
        while (v >= 0x80) {
            p[k++] = (unsigned char)(v | 0x80);
            v >>= 7;
        }
        p[k++] = (unsigned char)v;
        vramtrace__record__pack(r, p + k);
    }
    w->stage_len += k + n;
    w->frame_in += k + n;
    atomic_fetch_add_explicit(&w->st_records, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->st_raw, k + n, memory_order_relaxed);
    if (!w->dirty) {
        w->dirty = 1;
        w->dirty_since = vt_mono_ns();
    }
    return 0;
}

static int vt_enc_sync(vt_writer *w)
{
    Vramtrace__Sync s = VRAMTRACE__SYNC__INIT;
    s.time_ns = w->host_t;
    s.device_time_ns = w->dev_t;
    s.sequence = w->seq++;
    Vramtrace__Record r = VRAMTRACE__RECORD__INIT;
    r.body_case = VRAMTRACE__RECORD__BODY_SYNC;
    r.sync = &s;
    w->corr = 0;
    w->frame_in = 0;
    atomic_fetch_add_explicit(&w->st_frames, 1, memory_order_relaxed);
    return vt_enc_put(w, &r);
}

/* Write what is pending: allocations and frees, kernels (in the order
 * they were queued: a kernel block puts the pending allocations first). */
static int vt_enc_pending(vt_writer *w)
{
    int rc = vt_enc_kbatch(w);
    return rc ? rc : vt_enc_mblock(w);
}

/* End the zstd frame when it holds frame_bytes of input; the next one
 * starts with a Sync. */
static int vt_enc_frame_check(vt_writer *w)
{
    if (w->frame_in < w->cfg.frame_bytes)
        return 0;
    int rc = vt_enc_pending(w);
    if (!rc)
        rc = vt_enc_feed(w, ZSTD_e_end);
    if (rc)
        return rc;
    return vt_enc_sync(w);
}

static int vt_enc_flush(vt_writer *w)
{
    int rc = vt_enc_pending(w);
    if (!rc)
        rc = vt_enc_feed(w, ZSTD_e_flush);
    w->dirty = 0;
    return rc;
}

static inline int64_t vt_d_host(vt_writer *w, uint64_t t)
{
    int64_t d = (int64_t)(t - w->host_t);
    w->host_t = t;
    return d;
}
static inline int64_t vt_d_dev(vt_writer *w, uint64_t t)
{
    int64_t d = (int64_t)(t - w->dev_t);
    w->dev_t = t;
    return d;
}
static inline int64_t vt_d_corr(vt_writer *w, uint64_t c)
{
    int64_t d = (int64_t)(c - w->corr);
    w->corr = c;
    return d;
}

#define VT_REC(rec, field, CASE, msg)                                                                    \
    Vramtrace__Record rec = VRAMTRACE__RECORD__INIT;                                                     \
    rec.body_case = VRAMTRACE__RECORD__BODY_##CASE;                                                      \
    rec.field = &(msg)

/* A KernelBlock column (proto/vramtrace.proto) of m values into out:
 * width, zigzag base (the minimum, as int64 where `sign`), the values
 * minus base in width bits each, LSB first, then the exceptions: the
 * values that do not fit in width bits (their low bits are in place), as
 * varint pairs (index - previous index - 1, value >> width).  The width is
 * the one with the fewest bytes, exceptions counted (on the recorded H200
 * traces a rare long gap or correlation step would otherwise widen all
 * 256 entries: 0.5 B per kernel more).  `bytes`: widths of whole bytes and
 * base 0 (the launch column: a repeating sequence of kernels then repeats
 * byte for byte, a long zstd match).  Returns the column's length. */
static size_t vt_kcol(uint8_t *out, const uint64_t *v, uint32_t m, int sign, int bytes)
{
    uint64_t lo = 0;
    if (!bytes && m) {
        lo = v[0];
        for (uint32_t i = 1; i < m; i++)
            if (sign ? (int64_t)v[i] < (int64_t)lo : v[i] < lo)
                lo = v[i];
    }
    uint32_t len[65] = {0}; /* values by bit length */
    for (uint32_t i = 0; i < m; i++) {
        const uint64_t x = v[i] - lo;
        len[x ? 64 - __builtin_clzll(x) : 0]++;
    }
    /* bits for width w: m*w, plus per exception of l > w bits a byte of
     * index and the varint of its l - w high bits */
    unsigned width = 0, ls[65], nl = 0;
    for (unsigned l = 0; l <= 64; l++)
        if (len[l])
            ls[nl++] = l;
    uint64_t best = UINT64_MAX;
    unsigned top = nl ? ls[nl - 1] : 0;
    if (bytes)
        top = (top + 7) & ~7u;
    for (unsigned w = top;; w--) {
        if (!bytes || w % 8 == 0) {
            uint64_t cost = (uint64_t)m * w;
            for (unsigned j = nl; j-- && ls[j] > w;)
                cost += (uint64_t)len[ls[j]] * (8 + 8 * ((ls[j] - w + 6) / 7));
            if (cost <= best) {
                best = cost;
                width = w;
            }
        }
        if (!w)
            break;
    }
    size_t k = 0;
    out[k++] = (uint8_t)width;
    uint64_t z = ((uint64_t)lo << 1) ^ (uint64_t)((int64_t)lo >> 63);
    while (z >= 0x80) {
        out[k++] = (uint8_t)(z | 0x80);
        z >>= 7;
    }
    out[k++] = (uint8_t)z;
    if (!m)
        return k;
    const uint64_t lim = width < 64 ? (1ull << width) - 1 : UINT64_MAX;
    uint64_t acc = 0; /* nb pending bits */
    unsigned nb = 0;
    if (width <= 32) { /* < 32 pending + at most 32: 4 bytes out at a time */
        for (uint32_t i = 0; i < m && width; i++) {
            acc |= ((v[i] - lo) & lim) << nb;
            nb += width;
            if (nb >= 32) {
                const uint32_t w32 = (uint32_t)acc;
                memcpy(out + k, &w32, 4); /* little-endian, as every target of this code */
                k += 4;
                acc >>= 32;
                nb -= 32;
            }
        }
    } else { /* in chunks of at most 32 bits, bytes out one by one */
        for (uint32_t i = 0; i < m; i++) {
            uint64_t x = (v[i] - lo) & lim;
            for (unsigned left = width; left;) {
                const unsigned c = left > 32 ? 32 : left;
                acc |= (x & ((1ull << c) - 1)) << nb;
                nb += c;
                x >>= c;
                left -= c;
                for (; nb >= 8; nb -= 8, acc >>= 8)
                    out[k++] = (uint8_t)acc;
            }
        }
    }
    for (; nb > 0; nb = nb > 8 ? nb - 8 : 0, acc >>= 8)
        out[k++] = (uint8_t)acc;
    uint32_t prev = 0;
    for (uint32_t i = 0; i < m && width < 64; i++) {
        const uint64_t x = v[i] - lo;
        if (x <= lim)
            continue;
        for (uint64_t e = i - prev, hi = x >> width, j = 0; j < 2; j++, e = hi) {
            while (e >= 0x80) {
                out[k++] = (uint8_t)(e | 0x80);
                e >>= 7;
            }
            out[k++] = (uint8_t)e;
        }
        prev = i + 1;
    }
    return k;
}

/* Write the pending kernels: Kernel records for fewer than VT_KBATCH_MIN
 * (for a handful of kernels a block saves almost nothing and costs the
 * reader more per kernel: measured with bench_reader's interleaved mix),
 * else a KernelBlock (docs/FORMAT.md): start0 is the delta from the device
 * time base, gap[i-1] for i > 0 the gap since the end of kernel i-1
 * (start - (start + duration) of the previous one; smaller and more
 * regular than the start-to-start delta: -7 % bytes on the bench, -2 % on
 * real traces); corr[i] the delta a Kernel record would carry.  The device
 * time base ends at the last kernel's start, as after Kernel records. */
static int vt_enc_kbatch(vt_writer *w)
{
    const uint32_t n = w->kb_n;
    if (!n)
        return 0;
    w->kb_n = 0; /* before vt_enc_put, which flushes a pending batch */
    if (n < VT_KBATCH_MIN) {
        w->kb_graph_any = 0;
        for (uint32_t i = 0; i < n; i++) {
            Vramtrace__Kernel k = VRAMTRACE__KERNEL__INIT;
            k.launch = (uint32_t)w->kb_launch[i];
            k.duration_ns = w->kb_dur[i];
            k.graph_id = w->kb_graph[i];
            k.corr = vt_d_corr(w, (uint64_t)w->kb_corr[i]);
            VT_REC(r, kernel, KERNEL, k);
            r.ts_delta = vt_d_dev(w, (uint64_t)w->kb_start[i]);
            int rc = vt_enc_put(w, &r);
            if (rc)
                return rc;
        }
        return 0;
    }
    uint64_t base = w->dev_t;
    for (uint32_t i = 0; i < n; i++) { /* absolute -> delta, in place */
        const uint64_t st = (uint64_t)w->kb_start[i];
        w->kb_start[i] = (int64_t)(st - base);
        base = st + w->kb_dur[i];
        w->kb_corr[i] = vt_d_corr(w, (uint64_t)w->kb_corr[i]);
    }
    w->dev_t = base - w->kb_dur[n - 1]; /* the last kernel's start */
    Vramtrace__KernelBlock b = VRAMTRACE__KERNEL_BLOCK__INIT;
    b.count = n;
    b.start0 = w->kb_start[0];
    b.launch.data = w->kb_col[0];
    b.launch.len = vt_kcol(w->kb_col[0], w->kb_launch, n, 0, 1);
    b.gap.data = w->kb_col[1];
    b.gap.len = vt_kcol(w->kb_col[1], (const uint64_t *)w->kb_start + 1, n - 1, 1, 0);
    b.duration_ns.data = w->kb_col[2];
    b.duration_ns.len = vt_kcol(w->kb_col[2], w->kb_dur, n, 0, 0);
    b.corr.data = w->kb_col[3];
    b.corr.len = vt_kcol(w->kb_col[3], (const uint64_t *)w->kb_corr, n, 1, 0);
    if (w->kb_graph_any) {
        b.n_graph_id = n;
        b.graph_id = w->kb_graph;
    }
    w->kb_graph_any = 0;
    VT_REC(r, kernel_block, KERNEL_BLOCK, b); /* ts_delta 0 */
    return vt_enc_put(w, &r);
}

/* Queue one kernel (its Launch is defined); the batch goes out when full. */
static int vt_enc_kernel(vt_writer *w, uint32_t launch, const vt_ev_kernel *k, uint64_t start)
{
    uint32_t i = w->kb_n++;
    w->kb_launch[i] = launch;
    w->kb_start[i] = (int64_t)start;
    w->kb_dur[i] = k->duration_ns;
    w->kb_corr[i] = (int64_t)k->corr;
    w->kb_graph[i] = k->graph_id;
    w->kb_graph_any |= k->graph_id != 0;
    w->events++;
    if (!w->dirty) { /* pending counts as unflushed data (flush_ms bound) */
        w->dirty = 1;
        w->dirty_since = vt_mono_ns();
    }
    return w->kb_n == VT_KBATCH_MAX ? vt_enc_kbatch(w) : 0;
}

/* Write the pending allocations and frees: Alloc and Free records for
 * fewer than VT_MBLOCK_MIN, else a MemBlock (docs/FORMAT.md).  Their time
 * and correlation deltas were taken when they were queued. */
static int vt_enc_mblock(vt_writer *w)
{
    const uint32_t n = w->mb_n, na = w->mb_na, nctx = w->mb_nctx;
    if (!n)
        return 0;
    w->mb_n = w->mb_na = w->mb_nctx = 0; /* before vt_enc_put, which flushes a pending block */
    if (n < VT_MBLOCK_MIN) {
        for (uint32_t i = 0, j = 0; i < n; i++) {
            const vt_mctx *c = &w->mb_cx[w->mb_ctx[i]];
            Vramtrace__Record r = VRAMTRACE__RECORD__INIT;
            Vramtrace__Alloc a = VRAMTRACE__ALLOC__INIT;
            Vramtrace__Free f = VRAMTRACE__FREE__INIT;
            r.ts_delta = (int64_t)w->mb_time[i];
            if (c->free) {
                f.address = w->mb_addr[i];
                f.device = c->device;
                f.kind = (Vramtrace__MemoryKind)c->kind;
                f.api = (Vramtrace__AllocApi)c->api;
                f.stream = c->stream;
                f.thread = c->thread;
                f.stack = c->stack;
                f.corr = (int64_t)w->mb_corr[i];
                r.body_case = VRAMTRACE__RECORD__BODY_FREE;
                r.free = &f;
            } else {
                a.address = w->mb_addr[i];
                a.size = w->mb_size[j];
                a.device = c->device;
                a.kind = (Vramtrace__MemoryKind)c->kind;
                a.api = (Vramtrace__AllocApi)c->api;
                a.stream = c->stream;
                a.pool = c->pool;
                a.thread = c->thread;
                a.stack = (uint32_t)w->mb_stack[j++];
                a.corr = (int64_t)w->mb_corr[i];
                r.body_case = VRAMTRACE__RECORD__BODY_ALLOC;
                r.alloc = &a;
            }
            int rc = vt_enc_put(w, &r);
            if (rc)
                return rc;
        }
        return 0;
    }
    Vramtrace__MemContext cm[VT_MBLOCK_CTX], *cp[VT_MBLOCK_CTX];
    for (uint32_t k = 0; k < nctx; k++) {
        const vt_mctx *c = &w->mb_cx[k];
        Vramtrace__MemContext x = VRAMTRACE__MEM_CONTEXT__INIT;
        x.free = c->free;
        x.device = c->device;
        x.kind = (Vramtrace__MemoryKind)c->kind;
        x.api = (Vramtrace__AllocApi)c->api;
        x.stream = c->stream;
        x.pool = c->pool;
        x.thread = c->thread;
        x.stack = c->stack;
        cm[k] = x;
        cp[k] = &cm[k];
    }
    Vramtrace__MemBlock b = VRAMTRACE__MEM_BLOCK__INIT;
    b.count = n;
    b.n_context = nctx;
    b.context = cp;
    b.ctx.data = w->mb_col[0];
    b.ctx.len = vt_kcol(w->mb_col[0], w->mb_ctx, n, 0, 0);
    b.time.data = w->mb_col[1];
    b.time.len = vt_kcol(w->mb_col[1], w->mb_time, n, 1, 0);
    b.address.data = w->mb_col[2];
    b.address.len = vt_kcol(w->mb_col[2], w->mb_addr, n, 0, VT_MB_ADDR_BYTES);
    b.corr.data = w->mb_col[3];
    b.corr.len = vt_kcol(w->mb_col[3], w->mb_corr, n, 1, 0);
    if (na) {
        b.size.data = w->mb_col[4];
        b.size.len = vt_kcol(w->mb_col[4], w->mb_size, na, 0, 0);
        b.stack.data = w->mb_col[5];
        b.stack.len = vt_kcol(w->mb_col[5], w->mb_stack, na, 0, 0);
    }
    VT_REC(r, mem_block, MEM_BLOCK, b); /* ts_delta 0 */
    return vt_enc_put(w, &r);
}

/* Queue one allocation (free = 0) or free of context *c (thread and
 * stack interned): its deltas now, in stream order; the block goes out
 * when full. */
static int vt_enc_mem(vt_writer *w, const vt_mctx *c, uint64_t time, uint64_t address, uint64_t size,
                      uint32_t stack, uint64_t corr)
{
    uint32_t k = 0;
    while (k < w->mb_nctx && memcmp(&w->mb_cx[k], c, sizeof(*c)))
        k++;
    if (k == VT_MBLOCK_CTX) {
        int rc = vt_enc_mblock(w);
        if (rc)
            return rc;
        k = 0;
    }
    if (k == w->mb_nctx)
        w->mb_cx[w->mb_nctx++] = *c;
    const uint32_t i = w->mb_n++;
    w->mb_ctx[i] = k;
    w->mb_time[i] = (uint64_t)vt_d_host(w, time);
    w->mb_addr[i] = address;
    w->mb_corr[i] = (uint64_t)vt_d_corr(w, corr);
    if (!c->free) {
        w->mb_size[w->mb_na] = size;
        w->mb_stack[w->mb_na++] = stack;
    }
    w->events++;
    if (!w->dirty) { /* pending counts as unflushed data (flush_ms bound) */
        w->dirty = 1;
        w->dirty_since = vt_mono_ns();
    }
    return w->mb_n == VT_MBLOCK_MAX ? vt_enc_mblock(w) : 0;
}

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

static inline int vt_in_cstr(vt_writer *w, const char *s, uint32_t *id)
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

static int vt_in_thread(vt_writer *w, uint32_t tid, const char *name, uint32_t *id)
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

static int vt_in_module(vt_writer *w, const vt_ev_module *m)
{
    if (w->n_mods + 1 > w->cap_mods) {
        if (w->no_alloc)
            return VT_ERR_NOMEM;
        size_t nc = w->cap_mods ? w->cap_mods * 2 : 64;
        vt_modrange *nm = realloc(w->mods, nc * sizeof(*nm));
        if (!nm)
            return VT_ERR_NOMEM;
        w->mods = nm;
        w->cap_mods = nc;
    }
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

static int vt_in_code(vt_writer *w, const vt_code_payload *c)
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
static int vt_in_site(vt_writer *w, const vt_site *s, uint32_t nwords, int want_stack, uint32_t *thread,
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
static int vt_in_site_ref(vt_writer *w, vt_ring *r, const vt_site *s, const vt_ent *e, uint32_t *thread,
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

static int vt_in_launch(vt_writer *w, const vt_ev_kernel *k, uint32_t *id)
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

/* ------------------------------------------------------ entry -> record */

/* Turn the offsets stored by vt_push back into pointers. */
static inline const void *vt_fix(const vt_ent *e, const void *field)
{
    uintptr_t off = (uintptr_t)field;
    return off ? (const unsigned char *)e + off : NULL;
}

static int vt_enc_entry(vt_writer *w, vt_ring *ring, const vt_ent *e);

/* A short entry, expanded into the generic one it stands for. */
static int vt_enc_short(vt_writer *w, vt_ring *ring, const vt_sent *s)
{
    struct {
        vt_ent h;
        union {
            vt_ev_alloc alloc;
            vt_ev_free free;
        } u;
    } x;
    const int alloc = s->type == VT_ENT_ALLOC_S;
    x.h = (vt_ent){.size = sizeof(x), .type = alloc ? VT_EV_ALLOC : VT_EV_FREE, .sref = s->sref, .tid = s->tid,
                   .key = s->key, .time = s->key};
    const vt_site site = {.tid = s->tid};
    const vt_memkind kind = (vt_memkind)s->kind;
    const vt_allocapi api = (vt_allocapi)s->api;
    if (alloc)
        x.u.alloc = (vt_ev_alloc){.address = s->address, .size = s->bytes, .device = s->device, .kind = kind,
                                  .api = api, .stream = s->stream, .pool = s->pool, .corr = s->corr, .site = site};
    else
        x.u.free = (vt_ev_free){.address = s->address, .device = s->device, .kind = kind, .api = api,
                                .stream = s->stream, .corr = s->corr, .site = site};
    return vt_enc_entry(w, ring, &x.h);
}

static int vt_enc_entry(vt_writer *w, vt_ring *ring, const vt_ent *e)
{
    if (e->type == VT_ENT_ALLOC_S || e->type == VT_ENT_FREE_S)
        return vt_enc_short(w, ring, (const vt_sent *)e);
    const vt_layout *L = vt_layout_of(e->type);
    if (!L)
        return 0;
    union {
        vt_ev_alloc alloc;
        vt_ev_free free;
        vt_ev_alloc_failed af;
        vt_ev_vmm_range vr;
        vt_ev_vmm_create vc;
        vt_ev_vmm_release vrel;
        vt_ev_vmm_map vm;
        vt_ev_pool pool;
        vt_ev_pool_usage pu;
        vt_ev_memory_usage mu;
        vt_ev_kernel k;
        vt_ev_nvtx nvtx;
        vt_ev_module mod;
        vt_ev_thread th;
        vt_ev_device dev;
        vt_ev_dropped drop;
        vt_ev_note note;
        vt_code_payload code;
    } u;
    memcpy(&u, e + 1, L->size);
    unsigned char *ub = (unsigned char *)&u;
    for (int i = 0; i < 2; i++) {
        if (L->str[i] < 0)
            continue;
        const void *p;
        memcpy(&p, ub + L->str[i], sizeof(p));
        p = vt_fix(e, p);
        memcpy(ub + L->str[i], &p, sizeof(p));
    }
    vt_site *site = NULL;
    if (L->site >= 0) {
        site = (vt_site *)(ub + L->site);
        site->frames = vt_fix(e, site->frames);
    }
    if (e->type == VT_EV_MODULE)
        u.mod.build_id = vt_fix(e, u.mod.build_id);

    int rc = vt_enc_frame_check(w);
    if (!rc && e->type != VT_EV_KERNEL && e->type != VT_ENT_CODE)
        rc = vt_enc_kbatch(w); /* before this event's deltas are taken (corr is shared) */
    if (rc)
        return rc;

    uint32_t thread = 0, stack = 0;
    int want_stack = 0;
    switch (e->type) {
    case VT_EV_ALLOC: case VT_EV_FREE: case VT_EV_ALLOC_FAILED: case VT_EV_VMM_RESERVE:
    case VT_EV_VMM_CREATE: case VT_EV_POOL:
        want_stack = 1;
        break;
    default:
        break;
    }
    if (site) {
        if (e->sref) { /* a definition is remembered whatever the event */
            rc = vt_in_site_ref(w, ring, site, e, &thread, &stack);
            if (!want_stack)
                stack = 0;
        } else {
            rc = vt_in_site(w, site, e->nwords, want_stack, &thread, &stack);
        }
        if (rc)
            return rc;
    }

    Vramtrace__Record r = VRAMTRACE__RECORD__INIT;
    r.body_case = (Vramtrace__Record__BodyCase)e->type;
    union {
        Vramtrace__AllocFailed af;
        Vramtrace__VmmReserve vres;
        Vramtrace__VmmAddressFree vaf;
        Vramtrace__VmmUnmap vun;
        Vramtrace__VmmCreate vc;
        Vramtrace__VmmRelease vrel;
        Vramtrace__VmmMap vm;
        Vramtrace__Pool pool;
        Vramtrace__PoolUsage pu;
        Vramtrace__MemoryUsage mu;
        Vramtrace__Nvtx nvtx;
        Vramtrace__Device dev;
        Vramtrace__Dropped drop;
        Vramtrace__Note note;
    } m;
    switch (e->type) {
    case VT_EV_ALLOC: { /* joins the pending MemBlock */
        vt_mctx c = {.stream = u.alloc.stream, .pool = u.alloc.pool, .device = u.alloc.device, .thread = thread,
                     .kind = (uint32_t)u.alloc.kind, .api = (uint32_t)u.alloc.api};
        return vt_enc_mem(w, &c, e->time, u.alloc.address, u.alloc.size, stack, u.alloc.corr);
    }
    case VT_EV_FREE: {
        vt_mctx c = {.stream = u.free.stream, .device = u.free.device, .thread = thread, .stack = stack,
                     .free = 1, .kind = (uint32_t)u.free.kind, .api = (uint32_t)u.free.api};
        return vt_enc_mem(w, &c, e->time, u.free.address, 0, 0, u.free.corr);
    }
    case VT_EV_ALLOC_FAILED: {
        Vramtrace__AllocFailed x = VRAMTRACE__ALLOC_FAILED__INIT;
        rc = vt_in_cstr(w, u.af.error_name, &x.error_name);
        if (rc)
            return rc;
        x.size = u.af.size;
        x.device = u.af.device;
        x.kind = (Vramtrace__MemoryKind)u.af.kind;
        x.api = (Vramtrace__AllocApi)u.af.api;
        x.error = u.af.error;
        x.stream = u.af.stream;
        x.pool = u.af.pool;
        x.thread = thread;
        x.stack = stack;
        x.corr = vt_d_corr(w, u.af.corr);
        m.af = x;
        r.alloc_failed = &m.af;
        break;
    }
    case VT_EV_VMM_RESERVE: {
        Vramtrace__VmmReserve x = VRAMTRACE__VMM_RESERVE__INIT;
        x.address = u.vr.address;
        x.size = u.vr.size;
        x.thread = thread;
        x.stack = stack;
        x.corr = vt_d_corr(w, u.vr.corr);
        m.vres = x;
        r.vmm_reserve = &m.vres;
        break;
    }
    case VT_EV_VMM_ADDRESS_FREE: {
        Vramtrace__VmmAddressFree x = VRAMTRACE__VMM_ADDRESS_FREE__INIT;
        x.address = u.vr.address;
        x.size = u.vr.size;
        x.thread = thread;
        x.corr = vt_d_corr(w, u.vr.corr);
        m.vaf = x;
        r.vmm_address_free = &m.vaf;
        break;
    }
    case VT_EV_VMM_UNMAP: {
        Vramtrace__VmmUnmap x = VRAMTRACE__VMM_UNMAP__INIT;
        x.address = u.vr.address;
        x.size = u.vr.size;
        x.thread = thread;
        x.corr = vt_d_corr(w, u.vr.corr);
        m.vun = x;
        r.vmm_unmap = &m.vun;
        break;
    }
    case VT_EV_VMM_CREATE: {
        Vramtrace__VmmCreate x = VRAMTRACE__VMM_CREATE__INIT;
        x.handle = u.vc.handle;
        x.size = u.vc.size;
        x.device = u.vc.device;
        x.kind = (Vramtrace__MemoryKind)u.vc.kind;
        x.thread = thread;
        x.stack = stack;
        x.corr = vt_d_corr(w, u.vc.corr);
        m.vc = x;
        r.vmm_create = &m.vc;
        break;
    }
    case VT_EV_VMM_RELEASE: {
        Vramtrace__VmmRelease x = VRAMTRACE__VMM_RELEASE__INIT;
        x.handle = u.vrel.handle;
        x.thread = thread;
        x.corr = vt_d_corr(w, u.vrel.corr);
        m.vrel = x;
        r.vmm_release = &m.vrel;
        break;
    }
    case VT_EV_VMM_MAP: {
        Vramtrace__VmmMap x = VRAMTRACE__VMM_MAP__INIT;
        x.address = u.vm.address;
        x.size = u.vm.size;
        x.offset = u.vm.offset;
        x.handle = u.vm.handle;
        x.thread = thread;
        x.corr = vt_d_corr(w, u.vm.corr);
        m.vm = x;
        r.vmm_map = &m.vm;
        break;
    }
    case VT_EV_POOL: {
        Vramtrace__Pool x = VRAMTRACE__POOL__INIT;
        x.op = (Vramtrace__PoolOp)u.pool.op;
        x.pool = u.pool.pool;
        x.device = u.pool.device;
        x.value = u.pool.value;
        x.thread = thread;
        x.stack = stack;
        x.corr = vt_d_corr(w, u.pool.corr);
        m.pool = x;
        r.pool = &m.pool;
        break;
    }
    case VT_EV_POOL_USAGE: {
        Vramtrace__PoolUsage x = VRAMTRACE__POOL_USAGE__INIT;
        x.pool = u.pu.pool;
        x.device = u.pu.device;
        x.reserved_current = u.pu.reserved_current;
        x.reserved_high = u.pu.reserved_high;
        x.used_current = u.pu.used_current;
        x.used_high = u.pu.used_high;
        m.pu = x;
        r.pool_usage = &m.pu;
        break;
    }
    case VT_EV_MEMORY_USAGE: {
        Vramtrace__MemoryUsage x = VRAMTRACE__MEMORY_USAGE__INIT;
        x.device = u.mu.device;
        x.free = u.mu.free;
        x.total = u.mu.total;
        m.mu = x;
        r.memory_usage = &m.mu;
        break;
    }
    case VT_EV_KERNEL: {
        /* definitions first (they flush kernels still pending), then the
         * kernel joins the pending batch */
        uint32_t launch;
        rc = vt_in_launch(w, &u.k, &launch);
        if (rc)
            return rc;
        return vt_enc_kernel(w, launch, &u.k, e->time);
    }
    case VT_EV_NVTX: {
        Vramtrace__Nvtx x = VRAMTRACE__NVTX__INIT;
        rc = vt_in_cstr(w, u.nvtx.message, &x.message);
        if (!rc)
            rc = vt_in_cstr(w, u.nvtx.domain, &x.domain);
        if (rc)
            return rc;
        x.op = (Vramtrace__NvtxOp)u.nvtx.op;
        x.range_id = u.nvtx.range_id;
        x.thread = thread;
        m.nvtx = x;
        r.nvtx = &m.nvtx;
        break;
    }
    case VT_EV_DEVICE: {
        Vramtrace__Device x = VRAMTRACE__DEVICE__INIT;
        x.index = u.dev.index;
        x.name = (char *)(u.dev.name ? u.dev.name : "");
        x.uuid.data = u.dev.uuid;
        x.uuid.len = sizeof(u.dev.uuid);
        x.total_memory = u.dev.total_memory;
        x.cc_major = u.dev.cc_major;
        x.cc_minor = u.dev.cc_minor;
        x.pci_bus_id = (char *)(u.dev.pci_bus_id ? u.dev.pci_bus_id : "");
        m.dev = x;
        r.device = &m.dev;
        break;
    }
    case VT_EV_DROPPED: {
        Vramtrace__Dropped x = VRAMTRACE__DROPPED__INIT;
        rc = vt_in_cstr(w, u.drop.reason, &x.reason);
        if (rc)
            return rc;
        x.source = (Vramtrace__DropSource)u.drop.source;
        x.count = u.drop.count;
        w->other_dropped += u.drop.count;
        m.drop = x;
        r.dropped = &m.drop;
        break;
    }
    case VT_EV_NOTE: {
        Vramtrace__Note x = VRAMTRACE__NOTE__INIT;
        x.severity = (Vramtrace__Severity)u.note.severity;
        x.text = (char *)(u.note.text ? u.note.text : "");
        m.note = x;
        r.note = &m.note;
        break;
    }
    case VT_EV_MODULE:
        w->events++;
        return vt_in_module(w, &u.mod);
    case VT_EV_THREAD: {
        uint32_t id;
        w->events++;
        return vt_in_thread(w, u.th.tid ? u.th.tid : e->tid, u.th.name ? u.th.name : "", &id);
    }
    case VT_ENT_CODE:
        return vt_in_code(w, &u.code);
    default:
        return 0;
    }
    if (L->timed == 1)
        r.ts_delta = vt_d_host(w, e->time);
    else if (L->timed == 2)
        r.ts_delta = vt_d_dev(w, e->time);
    rc = vt_enc_put(w, &r);
    if (!rc)
        w->events++; /* every accepted emit counts, DEVICE included */
    return rc;
}

/* Process one ring entry; an entry the encoder cannot intern without
 * allocating (signal mode) is dropped and counted. */
static int vt_enc_one(vt_writer *w, vt_ring *r, const vt_ent *e)
{
    int rc = vt_enc_entry(w, r, e);
    if (rc == VT_ERR_NOMEM) {
        w->enc_dropped++;
        return 0;
    }
    return rc;
}

static uint64_t vt_queue_drops(vt_writer *w)
{
    uint64_t n = atomic_load_explicit(&w->noring_dropped, memory_order_relaxed) + w->enc_dropped;
    for (vt_ring *r = atomic_load_explicit(&w->rings, memory_order_acquire); r; r = r->next)
        n += atomic_load_explicit(&r->dropped, memory_order_relaxed);
    return n;
}

static int vt_enc_report_drops(vt_writer *w)
{
    uint64_t n = vt_queue_drops(w);
    if (n == w->drops_reported)
        return 0;
    Vramtrace__Dropped d = VRAMTRACE__DROPPED__INIT;
    d.source = VRAMTRACE__DROP_SOURCE__DROP_WRITER_QUEUE;
    d.count = n - w->drops_reported;
    VT_REC(r, dropped, DROPPED, d);
    int rc = vt_enc_put(w, &r); /* ts_delta 0: at the current host time */
    if (!rc)
        w->drops_reported = n;
    return rc;
}

/* Drain in signal mode: ring by ring, no merge (no allocation). */
static void vt_enc_drain_simple(vt_writer *w)
{
    for (vt_ring *r = atomic_load_explicit(&w->rings, memory_order_acquire); r; r = r->next) {
        if (!r->data)
            continue;
        uint64_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
        uint64_t lim = atomic_load_explicit(&r->head, memory_order_acquire);
        while (pos < lim) {
            const vt_ent *e = (const vt_ent *)(r->data + (pos & (r->cap - 1)));
            if (e->type != VT_ENT_PAD && vt_enc_one(w, r, e))
                return;
            pos += e->size;
            atomic_store_explicit(&r->tail, pos, memory_order_release);
        }
    }
}

static inline void vt_cursor_key(vt_cursor *c)
{
    while (c->pos < c->lim) {
        const vt_ent *e = (const vt_ent *)(c->ring->data + (c->pos & (c->ring->cap - 1)));
        if (e->type != VT_ENT_PAD) {
            c->key = e->key;
            return;
        }
        c->pos += e->size;
        atomic_store_explicit(&c->ring->tail, c->pos, memory_order_release);
    }
}

/* One round: everything published in every ring at the start, merged by
 * key (host time) so that frees and allocations from different threads
 * stay in order.  Returns entries processed or a negative error. */
static long vt_enc_round(vt_writer *w)
{
    size_t n = 0;
    for (vt_ring *r = atomic_load_explicit(&w->rings, memory_order_acquire); r; r = r->next) {
        if (n == w->cap_cur) {
            size_t nc = w->cap_cur ? w->cap_cur * 2 : 16;
            vt_cursor *ncur = realloc(w->cur, nc * sizeof(*ncur));
            if (!ncur)
                break; /* the other rings wait for the next round */
            w->cur = ncur;
            w->cap_cur = nc;
        }
        vt_cursor *c = &w->cur[n];
        c->ring = r;
        c->pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
        c->lim = atomic_load_explicit(&r->head, memory_order_acquire);
        vt_cursor_key(c);
        if (c->pos < c->lim)
            n++;
    }
    long done = 0;
    while (n) {
        size_t b = 0;
        for (size_t i = 1; i < n; i++)
            if (w->cur[i].key < w->cur[b].key)
                b = i;
        vt_cursor *c = &w->cur[b];
        const vt_ent *e = (const vt_ent *)(c->ring->data + (c->pos & (c->ring->cap - 1)));
        int rc = vt_enc_one(w, c->ring, e);
        if (rc)
            return rc;
        c->pos += e->size;
        atomic_store_explicit(&c->ring->tail, c->pos, memory_order_release);
        vt_cursor_key(c);
        if (c->pos >= c->lim)
            w->cur[b] = w->cur[--n];
        if ((++done & 1023) == 0 && atomic_load_explicit(&w->emerg_sig, memory_order_relaxed)) {
            /* a fatal signal waits: drain for a bounded time only */
            uint64_t now = vt_mono_ns();
            if (!w->emerg_deadline)
                w->emerg_deadline = now + VT_EMERGENCY_DRAIN_NS;
            if (now >= w->emerg_deadline)
                break;
        }
    }
    return done;
}

/* Count what is left in the rings as dropped (the emergency flush ran out
 * of time) so that written + dropped still equals emitted. */
static void vt_enc_discard_rest(vt_writer *w)
{
    for (vt_ring *r = atomic_load_explicit(&w->rings, memory_order_acquire); r; r = r->next) {
        if (!r->data)
            continue;
        uint64_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
        uint64_t lim = atomic_load_explicit(&r->head, memory_order_acquire);
        while (pos < lim) {
            const vt_ent *e = (const vt_ent *)(r->data + (pos & (r->cap - 1)));
            if (e->type != VT_ENT_PAD && e->type != VT_ENT_CODE)
                w->enc_dropped++;
            pos += e->size;
        }
        atomic_store_explicit(&r->tail, pos, memory_order_release);
    }
}

/* Final records: drop count, End, end of the zstd frame. */
static int vt_enc_finish(vt_writer *w, vt_endreason reason, int sig)
{
    if (w->ended)
        return 0;
    int rc = vt_enc_report_drops(w);
    if (!rc) {
        Vramtrace__End m = VRAMTRACE__END__INIT;
        m.reason = (Vramtrace__EndReason)reason;
        m.signal = sig;
        m.events = w->events;
        m.dropped = w->drops_reported + w->other_dropped;
        VT_REC(r, end, END, m);
        r.ts_delta = vt_d_host(w, vt_tnow(w));
        rc = vt_enc_put(w, &r);
    }
    if (!rc)
        rc = vt_enc_feed(w, ZSTD_e_end);
    w->ended = 1;
    w->dirty = 0;
    return rc;
}

/* -------------------------------------------------------- writer thread */

static void vt_mark_off(vt_writer *w, const char *why)
{
    int exp = 0;
    if (atomic_compare_exchange_strong(&w->msg_claim, &exp, 1)) {
        size_t n = strlen(why);
        if (n >= sizeof(w->errmsg))
            n = sizeof(w->errmsg) - 1;
        memcpy(w->errmsg, why, n);
        w->errmsg[n] = 0;
        atomic_store_explicit(&w->msg_ready, 1, memory_order_release);
    }
    atomic_store(&w->off, 1);
}

static void *vt_thread_main(void *arg)
{
    vt_writer *w = arg;
    atomic_store(&w->thread_tid, (uint32_t)syscall(SYS_gettid));
    uint64_t done_local = 0, drain_local = 0, last_tick = vt_mono_ns();
    for (;;) {
        int exp = 0;
        if (!atomic_compare_exchange_strong(&w->enc_owner, &exp, 1)) {
            /* a signal handler is flushing */
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
            continue;
        }
        if (w->ended || atomic_load(&w->err)) {
            atomic_store(&w->enc_owner, 0);
            break;
        }
        uint64_t req = atomic_load(&w->flush_req);
        uint64_t dreq = atomic_load(&w->drain_req);
        int stop = atomic_load(&w->stop);
        long got = vt_enc_round(w);
        int esig = atomic_load(&w->emerg_sig);
        if (esig) {
            if (!w->emerg_deadline)
                w->emerg_deadline = vt_mono_ns() + VT_EMERGENCY_DRAIN_NS;
            while (got > 0 && vt_mono_ns() < w->emerg_deadline)
                got = vt_enc_round(w);
            vt_enc_discard_rest(w);
            vt_enc_finish(w, VT_END_SIGNAL, esig);
            vt_mark_off(w, "emergency flush done by the writer thread");
            atomic_store(&w->emerg_done, 1);
            atomic_store(&w->enc_owner, 0);
            break;
        }
        if (stop) {
            if (got >= 0)
                vt_enc_round(w); /* stragglers published meanwhile */
            vt_enc_discard_rest(w); /* emits racing with close: counted as dropped */
            vt_enc_finish(w, w->stop_reason, w->stop_sig);
            atomic_store(&w->enc_owner, 0);
            break;
        }
        vt_enc_report_drops(w);
        uint64_t now = vt_mono_ns();
        if (w->cfg.tick_fn && now - last_tick >= 100000000ull) {
            last_tick = now;
            w->cfg.tick_fn();
        }
        if (req != done_local || (w->dirty && now - w->dirty_since >= w->poll_ns))
            vt_enc_flush(w);
        /* how long to sleep, decided while the encoder state is ours */
        uint64_t nap = w->poll_ns;
        if (w->dirty) {
            uint64_t age = vt_mono_ns() - w->dirty_since;
            nap = age >= w->poll_ns ? 0 : w->poll_ns - age;
        }
        if (w->cfg.tick_fn && nap > 100000000ull) /* the tick's period */
            nap = 100000000ull;
        atomic_store(&w->enc_owner, 0);
        if (req != done_local || dreq != drain_local) {
            done_local = req;
            drain_local = dreq;
            pthread_mutex_lock(&w->mu);
            w->flush_done = req;
            w->drain_done = dreq;
            pthread_cond_broadcast(&w->cv);
            pthread_mutex_unlock(&w->mu);
        }
        struct timespec cpu;
        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
            atomic_store_explicit(&w->st_cpu, (uint64_t)cpu.tv_sec * 1000000000ull + (uint64_t)cpu.tv_nsec,
                                  memory_order_relaxed);
        if (atomic_load(&w->err))
            break;

        /* sleep until woken or the next poll */
        uint32_t seq = atomic_load(&w->wake_seq);
        atomic_store(&w->sleeping, 1);
        if (atomic_load(&w->flush_req) == done_local && atomic_load(&w->drain_req) == drain_local &&
            !atomic_load(&w->stop) && !atomic_load(&w->emerg_sig)) {
            uint64_t t = nap;
            if (t) {
                struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
                syscall(SYS_futex, (uint32_t *)&w->wake_seq, FUTEX_WAIT_PRIVATE, seq, &ts, NULL, 0);
            }
        }
        atomic_store(&w->sleeping, 0);
    }
    struct timespec cpu;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
        atomic_store_explicit(&w->st_cpu, (uint64_t)cpu.tv_sec * 1000000000ull + (uint64_t)cpu.tv_nsec,
                              memory_order_relaxed);
    pthread_mutex_lock(&w->mu);
    w->thread_exited = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* ---------------------------------------------------------- public API */

void vt_writer_config_default(vt_writer_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->path = NULL;
    cfg->fd = -1;
    cfg->flush_ms = 100;
    cfg->frame_bytes = 4u << 20;
    cfg->ring_bytes = 1u << 20;
    cfg->level = 3;
    cfg->clock = VT_CLOCK_MONOTONIC;
}

static int vt_enc_header(vt_writer *w, const vt_ev_header *hdr)
{
    vt_ev_header dflt;
    if (!hdr) {
        memset(&dflt, 0, sizeof(dflt));
        hdr = &dflt;
    }
    Vramtrace__Header h = VRAMTRACE__HEADER__INIT;
    h.magic = VT_FORMAT_MAGIC;
    h.format_version = VT_FORMAT_VERSION;
    h.tool_version = (char *)VT_TOOL_VERSION;
    h.pid = hdr->pid ? hdr->pid : (uint32_t)getpid();
    h.ppid = hdr->ppid ? hdr->ppid : (uint32_t)getppid();
    char host[256] = "";
    if (hdr->hostname)
        h.hostname = (char *)hdr->hostname;
    else if (gethostname(host, sizeof(host) - 1) == 0)
        h.hostname = host;
    if (hdr->program)
        h.program = (char *)hdr->program;
    char **argv = NULL; /* NULL entries become "" (protobuf-c would strlen them) */
    if (hdr->argv && hdr->argc) {
        argv = calloc(hdr->argc, sizeof(*argv));
        if (!argv)
            return VT_ERR_NOMEM;
        for (uint32_t i = 0; i < hdr->argc; i++)
            argv[i] = (char *)(hdr->argv[i] ? hdr->argv[i] : "");
        h.n_argv = hdr->argc;
        h.argv = argv;
    }
    Vramtrace__EnvVar *env = NULL, **envp = NULL;
    if (hdr->nenv && hdr->env_names && hdr->env_values) {
        env = calloc(hdr->nenv, sizeof(*env));
        envp = calloc(hdr->nenv, sizeof(*envp));
        if (!env || !envp) {
            free(env);
            free(envp);
            free(argv);
            return VT_ERR_NOMEM;
        }
        for (uint32_t i = 0; i < hdr->nenv; i++) {
            Vramtrace__EnvVar e = VRAMTRACE__ENV_VAR__INIT;
            e.name = (char *)(hdr->env_names[i] ? hdr->env_names[i] : "");
            e.value = (char *)(hdr->env_values[i] ? hdr->env_values[i] : "");
            env[i] = e;
            envp[i] = &env[i];
        }
        h.n_env = hdr->nenv;
        h.env = envp;
    }
    h.clock = (Vramtrace__ClockDomain)(hdr->clock ? hdr->clock : w->cfg.clock);
    h.trace_clock_ns = hdr->trace_clock_ns ? hdr->trace_clock_ns : vt_tnow(w);
    if (hdr->realtime_ns) {
        h.realtime_ns = hdr->realtime_ns;
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        h.realtime_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    }
    h.kernels = hdr->kernels != 0;
    h.native_stacks = hdr->native_stacks != 0;
    h.python_stacks = hdr->python_stacks != 0;
    VT_REC(r, header, HEADER, h);
    int rc = vt_enc_put(w, &r);
    free(env);
    free(envp);
    free(argv);
    if (rc)
        return rc;
    w->host_t = w->dev_t = h.trace_clock_ns;
    return vt_enc_sync(w);
}

static void vt_writer_destroy(vt_writer *w)
{
    if (!w)
        return;
    vt_unregister(w);
    vt_ring *r = atomic_load(&w->rings);
    while (r) {
        vt_ring *next = r->next;
        /* No producer may emit during free, but a thread holding this ring
         * may exit meanwhile: drop the data now, and the control page with
         * the last reference (ours or the thread's, see vt_ring_release). */
        munmap(r->data, r->cap);
        r->data = NULL;
        if (r->cwords) {
            for (unsigned k = 0; k < VT_SREF_SLOTS; k++)
                free(r->cwords[k].words);
            free(r->cwords);
            r->cwords = NULL;
        }
        if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1)
            vt_ring_unmap(r);
        r = next;
    }
    ZSTD_freeCCtx(w->zc);
    free(w->stage);
    free(w->out);
    vt_imap_free(&w->strings);
    vt_imap_free(&w->frames);
    vt_imap_free(&w->stacks);
    vt_imap_free(&w->launches);
    vt_imap_free(&w->rawstacks);
    vt_umap_free(&w->threads);
    vt_umap_free(&w->codes);
    free(w->mods);
    free(w->cur);
    free(w);
}

int vt_writer_create(vt_writer **out, const vt_writer_config *cfg_in, const vt_ev_header *hdr)
{
    if (!out)
        return VT_ERR_INVALID;
    *out = NULL;
    vt_writer_config cfg;
    if (cfg_in)
        cfg = *cfg_in;
    else
        vt_writer_config_default(&cfg);
    if (!cfg.path && cfg.fd < 0) {
        if (!cfg.quiet)
            fprintf(stderr, "vramtrace: no trace path given: disabled\n");
        return VT_ERR_INVALID;
    }
    if (!cfg.flush_ms)
        cfg.flush_ms = 100;
    if (!cfg.frame_bytes)
        cfg.frame_bytes = 4u << 20;
    if (!cfg.ring_bytes)
        cfg.ring_bytes = 1u << 20;
    if (!cfg.level)
        cfg.level = 3;
    if (cfg.level > 19) /* "ultra" levels need hundreds of MB inside the traced process */
        cfg.level = 19;
    pthread_once(&g_once, vt_global_init);

    vt_writer *w = aligned_alloc(64, (sizeof(*w) + 63) & ~(size_t)63); /* the producers' line */
    if (w)
        memset(w, 0, sizeof(*w));
    if (!w) {
        if (cfg.fd >= 0)
            close(cfg.fd);
        if (!cfg.quiet)
            fprintf(stderr, "vramtrace: out of memory: disabled\n");
        return VT_ERR_NOMEM;
    }
    int rc = 0;
    w->cfg = cfg;
    w->cfg.path = NULL; /* not kept: the caller owns it */
    w->reg_slot = -1;
    w->fd = -1;
    w->serial = atomic_fetch_add(&g_serial, 1) + 1;
    w->fork_gen = atomic_load(&g_fork_gen);
    w->clock_fn = cfg.clock_fn;
    w->clockid = cfg.clock == VT_CLOCK_REALTIME ? CLOCK_REALTIME : CLOCK_MONOTONIC;
    uint64_t cap = 4096;
    while (cap < cfg.ring_bytes && cap < (1ull << 30))
        cap <<= 1;
    w->ring_cap = cap;
    w->flush_ns = (uint64_t)cfg.flush_ms * 1000000ull;
    w->poll_ns = w->flush_ns / 4 ? w->flush_ns / 4 : 1;
    if (cfg.path)
        snprintf(w->name, sizeof(w->name), "%s", cfg.path);
    else
        snprintf(w->name, sizeof(w->name), "fd %d", cfg.fd);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);

    if (cfg.fd >= 0) {
        w->fd = cfg.fd;
    } else {
        w->fd = open(cfg.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (w->fd < 0) {
            int e = errno;
            if (e == EEXIST || e == ELOOP) {
                rc = VT_ERR_EXISTS;
                vt_fail(w, rc, "cannot create trace file: %s (refusing to overwrite an existing file or follow a symlink)",
                        strerror(e));
            } else {
                rc = e == ENOSPC || e == EDQUOT ? VT_ERR_NOSPACE : VT_ERR_IO;
                vt_fail(w, rc, "cannot create trace file: %s", strerror(e));
            }
            goto fail_free;
        }
    }

    w->zc = ZSTD_createCCtx();
    w->stage_cap = VT_STAGE_BYTES;
    w->stage = malloc(w->stage_cap);
    w->out_cap = ZSTD_CStreamOutSize();
    w->out = malloc(w->out_cap);
    if (!w->zc || !w->stage || !w->out || vt_imap_init(&w->strings, 1024) || vt_imap_init(&w->frames, 4096) ||
        vt_imap_init(&w->stacks, 1024) || vt_imap_init(&w->launches, 256) || vt_imap_init(&w->rawstacks, 1024) || vt_umap_init(&w->threads, 64) ||
        vt_umap_init(&w->codes, 1024)) {
        rc = VT_ERR_NOMEM;
        vt_fail(w, rc, "out of memory");
        goto fail_close;
    }
    if (ZSTD_isError(ZSTD_CCtx_setParameter(w->zc, ZSTD_c_compressionLevel, cfg.level)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(w->zc, ZSTD_c_checksumFlag, 1))) {
        rc = VT_ERR_INVALID;
        vt_fail(w, rc, "invalid zstd level %d", cfg.level);
        goto fail_close;
    }
#if VT_ZSTD_RAW_LITERALS
    /* Literals stored, not Huffman-coded: a reader decompresses the
     * bench's training loop ~1.4x faster (Huffman decoding was a quarter of
     * zstd's time there; KernelBlock columns are bits Huffman cannot
     * shrink), for 2-8 % more bytes (BENCHMARKS.md "## reader").  A zstd
     * without the parameter keeps Huffman literals. */
    (void)ZSTD_CCtx_setParameter(w->zc, ZSTD_c_literalCompressionMode, ZSTD_ps_disable);
#endif
    rc = vt_enc_header(w, hdr);
    /* Run zstd once now: it allocates its workspace on the first call, which
     * must not be the emergency flush inside a signal handler. */
    if (!rc)
        rc = vt_enc_feed(w, ZSTD_e_continue);
    if (rc) {
        if (!atomic_load(&w->err))
            vt_fail(w, rc, "cannot encode the header: %s", vt_strerror(rc));
        goto fail_close;
    }

    for (int i = 0; i < VT_MAX_WRITERS; i++) {
        vt_writer *exp = NULL;
        if (atomic_compare_exchange_strong(&g_reg[i], &exp, w)) {
            w->reg_slot = i;
            break;
        }
    }

    /* The writer thread blocks every signal it can: the host's handlers
     * run elsewhere and a broken pipe is an EPIPE, not a SIGPIPE. */
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int prc = pthread_create(&w->thread, NULL, vt_thread_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (prc) {
        rc = VT_ERR_NOMEM;
        vt_fail(w, rc, "cannot start the writer thread: %s", strerror(prc));
        goto fail_close;
    }
    w->thread_started = 1;
    pthread_setname_np(w->thread, "vt-writer");
    *out = w;
    return 0;

fail_close:
    vt_unregister(w);
    close(w->fd);
fail_free:
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    vt_writer_destroy(w);
    return rc;
}

/* Ask the writer thread for a round (and a zstd flush if `flush`) and
 * wait until it has done one that started after this call. */
static int vt_writer_request(vt_writer *w, int flush)
{
    if (!w)
        return VT_ERR_DISABLED;
    if (vt_is_off(w)) {
        int e = atomic_load(&w->err);
        return e ? e : VT_ERR_DISABLED;
    }
    _Atomic uint64_t *req = flush ? &w->flush_req : &w->drain_req;
    uint64_t *done = flush ? &w->flush_done : &w->drain_done;
    pthread_mutex_lock(&w->mu);
    uint64_t target = atomic_fetch_add(req, 1) + 1;
    pthread_mutex_unlock(&w->mu);
    vt_wake(w);
    pthread_mutex_lock(&w->mu);
    while (*done < target && !w->thread_exited) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
    int ok = *done >= target;
    pthread_mutex_unlock(&w->mu);
    int e = atomic_load(&w->err);
    if (e)
        return e;
    return ok ? 0 : VT_ERR_DISABLED;
}

int vt_writer_flush(vt_writer *w)
{
    return vt_writer_request(w, 1);
}

int vt_writer_drain(vt_writer *w)
{
    return vt_writer_request(w, 0);
}

void vt_writer_emergency_flush(vt_writer *w, int sig)
{
    if (!w || vt_forked(w) || atomic_load(&w->off) || atomic_load(&w->closed))
        return;
    int saved_errno = errno;
    int exp = 0;
    if (atomic_compare_exchange_strong(&w->enc_owner, &exp, 2)) {
        if (!w->ended && !atomic_load(&w->err)) {
            /* A pipe without reader must give EPIPE here, not a SIGPIPE
             * that replaces the signal being handled. */
            sigset_t pipe_set, old_mask, pend;
            sigemptyset(&pipe_set);
            sigaddset(&pipe_set, SIGPIPE);
            sigpending(&pend);
            int was_pending = sigismember(&pend, SIGPIPE);
            pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask);
            w->no_alloc = 1;
            w->in_signal = 1;
            vt_enc_drain_simple(w);
            vt_enc_discard_rest(w);
            vt_enc_finish(w, VT_END_SIGNAL, sig);
            w->no_alloc = 0;
            w->in_signal = 0;
            sigpending(&pend);
            if (!was_pending && sigismember(&pend, SIGPIPE)) {
                struct timespec zero = {0, 0};
                sigtimedwait(&pipe_set, NULL, &zero);
            }
            pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
            vt_mark_off(w, "emergency flush done in the signal handler");
        }
        atomic_store(&w->enc_owner, 0);
        errno = saved_errno;
        return;
    }
    /* The writer thread holds the encoder.  If we are that thread (a
     * fault inside the writer) nobody can finish: give up. */
    if ((uint32_t)syscall(SYS_gettid) == atomic_load(&w->thread_tid)) {
        errno = saved_errno;
        return;
    }
    exp = 0;
    atomic_compare_exchange_strong(&w->emerg_sig, &exp, sig ? sig : -1);
    vt_wake(w);
    for (int i = 0; i < VT_EMERGENCY_WAIT_MS; i++) {
        /* done by the writer thread, or by another handler (then `off`) */
        if (atomic_load(&w->emerg_done) || atomic_load(&w->err) || atomic_load(&w->off))
            break;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    errno = saved_errno;
}

int vt_writer_close(vt_writer *w, vt_endreason reason, int sig)
{
    if (!w)
        return 0;
    if (vt_forked(w)) {
        /* a fork child: the thread does not exist here and the file is the
         * parent's; nothing to write */
        atomic_store(&w->closed, 1);
        return 0;
    }
    if (atomic_exchange(&w->closed, 1))
        return atomic_load(&w->err);
    atomic_store(&w->off, 1); /* emits from now on are refused */
    if (w->thread_started) {
        w->stop_reason = reason;
        w->stop_sig = sig;
        atomic_store(&w->stop, 1);
        vt_wake(w);
        pthread_join(w->thread, NULL);
        w->thread_started = 0;
    }
    vt_unregister(w); /* before the fd number can be reused */
    if (w->fd >= 0) {
        close(w->fd);
        w->fd = -1;
    }
    vt_mark_off(w, "closed");
    return atomic_load(&w->err);
}

void vt_writer_free(vt_writer *w)
{
    if (!w)
        return;
    if (vt_forked(w)) {
        /* never join or lock in a fork child: the parent's thread is not
         * here and the mutex may have been copied locked */
        vt_writer_destroy(w);
        return;
    }
    vt_writer_close(w, VT_END_NORMAL, 0);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    vt_writer_destroy(w);
}

int vt_writer_disabled(const vt_writer *w)
{
    return !w || vt_is_off(w);
}

const char *vt_writer_errmsg(const vt_writer *w)
{
    if (!w)
        return "";
    if (vt_forked(w))
        return "disabled in a fork()ed child";
    if (atomic_load_explicit(&((vt_writer *)w)->msg_ready, memory_order_acquire))
        return w->errmsg;
    return "";
}

void vt_writer_get_stats(const vt_writer *w, vt_writer_stats *st)
{
    memset(st, 0, sizeof(*st));
    if (!w)
        return;
    vt_writer *ww = (vt_writer *)w;
    for (vt_ring *r = atomic_load_explicit(&ww->rings, memory_order_acquire); r; r = r->next) {
        st->emitted += atomic_load_explicit(&r->emitted, memory_order_relaxed);
        st->dropped += atomic_load_explicit(&r->dropped, memory_order_relaxed);
        st->rings++;
    }
    st->dropped += atomic_load_explicit(&ww->noring_dropped, memory_order_relaxed);
    st->records = atomic_load_explicit(&ww->st_records, memory_order_relaxed);
    st->bytes_raw = atomic_load_explicit(&ww->st_raw, memory_order_relaxed);
    st->bytes_written = atomic_load_explicit(&ww->st_written, memory_order_relaxed);
    st->frames = atomic_load_explicit(&ww->st_frames, memory_order_relaxed);
    st->writer_cpu_ns = atomic_load_explicit(&ww->st_cpu, memory_order_relaxed);
}
