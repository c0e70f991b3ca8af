#pragma once
// Location-aware attention (Chorowski et al. 2015), as nn/listen_attend_spell.py's LocationAttention: the additive
// score of nn/attention.hpp plus a term that reads where the previous step attended, so the decoder can move along
// the frames instead of searching them afresh at every step. One decoder step, in stages:
//   0. location  f = conv1d(a_{i-1}, F)                        previous weights [S] -> features [S, K]
//                  f_jk = Σ_w F_kw · a_{i-1, j + w - width/2}  (cross-correlation, zeros beyond the frames)
//   1. scores    e_j = vᵀ tanh(W_q q + (W_k h_j + b_k) + W_f f_j)                                      [S]
//   2. weights   a_i = softmax(e) over the unmasked frames                                            [S]
//   3. context   c = Σ_j a_ij h_j                                                                     [dk]
// W_k h_j + b_k depends only on the annotations: prepare_location_keys computes it once per utterance.
// Tensor names and layouts are those of LocationAttention's state_dict: "<prefix>.W_q.weight" [A, dq],
// "<prefix>.W_k.weight" [A, dk] + ".bias" [A], "<prefix>.F.weight" [K, 1, width] (Conv1d(1, K, width), no bias),
// "<prefix>.W_f.weight" [A, K], "<prefix>.v.weight" [1, A].
#include <cstdint>
#include <string>

#include "attnlab/nn/linear.hpp"
#include "attnlab/tensor.hpp"

namespace attnlab::nn {

struct LocationAttentionParams {
    int query_dim = 0;       // dq
    int key_dim = 0;         // dk
    Linear query_proj;       // W_q [A, dq] (bias optional; LocationAttention has none)
    Linear key_proj;         // W_k [A, dk] + b_k [A]
    Matrix filters;          // F [K, width], width odd (Conv1d's weight without its single input channel)
    Linear location_proj;    // W_f [A, K] (bias optional; LocationAttention has none)
    Vector v;                // [A] (nn.Linear(A, 1, bias=False).weight [1, A] flattened)

    int attention_dim() const { return int(v.size()); }                                      // A
    int filter_count() const { return filters.dimension() == 2 ? rows(filters) : 0; }       // K
    int filter_width() const { return filters.dimension() == 2 ? cols(filters) : 0; }       // width
};

// Checks every layer against query_dim, key_dim, A, K and an odd width; throws attnlab::Error.
void validate(const LocationAttentionParams& params);

// The key term W_k h_j + b_k for every frame, once per utterance.
struct LocationKeys {
    int length = 0;     // S
    Matrix projected;   // [S, A]
};

// annotations [S, dk] -> LocationKeys
LocationKeys prepare_location_keys(const LocationAttentionParams& params, const Matrix& annotations);

// Stage 0. previous weights [S] -> features [S, K] (row j: what each filter sees around frame j).
void location_features(const LocationAttentionParams& params, const float* previous, int length, float* features);

// Stage 1. query [dq], previous weights [S], mask [S] or null (0 = padding) -> scores [S] (masked: -inf)
void location_scores(const LocationAttentionParams& params, const LocationKeys& keys, const float* query,
                     const float* previous, const uint8_t* mask, float* scores);

struct LocationAttentionResult {
    Vector scores;    // stage 1 [S]; masked positions are -inf
    Vector weights;   // stage 2 [S]; the next step's `previous`
    Vector context;   // stage 3 [dk]
};

// All stages. query [dq], previous [S], values (the annotations) [S, dk], mask [S] or null.
LocationAttentionResult location_attend(const LocationAttentionParams& params, const LocationKeys& keys,
                                        const float* query, const float* previous, const Matrix& values,
                                        const uint8_t* mask);

// Every intermediate term of one step, for a page that shows how the score was built. The three terms add up
// before the tanh, so each one's projection on v says how far it alone pushes frame j's score up or down:
// query_along_v + key_along_v[j] + location_along_v[j] = vᵀ(pre-activation_j), which tanh then bends into e_j.
struct LocationAttentionTerms {
    Vector query_term;         // W_q q (+ b_q) [A], the same for every frame
    Matrix key_term;           // W_k h_j + b_k [S, A] (the prepared keys)
    Matrix features;           // f [S, K], stage 0
    Matrix location_term;      // W_f f_j [S, A]
    float query_along_v = 0;   // vᵀ query_term
    Vector key_along_v;        // vᵀ key_term_j [S]
    Vector location_along_v;   // vᵀ location_term_j [S]
    Vector scores;             // e [S] (masked: -inf)
    Vector weights;            // a_i [S]
    Vector context;            // c [dk]
};

LocationAttentionTerms explain_location_attention(const LocationAttentionParams& params, const LocationKeys& keys,
                                                  const float* query, const float* previous, const Matrix& values,
                                                  const uint8_t* mask);

// Loads LocationAttention's tensors under prefix (names above) for the given sizes; throws attnlab::Error on a
// missing tensor, another shape, an even width, or a convolution bias (the engine's conv1d has none).
LocationAttentionParams load_location_attention(const gguf::File& file, const std::string& prefix, int query_dim,
                                                int key_dim, int attention_dim, int filter_count, int filter_width);

}  // namespace attnlab::nn
