#include "attnlab/nn/multihead.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/kernels/kernels.hpp"

namespace attnlab::nn {

void validate(const MultiHeadAttention& mha) {
    if (!(mha.d_model > 0 && mha.heads > 0 && mha.d_model % mha.heads == 0))
        fail("multi-head attention: d_model " + std::to_string(mha.d_model) + " is not a positive multiple of heads " +
             std::to_string(mha.heads));
    const char* names[] = {"mha q", "mha k", "mha v", "mha out"};  // short: no allocation per step
    const Linear* layers[] = {&mha.q, &mha.k, &mha.v, &mha.out};
    for (int i = 0; i < 4; ++i) {
        validate(*layers[i], names[i]);
        if (!(layers[i]->in == mha.d_model && layers[i]->out == mha.d_model))
            fail(std::string("multi-head attention ") + names[i] + ": projection must be [d_model, d_model]");
    }
}

namespace {

void check_width(const Matrix& m, int d, const char* what) {
    if (!(m.dimension() == 2 && cols(m) == d))
        fail(std::string("mha: ") + what + " has " + std::to_string(cols(m)) + " columns, d_model is " +
             std::to_string(d));
}

// One head of one query row: q_h [hd] against rows [0, length) of the cache -> weights [length], y_h [hd]
void attend_one_head(const float* q_h, const float* k_h, const float* v_h, int ld, int length, int head_dim,
                     const uint8_t* mask, float* weights, float* y_h) {
    kernels::gemv(length, head_dim, k_h, ld, q_h, weights);
    const float scale = 1.0f / std::sqrt(float(head_dim));
    for (int j = 0; j < length; ++j) weights[j] *= scale;
    kernels::softmax_rows(1, length, weights, length, mask, 0);
    kernels::gemv_t(length, head_dim, v_h, ld, weights, y_h);
}

}  // namespace

// query [T, d], key_value [S, d] -> [T, d]
Matrix mha_forward(const MultiHeadAttention& mha, const Matrix& query, const Matrix& key_value,
                   const uint8_t* key_padding_mask, bool causal, Tensor3* weights_out, Tensor3* scores_out) {
    validate(mha);
    const int d = mha.d_model, H = mha.heads, hd = mha.head_dim();
    check_width(query, d, "query");
    check_width(key_value, d, "key_value");
    const int T = rows(query), S = rows(key_value);

    const Matrix Q = linear_rows(mha.q, query);      // [T, d]
    const Matrix K = linear_rows(mha.k, key_value);  // [S, d]
    const Matrix V = linear_rows(mha.v, key_value);  // [S, d]

    // The combined mask [T, S]: padding columns, and for causal the upper triangle j > i.
    std::vector<uint8_t> mask;
    if (key_padding_mask || causal) {
        mask.assign(std::size_t(T) * S, 1);
        for (int i = 0; i < T; ++i)
            for (int j = 0; j < S; ++j)
                if ((key_padding_mask && !key_padding_mask[j]) || (causal && j > i)) mask[std::size_t(i) * S + j] = 0;
    }

    if (weights_out) *weights_out = Tensor3::from_shape({std::size_t(H), std::size_t(T), std::size_t(S)});
    if (scores_out) *scores_out = Tensor3::from_shape({std::size_t(H), std::size_t(T), std::size_t(S)});
    Matrix concat = xt::zeros<float>({std::size_t(T), std::size_t(d)});  // [T, d], head h in columns h·hd..
    std::vector<float> weights(std::size_t(T) * S);                      // [T, S]
    const float scale = 1.0f / std::sqrt(float(hd));
    if (S > 0 && T > 0) {
        for (int h = 0; h < H; ++h) {
            // weights = softmax(Q_h K_hᵀ / √hd)   [T, S]
            kernels::gemm_nt(T, S, hd, Q.data() + h * hd, d, K.data() + h * hd, d, weights.data(), S);
            for (float& w : weights) w *= scale;
            if (scores_out) {
                float* scores = scores_out->data() + std::size_t(h) * T * S;
                for (std::size_t k = 0; k < weights.size(); ++k)
                    scores[k] = mask.empty() || mask[k] ? weights[k] : -std::numeric_limits<float>::infinity();
            }
            kernels::softmax_rows(T, S, weights.data(), S, mask.empty() ? nullptr : mask.data(), S);
            if (weights_out)
                std::memcpy(weights_out->data() + std::size_t(h) * T * S, weights.data(),
                            sizeof(float) * weights.size());
            // concat_h = weights · V_h   [T, hd]
            kernels::gemm_nn(T, hd, S, weights.data(), S, V.data() + h * hd, d, concat.data() + h * hd, d);
        }
    }
    return linear_rows(mha.out, concat);
}

KVCache make_kv_cache(const MultiHeadAttention& mha, int capacity) {
    if (!(capacity >= 0 && mha.d_model > 0)) fail("make_kv_cache: bad capacity or d_model");
    KVCache cache;
    cache.k = Matrix::from_shape({std::size_t(std::max(capacity, 1)), std::size_t(mha.d_model)});
    cache.v = Matrix::from_shape({std::size_t(std::max(capacity, 1)), std::size_t(mha.d_model)});
    cache.length = 0;
    return cache;
}

// memory [S, d] -> cache of length S
KVCache mha_precompute_kv(const MultiHeadAttention& mha, const Matrix& memory) {
    validate(mha);
    check_width(memory, mha.d_model, "memory");
    KVCache cache;
    cache.k = linear_rows(mha.k, memory);
    cache.v = linear_rows(mha.v, memory);
    cache.length = rows(memory);
    return cache;
}

// x [d] over cache rows [0, length) -> y [d]
void mha_attend_cache(const MultiHeadAttention& mha, const float* x, const KVCache& cache,
                      const uint8_t* key_padding_mask, float* y, Matrix* weights_out) {
    validate(mha);
    const int d = mha.d_model, H = mha.heads, L = cache.length;
    if (!(L >= 0 && cache.k.dimension() == 2 && cache.v.dimension() == 2 && cols(cache.k) == d && cols(cache.v) == d &&
          rows(cache.k) >= L && rows(cache.v) >= L))
        fail("mha_attend_cache: the cache does not match d_model or its length");
    std::vector<float> q(d), concat(d), weights;
    linear(mha.q, x, 1, q.data());
    if (weights_out) *weights_out = Matrix::from_shape({std::size_t(H), std::size_t(L)});
    else weights.resize(std::size_t(H) * std::max(L, 1));
    mha_attend_projected(mha, q.data(), cache, L, key_padding_mask, concat.data(),
                         weights_out ? weights_out->data() : weights.data());
    linear(mha.out, concat.data(), 1, y);
}

void mha_attend_projected(const MultiHeadAttention& mha, const float* q, const KVCache& cache, int length,
                          const uint8_t* key_padding_mask, float* concat, float* weights) {
    const int d = mha.d_model, hd = mha.head_dim();
    if (length == 0) {
        std::fill(concat, concat + d, 0.0f);
        return;
    }
    for (int h = 0; h < mha.heads; ++h)
        attend_one_head(q + h * hd, cache.k.data() + h * hd, cache.v.data() + h * hd, d, length, hd, key_padding_mask,
                        weights + std::size_t(h) * length, concat + h * hd);
}

namespace {

// Keeps rows [0, length), doubles the row count.
void grow(Matrix& m, int length) {
    Matrix bigger = Matrix::from_shape({std::max<std::size_t>(2 * m.shape()[0], 1), m.shape()[1]});
    std::memcpy(bigger.data(), m.data(), sizeof(float) * std::size_t(length) * m.shape()[1]);
    m = std::move(bigger);
}

}  // namespace

// x [d] -> y [d], appending x's key and value
void mha_step(const MultiHeadAttention& mha, const float* x, KVCache& cache, float* y, Matrix* weights_out) {
    validate(mha);
    const int d = mha.d_model;
    if (cache.k.dimension() != 2 || cols(cache.k) != d || cache.v.dimension() != 2 || cols(cache.v) != d)
        cache = make_kv_cache(mha, 16);
    if (!(cache.length >= 0 && cache.length <= rows(cache.k) && cache.length <= rows(cache.v)))
        fail("mha_step: cache length is outside its storage");
    if (cache.length == rows(cache.k)) grow(cache.k, cache.length);
    if (cache.length == rows(cache.v)) grow(cache.v, cache.length);
    const std::size_t row = std::size_t(cache.length) * d;
    linear(mha.k, x, 1, cache.k.data() + row);
    linear(mha.v, x, 1, cache.v.data() + row);
    cache.length += 1;
    mha_attend_cache(mha, x, cache, nullptr, y, weights_out);
}

MultiHeadAttention load_multihead(const gguf::File& file, const std::string& prefix, int d_model, int heads) {
    MultiHeadAttention mha;
    mha.d_model = d_model;
    mha.heads = heads;
    if (!(d_model > 0 && heads > 0 && d_model % heads == 0))
        fail("load_multihead(" + prefix + "): d_model must be a positive multiple of heads");
    if (file.has_tensor(prefix + ".in_proj_weight")) {
        // One fused projection [3d, d]: treat it as a Linear and split its rows q | k | v.
        const Linear fused =
            load_linear_to_split(file, prefix + ".in_proj_weight", prefix + ".in_proj_bias", d_model, 3 * d_model);
        mha.q = slice_rows(fused, 0, d_model);
        mha.k = slice_rows(fused, d_model, d_model);
        mha.v = slice_rows(fused, 2 * d_model, d_model);
    } else {
        mha.q = load_linear_optional_bias(file, prefix + ".q_proj", d_model, d_model);
        mha.k = load_linear_optional_bias(file, prefix + ".k_proj", d_model, d_model);
        mha.v = load_linear_optional_bias(file, prefix + ".v_proj", d_model, d_model);
    }
    mha.out = load_linear_optional_bias(file, prefix + ".out_proj", d_model, d_model);
    validate(mha);
    return mha;
}

}  // namespace attnlab::nn
