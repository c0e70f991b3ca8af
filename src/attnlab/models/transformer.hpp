#pragma once
// The pre-LN encoder-decoder Transformer trained by python/attnlab/nn/transformer.py (whose docstring has the equations).
// One GGUF file holds the weights, the sizes and both tokenizers (python/attnlab/gguf/transformer.py).
//
//   encoder:  h = E_src[x]·√d + PE;  per layer: h += MHA(LN1 h);  h += FF(LN2 h);   memory m = LN_enc(h)  [S, d]
//   decoder:  g = E_tgt[y]·√d + PE;  per layer: g += MHA_causal(LN1 g);  g += MHA(LN2 g, m);  g += FF(LN3 g)
//             logits = LN_dec(g) · E_tgtᵀ                                                             [V_tgt]
//   FF(x) = W2 relu(W1 x + b1) + b2;  PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(same)
//
// Decoding is incremental: each layer's self-attention keeps a key/value cache of the positions decoded so far
// and the cross-attention keys/values of the memory are projected once per sentence, so one step costs O(t).
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "attnlab/decode/search.hpp"
#include "attnlab/decode/sentences.hpp"
#include "attnlab/models/output_columns.hpp"
#include "attnlab/nn/linear.hpp"
#include "attnlab/nn/multihead.hpp"
#include "attnlab/tensor.hpp"

namespace attnlab::gguf {
class File;
}

