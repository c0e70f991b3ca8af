// gemm_nt's dot-form micro-kernel written directly in SIMD128 intrinsics, to check that xsimd's SSE2 lowering
// (kernels::gemm_nt_dot_tiles) costs nothing in wasm: the kernel benchmark's gemm_nt_256_f32_dot_wasm128 case
// (docs/performance.md, "Kernel notes").
#include "attnlab/kernels/detail.hpp"
#include "attnlab/kernels/gemm.hpp"
#include "variants/variants.hpp"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>

namespace attnlab::kernels::variants {

namespace {

inline float wasm_hsum(v128_t v) {
    v = wasm_f32x4_add(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
    v = wasm_f32x4_add(v, wasm_i32x4_shuffle(v, v, 1, 0, 3, 2));
    return wasm_f32x4_extract_lane(v, 0);
}

template <int MR, int NR>
struct Wasm128NtTile {
    static void run(int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc, bool accumulate) {
        v128_t acc[MR][NR];
        for (int r = 0; r < MR; ++r)
            for (int c = 0; c < NR; ++c) acc[r][c] = wasm_f32x4_splat(0.0f);
        int k = 0;
        for (; k + 4 <= K; k += 4) {
            v128_t a[MR];
            for (int r = 0; r < MR; ++r) a[r] = wasm_v128_load(A + (size_t)r * lda + k);
            for (int c = 0; c < NR; ++c) {
                const v128_t b = wasm_v128_load(B + (size_t)c * ldb + k);
                for (int r = 0; r < MR; ++r) acc[r][c] = wasm_f32x4_add(acc[r][c], wasm_f32x4_mul(a[r], b));
            }
        }
        for (int r = 0; r < MR; ++r)
            for (int c = 0; c < NR; ++c) {
                float sum = wasm_hsum(acc[r][c]);
                for (int kk = k; kk < K; ++kk) sum += A[(size_t)r * lda + kk] * B[(size_t)c * ldb + kk];
                float& out = C[(size_t)r * ldc + c];
                out = accumulate ? out + sum : sum;
            }
    }
};

}  // namespace

void gemm_nt_wasm128(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                     bool accumulate) {
    detail::check_gemm("gemm_nt", M, N, K, lda, K, ldb, K, ldc);
    detail::gemm_nt_blocked<Wasm128NtTile>(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

}  // namespace attnlab::kernels::variants
#endif
