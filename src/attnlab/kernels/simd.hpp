#pragma once
// The one vector abstraction of the kernels (ggml-style): a float vector of the compiled arch and the
// handful of operations the kernels need. Everything SIMD in kernels.cpp goes through here.
//
//   native (-march=native): xsimd's best arch, AVX-512 (16 floats) or AVX2+FMA (8 floats)
//   wasm (-msimd128 -msse2): xsimd's SSE2 backend (4 floats), which emcc lowers to SIMD128;
//                            fma becomes mul+add since SIMD128 has no fused multiply-add.
#include <cstdint>
#include <cstring>

#include <xsimd/xsimd.hpp>

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#elif defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace attnlab::simd {

using Vec = xsimd::batch<float>;
constexpr int kWidth = int(Vec::size);

inline Vec load(const float* p) { return Vec::load_unaligned(p); }
inline void store(float* p, const Vec& v) { v.store_unaligned(p); }
inline Vec splat(float x) { return Vec(x); }
inline Vec zero() { return Vec(0.0f); }
// a * b + c (fused where the arch has it)
inline Vec fma(const Vec& a, const Vec& b, const Vec& c) { return xsimd::fma(a, b, c); }
inline float hsum(const Vec& v) { return xsimd::hadd(v); }
inline float hmax(const Vec& v) {
    alignas(64) float lanes[kWidth];
    v.store_aligned(lanes);
    float m = lanes[0];
    for (int i = 1; i < kWidth; ++i) m = lanes[i] > m ? lanes[i] : m;
    return m;
}

// The first n (< kWidth) floats of p, the other lanes zero; never touches p[n..].
inline Vec load_partial(const float* p, int n, float fill = 0.0f) {
    alignas(64) float lanes[kWidth];
    for (int i = 0; i < kWidth; ++i) lanes[i] = i < n ? p[i] : fill;
    return Vec::load_aligned(lanes);
}
inline void store_partial(float* p, const Vec& v, int n) {
    alignas(64) float lanes[kWidth];
    v.store_aligned(lanes);
    std::memcpy(p, lanes, sizeof(float) * n);
}

#if defined(__wasm_simd128__)
// i32 lanes known to fit in 22 bits -> f32, as (bits of 1.5·2^23 + i) - 1.5·2^23. Not f32x4.convert_i32x4:
// LLVM 14 folds the sign extensions before it into a sitofp from <4 x i16>, which the wasm backend
// scalarizes lane by lane (gemv_q8 ran at scalar speed).
inline v128_t small_i32_to_f32(v128_t i) {
    return wasm_f32x4_sub(wasm_i32x4_add(i, wasm_i32x4_splat(0x4B400000)), wasm_f32x4_splat(12582912.0f));
}
#endif

// kWidth signed bytes converted to floats (the Q8_0 weights).
inline Vec load_i8(const int8_t* q) {
#if defined(__wasm_simd128__)
    const v128_t i8 = wasm_v128_load32_zero(q);  // exactly 4 bytes: never reads past a block
    return Vec(__m128(small_i32_to_f32(wasm_i32x4_extend_low_i16x8(wasm_i16x8_extend_low_i8x16(i8)))));
#elif XSIMD_WITH_AVX512F
    static_assert(kWidth == 16, "xsimd picked an AVX-512 arch");
    return Vec(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)))));
#elif XSIMD_WITH_AVX2
    static_assert(kWidth == 8, "xsimd picked an AVX2 arch");
    return Vec(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q)))));
#else
    alignas(64) float lanes[kWidth];
    for (int i = 0; i < kWidth; ++i) lanes[i] = float(q[i]);
    return Vec::load_aligned(lanes);
#endif
}

