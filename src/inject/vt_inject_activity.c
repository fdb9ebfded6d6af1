/* vt_inject_activity.c - CUPTI activity records: kernels and module
 * globals (MEMORY2), drained on our own thread (`vt-drain`). */
#include "vt_inject_int.h"
/* ----------------------------------------------------------------- activity */

void CUPTIAPI on_buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
    *max_records = 0;
    *size = 0;
    *buf = NULL;
    void *p = NULL;
    if (posix_memalign(&p, 8, VT_ACT_BUF_BYTES) == 0) {
        *buf = p;
        *size = VT_ACT_BUF_BYTES;
    }
}

static void on_kernel(const CUpti_ActivityKernel10 *k)
{
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.type = VT_EV_KERNEL;
    ev.time_ns = k->start;
    ev.u.kernel.name = k->name ? k->name : "?";
    ev.u.kernel.device = k->deviceId;
    ev.u.kernel.stream = k->streamId;
    ev.u.kernel.grid[0] = (uint32_t)k->gridX;
    ev.u.kernel.grid[1] = (uint32_t)k->gridY;
    ev.u.kernel.grid[2] = (uint32_t)k->gridZ;
    ev.u.kernel.block[0] = (uint32_t)k->blockX;
    ev.u.kernel.block[1] = (uint32_t)k->blockY;
    ev.u.kernel.block[2] = (uint32_t)k->blockZ;
    ev.u.kernel.shared_memory = (uint32_t)(k->staticSharedMemory + k->dynamicSharedMemory);
    ev.u.kernel.graph = k->graphId != 0;
    ev.u.kernel.graph_id = k->graphId;
    ev.u.kernel.duration_ns = k->end > k->start ? k->end - k->start : 0;
    ev.u.kernel.corr = k->correlationId;
    vt_inject_emit(&ev);
}

static void on_memory(const CUpti_ActivityMemory4 *m)
{
    if (m->memoryKind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC)
        return;
    vt_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.time_ns = m->timestamp;
    if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) {
        ev.type = VT_EV_ALLOC;
        ev.u.alloc.address = m->address;
        ev.u.alloc.size = m->bytes;
        ev.u.alloc.device = m->deviceId;
        ev.u.alloc.kind = VT_MEM_DEVICE_STATIC;
        ev.u.alloc.api = VT_API_MODULE_GLOBAL;
        ev.u.alloc.corr = m->correlationId;
    } else if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) {
        ev.type = VT_EV_FREE;
        ev.u.free.address = m->address;
        ev.u.free.device = m->deviceId;
        ev.u.free.kind = VT_MEM_DEVICE_STATIC;
        ev.u.free.api = VT_API_MODULE_GLOBAL;
        ev.u.free.corr = m->correlationId;
    } else {
        return;
    }
    vt_inject_emit(&ev);
}

vt_act_state act = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .idle_cv = PTHREAD_COND_INITIALIZER};

#define VT_ACT_PACE 2048 /* records between writer flushes in the drain thread */

static void process_buffer(uint8_t *buf, size_t valid, int may_wait)
{
    CUpti_Activity *rec = NULL;
    uint64_t n = 0, c0 = __rdtsc();
    while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
        switch (rec->kind) {
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        case CUPTI_ACTIVITY_KIND_KERNEL: on_kernel((const CUpti_ActivityKernel10 *)rec); break;
        case CUPTI_ACTIVITY_KIND_MEMORY2: on_memory((const CUpti_ActivityMemory4 *)rec); break;
        default: break;
        }
        if (may_wait && (++n % VT_ACT_PACE) == 0)
            vt_writer_flush(g.w); /* let the writer drain our ring */
    }
    act.cycles += __rdtsc() - c0;
    act.records += n;
    act.buffers++;
}

void *drain_main(void *arg)
{
    (void)arg;
    t_in.internal = 1;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pthread_mutex_lock(&act.mu);
    for (;;) {
        while (!act.head && !act.stop)
            pthread_cond_wait(&act.cv, &act.mu);
        act_buf *b = act.head;
        if (!b)
            break; /* stop with an empty queue */
        act.head = b->next;
        if (!act.head)
            act.tail = NULL;
        act.busy = 1;
        pthread_mutex_unlock(&act.mu);
        if (g.w)
            process_buffer(b->buf, b->valid, 1);
        free(b->buf);
        free(b);
        pthread_mutex_lock(&act.mu);
        act.busy = 0;
        if (!act.head)
            pthread_cond_broadcast(&act.idle_cv);
    }
    pthread_mutex_unlock(&act.mu);
    return NULL;
}

/* Wait until the drain thread has processed everything queued so far. */
void drain_wait_idle(void)
{
    if (!act.started)
        return;
    pthread_mutex_lock(&act.mu);
    while (act.head || act.busy)
        pthread_cond_wait(&act.idle_cv, &act.mu);
    pthread_mutex_unlock(&act.mu);
}

void CUPTIAPI on_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
    int saved = t_in.internal;
    t_in.internal = 1;
#ifdef VT_BENCH_DISCARD_ACTIVITY /* benchmarks only (bench/inject.cmake): buffers freed unread */
    valid = 0;
#endif
    if (buf && valid && g.w) {
        act_buf *b = act.started ? malloc(sizeof(*b)) : NULL;
        if (b) {
            b->next = NULL;
            b->buf = buf;
            b->valid = valid;
            pthread_mutex_lock(&act.mu);
            if (act.tail)
                act.tail->next = b;
            else
                act.head = b;
            act.tail = b;
            pthread_cond_signal(&act.cv);
            pthread_mutex_unlock(&act.mu);
            buf = NULL; /* the drain thread frees it */
        } else {
            process_buffer(buf, valid, 0);
        }
        size_t dropped = 0;
        if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped) {
            vt_event ev;
            memset(&ev, 0, sizeof(ev));
            ev.type = VT_EV_DROPPED;
            ev.u.dropped.source = VT_DROP_CUPTI_ACTIVITY;
            ev.u.dropped.count = dropped;
            ev.u.dropped.reason = "CUPTI activity buffer full";
            vt_inject_emit(&ev);
        }
    }
    free(buf);
    (void)size;
    t_in.internal = saved;
}
