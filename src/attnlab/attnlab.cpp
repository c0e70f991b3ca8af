#include "attnlab/attnlab.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>

#include "attnlab/audio/features.hpp"
#include "attnlab/audio/flac.hpp"
#include "attnlab/decode/search.hpp"
#include "attnlab/decode/shortlist.hpp"
#include "attnlab/decode/sentences.hpp"
#include "attnlab/error.hpp"
#include "attnlab/image/preprocess.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/models/captioner.hpp"
#include "attnlab/models/rnn_seq2seq.hpp"
#include "attnlab/models/speech_recognizer.hpp"
#include "attnlab/models/transformer.hpp"
#include "attnlab/parallel/pool.hpp"
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

Limits limits() {
    Limits l;
    l.max_beam = decode::kMaxBeam;
    l.max_text_bytes = kMaxTextBytes;
    l.max_source_tokens = kMaxSourceTokens;
    l.max_translation_length = kMaxTranslationLength;
    l.max_caption_length = models::kMaxCaptionLength;
    l.min_no_repeat_ngram = decode::kMinNoRepeatNgram;
    l.max_no_repeat_ngram = decode::kMaxNoRepeatNgram;
    l.max_image_side = image::kMaxImageSide;
    return l;
}

namespace {

// What an option accepts, as option_error() words it after "must be".
std::string accepted_values(Option option) {
    const Limits l = limits();
    const std::string ngram_range =
        "an integer from " + std::to_string(l.min_no_repeat_ngram) + " to " + std::to_string(l.max_no_repeat_ngram);
    switch (option) {
        case Option::beam: return "an integer from 1 to " + std::to_string(l.max_beam);
        case Option::translation_max_length:
            return "an integer from 0 (automatic) to " + std::to_string(l.max_translation_length);
        case Option::translation_no_repeat_ngram: return "-1 (the default), 0 (off) or " + ngram_range;
        case Option::caption_max_length:
            return "an integer from 0 (the model's default) to " + std::to_string(l.max_caption_length);
        case Option::caption_no_repeat_ngram: return "-1 (the model's default), 0 (off) or " + ngram_range;
    }
    return "";
}

}  // namespace

bool option_accepts(Option option, long long value) {
    const Limits l = limits();
    const bool ngram = value == -1 || value == 0 || (value >= l.min_no_repeat_ngram && value <= l.max_no_repeat_ngram);
    switch (option) {
        case Option::beam: return value >= 1 && value <= l.max_beam;
        case Option::translation_max_length: return value >= 0 && value <= l.max_translation_length;
        case Option::caption_max_length: return value >= 0 && value <= l.max_caption_length;
        case Option::translation_no_repeat_ngram:
        case Option::caption_no_repeat_ngram: return ngram;
    }
    return false;
}

std::string option_error(Option option, const std::string& name, const std::string& value) {
    return name + " must be " + accepted_values(option) + ", got " + value;
}

void check_option(Option option, const std::string& name, long long value) {
    if (!option_accepts(option, value)) fail(option_error(option, name, std::to_string(value)), ErrorKind::options);
}

const char* stop_reason_name(StopReason reason) { return reason == StopReason::eos ? "eos" : "max_length"; }

struct Model::Impl {
    gguf::File file;
    std::string architecture;
    std::string task;
    std::optional<models::RnnSeq2Seq> rnn;
    std::optional<models::Captioner> captioner;
    std::optional<models::Transformer> transformer;
    std::optional<models::SpeechRecognizer> speech;
    std::optional<text::Tokenizer> source_tokenizer;
    std::optional<text::Tokenizer> target_tokenizer;

