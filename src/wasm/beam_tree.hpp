#pragma once
// A search tree as every embind call returns it (web/lib/index.d.ts BeamTree), for bindings.cpp and speech.cpp;
// defined in beam_tree.cpp.
#include <emscripten/val.h>

#include "attnlab/attnlab.hpp"

namespace attnlab::wasm {

// {nodes: [{step, parent, id, piece, logProbability, cumulative, score, finished}], winner}
emscripten::val to_beam_tree(const attnlab::BeamTree& tree);

}  // namespace attnlab::wasm
