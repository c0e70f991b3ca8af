#include "attnlab/attnlab.hpp"

#include <algorithm>
#include <optional>

#include "attnlab/decode/search.hpp"
#include "attnlab/error.hpp"
#include "attnlab/image/preprocess.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/models/captioner.hpp"
#include "attnlab/models/rnn_seq2seq.hpp"
#include "attnlab/models/transformer.hpp"
#include "attnlab/text/tokenizer.hpp"

namespace attnlab {

EngineInfo engine_info() {
#ifdef __EMSCRIPTEN__
    constexpr bool is_wasm = true;
#else
    constexpr bool is_wasm = false;
#endif
    return EngineInfo{ATTNLAB_VERSION, kernels::simd_name(), is_wasm};
}

struct Model::Impl {
    gguf::File file;
    std::string architecture;
    std::string task;
    std::optional<models::RnnSeq2Seq> rnn;
    std::optional<models::Captioner> captioner;
    std::optional<models::Transformer> transformer;
    std::optional<text::Tokenizer> source_tokenizer;
    std::optional<text::Tokenizer> target_tokenizer;

    explicit Impl(gguf::File f) : file(std::move(f)) {
        architecture = file.get_string_or("general.architecture", "");
        task = file.get_string_or("attnlab.task", "");
        if (architecture == "attnlab.bahdanau") {
            rnn = models::load_rnn_seq2seq(file);
            source_tokenizer = text::Tokenizer::from_gguf(file, "source");
            target_tokenizer = text::Tokenizer::from_gguf(file, "target");
            check(source_tokenizer->vocab_size() == rnn->config.source_vocab &&
                      target_tokenizer->vocab_size() == rnn->config.target_vocab,
                  "the tokenizers' vocabularies do not match the model's embedding tables");
        } else if (architecture == "attnlab.transformer") {
            transformer = models::load_transformer(file);
            source_tokenizer = text::Tokenizer::from_gguf(file, "source");
            target_tokenizer = text::Tokenizer::from_gguf(file, "target");
            check(source_tokenizer->vocab_size() == transformer->config.source_vocab &&
                      target_tokenizer->vocab_size() == transformer->config.target_vocab,
                  "the tokenizers' vocabularies do not match the model's embedding tables");
        } else if (architecture == "attnlab.captioner") {
            captioner = models::load_captioner(file);
            target_tokenizer = text::Tokenizer::from_gguf(file, "target");
            check(target_tokenizer->vocab_size() == captioner->decoder.config.vocab,
                  "the tokenizer's vocabulary does not match the captioner's embedding table");
        } else {
            fail(architecture.empty() ? "this GGUF file has no general.architecture: not an attnlab model"
                                      : "unsupported model architecture '" + architecture + "'");
        }
    }
};

Model Model::from_bytes(std::vector<uint8_t> bytes) {
    Model model;
    model.impl_ = std::make_shared<const Impl>(gguf::File::from_bytes(std::move(bytes)));
    return model;
}

Model Model::open(const std::string& path) {
    Model model;
    model.impl_ = std::make_shared<const Impl>(gguf::File::open(path));
    return model;
}

std::string Model::architecture() const { return impl_->architecture; }
std::string Model::task() const { return impl_->task; }
const gguf::File& Model::file() const { return impl_->file; }

std::vector<std::pair<std::string, std::string>> Model::metadata() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const std::string& key : impl_->file.keys()) out.emplace_back(key, impl_->file.describe(key));
    return out;
}

namespace {

AttentionTensor to_attention_tensor(const Tensor4& t) {
    AttentionTensor out;
    out.layers = static_cast<int>(t.shape()[0]);
    out.heads = static_cast<int>(t.shape()[1]);
    out.rows = static_cast<int>(t.shape()[2]);
    out.cols = static_cast<int>(t.shape()[3]);
    out.data.assign(t.data(), t.data() + t.size());
    return out;
}

// The Transformer's translate: the same input checks and search as the RNN's, plus the per-layer tensors.
Translation translate_transformer(const models::Transformer& model, const text::Tokenizer& source_tokenizer,
                                  const text::Tokenizer& target_tokenizer, const std::string& text,
                                  const TranslateOptions& options) {
    check(options.max_length >= 0, "maxLength must not be negative");
    Translation result;
    result.source_ids = source_tokenizer.encode(text);
    const bool eos = model.config.source_eos;
    if (eos) result.source_ids.push_back(model.eos);
    check(static_cast<int>(result.source_ids.size()) - (eos ? 1 : 0) > 0, "nothing to translate: the input is empty");
    check(static_cast<int>(result.source_ids.size()) <= kMaxSourceTokens,
          "the input is too long: " + std::to_string(result.source_ids.size()) + " tokens, at most " +
              std::to_string(kMaxSourceTokens) + " are accepted");
    decode::SearchOptions search;
    search.beam = options.beam;
    search.length_penalty = options.length_penalty;
    if (options.max_length > 0) {
        search.max_length_ratio = 0.0f;
        search.max_length_extra = options.max_length;
    }
    const models::TransformerEncoded encoded = models::transformer_encode(model, result.source_ids);
    const models::TransformerDecoder decoder(model, encoded);
    decode::Hypothesis best = decode::search(decoder, search);

    result.target_ids = std::move(best.tokens);
    result.text = target_tokenizer.decode(result.target_ids);
    result.source_tokens = source_tokenizer.pieces_of(result.source_ids);
    result.target_tokens = target_tokenizer.pieces_of(result.target_ids);
    for (const auto& row : best.attention) result.attention.insert(result.attention.end(), row.begin(), row.end());
    for (const auto& row : best.scores) result.scores.insert(result.scores.end(), row.begin(), row.end());
    result.score_function = "scaled_dot";
    result.log_probability = best.log_probability;
    result.encoder_self_attention = to_attention_tensor(encoded.self_attention);
    Tensor4 decoder_self, cross;
    models::transformer_output_attention(model, encoded, result.target_ids, decoder_self, cross);
    result.decoder_self_attention = to_attention_tensor(decoder_self);
    result.cross_attention = to_attention_tensor(cross);
    return result;
}

}  // namespace

