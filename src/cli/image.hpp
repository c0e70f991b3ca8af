#pragma once
// Image files for the CLI: JPEG and PNG decoded with stb_image (Debian libstb-dev) into RGBA bytes, the layout
// attnlab::Model::caption takes.
#include <cstdint>
#include <string>
#include <vector>

namespace attnlab::cli {

struct RgbaImage {
    std::vector<uint8_t> pixels;  // [height, width, 4] row-major
    int width = 0;
    int height = 0;
};

// Throws attnlab::Error naming the file for a missing, unreadable, non-JPEG/PNG or too large (> 8192 px) image.
RgbaImage load_image_rgba(const std::string& path);

}  // namespace attnlab::cli
