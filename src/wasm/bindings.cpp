// The embind front end; the JS module (web/lib) is its only caller. Every entry point turns a C++ exception into
// a JS Error with the message after the module's "attnlab: " prefix and a `code` from the error's kind, which
// web/lib/errors.mjs documents (with -fwasm-exceptions an escaping C++ exception would reach JS as an opaque
// WebAssembly.Exception).
#include <emscripten/bind.h>
#include <malloc.h>

#include <cstdint>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attnlab/attnlab.hpp"
#include "attnlab/error.hpp"
#include "attnlab/threads.hpp"
#include "beam_tree.hpp"
#include "guarded.hpp"
#include "speech.hpp"

using namespace emscripten;
using attnlab::wasm::guarded;
using attnlab::wasm::to_beam_tree;

namespace {

// Diagnostic (scripts/soak.mjs): malloc's bytes in use and the wasm memory size. The memory only grows, in big
// steps, so a slow leak shows in the first long before the second.
val engine_memory_js() {
    const struct mallinfo m = mallinfo();
    val out = val::object();
    out.set("mallocBytes", static_cast<double>(m.uordblks));
    out.set("wasmBytes", static_cast<double>(__builtin_wasm_memory_size(0)) * 65536.0);
    return out;
}

val engine_info_js() {
    const attnlab::EngineInfo info = attnlab::engine_info();
    val out = val::object();
    out.set("version", info.version);
    out.set("simd", info.simd);
    out.set("wasm", info.wasm);
    out.set("threads", attnlab::threads());        // what the matrix products run on now
    out.set("maxThreads", attnlab::max_threads());
#ifdef __EMSCRIPTEN_PTHREADS__
    out.set("build", std::string("threaded"));       // web/dist/attnlab-mt.*
#else
    out.set("build", std::string("single-thread"));  // web/dist/attnlab.*
#endif
    const attnlab::Limits l = attnlab::limits();
    val limits = val::object();
    limits.set("maxBeam", l.max_beam);
    limits.set("maxTextBytes", l.max_text_bytes);
    limits.set("maxSourceTokens", l.max_source_tokens);
    limits.set("maxTranslationLength", l.max_translation_length);
    limits.set("maxCaptionLength", l.max_caption_length);
    limits.set("minNoRepeatNgram", l.min_no_repeat_ngram);
    limits.set("maxNoRepeatNgram", l.max_no_repeat_ngram);
    limits.set("maxImageSide", l.max_image_side);
    out.set("limits", limits);
    return out;
}

// Bytes headed for the engine: JS fills view() in place, so a model file is copied once, not twice.
class ByteBuffer {
public:
    explicit ByteBuffer(double size) {
        guarded(attnlab::ErrorKind::input, [&] {
            attnlab::check(size >= 0 && size <= 2.0e9, "buffer size out of range");
            bytes_.resize(static_cast<std::size_t>(size));
            return 0;
        });
    }
    val view() { return val(typed_memory_view(bytes_.size(), bytes_.data())); }
    std::vector<uint8_t> take() { return std::move(bytes_); }

private:
    std::vector<uint8_t> bytes_;
};

template <typename T>
val to_array(const std::vector<T>& items) {
    val out = val::array();
    for (std::size_t i = 0; i < items.size(); ++i) out.set(i, items[i]);
    return out;
}

// A Transformer attention tensor: {layers, heads, rows, cols, data: Float32Array [layers·heads·rows·cols]}.
val to_attention_tensor(const attnlab::AttentionTensor& t) {
    val data = val::global("Float32Array").new_(t.data.size());
    data.call<void>("set", val(typed_memory_view(t.data.size(), t.data.data())));
    val out = val::object();
    out.set("layers", t.layers);
    out.set("heads", t.heads);
    out.set("rows", t.rows);
    out.set("cols", t.cols);
    out.set("data", data);
    return out;
}

// A row-major [rows × cols] matrix as a Float32Array copy plus its shape.
val to_matrix(const std::vector<float>& values, std::size_t rows, std::size_t cols) {
    val data = val::global("Float32Array").new_(values.size());
    data.call<void>("set", val(typed_memory_view(values.size(), values.data())));
    val out = val::object();
    out.set("rows", rows);
    out.set("cols", cols);
    out.set("data", data);
    return out;
}

// One translation as the JS module returns it (web/lib/index.d.ts Translation).
val to_translation(const attnlab::Translation& t, bool beam_tree) {
    const std::size_t S = t.source_tokens.size(), T = t.target_tokens.size();
    val out = val::object();
    out.set("text", t.text);
    out.set("sourceTokens", to_array(t.source_tokens));
    out.set("targetTokens", to_array(t.target_tokens));
    out.set("sourceIds", to_array(t.source_ids));
    out.set("targetIds", to_array(t.target_ids));
    out.set("scoreFunction", t.score_function);
    out.set("attention", to_matrix(t.attention, T, S));
    out.set("scores", to_matrix(t.scores, T, S));
    const std::size_t dv = static_cast<std::size_t>(t.context_size);
    out.set("context", to_matrix(t.context, T, dv));
    out.set("values", to_matrix(t.values, S, dv));
    out.set("logProbability", t.log_probability);
    out.set("stopReason", std::string(t.stop_reason == attnlab::StopReason::eos ? "eos" : "maxLength"));
    val warnings = val::array();
    for (std::size_t i = 0; i < t.warnings.size(); ++i) {
        val warning = val::object();
        warning.set("code", t.warnings[i].code);
        warning.set("message", t.warnings[i].message);
        if (t.warnings[i].code == "UNKNOWN_INPUT") warning.set("share", t.warnings[i].share);
        if (t.warnings[i].code == "LOW_CONFIDENCE")
            warning.set("logProbabilityPerToken", t.warnings[i].log_probability_per_token);
        warnings.set(i, warning);
    }
    out.set("warnings", warnings);
    if (!t.encoder_self_attention.empty()) {  // Transformer models only
        out.set("encoderSelfAttention", to_attention_tensor(t.encoder_self_attention));
    }
    if (!t.cross_attention.empty()) {  // TranslateOptions::all_layers or raw_scores
        out.set("decoderSelfAttention", to_attention_tensor(t.decoder_self_attention));
        out.set("crossAttention", to_attention_tensor(t.cross_attention));
    }
    if (beam_tree) out.set("beamTree", to_beam_tree(t.beam_tree));
    if (!t.encoder_queries.empty()) {  // TranslateOptions::query_key
        out.set("encoderQueries", to_attention_tensor(t.encoder_queries));
        out.set("encoderKeys", to_attention_tensor(t.encoder_keys));
    }
    // TranslateOptions::query_key or raw_scores
    if (!t.encoder_self_scores.empty()) out.set("encoderSelfScores", to_attention_tensor(t.encoder_self_scores));
    if (!t.cross_scores.empty()) {  // TranslateOptions::raw_scores (a Float32Array holds the mask's -inf as is)
        out.set("decoderSelfScores", to_attention_tensor(t.decoder_self_scores));
        out.set("crossScores", to_attention_tensor(t.cross_scores));
    }
    return out;
}

class JsModel {
public:
    explicit JsModel(ByteBuffer& buffer) {
        guarded(attnlab::ErrorKind::model, [&] {
            model_ = attnlab::Model::from_bytes(buffer.take());
            return 0;
        });
    }

