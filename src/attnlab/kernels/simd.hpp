#pragma once
// The one vector abstraction of the kernels (ggml-style): a float vector of the compiled arch and the
// handful of operations the kernels need. Everything SIMD in the kernels goes through here.
//
//   x86-64, one kernel target per set of flags (CMakeLists.txt): baseline (SSE2, 4 floats), avx2 (AVX2+FMA+F16C,
//                            8 floats), avx512 (AVX-512 F/BW/DQ/VL, 16 floats): xsimd's best arch for each
//   wasm (-msimd128 -msse2): xsimd's SSE2 backend (4 floats), which emcc lowers to SIMD128;
//                            fma becomes mul+add since SIMD128 has no fused multiply-add.
#include <cstdint>
#include <cstring>

#include <xsimd/xsimd.hpp>

#include "attnlab/kernels/detail.hpp"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#if defined(__SSE2__)
#include <emmintrin.h>  // Emscripten's SSE2 on SIMD128: where it runs faster in V8 than the SIMD128 spelling
#endif
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
// kWidth IEEE halves -> floats, exactly. One instruction per vector with F16C natively; wasm has no half
// conversion, and the integer bit arithmetic below costs more than the bytes it saves (kernels::keep_f16_weights()).
inline Vec load_f16(const uint16_t* p) {
#if !defined(__wasm_simd128__) && defined(__AVX512F__)
    static_assert(kWidth == 16, "xsimd picks 16-float vectors with AVX-512");
    return Vec(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
#elif !defined(__wasm_simd128__) && defined(__F16C__) && defined(__AVX__)
    static_assert(kWidth == 8, "xsimd picks 8-float vectors with AVX");
    return Vec(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
#elif defined(__wasm_simd128__)
    // Bit arithmetic: the magnitude's bits moved into a float's place, scaled by 2^112 to rebias the exponent
    // (exact for finite halves; inf and NaN come out finite, so this path suits finite weights only).
    const v128_t h = wasm_u32x4_load16x4(p);
    const v128_t sign = wasm_i32x4_shl(wasm_v128_and(h, wasm_i32x4_splat(0x8000)), 16);
    const v128_t magnitude = wasm_i32x4_shl(wasm_v128_and(h, wasm_i32x4_splat(0x7fff)), 13);
    const v128_t value = wasm_f32x4_mul(magnitude, wasm_f32x4_splat(5.192296858534828e33f));   // 2^112
    return Vec(static_cast<__m128>(wasm_v128_or(value, sign)));
#else
    alignas(64) float lanes[kWidth];
    for (int i = 0; i < kWidth; ++i) lanes[i] = kernels::detail::half_to_float(p[i]);
    return Vec::load_aligned(lanes);
#endif
}

// e^x and tanh x. Natively xsimd's. In wasm, xsimd's SSE2 code for them converts float to int through intrinsics
// Emscripten emulates lane by lane (docs/performance.md, Kernel notes, "e^x and tanh in wasm"), so wasm has its own:
// e^x is Cephes's expf in SIMD128's cheapest instructions (V8 on x86 lowers f32x4.min/max and trunc_sat to
// several each): pmin/pmax clamp (NaN stays NaN), n = round(x·log2 e) and 2^n come from one add of 1.5·2^23
// (ties to even, as f32x4.nearest rounds, with n's integer in the float's low bits), and andnot and pmax set the
// out-of-range lanes. Within 2 ulp of e^x on [-87.33, 88.0] (tests/cpp/test_simd.cpp); 0 below (exp(-inf) = 0
// exactly, as the softmax masks need), +inf above 88.72, and exp(88.02) in between (127 ulp off at 88.02), where
// no caller looks (softmax and log-softmax take x − max ≤ 0, sigmoid 1/(1 + e^-x)).
#if defined(__wasm_simd128__)
inline Vec exp(const Vec& v) {
    const v128_t x0 = static_cast<v128_t>(static_cast<__m128>(v));
    const v128_t lo = wasm_f32x4_splat(-87.3365447504f), hi = wasm_f32x4_splat(88.02f);
    v128_t x = wasm_f32x4_pmin(wasm_f32x4_pmax(x0, lo), hi);
    const v128_t round_magic = wasm_f32x4_splat(12582912.0f);  // 1.5·2^23
    const v128_t shifted = wasm_f32x4_add(wasm_f32x4_mul(x, wasm_f32x4_splat(1.44269504088896341f)), round_magic);
    const v128_t n = wasm_f32x4_sub(shifted, round_magic);
    x = wasm_f32x4_sub(x, wasm_f32x4_mul(n, wasm_f32x4_splat(0.693359375f)));   // ln 2 in two parts
    x = wasm_f32x4_sub(x, wasm_f32x4_mul(n, wasm_f32x4_splat(-2.12194440e-4f)));
    v128_t y = wasm_f32x4_splat(1.9875691500e-4f);
    for (float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f})
        y = wasm_f32x4_add(wasm_f32x4_mul(y, x), wasm_f32x4_splat(c));
    y = wasm_f32x4_add(wasm_f32x4_add(wasm_f32x4_mul(y, wasm_f32x4_mul(x, x)), x), wasm_f32x4_splat(1.0f));
    // 2^n: n + 127 in the exponent field, from n's integer bits in `shifted` (0x4B400000 + n)
    const v128_t pow2n = wasm_i32x4_shl(wasm_i32x4_add(shifted, wasm_i32x4_splat(127 - 0x4B400000)), 23);
    y = wasm_f32x4_mul(y, pow2n);
    y = wasm_v128_andnot(y, wasm_f32x4_lt(x0, lo));                                          // 0 below
    const v128_t overflow = wasm_f32x4_gt(x0, wasm_f32x4_splat(88.7228391f));
    y = wasm_f32x4_pmax(y, wasm_v128_and(overflow, wasm_f32x4_splat(__builtin_inff())));      // +inf above (y ≥ 0)
    return Vec(static_cast<__m128>(y));
}
inline Vec tanh(const Vec& v) {
    // x·P(x²)/Q(x²), near-minimax in relative error on |x| ≤ 9.0109 (float32's tanh is ±1 beyond), x clamped
    // to ±9.05 (where the rational reaches 1) and the result capped at ±1: one division and no e^x. The fit and
    // the float32 error over every input, within 6 ulp: python/attnlab/golden/fit_tanh.py.
    const v128_t limit = wasm_f32x4_splat(9.05f), one = wasm_f32x4_splat(1.0f);
    const v128_t x = wasm_f32x4_pmin(wasm_f32x4_pmax(static_cast<v128_t>(static_cast<__m128>(v)),
                                                     wasm_f32x4_neg(limit)), limit);
    const v128_t z = wasm_f32x4_mul(x, x);
    v128_t p = wasm_f32x4_splat(-8.459919099e-14f);
    for (float c : {5.266930295e-11f, -2.020270351e-08f, 1.114882434e-05f, 3.103435505e-03f, 1.308354437e-01f, 1.0f})
        p = wasm_f32x4_add(wasm_f32x4_mul(p, z), wasm_f32x4_splat(c));
    v128_t q = wasm_f32x4_splat(2.545384923e-04f);
    for (float c : {2.449310757e-02f, 4.641687274e-01f, 1.0f})
        q = wasm_f32x4_add(wasm_f32x4_mul(q, z), wasm_f32x4_splat(c));
    const v128_t y = wasm_f32x4_div(wasm_f32x4_mul(x, p), q);
    return Vec(static_cast<__m128>(wasm_f32x4_pmin(wasm_f32x4_pmax(y, wasm_f32x4_neg(one)), one)));
}
#else
inline Vec exp(const Vec& v) { return xsimd::exp(v); }
inline Vec tanh(const Vec& v) { return xsimd::tanh(v); }
#endif

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

#if defined(__wasm_simd128__) || (defined(__SSE2__) && !XSIMD_WITH_AVX)
// Four 4-lane vectors (rows) transposed in place: lane i of row r becomes lane r of row i. Four-lane targets only
// (SSE2 and wasm, where the packed GEMM packs 4 rows at a time); eight shuffles.
inline void transpose4(Vec& a, Vec& b, Vec& c, Vec& d) {
#if defined(__wasm_simd128__)
    const v128_t A = v128_t(__m128(a)), B = v128_t(__m128(b)), C = v128_t(__m128(c)), D = v128_t(__m128(d));
    const v128_t ab_low = wasm_i32x4_shuffle(A, B, 0, 4, 1, 5), ab_high = wasm_i32x4_shuffle(A, B, 2, 6, 3, 7);
    const v128_t cd_low = wasm_i32x4_shuffle(C, D, 0, 4, 1, 5), cd_high = wasm_i32x4_shuffle(C, D, 2, 6, 3, 7);
    a = Vec(__m128(wasm_i32x4_shuffle(ab_low, cd_low, 0, 1, 4, 5)));
    b = Vec(__m128(wasm_i32x4_shuffle(ab_low, cd_low, 2, 3, 6, 7)));
    c = Vec(__m128(wasm_i32x4_shuffle(ab_high, cd_high, 0, 1, 4, 5)));
    d = Vec(__m128(wasm_i32x4_shuffle(ab_high, cd_high, 2, 3, 6, 7)));
#else
    __m128 A = a, B = b, C = c, D = d;
    _MM_TRANSPOSE4_PS(A, B, C, D);
    a = Vec(A);
    b = Vec(B);
    c = Vec(C);
    d = Vec(D);
#endif
}
#define ATTNLAB_SIMD_HAS_TRANSPOSE4 1
#else
#define ATTNLAB_SIMD_HAS_TRANSPOSE4 0
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

// ---- four weight rows at once: the int8 Q8_0 x Q8_0 GEMV (kernels::gemv_q8_q8) ------------------------
// One block of 4 rows meets one block of x: 4 exact int32 dot products, reduced across lanes into ONE
// 4-lane vector (lane r = row r), so the f16 scales, the int -> float conversion and the accumulation are
// done once per 4 rows instead of once per row. 128-bit everywhere (the sums are 4 lanes natively too);
// natively memory-bound, so wider registers would not help.
#if defined(__wasm_simd128__)
using F4 = v128_t;
inline F4 f4_zero() { return wasm_f32x4_splat(0.0f); }
inline F4 f4_splat(float x) { return wasm_f32x4_splat(x); }
inline F4 f4_mul(F4 a, F4 b) { return wasm_f32x4_mul(a, b); }
inline F4 f4_add(F4 a, F4 b) { return wasm_f32x4_add(a, b); }
inline void f4_store(float* p, F4 v) { wasm_v128_store(p, v); }
inline F4 f4_load(const float* p) { return wasm_v128_load(p); }
#elif defined(__SSE2__)
using F4 = __m128;
inline F4 f4_zero() { return _mm_setzero_ps(); }
inline F4 f4_splat(float x) { return _mm_set1_ps(x); }
inline F4 f4_mul(F4 a, F4 b) { return _mm_mul_ps(a, b); }
inline F4 f4_add(F4 a, F4 b) { return _mm_add_ps(a, b); }
inline void f4_store(float* p, F4 v) { _mm_storeu_ps(p, v); }
inline F4 f4_load(const float* p) { return _mm_loadu_ps(p); }
#else
struct F4 {
    float v[4];
};
inline F4 f4_zero() { return F4{{0, 0, 0, 0}}; }
inline F4 f4_splat(float x) { return F4{{x, x, x, x}}; }
inline F4 f4_mul(F4 a, F4 b) { return F4{{a.v[0] * b.v[0], a.v[1] * b.v[1], a.v[2] * b.v[2], a.v[3] * b.v[3]}}; }
inline F4 f4_add(F4 a, F4 b) { return F4{{a.v[0] + b.v[0], a.v[1] + b.v[1], a.v[2] + b.v[2], a.v[3] + b.v[3]}}; }
inline void f4_store(float* p, F4 v) { std::memcpy(p, v.v, sizeof v.v); }
inline F4 f4_load(const float* p) {
    F4 v;
    std::memcpy(v.v, p, sizeof v.v);
    return v;
}
#endif

// Four IEEE halves -> floats, exact for every value (subnormals, inf, NaN) without branches: the magnitude
// bits moved into a float's place and rebiased by multiplying with 2^112 (which also normalizes half
// subnormals), then the sign, and exponent 31 (inf/NaN) forced to 255.
inline F4 f16x4_to_f32(uint16_t h0, uint16_t h1, uint16_t h2, uint16_t h3) {
#if defined(__wasm_simd128__)
    const v128_t h = wasm_i32x4_make(h0, h1, h2, h3);
    const v128_t magnitude = wasm_i32x4_shl(wasm_v128_and(h, wasm_i32x4_splat(0x7fff)), 13);
    const v128_t scaled = wasm_f32x4_mul(magnitude, wasm_f32x4_splat(5.192296858534828e+33f));  // 2^112
    const v128_t sign = wasm_i32x4_shl(wasm_v128_and(h, wasm_i32x4_splat(0x8000)), 16);
    const v128_t exponent = wasm_v128_and(h, wasm_i32x4_splat(0x7c00));
    const v128_t special = wasm_v128_and(wasm_i32x4_eq(exponent, wasm_i32x4_splat(0x7c00)), wasm_i32x4_splat(0x7f800000));
    return wasm_v128_or(wasm_v128_or(scaled, sign), special);
#elif defined(__SSE2__)
    const __m128i h = _mm_set_epi32(h3, h2, h1, h0);
    const __m128i magnitude = _mm_slli_epi32(_mm_and_si128(h, _mm_set1_epi32(0x7fff)), 13);
    const __m128 scaled = _mm_mul_ps(_mm_castsi128_ps(magnitude), _mm_set1_ps(5.192296858534828e+33f));
    const __m128i sign = _mm_slli_epi32(_mm_and_si128(h, _mm_set1_epi32(0x8000)), 16);
    const __m128i exponent = _mm_and_si128(h, _mm_set1_epi32(0x7c00));
    const __m128i special = _mm_and_si128(_mm_cmpeq_epi32(exponent, _mm_set1_epi32(0x7c00)), _mm_set1_epi32(0x7f800000));
    return _mm_or_ps(_mm_or_ps(scaled, _mm_castsi128_ps(sign)), _mm_castsi128_ps(special));
#else
    const uint16_t h[4] = {h0, h1, h2, h3};
    F4 out;
    for (int i = 0; i < 4; ++i) {
        uint32_t magnitude = uint32_t(h[i] & 0x7fffu) << 13;
        float f;
        std::memcpy(&f, &magnitude, sizeof f);
        f *= 5.192296858534828e+33f;
        uint32_t bits;
        std::memcpy(&bits, &f, sizeof bits);
        bits |= uint32_t(h[i] & 0x8000u) << 16;
        if ((h[i] & 0x7c00u) == 0x7c00u) bits |= 0x7f800000u;
        std::memcpy(&out.v[i], &bits, sizeof f);
    }
    return out;
#endif
}

// Lane r = Σ_j w[r][j]·x[j] over one block (32 int8 weights of row r, 32 activations quantized to int8 and
// widened to int16), exact (|sum| <= 32·128·127 < 2^24, so also exact as a float). The products are summed
// in int32 by pmaddwd / i32x4.dot_i16x8_s, the instruction that makes the int8 path cheaper than widening
// every weight to float.
inline F4 q8_dot4(const int8_t* w0, const int8_t* w1, const int8_t* w2, const int8_t* w3, const int16_t* x) {
#if defined(__wasm_simd128__)
    const v128_t x0 = wasm_v128_load(x), x1 = wasm_v128_load(x + 8), x2 = wasm_v128_load(x + 16),
                 x3 = wasm_v128_load(x + 24);
    auto row = [&](const int8_t* w) {
        const v128_t a = wasm_v128_load(w), b = wasm_v128_load(w + 16);
        // (Widening by shifts of the bytes seen as int16 lanes, x in even/odd order, measured 7% slower in V8.)
        const v128_t s0 = wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(a), x0),
                                         wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(a), x1));
        const v128_t s1 = wasm_i32x4_add(wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(b), x2),
                                         wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(b), x3));
        return wasm_i32x4_add(s0, s1);
    };
    const v128_t s0 = row(w0), s1 = row(w1), s2 = row(w2), s3 = row(w3);
    // 4x4 transpose-and-add: [a0+a2, b0+b2, a1+a3, b1+b3], then the halves of rows 0|1 and 2|3.
    const v128_t s01 = wasm_i32x4_add(wasm_i32x4_shuffle(s0, s1, 0, 4, 1, 5), wasm_i32x4_shuffle(s0, s1, 2, 6, 3, 7));
    const v128_t s23 = wasm_i32x4_add(wasm_i32x4_shuffle(s2, s3, 0, 4, 1, 5), wasm_i32x4_shuffle(s2, s3, 2, 6, 3, 7));
    const v128_t sum = wasm_i32x4_add(wasm_i32x4_shuffle(s01, s23, 0, 1, 4, 5), wasm_i32x4_shuffle(s01, s23, 2, 3, 6, 7));
    return wasm_f32x4_convert_i32x4(sum);
