/* reader_check.c - see reader_check.h.  Test code only. */
#include "reader_check.h"

#include <stdio.h>
#include <string.h>

#define EQ(a, b)                                                                                   \
    do {                                                                                           \
        if ((uint64_t)(a) != (uint64_t)(b)) {                                                      \
            snprintf(why, why_len, "%s: %s = %llu, expected %s = %llu", kind, #a,                  \
                     (unsigned long long)(uint64_t)(a), #b, (unsigned long long)(uint64_t)(b));    \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)
#define STREQ(a, b)                                                                                \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        if ((a_ == NULL) != (b_ == NULL) || (a_ && strcmp(a_, b_))) {                              \
            snprintf(why, why_len, "%s: %s = \"%s\", expected \"%s\"", kind, #a, a_ ? a_ : "(null)", \
                     b_ ? b_ : "(null)");                                                          \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

static const char *mstr(const check_model *m, uint32_t id)
{
    return id && id <= CHECK_MAXID && m->strings[id] ? m->strings[id]->value : NULL;
}
static uint32_t mtid(const check_model *m, uint32_t id)
{
    return id && id <= CHECK_MAXID && m->threads[id] ? m->threads[id]->tid : 0;
}
static uint64_t zz(int64_t v)
{
    return (uint64_t)v;
}

int check_event(check_model *m, const Vramtrace__Record *rec, const vt_event *ev, char *why, size_t why_len)
{
    const char *kind = vt_evtype_name((vt_evtype)rec->body_case);
    uint64_t t;
    EQ(ev->type, rec->body_case);
    /* times and correlation ids (docs/FORMAT.md) */
    if (rec->body_case == VRAMTRACE__RECORD__BODY_SYNC) {
        m->host = rec->sync->time_ns;
        m->dev = rec->sync->device_time_ns;
        m->corr = 0;
        t = m->host;
    } else if (rec->body_case == VRAMTRACE__RECORD__BODY_KERNEL) {
        m->dev += zz(rec->ts_delta);
        t = m->dev;
    } else {
        m->host += zz(rec->ts_delta);
        t = m->host;
    }
    EQ(ev->time_ns, t);

    switch (rec->body_case) {
    case VRAMTRACE__RECORD__BODY_HEADER: {
        const Vramtrace__Header *h = rec->header;
        const vt_ev_header *e = &ev->u.header;
        EQ(e->magic, h->magic);
        EQ(e->format_version, h->format_version);
        STREQ(e->tool_version, h->tool_version);
        EQ(e->pid, h->pid);
        EQ(e->ppid, h->ppid);
        STREQ(e->hostname, h->hostname);
        STREQ(e->program, h->program);
        EQ(e->argc, h->n_argv);
        for (size_t i = 0; i < h->n_argv; i++)
            STREQ(e->argv[i], h->argv[i]);
        EQ(e->nenv, h->n_env);
        for (size_t i = 0; i < h->n_env; i++) {
            STREQ(e->env_names[i], h->env[i]->name);
            STREQ(e->env_values[i], h->env[i]->value);
        }
        EQ(e->clock, h->clock);
        EQ(e->trace_clock_ns, h->trace_clock_ns);
        EQ(e->realtime_ns, h->realtime_ns);
        EQ(e->kernels, h->kernels);
        EQ(e->native_stacks, h->native_stacks);
        EQ(e->python_stacks, h->python_stacks);
        break;
    }
    case VRAMTRACE__RECORD__BODY_SYNC:
        EQ(ev->u.sync.time_ns, rec->sync->time_ns);
        EQ(ev->u.sync.device_time_ns, rec->sync->device_time_ns);
        EQ(ev->u.sync.sequence, rec->sync->sequence);
        break;
    case VRAMTRACE__RECORD__BODY_STRING:
        EQ(ev->u.string.id, rec->string->id);
        STREQ(ev->u.string.value, rec->string->value);
        EQ(ev->u.string.len, strlen(rec->string->value));
        if (rec->string->id <= CHECK_MAXID && !m->strings[rec->string->id])
            m->strings[rec->string->id] = rec->string;
        break;
    case VRAMTRACE__RECORD__BODY_STACK: {
        const Vramtrace__Stack *s = rec->stack;
        EQ(ev->u.stack.id, s->id);
        EQ(ev->u.stack.parent, s->parent);
        EQ(ev->u.stack.nframes, s->n_frame);
        for (size_t i = 0; i < s->n_frame; i++)
            EQ(ev->u.stack.frames[i], s->frame[i]);
        if (s->id <= CHECK_MAXID && !m->stacks[s->id])
            m->stacks[s->id] = s;
        break;
    }
    case VRAMTRACE__RECORD__BODY_FRAME: {
        const Vramtrace__Frame *f = rec->frame;
        const vt_ev_frame *e = &ev->u.frame;
        EQ(e->id, f->id);
        EQ(e->kind, f->kind);
        EQ(e->ip, f->ip);
        EQ(e->module, f->module);
        EQ(e->function, f->function);
        EQ(e->file, f->file);
        EQ(e->line, f->line);
        break;
    }
    case VRAMTRACE__RECORD__BODY_MODULE: {
        const Vramtrace__Module *f = rec->module;
        const vt_ev_module *e = &ev->u.module;
        EQ(e->id, f->id);
        STREQ(e->path, f->path);
        EQ(e->load_bias, f->load_bias);
        EQ(e->start, f->start);
        EQ(e->end, f->end);
        EQ(e->build_id_len, f->build_id.len);
        if (f->build_id.len && memcmp(e->build_id, f->build_id.data, f->build_id.len)) {
            snprintf(why, why_len, "module: build_id differs");
            return -1;
        }
        break;
    }
    case VRAMTRACE__RECORD__BODY_THREAD:
        EQ(ev->u.thread.id, rec->thread->id);
        EQ(ev->u.thread.tid, rec->thread->tid);
        STREQ(ev->u.thread.name, rec->thread->name);
        if (rec->thread->id <= CHECK_MAXID && !m->threads[rec->thread->id])
            m->threads[rec->thread->id] = rec->thread;
        break;
    case VRAMTRACE__RECORD__BODY_DEVICE: {
        const Vramtrace__Device *f = rec->device;
        const vt_ev_device *e = &ev->u.device;
        uint8_t uuid[16] = {0};
        if (f->uuid.len)
            memcpy(uuid, f->uuid.data, f->uuid.len < 16 ? f->uuid.len : 16);
        EQ(e->index, f->index);
        STREQ(e->name, f->name);
        if (memcmp(e->uuid, uuid, 16)) {
            snprintf(why, why_len, "device: uuid differs");
            return -1;
        }
        EQ(e->total_memory, f->total_memory);
        EQ(e->cc_major, f->cc_major);
        EQ(e->cc_minor, f->cc_minor);
        STREQ(e->pci_bus_id, f->pci_bus_id);
        break;
    }
    case VRAMTRACE__RECORD__BODY_LAUNCH: {
        const Vramtrace__Launch *f = rec->launch;
        const vt_ev_launch *e = &ev->u.launch;
        EQ(e->id, f->id);
        EQ(e->name, f->name);
        EQ(e->device, f->device);
        EQ(e->stream, f->stream);
        EQ(e->grid[0], f->grid_x);
        EQ(e->grid[1], f->grid_y);
        EQ(e->grid[2], f->grid_z);
        EQ(e->block[0], f->block_x);
        EQ(e->block[1], f->block_y);
        EQ(e->block[2], f->block_z);
        EQ(e->shared_memory, f->shared_memory);
        EQ(e->graph, f->graph);
        if (f->id <= CHECK_MAXID && !m->launches[f->id])
            m->launches[f->id] = f;
        break;
    }
    case VRAMTRACE__RECORD__BODY_KERNEL: {
        const Vramtrace__Kernel *f = rec->kernel;
        const vt_ev_kernel *e = &ev->u.kernel;
        m->corr += zz(f->corr);
        EQ(e->corr, m->corr);
        EQ(e->launch_id, f->launch);
        EQ(e->duration_ns, f->duration_ns);
        EQ(e->graph_id, f->graph_id);
        const Vramtrace__Launch *l = f->launch <= CHECK_MAXID ? m->launches[f->launch] : NULL;
        if (l) {
            EQ(e->name_id, l->name);
            STREQ(e->name, mstr(m, l->name));
            EQ(e->device, l->device);
            EQ(e->stream, l->stream);
            EQ(e->grid[0], l->grid_x);
            EQ(e->grid[1], l->grid_y);
            EQ(e->grid[2], l->grid_z);
            EQ(e->block[0], l->block_x);
            EQ(e->block[1], l->block_y);
            EQ(e->block[2], l->block_z);
            EQ(e->shared_memory, l->shared_memory);
            EQ(e->graph, l->graph);
        } else {
            EQ(e->name_id, 0);
            STREQ(e->name, NULL);
        }
        break;
    }
    case VRAMTRACE__RECORD__BODY_ALLOC: {
        const Vramtrace__Alloc *f = rec->alloc;
        const vt_ev_alloc *e = &ev->u.alloc;
        m->corr += zz(f->corr);
        EQ(e->corr, m->corr);
        EQ(e->address, f->address);
        EQ(e->size, f->size);
        EQ(e->device, f->device);
        EQ(e->kind, f->kind);
        EQ(e->api, f->api);
        EQ(e->stream, f->stream);
        EQ(e->pool, f->pool);
        EQ(e->site.thread, f->thread);
        EQ(e->site.tid, mtid(m, f->thread));
        EQ(e->site.stack, f->stack);
        break;
    }
    case VRAMTRACE__RECORD__BODY_FREE: {
        const Vramtrace__Free *f = rec->free;
        const vt_ev_free *e = &ev->u.free;
        m->corr += zz(f->corr);
        EQ(e->corr, m->corr);
        EQ(e->address, f->address);
        EQ(e->device, f->device);
        EQ(e->kind, f->kind);
        EQ(e->api, f->api);
        EQ(e->stream, f->stream);
        EQ(e->site.thread, f->thread);
        EQ(e->site.tid, mtid(m, f->thread));
        EQ(e->site.stack, f->stack);
        break;
    }
    case VRAMTRACE__RECORD__BODY_ALLOC_FAILED: {
        const Vramtrace__AllocFailed *f = rec->alloc_failed;
        const vt_ev_alloc_failed *e = &ev->u.alloc_failed;
        m->corr += zz(f->corr);
        EQ(e->corr, m->corr);
        EQ(e->size, f->size);
        EQ(e->device, f->device);
        EQ(e->kind, f->kind);
        EQ(e->api, f->api);
        EQ(e->error, f->error);
        EQ(e->error_name_id, f->error_name);
        STREQ(e->error_name, mstr(m, f->error_name));
        EQ(e->stream, f->stream);
        EQ(e->pool, f->pool);
        EQ(e->site.thread, f->thread);
        EQ(e->site.tid, mtid(m, f->thread));
        EQ(e->site.stack, f->stack);
        break;
    }
    case VRAMTRACE__RECORD__BODY_VMM_RESERVE: {
        const Vramtrace__VmmReserve *f = rec->vmm_reserve;
        const vt_ev_vmm_range *e = &ev->u.vmm_range;
        m->corr += zz(f->corr);
        EQ(e->corr, m->corr);
        EQ(e->address, f->address);
        EQ(e->size, f->size);
        EQ(e->site.thread, f->thread);
        EQ(e->site.tid, mtid(m, f->thread));
        EQ(e->site.stack, f->stack);
        break;
    }
    case VRAMTRACE__RECORD__BODY_VMM_ADDRESS_FREE: {
        const Vramtrace__VmmAddressFree *f = rec->vmm_address_free;
        const vt_ev_vmm_range *e = &ev->u.vmm_range;
        m->corr += zz(f->corr);
        EQ(e->corr, m->corr);
        EQ(e->address, f->address);
        EQ(e->size, f->size);
        EQ(e->site.thread, f->thread);
        EQ(e->site.stack, 0);
        break;
    }
    case VRAMTRACE__RECORD__BODY_VMM_UNMAP: {
        const Vramtrace__VmmUnmap *f = rec->vmm_unmap;
        const vt_ev_vmm_range *e = &ev->u.vmm_range;
        m->corr += zz(f->corr);
        EQ(e->corr, m->corr);
        EQ(e->address, f->address);
        EQ(e->size, f->size);
        EQ(e->site.thread, f->thread);
        break;
    }
    case VRAMTRACE__RECORD__BODY_VMM_CREATE: {
        const Vramtrace__VmmCreate *f = rec->vmm_create;
        const vt_ev_vmm_create *e = &ev->u.vmm_create;
        m->corr += zz(f->corr);
        EQ(e->corr, m->corr);
        EQ(e->handle, f->handle);
        EQ(e->size, f->size);
        EQ(e->device, f->device);
        EQ(e->kind, f->kind);
        EQ(e->site.thread, f->thread);
        EQ(e->site.stack, f->stack);
        break;
    }
    case VRAMTRACE__RECORD__BODY_VMM_RELEASE: {
        const Vramtrace__VmmRelease *f = rec->vmm_release;
        const vt_ev_vmm_release *e = &ev->u.vmm_release;
        m->corr += zz(f->corr);
        EQ(e->corr, m->corr);
        EQ(e->handle, f->handle);
        EQ(e->site.thread, f->thread);
        break;
    }
    case VRAMTRACE__RECORD__BODY_VMM_MAP: {
        const Vramtrace__VmmMap *f = rec->vmm_map;
        const vt_ev_vmm_map *e = &ev->u.vmm_map;
        m->corr += zz(f->corr);
        EQ(e->corr, m->corr);
        EQ(e->address, f->address);
        EQ(e->size, f->size);
        EQ(e->offset, f->offset);
        EQ(e->handle, f->handle);
        EQ(e->site.thread, f->thread);
        break;
    }
    case VRAMTRACE__RECORD__BODY_POOL: {
        const Vramtrace__Pool *f = rec->pool;
        const vt_ev_pool *e = &ev->u.pool;
        m->corr += zz(f->corr);
        EQ(e->corr, m->corr);
        EQ(e->op, f->op);
        EQ(e->pool, f->pool);
        EQ(e->device, f->device);
        EQ(e->value, f->value);
        EQ(e->site.thread, f->thread);
        EQ(e->site.stack, f->stack);
        break;
    }
    case VRAMTRACE__RECORD__BODY_POOL_USAGE: {
        const Vramtrace__PoolUsage *f = rec->pool_usage;
        const vt_ev_pool_usage *e = &ev->u.pool_usage;
        EQ(e->pool, f->pool);
        EQ(e->device, f->device);
        EQ(e->reserved_current, f->reserved_current);
        EQ(e->reserved_high, f->reserved_high);
        EQ(e->used_current, f->used_current);
        EQ(e->used_high, f->used_high);
        break;
    }
    case VRAMTRACE__RECORD__BODY_MEMORY_USAGE:
        EQ(ev->u.memory_usage.device, rec->memory_usage->device);
        EQ(ev->u.memory_usage.free, rec->memory_usage->free);
        EQ(ev->u.memory_usage.total, rec->memory_usage->total);
        break;
    case VRAMTRACE__RECORD__BODY_NVTX: {
        const Vramtrace__Nvtx *f = rec->nvtx;
        const vt_ev_nvtx *e = &ev->u.nvtx;
        EQ(e->op, f->op);
        EQ(e->message_id, f->message);
        STREQ(e->message, mstr(m, f->message));
        EQ(e->domain_id, f->domain);
        STREQ(e->domain, mstr(m, f->domain));
        EQ(e->range_id, f->range_id);
        EQ(e->site.thread, f->thread);
        EQ(e->site.tid, mtid(m, f->thread));
        break;
    }
    case VRAMTRACE__RECORD__BODY_DROPPED:
        EQ(ev->u.dropped.source, rec->dropped->source);
        EQ(ev->u.dropped.count, rec->dropped->count);
        EQ(ev->u.dropped.reason_id, rec->dropped->reason);
        STREQ(ev->u.dropped.reason, mstr(m, rec->dropped->reason));
        break;
    case VRAMTRACE__RECORD__BODY_NOTE:
        EQ(ev->u.note.severity, rec->note->severity);
        STREQ(ev->u.note.text, rec->note->text);
        break;
    case VRAMTRACE__RECORD__BODY_END:
        EQ(ev->u.end.reason, rec->end->reason);
        EQ(ev->u.end.signal, rec->end->signal);
        EQ(ev->u.end.events, rec->end->events);
        EQ(ev->u.end.dropped, rec->end->dropped);
        break;
    default:
        snprintf(why, why_len, "unexpected body %d", rec->body_case);
        return -1;
    }
    return 0;
}