    explicit Impl(gguf::File f) : file(std::move(f)) {
        architecture = file.get_string_or("general.architecture", "");
        task = file.get_string_or("attnlab.task", "");
        if (architecture == "attnlab.bahdanau") {
            rnn = models::load_rnn_seq2seq(file);
            load_translation_tokenizers(rnn->config.source_vocab, rnn->config.target_vocab);
        } else if (architecture == "attnlab.transformer") {
            transformer = models::load_transformer(file);
            load_translation_tokenizers(transformer->config.source_vocab, transformer->config.target_vocab);
        } else if (architecture == "attnlab.captioner") {
            captioner = models::load_captioner(file);
            target_tokenizer = text::Tokenizer::from_gguf(file, "target");
            check(target_tokenizer->vocab_size() == captioner->decoders.front().config.vocab,
                  "the tokenizer's vocabulary does not match the captioner's embedding table");
        } else if (architecture == "attnlab.las") {
            speech = models::load_speech_recognizer(file);
        } else {
            fail(architecture.empty() ? "this GGUF file has no general.architecture: not an attnlab model"
                                      : "unsupported model architecture '" + architecture + "'");
        }
    }

    void load_translation_tokenizers(int source_vocab, int target_vocab) {
        source_tokenizer = text::Tokenizer::from_gguf(file, "source");
        target_tokenizer = text::Tokenizer::from_gguf(file, "target");
        check(source_tokenizer->vocab_size() == source_vocab && target_tokenizer->vocab_size() == target_vocab,
              "the tokenizers' vocabularies do not match the model's embedding tables");
        source_fingerprint = decode::vocab_fingerprint(file.get_string_array("tokenizer.source.tokens"));
        target_fingerprint = decode::vocab_fingerprint(file.get_string_array("tokenizer.target.tokens"));
    }

    // What a translation shortlist must have been made for (decode::vocab_fingerprint of the tokenizers' pieces).
    uint64_t source_fingerprint = 0, target_fingerprint = 0;
};

namespace {

// Every error of reading a shortlist file is about the file (ErrorKind::model), named as a shortlist's.
template <class Read>
std::shared_ptr<const decode::Shortlist> read_shortlist(Read&& read) {
    try {
        return std::make_shared<const decode::Shortlist>(decode::load_shortlist(read()));
    } catch (const Error& e) {
        fail(std::string("shortlist: ") + e.what(), ErrorKind::model);
    }
}

}  // namespace

Shortlist Shortlist::from_bytes(std::vector<uint8_t> bytes) {
    Shortlist shortlist;
    shortlist.table_ = read_shortlist([&] { return gguf::File::from_bytes(std::move(bytes)); });
    return shortlist;
}

Shortlist Shortlist::open(const std::string& path) {
    Shortlist shortlist;
    shortlist.table_ = read_shortlist([&] { return gguf::File::open(path); });
    return shortlist;
}

int Shortlist::per_source() const { return table_->per_source; }
int Shortlist::frequent() const { return static_cast<int>(table_->frequent.size()); }

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

bool Model::recognizes_images() const {
    // The labels are optional in a MobileNetV2 file; naming classes needs one per class.
    if (!impl_->captioner.has_value() || !impl_->captioner->has_encoder) return false;
    const models::MobileNetV2& encoder = impl_->captioner->encoder;
    return encoder.has_classifier && int(encoder.labels.size()) == encoder.classifier.out;
}
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

// The source ids with the limits every translator shares: something to translate, and not too much of it.
std::vector<int32_t> encode_source(const text::Tokenizer& tokenizer, const std::string& text, bool add_eos, int eos) {
    // Identity normalization strips only U+0020, so a line of tabs or line breaks would otherwise be
    // "translated" from its byte pieces.
    if (text.size() > static_cast<std::size_t>(kMaxTextBytes))
        fail("the input is too long: " + std::to_string(text.size()) + " bytes, at most " +
             std::to_string(kMaxTextBytes) + " are accepted");
    check(text.find_first_not_of(" \t\n\r\f\v") != std::string::npos, "nothing to translate: the input is empty");
    std::vector<int32_t> ids = tokenizer.encode(text);
    check(!ids.empty(), "nothing to translate: the input is empty");
    if (add_eos) ids.push_back(eos);
    if (static_cast<int>(ids.size()) > kMaxSourceTokens)
        fail("the input is too long: " + std::to_string(ids.size()) + " tokens, at most " +
             std::to_string(kMaxSourceTokens) + " are accepted");
    return ids;
}

