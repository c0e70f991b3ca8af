#pragma once
// Tensors are row-major xtensor containers of float; kernels see them as contiguous buffers.
#include <cstddef>
#include <xtensor/xtensor.hpp>

namespace attnlab {

using Vector = xt::xtensor<float, 1>;
using Matrix = xt::xtensor<float, 2>;
using Tensor3 = xt::xtensor<float, 3>;
using Tensor4 = xt::xtensor<float, 4>;

inline int rows(const Matrix& m) { return static_cast<int>(m.shape()[0]); }
inline int cols(const Matrix& m) { return static_cast<int>(m.shape()[1]); }

}  // namespace attnlab
