#!/usr/bin/env bash
# npm test: the native doctest suite on one kernel target (ATTNLAB_CPU=baseline|avx2|avx512, docs/cpp.md), so that
# every SIMD path the library ships passes the same parity tests; the plain "native" suite runs the best one.
# A target this CPU cannot run is skipped with a note (the suite passes: there is nothing here to run it on).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
target=$1
if ! why=$(ATTNLAB_CPU=$target build/native/attnlab version 2>&1 >/dev/null); then
  echo "kernel target $target: not run on this CPU ($why)"
  exit 0
fi
ATTNLAB_CPU=$target build/native/attnlab_tests --no-version
