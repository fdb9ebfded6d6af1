/* vt_analyze_int.h - private structures shared by the files of src/analyze
 * (replay, symbolization, report, diff).  Not a public interface. */
#ifndef VT_ANALYZE_INT_H
#define VT_ANALYZE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vt_analyze.h"
#include "vt_event.h"
#include "vt_map.h"
#include "vt_reader.h"

#define VT_GROWTH_BUCKETS 64   /* floor buckets per call site (power of two), by allocation count */
#define VT_GROWTH_LOG 8         /* frees after a site's last allocation logged for growth */
#define VT_GROWTH_MIN_STEPS 5  /* step-aligned samples a growing site needs (8 steps give 7) */
#define VT_GROWTH_MIN_SAMPLES 8 /* samples without steps, */
#define VT_GROWTH_MIN_NS 16000000ull /* and the time they must span (16 ms) */
#define VT_MAX_DEVICES 64
#define VT_MAX_OOM_DETAIL 16   /* failed allocations described in full per process */
#define VT_OOM_TOP 5
#define VT_MAX_NOTES 32
#define VT_MAX_ERRORS 16

/* --- live blocks: address -> block, open addressing, 32-byte slots --- */
typedef struct {
    uint64_t addr;   /* 0 = empty slot */
    uint64_t size;
    uint64_t t;      /* allocation time */
    uint32_t unit;
    uint32_t fslot;  /* its address's slot in the freed-address cache (vt_replay.c) */
} vt_block;

typedef struct {
    vt_block *slots;
    size_t cap, used; /* used: slots taken, by live blocks and dead ones (young table,
                         see vt_replay.c: counted when needed, not kept) */
    unsigned shift;   /* 64 - log2(cap) */
} vt_blockmap;

typedef struct vt_devstate vt_devstate;

/* --- an accounting unit: one call stack on one device in one memory kind.
 * What every allocation and free of the replay's fast paths reads and
 * writes comes first: the first 64 bytes are all an allocation touches,
 * the first 128 all a free does (with the view's tail and a new peak);
 * units are 64-byte aligned (vt_replay.c allocates them so), so that is
 * two cache lines per unit, which stay in L1 beside the young blocks. --- */
typedef struct {
    _Alignas(64) uint32_t device;
    uint8_t kind;
    uint8_t resident;  /* kind counts in the device's live total (device, device_static, array) */
    uint8_t segment;   /* c10 && (malloc || vmm): a caching-allocator segment */
    uint8_t since_start; /* a leak held since the start: allocated before the first step, not growing */
    uint8_t api;       /* API of the first allocation */
    int64_t live_bytes; /* the live count is allocs - frees (vt_unit_live_count) */
    uint64_t allocs, alloc_bytes, max_live;
    uint64_t g_next;       /* allocation count where the site's next growth bucket starts (0: none yet) */
    uint64_t pk_epoch;
    vt_devstate *dev;      /* &p->dev[device] of its process (the fast paths' device counters
                              at one address mode, no multiply by the struct's size) */
    /* second line: frees */
    uint64_t frees;
    uint64_t lifetime_sum; /* sum of lifetimes of freed blocks (ns) */
    uint64_t floor_cur;    /* floor[gcur], kept in step while events come */
    /* view at T (see vt_replay.c: base + folded tail) */
    int64_t at_bytes, at_count;
    /* live at the device's peak (lazy snapshot, see vt_replay.c) */
    int64_t pk_bytes, pk_count;
    /* tensors: live at the device's allocated peak (peak_kind[TENSOR]),
     * the same lazy snapshot on its own epoch (tpeak_epoch) */
    int64_t tk_bytes, tk_count;
    uint64_t tk_epoch;
    uint32_t gcur;
    uint32_t stack;
    /* colder */
    uint8_t c10;       /* stack passes through PyTorch's caching allocator (libc10_cuda) */
    uint8_t pool;      /* VT_POOL_*: stack passes through a pool above CUDA (vt_pools.c) */
    uint32_t thread;       /* the thread (Thread id) of its first allocation */
    uint32_t holder;       /* 1 + the holder (vt_proc.holders) of most of its live bytes, 0 none */
    uint64_t held_bytes;   /* of its live bytes, those that holder holds */
    int64_t never_bytes, never_count; /* of those, still live at the end of the trace */
    int64_t late_bytes, late_count;   /* of those, allocated after the view (counted in at_bytes too) */
    int64_t kept_bytes, kept_count;   /* of at_bytes, what the process's leak_bytes counts: never freed
                                         (a growing or test-kept site: live at the view, its teardown
                                         part too); 0 for module globals and, with tensor events, segments */
    /* growth floors (vt_replay_account.c): bucket b holds the site's
     * allocations [b << g_shift, (b + 1) << g_shift); floor[b] is the
     * lowest live byte count from its first allocation to the next
     * bucket's, floor[VT_GROWTH_BUCKETS + b] the time of its first one;
     * then VT_GROWTH_LOG (time, live after) of the frees after its last
     * allocation (growth_log) */
    uint64_t *floor;
    uint32_t g_shift;      /* allocations per bucket = 2^g_shift */
    uint64_t g_last_t;     /* the site's last allocation, */
    uint64_t g_last_live;  /* its live bytes after it, */
    uint64_t g_last_floor; /* the open bucket's floor then */
    uint32_t g_nlog;       /* frees logged since (floor + 2 * VT_GROWTH_BUCKETS: time, live after) */
    uint64_t g_t0;         /* the site's first allocation */
    /* results of finish */
    int growth_flag;
    int test_kept;      /* a site of what a test left live (1 MiB or more; vt_proc_finish) */
    double growth_rate;    /* bytes / s over the late window */
    double growth_per_step;/* bytes per step over the late window, < 0 if unknown */
    double growth_conf;    /* 0..1 */
    uint64_t grown;        /* floor at the end of the window - lowest floor */
    uint32_t growth_rises; /* number of rises in the late window */
    uint32_t growth_samples; /* step-aligned samples the test used */
    uint64_t growth_t0;    /* time of the first of them */
    char *key;             /* process-independent site key (lazy) */
    char *mkey;            /* the same by meaning: user frames and symbol names, no offsets (lazy) */
} vt_unit;

