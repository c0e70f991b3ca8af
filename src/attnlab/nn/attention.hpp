#pragma once
// Single-query attention over a source sequence, in the three stages of the source material:
//   1. scores   e_s = score(q, k_s)                 for every source position s     [S]
//   2. weights  α = softmax(e) over unmasked s     (alignment)                     [S]
//   3. context  c = Σ_s α_s · v_s                   (weighted sum of the values)    [dv]
// Five score functions (q [dq] is the decoder state, k_s [dk] an encoder annotation):
//   dot         qᵀ k                                      (Luong dot; dq == dk)
//   general     qᵀ (W_k k)                                (Luong general; W_k = key_proj.weight [dq, dk], no bias)
//   additive    vᵀ tanh(W_q q + W_k k + b_k)              (Bahdanau concat/MLP; W_q [A, dq], W_k [A, dk], v [A])
//   cosine      g · qᵀ k / (max(‖q‖, ε) · max(‖k‖, ε))    (torch.nn.functional.cosine_similarity, ε = 1e-8,
//                                                          times a learned gain g, 1 when the file has none)
//   scaled_dot  qᵀ k / √dk                                (Transformer)
// Tensor names and layouts are those of python/attnlab/nn/attention.py (and python/attnlab/nn/seq2seq_rnn.py's Attention), so a
// PyTorch state_dict loads unchanged: "<prefix>.W_q.weight", "<prefix>.W_k.weight", "<prefix>.W_k.bias",
// "<prefix>.v.weight" [1, A], "<prefix>.gain" [1].
#include <cstdint>
#include <string>

#include "attnlab/nn/linear.hpp"
#include "attnlab/tensor.hpp"

namespace attnlab::nn {

enum class Score { dot, general, additive, cosine, scaled_dot };

const char* score_name(Score score);          // "dot", "general", "additive", "cosine", "scaled_dot"
Score parse_score(const std::string& name);   // the inverse; throws attnlab::Error on an unknown name

// torch.nn.functional.cosine_similarity's default eps: each norm is clamped to at least this.
constexpr float kCosineEps = 1e-8f;

struct AttentionParams {
    Score score = Score::dot;
    int query_dim = 0;        // dq
    int key_dim = 0;          // dk
    Linear query_proj;        // W_q: additive only, nn.Linear(dq, A) [A, dq] (bias optional)
    Linear key_proj;          // W_k: additive nn.Linear(dk, A) [A, dk] (bias optional);
                              //      general nn.Linear(dk, dq, bias=False) [dq, dk]
    Vector v;                 // additive: [A] (nn.Linear(A, 1, bias=False).weight [1, A] flattened)
    float gain = 1.0f;        // cosine: scores are gain · cos
    float cosine_eps = kCosineEps;

    int attention_dim() const { return int(v.size()); }   // A (additive only)
};

// Checks the fields the chosen score needs against query_dim/key_dim; throws attnlab::Error.
void validate(const AttentionParams& params);

// What depends only on the keys, computed once per source sentence so each decoder step costs one
// pass over S rows: general: keys · W_kᵀ [S, dq] (the score becomes one gemv, projected · q);
// additive: keys · W_kᵀ + b_k [S, A]; dot/scaled_dot/cosine: the keys themselves [S, dk]; cosine also
// the clamped key norms max(‖k_s‖, ε) [S].
struct PreparedKeys {
    Score score = Score::dot;
    int length = 0;        // S
    Matrix projected;      // [S, dq | A | dk], see above
    Vector norms;          // cosine only: max(‖k_s‖, ε) [S]
};

// keys [S, dk] -> PreparedKeys; products: how W_k projects them (linear.hpp).
PreparedKeys prepare_keys(const AttentionParams& params, const Matrix& keys,
                          SequenceProducts products = SequenceProducts::linear);

struct AttentionResult {
    Vector scores;    // stage 1: raw scores [S]; masked positions are -inf
    Vector weights;   // stage 2: softmax over the unmasked positions [S]; all zeros if every position is masked
    Vector context;   // stage 3: Σ_s weights_s · values_s [dv]
};

// Stage 1. query [dq], mask [S] or null (0 = padding) -> scores [S] (masked: -inf)
void attention_scores(const AttentionParams& params, const PreparedKeys& keys, const float* query,
                      const uint8_t* mask, float* scores);
// Stage 2. scores [S] -> weights [S]; a fully masked row gives zeros, never NaN.
void attention_weights(const float* scores, int length, const uint8_t* mask, float* weights);
// Stage 3. weights [S], values [S, dv] -> context [dv]
void attention_context(const float* weights, const Matrix& values, float* context);

// All three stages. query [dq], values [S, dv], mask [S] or null (0 = padding).
AttentionResult attend(const AttentionParams& params, const PreparedKeys& keys, const float* query,
                       const Matrix& values, const uint8_t* mask);

// All three stages for `rows` independent queries over the same keys (a batched decoder step, one row per
// hypothesis): queries [count, dq] -> scores [count, S], weights [count, S], context [count, dv]. Row r is
// attend(params, keys, query_r, values, mask) up to the summation order of the additive query projection, which
// is one linear_batched for all rows (each weight read once). Allocates nothing once its scratch has grown.
void attend_rows(const AttentionParams& params, const PreparedKeys& keys, const float* queries, int count,
                 const Matrix& values, const uint8_t* mask, float* scores, float* weights, float* context);

// attend_rows for rows over different sources (several sentences stepped as one batch): row r attends over
// keys[r] and values[r] only. scores and weights are [count, stride] with stride >= every keys[r]->length; row r
// fills its first keys[r]->length entries and zeros the rest. The additive query projection is still one
// linear_batched over all rows.
void attend_rows_each(const AttentionParams& params, const PreparedKeys* const* keys, const Matrix* const* values,
                      const float* queries, int count, int stride, float* scores, float* weights, float* context);

// Loads what the score needs: additive "<prefix>.W_q.weight" [A, dq] (+ ".bias" if present),
// "<prefix>.W_k.weight" [A, dk] (+ ".bias"), "<prefix>.v.weight" [1, A]; general "<prefix>.W_k.weight" [dq, dk];
// cosine "<prefix>.gain" [1] if present. attention_dim is A (additive only; ignored otherwise).
AttentionParams load_attention(const gguf::File& file, const std::string& prefix, Score score, int query_dim,
                               int key_dim, int attention_dim = 0);

}  // namespace attnlab::nn
