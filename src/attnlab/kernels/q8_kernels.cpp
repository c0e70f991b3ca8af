// Q8_0 matrix-vector products with the activations quantized to Q8_0 too (ggml's q8_0·q8_0): x is
// quantized once per call (quantize_activations_q8: quantize_q8_0's rule on SIMD vectors; the dispatcher does it
// before the pool splits the weight rows, and hands the pieces gemm_q8_q8_quantized), then every 32-block is an exact
// int8·int8 dot product scaled once by d_w·d_x. Reading int8 and multiplying in int16/int32 is what makes
// Q8_0 pay off in wasm: widening each weight to float (kernels::gemv_q8) costs more instructions than the
// multiply itself, and the decoders' GEMVs became compute-bound and slower than f32.
//
//   kernels::gemv_q8_q8        4 weight rows per pass, one 4-lane vector per block for scales and sums
//                              (simd::q8_dot4); what nn::linear uses for one Q8_0 row (the decoders)
//   kernels::gemm_nt_q8_q8     several activation rows (a batched decoder step, nn::linear_batched): each row
//                              exactly its gemv_q8_q8, the weights read from memory once for all rows and
//                              widened once per pair of rows (simd::q8_dot4x2)
//   kernels::gemm_q8_q8_rows4  the same products on weights interleaved four rows at a time
//                              (interleave_q8_rows4): no horizontal sums, each widened quad used by up to 4
//                              activation rows; what wasm runs for several rows (q8_rows4_pays)
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
void q8_q8_rows(int M, int blocks, const BlockQ8_0* W, const int16_t* xv, const float* xscales, const float* scales4,
                float* y, bool accumulate) {
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
            const simd::F4 scale = simd::f4_mul(w_scales, simd::f4_splat(xscales[b]));
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
void q8_q8_multi_rows(int M, int N, int blocks, const BlockQ8_0* W, const int16_t* values, const float* xscales,
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
            const int16_t* xa = values + (size_t)m * K;
            const int16_t* xb = xa + K;
            const float* dxa = xscales + (size_t)m * blocks;
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
            const int16_t* x = values + (size_t)m * K;
            const float* dx = xscales + (size_t)m * blocks;
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

// C[0..MR, i..i+rows) (+)= MR activation rows · one group of 4 interleaved weight rows (wg, its scales sg): per block
// the rows' exact int32 sums, then q8_q8_multi_rows' float operations in its order (d_w·d_x, times the sum, added).
template <int MR>
void q8_rows4_tile(int blocks, const int8_t* wg, const float* sg, const int16_t* values, const float* xscales,
                   float* C, int ldc, int rows, bool accumulate) {
    const int K = blocks * kQ8BlockSize;
    simd::F4 acc[MR];
    for (int r = 0; r < MR; ++r) acc[r] = simd::f4_zero();
    for (int b = 0; b < blocks; ++b) {
        simd::I4 sums[MR];
        for (int r = 0; r < MR; ++r) sums[r] = simd::i4_zero();
        const int8_t* w = wg + (size_t)b * kQ8BlockSize * 4;
        for (int quad = 0; quad < kQ8BlockSize / 4; ++quad) {
            simd::I16x8 lo, hi;
            simd::q8_quad_widen(w + 16 * quad, lo, hi);
            for (int r = 0; r < MR; ++r)
                sums[r] = simd::q8_quad_dot(sums[r], lo, hi, values + (size_t)r * K + (size_t)b * kQ8BlockSize + 4 * quad);
        }
        const simd::F4 w_scales = simd::f4_load(sg + (size_t)b * 4);
        for (int r = 0; r < MR; ++r) {
            const simd::F4 scale = simd::f4_mul(w_scales, simd::f4_splat(xscales[(size_t)r * blocks + b]));
            acc[r] = simd::f4_add(acc[r], simd::f4_mul(simd::i4_to_f4(sums[r]), scale));
        }
    }
    for (int r = 0; r < MR; ++r) {
        float* y = C + (size_t)r * ldc;
        if (rows == 4) {  // a whole group: one vector store (a loop over `rows` became a __memcpy call in wasm)
            simd::f4_store(y, accumulate ? simd::f4_add(simd::f4_load(y), acc[r]) : acc[r]);
            continue;
        }
        alignas(16) float out[4];
        simd::f4_store(out, acc[r]);
        for (int j = 0; j < rows; ++j) y[j] = accumulate ? y[j] + out[j] : out[j];
    }
}

using Rows4Tile = void (*)(int, const int8_t*, const float*, const int16_t*, const float*, float*, int, int, bool);
// Activation rows per pass over one group's quads: 4 rows' int32 sums and float accumulators, the widened quad
// and the broadcasts fit the 16 vector registers V8 gives wasm on x86-64; at 8 rows they spilled, and 32 rows ran
// at 37-41 GFLOP/s instead of 49-53 (bench_kernels interleaved_rows32, Intel Xeon).
constexpr int kRows4Tile = 4;
constexpr Rows4Tile kRows4Tiles[kRows4Tile + 1] = {nullptr, &q8_rows4_tile<1>, &q8_rows4_tile<2>, &q8_rows4_tile<3>,
                                                   &q8_rows4_tile<4>};

// The activations quantized by the target-level entry points below (the dispatcher keeps its own).
detail::QuantizedRows& scratch() {
    thread_local detail::QuantizedRows s;
    return s;
}

}  // namespace

void gemm_q8_q8_quantized(int M, int N, int K, const int16_t* values, const float* xscales, const BlockQ8_0* B,
                          float* C, int ldc, bool accumulate, const float* scales4) {
    if (M <= 0 || N <= 0) return;
    const int blocks = K / kQ8BlockSize;
    if (M == 1) {
        if (scales4)
            q8_q8_rows<true>(N, blocks, B, values, xscales, scales4, C, accumulate);
        else
            q8_q8_rows<false>(N, blocks, B, values, xscales, nullptr, C, accumulate);
    } else if (scales4) {
        q8_q8_multi_rows<true>(M, N, blocks, B, values, xscales, scales4, C, ldc, accumulate);
    } else {
        q8_q8_multi_rows<false>(M, N, blocks, B, values, xscales, nullptr, C, ldc, accumulate);
    }
}

void gemm_q8_q8_rows4(int M, int N, int K, const int16_t* values, const float* xscales, const int8_t* W4,
                      const float* scales4, float* C, int ldc, bool accumulate) {
    detail::check_q8_width("gemm_q8_q8_rows4", K);
    if (M <= 0 || N <= 0) return;
    const int blocks = K / kQ8BlockSize;
    // Group by group of 4 weight rows (2 KiB at K = 512, in L1 for every pass over the activation rows).
    for (int i = 0; i < N; i += 4) {
        const int8_t* wg = W4 + (size_t)(i / 4) * blocks * kQ8BlockSize * 4;
        const float* sg = scales4 + (size_t)(i / 4) * blocks * 4;
        const int rows = std::min(4, N - i);
        for (int m = 0; m < M; m += kRows4Tile) {
            const int tile = std::min(kRows4Tile, M - m);
            kRows4Tiles[tile](blocks, wg, sg, values + (size_t)m * K, xscales + (size_t)m * blocks,
                              C + (size_t)m * ldc + i, ldc, rows, accumulate);
        }
    }
}

bool q8_rows4_pays() {
#if defined(__wasm_simd128__)
    return true;
#else
    return false;
#endif
}

void gemm_nt_q8_q8(int M, int N, int K, const float* A, int lda, const BlockQ8_0* B, float* C, int ldc,
                   bool accumulate, const float* scales4) {
    detail::check_gemm("gemm_nt_q8_q8", M, N, K, lda, K, K, K, ldc);
    detail::check_q8_width("gemm_nt_q8_q8", K);
    if (M == 0 || N == 0) return;
    detail::QuantizedRows& s = scratch();
    s.fit(M, K);
    quantize_activations_q8(M, K, A, lda, s.values.data(), s.scales.data());
    gemm_q8_q8_quantized(M, N, K, s.values.data(), s.scales.data(), B, C, ldc, accumulate, scales4);
}

void gemv_q8_q8(int M, int N, const BlockQ8_0* W, const float* x, float* y, bool accumulate, const float* scales4) {
    detail::check_gemv("gemv_q8_q8", M, N, N);
    detail::check_q8_width("gemv_q8_q8", N);
    if (M == 0) return;
    detail::QuantizedRows& s = scratch();
    s.fit(1, N);
    quantize_activations_q8(1, N, x, N, s.values.data(), s.scales.data());
    // One activation row: q8_q8_rows with y as row 0 of C (ldc unused).
    gemm_q8_q8_quantized(1, M, N, s.values.data(), s.scales.data(), W, y, M, accumulate, scales4);
}

// quantize_q8_0's rule on SIMD vectors, bit for bit (test_kernels checks ties, NaN, infinities and subnormals):
//   amax: max of |x| that skips NaN, as std::fmax does: a lane takes |x| only when |x| > amax (false for NaN);
//   d = amax/127 and id = 1/d in scalar float, the same operations as quantize_q8_0;
//   q: roundf(x·id) clamped to ±127, NaN to 0. x·id is first clamped to ±128 (rounding then clamping to ±127
//   gives the same for anything beyond), so its truncation t converts exactly and x·id − t is exact; rounding
//   half away from zero is then t ± 1 where that remainder reaches ±0.5. (SIMD128's nearest rounds ties to even,
//   and Emscripten emulates SSE2's float -> int conversion lane by lane: the reason for trunc_sat here.)
// The scalar version spent 7% of a q8_0 paragraph translation in roundf (docs/performance.md).
namespace {

inline void finish_scale(float amax, float& id, float& scale) {
    const float d = amax / 127.0f;
    id = d != 0.0f ? 1.0f / d : 0.0f;
    scale = detail::half_to_float(f32_to_f16(d));
}

void quantize_block(const float* x, int16_t* out, float& scale) {
#if defined(__wasm_simd128__)
    const v128_t abs_mask = wasm_i32x4_splat(0x7fffffff);
    v128_t amax4 = wasm_f32x4_splat(0.0f);
    for (int j = 0; j < kQ8BlockSize; j += 4) {
        const v128_t a = wasm_v128_and(wasm_v128_load(x + j), abs_mask);
        amax4 = wasm_v128_bitselect(a, amax4, wasm_f32x4_gt(a, amax4));
    }
    const float amax = std::max(std::max(wasm_f32x4_extract_lane(amax4, 0), wasm_f32x4_extract_lane(amax4, 1)),
                                std::max(wasm_f32x4_extract_lane(amax4, 2), wasm_f32x4_extract_lane(amax4, 3)));
    float id;
    finish_scale(amax, id, scale);
    const v128_t vid = wasm_f32x4_splat(id), lo = wasm_f32x4_splat(-128.0f), hi = wasm_f32x4_splat(128.0f),
                 half = wasm_f32x4_splat(0.5f), minus_half = wasm_f32x4_splat(-0.5f);
    auto round4 = [&](const float* p) {
        const v128_t v = wasm_f32x4_mul(wasm_v128_load(p), vid);
        const v128_t c = wasm_v128_and(wasm_f32x4_min(wasm_f32x4_max(v, lo), hi), wasm_f32x4_eq(v, v));
        const v128_t t = wasm_i32x4_trunc_sat_f32x4(c);
        const v128_t rest = wasm_f32x4_sub(c, wasm_f32x4_convert_i32x4(t));
        // The comparisons are all-ones (-1) where true.
        return wasm_i32x4_add(wasm_i32x4_sub(t, wasm_f32x4_ge(rest, half)), wasm_f32x4_le(rest, minus_half));
    };
    const v128_t limit = wasm_i16x8_splat(127), neg_limit = wasm_i16x8_splat(-127);
    for (int j = 0; j < kQ8BlockSize; j += 8) {
        const v128_t q = wasm_i16x8_narrow_i32x4(round4(x + j), round4(x + j + 4));
        wasm_v128_store(out + j, wasm_i16x8_min(wasm_i16x8_max(q, neg_limit), limit));
    }
#elif defined(__SSE2__)
    const __m128 abs_mask = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
    __m128 amax4 = _mm_setzero_ps();
    // maxps returns its second operand when either is NaN: a NaN |x| leaves amax as it was.
    for (int j = 0; j < kQ8BlockSize; j += 4) amax4 = _mm_max_ps(_mm_and_ps(_mm_loadu_ps(x + j), abs_mask), amax4);
    alignas(16) float lanes[4];
    _mm_store_ps(lanes, amax4);
    const float amax = std::max(std::max(lanes[0], lanes[1]), std::max(lanes[2], lanes[3]));
    float id;
    finish_scale(amax, id, scale);
    const __m128 vid = _mm_set1_ps(id), lo = _mm_set1_ps(-128.0f), hi = _mm_set1_ps(128.0f), half = _mm_set1_ps(0.5f),
                 minus_half = _mm_set1_ps(-0.5f);
    auto round4 = [&](const float* p) {
        const __m128 v = _mm_mul_ps(_mm_loadu_ps(p), vid);
        // max/min with v first: a NaN v gives the bound, then the ordered-equal mask makes it 0.
        const __m128 c = _mm_and_ps(_mm_min_ps(_mm_max_ps(v, lo), hi), _mm_cmpeq_ps(v, v));
        const __m128i t = _mm_cvttps_epi32(c);
        const __m128 rest = _mm_sub_ps(c, _mm_cvtepi32_ps(t));
        return _mm_add_epi32(_mm_sub_epi32(t, _mm_castps_si128(_mm_cmpge_ps(rest, half))),
                             _mm_castps_si128(_mm_cmple_ps(rest, minus_half)));
    };
    const __m128i limit = _mm_set1_epi16(127), neg_limit = _mm_set1_epi16(-127);
    for (int j = 0; j < kQ8BlockSize; j += 8) {
        const __m128i q = _mm_packs_epi32(round4(x + j), round4(x + j + 4));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j), _mm_min_epi16(_mm_max_epi16(q, neg_limit), limit));
    }
#else
    BlockQ8_0 block;
    quantize_q8_0(x, kQ8BlockSize, &block);
    scale = detail::half_to_float(block.scale);
    for (int j = 0; j < kQ8BlockSize; ++j) out[j] = block.q[j];
#endif
}

}  // namespace

void quantize_activations_q8(int rows, int n, const float* x, int ldx, int16_t* values, float* scales) {
    detail::check_q8_width("quantize_activations_q8", n);
    const int blocks = n / kQ8BlockSize;
    for (int r = 0; r < rows; ++r)
        for (int b = 0; b < blocks; ++b)
            quantize_block(x + (size_t)r * ldx + (size_t)b * kQ8BlockSize, values + (size_t)r * n + (size_t)b * kQ8BlockSize,
                           scales[(size_t)r * blocks + b]);
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
