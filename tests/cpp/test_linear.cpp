// nn::Linear against PyTorch's nn.Linear (f32), f16-rounded weights and numpy's Q8_0 dequantization
// (fixtures: python/attnlab/golden/layers.py -> tests/fixtures/layers/linear.gguf). One-row Q8_0 products also round
// the activations to Q8_0 (kernels::gemv_q8_q8): checked against the bound that rounding implies.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/kernels/kernels.hpp"
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

TEST_CASE("linear: f16 weights stay halves where the build converts them natively, else become f32") {
    const nn::Linear layer = nn::load_linear(linear_fixture(), "f16", 10, 7);
    CHECK_FALSE(layer.quantized());
    CHECK(layer.half() == kernels::keep_f16_weights());
    CHECK(layer.panelled() == !kernels::keep_f16_weights());  // widened f32 weights are packed in panels
    CHECK(layer.weight.size() == 0u);
    check_case(layer, "f16.x", "f16.y");
}

TEST_CASE("linear: f32 weights are packed in panels at load; rows, slices and outputs as the row-major layer's") {
    const nn::Linear packed = nn::load_linear(linear_fixture(), "f32", 10, 7);
    REQUIRE(packed.panelled());
    CHECK(packed.weight.size() == 0u);
    nn::Linear rowmajor = packed;
    rowmajor.weight = nn::weight_matrix(packed);
    rowmajor.weight_panels.clear();
    nn::validate(rowmajor, "row-major");
    const Matrix expected_w = linear_fixture().load_f32<2>("f32.weight", {7, 10});
    CHECK(std::equal(expected_w.begin(), expected_w.end(), rowmajor.weight.begin()));
    for (int rows : {1, 2, 5}) {
        CAPTURE(rows);
        const std::vector<float> x = test::random_vector(std::size_t(rows) * 10, 77 + rows);
        std::vector<float> y(std::size_t(rows) * 7), y_rowmajor(y.size()), y_batched(y.size());
        nn::linear(packed, x.data(), rows, y.data());
        nn::linear(rowmajor, x.data(), rows, y_rowmajor.data());
        nn::linear_batched(packed, x.data(), rows, y_batched.data());
        test::check_close(y.data(), y_rowmajor.data(), y.size(), 1e-5f, 1e-5f, "panels vs row-major");
        for (int r = 0; r < rows; ++r) {   // each batched row is its one-row product, bit for bit
            std::vector<float> one(7);
            nn::linear(packed, x.data() + r * 10, 1, one.data());
            CHECK(std::memcmp(one.data(), y_batched.data() + r * 7, 7 * sizeof(float)) == 0);
        }
    }
    const nn::Linear part = nn::slice_rows(packed, 2, 4);
    CHECK(part.panelled());
    std::vector<float> row(10), whole(10);
    for (int r = 0; r < 4; ++r) {
        nn::weight_row(part, r, row.data());
        nn::weight_row(packed, 2 + r, whole.data());
        CHECK(row == whole);
    }
    CHECK_THROWS_AS(nn::weight_row(packed, 7, row.data()), Error);
    nn::Linear cut = packed;
    cut.weight_panels.pop_back();
    CHECK_THROWS_WITH_AS(nn::validate(cut, "cut"), doctest::Contains("packed weight"), Error);
}