decode::SearchOptions search_options(const TranslateOptions& options) {
    check_option(Option::beam, "beam", options.beam);
    check_option(Option::translation_max_length, "maxLength", options.max_length);
    check_option(Option::translation_no_repeat_ngram, "noRepeatNgram", options.no_repeat_ngram);
    decode::SearchOptions search;
    search.beam = options.beam;
    search.length_penalty = options.length_penalty;
    search.no_repeat_ngram = options.no_repeat_ngram >= 0 ? options.no_repeat_ngram : kDefaultTranslationNoRepeatNgram;
    search.record_tree = options.beam_tree;
    if (options.max_length > 0) {
        search.max_length_ratio = 0.0f;
        search.max_length_extra = options.max_length;
    }
    return search;
}

// Byte-fallback pieces stand for characters the vocabulary lacks, as <unk> does where there are none.
bool unknown_piece(const text::Tokenizer& tokenizer, int32_t id) {
    const text::TokenType type = tokenizer.type_of(id);
    return type == text::TokenType::unknown || type == text::TokenType::byte;
}

// The warnings of a translation, from its source ids (with </s> when the model appends one), the mean log p of its
// output tokens and how it stopped.
std::vector<Warning> translation_warnings(const text::Tokenizer& source, const std::vector<int32_t>& source_ids,
                                          int source_eos, float log_probability_per_token, StopReason stop,
                                          int max_length) {
    std::vector<Warning> warnings;
    int pieces = 0, unknown = 0;
    for (int32_t id : source_ids) {
        if (id == source_eos) continue;
        ++pieces;
        unknown += unknown_piece(source, id) ? 1 : 0;
    }
    const float share = pieces > 0 ? static_cast<float>(unknown) / static_cast<float>(pieces) : 0.0f;
    if (unknown > 0 && share >= kUnknownInputWarningShare) {
        warnings.push_back({"UNKNOWN_INPUT",
                            std::to_string(unknown) + " of the " + std::to_string(pieces) +
                                " source pieces are unknown to the model's vocabulary (characters or a language it "
                                "was not trained on): the translation is likely meaningless",
                            share});
    }
    if (log_probability_per_token < kLowConfidenceLogProbability) {
        // The output's own number stays out of the message, so a text gets the same message alone and in a batch.
        char threshold[16];
        std::snprintf(threshold, sizeof threshold, "%g", static_cast<double>(kLowConfidenceLogProbability));
        warnings.push_back({"LOW_CONFIDENCE",
                            std::string("the model is unsure of this translation (its log-probability per token is "
                                        "below ") + threshold + "): the input is likely unlike the sentences it learned from",
                            0.0f, log_probability_per_token});
    }
    if (stop == StopReason::max_length) {
        warnings.push_back({"MAX_LENGTH",
                            "the translation stopped at the maximum length (" + std::to_string(max_length) +
                                " tokens) before the end of the sentence",
                            0.0f});
    }
    return warnings;
}

// The search's tree with each node's piece (pieces[i] for tree.nodes[i]).
BeamTree to_beam_tree(const decode::SearchTree& tree, const std::vector<std::string>& pieces) {
    BeamTree out;
    out.winner = tree.winner;
    out.nodes.reserve(tree.nodes.size());
    for (std::size_t i = 0; i < tree.nodes.size(); ++i) {
        const decode::TreeNode& n = tree.nodes[i];
        out.nodes.push_back({n.step, n.parent, n.token, pieces[i], n.log_probability, n.cumulative, n.score, n.finished});
    }
    return out;
}

// The search's tree with each token's piece.
BeamTree to_beam_tree(const decode::SearchTree& tree, const text::Tokenizer& tokenizer) {
    std::vector<int32_t> ids;
    ids.reserve(tree.nodes.size());
    for (const decode::TreeNode& node : tree.nodes) ids.push_back(node.token);
    return to_beam_tree(tree, tokenizer.pieces_of(ids));
}

template <typename Rows>
void append_rows(const Rows& rows, std::vector<float>& out) {
    for (const auto& row : rows) out.insert(out.end(), row.begin(), row.end());
}

}  // namespace

