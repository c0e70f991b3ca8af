#!/usr/bin/env bash
# Installs what attnlab needs on Debian 12, idempotently: Debian packages that are missing, then npm packages.
# Sourced by build.sh, test.sh and start.sh; safe to run any number of times.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

debian_packages=(
  cmake g++ make
  clang libclang-rt-14-dev
  emscripten binaryen
  libxtensor-dev libxsimd-dev
  doctest-dev
  libstb-dev
  python3-torch python3-numpy python3-sentencepiece python3-pil libopenblas0-pthread
  flatbuffers-compiler python3-flatbuffers python3-skimage
  python3-onnx
  chromium
  sphinxbase-utils sox flac espeak-ng pocketsphinx-testdata
  flite festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts
)
if [ "${ATTNLAB_SKIP_APT:-0}" != 1 ]; then
  missing=()
  for package in "${debian_packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || missing+=("$package")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing Debian packages: ${missing[*]}"
    if [ "$(id -u)" != 0 ]; then
      echo "setup: not root; run as root or install these yourself: ${missing[*]}" >&2
      exit 1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

# npm packages: only when package.json or the lock changed since the last install.
stamp=node_modules/.attnlab-installed
if [ ! -f "$stamp" ] || [ package.json -nt "$stamp" ] || { [ -f package-lock.json ] && [ package-lock.json -nt "$stamp" ]; }; then
  echo "setup: installing npm packages"
  if [ -f package-lock.json ]; then npm ci --no-audit --no-fund --loglevel=error; else npm install --no-audit --no-fund --loglevel=error; fi
  touch "$stamp"
fi
