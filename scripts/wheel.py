#!/usr/bin/env python3
"""wheel.py STAGE OUT_DIR VERSION PLATFORM_TAG README - zip a staged tree
into a wheel (PEP 427), with the standard library only (zipfile, hashlib):
no build backend from an index.  Called by scripts/wheel.sh, which stages.

STAGE holds `vramtrace/` (the package, files as they are to be installed)
and `licenses/` (the project's and the statically linked components'
notices, which go to the .dist-info).  Writes OUT_DIR/vramtrace-VERSION-
py3-none-TAG.whl with METADATA, WHEEL, entry_points.txt (console script
`vramtrace` = vramtrace:main), top_level.txt and RECORD (sha256 of every
file).  Executables keep mode 755.  Entries are sorted and dated
SOURCE_DATE_EPOCH (default 1980-01-01): the same inputs give the same
bytes.  Prints the wheel's path.
"""
import base64
import hashlib
import os
import sys
import time
import zipfile

SUMMARY = "GPU memory tracer for unmodified CUDA programs: what holds your GPU memory, and where it was allocated"


def record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "sha256=" + digest


def files_under(top, prefix):
    out = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        for f in sorted(filenames):
            if f.endswith(".pyc") or f == "__pycache__":
                continue
            path = os.path.join(dirpath, f)
            out.append((prefix + os.path.relpath(path, top).replace(os.sep, "/"), path))
    return out


def main(argv):
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    stage, outdir, version, tag, readme = argv
    dist = "vramtrace-%s.dist-info" % version
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    date = time.gmtime(max(epoch, 315532800))[:6]
    with open(readme, encoding="utf-8") as f:
        description = f.read()
    meta = {
        dist + "/METADATA": "Metadata-Version: 2.1\n"
        "Name: vramtrace\n"
        "Version: %s\n"
        "Summary: %s\n"
        "License: MIT\n"
        "Classifier: License :: OSI Approved :: MIT License\n"
        "Classifier: Operating System :: POSIX :: Linux\n"
        "Classifier: Environment :: GPU :: NVIDIA CUDA\n"
        "Requires-Python: >=3.8\n"
        "Description-Content-Type: text/markdown\n\n%s" % (version, SUMMARY, description),
        dist + "/WHEEL": "Wheel-Version: 1.0\n"
        "Generator: vramtrace scripts/wheel.py\n"
        "Root-Is-Purelib: false\n"
        "Tag: py3-none-%s\n" % tag,
        dist + "/entry_points.txt": "[console_scripts]\nvramtrace = vramtrace:main\n",
        dist + "/top_level.txt": "vramtrace\n",
    }
    entries = [(name, path, None) for name, path in files_under(os.path.join(stage, "vramtrace"), "vramtrace/")]
    entries += [(name, path, None) for name, path in files_under(os.path.join(stage, "licenses"), dist + "/licenses/")]
    entries += [(name, None, text.encode()) for name, text in sorted(meta.items())]

    os.makedirs(outdir, exist_ok=True)
    whl = os.path.join(outdir, "vramtrace-%s-py3-none-%s.whl" % (version, tag))
    tmp = whl + ".tmp"
    record = []
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        def add(name, data, mode):
            info = zipfile.ZipInfo(name, date_time=date)
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
            record.append("%s,%s,%d" % (name, record_hash(data), len(data)))

        for name, path, data in entries:
            mode = 0o644
            if path is not None:
                with open(path, "rb") as f:
                    data = f.read()
                if os.stat(path).st_mode & 0o111:
                    mode = 0o755
            add(name, data, mode)
        record.append(dist + "/RECORD,,")
        info = zipfile.ZipInfo(dist + "/RECORD", date_time=date)
        info.external_attr = 0o100644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, "\n".join(record) + "\n")
    os.replace(tmp, whl)
    print(whl)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
