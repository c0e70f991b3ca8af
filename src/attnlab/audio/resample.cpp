// See resample.hpp. The formulas follow resample.py term by term (same series for the Bessel function, same
// sinc), so the two sides differ only by the rounding of sin/cos/sqrt and of the sums' order.
#include "attnlab/audio/resample.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>

#include "attnlab/error.hpp"

namespace attnlab::audio {

namespace {

constexpr double kPi = 3.14159265358979323846;

// Σ_k ((x/2)^k / k!)², summed to k = 63 like resample.py's _bessel_i0.
double bessel_i0(double x) {
    const double half = x / 2.0;
    double term = 1.0, total = 1.0;
    for (int k = 1; k < 64; ++k) {
        const double q = half / k;
        term = term * (q * q);
        total = total + term;
    }
    return total;
}

// numpy.sinc
double sinc(double x) {
    const double y = kPi * (x == 0.0 ? 1.0e-20 : x);
    return std::sin(y) / y;
}

struct Geometry {
    double cutoff = 0;      // Hz
    double half_width = 0;  // T, seconds
    int taps = 0;           // J: inputs i0 - J .. i0 + J
};

Geometry geometry(int rate) {
    Geometry g;
    const double nyquist = double(std::min(rate, kTargetRate)) / 2.0;
    g.cutoff = kResampleRolloff * nyquist;
    g.half_width = kResampleZeroCrossings / (2.0 * g.cutoff);
    g.taps = int(std::ceil(g.half_width * rate));
    return g;
}

// fraction in [0, 1): the output's offset past input i0 -> weights [2J + 1] for inputs i0 - J .. i0 + J
void kernel_weights(const Geometry& g, int rate, double fraction, double* weights) {
    const double window_norm = bessel_i0(kResampleKaiserBeta);
    const int count = 2 * g.taps + 1;
    double total = 0;
    for (int k = 0; k < count; ++k) {
        const double t = (double(k - g.taps) - fraction) / rate;
        const double u = t / g.half_width;
        double w = 0;
        if (std::fabs(u) < 1.0)
            w = sinc(2.0 * g.cutoff * t) *
                (bessel_i0(kResampleKaiserBeta * std::sqrt(std::max(0.0, 1.0 - u * u))) / window_norm);
        weights[k] = w;
        total += w;
    }
    for (int k = 0; k < count; ++k) weights[k] /= total;
}

}  // namespace

void check_resample_rate(int sample_rate) {
    check(sample_rate >= kMinResampleRate && sample_rate <= kMaxResampleRate,
          "resample: sample rate " + std::to_string(sample_rate) + " Hz is outside " +
              std::to_string(kMinResampleRate) + ".." + std::to_string(kMaxResampleRate) + " Hz");
}

std::size_t resampled_length(std::size_t n, int sample_rate) {
    check_resample_rate(sample_rate);
    return std::size_t((uint64_t(n) * kTargetRate + uint64_t(sample_rate) - 1) / uint64_t(sample_rate));
}

std::vector<float> resample_to_16k(const float* samples, std::size_t n, int sample_rate) {
    check_resample_rate(sample_rate);
    for (std::size_t i = 0; i < n; ++i)
        check(std::isfinite(samples[i]), "resample: sample " + std::to_string(i) + " is " +
                                             std::to_string(samples[i]) + ": samples must be finite");
    if (sample_rate == kTargetRate) return std::vector<float>(samples, samples + n);

    const Geometry g = geometry(sample_rate);
    const int count = 2 * g.taps + 1;
    const int step = std::gcd(sample_rate, kTargetRate);
    const int phases = kTargetRate / step;
    std::vector<double> table;
    if (phases <= kMaxTabulatedPhases) {
        table.resize(std::size_t(phases) * count);
        for (int p = 0; p < phases; ++p)
            kernel_weights(g, sample_rate, double(p * step) / kTargetRate, &table[std::size_t(p) * count]);
    }
    std::vector<double> scratch(table.empty() ? count : 0);

    const std::size_t n_out = resampled_length(n, sample_rate);
    std::vector<float> out(n_out);
    for (std::size_t o = 0; o < n_out; ++o) {
        const uint64_t numerator = uint64_t(o) * uint64_t(sample_rate);
        const int64_t first = int64_t(numerator / kTargetRate);  // i0
        const int residue = int(numerator % kTargetRate);
        const double* w;
        if (!table.empty()) {
            w = &table[std::size_t(residue / step) * count];
        } else {
            kernel_weights(g, sample_rate, double(residue) / kTargetRate, scratch.data());
            w = scratch.data();
        }
        double sum = 0;
        for (int k = 0; k < count; ++k) {
            const int64_t i = first - g.taps + k;
            if (i >= 0 && i < int64_t(n)) sum += w[k] * double(samples[i]);
        }
        out[o] = float(sum);
    }
    return out;
}

}  // namespace attnlab::audio
