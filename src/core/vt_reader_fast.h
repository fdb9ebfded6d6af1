/* vt_reader_fast.h - the body of the reader's hot path (kernel, alloc and
 * free records in writer field order), included twice by vt_reader.c:
 * once with its shift-based varints (FAST_VARINT_SHIFTS), inlined, and on
 * x86-64 once more with BMI2's pext (FAST_VARINT_PEXT), chosen at run time.
 * Expects FAST_ATTR, FAST_NAME and FAST_VARINT defined; see fast_record in
 * vt_reader.c for the contract.  Not a header of its own: no guard. */

FAST_ATTR int FAST_NAME(vt_reader *r, const uint8_t *p, const uint8_t *end, vt_event *ev)
{
    uint64_t ts = 0;
    if (*p == TAG(1, WT_VARINT)) {
        p++;
        FAST_VARINT(ts);
    }
    if (end - p < 2 || p[1] >= 0x80 || p + 2 + p[1] != end)
        return 0;
    uint8_t body = p[0];
    p += 2;
    if (__builtin_expect(body == TAG(VT_EV_KERNEL, WT_LEN), 1)) {
        uint64_t launch = 0, dur = 0, cd = 0, gid = 0;
        FAST_FIELD(1, launch)
        FAST_FIELD(2, dur)
        FAST_FIELD1(3, cd)
        FAST_FIELD(4, gid)
        if (p != end)
            return 0;
        vt_ev_kernel *k = &ev->u.kernel;
        ev->type = VT_EV_KERNEL;
        k->launch_id = (uint32_t)launch;
        kernel_resolve(r, k);
        k->duration_ns = dur;
        k->graph_id = gid;
        r->corr += (uint64_t)unzigzag(cd);
        k->corr = r->corr;
        r->device_time += (uint64_t)unzigzag(ts);
        ev->time_ns = r->device_time;
        return 1;
    }
    if (body == TAG(VT_EV_ALLOC, WT_LEN)) {
        uint64_t addr = 0, size = 0, dev = 0, kind = 0, api = 0, stream = 0, pool = 0, thr = 0, stk = 0, cd = 0;
        FAST_FIELD(1, addr)
        FAST_FIELD(2, size)
        FAST_FIELD1(3, dev)
        FAST_FIELD1(4, kind)
        FAST_FIELD1(5, api)
        FAST_FIELD(6, stream)
        FAST_FIELD(7, pool)
        FAST_FIELD1(8, thr)
        FAST_FIELD(9, stk)
        FAST_FIELD1(10, cd)
        if (p != end)
            return 0;
        vt_ev_alloc *a = &ev->u.alloc;
        ev->type = VT_EV_ALLOC;
        a->address = addr;
        a->size = size;
        a->device = (uint32_t)dev;
        a->kind = (vt_memkind)(int32_t)kind;
        a->api = (vt_allocapi)(int32_t)api;
        a->stream = stream;
        a->pool = pool;
        a->site.frames = NULL;
        a->site.nframes = 0;
        a->site.thread = (uint32_t)thr;
        a->site.stack = (uint32_t)stk;
        a->site.tid = tid_of(r, (uint32_t)thr);
        r->corr += (uint64_t)unzigzag(cd);
        a->corr = r->corr;
    } else if (body == TAG(VT_EV_FREE, WT_LEN)) {
        uint64_t addr = 0, dev = 0, kind = 0, api = 0, stream = 0, thr = 0, cd = 0, stk = 0;
        FAST_FIELD(1, addr)
        FAST_FIELD1(2, dev)
        FAST_FIELD1(3, kind)
        FAST_FIELD1(4, api)
        FAST_FIELD(5, stream)
        FAST_FIELD1(6, thr)
        FAST_FIELD1(7, cd)
        FAST_FIELD(8, stk)
        if (p != end)
            return 0;
        vt_ev_free *a = &ev->u.free;
        ev->type = VT_EV_FREE;
        a->address = addr;
        a->device = (uint32_t)dev;
        a->kind = (vt_memkind)(int32_t)kind;
        a->api = (vt_allocapi)(int32_t)api;
        a->stream = stream;
        a->site.frames = NULL;
        a->site.nframes = 0;
        a->site.thread = (uint32_t)thr;
        a->site.stack = (uint32_t)stk;
        a->site.tid = tid_of(r, (uint32_t)thr);
        r->corr += (uint64_t)unzigzag(cd);
        a->corr = r->corr;
    } else {
        return 0;
    }
    r->host_time += (uint64_t)unzigzag(ts);
    ev->time_ns = r->host_time;
    return 1;
}
