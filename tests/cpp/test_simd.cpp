// The vector abstraction's transcendental functions and Q8_0 conversions (src/attnlab/kernels/simd.hpp) as the test
// binary's own target compiles them: natively xsimd's and SSE2 (baseline), in the wasm build SIMD128, spelt directly or
// through Emscripten's SSE2.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "attnlab/kernels/simd.hpp"

namespace simd = attnlab::simd;

namespace {

std::vector<float> exp_of(const std::vector<float>& x) {
    std::vector<float> y(x.size());
    for (std::size_t i = 0; i + simd::kWidth <= x.size(); i += simd::kWidth)
        simd::store(y.data() + i, simd::exp(simd::load(x.data() + i)));
    return y;
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
