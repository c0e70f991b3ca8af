#!/usr/bin/env bash
# npm run bench [-- --quick] [-- OPTIONS]: builds native and wasm Release, plus build/native-sse2 (portable, SSE2 kernels only:
# the x86-64 SSE2 baseline, the same vector width as wasm SIMD128, for a fair comparison), then runs
#   1. the kernel benchmark in all three and prints the ratios (wasm/native, wasm/native-sse2, SIMD/scalar)
#      (bench/bench_kernels.mjs; an argument that is not an option below is its case filter);
#   2. the tokenizer on a 10,000-character input, native and wasm (bench/bench_tokenizer.cpp);
#   3. the page's captioning time per caption model and beam size (bench/bench_caption.mjs; skipped with
#      --no-browser);
#   4. the module's transcription time per speech model and beam, in Node (bench/bench_speech.mjs);
#   5. the translation benchmark (bench/bench_translate.mjs): attnlab wasm vs onnxruntime-web in Node and headless
#      Chromium (batch-1 greedy, same f32 weights), native vs PyTorch eager, where attnlab's per-token time goes,
#      and the paragraph benchmark (test2016 in 8-sentence paragraphs, beam 4, each engine at its best, BLEU next to
#      words/s; docs/performance.md), and the same paragraphs in the engine alone (bench/bench_paragraph.cpp, natively
#      and in the threaded wasm build under Node, back to back and after idle: engine_threads_speedup and
#      engine_threads_speedup_after_idle); options --sentences N, --paragraphs N, --rnn F, --rnn-q8 F, --transformer F,
#      --transformer-q8 F, --shortlist F (default models/weights/en-de.shortlist.gguf: attnlab q8_0 with it is one more
#      paragraph engine), --no-shortlist, --no-browser, --paragraphs-only, --rnn-form F and
#      --rnn-beam-form F (projected|concatenated: ORT's RNN graphs at batch 1 and in the paragraphs; bench/export_onnx.py).
# --quick: the kernel benchmark runs once instead of three times and the translation benchmark on 50 sentences
# (25 in Chromium) and 6 paragraphs; it finishes within 10 minutes on the 2-core machine. The LAST line printed is
# the translation benchmark's JSON.
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
    --no-browser|--paragraphs-only|--no-shortlist) translate_args+=("$1") ;;
    --sentences|--paragraphs|--rnn|--rnn-q8|--transformer|--transformer-q8|--shortlist|--rnn-form|--rnn-beam-form)
      translate_args+=("$1" "$2"); shift ;;
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
node bench/bench_speech.mjs --rounds "$([ "$quick" = 1 ] && echo 3 || echo 6)"
node bench/bench_translate.mjs "${translate_args[@]}"
