#pragma once
// Transcription for bindings.cpp's Model (speech.cpp): the call's JS arguments in, index.d.ts's Transcription out
// (less timeMs, which JS measures), errors as guarded.hpp throws them.
#include <emscripten/val.h>

#include "attnlab/attnlab.hpp"

namespace attnlab::wasm {

// samples: a Float32Array of mono samples in [-1, 1] at sample_rate; ctc_weight, lm_weight -1: the model's;
// beam_tree: the result also holds `beamTree`.
emscripten::val transcribe_samples(const attnlab::Model& model, const emscripten::val& samples, int sample_rate,
                                   int beam, float ctc_weight, float lm_weight, bool beam_tree);
// bytes: a Uint8Array holding a WAV or FLAC file.
emscripten::val transcribe_file(const attnlab::Model& model, const emscripten::val& bytes, int beam, float ctc_weight,
                                float lm_weight, bool beam_tree);

}  // namespace attnlab::wasm
