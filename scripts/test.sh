#!/usr/bin/env bash
# npm test: installs what is missing, builds native, ASan+UBSan and wasm, makes the golden files that are derived
# from ../shared/data, then runs every suite. The last line counts suites: "suites: N passed, N failed".
#   bash scripts/test.sh [--skip-build] [SUITE...]   only the named suites (their keys: golden python native sse2
#                                                    avx2 lib asan wasm js fuzz e2e bundlers soak); --skip-build
#                                                    uses the builds already there
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export NODE_PATH=/usr/share/nodejs
export PYTHONPATH="$PWD/python"   # the attnlab package: python3 -m attnlab.<module>

build=1; wanted=()
for arg in "$@"; do
  case "$arg" in
    --skip-build) build=0 ;;
    golden|python|native|sse2|avx2|lib|asan|wasm|js|fuzz|e2e|bundlers|soak) wanted+=("$arg") ;;
    *) echo "test.sh: unknown suite or option '$arg' (see the header of scripts/test.sh)" >&2; exit 2 ;;
  esac
done
if [ $build = 1 ]; then
  bash scripts/build.sh --asan || { echo "suites: 0 passed, 1 failed (build)"; exit 1; }
fi

passed=0; failed=0; failures=()
run_suite() {
  local key=$1 name=$2; shift 2
  [[ ${#wanted[@]} -eq 0 || " ${wanted[*]} " == *" $key "* ]] || return 0
  echo; echo "== test: $name"
  local start=$SECONDS
  if "$@"; then
    passed=$((passed + 1)); echo "== $name: ok ($((SECONDS - start)) s)"
  else
    failed=$((failed + 1)); failures+=("$name"); echo "== $name: FAILED ($((SECONDS - start)) s)"
  fi
}

make_golden() {
  /usr/bin/python3 -m attnlab.golden.tokenizer_random || return 1
  /usr/bin/python3 -m attnlab.data.prepare && /usr/bin/python3 -m attnlab.golden.tokenizer &&
    /usr/bin/python3 -m attnlab.golden.mobilenet && /usr/bin/python3 -m attnlab.golden.shipped
}
run_suite golden "golden files from ../shared/data" make_golden
run_suite python "python" /usr/bin/python3 -m unittest discover -s tests/python -t . -q
run_suite native "native" build/native/attnlab_tests --no-version
run_suite sse2 "native, baseline kernels (SSE2)" bash scripts/test_kernel_target.sh baseline
run_suite avx2 "native, avx2 kernels" bash scripts/test_kernel_target.sh avx2
run_suite lib "C++ library (install, find_package and pkg-config, every kernel target)" bash tests/consumer/run.sh
# The sanitized suite runs ~20x slower than the native one and mostly on one core: two shards side by side (the
# test cases in one fixed random order, split in half, so the heavy model tests spread over both), each printed
# whole when both have ended.
asan_shards() {
  local tests=(env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
               build/asan/attnlab_tests --no-version --order-by=rand --rand-seed=20)
  local count
  count=$("${tests[@]}" --count 2>/dev/null | sed -n 's/.*current filters: \([0-9]*\).*/\1/p')
  if ! [[ "$count" =~ ^[0-9]+$ ]] || [ "$count" -lt 2 ]; then "${tests[@]}"; return; fi
  local half=$(( (count + 1) / 2 )) logs first second status=0
  logs=$(mktemp -d)
  "${tests[@]}" --first=1 --last=$half > "$logs/1" 2>&1 & first=$!
  "${tests[@]}" --first=$((half + 1)) --last="$count" > "$logs/2" 2>&1 & second=$!
  wait $first || status=1
  wait $second || status=1
  # doctest's summary counts every test case that passes the filters, the range's skipped ones too
  echo "-- shard 1: test cases 1-$half of $count (random order, seed 20)"; cat "$logs/1"
  echo "-- shard 2: test cases $((half + 1))-$count of $count"; cat "$logs/2"
  rm -rf "$logs"
  return $status
}
run_suite asan "native ASan+UBSan" asan_shards
run_suite wasm "wasm (Node)" node build/wasm/attnlab_tests.js --no-version
run_suite js "js" node --test tests/js/*.test.mjs
run_suite fuzz "fuzz (short)" bash scripts/fuzz.sh --short
run_suite e2e "browser e2e" node --test tests/e2e/*.test.mjs
run_suite bundlers "bundlers, CDN, package and README snippets" node --test tests/packaging/*.test.mjs
run_suite soak "soak (short)" node scripts/soak.mjs --short

echo
[ $failed -eq 0 ] || echo "failed suites: ${failures[*]}"
echo "suites: $passed passed, $failed failed"
[ $failed -eq 0 ]
