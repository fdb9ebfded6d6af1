#!/usr/bin/env bash
# Install the Debian packages vramtrace needs to build and test, if missing.
# Only apt-get; nothing else is downloaded.  Safe to run repeatedly.
set -euo pipefail

pkgs=(cmake make gcc g++ pkg-config
      libprotobuf-c-dev protobuf-c-compiler protobuf-compiler
      libzstd-dev zstd libdw-dev libelf-dev libcmocka-dev python3)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
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
