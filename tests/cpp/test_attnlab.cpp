// attnlab.hpp's result and option contract: every translation says why it stopped and warns about input the model
// cannot know or a cut at the length limit; the default no-repeat n-gram rule keeps such input from looping; the
// option table accepts exactly what limits() says and words every refusal one way; errors carry the kind front
// ends turn into codes.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "attnlab/attnlab.hpp"
#include "attnlab/error.hpp"
#include "attnlab/image/decode.hpp"
#include "test_support.hpp"

using namespace attnlab;

namespace {

const Model& shipped_en_de() {
    static const Model model = Model::open(test::source_path("models/weights/bahdanau-en-de.q8_0.gguf"));
    return model;
}

const Model& shipped_transformer_en_de() {
    static const Model model = Model::open(test::source_path("models/weights/transformer-en-de.q8_0.gguf"));
    return model;
}

const Model& shipped_transformer_en_de_f16() {
    static const Model model = Model::open(test::source_path("models/weights/transformer-en-de.f16.gguf"));
    return model;
}

const Model& fixture_translator() {
    static const Model model = Model::open(test::source_path("tests/fixtures/rnn/additive.gguf"));
    return model;
}

const Warning* find_warning(const Translation& t, const std::string& code) {
    for (const Warning& w : t.warnings)
        if (w.code == code) return &w;
    return nullptr;
}

// The longest stretch in which the output repeats itself with a period of at most 4 tokens ("-T-T-T-T" is one
// stretch of period 2): the length of a loop.
int longest_loop(const std::vector<int32_t>& ids) {
    int longest = 0;
    for (std::size_t period = 1; period <= 4; ++period) {
        int run = 0;
        for (std::size_t i = period; i < ids.size(); ++i) {
            run = ids[i] == ids[i - period] ? run + 1 : 0;
            if (run > 0) longest = std::max(longest, run + static_cast<int>(period));
        }
    }
    return longest;
}

// Text the EN→DE models have no pieces for: Chinese and emoji become byte fallbacks.
const std::vector<std::string> kUnknownTexts = {"今天天气很好，我们去公园散步吧。", "我们在学习中文和德语。",
                                                "😀🎉🐶 🍕", "🙂🙃🙂🙃🙂🙃"};

}  // namespace

TEST_CASE("translate: an ordinary sentence stops at </s> with no warnings") {
    for (const Model* model : {&shipped_en_de(), &shipped_transformer_en_de()}) {
        const Translation t = model->translate("A dog runs on the beach.");
        CHECK(t.stop_reason == StopReason::eos);
        CHECK(t.warnings.empty());
        CHECK(std::string(stop_reason_name(t.stop_reason)) == "eos");
    }
    // One unknown name among known words stays below the UNKNOWN_INPUT share.
    const Translation named = shipped_en_de().translate("Zyxx and two men are playing soccer in a green park.");
    CHECK(find_warning(named, "UNKNOWN_INPUT") == nullptr);
}

TEST_CASE("translate: a cut at maxLength is stop_reason max_length with a MAX_LENGTH warning") {
    TranslateOptions options;
    options.max_length = 2;
    const Translation t = shipped_en_de().translate("Two men are playing soccer in a park.", options);
    REQUIRE(t.target_ids.size() == 2);
    CHECK(t.stop_reason == StopReason::max_length);
    CHECK(std::string(stop_reason_name(t.stop_reason)) == "max_length");
    const Warning* w = find_warning(t, "MAX_LENGTH");
    REQUIRE(w != nullptr);
    CHECK(w->message.find("maximum length (2 tokens)") != std::string::npos);
    CHECK(w->share == 0.0f);
    options.beam = 4;
    const Translation beam = shipped_en_de().translate("Two men are playing soccer in a park.", options);
    CHECK(beam.stop_reason == StopReason::max_length);
    CHECK(find_warning(beam, "MAX_LENGTH") != nullptr);
}

TEST_CASE("translate: Chinese or emoji into EN→DE warn UNKNOWN_INPUT with the share of unknown pieces") {
    for (const std::string& text : kUnknownTexts) {
        const Translation t = shipped_en_de().translate(text);
        const Warning* w = find_warning(t, "UNKNOWN_INPUT");
        REQUIRE_MESSAGE(w != nullptr, text);
        CHECK(w->share >= kUnknownInputWarningShare);
        CHECK(w->share <= 1.0f);
        CHECK(w->message.find("unknown to the model's vocabulary") != std::string::npos);
        CHECK(t.warnings.front().code == "UNKNOWN_INPUT");  // first, before MAX_LENGTH
    }
}

