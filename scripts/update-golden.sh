#!/usr/bin/env bash
# Regenerate the golden files of every golden test (tests/*/golden/) from
# the current code: builds, then runs the ctest tests labelled "golden"
# with VT_UPDATE_GOLDEN=1, which makes each golden script rewrite its file
# instead of comparing.  Review the result with `git diff`.
#   scripts/update-golden.sh [--fixtures] [BUILD_DIR]   (default build/)
#   --fixtures  also regenerate the small synthetic traces in tests/data
#               (reader-sample*.zst, reader-writer.zst) first
# A part with goldens labels its tests "golden" (or "<part>-golden") and
# honours VT_UPDATE_GOLDEN=1; nothing else is needed here.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
fixtures=0
for a in "$@"; do
    case $a in
    --fixtures) fixtures=1 ;;
    -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "update-golden.sh: unknown option $a" >&2; exit 2 ;;
    *) build=$a ;;
    esac
done
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" >/dev/null
if [ $fixtures = 1 ]; then
    gen=$(find "$build" -name vt_gen_fixture -type f -perm -u+x | head -1)
    "$gen" sample tests/data/reader-sample.zst
    "$gen" writer tests/data/reader-writer.zst
    # damaged variants of the sample, for the dump goldens and the fuzz corpus
    head -c 1000 tests/data/reader-sample.zst >tests/data/reader-sample-truncated.zst
    cp tests/data/reader-sample.zst tests/data/reader-sample-damaged.zst
    printf '\xff\xff\xff\xff' | dd of=tests/data/reader-sample-damaged.zst bs=1 seek=400 conv=notrunc status=none
    echo "regenerated tests/data/reader-*.zst"
fi
VT_UPDATE_GOLDEN=1 ctest --test-dir "$build" -L golden --output-on-failure | grep -E "updated|FAIL|tests passed|failed" || true
git status --short -- tests/*/golden tests/data
