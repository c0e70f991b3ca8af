// attnlab/image/decode.hpp: JPEG and PNG files to RGBA. The PNGs are written here (stored deflate blocks), so every
// pixel is known; the JPEG is a page sample (web/app/samples/cat.jpg). Bad files must give attnlab::Error naming
// the problem, a hostile header before any pixel is allocated.
#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "attnlab/attnlab.hpp"
#include "test_support.hpp"

using namespace attnlab;

namespace {

uint32_t crc32(const std::vector<uint8_t>& bytes, std::size_t begin) {
    uint32_t crc = 0xffffffffu;
    for (std::size_t i = begin; i < bytes.size(); ++i) {
        crc ^= bytes[i];
        for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(uint8_t(v >> shift));
}

void chunk(std::vector<uint8_t>& png, const char* type, const std::vector<uint8_t>& data) {
    put_u32(png, uint32_t(data.size()));
    const std::size_t start = png.size();
    png.insert(png.end(), type, type + 4);
    png.insert(png.end(), data.begin(), data.end());
    std::vector<uint8_t> crc_input(png.begin() + std::ptrdiff_t(start), png.end());
    put_u32(png, crc32(crc_input, 0));
}

// A PNG of `rows` (each already starting with its filter byte 0), zlib with one stored block.
std::vector<uint8_t> make_png(uint32_t width, uint32_t height, uint8_t color_type, const std::vector<uint8_t>& rows,
                              const std::vector<uint8_t>& palette = {}, const std::vector<uint8_t>& alpha = {}) {
    std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    std::vector<uint8_t> header;
    put_u32(header, width);
    put_u32(header, height);
    header.insert(header.end(), {8, color_type, 0, 0, 0});
    chunk(png, "IHDR", header);
    if (!palette.empty()) chunk(png, "PLTE", palette);
    if (!alpha.empty()) chunk(png, "tRNS", alpha);
    std::vector<uint8_t> z = {0x78, 0x01, 0x01, uint8_t(rows.size()), uint8_t(rows.size() >> 8),
                              uint8_t(~rows.size()), uint8_t(~rows.size() >> 8)};
    z.insert(z.end(), rows.begin(), rows.end());
    uint32_t a = 1, b = 0;
    for (uint8_t byte : rows) {
        a = (a + byte) % 65521;
        b = (b + a) % 65521;
    }
    put_u32(z, (b << 16) | a);
    chunk(png, "IDAT", z);
    chunk(png, "IEND", {});
    return png;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::string error_of(const std::vector<uint8_t>& bytes) {
    try {
        decode_image(bytes);
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("decode_image: PNG colour types come out as exact RGBA") {
    SUBCASE("RGB") {
        const Image image = decode_image(make_png(3, 2, 2, {0, 255, 0, 0, 0, 255, 0, 0, 0, 255,  //
                                                            0, 255, 255, 255, 0, 0, 0, 128, 128, 128}));
        CHECK(image.width == 3);
        CHECK(image.height == 2);
        CHECK(image.pixels == std::vector<uint8_t>{255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255,  //
                                                   255, 255, 255, 255, 0, 0, 0, 255, 128, 128, 128, 255});
    }
    SUBCASE("grey with alpha") {
        const Image image = decode_image(make_png(2, 2, 4, {0, 0, 255, 100, 0, 0, 200, 128, 255, 255}));
        CHECK(image.pixels == std::vector<uint8_t>{0, 0, 0, 255, 100, 100, 100, 0, 200, 200, 200, 128, 255, 255, 255, 255});
    }
    SUBCASE("palette with transparency") {
        const Image image = decode_image(make_png(2, 1, 3, {0, 0, 1}, {10, 20, 30, 40, 50, 60}, {255, 7}));
        CHECK(image.pixels == std::vector<uint8_t>{10, 20, 30, 255, 40, 50, 60, 7});
    }
}

TEST_CASE("decode_image and read_image: a JPEG photo, captioned like its pixels") {
    const std::string path = test::source_path("web/app/samples/cat.jpg");
    const Image from_bytes = decode_image(read_bytes(path));
    const Image from_file = read_image(path);
    CHECK(from_bytes.width == 451);
    CHECK(from_bytes.height == 300);
    REQUIRE(from_bytes.pixels.size() == std::size_t(451) * 300 * 4);
    CHECK(from_file.pixels == from_bytes.pixels);
    bool opaque = true;
    for (std::size_t i = 3; i < from_bytes.pixels.size(); i += 4) opaque = opaque && from_bytes.pixels[i] == 255;
    CHECK(opaque);

    const Model model = Model::open(test::source_path("tests/fixtures/caption/tiny_encoder_model.gguf"));
    const Caption from_image = model.caption(from_file);
    const Caption from_pixels = model.caption(from_file.pixels.data(), from_file.width, from_file.height);
    CHECK(from_image.ids == from_pixels.ids);
    CHECK(from_image.attention == from_pixels.attention);

    Image short_pixels = from_file;
    short_pixels.pixels.pop_back();
    CHECK_THROWS_AS(model.caption(short_pixels), Error);
    CHECK_THROWS_AS(model.caption(Image{}), Error);
}

TEST_CASE("decode_image refuses what is not a whole JPEG or PNG") {
    const std::vector<uint8_t> good = make_png(3, 2, 2, std::vector<uint8_t>(2 * 10, 0));
    const std::string supported = "(JPEG and PNG files are supported)";
    for (const std::string& message : {error_of({}), error_of({'n', 'o', 't', ' ', 'a', ' ', 'p', 'n', 'g'}),
                                       error_of({'B', 'M', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})}) {
        CHECK(message.find("cannot decode image: unknown image type") == 0);
        CHECK(message.find(supported) != std::string::npos);
    }
    // Cut inside the image data, and cut after the signature.
    CHECK(error_of(std::vector<uint8_t>(good.begin(), good.end() - 30)).find("cannot decode image: ") == 0);
    CHECK(error_of(std::vector<uint8_t>(good.begin(), good.begin() + 12)).find("cannot decode image: ") == 0);
    CHECK_THROWS_AS(decode_image(nullptr, 4), Error);

    // A header claiming 100000 x 100000 pixels (40 GB): refused from the header, nothing allocated.
    const std::string huge = error_of(make_png(100000, 100000, 2, {0, 1, 2, 3}));
    CHECK(huge.find("cannot decode image: ") == 0);
    // 8193 pixels wide: one over the engine's max_image_side.
    CHECK(error_of(make_png(8193, 1, 0, std::vector<uint8_t>(8194, 0))).find("cannot decode image: ") == 0);
    CHECK(decode_image(make_png(8192, 1, 0, std::vector<uint8_t>(8193, 0))).width == limits().max_image_side);
}

TEST_CASE("decode_image refuses a JPEG Huffman table of more than 256 symbols, also after 0xFF fill bytes") {
    // SOI, then a DHT segment whose 16 code counts add up to 257 (the spec's limit is 256; stb_image would overrun).
    std::vector<uint8_t> jpeg = {0xFF, 0xD8, 0xFF, 0xC4, 0x00, 0x00, 0x00};
    for (int i = 0; i < 16; ++i) jpeg.push_back(i == 15 ? 2 : 17);  // 15 × 17 + 2 = 257
    jpeg.resize(jpeg.size() + 257, 0);
    const std::size_t length = jpeg.size() - 4;  // from the length field to the segment's end
    jpeg[4] = uint8_t(length >> 8);
    jpeg[5] = uint8_t(length & 0xFF);
    const std::string expected = "cannot decode image: corrupt JPEG (a Huffman table of more than 256 symbols)";
    CHECK(error_of(jpeg).find(expected) == 0);
    // stb takes 0xFF fill bytes before SOI as a JPEG too (a fuzzer's find): the table is refused there as well.
    std::vector<uint8_t> filled = {0xFF, 0xFF, 0xFF};
    filled.insert(filled.end(), jpeg.begin(), jpeg.end());
    CHECK(error_of(filled).find(expected) == 0);
}

TEST_CASE("read_image names the file it cannot read") {
    const std::string missing = test::source_path("tests/fixtures/image/missing.png");
    try {
        read_image(missing);
        FAIL("read_image accepted a missing file");
    } catch (const Error& e) {
        CHECK(std::string(e.what()).find("cannot read image '" + missing + "': ") == 0);
    }
    const std::string folder = test::source_path("tests/fixtures/image");
    try {
        read_image(folder);
        FAIL("read_image accepted a directory");
    } catch (const Error& e) {
        CHECK(std::string(e.what()).find("cannot read image '" + folder + "': unknown image type") == 0);
    }
}
