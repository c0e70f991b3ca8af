// audio::parse_wav against python/attnlab/audio/wav.py on the committed fixtures (tests/fixtures/audio, made by
// python/attnlab/golden/audio.py), every encoding's conversion on hand-made bytes, the errors it must give, and the
// fuzz_wav seeds replayed through the libFuzzer target's own entry point.
#define ATTNLAB_FUZZ_NO_MAIN
#include "../../fuzz/fuzz_wav.cpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "attnlab/audio/wav.hpp"
#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "test_support.hpp"

using namespace attnlab;

namespace {

const gguf::File& golden() {
    static const gguf::File file = gguf::File::open(test::source_path("tests/fixtures/audio/features.gguf"));
    return file;
}

void put16(std::vector<uint8_t>& b, uint32_t v) {
    b.push_back(uint8_t(v));
    b.push_back(uint8_t(v >> 8));
}
void put32(std::vector<uint8_t>& b, uint32_t v) {
    put16(b, v & 0xFFFF);
    put16(b, v >> 16);
}
void put_tag(std::vector<uint8_t>& b, const char* tag) { b.insert(b.end(), tag, tag + 4); }

struct FmtFields {
    uint16_t code = 1;
    uint16_t channels = 1;
    uint32_t rate = 16000;
    uint16_t bits = 16;
    int block_align = -1;       // -1: channels · bits / 8
    uint16_t sub_format = 0;    // set: WAVE_FORMAT_EXTENSIBLE with this sub-format code
    bool bad_guid = false;
};

std::vector<uint8_t> fmt_chunk(const FmtFields& f) {
    std::vector<uint8_t> body;
    const uint16_t align = uint16_t(f.block_align >= 0 ? f.block_align : f.channels * f.bits / 8);
    put16(body, f.sub_format ? 0xFFFE : f.code);
    put16(body, f.channels);
    put32(body, f.rate);
    put32(body, f.rate * align);
    put16(body, align);
    put16(body, f.bits);
    if (f.sub_format) {
        put16(body, 22);
        put16(body, f.bits);
        put32(body, 0);
        put16(body, f.sub_format);
        const uint8_t tail[14] = {0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71};
        body.insert(body.end(), tail, tail + 14);
        if (f.bad_guid) body.back() ^= 1;
    }
    std::vector<uint8_t> chunk;
    put_tag(chunk, "fmt ");
    put32(chunk, uint32_t(body.size()));
    chunk.insert(chunk.end(), body.begin(), body.end());
    return chunk;
}

std::vector<uint8_t> chunk(const char* tag, const std::vector<uint8_t>& body, int64_t declared = -1) {
    std::vector<uint8_t> c;
    put_tag(c, tag);
    put32(c, uint32_t(declared >= 0 ? declared : int64_t(body.size())));
    c.insert(c.end(), body.begin(), body.end());
    if (declared < 0 && (body.size() & 1)) c.push_back(0);
    return c;
}

std::vector<uint8_t> riff(const std::vector<std::vector<uint8_t>>& chunks) {
    std::vector<uint8_t> payload;
    put_tag(payload, "WAVE");
    for (const auto& c : chunks) payload.insert(payload.end(), c.begin(), c.end());
    std::vector<uint8_t> out;
    put_tag(out, "RIFF");
    put32(out, uint32_t(payload.size()));
    out.insert(out.end(), payload.begin(), payload.end());
    return out;
}

std::vector<uint8_t> wav(const FmtFields& f, const std::vector<uint8_t>& data) {
    return riff({fmt_chunk(f), chunk("data", data)});
}

audio::Audio parse(const std::vector<uint8_t>& bytes) { return audio::parse_wav(bytes.data(), bytes.size()); }

std::vector<uint8_t> file_bytes(const std::string& relative) {
    std::ifstream in(test::source_path(relative), std::ios::binary);
    REQUIRE(bool(in));
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<uint8_t> floats32(const std::vector<float>& v) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

}  // namespace

TEST_CASE("wav: the fixtures decode to wav.py's samples (bit for bit), with rate, channels and encoding") {
    struct Case {
        const char* name;
        int rate, channels;
        const char* encoding;
    };
    const Case cases[] = {{"synth_16k_pcm16", 16000, 1, "pcm16"},        {"synth_8k_pcm8", 8000, 1, "pcm8"},
                          {"synth_22k_pcm32", 22050, 1, "pcm32"},        {"synth_32k_pcm24", 32000, 1, "pcm24"},
                          {"synth_44k_stereo_pcm16", 44100, 2, "pcm16"}, {"synth_48k_float32_ext", 48000, 1, "float32"},
                          {"synth_16k_float64", 16000, 1, "float64"},    {"synth_44101_pcm16", 44101, 1, "pcm16"},
                          {"speech", 16000, 1, "pcm16"}};
    for (const Case& c : cases) {
        CAPTURE(c.name);
        const std::string name = c.name;
        const audio::Audio a = audio::read_wav(test::source_path("tests/fixtures/audio/" + name + ".wav"));
        CHECK(a.sample_rate == c.rate);
        CHECK(a.channels == c.channels);
        CHECK(a.encoding == c.encoding);
        CHECK(uint32_t(golden().get_u32(name + ".rate")) == uint32_t(c.rate));
        REQUIRE(a.samples.size() == golden().get_u32(name + ".samples_count"));
        // Integer PCM over a power of two and the stereo mean are exact in both languages: no tolerance.
        const std::vector<float> head = golden().load_f32_flat(name + ".samples_head");
        REQUIRE(head.size() <= a.samples.size());
        for (std::size_t i = 0; i < head.size(); ++i) {
            CAPTURE(i);
            REQUIRE(a.samples[i] == head[i]);
        }
        double sum = 0, abs_sum = 0;
        for (float x : a.samples) {
            sum += x;
            abs_sum += std::fabs(x);
        }
        // Only the order of the float64 sums differs (numpy sums pairwise).
        CHECK(sum == doctest::Approx(golden().value(name + ".samples_sum").as_double()).epsilon(1e-12));
        CHECK(abs_sum == doctest::Approx(golden().value(name + ".samples_abs_sum").as_double()).epsilon(1e-12));
        for (float x : a.samples) REQUIRE((x >= -1.0f && x <= 1.0f));
    }
}

TEST_CASE("wav: each PCM width maps its extremes and zero as documented") {
    FmtFields f;
    f.bits = 8;
    CHECK(parse(wav(f, {0, 128, 255, 64})).samples == std::vector<float>{-1.0f, 0.0f, 127 / 128.0f, -0.5f});
    f.bits = 16;
    CHECK(parse(wav(f, {0x00, 0x80, 0xFF, 0x7F, 0, 0, 0x00, 0x40})).samples ==
          std::vector<float>{-1.0f, 32767 / 32768.0f, 0.0f, 0.5f});
    f.bits = 24;
    CHECK(parse(wav(f, {0, 0, 0x80, 0xFF, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0, 0, 0x40})).samples ==
          std::vector<float>{-1.0f, float(8388607 / 8388608.0), float(-1 / 8388608.0), 0.5f});
    f.bits = 32;
    CHECK(parse(wav(f, {0, 0, 0, 0x80, 0xFF, 0xFF, 0xFF, 0x7F, 0, 0, 0, 0xC0})).samples ==
          std::vector<float>{-1.0f, float(2147483647 / 2147483648.0), -0.5f});
}

TEST_CASE("wav: float 32 and 64 pass through, clamped to [-1, 1]; NaN and infinity are refused") {
    FmtFields f;
    f.code = 3;
    f.bits = 32;
    const audio::Audio a = parse(wav(f, floats32({0.25f, -1.5f, 2.0f, -0.125f})));
    CHECK(a.samples == std::vector<float>{0.25f, -1.0f, 1.0f, -0.125f});
    CHECK(a.encoding == "float32");
    CHECK_THROWS_WITH_AS(parse(wav(f, floats32({0.0f, 0.0f, NAN}))), "WAV: sample 2 is not finite (nan)",
                         Error);
    CHECK_THROWS_WITH_AS(parse(wav(f, floats32({INFINITY}))), doctest::Contains("sample 0 is not finite"), Error);

    f.bits = 64;
    const double values[] = {0.5, -0.75, 3.0};
    std::vector<uint8_t> body(sizeof values);
    std::memcpy(body.data(), values, sizeof values);
    CHECK(parse(wav(f, body)).samples == std::vector<float>{0.5f, -0.75f, 1.0f});
}

TEST_CASE("wav: channels are mixed to mono by their mean") {
    FmtFields f;
    f.code = 3;
    f.bits = 32;
    f.channels = 2;
    const audio::Audio stereo = parse(wav(f, floats32({0.5f, -0.25f, 1.0f, 1.0f})));
    CHECK(stereo.channels == 2);
    CHECK(stereo.samples == std::vector<float>{0.125f, 1.0f});
    f.channels = 3;
    CHECK(parse(wav(f, floats32({0.3f, 0.3f, 0.3f}))).samples.size() == 1);
    CHECK(parse(wav(f, floats32({0.3f, 0.3f, 0.3f}))).samples[0] == doctest::Approx(0.3f));
}

TEST_CASE("wav: WAVE_FORMAT_EXTENSIBLE names PCM or float in its GUID") {
    FmtFields f;
    f.sub_format = 1;
    CHECK(parse(wav(f, {0x00, 0x40})).samples == std::vector<float>{0.5f});
    f.sub_format = 3;
    f.bits = 32;
    CHECK(parse(wav(f, floats32({-0.5f}))).samples == std::vector<float>{-0.5f});
    f.sub_format = 2;
    f.bits = 4;
    CHECK_THROWS_WITH_AS(parse(wav(f, {0})), doctest::Contains("Microsoft ADPCM (format 0x0002)"), Error);
    f.sub_format = 1;
    f.bits = 16;
    f.bad_guid = true;
    CHECK_THROWS_WITH_AS(parse(wav(f, {0, 0})), "WAV: WAVE_FORMAT_EXTENSIBLE with an unknown sub-format GUID", Error);
}

TEST_CASE("wav: other chunks are skipped (odd sizes padded), streamed sizes read to the end, partial frames dropped") {
    FmtFields f;
    const std::vector<uint8_t> list = chunk("LIST", {'a', 'b', 'c'});  // odd: padded to 4
    CHECK(riff({list, fmt_chunk(f), chunk("fact", {1, 0, 0, 0}), chunk("data", {0, 0x40})}).size() == 12 + 12 + 24 + 12 + 10);
    CHECK(parse(riff({list, fmt_chunk(f), chunk("fact", {1, 0, 0, 0}), chunk("data", {0, 0x40})})).samples ==
          std::vector<float>{0.5f});
    CHECK(parse(riff({fmt_chunk(f), chunk("data", {0, 0x40, 0, 0xC0}, 0xFFFFFFFF)})).samples ==
          std::vector<float>{0.5f, -0.5f});
    CHECK(parse(riff({fmt_chunk(f), chunk("data", {0, 0x40, 7}, 3)})).samples == std::vector<float>{0.5f});
    CHECK(parse(wav(f, {})).samples.empty());
}

TEST_CASE("wav: what it cannot read gets an error that says what is wrong") {
    const FmtFields pcm;
    auto with = [](auto change) {
        FmtFields f;
        change(f);
        return wav(f, {0, 0, 0, 0});
    };
    CHECK_THROWS_WITH_AS(parse({'R', 'I', 'F', 'F'}), "WAV: 4 bytes is too short for a RIFF/WAVE header (12 bytes)", Error);
    const std::string text = "hello, this is not audio at all";
    CHECK_THROWS_WITH_AS(parse(std::vector<uint8_t>(text.begin(), text.end())),
                         "WAV: not a RIFF/WAVE file (it must start with 'RIFF' and have 'WAVE' at byte 8)", Error);
    std::vector<uint8_t> avi = wav(pcm, {0, 0});
    std::memcpy(avi.data() + 8, "AVI ", 4);
    CHECK_THROWS_WITH_AS(parse(avi), doctest::Contains("not a RIFF/WAVE file"), Error);
    std::vector<uint8_t> rf64 = wav(pcm, {0, 0});
    std::memcpy(rf64.data(), "RF64", 4);
    CHECK_THROWS_WITH_AS(parse(rf64), "WAV: RF64 (WAV over 4 GB) is not supported", Error);
    std::memcpy(rf64.data(), "RIFX", 4);
    CHECK_THROWS_WITH_AS(parse(rf64), "WAV: RIFX (big-endian WAV) is not supported", Error);

    CHECK_THROWS_WITH_AS(parse(with([](FmtFields& f) { f.code = 2; f.bits = 4; f.block_align = 256; })),
                         "WAV: unsupported encoding Microsoft ADPCM (format 0x0002): only PCM and IEEE float are read",
                         Error);
    CHECK_THROWS_WITH_AS(parse(with([](FmtFields& f) { f.code = 6; f.bits = 8; })),
                         doctest::Contains("unsupported encoding A-law (format 0x0006)"), Error);
    CHECK_THROWS_WITH_AS(parse(with([](FmtFields& f) { f.code = 7; f.bits = 8; })),
                         doctest::Contains("unsupported encoding mu-law (format 0x0007)"), Error);
    CHECK_THROWS_WITH_AS(parse(with([](FmtFields& f) { f.code = 0x55; })), doctest::Contains("MPEG Layer 3 (MP3)"), Error);
    CHECK_THROWS_WITH_AS(parse(with([](FmtFields& f) { f.code = 0x1234; })),
                         doctest::Contains("unsupported encoding format 0x1234"), Error);
    CHECK_THROWS_WITH_AS(parse(with([](FmtFields& f) { f.channels = 0; f.block_align = 2; })), "WAV: zero channels", Error);
    CHECK_THROWS_WITH_AS(parse(with([](FmtFields& f) { f.channels = 33; })), "WAV: 33 channels (at most 32)", Error);
    CHECK_THROWS_WITH_AS(parse(with([](FmtFields& f) { f.rate = 0; })),
                         "WAV: sample rate 0 Hz is outside 1000..384000", Error);
    CHECK_THROWS_WITH_AS(parse(with([](FmtFields& f) { f.rate = 0xFFFFFFFF; })),
                         doctest::Contains("sample rate 4294967295 Hz"), Error);
    CHECK_THROWS_WITH_AS(parse(with([](FmtFields& f) { f.bits = 12; f.block_align = 2; })),
                         "WAV: 12-bit PCM is not supported (8, 16, 24 or 32)", Error);
    CHECK_THROWS_WITH_AS(parse(with([](FmtFields& f) { f.code = 3; f.bits = 16; })),
                         "WAV: 16-bit float is not supported (32 or 64)", Error);
    CHECK_THROWS_WITH_AS(parse(with([](FmtFields& f) { f.block_align = 3; })),
                         "WAV: block align 3 does not match 1 channels of 16 bits", Error);

    CHECK_THROWS_WITH_AS(parse(riff({chunk("data", {0, 0}), fmt_chunk(pcm)})),
                         "WAV: the data chunk comes before any fmt chunk", Error);
    CHECK_THROWS_WITH_AS(parse(riff({chunk("LIST", {1, 2})})), "WAV: no fmt chunk", Error);
    CHECK_THROWS_WITH_AS(parse(riff({fmt_chunk(pcm)})), "WAV: no data chunk", Error);
    CHECK_THROWS_WITH_AS(parse(riff({fmt_chunk(pcm), chunk("data", {0, 0}, 1000)})),
                         "WAV: truncated data chunk (1000 bytes declared, 2 present)", Error);
    CHECK_THROWS_WITH_AS(parse(riff({chunk("fmt ", {1, 0, 1, 0}, 16)})),
                         "WAV: truncated fmt chunk (16 bytes declared, 4 present)", Error);
    CHECK_THROWS_WITH_AS(parse(riff({chunk("fmt ", {1, 0, 1, 0})})), "WAV: fmt chunk of 4 bytes is too short (16 needed)",
                         Error);
    CHECK_THROWS_WITH_AS(parse(riff({chunk("LIST", {1, 2}, 0xFFFFFFF0)})), "WAV: no fmt chunk", Error);

    CHECK_THROWS_WITH_AS(audio::read_wav(test::source_path("tests/fixtures/audio/no_such.wav")),
                         doctest::Contains("WAV: cannot open"), Error);
    CHECK(audio::wav_format_name(6) == "A-law (format 0x0006)");
}

TEST_CASE("wav: every truncation of a real file parses or fails cleanly") {
    const std::vector<uint8_t> bytes = file_bytes("tests/fixtures/audio/synth_48k_float32_ext.wav");
    int parsed = 0, refused = 0;
    for (std::size_t cut = 0; cut < 200; ++cut) {
        try {
            (void)audio::parse_wav(bytes.data(), cut);
            ++parsed;
        } catch (const Error&) {
            ++refused;
        }
    }
    CHECK(refused == 200);  // every cut lands inside the header or leaves the data chunk short
    for (std::size_t cut = bytes.size() - 64; cut < bytes.size(); ++cut)
        CHECK_THROWS_WITH_AS((void)audio::parse_wav(bytes.data(), cut), doctest::Contains("truncated data chunk"), Error);
    CHECK(audio::looks_like_wav(bytes.data(), bytes.size()));
    CHECK_FALSE(audio::looks_like_wav(bytes.data(), 11));
}

TEST_CASE("fuzz regressions: WAV and .mfc parsing and the front end") {
    namespace fs = std::filesystem;
    std::size_t replayed = 0;
    for (const char* dir : {"fuzz/corpus/fuzz_wav", "tests/fixtures/fuzz/fuzz_wav"}) {
        const fs::path folder = test::source_path(dir);
        if (!fs::is_directory(folder)) continue;
        for (const auto& entry : fs::directory_iterator(folder)) {
            if (!entry.is_regular_file()) continue;
            CAPTURE(entry.path().string());
            std::ifstream in(entry.path(), std::ios::binary);
            const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            try {
                fuzz::wav_one_input(bytes.data(), bytes.size());
            } catch (const fuzz::Violation& v) {
                FAIL_CHECK(v.message);
            }
            ++replayed;
        }
    }
    CHECK(replayed >= 10);  // the committed seeds are there
}
