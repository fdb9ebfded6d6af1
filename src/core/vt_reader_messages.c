/* vt_reader_messages.c - one hand-written decoder per protobuf message of
 * proto/vramtrace.proto (fields in any order, unknown fields skipped). */
#include "vt_reader_int.h"
/* Skip an unknown field (wire_skip() in vt_wire.h), groups included:
 * proto2 writers may send them, so a group is skipped field by field up to
 * its end tag, nested at most MAX_GROUP_DEPTH deep, and counted once. */
int rd_skip_field(vt_reader *r, const uint8_t **pp, const uint8_t *end, uint64_t tag, int depth)
{
    uint64_t field = tag >> 3;
    if (field == 0 || field > 0x1fffffff)
        return rd_why(r, "invalid field number %llu", (unsigned long long)field);
    if ((tag & 7) == WT_SGROUP) {
        if (depth >= MAX_GROUP_DEPTH)
            return rd_why(r, "groups nested too deep");
        for (;;) {
            uint64_t t;
            if (*pp >= end)
                return rd_why(r, "unterminated group %llu", (unsigned long long)field);
            if (rd_varint(pp, end, &t))
                return rd_why(r, "bad tag in group %llu", (unsigned long long)field);
            if ((t & 7) == WT_EGROUP) {
                if ((t >> 3) != field)
                    return rd_why(r, "group %llu ended by %llu", (unsigned long long)field,
                               (unsigned long long)(t >> 3));
                break;
            }
            int rc = rd_skip_field(r, pp, end, t, depth + 1);
            if (rc)
                return rc;
            r->st.unknown_fields--; /* count the group once */
        }
        r->st.unknown_fields++;
        return 0;
    }
    switch (wire_skip(pp, end, (unsigned)(tag & 7))) {
    case WIRE_OK:
        r->st.unknown_fields++;
        return 0;
    case WIRE_BAD_VARINT:
        return rd_why(r, "bad varint in unknown field %llu", (unsigned long long)field);
    case WIRE_PAST_END:
        switch (tag & 7) {
        case WT_I64:
            return rd_why(r, "fixed64 field %llu past the end of its message", (unsigned long long)field);
        case WT_I32:
            return rd_why(r, "fixed32 field %llu past the end of its message", (unsigned long long)field);
        default:
            return rd_why(r, "length of field %llu past the end of its message", (unsigned long long)field);
        }
    default:
        return rd_why(r, "invalid wire type %u (field %llu)", (unsigned)(tag & 7), (unsigned long long)field);
    }
}

/* Message decoding: FIELDS_BEGIN opens the tag loop; each case reads one
 * known field; anything else (unknown field, or a known field with another
 * wire type) is skipped and counted. */
#define FIELDS_BEGIN                                                          \
    while (p < end) {                                                         \
        uint64_t tag, v;                                                      \
        const uint8_t *q;                                                     \
        size_t n;                                                             \
        (void)v;                                                              \
        (void)q;                                                              \
        (void)n;                                                              \
        if (rd_varint_h(&p, end, r->hard, &tag))                              \
            return rd_why(r, "bad tag in %s", MSG);                              \
        switch (tag) {
#define FIELDS_END                                                            \
        default:                                                              \
            if (rd_skip_field(r, &p, end, tag, 0))                               \
                return VT_ERR_CORRUPT;                                        \
        }                                                                     \
    }
#define VARINT(f, stmt)                                                       \
    case TAG(f, WT_VARINT):                                                   \
        if (rd_varint_h(&p, end, r->hard, &v))                                \
            return rd_why(r, "bad varint in %s field %d", MSG, f);               \
        stmt;                                                                 \
        break;
#define BYTES(f, stmt)                                                        \
    case TAG(f, WT_LEN):                                                      \
        if (rd_len(&p, end, r->hard, &q, &n))                                          \
            return rd_why(r, "%s field %d runs past the end of the message", MSG, f); \
        stmt;                                                                 \
        break;

int dec_sync(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_sync *s)
{
#define MSG "Sync"
    FIELDS_BEGIN
    VARINT(1, s->time_ns = v)
    VARINT(2, s->device_time_ns = v)
    VARINT(3, s->sequence = v)
    FIELDS_END
    return 0;
#undef MSG
}

