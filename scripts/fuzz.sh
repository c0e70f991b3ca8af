#!/usr/bin/env bash
# libFuzzer targets (fuzz/fuzz_*.cpp) built with clang 14 + ASan + UBSan into build/fuzz.
#   bash scripts/fuzz.sh --short   each target over its seed corpus fuzz/corpus/<target>/ plus a few seconds of
#                                  fuzzing (all five in <= 100 s); exit 1 on any finding. Part of npm test.
#   bash scripts/fuzz.sh --long    each target for 10 minutes (npm run fuzz), one after another, niced; new inputs
#                                  go to build/fuzz/corpus/<target>/, findings to build/fuzz/findings/<target>/.
#   bash scripts/fuzz.sh --build   build only.   ATTNLAB_FUZZ_SECONDS overrides the per-target time.
# Reproduce a finding: build/fuzz/<target> <file>   (replayed for good by tests/cpp/test_fuzz_regressions.cpp)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mode=${1:---short}
targets=(fuzz_gguf fuzz_tokenizer fuzz_image fuzz_wav fuzz_flac)
build=build/fuzz

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNLAB_FUZZ=ON \
    -DATTNLAB_TESTS=OFF >/dev/null
fi
cmake --build "$build" -j2 --target "${targets[@]}"
[ "$mode" = --build ] && exit 0

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
case "$mode" in
  --short) seconds=${ATTNLAB_FUZZ_SECONDS:-8}; prefix=() ;;
  --long) seconds=${ATTNLAB_FUZZ_SECONDS:-600}; prefix=(nice -n 19) ;;
  *) echo "usage: $0 [--short|--long|--build]" >&2; exit 2 ;;
esac

status=0
for target in "${targets[@]}"; do
  seeds=fuzz/corpus/$target
  findings=$build/findings/$target
  mkdir -p "$findings"
  # libFuzzer writes new inputs into the first folder: a scratch one (kept between long runs, fresh for short
  # ones), so that the committed seeds stay small. The saved crashers of tests/fixtures/fuzz/ are replayed too.
  scratch=$build/corpus/$target
  [ "$mode" = --short ] && scratch=$build/short-corpus/$target && rm -rf "$scratch"
  mkdir -p "$scratch"
  corpora=("$scratch" "$seeds")
  [ -d "tests/fixtures/fuzz/$target" ] && corpora+=("tests/fixtures/fuzz/$target")
  echo "fuzz: $target for ${seconds} s"
  # -rss_limit_mb / -malloc_limit_mb turn a runaway allocation into a finding instead of an OOM kill.
  if ! "${prefix[@]}" "$build/$target" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
      -malloc_limit_mb=1024 -max_len=65536 -print_final_stats=1 -artifact_prefix="$findings/" "${corpora[@]}" \
      2>&1 | tail -n 25; then
    echo "fuzz: $target FOUND A PROBLEM (see $findings/)" >&2
    status=1
  fi
done
exit $status
