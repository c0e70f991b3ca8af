#!/usr/bin/env bash
# npm run bench: builds native and wasm Release, plus build/native-sse2 (no -march=native: the x86-64 SSE2
# baseline, the same vector width as wasm SIMD128, for a fair comparison), then runs the kernel benchmark in
# all three and prints the ratios (wasm/native, wasm/native-sse2, SIMD/scalar). Pass-through arguments go to
# scripts/bench_kernels.mjs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/build.sh
cmake -S . -B build/native-sse2 -DCMAKE_BUILD_TYPE=Release -DATTNLAB_NATIVE_ARCH=OFF -DATTNLAB_TESTS=OFF >/dev/null
cmake --build build/native-sse2 -j"$(nproc)" --target bench_kernels
node scripts/bench_kernels.mjs "$@"
