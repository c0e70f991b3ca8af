#pragma once
// Any rate in 8..48 kHz -> 16 kHz, band-limited; python/attnlab/audio/resample.py computes the same numbers.
// Output n sits at input position n · rate / 16000 (exact rational; output 0 on input 0). With
// nyquist = min(rate, 16000) / 2:
//   cutoff  fc = 0.94 · nyquist: the 130..6800 Hz the features read passes, nothing above nyquist folds back
//   kernel  h(t) = sinc(2 fc t) · kaiser(t / T, β = 8), t in seconds, |t| < T = 32 / (2 fc) (32 zero crossings a
//           side: about 2.1 ms when downsampling, 4.3 ms from 8 kHz), each output's weights normalised to sum 1
//   edges   samples before the start and after the end are 0
//   length  ceil(n · 16000 / rate)
// 16 kHz comes back unchanged. Weights and sums in double, output float. Deterministic: the weights depend only
// on n · rate mod 16000, tabulated once per call when that takes at most kMaxTabulatedPhases values.
#include <cstddef>
#include <vector>

namespace attnlab::audio {

constexpr int kTargetRate = 16000;
constexpr int kMinResampleRate = 8000;
constexpr int kMaxResampleRate = 48000;
constexpr double kResampleRolloff = 0.94;
constexpr int kResampleZeroCrossings = 32;
constexpr double kResampleKaiserBeta = 8.0;
constexpr int kMaxTabulatedPhases = 1024;

// Throws attnlab::Error unless kMinResampleRate <= sample_rate <= kMaxResampleRate.
void check_resample_rate(int sample_rate);

// ceil(n · 16000 / sample_rate)
std::size_t resampled_length(std::size_t n, int sample_rate);

// samples [n] at sample_rate -> [resampled_length(n, sample_rate)] at 16 kHz. Non-finite samples throw.
std::vector<float> resample_to_16k(const float* samples, std::size_t n, int sample_rate);

}  // namespace attnlab::audio