namespace attnlab::models {

struct TransformerConfig {
    int source_vocab = 0;
    int target_vocab = 0;
    int d_model = 0;
    int heads = 0;
    int encoder_layers = 0;
    int decoder_layers = 0;
    int feed_forward = 0;
    int max_positions = 0;     // what training saw; longer sequences still work (the table is computed)
    float norm_epsilon = 1e-5f;
    bool source_eos = true;    // the encoder input ends with EOS, as in training
};

struct LayerNorm {
    Vector gamma, beta;  // [d]
};

struct FeedForward {
    nn::Linear up;    // [ff, d]
    nn::Linear down;  // [d, ff]
};

struct TransformerEncoderLayer {
    LayerNorm norm1, norm2;
    nn::MultiHeadAttention self_attention;
    FeedForward feed_forward;
};

struct TransformerDecoderLayer {
    LayerNorm norm1, norm2, norm3;
    nn::MultiHeadAttention self_attention, cross_attention;
    FeedForward feed_forward;
};

struct Transformer {
    TransformerConfig config;
    nn::Linear source_embedding;  // [V_src, d] as a table (rows are looked up; may be Q8_0)
    nn::Linear target_embedding;  // [V_tgt, d], also the output projection (no bias)
    std::vector<TransformerEncoderLayer> encoder;
    LayerNorm encoder_norm;
    std::vector<TransformerDecoderLayer> decoder;
    LayerNorm decoder_norm;
    int bos = 2, eos = 3, pad = 0;
};

// Reads a model written by python/attnlab/gguf/transformer.py; throws attnlab::Error on a file of another kind or shape.
Transformer load_transformer(const gguf::File& file);

// PE row for one position: out [d] (computed in double, like python/attnlab/nn/transformer.py's table).
void sinusoidal_position(int position, int d_model, float* out);

struct TransformerEncoded {
    Matrix memory;                        // [S, d] = LN_enc(h)
    Tensor4 self_attention;               // [L_enc, H, S, S]
    std::vector<nn::KVCache> cross_kv;    // per decoder layer: the memory's projected keys and values
    // transformer_encode(..., keep_query_key = true) only (what a neuron view of one head draws):
    Tensor4 queries, keys;                // [L_enc, H, S, hd] each head's projected queries and keys
    // keep_query_key or keep_scores only:
    Tensor4 self_scores;                  // [L_enc, H, S, S] q·k/√hd before the softmax
};

// source ids (already ending with EOS when config.source_eos) [S] -> memory, attention, cross K/V;
// keep_query_key: also the self-attention's per-head queries, keys and raw scores; keep_scores: the raw scores.
// The scores are the ones the attention's softmax reads, taken in the same pass.
TransformerEncoded transformer_encode(const Transformer& model, const std::vector<int32_t>& source_ids,
                                      bool keep_query_key = false, bool keep_scores = false);

// Attention of one decoder step, per layer and head.
struct TransformerStepAttention {
    std::vector<Matrix> self;   // [L_dec] of [H, t+1]
    std::vector<Matrix> cross;  // [L_dec] of [H, S]
    std::vector<float> last_cross_scores;  // [S] last layer's q·k_j/√hd averaged over heads (the raw scores)
};

// One incremental step: token y_t at position t = self_kv[l].length (all layers alike); appends its keys and
// values to self_kv. logits [V_tgt] (or null to skip the output projection); attention may be null.
void transformer_step(const Transformer& model, const TransformerEncoded& encoded, int32_t token,
                      std::vector<nn::KVCache>& self_kv, float* logits, TransformerStepAttention* attention);

// The whole decoder at once (teacher forcing, no cache): inputs [T] (BOS, y_1..y_{T-1}) -> logits [T, V_tgt],
// and when not null self attention [L, H, T, T] (causal) and cross attention [L, H, T, S].
Matrix transformer_decode_full(const Transformer& model, const TransformerEncoded& encoded,
                               const std::vector<int32_t>& inputs, Tensor4* self_attention, Tensor4* cross_attention);

// Adapts the model and one encoded sentence to the search. The state of a hypothesis holds its own
// self-attention caches: a child copies its parent's (O(L·t·d), the same order as the step itself) and appends
// to the copy, so hypotheses that share a prefix never see each other's positions.
// StepOutput.weights = last decoder layer's cross-attention averaged over heads [S];
// StepOutput.scores  = that layer's scaled dot products q·k/√hd averaged over heads [S].
class TransformerDecoder : public decode::EncodedDecoder<Transformer, TransformerEncoded> {
public:
    using EncodedDecoder::EncodedDecoder;
    decode::StatePtr initial_state() const override;
    decode::StatePtr step(const decode::DecoderState& state, int32_t token, decode::StepOutput& out) const override;
    // All rows in one pass over the weights: every projection and the output layer are one linear_batched over
    // [rows, d]; each row attends over its own self-attention caches (appended in place, handed to the child row
    // by select_batch without a copy unless two children share a parent) and the sentence's cross K/V.
    std::unique_ptr<decode::DecoderBatch> start_batch(int capacity) const override;
    void step_batch(decode::DecoderBatch& batch, const int32_t* tokens, decode::BatchOutput& out) const override;
    void select_batch(decode::DecoderBatch& batch, const int32_t* parents, int count) const override;
};

// Several encoded sentences for decode::search_sentences; the step is TransformerDecoder's, with each row's
// cross-attention over its own sentence's keys and values. With columns (kept by pointer), every step scores only
// those target tokens.
class TransformerSentencesDecoder : public ColumnSentencesDecoder<Transformer, TransformerEncoded> {
public:
    using ColumnSentencesDecoder::ColumnSentencesDecoder;
    std::unique_ptr<decode::DecoderBatch> start_batch(const int* sentence_of_row, int rows, int capacity) const override;
    void step_batch(decode::DecoderBatch& batch, const int32_t* tokens, const int* sentence_of_row,
                    decode::BatchOutput& out) const override;
    void select_batch(decode::DecoderBatch& batch, const int32_t* parents, int count) const override;
};

// The full attention tensors of one chosen output: tokens y_1..y_T (no BOS/EOS) -> decoder self [L, H, T, T]
// (rows and columns = decoder inputs BOS, y_1..y_{T-1}) and cross [L, H, T, S]. Computed by re-running the
// decoder over the chosen tokens (teacher forcing), which gives exactly the rows of the hypothesis' own steps
// (up to float summation order), instead of carrying [L][H][t] tensors along every beam hypothesis.
// self_scores / cross_scores, when not null: the raw scores q·k/√hd those weights are the softmax of, from the
// same re-run, the same shapes; the causal mask's entries (j > i) of self_scores are -inf.
void transformer_output_attention(const Transformer& model, const TransformerEncoded& encoded,
                                  const std::vector<int32_t>& tokens, Tensor4& self_attention,
                                  Tensor4& cross_attention, Tensor4* self_scores = nullptr,
                                  Tensor4* cross_scores = nullptr);

}  // namespace attnlab::models