namespace {

// The tokenizers of a translator file.
struct Tokenizers {
    const text::Tokenizer& source;
    const text::Tokenizer& target;
};

// What a translator's search result decides in a Translation, alike for one text and for several.
void take_hypothesis(Translation& result, decode::Hypothesis&& best, Tokenizers tokenizers, int source_eos,
                     const decode::SearchOptions& search) {
    const text::Tokenizer &source = tokenizers.source, &target = tokenizers.target;
    result.target_ids = std::move(best.tokens);
    result.text = target.decode(result.target_ids);
    result.source_tokens = source.pieces_of(result.source_ids);
    result.target_tokens = target.pieces_of(result.target_ids);
    append_rows(best.attention, result.attention);
    append_rows(best.scores, result.scores);
    append_rows(best.context, result.context);
    result.log_probability = best.log_probability;
    result.beam_tree = to_beam_tree(best.tree, target);
    result.stop_reason = best.finished ? StopReason::eos : StopReason::max_length;
    // The end token's log p is in the sum when the search wrote it.
    const std::size_t scored = result.target_ids.size() + (best.finished ? 1 : 0);
    const float per_token = scored > 0 ? best.log_probability / static_cast<float>(scored) : 0.0f;
    result.warnings = translation_warnings(source, result.source_ids, source_eos, per_token, result.stop_reason,
                                           decode::max_target_length(search, static_cast<int>(result.source_ids.size())));
}

void take_encoding(Translation& result, const models::RnnSeq2Seq& model, const models::RnnEncoded& encoded,
                   const TranslateOptions& /*options*/) {
    result.context_size = static_cast<int>(encoded.memory.shape(1));
    result.values.assign(encoded.memory.data(), encoded.memory.data() + encoded.memory.size());
    result.score_function = nn::score_name(model.config.score);
}

void take_encoding(Translation& result, const models::Transformer& model, const models::TransformerEncoded& encoded,
                   const TranslateOptions& options) {
    result.score_function = nn::score_name(nn::Score::scaled_dot);
    result.encoder_self_attention = to_attention_tensor(encoded.self_attention);
    if (options.all_layers || options.raw_scores) {
        // The full per-layer tensors of the chosen output are recomputed once rather than carried by every beam
        // (a paragraph's translation spends an eighth of its time in this pass: only callers who ask pay for it).
        Tensor4 decoder_self, cross, decoder_self_scores, cross_scores;
        models::transformer_output_attention(model, encoded, result.target_ids, decoder_self, cross,
                                             options.raw_scores ? &decoder_self_scores : nullptr,
                                             options.raw_scores ? &cross_scores : nullptr);
        result.decoder_self_attention = to_attention_tensor(decoder_self);
        result.cross_attention = to_attention_tensor(cross);
        if (options.raw_scores) {
            result.decoder_self_scores = to_attention_tensor(decoder_self_scores);
            result.cross_scores = to_attention_tensor(cross_scores);
        }
    }
    if (encoded.queries.size() > 0) {  // TranslateOptions::query_key
        result.encoder_queries = to_attention_tensor(encoded.queries);
        result.encoder_keys = to_attention_tensor(encoded.keys);
    }
    if (encoded.self_scores.size() > 0) result.encoder_self_scores = to_attention_tensor(encoded.self_scores);
}

// The two translator families, told apart in one place: how a sentence is encoded, and the decoders over one
// encoded sentence and over several.
template <class Translator>
struct Family;

template <>
struct Family<models::RnnSeq2Seq> {
    using Encoded = models::RnnEncoded;
    using Decoder = models::RnnDecoder;
    using SentencesDecoder = models::RnnSentencesDecoder;
    static Encoded encode(const models::RnnSeq2Seq& model, const std::vector<int32_t>& ids, bool /*query_key*/,
                          bool /*raw_scores*/) {
        return models::rnn_encode(model, ids);
    }
};

template <>
struct Family<models::Transformer> {
    using Encoded = models::TransformerEncoded;
    using Decoder = models::TransformerDecoder;
    using SentencesDecoder = models::TransformerSentencesDecoder;
    static Encoded encode(const models::Transformer& model, const std::vector<int32_t>& ids, bool query_key,
                          bool raw_scores) {
        return models::transformer_encode(model, ids, query_key, raw_scores);
    }
};

template <class Translator>
int source_eos(const Translator& model) {
    return model.config.source_eos ? model.eos : -1;
}

template <class Translator>
std::vector<int32_t> source_ids(const Translator& model, const text::Tokenizer& tokenizer, const std::string& text) {
    return encode_source(tokenizer, text, model.config.source_eos, model.eos);
}

template <class Translator>
std::vector<Translation> translate_texts(const Translator& model, Tokenizers tokenizers,
                                         const std::vector<std::string>& texts, const TranslateOptions& options);

template <class Translator>
Translation translate_text(const Translator& model, Tokenizers tokenizers, const std::string& text,
                           const TranslateOptions& options) {
    // A shortlist restricts the batched decoders, which decode one sentence as the one-sentence path does.
    if (options.shortlist) return std::move(translate_texts(model, tokenizers, {text}, options).front());
    const decode::SearchOptions search = search_options(options);
    Translation result;
    result.source_ids = source_ids(model, tokenizers.source, text);
    const typename Family<Translator>::Encoded encoded =
        Family<Translator>::encode(model, result.source_ids, options.query_key, options.raw_scores);
    take_hypothesis(result, decode::search(typename Family<Translator>::Decoder(model, encoded), search), tokenizers,
                    source_eos(model), search);
    take_encoding(result, model, encoded, options);
    return result;
}

// The multiply-adds one source token costs the smallest shipped encoder (the Score functions tab's BiGRU, 2 x 128):
// what parallel::parallel_for weighs against handing a sentence to another thread.
constexpr double kEncoderWorkPerToken = 2e5;

// What filling in one translation from its search result weighs against handing it to another thread, in
// multiply-adds (~0.05 ms in wasm for a Multi30k sentence, bench/profile_api.sh --paragraphs; a Transformer's
// allLayers pass over its output is far more).
constexpr double kTakeWorkPerSentence = 1e5;

// An error about texts[index], naming it, of the same kind.
[[noreturn]] void fail_at(std::size_t index, const Error& error) {
    throw Error("texts[" + std::to_string(index) + "]: " + error.what(), error.kind());
}

template <class Translator>
std::vector<Translation> translate_texts(const Translator& model, Tokenizers tokenizers,
                                         const std::vector<std::string>& texts, const TranslateOptions& options) {
    using Encoded = typename Family<Translator>::Encoded;
    const decode::SearchOptions search = search_options(options);
    std::vector<Translation> results(texts.size());
    check(!(options.query_key && options.shortlist), "queryKey and shortlist cannot be asked together",
          ErrorKind::options);
    if (options.query_key) {  // the query/key extra comes from the one-sentence path only
        for (std::size_t i = 0; i < texts.size(); ++i) {
            try {
                results[i] = translate_text(model, tokenizers, texts[i], options);
            } catch (const Error& error) {
                fail_at(i, error);
            }
        }
        return results;
    }
    // Every text is checked before any is translated, so a bad one costs nothing.
    std::vector<int> lengths(texts.size());
    for (std::size_t i = 0; i < texts.size(); ++i) {
        try {
            results[i].source_ids = source_ids(model, tokenizers.source, texts[i]);
        } catch (const Error& error) {
            fail_at(i, error);
        }
        lengths[i] = static_cast<int>(results[i].source_ids.size());
    }
    for (const std::vector<int>& bucket : decode::length_buckets(lengths, search.beam)) {
        // The sentences are encoded side by side on the pool, each a task on one thread (its kernels split only
        // with threads that have no sentence left), which the per-sentence GEMMs, a dozen rows each, would not
        // divide well; the longest first (the bucket is in ascending length), so that the last one taken is
        // short. A shortlist's union and its rows of the output layer are one more task, after them: otherwise
        // they would run on one thread while the others wait.
        const int count = static_cast<int>(bucket.size());
        std::vector<Encoded> encoded(bucket.size());
        std::optional<decode::Columns> columns;
        std::optional<models::OutputColumns> output;
        double work = 0;
        for (int i : bucket) work += kEncoderWorkPerToken * double(lengths[i]);
        parallel::for_each_task(count + (options.shortlist ? 1 : 0), work / double(count), [&](int task) {
            if (task < count) {
                const int k = count - 1 - task;
                encoded[k] = Family<Translator>::encode(model, results[bucket[k]].source_ids, false, options.raw_scores);
                return;
            }
            std::vector<const std::vector<int32_t>*> sources;
            for (int i : bucket) sources.push_back(&results[i].source_ids);
            columns.emplace(decode::shortlist_union(options.shortlist->table(), sources, model.eos,
                                                    model.config.target_vocab),
                            model.config.target_vocab);
            output.emplace(model.target_embedding, &*columns);
        });
        if (!output) output.emplace(model.target_embedding, nullptr);
        std::vector<const Encoded*> sentences;
        for (const Encoded& sentence : encoded) sentences.push_back(&sentence);
        std::vector<decode::Hypothesis> best = decode::search_sentences(
            typename Family<Translator>::SentencesDecoder(model, sentences, std::move(*output)), search);
        // Each result is its own, so they are filled in side by side.
        parallel::for_each_item(count, kTakeWorkPerSentence, [&](int k) {
            Translation& result = results[bucket[k]];
            take_hypothesis(result, std::move(best[k]), tokenizers, source_eos(model), search);
            take_encoding(result, model, encoded[k], options);
        });
    }
    return results;
}

}  // namespace

