// NHWC convolutions (see conv.hpp), compiled once per kernel target: im2col + GEMM for dense convolutions, SIMD
// across channels for depthwise. The geometry, im2col and the scalar references are in conv_scalar.cpp.
#include "attnlab/kernels/conv.hpp"

#include <cstddef>

#include "attnlab/error.hpp"
#include "attnlab/kernels/conv_detail.hpp"
#include "attnlab/kernels/simd.hpp"

namespace attnlab::kernels::ATTNLAB_KERNEL_TARGET {

using detail::checked_geometry;
using detail::is_pointwise;
using detail::Shape2d;
using detail::valid_taps;

void conv2d(const float* x, int height, int width, int in_channels, const float* weight, const float* bias,
            int out_channels, int kernel, int stride, Padding padding, Activation act, float* y, float* scratch) {
    const Shape2d g = checked_geometry("conv2d", x, weight, y, height, width, in_channels, out_channels, kernel,
                                       stride, padding);
    const int pixels = g.rows.out * g.cols.out;
    const int patch = kernel * kernel * in_channels;
    const float* a = x;  // [pixels, patch]
    if (!is_pointwise(kernel, stride)) {
        check(scratch != nullptr, "conv2d: a kxk or strided convolution needs scratch (conv2d_scratch_size)");
        im2col(x, height, width, in_channels, kernel, stride, padding, scratch);
        a = scratch;
    }
    gemm_nt(pixels, out_channels, patch, a, patch, weight, patch, y, out_channels);  // [pixels, Cout]
    bias_act(pixels, out_channels, y, out_channels, bias, act);
}

namespace {

inline simd::Vec apply_activation(simd::Vec v, Activation act) {
    if (act == Activation::relu) return xsimd::max(v, simd::zero());
    if (act == Activation::relu6) return xsimd::min(xsimd::max(v, simd::zero()), simd::splat(6.0f));
    return v;  // none; others are applied afterwards
}

}  // namespace

void depthwise_conv2d(const float* x, int height, int width, int channels, const float* weight, const float* bias,
                      int kernel, int stride, Padding padding, Activation act, float* y) {
    const Shape2d g =
        checked_geometry("depthwise_conv2d", x, weight, y, height, width, channels, channels, kernel, stride, padding);
    const bool fused = act == Activation::none || act == Activation::relu || act == Activation::relu6;
    const Activation inline_act = fused ? act : Activation::none;
    constexpr int W = simd::kWidth;
    const int full = channels - channels % W;
    for (int oy = 0; oy < g.rows.out; ++oy) {
        int ky0, ky1;
        valid_taps(oy, stride, g.rows.pad_before, kernel, height, ky0, ky1);
        const int iy0 = oy * stride - g.rows.pad_before;
        for (int ox = 0; ox < g.cols.out; ++ox) {
            int kx0, kx1;
            valid_taps(ox, stride, g.cols.pad_before, kernel, width, kx0, kx1);
            const int ix0 = ox * stride - g.cols.pad_before;
            float* out = y + (std::size_t(oy) * g.cols.out + ox) * channels;
            // channels in vectors of W; taps innermost so each accumulator stays in a register
            for (int c = 0; c < full; c += W) {
                simd::Vec acc = bias ? simd::load(bias + c) : simd::zero();
                for (int ky = ky0; ky < ky1; ++ky) {
                    // from the first valid tap: x + ix0·C would point before x for left padding (UB)
                    const float* in_row = x + (std::size_t(iy0 + ky) * width + (ix0 + kx0)) * channels + c;
                    const float* w_row = weight + std::size_t(ky) * kernel * channels + c;
                    for (int kx = kx0; kx < kx1; ++kx)
                        acc = simd::fma(simd::load(in_row + std::size_t(kx - kx0) * channels),
                                        simd::load(w_row + std::size_t(kx) * channels), acc);
                }
                simd::store(out + c, apply_activation(acc, inline_act));
            }
            if (full < channels) {
                const int n = channels - full;
                simd::Vec acc = bias ? simd::load_partial(bias + full, n) : simd::zero();
                for (int ky = ky0; ky < ky1; ++ky) {
                    // from the first valid tap: x + ix0·C would point before x for left padding (UB)
                    const float* in_row = x + (std::size_t(iy0 + ky) * width + (ix0 + kx0)) * channels + full;
                    const float* w_row = weight + std::size_t(ky) * kernel * channels + full;
                    for (int kx = kx0; kx < kx1; ++kx)
                        acc = simd::fma(simd::load_partial(in_row + std::size_t(kx - kx0) * channels, n),
                                        simd::load_partial(w_row + std::size_t(kx) * channels, n), acc);
                }
                simd::store_partial(out + full, apply_activation(acc, inline_act), n);
            }
        }
    }
    if (!fused) activate(y, std::size_t(g.rows.out) * g.cols.out * channels, act);
}

}  // namespace attnlab::kernels::ATTNLAB_KERNEL_TARGET
