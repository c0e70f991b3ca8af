#pragma once
// The speech front end: 16 kHz samples -> the MFCCs of CMU Sphinx as AN4's .mfc files hold them, and the 40-band
// log-mel spectrogram they come from. It computes what
//   sphinx_fe -samprate 16000 -lowerf 130 -upperf 6800 -nfilt 40 -transform legacy -remove_noise no
//             -remove_silence no
// computes (sphinxbase fe_sigproc.c, float build; docs/speech.md has the measured differences), and
// python/attnlab/audio/features.py computes the same numbers:
//   samples · 32768 (sphinx reads int16)
//   -> frames of 410 samples (25.625 ms) every 160 (10 ms), frame t starting at sample 160 t; pre-emphasis
//      y[i] = x[i] - 0.97 x[i-1] over the whole signal (x[-1] = 0)
//   -> symmetric Hamming window over the 410 samples, zero-padded to 512, power spectrum |FFT|² [257]
//   -> 40 triangular filters, equally spaced in mel = 2595 log10(1 + f/700) from 130 to 6800 Hz, their edges
//      rounded to FFT bins, unit area (sphinxbase's fe_build_melfilters, in float like it)
//   -> natural log of each filter energy, -10 for an energy of 0            = log_mel [frames, 40]
//   -> legacy DCT: c0 = (L0/2 + Σ_{j≥1} Lj) / 40, ci = (L0 cos_i0 + 2 Σ_{j≥1} Lj cos_ij) / 80 with
//      cos_ij = cos(π/40 · i · (j + 0.5)), i = 0..12, c0 first               = mfcc [frames, 13]
// Frames: one per 160 samples while a whole window fits, then one last frame of what is left after the last
// whole frame's start + 160, zero-padded (fe_end_utt); see frame_count. The signal path runs in double, the
// filter weights, cosines and the cepstra's running sums in float, as sphinxbase keeps them.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "attnlab/tensor.hpp"

namespace attnlab::audio {

constexpr int kFeatureRate = 16000;
constexpr int kFrameShift = 160;
constexpr int kFrameLength = 410;
constexpr int kFftSize = 512;
constexpr int kSpectrumBins = kFftSize / 2 + 1;
constexpr int kMelBands = 40;
constexpr int kCepstra = 13;
constexpr float kLowerHz = 130.0f;
constexpr float kUpperHz = 6800.0f;
constexpr float kPreEmphasis = 0.97f;
constexpr double kLogFloor = -10.0;
constexpr double kFramesPerSecond = double(kFeatureRate) / kFrameShift;

// 0 for no samples, 1 up to one window, else 2 + (n - 410) / 160.
std::size_t frame_count(std::size_t n_samples);

// One triangular filter: power[start + j] · weights[j] summed over j.
struct MelFilter {
    int start = 0;
    std::vector<float> weights;
};

// The 40 filters, as sphinxbase builds them for 16 kHz and a 512-point FFT.
const std::vector<MelFilter>& mel_filterbank();

struct Features {
    Matrix mfcc;      // [frames, 13]
    Matrix log_mel;   // [frames, 40]
};

// samples [n] at 16 kHz -> both feature sets; non-finite samples throw attnlab::Error.
Features compute_features(const float* samples, std::size_t n);
// The same after resampling from sample_rate (8..48 kHz; 16 kHz is used as is).
Features compute_features(const float* samples, std::size_t n, int sample_rate);

Matrix mfcc(const float* samples, std::size_t n);                 // [frames, 13]
Matrix log_mel_spectrogram(const float* samples, std::size_t n);  // [frames, 40]

// Per-utterance cepstral mean normalisation: [frames, k] -> each column minus its mean (in double). No frames:
// returned as is.
Matrix cepstral_mean_normalize(const Matrix& cepstra);

// A Sphinx .mfc file: int32 N, then N float32 values, 13 a frame, in the byte order for which 4 + 4 N is the
// size (AN4's files are big-endian, sphinx_fe writes the machine's order) -> [N / coefficients, coefficients].
Matrix parse_sphinx_mfc(const uint8_t* data, std::size_t size, int coefficients = kCepstra);

}  // namespace attnlab::audio
