// Kernel tests. Ground truth: the scalar reference kernels, which are themselves checked against small
// hand-computed examples first, plus std:: math, exhaustive half conversions and ggml's Q8_0 rules.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attnlab/error.hpp"
#include "attnlab/kernels/gemm.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "test_support.hpp"
#include "variants/variants.hpp"

namespace k = attnlab::kernels;
namespace ref = attnlab::kernels::reference;
using attnlab::test::check_close;
using attnlab::test::random_vector;

namespace {

const int kSizes[] = {1, 2, 3, 7, 8, 17, 33, 64, 100};
const float kNegInf = -std::numeric_limits<float>::infinity();
const float kExact = 1e-30f;  // check_close tolerance that only equality passes

using GemmFn = void (*)(int, int, int, const float*, int, const float*, int, float*, int, bool);

// Runs `fn` and the reference on the same random problem with padded leading dimensions; checks the
// result and that the padding columns of C are untouched.
void check_gemm_against_reference(GemmFn fn, GemmFn reference, bool b_transposed, int M, int N, int K,
                                  bool accumulate, unsigned seed) {
    const int lda = K + 3, ldc = N + 5;
    const int ldb = b_transposed ? K + 2 : N + 1;
    const int b_rows = b_transposed ? N : K;
    const auto A = random_vector((size_t)M * lda, seed);
    const auto B = random_vector((size_t)b_rows * ldb, seed + 1);
    auto C = random_vector((size_t)M * ldc, seed + 2);
    auto expected = C;
    fn(M, N, K, A.data(), lda, B.data(), ldb, C.data(), ldc, accumulate);
    reference(M, N, K, A.data(), lda, B.data(), ldb, expected.data(), ldc, accumulate);
    INFO("M=" << M << " N=" << N << " K=" << K << " accumulate=" << accumulate);
    // Including the padding: the reference leaves it as it was, so must the kernel.
    check_close(C, expected, 1e-5f * (K + 1), 1e-5f, "gemm");
}

void check_gemm_all_shapes(GemmFn fn, GemmFn reference, bool b_transposed) {
    unsigned seed = 1;
    for (int M : kSizes)
        for (int N : kSizes)
            for (int K : kSizes) check_gemm_against_reference(fn, reference, b_transposed, M, N, K, (M + N + K) % 2, seed += 3);
}

std::vector<k::BlockQ8_0> quantize(const std::vector<float>& x) {
    std::vector<k::BlockQ8_0> blocks(x.size() / k::kQ8BlockSize);
    k::quantize_q8_0(x.data(), x.size(), blocks.data());
    return blocks;
}

std::vector<float> dequantize(const std::vector<k::BlockQ8_0>& blocks) {
    std::vector<float> x(blocks.size() * k::kQ8BlockSize);
    k::dequantize_q8_0(blocks.data(), x.size(), x.data());
    return x;
}

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

const k::Activation kActivations[] = {k::Activation::none, k::Activation::relu, k::Activation::relu6,
                                      k::Activation::tanh, k::Activation::sigmoid, k::Activation::gelu};

}  // namespace

// ------------------------------------------------------------------------------------------------
// The reference kernels on examples small enough to work out by hand.

TEST_CASE("reference gemm on a 2x3 · 3x2 product written out") {
    const float A[6] = {1, 2, 3, 4, 5, 6};      // [[1,2,3],[4,5,6]]
    const float B[6] = {7, 8, 9, 10, 11, 12};   // [[7,8],[9,10],[11,12]]
    const float Bt[6] = {7, 9, 11, 8, 10, 12};  // the same B stored [N,K]
    // [[1·7+2·9+3·11, 1·8+2·10+3·12], [4·7+5·9+6·11, 4·8+5·10+6·12]]
    const std::vector<float> expected = {58, 64, 139, 154};
    std::vector<float> C(4, -1.0f);
    ref::gemm_nn(2, 2, 3, A, 3, B, 2, C.data(), 2);
    check_close(C, expected, kExact, 0, "gemm_nn");
    std::fill(C.begin(), C.end(), -1.0f);
    ref::gemm_nt(2, 2, 3, A, 3, Bt, 3, C.data(), 2);
    check_close(C, expected, kExact, 0, "gemm_nt");
    ref::gemm_nt(2, 2, 3, A, 3, Bt, 3, C.data(), 2, /*accumulate=*/true);
    check_close(C, {116, 128, 278, 308}, kExact, 0, "gemm_nt accumulate");
    // A slice: the first 2 columns of A (lda 3) times the first 2 rows of B.
    ref::gemm_nn(2, 2, 2, A, 3, B, 2, C.data(), 2);
    check_close(C, {1 * 7 + 2 * 9, 1 * 8 + 2 * 10, 4 * 7 + 5 * 9, 4 * 8 + 5 * 10}, kExact, 0, "gemm_nn lda");
}

TEST_CASE("reference gemv, gemv_t, dot, axpy by hand") {
    const float W[6] = {1, 2, 3, 4, 5, 6};  // [2,3]
    const float x3[3] = {1, 0, -1}, x2[2] = {2, -1};
    std::vector<float> y(2);
    ref::gemv(2, 3, W, 3, x3, y.data());
    check_close(y, {-2, -2}, kExact, 0, "gemv");
    std::vector<float> yt(3);
    ref::gemv_t(2, 3, W, 3, x2, yt.data());
    check_close(yt, {2 - 4, 4 - 5, 6 - 6}, kExact, 0, "gemv_t");
    CHECK(ref::dot(W, W + 3, 3) == 1 * 4 + 2 * 5 + 3 * 6);
    std::vector<float> acc = {1, 1, 1};
    ref::axpy(3, 2.0f, W, acc.data());
    check_close(acc, {3, 5, 7}, kExact, 0, "axpy");
}

TEST_CASE("reference softmax, log_softmax, layer_norm, activations by hand") {
    std::vector<float> x = {0.0f, std::log(3.0f), 5.0f, 0.0f, 0.0f, 0.0f};  // [2,3]
    const uint8_t mask[6] = {1, 1, 0, 0, 0, 0};                            // row 1 fully masked
    ref::softmax_rows(2, 3, x.data(), 3, mask, 3);
    check_close(x, {0.25f, 0.75f, 0, 0, 0, 0}, 1e-7f, 0, "softmax");
    std::vector<float> l = {0.0f, 0.0f, 7.0f};
    const uint8_t mask1[3] = {1, 1, 0};
    ref::log_softmax_rows(1, 3, l.data(), 3, mask1, 0);
    CHECK(l[0] == doctest::Approx(-std::log(2.0)));
    CHECK(l[1] == doctest::Approx(-std::log(2.0)));
    CHECK(l[2] == kNegInf);

    std::vector<float> n = {1, 2, 3, 4};  // mean 2.5, biased variance 1.25
    const float gamma[4] = {1, 2, 1, 1}, beta[4] = {0, 0, 1, 0};
    ref::layer_norm_rows(1, 4, n.data(), n.data(), gamma, beta, 0.0f);
    const float s = 1.0f / std::sqrt(1.25f);
    check_close(n, {-1.5f * s, -0.5f * s * 2, 0.5f * s + 1, 1.5f * s}, 1e-6f, 0, "layer_norm");

    std::vector<float> a = {-1.0f, 0.5f, 7.0f};
    ref::activate(a.data(), 3, k::Activation::relu6);
    check_close(a, {0, 0.5f, 6}, kExact, 0, "relu6");
    std::vector<float> g = {1.0f, -1.0f};
    ref::activate(g.data(), 2, k::Activation::gelu);
    // torch.nn.functional.gelu(torch.tensor([1., -1.])) = [0.8413447, -0.1586553]
    check_close(g, {0.8413447f, -0.1586553f}, 1e-6f, 0, "gelu");
    std::vector<float> sg = {0.0f};
    ref::activate(sg.data(), 1, k::Activation::sigmoid);
    CHECK(sg[0] == 0.5f);
}

TEST_CASE("reference argmax, top_k and embedding by hand") {
    const float x[6] = {1, 5, 3, 5, -2, 3};
    CHECK(ref::argmax(x, 6) == 1);  // first of the tied maxima
    int idx[4];
    float val[4];
    ref::top_k(x, 6, 4, idx, val);
    CHECK(idx[0] == 1);
    CHECK(idx[1] == 3);
    CHECK(idx[2] == 2);
    CHECK(idx[3] == 5);
    CHECK(val[0] == 5);
    CHECK(val[3] == 3);
    const float table[6] = {0, 1, 10, 11, 20, 21};  // [3,2]
    const int32_t ids[3] = {2, 0, 2};
    float out[6];
    ref::embedding(table, 3, 2, ids, 3, out);
    check_close(out, std::vector<float>{20, 21, 0, 1, 20, 21}.data(), 6, kExact, 0, "embedding");
}

// ------------------------------------------------------------------------------------------------
// SIMD kernels against the reference.

