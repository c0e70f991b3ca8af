// The embind front end: the JS module (web/lib) is the only caller. C++ exceptions become JS exceptions whose
// message is the attnlab::Error text (see web/lib/engine.mjs).
#include <emscripten/bind.h>

#include "attnlab/attnlab.hpp"

using namespace emscripten;

namespace {

val engine_info_js() {
    const attnlab::EngineInfo info = attnlab::engine_info();
    val out = val::object();
    out.set("version", info.version);
    out.set("simd", info.simd);
    out.set("wasm", info.wasm);
    return out;
}

}  // namespace

EMSCRIPTEN_BINDINGS(attnlab) {
    function("engineInfo", &engine_info_js);
}