TEST_CASE("translate: LOW_CONFIDENCE exactly when the output's log p per token is below the threshold") {
    for (const Model* model : {&shipped_en_de(), &shipped_transformer_en_de()}) {
        for (const char* text : {"Hi", "A dog runs on the beach.", "Two men are playing soccer in a park."}) {
            for (int beam : {1, 4}) {
                TranslateOptions options;
                options.beam = beam;
                const Translation t = model->translate(text, options);
                REQUIRE(t.stop_reason == StopReason::eos);
                const float per_token = t.log_probability / static_cast<float>(t.target_ids.size() + 1);
                const Warning* w = find_warning(t, "LOW_CONFIDENCE");
                CAPTURE(text);
                CAPTURE(per_token);
                CHECK((w != nullptr) == (per_token < kLowConfidenceLogProbability));
                if (w != nullptr) {
                    CHECK(w->log_probability_per_token == doctest::Approx(per_token));
                    CHECK(w->message.find("unsure") != std::string::npos);
                }
            }
        }
    }
    // The RNN learned image descriptions and everyday sentences, not finance news (every piece is in its vocabulary:
    // no UNKNOWN_INPUT, only its own doubt): "Die Quadbirs-Firlers hat die Wunde von ..." at -2.4 per token.
    const Translation news =
        shipped_en_de().translate("The quarterly earnings exceeded the analysts forecasts by a wide margin.");
    CHECK(find_warning(news, "LOW_CONFIDENCE") != nullptr);
    CHECK(find_warning(news, "UNKNOWN_INPUT") == nullptr);
    CHECK(find_warning(shipped_en_de().translate("A dog runs on the beach."), "LOW_CONFIDENCE") == nullptr);
    CHECK(find_warning(shipped_en_de().translate("Hi"), "LOW_CONFIDENCE") == nullptr);  // "Hallo!": everyday now
}

TEST_CASE("translate: by default a repetition loop on unknown input is broken, with the rule off it is not") {
    REQUIRE(kDefaultTranslationNoRepeatNgram >= 2);
    const int bound = 4 + kDefaultTranslationNoRepeatNgram - 1;  // a loop of period p <= 4 repeats < n tokens
    int loop_without_rule = 0;
    for (const Model* model : {&shipped_en_de(), &shipped_transformer_en_de()}) {
        for (const std::string& text : kUnknownTexts) {
            const Translation t = model->translate(text);
            CHECK_MESSAGE(longest_loop(t.target_ids) <= bound, text);
            for (int beam : {1, 4}) {
                TranslateOptions off;
                off.beam = beam;
                off.no_repeat_ngram = 0;
                loop_without_rule = std::max(loop_without_rule, longest_loop(model->translate(text, off).target_ids));
            }
        }
    }
    // The rule is what breaks them: without it these inputs loop (the "-T-T-T-…", 58 tokens).
    CHECK(loop_without_rule >= 20);
}

TEST_CASE("translate: noRepeatNgram is an option like the others") {
    TranslateOptions options;
    for (int n : {-1, 0, 2, 8}) {
        options.no_repeat_ngram = n;
        CHECK_NOTHROW(fixture_translator().translate("A dog runs.", options));
    }
    for (int n : {-2, 1, 9}) {
        options.no_repeat_ngram = n;
        try {
            fixture_translator().translate("A dog runs.", options);
            FAIL("noRepeatNgram " << n << " was accepted");
        } catch (const Error& e) {
            CHECK(e.kind() == ErrorKind::options);
            CHECK(std::string(e.what()) ==
                  "noRepeatNgram must be -1 (the default), 0 (off) or an integer from 2 to 8, got " + std::to_string(n));
        }
    }
}