TEST_CASE("gemm_nn matches the reference on all shapes") {
    SUBCASE("dispatching gemm_nn") { check_gemm_all_shapes(k::gemm_nn, ref::gemm_nn, false); }
    SUBCASE("unpacked tiles") { check_gemm_all_shapes(k::gemm_nn_tiles, ref::gemm_nn, false); }
    SUBCASE("packed A and B") { check_gemm_all_shapes(k::gemm_nn_packed, ref::gemm_nn, false); }
}

TEST_CASE("gemm_nt matches the reference on all shapes") {
    SUBCASE("dispatching gemm_nt") { check_gemm_all_shapes(k::gemm_nt, ref::gemm_nt, true); }
    SUBCASE("dot-form xsimd tiles") { check_gemm_all_shapes(k::gemm_nt_dot_tiles, ref::gemm_nt, true); }
    SUBCASE("packed A and Bᵀ") { check_gemm_all_shapes(k::gemm_nt_packed, ref::gemm_nt, true); }
#if defined(__wasm_simd128__)
    SUBCASE("hand-written SIMD128 tiles") { check_gemm_all_shapes(k::variants::gemm_nt_wasm128, ref::gemm_nt, true); }
#endif
}

TEST_CASE("gemm kernels on a larger problem and with zero sizes") {
    check_gemm_against_reference(k::gemm_nn, ref::gemm_nn, false, 130, 257, 96, false, 99);
    check_gemm_against_reference(k::gemm_nt, ref::gemm_nt, true, 130, 257, 96, true, 98);
    // Past every cache block of the packed GEMM (K > 256, M > 96 rows, N > 512 columns), with edges in all
    // three: several K blocks must accumulate into C, with or without the caller's accumulate.
    for (bool accumulate : {false, true}) {
        check_gemm_against_reference(k::gemm_nn_packed, ref::gemm_nn, false, 101, 530, 300, accumulate, 97);
        check_gemm_against_reference(k::gemm_nt_packed, ref::gemm_nt, true, 101, 530, 300, accumulate, 96);
    }
    float C[4] = {1, 2, 3, 4};
    const float A[1] = {0}, B[1] = {0};
    k::gemm_nn(2, 2, 0, A, 0, B, 2, C, 2, true);  // K = 0 accumulates nothing
    check_close(C, std::vector<float>{1, 2, 3, 4}.data(), 4, kExact, 0, "K=0 accumulate");
    k::gemm_nt(2, 2, 0, A, 0, B, 0, C, 2, false);  // K = 0 overwrites with zeros
    check_close(C, std::vector<float>{0, 0, 0, 0}.data(), 4, kExact, 0, "K=0");
    // M = 0: nothing to do, so C keeps every value, whether the call overwrites or accumulates.
    for (bool accumulate : {false, true}) {
        CAPTURE(accumulate);
        float untouched[4] = {5, 6, 7, 8};
        k::gemm_nn(0, 2, 0, A, 0, B, 2, untouched, 2, accumulate);
        check_close(untouched, std::vector<float>{5, 6, 7, 8}.data(), 4, kExact, 0, "gemm_nn M=0");
        k::gemm_nt(0, 2, 0, A, 0, B, 0, untouched, 2, accumulate);
        check_close(untouched, std::vector<float>{5, 6, 7, 8}.data(), 4, kExact, 0, "gemm_nt M=0");
        const std::vector<float> a = random_vector(3 * 3, 11), b = random_vector(3 * 3, 12);
        k::gemm_nn(0, 2, 3, a.data(), 3, b.data(), 2, untouched, 2, accumulate);
        check_close(untouched, std::vector<float>{5, 6, 7, 8}.data(), 4, kExact, 0, "gemm_nn M=0 K=3");
        k::gemm_nt(0, 2, 3, a.data(), 3, b.data(), 3, untouched, 2, accumulate);
        check_close(untouched, std::vector<float>{5, 6, 7, 8}.data(), 4, kExact, 0, "gemm_nt M=0 K=3");
    }
}

TEST_CASE("gemm and gemv reject inconsistent sizes") {
    std::vector<float> buf(64);
    CHECK_THROWS_AS(k::gemm_nn(2, 2, 4, buf.data(), 3, buf.data(), 2, buf.data(), 2), attnlab::Error);
    CHECK_THROWS_AS(k::gemm_nt(2, 2, 4, buf.data(), 4, buf.data(), 3, buf.data(), 2), attnlab::Error);
    CHECK_THROWS_AS(k::gemm_nt(-1, 2, 4, buf.data(), 4, buf.data(), 4, buf.data(), 2), attnlab::Error);
    CHECK_THROWS_AS(k::gemv(2, 4, buf.data(), 3, buf.data(), buf.data()), attnlab::Error);
    CHECK_THROWS_AS(ref::gemm_nn(2, 2, 4, buf.data(), 3, buf.data(), 2, buf.data(), 2), attnlab::Error);
}

TEST_CASE("gemv and gemv_t match the reference") {
    unsigned seed = 500;
    for (int M : kSizes)
        for (int N : {1, 3, 8, 17, 64, 100, 515}) {
            const int ldw = N + (M % 3);
            const bool accumulate = (M + N) % 2;
            const auto W = random_vector((size_t)M * ldw, seed++);
            const auto xn = random_vector(N, seed++), xm = random_vector(M, seed++);
            auto y = random_vector(M, seed++);
            auto y_ref = y;
            k::gemv(M, N, W.data(), ldw, xn.data(), y.data(), accumulate);
            ref::gemv(M, N, W.data(), ldw, xn.data(), y_ref.data(), accumulate);
            INFO("M=" << M << " N=" << N);
            check_close(y, y_ref, 1e-5f * (N + 1), 1e-5f, "gemv");
            auto yt = random_vector(N, seed++);
            auto yt_ref = yt;
            k::gemv_t(M, N, W.data(), ldw, xm.data(), yt.data(), accumulate);
            ref::gemv_t(M, N, W.data(), ldw, xm.data(), yt_ref.data(), accumulate);
            check_close(yt, yt_ref, 1e-5f * (M + 1), 1e-5f, "gemv_t");
        }
}

// ------------------------------------------------------------------------------------------------
// Half floats and Q8_0.

