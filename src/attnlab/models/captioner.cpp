#include "attnlab/models/captioner.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "attnlab/error.hpp"
#include "attnlab/image/preprocess.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/models/metadata.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/models/rnn_seq2seq.hpp"

namespace attnlab::models {

namespace {

constexpr const char* kArchitecture = "attnlab.captioner";
constexpr int kMaxEnsembleSize = 8;

// A file's or a caller's n-gram size: 0 (off) or 2..kMaxNoRepeatNgram (1 would ban every repeated token).
bool valid_no_repeat_ngram(int n) { return n == 0 || (n >= decode::kMinNoRepeatNgram && n <= decode::kMaxNoRepeatNgram); }

struct CaptionState : decode::DecoderState {
    std::vector<Vector> h, c;  // per member [H]
};

}  // namespace

CaptionDecoderWeights load_caption_decoder(const gguf::File& file, int member) {
    check_architecture(file, kArchitecture, "a captioner");
    // Keys every member shares sit under p; a member's own sizes and variants under own, its tensors under t.
    const std::string p = std::string(kArchitecture) + ".";
    const std::string own = member == 0 ? p : p + "member" + std::to_string(member) + ".";
    const std::string t = member == 0 ? "" : "member" + std::to_string(member) + ".";
    CaptionDecoderWeights model;
    CaptionerConfig& c = model.config;
    c.vocab = metadata_size(file, p + "vocab_size");
    c.feature_size = metadata_size(file, p + "feature_size");
    c.grid_height = metadata_size(file, p + "grid_height");
    c.grid_width = metadata_size(file, p + "grid_width");
    check(c.grid_height <= 1024 && c.grid_width <= 1024, "the captioner's annotation grid is implausibly large");
    c.embedding = metadata_size(file, own + "embedding_size");
    c.hidden = metadata_size(file, own + "hidden_size");
    c.attention_dim = metadata_size(file, own + "attention_size");
    c.max_length = static_cast<int>(file.get_u32_or(p + "max_length", 30));
    check(c.max_length > 0 && c.max_length <= kMaxCaptionLength, "attnlab.captioner.max_length must be 1.." +
                                                                     std::to_string(kMaxCaptionLength));
    c.no_repeat_ngram = static_cast<int>(file.get_u32_or(p + "no_repeat_ngram", 0));
    check(valid_no_repeat_ngram(c.no_repeat_ngram),
          "attnlab.captioner.no_repeat_ngram must be 0 (off) or 2.." + std::to_string(decode::kMaxNoRepeatNgram));
    check(file.get_string_or(p + "score", "additive") == "additive" && file.get_string_or(p + "gate", "scalar") == "scalar" &&
              file.get_string_or(p + "deep_output", "linear") == "linear",
          "this captioner uses an attention, gate or deep output the engine does not implement");
    const std::string annotations = file.get_string_or(own + "annotations", "raw");
    const std::string global = file.get_string_or(own + "global_feature", "none");
    check(annotations == "raw" || annotations == "centered",
          "this captioner's annotations are '" + annotations + "', which the engine does not implement");
    check(global == "none" || global == "grid_mean",
          "this captioner's global feature is '" + global + "', which the engine does not implement");
    c.center_grid = annotations == "centered";
    c.global_feature = global == "grid_mean";
    c.learned_initial_state = !file.has_tensor(t + "init_h.weight");

    const int C = c.feature_size, H = c.hidden, emb = c.embedding;
    model.embedding = nn::load_linear_tensors(file, t + "embed.weight", "", emb, c.vocab);
    model.embedding.bias = nn::load_vector(file, t + "out_bias", c.vocab);
    if (c.learned_initial_state) {
        model.initial_h = nn::load_vector(file, t + "init_h.bias", H);
        model.initial_c = nn::load_vector(file, t + "init_c.bias", H);
        kernels::activate(model.initial_h.data(), model.initial_h.size(), kernels::Activation::tanh);
        kernels::activate(model.initial_c.data(), model.initial_c.size(), kernels::Activation::tanh);
    } else {
        model.init_h = nn::load_linear(file, t + "init_h", C, H);
        model.init_c = nn::load_linear(file, t + "init_c", C, H);
    }
    model.attention = nn::load_attention(file, t + "attn", nn::Score::additive, H, C, c.attention_dim);
    model.f_beta = nn::load_linear(file, t + "f_beta", H, 1);
    if (c.global_feature) model.global_proj = nn::load_linear(file, t + "global_proj", C, emb);
    model.decoder = nn::load_lstm_cell(file, t + "decoder", emb + C + (c.global_feature ? emb : 0), H);
    model.L_h = nn::load_linear(file, t + "L_h", H, emb, /*with_bias=*/false);
    model.L_z = nn::load_linear(file, t + "L_z", C, emb, /*with_bias=*/false);

    model.bos = static_cast<int>(file.get_u32("tokenizer.target.bos_token_id"));
    model.eos = static_cast<int>(file.get_u32("tokenizer.target.eos_token_id"));
    check(model.bos < c.vocab && model.eos < c.vocab, "BOS/EOS ids are outside the captioner's vocabulary");
    return model;
}

std::vector<CaptionDecoderWeights> load_caption_decoders(const gguf::File& file) {
    check_architecture(file, kArchitecture, "a captioner");
    const uint32_t count = file.get_u32_or(std::string(kArchitecture) + ".ensemble_size", 1);
    check(count >= 1 && count <= kMaxEnsembleSize,
          "attnlab.captioner.ensemble_size must be 1.." + std::to_string(kMaxEnsembleSize));
    std::vector<CaptionDecoderWeights> members;
    for (uint32_t k = 0; k < count; ++k) members.push_back(load_caption_decoder(file, static_cast<int>(k)));
    return members;
}

CaptionEncoded caption_prepare(const CaptionDecoderWeights& model, Matrix annotations) {
    const CaptionerConfig& c = model.config;
    const int G = c.grid(), C = c.feature_size, H = c.hidden;
    check(annotations.dimension() == 2 && static_cast<int>(annotations.shape()[0]) == G &&
              static_cast<int>(annotations.shape()[1]) == C,
          "the captioner expects a grid of " + std::to_string(G) + " × " + std::to_string(C) + " features, got " +
              std::to_string(annotations.shape()[0]) + " × " + std::to_string(annotations.shape()[1]));
    const float* a = annotations.data();
    for (std::size_t i = 0; i < annotations.size(); ++i)
        check(std::isfinite(a[i]), "the image features contain a NaN or infinity");

    // ā = mean_i a_i, accumulated in double: the sum of 49 values of up to 6 is exact enough either way, but
    // this keeps the mean independent of the summation order.
    std::vector<float> mean(static_cast<std::size_t>(C));  // [C]
    for (int j = 0; j < C; ++j) {
        double sum = 0.0;
        for (int i = 0; i < G; ++i) sum += a[std::size_t(i) * C + j];
        mean[j] = static_cast<float>(sum / G);
    }
    CaptionEncoded out;
    if (c.global_feature) {
        out.global = Vector::from_shape({static_cast<std::size_t>(c.embedding)});
        nn::linear(model.global_proj, mean.data(), 1, out.global.data());
        kernels::activate(out.global.data(), out.global.size(), kernels::Activation::relu);
    }
    if (c.center_grid) {
        float* cells = annotations.data();
        for (int i = 0; i < G; ++i)
            for (int j = 0; j < C; ++j) cells[std::size_t(i) * C + j] -= mean[j];
    }
    out.keys = nn::prepare_keys(model.attention, annotations);
    if (c.learned_initial_state) {
        out.h0 = model.initial_h;
        out.c0 = model.initial_c;
    } else {
        out.h0 = Vector::from_shape({static_cast<std::size_t>(H)});
        out.c0 = Vector::from_shape({static_cast<std::size_t>(H)});
        nn::linear(model.init_h, mean.data(), 1, out.h0.data());
        nn::linear(model.init_c, mean.data(), 1, out.c0.data());
        kernels::activate(out.h0.data(), out.h0.size(), kernels::Activation::tanh);
        kernels::activate(out.c0.data(), out.c0.size(), kernels::Activation::tanh);
    }
    out.annotations = std::move(annotations);
    return out;
}

void caption_step(const CaptionDecoderWeights& model, const CaptionEncoded& encoded, int32_t token, const float* h,
                  const float* c, float* h_out, float* c_out, decode::StepOutput& out) {
    const CaptionerConfig& cfg = model.config;
    const int C = cfg.feature_size, emb = cfg.embedding;
    // The LSTM input is [E y_{t-1} ; z_t (; g_e)]; the embedding part is also the first term of the deep output.
    const std::size_t global_size = cfg.global_feature ? static_cast<std::size_t>(emb) : 0;
    check(encoded.global.size() >= global_size, "caption_step: the encoded image has no global feature");
    std::vector<float> lstm_input(static_cast<std::size_t>(emb + C) + global_size);  // [emb + C (+ emb)]
    float* embedded = lstm_input.data();
    float* gated_context = lstm_input.data() + emb;
    embedding_row(model.embedding, token, embedded);
    std::copy_n(encoded.global.data(), global_size, lstm_input.begin() + emb + C);

    nn::AttentionResult attention = nn::attend(model.attention, encoded.keys, h, encoded.annotations, nullptr);
    float beta = 0.0f;  // β_t = σ(w_β·h_{t-1} + b_β)
    nn::linear(model.f_beta, h, 1, &beta);
    beta = 1.0f / (1.0f + std::exp(-beta));
    for (int j = 0; j < C; ++j) gated_context[j] = beta * attention.context[j];

    nn::lstm_step(model.decoder, lstm_input.data(), h, c, h_out, c_out);

    // deep = E y_{t-1} + L_h h_t + L_z z_t   [emb]
    std::vector<float> deep(static_cast<std::size_t>(emb)), term(static_cast<std::size_t>(emb));
    nn::linear(model.L_h, h_out, 1, deep.data());
    nn::linear(model.L_z, gated_context, 1, term.data());
    for (int k = 0; k < emb; ++k) deep[k] += embedded[k] + term[k];

    out.logits.resize(static_cast<std::size_t>(cfg.vocab));
    nn::linear(model.embedding, deep.data(), 1, out.logits.data());   // L_o tied to E, bias b_o
    out.weights.assign(attention.weights.begin(), attention.weights.end());
    out.scores.assign(attention.scores.begin(), attention.scores.end());
}

CaptionDecoder::CaptionDecoder(std::vector<const CaptionDecoderWeights*> members, std::vector<CaptionEncoded> encoded)
    : members_(std::move(members)), encoded_(std::move(encoded)) {
    check(!members_.empty() && members_.size() == encoded_.size(), "CaptionDecoder: one encoded grid per member");
}

decode::StatePtr CaptionDecoder::initial_state() const {
    auto state = std::make_shared<CaptionState>();
    for (const CaptionEncoded& encoded : encoded_) {
        state->h.push_back(encoded.h0);
        state->c.push_back(encoded.c0);
    }
    return state;
}

decode::StatePtr CaptionDecoder::step(const decode::DecoderState& state, int32_t token, decode::StepOutput& out) const {
    const auto& previous = static_cast<const CaptionState&>(state);
    auto next = std::make_shared<CaptionState>();
    const std::size_t n = members_.size();
    decode::StepOutput member_out;
    std::vector<float> mean_probability;   // [V]
    for (std::size_t k = 0; k < n; ++k) {
        const std::size_t H = static_cast<std::size_t>(members_[k]->config.hidden);
        next->h.push_back(Vector::from_shape({H}));
        next->c.push_back(Vector::from_shape({H}));
        caption_step(*members_[k], encoded_[k], token, previous.h[k].data(), previous.c[k].data(), next->h[k].data(),
                     next->c[k].data(), n == 1 ? out : member_out);
        if (n == 1) break;
        const int V = static_cast<int>(member_out.logits.size());
        kernels::softmax_rows(1, V, member_out.logits.data(), V);
        if (k == 0) {
            mean_probability.assign(member_out.logits.size(), 0.0f);
            out.weights.assign(member_out.weights.size(), 0.0f);
            out.scores.assign(member_out.scores.size(), 0.0f);
        }
        const float share = 1.0f / static_cast<float>(n);
        for (std::size_t v = 0; v < mean_probability.size(); ++v) mean_probability[v] += share * member_out.logits[v];
        for (std::size_t i = 0; i < out.weights.size(); ++i) {
            out.weights[i] += share * member_out.weights[i];
            out.scores[i] += share * member_out.scores[i];
        }
    }
    if (n > 1) {
        out.logits.resize(mean_probability.size());
        for (std::size_t v = 0; v < mean_probability.size(); ++v) out.logits[v] = std::log(mean_probability[v]);
    }
    return next;
}

decode::SearchOptions caption_search_options(const CaptionDecoderWeights& model, int beam, int max_length,
                                             int no_repeat_ngram) {
    check(max_length >= 0 && max_length <= kMaxCaptionLength,
          "maxLength must be between 0 (the model's default) and " + std::to_string(kMaxCaptionLength));
    check(no_repeat_ngram == -1 || valid_no_repeat_ngram(no_repeat_ngram),
          "noRepeatNgram must be -1 (the model's default), 0 (off) or 2.." + std::to_string(decode::kMaxNoRepeatNgram) +
              ", got " + std::to_string(no_repeat_ngram));
    decode::SearchOptions options;
    options.beam = beam;
    options.length_penalty = 1.0f;
    // A caption's length does not depend on the grid: a fixed limit, like python/attnlab/nn/show_attend_tell.py.
    options.max_length_ratio = 0.0f;
    options.max_length_extra = max_length > 0 ? max_length : model.config.max_length;
    options.no_repeat_ngram = no_repeat_ngram >= 0 ? no_repeat_ngram : model.config.no_repeat_ngram;
    return options;
}

namespace {

decode::Hypothesis search_members(std::vector<const CaptionDecoderWeights*> members, const Matrix& annotations,
                                  int beam, int max_length, int no_repeat_ngram, bool record_tree) {
    decode::SearchOptions options = caption_search_options(*members.front(), beam, max_length, no_repeat_ngram);
    options.record_tree = record_tree;
    std::vector<CaptionEncoded> encoded;
    for (const CaptionDecoderWeights* member : members) encoded.push_back(caption_prepare(*member, annotations));
    const CaptionDecoder decoder(std::move(members), std::move(encoded));
    return decode::search(decoder, options);
}

}  // namespace

decode::Hypothesis caption_from_features(const CaptionDecoderWeights& model, const Matrix& annotations, int beam,
                                         int max_length, int no_repeat_ngram, bool record_tree) {
    return search_members({&model}, annotations, beam, max_length, no_repeat_ngram, record_tree);
}

decode::Hypothesis caption_from_features(const std::vector<CaptionDecoderWeights>& members, const Matrix& annotations,
                                         int beam, int max_length, int no_repeat_ngram, bool record_tree) {
    check(!members.empty(), "the captioner has no decoder");
    std::vector<const CaptionDecoderWeights*> pointers;
    for (const CaptionDecoderWeights& member : members) pointers.push_back(&member);
    return search_members(std::move(pointers), annotations, beam, max_length, no_repeat_ngram, record_tree);
}

Captioner load_captioner(const gguf::File& file) {
    Captioner out;
    out.decoders = load_caption_decoders(file);
    out.has_encoder = file.has("attnlab.mobilenet.layer_count");
    if (!out.has_encoder) return out;
    const std::string encoder = file.get_string_or("attnlab.captioner.encoder", "mobilenet_v2");
    check(encoder == "mobilenet_v2", "this captioner's image encoder '" + encoder + "' is not implemented");
    out.encoder = load_mobilenet_v2(file);
    // The grid the encoder produces must be the one the decoder was trained on: run the shape arithmetic on the
    // layer list instead of an image.
    int side = out.encoder.input_size;
    check(out.encoder.feature_layer >= 0 && out.encoder.feature_layer < static_cast<int>(out.encoder.layers.size()),
          "the encoder's feature layer is outside its layer list");
    for (int i = 0; i <= out.encoder.feature_layer; ++i) {
        const MobileNetLayer& layer = out.encoder.layers[i];
        side = kernels::conv_geometry(side, layer.kernel, layer.stride, layer.padding).out;
    }
    const CaptionerConfig& c = out.decoders.front().config;
    const int channels = out.encoder.layers[out.encoder.feature_layer].out_channels;
    check(side == c.grid_height && side == c.grid_width && channels == c.feature_size,
          "the encoder gives a " + std::to_string(side) + "×" + std::to_string(side) + "×" + std::to_string(channels) +
              " grid but the decoder expects " + std::to_string(c.grid_height) + "×" + std::to_string(c.grid_width) +
              "×" + std::to_string(c.feature_size));
    return out;
}

MobileNetOutput caption_encode(const Captioner& captioner, const uint8_t* rgba, std::size_t byte_count, int width,
                               int height, bool with_logits) {
    check(captioner.has_encoder, "this captioner file has no image encoder (it was exported with --no-encoder)");
    image::validate_rgba(byte_count, width, height);
    const Tensor3 input = image::preprocess_rgba(rgba, byte_count, width, height, captioner.encoder.input_size);
    return mobilenet_forward(captioner.encoder, input, with_logits);
}

}  // namespace attnlab::models
