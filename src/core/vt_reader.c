/* vt_reader.c - streaming trace reader (see vt_reader.h): records into
 * events, the hot path for kernels, allocations and frees, the main loop.
 * The parts and how they share state: vt_reader_int.h. */
#include "vt_reader_int.h"
/* ---- records -------------------------------------------------------- */

/* Zero a small struct with plain moves: memset() of these sizes became
 * `rep stos`, whose start-up cost was 15% of decoding a kernel record. */
#define ZERO(p)                                                               \
    do {                                                                      \
        static const __typeof__(*(p)) zero_;                                  \
        *(p) = zero_;                                                         \
    } while (0)

static const vt_ev_kernel kernel_none;

/* Kernel fields that come from its Launch (zero if the launch is unknown). */
static inline __attribute__((always_inline)) void kernel_resolve(const vt_reader *r, vt_ev_kernel *k)
{
    const launch_slot *ls = rd_tab_get(&r->launches, k->launch_id, sizeof(launch_slot));
    memcpy(k, ls ? &ls->k : &kernel_none, KERNEL_HEAD);
    if (__builtin_expect(ls && !k->name && k->name_id, 0)) /* its String came late */
        k->name = rd_str_get(r, k->name_id);
}

/* Fast path for the records that make most of a trace (kernels, allocs,
 * frees), in the layout every protobuf encoder (the writer included)
 * produces: Record{ts_delta, body} and the body's varint fields 1..n in
 * order, each optional, every varint at most 8 bytes.  [p, end) is the
 * Record, at most 127 bytes (its length one byte).  Returns 1 if done,
 * 0 to take the generic path (which also reports any error).  Only between
 * records of a frame that is in sync (no header or Sync checks pending),
 * with at least FAST_SLACK readable bytes after the record.
 *
 * Why it looks like this: which kind comes next, and how many bytes a
 * duration, a size or a time delta takes, are data that no branch
 * predictor guesses, and a wrong guess costs more than decoding a varint.
 * So varints are decoded without a branch on their length: load 4 or 8
 * bytes, find the last byte from the continuation bits, squeeze the 7-bit
 * groups together with shifts (values of 9-10 bytes, rare, take the
 * generic path).  Small fields that are one byte in practice (enums, thread ids,
 * correlation deltas) keep a one-byte test, which is then well predicted. */
#define FAST_SLACK 128

/* p: the varint (8 readable bytes).  Sets var and moves p.  Up to 4 bytes
 * (28 bits: ids, sizes, durations, time deltas) with 32-bit masks, which
 * are immediates; longer ones (addresses, handles) with 64-bit ones.  That
 * one branch depends on the field much more than on the value, so it is
 * well predicted. */
#define FAST_VARINT_SHIFTS(var)                                               \
    do {                                                                      \
        uint32_t w_, t_;                                                      \
        memcpy(&w_, p, 4); /* little-endian, as every target of this code */  \
        t_ = ~w_ & 0x80808080u;                                               \
        if (__builtin_expect(t_ != 0, 1)) {                                   \
            p += ((unsigned)__builtin_ctz(t_) + 1) >> 3;                      \
            w_ &= t_ ^ (t_ - 1);                                              \
            w_ = ((w_ & 0x7f007f00u) >> 1) | (w_ & 0x007f007fu);             \
            w_ = ((w_ & 0x3fff0000u) >> 2) | (w_ & 0x00003fffu);             \
            var = w_;                                                         \
        } else {                                                              \
            uint64_t x_, s_;                                                  \
            memcpy(&x_, p, 8);                                                \
            s_ = ~x_ & 0x8080808080808080ull;                                 \
            if (__builtin_expect(s_ == 0, 0))                                 \
                return 0; /* 9 or 10 bytes: the generic path */               \
            p += ((unsigned)__builtin_ctzll(s_) + 1) >> 3;                    \
            x_ &= s_ ^ (s_ - 1);                                              \
            x_ = ((x_ & 0x7f007f007f007f00ull) >> 1) | (x_ & 0x007f007f007f007full); \
            x_ = ((x_ & 0x3fff00003fff0000ull) >> 2) | (x_ & 0x00003fff00003fffull); \
            x_ = ((x_ & 0x0fffffff00000000ull) >> 4) | (x_ & 0x000000000fffffffull); \
            var = x_;                                                         \
        }                                                                     \
    } while (0)

#if defined(__x86_64__) && defined(__GNUC__)
#define VT_READER_PEXT 1
/* In asm, for what the intrinsics do not give: the two masks as memory
 * operands of andn and pext (as immediates, GCC loads each into a register
 * with a movabs before every use, since the hot loop has no register to
 * spare for them), and tzcnt's carry flag as the test for "no stop bit in
 * 8 bytes" (GCC adds a test, and an xor that breaks a false dependency of
 * tzcnt on its output which only Haswell and Broadwell have): 9
 * instructions per varint, not 15. */
