#!/usr/bin/env bash
# dist_fake.sh VRAMTRACE LIBVRAMTRACE TRACES - tests/gpu/check_dist.sh
# without a GPU: a stand-in nvidia-smi (two GPUs) and torch (its torchrun
# copies the analyzer's synthetic jobs, TRACES/job_leak and job_oom, where
# the real job would record; tests/gpu/dist_fake/) run every step of the
# check as on the two-GPU machine: each mode recorded through `vramtrace
# record`, checked by check_dist.py, the overhead table, the fixtures
# packed.  What it cannot test: dist_job.py itself (that needs torch and
# two GPUs).
set -u
vt=$1 lib=$2 traces=$3
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
PATH=$here/dist_fake/bin:$PATH PYTHONPATH=$here/dist_fake/site FAKE_JOBS=$traces OUT=$tmp \
    VRAMTRACE_LIB=$lib VRAMTRACE_CLI=$vt VRAMTRACE_CACHE_DIR=$tmp/cache DIST_RUN_S=60 \
    bash "$here/check_dist.sh" >"$tmp/out.txt" 2>&1
rc=$?
[ $rc -eq 0 ] || bad "check_dist.sh exit $rc: $(tail -3 "$tmp/out.txt")"
tail -1 "$tmp/out.txt" | grep -q '^check_dist: PASS: 6 recordings checked' || bad "last line: $(tail -1 "$tmp/out.txt")"
for r in fixture-ddp fixture-fsdp leak1 oom1 ddp fsdp; do
    grep -q "^$r [0-9]* ok, 0 failed$" "$tmp/out.txt" || bad "$r: $(grep "^$r " "$tmp/out.txt")"
done
# the arguments each run gave dist_job.py
args() { python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["argv"][:-2]))' "$1"; }
[ "$(args "$tmp/dist/fixtures/ddp/expect.rank0.json")" = "leak1 --steps 40" ] || bad "fixture-ddp args"
[ "$(args "$tmp/dist/fixtures/fsdp/expect.rank0.json")" = "fsdp --leak-rank 1 --steps 40" ] || bad "fixture-fsdp args"
[ "$(args "$tmp/dist/oom1/expect.rank0.json")" = "oom1 --oom-step 20 --pg-timeout 60" ] || bad "oom1 args"
# the overhead table: a row per mode and rank, untraced against traced
[ "$(grep -c '^| \(ddp\|fsdp\) | [01] | 9.50 | 10.00 | 1.05x |' "$tmp/dist/overhead.md")" -eq 4 ] ||
    bad "overhead table: $(cat "$tmp/dist/overhead.md")"
# the fixtures, packed, replay as the fixtures of tests/data would
mkdir "$tmp/x"
tar xzf "$tmp/dist-fixtures.tar.gz" -C "$tmp/x" || bad "no dist-fixtures.tar.gz"
python3 "$here/check_dist.py" "$vt" "$tmp/x/fixtures/ddp" "$tmp/x/fixtures/fsdp" >"$tmp/fx.txt" 2>&1 ||
    bad "the packed fixtures: $(tail -1 "$tmp/fx.txt")"
[ $fail = 0 ] && echo "ok: check_dist.sh ran every mode, checked, tabled and packed them"
exit $fail
