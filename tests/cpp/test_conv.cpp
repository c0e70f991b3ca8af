// NHWC convolutions: TF SAME geometry, SIMD kernels against the scalar references, and hand-computed cases.
#include <doctest/doctest.h>

#include <vector>

#include "attnlab/error.hpp"
#include "attnlab/kernels/conv.hpp"
#include "test_support.hpp"

using namespace attnlab::kernels;
using attnlab::test::check_close;
using attnlab::test::random_vector;

TEST_CASE("conv_geometry reproduces TensorFlow SAME and VALID") {
    // TF SAME on 224 with a 3x3 stride-2 kernel: 112 outputs, total padding 1, all of it bottom/right.
    CHECK(conv_geometry(224, 3, 2, Padding::same).out == 112);
    CHECK(conv_geometry(224, 3, 2, Padding::same).pad_before == 0);
    CHECK(conv_geometry(7, 3, 2, Padding::same).out == 4);  // odd size: total 2, 1 before
    CHECK(conv_geometry(7, 3, 2, Padding::same).pad_before == 1);
    CHECK(conv_geometry(14, 3, 1, Padding::same).pad_before == 1);
    CHECK(conv_geometry(5, 1, 1, Padding::same).pad_before == 0);
    CHECK(conv_geometry(7, 7, 1, Padding::valid).out == 1);
    CHECK(conv_geometry(8, 3, 2, Padding::valid).out == 3);
    CHECK_THROWS_AS(conv_geometry(0, 3, 1, Padding::same), attnlab::Error);
    CHECK_THROWS_AS(conv_geometry(5, 3, 0, Padding::same), attnlab::Error);
    CHECK_THROWS_AS(conv_geometry(2, 3, 1, Padding::valid), attnlab::Error);
}

TEST_CASE("reference conv2d on a hand-computed case: SAME stride 2 pads bottom/right only") {
    // x 4x4x1 = 1..16, one 3x3 filter of ones, stride 2 SAME -> 2x2; windows start at rows/cols 0 and 2.
    std::vector<float> x(16);
    for (int i = 0; i < 16; ++i) x[i] = float(i + 1);
    std::vector<float> w(9, 1.0f), y(4), expected = {1 + 2 + 3 + 5 + 6 + 7 + 9 + 10 + 11, 3 + 4 + 7 + 8 + 11 + 12,
                                                     9 + 10 + 11 + 13 + 14 + 15, 11 + 12 + 15 + 16};
    const float bias = -50.0f;
    reference::conv2d(x.data(), 4, 4, 1, w.data(), &bias, 1, 3, 2, Padding::same, Activation::none, y.data(), nullptr);
    for (auto& e : expected) e += bias;
    check_close(y, expected, 0.0f, 0.0f, "reference conv2d");
    reference::conv2d(x.data(), 4, 4, 1, w.data(), &bias, 1, 3, 2, Padding::same, Activation::relu6, y.data(), nullptr);
    CHECK(y[0] == 4.0f);  // 54 - 50
    CHECK(y[1] == 0.0f);  // 45 - 50 < 0
    CHECK(y[2] == 6.0f);  // 72 - 50, clipped
}

