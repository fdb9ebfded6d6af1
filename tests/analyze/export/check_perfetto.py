#!/usr/bin/env python3
"""check_perfetto.py FILE - the structure of a `vramtrace export --format
perfetto` trace, as trace_processor needs it: a clock snapshot first, one
packet sequence whose first packet clears the incremental state, every
track defined before an event or a child uses it, interned ids (function
names, source paths, frames, callstacks) defined before use in packets that
say they need incremental state, slices balanced per track once sorted by
time, counters with values, and each flamegraph sample's callstack_weight
a double (Perfetto's type) equal to its `bytes` annotation.  Prints a summary; exit 1 on the first fault."""
import struct
import sys


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def fields(b):
    """[(field, wiretype, value)] of one message (bytes for length fields)."""
    out, i = [], 0
    while i < len(b):
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            v = b[i:i + n]
            if len(v) != n:
                raise ValueError("length past the end")
            i += n
        elif wt == 1:
            v = int.from_bytes(b[i:i + 8], "little")
            i += 8
        elif wt == 5:
            v = int.from_bytes(b[i:i + 4], "little")
            i += 4
        else:
            raise ValueError("wire type %d" % wt)
        out.append((f, wt, v))
    return out


def get(fs, f, default=None):
    for k, _, v in fs:
        if k == f:
            return v
    return default


def fail(msg):
    print("check_perfetto: FAIL: " + msg)
    sys.exit(1)


def main(path):
    data = open(path, "rb").read()
    packets = [v for f, wt, v in fields(data) if f == 1 and wt == 2]
    if not packets:
        fail("no packets")
    tracks, names, paths, frames, stacks = {}, set(), set(), set(), set()
    evnames, annots = set(), {}
    slices = []  # (ts, order, track, +1/-1)
    counters = instants = flames = 0
    for n, raw in enumerate(packets):
        p = fields(raw)
        if get(p, 10) != 1:
            fail("packet %d: not on sequence 1" % n)
        flags = get(p, 13, 0)
        if n == 0:
            if get(p, 6) is None:
                fail("the first packet is not a clock snapshot")
            if flags != 3:
                fail("the first packet's sequence_flags are %d, not 3" % flags)
        interned = get(p, 12)
        if interned is not None:
            if not flags & 2:
                fail("packet %d: interned data without NEEDS_INCREMENTAL_STATE" % n)
            for f, _, v in fields(interned):
                m = fields(v)
                iid = get(m, 1)
                if f == 2:
                    evnames.add(iid)
                elif f == 3:
                    annots[iid] = get(m, 2)
                elif f == 5:
                    names.add(iid)
                elif f == 18:
                    paths.add(iid)
                elif f == 6:
                    if get(m, 2) not in names:
                        fail("frame %d names an undefined function %s" % (iid, get(m, 2)))
                    if get(m, 5) is not None and get(m, 5) not in paths:
                        fail("frame %d names an undefined source path" % iid)
                    frames.add(iid)
                elif f == 7:
                    for k, _, fid in m:
                        if k == 2 and fid not in frames:
                            fail("callstack %d uses an undefined frame %d" % (iid, fid))
                    stacks.add(iid)
        td = get(p, 60)
        if td is not None:
            t = fields(td)
            uuid, parent = get(t, 1), get(t, 5)
            if uuid in tracks:
                fail("track %d defined twice" % uuid)
            if parent is not None and parent not in tracks:
                fail("track %d's parent %d is not defined before it" % (uuid, parent))
            tracks[uuid] = get(t, 8) is not None
        te = get(p, 11)
        if te is not None:
            e = fields(te)
            tr, ty, ts = get(e, 11), get(e, 9), get(p, 8)
            if tr not in tracks:
                fail("packet %d: event on undefined track %s" % (n, tr))
            if ts is None:
                fail("packet %d: event without a timestamp" % n)
            ni = get(e, 10)
            if ni is not None and (ni not in evnames or not flags & 2):
                fail("packet %d: event name iid %d undefined (or without NEEDS_INCREMENTAL_STATE)" % (n, ni))
            for k, _, v in e:
                if k == 4:
                    ai = get(fields(v), 1)
                    if ai is not None and ai not in annots:
                        fail("packet %d: annotation name iid %d undefined" % (n, ai))
            if ty == 4:
                if not tracks[tr]:
                    fail("packet %d: counter value on a slice track" % n)
                if get(e, 30) is None:
                    fail("packet %d: counter without a value" % n)
                counters += 1
            elif ty in (1, 2):
                slices.append((ts, n, tr, 1 if ty == 1 else -1))
            elif ty == 3:
                cs = get(e, 56)
                if cs is not None:
                    if cs not in stacks:
                        fail("packet %d: undefined callstack %d" % (n, cs))
                    if not flags & 2:
                        fail("packet %d: callstack iid without NEEDS_INCREMENTAL_STATE" % n)
                    w = [(wt, v) for k, wt, v in e if k == 57]
                    if len(w) != 1 or w[0][0] != 1:
                        fail("packet %d: callstack_weight is not one double (wire type 1): %s" % (n, w))
                    weight = struct.unpack("<d", w[0][1].to_bytes(8, "little"))[0]
                    nbytes = [get(fields(v), 4) for k, _, v in e
                              if k == 4 and annots.get(get(fields(v), 1)) == b"bytes"]
                    if not weight > 0 or nbytes != [weight]:
                        fail("packet %d: callstack_weight %r, bytes annotation %s" % (n, weight, nbytes))
                    flames += 1
                else:
                    instants += 1
            else:
                fail("packet %d: event type %s" % (n, ty))
    depth = {}
    for ts, _, tr, d in sorted(slices):
        depth[tr] = depth.get(tr, 0) + d
        if depth[tr] < 0:
            fail("track %d: a slice ends that never began (at %d)" % (tr, ts))
    open_ = [t for t, d in depth.items() if d]
    if open_:
        fail("tracks %s: slices left open" % open_[:5])
    print("check_perfetto: ok: %d packets, %d tracks, %d slices, %d counter points, %d instants, "
          "%d flamegraph samples (%d callstacks, %d frames)"
          % (len(packets), len(tracks), len(slices) // 2, counters, instants, flames, len(stacks), len(frames)))


if __name__ == "__main__":
    main(sys.argv[1])
