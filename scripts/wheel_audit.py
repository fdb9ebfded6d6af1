#!/usr/bin/env python3
"""wheel_audit.py ELF... - what the shipped binaries need of the machine
they run on, checked as auditwheel checks a manylinux wheel.

For each ELF file: every DT_NEEDED, and every symbol version it asks of
them (.gnu.version_r).  Fails (exit 1) when a NEEDED library is outside
the allowlist: glibc's own objects, and CUPTI and the driver, which the
host process brings (libvramtrace.so finds libcupti at run time,
src/inject/vt_loader.c).  The glibc floor is the highest GLIBC_x.y asked
for; the platform tag follows from it (PEP 600: manylinux_x_y_x86_64).

  --floor    print only the floor (2.34)
  --tag      print only the platform tag (manylinux_2_34_x86_64)
Without either: a report, one line per file, then the floor and the tag.
Reads ELF itself (no readelf): 64-bit little-endian only.
"""
import re
import struct
import sys

ALLOWED = [
    r"libc\.so\.6", r"libm\.so\.6", r"libpthread\.so\.0", r"libdl\.so\.2", r"librt\.so\.1",
    r"ld-linux-x86-64\.so\.2",
    r"libcupti\.so\.\d+", r"libcuda\.so\.1",  # the host's: loaded by the traced program or the driver
]
MANYLINUX_MIN = (2, 17)  # the oldest tag pip knows as manylinux_2_x (manylinux2014)

DT_NEEDED, DT_STRTAB, DT_RPATH, DT_RUNPATH, DT_VERNEED, DT_VERNEEDNUM = 1, 5, 15, 29, 0x6ffffffe, 0x6fffffff


def read_elf(path):
    """(needed, {version names asked}, runpath) of one ELF file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
    e_phoff, = struct.unpack_from("<Q", data, 0x20)
    e_phentsize, e_phnum = struct.unpack_from("<HH", data, 0x36)
    loads, dyn = [], None
    for i in range(e_phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data, e_phoff + i * e_phentsize)
        if p_type == 1:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == 2:
            dyn = (p_offset, p_filesz)
    if dyn is None:
        return [], set(), []  # static

    def off(vaddr):
        for v, o, n in loads:
            if v <= vaddr < v + n:
                return vaddr - v + o
        raise ValueError(f"{path}: address {vaddr:#x} outside the file")

    entries = []
    for i in range(dyn[1] // 16):
        tag, val = struct.unpack_from("<qQ", data, dyn[0] + 16 * i)
        if tag == 0:
            break
        entries.append((tag, val))
    strtab = off(next(v for t, v in entries if t == DT_STRTAB))

    def string(o):
        end = data.index(b"\0", strtab + o)
        return data[strtab + o:end].decode()

    needed = [string(v) for t, v in entries if t == DT_NEEDED]
    runpath = [string(v) for t, v in entries if t in (DT_RPATH, DT_RUNPATH)]
    versions = set()
    vn = [v for t, v in entries if t == DT_VERNEED]
    count = next((v for t, v in entries if t == DT_VERNEEDNUM), 0)
    if vn:
        at = off(vn[0])
        for _ in range(count):
            _, vn_cnt, vn_file, vn_aux, vn_next = struct.unpack_from("<HHIII", data, at)
            a = at + vn_aux
            for _ in range(vn_cnt):
                _, _, _, vna_name, vna_next = struct.unpack_from("<IHHII", data, a)
                versions.add((string(vn_file), string(vna_name)))
                a += vna_next
            at += vn_next
            if not vn_next:
                break
    return needed, versions, runpath


def glibc_key(name):
    m = re.fullmatch(r"GLIBC_(\d+)\.(\d+)(?:\.(\d+))?", name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def main(argv):
    mode = None
    files = []
    for a in argv:
        if a in ("--floor", "--tag"):
            mode = a
        else:
            files.append(a)
    if not files:
        print(__doc__, file=sys.stderr)
        return 2
    floor, bad, lines = MANYLINUX_MIN, [], []
    for path in files:
        needed, versions, runpath = read_elf(path)
        top = max((k for k in (glibc_key(v) for _, v in versions) if k), default=None)
        if top and top > floor:
            floor = top
        for n in needed:
            if not any(re.fullmatch(p, n) for p in ALLOWED):
                bad.append(f"{path}: NEEDED {n} is not on the allowlist")
        for lib, v in sorted(versions):
            host = re.fullmatch(r"libcupti\.so\.\d+|libcuda\.so\.1", lib)
            if not host and not glibc_key(v):  # GLIBC_PRIVATE, or a library off the list
                bad.append(f"{path}: needs {v} of {lib}")
        lines.append(f"{path}: NEEDED {' '.join(needed) or '(none)'}; highest "
                     f"{'GLIBC_%d.%d' % top if top else 'no GLIBC_ version'}"
                     + (f"; RUNPATH {':'.join(runpath)}" if runpath else ""))
    tag = "manylinux_%d_%d_x86_64" % floor
    if mode == "--floor":
        print("%d.%d" % floor)
    elif mode == "--tag":
        print(tag)
    else:
        print("\n".join(lines))
        print(f"glibc floor: {floor[0]}.{floor[1]} (platform tag {tag})")
    for b in bad:
        print("wheel_audit: FAIL: " + b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
