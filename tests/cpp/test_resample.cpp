// audio::resample_to_16k against python/attnlab/audio/resample.py on the fixtures (tests/fixtures/audio: 8, 22.05,
// 32, 44.1, 48 kHz and 44101 Hz, which takes the untabulated path), and its properties on its own: identity at
// 16 kHz, length, unit DC gain, passband and stopband, the refused rates.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "attnlab/audio/resample.hpp"
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

std::vector<float> tone(double hz, int rate, double seconds, double amplitude = 0.5) {
    std::vector<float> x(std::size_t(std::lround(rate * seconds)));
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(amplitude * std::sin(2 * M_PI * hz * double(i) / rate));
    return x;
}

// RMS over the middle, away from the zero-padded edges.
double middle_rms(const std::vector<float>& y) {
    double sum = 0;
    const std::size_t lo = y.size() / 4, hi = y.size() - y.size() / 4;
    for (std::size_t i = lo; i < hi; ++i) sum += double(y[i]) * y[i];
    return std::sqrt(sum / double(hi - lo));
}

}  // namespace

TEST_CASE("resample: the fixtures at 8..48 kHz give resample.py's 16 kHz samples") {
    // Both sides compute the same double-precision weights and sums (only sin/sqrt's last bit and the order of
    // numpy's pairwise sums differ) and round once to float at the end: outputs of magnitude <= 1 agree to 1 ulp
    // of float at 1.0 (1.2e-7) in all but rare ties; 1e-6 leaves room for those and nothing else.
    for (const char* name : {"synth_8k_pcm8", "synth_22k_pcm32", "synth_32k_pcm24", "synth_44k_stereo_pcm16",
                             "synth_48k_float32_ext", "synth_44101_pcm16"}) {
        CAPTURE(name);
        const audio::Audio a = audio::read_wav(test::source_path(std::string("tests/fixtures/audio/") + name + ".wav"));
        const std::vector<float> expected = golden().load_f32_flat(std::string(name) + ".resampled");
        const std::vector<float> actual = audio::resample_to_16k(a.samples.data(), a.samples.size(), a.sample_rate);
        CHECK(actual.size() == audio::resampled_length(a.samples.size(), a.sample_rate));
        test::check_close(actual, expected, 1e-6f, 0.0f, name);
    }
}

TEST_CASE("resample: 16 kHz is returned unchanged; lengths are ceil(n · 16000 / rate)") {
    const std::vector<float> x = test::random_vector(1001, 3);
    CHECK(audio::resample_to_16k(x.data(), x.size(), 16000) == x);
    CHECK(audio::resampled_length(44100, 44100) == 16000);
    CHECK(audio::resampled_length(1, 44100) == 1);
    CHECK(audio::resampled_length(0, 8000) == 0);
    CHECK(audio::resampled_length(3, 48000) == 1);
    CHECK(audio::resampled_length(4, 48000) == 2);
    CHECK(audio::resampled_length(8000, 8000) == 16000);
    CHECK(audio::resample_to_16k(x.data(), 0, 22050).empty());
    CHECK(audio::resample_to_16k(x.data(), 1, 22050).size() == 1);
}

TEST_CASE("resample: a constant stays constant away from the edges (unit DC gain)") {
    for (int rate : {8000, 11025, 22050, 44100, 48000, 44101}) {
        CAPTURE(rate);
        const std::vector<float> ones(std::size_t(rate) / 10, 0.75f);
        const std::vector<float> y = audio::resample_to_16k(ones.data(), ones.size(), rate);
        for (std::size_t i = 100; i + 100 < y.size(); ++i) REQUIRE(y[i] == doctest::Approx(0.75f).epsilon(1e-6));
    }
}

TEST_CASE("resample: tones below 0.88 · nyquist pass, tones above nyquist are removed") {
    for (int rate : {22050, 44100, 48000}) {
        CAPTURE(rate);
        CHECK(middle_rms(audio::resample_to_16k(tone(1000, rate, 0.2).data(), std::size_t(rate / 5), rate)) ==
              doctest::Approx(0.5 / std::sqrt(2.0)).epsilon(1e-3));
        CHECK(middle_rms(audio::resample_to_16k(tone(6800, rate, 0.2).data(), std::size_t(rate / 5), rate)) ==
              doctest::Approx(0.5 / std::sqrt(2.0)).epsilon(1e-3));
        // 9 and 10.5 kHz would alias to 7 and 5.5 kHz: the stopband takes them below -60 dB
        for (double hz : {9000.0, 10500.0})
            CHECK(middle_rms(audio::resample_to_16k(tone(hz, rate, 0.2).data(), std::size_t(rate / 5), rate)) < 0.5e-3);
    }
    // from 8 kHz: 3 kHz passes; the upsampled band above 4 kHz (the images) stays empty
    const std::vector<float> y = audio::resample_to_16k(tone(3000, 8000, 0.2).data(), 1600, 8000);
    CHECK(middle_rms(y) == doctest::Approx(0.5 / std::sqrt(2.0)).epsilon(1e-3));
}

TEST_CASE("resample: rates outside 8..48 kHz and non-finite samples are refused") {
    const std::vector<float> x(100, 0.0f);
    CHECK_THROWS_WITH_AS(audio::resample_to_16k(x.data(), x.size(), 7999),
                         "resample: sample rate 7999 Hz is outside 8000..48000 Hz", Error);
    CHECK_THROWS_WITH_AS(audio::resample_to_16k(x.data(), x.size(), 96000), doctest::Contains("96000 Hz is outside"),
                         Error);
    CHECK_THROWS_WITH_AS(audio::resample_to_16k(x.data(), x.size(), 0), doctest::Contains("0 Hz is outside"), Error);
    CHECK_THROWS_WITH_AS(audio::resampled_length(10, -44100), doctest::Contains("-44100 Hz"), Error);
    std::vector<float> bad(10, 0.0f);
    bad[7] = NAN;
    CHECK_THROWS_WITH_AS(audio::resample_to_16k(bad.data(), bad.size(), 44100),
                         doctest::Contains("resample: sample 7 is"), Error);
    CHECK_NOTHROW(audio::check_resample_rate(8000));
    CHECK_NOTHROW(audio::check_resample_rate(48000));
}
