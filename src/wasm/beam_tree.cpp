// The search tree as JS sees it (beam_tree.hpp), shared by bindings.cpp's translate/caption and speech.cpp's
// transcribe, so every BeamTree in index.d.ts has one shape whichever call made it.
#include "beam_tree.hpp"

#include <cstddef>

namespace attnlab::wasm {

emscripten::val to_beam_tree(const attnlab::BeamTree& tree) {
    using emscripten::val;
    val nodes = val::array();
    for (std::size_t i = 0; i < tree.nodes.size(); ++i) {
        const attnlab::BeamNode& n = tree.nodes[i];
        val node = val::object();
        node.set("step", n.step);
        node.set("parent", n.parent);
        node.set("id", n.id);
        node.set("piece", n.piece);
        node.set("logProbability", n.log_probability);
        node.set("cumulative", n.cumulative);
        node.set("score", n.score);
        node.set("finished", n.finished);
        nodes.set(i, node);
    }
    val out = val::object();
    out.set("nodes", nodes);
    out.set("winner", tree.winner);
    return out;
}

}  // namespace attnlab::wasm