TEST_CASE("f16 -> f32 -> f16 is exact for all 65536 halves") {
    int mismatches = 0;
    for (uint32_t h = 0; h < 65536; ++h) {
        const float f = k::f16_to_f32(uint16_t(h));
        const uint16_t back = k::f32_to_f16(f);
        const bool is_nan = (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
        if (is_nan ? !std::isnan(f) || back != h : back != h) ++mismatches;
    }
    CHECK(mismatches == 0);
}

TEST_CASE("f16 conversions of known values, rounding to nearest even") {
    CHECK(k::f16_to_f32(0x3c00) == 1.0f);
    CHECK(k::f16_to_f32(0xc000) == -2.0f);
    CHECK(k::f16_to_f32(0x7bff) == 65504.0f);
    CHECK(k::f16_to_f32(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
    CHECK(k::f16_to_f32(0x03ff) == std::ldexp(1023.0f, -24));
    CHECK(k::f16_to_f32(0x7c00) == std::numeric_limits<float>::infinity());
    CHECK(std::isnan(k::f16_to_f32(0x7e00)));
    CHECK(bits(k::f16_to_f32(0x8000)) == 0x80000000u);  // -0 keeps its sign
    CHECK(k::f32_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);      // tie -> even (down)
    CHECK(k::f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);  // tie -> even (up)
    CHECK(k::f32_to_f16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)) == 0x3c01);
    CHECK(k::f32_to_f16(65519.0f) == 0x7bff);
    CHECK(k::f32_to_f16(65520.0f) == 0x7c00);  // tie between 65504 and 65536 -> even -> inf
    CHECK(k::f32_to_f16(1e10f) == 0x7c00);
    CHECK(k::f32_to_f16(-1e10f) == 0xfc00);
    CHECK(k::f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000);                                 // tie -> 0
    CHECK(k::f32_to_f16(std::ldexp(1.0f, -25) + std::ldexp(1.0f, -40)) == 0x0001);         // above tie
    CHECK(k::f32_to_f16(3 * std::ldexp(1.0f, -25)) == 0x0002);                             // 1.5 -> 2
    CHECK(k::f32_to_f16(std::ldexp(1023.5f, -24)) == 0x0400);  // rounds up into the smallest normal
    CHECK(k::f32_to_f16(std::ldexp(1.0f, -14)) == 0x0400);
    CHECK(k::f32_to_f16(1e-30f) == 0x0000);
    CHECK(k::f32_to_f16(-1e-30f) == 0x8000);
    CHECK(k::f32_to_f16(std::numeric_limits<float>::quiet_NaN()) == 0x7e00);
    uint32_t snan_bits = 0x7f800001u;  // payload only in the low bits: must stay a NaN, not become inf
    float snan;
    std::memcpy(&snan, &snan_bits, 4);
    CHECK((k::f32_to_f16(snan) & 0x7fffu) > 0x7c00u);
#if defined(__FLT16_MAX__) && !defined(__wasm__)
    // The compiler's own conversion (hardware on this CPU) as an independent check on random floats.
    std::mt19937 rng(7);
    int mismatches = 0;
    for (int i = 0; i < 200000; ++i) {
        uint32_t u = rng();
        float f;
        std::memcpy(&f, &u, 4);
        if (std::isnan(f)) continue;
        const _Float16 h = (_Float16)f;
        uint16_t hb;
        std::memcpy(&hb, &h, 2);
        if (k::f32_to_f16(f) != hb) ++mismatches;
    }
    CHECK(mismatches == 0);
#endif
}

TEST_CASE("quantize_q8_0 matches a hand-computed block") {
    std::vector<float> x(64);
    for (int j = 0; j < 32; ++j) x[j] = float(j - 16);  // amax 16: d = 16/127, 1/d ≈ 7.9375
    // second block all zeros: d = 0, id = 0, q = 0
    const auto blocks = quantize(x);
    CHECK(blocks[0].scale == 0x3008);  // 16/127 = 0.125984 = 2^-3 · (1 + 8.06/1024) -> mantissa 8
    CHECK(blocks[0].q[0] == -127);     // -16
    CHECK(blocks[0].q[15] == -8);      // -1 · 7.9375 = -7.9375
    CHECK(blocks[0].q[16] == 0);
    CHECK(blocks[0].q[17] == 8);       // 7.9375
    CHECK(blocks[0].q[18] == 16);      // 15.875
    CHECK(blocks[0].q[21] == 40);      // 5 · 7.9375 = 39.6875
    CHECK(blocks[0].q[31] == 119);     // 15 · 7.9375 = 119.0625
    CHECK(blocks[1].scale == 0);
    for (int j = 0; j < 32; ++j) CHECK(blocks[1].q[j] == 0);
    const auto back = dequantize(blocks);
    CHECK(back[0] == k::f16_to_f32(0x3008) * -127.0f);
    CHECK(back[40] == 0.0f);
    CHECK_THROWS_AS(k::quantize_q8_0(x.data(), 33, nullptr), attnlab::Error);
}

// The vectorized activation quantizer must give quantize_q8_0's bits: blocks built to hit every branch of its rule
// (ties at ±k.5 with d = 1, NaN and infinities, zero, subnormal and huge scales, values that round past ±127).
TEST_CASE("quantize_activations_q8 is quantize_q8_0, bit for bit, on ties, NaN, infinities and extreme scales") {
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    std::vector<std::vector<float>> blocks;
    {
        std::vector<float> ties(32);  // amax 127: d = 1 exactly, so x·id is x and every .5 is a tie
        const float values[] = {127.0f, 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f, 126.5f, -126.5f, 0.49999997f,
                                -0.49999997f, 0.50000006f, -0.0f, 0.0f, 63.5f, -63.5f};
        for (int j = 0; j < 32; ++j) ties[j] = j < 16 ? values[j] : -values[j - 16] * 0.999f;
        blocks.push_back(ties);
    }
    blocks.push_back(std::vector<float>(32, 0.0f));
    blocks.push_back(std::vector<float>(32, nan));
    {
        std::vector<float> b = random_vector(32, 11);
        b[3] = nan;  // skipped by the maximum, quantized to 0
        b[9] = -nan;
        blocks.push_back(b);
        b[5] = inf;  // d = inf, id = 0: every value 0, inf·0 NaN -> 0
        blocks.push_back(b);
        b[5] = -inf;
        blocks.push_back(b);
    }
    {
        std::vector<float> b(32);
        for (int j = 0; j < 32; ++j) b[j] = (j % 2 ? -1.0f : 1.0f) * 1e-40f * float(j + 1);  // subnormal amax: 1/d = inf
        blocks.push_back(b);
        for (int j = 0; j < 32; ++j) b[j] = (j % 3 ? -3e38f : 1e38f) * float(j % 5) / 4.0f;  // near FLT_MAX
        blocks.push_back(b);
        b[0] = 1e-45f;
        b[1] = -1e-45f;
        blocks.push_back(b);
    }
    for (unsigned seed = 0; seed < 64; ++seed) {  // random scales and values, including many x·id near k + 0.5
        auto b = random_vector(32, 100 + seed);
        const float scale = std::ldexp(1.0f, int(seed % 40) - 20);
        for (float& v : b) v *= scale;
        if (seed % 4 == 0)
            for (int j = 0; j < 32; ++j) b[j] = (float(int(b[j] * 254.0f / scale)) + 0.5f) * scale / 2.0f;
        blocks.push_back(b);
    }
    const int n = int(blocks.size()) * 32;
    const int rows = 3, ldx = n + 7;  // rows in turn: the blocks rotated, and a padded stride
    std::vector<float> x((size_t)rows * ldx, 12345.0f);
    for (int r = 0; r < rows; ++r)
        for (int b = 0; b < int(blocks.size()); ++b)
            std::copy(blocks[(b + r) % blocks.size()].begin(), blocks[(b + r) % blocks.size()].end(),
                      x.begin() + (size_t)r * ldx + (size_t)b * 32);
    std::vector<int16_t> values((size_t)rows * n);
    std::vector<float> scales((size_t)rows * (n / 32));
    k::quantize_activations_q8(rows, n, x.data(), ldx, values.data(), scales.data());
    int mismatches = 0;
    for (int r = 0; r < rows; ++r) {
        std::vector<k::BlockQ8_0> expected(n / 32);
        k::quantize_q8_0(x.data() + (size_t)r * ldx, n, expected.data());
        for (int b = 0; b < n / 32; ++b) {
            const float want = k::f16_to_f32(expected[b].scale), got = scales[(size_t)r * (n / 32) + b];
            if (std::memcmp(&want, &got, sizeof want) != 0) ++mismatches;
            for (int j = 0; j < 32; ++j)
                if (values[(size_t)r * n + b * 32 + j] != expected[b].q[j]) ++mismatches;
        }
    }
    CHECK(mismatches == 0);
    CHECK(values[1] == 1);   // 0.5 rounds away from zero (SIMD128's nearest would give 0)
    CHECK(values[6] == -3);  // -2.5
    CHECK_THROWS_AS(k::quantize_activations_q8(1, 48, x.data(), 48, values.data(), scales.data()), attnlab::Error);
}

TEST_CASE("gemv_f16 matches gemv on the widened weights, any shape") {
    for (int M : {1, 3, 4, 5, 17, 64}) {
        for (int N : {1, 7, 8, 16, 33, 256}) {
            CAPTURE(M);
            CAPTURE(N);
            const auto W = random_vector(M * N, M * 100 + N);
            const auto x = random_vector(N, N + 7);
            std::vector<uint16_t> halves(W.size());
            std::vector<float> widened(W.size());
            for (std::size_t i = 0; i < W.size(); ++i) {
                halves[i] = k::f32_to_f16(W[i]);
                widened[i] = k::f16_to_f32(halves[i]);
            }
            std::vector<float> y(M, 1.0f), expected(M, 1.0f);
            for (bool accumulate : {false, true}) {
                k::gemv_f16(M, N, halves.data(), x.data(), y.data(), accumulate);
                ref::gemv(M, N, widened.data(), N, x.data(), expected.data(), accumulate);
                check_close(y, expected, 1e-5f, 1e-5f, "gemv_f16");
            }
        }
    }
}

TEST_CASE("gemv_f16_rows: each row is its own gemv_f16 bit for bit, any shape and strides") {
    for (int M : {1, 3, 4, 5, 17, 64}) {
        for (int N : {1, 7, 8, 16, 33, 256}) {
            for (int rows : {1, 2, 3, 4, 5, 9}) {
                CAPTURE(M);
                CAPTURE(N);
                CAPTURE(rows);
                const int ldx = N + 3, ldy = M + 2;
                const auto W = random_vector(M * N, M * 100 + N);
                const auto x = random_vector(rows * ldx, N + 7 + rows);
                std::vector<uint16_t> halves(W.size());
                for (std::size_t i = 0; i < W.size(); ++i) halves[i] = k::f32_to_f16(W[i]);
                std::vector<float> y(rows * ldy, -7.0f), one(M);
                k::gemv_f16_rows(rows, M, N, halves.data(), x.data(), ldx, y.data(), ldy);
                int mismatches = 0;
                for (int r = 0; r < rows; ++r) {
                    k::gemv_f16(M, N, halves.data(), x.data() + r * ldx, one.data());
                    mismatches += std::memcmp(one.data(), y.data() + r * ldy, M * sizeof(float)) != 0;
                    for (int i = M; i < ldy; ++i) CHECK(y[r * ldy + i] == -7.0f);  // the stride's gap untouched
                }
                CHECK(mismatches == 0);
            }
        }
    }
    std::vector<uint16_t> halves(8 * 16);
    std::vector<float> x(2 * 16), y(2 * 8);
    k::gemv_f16_rows(0, 8, 16, halves.data(), x.data(), 16, y.data(), 8);  // no rows: nothing to do
    CHECK_THROWS_AS(k::gemv_f16_rows(-1, 8, 16, halves.data(), x.data(), 16, y.data(), 8), attnlab::Error);
    CHECK_THROWS_AS(k::gemv_f16_rows(2, 8, 16, halves.data(), x.data(), 15, y.data(), 8), attnlab::Error);
    CHECK_THROWS_AS(k::gemv_f16_rows(2, 8, 16, halves.data(), x.data(), 16, y.data(), 7), attnlab::Error);
}

TEST_CASE("gemv_q8 and gemm_nt_q8 match the float kernels on dequantized weights") {
    unsigned seed = 900;
    for (int M : {1, 2, 3, 4, 5, 7, 17, 33})
        for (int K : {32, 64, 96, 160}) {
            const int N = M * 3 + 1;  // rows of W / B
            const auto W = quantize(random_vector((size_t)N * K, seed++));
            const auto Wf = dequantize(W);
            const auto x = random_vector(K, seed++);
            INFO("M=" << M << " N=" << N << " K=" << K);
            auto y = random_vector(N, seed++);
            auto y_ref = y, y_q8ref = y;
            const bool accumulate = (M + K / 32) % 2;
            k::gemv_q8(N, K, W.data(), x.data(), y.data(), accumulate);
            ref::gemv(N, K, Wf.data(), K, x.data(), y_ref.data(), accumulate);
            ref::gemv_q8(N, K, W.data(), x.data(), y_q8ref.data(), accumulate);
            check_close(y, y_ref, 1e-5f * K, 1e-5f, "gemv_q8 vs gemv on dequantized");
            check_close(y_q8ref, y_ref, 1e-5f * K, 1e-5f, "reference gemv_q8 vs gemv on dequantized");

            const int lda = K + 1, ldc = N + 2;
            const auto A = random_vector((size_t)M * lda, seed++);
            auto C = random_vector((size_t)M * ldc, seed++);
            auto C_ref = C;
            k::gemm_nt_q8(M, N, K, A.data(), lda, W.data(), C.data(), ldc, accumulate);
            ref::gemm_nt(M, N, K, A.data(), lda, Wf.data(), K, C_ref.data(), ldc, accumulate);
            check_close(C, C_ref, 1e-5f * K, 1e-5f, "gemm_nt_q8");
        }
    std::vector<k::BlockQ8_0> W(4);
    std::vector<float> buf(64);
    CHECK_THROWS_AS(k::gemv_q8(1, 48, W.data(), buf.data(), buf.data()), attnlab::Error);
    CHECK_THROWS_AS(k::gemm_nt_q8(1, 1, 40, buf.data(), 40, W.data(), buf.data(), 1), attnlab::Error);
}

// x as the int8 Q8_0 kernels see it: quantized per 32-block like the weights (ggml's q8_0 activations).
std::vector<float> quantized_activations(const std::vector<float>& x, int rows, int cols, int ld) {
    std::vector<float> out(x.size(), 0.0f);
    for (int r = 0; r < rows; ++r) {
        const std::vector<float> row(x.begin() + (size_t)r * ld, x.begin() + (size_t)r * ld + cols);
        const std::vector<float> back = dequantize(quantize(row));
        std::copy(back.begin(), back.end(), out.begin() + (size_t)r * ld);
    }
    return out;
}

TEST_CASE("gemv_q8_int8 and gemm_nt_q8_int8 match the float kernels on dequantized weights and activations") {
    unsigned seed = 900;
    for (int M : {1, 2, 3, 4, 5, 7, 17, 33})
        for (int K : {32, 64, 96, 160}) {
            const int N = M * 3 + 1;  // rows of W / B
            const auto W = quantize(random_vector((size_t)N * K, seed++));
            const auto Wf = dequantize(W);
            const auto x = random_vector(K, seed++);
            const auto xf = quantized_activations(x, 1, K, K);
            INFO("M=" << M << " N=" << N << " K=" << K);
            auto y = random_vector(N, seed++);
            auto y_ref = y, y_q8ref = y, y_exact = y;
            const bool accumulate = (M + K / 32) % 2;
            k::variants::gemv_q8_int8(N, K, W.data(), x.data(), y.data(), accumulate);
            ref::gemv(N, K, Wf.data(), K, xf.data(), y_ref.data(), accumulate);
            check_close(y, y_ref, 1e-5f * K, 1e-5f, "gemv_q8 vs gemv on dequantized W and x");
            // The price of quantizing x: |W̃·(x - x̃)| <= Σ|w̃|·max|x_block|/254, and it must show (x̃ != x).
            ref::gemv(N, K, Wf.data(), K, x.data(), y_exact.data(), accumulate);
            float worst = 0;
            for (int i = 0; i < N; ++i) {
                float bound = 1e-5f;
                for (int j = 0; j < K; ++j) {
                    float block_max = 0;
                    for (int jj = j / 32 * 32; jj < j / 32 * 32 + 32; ++jj) block_max = std::max(block_max, std::fabs(x[jj]));
                    bound += std::fabs(Wf[(size_t)i * K + j]) * block_max / 254.0f * 1.01f;
                }
                CHECK(std::fabs(y[i] - y_exact[i]) <= bound);
                worst = std::max(worst, std::fabs(y[i] - y_exact[i]));
            }
            CHECK(worst > 0.0f);

            const int lda = K + 1, ldc = N + 2;
            const auto A = random_vector((size_t)M * lda, seed++);
            const auto Af = quantized_activations(A, M, K, lda);
            auto C = random_vector((size_t)M * ldc, seed++);
            auto C_ref = C, C_q8ref = C;
            k::variants::gemm_nt_q8_int8(M, N, K, A.data(), lda, W.data(), C.data(), ldc, accumulate);
            ref::gemm_nt(M, N, K, Af.data(), lda, Wf.data(), K, C_ref.data(), ldc, accumulate);
            check_close(C, C_ref, 1e-5f * K, 1e-5f, "gemm_nt_q8");
            // Row i of gemm_nt_q8 is gemv_q8 on row i, whatever M is.
            std::vector<float> row(N);
            k::variants::gemv_q8_int8(N, K, W.data(), A.data() + (size_t)(M - 1) * lda, row.data());
            if (!accumulate)
                check_close(row.data(), C.data() + (size_t)(M - 1) * ldc, N, kExact, 0, "gemm_nt_q8 row == gemv_q8");
        }
    // Block scales that are negative, subnormal halves, zero or +inf go through the same f16 rules as
    // the reference (the SIMD kernel converts finite scales without branches).
    {
        const uint16_t scales[] = {0xbc00 /* -1 */, 0x0001 /* 2^-24 */, 0x83ff /* -subnormal */, 0x0000,
                                   0x7bff /* 65504 */, 0x3555};
        std::vector<k::BlockQ8_0> Wq(6);
        for (int b = 0; b < 6; ++b) {
            Wq[b].scale = scales[b];
            for (int j = 0; j < 32; ++j) Wq[b].q[j] = int8_t((j * 37 + b * 11) % 255 - 127);
        }
        const auto x = random_vector(32, 5);
        std::vector<float> y(6), y_ref(6);
        k::variants::gemv_q8_int8(6, 32, Wq.data(), x.data(), y.data());
        ref::gemv_q8(6, 32, Wq.data(), quantized_activations(x, 1, 32, 32).data(), y_ref.data());
        check_close(y, y_ref, 1e-12f, 1e-5f, "special scales");
        Wq[0].scale = 0x7c00;  // +inf
        k::variants::gemv_q8_int8(1, 32, Wq.data(), x.data(), y.data());
        CHECK_FALSE(std::isfinite(y[0]));  // inf, or NaN where a SIMD lane held 0 · inf: never a number
    }
    std::vector<k::BlockQ8_0> W(4);
    std::vector<float> buf(64);
    CHECK_THROWS_AS(k::variants::gemv_q8_int8(1, 48, W.data(), buf.data(), buf.data()), attnlab::Error);
    CHECK_THROWS_AS(k::variants::gemm_nt_q8_int8(1, 1, 40, buf.data(), 40, W.data(), buf.data(), 1), attnlab::Error);
}

// gemv_q8_q8's error budget against its scalar reference. Both compute, per row, sum += float(isum_b) ·
// (d_w·d_x) over the blocks in order, with exact integer isum_b: the results can differ only where one side
// fuses a multiply-add (natively; never in wasm), i.e. by at most one rounding of each partial sum and product,
// so |y - y_ref| <= 2·eps·Σ_b |isum_b·d_w·d_x| per row (plus |y| in the accumulating case).
static std::vector<float> q8_q8_rounding_budget(const std::vector<k::BlockQ8_0>& W, int M, int K, const std::vector<float>& x,
                                                const std::vector<float>& y0, bool accumulate) {
    const int blocks = K / 32;
    const auto xq = quantize(x);
    std::vector<float> budget(M);
    for (int i = 0; i < M; ++i) {
        double magnitude = accumulate ? std::fabs(y0[i]) : 0.0;
        for (int b = 0; b < blocks; ++b) {
            const k::BlockQ8_0& w = W[(size_t)i * blocks + b];
            long isum = 0;
            for (int j = 0; j < 32; ++j) isum += long(w.q[j]) * xq[b].q[j];
            magnitude += std::fabs(double(isum) * k::f16_to_f32(w.scale) * k::f16_to_f32(xq[b].scale));
        }
        budget[i] = float(2.0 * std::ldexp(1.0, -23) * magnitude) + 1e-30f;
    }
    return budget;
}

TEST_CASE("gemv_q8_q8 matches its scalar reference, the float GEMV on quantized x, and the activation error bound") {
    unsigned seed = 2000;
    for (int M : {1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 33, 100})
        for (int K : {32, 64, 96, 256, 320}) {
            INFO("M=" << M << " K=" << K);
            const auto W = quantize(random_vector((size_t)M * K, seed++));
            const auto Wf = dequantize(W);
            // Activations with a spread of magnitudes per block, like the decoder's (tanh/embedding/context).
            auto x = random_vector(K, seed++, -2.0f, 2.0f);
            for (int j = 0; j < K; j += 5) x[j] *= 0.01f;
            const bool accumulate = (M + K / 32) % 2;
            // y has 3 extra entries that no kernel may touch (the tail rows of the 4-row passes).
            auto y = random_vector(M + 3, seed++);
            const auto y0 = y;
            auto y_ref = y;
            k::gemv_q8_q8(M, K, W.data(), x.data(), y.data(), accumulate);
            ref::gemv_q8_q8(M, K, W.data(), x.data(), y_ref.data(), accumulate);
            const auto budget = q8_q8_rounding_budget(W, M, K, x, y0, accumulate);
            for (int i = 0; i < M; ++i) {
                INFO("row " << i << ": " << y[i] << " vs reference " << y_ref[i]);
                CHECK(std::fabs(y[i] - y_ref[i]) <= budget[i]);
            }
            for (int i = M; i < M + 3; ++i) CHECK(bits(y[i]) == bits(y0[i]));
            // With the scales converted ahead (q8_scales_by4): the same floats, so the same bits.
            const auto scales4 = k::q8_scales_by4(W.data(), M, K);
            REQUIRE(scales4.size() == size_t((M + 3) / 4 * (K / 32) * 4));
            for (int i = 0; i < (M + 3) / 4 * 4; ++i)
                for (int b = 0; b < K / 32; ++b) {
                    const float expected = i < M ? k::f16_to_f32(W[(size_t)i * (K / 32) + b].scale) : 0.0f;
                    CHECK(scales4[((size_t)(i / 4) * (K / 32) + b) * 4 + i % 4] == expected);
                }
            auto y_packed = y0;
            k::gemv_q8_q8(M, K, W.data(), x.data(), y_packed.data(), accumulate, scales4.data());
            for (int i = 0; i < M + 3; ++i) CHECK(bits(y_packed[i]) == bits(y[i]));

            // The reference itself against the plain float GEMV on dequantized W and quantized-then-dequantized x.
            const auto xf = quantized_activations(x, 1, K, K);
            auto y_float = y0;
            ref::gemv(M, K, Wf.data(), K, xf.data(), y_float.data(), accumulate);
            check_close(y_ref.data(), y_float.data(), M, 1e-5f * K, 1e-5f, "gemv_q8_q8 reference vs gemv on x̃");
            // And against the unquantized x: the activation rounding |x - x̃| <= d_x/2, d_x = max|x_block|/127
            // (1% slack for the f16 rounding of d_x), weighted by |w̃|. It must also be visible (x̃ != x).
            auto y_exact = y0;
            ref::gemv(M, K, Wf.data(), K, x.data(), y_exact.data(), accumulate);
            float worst = 0;
            for (int i = 0; i < M; ++i) {
                double bound = 1e-5;
                for (int j = 0; j < K; ++j) {
                    float block_max = 0;
                    for (int jj = j / 32 * 32; jj < j / 32 * 32 + 32; ++jj) block_max = std::max(block_max, std::fabs(x[jj]));
                    bound += std::fabs(Wf[(size_t)i * K + j]) * block_max / 254.0 * 1.01;
                }
                CHECK(std::fabs(y[i] - y_exact[i]) <= bound);
                worst = std::max(worst, std::fabs(y[i] - y_exact[i]));
            }
            CHECK(worst > 0.0f);
        }
}

TEST_CASE("gemv_q8_q8: special block scales, zero blocks, extreme weights and bad shapes") {
    // Weight scales: negative, half subnormals, zero, the largest half, and the activations' zero block.
    const uint16_t scales[] = {0xbc00 /* -1 */, 0x0001 /* 2^-24 */, 0x83ff /* -subnormal */, 0x0000,
                               0x7bff /* 65504 */, 0x3555, 0x0400 /* smallest normal */};
    const int M = 7, K = 64;
    std::vector<k::BlockQ8_0> W(M * 2);
    for (int i = 0; i < M; ++i)
        for (int b = 0; b < 2; ++b) {
            W[i * 2 + b].scale = scales[(i + b) % 7];
            // Includes -128 (not produced by quantize_q8_0, but legal in a file) and ±127.
            for (int j = 0; j < 32; ++j) W[i * 2 + b].q[j] = int8_t((j * 37 + i * 11 + b * 5) % 256 - 128);
        }
    auto x = random_vector(K, 5);
    for (int j = 32; j < 64; ++j) x[j] = 0.0f;  // second block of x: scale 0
    x[3] = -2.5f;                                // the block max, negative
    std::vector<float> y(M), y_ref(M);
    k::gemv_q8_q8(M, K, W.data(), x.data(), y.data());
    ref::gemv_q8_q8(M, K, W.data(), x.data(), y_ref.data());
    const auto budget = q8_q8_rounding_budget(W, M, K, x, y, false);
    for (int i = 0; i < M; ++i) CHECK(std::fabs(y[i] - y_ref[i]) <= budget[i]);
    // An exactly known case: all weights 127 with scale 1, x = 1 everywhere (d_x = f16(1/127), q_x = 127):
    // y = 32·127·127 · f16(1/127) per block.
    {
        std::vector<k::BlockQ8_0> ones(1);
        ones[0].scale = 0x3c00;
        for (auto& q : ones[0].q) q = 127;
        const std::vector<float> x1(32, 1.0f);
        float y1 = 0;
        k::gemv_q8_q8(1, 32, ones.data(), x1.data(), &y1);
        CHECK(y1 == 32.0f * 127 * 127 * k::f16_to_f32(k::f32_to_f16(1.0f / 127)));
    }
    // Inf and NaN weight scales make the row non-finite, as the f16 rules say (not a finite garbage number).
    W[0].scale = 0x7c00;
    W[2].scale = 0x7e00;
    k::gemv_q8_q8(2, K, W.data(), x.data(), y.data());
    CHECK_FALSE(std::isfinite(y[0]));
    CHECK(std::isnan(y[1]));
    std::vector<float> buf(64);
    CHECK_THROWS_AS(k::gemv_q8_q8(1, 48, W.data(), buf.data(), buf.data()), attnlab::Error);
    CHECK_THROWS_AS(ref::gemv_q8_q8(1, 40, W.data(), buf.data(), buf.data()), attnlab::Error);
    CHECK_THROWS_AS(k::gemv_q8_q8(-1, 32, W.data(), buf.data(), buf.data()), attnlab::Error);
    k::gemv_q8_q8(0, 32, nullptr, buf.data(), nullptr);  // no rows: nothing to read or write
}

TEST_CASE("gemm_nt_q8_q8: each row is its own gemv_q8_q8 bit for bit, within rounding of the reference") {
    unsigned seed = 3000;
    for (int M = 1; M <= 17; ++M)
        for (int N : {1, 3, 4, 5, 13, 70})
            for (int K : {32, 96, 320}) {
                INFO("M=" << M << " N=" << N << " K=" << K);
                const int lda = K + 7, ldc = N + 3;
                const auto W = quantize(random_vector((size_t)N * K, seed++));
                // Rows of very different magnitudes: each must be quantized with its own block scales.
                auto A = random_vector((size_t)M * lda, seed++, -2.0f, 2.0f);
                for (int i = 0; i < M; ++i)
                    for (int j = 0; j < K; ++j) A[(size_t)i * lda + j] *= (i % 3 == 1 ? 100.0f : 1.0f) * (j % 5 ? 1.0f : 0.01f);
                const bool accumulate = (M + N + K / 32) % 2;
                const auto C0 = random_vector((size_t)M * ldc, seed++);
                auto C = C0;
                k::gemm_nt_q8_q8(M, N, K, A.data(), lda, W.data(), C.data(), ldc, accumulate);
                const auto scales4 = k::q8_scales_by4(W.data(), N, K);
                auto C_packed = C0;
                k::gemm_nt_q8_q8(M, N, K, A.data(), lda, W.data(), C_packed.data(), ldc, accumulate, scales4.data());
                auto C_ref = C0;
                ref::gemm_nt_q8_q8(M, N, K, A.data(), lda, W.data(), C_ref.data(), ldc, accumulate);
                for (int i = 0; i < M; ++i) {
                    CAPTURE(i);
                    const std::vector<float> x(A.begin() + (std::ptrdiff_t)i * lda, A.begin() + (std::ptrdiff_t)i * lda + K);
                    std::vector<float> y(C0.begin() + (std::ptrdiff_t)i * ldc, C0.begin() + (std::ptrdiff_t)i * ldc + N);
                    const auto y0 = y;
                    k::gemv_q8_q8(N, K, W.data(), x.data(), y.data(), accumulate);
                    const auto budget = q8_q8_rounding_budget(W, N, K, x, y0, accumulate);
                    for (int j = 0; j < N; ++j) {
                        const size_t at = (size_t)i * ldc + j;
                        CHECK(bits(C[at]) == bits(y[j]));
                        CHECK(bits(C_packed[at]) == bits(y[j]));
                        CHECK(std::fabs(C[at] - C_ref[at]) <= budget[j]);
                    }
                    // The padding columns of C stay as they were.
                    for (int j = N; j < ldc; ++j) {
                        CHECK(bits(C[(size_t)i * ldc + j]) == bits(C0[(size_t)i * ldc + j]));
                        CHECK(bits(C_packed[(size_t)i * ldc + j]) == bits(C0[(size_t)i * ldc + j]));
                    }
                }
            }
    std::vector<k::BlockQ8_0> W(4);
    std::vector<float> buf(256);
    CHECK_THROWS_AS(k::gemm_nt_q8_q8(2, 1, 48, buf.data(), 48, W.data(), buf.data(), 1), attnlab::Error);
    CHECK_THROWS_AS(ref::gemm_nt_q8_q8(2, 1, 40, buf.data(), 40, W.data(), buf.data(), 1), attnlab::Error);
    CHECK_THROWS_AS(k::gemm_nt_q8_q8(2, 1, 32, buf.data(), 16, W.data(), buf.data(), 1), attnlab::Error);  // lda < K
    CHECK_THROWS_AS(k::gemm_nt_q8_q8(2, 4, 32, buf.data(), 32, W.data(), buf.data(), 3), attnlab::Error);  // ldc < N
    CHECK_THROWS_AS(k::gemm_nt_q8_q8(-1, 1, 32, buf.data(), 32, W.data(), buf.data(), 1), attnlab::Error);
    k::gemm_nt_q8_q8(0, 4, 32, nullptr, 32, nullptr, nullptr, 4);  // no rows: nothing to read or write
}

TEST_CASE("gemm_nt_q8_q8_rows4: on the interleaved weights, gemm_nt_q8_q8's results bit for bit") {
    unsigned seed = 3500;
    // Up to 20 rows: two full passes of 8 and every remainder; N ends on a partial group of 4 and crosses the pool's
    // 64-row pieces.
    for (int M : {1, 2, 3, 5, 7, 8, 9, 16, 20})
        for (int N : {1, 3, 4, 6, 70, 131})
            for (int K : {32, 96, 512}) {
                INFO("M=" << M << " N=" << N << " K=" << K);
                const int lda = K + 5, ldc = N + 2;
                const auto W = quantize(random_vector((size_t)N * K, seed++));
                auto A = random_vector((size_t)M * lda, seed++, -2.0f, 2.0f);
                for (int i = 0; i < M; ++i)
                    for (int j = 0; j < K; ++j) A[(size_t)i * lda + j] *= (i % 3 == 2 ? 50.0f : 1.0f) * (j % 7 ? 1.0f : 0.01f);
                const bool accumulate = (M + N) % 2;
                const auto C0 = random_vector((size_t)M * ldc, seed++);
                const auto scales4 = k::q8_scales_by4(W.data(), N, K);
                const auto W4 = k::interleave_q8_rows4(W.data(), N, K);
                auto expected = C0, got = C0;
                k::gemm_nt_q8_q8(M, N, K, A.data(), lda, W.data(), expected.data(), ldc, accumulate, scales4.data());
                k::gemm_nt_q8_q8_rows4(M, N, K, A.data(), lda, W4.data(), scales4.data(), got.data(), ldc, accumulate);
                for (size_t at = 0; at < got.size(); ++at) {
                    CAPTURE(at);
                    CHECK(bits(got[at]) == bits(expected[at]));  // padding columns included: left as they were
                }
            }
    std::vector<float> buf(256);
    const auto W = quantize(random_vector(64, 1));
    const auto W4 = k::interleave_q8_rows4(W.data(), 2, 32);
    const auto scales4 = k::q8_scales_by4(W.data(), 2, 32);
    CHECK_THROWS_AS(k::gemm_nt_q8_q8_rows4(2, 2, 48, buf.data(), 48, W4.data(), scales4.data(), buf.data(), 2), attnlab::Error);
    CHECK_THROWS_AS(k::gemm_nt_q8_q8_rows4(2, 2, 32, buf.data(), 32, W4.data(), nullptr, buf.data(), 2), attnlab::Error);
    CHECK_THROWS_AS(k::gemm_nt_q8_q8_rows4(2, 2, 32, buf.data(), 32, W4.data(), scales4.data(), buf.data(), 1), attnlab::Error);
}

TEST_CASE("interleave_q8_rows4: the layout written out, bad shapes refused") {
    // W [5, 32]: value 32·row + column (as int8, wrapping), so every byte names its source.
    std::vector<k::BlockQ8_0> W(5);
    for (int r = 0; r < 5; ++r) {
        W[r].scale = k::f32_to_f16(1.0f);
        for (int c = 0; c < 32; ++c) W[r].q[c] = int8_t(uint8_t(32 * r + c));
    }
    const auto W4 = k::interleave_q8_rows4(W.data(), 5, 32);
    REQUIRE(W4.size() == 2u * 32 * 4);
    for (int g = 0; g < 2; ++g)
        for (int quad = 0; quad < 8; ++quad)
            for (int half = 0; half < 2; ++half)
                for (int r = 0; r < 4; ++r)
                    for (int e = 0; e < 2; ++e) {
                        const int row = std::min(4 * g + r, 4);  // rows past M repeat the last one
                        CHECK(W4[(size_t)g * 128 + quad * 16 + half * 8 + r * 2 + e] == W[row].q[4 * quad + 2 * half + e]);
                    }
    CHECK_THROWS_AS(k::interleave_q8_rows4(W.data(), 5, 40), attnlab::Error);
    CHECK_THROWS_AS(k::interleave_q8_rows4(W.data(), 0, 32), attnlab::Error);
}

TEST_CASE("pack_panels: the layout written out, panel_row inverts it, bad shapes refused") {
    // W [3, 2] with ldw 3: one panel of 16 rows, column by column, rows 3..15 zero.
    const std::vector<float> W = {1, 2, -1, 3, 4, -1, 5, 6, -1};
    const auto P = k::pack_panels(W.data(), 3, 2, 3);
    REQUIRE(P.size() == std::size_t(2 * k::kPanelRows));
    CHECK(P[0] == 1);
    CHECK(P[1] == 3);
    CHECK(P[2] == 5);
    CHECK(P[3] == 0);
    CHECK(P[k::kPanelRows + 0] == 2);
    CHECK(P[k::kPanelRows + 2] == 6);
    for (int M : {1, 15, 16, 17, 40})
        for (int N : {1, 5, 33}) {
            const auto A = random_vector((size_t)M * (N + 2), 900 + M * N);
            const auto packed = k::pack_panels(A.data(), M, N, N + 2);
            CHECK(packed.size() == (size_t)(M + 15) / 16 * 16 * N);
            std::vector<float> row(N);
            for (int r = 0; r < M; ++r) {
                k::panel_row(packed.data(), M, N, r, row.data());
                CHECK(std::equal(row.begin(), row.end(), A.begin() + (std::ptrdiff_t)r * (N + 2)));
            }
        }
    CHECK_THROWS_AS(k::pack_panels(W.data(), 3, 4, 3), attnlab::Error);  // ldw < N
    CHECK_THROWS_AS(k::pack_panels(W.data(), 0, 2, 3), attnlab::Error);
    CHECK_THROWS_AS(k::panel_row(P.data(), 3, 2, 3, std::vector<float>(2).data()), attnlab::Error);
}

TEST_CASE("gemv_panels matches the reference and gemv; gemm_panels is each row's gemv_panels bit for bit") {
    unsigned seed = 4000;
    for (int M : {1, 3, 15, 16, 17, 33, 64, 65, 130})
        for (int N : {1, 2, 7, 16, 33, 100}) {
            INFO("M=" << M << " N=" << N);
            const auto W = random_vector((size_t)M * N, seed++);
            const auto P = k::pack_panels(W.data(), M, N, N);
            const auto x = random_vector((size_t)N, seed++);
            for (bool accumulate : {false, true}) {
                const auto y0 = random_vector((size_t)M + 3, seed++);
                auto y = y0, y_ref = y0, y_rowmajor = y0;
                k::gemv_panels(M, N, P.data(), x.data(), y.data(), accumulate);
                ref::gemv_panels(M, N, P.data(), x.data(), y_ref.data(), accumulate);
                ref::gemv(M, N, W.data(), N, x.data(), y_rowmajor.data(), accumulate);
                check_close(y, y_ref, 1e-5f * (N + 1), 1e-5f, "gemv_panels");   // the 3 padding values included
                check_close(y_ref, y_rowmajor, 1e-5f * (N + 1), 1e-5f, "reference gemv_panels vs gemv");
            }
        }
    // Up to 11 rows (every remainder of the row pairs and groups), and past one and two 64-row blocks.
    for (int rows : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 64, 65, 150})
        for (int N : {1, 16, 17, 70})
            for (int K : {1, 9, 64}) {
                INFO("rows=" << rows << " N=" << N << " K=" << K);
                const int lda = K + 5, ldc = N + 3;
                const auto W = random_vector((size_t)N * K, seed++);
                const auto P = k::pack_panels(W.data(), N, K, K);
                const auto A = random_vector((size_t)rows * lda, seed++);
                const bool accumulate = (rows + N) % 2;
                const auto C0 = random_vector((size_t)rows * ldc, seed++);
                auto C = C0, C_ref = C0;
                k::gemm_panels(rows, N, K, A.data(), lda, P.data(), C.data(), ldc, accumulate);
                ref::gemm_panels(rows, N, K, A.data(), lda, P.data(), C_ref.data(), ldc, accumulate);
                check_close(C, C_ref, 1e-5f * (K + 1), 1e-5f, "gemm_panels");
                for (int i = 0; i < rows; ++i) {
                    std::vector<float> y(C0.begin() + (std::ptrdiff_t)i * ldc, C0.begin() + (std::ptrdiff_t)i * ldc + N);
                    k::gemv_panels(N, K, P.data(), A.data() + (size_t)i * lda, y.data(), accumulate);
                    for (int j = 0; j < N; ++j) CHECK(bits(C[(size_t)i * ldc + j]) == bits(y[j]));
                    for (int j = N; j < ldc; ++j) CHECK(bits(C[(size_t)i * ldc + j]) == bits(C0[(size_t)i * ldc + j]));
                }
            }
    std::vector<float> buf(64);
    CHECK_THROWS_AS(k::gemv_panels(-1, 4, buf.data(), buf.data(), buf.data()), attnlab::Error);
    CHECK_THROWS_AS(k::gemm_panels(2, 4, 8, buf.data(), 4, buf.data(), buf.data(), 4), attnlab::Error);  // lda < K
    CHECK_THROWS_AS(k::gemm_panels(2, 4, 8, buf.data(), 8, buf.data(), buf.data(), 3), attnlab::Error);  // ldc < N
    k::gemm_panels(0, 4, 8, nullptr, 8, nullptr, nullptr, 4);
}

