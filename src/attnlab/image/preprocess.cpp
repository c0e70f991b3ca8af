// See preprocess.hpp. The arithmetic (float32, same operation order) mirrors models/mobilenet_v2.py so that the
// two agree to rounding.
#include "attnlab/image/preprocess.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attnlab/error.hpp"

namespace attnlab::image {

void validate_rgba(std::size_t byte_count, int width, int height) {
    check(width > 0 && height > 0 && width <= kMaxImageSide && height <= kMaxImageSide,
          "image: width and height must be in 1.." + std::to_string(kMaxImageSide) + ", got " + std::to_string(width) +
              "x" + std::to_string(height));
    const std::size_t expected = std::size_t(width) * std::size_t(height) * 4;
    check(byte_count == expected, "image: " + std::to_string(width) + "x" + std::to_string(height) +
                                      " RGBA needs " + std::to_string(expected) + " bytes, got " +
                                      std::to_string(byte_count));
}

namespace {

// Half-pixel bilinear taps along one axis: the two source indices and the weight of the second.
struct AxisTaps {
    std::vector<int> i0, i1;
    std::vector<float> frac;
};

AxisTaps axis_taps(int in_size, int out_size) {
    AxisTaps t;
    t.i0.resize(out_size);
    t.i1.resize(out_size);
    t.frac.resize(out_size);
    const float scale = float(in_size) / float(out_size);
    for (int o = 0; o < out_size; ++o) {
        float src = (float(o) + 0.5f) * scale - 0.5f;
        src = std::min(std::max(src, 0.0f), float(in_size - 1));
        const int i0 = int(std::floor(src));
        t.i0[o] = i0;
        t.i1[o] = std::min(i0 + 1, in_size - 1);
        t.frac[o] = src - float(i0);
    }
    return t;
}

}  // namespace

Tensor3 resize_bilinear_rgb(const uint8_t* rgba, int width, int height, int out_width, int out_height) {
    check(rgba != nullptr, "image: null pixel buffer");
    check(out_width > 0 && out_height > 0 && out_width <= kMaxImageSide && out_height <= kMaxImageSide,
          "image: bad output size");
    Tensor3 out = Tensor3::from_shape({std::size_t(out_height), std::size_t(out_width), 3});
    float* dst = out.data();
    auto pixel = [&](int y, int x, int c) { return float(rgba[(std::size_t(y) * width + x) * 4 + c]); };
    if (width == out_width && height == out_height) {
        for (int y = 0; y < height; ++y)
            for (int x = 0; x < width; ++x)
                for (int c = 0; c < 3; ++c) *dst++ = pixel(y, x, c);
        return out;
    }
    const AxisTaps ty = axis_taps(height, out_height), tx = axis_taps(width, out_width);
    for (int oy = 0; oy < out_height; ++oy) {
        const int y0 = ty.i0[oy], y1 = ty.i1[oy];
        const float fy = ty.frac[oy];
        for (int ox = 0; ox < out_width; ++ox) {
            const int x0 = tx.i0[ox], x1 = tx.i1[ox];
            const float fx = tx.frac[ox];
            for (int c = 0; c < 3; ++c) {
                const float p00 = pixel(y0, x0, c), p01 = pixel(y0, x1, c);
                const float p10 = pixel(y1, x0, c), p11 = pixel(y1, x1, c);
                const float top = p00 + (p01 - p00) * fx;
                const float bottom = p10 + (p11 - p10) * fx;
                *dst++ = top + (bottom - top) * fy;
            }
        }
    }
    return out;
}

Tensor3 preprocess_rgba(const uint8_t* rgba, std::size_t byte_count, int width, int height, int out_size) {
    validate_rgba(byte_count, width, height);
    Tensor3 x = resize_bilinear_rgb(rgba, width, height, out_size, out_size);
    float* p = x.data();
    for (std::size_t i = 0, n = x.size(); i < n; ++i) p[i] = p[i] / 127.5f - 1.0f;
    return x;
}

}  // namespace attnlab::image
