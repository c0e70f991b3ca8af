#include "attnlab/image/decode.hpp"

#include <algorithm>
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

// stb_image (Debian's 2022-09 snapshot) does not bound a DHT table's symbol count, and a table of more than 256
// symbols overruns its arrays; the JPEG spec allows at most 256, so such a file is refused here, before stb reads it.
// Walks every marker segment, and through entropy-coded data to the next marker (progressive files define tables
// between scans). Returns false for an oversized table; anything else malformed is left for stb to report. stb
// takes a file for a JPEG when it starts with 0xFF, any number of 0xFF fill bytes, then SOI (0xD8): so does this.
bool jpeg_tables_fit(const uint8_t* bytes, std::size_t size) {
    if (size < 2 || bytes[0] != 0xFF) return true;
    std::size_t pos = 1;
    while (pos < size && bytes[pos] == 0xFF) ++pos;
    if (pos >= size || bytes[pos] != 0xD8) return true;
    ++pos;
    while (pos + 4 <= size) {
        if (bytes[pos] != 0xFF) {  // entropy-coded data: skip to a marker that is not a stuffed 0xFF00 or RSTn
            ++pos;
            continue;
        }
        const uint8_t marker = bytes[pos + 1];
        if (marker == 0xFF || marker == 0x00 || (marker >= 0xD0 && marker <= 0xD7) || marker == 0x01) {
            pos += marker == 0xFF ? 1 : 2;
            continue;
        }
        if (marker == 0xD9) return true;
        const std::size_t length = std::size_t(bytes[pos + 2]) << 8 | bytes[pos + 3];
        const std::size_t end = std::min(size, pos + 2 + length);
        if (marker == 0xC4) {
            for (std::size_t at = pos + 4; at + 17 <= end;) {
                std::size_t symbols = 0;
                for (int i = 1; i <= 16; ++i) symbols += bytes[at + i];
                if (symbols > 256) return false;
                at += 17 + symbols;
            }
        }
        pos = pos + 2 + std::max<std::size_t>(length, 2);
    }
    return true;
}

// stb_image grows its buffer to an IDAT chunk's declared length before reading it, so a few bytes claiming a
// 1 GB chunk allocate 1 GB; a chunk longer than the rest of the file is refused here instead.
bool png_chunks_fit(const uint8_t* bytes, std::size_t size) {
    static const uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
    if (size < 8 || std::memcmp(bytes, kSignature, 8) != 0) return true;
    std::size_t pos = 8;
    while (pos + 8 <= size) {
        const std::size_t length = std::size_t(bytes[pos]) << 24 | std::size_t(bytes[pos + 1]) << 16 |
                                   std::size_t(bytes[pos + 2]) << 8 | bytes[pos + 3];
        if (length > size - pos - 8) return false;
        if (std::memcmp(bytes + pos + 4, "IEND", 4) == 0) return true;
        pos += 12 + length;  // length, type, data, CRC
    }
    return true;
}

Decoded decode(const uint8_t* bytes, std::size_t size) {
    Decoded out;
    if (size == 0) {
        out.error = "unknown image type (no bytes)";
        return out;
    }
    if (!png_chunks_fit(bytes, size)) {
        out.error = "corrupt PNG (a chunk longer than the file)";
        return out;
    }
    if (!jpeg_tables_fit(bytes, size)) {
        out.error = "corrupt JPEG (a Huffman table of more than 256 symbols)";
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