/* blocks of u live now: each allocation counts in allocs, each free of one
 * of its blocks in frees (one update per event instead of two) */
static inline int64_t vt_unit_live_count(const vt_unit *u)
{
    return (int64_t)(u->allocs - u->frees);
}

/* pending view-at-T contribution (see vt_replay.c) */
typedef struct {
    uint64_t t;
    int64_t bytes;   /* +size for an allocation, -size for a free; a pair: +size */
    uint32_t unit;
    int32_t count;   /* +1 / -1; 0: a block's pair (allocated before T, freed
                        at t), which counts (+size, +1) only if never folded */
} vt_tail;

/* A block live at the view's bound and freed after it (the process's
 * teardown, most often): kept by its table key, so that what the holder
 * walk at exit saw live (holders.PID.txt) still joins to it after the
 * program's exit freed it (see late_free_note) */
typedef struct {
    uint64_t key, size;
    uint64_t ta, t;  /* allocated, freed */
    uint32_t unit;
} vt_late;

typedef struct {
    uint64_t handle, size, t;
    uint32_t unit, nmaps;
    int released;
} vt_vmm;

typedef struct {
    uint64_t t;
    uint64_t reserved, used;
} vt_pool_sample;

typedef struct {
    uint64_t pool;
    uint32_t device;
    uint64_t reserved_high, used_high, reserved_last, used_last;
    uint64_t reserved_max_t;
    vt_pool_sample *s; /* decimated series */
    size_t ns, stride, seen;
    uint64_t creates, destroys, trims;
} vt_pool;

/* allocated vs reserved at one time (vt_devstate's series) */
typedef struct {
    uint64_t t;
    int64_t allocated, reserved;
} vt_alloc_point;
#define VT_ALLOC_SERIES_MAX 1024

/* The part of the leak list a live-at-the-view site goes in (the order of
 * vt_proc.leak_order, the text's headings): 0 the sites that grew over the
 * steps or that a test left live (what the verdict names), 1 the rest of what came during the run,
 * 2 what was held since the start, 3 what the program freed at its
 * teardown, after the view (listed, not counted).  A growing site freed at
 * teardown is in part 0 all the same: a Python program frees at its exit
 * the tensors its globals kept, and those are its leak. */
#define VT_LEAK_PART(u) ((u)->growth_flag || (u)->test_kept ? 0 : (u)->since_start ? 2 : (u)->never_bytes <= 0 ? 3 : 1)

struct vt_devstate {
    int present;         /* Device record seen */
    int used;            /* any block on it (set by vt_proc_finish: a unit there with allocations) */
    char *name;
    uint64_t total;
    uint32_t cc_major, cc_minor;
    int64_t live[VT_MEM__COUNT];
    int64_t peak_kind[VT_MEM__COUNT];
    uint64_t peak_kind_t[VT_MEM__COUNT];
    uint64_t peak_kind_until[VT_MEM__COUNT];
    int64_t live_dev;    /* device-resident: DEVICE + DEVICE_STATIC + ARRAY */
    int64_t peak;        /* of live_dev */
    uint64_t peak_t;
    /* the time of the first allocation or free after the peak (0: none yet):
     * the peak's level held over [peak_t, peak_until), so an allocation that
     * arrives late (an activity record) with a time before peak_until was
     * live at the peak */
    uint64_t peak_until;
    uint64_t peak_epoch;
    uint64_t tpeak_epoch; /* of peak_kind[VT_MEM_TENSOR]: PyTorch's allocated peak */
    int64_t at_kind[VT_MEM__COUNT]; /* at the view time, by kind (finish) */
    /* PyTorch's caching allocator: reserved = its segments' live bytes;
     * allocated = live[VT_MEM_TENSOR] (tensor events, issue 23) */
    int64_t reserved, reserved_peak, reserved_at;
    uint64_t reserved_peak_t;
    vt_alloc_point *series; /* (t, allocated, reserved) at segment changes and NVTX events, decimated */
    uint32_t nseries, series_stride;
    uint64_t series_seen;
    /* driver view (MemoryUsage) */
    uint64_t drv_samples, drv_total, drv_last_free, drv_last_t;
    uint64_t drv_max_used, drv_max_t;
    int64_t drv_traced_then;
};

