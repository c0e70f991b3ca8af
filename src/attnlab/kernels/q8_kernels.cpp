// Q8_0 matrix-vector products with the activations quantized to Q8_0 too (ggml's q8_0·q8_0): x is
// quantized once per call (quantize_q8_0, the rule of the weights), then every 32-block is an exact
// int8·int8 dot product scaled once by d_w·d_x. Reading int8 and multiplying in int16/int32 is what makes
// Q8_0 pay off in wasm: widening each weight to float (kernels::gemv_q8) costs more instructions than the
// multiply itself, and the decoders' GEMVs became compute-bound and slower than f32.
//
//   kernels::gemv_q8_q8        4 weight rows per pass, one 4-lane vector per block for scales and sums
//                              (simd::q8_dot4); what nn::linear uses for one Q8_0 row (the decoders)
//   kernels::gemm_nt_q8_q8     several activation rows (a batched decoder step, nn::linear_batched): each row
//                              exactly its gemv_q8_q8, the weights read from memory once for all rows and
//                              widened once per pair of rows (simd::q8_dot4x2)
// (the first int8 version, one row at a time, is the benchmark's variants::gemv_q8_int8: bench/variants/)
//
// Numerics: y differs from W_dequantized · x by the activation rounding (<= d_x/2 per element, d_x =
// max|x_block|/127), the error ggml's q8_0 matmuls have. reference::gemv_q8_q8 quantizes the same way and
// does the same float operations per row (same block order), so it matches gemv_q8_q8 to the last bit up
// to fused multiply-adds.
//
// Measurements, and the per-token effect: docs/performance.md ("Q8_0 decoding").
#include <algorithm>
#include <vector>

#include "attnlab/kernels/detail.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/kernels/q8_activations.hpp"
#include "attnlab/kernels/simd.hpp"

