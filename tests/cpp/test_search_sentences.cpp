// Batched sentences (Model::translate of several texts, decode::search_sentences) against the one-sentence path
// (Model::translate of each text alone): the same tokens, stop reasons and warnings, attention within float
// tolerance, on the RNN and Transformer fixtures and the shipped translators (f16 and q8_0), greedy and beam 4,
// sentences of mixed lengths, one of them cut at the maximum length.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "attnlab/attnlab.hpp"
#include "attnlab/decode/sentences.hpp"
#include "test_support.hpp"

using namespace attnlab;

namespace {

// The GEMMs over more rows sum in another order than those of one sentence's rows; nothing else differs.
constexpr float kAttentionTolerance = 1e-4f;

const std::vector<std::string> kMixedEnglish = {
    "Two men are playing soccer in a park.",
    "A dog runs.",
    "A little girl with a red hat is sitting on a bench next to her grandmother while a group of boys plays "
    "football on the grass behind them.",
    "Hello.",
    "A man in a blue shirt is standing on a ladder.",
    "我们在学习中文和德语。",  // UNKNOWN_INPUT for the EN→DE models
    "People walk.",
    "Two dogs are running through the snow.",
    "A woman is cooking dinner in a small kitchen.",
};

void check_tensor(const AttentionTensor& batched, const AttentionTensor& alone, const char* what) {
    CHECK(batched.layers == alone.layers);
    CHECK(batched.heads == alone.heads);
    CHECK(batched.rows == alone.rows);
    CHECK(batched.cols == alone.cols);
    test::check_close(batched.data, alone.data, kAttentionTolerance, 1e-4f, what);
}

// Returns how many of the texts stopped at the maximum length, so a caller can see that the cut was exercised.
int check_same_translations(const Model& model, const std::vector<std::string>& texts, const TranslateOptions& options) {
    CAPTURE(options.beam);
    CAPTURE(options.max_length);
    const std::vector<Translation> batched = model.translate(texts, options);
    REQUIRE(batched.size() == texts.size());
    int cut = 0;
    for (std::size_t i = 0; i < texts.size(); ++i) {
        CAPTURE(texts[i]);
        const Translation alone = model.translate(texts[i], options);
        const Translation& t = batched[i];
        CHECK(t.source_ids == alone.source_ids);
        CHECK(t.source_tokens == alone.source_tokens);
        CHECK(t.target_ids == alone.target_ids);
        CHECK(t.text == alone.text);
        CHECK(t.target_tokens == alone.target_tokens);
        CHECK(t.stop_reason == alone.stop_reason);
        REQUIRE(t.warnings.size() == alone.warnings.size());
        for (std::size_t w = 0; w < t.warnings.size(); ++w) {
            CHECK(t.warnings[w].code == alone.warnings[w].code);
            CHECK(t.warnings[w].message == alone.warnings[w].message);
            CHECK(t.warnings[w].share == alone.warnings[w].share);
            CHECK(t.warnings[w].log_probability_per_token ==
                  doctest::Approx(alone.warnings[w].log_probability_per_token).epsilon(1e-5));
        }
        CHECK(t.score_function == alone.score_function);
        CHECK(t.context_size == alone.context_size);
        CHECK(t.values == alone.values);  // the same encoder on the same ids
        CHECK(t.log_probability == doctest::Approx(alone.log_probability).epsilon(1e-5));
        if (t.target_ids != alone.target_ids) continue;
        test::check_close(t.attention, alone.attention, kAttentionTolerance, 1e-4f, "attention");
        test::check_close(t.scores, alone.scores, kAttentionTolerance, 1e-4f, "scores");
        test::check_close(t.context, alone.context, kAttentionTolerance, 1e-4f, "context");
        check_tensor(t.encoder_self_attention, alone.encoder_self_attention, "encoder self-attention");
        check_tensor(t.decoder_self_attention, alone.decoder_self_attention, "decoder self-attention");
        check_tensor(t.cross_attention, alone.cross_attention, "cross-attention");
        cut += t.stop_reason == StopReason::max_length ? 1 : 0;
    }
    return cut;
}

// Greedy and beam 4 with the automatic limit, then with a limit that cuts the long sentences but not the short.
void check_model(const std::string& path, const std::vector<std::string>& texts, int cutting_length) {
    CAPTURE(path);
    const Model model = Model::open(test::source_path(path));
    for (int beam : {1, 4}) {
        TranslateOptions options;
        options.beam = beam;
        options.all_layers = true;
        check_same_translations(model, texts, options);
        options.max_length = cutting_length;
        const int cut = check_same_translations(model, texts, options);
        CHECK(cut > 0);
        CHECK(cut < static_cast<int>(texts.size()));
    }
}

// The fixtures' own vocabulary is tiny: these are their test sentences' words, in several lengths.
const std::vector<std::string> kFixtureTexts = {
    "a b c", "a", "a b c d e f g h i j k l", "b a", "c c c c c", "d e f g",
};

}  // namespace

TEST_CASE("batched sentences: the shipped RNN (q8_0 and f16) translates as sentence by sentence") {
    check_model("models/weights/bahdanau-en-de.q8_0.gguf", kMixedEnglish, 9);
    check_model("models/weights/bahdanau-en-de.f16.gguf", kMixedEnglish, 9);
}

TEST_CASE("batched sentences: the shipped Transformer (q8_0 and f16) translates as sentence by sentence") {
    check_model("models/weights/transformer-en-de.q8_0.gguf", kMixedEnglish, 9);
    check_model("models/weights/transformer-en-de.f16.gguf", kMixedEnglish, 9);
}