static const uint64_t varint_stops = 0x8080808080808080ull, varint_bits = 0x7f7f7f7f7f7f7f7full;
/* s = the stop bits of x (~x & 0x80..), tz = index of the first; returns
 * nonzero when there is none */
static inline __attribute__((always_inline)) int varint_stop(uint64_t x, uint64_t *s, uint64_t *tz)
{
    int none;
    __asm__("andn %[k], %[x], %[s]\n\ttzcnt %[s], %[tz]"
            : [s] "=r"(*s), [tz] "=r"(*tz), "=@ccc"(none)
            : [x] "r"(x), [k] "m"(varint_stops));
    return none;
}
/* pext(x, 0x7f..): the 7-bit groups squeezed together */
static inline __attribute__((always_inline)) uint64_t varint_squeeze(uint64_t x)
{
    uint64_t v;
    __asm__("pext %[k], %[x], %[v]" : [v] "=r"(v) : [x] "r"(x), [k] "m"(varint_bits));
    return v;
}
/* the varint ends at its stop bit tz (7, 15, .. 63): tz / 8 + 1 bytes */
#define FAST_VARINT_PEXT(var)                                                 \
    do {                                                                      \
        uint64_t x_, s_, tz_;                                                 \
        memcpy(&x_, p, 8);                                                    \
        if (__builtin_expect(varint_stop(x_, &s_, &tz_), 0))                  \
            return 0; /* 9 or 10 bytes: the generic path */                   \
        p += (tz_ >> 3) + 1;                                                  \
        var = varint_squeeze(x_ & (s_ ^ (s_ - 1)));                           \
    } while (0)
#else
#define VT_READER_PEXT 0
#endif

/* One optional varint field `n` of a body read in field order.  Fields
 * are not checked against `end` one by one: a varint that runs past it
 * leaves p > end, and the final p == end check fails.  p moves at most 9
 * bytes per field and 11 fields are read at most, so no read goes more
 * than FAST_SLACK bytes past `end`. */
#define FAST_FIELD(n, var)                                                    \
    if (*p == TAG(n, WT_VARINT)) {                                            \
        p++;                                                                  \
        FAST_VARINT(var);                                                     \
    }
/* ... for a field that is nearly always there (a kernel's launch and
 * duration), laid out in line, not jumped to and back */
#define FAST_FIELD_L(n, var)                                                  \
    if (__builtin_expect(*p == TAG(n, WT_VARINT), 1)) {                       \
        p++;                                                                  \
        FAST_VARINT(var);                                                     \
    }
/* The same for a field that is one byte in practice (enums, thread ids,
 * correlation deltas): that test is well predicted and cheaper. */
#define FAST_FIELD1(n, var)                                                   \
    if (*p == TAG(n, WT_VARINT)) {                                            \
        p++;                                                                  \
        if (__builtin_expect(*p < 0x80, 1))                                   \
            var = *p++;                                                       \
        else                                                                  \
            FAST_VARINT(var);                                                 \
    }
/* ... and one that is nearly always there (the thread), in line */
#define FAST_FIELD1_L(n, var)                                                 \
    if (__builtin_expect(*p == TAG(n, WT_VARINT), 1)) {                       \
        p++;                                                                  \
        if (__builtin_expect(*p < 0x80, 1))                                   \
            var = *p++;                                                       \
        else                                                                  \
            FAST_VARINT(var);                                                 \
    }

/* A value the fast path stored into the event, read back from there: a
 * load where the compiler would otherwise keep its own copy of the value
 * through the record's fields, on the stack (no register is free). */
#define FAST_REREAD(lv) (*(const volatile __typeof__(lv) *)&(lv))

/* The reader's running values that the fast path changes, held in locals
 * by its callers (stores into the events could alias them in r, which
 * would make the compiler reload them after every field), and the last
 * thread id's tid: the fast path does not change the tables, and a
 * Thread record (the slow path) clears r's copy, so a thread's tid stays
 * what it was from one call of the hot path to the next (it was looked up
 * again at the start of every batch: a mispredict per 64 records). */
typedef struct {
    uint64_t corr, host_time, device_time;
    uint32_t thr, tid; /* thread 0 is never defined: tid 0 */
} fast_state;

static inline __attribute__((always_inline)) void fast_load(const vt_reader *r, fast_state *fs)
{
    fs->corr = r->corr;
    fs->host_time = r->host_time;
    fs->device_time = r->device_time;
    fs->thr = r->fast_thr;
    fs->tid = r->fast_tid;
}

static inline __attribute__((always_inline)) void fast_store(vt_reader *r, const fast_state *fs)
{
    r->corr = fs->corr;
    r->host_time = fs->host_time;
    r->device_time = fs->device_time;
    r->fast_thr = fs->thr;
    r->fast_tid = fs->tid;
}

static inline __attribute__((always_inline)) uint32_t fast_tid(const vt_reader *r, fast_state *fs, uint32_t thr)
{
    if (__builtin_expect(thr != fs->thr, 0)) {
        fs->thr = thr;
        fs->tid = tid_of(r, thr);
    }
    return fs->tid;
}