// A whole Q8_0 block (32 bytes) as 32 / kWidth float vectors.
constexpr int kQ8Vecs = 32 / kWidth;
inline void load_q8_block(const int8_t* q, Vec* out) {
#if defined(__wasm_simd128__)
    for (int half = 0; half < 2; ++half) {
        const v128_t i8 = wasm_v128_load(q + 16 * half);
        const v128_t lo = wasm_i16x8_extend_low_i8x16(i8), hi = wasm_i16x8_extend_high_i8x16(i8);
        out[4 * half + 0] = Vec(__m128(small_i32_to_f32(wasm_i32x4_extend_low_i16x8(lo))));
        out[4 * half + 1] = Vec(__m128(small_i32_to_f32(wasm_i32x4_extend_high_i16x8(lo))));
        out[4 * half + 2] = Vec(__m128(small_i32_to_f32(wasm_i32x4_extend_low_i16x8(hi))));
        out[4 * half + 3] = Vec(__m128(small_i32_to_f32(wasm_i32x4_extend_high_i16x8(hi))));
    }
#else
    for (int v = 0; v < kQ8Vecs; ++v) out[v] = load_i8(q + v * kWidth);
#endif
}

// Σ_j w[j]·x[j] over one Q8_0 block (32 int8 weights, 32 activations already quantized and widened to
// int16), as float lanes whose sum is the exact integer dot product (|sum| <= 32·127·127 fits a float).
// ggml's int8 path: multiply-add pairs of int16 into int32 lanes (pmaddwd / i32x4.dot_i16x8_s), one
// conversion to float per block instead of one per weight.
inline Vec q8_block_dot(const int8_t* w, const int16_t* x) {
#if defined(__wasm_simd128__)
    const v128_t w0 = wasm_v128_load(w), w1 = wasm_v128_load(w + 16);
    v128_t sum = wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(w0), wasm_v128_load(x));
    sum = wasm_i32x4_add(sum, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(w0), wasm_v128_load(x + 8)));
    sum = wasm_i32x4_add(sum, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(w1), wasm_v128_load(x + 16)));
    sum = wasm_i32x4_add(sum, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(w1), wasm_v128_load(x + 24)));
    return Vec(__m128(wasm_f32x4_convert_i32x4(sum)));
#elif XSIMD_WITH_AVX512F && defined(__AVX512BW__)
    static_assert(kWidth == 16, "xsimd picked an AVX-512 arch");
    const __m512i w16 = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w)));
    const __m512i sum = _mm512_madd_epi16(w16, _mm512_loadu_si512(x));
    return Vec(_mm512_cvtepi32_ps(sum));
#elif XSIMD_WITH_AVX2 && !XSIMD_WITH_AVX512F
    static_assert(kWidth == 8, "xsimd picked an AVX2 arch");
    const __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
    const __m256i w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 16)));
    const __m256i sum =
        _mm256_add_epi32(_mm256_madd_epi16(w0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x))),
                         _mm256_madd_epi16(w1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 16))));
    return Vec(_mm256_cvtepi32_ps(sum));
#elif defined(__SSE2__) && !XSIMD_WITH_AVX
    static_assert(kWidth == 4, "xsimd picked an SSE arch");
    __m128i sum = _mm_setzero_si128();
    for (int half = 0; half < 2; ++half) {
        const __m128i w8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 16 * half));
        // int8 -> int16 by duplicating each byte into both halves of a lane and shifting arithmetically.
        const __m128i lo = _mm_srai_epi16(_mm_unpacklo_epi8(w8, w8), 8), hi = _mm_srai_epi16(_mm_unpackhi_epi8(w8, w8), 8);
        const __m128i* xv = reinterpret_cast<const __m128i*>(x + 16 * half);
        sum = _mm_add_epi32(sum, _mm_madd_epi16(lo, _mm_loadu_si128(xv)));
        sum = _mm_add_epi32(sum, _mm_madd_epi16(hi, _mm_loadu_si128(xv + 1)));
    }
    return Vec(_mm_cvtepi32_ps(sum));
#else
    alignas(64) float lanes[kWidth] = {};
    for (int j = 0; j < 32; ++j) lanes[j % kWidth] += float(int32_t(w[j]) * int32_t(x[j]));
    return Vec::load_aligned(lanes);
#endif
}

inline const char* name() {
#if defined(__wasm_simd128__)
    return "sse2 (wasm simd128)";
#else
    if constexpr (kWidth == 16) return "avx512";
    if constexpr (kWidth == 8) {
#if defined(__FMA__)
        return "avx2+fma";
#else
        return "avx";
#endif
    }
    return "sse (4 lanes)";
#endif
}

}  // namespace attnlab::simd
