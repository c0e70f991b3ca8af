#!/usr/bin/env bash
# npm run bench: builds native and wasm Release, then runs the kernel benchmark in both and prints the ratios
# (wasm/native, SIMD/scalar) from this one run. Pass-through arguments go to scripts/bench_kernels.mjs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/build.sh
node scripts/bench_kernels.mjs "$@"
