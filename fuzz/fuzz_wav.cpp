// libFuzzer: arbitrary bytes as a WAV file and as a Sphinx .mfc file. Whatever the header declares (sizes past
// the end, zero or 65535 channels, odd formats, NaN floats), parse_wav must either return samples or throw
// attnlab::Error; readable audio at a rate the resampler takes then goes through resampling and the whole
// feature front end (capped in length so that each run stays fast).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "attnlab/audio/features.hpp"
#include "attnlab/audio/resample.hpp"
#include "attnlab/audio/wav.hpp"
#include "fuzz_support.hpp"

namespace attnlab::fuzz {

int wav_one_input(const uint8_t* data, std::size_t size) {
    constexpr std::size_t kMaxFeatureSamples = 48000;  // one second at the highest rate the resampler takes
    expect_error_or_success("parse_wav", [&] {
        const attnlab::audio::Audio audio = attnlab::audio::parse_wav(data, size);
        for (float x : audio.samples)
            if (!(x >= -1.0f && x <= 1.0f)) violation("parse_wav returned a sample outside [-1, 1]");
        const std::size_t n = std::min(audio.samples.size(), kMaxFeatureSamples);
        const attnlab::audio::Features f = attnlab::audio::compute_features(audio.samples.data(), n, audio.sample_rate);
        for (float x : f.mfcc)
            if (!std::isfinite(x)) violation("compute_features returned a non-finite cepstrum");
    });
    expect_error_or_success("parse_sphinx_mfc", [&] { (void)attnlab::audio::parse_sphinx_mfc(data, size); });
    return 0;
}

}  // namespace attnlab::fuzz

#ifndef ATTNLAB_FUZZ_NO_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    return attnlab::fuzz::wav_one_input(data, size);
}
#endif
