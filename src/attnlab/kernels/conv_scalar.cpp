// The convolution code compiled once, not per kernel target (conv.hpp): the geometry, im2col and the scalar
// reference twins.
#include <algorithm>
#include <cstring>
#include <string>

#include "attnlab/error.hpp"
#include "attnlab/kernels/conv.hpp"
#include "attnlab/kernels/conv_detail.hpp"

namespace attnlab::kernels {

using detail::checked_geometry;
using detail::is_pointwise;
using detail::Shape2d;
using detail::valid_taps;

ConvGeometry conv_geometry(int in, int kernel, int stride, Padding padding) {
    check(in > 0 && kernel > 0 && stride > 0, "conv: size " + std::to_string(in) + ", kernel " +
                                                  std::to_string(kernel) + " and stride " + std::to_string(stride) +
                                                  " must be positive");
    ConvGeometry g;
    if (padding == Padding::same) {
        g.out = (in + stride - 1) / stride;
        const int total = std::max((g.out - 1) * stride + kernel - in, 0);
        g.pad_before = total / 2;
    } else {
        check(kernel <= in, "conv: VALID kernel " + std::to_string(kernel) + " is larger than the input " +
                                std::to_string(in));
        g.out = (in - kernel) / stride + 1;
        g.pad_before = 0;
    }
    return g;
}

std::size_t conv2d_scratch_size(int height, int width, int in_channels, int kernel, int stride, Padding padding) {
    if (is_pointwise(kernel, stride)) return 0;
    const ConvGeometry rows = conv_geometry(height, kernel, stride, padding);
    const ConvGeometry cols = conv_geometry(width, kernel, stride, padding);
    return std::size_t(rows.out) * cols.out * kernel * kernel * in_channels;
}

void im2col(const float* x, int height, int width, int in_channels, int kernel, int stride, Padding padding,
            float* patches) {
    const ConvGeometry rows = conv_geometry(height, kernel, stride, padding);
    const ConvGeometry cols = conv_geometry(width, kernel, stride, padding);
    const std::size_t row_len = std::size_t(kernel) * kernel * in_channels;
    for (int oy = 0; oy < rows.out; ++oy) {
        int ky0, ky1;
        valid_taps(oy, stride, rows.pad_before, kernel, height, ky0, ky1);
        for (int ox = 0; ox < cols.out; ++ox) {
            int kx0, kx1;
            valid_taps(ox, stride, cols.pad_before, kernel, width, kx0, kx1);
            float* row = patches + (std::size_t(oy) * cols.out + ox) * row_len;
            std::memset(row, 0, sizeof(float) * row_len);
            const int iy0 = oy * stride - rows.pad_before, ix0 = ox * stride - cols.pad_before;
            for (int ky = ky0; ky < ky1; ++ky) {
                // taps kx0..kx1 of one kernel row are contiguous in both the input row and the patch row
                const float* src = x + (std::size_t(iy0 + ky) * width + (ix0 + kx0)) * in_channels;
                float* dst = row + (std::size_t(ky) * kernel + kx0) * in_channels;
                std::memcpy(dst, src, sizeof(float) * std::size_t(kx1 - kx0) * in_channels);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Scalar references: direct loops over output pixel, output channel and every kernel tap.

namespace reference {

void conv2d(const float* x, int height, int width, int in_channels, const float* weight, const float* bias,
            int out_channels, int kernel, int stride, Padding padding, Activation act, float* y, float* scratch) {
    const Shape2d g = checked_geometry("conv2d", x, weight, y, height, width, in_channels, out_channels, kernel,
                                       stride, padding);
    for (int oy = 0; oy < g.rows.out; ++oy)
        for (int ox = 0; ox < g.cols.out; ++ox)
            for (int co = 0; co < out_channels; ++co) {
                float sum = bias ? bias[co] : 0.0f;
                for (int ky = 0; ky < kernel; ++ky) {
                    const int iy = oy * stride - g.rows.pad_before + ky;
                    if (iy < 0 || iy >= height) continue;
                    for (int kx = 0; kx < kernel; ++kx) {
                        const int ix = ox * stride - g.cols.pad_before + kx;
                        if (ix < 0 || ix >= width) continue;
                        const float* in = x + (std::size_t(iy) * width + ix) * in_channels;
                        const float* w = weight + ((std::size_t(co) * kernel + ky) * kernel + kx) * in_channels;
                        for (int ci = 0; ci < in_channels; ++ci) sum += in[ci] * w[ci];
                    }
                }
                y[(std::size_t(oy) * g.cols.out + ox) * out_channels + co] = sum;
            }
    reference::activate(y, std::size_t(g.rows.out) * g.cols.out * out_channels, act);
}

void depthwise_conv2d(const float* x, int height, int width, int channels, const float* weight, const float* bias,
                      int kernel, int stride, Padding padding, Activation act, float* y) {
    const Shape2d g =
        checked_geometry("depthwise_conv2d", x, weight, y, height, width, channels, channels, kernel, stride, padding);
    for (int oy = 0; oy < g.rows.out; ++oy)
        for (int ox = 0; ox < g.cols.out; ++ox)
            for (int c = 0; c < channels; ++c) {
                float sum = bias ? bias[c] : 0.0f;
                for (int ky = 0; ky < kernel; ++ky) {
                    const int iy = oy * stride - g.rows.pad_before + ky;
                    if (iy < 0 || iy >= height) continue;
                    for (int kx = 0; kx < kernel; ++kx) {
                        const int ix = ox * stride - g.cols.pad_before + kx;
                        if (ix < 0 || ix >= width) continue;
                        sum += x[(std::size_t(iy) * width + ix) * channels + c] *
                               weight[(std::size_t(ky) * kernel + kx) * channels + c];
                    }
                }
                y[(std::size_t(oy) * g.cols.out + ox) * channels + c] = sum;
            }
    reference::activate(y, std::size_t(g.rows.out) * g.cols.out * channels, act);
}

}  // namespace reference

}  // namespace attnlab::kernels
