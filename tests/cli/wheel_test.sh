#!/usr/bin/env bash
# wheel_test.sh BUILD_DIR HAVE_LIB - the wheel as a user installs it.
# scripts/wheel.sh packs BUILD_DIR (its audit must pass: NEEDED on the
# allowlist, glibc floor -> platform tag); the wheel's RECORD must match its
# files; then, for each Python 3.10-3.13 found (pyenv's, else python3.1X on
# PATH, else python3), a fresh venv gets it by `pip install --no-index`, and
# from a directory outside the tree the console script and `python -m
# vramtrace` print the version, and `report`, `dump` and `export` on
# fixtures give exactly what the build's own binary gives.  `record` finds
# the library inside the installed package (HAVE_LIB=1), or says it has
# none (HAVE_LIB=0).  There is no `top` subcommand to run.
set -eu
build=$(cd "$1" && pwd)
have_lib=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/vt_wheel_test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0 passed=0
ok() { passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }

whl=$("$src/scripts/wheel.sh" "$build" "$tmp/dist" 2>"$tmp/wheel.err" | tail -1) || {
    cat "$tmp/wheel.err"; echo "FAIL: scripts/wheel.sh"; exit 1; }
cat "$tmp/wheel.err"
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
case "$(basename "$whl")" in
    vramtrace-"$version"-py3-none-manylinux_2_[0-9]*_x86_64.whl) ok ;;
    *) bad "wheel name $(basename "$whl")" ;;
esac
# RECORD: every file listed with its sha256 and size, nothing else
python3 - "$whl" "$have_lib" <<'PY' && ok || bad "RECORD or contents"
import base64, hashlib, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = set(z.namelist())
dist = next(n.split("/")[0] for n in names if n.endswith(".dist-info/RECORD"))
rows = [r.split(",") for r in z.read(dist + "/RECORD").decode().splitlines()]
listed = {r[0] for r in rows}
assert listed == names, ("RECORD vs zip", listed ^ names)
for name, h, size in rows:
    if name == dist + "/RECORD":
        assert h == "" and size == ""
        continue
    data = z.read(name)
    want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    assert h == want and int(size) == len(data), name
need = ["vramtrace/__init__.py", "vramtrace/__main__.py", "vramtrace/bin/vramtrace",
        "vramtrace/python/sitecustomize.py", "vramtrace/python/vramtrace_holders.py",
        "vramtrace/python/vramtrace_cupy.py", dist + "/METADATA", dist + "/WHEEL", dist + "/entry_points.txt"]
if sys.argv[2] == "1":
    need += ["vramtrace/lib/libvramtrace.so", "vramtrace/lib/libvramtrace_cupti.so"]
missing = [n for n in need if n not in names]
assert not missing, missing
assert "vramtrace = vramtrace:main" in z.read(dist + "/entry_points.txt").decode()
assert (z.getinfo("vramtrace/bin/vramtrace").external_attr >> 16) & 0o111
PY

# What the build's binary says, to compare with the installed one.
fixtures=("$src/tests/data/gpu-alloc-basic.zst" "$src/tests/data/gpu-torch-default.zst")
mkdir -p "$tmp/want"
for f in "${fixtures[@]}"; do
    b=$(basename "$f" .zst)
    "$build/vramtrace" report "$f" >"$tmp/want/$b.report" 2>/dev/null
    "$build/vramtrace" dump "$f" >"$tmp/want/$b.dump" 2>/dev/null
    "$build/vramtrace" export --format perfetto --no-progress -o "$tmp/want/$b.pftrace" "$f" 2>/dev/null
done

pythons=()
if command -v pyenv >/dev/null; then
    for minor in 10 11 12 13; do
        v=$(pyenv versions --bare 2>/dev/null | grep -E "^3\.$minor\.[0-9]+$" | sort -V | tail -1 || true)
        [ -n "$v" ] && pythons+=("pyenv:$v")
    done
fi
if [ ${#pythons[@]} -eq 0 ]; then
    for minor in 10 11 12 13; do
        command -v "python3.$minor" >/dev/null && pythons+=("path:python3.$minor")
    done
fi
[ ${#pythons[@]} -gt 0 ] || pythons=("path:python3")

unset VRAMTRACE_LIB CUDA_INJECTION64_PATH PYTHONPATH
for p in "${pythons[@]}"; do
    how=${p%%:*} name=${p#*:}
    venv=$tmp/venv-$name
    if [ "$how" = pyenv ]; then
        PYENV_VERSION=$name python3 -m venv "$venv" || { bad "venv of $name"; continue; }
    else
        "$name" -m venv "$venv" || { bad "venv of $name (Debian: python3-venv)"; continue; }
    fi
    pyv=$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    "$venv/bin/python" -m pip install -q --no-index --disable-pip-version-check "$whl" >"$tmp/pip.log" 2>&1 ||
        { cat "$tmp/pip.log"; bad "pip install into Python $pyv"; continue; }
    work=$tmp/work-$name
    mkdir -p "$work"
    (
        cd "$work"
        export PATH="$venv/bin:/usr/bin:/bin"
        f=0
        [ "$(vramtrace --version)" = "vramtrace $version" ] || { echo "FAIL($pyv): console script --version"; f=1; }
        [ "$(python -m vramtrace --version)" = "vramtrace $version" ] || { echo "FAIL($pyv): python -m vramtrace --version"; f=1; }
        for fx in "${fixtures[@]}"; do
            b=$(basename "$fx" .zst)
            vramtrace report "$fx" >"$b.report" 2>/dev/null && cmp -s "$b.report" "$tmp/want/$b.report" ||
                { echo "FAIL($pyv): report $b"; f=1; }
            vramtrace dump "$fx" >"$b.dump" 2>/dev/null && cmp -s "$b.dump" "$tmp/want/$b.dump" ||
                { echo "FAIL($pyv): dump $b"; f=1; }
            python -m vramtrace export --format perfetto --no-progress -o "$b.pftrace" "$fx" 2>/dev/null &&
                cmp -s "$b.pftrace" "$tmp/want/$b.pftrace" || { echo "FAIL($pyv): export $b"; f=1; }
        done
        site=$(python -c 'import vramtrace, os; print(os.path.dirname(vramtrace.__file__))')
        [ -f "$site/python/sitecustomize.py" ] || { echo "FAIL($pyv): no helpers in $site/python"; f=1; }
        if [ "$have_lib" = 1 ]; then
            got=$(vramtrace record -q -o "$work/rec" -- printenv CUDA_INJECTION64_PATH 2>/dev/null)
            [ "$got" = "$(realpath "$site/lib/libvramtrace.so")" ] ||
                { echo "FAIL($pyv): record injects '$got', not the package's library"; f=1; }
        else
            set +e
            vramtrace record -- true 2>err
            rc=$?
            set -e
            [ $rc -eq 1 ] && grep -q "libvramtrace.so not found" err || { echo "FAIL($pyv): record without a library: rc=$rc"; f=1; }
        fi
        exit $f
    ) && { ok; echo "wheel: Python $pyv ($p): installed and ran"; } || bad "Python $pyv"
done
echo "wheel: $(basename "$whl") $(stat -c %s "$whl") bytes; $passed passed, $fail failed"
[ $fail -eq 0 ]
