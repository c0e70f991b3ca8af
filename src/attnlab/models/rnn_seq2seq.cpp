#include "attnlab/models/rnn_seq2seq.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/models/metadata.hpp"
#include "attnlab/kernels/kernels.hpp"

namespace attnlab::models {

namespace {

constexpr const char* kArchitecture = "attnlab.bahdanau";

int rows_of(const gguf::File& file, const std::string& name) {
    const gguf::TensorInfo& info = file.tensor(name);
    check(info.shape.size() == 2, "tensor '" + name + "' must be 2-D, it has shape " + gguf::format_shape(info.shape));
    return static_cast<int>(info.shape[0]);
}

struct RnnState : decode::DecoderState {
    Vector s;  // [H]
};

struct RnnBatch final : decode::DecoderBatch {
    int capacity = 0;
    std::vector<float> states, next_states;  // [capacity, H]
    RnnStepScratch scratch;
};

RnnBatch& rnn_batch(decode::DecoderBatch& batch) {
    auto* rows = dynamic_cast<RnnBatch*>(&batch);
    if (!rows) fail("RnnDecoder: the batch does not come from this decoder's start_batch");
    return *rows;
}

}  // namespace

void embedding_row(const nn::Linear& table, int32_t id, float* out) {
    if (!(id >= 0 && id < table.out))
        fail("token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(table.out));
    nn::weight_row(table, id, out);
}

RnnSeq2Seq load_rnn_seq2seq(const gguf::File& file) {
    check_architecture(file, kArchitecture, "an RNN translation model");
    const std::string p = std::string(kArchitecture) + ".";
    RnnSeq2Seq model;
    RnnSeq2SeqConfig& c = model.config;
    c.embedding = metadata_size(file, p + "embedding_size");
    c.encoder_hidden = metadata_size(file, p + "encoder_hidden_size");
    c.decoder_hidden = metadata_size(file, p + "decoder_hidden_size");
    c.score = nn::parse_score(file.get_string(p + "score"));
    c.attention_dim = c.score == nn::Score::additive ? metadata_size(file, p + "attention_size") : 0;
    c.source_eos = file.get_bool_or(p + "source_add_eos", true);
    check(file.get_string_or(p + "deep_output_activation", "tanh") == "tanh" && file.get_bool_or(p + "tied_output", true),
          "this RNN model uses a deep output or output projection the engine does not implement");
    c.source_vocab = rows_of(file, "src_embed.weight");
    c.target_vocab = rows_of(file, "tgt_embed.weight");
    const int memory = 2 * c.encoder_hidden;

    model.source_embedding = nn::load_linear_tensors(file, "src_embed.weight", "", c.embedding, c.source_vocab);
    model.target_embedding = nn::load_linear_tensors(file, "tgt_embed.weight", "", c.embedding, c.target_vocab);
    model.target_embedding.bias = nn::load_vector(file, "out_bias", c.target_vocab);
    model.encoder = nn::load_bigru(file, "encoder", c.embedding, c.encoder_hidden);
    model.init = nn::load_linear(file, "init", memory, c.decoder_hidden);
    model.attention = nn::load_attention(file, "attn", c.score, c.decoder_hidden, memory, c.attention_dim);
    model.decoder = nn::load_gru_cell(file, "decoder", c.embedding + memory, c.decoder_hidden);
    model.deep_output = nn::load_linear(file, "deep_out", c.decoder_hidden + memory + c.embedding, c.embedding);

    model.bos = static_cast<int>(file.get_u32("tokenizer.target.bos_token_id"));
    model.eos = static_cast<int>(file.get_u32("tokenizer.target.eos_token_id"));
    check(model.bos < c.target_vocab && model.eos < c.target_vocab, "BOS/EOS ids are outside the target vocabulary");
    return model;
}

RnnEncoded rnn_encode(const RnnSeq2Seq& model, const std::vector<int32_t>& source_ids) {
    const RnnSeq2SeqConfig& c = model.config;
    const int length = static_cast<int>(source_ids.size());  // S
    check(length > 0, "cannot translate an empty input");
    Matrix embedded = Matrix::from_shape({static_cast<std::size_t>(length), static_cast<std::size_t>(c.embedding)});  // [S, emb]
    for (int j = 0; j < length; ++j)
        embedding_row(model.source_embedding, source_ids[j], embedded.data() + std::size_t(j) * c.embedding);

    nn::BiGRUOutput encoder = nn::bigru_forward(model.encoder, embedded);  // outputs [S, 2E], final [2, E]
    RnnEncoded out;
    out.memory = std::move(encoder.outputs);
    out.keys = nn::prepare_keys(model.attention, out.memory);
    out.initial_state = Vector::from_shape({static_cast<std::size_t>(c.decoder_hidden)});
    // final_hidden rows are [→h_S ; ←h_1], contiguous: exactly init's input.
    nn::linear(model.init, encoder.final_hidden.data(), 1, out.initial_state.data());
    kernels::activate(out.initial_state.data(), out.initial_state.size(), kernels::Activation::tanh);
    return out;
}

void gru_deep_output_step(const nn::Linear& embedding, const nn::GRUCell& gru, const nn::Linear& deep_output,
                          const nn::Linear& output, int32_t token, const Vector& context, const float* state,
                          int hidden, float* next_state, std::vector<float>& logits) {
    const int emb = embedding.in, memory = static_cast<int>(context.size());
    std::vector<float> gru_input(static_cast<std::size_t>(emb + memory));  // [emb + 2E]
    std::vector<float> deep_input(static_cast<std::size_t>(hidden + memory + emb));
    float* embedded = gru_input.data();
    embedding_row(embedding, token, embedded);
    std::copy(context.begin(), context.end(), gru_input.begin() + emb);
    nn::gru_step(gru, gru_input.data(), state, next_state);

    std::copy(next_state, next_state + hidden, deep_input.begin());
    std::copy(context.begin(), context.end(), deep_input.begin() + hidden);
    std::copy(embedded, embedded + emb, deep_input.begin() + hidden + memory);
    std::vector<float> t(static_cast<std::size_t>(emb));  // [emb]
    nn::linear(deep_output, deep_input.data(), 1, t.data());
    kernels::activate(t.data(), t.size(), kernels::Activation::tanh);

    logits.resize(static_cast<std::size_t>(output.out));
    nn::linear(output, t.data(), 1, logits.data());
}

void rnn_step(const RnnSeq2Seq& model, const RnnEncoded& encoded, int32_t token, const float* state,
              float* next_state, decode::StepOutput& out) {
    nn::AttentionResult attention = nn::attend(model.attention, encoded.keys, state, encoded.memory, nullptr);
    // The output projection is tied to the target embedding.
    gru_deep_output_step(model.target_embedding, model.decoder, model.deep_output, model.target_embedding, token,
                         attention.context, state, model.config.decoder_hidden, next_state, out.logits);
    out.weights.assign(attention.weights.begin(), attention.weights.end());
    out.scores.assign(attention.scores.begin(), attention.scores.end());
    out.context.assign(attention.context.begin(), attention.context.end());
}

void RnnStepScratch::reserve(const RnnSeq2SeqConfig& c, int capacity) {
    const std::size_t rows = static_cast<std::size_t>(capacity), memory = 2 * static_cast<std::size_t>(c.encoder_hidden);
    gru_input.resize(rows * (c.embedding + memory));
    deep_input.resize(rows * (c.decoder_hidden + memory + c.embedding));
    deep.resize(rows * c.embedding);
    gates.resize(rows * 6 * c.decoder_hidden);
}

namespace {

// The step of rnn_step_rows around an attention that fills scores, weights and context [rows, 2E] from the
// states; everything else is one matrix product over all rows.
template <typename Attend>
void step_rows(const RnnSeq2Seq& model, const int32_t* tokens, int rows, const float* states, float* next_states,
               float* logits, float* context, RnnStepScratch& scratch, const nn::Linear& output, Attend&& attend) {
    const RnnSeq2SeqConfig& c = model.config;
    const std::size_t memory = 2 * static_cast<std::size_t>(c.encoder_hidden), emb = c.embedding,
                      H = c.decoder_hidden, gru_width = emb + memory, deep_width = H + memory + emb;
    if (scratch.gates.size() < static_cast<std::size_t>(rows) * 6 * H) scratch.reserve(c, rows);
    // Row r of x = [E_tgt[y_{i-1}] ; c_i] is its GRU input; the deep output reads [s_i ; c_i ; E_tgt[y_{i-1}]].
    for (int r = 0; r < rows; ++r) embedding_row(model.target_embedding, tokens[r], scratch.gru_input.data() + r * gru_width);
    attend();
    for (int r = 0; r < rows; ++r)
        std::copy_n(context + r * memory, memory, scratch.gru_input.data() + r * gru_width + emb);
    nn::gru_step_rows(model.decoder, scratch.gru_input.data(), states, rows, next_states, scratch.gates.data());
    for (int r = 0; r < rows; ++r) {
        float* deep_input = scratch.deep_input.data() + r * deep_width;
        std::copy_n(next_states + r * H, H, deep_input);
        std::copy_n(context + r * memory, memory, deep_input + H);
        std::copy_n(scratch.gru_input.data() + r * gru_width, emb, deep_input + H + memory);
    }
    nn::linear_batched(model.deep_output, scratch.deep_input.data(), rows, scratch.deep.data());
    kernels::activate(scratch.deep.data(), static_cast<std::size_t>(rows) * emb, kernels::Activation::tanh);
    nn::linear_batched(output, scratch.deep.data(), rows, logits);
}

}  // namespace

void rnn_step_rows(const RnnSeq2Seq& model, const RnnEncoded& encoded, const int32_t* tokens, int rows,
                   const float* states, float* next_states, float* logits, float* weights, float* scores,
                   float* context, RnnStepScratch& scratch) {
    step_rows(model, tokens, rows, states, next_states, logits, context, scratch, model.target_embedding, [&] {
        nn::attend_rows(model.attention, encoded.keys, states, rows, encoded.memory, nullptr, scores, weights, context);
    });
}

void rnn_step_rows_each(const RnnSeq2Seq& model, const RnnEncoded* const* sources, const int32_t* tokens, int rows,
                        const float* states, float* next_states, float* logits, float* weights, float* scores,
                        int stride, float* context, RnnStepScratch& scratch, const nn::Linear& output) {
    scratch.keys.resize(static_cast<std::size_t>(rows));
    scratch.values.resize(static_cast<std::size_t>(rows));
    for (int r = 0; r < rows; ++r) {
        scratch.keys[r] = &sources[r]->keys;
        scratch.values[r] = &sources[r]->memory;
    }
    step_rows(model, tokens, rows, states, next_states, logits, context, scratch, output, [&] {
        nn::attend_rows_each(model.attention, scratch.keys.data(), scratch.values.data(), states, rows, stride, scores,
                             weights, context);
    });
}

std::unique_ptr<decode::DecoderBatch> RnnDecoder::start_batch(int capacity) const {
    const std::size_t H = static_cast<std::size_t>(model_.config.decoder_hidden);
    auto batch = std::make_unique<RnnBatch>();
    batch->capacity = std::max(capacity, 1);
    batch->states.resize(batch->capacity * H);
    batch->next_states.resize(batch->capacity * H);
    std::copy_n(encoded_.initial_state.data(), H, batch->states.data());
    batch->scratch.reserve(model_.config, batch->capacity);
    batch->rows = 1;
    return batch;
}

void RnnDecoder::step_batch(decode::DecoderBatch& batch, const int32_t* tokens, decode::BatchOutput& out) const {
    RnnBatch& b = rnn_batch(batch);
    const RnnSeq2SeqConfig& c = model_.config;
    out.reshape(b.rows, c.target_vocab, source_length(), 2 * c.encoder_hidden);
    rnn_step_rows(model_, encoded_, tokens, b.rows, b.states.data(), b.next_states.data(), out.logits.data(),
                  out.weights.data(), out.scores.data(), out.context.data(), b.scratch);
    b.states.swap(b.next_states);
}

void RnnDecoder::select_batch(decode::DecoderBatch& batch, const int32_t* parents, int count) const {
    RnnBatch& b = rnn_batch(batch);
    if (!(count >= 0 && count <= b.capacity)) fail("RnnDecoder::select_batch: more rows than the batch holds");
    const std::size_t H = static_cast<std::size_t>(model_.config.decoder_hidden);
    for (int r = 0; r < count; ++r) {
        if (!(parents[r] >= 0 && parents[r] < b.rows)) fail("RnnDecoder::select_batch: a parent row outside the batch");
        std::copy_n(b.states.data() + parents[r] * H, H, b.next_states.data() + r * H);
    }
    b.states.swap(b.next_states);
    b.rows = count;
}

decode::StatePtr RnnDecoder::initial_state() const {
    auto state = std::make_shared<RnnState>();
    state->s = encoded_.initial_state;
    return state;
}

decode::StatePtr RnnDecoder::step(const decode::DecoderState& state, int32_t token, decode::StepOutput& out) const {
    const auto& previous = static_cast<const RnnState&>(state);
    auto next = std::make_shared<RnnState>();
    next->s = Vector::from_shape({static_cast<std::size_t>(model_.config.decoder_hidden)});
    rnn_step(model_, encoded_, token, previous.s.data(), next->s.data(), out);
    return next;
}

namespace {

struct RnnSentencesBatch final : decode::DecoderBatch {
    int capacity = 0;
    std::vector<float> states, next_states;  // [capacity, H]
    std::vector<const RnnEncoded*> sources;  // per row
    RnnStepScratch scratch;
};

RnnSentencesBatch& rnn_sentences_batch(decode::DecoderBatch& batch) {
    auto* rows = dynamic_cast<RnnSentencesBatch*>(&batch);
    if (!rows) fail("RnnSentencesDecoder: the batch does not come from this decoder's start_batch");
    return *rows;
}

}  // namespace

std::unique_ptr<decode::DecoderBatch> RnnSentencesDecoder::start_batch(const int* sentence_of_row, int rows,
                                                                       int capacity) const {
    const std::size_t H = static_cast<std::size_t>(model_.config.decoder_hidden);
    auto batch = std::make_unique<RnnSentencesBatch>();
    batch->capacity = std::max({capacity, rows, 1});
    batch->states.resize(batch->capacity * H);
    batch->next_states.resize(batch->capacity * H);
    batch->sources.reserve(batch->capacity);
    for (int r = 0; r < rows; ++r)
        std::copy_n(sentence_at(sentence_of_row[r])->initial_state.data(), H, batch->states.data() + r * H);
    batch->scratch.reserve(model_.config, batch->capacity);
    batch->rows = rows;
    return batch;
}

void RnnSentencesDecoder::step_batch(decode::DecoderBatch& batch, const int32_t* tokens, const int* sentence_of_row,
                                     decode::BatchOutput& out) const {
    RnnSentencesBatch& b = rnn_sentences_batch(batch);
    const RnnSeq2SeqConfig& c = model_.config;
    const nn::Linear& output = output_.layer();
    out.reshape(b.rows, output.out, longest_, 2 * c.encoder_hidden);
    out.columns = output_.columns();
    sources_of(sentence_of_row, b.rows, b.sources);
    rnn_step_rows_each(model_, b.sources.data(), tokens, b.rows, b.states.data(), b.next_states.data(),
                       out.logits.data(), out.weights.data(), out.scores.data(), longest_, out.context.data(),
                       b.scratch, output);
    b.states.swap(b.next_states);
}

void RnnSentencesDecoder::select_batch(decode::DecoderBatch& batch, const int32_t* parents, int count) const {
    RnnSentencesBatch& b = rnn_sentences_batch(batch);
    if (!(count >= 0 && count <= b.capacity)) fail("RnnSentencesDecoder::select_batch: more rows than the batch holds");
    const std::size_t H = static_cast<std::size_t>(model_.config.decoder_hidden);
    for (int r = 0; r < count; ++r) {
        if (!(parents[r] >= 0 && parents[r] < b.rows))
            fail("RnnSentencesDecoder::select_batch: a parent row outside the batch");
        std::copy_n(b.states.data() + parents[r] * H, H, b.next_states.data() + r * H);
    }
    b.states.swap(b.next_states);
    b.rows = count;
}

}  // namespace attnlab::models