TEST_CASE("batched sentences: the RNN and Transformer fixtures, beam 16 over several length buckets") {
    for (const char* path : {"tests/fixtures/rnn/additive.gguf", "tests/fixtures/rnn/dot.gguf",
                             "tests/fixtures/rnn/additive.q8_0.gguf", "tests/fixtures/transformer/tiny.gguf"}) {
        CAPTURE(path);
        const Model model = Model::open(test::source_path(path));
        TranslateOptions options;
        options.all_layers = true;
        for (int beam : {1, 4, 16}) {
            options.beam = beam;
            check_same_translations(model, kFixtureTexts, options);
        }
        options.beam = 4;
        options.max_length = 3;
        CHECK(check_same_translations(model, kFixtureTexts, options) > 0);
    }
}

TEST_CASE("batched sentences: no texts give no translations; a bad text names its index and translates nothing") {
    const Model model = Model::open(test::source_path("models/weights/bahdanau-en-de.q8_0.gguf"));
    CHECK(model.translate(std::vector<std::string>{}).empty());
    const std::vector<std::string> texts = {"A dog runs.", "   ", "Hello."};
    try {
        model.translate(texts);
        FAIL("an empty text was accepted");
    } catch (const Error& error) {
        CHECK(std::string(error.what()) == "texts[1]: nothing to translate: the input is empty");
        CHECK(std::string(error_code(error.kind(), ErrorKind::input)) == "ATTNLAB_BAD_INPUT");
    }
    TranslateOptions bad;
    bad.beam = 0;
    CHECK_THROWS_WITH(model.translate(std::vector<std::string>{"A dog runs."}, bad),
                      "beam must be an integer from 1 to 64, got 0");
    const Model captioner = Model::open(test::source_path("tests/fixtures/caption/tiny_model.gguf"));
    try {
        captioner.translate(std::vector<std::string>{"a"});
        FAIL("a captioner translated");
    } catch (const Error& error) {
        CHECK(error.kind() == ErrorKind::task);
    }
}

TEST_CASE("batched sentences: each text's beam tree is the one its own search records") {
    for (const char* path : {"models/weights/bahdanau-en-de.q8_0.gguf", "models/weights/transformer-en-de.q8_0.gguf"}) {
        CAPTURE(path);
        const Model model = Model::open(test::source_path(path));
        for (int beam : {1, 4}) {
            CAPTURE(beam);
            TranslateOptions options;
            options.beam = beam;
            options.beam_tree = true;
            options.max_length = 9;  // some sentences end at the limit, some with </s>
            const std::vector<Translation> batched = model.translate(kMixedEnglish, options);
            REQUIRE(batched.size() == kMixedEnglish.size());
            for (std::size_t i = 0; i < batched.size(); ++i) {
                CAPTURE(kMixedEnglish[i]);
                const Translation alone = model.translate(kMixedEnglish[i], options);
                CHECK(batched[i].target_ids == alone.target_ids);
                const BeamTree& a = batched[i].beam_tree;
                const BeamTree& b = alone.beam_tree;
                CHECK(a.winner == b.winner);
                REQUIRE(a.nodes.size() == b.nodes.size());
                CHECK(!a.nodes.empty());
                for (std::size_t n = 0; n < a.nodes.size(); ++n) {
                    CAPTURE(n);
                    CHECK(a.nodes[n].step == b.nodes[n].step);
                    CHECK(a.nodes[n].parent == b.nodes[n].parent);
                    CHECK(a.nodes[n].id == b.nodes[n].id);
                    CHECK(a.nodes[n].piece == b.nodes[n].piece);
                    CHECK(a.nodes[n].finished == b.nodes[n].finished);
                    CHECK(a.nodes[n].cumulative == doctest::Approx(b.nodes[n].cumulative).epsilon(1e-5));
                    CHECK(a.nodes[n].score == doctest::Approx(b.nodes[n].score).epsilon(1e-5));
                }
            }
        }
    }
}

TEST_CASE("length_buckets: by length, ties in input order, at most max_rows / beam sentences a bucket") {
    const std::vector<int> lengths = {5, 3, 9, 3, 1, 7, 5};
    const auto buckets = decode::length_buckets(lengths, 4, 8);  // 2 sentences a bucket
    const std::vector<std::vector<int>> expected = {{4, 1}, {3, 0}, {6, 5}, {2}};
    CHECK(buckets == expected);
    CHECK(decode::length_buckets(lengths, 64, 8).size() == lengths.size());  // a wide beam: one sentence each
    CHECK(decode::length_buckets(lengths, 1).size() == 1);
    CHECK(decode::length_buckets({}, 4).empty());
}

TEST_CASE("sentence_lanes: every sentence once, longest first to the lightest lane, each lane in index order") {
    const std::vector<int> lengths = {5, 3, 9, 3, 1, 7, 5};
    const std::vector<std::vector<int>> two = {{2, 3, 6}, {0, 1, 4, 5}};  // total lengths 17 and 16
    CHECK(decode::sentence_lanes(lengths, 2) == two);
    CHECK(decode::sentence_lanes(lengths, 1) == std::vector<std::vector<int>>{{0, 1, 2, 3, 4, 5, 6}});
    CHECK(decode::sentence_lanes({4, 2}, 8).size() == 2);  // never an empty lane beside a full one
    CHECK(decode::sentence_lanes({}, 2) == std::vector<std::vector<int>>{{}});
    CHECK(decode::sentence_lanes({0, 0, 0}, 2) == std::vector<std::vector<int>>{{0, 2}, {1}});  // empty texts weigh 1
}