int dec_alloc(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_alloc *a, uint64_t *corr)
{
#define MSG "Alloc"
    FIELDS_BEGIN
    VARINT(1, a->address = v)
    VARINT(2, a->size = v)
    VARINT(3, a->device = (uint32_t)v)
    VARINT(4, a->kind = (vt_memkind)(int32_t)v)
    VARINT(5, a->api = (vt_allocapi)(int32_t)v)
    VARINT(6, a->stream = v)
    VARINT(7, a->pool = v)
    VARINT(8, a->site.thread = (uint32_t)v)
    VARINT(9, a->site.stack = (uint32_t)v)
    VARINT(10, *corr = v)
    FIELDS_END
    return 0;
#undef MSG
}

int dec_free(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_free *a, uint64_t *corr)
{
#define MSG "Free"
    FIELDS_BEGIN
    VARINT(1, a->address = v)
    VARINT(2, a->device = (uint32_t)v)
    VARINT(3, a->kind = (vt_memkind)(int32_t)v)
    VARINT(4, a->api = (vt_allocapi)(int32_t)v)
    VARINT(5, a->stream = v)
    VARINT(6, a->site.thread = (uint32_t)v)
    VARINT(7, *corr = v)
    VARINT(8, a->site.stack = (uint32_t)v)
    FIELDS_END
    return 0;
#undef MSG
}

int dec_alloc_failed(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_alloc_failed *a,
                            uint64_t *corr)
{
#define MSG "AllocFailed"
    FIELDS_BEGIN
    VARINT(1, a->size = v)
    VARINT(2, a->device = (uint32_t)v)
    VARINT(3, a->kind = (vt_memkind)(int32_t)v)
    VARINT(4, a->api = (vt_allocapi)(int32_t)v)
    VARINT(5, a->error = (int32_t)v)
    VARINT(6, a->error_name_id = (uint32_t)v)
    VARINT(7, a->stream = v)
    VARINT(8, a->pool = v)
    VARINT(9, a->site.thread = (uint32_t)v)
    VARINT(10, a->site.stack = (uint32_t)v)
    VARINT(11, *corr = v)
    FIELDS_END
    return 0;
#undef MSG
}

/* VmmReserve (5 fields, stack), VmmAddressFree and VmmUnmap (no stack). */
int dec_vmm_range(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_vmm_range *a, uint64_t *corr,
                         int with_stack)
{
#define MSG "Vmm range"
    if (with_stack) {
        FIELDS_BEGIN
        VARINT(1, a->address = v)
        VARINT(2, a->size = v)
        VARINT(3, a->site.thread = (uint32_t)v)
        VARINT(4, a->site.stack = (uint32_t)v)
        VARINT(5, *corr = v)
        FIELDS_END
    } else {
        FIELDS_BEGIN
        VARINT(1, a->address = v)
        VARINT(2, a->size = v)
        VARINT(3, a->site.thread = (uint32_t)v)
        VARINT(4, *corr = v)
        FIELDS_END
    }
    return 0;
#undef MSG
}

int dec_vmm_create(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_vmm_create *a, uint64_t *corr)
{
#define MSG "VmmCreate"
    FIELDS_BEGIN
    VARINT(1, a->handle = v)
    VARINT(2, a->size = v)
    VARINT(3, a->device = (uint32_t)v)
    VARINT(4, a->kind = (vt_memkind)(int32_t)v)
    VARINT(5, a->site.thread = (uint32_t)v)
    VARINT(6, a->site.stack = (uint32_t)v)
    VARINT(7, *corr = v)
    FIELDS_END
    return 0;
#undef MSG
}

int dec_vmm_release(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_vmm_release *a,
                           uint64_t *corr)
{
#define MSG "VmmRelease"
    FIELDS_BEGIN
    VARINT(1, a->handle = v)
    VARINT(2, a->site.thread = (uint32_t)v)
    VARINT(3, *corr = v)
    FIELDS_END
    return 0;
#undef MSG
}

