// libFuzzer: arbitrary dimensions and bytes as an RGBA image. Declared sizes come from the input itself (negative,
// zero, huge, or not matching the buffer) and must be rejected before any pixel is read; sizes that do match run
// the preprocessing and Model::caption on the committed tiny captioner with an image encoder
// (tests/fixtures/caption/tiny_encoder_model.gguf: preprocessing, MobileNetV2-style convolutions, decoder), and
// caption_features on the decoder-only one (tests/fixtures/caption/tiny_model.gguf) with the bytes as raw float
// features (NaN and infinities included).
//
// The same bytes also go to decode_image as a JPEG/PNG file (the corpus holds a PNG and a JPEG for that).
//
// Input: int32 width, int32 height (little-endian), u8 output side, u8 flags, then the pixel bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "attnlab/attnlab.hpp"
#include "attnlab/image/preprocess.hpp"
#include "fuzz_support.hpp"

namespace {

using attnlab::fuzz::expect_error_or_success;

constexpr std::size_t kHeaderBytes = 10;
constexpr int kMaxForwardSide = 64;  // keeps each run fast; larger sides only exercise validation

int32_t read_i32(const uint8_t* p) {
    uint32_t v = 0;
    std::memcpy(&v, p, 4);
    return static_cast<int32_t>(v);
}

}  // namespace

namespace attnlab::fuzz {

int image_one_input(const uint8_t* data, std::size_t size) {
    static const attnlab::Model captioner =
        attnlab::Model::open(attnlab::fuzz::source_path("tests/fixtures/caption/tiny_encoder_model.gguf"));
    static const attnlab::Model decoder_only =
        attnlab::Model::open(attnlab::fuzz::source_path("tests/fixtures/caption/tiny_model.gguf"));
    // The whole input as an image file too: stb_image on hostile bytes must end in a picture or attnlab::Error.
    expect_error_or_success("decode_image", [&] {
        const attnlab::Image decoded = attnlab::decode_image(data, size);
        if (decoded.pixels.size() != std::size_t(decoded.width) * std::size_t(decoded.height) * 4) __builtin_trap();
    });
    if (size < kHeaderBytes) return 0;
    const int32_t width = read_i32(data), height = read_i32(data + 4);
    const int out_size = data[8] % (kMaxForwardSide + 2);  // 0 and 65 probe the output-size check
    const uint8_t flags = data[9];
    const uint8_t* pixels = data + kHeaderBytes;
    const std::size_t n_bytes = size - kHeaderBytes;

    // The byte count is known here, so any declared size is fair game: validation must catch every mismatch.
    expect_error_or_success("validate_rgba", [&] { attnlab::image::validate_rgba(n_bytes, width, height); });
    expect_error_or_success("preprocess_rgba",
                            [&] { (void)attnlab::image::preprocess_rgba(pixels, n_bytes, width, height, out_size); });

    // Model::caption trusts width·height·4 bytes to be there, so it gets either the real size or one that is out
    // of range (which it must refuse before reading).
    const bool out_of_range = width <= 0 || height <= 0 || width > attnlab::image::kMaxImageSide ||
                              height > attnlab::image::kMaxImageSide;
    const bool matches = !out_of_range && uint64_t(width) * uint64_t(height) * 4 == n_bytes;
    attnlab::CaptionOptions options;
    options.beam = 1 + (flags & 3);
    options.max_length = (flags >> 2) & 7;  // 0 = the model's default
    if (matches || out_of_range)
        expect_error_or_success("caption", [&] { (void)captioner.caption(pixels, width, height, options); });

    // The decoder on arbitrary features: 6 × 48 floats, either scaled bytes or raw bit patterns.
    if (flags & 0x20) {
        const int grid_cells = 6, feature_size = 48;
        std::vector<float> features(grid_cells * feature_size, 0.0f);
        if (flags & 0x40) {
            std::memcpy(features.data(), pixels, std::min(n_bytes, features.size() * sizeof(float)));
        } else {
            for (std::size_t i = 0; i < features.size() && i < n_bytes; ++i) features[i] = (pixels[i] - 128) / 16.0f;
        }
        const int cells = (flags & 0x80) ? int(n_bytes % 8) : grid_cells;  // sometimes the wrong grid
        expect_error_or_success("caption_features",
                                [&] { (void)decoder_only.caption_features(features.data(), cells, feature_size, options); });
    }
    return 0;
}

}  // namespace attnlab::fuzz

#ifndef ATTNLAB_FUZZ_NO_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    return attnlab::fuzz::image_one_input(data, size);
}
#endif