TEST_CASE("the option table: each range from limits(), one wording, ErrorKind::options") {
    const Limits l = limits();
    CHECK(option_accepts(Option::beam, 1));
    CHECK(option_accepts(Option::beam, l.max_beam));
    CHECK_FALSE(option_accepts(Option::beam, 0));
    CHECK_FALSE(option_accepts(Option::beam, l.max_beam + 1));
    CHECK(option_accepts(Option::translation_max_length, 0));
    CHECK(option_accepts(Option::translation_max_length, l.max_translation_length));
    CHECK_FALSE(option_accepts(Option::translation_max_length, -1));
    CHECK_FALSE(option_accepts(Option::translation_max_length, 1000000));
    CHECK(option_accepts(Option::caption_max_length, l.max_caption_length));
    CHECK_FALSE(option_accepts(Option::caption_max_length, l.max_caption_length + 1));
    for (Option o : {Option::translation_no_repeat_ngram, Option::caption_no_repeat_ngram}) {
        for (int n : {-1, 0, l.min_no_repeat_ngram, l.max_no_repeat_ngram}) CHECK(option_accepts(o, n));
        for (int n : {-2, 1, l.max_no_repeat_ngram + 1}) CHECK_FALSE(option_accepts(o, n));
    }
    CHECK(option_error(Option::beam, "beam", "65") == "beam must be an integer from 1 to 64, got 65");
    CHECK(option_error(Option::translation_max_length, "--max-length", "1000000") ==
          "--max-length must be an integer from 0 (automatic) to 1000, got 1000000");
    CHECK(option_error(Option::caption_max_length, "maxLength", "201") ==
          "maxLength must be an integer from 0 (the model's default) to 200, got 201");
    CHECK(option_error(Option::caption_no_repeat_ngram, "noRepeatNgram", "9") ==
          "noRepeatNgram must be -1 (the model's default), 0 (off) or an integer from 2 to 8, got 9");
    try {
        check_option(Option::beam, "beam", 0);
        FAIL("beam 0 was accepted");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::options);
        CHECK(std::string(e.what()) == "beam must be an integer from 1 to 64, got 0");
    }
}

TEST_CASE("errors carry their kind; error_code() gives the front ends' codes") {
    auto kind_of = [](auto&& call) {
        try {
            call();
        } catch (const Error& e) {
            return e.kind();
        }
        FAIL("no error");
        return ErrorKind::unspecified;
    };
    TranslateOptions wide;
    wide.beam = 65;
    CHECK(kind_of([&] { fixture_translator().translate("A dog.", wide); }) == ErrorKind::options);
    const Model captioner = Model::open(test::source_path("tests/fixtures/caption/tiny_model.gguf"));
    CHECK(kind_of([&] { captioner.translate("A dog."); }) == ErrorKind::task);
    const std::vector<uint8_t> grey(16 * 16 * 4, 128);
    CHECK(kind_of([&] { fixture_translator().caption(grey.data(), 16, 16); }) == ErrorKind::task);
    CHECK(kind_of([&] { captioner.caption(grey.data(), 16, 16); }) == ErrorKind::model);  // it has no image encoder
    CaptionOptions long_caption;
    long_caption.max_length = 201;
    const Model with_encoder = Model::open(test::source_path("tests/fixtures/caption/tiny_encoder_model.gguf"));
    CHECK(kind_of([&] { with_encoder.caption(grey.data(), 16, 16, long_caption); }) == ErrorKind::options);

    // Found deep inside (the tokenizer, the GGUF reader), kind unspecified: the entry point decides.
    const ErrorKind empty = kind_of([&] { fixture_translator().translate("  "); });
    CHECK(empty == ErrorKind::unspecified);
    CHECK(std::string(error_code(empty, ErrorKind::input)) == "ATTNLAB_BAD_INPUT");
    const ErrorKind garbage = kind_of([] { Model::from_bytes({'G', 'G', 'M', 'L', 0, 0, 0, 0}); });
    CHECK(std::string(error_code(garbage, ErrorKind::model)) == "ATTNLAB_BAD_MODEL");

    CHECK(std::string(error_code(ErrorKind::options, ErrorKind::input)) == "ATTNLAB_BAD_OPTIONS");
    CHECK(std::string(error_code(ErrorKind::task, ErrorKind::input)) == "ATTNLAB_WRONG_TASK");
    CHECK(std::string(error_code(ErrorKind::model, ErrorKind::input)) == "ATTNLAB_BAD_MODEL");
    CHECK(std::string(error_code(ErrorKind::unspecified, ErrorKind::unspecified)) == "ATTNLAB_INTERNAL");
}

