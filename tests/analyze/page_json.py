#!/usr/bin/env python3
"""page_json.py PAGE.html - the data of a vramtrace page as JSON on stdout,
read as the page reads it (src/analyze/vt_page_pack.c, viewer/lib.js
unpackText): base64, gzip, the string table and its references.  For
tests that look for a value in a page; page_data.py imports unpack()."""
import base64, gzip, json, re, sys


def unpack(path):
    """(the page's data as one object, the page's size in characters)"""
    page = open(path, encoding="utf-8").read()
    m = re.search(r'window\.VT_PACKED = "([A-Za-z0-9+/=]*)";', page)
    if not m:
        raise SystemExit(f"{path}: no VT_PACKED")
    text = gzip.decompress(base64.b64decode(m.group(1))).decode("utf-8")
    nl = text.index("\n")
    tab = json.loads(text[:nl])

    def revive(x):  # a table entry is data, never a reference
        if isinstance(x, str):
            return tab[int(x[1:], 36)] if x[:1] == "\x01" else x
        if isinstance(x, list):
            return [revive(y) for y in x]
        if isinstance(x, dict):
            return {k: revive(v) for k, v in x.items()}
        return x
    return revive(json.loads(text[nl + 1:])), len(page)


if __name__ == "__main__":
    json.dump(unpack(sys.argv[1])[0], sys.stdout)
