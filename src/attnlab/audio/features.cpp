// See features.hpp. Each step mirrors the sphinxbase function named in its comment, including where that code
// rounds to float, so that the output matches sphinx_fe's to the last float bit or so.
#include "attnlab/audio/features.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <string>

#include "attnlab/audio/resample.hpp"
#include "attnlab/error.hpp"

namespace attnlab::audio {

namespace {

constexpr double kPi = 3.14159265358979323846;

// fe_mel / fe_melinv: float in and out, double inside.
float mel(float hz) { return float(2595.0 * std::log10(1.0 + double(hz) / 700.0)); }
float mel_inverse(float m) { return float(700.0 * (std::pow(10.0, double(m) / 2595.0) - 1.0)); }

// fe_build_melfilters with round_filters and unit_area on, doublewide off.
std::vector<MelFilter> build_mel_filterbank() {
    const float mel_min = mel(kLowerHz), mel_max = mel(kUpperHz);
    const float mel_bw = (mel_max - mel_min) / float(kMelBands + 1);
    const float fft_freq = float(kFeatureRate) / float(kFftSize);
    std::vector<MelFilter> filters(kMelBands);
    for (int i = 0; i < kMelBands; ++i) {
        float freqs[3];
        for (int j = 0; j < 3; ++j) {
            const float hz = mel_inverse(float(i + j) * mel_bw + mel_min);
            const float bins = hz / fft_freq;
            freqs[j] = float(int(double(bins) + 0.5)) * fft_freq;  // rounded to a DFT point
        }
        int start = -1, width = 0;
        for (int j = 0; j < kSpectrumBins; ++j) {
            const float hz = float(j) * fft_freq;
            if (hz < freqs[0]) continue;
            if (hz > freqs[2] || j == kFftSize / 2) {
                width = j - start;
                break;
            }
            if (start == -1) start = j;
        }
        MelFilter& f = filters[i];
        f.start = start;
        f.weights.resize(std::size_t(width));
        for (int j = 0; j < width; ++j) {
            const float hz = float(start + j) * fft_freq;
            float lo = (hz - freqs[0]) / (freqs[1] - freqs[0]);
            float hi = (freqs[2] - hz) / (freqs[2] - freqs[1]);
            const float area = 2.0f / (freqs[2] - freqs[0]);
            lo *= area;
            hi *= area;
            f.weights[std::size_t(j)] = lo < hi ? lo : hi;
        }
    }
    return filters;
}

// fe_create_hamming (the first half, mirrored)
std::vector<double> hamming_window() {
    std::vector<double> w(kFrameLength);
    for (int i = 0; i < kFrameLength / 2; ++i) {
        w[std::size_t(i)] = 0.54 - 0.46 * std::cos(2 * kPi * i / (double(kFrameLength) - 1.0));
        w[std::size_t(kFrameLength - 1 - i)] = w[std::size_t(i)];
    }
    return w;
}

// fe_compute_melcosine: cos(π/40 · i · (j + 0.5)) as float [13, 40]
std::vector<float> dct_cosines() {
    std::vector<float> c(std::size_t(kCepstra) * kMelBands);
    const double step = kPi / kMelBands;
    for (int i = 0; i < kCepstra; ++i)
        for (int j = 0; j < kMelBands; ++j) c[std::size_t(i) * kMelBands + j] = float(std::cos(step * i * (j + 0.5)));
    return c;
}

// In-place radix-2 FFT of 512 complex points (decimation in time, bit-reversed input order).
class Fft512 {
public:
    Fft512() : twiddle_(kFftSize / 2) {
        for (int k = 0; k < kFftSize / 2; ++k)
            twiddle_[std::size_t(k)] = {std::cos(2 * kPi * k / kFftSize), -std::sin(2 * kPi * k / kFftSize)};
    }

