#include "attnlab/models/transformer.hpp"

#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/models/metadata.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/models/rnn_seq2seq.hpp"  // embedding_row
#include "attnlab/parallel/pool.hpp"

namespace attnlab::models {

namespace {

constexpr const char* kArchitecture = "attnlab.transformer";

void expect_string(const gguf::File& file, const std::string& key, const std::string& expected) {
    const std::string value = file.get_string_or(key, expected);
    check(value == expected, "this Transformer uses " + key + " = '" + value + "'; the engine implements only '" +
                                 expected + "'");
}

LayerNorm load_layer_norm(const gguf::File& file, const std::string& prefix, int d) {
    return LayerNorm{nn::load_vector(file, prefix + ".weight", d), nn::load_vector(file, prefix + ".bias", d)};
}

FeedForward load_feed_forward(const gguf::File& file, const std::string& prefix, int d, int ff) {
    return FeedForward{nn::load_linear(file, prefix + ".ff1", d, ff), nn::load_linear(file, prefix + ".ff2", ff, d)};
}

// x [rows, d] -> y [rows, d]
void layer_norm(const LayerNorm& norm, const float* x, int rows, int d, float eps, float* y) {
    kernels::layer_norm_rows(rows, d, x, y, norm.gamma.data(), norm.beta.data(), eps);
}

// x [rows, d] -> residual [rows, d] += W2 relu(W1 x + b1) + b2
void add_feed_forward(const FeedForward& ff, const float* x, int rows, float* residual) {
    std::vector<float> hidden(std::size_t(rows) * ff.up.out), out(std::size_t(rows) * ff.down.out);
    nn::linear_rows(ff.up, x, rows, hidden.data());
    kernels::activate(hidden.data(), hidden.size(), kernels::Activation::relu);
    nn::linear_rows(ff.down, hidden.data(), rows, out.data());
    kernels::axpy(static_cast<int>(out.size()), 1.0f, out.data(), residual);
}

// ids [n] -> [n, d] = E[ids]·√d + PE[offset + i]
Matrix embed(const nn::Linear& table, const int32_t* ids, int n, int offset) {
    const int d = table.in;
    const float scale = static_cast<float>(std::sqrt(static_cast<double>(d)));
    Matrix x = Matrix::from_shape({std::size_t(n), std::size_t(d)});
    std::vector<float> position(d);
    for (int i = 0; i < n; ++i) {
        float* row = x.data() + std::size_t(i) * d;
        embedding_row(table, ids[i], row);
        sinusoidal_position(offset + i, d, position.data());
        for (int c = 0; c < d; ++c) row[c] = row[c] * scale + position[c];
    }
    return x;
}

// Copies rows [0, length) with room for one more, so the next mha_step appends without growing.
nn::KVCache copy_with_room(const nn::KVCache& cache, int d) {
    nn::KVCache copy;
    copy.k = Matrix::from_shape({std::size_t(cache.length) + 1, std::size_t(d)});
    copy.v = Matrix::from_shape({std::size_t(cache.length) + 1, std::size_t(d)});
    const std::size_t n = std::size_t(cache.length) * d;
    if (n) {
        std::memcpy(copy.k.data(), cache.k.data(), sizeof(float) * n);
        std::memcpy(copy.v.data(), cache.v.data(), sizeof(float) * n);
    }
    copy.length = cache.length;
    return copy;
}

struct TransformerState final : decode::DecoderState {
    std::vector<nn::KVCache> self_kv;  // per decoder layer, rows [0, t) in use
};

// The live hypotheses of a batched search. Every row has its own self-attention caches (one per layer) in a pool
// of `capacity` sets; slot[r] names row r's set. All rows are at the same position (the search steps them in
// lockstep), so one position row serves the whole step.
struct TransformerBatch final : decode::DecoderBatch {
    int capacity = 0;
    int position = 0;                                 // t: the position the next step writes
    std::vector<std::vector<nn::KVCache>> caches;     // [capacity][L]
    std::vector<int> slot, next_slot, free_slots;     // row -> cache set
    std::vector<int> children;                        // per old row: how many new rows chose it
    // Step buffers, [capacity, ·]
    std::vector<float> g, x, q, k, v, concat, a, hidden, position_row;
    std::vector<float> head_weights;   // [rows, H, max(t+1, S)] each row's per-head softmax
    std::vector<float> head_scores;    // [rows, S] one head's raw scores of each row
    std::vector<const TransformerEncoded*> sources;  // per row: the sentence whose memory it attends over
};

TransformerBatch& transformer_batch(decode::DecoderBatch& batch) {
    auto* rows = dynamic_cast<TransformerBatch*>(&batch);
    if (!rows) fail("TransformerDecoder: the batch does not come from this decoder's start_batch");
    return *rows;
}

void ensure_rows(nn::KVCache& cache, int rows, int d) {
    if (cache.k.dimension() == 2 && static_cast<int>(cache.k.shape()[0]) >= rows) return;
    const std::size_t capacity = std::max<std::size_t>(std::size_t(rows), 2 * (cache.k.dimension() == 2 ? cache.k.shape()[0] : 0));
    for (Matrix* m : {&cache.k, &cache.v}) {
        Matrix bigger = Matrix::from_shape({capacity, std::size_t(d)});
        if (cache.length) std::memcpy(bigger.data(), m->data(), sizeof(float) * std::size_t(cache.length) * d);
        *m = std::move(bigger);
    }
}

template <typename T>
T* grown(std::vector<T>& buffer, std::size_t size) {
    if (buffer.size() < size) buffer.resize(size);
    return buffer.data();
}

// One row's multi-head attention over `length` positions, what the pool weighs a split of a batch's rows by: q·k
// and the weighted values (d multiply-adds each per position) and an exp per head (~8), each counted 8 times, since
// these short per-head products run at about an eighth of the int8 products' speed per multiply-add, the pool's
// unit (a native profile of a q8_0 paragraph: 4.5% of the time for 1% of the multiply-adds).
double attention_row_work(int d, int heads, int length) { return 8.0 * length * (2.0 * d + 8.0 * heads); }

}  // namespace

void sinusoidal_position(int position, int d_model, float* out) {
    for (int i = 0; 2 * i < d_model; ++i) {
        const double angle = position * std::pow(10000.0, -2.0 * i / d_model);
        out[2 * i] = static_cast<float>(std::sin(angle));
        if (2 * i + 1 < d_model) out[2 * i + 1] = static_cast<float>(std::cos(angle));
    }
}

Transformer load_transformer(const gguf::File& file) {
    check_architecture(file, kArchitecture, "a Transformer");
    const std::string p = std::string(kArchitecture) + ".";
    Transformer model;
    TransformerConfig& c = model.config;
    c.source_vocab = metadata_size(file, p + "source_vocab_size");
    c.target_vocab = metadata_size(file, p + "target_vocab_size");
    c.d_model = metadata_size(file, p + "d_model");
    c.heads = metadata_size(file, p + "heads");
    c.encoder_layers = metadata_size(file, p + "encoder_layers");
    c.decoder_layers = metadata_size(file, p + "decoder_layers");
    c.feed_forward = metadata_size(file, p + "feed_forward_size");
    c.max_positions = static_cast<int>(file.get_u32_or(p + "max_positions", 0));
    c.norm_epsilon = file.get_f32_or(p + "layer_norm_epsilon", 1e-5f);
    c.source_eos = file.get_bool_or(p + "source_add_eos", true);
    check(c.d_model % c.heads == 0, "d_model " + std::to_string(c.d_model) + " is not a multiple of heads " +
                                        std::to_string(c.heads));
    check(c.encoder_layers <= 64 && c.decoder_layers <= 64, "too many layers");
    check(c.norm_epsilon > 0 && std::isfinite(c.norm_epsilon), "layer_norm_epsilon must be positive");
    expect_string(file, p + "norm", "pre");
    expect_string(file, p + "activation", "relu");
    expect_string(file, p + "positions", "sinusoidal");
    expect_string(file, p + "embedding_scale", "sqrt_d_model");
    check(file.get_bool_or(p + "tied_output", true), "this Transformer has an untied output projection");

    const int d = c.d_model;
    model.source_embedding = nn::load_table(file, "src_embed.weight", d, c.source_vocab);
    model.target_embedding = nn::load_linear_tensors(file, "tgt_embed.weight", "", d, c.target_vocab);
    for (int l = 0; l < c.encoder_layers; ++l) {
        const std::string q = "encoder.layers." + std::to_string(l) + ".";
        model.encoder.push_back({load_layer_norm(file, q + "norm1", d), load_layer_norm(file, q + "norm2", d),
                                 nn::load_multihead(file, q + "self_attn", d, c.heads),
                                 load_feed_forward(file, q + "ffn", d, c.feed_forward)});
    }
    model.encoder_norm = load_layer_norm(file, "encoder.norm", d);
    for (int l = 0; l < c.decoder_layers; ++l) {
        const std::string q = "decoder.layers." + std::to_string(l) + ".";
        model.decoder.push_back({load_layer_norm(file, q + "norm1", d), load_layer_norm(file, q + "norm2", d),
                                 load_layer_norm(file, q + "norm3", d),
                                 nn::load_multihead(file, q + "self_attn", d, c.heads),
                                 nn::load_multihead(file, q + "cross_attn", d, c.heads),
                                 load_feed_forward(file, q + "ffn", d, c.feed_forward)});
    }
    model.decoder_norm = load_layer_norm(file, "decoder.norm", d);

    model.bos = static_cast<int>(file.get_u32("tokenizer.target.bos_token_id"));
    model.eos = static_cast<int>(file.get_u32("tokenizer.target.eos_token_id"));
    check(model.bos < c.target_vocab && model.eos < c.target_vocab, "BOS/EOS ids are outside the target vocabulary");
    return model;
}

namespace {

// Layer l's per-head queries and keys of self-attention over x [S, d], into out.
void store_query_key(const nn::MultiHeadAttention& mha, const Matrix& x, int l, TransformerEncoded& out) {
    const int S = static_cast<int>(x.shape(0)), d = mha.d_model, H = mha.heads, hd = mha.head_dim();
    const Matrix q = nn::linear_rows(mha.q, x), k = nn::linear_rows(mha.k, x);  // [S, d], head h in columns h·hd ..
    for (int h = 0; h < H; ++h) {
        float* queries = out.queries.data() + (std::size_t(l) * H + h) * S * hd;
        float* keys = out.keys.data() + (std::size_t(l) * H + h) * S * hd;
        for (int s = 0; s < S; ++s) {
            std::memcpy(queries + std::size_t(s) * hd, q.data() + std::size_t(s) * d + h * hd, sizeof(float) * hd);
            std::memcpy(keys + std::size_t(s) * hd, k.data() + std::size_t(s) * d + h * hd, sizeof(float) * hd);
        }
    }
}

// Layer l's slice [H, rows, cols] of a [L, H, rows, cols] tensor takes the per-head tensor of one layer.
void store_layer(const Tensor3& layer_tensor, int l, Tensor4& all_layers) {
    std::memcpy(all_layers.data() + std::size_t(l) * layer_tensor.size(), layer_tensor.data(),
                sizeof(float) * layer_tensor.size());
}

}  // namespace

TransformerEncoded transformer_encode(const Transformer& model, const std::vector<int32_t>& source_ids,
                                      bool keep_query_key, bool keep_scores) {
    const TransformerConfig& c = model.config;
    const int S = static_cast<int>(source_ids.size()), d = c.d_model, H = c.heads;
    check(S > 0, "cannot translate an empty input");
    Matrix h = embed(model.source_embedding, source_ids.data(), S, 0);  // [S, d] residual stream
    Matrix x = Matrix::from_shape(h.shape());                           // [S, d] normalized input of a sublayer
    TransformerEncoded out;
    out.self_attention = Tensor4::from_shape({std::size_t(c.encoder_layers), std::size_t(H), std::size_t(S), std::size_t(S)});
    const bool scores_wanted = keep_query_key || keep_scores;
    if (keep_query_key) {
        const std::size_t hd = std::size_t(d / H);
        out.queries = Tensor4::from_shape({std::size_t(c.encoder_layers), std::size_t(H), std::size_t(S), hd});
        out.keys = Tensor4::from_shape({std::size_t(c.encoder_layers), std::size_t(H), std::size_t(S), hd});
    }
    if (scores_wanted) out.self_scores = Tensor4::from_shape(out.self_attention.shape());
    Tensor3 weights, scores;
    for (int l = 0; l < c.encoder_layers; ++l) {
        const TransformerEncoderLayer& layer = model.encoder[l];
        layer_norm(layer.norm1, h.data(), S, d, c.norm_epsilon, x.data());
        if (keep_query_key) store_query_key(layer.self_attention, x, l, out);
        const Matrix a = nn::mha_forward(layer.self_attention, x, x, nullptr, false, &weights,
                                         scores_wanted ? &scores : nullptr);  // [S, d]
        kernels::axpy(S * d, 1.0f, a.data(), h.data());
        store_layer(weights, l, out.self_attention);
        if (scores_wanted) store_layer(scores, l, out.self_scores);
        layer_norm(layer.norm2, h.data(), S, d, c.norm_epsilon, x.data());
        add_feed_forward(layer.feed_forward, x.data(), S, h.data());
    }
    out.memory = Matrix::from_shape(h.shape());
    layer_norm(model.encoder_norm, h.data(), S, d, c.norm_epsilon, out.memory.data());
    for (const TransformerDecoderLayer& layer : model.decoder)
        out.cross_kv.push_back(nn::mha_precompute_kv(layer.cross_attention, out.memory));
    return out;
}

void transformer_step(const Transformer& model, const TransformerEncoded& encoded, int32_t token,
                      std::vector<nn::KVCache>& self_kv, float* logits, TransformerStepAttention* attention) {
    const TransformerConfig& c = model.config;
    const int d = c.d_model, L = c.decoder_layers, S = static_cast<int>(encoded.memory.shape()[0]);
    check(static_cast<int>(self_kv.size()) == L && static_cast<int>(encoded.cross_kv.size()) == L,
          "transformer_step: one self-attention cache and one cross cache per decoder layer are needed");
    const int position = self_kv[0].length;
    for (const nn::KVCache& cache : self_kv)
        check(cache.length == position, "transformer_step: the layers' caches disagree on the position");

    Matrix g = embed(model.target_embedding, &token, 1, position);  // [1, d] residual stream
    std::vector<float> x(d), a(d);
    if (attention) {
        attention->self.resize(L);
        attention->cross.resize(L);
    }
    for (int l = 0; l < L; ++l) {
        const TransformerDecoderLayer& layer = model.decoder[l];
        layer_norm(layer.norm1, g.data(), 1, d, c.norm_epsilon, x.data());
        nn::mha_step(layer.self_attention, x.data(), self_kv[l], a.data(), attention ? &attention->self[l] : nullptr);
        kernels::axpy(d, 1.0f, a.data(), g.data());
        layer_norm(layer.norm2, g.data(), 1, d, c.norm_epsilon, x.data());
        nn::mha_attend_cache(layer.cross_attention, x.data(), encoded.cross_kv[l], nullptr, a.data(),
                             attention ? &attention->cross[l] : nullptr);
        if (attention && l == L - 1) {
            // The raw scores of the generic single-row view: q·k_j/√hd of the last layer, averaged over heads.
            const nn::MultiHeadAttention& mha = layer.cross_attention;
            const int hd = mha.head_dim();
            std::vector<float> q(d), head_scores(S);
            nn::linear(mha.q, x.data(), 1, q.data());
            attention->last_cross_scores.assign(S, 0.0f);
            const float scale = 1.0f / (std::sqrt(float(hd)) * float(mha.heads));
            for (int h = 0; h < mha.heads; ++h) {
                kernels::gemv(S, hd, encoded.cross_kv[l].k.data() + h * hd, d, q.data() + h * hd, head_scores.data());
                kernels::axpy(S, scale, head_scores.data(), attention->last_cross_scores.data());
            }
        }
        kernels::axpy(d, 1.0f, a.data(), g.data());
        layer_norm(layer.norm3, g.data(), 1, d, c.norm_epsilon, x.data());
        add_feed_forward(layer.feed_forward, x.data(), 1, g.data());
    }
    if (logits) {
        layer_norm(model.decoder_norm, g.data(), 1, d, c.norm_epsilon, x.data());
        nn::linear(model.target_embedding, x.data(), 1, logits);
    }
}

namespace {

// The decoder layers and final norm over all inputs at once: [T] -> LN_dec(g) [T, d].
// Each non-null tensor receives every layer's per-head weights or raw scores.
Matrix decode_layers(const Transformer& model, const TransformerEncoded& encoded, const std::vector<int32_t>& inputs,
                     Tensor4* self_attention, Tensor4* cross_attention, Tensor4* self_scores = nullptr,
                     Tensor4* cross_scores = nullptr) {
    const TransformerConfig& c = model.config;
    const int T = static_cast<int>(inputs.size()), d = c.d_model, H = c.heads, L = c.decoder_layers;
    const int S = static_cast<int>(encoded.memory.shape()[0]);
    check(T > 0, "transformer decoder: no decoder inputs");
    Matrix g = embed(model.target_embedding, inputs.data(), T, 0);  // [T, d]
    Matrix x = Matrix::from_shape(g.shape());
    const std::array<std::size_t, 4> self_shape{std::size_t(L), std::size_t(H), std::size_t(T), std::size_t(T)};
    const std::array<std::size_t, 4> cross_shape{std::size_t(L), std::size_t(H), std::size_t(T), std::size_t(S)};
    if (self_attention) *self_attention = Tensor4::from_shape(self_shape);
    if (cross_attention) *cross_attention = Tensor4::from_shape(cross_shape);
    if (self_scores) *self_scores = Tensor4::from_shape(self_shape);
    if (cross_scores) *cross_scores = Tensor4::from_shape(cross_shape);
    Tensor3 weights, scores;
    for (int l = 0; l < L; ++l) {
        const TransformerDecoderLayer& layer = model.decoder[l];
        layer_norm(layer.norm1, g.data(), T, d, c.norm_epsilon, x.data());
        Matrix a = nn::mha_forward(layer.self_attention, x, x, nullptr, true, self_attention ? &weights : nullptr,
                                   self_scores ? &scores : nullptr);
        kernels::axpy(T * d, 1.0f, a.data(), g.data());
        if (self_attention) store_layer(weights, l, *self_attention);
        if (self_scores) store_layer(scores, l, *self_scores);
        layer_norm(layer.norm2, g.data(), T, d, c.norm_epsilon, x.data());
        a = nn::mha_forward(layer.cross_attention, x, encoded.memory, nullptr, false,
                            cross_attention ? &weights : nullptr, cross_scores ? &scores : nullptr);
        kernels::axpy(T * d, 1.0f, a.data(), g.data());
        if (cross_attention) store_layer(weights, l, *cross_attention);
        if (cross_scores) store_layer(scores, l, *cross_scores);
        layer_norm(layer.norm3, g.data(), T, d, c.norm_epsilon, x.data());
        add_feed_forward(layer.feed_forward, x.data(), T, g.data());
    }
    layer_norm(model.decoder_norm, g.data(), T, d, c.norm_epsilon, x.data());
    return x;
}

}  // namespace

Matrix transformer_decode_full(const Transformer& model, const TransformerEncoded& encoded,
                               const std::vector<int32_t>& inputs, Tensor4* self_attention, Tensor4* cross_attention) {
    return nn::linear_rows(model.target_embedding, decode_layers(model, encoded, inputs, self_attention, cross_attention));
}

decode::StatePtr TransformerDecoder::initial_state() const {
    auto state = std::make_shared<TransformerState>();
    for (const TransformerDecoderLayer& layer : model_.decoder) state->self_kv.push_back(nn::make_kv_cache(layer.self_attention, 1));
    return state;
}

decode::StatePtr TransformerDecoder::step(const decode::DecoderState& state, int32_t token, decode::StepOutput& out) const {
    const auto* parent = dynamic_cast<const TransformerState*>(&state);
    check(parent != nullptr, "TransformerDecoder::step: the state does not come from this decoder");
    auto child = std::make_shared<TransformerState>();
    child->self_kv.reserve(parent->self_kv.size());
    for (const nn::KVCache& cache : parent->self_kv) child->self_kv.push_back(copy_with_room(cache, model_.config.d_model));

    TransformerStepAttention attention;
    out.logits.resize(model_.config.target_vocab);
    transformer_step(model_, encoded_, token, child->self_kv, out.logits.data(), &attention);

    // The generic single-row view: the last layer's cross-attention, averaged over heads.
    const Matrix& last = attention.cross.back();  // [H, S]
    const int H = static_cast<int>(last.shape()[0]), S = static_cast<int>(last.shape()[1]);
    out.weights.assign(S, 0.0f);
    for (int h = 0; h < H; ++h) kernels::axpy(S, 1.0f / float(H), last.data() + std::size_t(h) * S, out.weights.data());
    out.scores = std::move(attention.last_cross_scores);
    return child;
}

namespace {

// A batch of `rows` rows (row r in cache set r) with room for `capacity`.
std::unique_ptr<TransformerBatch> make_batch(const Transformer& model, int row_count, int capacity) {
    const TransformerConfig& c = model.config;
    auto batch = std::make_unique<TransformerBatch>();
    batch->capacity = std::max({capacity, row_count, 1});
    batch->caches.resize(batch->capacity);
    for (std::vector<nn::KVCache>& set : batch->caches)
        for (const TransformerDecoderLayer& layer : model.decoder) set.push_back(nn::make_kv_cache(layer.self_attention, 16));
    batch->slot.resize(row_count);
    for (int r = 0; r < row_count; ++r) batch->slot[r] = r;
    batch->next_slot.reserve(batch->capacity);
    batch->free_slots.reserve(batch->capacity);
    batch->children.reserve(batch->capacity);
    const std::size_t rows = batch->capacity, d = c.d_model;
    for (std::vector<float>* buffer : {&batch->g, &batch->x, &batch->q, &batch->k, &batch->v, &batch->concat, &batch->a})
        buffer->resize(rows * d);
    batch->hidden.resize(rows * c.feed_forward);
    batch->position_row.resize(d);
    batch->sources.reserve(batch->capacity);
    batch->rows = row_count;
    return batch;
}

// One step of every row; row r attends over b.sources[r]'s memory, and out is `width` (>= every source) wide.
void step_rows(const Transformer& model, TransformerBatch& b, const int32_t* tokens, int width,
               const OutputColumns& output, decode::BatchOutput& out) {
    const TransformerConfig& c = model.config;
    const int n = b.rows, d = c.d_model, H = c.heads, L = c.decoder_layers, t = b.position;
    const std::size_t nd = std::size_t(n) * d;
    out.reshape(n, output.layer().out, width, 0);
    out.columns = output.columns();
    // Each row's per-head softmax [H, max(t+1, width)] and, in the last layer, one head's scores [width]: the rows'
    // attention runs on the pool.
    const std::size_t weights_stride = std::size_t(H) * std::max(t + 1, width);
    float* head_weights = grown(b.head_weights, std::size_t(n) * weights_stride);
    grown(b.head_scores, std::size_t(n) * width);

    // g = E_tgt[y]·√d + PE[t], the residual stream of every row
    const float scale = static_cast<float>(std::sqrt(static_cast<double>(d)));
    sinusoidal_position(t, d, b.position_row.data());
    for (int r = 0; r < n; ++r) {
        float* row = b.g.data() + std::size_t(r) * d;
        embedding_row(model.target_embedding, tokens[r], row);
        for (int i = 0; i < d; ++i) row[i] = row[i] * scale + b.position_row[i];
    }
    for (int l = 0; l < L; ++l) {
        const TransformerDecoderLayer& layer = model.decoder[l];
        // Causal self-attention: append this position's keys and values to each row's cache, attend over [0, t].
        const nn::MultiHeadAttention& self = layer.self_attention;
        layer_norm(layer.norm1, b.g.data(), n, d, c.norm_epsilon, b.x.data());
        const nn::Linear* projections[] = {&self.q, &self.k, &self.v};
        float* projected[] = {b.q.data(), b.k.data(), b.v.data()};
        nn::linear_batched_stack(projections, 3, b.x.data(), n, projected);
        for (int r = 0; r < n; ++r) {
            nn::KVCache& cache = b.caches[b.slot[r]][l];
            ensure_rows(cache, t + 1, d);
            std::memcpy(cache.k.data() + std::size_t(t) * d, b.k.data() + std::size_t(r) * d, sizeof(float) * d);
            std::memcpy(cache.v.data() + std::size_t(t) * d, b.v.data() + std::size_t(r) * d, sizeof(float) * d);
            cache.length = t + 1;
        }
        parallel::for_each_item(n, attention_row_work(d, H, t + 1), [&](int r) {
            nn::mha_attend_projected(self, b.q.data() + std::size_t(r) * d, b.caches[b.slot[r]][l], t + 1, nullptr,
                                     b.concat.data() + std::size_t(r) * d, head_weights + std::size_t(r) * weights_stride);
        });
        nn::linear_batched(self.out, b.concat.data(), n, b.a.data());
        kernels::axpy(static_cast<int>(nd), 1.0f, b.a.data(), b.g.data());

        // Cross-attention over the sentence's keys and values, projected once by transformer_encode.
        const nn::MultiHeadAttention& cross = layer.cross_attention;
        const bool last = l == L - 1;
        layer_norm(layer.norm2, b.g.data(), n, d, c.norm_epsilon, b.x.data());
        nn::linear_batched(cross.q, b.x.data(), n, b.q.data());
        const int hd = cross.head_dim();
        parallel::for_each_item(n, attention_row_work(d, H, width) * (last ? 2 : 1), [&](int r) {
            const nn::KVCache& memory = b.sources[r]->cross_kv[l];
            const int S = static_cast<int>(b.sources[r]->memory.shape()[0]);
            const float* q = b.q.data() + std::size_t(r) * d;
            float* row_weights = head_weights + std::size_t(r) * weights_stride;
            nn::mha_attend_projected(cross, q, memory, S, nullptr, b.concat.data() + std::size_t(r) * d, row_weights);
            if (!last) return;
            // The generic single-row view (as TransformerDecoder::step gives it): the heads' mean weights and
            // their mean q·k_j/√hd.
            float* weights = out.weights_row(r);
            float* scores = out.scores_row(r);
            float* head_scores = b.head_scores.data() + std::size_t(r) * width;
            std::fill(weights, weights + width, 0.0f);
            std::fill(scores, scores + width, 0.0f);
            const float score_scale = 1.0f / (std::sqrt(float(hd)) * float(H));
            for (int h = 0; h < H; ++h) {
                kernels::axpy(S, 1.0f / float(H), row_weights + std::size_t(h) * S, weights);
                kernels::gemv(S, hd, memory.k.data() + h * hd, d, q + h * hd, head_scores);
                kernels::axpy(S, score_scale, head_scores, scores);
            }
        });
        nn::linear_batched(cross.out, b.concat.data(), n, b.a.data());
        kernels::axpy(static_cast<int>(nd), 1.0f, b.a.data(), b.g.data());

        // Feed-forward
        const FeedForward& ff = layer.feed_forward;
        layer_norm(layer.norm3, b.g.data(), n, d, c.norm_epsilon, b.x.data());
        nn::linear_batched(ff.up, b.x.data(), n, b.hidden.data());
        kernels::activate(b.hidden.data(), std::size_t(n) * ff.up.out, kernels::Activation::relu);
        nn::linear_batched(ff.down, b.hidden.data(), n, b.a.data());
        kernels::axpy(static_cast<int>(nd), 1.0f, b.a.data(), b.g.data());
    }
    layer_norm(model.decoder_norm, b.g.data(), n, d, c.norm_epsilon, b.x.data());
    nn::linear_batched(output.layer(), b.x.data(), n, out.logits.data());
    b.position = t + 1;
}

void select_rows(const Transformer& model, TransformerBatch& b, const int32_t* parents, int count) {
    if (!(count >= 0 && count <= b.capacity)) fail("TransformerDecoder::select_batch: more rows than the batch holds");
    b.children.assign(b.rows, 0);
    for (int r = 0; r < count; ++r) {
        if (!(parents[r] >= 0 && parents[r] < b.rows))
            fail("TransformerDecoder::select_batch: a parent row outside the batch");
        ++b.children[parents[r]];
    }
    // Sets of rows nobody continues, and sets no row holds yet, take the copies.
    b.free_slots.clear();
    std::vector<int>& held = b.next_slot;  // reused below as the new slot list
    held.assign(b.capacity, 0);
    for (int r = 0; r < b.rows; ++r) held[b.slot[r]] = 1;
    for (int s = 0; s < b.capacity; ++s)
        if (!held[s]) b.free_slots.push_back(s);
    for (int r = 0; r < b.rows; ++r)
        if (b.children[r] == 0) b.free_slots.push_back(b.slot[r]);
    // The first child of a row takes over its caches; each further child gets a copy of rows [0, t).
    held.clear();
    const int d = model.config.d_model;
    const std::size_t used = std::size_t(b.position) * d;
    for (int r = 0; r < count; ++r) {
        const int parent = parents[r];
        if (b.children[parent] > 0) {
            b.children[parent] = -1;  // taken
            held.push_back(b.slot[parent]);
            continue;
        }
        const int copy = b.free_slots.back();
        b.free_slots.pop_back();
        std::vector<nn::KVCache>& to = b.caches[copy];
        const std::vector<nn::KVCache>& from = b.caches[b.slot[parent]];
        for (std::size_t l = 0; l < to.size(); ++l) {
            ensure_rows(to[l], b.position + 1, d);
            if (used) {
                std::memcpy(to[l].k.data(), from[l].k.data(), sizeof(float) * used);
                std::memcpy(to[l].v.data(), from[l].v.data(), sizeof(float) * used);
            }
            to[l].length = b.position;
        }
        held.push_back(copy);
    }
    b.slot.swap(b.next_slot);
    b.rows = count;
}

}  // namespace

std::unique_ptr<decode::DecoderBatch> TransformerDecoder::start_batch(int capacity) const {
    return make_batch(model_, 1, capacity);
}

void TransformerDecoder::step_batch(decode::DecoderBatch& batch, const int32_t* tokens, decode::BatchOutput& out) const {
    TransformerBatch& b = transformer_batch(batch);
    b.sources.assign(std::size_t(b.rows), &encoded_);
    step_rows(model_, b, tokens, source_length(), OutputColumns(model_.target_embedding, nullptr), out);
}

void TransformerDecoder::select_batch(decode::DecoderBatch& batch, const int32_t* parents, int count) const {
    select_rows(model_, transformer_batch(batch), parents, count);
}

std::unique_ptr<decode::DecoderBatch> TransformerSentencesDecoder::start_batch(const int* /*sentence_of_row*/, int rows,
                                                                               int capacity) const {
    // Every row starts from empty self-attention caches; which sentence it is matters from its first step.
    return make_batch(model_, rows, capacity);
}

void TransformerSentencesDecoder::step_batch(decode::DecoderBatch& batch, const int32_t* tokens,
                                             const int* sentence_of_row, decode::BatchOutput& out) const {
    TransformerBatch& b = transformer_batch(batch);
    sources_of(sentence_of_row, b.rows, b.sources);
    step_rows(model_, b, tokens, longest_, output_, out);
}

void TransformerSentencesDecoder::select_batch(decode::DecoderBatch& batch, const int32_t* parents, int count) const {
    select_rows(model_, transformer_batch(batch), parents, count);
}

void transformer_output_attention(const Transformer& model, const TransformerEncoded& encoded,
                                  const std::vector<int32_t>& tokens, Tensor4& self_attention,
                                  Tensor4& cross_attention, Tensor4* self_scores, Tensor4* cross_scores) {
    const std::size_t L = model.config.decoder_layers, H = model.config.heads, S = encoded.memory.shape()[0];
    if (tokens.empty()) {
        self_attention = Tensor4::from_shape({L, H, 0, 0});
        cross_attention = Tensor4::from_shape({L, H, 0, S});
        if (self_scores) *self_scores = Tensor4::from_shape({L, H, 0, 0});
        if (cross_scores) *cross_scores = Tensor4::from_shape({L, H, 0, S});
        return;
    }
    std::vector<int32_t> inputs{model.bos};
    inputs.insert(inputs.end(), tokens.begin(), tokens.end() - 1);
    // Only the attention is wanted: the [T, V_tgt] output projection would cost as much as a whole step.
    decode_layers(model, encoded, inputs, &self_attention, &cross_attention, self_scores, cross_scores);
}

}  // namespace attnlab::models
