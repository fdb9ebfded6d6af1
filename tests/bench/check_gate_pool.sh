#!/bin/sh
# check_gate_pool.sh PYTHON SRCDIR - bench/gate_pool.py on the tenth
# session's gate logs prints what BENCHMARKS.md quotes from it (pooled
# medians, bootstrap intervals with a fixed seed, --diff): a change to the
# log parser or the pooling that moves a published number fails here.
set -eu
PY=$1
SRC=$2
D=$SRC/bench/data
out=$("$PY" "$SRC/bench/gate_pool.py" --diff traced,floor --diff traced,traced-nokernels \
    "$D/gate-s10-run2.log" "$D/gate-s10-run3.log" "$D/gate-s10-run4.log")
if ! printf '%s\n' "$out" | diff -u "$SRC/tests/bench/gate_pool.expect" -; then
    echo "check_gate_pool.sh: bench/gate_pool.py's output differs from tests/bench/gate_pool.expect" >&2
    exit 1
fi
# and the errors: no log, a --diff without two names
if "$PY" "$SRC/bench/gate_pool.py" >/dev/null 2>&1; then
    echo "check_gate_pool.sh: no log given, yet exit 0" >&2
    exit 1
fi
if "$PY" "$SRC/bench/gate_pool.py" --diff traced "$D/gate-s10-run3.log" >/dev/null 2>&1; then
    echo "check_gate_pool.sh: --diff with one name, yet exit 0" >&2
    exit 1
fi
echo "check_gate_pool.sh: ok"
