// libFuzzer: arbitrary bytes as a GGUF file. Whatever parses is then read back through every getter and loader
// (each tensor at its own shape), and the same bytes go to Model::from_bytes. The only acceptable failure is
// attnlab::Error; sanitizers catch everything else.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attnlab/attnlab.hpp"
#include "attnlab/io/gguf.hpp"
#include "fuzz_support.hpp"

namespace {

using attnlab::fuzz::expect_error_or_success;
using attnlab::gguf::File;
using attnlab::gguf::TensorInfo;

// For calls whose input is wrong whatever the file holds (a rank other than the tensor's, a key or tensor that
// is not there, an index past an array's end): they must throw attnlab::Error; returning a value is a misread.
template <typename Body>
void expect_rejection(const char* what, Body&& body) {
    try {
        body();
    } catch (const attnlab::Error&) {
        return;
    } catch (const std::exception& e) {
        attnlab::fuzz::violation(std::string(what) + " threw a non-attnlab exception: " + e.what());
    }
    attnlab::fuzz::violation(std::string(what) + " was accepted, but must be rejected");
}

template <std::size_t N>
void load_at_own_shape(const File& file, const TensorInfo& info) {
    std::array<int64_t, N> shape{};
    for (std::size_t i = 0; i < N; ++i) shape[i] = info.shape[i];
    expect_error_or_success("load_f32", [&] { (void)file.load_f32<N>(info.name, shape); });
    // A wrong rank must be rejected, not misread.
    expect_rejection("load_f32 (wrong rank)", [&] { (void)file.load_f32<N == 1 ? 2 : 1>(info.name, {}); });
}

void exercise_tensor(const File& file, const TensorInfo& info) {
    switch (info.shape.size()) {
        case 1: load_at_own_shape<1>(file, info); break;
        case 2: load_at_own_shape<2>(file, info); break;
        case 3: load_at_own_shape<3>(file, info); break;
        case 4: load_at_own_shape<4>(file, info); break;
        default: break;
    }
    expect_error_or_success("load_f32_flat", [&] { (void)file.load_f32_flat(info.name); });
    if (info.shape.size() == 2)
        expect_error_or_success("load_q8", [&] { (void)file.load_q8(info.name, {info.shape[0], info.shape[1]}); });
    expect_error_or_success("load_q8 (any shape)", [&] { (void)file.load_q8(info.name, {-1, -1}); });
}

// Every typed getter on every key: the right one succeeds, the others must say why they do not apply.
void exercise_key(const File& file, const std::string& key) {
    expect_error_or_success("describe", [&] { (void)file.describe(key); });
    expect_error_or_success("to_string", [&] { (void)file.value(key).to_string(3); });
    expect_error_or_success("get_string", [&] { (void)file.get_string(key); });
    expect_error_or_success("get_u32", [&] { (void)file.get_u32(key); });
    expect_error_or_success("get_u64", [&] { (void)file.get_u64(key); });
    expect_error_or_success("get_i32", [&] { (void)file.get_i32(key); });
    expect_error_or_success("get_f32", [&] { (void)file.get_f32(key); });
    expect_error_or_success("get_bool", [&] { (void)file.get_bool(key); });
    expect_error_or_success("get_string_array", [&] { (void)file.get_string_array(key); });
    expect_error_or_success("get_f32_array", [&] { (void)file.get_f32_array(key); });
    expect_error_or_success("get_i32_array", [&] { (void)file.get_i32_array(key); });
    const attnlab::gguf::Value& value = file.value(key);
    if (value.is_array() && value.size() > 0) {
        expect_error_or_success("array item", [&] { (void)value.at(0).to_string(); });
        expect_rejection("array item past the end", [&] { (void)value.at(value.size()); });
    }
}

}  // namespace

namespace attnlab::fuzz {

int gguf_one_input(const uint8_t* data, std::size_t size) {
    std::vector<uint8_t> bytes(data, data + size);
    expect_error_or_success("gguf::File::from_bytes", [&] {
        const File file = File::from_bytes(bytes);
        for (const std::string& key : file.keys()) exercise_key(file, key);
        for (const TensorInfo& info : file.tensors()) exercise_tensor(file, info);
        // Hostile bytes may spell these names too; only an absent one must be refused.
        if (!file.has("no.such.key")) expect_rejection("missing key", [&] { (void)file.get_u32("no.such.key"); });
        if (!file.has_tensor("no.such.tensor"))
            expect_rejection("missing tensor", [&] { (void)file.tensor("no.such.tensor"); });
    });
    expect_error_or_success("Model::from_bytes", [&] {
        const attnlab::Model model = attnlab::Model::from_bytes(std::move(bytes));
        (void)model.metadata();
        (void)model.task();
        // A model that loads must also refuse or run a short call without crashing.
        if (model.task() == "translate") {
            attnlab::TranslateOptions options;
            options.max_length = 4;
            expect_error_or_success("translate", [&] { (void)model.translate("a b", options); });
        }
        if (model.task() == "caption") {
            expect_error_or_success("caption_features", [&] {
                const attnlab::gguf::File& file = model.file();
                const uint64_t cells = uint64_t(file.get_u32("attnlab.captioner.grid_height")) *
                                       file.get_u32("attnlab.captioner.grid_width");
                const uint64_t width = file.get_u32("attnlab.captioner.feature_size");
                if (cells == 0 || width == 0 || cells * width > (1u << 20) || cells > INT32_MAX) return;
                const std::vector<float> features(cells * width, 0.5f);
                attnlab::CaptionOptions options;
                options.max_length = 4;
                (void)model.caption_features(features.data(), int(cells), int(width), options);
            });
        }
    });
    return 0;
}

}  // namespace attnlab::fuzz

#ifndef ATTNLAB_FUZZ_NO_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    return attnlab::fuzz::gguf_one_input(data, size);
}
#endif
