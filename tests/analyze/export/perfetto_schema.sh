#!/usr/bin/env bash
# perfetto_schema.sh VRAMTRACE DATA_DIR - the Perfetto export against
# Perfetto's official schema, through perfetto_fields.tsv (the facts of
# google/perfetto's perfetto_trace.proto for every field the exporter
# writes): the project's subset proto field by field (number, label, type,
# oneof, enum values), and the wire type of every field in real exports.
# Each check is also shown to fail on a known disagreement (the uint64
# callstack_weight this project once wrote), so a check that passes
# everything cannot hide here.  export.sh runs the wire check on the
# export of every fixture.
set -u
bin=$1
data=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/vt_pfschema.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
schema() { python3 "$here/perfetto_schema.py" "$@"; }
pass=0
fails=0
ok() { pass=$((pass + 1)); }
bad() { fails=$((fails + 1)); echo "FAIL: $*"; }
table=$here/perfetto_fields.tsv
if schema subset "$here/perfetto_subset.proto" "$table"; then ok; else bad "the subset disagrees with the table"; fi
# a subset with callstack_weight as a uint64 must be refused
sed 's/optional double callstack_weight = 57/optional uint64 callstack_weight = 57/' \
    "$here/perfetto_subset.proto" >"$tmp/perfetto_subset.proto"
if ! schema subset "$tmp/perfetto_subset.proto" "$table" >"$tmp/out" 2>&1 &&
    grep -q 'callstack_weight: type is uint64 in the subset, double' "$tmp/out"; then ok; else
    bad "a uint64 callstack_weight in the subset was not refused: $(cat "$tmp/out")"; fi
X="--no-progress --no-symbols"
files=()
for n in gpu-alloc-basic gpu-oom gpu-torch-async; do
    "$bin" export $X --format perfetto -o "$tmp/$n.pf" "$data/$n.zst" 2>/dev/null || bad "$n: export exit $?"
    files+=("$tmp/$n.pf")
done
"$bin" export $X --allocations --format perfetto -o "$tmp/all.pf" "$data/gpu-torch-async.zst" 2>/dev/null ||
    bad "--allocations: export exit $?"
files+=("$tmp/all.pf")
if schema wire "$table" "${files[@]}" >"$tmp/out"; then ok; else bad "wire types: $(cat "$tmp/out")"; fi
# every field the table lists for TrackEvent's flamegraph samples was seen
for f in TrackEvent.callstack_iid TrackEvent.callstack_weight InternedData.callstacks; do
    grep -q "$f [1-9]" "$tmp/out" && ok || bad "no $f in the exports: $(cat "$tmp/out")"
done
# a table that says callstack_weight is a varint must refuse the exports
sed 's/^field\tTrackEvent\tcallstack_weight\t57\toptional\tdouble\ti64/field\tTrackEvent\tcallstack_weight\t57\toptional\tuint64\tvarint/' \
    "$table" >"$tmp/fields.tsv"
cmp -s "$table" "$tmp/fields.tsv" && bad "the mutation of the table did not apply"
if ! schema wire "$tmp/fields.tsv" "${files[@]}" >"$tmp/out" 2>&1 &&
    grep -q 'callstack_weight written as i64' "$tmp/out"; then ok; else
    bad "a varint callstack_weight in the table was not refused: $(cat "$tmp/out")"; fi
echo "perfetto_schema: $pass passed, $fails failed"
[ $fails = 0 ]
