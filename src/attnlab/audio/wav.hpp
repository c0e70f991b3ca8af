#pragma once
// WAV files from bytes -> mono float samples in [-1, 1] and their rate; python/attnlab/audio/wav.py reads the same
// files to the same samples with the same messages.
//   encodings  PCM 8-bit (unsigned: (b - 128) / 128), 16, 24, 32-bit (signed: v / 2^(bits-1)), IEEE float 32 and
//              64 (clamped to [-1, 1]; NaN and infinities refused), in a plain fmt chunk or as
//              WAVE_FORMAT_EXTENSIBLE (its sub-format GUID names PCM or float);
//   channels   1..kMaxWavChannels, mixed to mono by their mean (in double);
//   rate       any rate in kMinWavRate..kMaxWavRate Hz (the resampler takes 8..48 kHz of it);
//   chunks     RIFF chunks in any order before "data" (fmt must come first of the two), odd sizes padded; a data
//              size of 0xFFFFFFFF (a streamed WAV) means "to the end"; a trailing partial sample frame is dropped.
// Anything else (not RIFF/WAVE, RF64, RIFX, ADPCM, A-law, mu-law, MP3, ..., truncated chunks, zero channels, sizes
// that do not add up) throws attnlab::Error naming what was found; no input reads out of bounds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attnlab::audio {

constexpr int kMaxWavChannels = 32;
constexpr int kMinWavRate = 1000;
constexpr int kMaxWavRate = 384000;

struct Audio {
    std::vector<float> samples;  // mono, [-1, 1]
    int sample_rate = 0;         // Hz
    int channels = 0;            // in the file, before mixing
    std::string encoding;        // "pcm8", "pcm16", "pcm24", "pcm32", "float32" or "float64"
};

// True when the bytes start like a RIFF/WAVE file (for callers that sniff the format).
bool looks_like_wav(const uint8_t* data, std::size_t size);

// bytes -> Audio; throws attnlab::Error on anything it cannot read.
Audio parse_wav(const uint8_t* data, std::size_t size);

// The file's bytes through parse_wav; the message names the path on failure.
Audio read_wav(const std::string& path);

// The name parse_wav uses for a WAVE format tag, e.g. "A-law (format 0x0006)".
std::string wav_format_name(uint16_t format_tag);

}  // namespace attnlab::audio
