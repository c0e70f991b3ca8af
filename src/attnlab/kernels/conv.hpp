#pragma once
// 2-D convolutions on NHWC images (one image, so [H, W, C] row-major: channels contiguous), with TensorFlow's
// SAME / VALID padding and a fused bias + activation. What MobileNetV2 needs:
//   conv2d            dense kxk convolution, weights [Cout, kh, kw, Cin] (TFLite layout). 1x1 stride 1 is one
//                     GEMM (x [H*W, Cin] · Wᵀ); anything else is im2col (patch rows [Cout, kh*kw*Cin]) + GEMM.
//   depthwise_conv2d  one kxk filter per channel, weights [kh, kw, C]: SIMD across channels.
// The scalar twins in attnlab::kernels::reference are direct loops, the tests' ground truth.
#include <cstddef>

#include "attnlab/kernels/kernels.hpp"

namespace attnlab::kernels {

enum class Padding { same, valid };

// Output size and the padding before (top / left) of one spatial dimension.
//   same:  out = ceil(in / stride), total = max((out - 1) * stride + k - in, 0), before = total / 2 (the extra
//          pixel of an odd total goes after: bottom / right), exactly as TensorFlow.
//   valid: out = (in - k) / stride + 1, before = 0.
// Throws attnlab::Error on a non-positive size, kernel or stride, or a VALID kernel larger than the input.
struct ConvGeometry {
    int out = 0;
    int pad_before = 0;
};
ConvGeometry conv_geometry(int in, int kernel, int stride, Padding padding);

// Scratch floats conv2d needs for the im2col patches (0 for a 1x1 stride-1 convolution).
std::size_t conv2d_scratch_size(int height, int width, int in_channels, int kernel, int stride, Padding padding);

#define ATTNLAB_CONV_DECLARATIONS                                                                                   \
    /* y[Ho, Wo, Cout] = act(conv(x[H, W, Cin], w[Cout, k, k, Cin]) + bias[Cout]); bias may be null.               \
       scratch: conv2d_scratch_size(...) floats (may be null when that is 0). y must not alias x. */                \
    void conv2d(const float* x, int height, int width, int in_channels, const float* weight, const float* bias,     \
                int out_channels, int kernel, int stride, Padding padding, Activation act, float* y,                \
                float* scratch);                                                                                    \
    /* y[Ho, Wo, C] = act(depthwise_conv(x[H, W, C], w[k, k, C]) + bias[C]); bias may be null; no aliasing. */      \
    void depthwise_conv2d(const float* x, int height, int width, int channels, const float* weight,                 \
                          const float* bias, int kernel, int stride, Padding padding, Activation act, float* y);

// The SIMD ones are compiled per kernel target and dispatched like kernels.hpp's (dispatch.cpp).
#if defined(ATTNLAB_KERNEL_TARGET)
namespace ATTNLAB_KERNEL_TARGET {
ATTNLAB_CONV_DECLARATIONS
}
#else
ATTNLAB_CONV_DECLARATIONS
#endif

namespace reference {
ATTNLAB_CONV_DECLARATIONS
}

// patches[Ho*Wo, k*k*Cin]: row (oy, ox) holds the input window in [ky, kx, c] order, zeros where it hangs over
// the padding. Row-major, so conv2d = gemm_nt(patches, weight[Cout, k*k*Cin]).
void im2col(const float* x, int height, int width, int in_channels, int kernel, int stride, Padding padding,
            float* patches);

}  // namespace attnlab::kernels
