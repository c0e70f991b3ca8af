// Vector helpers: dot, axpy, argmax, top_k, f16 widening, and which SIMD instruction set the kernels use.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "attnlab/error.hpp"
#include "attnlab/kernels/detail.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/kernels/simd.hpp"

namespace attnlab::kernels::ATTNLAB_KERNEL_TARGET {

using simd::kWidth;
using simd::Vec;

void f16_to_f32_n(const uint16_t* h, std::size_t n, float* out) {
    std::size_t i = 0;
    for (; i + kWidth <= n; i += kWidth) simd::store(out + i, simd::load_f16(h + i));
    for (; i < n; ++i) out[i] = detail::half_to_float(h[i]);
}

float dot(const float* a, const float* b, int n) {
    Vec acc0 = simd::zero(), acc1 = simd::zero();
    int i = 0;
    for (; i + 2 * kWidth <= n; i += 2 * kWidth) {
        acc0 = simd::fma(simd::load(a + i), simd::load(b + i), acc0);
        acc1 = simd::fma(simd::load(a + i + kWidth), simd::load(b + i + kWidth), acc1);
    }
    for (; i + kWidth <= n; i += kWidth) acc0 = simd::fma(simd::load(a + i), simd::load(b + i), acc0);
    float sum = simd::hsum(acc0 + acc1);
    for (; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

void axpy(int n, float alpha, const float* x, float* y) {
    const Vec va = simd::splat(alpha);
    int i = 0;
    for (; i + kWidth <= n; i += kWidth) simd::store(y + i, simd::fma(va, simd::load(x + i), simd::load(y + i)));
    for (; i < n; ++i) y[i] += alpha * x[i];
}

int argmax(const float* x, int n) {
    check(n > 0, "argmax: empty input");
    // Vector max first, then the first index holding it. x - x is NaN exactly for NaN and ±inf, where the
    // lane-wise max may disagree with the scalar scan's order of comparisons: then the scalar scan decides.
    Vec vmax = simd::load_partial(x, std::min(n, kWidth), x[0]), probe = simd::zero();
    int i = 0;
    for (; i + kWidth <= n; i += kWidth) {
        const Vec v = simd::load(x + i);
        vmax = xsimd::max(vmax, v);
        probe += v - v;
    }
    float max = simd::hmax(vmax);
    for (; i < n; ++i) {
        probe += simd::splat(x[i] - x[i]);
        max = std::max(max, x[i]);
    }
    if (std::isnan(simd::hsum(probe))) return reference::argmax(x, n);
    for (int j = 0; j < n; ++j)
        if (x[j] == max) return j;
    return reference::argmax(x, n);
}

void top_k(const float* x, int n, int k, int* indices, float* values) {
    detail::check_top_k(n, k);
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [x](int a, int b) { return detail::ranks_before(x, a, b); });
    for (int i = 0; i < k; ++i) {
        indices[i] = order[i];
        values[i] = x[order[i]];
    }
}

const char* simd_name() { return simd::name(); }

bool keep_f16_weights() {
#if defined(__F16C__) && !defined(__wasm_simd128__)
    return true;
#else
    return false;
#endif
}

}  // namespace attnlab::kernels::ATTNLAB_KERNEL_TARGET
