#include "cli/image.hpp"

#include <cstring>

#include "attnlab/error.hpp"

// The implementation of stb_image lives in this file only. Only the two formats the CLI documents, and a size
// cap so that a hostile header cannot make stb allocate gigabytes before the engine's own size check.
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_JPEG
#define STBI_ONLY_PNG
#define STBI_NO_STDIO_WARNINGS
#define STBI_MAX_DIMENSIONS 8192
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wall"
#pragma GCC diagnostic ignored "-Wextra"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
#include <stb/stb_image.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

namespace attnlab::cli {

RgbaImage load_image_rgba(const std::string& path) {
    int width = 0, height = 0, channels = 0;
    stbi_uc* data = stbi_load(path.c_str(), &width, &height, &channels, 4);
    if (data == nullptr) {
        const char* reason = stbi_failure_reason();
        fail("cannot read image '" + path + "': " + (reason ? reason : "unknown error") +
             " (JPEG and PNG files are supported)");
    }
    RgbaImage image;
    image.width = width;
    image.height = height;
    image.pixels.assign(data, data + static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 4);
    stbi_image_free(data);
    return image;
}

}  // namespace attnlab::cli
