#!/usr/bin/env bash
# npm test's "C++ library" suite: the installed library as a user gets it (docs/cpp.md).
#   1. every kernel target this CPU runs is found (the doctest suite runs on each: scripts/test_kernel_target.sh),
#      and a bad ATTNLAB_CPU is refused with a message;
#   2. `cmake --install build/portable` into a fresh prefix under build/consumer holds the public headers (which
#      include nothing but the standard library and each other), libattnlab.a, the CMake package, attnlab.pc, the CLI;
#   3. libattnlab.a has no instruction beyond x86-64 (SSE2) outside the avx2 and avx512 kernel objects;
#   4. tests/consumer/consumer.cpp (the example of docs/cpp.md, which must equal it) builds at the x86-64 baseline
#      against the installed tree through find_package(attnlab) and through pkg-config, and on every kernel target
#      prints the same translation, caption and attention as build/native/attnlab --json.
# Needs build/native and build/portable (scripts/build.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export NODE_PATH=/usr/share/nodejs
work=build/consumer
prefix=$PWD/$work/prefix
rm -rf "$work"
mkdir -p "$work"
cli=build/native/attnlab

targets=()
for target in baseline avx2 avx512; do
  if ATTNLAB_CPU=$target "$cli" version >/dev/null 2>"$work/refused"; then
    targets+=("$target")
  else
    echo "kernel target $target: not run here ($(cat "$work/refused"))"
  fi
done
echo "kernel targets this CPU runs: ${targets[*]}"
if ATTNLAB_CPU=sse9 "$cli" version >/dev/null 2>"$work/refused" || ! grep -q "ATTNLAB_CPU=sse9: not a kernel target" "$work/refused"; then
  echo "ATTNLAB_CPU=sse9 was not refused: $(cat "$work/refused")" >&2
  exit 1
fi

echo "== cmake --install build/portable --prefix $work/prefix"
cmake --install build/portable --prefix "$prefix" >/dev/null
for file in include/attnlab/attnlab.hpp include/attnlab/error.hpp include/attnlab/image/decode.hpp lib/libattnlab.a \
            lib/cmake/attnlab/attnlabConfig.cmake lib/cmake/attnlab/attnlabConfigVersion.cmake \
            lib/cmake/attnlab/attnlabTargets.cmake lib/pkgconfig/attnlab.pc bin/attnlab; do
  [ -f "$prefix/$file" ] || { echo "not installed: $file" >&2; exit 1; }
done
# The public headers stand alone: every "attnlab/..." include is installed, every other one is the standard library's.
grep -rhoE '#include [<"][^>"]+[>"]' "$prefix/include" | sort -u | while read -r _ header; do
  name=${header:1:-1}
  case "$header" in
    \"attnlab/*) [ -f "$prefix/include/$name" ] || { echo "public header includes $name, not installed" >&2; exit 1; } ;;
    \<*/*|\"*) echo "public header includes $header, not part of the installed API" >&2; exit 1 ;;
  esac
done

echo "== instructions in libattnlab.a beyond x86-64 (SSE2), per object"
objdump -d --no-show-raw-insn "$prefix/lib/libattnlab.a" | awk '
  /file format/ { member = $1; sub(/:$/, "", member); next }
  /^ +[0-9a-f]+:\t/ {
    split($0, f, "\t"); ins = f[2]; split(ins, words, " "); op = words[1]
    vex = op ~ /^v[a-z]/ || ins ~ /%[yz]mm|%k[0-7]/
    # SSSE3, SSE4 and the bit instructions of x86-64-v3: none may appear at the baseline. (Not tzcnt: GCC writes
    # ctz as rep bsf, which objdump shows as tzcnt and which older CPUs run as bsf.)
    later = op ~ /^(pshufb|palignr|pabs[bwd]|phadd[wd]|phaddsw|phsub[wd]|phsubsw|pmaddubsw|pmulhrsw|psign[bwd]|lddqu|movddup|movs[hl]dup|hadd[ps][sd]|hsub[ps][sd]|addsubp[sd]|pmulld|pmuldq|ptest|pblendw|pblendvb|blendp[sd]|blendvp[sd]|round[sp][sd]|dpp[sd]|insertps|extractps|pextr[bdq]|pinsr[bdq]|pmov[sz]x[bwd][wdq]|pmins[bd]|pminu[wd]|pmaxs[bd]|pmaxu[wd]|pcmpeqq|pcmpgtq|packusdw|popcnt|lzcnt|andn|bextr|blsi|blsr|blsmsk|bzhi|pdep|pext|sarx|shlx|shrx|rorx|mulx|movbe|crc32[bwlq]?)$/
    if (vex) v[member]++
    if (later) l[member]++
    if (ins ~ /%zmm/) z[member]++
    seen[member] = 1
  }
  END {
    bad = 0
    for (m in seen) {
      if (m == "attnlab_kernels_avx512.o" || m == "attnlab_kernels_avx2.o") continue
      if (v[m] + l[m] > 0) { printf "  %s: %d AVX and %d post-SSE2 instructions\n", m, v[m], l[m]; bad = 1 }
    }
    if (!z["attnlab_kernels_avx512.o"] || !v["attnlab_kernels_avx2.o"] || z["attnlab_kernels_avx2.o"]) {
      print "  the kernel objects are not what they should be (avx512 without zmm, or avx2 without AVX or with zmm)"; bad = 1
    }
    printf "  %d objects; AVX only in attnlab_kernels_avx2.o (%d) and attnlab_kernels_avx512.o (%d, %d on zmm)\n",
           length(seen), v["attnlab_kernels_avx2.o"], v["attnlab_kernels_avx512.o"], z["attnlab_kernels_avx512.o"]
    exit bad
  }'

echo "== docs/cpp.md's example is tests/consumer/consumer.cpp"
awk '/^```cpp$/ { inside = 1; next } inside && /^```$/ { exit } inside' docs/cpp.md > "$work/docs_example.cpp"
diff -u tests/consumer/consumer.cpp "$work/docs_example.cpp"

baseline_flags="-march=x86-64 -mtune=generic"
echo "== find_package(attnlab): cmake -S tests/consumer"
cmake -S tests/consumer -B "$work/cmake" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_FLAGS="$baseline_flags" >/dev/null
cmake --build "$work/cmake" >/dev/null
echo "== pkg-config: c++ consumer.cpp \$(pkg-config --cflags --libs attnlab)"
flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs attnlab)
echo "  $flags"
c++ -std=c++17 -O2 $baseline_flags tests/consumer/consumer.cpp $flags -o "$work/example-pkgconfig"

sentence="A little girl climbs into a wooden playhouse."
translator=models/weights/transformer-en-de.q8_0.gguf
captioner=models/weights/captioner-flickr8k.q8_0.gguf
photo=web/app/samples/cat.jpg
for target in "${targets[@]}"; do
  for example in "$work/cmake/example" "$work/example-pkgconfig"; do
    ATTNLAB_CPU=$target "$example" translate "$translator" "$sentence" > "$work/translate.txt"
    ATTNLAB_CPU=$target "$example" caption "$captioner" "$photo" > "$work/caption.txt"
    ATTNLAB_CPU=$target "$cli" translate --model "$translator" --beam 4 --json "$sentence" > "$work/translate.json"
    # build/native's CLI (-march=native) against the portable library: the convolutions are dispatched like every
    # SIMD kernel, so the image encoder runs the same code in both.
    ATTNLAB_CPU=$target "$cli" caption --model "$captioner" --json "$photo" > "$work/caption.json"
    node tests/consumer/compare.mjs "$work" "$target" "$example"
  done
done
