// See wav.hpp. Chunk offsets and sizes are compared in 64-bit against the bytes present before any read, so no
// declared size can move a read past the buffer.
#include "attnlab/audio/wav.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "attnlab/error.hpp"

namespace attnlab::audio {

namespace {

constexpr uint16_t kFormatPcm = 0x0001;
constexpr uint16_t kFormatFloat = 0x0003;
constexpr uint16_t kFormatExtensible = 0xFFFE;
constexpr uint32_t kStreamedSize = 0xFFFFFFFFu;
// KSDATAFORMAT_SUBTYPE_PCM / _IEEE_FLOAT after their first two bytes (the format code).
constexpr uint8_t kGuidTail[14] = {0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71};

uint16_t u16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
uint32_t u32(const uint8_t* p) { return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24); }

struct Format {
    uint16_t code = 0;
    int channels = 0;
    int rate = 0;
    int bits = 0;
    int block_align = 0;
};

Format parse_fmt(const uint8_t* chunk, std::size_t size) {
    check(size >= 16, "WAV: fmt chunk of " + std::to_string(size) + " bytes is too short (16 needed)");
    Format f;
    f.code = u16(chunk);
    const uint32_t channels = u16(chunk + 2), rate = u32(chunk + 4), block_align = u16(chunk + 12),
                   bits = u16(chunk + 14);
    if (f.code == kFormatExtensible) {
        check(size >= 40, "WAV: WAVE_FORMAT_EXTENSIBLE fmt chunk of " + std::to_string(size) +
                              " bytes is too short (40 needed)");
        check(std::memcmp(chunk + 26, kGuidTail, sizeof kGuidTail) == 0,
              "WAV: WAVE_FORMAT_EXTENSIBLE with an unknown sub-format GUID");
        f.code = u16(chunk + 24);
    }
    check(f.code == kFormatPcm || f.code == kFormatFloat,
          "WAV: unsupported encoding " + wav_format_name(f.code) + ": only PCM and IEEE float are read");
    check(channels != 0, "WAV: zero channels");
    check(channels <= uint32_t(kMaxWavChannels),
          "WAV: " + std::to_string(channels) + " channels (at most " + std::to_string(kMaxWavChannels) + ")");
    check(rate >= uint32_t(kMinWavRate) && rate <= uint32_t(kMaxWavRate),
          "WAV: sample rate " + std::to_string(rate) + " Hz is outside " + std::to_string(kMinWavRate) + ".." +
              std::to_string(kMaxWavRate));
    if (f.code == kFormatPcm)
        check(bits == 8 || bits == 16 || bits == 24 || bits == 32,
              "WAV: " + std::to_string(bits) + "-bit PCM is not supported (8, 16, 24 or 32)");
    else
        check(bits == 32 || bits == 64, "WAV: " + std::to_string(bits) + "-bit float is not supported (32 or 64)");
    check(block_align == channels * (bits / 8), "WAV: block align " + std::to_string(block_align) +
                                                    " does not match " + std::to_string(channels) +
                                                    " channels of " + std::to_string(bits) + " bits");
    f.channels = int(channels);
    f.rate = int(rate);
    f.bits = int(bits);
    f.block_align = int(block_align);
    return f;
}

// One sample as a double in [-1, 1] (floats: as stored, checked by the caller).
double sample_at(const uint8_t* p, const Format& f) {
    if (f.code == kFormatFloat) {
        if (f.bits == 32) {
            float v;
            std::memcpy(&v, p, 4);  // the engine's targets are all little-endian
            return v;
        }
        double v;
        std::memcpy(&v, p, 8);
        return v;
    }
    switch (f.bits) {
        case 8: return (double(p[0]) - 128.0) / 128.0;
        case 16: return double(int16_t(u16(p))) / 32768.0;
        case 24: {
            int32_t v = int32_t(uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16));
            if (v >= (1 << 23)) v -= (1 << 24);
            return double(v) / 8388608.0;
        }
        default: return double(int32_t(u32(p))) / 2147483648.0;
    }
}

std::string encoding_name(const Format& f) {
    return (f.code == kFormatFloat ? "float" : "pcm") + std::to_string(f.bits);
}

