#pragma once
// torch.nn.MultiheadAttention (batch of one, no dropout, no bias_k/bias_v, no add_zero_attn), whole-sequence
// and incremental (one position at a time over a key/value cache).
//
// The weights are PyTorch's, with in_proj split at load time: q = rows [0, d), k = rows [d, 2d),
// v = rows [2d, 3d) of in_proj_weight [3d, d] / in_proj_bias [3d]; out = out_proj.
// Per head h (head_dim = d / heads, columns [h·hd, (h+1)·hd) of the projections):
//   weights_h = softmax(Q_h K_hᵀ / √hd + masks)   [T, S]
//   out       = concat_h(weights_h V_h) · W_outᵀ + b_out
// Masks: key_padding_mask [S] with 0 = padding (the opposite of PyTorch's bool mask, where True = ignore);
// causal: query row i sees key j only when j <= i. A query row that sees no key at all gets weights of
// zero (so its output is out_proj's bias) rather than PyTorch's NaN.
#include <cstdint>
#include <string>

#include "attnlab/nn/linear.hpp"
#include "attnlab/tensor.hpp"

namespace attnlab::nn {

struct MultiHeadAttention {
    int d_model = 0;
    int heads = 0;
    Linear q, k, v, out;   // each [d_model, d_model] (+ bias [d_model])

    int head_dim() const { return d_model / heads; }
};

void validate(const MultiHeadAttention& mha);

// query [T, d], key_value [S, d] (self-attention: pass the same matrix), key_padding_mask [S] or null
// -> [T, d]; weights_out, when not null, receives the per-head weights [heads, T, S]
// (PyTorch's average_attn_weights=False); scores_out, when not null, the raw scores those weights are the
// softmax of, [heads, T, S] = Q_h K_hᵀ / √hd, with -inf where a mask hides the key (what PyTorch's masked_fill
// writes there, and what makes the softmax of a whole row the weights).
Matrix mha_forward(const MultiHeadAttention& mha, const Matrix& query, const Matrix& key_value,
                   const uint8_t* key_padding_mask, bool causal, Tensor3* weights_out = nullptr,
                   Tensor3* scores_out = nullptr);

// Projected keys and values of the positions seen so far: rows [0, length) of k and v are in use;
// the matrices grow (doubling) as positions are appended.
struct KVCache {
    Matrix k;        // [capacity, d] = key_proj(x_j)
    Matrix v;        // [capacity, d] = value_proj(x_j)
    int length = 0;
};

// An empty cache with room for `capacity` positions before it has to grow.
KVCache make_kv_cache(const MultiHeadAttention& mha, int capacity);

// Cross-attention memory: projects the encoder output once. memory [S, d] -> cache with length S.
KVCache mha_precompute_kv(const MultiHeadAttention& mha, const Matrix& memory);

// One query position over the whole cache (O(length) per call). x [d] -> y [d];
// key_padding_mask [length] or null; weights_out, when not null, becomes [heads, length].
void mha_attend_cache(const MultiHeadAttention& mha, const float* x, const KVCache& cache,
                      const uint8_t* key_padding_mask, float* y, Matrix* weights_out = nullptr);

// The heads of one query row whose projection q = W_q x + b_q [d] is already computed, over cache rows
// [0, length): concat [d] = the heads' weighted values side by side (what out_proj reads); weights [heads, length]
// receives each head's softmax. Allocates nothing: a batched decoder step runs it per row and projects all rows
// at once. mha_attend_cache is this between its two projections.
void mha_attend_projected(const MultiHeadAttention& mha, const float* q, const KVCache& cache, int length,
                          const uint8_t* key_padding_mask, float* concat, float* weights);

// Causal self-attention, one step: appends x's key and value to the cache, then attends over positions
// [0, t] (t = the new position). Running this for x_0..x_{T-1} equals mha_forward(X, X, null, causal=true).
// x [d] -> y [d]; weights_out, when not null, becomes [heads, t+1].
void mha_step(const MultiHeadAttention& mha, const float* x, KVCache& cache, float* y,
              Matrix* weights_out = nullptr);

// Loads torch.nn.MultiheadAttention's state_dict under `prefix`: "<prefix>.in_proj_weight" [3d, d],
// "<prefix>.in_proj_bias" [3d] (optional), "<prefix>.out_proj.weight" [d, d], "<prefix>.out_proj.bias" (optional).
// If the file has no in_proj_weight it reads separate "<prefix>.{q,k,v}_proj.{weight,bias}" instead.
MultiHeadAttention load_multihead(const gguf::File& file, const std::string& prefix, int d_model, int heads);

}  // namespace attnlab::nn
