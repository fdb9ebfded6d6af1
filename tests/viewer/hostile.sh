#!/usr/bin/env bash
# hostile.sh NODE VRAMTRACE GEN_HOSTILE OUT VIEWER - viewer/hostile-test.js
# on the traces of tests/analyze/gen_hostile.c when chromium and
# playwright-core are there, else exit 77 (skipped, with what is missing).
set -u
node=$1 bin=$2 gen=$3 out=$4 viewer=$5
chromium=${VT_CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || { echo "SKIP: no $chromium (scripts/install-deps.sh installs it)"; exit 77; }
[ -d "$viewer/node_modules/playwright-core" ] || { echo "SKIP: no viewer/node_modules (scripts/install-deps.sh: npm ci)"; exit 77; }
mkdir -p "$out/traces"
"$gen" "$out/traces" || exit 1
cd "$viewer" && exec "$node" hostile-test.js "$bin" "$out/traces" "$out"