int dec_vmm_map(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_vmm_map *a, uint64_t *corr)
{
#define MSG "VmmMap"
    FIELDS_BEGIN
    VARINT(1, a->address = v)
    VARINT(2, a->size = v)
    VARINT(3, a->offset = v)
    VARINT(4, a->handle = v)
    VARINT(5, a->site.thread = (uint32_t)v)
    VARINT(6, *corr = v)
    FIELDS_END
    return 0;
#undef MSG
}

int dec_pool(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_pool *a, uint64_t *corr)
{
#define MSG "Pool"
    FIELDS_BEGIN
    VARINT(1, a->op = (vt_poolop)(int32_t)v)
    VARINT(2, a->pool = v)
    VARINT(3, a->device = (uint32_t)v)
    VARINT(4, a->value = v)
    VARINT(5, a->site.thread = (uint32_t)v)
    VARINT(6, a->site.stack = (uint32_t)v)
    VARINT(7, *corr = v)
    FIELDS_END
    return 0;
#undef MSG
}

int dec_pool_usage(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_pool_usage *a)
{
#define MSG "PoolUsage"
    FIELDS_BEGIN
    VARINT(1, a->pool = v)
    VARINT(2, a->device = (uint32_t)v)
    VARINT(3, a->reserved_current = v)
    VARINT(4, a->reserved_high = v)
    VARINT(5, a->used_current = v)
    VARINT(6, a->used_high = v)
    FIELDS_END
    return 0;
#undef MSG
}

int dec_kernel(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_kernel *k, uint64_t *corr)
{
#define MSG "Kernel"
    FIELDS_BEGIN
    VARINT(1, k->launch_id = (uint32_t)v)
    VARINT(2, k->duration_ns = v)
    VARINT(3, *corr = v)
    VARINT(4, k->graph_id = v)
    FIELDS_END
    return 0;
#undef MSG
}

int dec_nvtx(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_nvtx *a)
{
#define MSG "Nvtx"
    FIELDS_BEGIN
    VARINT(1, a->op = (vt_nvtxop)(int32_t)v)
    VARINT(2, a->message_id = (uint32_t)v)
    VARINT(3, a->domain_id = (uint32_t)v)
    VARINT(4, a->range_id = v)
    VARINT(5, a->site.thread = (uint32_t)v)
    FIELDS_END
    return 0;
#undef MSG
}

int dec_memory_usage(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_memory_usage *a)
{
#define MSG "MemoryUsage"
    FIELDS_BEGIN
    VARINT(1, a->device = (uint32_t)v)
    VARINT(2, a->free = v)
    VARINT(3, a->total = v)
    FIELDS_END
    return 0;
#undef MSG
}

int dec_dropped(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_dropped *a)
{
#define MSG "Dropped"
    FIELDS_BEGIN
    VARINT(1, a->source = (vt_dropsource)(int32_t)v)
    VARINT(2, a->count = v)
    VARINT(3, a->reason_id = (uint32_t)v)
    FIELDS_END
    return 0;
#undef MSG
}

int dec_note(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_note *a)
{
#define MSG "Note"
    a->text = "";
    FIELDS_BEGIN
    VARINT(1, a->severity = (vt_severity)(int32_t)v)
    BYTES(2, a->text = rd_scratch_str(r, q, n))
    FIELDS_END
    return 0;
#undef MSG
}

int dec_end(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_end *a)
{
#define MSG "End"
    FIELDS_BEGIN
    VARINT(1, a->reason = (vt_endreason)(int32_t)v)
    VARINT(2, a->signal = (int32_t)v)
    VARINT(3, a->events = v)
    VARINT(4, a->dropped = v)
    FIELDS_END
    return 0;
#undef MSG
}

int dec_launch(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_launch *a)
{
#define MSG "Launch"
    FIELDS_BEGIN
    VARINT(1, a->id = (uint32_t)v)
    VARINT(2, a->name = (uint32_t)v)
    VARINT(3, a->device = (uint32_t)v)
    VARINT(4, a->stream = (uint32_t)v)
    VARINT(5, a->grid[0] = (uint32_t)v)
    VARINT(6, a->grid[1] = (uint32_t)v)
    VARINT(7, a->grid[2] = (uint32_t)v)
    VARINT(8, a->block[0] = (uint32_t)v)
    VARINT(9, a->block[1] = (uint32_t)v)
    VARINT(10, a->block[2] = (uint32_t)v)
    VARINT(11, a->shared_memory = (uint32_t)v)
    VARINT(12, a->graph = v != 0)
    FIELDS_END
    return 0;
#undef MSG
}

