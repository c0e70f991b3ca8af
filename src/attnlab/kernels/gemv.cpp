// GEMV, y (+)= W·x and y (+)= Wᵀ·x, with f32, f16 and Q8_0 weights (float activations; the int8 gemv_q8_q8 the
// decoders run for Q8_0 is in q8_kernels.cpp).
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