/* The end of an Alloc or Free on the hot path (the event zeroed before:
 * no frames, the stack is by id): the thread and its tid, the running
 * correlation id (moved by dc, unzigzagged) into *corr. */
static inline __attribute__((always_inline)) void fast_site(const vt_reader *r, fast_state *fs, vt_site *s,
                                                            uint64_t *corr, uint64_t thr, uint64_t dc)
{
    s->thread = (uint32_t)thr;
    s->tid = fast_tid(r, fs, (uint32_t)thr);
    fs->corr += dc;
    *corr = fs->corr;
}

/* The same into the event's field `dst`, converted by the cast `CAST`
 * (enums through int32_t, as the slow path does); left as it is (zeroed
 * before) when absent. */
#define FAST_SET(n, dst, CAST)                                                \
    if (*p == TAG(n, WT_VARINT)) {                                            \
        uint64_t v_;                                                          \
        p++;                                                                  \
        FAST_VARINT(v_);                                                      \
        dst = CAST(v_);                                                       \
    }
/* FAST_SET for a field that is nearly always there (an address, a size, a
 * stack): its decoding laid out in line, not jumped to and back. */
#define FAST_SET_L(n, dst, CAST)                                              \
    if (__builtin_expect(*p == TAG(n, WT_VARINT), 1)) {                       \
        uint64_t v_;                                                          \
        p++;                                                                  \
        FAST_VARINT(v_);                                                      \
        dst = CAST(v_);                                                       \
    }
#define FAST_SET1(n, dst, CAST)                                               \
    if (*p == TAG(n, WT_VARINT)) {                                            \
        uint64_t v_;                                                          \
        p++;                                                                  \
        if (__builtin_expect(*p < 0x80, 1))                                   \
            v_ = *p++;                                                        \
        else                                                                  \
            FAST_VARINT(v_);                                                  \
        dst = CAST(v_);                                                       \
    }

/* A correlation delta (zigzag, one byte in practice) into var, unzigzagged
 * where it is present: an absent one (a delta of 0, common) costs no
 * decoding at all. */
#define FAST_ZIGZAG1(n, var) FAST_SET1(n, var, (uint64_t)unzigzag)

/* Two consecutive fields n and n + 1 that are one byte each in practice
 * (an allocation's kind and API): both tags and both values in one 4-byte
 * compare, else one by one. */
#define FAST_SET1_PAIR(n, dst1, CAST1, dst2, CAST2)                           \
    {                                                                         \
        const uint32_t tags_ = TAG(n, WT_VARINT) | TAG(n + 1, WT_VARINT) << 16; \
        uint32_t pw_;                                                         \
        memcpy(&pw_, p, 4);                                                   \
        if (__builtin_expect((pw_ & 0x80ff80ffu) == tags_, 1)) {              \
            dst1 = CAST1(uint64_t)((pw_ >> 8) & 0xff);                        \
            dst2 = CAST2(uint64_t)(pw_ >> 24);                                \
            p += 4;                                                           \
        } else {                                                              \
            FAST_SET1(n, dst1, CAST1)                                         \
            FAST_SET1(n + 1, dst2, CAST2)                                     \
        }                                                                     \
    }

#define FAST_ATTR static inline __attribute__((always_inline))
#define FAST_NAME fast_record
#define FAST_VARINT FAST_VARINT_SHIFTS
#include "vt_reader_fast.h"
#undef FAST_ATTR
#undef FAST_NAME
#undef FAST_VARINT

#if VT_READER_PEXT
/* The same with pext: a varint of up to 8 bytes in ~8 instructions (find
 * the end, mask, pext) instead of ~20-40 for the shifts.  Only where pext
 * is fast: BMI2 and not AMD Zen 1/2 (microcoded there). */
#define FAST_ATTR static inline __attribute__((always_inline, target("bmi,bmi2")))
#define FAST_NAME fast_record_pext
#define FAST_VARINT FAST_VARINT_PEXT
#include "vt_reader_fast.h"
#undef FAST_ATTR
#undef FAST_NAME
#undef FAST_VARINT
#endif
#undef FAST_FIELD
#undef FAST_FIELD1
#undef FAST_FIELD1_L
#undef FAST_FIELD_L
#undef FAST_SET_L
#undef FAST_SET
#undef FAST_SET1
#undef FAST_SET1_PAIR
#undef FAST_ZIGZAG1
#undef FAST_VARINT_SHIFTS
#undef FAST_VARINT_PEXT
/* Decode one Record [p, end) into *ev.  Returns 1 (event), 0 (record
 * skipped: unknown body), VT_ERR_CORRUPT (r->why says why), VT_ERR_VERSION
 * (message in r->why) or VT_ERR_NOMEM. */

