// SIMD kernels (xsimd through simd.hpp; one hand-written SIMD128 GEMM micro-kernel for wasm, kept for
// comparison). The cache-blocked packed GEMM is in gemm_packed.cpp, the opt-in int8 Q8_0 path in
// q8_kernels.cpp.
//
// Measured with scripts/bench_kernels.mjs (Release -O3, GFLOP/s, best of 3 runs; each run takes the best of
// many ~2 ms trials, since this 2-core machine ran at load 20; wasm under Node 20 with --no-liftoff):
//                          native avx512   native sse2   wasm simd128   wasm scalar   wasm/avx512  wasm/sse2
//   gemm_nn 256³ (packed)       147            27             33            0.6          0.22        1.23
//     unpacked 4×2 tiles         83            27             29
//   gemm_nt 256³ (packed)       132            26             32            1.1          0.24        1.22
//     dot-form xsimd             67            30             20
//   gemv 512x2048                15            15             15            3.0          1.00        1.00
//   gemv_t 512x2048              16            15             14            0.9          0.90        0.95
//   gemv_q8 512x2048 (float x)   32             3.4            7.3          3.3          0.23        2.17
//     int8, x quantized          29            20             14                         0.47        0.68
//   gemm_nt_q8 256³ (float x)   103            25             29            1.5          0.28        1.15
//     int8, x quantized          22            17             10
// Before this round wasm gemm_nn was 23 and gemm_nt 21; earlier wasm numbers for the first benchmark case
// were also depressed by V8's baseline (Liftoff) code. gemv/gemv_t are memory-bound (4 MiB of weights):
// every build reads at the same ~60 GB/s. Against AVX-512 (16 lanes + FMA) wasm's 4 lanes cannot reach
// 0.7× on compute-bound kernels; against the same-width SSE2 build it is at or above 1×.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "attnlab/error.hpp"
#include "attnlab/kernels/detail.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/kernels/simd.hpp"
#include "attnlab/kernels/variants.hpp"

