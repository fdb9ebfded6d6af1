/* fuzz_reader.c - libFuzzer target for the trace reader: any bytes through
 * vt_reader_open_mem + vt_reader_next (resuming after every recoverable
 * error, as `vramtrace dump` does), with the table lookups the analyzer
 * uses on every event, then again through vt_reader_next_batch (batches of
 * 1 + size % 64), which must yield the same events and codes (a mismatch
 * traps).  Must never crash, hang or leak.
 * Built with libFuzzer only by clang (-DVT_FUZZ=ON); tests/fuzz/replay.c
 * replays tests/fuzz/corpus/ through it in every ctest run. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "vt_error.h"
#include "vt_reader.h"

static uint32_t site_stack(const vt_event *ev)
{
    switch (ev->type) {
    case VT_EV_ALLOC: return ev->u.alloc.site.stack;
    case VT_EV_FREE: return ev->u.free.site.stack;
    case VT_EV_ALLOC_FAILED: return ev->u.alloc_failed.site.stack;
    case VT_EV_VMM_RESERVE: return ev->u.vmm_range.site.stack;
    case VT_EV_VMM_CREATE: return ev->u.vmm_create.site.stack;
    case VT_EV_POOL: return ev->u.pool.site.stack;
    case VT_EV_STACK: return ev->u.stack.id;
    default: return 0;
    }
}

/* Every event and code of the input, read one by one (batch 0) or in
 * batches of `batch`; returns a hash of what came out. */
static uint64_t run(const uint8_t *data, size_t size, int batch)
{
    vt_reader *r;
    if (vt_reader_open_mem(&r, data, size, "fuzz") != 0)
        return 0;
    vt_event evs[64];
    int nb = 0, ib = 0;
    uint64_t hash = 0;
    volatile uint64_t sink = 0;
    for (int iter = 0; iter < 1000000; iter++) {
        int rc;
        if (!batch) {
            rc = vt_reader_next(r, &evs[0]);
            ib = 0;
        } else if (ib < nb) {
            rc = 1;
        } else {
            rc = vt_reader_next_batch(r, evs, batch);
            if (rc > 0) {
                nb = rc;
                ib = 0;
                rc = 1;
            }
        }
        hash = (hash ^ (uint64_t)(int64_t)rc) * 0x100000001b3ull;
        if (rc == 1) {
            const vt_event ev = evs[ib++];
            hash = (hash ^ (uint64_t)ev.type) * 0x100000001b3ull;
            hash = (hash ^ ev.time_ns) * 0x100000001b3ull;
            if (ev.type == VT_EV_ALLOC)
                hash = (hash ^ ev.u.alloc.address ^ ev.u.alloc.size ^ ev.u.alloc.site.tid) * 0x100000001b3ull;
            if (ev.type == VT_EV_FREE)
                hash = (hash ^ ev.u.free.address ^ ev.u.free.corr ^ ev.u.free.site.tid) * 0x100000001b3ull;
            if (ev.type == VT_EV_KERNEL)
                hash = (hash ^ ev.u.kernel.duration_ns ^ ev.u.kernel.corr ^ ev.u.kernel.launch_id) * 0x100000001b3ull;
            uint32_t frames[64];
            uint32_t st = site_stack(&ev);
            uint32_t depth = vt_reader_stack(r, st, frames, 64);
            for (uint32_t i = 0; i < depth && i < 64; i++) {
                const vt_ev_frame *f = vt_reader_frame(r, frames[i]);
                if (f) {
                    const vt_ev_module *m = vt_reader_module(r, f->module);
                    const char *fn = vt_reader_string(r, f->function);
                    sink += f->ip + (m ? strlen(m->path) : 0) + (fn ? strlen(fn) : 0);
                }
            }
            if (ev.type == VT_EV_KERNEL && ev.u.kernel.name)
                sink += strlen(ev.u.kernel.name);
            if (ev.type == VT_EV_NOTE)
                sink += strlen(ev.u.note.text);
            if (ev.type == VT_EV_STRING)
                sink += ev.u.string.len ? (uint8_t)ev.u.string.value[ev.u.string.len - 1] : 0;
            const vt_ev_thread *t = vt_reader_thread(r, ev.u.alloc.site.thread);
            if (t)
                sink += strlen(t->name);
            continue;
        }
        if (rc == VT_ERR_CORRUPT || rc == VT_ERR_TOO_LARGE) {
            sink += strlen(vt_reader_errmsg(r));
            continue;
        }
        break;
    }
    const vt_ev_header *h = vt_reader_header(r);
    if (h)
        for (uint32_t i = 0; i < h->argc; i++)
            sink += strlen(h->argv[i]);
    vt_reader_stats st;
    vt_reader_get_stats(r, &st);
    hash = (hash ^ st.records ^ st.resyncs << 32) * 0x100000001b3ull;
    (void)sink;
    vt_reader_free(r);
    return hash;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (run(data, size, 0) != run(data, size, 1 + (int)(size % 64)))
        __builtin_trap(); /* vt_reader_next_batch differs from vt_reader_next */
    return 0;
}