// ------------------------------------------------------------------------------------------------
// Elementwise and row kernels.

TEST_CASE("activations match std:: math") {
    // -20..20 in fine steps plus large magnitudes.
    std::vector<float> x;
    for (int i = -4000; i <= 4000; ++i) x.push_back(i * 0.005f);
    for (float big : {30.0f, 88.0f, 100.0f, 1e4f, 1e30f}) {
        x.push_back(big);
        x.push_back(-big);
    }
    for (k::Activation act : kActivations) {
        auto y = x;
        k::activate(y.data(), y.size(), act);
        std::vector<float> expected(x.size());
        for (size_t i = 0; i < x.size(); ++i) {
            const double v = x[i];
            double e = v;
            switch (act) {
                case k::Activation::none: e = v; break;
                case k::Activation::relu: e = v > 0 ? v : 0; break;
                case k::Activation::relu6: e = std::min(std::max(v, 0.0), 6.0); break;
                case k::Activation::tanh: e = std::tanh(v); break;
                case k::Activation::sigmoid: e = 1.0 / (1.0 + std::exp(-v)); break;
                case k::Activation::gelu: e = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); break;
            }
            expected[i] = float(e);
        }
        INFO("activation " << int(act));
        check_close(y, expected, 1e-7f, 2e-6f, "activation vs double-precision std::");
        auto r = x;
        ref::activate(r.data(), r.size(), act);
        check_close(r, expected, 1e-7f, 2e-6f, "reference activation vs double-precision std::");
    }
}

