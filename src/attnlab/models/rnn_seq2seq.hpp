#pragma once
// The RNN encoder-decoder with attention of Bahdanau et al. (2015), as trained by python/attnlab/nn/seq2seq_rnn.py
// (whose docstring has the equations). One GGUF file holds the weights, the sizes and both tokenizers.
//
//   encoder:  h_j = [→h_j ; ←h_j] = BiGRU(E_src[x_j])                       memory [S, 2E]
//             s_0 = tanh(W_init [→h_S ; ←h_1] + b_init)                     [H]
//   step i:   e_i = score(s_{i-1}, h_·)  a_i = softmax(e_i)  c_i = Σ_j a_ij h_j
//             s_i = GRU([E_tgt[y_{i-1}] ; c_i], s_{i-1})
//             t_i = tanh(W_t [s_i ; c_i ; E_tgt[y_{i-1}]] + b_t)            [emb]
//             logits_i = E_tgt t_i + b_out                                  [V_tgt] (output tied to E_tgt)
//
// The GRU's input weights and W_t act on c_i linearly, and W c_i = Σ_j a_ij (W h_j): the engine splits both by
// input and projects the annotations through their c_i columns once per sentence (rnn_encode), so a step weighs
// those [S, 3H + emb] rows by a_i instead of multiplying c_i by [3H + emb, 2E] weights for every hypothesis (a
// third of the step's multiply-adds at the shipped sizes). The same values as the concatenated products up to
// float rounding (with Q8_0 weights: h_j's int8 rounding instead of c_i's).
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attnlab/decode/search.hpp"
#include "attnlab/decode/sentences.hpp"
#include "attnlab/models/output_columns.hpp"
#include "attnlab/nn/attention.hpp"
#include "attnlab/nn/linear.hpp"
#include "attnlab/nn/rnn.hpp"
#include "attnlab/tensor.hpp"

namespace attnlab::gguf {
class File;
}