TEST_CASE("linear: half weights give the f32 layer's outputs on the widened weights, one row and several") {
    // out > 64 spans several of the several-row path's widened panels, and one partial panel.
    const int in = 33, out = 150;
    nn::Linear half, widened;
    half.in = widened.in = in;
    half.out = widened.out = out;
    half.weight_f16.resize(std::size_t(out) * in);
    widened.weight = Matrix::from_shape({std::size_t(out), std::size_t(in)});
    widened.bias = half.bias = Vector::from_shape({std::size_t(out)});
    for (int i = 0; i < out * in; ++i) {
        half.weight_f16[i] = kernels::f32_to_f16(std::sin(0.37f * i) * 0.8f);
        widened.weight.data()[i] = kernels::f16_to_f32(half.weight_f16[i]);
    }
    for (int o = 0; o < out; ++o) half.bias[o] = widened.bias[o] = 0.01f * o;
    nn::validate(half, "half");
    for (int rows : {1, 2, 5}) {
        CAPTURE(rows);
        std::vector<float> x(std::size_t(rows) * in);
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.11f * float(i));
        std::vector<float> y(std::size_t(rows) * out), expected(y.size());
        nn::linear(half, x.data(), rows, y.data());
        nn::linear(widened, x.data(), rows, expected.data());
        test::check_close(y, expected, 1e-5f, 1e-5f, "half vs widened");
    }
    const nn::Linear part = nn::slice_rows(half, 70, 30);
    REQUIRE(part.half());
    CHECK(part.weight_f16.size() == std::size_t(30) * in);
    CHECK(part.weight_f16[0] == half.weight_f16[std::size_t(70) * in]);
    half.weight_f16.pop_back();
    CHECK_THROWS_AS(nn::validate(half, "half"), Error);
}

TEST_CASE("linear: Q8_0 weights stay quantized and match the dequantized matmul") {
    const nn::Linear layer = nn::load_linear(linear_fixture(), "q8", 64, 9);
    REQUIRE(layer.quantized());
    CHECK(layer.weight_q8.size() == 9 * 2);
    // Several rows: float activations against the dequantized weights, as numpy computes.
    check_case(layer, "q8.x", "q8.y");

    // One row (the decoders' case) goes through kernels::gemv_q8_q8, which also rounds x to Q8_0: per element
    // |x - x̃| <= d_x/2 with d_x = max|x over its 32-block| / 127 (1% slack for the f16 rounding of d_x), so
    // |y_i - expected_i| <= Σ_j |w̃_ij| · max|x_block(j)| / 254 · 1.01, plus float rounding (1e-5).
    const gguf::File& file = linear_fixture();
    const std::vector<float> x = file.load_f32_flat("q8.x1"), expected = file.load_f32_flat("q8.y1");
    REQUIRE(x.size() == 64);
    std::vector<float> w(9 * 64);
    kernels::dequantize_q8_0(layer.weight_q8.data(), w.size(), w.data());
    std::vector<float> y(9);
    nn::linear(layer, x.data(), 1, y.data());
    float worst = 0;
    for (int i = 0; i < 9; ++i) {
        double bound = 1e-5;
        for (int j = 0; j < 64; ++j) {
            float block_max = 0;
            for (int jj = j / 32 * 32; jj < j / 32 * 32 + 32; ++jj) block_max = std::max(block_max, std::fabs(x[jj]));
            bound += std::fabs(w[i * 64 + j]) * block_max / 254.0 * 1.01;
        }
        INFO("output " << i << ": " << y[i] << " vs " << expected[i] << ", bound " << bound);
        CHECK(std::fabs(y[i] - expected[i]) <= bound);
        worst = std::max(worst, std::fabs(y[i] - expected[i]));
    }
    // ... and it is the int8 path: exactly the reference int8 kernel plus the bias, visibly not the float one.
    std::vector<float> y_int8(9);
    kernels::reference::gemv_q8_q8(9, 64, layer.weight_q8.data(), x.data(), y_int8.data());
    for (int i = 0; i < 9; ++i) y_int8[i] += layer.bias[i];
    test::check_close(y, y_int8, 1e-6f, 1e-6f, "one row == reference gemv_q8_q8 + bias");
    CHECK(worst > 1e-5f);
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
        if (q8) {
            // Loaded Q8_0 weights are the file's bytes, and a row slice shares them: nothing is copied.
            CHECK(reinterpret_cast<const uint8_t*>(layer.weight_q8.data()) == linear_fixture().tensor("q8.weight").data);
            CHECK(part.weight_q8.data() == layer.weight_q8.data() + 2 * (in / kernels::kQ8BlockSize));
            CHECK(part.weight_q8.size() == std::size_t(4) * (in / kernels::kQ8BlockSize));
        }
    }
}

