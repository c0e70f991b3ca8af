#pragma once
// Image files for the CLI: the library's JPEG/PNG decoding (attnlab/image/decode.hpp).
#include <string>

#include "attnlab/image/decode.hpp"

namespace attnlab::cli {

using RgbaImage = attnlab::Image;

// Throws attnlab::Error naming the file for a missing, unreadable, non-JPEG/PNG or too large (> 8192 px) image.
inline RgbaImage load_image_rgba(const std::string& path) { return attnlab::read_image(path); }

}  // namespace attnlab::cli
