// libFuzzer: arbitrary bytes as a FLAC stream, and through parse_audio (which sniffs WAV or FLAC). Whatever the
// stream declares (block sizes, predictor orders, Rice parameters, shifts, channel modes, sample counts),
// parse_flac must either return samples in [-1, 1] or throw attnlab::Error. The sample cap is lowered so that a
// few bytes of constant subframes cannot make one run slow.
#include <cstddef>
#include <cstdint>

#include "attnlab/audio/flac.hpp"
#include "fuzz_support.hpp"

namespace attnlab::fuzz {

int flac_one_input(const uint8_t* data, std::size_t size) {
    constexpr std::size_t kMaxFuzzSamples = std::size_t(1) << 20;
    expect_error_or_success("parse_flac", [&] {
        const attnlab::audio::Audio audio = attnlab::audio::parse_flac(data, size, kMaxFuzzSamples);
        if (audio.samples.size() > kMaxFuzzSamples) violation("parse_flac returned more samples than its cap");
        for (float x : audio.samples)
            if (!(x >= -1.0f && x <= 1.0f)) violation("parse_flac returned a sample outside [-1, 1]");
    });
    if (!attnlab::audio::looks_like_flac(data, size))
        expect_error_or_success("parse_audio", [&] { (void)attnlab::audio::parse_audio(data, size); });
    return 0;
}

}  // namespace attnlab::fuzz

#ifndef ATTNLAB_FUZZ_NO_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    return attnlab::fuzz::flac_one_input(data, size);
}
#endif
