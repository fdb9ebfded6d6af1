#!/bin/bash
# check_memviz_js.sh VRAMTRACE DATA_DIR [OUT_DIR] - PyTorch's own viewer
# (MemoryViz.js) over the memory-viz export of every fixture in DATA_DIR
# (gpu-*.zst, seeds/*/, matrix/*/), through tests/gpu/memviz_driver.mjs.
# The viewer is taken at run time, never committed: $MEMVIZ_JS, else the
# installed torch's torch/utils/viz/MemoryViz.js (torch 2.11's wheel does
# not ship it: it loads it from a CDN).  Prints SKIP and exits 0 when node
# or the file is missing.
set -u
bin=$1
data=$2
out=${3:-$(mktemp -d /tmp/vt_memviz_js.XXXXXX)}
here=$(cd "$(dirname "$0")" && pwd)
command -v node >/dev/null || { echo "check_memviz_js: SKIP: node is not installed"; exit 0; }
js=${MEMVIZ_JS:-}
if [ -z "$js" ]; then
    t=$(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))' 2>/dev/null)
    js=${t:+$t/utils/viz/MemoryViz.js}
fi
[ -n "$js" ] && [ -f "$js" ] || { echo "check_memviz_js: SKIP: no MemoryViz.js (set MEMVIZ_JS)"; exit 0; }
mkdir -p "$out"
args=()
for f in "$data"/gpu-*.zst "$data"/seeds/*/ "$data"/matrix/*/; do
    n=$(echo "${f#"$data"/}" | tr / _); n=${n%_}; n=${n%.zst}
    "$bin" export --no-progress --format memory-viz -o "$out/$n.pickle" "$f" 2>/dev/null
    [ -s "$out/$n.pickle" ] || { echo "check_memviz_js: $f: no snapshot"; continue; }
    # the report's peak where the timeline counts the same blocks (one
    # process, one device, no caching-allocator tensors, no host memory)
    peak=$("$bin" report --json --no-progress "$f" 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin); d = [x for p in r["processes"] for x in p.get("devices", [])]
if len(r["processes"]) == 1 and len(d) == 1 and not d[0].get("caching_allocator") and \
        not set(d[0].get("by_kind", {})) & {"pinned_host", "host_registered"}:
    print(d[0]["peak_live_bytes"])' 2>/dev/null)
    args+=("$out/$n.pickle${peak:+=$peak}")
done
node "$here/memviz_driver.mjs" "$js" "${args[@]}"
