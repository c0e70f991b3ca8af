// See preprocess.hpp. The arithmetic (float32, same operation order, one rounding per operation) mirrors
// resize_bilinear in mobilenet_v2.py so that the two agree to rounding.
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

// How one axis is resampled: for each output sample, the source samples it reads and their weights.
//   antialias == false: bilinear between first[o] and second[o], weight[o] of the second (lerp form, so an
//                       unchanged axis copies exactly);
//   antialias == true:  sum over k < count[o] of weight[o * taps + k] · source[first[o] + k].
struct AxisFilter {
    bool antialias = false;
    int taps = 0;
    std::vector<int> first, second, count;
    std::vector<float> weight;
};

AxisFilter bilinear_filter(int in_size, int out_size) {
    AxisFilter f;
    f.first.resize(out_size);
    f.second.resize(out_size);
    f.weight.resize(out_size);
    const float scale = float(in_size) / float(out_size);
    for (int o = 0; o < out_size; ++o) {
        float src = (float(o) + 0.5f) * scale - 0.5f;
        src = std::min(std::max(src, 0.0f), float(in_size - 1));
        const int i0 = int(std::floor(src));
        f.first[o] = i0;
        f.second[o] = std::min(i0 + 1, in_size - 1);
        f.weight[o] = src - float(i0);
    }
    return f;
}

// Triangle filter of radius `scale` source pixels around each output centre, clipped to the image and normalized
// (PyTorch's _upsample_bilinear2d_aa and PIL's BILINEAR reduce the same way).
AxisFilter antialias_filter(int in_size, int out_size) {
    AxisFilter f;
    f.antialias = true;
    const float scale = float(in_size) / float(out_size);
    const float support = scale;
    f.taps = int(std::ceil(support)) * 2 + 1;
    f.first.resize(out_size);
    f.count.resize(out_size);
    f.weight.assign(std::size_t(out_size) * f.taps, 0.0f);
    for (int o = 0; o < out_size; ++o) {
        const float center = (float(o) + 0.5f) * scale;
        const int lo = std::max(int(center - support + 0.5f), 0);
        const int hi = std::min(int(center + support + 0.5f), in_size);
        const int n = std::min(hi - lo, f.taps);
        float* w = &f.weight[std::size_t(o) * f.taps];
        float total = 0.0f;
        for (int k = 0; k < n; ++k) {
            const float distance = std::fabs((float(lo + k) + 0.5f - center) / scale);
            w[k] = std::max(0.0f, 1.0f - distance);
            total += w[k];
        }
        for (int k = 0; k < n; ++k) w[k] /= total;
        f.first[o] = lo;
        f.count[o] = n;
    }
    return f;
}

AxisFilter axis_filter(int in_size, int out_size) {
    return in_size > out_size ? antialias_filter(in_size, out_size) : bilinear_filter(in_size, out_size);
}

// One output sample of `channels` values from source samples `stride` floats apart (src points at sample 0).
template <typename Source>
void filter_sample(const AxisFilter& f, int o, const Source* src, std::size_t stride, int channels, float* out) {
    if (!f.antialias) {
        const Source* a = src + std::size_t(f.first[o]) * stride;
        const Source* b = src + std::size_t(f.second[o]) * stride;
        const float t = f.weight[o];
        for (int c = 0; c < channels; ++c) {
            const float pa = float(a[c]), pb = float(b[c]);
            out[c] = pa + (pb - pa) * t;
        }
        return;
    }
    const float* w = &f.weight[std::size_t(o) * f.taps];
    for (int c = 0; c < channels; ++c) out[c] = 0.0f;
    for (int k = 0; k < f.count[o]; ++k) {
        const Source* p = src + std::size_t(f.first[o] + k) * stride;
        for (int c = 0; c < channels; ++c) {
            const float term = w[k] * float(p[c]);  // its own statement: never fused into an FMA
            out[c] += term;
        }
    }
}

}  // namespace

Tensor3 resize_bilinear_rgb(const uint8_t* rgba, int width, int height, int out_width, int out_height) {
    check(rgba != nullptr, "image: null pixel buffer");
    check(out_width > 0 && out_height > 0 && out_width <= kMaxImageSide && out_height <= kMaxImageSide,
          "image: bad output size");
    Tensor3 out = Tensor3::from_shape({std::size_t(out_height), std::size_t(out_width), 3});
    float* dst = out.data();
    if (width == out_width && height == out_height) {
        for (std::size_t i = 0, n = std::size_t(width) * std::size_t(height); i < n; ++i)
            for (int c = 0; c < 3; ++c) *dst++ = float(rgba[i * 4 + c]);
        return out;
    }
    // Rows first ([height, out_width, 3]), then columns: each pass reads every source sample once per tap.
    const AxisFilter fx = axis_filter(width, out_width), fy = axis_filter(height, out_height);
    std::vector<float> rows(std::size_t(height) * std::size_t(out_width) * 3);
    for (int y = 0; y < height; ++y) {
        const uint8_t* line = rgba + std::size_t(y) * std::size_t(width) * 4;
        float* row = &rows[std::size_t(y) * std::size_t(out_width) * 3];
        for (int ox = 0; ox < out_width; ++ox) filter_sample(fx, ox, line, 4, 3, row + std::size_t(ox) * 3);
    }
    const std::size_t row_floats = std::size_t(out_width) * 3;
    for (int oy = 0; oy < out_height; ++oy)
        filter_sample(fy, oy, rows.data(), row_floats, int(row_floats), dst + std::size_t(oy) * row_floats);
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
