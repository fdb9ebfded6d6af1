#!/usr/bin/env bash
# The main job on an embedded default: set up, build, then show vramtrace on
# a real trace from tests/data/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
trace=$(ls tests/data/*.zst 2>/dev/null | head -1 || true)
if [ -z "$trace" ]; then
    echo "demo: no trace in tests/data/" >&2
    exit 1
fi
echo "demo: vramtrace dump $trace"
build/vramtrace dump "$trace" | head -40