Translation Model::translate(const std::string& text, const TranslateOptions& options) const {
    const Impl& m = *impl_;
    // Identity normalization strips only U+0020, so a line of tabs or line breaks would otherwise be
    // "translated" from its byte pieces.
    check(text.find_first_not_of(" \t\n\r\f\v") != std::string::npos, "nothing to translate: the input is empty");
    if (m.transformer)
        return translate_transformer(*m.transformer, *m.source_tokenizer, *m.target_tokenizer, text, options);
    check(m.rnn.has_value(), "this model (" + m.architecture + ") cannot translate");
    check(options.max_length >= 0, "maxLength must not be negative");

    Translation result;
    result.source_ids = m.source_tokenizer->encode(text);
    if (m.rnn->config.source_eos) result.source_ids.push_back(m.rnn->eos);
    const int content_tokens = static_cast<int>(result.source_ids.size()) - (m.rnn->config.source_eos ? 1 : 0);
    check(content_tokens > 0, "nothing to translate: the input is empty");
    check(static_cast<int>(result.source_ids.size()) <= kMaxSourceTokens,
          "the input is too long: " + std::to_string(result.source_ids.size()) + " tokens, at most " +
              std::to_string(kMaxSourceTokens) + " are accepted");

    decode::SearchOptions search;
    search.beam = options.beam;
    search.length_penalty = options.length_penalty;
    if (options.max_length > 0) {
        search.max_length_ratio = 0.0f;
        search.max_length_extra = options.max_length;
    }
    const models::RnnEncoded encoded = models::rnn_encode(*m.rnn, result.source_ids);
    const models::RnnDecoder decoder(*m.rnn, encoded);
    decode::Hypothesis best = decode::search(decoder, search);

    result.target_ids = std::move(best.tokens);
    result.text = m.target_tokenizer->decode(result.target_ids);
    result.source_tokens = m.source_tokenizer->pieces_of(result.source_ids);
    result.target_tokens = m.target_tokenizer->pieces_of(result.target_ids);
    for (const auto& row : best.attention) result.attention.insert(result.attention.end(), row.begin(), row.end());
    for (const auto& row : best.scores) result.scores.insert(result.scores.end(), row.begin(), row.end());
    for (const auto& row : best.context) result.context.insert(result.context.end(), row.begin(), row.end());
    result.context_size = static_cast<int>(encoded.memory.shape(1));
    result.values.assign(encoded.memory.data(), encoded.memory.data() + encoded.memory.size());
    result.score_function = nn::score_name(m.rnn->config.score);
    result.log_probability = best.log_probability;
    return result;
}

namespace {

Caption caption_grid(const models::Captioner& captioner, const text::Tokenizer& tokenizer, const Matrix& grid,
                     const CaptionOptions& options) {
    const decode::Hypothesis best = models::caption_from_features(captioner.decoder, grid, options.beam, options.max_length);
    Caption result;
    result.ids = best.tokens;
    result.text = tokenizer.decode(result.ids);
    result.tokens = tokenizer.pieces_of(result.ids);
    for (const auto& row : best.attention) result.attention.insert(result.attention.end(), row.begin(), row.end());
    result.grid_height = captioner.decoder.config.grid_height;
    result.grid_width = captioner.decoder.config.grid_width;
    result.log_probability = best.log_probability;
    return result;
}

}  // namespace

Caption Model::caption(const uint8_t* rgba, int width, int height, const CaptionOptions& options) const {
    const Impl& m = *impl_;
    check(m.captioner.has_value(), "this model (" + m.architecture + ") cannot caption images");
    check(rgba != nullptr && width > 0 && height > 0, "the image is empty");
    // Checked before width · height · 4 is computed: that product overflows wasm's 32-bit size_t for huge sides.
    check(width <= image::kMaxImageSide && height <= image::kMaxImageSide,
          "the image is too large: " + std::to_string(width) + " × " + std::to_string(height) + ", at most " +
              std::to_string(image::kMaxImageSide) + " pixels a side");
    const std::size_t bytes = static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 4;
    const Matrix grid = models::caption_encode(*m.captioner, rgba, bytes, width, height);
    return caption_grid(*m.captioner, *m.target_tokenizer, grid, options);
}

Caption Model::caption_features(const float* features, int grid_cells, int feature_size,
                                const CaptionOptions& options) const {
    const Impl& m = *impl_;
    check(m.captioner.has_value(), "this model (" + m.architecture + ") cannot caption images");
    const models::CaptionerConfig& c = m.captioner->decoder.config;
    check(features != nullptr && grid_cells == c.grid() && feature_size == c.feature_size,
          "the captioner expects " + std::to_string(c.grid()) + " × " + std::to_string(c.feature_size) +
              " features, got " + std::to_string(grid_cells) + " × " + std::to_string(feature_size));
    Matrix grid = Matrix::from_shape({static_cast<std::size_t>(grid_cells), static_cast<std::size_t>(feature_size)});
    std::copy(features, features + grid.size(), grid.data());
    return caption_grid(*m.captioner, *m.target_tokenizer, grid, options);
}

}  // namespace attnlab