typedef struct {
    uint64_t t;
    uint64_t size;
    uint32_t device, stack, thread;
    uint8_t kind, api;
    int32_t error;
    char *error_name;
    int64_t dev_live;                /* traced device-resident live bytes then */
    int64_t kind_live[VT_MEM__COUNT];
    uint64_t drv_free, drv_total, drv_t; /* last driver sample (0 = none) */
    uint32_t top_unit[VT_OOM_TOP];
    int64_t top_bytes[VT_OOM_TOP];
    int64_t top_count[VT_OOM_TOP];
    uint32_t ntop;
    uint64_t pool_reserved, pool_used;  /* last PoolUsage of the device, summed over pools */
    int have_pool;
    uint64_t c10_reserved;           /* live bytes of caching-allocator segments on the device */
    int have_tensors;                /* the caching allocator's tensor events: then */
    int64_t allocated, reserved;     /* its tensors' and segments' live bytes on the device */
    int64_t largest_free;            /* the largest range of its segments no tensor covers (-1: unknown) */
    /* One entry is one request: its first failed call and the allocator's
     * retries of it (t, size and the state above: its last call) */
    uint64_t t_first;
    uint32_t attempts;               /* failed calls of this request */
} vt_oom;

/* Failed calls that are a library probing, not the program failing: the
 * expected error codes of known probes (vt_replay_events.c probe_of).
 * Counted apart, never as the program's failures.  X(NAME, name, what) */
#define VT_PROBES(X)                                                                                          \
    X(HANDLE_TYPE, handle_type,                                                                               \
      "cuMemCreate refused a handle type with CUDA_ERROR_NOT_PERMITTED or NOT_SUPPORTED: PyTorch's "           \
      "expandable segments try one, then fall back to another")                                               \
    X(NO_CONTEXT, no_context,                                                                                 \
      "cudaMallocAsync with no current CUDA context, INVALID_CONTEXT, DEINITIALIZED or CONTEXT_IS_DESTROYED: " \
      "a thread's first call, which the allocator retries after setting the device, or teardown")
enum {
    VT_PROBE_NONE = 0,
#define VT_PROBE_ENUM(N, n, w) VT_PROBE_##N,
    VT_PROBES(VT_PROBE_ENUM)
#undef VT_PROBE_ENUM
    VT_PROBE__COUNT
};

/* The probe a failed call is (VT_PROBE_*), or VT_PROBE_NONE: the program's
 * own failure (vt_replay_events.c). */
int vt_failed_probe(const vt_ev_alloc_failed *e);

/* A request that failed lately, for telling an allocator's retries of it
 * from a new request (vt_replay_events.c on_failed). */
#define VT_REQ_RECENT 8
#define VT_FAIL_MAP 64 /* failed calls mapped to their request's vt_oom */
typedef struct {
    uint64_t key, size, t; /* key: the stack below the allocator's frames, hashed; t: its last call */
    uint32_t thread, device;
    uint32_t detail;       /* its vt_oom + 1; 0: not described */
    uint8_t closed, oom;   /* closed: the caching allocator reported it (a later call is a new request) */
} vt_request;

/* Times of the occurrences of a step candidate, decimated to at most
 * VT_OCC_MAX (every stride-th occurrence kept), to count steps in a window. */
#define VT_OCC_MAX 256
typedef struct {
    uint64_t *t;
    uint32_t n, stride;
    uint64_t seen;
} vt_occ;

typedef struct {
    char *msg;      /* normalized message (trailing digits stripped) */
    vt_occ occ;
    uint64_t count, first_t, last_t;
    uint64_t last_end; /* the last pop of a pushed occurrence */
    uint64_t dur_sum;
    uint32_t min_depth;
} vt_nvtx_stat;

typedef struct {
    uint64_t key;     /* launch id, or name id | 1<<32 */
    uint64_t count, last_idx, first_t, last_t;
    vt_occ occ;     /* only for the first 1024 launch signatures */
    /* Misra-Gries summary of the gaps (in kernels) between occurrences:
     * the most frequent gap is the candidate period */
    uint64_t gap[4];
    uint32_t gcnt[4];
} vt_launch_stat;

typedef struct { uint32_t id; uint32_t msg; uint64_t t; } vt_nvtx_open;

/* A test: an NVTX range of the domain "vramtrace.test" (the pytest
 * plugin, vt_inject_test.c), and what it allocated and left live
 * (vt_replay_tests.c).  Counted blocks as in the report's rows: with
 * tensor events the tensors, else device-resident blocks. */