namespace attnlab::kernels::ATTNLAB_KERNEL_TARGET {

namespace {

// ---------------------------------------------------------------------------------------------------------
// y[i..i+4) (+)= W[i..i+4) · x̃, the rows as 4 lanes of one vector: per block one q8_dot4 (exact integer
// sums), the 4 rows' scales (converted from f16 here, or read from q8_scales_by4), one multiply-add. Tail rows
// repeat the last row pointer and only their own lanes are stored.
template <bool kPackedScales>
void q8_q8_rows(int M, int blocks, const BlockQ8_0* W, const detail::QuantizedActivations& xq, const float* scales4,
                float* y, bool accumulate) {
    const int16_t* xv = xq.values.data();
    for (int i = 0; i < M; i += 4) {
        const int rows = std::min(4, M - i);
        const BlockQ8_0* r0 = W + (size_t)i * blocks;
        const BlockQ8_0* r1 = W + (size_t)(i + std::min(1, rows - 1)) * blocks;
        const BlockQ8_0* r2 = W + (size_t)(i + std::min(2, rows - 1)) * blocks;
        const BlockQ8_0* r3 = W + (size_t)(i + std::min(3, rows - 1)) * blocks;
        const float* s4 = kPackedScales ? scales4 + (size_t)(i / 4) * blocks * 4 : nullptr;
        simd::F4 acc = simd::f4_zero();
        for (int b = 0; b < blocks; ++b) {
            const simd::F4 w_scales = kPackedScales ? simd::f4_load(s4 + (size_t)b * 4)
                                                    : simd::f16x4_to_f32(r0[b].scale, r1[b].scale, r2[b].scale, r3[b].scale);
            // d_w·d_x first, then times the integer sum: the reference's order.
            const simd::F4 scale = simd::f4_mul(w_scales, simd::f4_splat(xq.scales[b]));
            const simd::F4 dots = simd::q8_dot4(r0[b].q, r1[b].q, r2[b].q, r3[b].q, xv + (size_t)b * kQ8BlockSize);
            acc = simd::f4_add(acc, simd::f4_mul(dots, scale));
        }
        alignas(16) float sums[4];
        simd::f4_store(sums, acc);
        for (int r = 0; r < rows; ++r) y[i + r] = accumulate ? y[i + r] + sums[r] : sums[r];
    }
}

// C[:, i..i+4) (+)= Ã · W[i..i+4)ᵀ for all M activation rows, group by group of 4 weight rows (read from memory once,
// then from L1 for every pair of activation rows): per block the float operations of q8_q8_rows in the same order,
// so each row's result is gemv_q8_q8's bit for bit; pairs of rows share the weights' widening (simd::q8_dot4x2).
template <bool kPackedScales>
void q8_q8_multi_rows(int M, int N, int blocks, const BlockQ8_0* W, const detail::QuantizedActivations& aq,
                      const float* scales4, float* C, int ldc, bool accumulate) {
    const int K = blocks * kQ8BlockSize;
    for (int i = 0; i < N; i += 4) {
        const int rows = std::min(4, N - i);
        const BlockQ8_0* r0 = W + (size_t)i * blocks;
        const BlockQ8_0* r1 = W + (size_t)(i + std::min(1, rows - 1)) * blocks;
        const BlockQ8_0* r2 = W + (size_t)(i + std::min(2, rows - 1)) * blocks;
        const BlockQ8_0* r3 = W + (size_t)(i + std::min(3, rows - 1)) * blocks;
        const float* s4 = kPackedScales ? scales4 + (size_t)(i / 4) * blocks * 4 : nullptr;
        auto weight_scales = [&](int b) {
            return kPackedScales ? simd::f4_load(s4 + (size_t)b * 4)
                                 : simd::f16x4_to_f32(r0[b].scale, r1[b].scale, r2[b].scale, r3[b].scale);
        };
        auto store = [&](int m, simd::F4 acc) {
            alignas(16) float sums[4];
            simd::f4_store(sums, acc);
            float* y = C + (size_t)m * ldc + i;
            for (int r = 0; r < rows; ++r) y[r] = accumulate ? y[r] + sums[r] : sums[r];
        };
        int m = 0;
        for (; m + 2 <= M; m += 2) {
            const int16_t* xa = aq.values.data() + (size_t)m * K;
            const int16_t* xb = xa + K;
            const float* dxa = aq.scales.data() + (size_t)m * blocks;
            const float* dxb = dxa + blocks;
            simd::F4 acc_a = simd::f4_zero(), acc_b = simd::f4_zero();
            for (int b = 0; b < blocks; ++b) {
                const simd::F4 w_scales = weight_scales(b);
                // d_w·d_x first, then times the integer sum: the reference's order.
                const simd::F4 scale_a = simd::f4_mul(w_scales, simd::f4_splat(dxa[b]));
                const simd::F4 scale_b = simd::f4_mul(w_scales, simd::f4_splat(dxb[b]));
                simd::F4 dots_a, dots_b;
                simd::q8_dot4x2(r0[b].q, r1[b].q, r2[b].q, r3[b].q, xa + (size_t)b * kQ8BlockSize,
                                xb + (size_t)b * kQ8BlockSize, dots_a, dots_b);
                acc_a = simd::f4_add(acc_a, simd::f4_mul(dots_a, scale_a));
                acc_b = simd::f4_add(acc_b, simd::f4_mul(dots_b, scale_b));
            }
            store(m, acc_a);
            store(m + 1, acc_b);
        }
        if (m < M) {
            const int16_t* x = aq.values.data() + (size_t)m * K;
            const float* dx = aq.scales.data() + (size_t)m * blocks;
            simd::F4 acc = simd::f4_zero();
            for (int b = 0; b < blocks; ++b) {
                const simd::F4 scale = simd::f4_mul(weight_scales(b), simd::f4_splat(dx[b]));
                const simd::F4 dots = simd::q8_dot4(r0[b].q, r1[b].q, r2[b].q, r3[b].q, x + (size_t)b * kQ8BlockSize);
                acc = simd::f4_add(acc, simd::f4_mul(dots, scale));
            }
            store(m, acc);
        }
    }
}

}  // namespace

void gemm_nt_q8_q8(int M, int N, int K, const float* A, int lda, const BlockQ8_0* B, float* C, int ldc,
                   bool accumulate, const float* scales4) {
    detail::check_gemm("gemm_nt_q8_q8", M, N, K, lda, K, K, K, ldc);
    detail::check_q8_width("gemm_nt_q8_q8", K);
    if (M == 0 || N == 0) return;
    if (M == 1) {
        gemv_q8_q8(N, K, B, A, C, accumulate, scales4);
        return;
    }
    detail::QuantizedActivations& aq = detail::activations_scratch();
    aq.quantize_rows(A, M, K, lda);
    if (scales4)
        q8_q8_multi_rows<true>(M, N, K / kQ8BlockSize, B, aq, scales4, C, ldc, accumulate);
    else
        q8_q8_multi_rows<false>(M, N, K / kQ8BlockSize, B, aq, nullptr, C, ldc, accumulate);
}

void gemv_q8_q8(int M, int N, const BlockQ8_0* W, const float* x, float* y, bool accumulate, const float* scales4) {
    detail::check_gemv("gemv_q8_q8", M, N, N);
    detail::check_q8_width("gemv_q8_q8", N);
    if (M == 0) return;
    detail::QuantizedActivations& xq = detail::activations_scratch();
    xq.quantize(x, N);
    if (scales4)
        q8_q8_rows<true>(M, N / kQ8BlockSize, W, xq, scales4, y, accumulate);
    else
        q8_q8_rows<false>(M, N / kQ8BlockSize, W, xq, nullptr, y, accumulate);
}

std::vector<float> q8_scales_by4(const BlockQ8_0* W, int M, int N) {
    detail::check_gemv("q8_scales_by4", M, N, N);
    detail::check_q8_width("q8_scales_by4", N);
    const int blocks = N / kQ8BlockSize;
    std::vector<float> out((size_t)(M + 3) / 4 * blocks * 4, 0.0f);
    for (int i = 0; i < M; ++i)
        for (int b = 0; b < blocks; ++b)
            out[((size_t)(i / 4) * blocks + b) * 4 + i % 4] = detail::half_to_float(W[(size_t)i * blocks + b].scale);
    return out;
}

}  // namespace attnlab::kernels::ATTNLAB_KERNEL_TARGET
