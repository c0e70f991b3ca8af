// The first int8 Q8_0 products, one weight row at a time: x quantized to Q8_0 once per call, then per row and
// block an exact int8·int8 dot product scaled by d_w·d_x. kernels::gemv_q8_q8 (4 rows per pass) replaced them
// in the decoders; the kernel benchmark keeps them for comparison (docs/performance.md, "Q8_0 decoding").
#include <cstring>

#include "attnlab/kernels/detail.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/kernels/q8_activations.hpp"
#include "attnlab/kernels/simd.hpp"
#include "variants/variants.hpp"

namespace attnlab::kernels::variants {

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

// y[R] (+)= Σ_b d_w[r,b]·d_x[b]·(q_w[r,b] · q_x[b]); R rows at a time so each x block is loaded once.
template <int R>
void q8_rows(int blocks, const BlockQ8_0* W, const detail::QuantizedActivations& xq, float* y, bool accumulate) {
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

void q8_matvec(int M, int blocks, const BlockQ8_0* W, const detail::QuantizedActivations& xq, float* y, bool accumulate) {
    int i = 0;
    for (; i + 4 <= M; i += 4) q8_rows<4>(blocks, W + (size_t)i * blocks, xq, y + i, accumulate);
    for (; i < M; ++i) q8_rows<1>(blocks, W + (size_t)i * blocks, xq, y + i, accumulate);
}

}  // namespace

void gemv_q8_int8(int M, int N, const BlockQ8_0* W, const float* x, float* y, bool accumulate) {
    detail::check_gemv("gemv_q8", M, N, N);
    detail::check_q8_width("gemv_q8", N);
    if (M == 0) return;
    detail::QuantizedActivations& xq = detail::activations_scratch();
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
    detail::QuantizedActivations& aq = detail::activations_scratch();
    for (int i = 0; i < M; ++i) {
        aq.quantize(A + (size_t)i * lda, K);
        q8_matvec(N, K / kQ8BlockSize, B, aq, C + (size_t)i * ldc, accumulate);
    }
}

}  // namespace attnlab::kernels::variants
