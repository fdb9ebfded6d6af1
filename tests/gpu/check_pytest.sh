#!/usr/bin/env bash
# tests/gpu/check_pytest.sh - the pytest plugin for real (issue 37), run by
# scripts/gpu-test.sh with VRAMTRACE_CLI (and OUT):
#   vramtrace record -o $OUT/pytest/trace -- python3 -m pytest --vramtrace \
#       --vramtrace-fail-on-leak 0 tests/gpu/pytest_leak.py
# must fail exactly test_leaks, naming its line (VT_LEAK_LINE), and
# `vramtrace report --json` must have processes[].tests[] with the leak on
# that test and none on the others (the cached 64 MiB is no leak).  The
# recording stays in $OUT/pytest/trace: the fixture tests/data/pytest/.
# Prints "check_pytest: ok" or the failures.
set -u
here=$(cd "$(dirname "$0")" && pwd)
W=${OUT:-/tmp}/pytest
rm -rf "$W"
mkdir -p "$W"
export VRAMTRACE_CACHE_DIR=${VRAMTRACE_CACHE_DIR:-$W/cache}
fail=0
bad() { echo "FAIL: $*"; fail=1; }
if ! python3 -c "import pytest, torch" 2>"$W/import.err"; then
    echo "check_pytest: cannot run: $(tail -1 "$W/import.err")"
    exit 2
fi
file=$here/pytest_leak.py
line=$(grep -n '# VT_LEAK_LINE$' "$file" | head -1 | cut -d: -f1)
(cd "$W" && "$VRAMTRACE_CLI" record -o "$W/trace" -- python3 -m pytest -p no:cacheprovider -rf \
    --vramtrace --vramtrace-fail-on-leak 0 "$file") >"$W/pytest.out" 2>"$W/pytest.err"
rc=$?
echo "pytest under record: exit $rc"
tail -25 "$W/pytest.out"
[ $rc -eq 1 ] || bad "exit $rc, 1 wanted (one failed test): $(tail -3 "$W/pytest.err" | tr '\n' ' ')"
failed=$(grep '^FAILED' "$W/pytest.out" | sed 's/^FAILED [^:]*::\([A-Za-z0-9_]*\).*/\1/' | tr '\n' ' ')
[ "$failed" = "test_leaks " ] || bad "failed: '$failed', only test_leaks wanted"
grep -q "pytest_leak.py:$line (test_leaks)" "$W/pytest.out" || bad "the failure does not name pytest_leak.py:$line"
grep -q "left 4.00 MiB of GPU memory live in 1 block" "$W/pytest.out" || bad "the failure does not say 4.00 MiB in 1 block"
"$VRAMTRACE_CLI" report --json "$W/trace" >"$W/report.json" 2>"$W/report.err" || bad "report --json failed: $(tail -2 "$W/report.err")"
"$VRAMTRACE_CLI" report "$W/trace" >"$W/report.txt" 2>&1
sed -n '/-- tests/,/^$/p' "$W/report.txt" | head -12
python3 "$here/check_pytest_report.py" "$W/report.json" "$line" || fail=1
ls -la "$W/trace"
if [ $fail = 0 ]; then
    echo "check_pytest: ok (the recording in $W/trace is the fixture tests/data/pytest/)"
else
    exit 1
fi
