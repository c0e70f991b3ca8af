// The embind front end of speech recognition (web/lib/audio.mjs and core.mjs are its callers): transcribing samples
// or the bytes of a WAV/FLAC file with a loaded model (speech.hpp, called by bindings.cpp's Model, so the weights
// are loaded once), and decodeAudio for WAV/FLAC bytes. Errors reach JS through guarded.hpp: an attnlab::Error
// keeps its own kind's code, one without a kind is ATTNLAB_BAD_INPUT, anything else ATTNLAB_INTERNAL.
#include "speech.hpp"

#include <emscripten/bind.h>

#include <cstdint>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "attnlab/attnlab.hpp"
#include "attnlab/audio/flac.hpp"
#include "attnlab/audio/resample.hpp"
#include "attnlab/error.hpp"
#include "beam_tree.hpp"
#include "guarded.hpp"

using namespace emscripten;
using attnlab::wasm::guarded;

namespace {

// A Uint8Array's bytes (or a Float32Array's floats) copied into wasm memory in one set().
template <typename T>
std::vector<T> copy_in(const val& array, const char* type, const char* what) {
    attnlab::check(array.instanceof(val::global(type)), std::string(what) + " must be a " + type);
    std::vector<T> out(array["length"].as<std::size_t>());
    val(typed_memory_view(out.size(), out.data())).call<void>("set", array);
    return out;
}

val float_array(const std::vector<float>& values) {
    val data = val::global("Float32Array").new_(values.size());
    data.call<void>("set", val(typed_memory_view(values.size(), values.data())));
    return data;
}

val matrix(const std::vector<float>& values, std::size_t rows, std::size_t cols) {
    val out = val::object();
    out.set("rows", rows);
    out.set("cols", cols);
    out.set("data", float_array(values));
    return out;
}

// The Transcription as the module returns it (index.d.ts Transcription, less timeMs, which JS measures).
val transcription_js(const attnlab::Transcription& t, bool beam_tree) {
    const std::size_t T = t.characters.size(), S = static_cast<std::size_t>(t.frames);
    val characters = val::array(), ids = val::array();
    for (std::size_t i = 0; i < T; ++i) {
        characters.set(i, t.characters[i]);
        ids.set(i, t.ids[i]);
    }
    val out = val::object();
    out.set("text", t.text);
    out.set("characters", characters);
    out.set("ids", ids);
    out.set("frames", t.frames);
    out.set("frameSeconds", t.frame_seconds);
    out.set("attention", matrix(t.attention, T, S));
    out.set("scores", matrix(t.scores, T, S));
    val spectrogram = val::object();
    spectrogram.set("bands", 40);
    spectrogram.set("frames", t.spectrogram_frames);
    spectrogram.set("frameSeconds", 0.01);
    spectrogram.set("data", float_array(t.spectrogram));
    out.set("spectrogram", spectrogram);
    out.set("logProbability", t.log_probability);
    out.set("finished", t.finished);
    out.set("ctcWeight", t.ctc_weight);
    out.set("lmWeight", t.lm_weight);
    if (beam_tree) out.set("beamTree", attnlab::wasm::to_beam_tree(t.beam_tree));
    return out;
}

attnlab::TranscribeOptions transcribe_options(int beam, float ctc_weight, float lm_weight, bool beam_tree) {
    attnlab::TranscribeOptions options;
    options.beam = beam;
    options.ctc_weight = ctc_weight;
    options.lm_weight = lm_weight;
    options.beam_tree = beam_tree;
    return options;
}

// WAV or FLAC bytes -> { samples: Float32Array (mono), sampleRate, channels, encoding }.
val decode_audio_js(const val& bytes) {
    return guarded(attnlab::ErrorKind::input, [&] {
        const std::vector<uint8_t> file = copy_in<uint8_t>(bytes, "Uint8Array", "the audio file bytes");
        const attnlab::audio::Audio audio = attnlab::audio::parse_audio(file.data(), file.size());
        val out = val::object();
        out.set("samples", float_array(audio.samples));
        out.set("sampleRate", audio.sample_rate);
        out.set("channels", audio.channels);
        out.set("encoding", audio.encoding);
        return out;
    });
}

val transcribe_limits_js() {
    val out = val::object();
    out.set("maxSeconds", attnlab::kMaxTranscribeSeconds);
    out.set("minSampleRate", attnlab::audio::kMinResampleRate);
    out.set("maxSampleRate", attnlab::audio::kMaxResampleRate);
    out.set("maxBeam", attnlab::limits().max_beam);
    return out;
}

}  // namespace

namespace attnlab::wasm {

val transcribe_samples(const attnlab::Model& model, const val& samples, int sample_rate, int beam, float ctc_weight,
                       float lm_weight, bool beam_tree) {
    return guarded(attnlab::ErrorKind::input, [&] {
        const std::vector<float> x = copy_in<float>(samples, "Float32Array", "the samples");
        return transcription_js(
            model.transcribe(x.data(), x.size(), sample_rate, transcribe_options(beam, ctc_weight, lm_weight, beam_tree)), beam_tree);
    });
}

val transcribe_file(const attnlab::Model& model, const val& bytes, int beam, float ctc_weight, float lm_weight,
                    bool beam_tree) {
    return guarded(attnlab::ErrorKind::input, [&] {
        const std::vector<uint8_t> file = copy_in<uint8_t>(bytes, "Uint8Array", "the audio file bytes");
        return transcription_js(
            model.transcribe_file_bytes(file.data(), file.size(), transcribe_options(beam, ctc_weight, lm_weight, beam_tree)),
            beam_tree);
    });
}

}  // namespace attnlab::wasm

EMSCRIPTEN_BINDINGS(attnlab_speech) {
    function("decodeAudio", &decode_audio_js);
    function("transcribeLimits", &transcribe_limits_js);
}
