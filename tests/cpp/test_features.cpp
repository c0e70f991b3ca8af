// audio::compute_features against python/attnlab/audio/features.py on the fixtures (tests/fixtures/audio), against
// Debian's sphinx_fe on the speech clip (its .mfc output is committed next to the clip), and the front end's
// framing, floor, filterbank, CMN and the .mfc reader on their own.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "attnlab/audio/features.hpp"
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

std::vector<uint8_t> file_bytes(const std::string& relative) {
    std::ifstream in(test::source_path(relative), std::ios::binary);
    REQUIRE(bool(in));
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<float> flat(const Matrix& m) { return std::vector<float>(m.begin(), m.end()); }

// The tolerance of C++ against Python: both run the signal path in double and round the cepstra's running sums
// to float at the same steps; they differ in the FFT's algorithm (sphinx's and numpy's are others again) and the
// order of the filter sums, i.e. at 1e-13 relative in the log energies. That can flip the rounding of a float
// running sum, whose values reach ~800 (ulp 6e-5); c0 divides it by 40 and ci by 80: 2e-6 per flip. Resampled
// inputs also differ by an ulp here and there. 5e-5 is ten flips' worth, far below any real difference (a one-bin
// shift of one filter edge moves the cepstra by > 1e-2).
constexpr float kFeatureTolerance = 5e-5f;

}  // namespace

TEST_CASE("features: MFCC, log-mel and CMN of every fixture match features.py") {
    for (const char* name : {"synth_16k_pcm16", "synth_8k_pcm8", "synth_22k_pcm32", "synth_32k_pcm24",
                             "synth_44k_stereo_pcm16", "synth_48k_float32_ext", "synth_16k_float64",
                             "synth_44101_pcm16", "speech"}) {
        CAPTURE(name);
        const std::string n = name;
        const audio::Audio a = audio::read_wav(test::source_path("tests/fixtures/audio/" + n + ".wav"));
        const audio::Features f = audio::compute_features(a.samples.data(), a.samples.size(), a.sample_rate);
        const std::size_t frames = audio::frame_count(audio::resampled_length(a.samples.size(), a.sample_rate));
        REQUIRE(f.mfcc.shape()[0] == frames);
        REQUIRE(f.mfcc.shape()[1] == 13u);
        REQUIRE(f.log_mel.shape()[0] == frames);
        REQUIRE(f.log_mel.shape()[1] == 40u);
        test::check_close(flat(f.mfcc), golden().load_f32_flat(n + ".mfcc"), kFeatureTolerance, 0.0f, "mfcc");
        test::check_close(flat(f.log_mel), golden().load_f32_flat(n + ".log_mel"), kFeatureTolerance, 0.0f, "log_mel");
        test::check_close(flat(audio::cepstral_mean_normalize(f.mfcc)), golden().load_f32_flat(n + ".cmn"),
                          kFeatureTolerance, 0.0f, "cmn");
    }
}

TEST_CASE("features: the speech clip's MFCCs match sphinx_fe's (Debian sphinxbase-utils)") {
    const audio::Audio a = audio::read_wav(test::source_path("tests/fixtures/audio/speech.wav"));
    const std::vector<uint8_t> mfc = file_bytes("tests/fixtures/audio/speech.sphinx_fe.mfc");
    const Matrix reference = audio::parse_sphinx_mfc(mfc.data(), mfc.size());
    const Matrix ours = audio::mfcc(a.samples.data(), a.samples.size());
    REQUIRE(rows(reference) == 29);  // 4800 samples: 2 + (4800 - 410) / 160
    REQUIRE(rows(ours) == rows(reference));
    // sphinx_fe computes in the same precision (double signal path, float sums): a few float ulps apart.
    test::check_close(flat(ours), flat(reference), 2e-5f, 0.0f, "vs sphinx_fe");
}

TEST_CASE("features: the filterbank is sphinxbase's (features.py's weights, bit for bit)") {
    const std::vector<float> dense = golden().load_f32_flat("filterbank");  // [40, 257]
    REQUIRE(dense.size() == std::size_t(audio::kMelBands) * audio::kSpectrumBins);
    const std::vector<audio::MelFilter>& filters = audio::mel_filterbank();
    REQUIRE(filters.size() == 40u);
    for (int b = 0; b < audio::kMelBands; ++b) {
        CAPTURE(b);
        const audio::MelFilter& f = filters[std::size_t(b)];
        for (int k = 0; k < audio::kSpectrumBins; ++k) {
            const int j = k - f.start;
            const float w = (j >= 0 && j < int(f.weights.size())) ? f.weights[std::size_t(j)] : 0.0f;
            REQUIRE(w == dense[std::size_t(b) * audio::kSpectrumBins + k]);
        }
        if (b > 0) CHECK(f.start >= filters[std::size_t(b - 1)].start);  // centres rise with the band
    }
    // 130 Hz is bin 4.16 -> the first filter starts at bin 4 (125 Hz) and the last ends by 6800 Hz (bin 217.6)
    CHECK(filters.front().start == 4);
    CHECK(filters.back().start + int(filters.back().weights.size()) <= 219);
}

