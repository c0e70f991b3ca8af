#pragma once
// What the SIMD convolutions (conv.cpp, compiled per kernel target) and the scalar ones (conv_scalar.cpp) share:
// the argument checks, so both reject bad input alike, and the tap ranges.
#include <algorithm>
#include <string>

#include "attnlab/error.hpp"
#include "attnlab/kernels/conv.hpp"

namespace attnlab::kernels::detail {

struct Shape2d {
    ConvGeometry rows, cols;
};

inline Shape2d checked_geometry(const char* what, const float* x, const float* weight, const float* y, int height,
                                int width, int in_channels, int out_channels, int kernel, int stride, Padding padding) {
    check(x && weight && y, std::string(what) + ": null buffer");
    check(in_channels > 0 && out_channels > 0,
          std::string(what) + ": channel counts must be positive, got " + std::to_string(in_channels) + " -> " +
              std::to_string(out_channels));
    return {conv_geometry(height, kernel, stride, padding), conv_geometry(width, kernel, stride, padding)};
}

// The kernel taps [first, last) of one output position that land inside the input (the rest read padding).
inline void valid_taps(int out_index, int stride, int pad_before, int kernel, int size, int& first, int& last) {
    const int origin = out_index * stride - pad_before;
    first = std::max(0, -origin);
    last = std::min(kernel, size - origin);
}

inline bool is_pointwise(int kernel, int stride) { return kernel == 1 && stride == 1; }

}  // namespace attnlab::kernels::detail
