// GEMM, C (+)= A·B and C (+)= A·Bᵀ, with f32 or Q8_0 B: gemm_nn and gemm_nt pick by shape between the unpacked
// register tiles here and the cache-blocked packed GEMM of gemm_packed.cpp (both declared in gemm.hpp). Each path
// is measured in docs/performance.md ("Kernel notes").
#include <algorithm>
#include <cstring>
#include <vector>

#include "attnlab/kernels/detail.hpp"
#include "attnlab/kernels/gemm.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/kernels/simd.hpp"

namespace attnlab::kernels::ATTNLAB_KERNEL_TARGET {

using simd::kWidth;
using simd::Vec;

namespace {

// ---------------------------------------------------------------------------------------------------
// GEMM nn: C[M,N] (+)= A[M,K] · B[K,N]
// Register tile of MR rows × NV vectors of C; per k one row of B (NV vectors) meets MR broadcasts of A.
// The last vector of the tile may be partial (tail_cols < kWidth): then B comes from a zero-padded
// panel and only C is loaded/stored partially.

template <int MR, int NV>
void gemm_nn_tile(int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc, bool accumulate,
                  int tail_cols) {
    Vec acc[MR][NV];
    for (int r = 0; r < MR; ++r)
        for (int v = 0; v < NV; ++v) {
            float* c = C + (size_t)r * ldc + v * kWidth;
            const bool partial = v == NV - 1 && tail_cols < kWidth;
            acc[r][v] = !accumulate ? simd::zero() : partial ? simd::load_partial(c, tail_cols) : simd::load(c);
        }
    for (int k = 0; k < K; ++k) {
        Vec b[NV];
        for (int v = 0; v < NV; ++v) b[v] = simd::load(B + (size_t)k * ldb + v * kWidth);
        for (int r = 0; r < MR; ++r) {
            const Vec a = simd::splat(A[(size_t)r * lda + k]);
            for (int v = 0; v < NV; ++v) acc[r][v] = simd::fma(a, b[v], acc[r][v]);
        }
    }
    for (int r = 0; r < MR; ++r)
        for (int v = 0; v < NV; ++v) {
            float* c = C + (size_t)r * ldc + v * kWidth;
            if (v == NV - 1 && tail_cols < kWidth)
                simd::store_partial(c, acc[r][v], tail_cols);
            else
                simd::store(c, acc[r][v]);
        }
}

constexpr int kNnRows = 4;
constexpr int kNnVecs = 2;

// All rows of C for one column panel, kNnRows at a time.
template <int NV>
void gemm_nn_panel(int M, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                   bool accumulate, int tail_cols) {
    int i = 0;
    for (; i + kNnRows <= M; i += kNnRows)
        gemm_nn_tile<kNnRows, NV>(K, A + (size_t)i * lda, lda, B, ldb, C + (size_t)i * ldc, ldc, accumulate,
                                  tail_cols);
    const float* a = A + (size_t)i * lda;
    float* c = C + (size_t)i * ldc;
    switch (M - i) {
        case 3: gemm_nn_tile<3, NV>(K, a, lda, B, ldb, c, ldc, accumulate, tail_cols); break;
        case 2: gemm_nn_tile<2, NV>(K, a, lda, B, ldb, c, ldc, accumulate, tail_cols); break;
        case 1: gemm_nn_tile<1, NV>(K, a, lda, B, ldb, c, ldc, accumulate, tail_cols); break;
        default: break;
    }
}

// ---------------------------------------------------------------------------------------------------
// GEMM nt, dot form: C[i,j] = A[i,:] · B[j,:]. Tile of MR rows of A × NR rows of B, MR·NR vector
// accumulators along K, one horizontal sum each at the end, the K tail in scalar.

template <int MR, int NR>
void gemm_nt_tile(int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc, bool accumulate) {
    Vec acc[MR][NR];
    for (int r = 0; r < MR; ++r)
        for (int c = 0; c < NR; ++c) acc[r][c] = simd::zero();
    int k = 0;
    for (; k + kWidth <= K; k += kWidth) {
        Vec a[MR];
        for (int r = 0; r < MR; ++r) a[r] = simd::load(A + (size_t)r * lda + k);
        for (int c = 0; c < NR; ++c) {
            const Vec b = simd::load(B + (size_t)c * ldb + k);
            for (int r = 0; r < MR; ++r) acc[r][c] = simd::fma(a[r], b, acc[r][c]);
        }
    }
    for (int r = 0; r < MR; ++r)
        for (int c = 0; c < NR; ++c) {
            float sum = simd::hsum(acc[r][c]);
            for (int kk = k; kk < K; ++kk) sum += A[(size_t)r * lda + kk] * B[(size_t)c * ldb + kk];
            float& out = C[(size_t)r * ldc + c];
            out = accumulate ? out + sum : sum;
        }
}

template <int MR, int NR>
struct XsimdNtTile {
    static void run(int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc, bool accumulate) {
        gemm_nt_tile<MR, NR>(K, A, lda, B, ldb, C, ldc, accumulate);
    }
};

}  // namespace

// ---------------------------------------------------------------------------------------------------

void gemm_nn_tiles(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                   bool accumulate) {
    detail::check_gemm("gemm_nn", M, N, K, lda, K, ldb, N, ldc);
    if (M == 0 || N == 0) return;
    constexpr int panel_cols = kNnVecs * kWidth;
    const int full_vec_cols = N / kWidth * kWidth;
    int j = 0;
    for (; j + panel_cols <= full_vec_cols; j += panel_cols)
        gemm_nn_panel<kNnVecs>(M, K, A, lda, B + j, ldb, C + j, ldc, accumulate, kWidth);
    for (; j < full_vec_cols; j += kWidth) gemm_nn_panel<1>(M, K, A, lda, B + j, ldb, C + j, ldc, accumulate, kWidth);
    if (j < N) {
        // The last N % kWidth columns: copy them into a zero-padded [K, kWidth] panel so the tile can load
        // whole vectors without reading past B.
        const int tail = N - j;
        std::vector<float> panel((size_t)K * kWidth, 0.0f);
        for (int k = 0; k < K; ++k) std::memcpy(&panel[(size_t)k * kWidth], B + (size_t)k * ldb + j, sizeof(float) * tail);
        gemm_nn_panel<1>(M, K, A, lda, panel.data(), kWidth, C + j, ldc, accumulate, tail);
    }
}

void gemm_nt_dot_tiles(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                       bool accumulate) {
    detail::check_gemm("gemm_nt", M, N, K, lda, K, ldb, K, ldc);
    detail::gemm_nt_blocked<XsimdNtTile>(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

// Packing B costs N·K copies (and A M·K); it pays off once there are enough rows of A to reuse B.
static bool worth_packing(int M, int N, int K) { return M >= 8 && N >= 8 && K >= 8; }

void gemm_nn(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
             bool accumulate) {
    if (worth_packing(M, N, K))
        gemm_nn_packed(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
    else
        gemm_nn_tiles(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

void gemm_nt(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
             bool accumulate) {
    if (worth_packing(M, N, K))
        gemm_nt_packed(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
    else
        gemm_nt_dot_tiles(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

void gemm_nt_q8(int M, int N, int K, const float* A, int lda, const BlockQ8_0* B, float* C, int ldc,
                bool accumulate) {
    detail::check_gemm("gemm_nt_q8", M, N, K, lda, K, K, K, ldc);
    detail::check_q8_width("gemm_nt_q8", K);
    if (M == 0 || N == 0) return;
    if (M < 4) {
        for (int i = 0; i < M; ++i) gemv_q8(N, K, B, A + (size_t)i * lda, C + (size_t)i * ldc, accumulate);
        return;
    }
    // Dequantize a panel of weight rows once (exact: f16 scale × int8 fits a float) and reuse it for
    // every row of A through the float GEMM.
    const int blocks = K / kQ8BlockSize;
    constexpr int panel_rows = 64;
    thread_local std::vector<float> panel;  // reused: an encoder calls this per layer and per sentence
    if (panel.size() < (size_t)std::min(N, panel_rows) * K) panel.resize((size_t)std::min(N, panel_rows) * K);
    for (int j = 0; j < N; j += panel_rows) {
        const int rows = std::min(panel_rows, N - j);
        const BlockQ8_0* panel_blocks = B + (size_t)j * blocks;
        for (std::size_t b = 0; b < (size_t)rows * blocks; ++b)
            simd::q8_block_to_f32(panel_blocks[b].q, detail::half_to_float(panel_blocks[b].scale),
                                  panel.data() + b * kQ8BlockSize);
        gemm_nt(M, rows, K, A, lda, panel.data(), K, C + j, ldc, accumulate);
    }
}

}  // namespace attnlab::kernels::ATTNLAB_KERNEL_TARGET