#define VT_TEST_DOMAIN "vramtrace.test"
#define VT_TEST_SITES 5 /* call sites kept per test, largest first */
typedef struct {
    uint32_t unit;
    uint64_t bytes, blocks;
} vt_test_site_row;
typedef struct {
    char *name;          /* the node id */
    uint64_t t0, t1;     /* begin and end (t1: the trace's last event when it never ended) */
    int ended;           /* 0: the process stopped inside the test */
    uint64_t allocated, allocs; /* counted blocks allocated in it */
    uint64_t leaked, leaked_blocks; /* ... still live at its end */
    uint64_t peak;       /* the most of them live at once */
    uint32_t nsites;     /* call sites of what it left, in all */
    vt_test_site_row site[VT_TEST_SITES];
} vt_test;

/* A symbolized native frame (possibly several for inlines) - see vt_symbol.c */
typedef struct {
    char *function;   /* demangled, or NULL */
    char *file;       /* or NULL */
    uint32_t line;
    int inlined;      /* this frame was inlined into the next one */
} vt_symline;

/* One "L LINE INLINED FUNCTION\tFILE" line of a symbol entry, as TRACE.sym
 * and the symbol cache write it (docs/FORMAT.md): line[0..len) without its
 * newline.  Fills *out (function and file malloc'd, NULL when empty);
 * returns 0, or -1 when the line does not parse.  vt_symbols.c. */
int vt_symline_parse(const char *line, size_t len, vt_symline *out);

typedef struct {
    int status;       /* VT_SYM_* */
    vt_symline *lines;
    uint32_t nlines;
} vt_symres;

/* VT_SYM_UNRESOLVED_THERE: the binary is not here and the trace's .sym,
 * which the recording host wrote, has nothing of it (that host did not
 * resolve it either); never written into a .sym */
enum { VT_SYM_OK = 0, VT_SYM_NO_MODULE, VT_SYM_NOT_FOUND, VT_SYM_BUILD_ID_MISMATCH,
       VT_SYM_NO_SYMBOL, VT_SYM_DISABLED, VT_SYM_NO_DEBUG_INFO, VT_SYM_UNRESOLVED_THERE };
const char *vt_sym_status_name(int status);

typedef struct vt_symbolizer vt_symbolizer;
int vt_symbolizer_create(vt_symbolizer **out, const char *sysroot);
void vt_symbolizer_free(vt_symbolizer *s);
/* Resolve `rel` (address relative to the ELF file's vaddr space, i.e. ip -
 * load_bias, already moved into the call for return addresses) in the file
 * `path` whose build-id should be `bid`. Result owned by the symbolizer. */
const vt_symres *vt_symbolizer_lookup(vt_symbolizer *s, const char *path, const uint8_t *bid,
                                      uint32_t bid_len, uint64_t rel);
/* Symbols that travel with a trace (vt_symbols.c): a result resolved on the
 * recording host for (build id, rel), used when the file is not here. */
uint64_t vt_symbols_bid_hash(const uint8_t *bid, uint32_t n);
/* the key of (build-id hash, address) in maps of resolved addresses */
uint64_t vt_symbols_key(uint64_t bidh, uint64_t rel);
int vt_symbolizer_add_travel(vt_symbolizer *s, uint64_t bidh, uint64_t rel, const vt_symres *r);
/* A .sym was read for the traces this symbolizer serves (even an empty
 * one: its host resolved nothing): binaries not here are then never
 * "binary not found" (vt_symbolizer_lookup). */
void vt_symbolizer_saw_travel(vt_symbolizer *s);
/* Load PATH (a trace's .sym file) into s: 0, or a vt_err (a missing file is
 * VT_ERR_NOT_FOUND and says nothing). */
int vt_symbols_load(vt_symbolizer *s, const char *path, char *msg, size_t len);

/* A module's symbol table sorted once (vt_symtab.c): the name that
 * dwfl_module_addrinfo gives for an address, in O(log n) instead of its scan
 * of every symbol.  create: NULL when the module's table cannot be indexed
 * (then ask libdwfl); lookup: *decided 0 when the index cannot tell (ask
 * libdwfl), else the name or NULL for none.  Lives no longer than the Dwfl. */
typedef struct vt_symtab vt_symtab;
struct Dwfl_Module;
vt_symtab *vt_symtab_create(struct Dwfl_Module *mod);
void vt_symtab_free(vt_symtab *t);
const char *vt_symtab_lookup(const vt_symtab *t, uint64_t addr, int *decided);

/* The build-id symbol cache (vt_symcache.c; its directory: vt_symcache_dir). */
/* A module's key: its build id in hex, or without one "p" and a hash of
 * FILE's path, size and mtime (FILE as found on this host); -1 when there
 * is neither (FILE not here). */
int vt_symcache_key(char *out, size_t len, const char *file, const uint8_t *bid, uint32_t bid_len);
/* Read the cache file of KEY in DIR, calling add(arg, rel, result) per
 * entry (the result is the callback's to copy); add's nonzero return stops
 * and is returned.  0; VT_ERR_NOT_FOUND (no file, msg ""); VT_ERR_CORRUPT,
 * VT_ERR_VERSION or VT_ERR_TOO_LARGE with msg (the file is to be ignored;
 * entries may have been added before a damage was seen only if add ran). */