namespace attnlab::kernels {

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

using NtTile = void (*)(int, const float*, int, const float*, int, float*, int, bool);

// Tiles up to 4×4 of one dot-form micro-kernel family, edges included.
template <template <int, int> class Tile>
void gemm_nt_blocked(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                     bool accumulate) {
    static const NtTile tiles[4][4] = {
        {Tile<1, 1>::run, Tile<1, 2>::run, Tile<1, 3>::run, Tile<1, 4>::run},
        {Tile<2, 1>::run, Tile<2, 2>::run, Tile<2, 3>::run, Tile<2, 4>::run},
        {Tile<3, 1>::run, Tile<3, 2>::run, Tile<3, 3>::run, Tile<3, 4>::run},
        {Tile<4, 1>::run, Tile<4, 2>::run, Tile<4, 3>::run, Tile<4, 4>::run},
    };
    for (int i = 0; i < M; i += 4) {
        const int mr = std::min(4, M - i);
        for (int j = 0; j < N; j += 4) {
            const int nr = std::min(4, N - j);
            tiles[mr - 1][nr - 1](K, A + (size_t)i * lda, lda, B + (size_t)j * ldb, ldb, C + (size_t)i * ldc + j,
                                  ldc, accumulate);
        }
    }
}

template <int MR, int NR>
struct XsimdNtTile {
    static void run(int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc, bool accumulate) {
        gemm_nt_tile<MR, NR>(K, A, lda, B, ldb, C, ldc, accumulate);
    }
};

#if defined(__wasm_simd128__)
// The same dot-form micro-kernel written directly in SIMD128 intrinsics, to check that xsimd's SSE2
// lowering costs nothing (see the numbers at the top of the file).
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
#endif

// ---------------------------------------------------------------------------------------------------
// Elementwise helpers: f over whole vectors, the tail through a padded vector so every element sees
// the same SIMD math (results do not depend on where an element sits in the row).

template <class F>
void map_inplace(float* x, int n, F f) {
    int i = 0;
    for (; i + kWidth <= n; i += kWidth) simd::store(x + i, f(simd::load(x + i), i));
    if (i < n) simd::store_partial(x + i, f(simd::load_partial(x + i, n - i), i), n - i);
}

inline Vec load_tail_or_full(const float* p, int n_left) {
    return n_left >= kWidth ? simd::load(p) : simd::load_partial(p, n_left);
}

template <class Act>
void bias_act_rows(int rows, int cols, float* y, int ldy, const float* bias, Act act) {
    for (int r = 0; r < rows; ++r) {
        float* row = y + (size_t)r * ldy;
        if (bias)
            map_inplace(row, cols, [&](Vec v, int i) { return act(v + load_tail_or_full(bias + i, cols - i)); });
        else
            map_inplace(row, cols, [&](Vec v, int) { return act(v); });
    }
}

struct ActNone { Vec operator()(Vec v) const { return v; } };
struct ActRelu { Vec operator()(Vec v) const { return xsimd::max(v, simd::zero()); } };
struct ActRelu6 { Vec operator()(Vec v) const { return xsimd::min(xsimd::max(v, simd::zero()), simd::splat(6.0f)); } };
struct ActTanh { Vec operator()(Vec v) const { return xsimd::tanh(v); } };
struct ActSigmoid {
    Vec operator()(Vec v) const { return simd::splat(1.0f) / (simd::splat(1.0f) + xsimd::exp(-v)); }
};
// torch.nn.GELU() default (approximate='none'): 0.5·x·(1 + erf(x/√2))
struct ActGelu {
    Vec operator()(Vec v) const {
        return simd::splat(0.5f) * v * (simd::splat(1.0f) + xsimd::erf(v * simd::splat(0.70710678118654752f)));
    }
};

template <class F>
void with_activation(Activation act, F f) {
    switch (act) {
        case Activation::none: return f(ActNone{});
        case Activation::relu: return f(ActRelu{});
        case Activation::relu6: return f(ActRelu6{});
        case Activation::tanh: return f(ActTanh{});
        case Activation::sigmoid: return f(ActSigmoid{});
        case Activation::gelu: return f(ActGelu{});
    }
    fail("unknown activation " + std::to_string(int(act)));
}

float row_max(const float* x, int n) {
    const float neg_inf = -std::numeric_limits<float>::infinity();
    Vec m = simd::splat(neg_inf);
    int i = 0;
    for (; i + kWidth <= n; i += kWidth) m = xsimd::max(m, simd::load(x + i));
    if (i < n) m = xsimd::max(m, simd::load_partial(x + i, n - i, neg_inf));
    return simd::hmax(m);
}

// Masked-out entries become -inf first: exp(-inf - max) = 0 then does the masking in the SIMD loops.
void apply_mask(float* row, int cols, const uint8_t* mask) {
    if (!mask) return;
    const float neg_inf = -std::numeric_limits<float>::infinity();
    for (int c = 0; c < cols; ++c)
        if (!mask[c]) row[c] = neg_inf;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------

namespace variants {

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

void gemm_nt_xsimd(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                   bool accumulate) {
    detail::check_gemm("gemm_nt", M, N, K, lda, K, ldb, K, ldc);
    gemm_nt_blocked<XsimdNtTile>(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

#if defined(__wasm_simd128__)
void gemm_nt_wasm128(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                     bool accumulate) {
    detail::check_gemm("gemm_nt", M, N, K, lda, K, ldb, K, ldc);
    gemm_nt_blocked<Wasm128NtTile>(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}
#endif

}  // namespace variants

// Packing B costs N·K copies (and A M·K); it pays off once there are enough rows of A to reuse B.
static bool worth_packing(int M, int N, int K) { return M >= 8 && N >= 8 && K >= 8; }

void gemm_nn(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
             bool accumulate) {
    if (worth_packing(M, N, K))
        variants::gemm_nn_packed(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
    else
        variants::gemm_nn_tiles(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

void gemm_nt(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
             bool accumulate) {
    if (worth_packing(M, N, K))
        variants::gemm_nt_packed(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
    else
        variants::gemm_nt_xsimd(M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

// y[R rows] = Σ over Q8_0 blocks of scale · (q · x), R rows of W at a time so each x vector is loaded once.
template <int R>
static void gemv_q8_rows(int blocks, const BlockQ8_0* W, const float* x, float* y, bool accumulate) {
    Vec acc[R];
    for (int r = 0; r < R; ++r) acc[r] = simd::zero();
    for (int b = 0; b < blocks; ++b) {
        Vec xv[simd::kQ8Vecs];
        for (int v = 0; v < simd::kQ8Vecs; ++v) xv[v] = simd::load(x + b * kQ8BlockSize + v * kWidth);
        for (int r = 0; r < R; ++r) {
            const BlockQ8_0& block = W[(size_t)r * blocks + b];
            Vec q[simd::kQ8Vecs];
            simd::load_q8_block(block.q, q);
            Vec block_sum = q[0] * xv[0];
            for (int v = 1; v < simd::kQ8Vecs; ++v) block_sum = simd::fma(q[v], xv[v], block_sum);
            acc[r] = simd::fma(block_sum, simd::splat(detail::half_to_float(block.scale)), acc[r]);
        }
    }
    for (int r = 0; r < R; ++r) {
        const float sum = simd::hsum(acc[r]);
        y[r] = accumulate ? y[r] + sum : sum;
    }
}

void gemv_q8(int M, int N, const BlockQ8_0* W, const float* x, float* y, bool accumulate) {
    detail::check_gemv("gemv_q8", M, N, N);
    detail::check_q8_width("gemv_q8", N);
    const int blocks = N / kQ8BlockSize;
    int i = 0;
    for (; i + 4 <= M; i += 4) gemv_q8_rows<4>(blocks, W + (size_t)i * blocks, x, y + i, accumulate);
    for (; i < M; ++i) gemv_q8_rows<1>(blocks, W + (size_t)i * blocks, x, y + i, accumulate);
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
    std::vector<float> panel((size_t)std::min(N, panel_rows) * K);
    for (int j = 0; j < N; j += panel_rows) {
        const int rows = std::min(panel_rows, N - j);
        dequantize_q8_0(B + (size_t)j * blocks, (size_t)rows * K, panel.data());
        gemm_nt(M, rows, K, A, lda, panel.data(), K, C + j, ldc, accumulate);
    }
}

// The 4-rows-at-a-time body shared by gemv and gemv_f16: Weight is float or an IEEE half, load_vector reads kWidth
// of them as floats and to_float one. Rows left over (M % 4) go to `remaining_row`.
template <typename Weight, typename LoadVector, typename ToFloat, typename RemainingRow>
static void gemv_by4(int M, int N, const Weight* W, int ldw, const float* x, float* y, bool accumulate,
                     LoadVector load_vector, ToFloat to_float, RemainingRow remaining_row) {
    int i = 0;
    for (; i + 4 <= M; i += 4) {
        const Weight* w = W + (size_t)i * ldw;
        Vec acc[4] = {simd::zero(), simd::zero(), simd::zero(), simd::zero()};
        int j = 0;
        for (; j + kWidth <= N; j += kWidth) {
            const Vec xv = simd::load(x + j);
            for (int r = 0; r < 4; ++r) acc[r] = simd::fma(load_vector(w + (size_t)r * ldw + j), xv, acc[r]);
        }
        for (int r = 0; r < 4; ++r) {
            float sum = simd::hsum(acc[r]);
            for (int jj = j; jj < N; ++jj) sum += to_float(w[(size_t)r * ldw + jj]) * x[jj];
            y[i + r] = accumulate ? y[i + r] + sum : sum;
        }
    }
    for (; i < M; ++i) {
        const float sum = remaining_row(W + (size_t)i * ldw);
        y[i] = accumulate ? y[i] + sum : sum;
    }
}

void gemv(int M, int N, const float* W, int ldw, const float* x, float* y, bool accumulate) {
    detail::check_gemv("gemv", M, N, ldw);
    gemv_by4(M, N, W, ldw, x, y, accumulate, [](const float* p) { return simd::load(p); },
             [](float w) { return w; }, [&](const float* row) { return dot(row, x, N); });
}

void gemv_f16(int M, int N, const uint16_t* W, const float* x, float* y, bool accumulate) {
    detail::check_gemv("gemv_f16", M, N, N);
    gemv_by4(M, N, W, N, x, y, accumulate, [](const uint16_t* p) { return simd::load_f16(p); },
             detail::half_to_float, [&](const uint16_t* row) {
                 float sum = 0.0f;
                 for (int j = 0; j < N; ++j) sum += detail::half_to_float(row[j]) * x[j];
                 return sum;
             });
}

void f16_to_f32_n(const uint16_t* h, std::size_t n, float* out) {
    std::size_t i = 0;
    for (; i + kWidth <= n; i += kWidth) simd::store(out + i, simd::load_f16(h + i));
    for (; i < n; ++i) out[i] = detail::half_to_float(h[i]);
}

void gemv_t(int M, int N, const float* W, int ldw, const float* x, float* y, bool accumulate) {
    detail::check_gemv("gemv_t", M, N, ldw);
    if (!accumulate) std::fill(y, y + N, 0.0f);
    const int full = N / kWidth * kWidth;
    // y += Σ_i x[i]·W[i,:], four rows per pass over y so y is loaded/stored a quarter as often.
    int i = 0;
    for (; i + 4 <= M; i += 4) {
        const float* w = W + (size_t)i * ldw;
        const Vec x0 = simd::splat(x[i]), x1 = simd::splat(x[i + 1]), x2 = simd::splat(x[i + 2]),
                  x3 = simd::splat(x[i + 3]);
        for (int j = 0; j < full; j += kWidth) {
            Vec acc = simd::load(y + j);
            acc = simd::fma(x0, simd::load(w + j), acc);
            acc = simd::fma(x1, simd::load(w + ldw + j), acc);
            acc = simd::fma(x2, simd::load(w + 2 * (size_t)ldw + j), acc);
            acc = simd::fma(x3, simd::load(w + 3 * (size_t)ldw + j), acc);
            simd::store(y + j, acc);
        }
    }
    for (; i < M; ++i) {
        const Vec xi = simd::splat(x[i]);
        const float* w = W + (size_t)i * ldw;
        for (int j = 0; j < full; j += kWidth) simd::store(y + j, simd::fma(xi, simd::load(w + j), simd::load(y + j)));
    }
    for (int j = full; j < N; ++j) {
        float sum = 0.0f;
        for (int r = 0; r < M; ++r) sum += W[(size_t)r * ldw + j] * x[r];
        y[j] += sum;
    }
}

void bias_act(int rows, int cols, float* y, int ldy, const float* bias, Activation act) {
    detail::check_rows("bias_act", rows, cols, ldy);
    with_activation(act, [&](auto f) { bias_act_rows(rows, cols, y, ldy, bias, f); });
}

void activate(float* x, std::size_t n, Activation act) {
    // Chunks keep the int-indexed helpers valid for any size_t n.
    constexpr std::size_t chunk = std::size_t(1) << 30;
    for (std::size_t start = 0; start < n; start += chunk) {
        const int len = int(std::min(chunk, n - start));
        with_activation(act, [&](auto f) { map_inplace(x + start, len, [&](Vec v, int) { return f(v); }); });
    }
}

void softmax_rows(int rows, int cols, float* x, int ldx, const uint8_t* mask, int ldm) {
    detail::check_rows("softmax_rows", rows, cols, ldx);
    detail::check_mask("softmax_rows", cols, mask, ldm);
    for (int r = 0; r < rows; ++r) {
        float* row = x + (size_t)r * ldx;
        apply_mask(row, cols, mask ? mask + (size_t)r * ldm : nullptr);
        const float max = row_max(row, cols);
        if (max == -std::numeric_limits<float>::infinity()) {  // fully masked: all zeros
            std::fill(row, row + cols, 0.0f);
            continue;
        }
        const Vec vmax = simd::splat(max);
        Vec vsum = simd::zero();
        int i = 0;
        for (; i + kWidth <= cols; i += kWidth) {
            const Vec e = xsimd::exp(simd::load(row + i) - vmax);
            simd::store(row + i, e);
            vsum += e;
        }
        float sum = simd::hsum(vsum);
        if (i < cols) {
            const float neg_inf = -std::numeric_limits<float>::infinity();
            const Vec e = xsimd::exp(simd::load_partial(row + i, cols - i, neg_inf) - vmax);  // pad lanes: 0
            simd::store_partial(row + i, e, cols - i);
            sum += simd::hsum(e);
        }
        const Vec inv = simd::splat(1.0f / sum);
        map_inplace(row, cols, [&](Vec v, int) { return v * inv; });
    }
}

void log_softmax_rows(int rows, int cols, float* x, int ldx, const uint8_t* mask, int ldm) {
    detail::check_rows("log_softmax_rows", rows, cols, ldx);
    detail::check_mask("log_softmax_rows", cols, mask, ldm);
    const float neg_inf = -std::numeric_limits<float>::infinity();
    for (int r = 0; r < rows; ++r) {
        float* row = x + (size_t)r * ldx;
        apply_mask(row, cols, mask ? mask + (size_t)r * ldm : nullptr);
        const float max = row_max(row, cols);
        if (max == neg_inf) {  // fully masked: -inf everywhere
            std::fill(row, row + cols, neg_inf);
            continue;
        }
        const Vec vmax = simd::splat(max);
        Vec vsum = simd::zero();
        int i = 0;
        for (; i + kWidth <= cols; i += kWidth) vsum += xsimd::exp(simd::load(row + i) - vmax);
        float sum = simd::hsum(vsum);
        if (i < cols) sum += simd::hsum(xsimd::exp(simd::load_partial(row + i, cols - i, neg_inf) - vmax));
        // (x - max) - log(sum), not x - (max + log(sum)): with large logits the combined shift would be
        // rounded to the ulp of max.
        const Vec log_sum = simd::splat(std::log(sum));
        map_inplace(row, cols, [&](Vec v, int) { return (v - vmax) - log_sum; });  // masked: -inf stays
    }
}

void layer_norm_rows(int rows, int cols, const float* x, float* y, const float* gamma, const float* beta,
                     float eps) {
    detail::check_rows("layer_norm_rows", rows, cols, cols);
    check(cols > 0 || rows == 0, "layer_norm_rows: cols must be positive");
    for (int r = 0; r < rows; ++r) {
        const float* in = x + (size_t)r * cols;
        float* out = y + (size_t)r * cols;
        // Two passes like PyTorch: the mean first, then the biased variance around it.
        Vec vsum = simd::zero();
        int i = 0;
        for (; i + kWidth <= cols; i += kWidth) vsum += simd::load(in + i);
        float sum = simd::hsum(vsum);
        for (; i < cols; ++i) sum += in[i];
        const float mean = sum / float(cols);
        const Vec vmean = simd::splat(mean);
        Vec vsq = simd::zero();
        for (i = 0; i + kWidth <= cols; i += kWidth) {
            const Vec d = simd::load(in + i) - vmean;
            vsq = simd::fma(d, d, vsq);
        }
        float sq = simd::hsum(vsq);
        for (; i < cols; ++i) sq += (in[i] - mean) * (in[i] - mean);
        const float inv_std = 1.0f / std::sqrt(sq / float(cols) + eps);
        const Vec vinv = simd::splat(inv_std);
        for (i = 0; i < cols; i += kWidth) {
            const int left = cols - i;
            Vec v = (load_tail_or_full(in + i, left) - vmean) * vinv;
            if (gamma) v *= load_tail_or_full(gamma + i, left);
            if (beta) v += load_tail_or_full(beta + i, left);
            if (left >= kWidth)
                simd::store(out + i, v);
            else
                simd::store_partial(out + i, v, left);
        }
    }
}

void embedding(const float* table, int vocab, int dim, const int32_t* ids, int n, float* out) {
    detail::check_embedding(vocab, dim, ids, n);
    for (int i = 0; i < n; ++i)
        std::memcpy(out + (size_t)i * dim, table + (size_t)ids[i] * dim, sizeof(float) * (size_t)dim);
}

float dot(const float* a, const float* b, int n) {
    Vec acc0 = simd::zero(), acc1 = simd::zero();
    int i = 0;
    for (; i + 2 * kWidth <= n; i += 2 * kWidth) {
        acc0 = simd::fma(simd::load(a + i), simd::load(b + i), acc0);
        acc1 = simd::fma(simd::load(a + i + kWidth), simd::load(b + i + kWidth), acc1);
    }
    for (; i + kWidth <= n; i += kWidth) acc0 = simd::fma(simd::load(a + i), simd::load(b + i), acc0);
    float sum = simd::hsum(acc0 + acc1);
    for (; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

uint32_t read_checksum(const void* data, std::size_t bytes) {
    using Words = xsimd::batch<uint32_t>;
    constexpr std::size_t lanes = Words::size;
    const char* p = static_cast<const char*>(data);
    const std::size_t words = bytes / 4;
    Words acc[4] = {Words(0u), Words(0u), Words(0u), Words(0u)};
    alignas(64) uint32_t chunk[4 * lanes];
    std::size_t i = 0;
    for (; i + 4 * lanes <= words; i += 4 * lanes) {
        std::memcpy(chunk, p + i * 4, sizeof chunk);   // compiles to unaligned vector loads; no aliasing issue
        for (std::size_t k = 0; k < 4; ++k) acc[k] += Words::load_aligned(chunk + k * lanes);
    }
    alignas(64) uint32_t lane_values[lanes];
    (acc[0] + acc[1] + acc[2] + acc[3]).store_aligned(lane_values);
    uint32_t sum = 0;
    for (uint32_t v : lane_values) sum += v;
    for (; i < words; ++i) {
        uint32_t w;
        std::memcpy(&w, p + i * 4, 4);
        sum += w;
    }
    uint32_t tail = 0;
    std::memcpy(&tail, p + words * 4, bytes - words * 4);
    return sum + tail;
}

void axpy(int n, float alpha, const float* x, float* y) {
    const Vec va = simd::splat(alpha);
    int i = 0;
    for (; i + kWidth <= n; i += kWidth) simd::store(y + i, simd::fma(va, simd::load(x + i), simd::load(y + i)));
    for (; i < n; ++i) y[i] += alpha * x[i];
}

int argmax(const float* x, int n) {
    check(n > 0, "argmax: empty input");
    // Vector max first, then the first index holding it. x - x is NaN exactly for NaN and ±inf, where the
    // lane-wise max may disagree with the scalar scan's order of comparisons: then the scalar scan decides.
    Vec vmax = simd::load_partial(x, std::min(n, kWidth), x[0]), probe = simd::zero();
    int i = 0;
    for (; i + kWidth <= n; i += kWidth) {
        const Vec v = simd::load(x + i);
        vmax = xsimd::max(vmax, v);
        probe += v - v;
    }
    float max = simd::hmax(vmax);
    for (; i < n; ++i) {
        probe += simd::splat(x[i] - x[i]);
        max = std::max(max, x[i]);
    }
    if (std::isnan(simd::hsum(probe))) return reference::argmax(x, n);
    for (int j = 0; j < n; ++j)
        if (x[j] == max) return j;
    return reference::argmax(x, n);
}

void top_k(const float* x, int n, int k, int* indices, float* values) {
    detail::check_top_k(n, k);
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [x](int a, int b) { return detail::ranks_before(x, a, b); });
    for (int i = 0; i < k; ++i) {
        indices[i] = order[i];
        values[i] = x[order[i]];
    }
}

const char* simd_name() { return simd::name(); }

}  // namespace attnlab::kernels
