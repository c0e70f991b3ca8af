#pragma once
// Kernels only the benchmarks and the tests use, in the library attnlab_variants that the engine never links:
// alternatives the kernel benchmark times against what the models run, and the translation benchmark's
// memory-traffic floor. The GEMM paths the models do run are in attnlab/kernels/gemm.hpp.
#include <cstddef>
#include <cstdint>

#include "attnlab/kernels/kernels.hpp"

namespace attnlab::kernels {

// The wrapping sum of `bytes` bytes read as little-endian 32-bit words (a short tail is zero-padded). It reads
// every byte once at full vector width and does almost nothing else: benchmarks time it over a model's weights as
// the memory-traffic floor of a step that reads them.
uint32_t read_checksum(const void* data, std::size_t bytes);

namespace variants {

// Q8_0 products with the activations quantized to Q8_0 too, one weight row at a time (ggml's q8_0 · q8_0 int8
// dot products, q8_int8.cpp): ~2× faster than gemv_q8 in wasm, but x is rounded to 8 bits per 32-block.
// kernels::gemv_q8_q8 does the same 4 rows per pass.
void gemv_q8_int8(int M, int N, const BlockQ8_0* W, const float* x, float* y, bool accumulate = false);
void gemm_nt_q8_int8(int M, int N, int K, const float* A, int lda, const BlockQ8_0* B, float* C, int ldc,
                     bool accumulate = false);
// scores[s] = Σ_a v[a]·tanh(query_part[a] + keys[s,a]) for s < S (keys rows ldk apart) in one pass, never
// storing the hidden layer (additive_scores.cpp). Compiled with the library's own flags (no kernel target).
void additive_scores_fused(int S, int A, const float* query_part, const float* keys, int ldk, const float* v,
                           float* scores);
#if defined(__wasm_simd128__)
// gemm_nt's dot-form 4×4 tiles hand-written with <wasm_simd128.h> intrinsics (gemm_wasm128.cpp).
void gemm_nt_wasm128(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                     bool accumulate = false);
#endif

}  // namespace variants
}  // namespace attnlab::kernels