typedef int (*vt_symcache_add_fn)(void *arg, uint64_t rel, const vt_symres *r);
int vt_symcache_read(const char *dir, const char *key, vt_symcache_add_fn add, void *arg, char *msg, size_t len);
typedef struct {
    uint64_t rel;
    const vt_symres *r;
} vt_symcache_ent;
/* Replace the cache file of KEY with ents (sorted by the caller), written
 * beside and renamed; creates DIR.  0 or a vt_err with msg. */
int vt_symcache_write(const char *dir, const char *key, const vt_symcache_ent *ents, size_t n, char *msg,
                      size_t len);
/* An exclusive flock on KEY.lock in DIR across read-merge-write: the fd to
 * pass to unlock, or -1 (no lock could be had: go on without). */
int vt_symcache_lock(const char *dir, const char *key);
void vt_symcache_unlock(int fd);

/* The symbolizer with a cache (vt_symbol.c): results are looked up in the
 * cache directory DIR before the module is opened, new ones are written
 * back by vt_symbolizer_flush.  Call before the first lookup. */
int vt_symbolizer_set_cache(vt_symbolizer *s, const char *dir);
/* 1 when a lookup of (path, bid, rel) would not open the file (the cache
 * or an earlier lookup has it); reads the module's cache once. */
int vt_symbolizer_cached(vt_symbolizer *s, const char *path, const uint8_t *bid, uint32_t bid_len, uint64_t rel);
/* Merge the results resolved since the cache was read into the cache files
 * (under their locks).  0, or the first vt_err with msg. */
int vt_symbolizer_flush(vt_symbolizer *s, char *msg, size_t len);
/* What a symbolizer did: modules whose file it opened (and their bytes),
 * lookups answered from the cache and resolved from the file. */
typedef struct {
    uint64_t opened, opened_bytes;
    uint64_t cache_hits, resolved;
    unsigned cache_damaged;   /* cache files ignored as damaged */
} vt_symbolizer_stats;
void vt_symbolizer_get_stats(const vt_symbolizer *s, vt_symbolizer_stats *st);
/* The first message about a damaged cache file since the last call (""
 * if none); each damaged file is reported once. */
const char *vt_symbolizer_cache_msg(vt_symbolizer *s);

typedef struct {
    uint32_t kind, module, function, file, line;
    uint64_t ip;
} vt_pframe;

typedef struct {
    uint32_t *frames;
    uint32_t nframes;
    uint32_t parent;
} vt_pstack;

typedef struct {
    char *path;
    uint64_t load_bias, start, end;
    uint8_t *build_id;
    uint32_t build_id_len;
    int c10;   /* libc10_cuda / caching allocator library */
    int alloc_lib; /* c10, or vramtrace's PyTorch shim: the allocator's frames */
    int pool;  /* VT_POOL_*: a pool library above CUDA (vt_pool_of_path) */
} vt_pmodule;

/* A Python object that holds CUDA tensors at exit (holders.PID.txt,
 * vt_holders.c). */
typedef struct {
    char *path, *type;
    uint64_t tensors, bytes, graph_bytes; /* as the walk found them */
    uint64_t joined_bytes;                /* of those, in blocks live at the end */
} vt_holder;

/* A walk before the end (vt_holders.c): at the first failed allocation
 * (holders.PID.oom.txt) or on a signal (holders.PID.sig-N.txt); its
 * largest holders as the walk found them (not joined: the blocks of that
 * moment are not kept). */
#define VT_WALK_TOP 5
#define VT_WALKS_MAX 17
typedef struct {
    int signal;                      /* 0: at a failed allocation */
    uint32_t device;
    uint64_t request, dev_allocated, dev_free; /* what the OOM observer was told */
    uint64_t objects;
    double seconds;
    int limited;
    uint32_t nh;
    vt_holder h[VT_WALK_TOP];
} vt_walk;

