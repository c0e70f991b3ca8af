#!/usr/bin/env bash
# npm run bench [-- --quick] [-- OPTIONS]: builds native and wasm Release, plus build/native-sse2 (portable, SSE2 kernels only:
# the x86-64 SSE2 baseline, the same vector width as wasm SIMD128, for a fair comparison), then runs
#   1. the kernel benchmark in all three and prints the ratios (wasm/native, wasm/native-sse2, SIMD/scalar)
#      (bench/bench_kernels.mjs; an argument that is not an option below is its case filter);
#   2. the tokenizer on a 10,000-character input, native and wasm (bench/bench_tokenizer.cpp);
#   3. the page's captioning time per caption model and beam size (bench/bench_caption.mjs; skipped with
#      --no-browser);
#   4. the translation benchmark (bench/bench_translate.mjs): attnlab wasm vs onnxruntime-web in Node and headless
#      Chromium, native vs PyTorch eager; options --sentences N, --rnn F, --rnn-q8 F, --transformer F, --no-browser.
# --quick: the kernel benchmark runs once instead of three times and the translation benchmark on 50 sentences
# (25 in Chromium); it finishes within 10 minutes on the 2-core machine. The LAST line printed is the translation
# benchmark's JSON.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# The Python the benchmarks run (bench/export_onnx.py, bench/bench_pytorch.py, the data preparation) imports the
# attnlab package from python/.
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
kernel_args=()
translate_args=()
quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; translate_args+=(--quick) ;;
    --no-browser) translate_args+=("$1") ;;
    --sentences|--rnn|--rnn-q8|--transformer) translate_args+=("$1" "$2"); shift ;;
    *) kernel_args+=("$1") ;;
  esac
  shift
done
bash scripts/build.sh
cmake -S . -B build/native-sse2 -DCMAKE_BUILD_TYPE=Release -DATTNLAB_ARCH=portable -DATTNLAB_KERNEL_TARGETS=baseline \
  -DATTNLAB_TESTS=OFF >/dev/null
cmake --build build/native-sse2 -j"$(nproc)" --target bench_kernels
if [ "$quick" = 1 ]; then export RUNS="${RUNS:-1}"; fi
node bench/bench_kernels.mjs "${kernel_args[@]}"
build/native/bench_tokenizer
node build/wasm/bench_tokenizer.js
if [[ " ${translate_args[*]} " != *" --no-browser "* ]]; then node bench/bench_caption.mjs; fi
node bench/bench_translate.mjs "${translate_args[@]}"