    val info() const {
        return guarded(attnlab::ErrorKind::model, [&] {
            val out = val::object();
            out.set("architecture", model_.architecture());
            out.set("task", model_.task());
            out.set("recognizesImages", model_.recognizes_images());
            val metadata = val::object();
            for (const auto& [key, value] : model_.metadata()) metadata.set(key, value);
            out.set("metadata", metadata);
            return out;
        });
    }

    val translate(const std::string& text, int beam, int max_length) const {
        return translate_with(text, beam, max_length, -1);
    }

    val translate_with(const std::string& text, int beam, int max_length, int no_repeat_ngram) const {
        return translate_with_tree(text, beam, max_length, no_repeat_ngram, false);
    }

    val translate_with_tree(const std::string& text, int beam, int max_length, int no_repeat_ngram,
                            bool beam_tree) const {
        return translate_with_extras(text, beam, max_length, no_repeat_ngram, beam_tree, false);
    }

    val translate_with_extras(const std::string& text, int beam, int max_length, int no_repeat_ngram,
                              bool beam_tree, bool query_key) const {
        return translate_with_scores(text, beam, max_length, no_repeat_ngram, beam_tree, query_key, false);
    }

    val translate_with_scores(const std::string& text, int beam, int max_length, int no_repeat_ngram,
                              bool beam_tree, bool query_key, bool raw_scores) const {
        return translate_with_layers(text, beam, max_length, no_repeat_ngram, beam_tree, query_key, raw_scores, false);
    }

