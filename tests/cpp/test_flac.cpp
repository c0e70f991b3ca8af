// audio::parse_flac against Debian's flac and sox: each FLAC of tests/fixtures/audio/flac (made by
// python/attnlab/golden/flac.py) decodes to the samples of the WAV it was encoded from, bit for bit; damaged
// streams (every truncation, flipped bits, wrong headers) are refused with attnlab::Error; the fuzz_flac seeds are
// replayed through the libFuzzer target's own entry point.
#define ATTNLAB_FUZZ_NO_MAIN
#include "../../fuzz/fuzz_flac.cpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "attnlab/audio/flac.hpp"
#include "attnlab/audio/wav.hpp"
#include "attnlab/error.hpp"
#include "test_support.hpp"

using namespace attnlab;

namespace {

std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "cannot open " << path);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Where the metadata blocks end.
std::size_t first_frame(const std::vector<uint8_t>& flac) {
    std::size_t pos = 4;
    for (bool last = false; !last;) {
        last = (flac.at(pos) & 0x80) != 0;
        pos += 4 + ((std::size_t(flac.at(pos + 1)) << 16) | (std::size_t(flac.at(pos + 2)) << 8) | flac.at(pos + 3));
    }
    REQUIRE(flac.at(pos) == 0xFF);
    return pos;
}

std::string fixture(const std::string& name) { return test::source_path("tests/fixtures/audio/" + name); }

struct Case {
    const char* flac;
    const char* wav;
    int rate, channels;
    const char* encoding;
};

// flac -8 (LPC), sox -C 0 (fixed predictors), stereo, 8/24/32-bit, and the "mixed" file whose blocks are
// constant, verbatim, wasted-bits, left/side, right/side and mid/side.
const Case kCases[] = {
    {"flac/speech.flac", "speech.wav", 16000, 1, "flac16"},
    {"flac/speech_sox.flac", "speech.wav", 16000, 1, "flac16"},
    {"flac/stereo_44k.flac", "synth_44k_stereo_pcm16.wav", 44100, 2, "flac16"},
    {"flac/pcm24_32k.flac", "synth_32k_pcm24.wav", 32000, 1, "flac24"},
    {"flac/pcm8_8k.flac", "synth_8k_pcm8.wav", 8000, 1, "flac8"},
    {"flac/pcm32_22k.flac", "synth_22k_pcm32.wav", 22050, 1, "flac32"},
    {"flac/mixed.flac", "flac/mixed.wav", 16000, 2, "flac16"},
};

}  // namespace

TEST_CASE("parse_flac: flac and sox encodings decode to the WAV's samples exactly") {
    for (const Case& c : kCases) {
        CAPTURE(c.flac);
        const std::vector<uint8_t> bytes = read_bytes(fixture(c.flac));
        REQUIRE(audio::looks_like_flac(bytes.data(), bytes.size()));
        const audio::Audio flac = audio::parse_flac(bytes.data(), bytes.size());
        const audio::Audio wav = audio::read_wav(fixture(c.wav));
        CHECK(flac.sample_rate == c.rate);
        CHECK(flac.channels == c.channels);
        CHECK(flac.encoding == c.encoding);
        REQUIRE(flac.samples.size() == wav.samples.size());
        std::size_t different = 0;
        for (std::size_t i = 0; i < wav.samples.size(); ++i) different += flac.samples[i] != wav.samples[i];
        CHECK(different == 0);
        // parse_audio and read_audio take the same path.
        CHECK(audio::parse_audio(bytes.data(), bytes.size()).samples == flac.samples);
        CHECK(audio::read_audio(fixture(c.flac)).samples == flac.samples);
        CHECK(audio::read_audio(fixture(c.wav)).samples == wav.samples);
    }
}

TEST_CASE("parse_flac: every truncation and flipped bits are refused with attnlab::Error") {
    const std::vector<uint8_t> bytes = read_bytes(fixture("flac/mixed.flac"));
    int refused = 0, cuts = 0;
    for (std::size_t cut = 0; cut < bytes.size(); cut += 7, ++cuts) {
        CAPTURE(cut);
        try {
            (void)audio::parse_flac(bytes.data(), cut);
        } catch (const Error&) {
            ++refused;
        }
    }
    CHECK(refused == cuts);  // STREAMINFO names the length, so even a cut at a frame boundary is short
    CHECK_THROWS_WITH_AS((void)audio::parse_flac(bytes.data(), bytes.size() - 2), doctest::Contains("truncated"), Error);
    // A bit flipped anywhere in the frames: the CRCs catch what the structure does not (a CRC-16 misses no
    // single-bit error).
    int caught = 0, flips = 0;
    for (std::size_t at = first_frame(bytes); at < bytes.size(); at += 37, ++flips) {
        std::vector<uint8_t> damaged = bytes;
        damaged[at] ^= 0x10;
        try {
            (void)audio::parse_flac(damaged.data(), damaged.size());
        } catch (const Error&) {
            ++caught;
        }
    }
    CHECK(caught == flips);
}

TEST_CASE("parse_flac and parse_audio: what they refuse, by name") {
    const std::vector<uint8_t> good = read_bytes(fixture("flac/speech.flac"));
    auto refuses = [](std::vector<uint8_t> bytes, const char* message) {
        CAPTURE(message);
        CHECK_THROWS_WITH_AS((void)audio::parse_audio(bytes.data(), bytes.size()), doctest::Contains(message), Error);
    };
    const std::string text = "hello, this is not audio at all\n";
    refuses(std::vector<uint8_t>(text.begin(), text.end()), "not a WAV or FLAC file");
    refuses({}, "not a WAV or FLAC file");
    refuses({'f', 'L', 'a', 'C'}, "truncated metadata block header");
    std::vector<uint8_t> not_streaminfo = good;
    not_streaminfo[4] = uint8_t((not_streaminfo[4] & 0x80) | 4);
    refuses(not_streaminfo, "the first metadata block is not STREAMINFO");
    std::vector<uint8_t> bad_sync = good;
    bad_sync[first_frame(good)] ^= 0xFF;
    refuses(bad_sync, "frame sync");
    // More audio than the caller's cap.
    CHECK_THROWS_WITH_AS((void)audio::parse_flac(good.data(), good.size(), 1000), doctest::Contains("more than the 1000"),
                         Error);
    // Reading a missing file names it.
    CHECK_THROWS_WITH_AS((void)audio::read_audio(fixture("flac/missing.flac")), doctest::Contains("missing.flac"), Error);
    // A WAV of a format the WAV reader refuses keeps its message through parse_audio.
    std::vector<uint8_t> alaw = read_bytes(fixture("speech.wav"));
    alaw[20] = 6;
    refuses(alaw, "A-law");
}

TEST_CASE("fuzz regressions: FLAC decoding") {
    namespace fs = std::filesystem;
    std::size_t replayed = 0;
    for (const char* dir : {"fuzz/corpus/fuzz_flac", "tests/fixtures/fuzz/fuzz_flac"}) {
        const fs::path folder = test::source_path(dir);
        if (!fs::is_directory(folder)) continue;
        for (const auto& entry : fs::directory_iterator(folder)) {
            if (!entry.is_regular_file()) continue;
            CAPTURE(entry.path().string());
            const std::vector<uint8_t> bytes = read_bytes(entry.path().string());
            try {
                fuzz::flac_one_input(bytes.data(), bytes.size());
            } catch (const fuzz::Violation& v) {
                FAIL_CHECK(v.message);
            }
            ++replayed;
        }
    }
    CHECK(replayed >= 4);  // the committed seeds are there
}