#elif defined(__AVX2__)
    const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
    const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 16));
    auto row = [&](const int8_t* w) {
        const __m256i w8 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
        const __m256i lo = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(w8));
        const __m256i hi = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(w8, 1));
        return _mm256_add_epi32(_mm256_madd_epi16(lo, x0), _mm256_madd_epi16(hi, x1));
    };
    // hadd twice leaves [r0,r1,r2,r3] partial sums in each 128-bit half; add the halves.
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(row(w0), row(w1)), _mm256_hadd_epi32(row(w2), row(w3)));
    const __m128i sum = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    return _mm_cvtepi32_ps(sum);
#elif defined(__SSE2__)
    const __m128i* xv = reinterpret_cast<const __m128i*>(x);
    const __m128i x0 = _mm_loadu_si128(xv), x1 = _mm_loadu_si128(xv + 1), x2 = _mm_loadu_si128(xv + 2),
                  x3 = _mm_loadu_si128(xv + 3);
    auto row = [&](const int8_t* w) {
        const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w));
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 16));
        // int8 -> int16: each byte duplicated into both halves of a lane, then shifted down arithmetically.
        auto lo = [](__m128i v) { return _mm_srai_epi16(_mm_unpacklo_epi8(v, v), 8); };
        auto hi = [](__m128i v) { return _mm_srai_epi16(_mm_unpackhi_epi8(v, v), 8); };
        return _mm_add_epi32(_mm_add_epi32(_mm_madd_epi16(lo(a), x0), _mm_madd_epi16(hi(a), x1)),
                             _mm_add_epi32(_mm_madd_epi16(lo(b), x2), _mm_madd_epi16(hi(b), x3)));
    };
    const __m128i s0 = row(w0), s1 = row(w1), s2 = row(w2), s3 = row(w3);
    const __m128i s01 = _mm_add_epi32(_mm_unpacklo_epi32(s0, s1), _mm_unpackhi_epi32(s0, s1));
    const __m128i s23 = _mm_add_epi32(_mm_unpacklo_epi32(s2, s3), _mm_unpackhi_epi32(s2, s3));
    return _mm_cvtepi32_ps(_mm_add_epi32(_mm_unpacklo_epi64(s01, s23), _mm_unpackhi_epi64(s01, s23)));
