#!/usr/bin/env python3
"""perfetto_schema.py - what `vramtrace export --format perfetto` writes,
held against Perfetto's official schema through perfetto_fields.tsv: the
facts (number, label, type, wire type, oneof) of every field the project's
subset declares, taken from google/perfetto's own perfetto_trace.proto.

  perfetto_schema.py facts OFFICIAL.proto SUBSET.proto SOURCE > perfetto_fields.tsv
      Write the table: every field and enum value SUBSET.proto declares,
      looked up by name in OFFICIAL.proto (a local checkout's
      protos/perfetto/trace/perfetto_trace.proto; SOURCE names it, e.g.
      "google/perfetto protos/perfetto/trace/perfetto_trace.proto @ COMMIT").
      Not run in CI: the upstream file is not part of the repository.
  perfetto_schema.py subset SUBSET.proto FIELDS.tsv
      The subset, field by field, against the table (number, label, type,
      oneof; enum values by name and number), and the table against the
      subset: the two list the same fields.
  perfetto_schema.py wire FIELDS.tsv EXPORT...
      Walk each export's bytes from Trace down: every (message, field)
      written is in the table, with the table's wire type; a non-repeated
      field at most once per message; one member per oneof; enum values
      the table lists.  Prints what was seen per field.

Needs protoc for `facts` and `subset` (descriptor sets, decoded here by
hand: no Python protobuf package).  Exit 1 on a disagreement."""
import collections
import os
import subprocess
import sys
import tempfile

# descriptor.proto's own numbers (FieldDescriptorProto.Type, .Label)
TYPES = {1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 6: "fixed64", 7: "fixed32",
         8: "bool", 9: "string", 10: "group", 11: "message", 12: "bytes", 13: "uint32", 14: "enum",
         15: "sfixed32", 16: "sfixed64", 17: "sint32", 18: "sint64"}
LABELS = {1: "optional", 2: "required", 3: "repeated"}
WIRE = {"double": "i64", "fixed64": "i64", "sfixed64": "i64", "float": "i32", "fixed32": "i32",
        "sfixed32": "i32", "string": "len", "bytes": "len", "message": "len", "enum": "varint"}
WIRE_NUM = {"varint": 0, "i64": 1, "len": 2, "i32": 5}
WIRE_NAME = {v: k for k, v in WIRE_NUM.items()}
HEADER = ["kind", "message", "name", "number", "label", "type", "wire", "oneof"]


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
    """[(field, wiretype, value)] of one message: ints for varint and
    fixed fields (raw bits), bytes for length-delimited ones."""
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
        elif wt in (1, 5):
            n = 8 if wt == 1 else 4
            if i + n > len(b):
                raise ValueError("fixed field past the end")
            v = int.from_bytes(b[i:i + n], "little")
            i += n
        else:
            raise ValueError("wire type %d" % wt)
        out.append((f, wt, v))
    return out


def one(fs, f, default=None):
    for k, _, v in fs:
        if k == f:
            return v
    return default


def many(fs, f):
    return [v for k, _, v in fs if k == f]