/* One traced process (one trace file). */
typedef struct {
    char *name;       /* file path or label */
    /* header */
    int have_header;
    uint32_t pid, ppid;
    uint64_t trace_clock_ns, realtime_ns; /* the header's clock pair: trace clock -> wall clock */
    char *host, *program, *clock;
    char **argv;
    uint32_t argc;
    char *env_rank, *env_alloc_conf, *env_world;
    char *env_xla_alloc, *env_tf_alloc; /* XLA_PYTHON_CLIENT_ALLOCATOR, TF_GPU_ALLOCATOR */
    int hdr_kernels, hdr_native, hdr_python;
    uint32_t format_version;
    char *tool_version;
    /* definitions */
    char **strings; size_t nstrings;
    vt_pframe *frames; size_t nframes;
    vt_pstack *stacks; size_t nstacks;
    vt_pmodule *modules; size_t nmodules;
    uint32_t *launch_name; size_t nlaunches;
    /* time */
    int have_t0;
    uint64_t t0, t_last, t_first_alloc;
    int have_alloc_t;
    /* counts */
    uint64_t nev[VT_EV__MAX];
    uint64_t records;
    uint64_t unverified_events; /* events decoded from frames not verified by their checksum (vt_reader_unverified) */
    /* state */
    vt_unit *units; size_t nunits, capunits;
    vt_map unitmap;
    uint32_t *stack_unit; size_t nstack_unit; /* stack id -> last unit + 1 (cache) */
    uint32_t *lstat_by_launch; size_t nlstat_by_launch; /* launch id -> lstats index + 1 */
    vt_blockmap blocks;   /* young blocks (see vt_replay.c) */
    vt_blockmap old;      /* old blocks */
    uint64_t *old_filter; /* Bloom filter of the old blocks' addresses (vt_replay.c) */
    size_t filter_words;
    unsigned filter_shift; /* 64 - log2(filter_words) */
    uint64_t filter_sets;
    uint64_t filter_fp;    /* lookups it sent to the old table in vain since built */
    vt_map vmm_handles;   /* handle -> index+1 into vmms */
    vt_vmm *vmms; size_t nvmms, capvmms; uint32_t *vmm_free; size_t nvmm_free, capvmm_free;
    vt_map vmm_maps;      /* address -> handle */
    vt_map vmm_map_size;  /* address -> size */
    vt_map vmm_reserves;  /* address -> size */
    int64_t va_reserved, va_reserved_peak, mapped, mapped_peak;
    uint64_t *freed_cache; /* direct-mapped recently freed addresses (double free detection) */
    vt_devstate dev[VT_MAX_DEVICES];
    uint32_t ndev_seen;  /* 1 + highest device index seen */
    /* view at T */
    uint64_t cand;        /* lower bound of T (last kernel end / last marker) */
    int cand_set;
    vt_tail *tail; size_t ntail, captail;
    int tail_overflow;
    vt_late *late; size_t nlate, caplate; /* freed after the bound (vt_late) */
    int late_overflow;
    uint64_t view_below;  /* cand + 1 while the fast path may decide the view, else 0 */
    uint64_t view_t;      /* final T (absolute) */
    int view_mode;        /* resolved vt_at_mode */
    int marker_found;
    /* kernels */
    uint64_t kernels, kernel_first, kernel_last_end;
    vt_launch_stat *lstats; size_t nlstats, caplstats;
    vt_map lstat_map;
    /* nvtx */
    vt_nvtx_stat *nvtx; size_t nnvtx, capnvtx;
    /* NVTX push/pop nesting, per thread (the first 16 threads; the rest share the last) */
    struct { uint32_t thread, depth; vt_nvtx_open st[32]; } nv_thr[16];
    /* the traced threads' names (Thread records; the first VT_MAX_THREAD_NAMES) */
    struct { uint32_t id, tid; char name[40]; } thr[64];
    uint32_t nthr;
    /* who holds what (vt_holders.c) */
    vt_holder *holders;
    size_t nholders, capholders;
    char *holders_file;
    uint64_t walk_objects;
    double walk_seconds;
    int walk_limited;
    vt_walk walks[VT_WALKS_MAX]; /* the OOM walk first, then the signal walks in order */
    uint32_t nwalks;
    uint32_t nnv_thr;
    /* steps (finish) */
    uint64_t steps;
    uint64_t steps_view;     /* of them, those begun at or before the view (all, when the view is after them) */
    double step_period_ns;
    const vt_occ *step_occ;  /* occurrences of the chosen step marker, or NULL */
    uint64_t kernel_steps;   /* what the kernel-period detector counts (0: no period) */
    int steps_missing;       /* --steps NAME: no such repeating range */
    uint64_t grow_t0, grow_t1; /* the growth window: the steps, or [0, view) */
    char *step_source;
    /* growth timeline */
    /* pools */
    vt_pool *pools; size_t npools, cappools;
    /* oddities */
    uint64_t unknown_frees, double_frees, overlap_allocs, unknown_vmm_release, unknown_unmaps,
        double_vmm_release, zero_frees, bad_device, absurd_sizes;
    uint64_t t_seq;          /* the latest time of the host events that come in time order (not
                              * kernels, not the sampler's MemoryUsage and PoolUsage) */
    vt_table_budget *budget; /* the analysis's one memory budget (vt_analysis.tables), or NULL */
    int over_budget;         /* a new call site would have passed it (VT_ERR_LIMIT) */
    uint64_t time_back;      /* such events earlier than one before them (the clock ran backwards) */
    uint64_t time_back_max;  /* ... by at most this (ns) */
    uint64_t t_min;          /* the earliest host time, once time ran backwards (else t0) */
    uint64_t partial_overlaps; /* live blocks at the end whose ranges overlap in part */
    uint64_t dropped[4];
    /* failed allocations: failed = the program's failed requests (an
     * allocator's retries folded in, probes left out); failed_oom = those
     * out of memory; failed_calls = every AllocFailed record */
    uint64_t failed, failed_oom, failed_calls, failed_retries, failed_probes;
    uint64_t probes[VT_PROBE__COUNT];
    vt_oom oom[VT_MAX_OOM_DETAIL]; uint32_t noom;
    vt_request req[VT_REQ_RECENT]; uint32_t req_next;
    uint8_t fail_detail[VT_FAIL_MAP]; /* the k-th failed call: its request's vt_oom + 1, 0 none */
    char *notes[VT_MAX_NOTES]; int note_sev[VT_MAX_NOTES]; uint32_t nnotes, notes_more;
    int complete, end_reason, end_signal;
    uint64_t end_events, end_dropped;
    char *errors[VT_MAX_ERRORS + 1]; uint32_t nerrors; /* + the "N more" summary */
    /* results */
    uint64_t leak_bytes, leak_blocks, grown_total; /* leaks: live at the view and never freed */
    uint64_t teardown_bytes, teardown_blocks;      /* live at the view, freed after it (not counted) */
    uint64_t leak_td_bytes, leak_td_blocks;        /* of the leaks: freed only at teardown, from a site that
                                                    * grew or that a test left live (counted all the same) */
    uint64_t held_bytes;                           /* of the leaks: allocated before the first step, not growing */
    uint64_t static_bytes, static_blocks;  /* module globals at the view (not leaks) */
    uint32_t *leak_order; size_t nleak;
    uint32_t *growth_order; size_t ngrowth;
    uint64_t c10_allocs, c10_bytes_peak; int64_t c10_live;
    uint32_t c10_units;
    uint64_t reserved_grown; /* with tensor events: growth of the caching allocator's segments */
    uint32_t tensor_units; /* units of the caching allocator's tensor events: tensor level in the default allocator */
    /* tests (vt_replay_tests.c): the one open follows its blocks (the full
     * way for every event while it is open) */
    vt_test *tests; size_t ntests, captests;
    int test_open;
    uint64_t test_range;
    /* per way of counting (0: without tensor events, 1: with them; the
     * first tensor may come inside the test): live, peak, allocated */
    uint64_t test_live[2], test_peak[2], test_alloc[2], test_allocs[2];
    vt_map test_blk;  /* (address << 1 | tensor) -> size | counted-with << 62 | counted-without << 63 */
    vt_map test_unit; /* the same key -> unit */
    /* the consumer's view of the current event (vt_replay_note_block) */
    unsigned index;  /* in the analysis */
    unsigned nrb;
    vt_replay_block rb[VT_REPLAY_MAX_BLOCKS];
} vt_proc;

