// Q8_0 matrix-vector products with the activations quantized to Q8_0 too (ggml's q8_0·q8_0): x is
// quantized once per call (quantize_q8_0, the rule of the weights), then every 32-block is an exact
// int8·int8 dot product scaled once by d_w·d_x. Reading int8 and multiplying in int16/int32 is what makes
// Q8_0 pay off in wasm: widening each weight to float (kernels::gemv_q8) costs more instructions than the
// multiply itself, and the decoders' GEMVs became compute-bound and slower than f32.
//
//   kernels::gemv_q8_q8        4 weight rows per pass, one 4-lane vector per block for scales and sums
//                              (simd::q8_dot4); what nn::linear uses for one Q8_0 row (the decoders)
//   variants::gemv_q8_int8     the first int8 version, one row at a time (kept for the benchmark)
//   variants::gemm_nt_q8_int8  the same row by row for M rows
//
// Numerics: y differs from W_dequantized · x by the activation rounding (<= d_x/2 per element, d_x =
// max|x_block|/127), the error ggml's q8_0 matmuls have. reference::gemv_q8_q8 quantizes the same way and
// does the same float operations per row (same block order), so it matches gemv_q8_q8 to the last bit up
// to fused multiply-adds.
//
// Measured (bench_kernels gemv, GFLOP/s, 512x2048 | 2048x512): wasm gemv_q8_q8 with q8_scales_by4 20-22 | 23-25
// against gemv_q8 7.3 | 7.2 and f32 gemv 15 | 15; native (AVX2 code) 31 | 40 against 27-32 | 30 and 15 | 15.
// docs/performance.md ("Q8_0 decoding") has the table and the per-token effect.
#include <algorithm>
#include <cstring>
#include <vector>

#include "attnlab/kernels/detail.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/kernels/simd.hpp"
#include "attnlab/kernels/variants.hpp"

namespace attnlab::kernels {

using simd::Vec;

namespace {

// An f16 block scale as float without branches for finite values (the magnitude bits shifted into a
// float's place, then rebiased by 2^112, which also handles subnormals exactly); inf/NaN take the slow path.
inline float scale_to_float(uint16_t h) {
    if ((h & 0x7c00u) == 0x7c00u) return detail::half_to_float(h);
    const uint32_t shifted = uint32_t(h & 0x7fffu) << 13;
    float magnitude;
    std::memcpy(&magnitude, &shifted, sizeof magnitude);
    magnitude *= 5.192296858534828e+33f;  // 2^112
    uint32_t bits;
    std::memcpy(&bits, &magnitude, sizeof bits);
    bits |= uint32_t(h & 0x8000u) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

// x[n] quantized to Q8_0 and widened: int16 values (what the SIMD multiply-add reads) and one float
// scale per block. Buffers reused between calls (single-threaded engine; thread_local to stay safe).
struct QuantizedActivations {
    std::vector<BlockQ8_0> blocks;
    std::vector<int16_t> values;  // [n]
    std::vector<float> scales;    // [n / 32]

    void quantize(const float* x, int n) {
        const int count = n / kQ8BlockSize;
        blocks.resize(count);
        values.resize(n);
        scales.resize(count);
        quantize_q8_0(x, n, blocks.data());
        for (int b = 0; b < count; ++b) {
            scales[b] = detail::half_to_float(blocks[b].scale);
            int16_t* out = values.data() + (size_t)b * kQ8BlockSize;
            for (int j = 0; j < kQ8BlockSize; ++j) out[j] = blocks[b].q[j];
        }
    }
};

QuantizedActivations& activations_scratch() {
    thread_local QuantizedActivations scratch;
    return scratch;
}

// y[R] (+)= Σ_b d_w[r,b]·d_x[b]·(q_w[r,b] · q_x[b]); R rows at a time so each x block is loaded once.
template <int R>
void q8_rows(int blocks, const BlockQ8_0* W, const QuantizedActivations& xq, float* y, bool accumulate) {
    Vec acc[R];
    for (int r = 0; r < R; ++r) acc[r] = simd::zero();
    for (int b = 0; b < blocks; ++b) {
        const int16_t* x = xq.values.data() + (size_t)b * kQ8BlockSize;
        const float dx = xq.scales[b];
        for (int r = 0; r < R; ++r) {
            const BlockQ8_0& block = W[(size_t)r * blocks + b];
            acc[r] = simd::fma(simd::q8_block_dot(block.q, x), simd::splat(scale_to_float(block.scale) * dx), acc[r]);
        }
    }
    for (int r = 0; r < R; ++r) {
        const float sum = simd::hsum(acc[r]);
        y[r] = accumulate ? y[r] + sum : sum;
    }
}

void q8_matvec(int M, int blocks, const BlockQ8_0* W, const QuantizedActivations& xq, float* y, bool accumulate) {
    int i = 0;
    for (; i + 4 <= M; i += 4) q8_rows<4>(blocks, W + (size_t)i * blocks, xq, y + i, accumulate);
    for (; i < M; ++i) q8_rows<1>(blocks, W + (size_t)i * blocks, xq, y + i, accumulate);
}

// ---------------------------------------------------------------------------------------------------------
// y[i..i+4) (+)= W[i..i+4) · x̃, the rows as 4 lanes of one vector: per block one q8_dot4 (exact integer
// sums), the 4 rows' scales (converted from f16 here, or read from q8_scales_by4), one multiply-add. Tail rows
// repeat the last row pointer and only their own lanes are stored.
template <bool kPackedScales>
void q8_q8_rows(int M, int blocks, const BlockQ8_0* W, const QuantizedActivations& xq, const float* scales4,
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

}  // namespace

void gemv_q8_q8(int M, int N, const BlockQ8_0* W, const float* x, float* y, bool accumulate, const float* scales4) {
    detail::check_gemv("gemv_q8_q8", M, N, N);
    detail::check_q8_width("gemv_q8_q8", N);
    if (M == 0) return;
    QuantizedActivations& xq = activations_scratch();
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

namespace variants {

void gemv_q8_int8(int M, int N, const BlockQ8_0* W, const float* x, float* y, bool accumulate) {
    detail::check_gemv("gemv_q8", M, N, N);
    detail::check_q8_width("gemv_q8", N);
    if (M == 0) return;
    QuantizedActivations& xq = activations_scratch();
    xq.quantize(x, N);
    q8_matvec(M, N / kQ8BlockSize, W, xq, y, accumulate);
}

// Row by row through the int8 path (not dequantize + float GEMM), so a row's result does not depend on
// how many rows are batched with it, and equals gemv_q8 on that row.
void gemm_nt_q8_int8(int M, int N, int K, const float* A, int lda, const BlockQ8_0* B, float* C, int ldc,
                bool accumulate) {
    detail::check_gemm("gemm_nt_q8", M, N, K, lda, K, K, K, ldc);
    detail::check_q8_width("gemm_nt_q8", K);
    if (M == 0 || N == 0) return;
    QuantizedActivations& aq = activations_scratch();
    for (int i = 0; i < M; ++i) {
        aq.quantize(A + (size_t)i * lda, K);
        q8_matvec(N, K / kQ8BlockSize, B, aq, C + (size_t)i * ldc, accumulate);
    }
}

}  // namespace variants
}  // namespace attnlab::kernels