#else
    const int8_t* rows[4] = {w0, w1, w2, w3};
    F4 out;
    for (int r = 0; r < 4; ++r) {
        int32_t sum = 0;
        for (int j = 0; j < 32; ++j) sum += int32_t(rows[r][j]) * int32_t(x[j]);
        out.v[r] = float(sum);
    }
    return out;
#endif
}

// q8_dot4 for two activation rows at once (a and b, each 32 int16 values of one block): each weight row is loaded
// and widened once for both, the int8 -> int16 work that makes up a quarter of q8_dot4. The multi-row int8 GEMM
// (kernels::gemm_nt_q8_q8) runs it on pairs of rows; the sums are q8_dot4's, exactly.
inline void q8_dot4x2(const int8_t* w0, const int8_t* w1, const int8_t* w2, const int8_t* w3, const int16_t* a,
                      const int16_t* b, F4& dots_a, F4& dots_b) {
#if defined(__wasm_simd128__)
    auto row = [&](const int8_t* w, v128_t& sum_a, v128_t& sum_b) {
        sum_a = wasm_i32x4_splat(0);
        sum_b = wasm_i32x4_splat(0);
        for (int half = 0; half < 2; ++half) {
            const v128_t w8 = wasm_v128_load(w + 16 * half);
            const v128_t lo = wasm_i16x8_extend_low_i8x16(w8), hi = wasm_i16x8_extend_high_i8x16(w8);
            const int16_t* xa = a + 16 * half;
            const int16_t* xb = b + 16 * half;
            sum_a = wasm_i32x4_add(sum_a, wasm_i32x4_add(wasm_i32x4_dot_i16x8(lo, wasm_v128_load(xa)),
                                                         wasm_i32x4_dot_i16x8(hi, wasm_v128_load(xa + 8))));
            sum_b = wasm_i32x4_add(sum_b, wasm_i32x4_add(wasm_i32x4_dot_i16x8(lo, wasm_v128_load(xb)),
                                                         wasm_i32x4_dot_i16x8(hi, wasm_v128_load(xb + 8))));
        }
    };
    auto reduce = [](v128_t s0, v128_t s1, v128_t s2, v128_t s3) {
        const v128_t s01 = wasm_i32x4_add(wasm_i32x4_shuffle(s0, s1, 0, 4, 1, 5), wasm_i32x4_shuffle(s0, s1, 2, 6, 3, 7));
        const v128_t s23 = wasm_i32x4_add(wasm_i32x4_shuffle(s2, s3, 0, 4, 1, 5), wasm_i32x4_shuffle(s2, s3, 2, 6, 3, 7));
        return wasm_f32x4_convert_i32x4(
            wasm_i32x4_add(wasm_i32x4_shuffle(s01, s23, 0, 1, 4, 5), wasm_i32x4_shuffle(s01, s23, 2, 3, 6, 7)));
    };
    v128_t a0, a1, a2, a3, b0, b1, b2, b3;
    row(w0, a0, b0);
    row(w1, a1, b1);
    row(w2, a2, b2);
    row(w3, a3, b3);
    dots_a = reduce(a0, a1, a2, a3);
    dots_b = reduce(b0, b1, b2, b3);
#elif defined(__AVX2__)
    const __m256i a0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
    const __m256i a1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 16));
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16));
    __m256i sa[4], sb[4];
    const int8_t* rows[4] = {w0, w1, w2, w3};
    for (int r = 0; r < 4; ++r) {
        const __m256i w8 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r]));
        const __m256i lo = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(w8));
        const __m256i hi = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(w8, 1));
        sa[r] = _mm256_add_epi32(_mm256_madd_epi16(lo, a0), _mm256_madd_epi16(hi, a1));
        sb[r] = _mm256_add_epi32(_mm256_madd_epi16(lo, b0), _mm256_madd_epi16(hi, b1));
    }
    auto reduce = [](const __m256i* s) {
        const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
        return _mm_cvtepi32_ps(_mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
    };
    dots_a = reduce(sa);
    dots_b = reduce(sb);
#elif defined(__SSE2__)
    const __m128i* av = reinterpret_cast<const __m128i*>(a);
    const __m128i* bv = reinterpret_cast<const __m128i*>(b);
    __m128i sa[4], sb[4];
    const int8_t* rows[4] = {w0, w1, w2, w3};
    for (int r = 0; r < 4; ++r) {
        sa[r] = _mm_setzero_si128();
        sb[r] = _mm_setzero_si128();
        for (int half = 0; half < 2; ++half) {
            const __m128i w8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[r] + 16 * half));
            // int8 -> int16: each byte duplicated into both halves of a lane, then shifted down arithmetically.
            const __m128i lo = _mm_srai_epi16(_mm_unpacklo_epi8(w8, w8), 8), hi = _mm_srai_epi16(_mm_unpackhi_epi8(w8, w8), 8);
            sa[r] = _mm_add_epi32(sa[r], _mm_add_epi32(_mm_madd_epi16(lo, _mm_loadu_si128(av + 2 * half)),
                                                       _mm_madd_epi16(hi, _mm_loadu_si128(av + 2 * half + 1))));
            sb[r] = _mm_add_epi32(sb[r], _mm_add_epi32(_mm_madd_epi16(lo, _mm_loadu_si128(bv + 2 * half)),
                                                       _mm_madd_epi16(hi, _mm_loadu_si128(bv + 2 * half + 1))));
        }
    }
    auto reduce = [](const __m128i* s) {
        const __m128i s01 = _mm_add_epi32(_mm_unpacklo_epi32(s[0], s[1]), _mm_unpackhi_epi32(s[0], s[1]));
        const __m128i s23 = _mm_add_epi32(_mm_unpacklo_epi32(s[2], s[3]), _mm_unpackhi_epi32(s[2], s[3]));
        return _mm_cvtepi32_ps(_mm_add_epi32(_mm_unpacklo_epi64(s01, s23), _mm_unpackhi_epi64(s01, s23)));
    };
    dots_a = reduce(sa);
    dots_b = reduce(sb);
