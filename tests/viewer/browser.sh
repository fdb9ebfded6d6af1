#!/usr/bin/env bash
# browser.sh NODE VRAMTRACE DATA OUT VIEWER [--jobs|--only-jobs DIR...] -
# viewer/browser-test.js when
# chromium and playwright-core are there (scripts/install-deps.sh installs
# both), else exit 77: skipped, with what is missing.
set -u
node=$1 bin=$2 data=$3 out=$4 viewer=$5
chromium=${VT_CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || { echo "SKIP: no $chromium (scripts/install-deps.sh installs it)"; exit 77; }
[ -d "$viewer/node_modules/playwright-core" ] || { echo "SKIP: no viewer/node_modules (scripts/install-deps.sh: npm ci)"; exit 77; }
shift 5
cd "$viewer" && exec "$node" browser-test.js "$bin" "$data" "$out" "$@"