struct vt_analysis {
    vt_analysis_config cfg;
    char *at_marker;
    char *steps_name;   /* cfg.steps_name's copy, normalized as NVTX messages are */
    vt_proc **procs;
    size_t nprocs, capprocs;
    /* the files read, by device and inode: a file given twice (directly,
     * through a directory or a link) is read once, and its process says so */
    struct { uint64_t dev, ino; size_t proc; } *files;
    size_t nfiles, capfiles;
    vt_proc *cur;
    vt_symbolizer *sym;
    int finished;
    char *all_errors[VT_MAX_ERRORS * 4];
    vt_table_budget tables; /* the one memory budget: the definition tables of all files read, each
                             * process (VT_PROC_COST) and call site (VT_UNIT_COST) */
    vt_table_budget *budget; /* &tables, or another analysis's (vt_analysis_share_budget) */
    char budget_why[512];
    unsigned nall_errors;
    vt_replay_fn consumer; /* vt_analysis_set_consumer */
    void *consumer_ctx;
};

/* replay (vt_replay.c) */
int vt_proc_create(vt_proc **out, const char *name);
void vt_proc_free(vt_proc *p);
int vt_proc_feed(vt_analysis *a, vt_proc *p, const vt_event *ev);
/* ev[0 .. n) in order; stops at the first error and returns it */
int vt_proc_feed_batch(vt_analysis *a, vt_proc *p, const vt_event *ev, int n);
int vt_proc_finish(vt_analysis *a, vt_proc *p);
/* Steps (p->steps, p->step_period_ns) and each unit's growth results over
 * what was fed so far, for the live view; feeding may go on after it. */
void vt_proc_live_growth(vt_analysis *a, vt_proc *p);
/* Every block still live in p's tables (allocations, and VMM physical
 * allocations with their handle as the address): fn(ctx, address, size,
 * allocation time, unit); stops at fn's first nonzero return. */
int vt_proc_live_blocks(const vt_proc *p, int (*fn)(void *ctx, uint64_t addr, uint64_t size, uint64_t t, uint32_t unit),
                        void *ctx);
const char *vt_proc_string(const vt_proc *p, uint32_t id);
/* frames of a stack, innermost first; returns depth (may exceed max) */
uint32_t vt_proc_stack(const vt_proc *p, uint32_t stack, uint32_t *out, uint32_t max);

/* sites (vt_sites.c): printable frames, user frame, keys */
#define VT_MAX_STACK 256
typedef struct {
    int python;
    const char *function, *file;  /* may be NULL */
    uint32_t line;
    const char *module;           /* native: module path or NULL */
    uint64_t offset;              /* native: ip - load_bias (or ip) */
    int status;                   /* VT_SYM_* for native */
    int inlined;
    int internal;                 /* runtime / library frame, not the user's */
} vt_xframe;

/* Expand a stack into display frames (native inlines expanded).  Returns
 * the number written (<= max).  Index of the user frame in *user (or -1). */
