// Row operations: bias + activation, activations, softmax and log-softmax (with masks), layer norm, and
// embedding lookup.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "attnlab/error.hpp"
#include "attnlab/kernels/detail.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/kernels/simd.hpp"

namespace attnlab::kernels::ATTNLAB_KERNEL_TARGET {

using simd::kWidth;
using simd::Vec;

namespace {

// ---------------------------------------------------------------------------------------------------
// Elementwise helpers: f over whole vectors, the tail through a padded vector so every element sees
// the same SIMD math (results do not depend on where an element sits in the row).

template <class F>
void map_inplace(float* x, int n, F f) {
    int i = 0;
    for (; i + kWidth <= n; i += kWidth) simd::store(x + i, f(simd::load(x + i), i));
    if (i < n) simd::store_partial(x + i, f(simd::load_partial(x + i, n - i), i), n - i);
}

inline Vec load_tail_or_full(const float* p, int n_left) {
    return n_left >= kWidth ? simd::load(p) : simd::load_partial(p, n_left);
}

template <class Act>
void bias_act_rows(int rows, int cols, float* y, int ldy, const float* bias, Act act) {
    for (int r = 0; r < rows; ++r) {
        float* row = y + (size_t)r * ldy;
        if (bias)
            map_inplace(row, cols, [&](Vec v, int i) { return act(v + load_tail_or_full(bias + i, cols - i)); });
        else
            map_inplace(row, cols, [&](Vec v, int) { return act(v); });
    }
}

struct ActNone { Vec operator()(Vec v) const { return v; } };
struct ActRelu { Vec operator()(Vec v) const { return xsimd::max(v, simd::zero()); } };
struct ActRelu6 { Vec operator()(Vec v) const { return xsimd::min(xsimd::max(v, simd::zero()), simd::splat(6.0f)); } };
struct ActTanh { Vec operator()(Vec v) const { return simd::tanh(v); } };
struct ActSigmoid {
    Vec operator()(Vec v) const { return simd::splat(1.0f) / (simd::splat(1.0f) + simd::exp(-v)); }
};
// torch.nn.GELU() default (approximate='none'): 0.5·x·(1 + erf(x/√2))
struct ActGelu {
    Vec operator()(Vec v) const {
        return simd::splat(0.5f) * v * (simd::splat(1.0f) + xsimd::erf(v * simd::splat(0.70710678118654752f)));
    }
};

template <class F>
void with_activation(Activation act, F f) {
    switch (act) {
        case Activation::none: return f(ActNone{});
        case Activation::relu: return f(ActRelu{});
        case Activation::relu6: return f(ActRelu6{});
        case Activation::tanh: return f(ActTanh{});
        case Activation::sigmoid: return f(ActSigmoid{});
        case Activation::gelu: return f(ActGelu{});
    }
    fail("unknown activation " + std::to_string(int(act)));
}

float row_max(const float* x, int n) {
    const float neg_inf = -std::numeric_limits<float>::infinity();
    Vec m = simd::splat(neg_inf);
    int i = 0;
    for (; i + kWidth <= n; i += kWidth) m = xsimd::max(m, simd::load(x + i));
    if (i < n) m = xsimd::max(m, simd::load_partial(x + i, n - i, neg_inf));
    return simd::hmax(m);
}

// Masked-out entries become -inf first: exp(-inf - max) = 0 then does the masking in the SIMD loops.
void apply_mask(float* row, int cols, const uint8_t* mask) {
    if (!mask) return;
    const float neg_inf = -std::numeric_limits<float>::infinity();
    for (int c = 0; c < cols; ++c)
        if (!mask[c]) row[c] = neg_inf;
}

}  // namespace

void bias_act(int rows, int cols, float* y, int ldy, const float* bias, Activation act) {
    detail::check_rows("bias_act", rows, cols, ldy);
    with_activation(act, [&](auto f) { bias_act_rows(rows, cols, y, ldy, bias, f); });
}

void activate(float* x, std::size_t n, Activation act) {
    // Chunks keep the int-indexed helpers valid for any size_t n.
    constexpr std::size_t chunk = std::size_t(1) << 30;
    for (std::size_t start = 0; start < n; start += chunk) {
        const int len = int(std::min(chunk, n - start));
        with_activation(act, [&](auto f) { map_inplace(x + start, len, [&](Vec v, int) { return f(v); }); });
    }
}

void gru_gates(int rows, int H, const float* input_gates, const float* hidden_gates, const float* h, float* h_out) {
    check(rows >= 0 && H >= 0, "gru_gates: negative size");
    const ActSigmoid sigmoid;
    const ActTanh tanh;
    const Vec one = simd::splat(1.0f);
    for (int row = 0; row < rows; ++row) {
        const float* gi = input_gates + (size_t)row * 3 * H;
        const float* gh = hidden_gates + (size_t)row * 3 * H;
        const float* state = h + (size_t)row * H;
        float* out = h_out + (size_t)row * H;
        for (int j = 0; j < H; j += kWidth) {
            const int left = H - j;
            const auto at = [&](const float* p) { return load_tail_or_full(p + j, left); };
            const Vec r = sigmoid(at(gi) + at(gh));
            const Vec z = sigmoid(at(gi + H) + at(gh + H));
            const Vec n = tanh(at(gi + 2 * H) + r * at(gh + 2 * H));
            const Vec next = (one - z) * n + z * at(state);  // state is read before out is written: aliasing is fine
            if (left >= kWidth)
                simd::store(out + j, next);
            else
                simd::store_partial(out + j, next, left);
        }
    }
}

void softmax_rows(int rows, int cols, float* x, int ldx, const uint8_t* mask, int ldm) {
    detail::check_rows("softmax_rows", rows, cols, ldx);
    detail::check_mask("softmax_rows", cols, mask, ldm);
    for (int r = 0; r < rows; ++r) {
        float* row = x + (size_t)r * ldx;
        apply_mask(row, cols, mask ? mask + (size_t)r * ldm : nullptr);
        const float max = row_max(row, cols);
        if (max == -std::numeric_limits<float>::infinity()) {  // fully masked: all zeros
            std::fill(row, row + cols, 0.0f);
            continue;
        }
        const Vec vmax = simd::splat(max);
        Vec vsum = simd::zero();
        int i = 0;
        for (; i + kWidth <= cols; i += kWidth) {
            const Vec e = simd::exp(simd::load(row + i) - vmax);
            simd::store(row + i, e);
            vsum += e;
        }
        float sum = simd::hsum(vsum);
        if (i < cols) {
            const float neg_inf = -std::numeric_limits<float>::infinity();
            const Vec e = simd::exp(simd::load_partial(row + i, cols - i, neg_inf) - vmax);  // pad lanes: 0
            simd::store_partial(row + i, e, cols - i);
            sum += simd::hsum(e);
        }
        const Vec inv = simd::splat(1.0f / sum);
        map_inplace(row, cols, [&](Vec v, int) { return v * inv; });
    }
}

void log_softmax_rows(int rows, int cols, float* x, int ldx, const uint8_t* mask, int ldm) {
    detail::check_rows("log_softmax_rows", rows, cols, ldx);
    detail::check_mask("log_softmax_rows", cols, mask, ldm);
    const float neg_inf = -std::numeric_limits<float>::infinity();
    for (int r = 0; r < rows; ++r) {
        float* row = x + (size_t)r * ldx;
        apply_mask(row, cols, mask ? mask + (size_t)r * ldm : nullptr);
        const float max = row_max(row, cols);
        if (max == neg_inf) {  // fully masked: -inf everywhere
            std::fill(row, row + cols, neg_inf);
            continue;
        }
        const Vec vmax = simd::splat(max);
        Vec vsum = simd::zero();
        int i = 0;
        for (; i + kWidth <= cols; i += kWidth) vsum += simd::exp(simd::load(row + i) - vmax);
        float sum = simd::hsum(vsum);
        if (i < cols) sum += simd::hsum(simd::exp(simd::load_partial(row + i, cols - i, neg_inf) - vmax));
        // (x - max) - log(sum), not x - (max + log(sum)): with large logits the combined shift would be
        // rounded to the ulp of max.
        const Vec log_sum = simd::splat(std::log(sum));
        map_inplace(row, cols, [&](Vec v, int) { return (v - vmax) - log_sum; });  // masked: -inf stays
    }
}

void layer_norm_rows(int rows, int cols, const float* x, float* y, const float* gamma, const float* beta,
                     float eps) {
    detail::check_rows("layer_norm_rows", rows, cols, cols);
    check(cols > 0 || rows == 0, "layer_norm_rows: cols must be positive");
    for (int r = 0; r < rows; ++r) {
        const float* in = x + (size_t)r * cols;
        float* out = y + (size_t)r * cols;
        // Two passes like PyTorch: the mean first, then the biased variance around it.
        Vec vsum = simd::zero();
        int i = 0;
        for (; i + kWidth <= cols; i += kWidth) vsum += simd::load(in + i);
        float sum = simd::hsum(vsum);
        for (; i < cols; ++i) sum += in[i];
        const float mean = sum / float(cols);
        const Vec vmean = simd::splat(mean);
        Vec vsq = simd::zero();
        for (i = 0; i + kWidth <= cols; i += kWidth) {
            const Vec d = simd::load(in + i) - vmean;
            vsq = simd::fma(d, d, vsq);
        }
        float sq = simd::hsum(vsq);
        for (; i < cols; ++i) sq += (in[i] - mean) * (in[i] - mean);
        const float inv_std = 1.0f / std::sqrt(sq / float(cols) + eps);
        const Vec vinv = simd::splat(inv_std);
        for (i = 0; i < cols; i += kWidth) {
            const int left = cols - i;
            Vec v = (load_tail_or_full(in + i, left) - vmean) * vinv;
            if (gamma) v *= load_tail_or_full(gamma + i, left);
            if (beta) v += load_tail_or_full(beta + i, left);
            if (left >= kWidth)
                simd::store(out + i, v);
            else
                simd::store_partial(out + i, v, left);
        }
    }
}

void embedding(const float* table, int vocab, int dim, const int32_t* ids, int n, float* out) {
    detail::check_embedding(vocab, dim, ids, n);
    for (int i = 0; i < n; ++i)
        std::memcpy(out + (size_t)i * dim, table + (size_t)ids[i] * dim, sizeof(float) * (size_t)dim);
}

}  // namespace attnlab::kernels::ATTNLAB_KERNEL_TARGET