namespace {

void check_conv(int h, int w, int cin, int cout, int k, int stride, Padding pad, Activation act, unsigned seed) {
    CAPTURE(h);
    CAPTURE(w);
    CAPTURE(cin);
    CAPTURE(cout);
    CAPTURE(k);
    CAPTURE(stride);
    const auto x = random_vector(std::size_t(h) * w * cin, seed);
    const auto weight = random_vector(std::size_t(cout) * k * k * cin, seed + 1, -0.5f, 0.5f);
    const auto bias = random_vector(cout, seed + 2);
    const ConvGeometry gr = conv_geometry(h, k, stride, pad), gc = conv_geometry(w, k, stride, pad);
    const std::size_t n = std::size_t(gr.out) * gc.out * cout;
    std::vector<float> y(n, -7.0f), expected(n, 7.0f);
    std::vector<float> scratch(conv2d_scratch_size(h, w, cin, k, stride, pad));
    conv2d(x.data(), h, w, cin, weight.data(), bias.data(), cout, k, stride, pad, act, y.data(),
           scratch.empty() ? nullptr : scratch.data());
    reference::conv2d(x.data(), h, w, cin, weight.data(), bias.data(), cout, k, stride, pad, act, expected.data(),
                      nullptr);
    check_close(y, expected, 1e-5f, 1e-5f, "conv2d vs reference");
}

void check_depthwise(int h, int w, int c, int k, int stride, Padding pad, Activation act, unsigned seed,
                     bool with_bias = true) {
    CAPTURE(h);
    CAPTURE(w);
    CAPTURE(c);
    CAPTURE(k);
    CAPTURE(stride);
    const auto x = random_vector(std::size_t(h) * w * c, seed);
    const auto weight = random_vector(std::size_t(k) * k * c, seed + 1);
    const auto bias = random_vector(c, seed + 2, 0.0f, 3.0f);
    const ConvGeometry gr = conv_geometry(h, k, stride, pad), gc = conv_geometry(w, k, stride, pad);
    const std::size_t n = std::size_t(gr.out) * gc.out * c;
    std::vector<float> y(n, -7.0f), expected(n, 7.0f);
    const float* b = with_bias ? bias.data() : nullptr;
    depthwise_conv2d(x.data(), h, w, c, weight.data(), b, k, stride, pad, act, y.data());
    reference::depthwise_conv2d(x.data(), h, w, c, weight.data(), b, k, stride, pad, act, expected.data());
    check_close(y, expected, 1e-5f, 1e-5f, "depthwise_conv2d vs reference");
}

}  // namespace

TEST_CASE("conv2d (im2col / pointwise GEMM) matches the scalar reference") {
    check_conv(9, 9, 3, 32, 3, 2, Padding::same, Activation::relu6, 1);    // the MobileNetV2 stem, small
    check_conv(224, 224, 3, 32, 3, 2, Padding::same, Activation::relu6, 2);  // the real stem
    check_conv(8, 7, 5, 6, 3, 1, Padding::same, Activation::none, 3);
    check_conv(6, 5, 16, 24, 1, 1, Padding::same, Activation::none, 4);  // 1x1: one GEMM, no scratch
    check_conv(7, 7, 37, 19, 1, 1, Padding::valid, Activation::relu, 5);
    check_conv(9, 8, 4, 3, 1, 2, Padding::same, Activation::relu6, 6);  // strided 1x1 goes through im2col
    check_conv(10, 9, 2, 5, 3, 2, Padding::valid, Activation::none, 7);
    check_conv(5, 6, 3, 4, 5, 3, Padding::same, Activation::tanh, 8);
}

TEST_CASE("depthwise_conv2d (SIMD over channels) matches the scalar reference") {
    check_depthwise(112, 112, 32, 3, 1, Padding::same, Activation::relu6, 11);
    check_depthwise(112, 112, 96, 3, 2, Padding::same, Activation::relu6, 12);
    check_depthwise(7, 7, 960, 3, 1, Padding::same, Activation::relu6, 13);
    check_depthwise(5, 6, 13, 3, 2, Padding::same, Activation::none, 14);  // channel tail
    check_depthwise(7, 5, 3, 3, 1, Padding::valid, Activation::relu, 15, false);
    check_depthwise(9, 9, 21, 5, 2, Padding::same, Activation::sigmoid, 16);
    check_depthwise(1, 1, 8, 3, 1, Padding::same, Activation::relu6, 17);  // only the centre tap is inside
}

TEST_CASE("convolutions reject bad arguments") {
    std::vector<float> x(16, 1.0f), w(9, 1.0f), y(16);
    CHECK_THROWS_AS(conv2d(x.data(), 4, 4, 1, w.data(), nullptr, 1, 3, 2, Padding::same, Activation::none, y.data(),
                           nullptr),  // needs scratch
                    attnlab::Error);
    CHECK_THROWS_AS(conv2d(nullptr, 4, 4, 1, w.data(), nullptr, 1, 1, 1, Padding::same, Activation::none, y.data(),
                           nullptr),
                    attnlab::Error);
    CHECK_THROWS_AS(depthwise_conv2d(x.data(), 4, 4, 0, w.data(), nullptr, 3, 1, Padding::same, Activation::none,
                                     y.data()),
                    attnlab::Error);
    CHECK_THROWS_AS(depthwise_conv2d(x.data(), 2, 2, 1, w.data(), nullptr, 3, 1, Padding::valid, Activation::none,
                                     y.data()),
                    attnlab::Error);
}