static int decode_record(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_event *ev)
{
    uint64_t ts = 0, cd = 0;
    uint32_t body = 0;
    const uint8_t *bp = NULL, *be = NULL;
    int rc = 0;

    while (p < end) {
        uint64_t tag, v;
        if (rd_varint_h(&p, end, r->hard, &tag))
            return rd_why(r, "bad tag in Record");
        if (tag == TAG(1, WT_VARINT)) {
            if (rd_varint_h(&p, end, r->hard, &v))
                return rd_why(r, "bad ts_delta varint");
            ts = v;
        } else if ((tag & 7) == WT_LEN && (tag >> 3) >= 2 &&
                   ((tag >> 3) < VT_EV__MAX || (tag >> 3) == VT_REC_KERNEL_BATCH ||
                    (tag >> 3) == VT_REC_KERNEL_BLOCK || (tag >> 3) == VT_REC_MEM_BLOCK)) {
            const uint8_t *q;
            size_t n;
            if (rd_len(&p, end, r->hard, &q, &n))
                return rd_why(r, "Record body runs past the end of the record");
            body = (uint32_t)(tag >> 3);
            bp = q;
            be = q + n;
        } else if (rd_skip_field(r, &p, end, tag, 0)) {
            return VT_ERR_CORRUPT;
        }
    }
    int64_t delta = unzigzag(ts);

    if (r->need_sync && body != VT_EV_SYNC)
        return rd_why(r, "zstd frame does not start with a Sync record");
    if (!r->any_record && r->st.resyncs == 0 && body != VT_EV_HEADER) {
        snprintf(r->why, sizeof(r->why), "not a vramtrace trace: the first record is not a header (%s)",
                 body ? vt_evtype_name((vt_evtype)body) : "no body");
        return VT_ERR_VERSION;
    }

    ev->type = (vt_evtype)body;
    switch (body) {
    case VT_EV_KERNEL: {
        vt_ev_kernel *k = &ev->u.kernel;
        ZERO(k);
        rc = dec_kernel(r, bp, be, k, &cd);
        kernel_resolve(r, k);
        break;
    }
    case VT_REC_KERNEL_BATCH:
    case VT_REC_KERNEL_BLOCK:
        /* n kernels: the first now, the rest from vt_reader_next() */
        rc = (body == VT_REC_KERNEL_BLOCK ? vt_kblock_decode : vt_kbatch_decode)(
            &r->kb, bp, be, r->hard, &r->device_time, &r->corr, &r->st.unknown_fields, r->why, sizeof(r->why));
        if (rc)
            return rc;
        r->any_record = 1;
        if (!r->kb.left)
            return 0; /* empty */
        vt_kbatch_next(&r->kb, ev);
        kernel_resolve(r, &ev->u.kernel);
        return 1;
    case VT_REC_MEM_BLOCK:
        /* n allocations and frees: the first now, the rest from vt_reader_next() */
        rc = vt_mblock_decode(&r->mb, bp, be, r->hard, &r->host_time, &r->corr, &r->st.unknown_fields, r->why,
                              sizeof(r->why));
        if (rc)
            return rc;
        r->any_record = 1;
        for (uint32_t k = 0; k < r->mb.nctx; k++) { /* the contexts' threads: Thread records come before */
            vt_event *t = &r->mb.tmpl[k];
            vt_site *st = t->type == VT_EV_ALLOC ? &t->u.alloc.site : &t->u.free.site;
            st->tid = tid_of(r, st->thread);
        }
        return vt_mblock_take(&r->mb, ev, 1);
    case VT_EV_ALLOC:
        ZERO(&ev->u.alloc);
        rc = dec_alloc(r, bp, be, &ev->u.alloc, &cd);
        break;
    case VT_EV_FREE:
        ZERO(&ev->u.free);
        rc = dec_free(r, bp, be, &ev->u.free, &cd);
        break;
    case VT_EV_ALLOC_FAILED: {
        vt_ev_alloc_failed *a = &ev->u.alloc_failed;
        ZERO(a);
        rc = dec_alloc_failed(r, bp, be, a, &cd);
        a->error_name = rd_str_get(r, a->error_name_id);
        break;
    }
    case VT_EV_VMM_RESERVE:
    case VT_EV_VMM_ADDRESS_FREE:
    case VT_EV_VMM_UNMAP:
        ZERO(&ev->u.vmm_range);
        rc = dec_vmm_range(r, bp, be, &ev->u.vmm_range, &cd, body == VT_EV_VMM_RESERVE);
        break;
    case VT_EV_VMM_CREATE:
        ZERO(&ev->u.vmm_create);
        rc = dec_vmm_create(r, bp, be, &ev->u.vmm_create, &cd);
        break;
    case VT_EV_VMM_RELEASE:
        ZERO(&ev->u.vmm_release);
        rc = dec_vmm_release(r, bp, be, &ev->u.vmm_release, &cd);
        break;
    case VT_EV_VMM_MAP:
        ZERO(&ev->u.vmm_map);
        rc = dec_vmm_map(r, bp, be, &ev->u.vmm_map, &cd);
        break;
    case VT_EV_POOL:
        ZERO(&ev->u.pool);
        rc = dec_pool(r, bp, be, &ev->u.pool, &cd);
        break;
    case VT_EV_POOL_USAGE:
        ZERO(&ev->u.pool_usage);
        rc = dec_pool_usage(r, bp, be, &ev->u.pool_usage);
        break;
    case VT_EV_NVTX: {
        vt_ev_nvtx *a = &ev->u.nvtx;
        ZERO(a);
        rc = dec_nvtx(r, bp, be, a);
        a->message = rd_str_get(r, a->message_id);
        a->domain = rd_str_get(r, a->domain_id);
        break;
    }
    case VT_EV_MEMORY_USAGE:
        ZERO(&ev->u.memory_usage);
        rc = dec_memory_usage(r, bp, be, &ev->u.memory_usage);
        break;
    case VT_EV_DROPPED:
        ZERO(&ev->u.dropped);
        rc = dec_dropped(r, bp, be, &ev->u.dropped);
        ev->u.dropped.reason = rd_str_get(r, ev->u.dropped.reason_id);
        break;
    case VT_EV_NOTE:
        ZERO(&ev->u.note);
        if (rd_scratch_reserve(r, 2 * (size_t)(be - bp) + 16))
            return VT_ERR_NOMEM;
        rc = dec_note(r, bp, be, &ev->u.note);
        break;
    case VT_EV_END:
        ZERO(&ev->u.end);
        rc = dec_end(r, bp, be, &ev->u.end);
        if (!rc)
            r->st.complete = 1;
        break;
    case VT_EV_SYNC:
        ZERO(&ev->u.sync);
        rc = dec_sync(r, bp, be, &ev->u.sync);
        if (rc)
            break;
        r->host_time = ev->u.sync.time_ns;
        r->device_time = ev->u.sync.device_time_ns;
        r->corr = 0;
        r->need_sync = 0;
        if (r->have_seq && ev->u.sync.sequence != r->last_seq + 1)
            r->st.sync_gaps++;
        r->have_seq = 1;
        r->last_seq = ev->u.sync.sequence;
        ev->time_ns = r->host_time;
        return 1; /* its ts_delta is ignored */
    case VT_EV_STRING:
        rc = rd_def_string(r, bp, be, ev);
        break;
    case VT_EV_FRAME:
        rc = rd_def_frame(r, bp, be, ev);
        break;
    case VT_EV_STACK:
        rc = rd_def_stack(r, bp, be, ev);
        break;
    case VT_EV_THREAD:
        rc = rd_def_thread(r, bp, be, ev);
        break;
    case VT_EV_MODULE:
        rc = rd_def_module(r, bp, be, ev);
        break;
    case VT_EV_LAUNCH:
        rc = rd_def_launch(r, bp, be, ev);
        break;
    case VT_EV_DEVICE:
        rc = rd_def_device(r, bp, be, ev);
        break;
    case VT_EV_HEADER:
        rc = rd_def_header(r, bp, be, ev);
        break;
    default:
        /* a record kind from a newer format version: skip it, keep the clock */
        r->host_time += (uint64_t)delta;
        r->st.unknown_records++;
        r->any_record = 1;
        return 0;
    }
    if (rc)
        return rc;
    vt_site *site = vt_event_site(ev);
    if (site)
        site->tid = tid_of(r, site->thread);
    if (vt_evtype_corr((vt_evtype)body)) {
        r->corr += cd ? (uint64_t)unzigzag(cd) : 0;
        /* every corr-bearing struct keeps `corr` where the decoder put it */
        switch (body) {
#define VT_X_CORR_0(E, M)
#define VT_X_CORR_1(E, M) case VT_EV_##E: ev->u.M.corr = r->corr; break;
#define VT_X_CORR(E, V, N, M, S, C) VT_X_CORR_##C(E, M)
        VT_EVENT_KINDS(VT_X_CORR)
#undef VT_X_CORR
#undef VT_X_CORR_1
#undef VT_X_CORR_0
        default: break;
        }
    }
    if (body == VT_EV_KERNEL) {
        r->device_time += (uint64_t)delta;
        ev->time_ns = r->device_time;
    } else {
        r->host_time += (uint64_t)delta;
        ev->time_ns = r->host_time;
    }
    return 1;
}

