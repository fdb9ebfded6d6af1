#!/usr/bin/env bash
# Install what vramtrace needs to build and test, if missing: Debian
# packages (apt-get), and the npm packages of the HTML report's browser
# test (viewer/package-lock.json: playwright-core, which drives Debian's
# chromium).  Safe to run repeatedly.
set -euo pipefail

pkgs=(cmake make gcc g++ pkg-config
      libprotobuf-c-dev protobuf-c-compiler protobuf-compiler
      libzstd-dev zstd libdw-dev libelf-dev zlib1g-dev libcmocka-dev python3 chromium
      liblzma-dev libbz2-dev  # with zlib1g-dev: the static archives libdw.a needs (src/analyze/analyze.cmake)
      binutils python3-venv  # the wheel: objcopy, and a venv to install it in (tests/cli/wheel_test.sh)
      python3-pytest  # the pytest plugin run by real pytest (tests/inject: inject.pytest_plugin)
      clang   # clang: the libFuzzer targets (scripts/fuzz.sh)
      tmux)   # tmux: vramtrace top's terminal test (tests/cli/top_tty.sh)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
npm_deps() { # the viewer's test packages, from its lockfile (the page's browser; DuckDB
    # and hyparquet for the Parquet export's checks)
    local here
    here=$(cd "$(dirname "$0")/.." && pwd)
    local m need=0
    for m in playwright-core @duckdb/node-api @duckdb/node-bindings-linux-x64 hyparquet hyparquet-compressors; do
        [ -d "$here/viewer/node_modules/$m" ] || need=1
    done
    if command -v npm >/dev/null && [ $need = 1 ]; then
        echo "install-deps: npm ci in viewer/"
        (cd "$here/viewer" && npm ci --no-audit --no-fund --silent)
    fi
}
if [ ${#missing[@]} -eq 0 ]; then
    npm_deps
    exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then SUDO="sudo"; else
        echo "install-deps: missing packages (${missing[*]}) and not root" >&2; exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
npm_deps
