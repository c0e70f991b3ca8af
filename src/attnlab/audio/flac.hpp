#pragma once
// FLAC files from bytes -> mono float samples in [-1, 1] and their rate, like parse_wav (wav.hpp) for WAV.
//   stream     "fLaC" (after an optional ID3v2 tag), STREAMINFO first, other metadata blocks skipped;
//   frames     fixed or variable block size, every sample rate / size / block size code of the format, the
//              header's CRC-8 and the frame's CRC-16 checked;
//   subframes  constant, verbatim, fixed (orders 0..4) and LPC (orders 1..32), wasted bits, Rice partitions
//              with 4- and 5-bit parameters and their escape codes;
//   channels   1..8, independent or left/side, right/side, mid/side; mixed to mono by their mean (in double);
//   samples    4..32 bits, v / 2^(bits-1) (so a 16-bit FLAC gives the samples of the same 16-bit WAV, exactly).
// Truncated or corrupt data, a CRC that does not match, a stream that stops short of the STREAMINFO length, or
// more audio than max_samples throw attnlab::Error naming what was found; no input reads out of bounds.
#include <cstddef>
#include <cstdint>
#include <string>

#include "attnlab/audio/wav.hpp"

namespace attnlab::audio {

// The most sample frames (per channel) parse_flac decodes by default: a few bytes of constant subframes can
// declare 65535 samples each, so the output is bounded by this rather than by the input's size (70 minutes at
// 16 kHz, 23 at 48 kHz).
constexpr std::size_t kMaxFlacSamples = std::size_t(1) << 26;

// True when the bytes start like a FLAC stream ("fLaC", or an ID3v2 tag followed by it).
bool looks_like_flac(const uint8_t* data, std::size_t size);

// bytes -> Audio (encoding "flac8", "flac16", "flac24", ... by bits per sample); throws attnlab::Error on anything
// it cannot read.
Audio parse_flac(const uint8_t* data, std::size_t size, std::size_t max_samples = kMaxFlacSamples);

// WAV or FLAC, told apart by their first bytes; anything else is refused with a message naming both.
Audio parse_audio(const uint8_t* data, std::size_t size);

// The file's bytes through parse_audio; the message names the path on failure.
Audio read_audio(const std::string& path);

}  // namespace attnlab::audio