TEST_CASE("bias_act matches the reference") {
    unsigned seed = 1300;
    for (k::Activation act : kActivations)
        for (int rows : {1, 3})
            for (int cols : {1, 5, 16, 33, 100})
                for (bool with_bias : {false, true}) {
                    const int ldy = cols + 2;
                    auto y = random_vector((size_t)rows * ldy, seed++, -4.0f, 4.0f);
                    const auto bias = random_vector(cols, seed++);
                    auto y_ref = y;
                    k::bias_act(rows, cols, y.data(), ldy, with_bias ? bias.data() : nullptr, act);
                    ref::bias_act(rows, cols, y_ref.data(), ldy, with_bias ? bias.data() : nullptr, act);
                    INFO("act " << int(act) << " rows " << rows << " cols " << cols << " bias " << with_bias);
                    check_close(y, y_ref, 1e-6f, 2e-6f, "bias_act");
                }
}

TEST_CASE("variants::additive_scores_fused: v · tanh(query + key) per key, as in double precision") {
    unsigned seed = 1450;
    for (int S : {0, 1, 3, 7})
        for (int A : {1, 3, 4, 5, 8, 33, 256}) {
            const int ldk = A + 3;
            const auto query_part = random_vector(A, seed++, -3.0f, 3.0f);
            const auto keys = random_vector((size_t)std::max(S, 1) * ldk, seed++, -3.0f, 3.0f);
            const auto v = random_vector(A, seed++);
            std::vector<float> scores(S + 1, -7.0f), expected(S + 1, -7.0f);
            k::variants::additive_scores_fused(S, A, query_part.data(), keys.data(), ldk, v.data(), scores.data());
            for (int s = 0; s < S; ++s) {
                double sum = 0;
                for (int a = 0; a < A; ++a)
                    sum += double(v[a]) * std::tanh(double(query_part[a]) + double(keys[(size_t)s * ldk + a]));
                expected[s] = float(sum);
            }
            INFO("S " << S << " A " << A);
            check_close(scores, expected, 2e-6f * A, 2e-6f, "additive_scores_fused");
        }
    std::vector<float> buf(16);
    CHECK_THROWS_AS(k::variants::additive_scores_fused(2, 4, buf.data(), buf.data(), 3, buf.data(), buf.data()),
                    attnlab::Error);
    CHECK_THROWS_AS(k::variants::additive_scores_fused(-1, 4, buf.data(), buf.data(), 4, buf.data(), buf.data()),
                    attnlab::Error);
}

