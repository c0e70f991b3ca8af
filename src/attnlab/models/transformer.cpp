#include "attnlab/models/transformer.hpp"

#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/models/metadata.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/models/rnn_seq2seq.hpp"  // embedding_row

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
    nn::linear(ff.up, x, rows, hidden.data());
    kernels::activate(hidden.data(), hidden.size(), kernels::Activation::relu);
    nn::linear(ff.down, hidden.data(), rows, out.data());
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
    model.source_embedding = nn::load_linear_tensors(file, "src_embed.weight", "", d, c.source_vocab);
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

TransformerEncoded transformer_encode(const Transformer& model, const std::vector<int32_t>& source_ids) {
    const TransformerConfig& c = model.config;
    const int S = static_cast<int>(source_ids.size()), d = c.d_model, H = c.heads;
    check(S > 0, "cannot translate an empty input");
    Matrix h = embed(model.source_embedding, source_ids.data(), S, 0);  // [S, d] residual stream
    Matrix x = Matrix::from_shape(h.shape());                           // [S, d] normalized input of a sublayer
    TransformerEncoded out;
    out.self_attention = Tensor4::from_shape({std::size_t(c.encoder_layers), std::size_t(H), std::size_t(S), std::size_t(S)});
    Tensor3 weights;
    for (int l = 0; l < c.encoder_layers; ++l) {
        const TransformerEncoderLayer& layer = model.encoder[l];
        layer_norm(layer.norm1, h.data(), S, d, c.norm_epsilon, x.data());
        const Matrix a = nn::mha_forward(layer.self_attention, x, x, nullptr, false, &weights);  // [S, d]
        kernels::axpy(S * d, 1.0f, a.data(), h.data());
        std::memcpy(out.self_attention.data() + std::size_t(l) * H * S * S, weights.data(), sizeof(float) * weights.size());
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
Matrix decode_layers(const Transformer& model, const TransformerEncoded& encoded, const std::vector<int32_t>& inputs,
                     Tensor4* self_attention, Tensor4* cross_attention) {
    const TransformerConfig& c = model.config;
    const int T = static_cast<int>(inputs.size()), d = c.d_model, H = c.heads, L = c.decoder_layers;
    const int S = static_cast<int>(encoded.memory.shape()[0]);
    check(T > 0, "transformer decoder: no decoder inputs");
    Matrix g = embed(model.target_embedding, inputs.data(), T, 0);  // [T, d]
    Matrix x = Matrix::from_shape(g.shape());
    if (self_attention) *self_attention = Tensor4::from_shape({std::size_t(L), std::size_t(H), std::size_t(T), std::size_t(T)});
    if (cross_attention) *cross_attention = Tensor4::from_shape({std::size_t(L), std::size_t(H), std::size_t(T), std::size_t(S)});
    Tensor3 weights;
    for (int l = 0; l < L; ++l) {
        const TransformerDecoderLayer& layer = model.decoder[l];
        layer_norm(layer.norm1, g.data(), T, d, c.norm_epsilon, x.data());
        Matrix a = nn::mha_forward(layer.self_attention, x, x, nullptr, true, self_attention ? &weights : nullptr);
        kernels::axpy(T * d, 1.0f, a.data(), g.data());
        if (self_attention)
            std::memcpy(self_attention->data() + std::size_t(l) * H * T * T, weights.data(), sizeof(float) * weights.size());
        layer_norm(layer.norm2, g.data(), T, d, c.norm_epsilon, x.data());
        a = nn::mha_forward(layer.cross_attention, x, encoded.memory, nullptr, false, cross_attention ? &weights : nullptr);
        kernels::axpy(T * d, 1.0f, a.data(), g.data());
        if (cross_attention)
            std::memcpy(cross_attention->data() + std::size_t(l) * H * T * S, weights.data(), sizeof(float) * weights.size());
        layer_norm(layer.norm3, g.data(), T, d, c.norm_epsilon, x.data());
        add_feed_forward(layer.feed_forward, x.data(), T, g.data());
    }
    layer_norm(model.decoder_norm, g.data(), T, d, c.norm_epsilon, x.data());
    return x;
}

}  // namespace

Matrix transformer_decode_full(const Transformer& model, const TransformerEncoded& encoded,
                               const std::vector<int32_t>& inputs, Tensor4* self_attention, Tensor4* cross_attention) {
    return nn::linear(model.target_embedding, decode_layers(model, encoded, inputs, self_attention, cross_attention));
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

void transformer_output_attention(const Transformer& model, const TransformerEncoded& encoded,
                                  const std::vector<int32_t>& tokens, Tensor4& self_attention,
                                  Tensor4& cross_attention) {
    const std::size_t L = model.config.decoder_layers, H = model.config.heads, S = encoded.memory.shape()[0];
    if (tokens.empty()) {
        self_attention = Tensor4::from_shape({L, H, 0, 0});
        cross_attention = Tensor4::from_shape({L, H, 0, S});
        return;
    }
    std::vector<int32_t> inputs{model.bos};
    inputs.insert(inputs.end(), tokens.begin(), tokens.end() - 1);
    // Only the attention is wanted: the [T, V_tgt] output projection would cost as much as a whole step.
    decode_layers(model, encoded, inputs, &self_attention, &cross_attention);
}

}  // namespace attnlab::models
