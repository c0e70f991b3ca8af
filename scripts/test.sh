#!/usr/bin/env bash
# npm test: installs what is missing, builds native, ASan+UBSan and wasm, makes the golden files that are derived
# from ../shared/data, then runs every suite. The last line counts suites: "suites: N passed, N failed".
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export NODE_PATH=/usr/share/nodejs
export PYTHONPATH="$PWD/python"   # the attnlab package: python3 -m attnlab.<module>

bash scripts/build.sh --asan || { echo "suites: 0 passed, 1 failed (build)"; exit 1; }

passed=0; failed=0; failures=()
run_suite() {
  local name=$1; shift
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
run_suite "golden files from ../shared/data" make_golden
run_suite "python" /usr/bin/python3 -m unittest discover -s tests/python -t . -q
run_suite "native" build/native/attnlab_tests --no-version
run_suite "native, baseline kernels (SSE2)" bash scripts/test_kernel_target.sh baseline
run_suite "native, avx2 kernels" bash scripts/test_kernel_target.sh avx2
run_suite "C++ library (install, find_package and pkg-config, every kernel target)" bash tests/consumer/run.sh
run_suite "native ASan+UBSan" env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  build/asan/attnlab_tests --no-version
run_suite "wasm (Node)" node build/wasm/attnlab_tests.js --no-version
run_suite "js" node --test tests/js/*.test.mjs
run_suite "fuzz (short)" bash scripts/fuzz.sh --short
run_suite "browser e2e" node --test tests/e2e/*.test.mjs
run_suite "bundlers, CDN, package and README snippets" node --test tests/packaging/*.test.mjs
run_suite "soak (short)" node scripts/soak.mjs --short

echo
[ $failed -eq 0 ] || echo "failed suites: ${failures[*]}"
echo "suites: $passed passed, $failed failed"
[ $failed -eq 0 ]