TEST_CASE("gru_gates matches the reference, in place too") {
    unsigned seed = 1500;
    for (int rows : {1, 4})
        for (int H : {1, 3, 16, 37, 256}) {
            const auto input_gates = random_vector((size_t)rows * 3 * H, seed++, -6.0f, 6.0f);
            const auto hidden_gates = random_vector((size_t)rows * 3 * H, seed++, -6.0f, 6.0f);
            const auto h = random_vector((size_t)rows * H, seed++);
            std::vector<float> out((size_t)rows * H), expected(out.size());
            k::gru_gates(rows, H, input_gates.data(), hidden_gates.data(), h.data(), out.data());
            ref::gru_gates(rows, H, input_gates.data(), hidden_gates.data(), h.data(), expected.data());
            INFO("rows " << rows << " H " << H);
            check_close(out, expected, 1e-6f, 2e-6f, "gru_gates");
            auto state = h;  // h_out aliasing h, as gru_sequence steps it
            k::gru_gates(rows, H, input_gates.data(), hidden_gates.data(), state.data(), state.data());
            CHECK(state == out);
        }
}

TEST_CASE("softmax and log_softmax match the reference, with masks") {
    unsigned seed = 1700;
    for (int rows : {1, 2, 5})
        for (int cols : {1, 2, 7, 16, 33, 100}) {
            const int ldx = cols + 1;
            for (int mask_kind = 0; mask_kind < 3; ++mask_kind) {  // none, per row, broadcast
                std::vector<uint8_t> mask((size_t)rows * cols);
                std::mt19937 rng(seed);
                for (auto& m : mask) m = rng() % 3 != 0;
                if (mask_kind == 1) std::fill(mask.begin(), mask.begin() + cols, 0);  // row 0 fully masked
                const uint8_t* mask_ptr = mask_kind == 0 ? nullptr : mask.data();
                const int ldm = mask_kind == 1 ? cols : 0;
                const auto x = random_vector((size_t)rows * ldx, seed++, -10.0f, 10.0f);
                INFO("rows " << rows << " cols " << cols << " mask kind " << mask_kind);

                auto s = x, s_ref = x;
                k::softmax_rows(rows, cols, s.data(), ldx, mask_ptr, ldm);
                ref::softmax_rows(rows, cols, s_ref.data(), ldx, mask_ptr, ldm);
                check_close(s, s_ref, 1e-7f, 1e-5f, "softmax");
                if (mask_kind == 1)
                    for (int c = 0; c < cols; ++c) CHECK(s[c] == 0.0f);

                auto l = x, l_ref = x;
                k::log_softmax_rows(rows, cols, l.data(), ldx, mask_ptr, ldm);
                ref::log_softmax_rows(rows, cols, l_ref.data(), ldx, mask_ptr, ldm);
                for (size_t i = 0; i < l.size(); ++i) {
                    if (std::isinf(l_ref[i])) {
                        CHECK(l[i] == l_ref[i]);
                        l[i] = l_ref[i] = 0.0f;  // compared; keep check_close to the finite ones
                    }
                }
                check_close(l, l_ref, 1e-6f, 1e-5f, "log_softmax");
            }
        }
}

