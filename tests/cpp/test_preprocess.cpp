// The image resize in front of the MobileNetV2 encoder (src/attnlab/image/preprocess.hpp): antialiased where an
// axis shrinks, bilinear where it grows, the identity at 224 × 224; and bit-for-bit parity with the Python twin
// (attnlab.nn.mobilenet_v2.resize_bilinear) on tests/fixtures/image/resize.gguf (scripts/make_resize_fixture.py).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "attnlab/image/preprocess.hpp"
#include "attnlab/io/gguf.hpp"
#include "test_support.hpp"

using namespace attnlab;

namespace {

// scripts/make_resize_fixture.py synthetic_rgba: a ramp, a one-pixel checkerboard, a product pattern, an alpha ramp.
std::vector<uint8_t> synthetic_rgba(int width, int height) {
    std::vector<uint8_t> px(std::size_t(width) * height * 4);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) {
            uint8_t* p = &px[(std::size_t(y) * width + x) * 4];
            p[0] = uint8_t((x * 7 + y * 13) % 256);
            p[1] = uint8_t(((x + y) % 2) * 255);
            p[2] = uint8_t((x * y) % 251);
            p[3] = uint8_t((x * 3) % 256);
        }
    return px;
}

// A grey image whose value at (x, y) is value(x, y), in all three channels.
template <typename F>
std::vector<uint8_t> grey_rgba(int width, int height, F value) {
    std::vector<uint8_t> px(std::size_t(width) * height * 4, 255);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x)
            for (int c = 0; c < 3; ++c) px[(std::size_t(y) * width + x) * 4 + c] = uint8_t(value(x, y));
    return px;
}

float at(const Tensor3& t, int y, int x, int c = 0) { return t(std::size_t(y), std::size_t(x), std::size_t(c)); }

}  // namespace

TEST_CASE("resize: 224 × 224 is the identity, bit for bit") {
    const auto px = synthetic_rgba(224, 224);
    const Tensor3 out = image::resize_bilinear_rgb(px.data(), 224, 224, 224, 224);
    for (int y = 0; y < 224; ++y)
        for (int x = 0; x < 224; ++x)
            for (int c = 0; c < 3; ++c) REQUIRE(at(out, y, x, c) == float(px[(std::size_t(y) * 224 + x) * 4 + c]));
}

TEST_CASE("resize: halving averages four source pixels per axis with weights 1/8, 3/8, 3/8, 1/8") {
    // A horizontal ramp p(x) = x, 448 → 224: output o is centred on source 2o + 1 and, with a triangle of radius 2,
    // reads sources 2o - 1 .. 2o + 2 at distances 1.5, 0.5, 0.5, 1.5 (in source pixels): 2o + 0.5 inside, and
    // (3·0 + 3·1 + 1·2) / 7 = 5/7 at the left edge, where source -1 does not exist and the weights renormalize.
    // Plain bilinear would give 2o + 0.5 as well, so the steps below tell them apart.
    const auto ramp = grey_rgba(448, 4, [](int x, int) { return x % 256; });
    const Tensor3 out = image::resize_bilinear_rgb(ramp.data(), 448, 4, 224, 4);
    CHECK(at(out, 0, 0) == doctest::Approx(5.0 / 7.0).epsilon(1e-6));
    for (int o = 1; o < 127; ++o) CHECK(at(out, 1, o) == doctest::Approx(2 * o + 0.5).epsilon(1e-6));
    // A step 0 | 255 between sources 199 and 200: outputs 99 (sources 197..200) and 100 (199..202) mix both sides
    // by 1/8 and 1/2, where bilinear (sampling between 2o and 2o + 1 only) would give exactly 0 and 255.
    const auto step = grey_rgba(448, 2, [](int x, int) { return x < 200 ? 0 : 255; });
    const Tensor3 s = image::resize_bilinear_rgb(step.data(), 448, 2, 224, 2);
    CHECK(at(s, 0, 98) == 0.0f);
    CHECK(at(s, 0, 99) == doctest::Approx(255.0 / 8).epsilon(1e-6));
    CHECK(at(s, 0, 100) == doctest::Approx(255.0 * 7 / 8).epsilon(1e-6));
    CHECK(at(s, 0, 101) == 255.0f);
    CHECK(at(s, 1, 99) == at(s, 0, 99));  // the vertical axis keeps its size: rows are copied
}