TEST_CASE("linear: load_table holds the file's weights with no panels or caches; its rows are the layer's") {
    for (const char* prefix : {"f32", "f16", "q8"}) {
        const bool q8 = std::string(prefix) == "q8";
        const int width = q8 ? 64 : 10, rows = q8 ? 9 : 7;
        const std::string name = std::string(prefix) + ".weight";
        const nn::Linear layer = nn::load_linear_tensors(linear_fixture(), name, "", width, rows);
        const nn::Linear table = nn::load_table(linear_fixture(), name, width, rows);
        CHECK_FALSE(table.panelled());
        CHECK(table.weight_q8_rows4.empty());
        CHECK(table.weight_q8_scales.empty());
        CHECK_FALSE(table.has_bias());
        CHECK(table.quantized() == q8);
        std::vector<float> expected(width), got(width);
        for (int r = 0; r < rows; ++r) {
            nn::weight_row(layer, r, expected.data());
            nn::weight_row(table, r, got.data());
            test::check_close(got, expected, 0.0f, 0.0f, prefix);
        }
    }
    CHECK_THROWS_AS(nn::load_table(linear_fixture(), "f32.weight", 7, 10), Error);  // transposed
    CHECK_THROWS_AS(nn::load_table(linear_fixture(), "nothing.weight", 10, 7), Error);
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

TEST_CASE("linear: gather_rows keeps the storage and gives the whole layer's outputs for those rows") {
    // A shortlist's rows, out of order and repeated, of every storage a model's output layer can have.
    const int in = 64, out = 40;
    nn::Linear f32;
    f32.in = in;
    f32.out = out;
    f32.weight = Matrix::from_shape({std::size_t(out), std::size_t(in)});
    f32.bias = Vector::from_shape({std::size_t(out)});
    for (int i = 0; i < out * in; ++i) f32.weight.data()[i] = std::sin(0.13f * i);
    for (int o = 0; o < out; ++o) f32.bias[o] = 0.1f * o;
    nn::Linear packed = f32;
    nn::pack_weight_panels(packed);
    nn::Linear half = f32;
    half.weight = Matrix();
    for (int i = 0; i < out * in; ++i) half.weight_f16.push_back(kernels::f32_to_f16(f32.weight.data()[i]));
    nn::Linear q8 = nn::load_linear(linear_fixture(), "q8", 64, 9);
    const std::vector<int32_t> rows = {7, 0, 3, 3, 8};
    const std::vector<float> x = test::random_vector(std::size_t(3) * in, 5);
    for (const nn::Linear* layer : {&f32, &packed, &half, &q8}) {
        const nn::Linear part = nn::gather_rows(*layer, rows);
        CHECK(part.out == int(rows.size()));
        CHECK(part.quantized() == layer->quantized());
        CHECK(part.panelled() == layer->panelled());
        CHECK(part.half() == layer->half());
        std::vector<float> y(std::size_t(3) * rows.size()), whole(std::size_t(3) * layer->out);
        nn::linear_batched(part, x.data(), 3, y.data());
        nn::linear_batched(*layer, x.data(), 3, whole.data());
        for (int r = 0; r < 3; ++r)
            for (std::size_t k = 0; k < rows.size(); ++k)
                CHECK(y[r * rows.size() + k] == doctest::Approx(whole[r * layer->out + rows[k]]).epsilon(1e-5));
        std::vector<float> row(in), expected(in);
        nn::weight_row(part, 1, row.data());
        nn::weight_row(*layer, 0, expected.data());
        CHECK(row == expected);
    }
    CHECK_THROWS_WITH_AS(nn::gather_rows(f32, {40}), "gather_rows: row 40 outside [0, 40)", Error);
    CHECK_THROWS_WITH_AS(nn::gather_rows(f32, {}), "gather_rows: no rows", Error);
}

TEST_CASE("linear: linear_rows takes the int8 rows of linear_batched for Q8_0 weights and linear() for the rest") {
    const nn::Linear q8 = nn::load_linear(linear_fixture(), "q8", 64, 9);
    nn::Linear f32;
    f32.in = 64;
    f32.out = 9;
    f32.weight = Matrix::from_shape({9, 64});
    for (int i = 0; i < 9 * 64; ++i) f32.weight.data()[i] = std::cos(0.07f * i);
    const std::vector<float> x = test::random_vector(std::size_t(5) * 64, 9);
    for (const nn::Linear* layer : {&q8, static_cast<const nn::Linear*>(&f32)}) {
        std::vector<float> rows(5 * 9), expected(5 * 9);
        nn::linear_rows(*layer, x.data(), 5, rows.data());
        if (layer->quantized())
            nn::linear_batched(*layer, x.data(), 5, expected.data());
        else
            nn::linear(*layer, x.data(), 5, expected.data());
        CHECK(rows == expected);
        // Each Q8_0 row is its own one-row product (its int8 rounding), which the float-activation GEMM is not.
        for (int r = 0; r < 5; ++r) {
            std::vector<float> one(9);
            nn::linear(*layer, x.data() + r * 64, 1, one.data());
            if (layer->quantized()) CHECK(std::equal(one.begin(), one.end(), rows.begin() + r * 9));
        }
    }
}

TEST_CASE("linear: slice_columns splits a layer over a concatenated input, W [x ; c] + b = (W_x x + b) + W_c c") {
    const int in = 64, out = 12;
    nn::Linear f32;
    f32.in = in;
    f32.out = out;
    f32.weight = Matrix::from_shape({std::size_t(out), std::size_t(in)});
    f32.bias = Vector::from_shape({std::size_t(out)});
    for (int i = 0; i < out * in; ++i) f32.weight.data()[i] = std::sin(0.11f * i);
    for (int o = 0; o < out; ++o) f32.bias[o] = 0.2f * o;
    nn::Linear packed = f32;
    nn::pack_weight_panels(packed);
    nn::Linear half = f32;
    half.weight = Matrix();
    for (int i = 0; i < out * in; ++i) half.weight_f16.push_back(kernels::f32_to_f16(f32.weight.data()[i]));
    nn::Linear q8 = nn::load_linear(linear_fixture(), "q8", 64, 9);
    for (const nn::Linear* layer : {&f32, &packed, &half, &q8}) {
        for (int cut : {32, 16}) {  // on a Q8_0 block boundary, and inside a block
            CAPTURE(cut);
            const nn::Linear first = nn::slice_columns(*layer, 0, cut, true);
            const nn::Linear second = nn::slice_columns(*layer, cut, in - cut, false);
            CHECK(first.in == cut);
            CHECK(second.in == in - cut);
            CHECK(first.has_bias() == layer->has_bias());
            CHECK_FALSE(second.has_bias());
            // Q8_0 stays Q8_0 (the same blocks) where whole blocks are taken; a cut block becomes its f32 values.
            CHECK(first.quantized() == (layer->quantized() && cut % 32 == 0));
            CHECK(first.half() == layer->half());
            const Matrix whole = nn::weight_matrix(*layer), a = nn::weight_matrix(first), b = nn::weight_matrix(second);
            bool same = true;
            for (int o = 0; o < layer->out; ++o)
                for (int k = 0; k < in; ++k)
                    same &= whole(o, k) == (k < cut ? a(o, k) : b(o, k - cut));
            CHECK(same);
        }
    }
    // The parts' products add up to the whole layer's (f32: up to summation order).
    const std::vector<float> x = test::random_vector(std::size_t(3) * in, 11);
    std::vector<float> x_part(std::size_t(3) * 32), c_part(std::size_t(3) * 32);
    for (int r = 0; r < 3; ++r) {
        std::copy_n(x.begin() + r * in, 32, x_part.begin() + r * 32);
        std::copy_n(x.begin() + r * in + 32, 32, c_part.begin() + r * 32);
    }
    std::vector<float> whole(std::size_t(3) * out), y(whole.size()), yc(whole.size());
    nn::linear(f32, x.data(), 3, whole.data());
    nn::linear(nn::slice_columns(f32, 0, 32, true), x_part.data(), 3, y.data());
    nn::linear(nn::slice_columns(f32, 32, 32, false), c_part.data(), 3, yc.data());
    for (std::size_t i = 0; i < whole.size(); ++i) CHECK(y[i] + yc[i] == doctest::Approx(whole[i]).epsilon(1e-5));
    CHECK_THROWS_WITH_AS(nn::slice_columns(f32, 40, 32, false), "slice_columns: columns [40, 72) outside [0, 64)", Error);
}