    val translate_with_layers(const std::string& text, int beam, int max_length, int no_repeat_ngram,
                              bool beam_tree, bool query_key, bool raw_scores, bool all_layers) const {
        return translate_with_shortlist(text, beam, max_length, no_repeat_ngram, beam_tree, query_key, raw_scores,
                                        all_layers, false);
    }

    val translate_with_shortlist(const std::string& text, int beam, int max_length, int no_repeat_ngram,
                                 bool beam_tree, bool query_key, bool raw_scores, bool all_layers,
                                 bool use_shortlist) const {
        return guarded(attnlab::ErrorKind::input, [&] {
            const attnlab::TranslateOptions options = translate_options(beam, max_length, no_repeat_ngram, beam_tree,
                                                                        query_key, raw_scores, all_layers, use_shortlist);
            return to_translation(model_.translate(text, options), beam_tree);
        });
    }

    // The shortlist (a shortlist file's bytes) translate() uses when asked; replaces any loaded before.
    void set_shortlist(ByteBuffer& buffer) {
        guarded(attnlab::ErrorKind::model, [&] {
            attnlab::Shortlist shortlist = attnlab::Shortlist::from_bytes(buffer.take());
            model_.check_shortlist(shortlist);
            shortlist_ = std::move(shortlist);
            return 0;
        });
    }

    // { perSource, frequent } of the loaded shortlist, or null.
    val shortlist_info() const {
        if (!shortlist_) return val::null();
        val out = val::object();
        out.set("perSource", shortlist_->per_source());
        out.set("frequent", shortlist_->frequent());
        return out;
    }

    // texts: an array of strings -> an array of what translate() returns for each, translated together
    // (attnlab::Model::translate of several texts); a bad element throws naming its index ("texts[i]: ...").
    val translate_many(const val& texts, int beam, int max_length, int no_repeat_ngram, bool beam_tree) const {
        return translate_many_with_scores(texts, beam, max_length, no_repeat_ngram, beam_tree, false, false);
    }

    // The extras of translate()'s seventh form, so a batch that asks for them is still one call: raw scores come
    // from the batched search itself, query/key from the engine's one-sentence path, text by text inside it.
    val translate_many_with_scores(const val& texts, int beam, int max_length, int no_repeat_ngram, bool beam_tree,
                                   bool query_key, bool raw_scores) const {
        return translate_many_with_layers(texts, beam, max_length, no_repeat_ngram, beam_tree, query_key, raw_scores,
                                          false);
    }

    val translate_many_with_layers(const val& texts, int beam, int max_length, int no_repeat_ngram, bool beam_tree,
                                   bool query_key, bool raw_scores, bool all_layers) const {
        return translate_many_with_shortlist(texts, beam, max_length, no_repeat_ngram, beam_tree, query_key,
                                             raw_scores, all_layers, false);
    }