TEST_CASE("resize: a fine checkerboard larger than 224 shrinks to near-uniform grey (no aliasing)") {
    // Without antialiasing each output samples one or two source pixels of a 0/255 pattern and keeps most of its
    // contrast, in moiré bands; with it every output averages about 2·scale pixels of each colour.
    const struct { int width, height; float tolerance; } cases[] = {{640, 480, 2.0f}, {1000, 1000, 1.0f}, {451, 300, 8.0f},
                                                                   {4032, 3024, 0.5f}};
    for (const auto& c : cases) {
        CAPTURE(c.width);
        CAPTURE(c.height);
        const auto board = grey_rgba(c.width, c.height, [](int x, int y) { return ((x + y) % 2) * 255; });
        const Tensor3 out = image::resize_bilinear_rgb(board.data(), c.width, c.height, 224, 224);
        float lo = 255, hi = 0;
        double sum = 0;
        for (std::size_t i = 0; i < out.size(); ++i) {
            lo = std::min(lo, out.data()[i]);
            hi = std::max(hi, out.data()[i]);
            sum += out.data()[i];
        }
        CHECK(lo >= 127.5f - c.tolerance);
        CHECK(hi <= 127.5f + c.tolerance);
        CHECK(sum / double(out.size()) == doctest::Approx(127.5).epsilon(1e-3));
    }
}

TEST_CASE("resize: upscaling stays half-pixel bilinear") {
    // 2 → 4 along x: sources at (o + 0.5) / 2 - 0.5 = -0.25 (clamped to 0), 0.25, 0.75, 1.25 (clamped to 1).
    const auto px = grey_rgba(2, 1, [](int x, int) { return x == 0 ? 0 : 200; });
    const Tensor3 out = image::resize_bilinear_rgb(px.data(), 2, 1, 4, 3);
    const float expected[] = {0.0f, 50.0f, 150.0f, 200.0f};
    for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 4; ++x) CHECK(at(out, y, x) == expected[x]);
}

TEST_CASE("resize equals the Python twin bit for bit (tests/fixtures/image/resize.gguf)") {
    const gguf::File golden = gguf::File::open(test::source_path("tests/fixtures/image/resize.gguf"));
    const auto names = golden.get_string_array("resize.names");
    REQUIRE(names.size() == 2);
    for (std::size_t k = 0; k < names.size(); ++k) {
        CAPTURE(names[k]);
        const std::string key = "resize." + std::to_string(k);
        const int width = int(golden.get_u32(key + ".width")), height = int(golden.get_u32(key + ".height"));
        const int size = int(golden.get_u32(key + ".size"));
        const auto px = synthetic_rgba(width, height);
        const Tensor3 out = image::resize_bilinear_rgb(px.data(), width, height, size, size);
        const std::vector<float> expected = golden.load_f32_flat("resized." + std::to_string(k));
        REQUIRE(expected.size() == out.size());
        std::size_t differ = 0, first = 0;
        for (std::size_t i = 0; i < expected.size(); ++i)
            if (out.data()[i] != expected[i] && differ++ == 0) first = i;
        INFO("first difference at " << first << ": " << out.data()[first] << " vs " << expected[first]);
        CHECK(differ == 0);
        // Through preprocess_rgba too: the normalization on top of the same resize.
        const Tensor3 x = image::preprocess_rgba(px.data(), px.size(), width, height, size);
        for (std::size_t i = 0; i < expected.size(); i += 997) CHECK(x.data()[i] == expected[i] / 127.5f - 1.0f);
    }
}
