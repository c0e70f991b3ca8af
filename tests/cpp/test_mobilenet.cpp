// MobileNetV2 encoder parity with PyTorch: preprocessing, the 7x7 and 14x14 feature grids and the logits, on the
// golden files python/attnlab/golden/mobilenet.py writes to build/golden/mobilenet (or $ATTNLAB_GOLDEN_DIR/mobilenet).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "attnlab/error.hpp"
#include "attnlab/image/preprocess.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/models/mobilenet_v2.hpp"
#include "test_support.hpp"

using namespace attnlab;
using attnlab::test::check_close;

namespace {

std::string golden_dir() {
    const char* env = std::getenv("ATTNLAB_GOLDEN_DIR");
    return ((env && *env) ? std::string(env) : test::source_path("build/golden")) + "/mobilenet/";
}

bool have_golden() {
    std::ifstream in(golden_dir() + "golden.gguf");
    if (!in) FAIL_CHECK("missing " << golden_dir() << "golden.gguf: run PYTHONPATH=python /usr/bin/python3 -m attnlab.golden.mobilenet");
    return bool(in);
}

std::vector<float> flat(const gguf::File& f, const std::string& name) { return f.load_f32_flat(name); }

float max_abs_diff(const float* a, const std::vector<float>& b) {
    float worst = 0;
    for (std::size_t i = 0; i < b.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
    return worst;
}

std::vector<uint8_t> rgba_bytes(const gguf::File& golden, int k, int& width, int& height) {
    const auto& info = golden.tensor("image." + std::to_string(k));
    height = int(info.shape[0]);
    width = int(info.shape[1]);
    const auto values = flat(golden, "image." + std::to_string(k));
    return std::vector<uint8_t>(values.begin(), values.end());  // exact: the values are integers 0..255
}

// Tolerances. PyTorch (oneDNN/ATen) and the engine sum the same f32 products in different orders; each of the
// 52 layers adds a few ulps of relative error, which the next layers carry along (ReLU6 outputs are up to 6, the
// residual stream and logits up to ~20). Measured worst errors are around 1e-5 absolute on features and 3e-5 on
// logits; the bounds keep an order of magnitude of headroom while still catching any real bug (a wrong pad side
// or tap moves features by >1e-2).
constexpr float kFeatureAtol = 2e-4f, kFeatureRtol = 1e-4f;
constexpr float kLogitAtol = 5e-4f, kLogitRtol = 1e-4f;

const models::MobileNetV2& f16_model() {
    static const models::MobileNetV2 model =
        models::load_mobilenet_v2(gguf::File::open(golden_dir() + "mobilenet_v2.f16.gguf"));
    return model;
}

}  // namespace

TEST_CASE("preprocess_rgba validates its input") {
    std::vector<uint8_t> px(4 * 6, 100);
    CHECK_NOTHROW(image::preprocess_rgba(px.data(), px.size(), 3, 2));
    CHECK_THROWS_WITH_AS(image::preprocess_rgba(px.data(), px.size(), 2, 2), doctest::Contains("needs 16 bytes"),
                         Error);
    CHECK_THROWS_AS(image::preprocess_rgba(px.data(), px.size(), 0, 6), Error);
    CHECK_THROWS_AS(image::preprocess_rgba(px.data(), px.size(), 6, -1), Error);
    CHECK_THROWS_WITH_AS(image::validate_rgba(std::size_t(9000) * 4, 9000, 1), doctest::Contains("1..8192"), Error);
    CHECK_THROWS_AS(image::preprocess_rgba(nullptr, 0, 1, 1), Error);
}

TEST_CASE("preprocess_rgba: identity at 224, a constant image stays constant, alpha is ignored") {
    std::vector<uint8_t> px(224 * 224 * 4);
    for (std::size_t i = 0; i < px.size(); ++i) px[i] = uint8_t((i * 37) % 256);
    const Tensor3 x = image::preprocess_rgba(px.data(), px.size(), 224, 224);
    CHECK(x(5, 7, 2) == float(px[(5 * 224 + 7) * 4 + 2]) / 127.5f - 1.0f);
    std::vector<uint8_t> flat_px(31 * 17 * 4);
    for (std::size_t i = 0; i < flat_px.size(); ++i) flat_px[i] = i % 4 == 3 ? uint8_t(i) : 255;
    const Tensor3 y = image::preprocess_rgba(flat_px.data(), flat_px.size(), 31, 17);
    bool all_white = true;
    for (float v : y) all_white = all_white && v == 1.0f;
    CHECK(all_white);
}

TEST_CASE("MobileNetV2 preprocessing matches PyTorch's (models/mobilenet_v2.preprocess)") {
    if (!have_golden()) return;
    const auto golden = gguf::File::open(golden_dir() + "golden.gguf");
    const auto names = golden.get_string_array("golden.names");
    for (int k = 0; k < int(names.size()); ++k) {
        CAPTURE(names[k]);
        int w = 0, h = 0;
        const auto bytes = rgba_bytes(golden, k, w, h);
        const Tensor3 x = image::preprocess_rgba(bytes.data(), bytes.size(), w, h);
        const auto expected = flat(golden, "input." + std::to_string(k));
        REQUIRE(x.size() == expected.size());
        // 1e-5 (0.0013 of a pixel level): natively the compiler may fuse the interpolation's multiply-adds (FMA),
        // numpy rounds each step; the arithmetic is otherwise the same.
        check_close(x.data(), expected.data(), x.size(), 1e-5f, 0.0f, "preprocessed image");
    }
}

TEST_CASE("MobileNetV2 (f16 GGUF) features and logits match PyTorch") {
    if (!have_golden()) return;
    const auto golden = gguf::File::open(golden_dir() + "golden.gguf");
    const auto names = golden.get_string_array("golden.names");
    const models::MobileNetV2& model = f16_model();
    REQUIRE(model.layers.size() == 52);
    REQUIRE(model.feature_layer == 51);
    REQUIRE(model.has_classifier);
    REQUIRE(model.labels.size() == 1001);
    models::MobileNetV2 model14 = model;
    model14.feature_layer = 39;
    for (int k = 0; k < int(names.size()); ++k) {
        CAPTURE(names[k]);
        int w = 0, h = 0;
        const auto bytes = rgba_bytes(golden, k, w, h);
        const Tensor3 x = image::preprocess_rgba(bytes.data(), bytes.size(), w, h);
        const auto out = models::mobilenet_forward(model, x, true);
        CHECK(out.grid_height == 7);
        CHECK(out.grid_width == 7);
        REQUIRE(out.features.shape()[0] == 49);
        REQUIRE(out.features.shape()[1] == 1280);
        const auto features = flat(golden, "features." + std::to_string(k));
        check_close(out.features.data(), features.data(), features.size(), kFeatureAtol, kFeatureRtol, "features 7x7");
        const auto logits = flat(golden, "logits." + std::to_string(k));
        REQUIRE(out.logits.size() == logits.size());
        check_close(out.logits.data(), logits.data(), logits.size(), kLogitAtol, kLogitRtol, "logits");
        MESSAGE(names[k] << ": max |C++ - PyTorch| features " << max_abs_diff(out.features.data(), features)
                         << ", logits " << max_abs_diff(out.logits.data(), logits));
        CHECK(kernels::argmax(out.logits.data(), int(out.logits.size())) ==
              kernels::argmax(logits.data(), int(logits.size())));

        const auto out14 = models::mobilenet_forward(model14, x, false);
        CHECK(out14.grid_height == 14);
        CHECK(out14.logits.size() == 0);
        const auto features14 = flat(golden, "features14." + std::to_string(k));
        REQUIRE(out14.features.size() == features14.size());
        check_close(out14.features.data(), features14.data(), features14.size(), kFeatureAtol, kFeatureRtol,
                    "features 14x14");
    }
}

TEST_CASE("MobileNetV2 (i8 GGUF: the TFLite integers) features and logits match PyTorch") {
    if (!have_golden()) return;
    const auto golden = gguf::File::open(golden_dir() + "golden.gguf");
    const auto names = golden.get_string_array("golden.names");
    const auto file = gguf::File::open(golden_dir() + "mobilenet_v2.i8.gguf");
    CHECK(file.tensor("encoder.layers.0.weight").type == gguf::TensorType::i8);   // the 3x3 stem
    CHECK(file.tensor("encoder.layers.1.weight").type == gguf::TensorType::i8);   // depthwise
    CHECK(file.tensor("encoder.layers.51.weight").type == gguf::TensorType::i8);  // 1x1 320 -> 1280
    const auto model = models::load_mobilenet_v2(file);
    for (int k = 0; k < int(names.size()); ++k) {
        CAPTURE(names[k]);
        int w = 0, h = 0;
        const auto bytes = rgba_bytes(golden, k, w, h);
        const auto out = models::mobilenet_forward(model, image::preprocess_rgba(bytes.data(), bytes.size(), w, h), true);
        const auto features = flat(golden, "features_i8." + std::to_string(k));
        REQUIRE(out.features.size() == features.size());
        check_close(out.features.data(), features.data(), features.size(), kFeatureAtol, kFeatureRtol, "features 7x7");
        const auto logits = flat(golden, "logits_i8." + std::to_string(k));
        REQUIRE(out.logits.size() == logits.size());
        check_close(out.logits.data(), logits.data(), logits.size(), kLogitAtol, kLogitRtol, "logits");
    }
}

TEST_CASE("MobileNetV2: an i8 file without its weight scales, or with a cut scale array, is refused") {
    if (!have_golden()) return;
    std::ifstream in(golden_dir() + "mobilenet_v2.i8.gguf", std::ios::binary);
    const std::vector<uint8_t> good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string key = "attnlab.mobilenet.weight_scale";
    const auto at = std::search(good.begin(), good.end(), key.begin(), key.end()) - good.begin();
    REQUIRE(std::size_t(at) < good.size());

    auto renamed = good;  // the key renamed: the i8 weights have no scale
    renamed[std::size_t(at) + key.size() - 1] = 'X';
    CHECK_THROWS_WITH_AS(models::load_mobilenet_v2(gguf::File::from_bytes(renamed)),
                         doctest::Contains("attnlab.mobilenet.weight_scale"), Error);

    auto short_array = good;  // after the key: u32 value type (array), u32 element type, u64 count
    const std::size_t count_at = std::size_t(at) + key.size() + 8;
    REQUIRE(short_array[count_at] == 52);
    short_array[count_at] = 51;
    // The array now ends one float early: the reader takes the last float as the next key's length and refuses
    // the file before any model code sees it.
    CHECK_THROWS_AS(gguf::File::from_bytes(short_array), Error);
}

TEST_CASE("MobileNetV2 classifies the skimage photos (f16 and q8_0)") {
    if (!have_golden()) return;
    const auto golden = gguf::File::open(golden_dir() + "golden.gguf");
    const auto names = golden.get_string_array("golden.names");
    const auto q8_file = gguf::File::open(golden_dir() + "mobilenet_v2.q8_0.gguf");
    CHECK(q8_file.tensor("encoder.layers.2.weight").type == gguf::TensorType::q8_0);  // 1x1 32 -> 16: [16, 32]
    const auto q8 = models::load_mobilenet_v2(q8_file);
    REQUIRE((names.size() >= 2 && names[0] == "chelsea" && names[1] == "coffee"));
    for (const auto* model : {&f16_model(), &q8}) {
        for (int k = 0; k < 2; ++k) {  // chelsea, coffee
            int w = 0, h = 0;
            const auto bytes = rgba_bytes(golden, k, w, h);
            const auto out = models::mobilenet_forward(*model, image::preprocess_rgba(bytes.data(), bytes.size(), w, h), true);
            const int top = kernels::argmax(out.logits.data(), int(out.logits.size()));
            CAPTURE(names[k]);
            CAPTURE(model->labels[top]);
            if (names[k] == "chelsea") CHECK((top >= 282 && top <= 286));  // tabby .. Egyptian cat
            if (names[k] == "coffee") CHECK(model->labels[top] == "espresso");
        }
    }
}

TEST_CASE("mobilenet_forward rejects an image of the wrong shape") {
    if (!have_golden()) return;
    const Tensor3 wrong = Tensor3::from_shape({112, 112, 3});
    CHECK_THROWS_WITH_AS(models::mobilenet_forward(f16_model(), wrong), doctest::Contains("[224, 224, 3]"), Error);
}