    val translate_many_with_shortlist(const val& texts, int beam, int max_length, int no_repeat_ngram,
                                      bool beam_tree, bool query_key, bool raw_scores, bool all_layers,
                                      bool use_shortlist) const {
        return guarded(attnlab::ErrorKind::input, [&] {
            attnlab::check(texts.isArray(), "the texts must be an array of strings");
            const std::size_t count = texts["length"].as<std::size_t>();
            std::vector<std::string> items(count);
            for (std::size_t i = 0; i < count; ++i) {
                const val item = texts[i];
                attnlab::check(item.isString(), "texts[" + std::to_string(i) + "]: the text must be a string");
                items[i] = item.as<std::string>();
            }
            const attnlab::TranslateOptions options = translate_options(beam, max_length, no_repeat_ngram, beam_tree,
                                                                        query_key, raw_scores, all_layers, use_shortlist);
            const std::vector<attnlab::Translation> translations = model_.translate(items, options);
            val out = val::array();
            for (std::size_t i = 0; i < translations.size(); ++i) out.set(i, to_translation(translations[i], beam_tree));
            return out;
        });
    }

    // rgba: a Uint8Array or Uint8ClampedArray of width × height × 4 bytes, copied into wasm memory in one set().
    val caption(const val& rgba, int width, int height, int beam, int max_length, int no_repeat_ngram) const {
        return caption_with_tree(rgba, width, height, beam, max_length, no_repeat_ngram, false);
    }

    val caption_with_tree(const val& rgba, int width, int height, int beam, int max_length, int no_repeat_ngram,
                          bool beam_tree) const {
        return caption_with_extras(rgba, width, height, beam, max_length, no_repeat_ngram, beam_tree, false);
    }

    val caption_with_extras(const val& rgba, int width, int height, int beam, int max_length, int no_repeat_ngram,
                            bool beam_tree, bool recognize) const {
        return guarded(attnlab::ErrorKind::input, [&] {
            attnlab::check(rgba.instanceof(val::global("Uint8Array")) || rgba.instanceof(val::global("Uint8ClampedArray")),
                           "the image pixels must be a Uint8Array or Uint8ClampedArray");
            // Sides first, so width · height · 4 cannot overflow wasm's 32-bit size_t.
            const int max_side = attnlab::limits().max_image_side;
            attnlab::check(width > 0 && height > 0 && width <= max_side && height <= max_side,
                           "the image must be 1 to " + std::to_string(max_side) +
                               " pixels a side, got " + std::to_string(width) + " × " + std::to_string(height));
            const std::size_t bytes = static_cast<std::size_t>(width) * static_cast<std::size_t>(height) * 4;
            const double length = rgba["length"].as<double>();
            attnlab::check(length == static_cast<double>(bytes),
                           "the image has " + std::to_string(static_cast<long long>(length)) +
                               " bytes, width × height × 4 = " + std::to_string(bytes) + " expected");
            std::vector<uint8_t> pixels(bytes);
            val(typed_memory_view(pixels.size(), pixels.data())).call<void>("set", rgba);

            attnlab::CaptionOptions options;
            options.beam = beam;
            options.max_length = max_length;
            options.no_repeat_ngram = no_repeat_ngram;
            options.beam_tree = beam_tree;
            options.recognize = recognize;
            const attnlab::Caption c = model_.caption(pixels.data(), width, height, options);
            const std::size_t T = c.tokens.size();
            const std::size_t cells = static_cast<std::size_t>(c.grid_height) * static_cast<std::size_t>(c.grid_width);
            val out = val::object();
            out.set("text", c.text);
            out.set("tokens", to_array(c.tokens));
            out.set("ids", to_array(c.ids));
            out.set("attention", to_matrix(c.attention, T, cells));
            out.set("scores", to_matrix(c.scores, T, cells));
            out.set("gridWidth", c.grid_width);
            out.set("gridHeight", c.grid_height);
            out.set("logProbability", c.log_probability);
            if (beam_tree) out.set("beamTree", to_beam_tree(c.beam_tree));
            if (recognize) {
                val recognized = val::array();
                for (std::size_t i = 0; i < c.recognized.size(); ++i) {
                    val r = val::object();
                    r.set("label", c.recognized[i].label);
                    r.set("index", c.recognized[i].index);
                    r.set("probability", c.recognized[i].probability);
                    recognized.set(i, r);
                }
                out.set("recognized", recognized);
            }
            return out;
        });
    }