namespace {

// The winner's path in a beam tree, pieces and ids, root first.
void winning_path(const BeamTree& tree, std::vector<int32_t>& ids, std::vector<std::string>& pieces) {
    ids.clear();
    pieces.clear();
    for (int n = tree.winner; n >= 0; n = tree.nodes.at(static_cast<std::size_t>(n)).parent) {
        ids.insert(ids.begin(), tree.nodes[n].id);
        pieces.insert(pieces.begin(), tree.nodes[n].piece);
    }
}

}  // namespace

TEST_CASE("beam_tree: only when asked; its winning path is the output, its pieces the output's, then </s>") {
    for (const Model* model : {&shipped_en_de(), &shipped_transformer_en_de()}) {
        for (int beam : {1, 4}) {
            CAPTURE(beam);
            TranslateOptions options;
            options.beam = beam;
            const Translation plain = model->translate("Two dogs are running through the snow.", options);
            CHECK(plain.beam_tree.nodes.empty());
            options.beam_tree = true;
            const Translation t = model->translate("Two dogs are running through the snow.", options);
            CHECK(t.target_ids == plain.target_ids);
            REQUIRE(t.stop_reason == StopReason::eos);
            std::vector<int32_t> ids;
            std::vector<std::string> pieces;
            winning_path(t.beam_tree, ids, pieces);
            REQUIRE(!pieces.empty());
            CHECK(pieces.back() == "</s>");
            ids.pop_back();
            pieces.pop_back();
            CHECK(ids == t.target_ids);
            CHECK(pieces == t.target_tokens);
            CHECK(t.beam_tree.nodes[t.beam_tree.winner].cumulative == doctest::Approx(t.log_probability).epsilon(1e-6));
            // Beam 1 keeps one path; a wider beam keeps more than the winner's nodes.
            if (beam == 1) CHECK(t.beam_tree.nodes.size() == t.target_ids.size() + 1);
            else CHECK(t.beam_tree.nodes.size() > t.target_ids.size() + 1);
        }
    }
    const Model captioner = Model::open(test::source_path("models/weights/captioner-flickr8k.q8_0.gguf"));
    const Image image = read_image(test::source_path("web/app/samples/cat.jpg"));
    CaptionOptions options;
    options.beam = 3;
    const Caption plain = captioner.caption(image, options);
    CHECK(plain.beam_tree.nodes.empty());
    options.beam_tree = true;
    const Caption c = captioner.caption(image, options);
    CHECK(c.ids == plain.ids);
    std::vector<int32_t> ids;
    std::vector<std::string> pieces;
    winning_path(c.beam_tree, ids, pieces);
    REQUIRE(ids.size() == c.ids.size() + 1);
    ids.pop_back();
    pieces.pop_back();
    CHECK(ids == c.ids);
    CHECK(pieces == c.tokens);
}

TEST_CASE("query_key: a Transformer's encoder queries and keys make its raw scores, whose softmax is its attention") {
    const Model& model = shipped_transformer_en_de();
    const Translation plain = model.translate("Two dogs are running through the snow.");
    CHECK(plain.encoder_queries.empty());
    CHECK(plain.encoder_self_scores.empty());
    TranslateOptions options;
    options.query_key = true;
    const Translation t = model.translate("Two dogs are running through the snow.", options);
    CHECK(t.target_ids == plain.target_ids);
    const AttentionTensor& a = t.encoder_self_attention;
    const AttentionTensor &q = t.encoder_queries, &k = t.encoder_keys, &s = t.encoder_self_scores;
    REQUIRE(q.layers == a.layers);
    REQUIRE(q.heads == a.heads);
    REQUIRE(q.rows == a.rows);
    REQUIRE(k.rows == a.rows);
    REQUIRE(q.cols > 0);
    REQUIRE(s.rows == a.rows);
    REQUIRE(s.cols == a.cols);
    const int S = a.rows, hd = q.cols;
    for (int l = 0; l < a.layers; ++l)
        for (int h = 0; h < a.heads; ++h) {
            const std::size_t head = std::size_t(l) * a.heads + h;
            for (int i = 0; i < S; ++i) {
                CAPTURE(l);
                CAPTURE(h);
                CAPTURE(i);
                const float* scores = s.data.data() + (head * S + i) * S;
                const float top = *std::max_element(scores, scores + S);
                double sum = 0;
                for (int j = 0; j < S; ++j) sum += std::exp(double(scores[j]) - top);
                for (int j = 0; j < S; ++j) {
                    double dot = 0;
                    for (int c = 0; c < hd; ++c)
                        dot += double(q.data[(head * S + i) * hd + c]) * double(k.data[(head * S + j) * hd + c]);
                    CHECK(scores[j] == doctest::Approx(dot / std::sqrt(double(hd))).epsilon(1e-4).scale(1.0));
                    CHECK(a.data[(head * S + i) * S + j] ==
                          doctest::Approx(std::exp(double(scores[j]) - top) / sum).epsilon(1e-4).scale(1e-3));
                }
            }
        }
    // An RNN has no such heads: nothing extra.
    CHECK(shipped_en_de().translate("A dog.", options).encoder_queries.empty());
}

