// GEMV, y (+)= W·x and y (+)= Wᵀ·x, with f32, f16 and Q8_0 weights (float activations; the int8 gemv_q8_q8 the
// decoders run for Q8_0 is in q8_kernels.cpp), and the f32 products on panel-packed weights (gemv_panels,
// gemm_panels) that nn::Linear runs for f32 weights.
#include <algorithm>

#include "attnlab/kernels/detail.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/kernels/simd.hpp"

namespace attnlab::kernels::ATTNLAB_KERNEL_TARGET {

using simd::kWidth;
using simd::Vec;

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

// Output rows [0, M) (M a multiple of 4) of gemv_f16_rows for R activation rows, two rows of W at a time: every
// widened vector of W serves R products, and each accumulator sums its row's lanes in gemv_by4's order (j
// ascending, then hsum, then the tail in order), so each output is gemv_f16's bit for bit.
template <int R>
static void gemv_f16_pairs(int M, int N, const uint16_t* W, const float* x, int ldx, float* y, int ldy) {
    for (int i = 0; i < M; i += 2) {
        const uint16_t* w0 = W + (size_t)i * N;
        const uint16_t* w1 = w0 + N;
        Vec acc[R][2];
        for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = simd::zero();
        int j = 0;
        for (; j + kWidth <= N; j += kWidth) {
            const Vec a = simd::load_f16(w0 + j), b = simd::load_f16(w1 + j);
            for (int r = 0; r < R; ++r) {
                const Vec xv = simd::load(x + (size_t)r * ldx + j);
                acc[r][0] = simd::fma(a, xv, acc[r][0]);
                acc[r][1] = simd::fma(b, xv, acc[r][1]);
            }
        }
        for (int r = 0; r < R; ++r)
            for (int k = 0; k < 2; ++k) {
                const uint16_t* w = k == 0 ? w0 : w1;
                float sum = simd::hsum(acc[r][k]);
                for (int jj = j; jj < N; ++jj) sum += detail::half_to_float(w[jj]) * x[(size_t)r * ldx + jj];
                y[(size_t)r * ldy + i + k] = sum;
            }
    }
}

void gemv_f16_rows(int rows, int M, int N, const uint16_t* W, const float* x, int ldx, float* y, int ldy) {
    detail::check_gemv("gemv_f16_rows", M, N, N);
    detail::check_rows("gemv_f16_rows (x)", rows, N, ldx);
    detail::check_rows("gemv_f16_rows (y)", rows, M, ldy);
#if defined(__wasm_simd128__)
    // No model calls it in wasm, which widens halves at load (keep_f16_weights): the row loop keeps the module small.
    for (int r = 0; r < rows; ++r) gemv_f16(M, N, W, x + (size_t)r * ldx, y + (size_t)r * ldy, false);
#else
    const int whole = M / 4 * 4;
    for (int r = 0; r < rows; r += 4) {
        const float* xr = x + (size_t)r * ldx;
        float* yr = y + (size_t)r * ldy;
        switch (std::min(4, rows - r)) {
            case 1: gemv_f16_pairs<1>(whole, N, W, xr, ldx, yr, ldy); break;
            case 2: gemv_f16_pairs<2>(whole, N, W, xr, ldx, yr, ldy); break;
            case 3: gemv_f16_pairs<3>(whole, N, W, xr, ldx, yr, ldy); break;
            default: gemv_f16_pairs<4>(whole, N, W, xr, ldx, yr, ldy); break;
        }
    }
    // The rows past the last four: gemv_f16's own (fewer than four rows, so its scalar dot products).
    if (whole < M)
        for (int r = 0; r < rows; ++r)
            gemv_f16(M - whole, N, W + (size_t)whole * N, x + (size_t)r * ldx, y + (size_t)r * ldy + whole, false);
#endif
}

// Panel-packed weights (kernels.hpp, pack_panels). Per input element one broadcast of x[k] and contiguous loads of
// the panels' 16 weights; each output lane accumulates over k in order, so no horizontal sum and no row pointers.
// The dot-product gemv above, 4 rows at a time over row-major weights, slows to a quarter of this when the matrix
// streams from L3 or memory with 4-float vectors (wasm, SSE2: docs/performance.md, "Panel-packed GEMV").
constexpr int kPanelVecs = kPanelRows / kWidth;                      // vectors per panel: 4, 2 or 1
static_assert(kPanelRows % kWidth == 0, "a panel is a whole number of vectors");
constexpr int kGemvPanels = kPanelVecs >= 4 ? 1 : 4 / kPanelVecs;    // panels per pass: 4 accumulators in flight
constexpr int kGemmRows = kPanelVecs >= 4 ? 2 : 8 / kPanelVecs;      // activation rows per pass of gemm_panels

namespace {

// Stores Count accumulators as outputs [0, rows) of y (+=).
template <int Count>
void store_panel_sums(const Vec* acc, int rows, float* y, bool accumulate) {
    alignas(64) float sums[Count * kWidth];
    for (int a = 0; a < Count; ++a) simd::store(sums + a * kWidth, acc[a]);
    for (int r = 0; r < rows; ++r) y[r] = accumulate ? y[r] + sums[r] : sums[r];
}

// acc[g·kPanelVecs + v] = Σ_k x[k] · panel g's vector v at k, for G panels kPanelRows·N apart.
template <int G>
void panels_dot(int N, const float* P, const float* x, Vec* acc) {
    const std::size_t stride = std::size_t(N) * kPanelRows;
    for (int a = 0; a < G * kPanelVecs; ++a) acc[a] = simd::zero();
    for (int k = 0; k < N; ++k) {
        const Vec xk = simd::splat(x[k]);
        const float* w = P + std::size_t(k) * kPanelRows;
        for (int g = 0; g < G; ++g)
            for (int v = 0; v < kPanelVecs; ++v)
                acc[g * kPanelVecs + v] = simd::fma(xk, simd::load(w + g * stride + v * kWidth), acc[g * kPanelVecs + v]);
    }
}

}  // namespace

void gemv_panels(int M, int N, const float* P, const float* x, float* y, bool accumulate) {
    detail::check_gemv("gemv_panels", M, N, N);
    const int panels = (M + kPanelRows - 1) / kPanelRows;
    const std::size_t stride = std::size_t(N) * kPanelRows;
    int p = 0;
    for (; p + kGemvPanels <= panels; p += kGemvPanels) {
        Vec acc[kGemvPanels * kPanelVecs];
        panels_dot<kGemvPanels>(N, P + p * stride, x, acc);
        store_panel_sums<kGemvPanels * kPanelVecs>(acc, std::min(kGemvPanels * kPanelRows, M - p * kPanelRows),
                                                   y + p * kPanelRows, accumulate);
    }
    for (; p < panels; ++p) {
        Vec acc[kPanelVecs];
        panels_dot<1>(N, P + p * stride, x, acc);
        store_panel_sums<kPanelVecs>(acc, std::min(kPanelRows, M - p * kPanelRows), y + p * kPanelRows, accumulate);
    }
}

void gemm_panels(int M, int N, int K, const float* A, int lda, const float* P, float* C, int ldc, bool accumulate) {
    detail::check_gemm("gemm_panels", M, N, K, lda, K, K, K, ldc);
    if (M == 0 || N == 0) return;
    const int panels = (N + kPanelRows - 1) / kPanelRows;
    // Blocks of kGemmBlockRows activation rows (an encoder's sentence, a listener's frames): each block stays in L2
    // while every panel passes over it, instead of all of A streaming from memory once per panel.
    constexpr int kGemmBlockRows = 64;
    for (int m0 = 0; m0 < M; m0 += kGemmBlockRows) {
        for (int p = 0; p < panels; ++p) {
            const float* panel = P + std::size_t(p) * K * kPanelRows;
            const int rows = std::min(kPanelRows, N - p * kPanelRows);
            const int m_end = std::min(M, m0 + kGemmBlockRows);
            int m = m0;
            // kGemmRows activation rows share each load of the panel; every output lane sums over k in order, as
            // gemv_panels does, so each row is its gemv_panels bit for bit.
            for (; m + kGemmRows <= m_end; m += kGemmRows) {
                Vec acc[kGemmRows][kPanelVecs];
                for (int r = 0; r < kGemmRows; ++r)
                    for (int v = 0; v < kPanelVecs; ++v) acc[r][v] = simd::zero();
                const float* a = A + std::size_t(m) * lda;
                for (int k = 0; k < K; ++k) {
                    Vec w[kPanelVecs];
                    for (int v = 0; v < kPanelVecs; ++v) w[v] = simd::load(panel + std::size_t(k) * kPanelRows + v * kWidth);
                    for (int r = 0; r < kGemmRows; ++r) {
                        const Vec ak = simd::splat(a[std::size_t(r) * lda + k]);
                        for (int v = 0; v < kPanelVecs; ++v) acc[r][v] = simd::fma(ak, w[v], acc[r][v]);
                    }
                }
                for (int r = 0; r < kGemmRows; ++r)
                    store_panel_sums<kPanelVecs>(acc[r], rows, C + std::size_t(m + r) * ldc + p * kPanelRows, accumulate);
            }
            for (; m < m_end; ++m) {
                Vec acc[kPanelVecs];
                panels_dot<1>(K, panel, A + std::size_t(m) * lda, acc);
                store_panel_sums<kPanelVecs>(acc, rows, C + std::size_t(m) * ldc + p * kPanelRows, accumulate);
            }
        }
    }
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

}  // namespace attnlab::kernels::ATTNLAB_KERNEL_TARGET
