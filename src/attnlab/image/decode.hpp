#pragma once
// Image files for Model::caption: JPEG and PNG decoded (stb_image) into the RGBA pixels it takes. Part of the
// installed API, so it includes nothing but the standard library.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attnlab {

// An RGBA image, as Model::caption(image) takes it.
struct Image {
    std::vector<uint8_t> pixels;  // [height, width, 4] row-major: red, green, blue, alpha
    int width = 0;
    int height = 0;
};

// Decodes the bytes of a JPEG (baseline or progressive) or PNG file; grey, palette and RGB images come out as
// RGBA with alpha 255. Throws attnlab::Error "cannot decode image: <why> (JPEG and PNG files are supported)" for
// anything else, a truncated or corrupt file, or a side over 8192 pixels (refused before its pixels are
// allocated; also the largest side Model::caption takes, Limits::max_image_side).
Image decode_image(const uint8_t* bytes, std::size_t size);
Image decode_image(const std::vector<uint8_t>& bytes);

// Reads a JPEG or PNG file and decodes it; the error names the file: "cannot read image '<path>': <why> ...".
Image read_image(const std::string& path);

}  // namespace attnlab
