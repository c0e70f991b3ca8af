#!/usr/bin/env bash
# npm run build: installs what is missing, then builds
#   build/native  native Release for this CPU (-march=native; the SIMD kernels for every target, picked at run time):
#                 libattnlab.a, the CLI build/native/attnlab, the doctest suite, benchmarks
#   build/wasm    SIMD WebAssembly: web/dist/attnlab.{mjs,wasm}, the same doctest suite for Node, benchmarks
#   build/wasm-mt the threaded SIMD WebAssembly engine (pthreads): web/dist/attnlab-mt.{mjs,wasm,worker.js}, and
#                 bench_paragraph.js (the engine's thread speed-up under Node, bench/bench_paragraph.cpp)
#   build/portable  the library and CLI as `cmake --install` ships them (ATTNLAB_ARCH=portable: any x86-64),
#                   which tests/consumer/run.sh installs and builds a program against
# and with --asan also build/asan (ASan+UBSan native suite). --only native|wasm|wasm-mt|portable|asan builds just that one.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export NODE_PATH=/usr/share/nodejs
jobs=$(nproc)

targets=(native wasm wasm-mt portable)
while [ $# -gt 0 ]; do
  case "$1" in
    --asan) targets+=(asan) ;;
    --only) targets=("$2"); shift ;;
    --skip-setup) skip_setup=1 ;;
    *) echo "build.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ "${skip_setup:-0}" = 1 ] || bash scripts/setup.sh

for target in "${targets[@]}"; do
  echo "== build: $target"
  case "$target" in
    native)
      cmake -S . -B build/native -DCMAKE_BUILD_TYPE=Release -DATTNLAB_ARCH=native >/dev/null
      cmake --build build/native -j"$jobs" ;;
    asan)
      cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNLAB_SANITIZE=ON -DATTNLAB_ARCH=native >/dev/null
      cmake --build build/asan -j"$jobs" --target attnlab_tests attnlab_cli ;;
    portable)
      cmake -S . -B build/portable -DCMAKE_BUILD_TYPE=Release -DATTNLAB_ARCH=portable -DATTNLAB_TESTS=OFF >/dev/null
      cmake --build build/portable -j"$jobs" --target attnlab attnlab_cli ;;
    wasm)
      emcmake cmake -S . -B build/wasm -DCMAKE_BUILD_TYPE=Release >/dev/null
      cmake --build build/wasm -j"$jobs" ;;
    wasm-mt)
      emcmake cmake -S . -B build/wasm-mt -DCMAKE_BUILD_TYPE=Release -DATTNLAB_WASM_THREADS=ON -DATTNLAB_TESTS=OFF >/dev/null
      cmake --build build/wasm-mt -j"$jobs" --target attnlab_wasm bench_paragraph ;;
    *) echo "build.sh: unknown target $target" >&2; exit 2 ;;
  esac
done