void Model::check_shortlist(const Shortlist& shortlist) const {
    const Impl& m = *impl_;
    check(m.rnn || m.transformer, "this model (" + m.architecture + ") cannot translate, so it takes no shortlist",
          ErrorKind::task);
    const decode::Shortlist& table = shortlist.table();
    check(table.source_fingerprint == m.source_fingerprint && table.target_fingerprint == m.target_fingerprint,
          "this shortlist was made for other vocabularies than this model's (" + m.architecture +
              "): use the shortlist of the model's language pair",
          ErrorKind::model);
}

Translation Model::translate(const std::string& text, const TranslateOptions& options) const {
    const Impl& m = *impl_;
    check(m.rnn || m.transformer, "this model (" + m.architecture + ") cannot translate", ErrorKind::task);
    if (options.shortlist) check_shortlist(*options.shortlist);
    const Tokenizers tokenizers{*m.source_tokenizer, *m.target_tokenizer};
    return m.rnn ? translate_text(*m.rnn, tokenizers, text, options)
                 : translate_text(*m.transformer, tokenizers, text, options);
}

std::vector<Translation> Model::translate(const std::vector<std::string>& texts, const TranslateOptions& options) const {
    const Impl& m = *impl_;
    check(m.rnn || m.transformer, "this model (" + m.architecture + ") cannot translate", ErrorKind::task);
    if (options.shortlist) check_shortlist(*options.shortlist);
    const Tokenizers tokenizers{*m.source_tokenizer, *m.target_tokenizer};
    return m.rnn ? translate_texts(*m.rnn, tokenizers, texts, options)
                 : translate_texts(*m.transformer, tokenizers, texts, options);
}

