#pragma once
// The public API: everything a front end (the CLI, the embind module) needs, as plain structs.
#include <string>

namespace attnlab {

struct EngineInfo {
    std::string version;  // the project version, e.g. "0.1.0"
    std::string simd;     // the instruction set the kernels were compiled for
    bool wasm;            // true in the WebAssembly build
};

EngineInfo engine_info();

}  // namespace attnlab