namespace attnlab::models {

struct RnnSeq2SeqConfig {
    int source_vocab = 0;
    int target_vocab = 0;
    int embedding = 0;       // emb
    int encoder_hidden = 0;  // E, per direction
    int decoder_hidden = 0;  // H
    int attention_dim = 0;   // A (additive only)
    nn::Score score = nn::Score::additive;
    bool source_eos = true;  // the encoder input ends with EOS, as in training
};

struct RnnSeq2Seq {
    RnnSeq2SeqConfig config;
    nn::Linear source_embedding;   // [V_src, emb] as a table (rows are looked up; may be Q8_0)
    nn::Linear target_embedding;   // [V_tgt, emb], also the output projection, with bias b_out [V_tgt]
    nn::BiGRU encoder;             // emb -> 2E
    nn::Linear init;               // [H, 2E]
    nn::AttentionParams attention; // query s [H], keys h_j [2E]
    nn::GRUCell decoder;           // input E_tgt[y_{i-1}] [emb] (the file's weight_ih columns for it, with b_ih), hidden H
    nn::Linear decoder_context;    // [3H, 2E]: the GRU's weight_ih columns for c_i, no bias
    nn::Linear deep_state;         // [emb, H]: W_t's columns for s_i, with b_t
    nn::Linear deep_context;       // [emb, 2E]: W_t's columns for c_i
    nn::Linear deep_embedding;     // [emb, emb]: W_t's columns for E_tgt[y_{i-1}]
    int bos = 2, eos = 3, pad = 0;
};

// Reads a model written by python/attnlab/gguf/bahdanau.py; throws attnlab::Error on a file of another kind or shape.
RnnSeq2Seq load_rnn_seq2seq(const gguf::File& file);

struct RnnEncoded {
    Matrix memory;               // [S, 2E] annotations h_j
    Matrix memory_gates;         // [S, 3H] decoder_context · h_j: the GRU input gates' c_i part, per annotation
    Matrix memory_deep;          // [S, emb] deep_context · h_j
    nn::PreparedKeys keys;       // the query-independent part of the score
    Vector initial_state;        // s_0 [H]
};

// source ids (already ending with EOS when config.source_eos) [S] -> memory, keys, s_0
RnnEncoded rnn_encode(const RnnSeq2Seq& model, const std::vector<int32_t>& source_ids);

// One decoder step: token y_{i-1}, state s_{i-1} [H] -> s_i [H] (may not alias), out.logits [V_tgt],
// out.weights [S], out.scores [S], out.context [2E].
void rnn_step(const RnnSeq2Seq& model, const RnnEncoded& encoded, int32_t token, const float* state,
              float* next_state, decode::StepOutput& out);

// Buffers of a batched step for up to `capacity` rows, allocated once per search.
struct RnnStepScratch {
    std::vector<float> embedded;        // [rows, emb]
    std::vector<float> deep;            // [rows, emb]
    std::vector<float> deep_embedded;   // [rows, emb]
    std::vector<float> gates;           // [rows, 6H]: input gates, then hidden gates
    std::vector<const nn::PreparedKeys*> keys;  // rnn_step_rows_each: each row's source
    std::vector<const Matrix*> values;
    void reserve(const RnnSeq2SeqConfig& config, int capacity);
};

// rnn_step for `rows` hypotheses at once: tokens [rows], states [rows, H] -> next_states [rows, H] (may not alias),
// logits [rows, V_tgt], weights and scores [rows, S], context [rows, 2E]. Row r equals rnn_step on row r up to the
// summation order of linear_batched (bit for bit with one row, and with Q8_0 weights), reading each weight once.
void rnn_step_rows(const RnnSeq2Seq& model, const RnnEncoded& encoded, const int32_t* tokens, int rows,
                   const float* states, float* next_states, float* logits, float* weights, float* scores,
                   float* context, RnnStepScratch& scratch);

// rnn_step_rows for rows of different sentences: row r attends over sources[r] only, so weights and scores are
// [rows, stride] (stride >= every source length; zeros after a row's own length); every matrix product is still
// one pass over the weights for all rows. logits [rows, output.out]: output is the model's output layer or some
// of its rows (OutputColumns).
void rnn_step_rows_each(const RnnSeq2Seq& model, const RnnEncoded* const* sources, const int32_t* tokens, int rows,
                        const float* states, float* next_states, float* logits, float* weights, float* scores,
                        int stride, float* context, RnnStepScratch& scratch, const nn::Linear& output);

// Adapts the model and one encoded sentence to the search.
class RnnDecoder : public decode::EncodedDecoder<RnnSeq2Seq, RnnEncoded> {
public:
    using EncodedDecoder::EncodedDecoder;
    decode::StatePtr initial_state() const override;
    decode::StatePtr step(const decode::DecoderState& state, int32_t token, decode::StepOutput& out) const override;
    // All rows in one pass over the weights (rnn_step_rows); states as a [rows, H] matrix.
    std::unique_ptr<decode::DecoderBatch> start_batch(int capacity) const override;
    void step_batch(decode::DecoderBatch& batch, const int32_t* tokens, decode::BatchOutput& out) const override;
    void select_batch(decode::DecoderBatch& batch, const int32_t* parents, int count) const override;
};

// Several encoded sentences for decode::search_sentences; with columns (kept by pointer), every step scores only
// those target tokens.
class RnnSentencesDecoder : public ColumnSentencesDecoder<RnnSeq2Seq, RnnEncoded> {
public:
    using ColumnSentencesDecoder::ColumnSentencesDecoder;
    std::unique_ptr<decode::DecoderBatch> start_batch(const int* sentence_of_row, int rows, int capacity) const override;
    void step_batch(decode::DecoderBatch& batch, const int32_t* tokens, const int* sentence_of_row,
                    decode::BatchOutput& out) const override;
    void select_batch(decode::DecoderBatch& batch, const int32_t* parents, int count) const override;
};

// Copies row `id` of an embedding table (f32 or Q8_0) into out [emb]; throws on an id outside the table.
void embedding_row(const nn::Linear& table, int32_t id, float* out);

// The speech recognizer's speller step once the attention has given c_i (context [2E]), the translator's equations
// on the concatenated inputs: s_i = GRU([E[y_{i-1}] ; c_i], s_{i-1}) into next_state [hidden] (may not alias
// state), and logits [V] = output · tanh(deep_output · [s_i ; c_i ; E[y_{i-1}]]).
void gru_deep_output_step(const nn::Linear& embedding, const nn::GRUCell& gru, const nn::Linear& deep_output,
                          const nn::Linear& output, int32_t token, const Vector& context, const float* state,
                          int hidden, float* next_state, std::vector<float>& logits);

}  // namespace attnlab::models