namespace {

Caption caption_grid(const models::Captioner& captioner, const text::Tokenizer& tokenizer, const Matrix& grid,
                     const CaptionOptions& options) {
    check_option(Option::beam, "beam", options.beam);
    check_option(Option::caption_max_length, "maxLength", options.max_length);
    check_option(Option::caption_no_repeat_ngram, "noRepeatNgram", options.no_repeat_ngram);
    const decode::Hypothesis best =
        models::caption_from_features(captioner.decoders, grid, options.beam, options.max_length, options.no_repeat_ngram,
                                      options.beam_tree);
    Caption result;
    result.ids = best.tokens;
    result.text = tokenizer.decode(result.ids);
    result.tokens = tokenizer.pieces_of(result.ids);
    for (const auto& row : best.attention) result.attention.insert(result.attention.end(), row.begin(), row.end());
    for (const auto& row : best.scores) result.scores.insert(result.scores.end(), row.begin(), row.end());
    result.grid_height = captioner.decoders.front().config.grid_height;
    result.grid_width = captioner.decoders.front().config.grid_width;
    result.log_probability = best.log_probability;
    result.beam_tree = to_beam_tree(best.tree, tokenizer);
    return result;
}

// logits [classes] -> the kRecognizedClasses most probable classes, by softmax (ties: the lower index first).
std::vector<Recognition> top_classes(const models::MobileNetV2& encoder, const Vector& logits) {
    const int classes = int(logits.size());
    std::vector<float> probability(logits.begin(), logits.end());
    kernels::softmax_rows(1, classes, probability.data(), classes);
    std::vector<int> order(classes);
    for (int i = 0; i < classes; ++i) order[i] = i;
    const int k = std::min(kRecognizedClasses, classes);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) {
        return probability[a] > probability[b] || (probability[a] == probability[b] && a < b);
    });
    std::vector<Recognition> top;
    for (int i = 0; i < k; ++i) top.push_back({encoder.labels[order[i]], order[i], probability[order[i]]});
    return top;
}

}  // namespace

