// The vector abstraction's transcendental functions and Q8_0 conversions (src/attnlab/kernels/simd.hpp) as the test
// binary's own target compiles them: natively xsimd's and SSE2 (baseline), in the wasm build SIMD128, spelt directly or
// through Emscripten's SSE2.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "attnlab/kernels/simd.hpp"

namespace simd = attnlab::simd;

namespace {

template <class Function>
std::vector<float> apply(Function function, const std::vector<float>& x) {
    std::vector<float> y(x.size());
    for (std::size_t i = 0; i + simd::kWidth <= x.size(); i += simd::kWidth)
        simd::store(y.data() + i, function(simd::load(x.data() + i)));
    return y;
}

std::vector<float> exp_of(const std::vector<float>& x) {
    return apply([](const simd::Vec& v) { return simd::exp(v); }, x);
}

std::vector<float> tanh_of(const std::vector<float>& x) {
    return apply([](const simd::Vec& v) { return simd::tanh(v); }, x);
}

// Floats of one sign, ordered by their bits, so the difference of two is their distance in ulp.
int64_t ulp_distance(float a, float b) {
    int32_t ia, ib;
    std::memcpy(&ia, &a, 4);
    std::memcpy(&ib, &b, 4);
    return ia > ib ? int64_t(ia) - ib : int64_t(ib) - ia;
}

}  // namespace

TEST_CASE("simd::exp: within 2 ulp on [-87.33, 88.0]; 0 below, +inf above, NaN stays NaN") {
    std::vector<float> x;
    for (int i = -87330; i <= 88000; i += 7) x.push_back(static_cast<float>(i) * 1e-3f);
    for (float v : {0.0f, -0.0f, 0.5f, -0.5f, 1e-30f, -1e-30f}) x.push_back(v);
    while (x.size() % simd::kWidth) x.push_back(1.0f);
    const std::vector<float> y = exp_of(x);
    int worst_ulp = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const float expected = static_cast<float>(std::exp(static_cast<double>(x[i])));
        const float ulp = std::nextafter(expected, std::numeric_limits<float>::infinity()) - expected;
        const int off = static_cast<int>(std::lround(std::fabs(static_cast<double>(y[i]) - expected) / ulp));
        if (off > worst_ulp) worst_ulp = off;
    }
    CHECK(worst_ulp <= 2);

    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> edges = {-inf, -1000.0f, -88.0f, 89.0f, 1000.0f, inf, nan, -nan};
    while (edges.size() % simd::kWidth) edges.push_back(0.0f);
    const std::vector<float> e = exp_of(edges);
    CHECK(e[0] == 0.0f);  // the softmax masks rely on exp(-inf) = 0 exactly
    CHECK(e[1] == 0.0f);
    CHECK((e[2] >= 0.0f && e[2] < 1e-37f));  // 0 in wasm, a subnormal or 0 natively
    CHECK(e[3] == inf);
    CHECK(e[4] == inf);
    CHECK(e[5] == inf);
    CHECK(std::isnan(e[6]));
    CHECK(std::isnan(e[7]));
}

TEST_CASE("simd::tanh: within 6 ulp of tanh on every 101st float of [-10, 10]; odd, ±1 beyond, NaN stays NaN") {
    std::vector<float> x;
    for (uint32_t bits = 0; bits <= 0x41200000u; bits += 101) {  // 0x41200000 is 10.0f
        float v;
        std::memcpy(&v, &bits, 4);
        x.push_back(v);
        x.push_back(-v);
    }
    while (x.size() % simd::kWidth) x.push_back(0.0f);
    const std::vector<float> y = tanh_of(x);
    int64_t worst_ulp = 0;
    float worst_at = 0;
    std::size_t wrong_signs = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const float expected = static_cast<float>(std::tanh(static_cast<double>(x[i])));
        if (std::signbit(y[i]) != std::signbit(expected)) ++wrong_signs;
        const int64_t off = ulp_distance(y[i], expected);
        if (off > worst_ulp) worst_ulp = off, worst_at = x[i];
    }
    CHECK(wrong_signs == 0);
    INFO("worst at x = " << worst_at);
    CHECK(worst_ulp <= 6);

    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> edges = {-inf, -1e30f, -9.5f, 9.5f, 1e30f, inf, nan, -nan, 0.0f, -0.0f, 1e-30f, -1e-30f};
    while (edges.size() % simd::kWidth) edges.push_back(0.0f);
    const std::vector<float> t = tanh_of(edges);
    for (int i = 0; i < 3; ++i) CHECK(t[i] == -1.0f);
    for (int i = 3; i < 6; ++i) CHECK(t[i] == 1.0f);
    CHECK(std::isnan(t[6]));
    CHECK(std::isnan(t[7]));
    CHECK((t[8] == 0.0f && !std::signbit(t[8])));
    CHECK((t[9] == 0.0f && std::signbit(t[9])));
    CHECK(t[10] == 1e-30f);
    CHECK(t[11] == -1e-30f);
}

TEST_CASE("simd::q8_block_to_f32: every int8 value times a block scale, the scalar product's bits") {
    for (float d : {1.0f, 0.0123f, -3.5e-3f, 6.1e-5f, 5.96e-8f, 65504.0f, 0.0f}) {
        for (int start = -128; start < 128; start += 32) {
            int8_t q[32];
            for (int j = 0; j < 32; ++j) q[j] = static_cast<int8_t>(start + j);
            float out[32];
            simd::q8_block_to_f32(q, d, out);
            for (int j = 0; j < 32; ++j) CHECK(out[j] == d * static_cast<float>(q[j]));
        }
    }
}
