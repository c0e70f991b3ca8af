#include "attnlab/attnlab.hpp"

#include "attnlab/kernels/kernels.hpp"

namespace attnlab {

EngineInfo engine_info() {
#ifdef __EMSCRIPTEN__
    constexpr bool is_wasm = true;
#else
    constexpr bool is_wasm = false;
#endif
    return EngineInfo{ATTNLAB_VERSION, kernels::simd_name(), is_wasm};
}

}  // namespace attnlab