Caption Model::caption(const uint8_t* rgba, int width, int height, const CaptionOptions& options) const {
    const Impl& m = *impl_;
    check(m.captioner.has_value(), "this model (" + m.architecture + ") cannot caption images", ErrorKind::task);
    check(rgba != nullptr && width > 0 && height > 0, "the image is empty");
    // Checked before width · height · 4 is computed: that product overflows wasm's 32-bit size_t for huge sides.
    check(width <= image::kMaxImageSide && height <= image::kMaxImageSide,
          "the image is too large: " + std::to_string(width) + " × " + std::to_string(height) + ", at most " +
              std::to_string(image::kMaxImageSide) + " pixels a side");
    check(m.captioner->has_encoder, "this captioner file has no image encoder (it was exported with --no-encoder)",
          ErrorKind::model);
    const std::size_t bytes = static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 4;
    check(!options.recognize || recognizes_images(),
          "this captioner file has no ImageNet classifier with class names, so it cannot say what the image encoder "
          "recognises (recognize needs a file exported with it: models/captioner-flickr8k.md)",
          ErrorKind::model);
    const models::MobileNetOutput encoded =
        models::caption_encode(*m.captioner, rgba, bytes, width, height, options.recognize);
    Caption result = caption_grid(*m.captioner, *m.target_tokenizer, encoded.features, options);
    if (options.recognize) result.recognized = top_classes(m.captioner->encoder, encoded.logits);
    return result;
}

Caption Model::caption(const Image& image, const CaptionOptions& options) const {
    image::validate_rgba(image.pixels.size(), image.width, image.height);
    return caption(image.pixels.data(), image.width, image.height, options);
}

Caption Model::caption_features(const float* features, int grid_cells, int feature_size,
                                const CaptionOptions& options) const {
    const Impl& m = *impl_;
    check(m.captioner.has_value(), "this model (" + m.architecture + ") cannot caption images", ErrorKind::task);
    const models::CaptionerConfig& c = m.captioner->decoders.front().config;
    check(!options.recognize, "recognize needs the image, not its encoder grid", ErrorKind::options);
    check(features != nullptr && grid_cells == c.grid() && feature_size == c.feature_size,
          "the captioner expects " + std::to_string(c.grid()) + " × " + std::to_string(c.feature_size) +
              " features, got " + std::to_string(grid_cells) + " × " + std::to_string(feature_size));
    Matrix grid = Matrix::from_shape({static_cast<std::size_t>(grid_cells), static_cast<std::size_t>(feature_size)});
    std::copy(features, features + grid.size(), grid.data());
    return caption_grid(*m.captioner, *m.target_tokenizer, grid, options);
}

