#include "attnlab/attnlab.hpp"

#include <optional>

#include "attnlab/decode/search.hpp"
#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/models/rnn_seq2seq.hpp"
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

Translation Model::translate(const std::string& text, const TranslateOptions& options) const {
    const Impl& m = *impl_;
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
    result.score_function = nn::score_name(m.rnn->config.score);
    result.log_probability = best.log_probability;
    return result;
}

}  // namespace attnlab