#else
    dots_a = q8_dot4(w0, w1, w2, w3, a);
    dots_b = q8_dot4(w0, w1, w2, w3, b);
#endif
}

// The four-row interleaved int8 layout (kernels::interleave_q8_rows4): I4 holds four weight rows' int32 sums.
// q8_quad_widen sign-extends one quad's 16 bytes (lo: the rows' columns k, k+1; hi: k+2, k+3), q8_quad_dot adds
// lo·(x[0], x[1]) + hi·(x[2], x[3]) to each row's lane: 16-bit dot products against a broadcast pair of activations,
// exact in int32, so the block's sums equal q8_dot4's.
#if defined(__wasm_simd128__)
using I4 = v128_t;
using I16x8 = v128_t;
inline I4 i4_zero() { return wasm_i32x4_splat(0); }
inline void q8_quad_widen(const int8_t* w, I16x8& lo, I16x8& hi) {
    const v128_t v = wasm_v128_load(w);
    lo = wasm_i16x8_extend_low_i8x16(v);
    hi = wasm_i16x8_extend_high_i8x16(v);
}
inline I4 q8_quad_dot(I4 sum, I16x8 lo, I16x8 hi, const int16_t* x) {
    return wasm_i32x4_add(sum, wasm_i32x4_add(wasm_i32x4_dot_i16x8(lo, wasm_v128_load32_splat(x)),
                                              wasm_i32x4_dot_i16x8(hi, wasm_v128_load32_splat(x + 2))));
}
inline F4 i4_to_f4(I4 v) { return wasm_f32x4_convert_i32x4(v); }
#elif defined(__SSE2__)
using I4 = __m128i;
using I16x8 = __m128i;
inline I4 i4_zero() { return _mm_setzero_si128(); }
inline void q8_quad_widen(const int8_t* w, I16x8& lo, I16x8& hi) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w));
    lo = _mm_srai_epi16(_mm_unpacklo_epi8(v, v), 8);  // each byte in both halves of a lane, shifted down
    hi = _mm_srai_epi16(_mm_unpackhi_epi8(v, v), 8);
}
inline I4 q8_quad_dot(I4 sum, I16x8 lo, I16x8 hi, const int16_t* x) {
    int32_t pairs[2];
    std::memcpy(pairs, x, sizeof pairs);
    return _mm_add_epi32(sum, _mm_add_epi32(_mm_madd_epi16(lo, _mm_set1_epi32(pairs[0])),
                                            _mm_madd_epi16(hi, _mm_set1_epi32(pairs[1]))));
}
inline F4 i4_to_f4(I4 v) { return _mm_cvtepi32_ps(v); }
#else
struct I4 {
    int32_t v[4];
};
struct I16x8 {
    int16_t v[8];
};
inline I4 i4_zero() { return I4{{0, 0, 0, 0}}; }
inline void q8_quad_widen(const int8_t* w, I16x8& lo, I16x8& hi) {
    for (int j = 0; j < 8; ++j) {
        lo.v[j] = w[j];
        hi.v[j] = w[8 + j];
    }
}
inline I4 q8_quad_dot(I4 sum, I16x8 lo, I16x8 hi, const int16_t* x) {
    for (int r = 0; r < 4; ++r)
        sum.v[r] += int32_t(lo.v[2 * r]) * x[0] + int32_t(lo.v[2 * r + 1]) * x[1] + int32_t(hi.v[2 * r]) * x[2] +
                    int32_t(hi.v[2 * r + 1]) * x[3];
    return sum;
}
inline F4 i4_to_f4(I4 v) { return F4{{float(v.v[0]), float(v.v[1]), float(v.v[2]), float(v.v[3])}}; }
#endif

