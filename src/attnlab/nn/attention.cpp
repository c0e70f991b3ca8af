#include "attnlab/nn/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/parallel/pool.hpp"

namespace attnlab::nn {

const char* score_name(Score score) {
    switch (score) {
        case Score::dot: return "dot";
        case Score::general: return "general";
        case Score::additive: return "additive";
        case Score::cosine: return "cosine";
        case Score::scaled_dot: return "scaled_dot";
    }
    fail("score_name: invalid Score value " + std::to_string(int(score)));
}

Score parse_score(const std::string& name) {
    for (Score s : {Score::dot, Score::general, Score::additive, Score::cosine, Score::scaled_dot})
        if (name == score_name(s)) return s;
    fail("unknown attention score '" + name + "' (expected dot, general, additive, cosine or scaled_dot)");
}

void validate(const AttentionParams& p) {
    const std::string what = std::string("attention (") + score_name(p.score) + ")";
    if (!(p.query_dim > 0 && p.key_dim > 0)) fail(what + ": query_dim and key_dim must be positive");
    switch (p.score) {
        case Score::dot:
        case Score::cosine:
        case Score::scaled_dot:
            if (!(p.query_dim == p.key_dim))
                fail(what + ": needs query_dim == key_dim, got " + std::to_string(p.query_dim) + " and " +
                     std::to_string(p.key_dim));
            break;
        case Score::general:
            validate(p.key_proj, what + " W_k");
            if (!(p.key_proj.in == p.key_dim && p.key_proj.out == p.query_dim))
                fail(what + ": W_k must be [query_dim, key_dim]");
            break;
        case Score::additive: {
            const int a = p.attention_dim();
            if (!(a > 0)) fail(what + ": v is empty");
            if (!(p.v.dimension() == 1)) fail(what + ": v must be a vector");
            validate(p.query_proj, what + " query_proj");
            validate(p.key_proj, what + " key_proj");
            if (!(p.query_proj.in == p.query_dim && p.query_proj.out == a))
                fail(what + ": query_proj.weight must be [A=" + std::to_string(a) + ", query_dim]");
            if (!(p.key_proj.in == p.key_dim && p.key_proj.out == a))
                fail(what + ": key_proj.weight must be [A=" + std::to_string(a) + ", key_dim]");
            break;
        }
    }
}

// keys [S, dk] -> PreparedKeys
PreparedKeys prepare_keys(const AttentionParams& params, const Matrix& keys, SequenceProducts products) {
    validate(params);
    if (!(keys.dimension() == 2 && cols(keys) == params.key_dim))
        fail("prepare_keys: keys have " + std::to_string(cols(keys)) + " columns, expected key_dim " +
             std::to_string(params.key_dim));
    PreparedKeys prepared;
    prepared.score = params.score;
    prepared.length = rows(keys);
    switch (params.score) {
        case Score::general:  // [S, dq]
        case Score::additive: prepared.projected = project_sequence(params.key_proj, keys, products); break;  // [S, A]
        case Score::dot:
        case Score::scaled_dot: prepared.projected = keys; break;  // [S, dk]
        case Score::cosine: {
            prepared.projected = keys;
            prepared.norms = Vector::from_shape({std::size_t(prepared.length)});
            const int dk = params.key_dim;
            for (int s = 0; s < prepared.length; ++s) {
                const float* k = keys.data() + std::size_t(s) * dk;
                prepared.norms[s] = std::max(std::sqrt(kernels::dot(k, k, dk)), params.cosine_eps);
            }
            break;
        }
    }
    return prepared;
}

namespace {

// hidden[s] = tanh(W_q q + b_q + W_k k_s + b_k) for all s at once, then e = hidden · v: one gemv.
// query_part [A] = W_q q + b_q; hidden: scratch [S, A].
void additive_scores(const AttentionParams& params, const PreparedKeys& keys, const float* query_part, float* hidden,
                     float* scores) {
    const int S = keys.length, A = params.attention_dim();
    const float* projected = keys.projected.data();
    for (int s = 0; s < S; ++s) {
        const float* key_part = projected + std::size_t(s) * A;  // [A], prepared once per sentence
        float* row = hidden + std::size_t(s) * A;
        for (int a = 0; a < A; ++a) row[a] = query_part[a] + key_part[a];
    }
    kernels::activate(hidden, std::size_t(S) * A, kernels::Activation::tanh);
    kernels::gemv(S, A, hidden, A, params.v.data(), scores);
}

// One row's attention in multiply-adds: a tanh counts as ~10.
double row_work(const AttentionParams& params, int S, int dv) {
    const double scoring = params.score == Score::additive ? 12.0 * params.attention_dim() : params.query_dim;
    return S * (scoring + dv + 8.0);
}

void apply_mask(int S, const uint8_t* mask, float* scores) {
    if (mask)
        for (int s = 0; s < S; ++s)
            if (!mask[s]) scores[s] = -std::numeric_limits<float>::infinity();
}

std::vector<float>& scratch(int which, std::size_t size) {
    thread_local std::vector<float> buffers[2];
    if (buffers[which].size() < size) buffers[which].resize(size);
    return buffers[which];
}

}  // namespace

// query [dq] -> scores [S]
void attention_scores(const AttentionParams& params, const PreparedKeys& keys, const float* query, const uint8_t* mask,
                      float* scores) {
    if (!(keys.score == params.score))
        fail(std::string("attention_scores: keys were prepared for '") + score_name(keys.score) +
             "' but the params use '" + score_name(params.score) + "'");
    const int S = keys.length;
    if (S == 0) return;
    const int width = params.score == Score::general    ? params.query_dim
                      : params.score == Score::additive ? params.attention_dim()
                                                        : params.key_dim;
    if (keys.projected.dimension() != 2 || rows(keys.projected) != S || cols(keys.projected) != width ||
        (params.score == Score::cosine && int(keys.norms.size()) != S))
        fail("attention_scores: the prepared keys do not match the attention parameters (use prepare_keys)");
    const float* projected = keys.projected.data();
    switch (params.score) {
        case Score::dot:
        case Score::general:  // the key side already went through W_k: e = (keys W_kᵀ) · q
            kernels::gemv(S, params.query_dim, projected, params.query_dim, query, scores);
            break;
        case Score::scaled_dot: {
            const int dk = params.key_dim;
            kernels::gemv(S, dk, projected, dk, query, scores);
            const float inv_sqrt_d = 1.0f / std::sqrt(float(dk));
            for (int s = 0; s < S; ++s) scores[s] *= inv_sqrt_d;
            break;
        }
        case Score::cosine: {
            const int dk = params.key_dim;
            kernels::gemv(S, dk, projected, dk, query, scores);
            const float query_norm = std::max(std::sqrt(kernels::dot(query, query, dk)), params.cosine_eps);
            for (int s = 0; s < S; ++s) scores[s] = params.gain * (scores[s] / (query_norm * keys.norms[s]));
            break;
        }
        case Score::additive: {
            std::vector<float> query_part(params.attention_dim()), hidden(std::size_t(S) * params.attention_dim());
            linear(params.query_proj, query, 1, query_part.data());  // [A]
            additive_scores(params, keys, query_part.data(), hidden.data(), scores);
            break;
        }
    }
    apply_mask(S, mask, scores);
}

// scores [S] -> weights [S]
void attention_weights(const float* scores, int length, const uint8_t* mask, float* weights) {
    if (length == 0) return;
    std::memcpy(weights, scores, sizeof(float) * length);
    kernels::softmax_rows(1, length, weights, length, mask, 0);
}

// weights [S], values [S, dv] -> context [dv]
void attention_context(const float* weights, const Matrix& values, float* context) {
    const int S = rows(values), dv = cols(values);
    if (S == 0) {
        std::fill(context, context + dv, 0.0f);
        return;
    }
    kernels::gemv_t(S, dv, values.data(), dv, weights, context);
}

AttentionResult attend(const AttentionParams& params, const PreparedKeys& keys, const float* query,
                       const Matrix& values, const uint8_t* mask) {
    if (!(values.dimension() == 2 && rows(values) == keys.length))
        fail("attend: values have " + std::to_string(rows(values)) + " rows but there are " +
             std::to_string(keys.length) + " keys");
    const std::size_t S = std::size_t(keys.length);
    AttentionResult result;
    result.scores = Vector::from_shape({S});
    result.weights = Vector::from_shape({S});
    result.context = Vector::from_shape({values.shape()[1]});
    attention_scores(params, keys, query, mask, result.scores.data());
    attention_weights(result.scores.data(), keys.length, mask, result.weights.data());
    attention_context(result.weights.data(), values, result.context.data());
    return result;
}

void attend_rows(const AttentionParams& params, const PreparedKeys& keys, const float* queries, int count,
                 const Matrix& values, const uint8_t* mask, float* scores, float* weights, float* context) {
    if (!(values.dimension() == 2 && rows(values) == keys.length))
        fail("attend_rows: values have " + std::to_string(rows(values)) + " rows but there are " +
             std::to_string(keys.length) + " keys");
    const int S = keys.length, dv = cols(values);
    float* query_part = nullptr;
    if (params.score == Score::additive && S > 0) {
        if (!(keys.score == Score::additive && rows(keys.projected) == S && cols(keys.projected) == params.attention_dim()))
            fail("attend_rows: the prepared keys do not match the attention parameters (use prepare_keys)");
        query_part = scratch(0, std::size_t(count) * params.attention_dim()).data();  // [rows, A], the caller's
        linear_batched(params.query_proj, queries, count, query_part);
    }
    parallel::for_each_item(count, row_work(params, S, dv), [&](int r) {
        float* row_scores = scores + std::size_t(r) * S;
        if (params.score == Score::additive) {
            if (S > 0) {
                const int A = params.attention_dim();
                float* hidden = scratch(1, std::size_t(S) * A).data();  // [S, A], this thread's
                additive_scores(params, keys, query_part + std::size_t(r) * A, hidden, row_scores);
            }
            apply_mask(S, mask, row_scores);
        } else {
            attention_scores(params, keys, queries + std::size_t(r) * params.query_dim, mask, row_scores);
        }
        attention_weights(row_scores, S, mask, weights + std::size_t(r) * S);
        attention_context(weights + std::size_t(r) * S, values, context + std::size_t(r) * dv);
    });
}

void attend_rows_each(const AttentionParams& params, const PreparedKeys* const* keys, const Matrix* const* values,
                      const float* queries, int count, int stride, float* scores, float* weights, float* context) {
    const bool additive = params.score == Score::additive;
    const int A = additive ? params.attention_dim() : 0;
    int longest = 0;
    for (int r = 0; r < count; ++r) {
        const int S = keys[r]->length;
        if (!(values[r]->dimension() == 2 && rows(*values[r]) == S && S <= stride))
            fail("attend_rows_each: row " + std::to_string(r) + " has " + std::to_string(S) + " keys, " +
                 std::to_string(rows(*values[r])) + " values and room for " + std::to_string(stride));
        if (additive && S > 0 &&
            !(keys[r]->score == Score::additive && rows(keys[r]->projected) == S && cols(keys[r]->projected) == A))
            fail("attend_rows_each: the prepared keys do not match the attention parameters (use prepare_keys)");
        longest = std::max(longest, S);
    }
    float* query_part = additive ? scratch(0, std::size_t(count) * A).data() : nullptr;  // [rows, A]
    if (additive) linear_batched(params.query_proj, queries, count, query_part);
    const int dv_first = count > 0 ? cols(*values[0]) : 0;
    parallel::for_each_item(count, row_work(params, longest, dv_first), [&](int r) {
        const int S = keys[r]->length, dv = cols(*values[r]);
        float* row_scores = scores + std::size_t(r) * stride;
        float* row_weights = weights + std::size_t(r) * stride;
        if (additive) {
            float* hidden = scratch(1, std::size_t(longest) * A).data();  // [S, A], this thread's
            if (S > 0) additive_scores(params, *keys[r], query_part + std::size_t(r) * A, hidden, row_scores);
        } else {
            attention_scores(params, *keys[r], queries + std::size_t(r) * params.query_dim, nullptr, row_scores);
        }
        attention_weights(row_scores, S, nullptr, row_weights);
        attention_context(row_weights, *values[r], context + std::size_t(r) * dv);
        std::fill(row_scores + S, row_scores + stride, 0.0f);
        std::fill(row_weights + S, row_weights + stride, 0.0f);
    });
}

AttentionParams load_attention(const gguf::File& file, const std::string& prefix, Score score, int query_dim,
                               int key_dim, int attention_dim) {
    AttentionParams params;
    params.score = score;
    params.query_dim = query_dim;
    params.key_dim = key_dim;
    if (score == Score::general) params.key_proj = load_linear_optional_bias(file, prefix + ".W_k", key_dim, query_dim);
    if (score == Score::additive) {
        if (!(attention_dim > 0)) fail("load_attention(" + prefix + "): additive attention needs attention_dim > 0");
        params.query_proj = load_linear_optional_bias(file, prefix + ".W_q", query_dim, attention_dim);
        params.key_proj = load_linear_optional_bias(file, prefix + ".W_k", key_dim, attention_dim);
        params.v = xt::flatten(load_matrix(file, prefix + ".v.weight", 1, attention_dim));
    }
    if (score == Score::cosine && file.has_tensor(prefix + ".gain"))
        params.gain = load_vector(file, prefix + ".gain", 1)[0];
    validate(params);
    return params;
}

}  // namespace attnlab::nn
