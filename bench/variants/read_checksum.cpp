// The translation benchmark's memory-traffic floor: every byte of a step's weights read once at full vector width.
#include <cstring>

#include "attnlab/kernels/simd.hpp"
#include "variants/variants.hpp"

namespace attnlab::kernels {

uint32_t read_checksum(const void* data, std::size_t bytes) {
    using Words = xsimd::batch<uint32_t>;
    constexpr std::size_t lanes = Words::size;
    const char* p = static_cast<const char*>(data);
    const std::size_t words = bytes / 4;
    Words acc[4] = {Words(0u), Words(0u), Words(0u), Words(0u)};
    alignas(64) uint32_t chunk[4 * lanes];
    std::size_t i = 0;
    for (; i + 4 * lanes <= words; i += 4 * lanes) {
        std::memcpy(chunk, p + i * 4, sizeof chunk);   // compiles to unaligned vector loads; no aliasing issue
        for (std::size_t k = 0; k < 4; ++k) acc[k] += Words::load_aligned(chunk + k * lanes);
    }
    alignas(64) uint32_t lane_values[lanes];
    (acc[0] + acc[1] + acc[2] + acc[3]).store_aligned(lane_values);
    uint32_t sum = 0;
    for (uint32_t v : lane_values) sum += v;
    for (; i < words; ++i) {
        uint32_t w;
        std::memcpy(&w, p + i * 4, 4);
        sum += w;
    }
    uint32_t tail = 0;
    std::memcpy(&tail, p + words * 4, bytes - words * 4);
    return sum + tail;
}

}  // namespace attnlab::kernels