TEST_CASE("features: frames are one per 160 samples plus the zero-padded tail, as sphinxbase frames them") {
    CHECK(audio::frame_count(0) == 0);
    CHECK(audio::frame_count(1) == 1);
    CHECK(audio::frame_count(410) == 1);
    CHECK(audio::frame_count(411) == 2);
    CHECK(audio::frame_count(569) == 2);
    CHECK(audio::frame_count(570) == 3);  // the second whole frame ends at 570; the tail frame starts at 320
    CHECK(audio::frame_count(16000) == 99);  // sphinx_fe gives 99 frames for one second
    const audio::Features empty = audio::compute_features(nullptr, 0);
    CHECK(empty.mfcc.shape()[0] == 0);
    CHECK(empty.mfcc.shape()[1] == 13u);
    CHECK(empty.log_mel.shape()[1] == 40u);

    // An impulse at sample 1000 reaches exactly the frames whose 410-sample windows cover samples 1000 and 1001
    // (pre-emphasis spreads it one sample): frames 4, 5 and 6 (starts 640, 800, 960).
    std::vector<float> x(3000, 0.0f);
    x[1000] = 0.5f;
    const Matrix lm = audio::log_mel_spectrogram(x.data(), x.size());
    for (int t = 0; t < rows(lm); ++t) {
        CAPTURE(t);
        const bool touched = t >= 4 && t <= 6;
        CHECK((lm(t, 20) > -10.0f) == touched);
    }
}

TEST_CASE("features: silence gives the -10 floor in every band and its known cepstra") {
    const std::vector<float> zeros(1600, 0.0f);
    const audio::Features f = audio::compute_features(zeros.data(), zeros.size());
    for (float v : f.log_mel) REQUIRE(v == -10.0f);
    // c0 = (-5 - 390) / 40; for i >= 1, Σ_j cos(π i (j + 0.5) / 40) = 0 makes ci = cos(π i / 80) / 8
    for (int t = 0; t < rows(f.mfcc); ++t) {
        CHECK(f.mfcc(t, 0) == doctest::Approx(-9.875f).epsilon(1e-6));
        for (int i = 1; i < 13; ++i) CHECK(f.mfcc(t, i) == doctest::Approx(std::cos(M_PI * i / 80) / 8).epsilon(1e-4));
    }
}

TEST_CASE("features: cepstral mean normalisation centres each coefficient and keeps the differences") {
    const audio::Audio a = audio::read_wav(test::source_path("tests/fixtures/audio/speech.wav"));
    const Matrix c = audio::mfcc(a.samples.data(), a.samples.size());
    const Matrix n = audio::cepstral_mean_normalize(c);
    REQUIRE(n.shape() == c.shape());
    for (int k = 0; k < 13; ++k) {
        double mean = 0;
        for (int t = 0; t < rows(n); ++t) mean += n(t, k);
        CHECK(std::fabs(mean / rows(n)) < 1e-5);
        CHECK(n(3, k) - n(1, k) == doctest::Approx(c(3, k) - c(1, k)).epsilon(1e-4));
    }
    const Matrix none = Matrix::from_shape({0, 13});
    CHECK(audio::cepstral_mean_normalize(none).shape()[0] == 0);
}

TEST_CASE("features: the sample-rate overload resamples first; bad samples and rates are refused") {
    const audio::Audio a = audio::read_wav(test::source_path("tests/fixtures/audio/synth_44k_stereo_pcm16.wav"));
    const std::vector<float> at16k = audio::resample_to_16k(a.samples.data(), a.samples.size(), 44100);
    const audio::Features direct = audio::compute_features(at16k.data(), at16k.size());
    const audio::Features via = audio::compute_features(a.samples.data(), a.samples.size(), 44100);
    CHECK(flat(direct.mfcc) == flat(via.mfcc));

    std::vector<float> x(500, 0.1f);
    x[3] = NAN;
    CHECK_THROWS_WITH_AS(audio::compute_features(x.data(), x.size()), doctest::Contains("audio features: sample 3 is"),
                         Error);
    x[3] = INFINITY;
    CHECK_THROWS_WITH_AS(audio::mfcc(x.data(), x.size()), doctest::Contains("samples must be finite"), Error);
    x[3] = 0;
    CHECK_THROWS_WITH_AS(audio::compute_features(x.data(), x.size(), 96000), doctest::Contains("outside 8000..48000"),
                         Error);
}

TEST_CASE("features: Sphinx .mfc files in either byte order; sizes that do not add up are refused") {
    const std::vector<uint8_t> little = file_bytes("tests/fixtures/audio/speech.sphinx_fe.mfc");
    std::vector<uint8_t> big = little;
    for (std::size_t i = 0; i + 4 <= big.size(); i += 4) std::reverse(big.begin() + long(i), big.begin() + long(i) + 4);
    const Matrix a = audio::parse_sphinx_mfc(little.data(), little.size());
    const Matrix b = audio::parse_sphinx_mfc(big.data(), big.size());
    CHECK(rows(a) == 29);
    CHECK(flat(a) == flat(b));
    CHECK(a(0, 0) > 0.0f);  // c0 of speech: a log energy around 10, not a byte-swapped denormal
    CHECK(a(0, 0) < 30.0f);

    CHECK_THROWS_WITH_AS(audio::parse_sphinx_mfc(little.data(), 3),
                         "Sphinx .mfc: 3 bytes is too short for the 4-byte header", Error);
    CHECK_THROWS_WITH_AS(audio::parse_sphinx_mfc(little.data(), little.size() - 4),
                         doctest::Contains("matches the file size"), Error);
    std::vector<uint8_t> twelve(4 + 12 * 4, 0);
    twelve[0] = 12;
    CHECK_THROWS_WITH_AS(audio::parse_sphinx_mfc(twelve.data(), twelve.size()),
                         "Sphinx .mfc: 12 values are not a whole number of 13-value frames", Error);
    CHECK(rows(audio::parse_sphinx_mfc(twelve.data(), twelve.size(), 4)) == 3);
    const std::vector<uint8_t> header_only = {0, 0, 0, 0};
    CHECK(rows(audio::parse_sphinx_mfc(header_only.data(), header_only.size())) == 0);
}