uint32_t vt_site_frames(vt_analysis *a, const vt_proc *p, uint32_t stack, vt_xframe *out,
                        uint32_t max, int *user);
/* The PyTorch operator a site's allocation came from, read from the
 * symbolized native frames: op = the outermost at::_ops::NAME frame
 * ("aten::NAME"), node = the innermost autograd node running it
 * (torch::autograd::generated::NAME::apply, e.g. "MmBackward0"); ""
 * where the frames say neither (no symbols, not PyTorch).  Returns 1 if
 * either was found. */
int vt_site_operator(const vt_xframe *fr, uint32_t n, char *op, size_t oplen, char *node, size_t nodelen);
/* "function (file:line)" style one-line text of a frame into buf. */
void vt_xframe_format(const vt_xframe *f, char *buf, size_t len);
/* Process-independent key of a unit's call site (kind + frames); cached. */
const char *vt_unit_key(vt_analysis *a, vt_proc *p, uint32_t unit);
/* The key of a call site by meaning, for comparing runs: the memory kind and
 * the user's frames (Python file:function:line, native function names,
 * modules for frames without a symbol), never raw offsets; cached. */
const char *vt_unit_meaning_key(vt_analysis *a, vt_proc *p, uint32_t unit);
int vt_stack_is_c10(const vt_proc *p, uint32_t stack);
/* Pools above CUDA that the trace cannot see into (vt_pools.c): which
 * one a module's path belongs to, and which one a stack passes through
 * (its native frames' modules, the pool's Python frames); VT_POOL_NONE
 * when none. */
enum { VT_POOL_NONE = 0, VT_POOL_CUPY, VT_POOL_XLA, VT_POOL_TF, VT_POOL_RMM, VT_POOL__COUNT };
int vt_pool_of_path(const char *path);
int vt_pool_of_stack(const vt_proc *p, uint32_t stack);

/* output helpers (vt_report.c) */
void vt_fmt_bytes(char *buf, size_t len, double bytes);
/* a note of the analyzer itself in process p's notes */
void vt_proc_add_note(vt_proc *p, int sev, const char *text);
/* holders.PID.txt beside the trace joined to the blocks live at the end
 * (after vt_proc_finish): 0, or a vt_err with msg (none is not an error).
 * A walk at exit still running (holders.PID.pending locked) is waited for
 * at most wait_s seconds (0 in the live view: it asks again later). */
#define VT_HOLDERS_WAIT_S 60.0
int vt_proc_join_holders(vt_proc *p, const char *trace_path, double wait_s, char *msg, size_t len);
void vt_proc_free_holders(vt_proc *p);
/* What the analysis's budget (vt_analysis_config.max_memory) is charged
 * for each call site (the unit, twice over for its array's doubling, and
 * its map entry) and each process (the process's state, its freed-address
 * cache, its first tables: about 175 KiB measured), beside the definition
 * tables. */
#define VT_UNIT_COST (2 * sizeof(vt_unit) + 32)
#define VT_PROC_COST (sizeof(vt_proc) + (160u << 10))
/* a charges its processes, sites and tables to b (an export's second pass
 * to the first's: both are in memory together); before any file is added */
void vt_analysis_share_budget(vt_analysis *a, vt_table_budget *b);
/* the call sites of all a's processes (what the budget's errors count) */
uint64_t vt_analysis_units(const vt_analysis *a);
/* n bytes more from b: 0, or -1 (nothing taken) when b would pass its limit */
static inline int vt_budget_take(vt_table_budget *b, uint64_t n)
{
    if (!b)
        return 0;
    if (b->used + n > b->limit || b->used + n < b->used)
        return -1;
    b->used += n;
    return 0;
}
void vt_json_str(FILE *f, const char *s);
/* s escaped for a terminal (vt_escape.h) in one of 8 rotating static
 * buffers (2 KiB, a longer name ends in "..."): for a text rendering's
 * printf arguments; not thread-safe (the renderings run on one thread) */
const char *rep_t(const char *s);
/* one (a report) or two (a diff) rendered into memory, then written to o
 * through the terminal escaper with newlines kept */
int rep_text_escaped(vt_analysis *a, vt_analysis *b, int (*one)(vt_analysis *, FILE *),
                     int (*two)(vt_analysis *, vt_analysis *, FILE *), FILE *o);
/* the same through put (runs of bytes), for writers with their own buffer */
void vt_json_str_to(const char *s, void (*put)(void *ctx, const char *p, size_t n), void *ctx);

/* "step 12" -> "step" (vt_replay_events.c): malloc'd, NULL when out of memory */
char *vt_nvtx_normalize(const char *m);
/* Tests (vt_replay_tests.c): an NVTX record of the tests' domain begins
 * or ends one (1: it was, and nothing else is to be done with it); the
 * blocks of an event while one is open; the process ended (close it);
 * free. */
int vt_tests_nvtx(vt_proc *p, const vt_ev_nvtx *e, uint64_t t);
int vt_tests_blocks(vt_proc *p, const vt_replay_block *b, unsigned n);
int vt_tests_finish(vt_proc *p);
void vt_tests_free(vt_proc *p);
#endif