static int next_slow(vt_reader *r, vt_event *ev) __attribute__((noinline));
static int next_slow_(vt_reader *r, vt_event *ev);

/* Hot path: the rest of a KernelBatch, or a whole short entry in the
 * buffer with FAST_SLACK bytes after it, in a frame in sync (r->fast, set
 * by next_slow). */
#define NEXT_BODY(FAST_RECORD)                                                \
    do {                                                                      \
        if (r->kb.left) { /* the rest of a KernelBatch */                     \
            vt_kbatch_next(&r->kb, ev);                                       \
            kernel_resolve(r, &ev->u.kernel);                                 \
            return 1;                                                         \
        }                                                                     \
        if (r->mb.left) { /* the rest of a MemBlock */                        \
            return vt_mblock_take(&r->mb, ev, 1);                             \
        }                                                                     \
        const uint8_t *p = r->raw + r->rpos, *pe = r->raw + r->rend;          \
        if (__builtin_expect(r->fast && pe - p >= 2 + FAST_SLACK && p[0] == 0x0A && p[1] < 0x80 && \
                                 pe - p >= 2 + FAST_SLACK + p[1], 1)) {       \
            fast_state fs_;                                                   \
            fast_load(r, &fs_);                                               \
            if (FAST_RECORD(r, &fs_, p + 2, p + 2 + p[1], ev)) {              \
                fast_store(r, &fs_);                                          \
                r->rpos += 2 + (size_t)p[1];                                  \
                r->st.records++;                                              \
                return 1;                                                     \
            }                                                                 \
        }                                                                     \
        return next_slow(r, ev);                                              \
    } while (0)