    // x [512] -> X [512]
    void transform(std::complex<double>* x) const {
        for (int i = 1, j = 0; i < kFftSize; ++i) {
            int bit = kFftSize >> 1;
            for (; j & bit; bit >>= 1) j ^= bit;
            j |= bit;
            if (i < j) std::swap(x[i], x[j]);
        }
        for (int len = 2; len <= kFftSize; len <<= 1) {
            const int stride = kFftSize / len;
            for (int base = 0; base < kFftSize; base += len)
                for (int k = 0; k < len / 2; ++k) {
                    const std::complex<double> t = twiddle_[std::size_t(k * stride)] * x[base + k + len / 2];
                    x[base + k + len / 2] = x[base + k] - t;
                    x[base + k] += t;
                }
        }
    }

private:
    std::vector<std::complex<double>> twiddle_;
};

// Frame t of the pre-emphasized signal, windowed -> power spectrum [257] (fe_spch_to_frame, fe_spec_magnitude).
void frame_power(const std::vector<double>& emphasized, std::size_t t, const std::vector<double>& window,
                 const Fft512& fft, std::complex<double>* buffer, double* power) {
    const std::size_t start = t * kFrameShift;
    const std::size_t available = std::min<std::size_t>(kFrameLength, emphasized.size() - start);
    for (int i = 0; i < kFftSize; ++i) buffer[i] = 0.0;
    for (std::size_t i = 0; i < available; ++i) buffer[i] = emphasized[start + i] * window[i];
    fft.transform(buffer);
    for (int k = 0; k < kSpectrumBins; ++k) power[k] = std::norm(buffer[k]);
}

// fe_mel_spec + the log of fe_mel_cep: power [257] -> log energies [40]
void log_filter_energies(const double* power, double* log_mel) {
    const std::vector<MelFilter>& filters = mel_filterbank();
    for (int b = 0; b < kMelBands; ++b) {
        const MelFilter& f = filters[std::size_t(b)];
        double energy = 0;
        for (std::size_t j = 0; j < f.weights.size(); ++j) energy += power[std::size_t(f.start) + j] * double(f.weights[j]);
        log_mel[b] = energy > 0 ? std::log(energy) : kLogFloor;
    }
}

// fe_spec2cep: log energies [40] -> cepstra [13], the running sums kept in float as mfcc_t is.
void legacy_dct(const double* log_mel, const std::vector<float>& cosines, float* cep) {
    float c0 = float(log_mel[0] / 2);
    for (int j = 1; j < kMelBands; ++j) c0 = float(double(c0) + log_mel[j]);
    cep[0] = float(double(c0) / kMelBands);
    for (int i = 1; i < kCepstra; ++i) {
        float acc = 0;
        for (int j = 0; j < kMelBands; ++j) {
            const double beta = j == 0 ? 1.0 : 2.0;
            acc = float(double(acc) + log_mel[j] * double(cosines[std::size_t(i) * kMelBands + j]) * beta);
        }
        cep[i] = float(double(acc) / (kMelBands * 2.0));
    }
}

void check_finite(const float* samples, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        check(std::isfinite(samples[i]), "audio features: sample " + std::to_string(i) + " is " +
                                             std::to_string(samples[i]) + ": samples must be finite");
}

}  // namespace

std::size_t frame_count(std::size_t n) {
    if (n == 0) return 0;
    if (n <= std::size_t(kFrameLength)) return 1;
    return 2 + (n - kFrameLength) / kFrameShift;
}

const std::vector<MelFilter>& mel_filterbank() {
    static const std::vector<MelFilter> filters = build_mel_filterbank();
    return filters;
}

Features compute_features(const float* samples, std::size_t n) {
    check(n == 0 || samples != nullptr, "audio features: no sample buffer");
    check_finite(samples, n);
    const std::size_t frames = frame_count(n);
    Features out;
    out.mfcc = Matrix::from_shape({frames, std::size_t(kCepstra)});
    out.log_mel = Matrix::from_shape({frames, std::size_t(kMelBands)});
    if (frames == 0) return out;

    // fe_pre_emphasis over the whole utterance, prior 0, on the int16-scaled samples
    std::vector<double> emphasized(n);
    double previous = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double x = double(samples[i]) * 32768.0;
        emphasized[i] = x - previous * double(kPreEmphasis);
        previous = x;
    }
    static const std::vector<double> window = hamming_window();
    static const std::vector<float> cosines = dct_cosines();
    static const Fft512 fft;
    std::vector<std::complex<double>> buffer(kFftSize);
    double power[kSpectrumBins], log_mel[kMelBands];
    for (std::size_t t = 0; t < frames; ++t) {
        frame_power(emphasized, t, window, fft, buffer.data(), power);
        log_filter_energies(power, log_mel);
        float* mel_row = out.log_mel.data() + t * kMelBands;
        for (int b = 0; b < kMelBands; ++b) mel_row[b] = float(log_mel[b]);
        legacy_dct(log_mel, cosines, out.mfcc.data() + t * kCepstra);
    }
    return out;
}