int dec_frame(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_frame *a)
{
#define MSG "Frame"
    FIELDS_BEGIN
    VARINT(1, a->id = (uint32_t)v)
    VARINT(2, a->kind = (vt_framekind)(int32_t)v)
    VARINT(3, a->ip = v)
    VARINT(4, a->module = (uint32_t)v)
    VARINT(5, a->function = (uint32_t)v)
    VARINT(6, a->file = (uint32_t)v)
    VARINT(7, a->line = (uint32_t)v)
    FIELDS_END
    return 0;
#undef MSG
}

/* Strings of definitions point into the record until stored. */
int dec_string(vt_reader *r, const uint8_t *p, const uint8_t *end, uint32_t *id, const uint8_t **s,
                      size_t *len)
{
#define MSG "String"
    FIELDS_BEGIN
    VARINT(1, *id = (uint32_t)v)
    BYTES(2, *s = q; *len = n)
    FIELDS_END
    return 0;
#undef MSG
}

int dec_module(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_module *a, module_raw *m)
{
#define MSG "Module"
    FIELDS_BEGIN
    VARINT(1, a->id = (uint32_t)v)
    BYTES(2, m->path = q; m->path_len = n)
    VARINT(3, a->load_bias = v)
    VARINT(4, a->start = v)
    VARINT(5, a->end = v)
    BYTES(6, m->build_id = q; m->build_id_len = n)
    FIELDS_END
    return 0;
#undef MSG
}

int dec_thread(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_thread *a, const uint8_t **nm,
                      size_t *nlen)
{
#define MSG "Thread"
    FIELDS_BEGIN
    VARINT(1, a->id = (uint32_t)v)
    VARINT(2, a->tid = (uint32_t)v)
    BYTES(3, *nm = q; *nlen = n)
    FIELDS_END
    return 0;
#undef MSG
}

int dec_device(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_device *a, device_raw *d)
{
#define MSG "Device"
    FIELDS_BEGIN
    VARINT(1, a->index = (uint32_t)v)
    BYTES(2, d->name = q; d->name_len = n)
    BYTES(3, d->uuid = q; d->uuid_len = n)
    VARINT(4, a->total_memory = v)
    VARINT(5, a->cc_major = (uint32_t)v)
    VARINT(6, a->cc_minor = (uint32_t)v)
    BYTES(7, d->pci = q; d->pci_len = n)
    FIELDS_END
    return 0;
#undef MSG
}

/* Stack frame ids go to `out` (room for `max`, enough: each takes >= 1
 * byte of the record); packed and unpacked encodings are both accepted. */
int dec_stack(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_stack *a, uint32_t *out, size_t max)
{
#define MSG "Stack"
    uint32_t nf = 0;
    FIELDS_BEGIN
    VARINT(1, a->id = (uint32_t)v)
    VARINT(3, a->parent = (uint32_t)v)
    case TAG(2, WT_VARINT):
        if (rd_varint_h(&p, end, r->hard, &v) || nf >= max)
            return rd_why(r, "bad frame id in Stack");
        out[nf++] = (uint32_t)v;
        break;
    case TAG(2, WT_LEN):
        if (rd_len(&p, end, r->hard, &q, &n))
            return rd_why(r, "Stack frames run past the end of the message");
        for (const uint8_t *qe = q + n; q < qe;) {
            if (rd_varint_h(&q, qe, r->hard, &v) || nf >= max)
                return rd_why(r, "bad packed frame id in Stack");
            out[nf++] = (uint32_t)v;
        }
        break;
    FIELDS_END
    a->frames = out;
    a->nframes = nf;
    return 0;
#undef MSG
}

