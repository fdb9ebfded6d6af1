/* vt_writer_int.h - the writer's private state, shared by its parts
 * (docs/ARCHITECTURE.md, "The writer"):
 *
 *   vt_writer_produce.c  producers: thread state, rings, fork, vt_writer_emit
 *   vt_writer_output.c   records into the staging buffer, zstd, the file
 *   vt_writer_blocks.c   KernelBlock and MemBlock columns
 *   vt_writer_intern.c   strings, frames, stacks, threads, launches, modules
 *   vt_writer_encode.c   ring entries into records, the merge of the rings
 *   vt_writer.c          the writer thread and the public API
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
 * KernelBlock record per run of consecutive kernels (a run shorter than
 * VT_KBATCH_MIN as plain Kernel records): the batch goes out before any
 * other record (so the stream order of events and definitions is exactly
 * that of one record per kernel), when VT_KBATCH_MAX kernels are pending,
 * and before every zstd flush and frame end.  Allocations and frees are
 * held back the same way and written as one MemBlock per run (bit-packed
 * columns; contexts for what repeats: device, kind, API, stream, pool,
 * thread), a run shorter than VT_MBLOCK_MIN as Alloc and Free records.
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
#ifndef VT_WRITER_INT_H
#define VT_WRITER_INT_H

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
#define VT_KBATCH_MAX 256  /* kernels per KernelBlock record (bounded: packed without a size pass) */
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

/* ------------------------------------------------------- event layout */

typedef struct {
    uint16_t size;    /* sizeof the union member, 0 = not accepted from producers */
    int16_t site;     /* offset of a vt_site, -1 none */
    int16_t str[2];   /* offsets of const char * fields, -1 none */
    int16_t timed;    /* 1 host time, 2 device time, 0 definition */
} vt_layout;

#define L_SITE(T, m) (int16_t) offsetof(T, m)
#define L_STR(T, m) (int16_t) offsetof(T, m)

#define A8(x) (((x) + 7) & ~(uint64_t)7)
#define VT_REC(rec, field, CASE, msg)                                                                    \
    Vramtrace__Record rec = VRAMTRACE__RECORD__INIT;                                                     \
    rec.body_case = VRAMTRACE__RECORD__BODY_##CASE;                                                      \
    rec.field = &(msg)

/* ---- shared between the parts, by the part that defines them */

/* vt_writer_produce.c: the fork registry, rings */
extern _Atomic unsigned g_fork_gen;
extern _Atomic uint64_t g_serial;
extern _Atomic(vt_writer *) g_reg[VT_MAX_WRITERS];
extern pthread_once_t g_once;
void vt_unregister(vt_writer *w);
void vt_global_init(void);
uint64_t vt_mono_ns(void);
void vt_wake(vt_writer *w);
void vt_ring_unmap(vt_ring *r);
uint32_t vt_frames_unpack(const uint64_t *wd, uint32_t nwords, vt_frame *out);

/* vt_writer_output.c: the first error; records, zstd, the file */
void vt_fail(vt_writer *w, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int vt_enc_feed(vt_writer *w, ZSTD_EndDirective mode);
int vt_enc_record(vt_writer *w, const Vramtrace__Record *r);
int vt_enc_put(vt_writer *w, const Vramtrace__Record *r);
int vt_enc_sync(vt_writer *w);
int vt_enc_frame_check(vt_writer *w);
int vt_enc_flush(vt_writer *w);

/* vt_writer_blocks.c: pending kernels, allocations and frees */
int vt_enc_kbatch(vt_writer *w);
int vt_enc_kernel(vt_writer *w, uint32_t launch, const vt_ev_kernel *k, uint64_t start);
int vt_enc_mblock(vt_writer *w);
int vt_enc_mem(vt_writer *w, const vt_mctx *c, uint64_t time, uint64_t address, uint64_t size, uint32_t stack,
               uint64_t corr);

/* vt_writer_intern.c: definitions */
int vt_in_cstr(vt_writer *w, const char *s, uint32_t *id);
int vt_in_thread(vt_writer *w, uint32_t tid, const char *name, uint32_t *id);
int vt_in_module(vt_writer *w, const vt_ev_module *m);
int vt_in_code(vt_writer *w, const vt_code_payload *c);
int vt_in_site(vt_writer *w, const vt_site *s, uint32_t nwords, int want_stack, uint32_t *thread, uint32_t *stack);
int vt_in_site_ref(vt_writer *w, vt_ring *r, const vt_site *s, const vt_ent *e, uint32_t *thread, uint32_t *stack);
int vt_in_launch(vt_writer *w, const vt_ev_kernel *k, uint32_t *id);

/* vt_writer_encode.c: entries into records, rounds of the merge */
int vt_enc_report_drops(vt_writer *w);
void vt_enc_drain_simple(vt_writer *w);
long vt_enc_round(vt_writer *w);
void vt_enc_discard_rest(vt_writer *w);
int vt_enc_finish(vt_writer *w, vt_endreason reason, int sig);

/* ---- small helpers of several parts */

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

#endif