Features compute_features(const float* samples, std::size_t n, int sample_rate) {
    if (sample_rate == kFeatureRate) return compute_features(samples, n);
    const std::vector<float> resampled = resample_to_16k(samples, n, sample_rate);
    return compute_features(resampled.data(), resampled.size());
}

Matrix mfcc(const float* samples, std::size_t n) { return compute_features(samples, n).mfcc; }

Matrix log_mel_spectrogram(const float* samples, std::size_t n) { return compute_features(samples, n).log_mel; }

Matrix cepstral_mean_normalize(const Matrix& cepstra) {
    Matrix out = cepstra;
    const std::size_t frames = cepstra.shape()[0], k = cepstra.shape()[1];
    if (frames == 0) return out;
    for (std::size_t c = 0; c < k; ++c) {
        double sum = 0;
        for (std::size_t t = 0; t < frames; ++t) sum += double(cepstra(t, c));
        const double mean = sum / double(frames);
        for (std::size_t t = 0; t < frames; ++t) out(t, c) = float(double(cepstra(t, c)) - mean);
    }
    return out;
}

Matrix parse_sphinx_mfc(const uint8_t* data, std::size_t size, int coefficients) {
    check(coefficients > 0, "Sphinx .mfc: coefficients per frame must be positive");
    check(size >= 4, "Sphinx .mfc: " + std::to_string(size) + " bytes is too short for the 4-byte header");
    const uint32_t big = (uint32_t(data[0]) << 24) | (uint32_t(data[1]) << 16) | (uint32_t(data[2]) << 8) | data[3];
    const uint32_t little = (uint32_t(data[3]) << 24) | (uint32_t(data[2]) << 16) | (uint32_t(data[1]) << 8) | data[0];
    bool big_endian;
    uint64_t count;
    if (int32_t(big) >= 0 && 4 + 4 * uint64_t(big) == size) {
        big_endian = true;
        count = big;
    } else if (int32_t(little) >= 0 && 4 + 4 * uint64_t(little) == size) {
        big_endian = false;
        count = little;
    } else {
        fail("Sphinx .mfc: the header's value count matches the file size (" + std::to_string(size) +
             " bytes) in neither byte order");
    }
    check(count % uint64_t(coefficients) == 0, "Sphinx .mfc: " + std::to_string(count) +
                                                   " values are not a whole number of " +
                                                   std::to_string(coefficients) + "-value frames");
    Matrix out = Matrix::from_shape({std::size_t(count / coefficients), std::size_t(coefficients)});
    float* dst = out.data();
    for (uint64_t i = 0; i < count; ++i) {
        const uint8_t* p = data + 4 + 4 * i;
        const uint32_t bits = big_endian ? (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3]
                                         : (uint32_t(p[3]) << 24) | (uint32_t(p[2]) << 16) | (uint32_t(p[1]) << 8) | p[0];
        std::memcpy(&dst[i], &bits, 4);
    }
    return out;
}

}  // namespace attnlab::audio