def descriptor(proto):
    """{message: {fields: {name: facts}, enums}} and {enum: {value: number}}
    of PROTO, compiled by protoc into a FileDescriptorSet and walked here."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "ds.pb")
        subprocess.run(["protoc", "-I" + os.path.dirname(os.path.abspath(proto)),
                        "--descriptor_set_out=" + out, os.path.basename(proto)], check=True)
        ds = open(out, "rb").read()
    msgs, enums = {}, {}
    for fd in many(fields(ds), 1):  # FileDescriptorSet.file
        fd = fields(fd)
        pkg = "." + one(fd, 2, b"").decode() + "."  # FileDescriptorProto.package

        def rel(type_name):
            return type_name[len(pkg):] if type_name.startswith(pkg) else type_name

        def walk_enum(e, prefix):
            e = fields(e)
            name = prefix + one(e, 1).decode()
            enums[name] = {one(fields(v), 1).decode(): one(fields(v), 2, 0) for v in many(e, 2)}

        def walk_msg(m, prefix):
            m = fields(m)
            name = prefix + one(m, 1).decode()  # DescriptorProto.name
            oneofs = [one(fields(o), 1).decode() for o in many(m, 8)]
            fs = {}
            for f in many(m, 2):  # DescriptorProto.field
                f = fields(f)
                ty = TYPES[one(f, 5)]
                oi = one(f, 9)  # oneof_index (proto3 optional: a synthetic oneof, not here)
                fs[one(f, 1).decode()] = {
                    "number": one(f, 3), "label": LABELS[one(f, 4)],
                    "type": rel(one(f, 6).decode()) if ty in ("message", "enum") else ty,
                    "kind": ty, "oneof": oneofs[oi] if oi is not None else "-"}
            msgs[name] = fs
            for n in many(m, 3):
                walk_msg(n, name + ".")
            for e in many(m, 4):
                walk_enum(e, name + ".")

        for m in many(fd, 4):
            walk_msg(m, "")
        for e in many(fd, 5):
            walk_enum(e, "")
    return msgs, enums


def wire_of(facts):
    return WIRE.get(facts["kind"], "varint")


def cmd_facts(official, subset, source):
    omsgs, oenums = descriptor(official)
    smsgs, senums = descriptor(subset)
    print("# Perfetto's official facts for every field and enum value that")
    print("# tests/analyze/export/perfetto_subset.proto declares (the exporter's")
    print("# fields), written by `perfetto_schema.py facts` from")
    print("# " + source)
    print("# kind field: message, name, number, label, type (a message or enum by its")
    print("# name in package perfetto.protos), wire type, oneof (- when none).")
    print("# kind value: enum, value name, number.")
    print("\t".join(HEADER))
    missing = 0
    for m in sorted(smsgs):
        for name in sorted(smsgs[m], key=lambda n: smsgs[m][n]["number"]):
            o = omsgs.get(m, {}).get(name)
            if o is None:
                print("facts: %s.%s is not in the official schema" % (m, name), file=sys.stderr)
                missing += 1
                continue
            print("\t".join(["field", m, name, str(o["number"]), o["label"], o["type"], wire_of(o), o["oneof"]]))
    for e in sorted(senums):
        for name in sorted(senums[e], key=lambda n: senums[e][n]):
            if name not in oenums.get(e, {}):
                print("facts: %s.%s is not in the official schema" % (e, name), file=sys.stderr)
                missing += 1
                continue
            print("\t".join(["value", e, name, str(oenums[e][name]), "-", "-", "-", "-"]))
    return 1 if missing else 0


def load_table(path):
    fs, ens = {}, collections.defaultdict(dict)
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        row = dict(zip(HEADER, line.rstrip("\n").split("\t")))
        if row["kind"] == "field":
            fs[(row["message"], row["name"])] = {
                "number": int(row["number"]), "label": row["label"], "type": row["type"],
                "wire": row["wire"], "oneof": row["oneof"]}
        elif row["kind"] == "value":
            ens[row["message"]][row["name"]] = int(row["number"])
    return fs, ens


def cmd_subset(subset, table):
    smsgs, senums = descriptor(subset)
    tf, te = load_table(table)
    bad = []
    seen = set()
    for m, fs in smsgs.items():
        for name, s in fs.items():
            t = tf.get((m, name))
            seen.add((m, name))
            if t is None:
                bad.append("%s.%s: in the subset, not in the table (run `facts`)" % (m, name))
                continue
            for k in ("number", "label", "type", "oneof"):
                if s[k] != t[k]:
                    bad.append("%s.%s: %s is %s in the subset, %s in Perfetto's schema" % (m, name, k, s[k], t[k]))
            if wire_of(s) != t["wire"]:
                bad.append("%s.%s: wire type %s in the subset, %s in Perfetto's schema" % (m, name, wire_of(s), t["wire"]))
    for key in sorted(set(tf) - seen):
        bad.append("%s.%s: in the table, not in the subset" % key)
    for e, vals in senums.items():
        for name, num in vals.items():
            if te.get(e, {}).get(name) != num:
                bad.append("enum %s.%s = %d in the subset, %s in Perfetto's schema" % (e, name, num, te.get(e, {}).get(name)))
    for b in bad:
        print("perfetto_schema: FAIL: " + b)
    if not bad:
        print("perfetto_schema: ok: the subset's %d fields and %d enum values agree with Perfetto's schema"
              % (len(seen), sum(len(v) for v in senums.values())))
    return 1 if bad else 0


def cmd_wire(table, exports):
    tf, te = load_table(table)
    by_num = {(m, t["number"]): (name, t) for (m, name), t in tf.items()}
    seen = collections.Counter()
    bad = []

    def walk(msg, b, where):
        once, oneofs = set(), {}
        for num, wt, v in fields(b):
            hit = by_num.get((msg, num))
            if hit is None:
                bad.append("%s: %s field %d (wire %s) is not in the table" % (where, msg, num, WIRE_NAME.get(wt, wt)))
                continue
            name, t = hit
            path = "%s.%s" % (msg, name)
            if wt != WIRE_NUM[t["wire"]]:
                bad.append("%s: %s written as %s, Perfetto's %s is %s" % (where, path, WIRE_NAME[wt], t["type"], t["wire"]))
                continue
            if t["label"] != "repeated":
                if num in once:
                    bad.append("%s: %s (%s) written twice in one message" % (where, path, t["label"]))
                once.add(num)
            if t["oneof"] != "-":
                other = oneofs.setdefault(t["oneof"], name)
                if other != name:
                    bad.append("%s: %s.%s and %s of oneof %s both set" % (where, msg, other, name, t["oneof"]))
            if t["type"] in te and v not in te[t["type"]].values():
                bad.append("%s: %s = %d, not a value of %s the table lists" % (where, path, v, t["type"]))
            seen[path] += 1
            if wt == 2 and t["type"] not in ("string", "bytes"):
                walk(t["type"], v, where)

    for path in exports:
        data = open(path, "rb").read()
        for k, (num, wt, v) in enumerate(fields(data)):
            if (num, wt) != (1, 2):
                bad.append("%s: top-level field %d wire %d, not Trace.packet" % (path, num, wt))
                continue
            seen["Trace.packet"] += 1
            walk("TracePacket", v, "%s packet %d" % (path, k))
            if len(bad) > 20:
                break
    for b in bad[:20]:
        print("perfetto_schema: FAIL: " + b)
    if not bad:
        print("perfetto_schema: ok: %d files; every field as Perfetto's schema types it: %s"
              % (len(exports), ", ".join("%s %d" % kv for kv in sorted(seen.items()))))
    return 1 if bad else 0


def main(argv):
    if len(argv) == 5 and argv[1] == "facts":
        return cmd_facts(argv[2], argv[3], argv[4])
    if len(argv) == 4 and argv[1] == "subset":
        return cmd_subset(argv[2], argv[3])
    if len(argv) >= 4 and argv[1] == "wire":
        return cmd_wire(argv[2], argv[3:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