    // The speech recognizer's calls (speech.cpp): on this Model, so a speech file is loaded once.
    val transcribe(const val& samples, int sample_rate, int beam, float ctc_weight, float lm_weight) const {
        return attnlab::wasm::transcribe_samples(model_, samples, sample_rate, beam, ctc_weight, lm_weight, false);
    }
    val transcribe_with_tree(const val& samples, int sample_rate, int beam, float ctc_weight, float lm_weight,
                             bool beam_tree) const {
        return attnlab::wasm::transcribe_samples(model_, samples, sample_rate, beam, ctc_weight, lm_weight, beam_tree);
    }
    val transcribe_file(const val& bytes, int beam, float ctc_weight, float lm_weight) const {
        return attnlab::wasm::transcribe_file(model_, bytes, beam, ctc_weight, lm_weight, false);
    }
    val transcribe_file_with_tree(const val& bytes, int beam, float ctc_weight, float lm_weight, bool beam_tree) const {
        return attnlab::wasm::transcribe_file(model_, bytes, beam, ctc_weight, lm_weight, beam_tree);
    }

private:
    attnlab::TranslateOptions translate_options(int beam, int max_length, int no_repeat_ngram, bool beam_tree,
                                                bool query_key, bool raw_scores, bool all_layers,
                                                bool use_shortlist) const {
        attnlab::check(!use_shortlist || shortlist_.has_value(),
                       "no shortlist is loaded (loadModel's shortlist option)", attnlab::ErrorKind::options);
        attnlab::TranslateOptions options;
        options.beam = beam;
        options.max_length = max_length;
        options.no_repeat_ngram = no_repeat_ngram;
        options.beam_tree = beam_tree;
        options.query_key = query_key;
        options.raw_scores = raw_scores;
        options.all_layers = all_layers;
        options.shortlist = use_shortlist ? &*shortlist_ : nullptr;
        return options;
    }

    attnlab::Model model_;
    std::optional<attnlab::Shortlist> shortlist_;
};

}  // namespace

EMSCRIPTEN_BINDINGS(attnlab) {
    function("engineInfo", &engine_info_js);
    function("engineMemory", &engine_memory_js);
    function("setThreads", +[](int n) { guarded(attnlab::ErrorKind::options, [&] { attnlab::set_threads(n); }); });
    class_<ByteBuffer>("ByteBuffer").constructor<double>().function("view", &ByteBuffer::view);
    class_<JsModel>("Model")
        .constructor<ByteBuffer&>()
        .function("info", &JsModel::info)
        .function("translate", &JsModel::translate)
        .function("translate", &JsModel::translate_with)
        .function("translate", &JsModel::translate_with_tree)
        .function("translate", &JsModel::translate_with_extras)
        .function("translate", &JsModel::translate_with_scores)
        .function("translate", &JsModel::translate_with_layers)
        .function("translate", &JsModel::translate_with_shortlist)
        .function("setShortlist", &JsModel::set_shortlist)
        .function("shortlistInfo", &JsModel::shortlist_info)
        .function("translateMany", &JsModel::translate_many)
        .function("translateMany", &JsModel::translate_many_with_scores)
        .function("translateMany", &JsModel::translate_many_with_layers)
        .function("translateMany", &JsModel::translate_many_with_shortlist)
        .function("caption", &JsModel::caption)
        .function("caption", &JsModel::caption_with_tree)
        .function("caption", &JsModel::caption_with_extras)
        .function("transcribe", &JsModel::transcribe)
        .function("transcribe", &JsModel::transcribe_with_tree)
        .function("transcribeFile", &JsModel::transcribe_file)
        .function("transcribeFile", &JsModel::transcribe_file_with_tree);
}