// body [frames · block_align] -> mono [frames]
std::vector<float> decode(const uint8_t* body, std::size_t size, const Format& f) {
    const std::size_t frames = size / std::size_t(f.block_align);
    const int bytes = f.bits / 8;
    std::vector<float> out(frames);
    for (std::size_t t = 0; t < frames; ++t) {
        const uint8_t* frame = body + t * std::size_t(f.block_align);
        double sum = 0;
        for (int c = 0; c < f.channels; ++c) {
            double v = sample_at(frame + c * bytes, f);
            if (f.code == kFormatFloat) {
                check(std::isfinite(v), "WAV: sample " + std::to_string(t) + " is not finite (" +
                                            std::to_string(v) + ")");
                v = std::min(1.0, std::max(-1.0, v));
            }
            sum = c == 0 ? v : sum + v;
        }
        out[t] = float(f.channels == 1 ? sum : sum / f.channels);
    }
    return out;
}

}  // namespace

std::string wav_format_name(uint16_t format_tag) {
    const char* name = nullptr;
    switch (format_tag) {
        case 0x0002: name = "Microsoft ADPCM"; break;
        case 0x0006: name = "A-law"; break;
        case 0x0007: name = "mu-law"; break;
        case 0x0011: name = "IMA ADPCM"; break;
        case 0x0031: name = "GSM 6.10"; break;
        case 0x0050: name = "MPEG"; break;
        case 0x0055: name = "MPEG Layer 3 (MP3)"; break;
        case 0x0161: name = "Windows Media Audio"; break;
        case 0x2000: name = "AC-3"; break;
        case 0xF1AC: name = "FLAC"; break;
        default: break;
    }
    char code[16];
    std::snprintf(code, sizeof code, "0x%04X", unsigned(format_tag));
    return name ? std::string(name) + " (format " + code + ")" : std::string("format ") + code;
}

bool looks_like_wav(const uint8_t* data, std::size_t size) {
    return size >= 12 && std::memcmp(data, "RIFF", 4) == 0 && std::memcmp(data + 8, "WAVE", 4) == 0;
}

Audio parse_wav(const uint8_t* data, std::size_t size) {
    check(size >= 12, "WAV: " + std::to_string(size) + " bytes is too short for a RIFF/WAVE header (12 bytes)");
    check(std::memcmp(data, "RF64", 4) != 0, "WAV: RF64 (WAV over 4 GB) is not supported");
    check(std::memcmp(data, "RIFX", 4) != 0, "WAV: RIFX (big-endian WAV) is not supported");
    check(looks_like_wav(data, size), "WAV: not a RIFF/WAVE file (it must start with 'RIFF' and have 'WAVE' at byte 8)");
    bool have_fmt = false;
    Format fmt;
    uint64_t pos = 12;
    while (pos + 8 <= size) {
        const uint8_t* header = data + pos;
        uint64_t chunk_size = u32(header + 4);
        const uint64_t body = pos + 8, available = size - body;
        if (std::memcmp(header, "fmt ", 4) == 0) {
            check(chunk_size <= available, "WAV: truncated fmt chunk (" + std::to_string(chunk_size) +
                                               " bytes declared, " + std::to_string(available) + " present)");
            fmt = parse_fmt(data + body, std::size_t(chunk_size));
            have_fmt = true;
        } else if (std::memcmp(header, "data", 4) == 0) {
            check(have_fmt, "WAV: the data chunk comes before any fmt chunk");
            if (chunk_size == kStreamedSize) chunk_size = available;
            check(chunk_size <= available, "WAV: truncated data chunk (" + std::to_string(chunk_size) +
                                               " bytes declared, " + std::to_string(available) + " present)");
            Audio audio;
            audio.samples = decode(data + body, std::size_t(chunk_size), fmt);
            audio.sample_rate = fmt.rate;
            audio.channels = fmt.channels;
            audio.encoding = encoding_name(fmt);
            return audio;
        }
        pos = body + chunk_size + (chunk_size & 1);
    }
    check(have_fmt, "WAV: no fmt chunk");
    fail("WAV: no data chunk");
}

Audio read_wav(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    check(bool(in), "WAV: cannot open " + path);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    try {
        return parse_wav(bytes.data(), bytes.size());
    } catch (const Error& e) {
        fail(path + ": " + e.what());
    }
}

}  // namespace attnlab::audio
