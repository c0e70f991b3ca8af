// nn::Linear against PyTorch's nn.Linear (f32), f16-rounded weights and numpy's Q8_0 dequantization
// (fixtures: models/golden_layers.py -> tests/fixtures/layers/linear.gguf).
#include <doctest/doctest.h>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/nn/linear.hpp"
#include "test_support.hpp"

using namespace attnlab;

namespace {

const gguf::File& linear_fixture() {
    static const gguf::File file = gguf::File::open(test::source_path("tests/fixtures/layers/linear.gguf"));
    return file;
}

// x [rows, in] through the layer, compared with the expected [rows, out]
void check_case(const nn::Linear& layer, const std::string& x_name, const std::string& y_name) {
    const gguf::File& file = linear_fixture();
    const std::vector<float> x = file.load_f32_flat(x_name);
    const std::vector<float> expected = file.load_f32_flat(y_name);
    const int rows = int(x.size()) / layer.in;
    REQUIRE(expected.size() == std::size_t(rows) * layer.out);
    std::vector<float> y(expected.size(), -1.0f);
    nn::linear(layer, x.data(), rows, y.data());
    test::check_close(y, expected, 1e-5f, 0.0f, y_name.c_str());
}

}  // namespace

TEST_CASE("linear: f32 weights match nn.Linear, gemm (3 rows) and gemv (1 row)") {
    const nn::Linear layer = nn::load_linear(linear_fixture(), "f32", 10, 7);
    CHECK_FALSE(layer.quantized());
    check_case(layer, "f32.x", "f32.y");
    check_case(layer, "f32.x1", "f32.y1");

    // The Matrix overload gives the same numbers.
    const Matrix x = linear_fixture().load_f32<2>("f32.x", {3, 10});
    const Matrix y = nn::linear(layer, x);
    const std::vector<float> expected = linear_fixture().load_f32_flat("f32.y");
    test::check_close(y.data(), expected.data(), expected.size(), 1e-5f, 0.0f, "Matrix overload");
}

TEST_CASE("linear: f16 weights are widened to f32") {
    const nn::Linear layer = nn::load_linear(linear_fixture(), "f16", 10, 7);
    CHECK_FALSE(layer.quantized());
    check_case(layer, "f16.x", "f16.y");
}

TEST_CASE("linear: Q8_0 weights stay quantized and match the dequantized matmul") {
    const nn::Linear layer = nn::load_linear(linear_fixture(), "q8", 64, 9);
    REQUIRE(layer.quantized());
    CHECK(layer.weight_q8.size() == 9 * 2);
    check_case(layer, "q8.x", "q8.y");
    check_case(layer, "q8.x1", "q8.y1");
}

TEST_CASE("linear: slice_rows keeps the selected outputs (f32 and Q8_0)") {
    for (const char* prefix : {"f32", "q8"}) {
        const bool q8 = std::string(prefix) == "q8";
        const int in = q8 ? 64 : 10, out = q8 ? 9 : 7;
        const nn::Linear layer = nn::load_linear(linear_fixture(), prefix, in, out);
        const nn::Linear part = nn::slice_rows(layer, 2, 4);
        CHECK(part.in == in);
        CHECK(part.out == 4);
        const std::vector<float> x = linear_fixture().load_f32_flat(std::string(prefix) + ".x");
        const int rows = int(x.size()) / in;
        std::vector<float> full(std::size_t(rows) * out), sliced(std::size_t(rows) * 4);
        nn::linear(layer, x.data(), rows, full.data());
        nn::linear(part, x.data(), rows, sliced.data());
        for (int r = 0; r < rows; ++r)
            test::check_close(sliced.data() + r * 4, full.data() + r * out + 2, 4, 1e-6f, 0.0f, prefix);
        CHECK_THROWS_AS(nn::slice_rows(layer, out - 1, 2), Error);
    }
}

TEST_CASE("linear: wrong shapes and missing tensors are reported as attnlab::Error") {
    const gguf::File& file = linear_fixture();
    CHECK_THROWS_AS(nn::load_linear(file, "f32", 7, 10), Error);      // transposed
    CHECK_THROWS_AS(nn::load_linear(file, "nothing", 10, 7), Error);  // missing
    CHECK_THROWS_AS(nn::load_linear(file, "f32", 0, 7), Error);
    nn::Linear no_bias = nn::load_linear(file, "f32", 10, 7, false);
    CHECK_FALSE(no_bias.has_bias());
    nn::Linear bad = nn::load_linear(file, "f32", 10, 7);
    bad.bias = xt::zeros<float>({3});
    CHECK_THROWS_AS(nn::validate(bad, "bad"), Error);
    const Matrix x = xt::zeros<float>({2, 9});
    CHECK_THROWS_AS(nn::linear(no_bias, x), Error);
}