namespace {

// Every row of scores [layers, heads, rows, cols]: its softmax over the entries that are not -inf is that row of
// weights, within 1e-5; a -inf entry (masked) has weight 0. Returns how many entries were -inf.
int check_softmax_is_weights(const AttentionTensor& scores, const AttentionTensor& weights, const char* what) {
    CAPTURE(what);
    REQUIRE(scores.layers == weights.layers);
    REQUIRE(scores.heads == weights.heads);
    REQUIRE(scores.rows == weights.rows);
    REQUIRE(scores.cols == weights.cols);
    REQUIRE(scores.data.size() == weights.data.size());
    int masked = 0;
    const std::size_t rows = std::size_t(scores.layers) * scores.heads * scores.rows, cols = scores.cols;
    for (std::size_t r = 0; r < rows; ++r) {
        CAPTURE(r);
        const float* s = scores.data.data() + r * cols;
        const float* w = weights.data.data() + r * cols;
        double top = -INFINITY;
        for (std::size_t j = 0; j < cols; ++j) {
            REQUIRE(!std::isnan(s[j]));
            if (std::isfinite(s[j])) top = std::max(top, double(s[j]));
            else REQUIRE(s[j] < 0);  // only -inf, never +inf
        }
        REQUIRE(std::isfinite(top));  // every row sees at least one key
        double sum = 0;
        for (std::size_t j = 0; j < cols; ++j)
            if (std::isfinite(s[j])) sum += std::exp(double(s[j]) - top);
        for (std::size_t j = 0; j < cols; ++j) {
            CAPTURE(j);
            if (!std::isfinite(s[j])) {
                ++masked;
                CHECK(w[j] == 0.0f);
                continue;
            }
            CHECK(std::abs(double(w[j]) - std::exp(double(s[j]) - top) / sum) <= 1e-5);
        }
    }
    return masked;
}

}  // namespace