/* Up to max pending kernels of a KernelBlock or KernelBatch (r->kb.left >
 * 0) into ev: vt_kbatch_next() and kernel_resolve() for each, with the
 * columns, the count and the launch table in locals (the stores into the
 * events could alias the fields of r, which the compiler reloaded for
 * every kernel). */
static inline __attribute__((always_inline)) int kb_drain(vt_reader *r, vt_event *ev, int max)
{
    const uint32_t left = r->kb.left, take = left < (uint32_t)max ? left : (uint32_t)max;
    const size_t i0 = r->kb.n - left;
    const uint64_t *const start = r->kb.start + i0, *const launch = r->kb.launch + i0;
    const uint64_t *const dur = r->kb.dur + i0, *const corr = r->kb.corr + i0, *const graph = r->kb.graph + i0;
    const vt_table lt = r->launches;
    /* tab_get's two bounds (id != 0, id < cap) as one: id - 1 < cap - 1 */
    const uint32_t lt_top = lt.cap ? lt.cap - 1 : 0;
    for (uint32_t j = 0; j < take; j++) {
        vt_event *e = &ev[j];
        vt_ev_kernel *k = &e->u.kernel;
        e->type = VT_EV_KERNEL;
        e->time_ns = start[j];
        const uint32_t id = (uint32_t)launch[j];
        const launch_slot *ls = NULL;
        if (id - 1 < lt_top) {
            const launch_slot *s = (const launch_slot *)(lt.v + (size_t)id * sizeof(launch_slot));
            if (s->id == id)
                ls = s;
        }
        memcpy(k, ls ? &ls->k : &kernel_none, KERNEL_HEAD); /* kernel_resolve */
        if (__builtin_expect(ls && !k->name && k->name_id, 0)) /* its String came late */
            k->name = rd_str_get(r, k->name_id);
        k->launch_id = id;
        k->duration_ns = dur[j];
        k->corr = corr[j];
        k->graph_id = graph[j];
    }
    r->kb.left = left - take;
    return (int)take;
}

/* Bytes from a record's start that the batch loop needs readable: its two
 * bytes of entry, at most 127 of Record (a one-byte length) and
 * FAST_SLACK; so that a start at most BATCH_ROOM before the end is the
 * only bound checked per record (the records in the last BATCH_ROOM bytes
 * of raw, a few per refill, take the slow path). */
#define BATCH_ROOM (2 + 127 + FAST_SLACK)

/* Up to max events: the rest of a KernelBatch, then the hot path in a
 * loop over a local cursor (r's position, record count and running values
 * written back once it stops); a record of the slow path (definitions,
 * a KernelBlock or KernelBatch, a refill of raw, errors) only as the first
 * event, alone, so that its pointers into the per-record scratch stay
 * valid and its errors come as from vt_reader_next(). */
#define BATCH_BODY(FAST_RECORD)                                               \
    do {                                                                      \
        int n = r->kb.left ? kb_drain(r, ev, max) : r->mb.left ? vt_mblock_take(&r->mb, ev, max) : 0; \
        if (n == max)                                                         \
            return n;                                                         \
        if (__builtin_expect(r->fast && r->rpos + BATCH_ROOM <= r->rend, 1)) { \
            const uint8_t *const raw = r->raw;                                \
            const uint8_t *p = raw + r->rpos;                                 \
            const uint8_t *const lim = raw + r->rend - BATCH_ROOM;            \
            /* the next event and the end: two registers (not ev, n, max) */ \
            vt_event *e = ev + n, *const e_end = ev + max;                    \
            fast_state fs_;                                                   \
            fast_load(r, &fs_);                                               \
            /* the record's end taken once: a store into the event may   \
             * alias raw (uint8_t), so p[1] read again after it would be a \
             * load and an add more per record */                         \
            while (e < e_end && p <= lim && p[0] == 0x0A && p[1] < 0x80) {    \
                const uint8_t *const q_ = p + 2 + p[1];                       \
                if (!FAST_RECORD(r, &fs_, p + 2, q_, e))                      \
                    break;                                                    \
                p = q_;                                                       \
                e++;                                                          \
            }                                                                 \
            fast_store(r, &fs_);                                              \
            r->rpos = (size_t)(p - raw);                                      \
            r->st.records += (uint64_t)(e - (ev + n));                        \
            n = (int)(e - ev);                                                \
        }                                                                     \
        if (n)                                                                \
            return n;                                                         \
        return next_slow(r, ev);                                              \
    } while (0)

