#include "attnlab/image/decode.hpp"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>

#include "attnlab/error.hpp"
#include "attnlab/image/preprocess.hpp"

// stb_image's implementation lives in this file only, with internal linkage (STB_IMAGE_STATIC), so a program that
// links its own stb_image next to libattnlab.a gets no duplicate symbols. Only the two formats the API documents,
// and a size cap so that a hostile header cannot make stb allocate gigabytes before the engine's own size check.
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_ONLY_JPEG
#define STBI_ONLY_PNG
#define STBI_NO_STDIO
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

namespace attnlab {

static_assert(STBI_MAX_DIMENSIONS == image::kMaxImageSide, "decode_image refuses what Model::caption refuses");

namespace {

constexpr const char* kSupported = " (JPEG and PNG files are supported)";

// The decoded image, or why not (stb's reason).
struct Decoded {
    Image image;
    std::string error;
};

Decoded decode(const uint8_t* bytes, std::size_t size) {
    Decoded out;
    if (size == 0) {
        out.error = "unknown image type (no bytes)";
        return out;
    }
    if (size > std::size_t(INT_MAX)) {
        out.error = "file too large (" + std::to_string(size) + " bytes)";
        return out;
    }
    int width = 0, height = 0, channels = 0;
    std::unique_ptr<stbi_uc, void (*)(void*)> data(
        stbi_load_from_memory(bytes, int(size), &width, &height, &channels, 4), stbi_image_free);
    if (!data) {
        const char* reason = stbi_failure_reason();
        out.error = reason ? reason : "unknown error";
        return out;
    }
    out.image.width = width;
    out.image.height = height;
    out.image.pixels.assign(data.get(), data.get() + std::size_t(width) * std::size_t(height) * 4);
    return out;
}

}  // namespace

Image decode_image(const uint8_t* bytes, std::size_t size) {
    check(bytes != nullptr || size == 0, "cannot decode image: null buffer");
    Decoded d = decode(bytes, size);
    if (!d.error.empty()) fail("cannot decode image: " + d.error + kSupported);
    return std::move(d.image);
}

Image decode_image(const std::vector<uint8_t>& bytes) { return decode_image(bytes.data(), bytes.size()); }

Image read_image(const std::string& path) {
    const auto refuse = [&](const std::string& why) { fail("cannot read image '" + path + "': " + why + kSupported); };
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
    if (!file) refuse(std::strerror(errno));
    std::vector<uint8_t> bytes;
    uint8_t chunk[65536];
    std::size_t n;
    while ((n = std::fread(chunk, 1, sizeof chunk, file.get())) > 0) bytes.insert(bytes.end(), chunk, chunk + n);
    // A directory opens but does not read: to the caller that is a file of an unknown type.
    if (std::ferror(file.get())) refuse(std::string("unknown image type (") + std::strerror(errno) + ")");
    Decoded d = decode(bytes.data(), bytes.size());
    if (!d.error.empty()) refuse(d.error);
    return std::move(d.image);
}

}  // namespace attnlab
