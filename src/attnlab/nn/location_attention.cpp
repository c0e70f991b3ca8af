#include "attnlab/nn/location_attention.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/nn/attention.hpp"

namespace attnlab::nn {

namespace {

void check_keys(const LocationAttentionParams& params, const LocationKeys& keys, const char* what) {
    const int S = keys.length, A = params.attention_dim();
    if (S == 0) return;
    if (!(keys.projected.dimension() == 2 && rows(keys.projected) == S && cols(keys.projected) == A))
        fail(std::string(what) + ": the prepared keys do not match the attention parameters (use prepare_location_keys)");
}

// hidden [S, A] = W_q q (+ b_q) + key term + W_f f, before the tanh. query_term [A] and location_term [S, A] are
// filled too (the explained view shows them).
void pre_activation(const LocationAttentionParams& params, const LocationKeys& keys, const float* query,
                    const float* previous, float* query_term, float* features, float* location_term, float* hidden) {
    const int S = keys.length, A = params.attention_dim();
    linear(params.query_proj, query, 1, query_term);                          // [A]
    location_features(params, previous, S, features);                          // [S, K]
    linear(params.location_proj, features, S, location_term);                  // [S, A]: one GEMM over the frames
    const float* key_term = keys.projected.data();
    for (std::size_t i = 0, n = std::size_t(S) * A; i < n; ++i)
        hidden[i] = key_term[i] + query_term[i % A] + location_term[i];
}

void mask_scores(const uint8_t* mask, int length, float* scores) {
    if (!mask) return;
    for (int j = 0; j < length; ++j)
        if (!mask[j]) scores[j] = -std::numeric_limits<float>::infinity();
}

}  // namespace

void validate(const LocationAttentionParams& p) {
    const std::string what = "location attention";
    if (!(p.query_dim > 0 && p.key_dim > 0)) fail(what + ": query_dim and key_dim must be positive");
    const int A = p.attention_dim(), K = p.filter_count(), width = p.filter_width();
    if (!(A > 0 && p.v.dimension() == 1)) fail(what + ": v must be a non-empty vector");
    if (!(K > 0 && width > 0)) fail(what + ": the location filters F must be a non-empty [K, width] matrix");
    if (width % 2 != 1) fail(what + ": the filter width must be odd (a centred filter), got " + std::to_string(width));
    validate(p.query_proj, what + " W_q");
    validate(p.key_proj, what + " W_k");
    validate(p.location_proj, what + " W_f");
    if (!(p.query_proj.in == p.query_dim && p.query_proj.out == A))
        fail(what + ": W_q must be [A=" + std::to_string(A) + ", query_dim=" + std::to_string(p.query_dim) + "]");
    if (!(p.key_proj.in == p.key_dim && p.key_proj.out == A))
        fail(what + ": W_k must be [A=" + std::to_string(A) + ", key_dim=" + std::to_string(p.key_dim) + "]");
    if (!(p.location_proj.in == K && p.location_proj.out == A))
        fail(what + ": W_f must be [A=" + std::to_string(A) + ", K=" + std::to_string(K) + "]");
}

LocationKeys prepare_location_keys(const LocationAttentionParams& params, const Matrix& annotations) {
    validate(params);
    if (!(annotations.dimension() == 2 && cols(annotations) == params.key_dim))
        fail("prepare_location_keys: the annotations have " + std::to_string(cols(annotations)) +
             " columns, expected key_dim " + std::to_string(params.key_dim));
    LocationKeys keys;
    keys.length = rows(annotations);
    keys.projected = linear(params.key_proj, annotations);  // [S, A]
    return keys;
}

// previous [S] -> features [S, K]
void location_features(const LocationAttentionParams& params, const float* previous, int length, float* features) {
    const int K = params.filter_count(), width = params.filter_width(), half = width / 2;
    const float* filters = params.filters.data();
    for (int j = 0; j < length; ++j) {
        // The taps that land on frames: frame j + w - half for w in [first, last).
        const int first = std::max(0, half - j), last = std::min(width, length - j + half);
        float* row = features + std::size_t(j) * K;
        for (int k = 0; k < K; ++k) {
            const float* filter = filters + std::size_t(k) * width;
            float sum = 0.0f;
            for (int w = first; w < last; ++w) sum += filter[w] * previous[j + w - half];
            row[k] = sum;
        }
    }
}

// query [dq], previous [S] -> scores [S]
void location_scores(const LocationAttentionParams& params, const LocationKeys& keys, const float* query,
                     const float* previous, const uint8_t* mask, float* scores) {
    check_keys(params, keys, "location_scores");
    const int S = keys.length, A = params.attention_dim();
    if (S == 0) return;
    std::vector<float> query_term(A), features(std::size_t(S) * params.filter_count()),
        location_term(std::size_t(S) * A), hidden(std::size_t(S) * A);
    pre_activation(params, keys, query, previous, query_term.data(), features.data(), location_term.data(),
                   hidden.data());
    kernels::activate(hidden.data(), hidden.size(), kernels::Activation::tanh);
    kernels::gemv(S, A, hidden.data(), A, params.v.data(), scores);
    mask_scores(mask, S, scores);
}

LocationAttentionResult location_attend(const LocationAttentionParams& params, const LocationKeys& keys,
                                        const float* query, const float* previous, const Matrix& values,
                                        const uint8_t* mask) {
    if (!(values.dimension() == 2 && rows(values) == keys.length))
        fail("location_attend: values have " + std::to_string(rows(values)) + " rows but there are " +
             std::to_string(keys.length) + " keys");
    const std::size_t S = std::size_t(keys.length);
    LocationAttentionResult result;
    result.scores = Vector::from_shape({S});
    result.weights = Vector::from_shape({S});
    result.context = Vector::from_shape({values.shape()[1]});
    location_scores(params, keys, query, previous, mask, result.scores.data());
    attention_weights(result.scores.data(), keys.length, mask, result.weights.data());
    attention_context(result.weights.data(), values, result.context.data());
    return result;
}

LocationAttentionTerms explain_location_attention(const LocationAttentionParams& params, const LocationKeys& keys,
                                                  const float* query, const float* previous, const Matrix& values,
                                                  const uint8_t* mask) {
    check_keys(params, keys, "explain_location_attention");
    if (!(values.dimension() == 2 && rows(values) == keys.length))
        fail("explain_location_attention: values have " + std::to_string(rows(values)) + " rows but there are " +
             std::to_string(keys.length) + " keys");
    const int S = keys.length, A = params.attention_dim(), K = params.filter_count();
    const std::size_t s = std::size_t(S), a = std::size_t(A);
    LocationAttentionTerms t;
    t.query_term = Vector::from_shape({a});
    t.key_term = keys.projected;
    t.features = Matrix::from_shape({s, std::size_t(K)});
    t.location_term = Matrix::from_shape({s, a});
    t.key_along_v = Vector::from_shape({s});
    t.location_along_v = Vector::from_shape({s});
    t.scores = Vector::from_shape({s});
    t.weights = Vector::from_shape({s});
    t.context = Vector::from_shape({values.shape()[1]});
    std::vector<float> hidden(s * a);
    if (S > 0) {
        pre_activation(params, keys, query, previous, t.query_term.data(), t.features.data(), t.location_term.data(),
                       hidden.data());
        kernels::gemv(S, A, t.key_term.data(), A, params.v.data(), t.key_along_v.data());
        kernels::gemv(S, A, t.location_term.data(), A, params.v.data(), t.location_along_v.data());
        kernels::activate(hidden.data(), hidden.size(), kernels::Activation::tanh);
        kernels::gemv(S, A, hidden.data(), A, params.v.data(), t.scores.data());
        mask_scores(mask, S, t.scores.data());
    } else {
        linear(params.query_proj, query, 1, t.query_term.data());
    }
    t.query_along_v = kernels::dot(t.query_term.data(), params.v.data(), A);
    attention_weights(t.scores.data(), S, mask, t.weights.data());
    attention_context(t.weights.data(), values, t.context.data());
    return t;
}

LocationAttentionParams load_location_attention(const gguf::File& file, const std::string& prefix, int query_dim,
                                                int key_dim, int attention_dim, int filter_count, int filter_width) {
    const std::string what = "load_location_attention(" + prefix + ")";
    if (!(query_dim > 0 && key_dim > 0 && attention_dim > 0 && filter_count > 0 && filter_width > 0))
        fail(what + ": every size must be positive");
    if (filter_width % 2 != 1)
        fail(what + ": the filter width must be odd (a centred filter), got " + std::to_string(filter_width));
    if (file.has_tensor(prefix + ".F.bias"))
        fail(what + ": the location convolution has a bias, which the engine does not implement");
    LocationAttentionParams params;
    params.query_dim = query_dim;
    params.key_dim = key_dim;
    params.query_proj = load_linear_optional_bias(file, prefix + ".W_q", query_dim, attention_dim);
    params.key_proj = load_linear(file, prefix + ".W_k", key_dim, attention_dim);
    const Tensor3 filters = file.load_f32<3>(prefix + ".F.weight", {filter_count, 1, filter_width});
    params.filters = Matrix::from_shape({std::size_t(filter_count), std::size_t(filter_width)});
    std::copy(filters.begin(), filters.end(), params.filters.begin());
    params.location_proj = load_linear_optional_bias(file, prefix + ".W_f", filter_count, attention_dim);
    params.v = xt::flatten(load_matrix(file, prefix + ".v.weight", 1, attention_dim));
    validate(params);
    return params;
}

}  // namespace attnlab::nn