#if VT_READER_PEXT
static __attribute__((noinline, target("bmi,bmi2"))) int next_pext(vt_reader *r, vt_event *ev)
{
    NEXT_BODY(fast_record_pext);
}

/* The batch loops start on a cache line (aligned(64)), here and in the
 * replay's vt_proc_feed_batch: a change of code size elsewhere no longer
 * moves their hot loops within a line, which alone moved a timing series
 * by ~5 % (BENCHMARKS.md, `## analyze`, the replay's notes). */
static __attribute__((noinline, target("bmi,bmi2"), aligned(64))) int next_batch_pext(vt_reader *r, vt_event *ev,
                                                                                      int max)
{
    BATCH_BODY(fast_record_pext);
}
#endif

int vt_reader_next(vt_reader *r, vt_event *ev)
{
#if VT_READER_PEXT
    if (r->pext)
        return next_pext(r, ev); /* a jump: no frame of its own */
#endif
    NEXT_BODY(fast_record);
}

__attribute__((aligned(64))) int vt_reader_next_batch(vt_reader *r, vt_event *ev, int max)
{
    if (max <= 0)
        return VT_ERR_INVALID;
#if VT_READER_PEXT
    if (r->pext)
        return next_batch_pext(r, ev, max);
#endif
    BATCH_BODY(fast_record);
}
#undef BATCH_BODY
#undef BATCH_ROOM
#undef NEXT_BODY

static int next_slow(vt_reader *r, vt_event *ev)
{
    int rc = next_slow_(r, ev);
    /* the hot path of vt_reader_next() only for a frame in sync */
    r->fast = rc == 1 && r->state == ST_READ && r->any_record && !r->need_sync;
    return rc;
}

