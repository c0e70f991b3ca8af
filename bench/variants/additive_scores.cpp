// The additive attention's scores in one pass over the keys (the tanh and the dot product by v fused), timed
// against what the models run: the [S, A] hidden layer written, kernels::activate's tanh, then kernels::gemv.
#include <algorithm>

#include "attnlab/kernels/detail.hpp"
#include "attnlab/kernels/simd.hpp"
#include "variants/variants.hpp"

namespace attnlab::kernels::variants {

void additive_scores_fused(int S, int A, const float* query_part, const float* keys, int ldk, const float* v,
                           float* scores) {
    detail::check_rows("additive_scores_fused", S, A, ldk);
    using simd::kWidth;
    using simd::Vec;
    // v · tanh(query + key) of one key, from `a` on, onto `sum` (padded with zeros past A: tanh(0)·0 adds nothing).
    auto tail = [&](const float* key, int a, Vec sum) {
        for (; a < A; a += kWidth) {
            const int n = std::min(kWidth, A - a);
            sum = simd::fma(simd::tanh(simd::load_partial(query_part + a, n) + simd::load_partial(key + a, n)),
                            simd::load_partial(v + a, n), sum);
        }
        return sum;
    };
    // Two keys a pass: their tanh chains interleave, and each query and v vector serves both (an odd last key is
    // paired with itself and stored once).
    for (int s = 0; s < S; s += 2) {
        const float* k0 = keys + std::size_t(s) * ldk;
        const float* k1 = s + 1 < S ? k0 + ldk : k0;
        Vec sum0 = simd::zero(), sum1 = simd::zero();
        int a = 0;
        for (; a + kWidth <= A; a += kWidth) {
            const Vec q = simd::load(query_part + a), w = simd::load(v + a);
            sum0 = simd::fma(simd::tanh(q + simd::load(k0 + a)), w, sum0);
            sum1 = simd::fma(simd::tanh(q + simd::load(k1 + a)), w, sum1);
        }
        scores[s] = simd::hsum(tail(k0, a, sum0));
        if (s + 1 < S) scores[s + 1] = simd::hsum(tail(k1, a, sum1));
    }
}

}  // namespace attnlab::kernels::variants
