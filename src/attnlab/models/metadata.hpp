#pragma once
// What every model loader checks first: that the file holds its architecture, and sizes that are plausible.
#include <cstdint>
#include <string>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"

namespace attnlab::models {

// Throws "this file holds a 'X' model, not <description> ('<expected>')".
inline void check_architecture(const gguf::File& file, const std::string& expected, const std::string& description) {
    const std::string architecture = file.get_string_or("general.architecture", "(none)");
    check(architecture == expected,
          "this file holds a '" + architecture + "' model, not " + description + " ('" + expected + "')");
}

// A size hyper-parameter: an integer key in [1, 2^24], so later size arithmetic cannot overflow.
inline int metadata_size(const gguf::File& file, const std::string& key) {
    const uint32_t value = file.get_u32(key);
    check(value > 0 && value <= (1u << 24),
          "metadata key '" + key + "' must be a size between 1 and 2^24, got " + std::to_string(value));
    return static_cast<int>(value);
}

}  // namespace attnlab::models
