#pragma once
// Image preprocessing for the MobileNetV2 encoder, identical to mobilenet_v2.py's preprocess() on the Python side:
//   RGBA bytes (alpha ignored) of any size -> 224x224 resize, separable, on float pixel values in float32
//     - an axis that shrinks: antialiased bilinear (a triangle filter whose support widens with the scale, as
//       PIL's and PyTorch's antialias=True: output o averages the source pixels i whose centres lie within
//       `scale` pixels of (o + 0.5) * scale, weighted by 1 - distance / scale and normalized), so detail finer
//       than the output grid averages out instead of aliasing;
//     - an axis that grows or keeps its size: bilinear with half-pixel centres (src = (dst + 0.5) * in / out -
//       0.5, clamped to [0, in - 1]); an image that is already 224x224 is copied unchanged;
//   -> x = pixel / 127.5 - 1, NHWC [224, 224, 3].
#include <cstddef>
#include <cstdint>

#include "attnlab/tensor.hpp"

namespace attnlab::image {

constexpr int kMaxImageSide = 8192;

// Throws attnlab::Error unless 0 < width, height <= kMaxImageSide and byte_count == width * height * 4.
void validate_rgba(std::size_t byte_count, int width, int height);

// rgba [height, width, 4] bytes -> [out_size, out_size, 3] floats in [-1, 1].
Tensor3 preprocess_rgba(const uint8_t* rgba, std::size_t byte_count, int width, int height, int out_size = 224);

// rgba [height, width, 4] -> [out_height, out_width, 3] float pixel values (0..255), the resize alone.
Tensor3 resize_bilinear_rgb(const uint8_t* rgba, int width, int height, int out_width, int out_height);

}  // namespace attnlab::image
