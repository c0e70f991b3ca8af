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
constexpr int kMaxCaptionLength = 200;

struct CaptionState : decode::DecoderState {
    Vector h, c;  // [H]
};

}  // namespace

CaptionDecoderWeights load_caption_decoder(const gguf::File& file) {
    check_architecture(file, kArchitecture, "a captioner");
    const std::string p = std::string(kArchitecture) + ".";
    CaptionDecoderWeights model;
    CaptionerConfig& c = model.config;
    c.vocab = metadata_size(file, p + "vocab_size");
    c.feature_size = metadata_size(file, p + "feature_size");
    c.grid_height = metadata_size(file, p + "grid_height");
    c.grid_width = metadata_size(file, p + "grid_width");
    check(c.grid_height <= 1024 && c.grid_width <= 1024, "the captioner's annotation grid is implausibly large");
    c.embedding = metadata_size(file, p + "embedding_size");
    c.hidden = metadata_size(file, p + "hidden_size");
    c.attention_dim = metadata_size(file, p + "attention_size");
    c.max_length = static_cast<int>(file.get_u32_or(p + "max_length", 30));
    check(c.max_length > 0 && c.max_length <= kMaxCaptionLength, "attnlab.captioner.max_length must be 1.." +
                                                                     std::to_string(kMaxCaptionLength));
    check(file.get_string_or(p + "score", "additive") == "additive" && file.get_string_or(p + "gate", "scalar") == "scalar" &&
              file.get_string_or(p + "deep_output", "linear") == "linear",
          "this captioner uses an attention, gate or deep output the engine does not implement");
    const std::string annotations = file.get_string_or(p + "annotations", "raw");
    const std::string global = file.get_string_or(p + "global_feature", "none");
    check(annotations == "raw" || annotations == "centered",
          "this captioner's annotations are '" + annotations + "', which the engine does not implement");
    check(global == "none" || global == "grid_mean",
          "this captioner's global feature is '" + global + "', which the engine does not implement");
    c.center_grid = annotations == "centered";
    c.global_feature = global == "grid_mean";

    const int C = c.feature_size, H = c.hidden, emb = c.embedding;
    model.embedding = nn::load_linear_tensors(file, "embed.weight", "", emb, c.vocab);
    model.embedding.bias = nn::load_vector(file, "out_bias", c.vocab);
    model.init_h = nn::load_linear(file, "init_h", C, H);
    model.init_c = nn::load_linear(file, "init_c", C, H);
    model.attention = nn::load_attention(file, "attn", nn::Score::additive, H, C, c.attention_dim);
    model.f_beta = nn::load_linear(file, "f_beta", H, 1);
    if (c.global_feature) model.global_proj = nn::load_linear(file, "global_proj", C, emb);
    model.decoder = nn::load_lstm_cell(file, "decoder", emb + C + (c.global_feature ? emb : 0), H);
    model.L_h = nn::load_linear(file, "L_h", H, emb, /*with_bias=*/false);
    model.L_z = nn::load_linear(file, "L_z", C, emb, /*with_bias=*/false);

    model.bos = static_cast<int>(file.get_u32("tokenizer.target.bos_token_id"));
    model.eos = static_cast<int>(file.get_u32("tokenizer.target.eos_token_id"));
    check(model.bos < c.vocab && model.eos < c.vocab, "BOS/EOS ids are outside the captioner's vocabulary");
    return model;
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
    out.h0 = Vector::from_shape({static_cast<std::size_t>(H)});
    out.c0 = Vector::from_shape({static_cast<std::size_t>(H)});
    nn::linear(model.init_h, mean.data(), 1, out.h0.data());
    nn::linear(model.init_c, mean.data(), 1, out.c0.data());
    kernels::activate(out.h0.data(), out.h0.size(), kernels::Activation::tanh);
    kernels::activate(out.c0.data(), out.c0.size(), kernels::Activation::tanh);
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

decode::StatePtr CaptionDecoder::initial_state() const {
    auto state = std::make_shared<CaptionState>();
    state->h = encoded_.h0;
    state->c = encoded_.c0;
    return state;
}

decode::StatePtr CaptionDecoder::step(const decode::DecoderState& state, int32_t token, decode::StepOutput& out) const {
    const auto& previous = static_cast<const CaptionState&>(state);
    auto next = std::make_shared<CaptionState>();
    const std::size_t H = static_cast<std::size_t>(model_.config.hidden);
    next->h = Vector::from_shape({H});
    next->c = Vector::from_shape({H});
    caption_step(model_, encoded_, token, previous.h.data(), previous.c.data(), next->h.data(), next->c.data(), out);
    return next;
}

decode::SearchOptions caption_search_options(const CaptionDecoderWeights& model, int beam, int max_length) {
    check(max_length >= 0 && max_length <= kMaxCaptionLength,
          "maxLength must be between 0 (the model's default) and " + std::to_string(kMaxCaptionLength));
    decode::SearchOptions options;
    options.beam = beam;
    options.length_penalty = 1.0f;
    // A caption's length does not depend on the grid: a fixed limit, like models/show_attend_tell.py.
    options.max_length_ratio = 0.0f;
    options.max_length_extra = max_length > 0 ? max_length : model.config.max_length;
    return options;
}

decode::Hypothesis caption_from_features(const CaptionDecoderWeights& model, const Matrix& annotations, int beam,
                                         int max_length) {
    const decode::SearchOptions options = caption_search_options(model, beam, max_length);
    const CaptionEncoded encoded = caption_prepare(model, annotations);
    const CaptionDecoder decoder(model, encoded);
    return decode::search(decoder, options);
}

Captioner load_captioner(const gguf::File& file) {
    Captioner out;
    out.decoder = load_caption_decoder(file);
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
    const CaptionerConfig& c = out.decoder.config;
    const int channels = out.encoder.layers[out.encoder.feature_layer].out_channels;
    check(side == c.grid_height && side == c.grid_width && channels == c.feature_size,
          "the encoder gives a " + std::to_string(side) + "×" + std::to_string(side) + "×" + std::to_string(channels) +
              " grid but the decoder expects " + std::to_string(c.grid_height) + "×" + std::to_string(c.grid_width) +
              "×" + std::to_string(c.feature_size));
    return out;
}

Matrix caption_encode(const Captioner& captioner, const uint8_t* rgba, std::size_t byte_count, int width, int height) {
    check(captioner.has_encoder, "this captioner file has no image encoder (it was exported with --no-encoder)");
    image::validate_rgba(byte_count, width, height);
    const Tensor3 input = image::preprocess_rgba(rgba, byte_count, width, height, captioner.encoder.input_size);
    MobileNetOutput encoded = mobilenet_forward(captioner.encoder, input);
    return std::move(encoded.features);
}

}  // namespace attnlab::models