/* Header: strings go straight to the arena (one header per trace). */
int dec_header(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_ev_header *h, int store)
{
#define MSG "Header"
    uint32_t nargv = 0, nenv = 0;
    const char **argv = NULL, **en = NULL, **ev = NULL;
    /* first pass: count the lists (unknown fields are counted in the second) */
    const uint8_t *p0 = p;
    uint64_t unknown0 = r->st.unknown_fields;
    FIELDS_BEGIN
    BYTES(7, nargv++)
    BYTES(9, nenv++)
    FIELDS_END
    p = p0;
    r->st.unknown_fields = unknown0;
    if (nargv > MAX_HEADER_LIST)
        nargv = MAX_HEADER_LIST;
    if (nenv > MAX_HEADER_LIST)
        nenv = MAX_HEADER_LIST;
    if (store) {
        argv = rd_arena_alloc(r, sizeof(char *) * (nargv + 1), sizeof(char *));
        en = rd_arena_alloc(r, sizeof(char *) * (nenv + 1), sizeof(char *));
        ev = rd_arena_alloc(r, sizeof(char *) * (nenv + 1), sizeof(char *));
        if (!argv || !en || !ev)
            return rd_table_full(r, "the header");
    }
    h->hostname = h->program = h->tool_version = "";
    uint32_t ia = 0, ie = 0;
#define HSTR(dst)                                                             \
    do {                                                                      \
        const char *s_ = store ? rd_arena_str(r, q, n) : "";                     \
        if (!s_)                                                              \
            return rd_table_full(r, "the header");             \
        dst = s_;                                                             \
    } while (0)
    FIELDS_BEGIN
    case TAG(1, WT_I32):
        if (end - p < 4)
            return rd_why(r, "Header magic past the end of the message");
        h->magic = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        p += 4;
        break;
    VARINT(2, h->format_version = (uint32_t)v)
    BYTES(3, HSTR(h->tool_version))
    VARINT(4, h->pid = (uint32_t)v)
    VARINT(5, h->ppid = (uint32_t)v)
    BYTES(6, HSTR(h->hostname))
    BYTES(7, if (ia < nargv && store) HSTR(argv[ia++]))
    BYTES(8, HSTR(h->program))
    case TAG(9, WT_LEN): {
        if (rd_len(&p, end, r->hard, &q, &n))
            return rd_why(r, "Header env runs past the end of the message");
        const uint8_t *ep = q, *ee = q + n, *nm = NULL, *val = NULL;
        size_t nml = 0, vall = 0;
        while (ep < ee) {
            uint64_t t;
            if (rd_varint(&ep, ee, &t))
                return rd_why(r, "bad tag in EnvVar");
            if (t == TAG(1, WT_LEN) || t == TAG(2, WT_LEN)) {
                const uint8_t *s;
                size_t sl;
                if (rd_len(&ep, ee, r->hard, &s, &sl))
                    return rd_why(r, "EnvVar string past the end");
                if (t == TAG(1, WT_LEN))
                    nm = s, nml = sl;
                else
                    val = s, vall = sl;
            } else if (rd_skip_field(r, &ep, ee, t, 0)) {
                return VT_ERR_CORRUPT;
            }
        }
        if (store && ie < nenv) {
            en[ie] = rd_arena_str(r, nm ? nm : (const uint8_t *)"", nml);
            ev[ie] = rd_arena_str(r, val ? val : (const uint8_t *)"", vall);
            if (!en[ie] || !ev[ie])
                return rd_table_full(r, "the header");
            ie++;
        }
        break;
    }
    VARINT(10, h->clock = (vt_clock)(int32_t)v)
    VARINT(11, h->trace_clock_ns = v)
    VARINT(12, h->realtime_ns = v)
    VARINT(13, h->kernels = v != 0)
    VARINT(14, h->native_stacks = v != 0)
    VARINT(15, h->python_stacks = v != 0)
    FIELDS_END
#undef HSTR
    if (store) {
        argv[ia] = en[ie] = ev[ie] = NULL;
        h->argv = argv;
        h->argc = ia;
        h->env_names = en;
        h->env_values = ev;
        h->nenv = ie;
    }
    return 0;
#undef MSG
}