TEST_CASE("raw_scores: every Transformer attention's raw scores, whose softmax over each row is its weights") {
    const Model& model = shipped_transformer_en_de();
    const std::string text = "A girl in a red dress is playing with her dog on the grass.";
    TranslateOptions all_layers;
    all_layers.all_layers = true;
    const Translation plain = model.translate(text, all_layers);
    CHECK(plain.encoder_self_scores.empty());
    CHECK(plain.decoder_self_scores.empty());
    CHECK(plain.cross_scores.empty());
    TranslateOptions options;
    options.raw_scores = true;
    for (int beam : {1, 3}) {
        CAPTURE(beam);
        options.beam = beam;
        const Translation t = model.translate(text, options);
        REQUIRE(t.target_ids.size() > 2);
        CHECK(t.encoder_queries.empty());  // queries and keys are query_key's
        CHECK(check_softmax_is_weights(t.encoder_self_scores, t.encoder_self_attention, "encoder") == 0);
        CHECK(check_softmax_is_weights(t.cross_scores, t.cross_attention, "cross") == 0);
        // Causal: exactly the entries above the diagonal are masked.
        const AttentionTensor& self = t.decoder_self_scores;
        const int T = self.rows;
        CHECK(check_softmax_is_weights(self, t.decoder_self_attention, "decoder") ==
              self.layers * self.heads * T * (T - 1) / 2);
        for (int i = 0; i < T; ++i) CHECK(std::isinf(self.data[std::size_t(i) * T + std::min(i + 1, T - 1)]) == (i + 1 < T));
        // Translation::scores is the search's own mean over the last layer's heads: the re-run's, up to float
        // rounding. Checked on the f16 file (f32 products in both passes): on Q8_0 weights the search's one-row steps
        // round the activations to int8 and the re-run over all rows does not, which moves scores by a few hundredths.
        const Translation t16 = shipped_transformer_en_de_f16().translate(text, options);
        const AttentionTensor& cross = t16.cross_scores;
        REQUIRE(t16.scores.size() == std::size_t(cross.rows) * cross.cols);
        for (int i = 0; i < cross.rows; ++i)
            for (int j = 0; j < cross.cols; ++j) {
                double mean = 0;
                for (int h = 0; h < cross.heads; ++h)
                    mean += cross.data[((std::size_t(cross.layers - 1) * cross.heads + h) * cross.rows + i) * cross.cols + j];
                CHECK(t16.scores[std::size_t(i) * cross.cols + j] ==
                      doctest::Approx(mean / cross.heads).epsilon(1e-3).scale(1.0));
            }
        // The option adds scores and changes nothing else.
        if (beam == 1) {
            CHECK(t.target_ids == plain.target_ids);
            CHECK(t.cross_attention.data == plain.cross_attention.data);
        }
    }
    // Several texts decoded together carry them too, each sentence's as alone.
    options.beam = 1;
    const std::vector<Translation> many = model.translate(std::vector<std::string>{text, "Two dogs play in the snow."}, options);
    REQUIRE(many.size() == 2);
    for (const Translation& t : many) {
        CHECK(check_softmax_is_weights(t.decoder_self_scores, t.decoder_self_attention, "decoder (several)") > 0);
        CHECK(check_softmax_is_weights(t.cross_scores, t.cross_attention, "cross (several)") == 0);
    }
    CHECK(model.translate(std::vector<std::string>{text}).front().cross_scores.empty());
    // An RNN has one attention, whose scores Translation::scores always holds: nothing extra.
    const Translation rnn = shipped_en_de().translate("A dog.", options);
    CHECK(rnn.cross_scores.empty());
    CHECK(rnn.decoder_self_scores.empty());
    CHECK(rnn.encoder_self_scores.empty());
}

TEST_CASE("recognize: the captioner's image encoder names the ImageNet classes it sees, in the same pass") {
    const Model captioner = Model::open(test::source_path("models/weights/captioner-flickr8k.q8_0.gguf"));
    REQUIRE(captioner.recognizes_images());
    const Image image = read_image(test::source_path("web/app/samples/cat.jpg"));
    const Caption plain = captioner.caption(image);
    CHECK(plain.recognized.empty());
    CaptionOptions options;
    options.recognize = true;
    const Caption c = captioner.caption(image, options);
    CHECK(c.ids == plain.ids);  // asking changes nothing else
    CHECK(c.attention == plain.attention);
    REQUIRE(c.recognized.size() == std::size_t(kRecognizedClasses));
    MESSAGE("cat.jpg: " << c.recognized[0].label << " " << c.recognized[0].probability << ", " << c.recognized[1].label
                        << " " << c.recognized[1].probability << "; caption: " << c.text);
    CHECK(c.recognized.front().label.find("cat") != std::string::npos);
    float sum = 0.0f;
    for (std::size_t i = 0; i < c.recognized.size(); ++i) {
        const Recognition& r = c.recognized[i];
        CAPTURE(r.label);
        CHECK(r.index >= 0);
        CHECK(r.index <= 1000);
        CHECK(r.probability > 0.0f);
        if (i > 0) CHECK(r.probability <= c.recognized[i - 1].probability);
        sum += r.probability;
    }
    CHECK(sum <= 1.0f + 1e-5f);
    // The grid-only entry point has no image to classify.
    std::vector<float> grid(std::size_t(49) * 1280, 0.0f);
    try {
        captioner.caption_features(grid.data(), 49, 1280, options);
        FAIL("recognize without an image was accepted");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::options);
    }
    // The f16 7×7 file has no room for the classifier under the 25 MB limit: a clear refusal.
    const Model f16 = Model::open(test::source_path("models/weights/captioner-flickr8k.f16.gguf"));
    CHECK_FALSE(f16.recognizes_images());
    try {
        f16.caption(image, options);
        FAIL("recognize on a file without the classifier was accepted");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::model);
        CHECK(std::string(e.what()).find("classifier") != std::string::npos);
    }
    CHECK_FALSE(shipped_en_de().recognizes_images());
}
