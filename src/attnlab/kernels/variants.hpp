#pragma once
// Alternative GEMM nt implementations, exposed only so the benchmark and the tests can compare them;
// models call kernels::gemm_nt, which picks the fastest for the build (see kernels.cpp).
#include "attnlab/kernels/kernels.hpp"

namespace attnlab::kernels::variants {

// Dot-form 4×4 tiles (16 vector accumulators along K) through simd.hpp / xsimd.
void gemm_nt_xsimd(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                   bool accumulate = false);
// Bᵀ packed in cache-sized panels, then the gemm_nn register-blocked micro-kernel.
void gemm_nt_packed(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                    bool accumulate = false);
#if defined(__wasm_simd128__)
// The dot-form 4×4 tiles hand-written with <wasm_simd128.h> intrinsics.
void gemm_nt_wasm128(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                     bool accumulate = false);
#endif

}  // namespace attnlab::kernels::variants