// out[0..32) = d · q[0..32) for one Q8_0 block: exact (an int8 times a half's value is a float), so the same bits
// as kernels::dequantize_q8_0's scalar loop. wasm takes the SSE2 branch too (Emscripten lowers it to SIMD128): in V8
// it ran about twice as fast as the scalar loop, the same steps spelt with SIMD128's extend instructions slower than
// that loop (a one-off comparison; bench_kernels gemm_nt_q8_16x1024x256 times the kernel against the scalar one).
inline void q8_block_to_f32(const int8_t* q, float d, float* out) {
#if defined(__SSE2__)
    const __m128 scale = _mm_set1_ps(d);
    for (int half = 0; half < 2; ++half) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16 * half));
        const __m128i lo = _mm_srai_epi16(_mm_unpacklo_epi8(v, v), 8), hi = _mm_srai_epi16(_mm_unpackhi_epi8(v, v), 8);
        const __m128i quarters[4] = {_mm_srai_epi32(_mm_unpacklo_epi16(lo, lo), 16), _mm_srai_epi32(_mm_unpackhi_epi16(lo, lo), 16),
                                     _mm_srai_epi32(_mm_unpacklo_epi16(hi, hi), 16), _mm_srai_epi32(_mm_unpackhi_epi16(hi, hi), 16)};
        for (int k = 0; k < 4; ++k)
            _mm_storeu_ps(out + 16 * half + 4 * k, _mm_mul_ps(_mm_cvtepi32_ps(quarters[k]), scale));
    }
#else
    for (int j = 0; j < 32; ++j) out[j] = d * float(q[j]);
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
    return "sse2";
#endif
}

}  // namespace attnlab::simd