namespace {

Transcription transcribe_mfcc(const models::SpeechRecognizer& model, const Matrix& mfcc,
                              const TranscribeOptions& options) {
    const float ctc_weight = models::speech_ctc_weight(model, options.ctc_weight);
    const float lm_weight = models::speech_lm_weight(model, options.lm_weight);
    const models::SpeechEncoded encoded = models::listen(model, mfcc);
    const decode::Hypothesis best =
        models::recognize(model, encoded, options.beam, ctc_weight, lm_weight, options.beam_tree);

    Transcription out;
    out.ids = best.tokens;
    out.text = models::spell(model, best.tokens);
    for (int32_t id : best.tokens) out.characters.push_back(model.characters[static_cast<std::size_t>(id)]);
    out.frames = static_cast<int>(encoded.annotations.shape()[0]);
    out.frame_seconds = models::annotation_seconds(model.config);
    for (const std::vector<float>& row : best.attention) out.attention.insert(out.attention.end(), row.begin(), row.end());
    for (const std::vector<float>& row : best.scores) out.scores.insert(out.scores.end(), row.begin(), row.end());
    out.log_probability = best.log_probability;
    out.finished = best.finished;
    out.ctc_weight = ctc_weight;
    out.lm_weight = lm_weight;
    std::vector<std::string> pieces;
    pieces.reserve(best.tree.nodes.size());
    for (const decode::TreeNode& node : best.tree.nodes) pieces.push_back(model.characters[static_cast<std::size_t>(node.token)]);
    out.beam_tree = to_beam_tree(best.tree, pieces);
    return out;
}

const models::SpeechRecognizer& recognizer(const std::optional<models::SpeechRecognizer>& speech,
                                           const std::string& architecture) {
    check(speech.has_value(), "this model (" + architecture + ") cannot transcribe speech", ErrorKind::task);
    return *speech;
}

}  // namespace

Transcription Model::transcribe(const float* samples, std::size_t count, int sample_rate,
                                const TranscribeOptions& options) const {
    const models::SpeechRecognizer& model = recognizer(impl_->speech, impl_->architecture);
    check(samples != nullptr && count > 0, "the audio is empty");
    check(sample_rate > 0, "the sample rate must be positive, got " + std::to_string(sample_rate));
    const double seconds = static_cast<double>(count) / sample_rate;
    check(seconds <= kMaxTranscribeSeconds, "the audio is too long: " + std::to_string(static_cast<int>(seconds)) +
                                                " s, at most " + std::to_string(static_cast<int>(kMaxTranscribeSeconds)) +
                                                " s can be transcribed at once");
    const audio::Features features = audio::compute_features(samples, count, sample_rate);
    const int fewest = models::min_speech_frames(model.config);
    check(static_cast<int>(features.mfcc.shape()[0]) >= fewest,
          "the audio is too short: " + std::to_string(static_cast<int>(seconds * 1000)) +
              " ms; the recognizer needs at least " + std::to_string(fewest) + " feature frames (about " +
              std::to_string(((fewest - 1) * audio::kFrameShift + audio::kFrameLength) * 1000 / audio::kFeatureRate) +
              " ms)");
    Transcription out = transcribe_mfcc(model, features.mfcc, options);
    out.spectrogram_frames = static_cast<int>(features.log_mel.shape()[0]);
    out.spectrogram.assign(features.log_mel.data(), features.log_mel.data() + features.log_mel.size());
    return out;
}

Transcription Model::transcribe_file_bytes(const uint8_t* bytes, std::size_t size,
                                           const TranscribeOptions& options) const {
    (void)recognizer(impl_->speech, impl_->architecture);  // a translator is refused before its input is decoded
    const audio::Audio decoded = audio::parse_audio(bytes, size);
    return transcribe(decoded.samples.data(), decoded.samples.size(), decoded.sample_rate, options);
}

Transcription Model::transcribe_features(const float* mfcc, int frames, int coefficients,
                                         const TranscribeOptions& options) const {
    const models::SpeechRecognizer& model = recognizer(impl_->speech, impl_->architecture);
    check(mfcc != nullptr && frames > 0, "the features are empty");
    check(coefficients == model.config.feature_size,
          "the recognizer reads " + std::to_string(model.config.feature_size) + " coefficients per frame, got " +
              std::to_string(coefficients));
    Matrix x = Matrix::from_shape({static_cast<std::size_t>(frames), static_cast<std::size_t>(coefficients)});
    std::copy(mfcc, mfcc + x.size(), x.data());
    return transcribe_mfcc(model, x, options);
}

}  // namespace attnlab