static int next_slow_(vt_reader *r, vt_event *ev)
{
    for (;;) {
        switch (r->state) {
        case ST_FINAL:
            return r->last_err;
        case ST_EOF:
            return 0;
        case ST_RESYNC: {
            int rc = rd_resync(r);
            if (rc)
                return rc;
            continue;
        }
        case ST_DISCARD:
            if (r->zerr) {
                rd_drop_frame(r);
                r->state = ST_RESYNC;
                r->resync_from = r->frame_start + 1;
                /* bytes before were counted while discarding */
                r->skip_from = r->in_pos > r->skip_hw ? r->in_pos : r->skip_hw;
                continue;
            }
            if (!r->in_frame) {
                r->state = ST_READ;
                continue;
            }
            {
                int rc;
                if (r->stable) {
                    /* raw holds the frame from its start: drop, never move */
                    r->rpos = r->rend;
                    rc = rd_decompress_more(r, 1);
                    if (r->stable)
                        r->rpos = r->rend;
                    else
                        r->rpos = r->rend = 0;
                } else {
                    r->rpos = r->rend = 0;
                    rc = rd_decompress_more(r, r->bcap);
                    r->rpos = r->rend = 0;
                }
                /* input passed over; a stable_fallback() reads some again */
                if (r->in_pos > r->skip_hw) {
                    r->st.skipped_bytes += r->in_pos - r->skip_hw;
                    r->skip_hw = r->in_pos;
                }
                if (rc)
                    return rc;
            }
            continue;
        default:
            break;
        }

        size_t avail = r->rend - r->rpos;
        size_t need = 2;
        if (avail >= 2) {
            const uint8_t *p = r->raw + r->rpos, *pe = p + avail;
            const uint8_t *q = p + 1;
            uint64_t len;
            if (__builtin_expect(p[0] == 0x0A, 1)) {
                if (rd_varint(&q, pe, &len)) {
                    if (avail >= 11)
                        return rd_corrupt(r, VT_ERR_CORRUPT, 1,
                                       "corrupt record at offset %llu (frame starting at offset %llu, decompressed byte %llu): bad record length",
                                       (unsigned long long)r->in_pos, (unsigned long long)r->frame_start,
                                       (unsigned long long)(r->raw_base + r->rpos));
                    need = 11;
                } else if (len > VT_READER_MAX_RECORD) {
                    return rd_corrupt(r, VT_ERR_TOO_LARGE, 1,
                                   "corrupt record at offset %llu (frame starting at offset %llu, decompressed byte %llu): record length %llu exceeds the %u-byte limit",
                                   (unsigned long long)r->in_pos, (unsigned long long)r->frame_start,
                                   (unsigned long long)(r->raw_base + r->rpos), (unsigned long long)len,
                                   VT_READER_MAX_RECORD);
                } else {
                    size_t hl = (size_t)(q - p);
                    need = hl + (size_t)len;
                    if (need <= avail) {
                        r->hard = pe;
                        int rc = decode_record(r, q, q + len, ev);
                        if (__builtin_expect(rc == 1, 1)) {
                            r->rpos += need;
                            r->st.records++;
                            r->any_record = 1;
                            return 1;
                        }
                        if (rc == 0) {
                            r->rpos += need;
                            r->st.records++;
                            continue;
                        }
                        if (rc == VT_ERR_VERSION)
                            return rd_set_final(r, rc, "header at offset %llu (decompressed byte %llu): %s",
                                                (unsigned long long)r->in_pos,
                                                (unsigned long long)(r->raw_base + r->rpos), r->why);
                        if (rc == VT_ERR_NOMEM)
                            return rd_set_final(r, rc, "out of memory");
                        if (rc == VT_ERR_LIMIT) /* tables cannot grow: stop here, keep what was read */
                            return rd_set_final(r, rc, "record at offset %llu (decompressed byte %llu): %s",
                                                (unsigned long long)r->in_pos,
                                                (unsigned long long)(r->raw_base + r->rpos), r->why);
                        return rd_corrupt(r, rc, 1,
                                       "corrupt record at offset %llu (frame starting at offset %llu, decompressed byte %llu): %s",
                                       (unsigned long long)r->in_pos, (unsigned long long)r->frame_start,
                                       (unsigned long long)(r->raw_base + r->rpos), r->why);
                    }
                }
            } else {
                /* A Trace field other than `record`: from a newer writer, or damage. */
                uint64_t tag;
                q = p;
                if (rd_varint(&q, pe, &tag)) {
                    if (avail >= 10)
                        goto bad_entry;
                    need = avail + 1;
                } else if ((tag >> 3) == 1 || (tag >> 3) == 0 || (tag & 7) == WT_SGROUP ||
                           (tag & 7) == WT_EGROUP || (tag & 7) > WT_I32) {
                    goto bad_entry;
                } else {
                    const uint8_t *s = q;
                    uint64_t skip = 0;
                    int ok = 1;
                    switch (tag & 7) {
                    case WT_VARINT: ok = !rd_varint(&s, pe, &skip); skip = 0; break;
                    case WT_I64: skip = 8; break;
                    case WT_I32: skip = 4; break;
                    case WT_LEN: ok = !rd_varint(&s, pe, &skip); break;
                    }
                    if (!ok) {
                        if (avail >= 20)
                            goto bad_entry;
                        need = avail + 1;
                    } else if (skip > VT_READER_MAX_RECORD) {
                        goto bad_entry;
                    } else {
                        need = (size_t)(s - p) + (size_t)skip;
                        if (need <= avail) {
                            r->rpos += need;
                            r->st.unknown_fields++;
                            continue;
                        }
                    }
                }
            }
        }
        /* not enough bytes for the next entry */
        if (r->zerr) {
            size_t e = r->zerr;
            if (r->frame_bad) { /* decoded whole and failed: none of its records went out */
                r->st.frames_failed++;
                return rd_corrupt(r, VT_ERR_CORRUPT, 0,
                                  "corrupt zstd frame at offset %llu (frame starting at offset %llu): %s; "
                                  "none of its records used",
                                  (unsigned long long)r->zerr_at, (unsigned long long)r->frame_start,
                                  ZSTD_getErrorName(e));
            }
            if (rd_zstd_go_careful(r) == 0)
                continue;
            if (r->state == ST_FINAL)
                return r->last_err;
            return rd_corrupt(r, VT_ERR_CORRUPT, 0, "corrupt zstd frame at offset %llu (frame starting at offset %llu): %s",
                           (unsigned long long)r->zerr_at, (unsigned long long)r->frame_start,
                           ZSTD_getErrorName(e));
        }
        if (r->in_frame) {
            int rc = rd_decompress_more(r, need);
            if (rc)
                return rc;
            continue;
        }
        if (avail)
            return rd_corrupt(r, VT_ERR_CORRUPT, 1,
                           "corrupt record at offset %llu (frame starting at offset %llu, decompressed byte %llu): a record crosses the end of its zstd frame",
                           (unsigned long long)r->in_pos, (unsigned long long)r->frame_start,
                           (unsigned long long)(r->raw_base + r->rpos));
        int rc = rd_begin_frame(r);
        if (rc)
            return rc;
        continue;
    bad_entry:
        return rd_corrupt(r, VT_ERR_CORRUPT, 1,
                       "corrupt record at offset %llu (frame starting at offset %llu, decompressed byte %llu): expected a record (byte 0x0a), found 0x%02x",
                       (unsigned long long)r->in_pos, (unsigned long long)r->frame_start,
                       (unsigned long long)(r->raw_base + r->rpos), r->raw[r->rpos]);
    }
}
