#pragma once
// Alternative GEMM implementations, exposed only so the benchmark and the tests can compare them;
// models call kernels::gemm_nn / gemm_nt, which pick the fastest for the shape (see kernels.cpp).
#include "attnlab/kernels/kernels.hpp"

namespace attnlab::kernels::variants {

// Dot-form 4×4 tiles (16 vector accumulators along K) through simd.hpp / xsimd.
void gemm_nt_xsimd(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                   bool accumulate = false);
// Unpacked register tiles straight from A and B (gemm_nn for few rows of A).
void gemm_nn_tiles(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                   bool accumulate = false);
// The cache-blocked GEMM (gemm_packed.cpp): A and B packed into micro-panels, one register-blocked
// micro-kernel for both; nt packs Bᵀ (B is [N,K]).
void gemm_nn_packed(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                    bool accumulate = false);
void gemm_nt_packed(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                    bool accumulate = false);
// Q8_0 products with the activations quantized to Q8_0 too (ggml's q8_0 · q8_0 int8 dot products,
// q8_kernels.cpp): ~2× faster than gemv_q8 in wasm, but x is rounded to 8 bits per 32-block.
void gemv_q8_int8(int M, int N, const BlockQ8_0* W, const float* x, float* y, bool accumulate = false);
void gemm_nt_q8_int8(int M, int N, int K, const float* A, int lda, const BlockQ8_0* B, float* C, int ldc,
                     bool accumulate = false);
#if defined(__wasm_simd128__)
// The dot-form 4×4 tiles hand-written with <wasm_simd128.h> intrinsics.
void gemm_nt_wasm128(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                     bool accumulate = false);
#endif

}  // namespace attnlab::kernels::variants
