/* vt_reader_fast.h - the body of the reader's hot path (kernel, alloc and
 * free records in writer field order), included twice by vt_reader.c:
 * once with its shift-based varints (FAST_VARINT_SHIFTS), inlined, and on
 * x86-64 once more with BMI2's pext (FAST_VARINT_PEXT), chosen at run time.
 * Expects FAST_ATTR, FAST_NAME and FAST_VARINT defined; see fast_record in
 * vt_reader.c for the contract.  Not a header of its own: no guard. */

FAST_ATTR int FAST_NAME(const vt_reader *r, fast_state *fs, const uint8_t *p, const uint8_t *end, vt_event *ev)
{
    uint64_t ts = 0;
    if (__builtin_expect(*p == TAG(1, WT_VARINT), 1)) { /* a time delta of 0 is rare */
        p++;
        FAST_VARINT(ts);
    }
    /* the body: one tag byte and a one-byte length that ends the record.
     * The caller took a record of at most 127 bytes, so a length byte of
     * 0x80 or more (a longer varint) cannot reach exactly to its end. */
    if (p + 2 + p[1] != end)
        return 0;
    uint8_t body = p[0];
    p += 2;
    /* The event's time first, from the clock of its kind, so that the delta
     * need not live through the fields (it did, on the stack); the clock
     * itself moves only once the record is known to fit. */
    const uint64_t dt = (uint64_t)unzigzag(ts);
    if (__builtin_expect(body == TAG(VT_EV_KERNEL, WT_LEN), 1)) {
        ev->time_ns = fs->device_time + dt;
        uint64_t launch = 0, dur = 0, dc = 0, gid = 0;
        FAST_FIELD_L(1, launch)
        FAST_FIELD_L(2, dur)
        FAST_ZIGZAG1(3, dc)
        FAST_FIELD(4, gid)
        if (p != end)
            return 0;
        vt_ev_kernel *k = &ev->u.kernel;
        ev->type = VT_EV_KERNEL;
        k->launch_id = (uint32_t)launch;
        kernel_resolve(r, k);
        k->duration_ns = dur;
        k->graph_id = gid;
        fs->corr += dc;
        k->corr = fs->corr;
        fs->device_time = FAST_REREAD(ev->time_ns);
        return 1;
    }
    ev->time_ns = fs->host_time + dt;
    /* Allocations and frees: the event zeroed up to the site's fingerprint
     * (writer input, never read back) in a few wide stores, then each
     * field present straight into it (an absent one stays 0, without a
     * store of its own); if the record then proves not to fit, the slow
     * path decodes it again into a zeroed event. */
    if (body == TAG(VT_EV_ALLOC, WT_LEN)) {
        vt_ev_alloc *a = &ev->u.alloc;
        uint64_t thr = 0, dc = 0;
        memset(a, 0, offsetof(vt_ev_alloc, site.fp));
        FAST_SET_L(1, a->address, (uint64_t))
        FAST_SET_L(2, a->size, (uint64_t))
        FAST_SET1(3, a->device, (uint32_t))
        FAST_SET1_PAIR(4, a->kind, (vt_memkind)(int32_t), a->api, (vt_allocapi)(int32_t))
        FAST_SET(6, a->stream, (uint64_t))
        FAST_SET(7, a->pool, (uint64_t))
        FAST_FIELD1_L(8, thr)
        FAST_SET_L(9, a->site.stack, (uint32_t))
        FAST_ZIGZAG1(10, dc)
        if (p != end)
            return 0;
        ev->type = VT_EV_ALLOC;
        fast_site(r, fs, &a->site, &a->corr, thr, dc);
    } else if (body == TAG(VT_EV_FREE, WT_LEN)) {
        vt_ev_free *a = &ev->u.free;
        uint64_t thr = 0, dc = 0;
        memset(a, 0, offsetof(vt_ev_free, site.fp));
        FAST_SET_L(1, a->address, (uint64_t))
        FAST_SET1(2, a->device, (uint32_t))
        FAST_SET1(3, a->kind, (vt_memkind)(int32_t))
        FAST_SET1(4, a->api, (vt_allocapi)(int32_t))
        FAST_SET(5, a->stream, (uint64_t))
        FAST_FIELD1_L(6, thr)
        FAST_ZIGZAG1(7, dc)
        FAST_SET(8, a->site.stack, (uint32_t))
        if (p != end)
            return 0;
        ev->type = VT_EV_FREE;
        fast_site(r, fs, &a->site, &a->corr, thr, dc);
    } else {
        return 0;
    }
    fs->host_time = FAST_REREAD(ev->time_ns);
    return 1;
}