TEST_CASE("softmax of extreme inputs stays finite and normalized") {
    const int cols = 37;
    std::vector<float> x(2 * cols);
    for (int c = 0; c < cols; ++c) {
        x[c] = (c % 2 ? 1e30f : -1e30f) * (1.0f + c * 1e-3f);
        x[cols + c] = 1e4f + c;  // exp(1e4) alone would overflow
    }
    auto s = x;
    k::softmax_rows(2, cols, s.data(), cols);
    for (int r = 0; r < 2; ++r) {
        double total = 0;
        for (int c = 0; c < cols; ++c) {
            CHECK(std::isfinite(s[r * cols + c]));
            total += s[r * cols + c];
        }
        CHECK(total == doctest::Approx(1.0).epsilon(1e-5));
    }
    CHECK(s[35] == doctest::Approx(1.0));  // the largest of row 0 (1.035e30) takes everything
    CHECK(s[2 * cols - 1] == doctest::Approx(1.0 / (1.0 + std::exp(-1.0) + std::exp(-2.0) + std::exp(-3.0) +
                                                     std::exp(-4.0) + std::exp(-5.0) + std::exp(-6.0)))
                                 .epsilon(1e-3));
    auto l = x;
    k::log_softmax_rows(2, cols, l.data(), cols);
    for (float v : l) CHECK(!std::isnan(v));
    CHECK(l[2 * cols - 1] == doctest::Approx(std::log(s[2 * cols - 1])).epsilon(1e-4));
}

