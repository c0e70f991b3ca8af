#include "attnlab/models/rnn_seq2seq.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/models/metadata.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/parallel/pool.hpp"

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

    model.source_embedding = nn::load_table(file, "src_embed.weight", c.embedding, c.source_vocab);
    model.target_embedding = nn::load_linear_tensors(file, "tgt_embed.weight", "", c.embedding, c.target_vocab);
    model.target_embedding.bias = nn::load_vector(file, "out_bias", c.target_vocab);
    model.encoder = nn::load_bigru(file, "encoder", c.embedding, c.encoder_hidden);
    model.init = nn::load_linear(file, "init", memory, c.decoder_hidden);
    model.attention = nn::load_attention(file, "attn", c.score, c.decoder_hidden, memory, c.attention_dim);
    // Split by input (the header's note): [E_tgt[y] ; c] for the GRU, [s ; c ; E_tgt[y]] for W_t.
    // The parts are loaded without the products' caches (load_linear_to_split): only their slices multiply.
    const int gates = 3 * c.decoder_hidden;
    const nn::Linear decoder_ih =
        nn::load_linear_to_split(file, "decoder.weight_ih", "decoder.bias_ih", c.embedding + memory, gates);
    model.decoder.input_size = c.embedding;
    model.decoder.hidden_size = c.decoder_hidden;
    model.decoder.ih = nn::slice_columns(decoder_ih, 0, c.embedding, true);
    model.decoder.hh = nn::load_linear_tensors(file, "decoder.weight_hh", "decoder.bias_hh", c.decoder_hidden, gates);
    nn::validate(model.decoder);
    model.decoder_context = nn::slice_columns(decoder_ih, c.embedding, memory, false);
    const nn::Linear deep = nn::load_linear_to_split(file, "deep_out.weight", "deep_out.bias",
                                                     c.decoder_hidden + memory + c.embedding, c.embedding);
    model.deep_state = nn::slice_columns(deep, 0, c.decoder_hidden, true);
    model.deep_context = nn::slice_columns(deep, c.decoder_hidden, memory, false);
    model.deep_embedding = nn::slice_columns(deep, c.decoder_hidden + memory, c.embedding, false);

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

    // Q8_0 weights round the encoder's activations to int8 as the decoder steps do (nn::SequenceProducts).
    nn::BiGRUOutput encoder = nn::bigru_forward(model.encoder, embedded, nullptr, nn::SequenceProducts::rows);  // [S, 2E], [2, E]
    RnnEncoded out;
    out.memory = std::move(encoder.outputs);
    out.keys = nn::prepare_keys(model.attention, out.memory, nn::SequenceProducts::rows);
    out.memory_gates = nn::linear_rows(model.decoder_context, out.memory);
    out.memory_deep = nn::linear_rows(model.deep_context, out.memory);
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
    // The batched step on one row: the one-hypothesis search and the batched ones share every operation.
    thread_local RnnStepScratch scratch;
    const std::size_t S = static_cast<std::size_t>(encoded.keys.length);
    out.logits.resize(static_cast<std::size_t>(model.config.target_vocab));
    out.weights.resize(S);
    out.scores.resize(S);
    out.context.resize(2 * static_cast<std::size_t>(model.config.encoder_hidden));
    rnn_step_rows(model, encoded, &token, 1, state, next_state, out.logits.data(), out.weights.data(),
                  out.scores.data(), out.context.data(), scratch);
}

void RnnStepScratch::reserve(const RnnSeq2SeqConfig& c, int capacity) {
    const std::size_t rows = static_cast<std::size_t>(capacity);
    embedded.resize(rows * c.embedding);
    deep.resize(rows * c.embedding);
    deep_embedded.resize(rows * c.embedding);
    gates.resize(rows * 6 * c.decoder_hidden);
}

namespace {

// The step of rnn_step_rows around an attention that fills weights [rows, stride] (and scores, context) from the
// states; source_of(r) is row r's encoded sentence. Every product is one pass over its weights for all rows; each
// row adds its own annotations' projections weighted by its attention (W c_i = Σ_j a_ij (W h_j)).
template <typename Attend, typename SourceOf>
void step_rows(const RnnSeq2Seq& model, const int32_t* tokens, int rows, const float* states, float* next_states,
               float* logits, const float* weights, int stride, RnnStepScratch& scratch, const nn::Linear& output,
               Attend&& attend, SourceOf&& source_of) {
    const RnnSeq2SeqConfig& c = model.config;
    const int emb = c.embedding, H = c.decoder_hidden;
    if (scratch.gates.size() < static_cast<std::size_t>(rows) * 6 * H) scratch.reserve(c, rows);
    float* embedded = scratch.embedded.data();            // [rows, emb] E_tgt[y_{i-1}]
    float* input_gates = scratch.gates.data();            // [rows, 3H]
    float* hidden_gates = input_gates + std::size_t(rows) * 3 * H;
    for (int r = 0; r < rows; ++r) embedding_row(model.target_embedding, tokens[r], embedded + std::size_t(r) * emb);
    attend();
    const nn::Linear* by_embedding[] = {&model.decoder.ih, &model.deep_embedding};
    float* const embedding_parts[] = {input_gates, scratch.deep_embedded.data()};
    nn::linear_batched_stack(by_embedding, 2, embedded, rows, embedding_parts);
    parallel::for_each_item(rows, double(stride) * (3 * H + emb), [&](int r) {
        const RnnEncoded& source = source_of(r);
        const int S = static_cast<int>(source.memory_gates.shape()[0]);
        const float* a = weights + std::size_t(r) * stride;
        kernels::gemv_t(S, 3 * H, source.memory_gates.data(), 3 * H, a, input_gates + std::size_t(r) * 3 * H, true);
        kernels::gemv_t(S, emb, source.memory_deep.data(), emb, a, scratch.deep_embedded.data() + std::size_t(r) * emb,
                        true);
    });
    nn::linear_batched(model.decoder.hh, states, rows, hidden_gates);
    kernels::gru_gates(rows, H, input_gates, hidden_gates, states, next_states);
    nn::linear_batched(model.deep_state, next_states, rows, scratch.deep.data());
    kernels::axpy(rows * emb, 1.0f, scratch.deep_embedded.data(), scratch.deep.data());
    kernels::activate(scratch.deep.data(), static_cast<std::size_t>(rows) * emb, kernels::Activation::tanh);
    nn::linear_batched(output, scratch.deep.data(), rows, logits);
}

}  // namespace

void rnn_step_rows(const RnnSeq2Seq& model, const RnnEncoded& encoded, const int32_t* tokens, int rows,
                   const float* states, float* next_states, float* logits, float* weights, float* scores,
                   float* context, RnnStepScratch& scratch) {
    step_rows(
        model, tokens, rows, states, next_states, logits, weights, encoded.keys.length, scratch,
        model.target_embedding,
        [&] {
            nn::attend_rows(model.attention, encoded.keys, states, rows, encoded.memory, nullptr, scores, weights,
                            context);
        },
        [&](int) -> const RnnEncoded& { return encoded; });
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
    step_rows(
        model, tokens, rows, states, next_states, logits, weights, stride, scratch, output,
        [&] {
            nn::attend_rows_each(model.attention, scratch.keys.data(), scratch.values.data(), states, rows, stride,
                                 scores, weights, context);
        },
        [&](int r) -> const RnnEncoded& { return *sources[r]; });
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