TEST_CASE("layer_norm_rows matches the reference, in place and out of place") {
    unsigned seed = 2100;
    for (int rows : {1, 3})
        for (int cols : {1, 2, 7, 16, 33, 512}) {
            const auto x = random_vector((size_t)rows * cols, seed++, -3.0f, 5.0f);  // nonzero mean
            const auto gamma = random_vector(cols, seed++), beta = random_vector(cols, seed++);
            for (int affine = 0; affine < 2; ++affine) {
                const float* g = affine ? gamma.data() : nullptr;
                const float* b = affine ? beta.data() : nullptr;
                std::vector<float> y(x.size()), y_ref(x.size());
                k::layer_norm_rows(rows, cols, x.data(), y.data(), g, b, 1e-5f);
                ref::layer_norm_rows(rows, cols, x.data(), y_ref.data(), g, b, 1e-5f);
                INFO("rows " << rows << " cols " << cols << " affine " << affine);
                check_close(y, y_ref, 1e-5f, 1e-5f, "layer_norm");
                auto inplace = x;
                k::layer_norm_rows(rows, cols, inplace.data(), inplace.data(), g, b, 1e-5f);
                check_close(inplace, y_ref, 1e-5f, 1e-5f, "layer_norm in place");
            }
        }
}

TEST_CASE("embedding copies rows and rejects bad ids") {
    const auto table = random_vector(5 * 19, 3);
    const int32_t ids[4] = {4, 0, 4, 2};
    std::vector<float> out(4 * 19), out_ref(4 * 19);
    k::embedding(table.data(), 5, 19, ids, 4, out.data());
    ref::embedding(table.data(), 5, 19, ids, 4, out_ref.data());
    check_close(out, out_ref, kExact, 0, "embedding");
    check_close(out.data() + 19, table.data(), 19, kExact, 0, "embedding row 0");
    const int32_t negative[2] = {0, -1}, too_big[1] = {5};
    CHECK_THROWS_AS(k::embedding(table.data(), 5, 19, negative, 2, out.data()), attnlab::Error);
    CHECK_THROWS_AS(k::embedding(table.data(), 5, 19, too_big, 1, out.data()), attnlab::Error);
    CHECK_THROWS_AS(ref::embedding(table.data(), 5, 19, too_big, 1, out.data()), attnlab::Error);
}

TEST_CASE("dot and axpy match the reference") {
    for (int n : {0, 1, 3, 8, 15, 16, 31, 33, 100, 1000}) {
        const auto a = random_vector(n, n + 1), b = random_vector(n, n + 2);
        CHECK(k::dot(a.data(), b.data(), n) == doctest::Approx(ref::dot(a.data(), b.data(), n)).epsilon(1e-5));
        auto y = random_vector(n, n + 3);
        auto y_ref = y;
        k::axpy(n, -0.75f, a.data(), y.data());
        ref::axpy(n, -0.75f, a.data(), y_ref.data());
        check_close(y, y_ref, 1e-6f, 1e-6f, "axpy");
    }
}

TEST_CASE("read_checksum is the wrapping sum of the little-endian 32-bit words, tail zero-padded") {
    std::vector<uint8_t> bytes(4099);
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 2654435761u >> 13);
    for (std::size_t n : {0, 1, 3, 4, 5, 63, 64, 65, 255, 256, 257, 4096, 4099}) {
        for (std::size_t offset : {0, 1, 2}) {   // any alignment: Q8_0 blocks are 34 bytes
            if (offset + n > bytes.size()) continue;
            uint32_t expected = 0;
            for (std::size_t i = 0; i < n; ++i) expected += uint32_t(bytes[offset + i]) << (8 * (i % 4));
            CAPTURE(n);
            CAPTURE(offset);
            CHECK(k::read_checksum(bytes.data() + offset, n) == expected);
        }
    }
}

TEST_CASE("argmax and top_k: ties, NaN, agreement with the reference") {
    for (int n : {1, 2, 5, 16, 17, 100, 1001}) {
        auto x = random_vector(n, n * 7);
        for (auto& v : x) v = std::round(v * 4.0f);  // few distinct values: many ties
        INFO("n " << n);
        CHECK(k::argmax(x.data(), n) == ref::argmax(x.data(), n));
        const int kk = std::min(n, 7);
        std::vector<int> idx(kk), idx_ref(kk);
        std::vector<float> val(kk), val_ref(kk);
        k::top_k(x.data(), n, kk, idx.data(), val.data());
        ref::top_k(x.data(), n, kk, idx_ref.data(), val_ref.data());
        CHECK(idx == idx_ref);
        CHECK(val == val_ref);
        for (int i = 1; i < kk; ++i) CHECK((val[i - 1] > val[i] || (val[i - 1] == val[i] && idx[i - 1] < idx[i])));
    }
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> with_nan(40, 0.0f);
    with_nan[3] = 9.0f;
    with_nan[20] = nan;
    with_nan[33] = 2.0f;
    CHECK(k::argmax(with_nan.data(), 40) == ref::argmax(with_nan.data(), 40));
    CHECK(k::argmax(with_nan.data(), 40) == 3);
    with_nan[0] = nan;
    CHECK(k::argmax(with_nan.data(), 40) == ref::argmax(with_nan.data(), 40));
    int idx[2];
    float val[2];
    k::top_k(with_nan.data(), 40, 2, idx, val);
    CHECK(idx[0] == 3);
    CHECK(idx[1] == 33);
    CHECK_THROWS_AS(k::top_k(with_nan.data(), 40, 41, idx, val), attnlab::Error);
    CHECK_THROWS_AS(k::argmax(with_nan.data(), 0), attnlab::Error);
}

TEST_CASE("simd_name names an instruction set") {
    const std::string name = k::simd_name();
    CHECK(!name.empty());
#if defined(__wasm_simd128__)
    CHECK(name.find("wasm") != std::string::npos);
#endif
}
