// The Show-Attend-Tell decoder against PyTorch (python/attnlab/nn/show_attend_tell.py): a tiny trained f32 decoder and its
// greedy/beam outputs on fixed annotation grids (fixture: python/attnlab/golden/caption.py ->
// tests/fixtures/caption/decoder.gguf, decoder_centered.gguf whose decoder attends over the centered grid and
// reads its mean as a global feature, and decoder_ensemble.gguf whose two decoders decode as one). The encoder is not in the fixture: grids go in through
// caption_from_features / caption_prepare.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/models/captioner.hpp"
#include "test_support.hpp"

using namespace attnlab;

namespace {

const gguf::File& caption_fixture() {
    static const gguf::File file = gguf::File::open(test::source_path("tests/fixtures/caption/decoder.gguf"));
    return file;
}

const gguf::File& centered_fixture() {
    static const gguf::File file = gguf::File::open(test::source_path("tests/fixtures/caption/decoder_centered.gguf"));
    return file;
}

const gguf::File& ensemble_fixture() {
    static const gguf::File file = gguf::File::open(test::source_path("tests/fixtures/caption/decoder_ensemble.gguf"));
    return file;
}

enum class Variant { raw, centered, ensemble };

// The decoder fixtures, for the tests that compare with PyTorch.
const gguf::File& fixture_variant(Variant variant) {
    switch (variant) {
        case Variant::centered: return centered_fixture();
        case Variant::ensemble: return ensemble_fixture();
        default: return caption_fixture();
    }
}

Matrix fixture_grid(const gguf::File& file, int n, const models::CaptionerConfig& c) {
    return file.load_f32<2>("fixture." + std::to_string(n) + ".features", {c.grid(), c.feature_size});
}

}  // namespace

TEST_CASE("captioner: the fixture decoder loads with the exported sizes") {
    const models::CaptionDecoderWeights model = models::load_caption_decoder(caption_fixture());
    CHECK(model.config.vocab == 40);
    CHECK(model.config.grid_height == 2);
    CHECK(model.config.grid_width == 3);
    CHECK(model.config.feature_size == 48);
    CHECK(model.config.hidden == 24);
    CHECK(model.bos == 2);
    CHECK(model.eos == 3);
    CHECK_FALSE(model.config.center_grid);
    CHECK_FALSE(model.config.global_feature);
    const models::CaptionDecoderWeights centered = models::load_caption_decoder(centered_fixture());
    CHECK(centered.config.center_grid);
    CHECK(centered.config.global_feature);
    CHECK(centered.decoder.input_size == 16 + 48 + 16);

    const std::vector<models::CaptionDecoderWeights> single = models::load_caption_decoders(caption_fixture());
    CHECK(single.size() == 1);
    const std::vector<models::CaptionDecoderWeights> members = models::load_caption_decoders(ensemble_fixture());
    REQUIRE(members.size() == 2);
    CHECK(members[0].config.hidden == 24);
    CHECK_FALSE(members[0].config.learned_initial_state);
    CHECK(members[1].config.hidden == 20);
    CHECK(members[1].config.attention_dim == 12);
    CHECK(members[1].config.learned_initial_state);   // its zero W_h0, W_c0 are not in the file
    CHECK_FALSE(ensemble_fixture().has_tensor("member1.init_h.weight"));
    CHECK(members[1].config.grid() == members[0].config.grid());
}

TEST_CASE("captioner: every greedy step matches PyTorch (logits, attention scores and weights)") {
    Variant variant = Variant::raw;   // the test case runs once per subcase
    SUBCASE("raw grid") {}
    SUBCASE("centered grid and global feature") { variant = Variant::centered; }
    SUBCASE("ensemble of two decoders") { variant = Variant::ensemble; }
    const gguf::File& file = fixture_variant(variant);
    const std::vector<models::CaptionDecoderWeights> members = models::load_caption_decoders(file);
    const models::CaptionerConfig& config = members.front().config;
    const int count = static_cast<int>(file.get_u32("fixture.count"));
    REQUIRE(count >= 2);
    const int G = config.grid(), V = config.vocab;
    for (int n = 0; n < count; ++n) {
        CAPTURE(n);
        const std::string p = "fixture." + std::to_string(n) + ".";
        const std::vector<int32_t> tokens = file.get_i32_array(p + "greedy_tokens");
        const std::vector<float> weights = file.load_f32_flat(p + "greedy_weights");
        const std::vector<float> scores = file.load_f32_flat(p + "greedy_scores");
        const std::vector<float> logits = file.load_f32_flat(p + "greedy_logits");
        REQUIRE(weights.size() == tokens.size() * G);
        REQUIRE(logits.size() == tokens.size() * V);

        // Step by step, feeding PyTorch's tokens: each step's outputs are compared on their own.
        const Matrix grid = fixture_grid(file, n, config);
        std::vector<const models::CaptionDecoderWeights*> pointers;
        std::vector<models::CaptionEncoded> encoded;
        for (const models::CaptionDecoderWeights& member : members) {
            pointers.push_back(&member);
            encoded.push_back(models::caption_prepare(member, grid));
        }
        const models::CaptionDecoder decoder(pointers, std::move(encoded));
        decode::StatePtr state = decoder.initial_state();
        int32_t previous = decoder.bos();
        for (std::size_t t = 0; t < tokens.size(); ++t) {
            CAPTURE(t);
            decode::StepOutput out;
            state = decoder.step(*state, previous, out);
            test::check_close(out.logits.data(), logits.data() + t * V, V, 1e-5f, 1e-5f, "logits");
            test::check_close(out.weights.data(), weights.data() + t * G, G, 1e-5f, 0.0f, "weights");
            test::check_close(out.scores.data(), scores.data() + t * G, G, 1e-5f, 1e-5f, "scores");
            previous = tokens[t];
        }

        // The search returns the same tokens (EOS stripped) and one attention row per returned token.
        const decode::Hypothesis greedy = models::caption_from_features(members, grid, 1);
        std::vector<int32_t> expected = tokens;
        if (!expected.empty() && expected.back() == decoder.eos()) expected.pop_back();
        CHECK(greedy.tokens == expected);
        REQUIRE(greedy.attention.size() == expected.size());
        for (std::size_t t = 0; t < expected.size(); ++t)
            test::check_close(greedy.attention[t].data(), weights.data() + t * G, G, 1e-5f, 0.0f, "search attention");
    }
}

TEST_CASE("captioner: one decoder's steps through caption_step equal the CaptionDecoder's") {
    const gguf::File& file = caption_fixture();
    const models::CaptionDecoderWeights model = models::load_caption_decoder(file);
    const int H = model.config.hidden;
    const Matrix grid = fixture_grid(file, 0, model.config);
    const models::CaptionEncoded encoded = models::caption_prepare(model, grid);
    std::vector<float> h(encoded.h0.begin(), encoded.h0.end()), c(encoded.c0.begin(), encoded.c0.end());
    std::vector<float> h_next(H), c_next(H);
    const models::CaptionDecoder decoder({&model}, {models::caption_prepare(model, grid)});
    decode::StatePtr state = decoder.initial_state();
    int32_t previous = model.bos;
    for (int t = 0; t < 4; ++t) {
        decode::StepOutput direct, searched;
        models::caption_step(model, encoded, previous, h.data(), c.data(), h_next.data(), c_next.data(), direct);
        state = decoder.step(*state, previous, searched);
        CHECK(direct.logits == searched.logits);
        CHECK(direct.weights == searched.weights);
        h.swap(h_next);
        c.swap(c_next);
        previous = static_cast<int32_t>(std::max_element(direct.logits.begin(), direct.logits.end()) - direct.logits.begin());
    }
}

TEST_CASE("captioner: beam search gives PyTorch's tokens for beams 2, 3 and 5") {
    Variant variant = Variant::raw;   // the test case runs once per subcase
    SUBCASE("raw grid") {}
    SUBCASE("centered grid and global feature") { variant = Variant::centered; }
    SUBCASE("ensemble of two decoders") { variant = Variant::ensemble; }
    const gguf::File& file = fixture_variant(variant);
    const std::vector<models::CaptionDecoderWeights> members = models::load_caption_decoders(file);
    const int count = static_cast<int>(file.get_u32("fixture.count"));
    int differs_from_greedy = 0;
    for (int n = 0; n < count; ++n) {
        const Matrix grid = fixture_grid(file, n, members.front().config);
        const decode::Hypothesis greedy = models::caption_from_features(members, grid, 1);
        for (int beam : {2, 3, 5}) {
            CAPTURE(n);
            CAPTURE(beam);
            const std::vector<int32_t> expected =
                file.get_i32_array("fixture." + std::to_string(n) + ".beam" + std::to_string(beam) + "_tokens");
            const decode::Hypothesis best = models::caption_from_features(members, grid, beam);
            CHECK(best.tokens == expected);
            CHECK(best.attention.size() == best.tokens.size());
            if (best.tokens != greedy.tokens) ++differs_from_greedy;
        }
    }
    CHECK(differs_from_greedy > 0);   // the fixture really exercises the beam, not just greedy twice
}

TEST_CASE("captioner: attnlab.captioner.no_repeat_ngram = 2 gives PyTorch's greedy and beam-3 tokens") {
    Variant variant = Variant::raw;
    SUBCASE("raw grid") {}
    SUBCASE("centered grid and global feature") { variant = Variant::centered; }
    SUBCASE("ensemble of two decoders") { variant = Variant::ensemble; }
    const char* path = variant == Variant::centered   ? "tests/fixtures/caption/decoder_centered.gguf"
                       : variant == Variant::ensemble ? "tests/fixtures/caption/decoder_ensemble.gguf"
                                                      : "tests/fixtures/caption/decoder.gguf";
    std::ifstream in(test::source_path(path), std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // The fixture stores the key with 0 (off); after the key's name come its u32 type and its u32 value.
    const std::string key = "attnlab.captioner.no_repeat_ngram";
    const std::size_t value_at =
        std::size_t(std::search(bytes.begin(), bytes.end(), key.begin(), key.end()) - bytes.begin()) + key.size() + 4;
    REQUIRE(value_at + 4 <= bytes.size());
    REQUIRE(bytes[value_at] == 0);
    const std::vector<models::CaptionDecoderWeights> unconstrained =
        models::load_caption_decoders(gguf::File::from_bytes(bytes));
    CHECK(unconstrained.front().config.no_repeat_ngram == 0);

    bytes[value_at] = 9;
    CHECK_THROWS_WITH_AS(models::load_caption_decoders(gguf::File::from_bytes(bytes)),
                         doctest::Contains("no_repeat_ngram must be 0 (off) or 2..8"), Error);
    bytes[value_at] = 2;
    const gguf::File file = gguf::File::from_bytes(bytes);
    const std::vector<models::CaptionDecoderWeights> members = models::load_caption_decoders(file);
    REQUIRE(members.front().config.no_repeat_ngram == 2);
    const int count = static_cast<int>(file.get_u32("fixture.count"));
    int changed = 0;   // captions the ban changes: the fixture must exercise it
    for (int n = 0; n < count; ++n) {
        CAPTURE(n);
        const std::string p = "fixture." + std::to_string(n) + ".";
        const Matrix grid = fixture_grid(file, n, members.front().config);
        for (int beam : {1, 3}) {
            CAPTURE(beam);
            const auto tokens = models::caption_from_features(members, grid, beam).tokens;
            CHECK(tokens == file.get_i32_array(p + (beam == 1 ? "norepeat2_greedy_tokens" : "norepeat2_beam3_tokens")));
            if (tokens != models::caption_from_features(unconstrained, grid, beam).tokens) ++changed;
        }
    }
    if (variant != Variant::centered) CHECK(changed > 0);   // (the centered decoder's captions never repeat a bigram)

    // A caller's setting overrides the file's: 2 on the unpatched file, 0 (off) on the patched one.
    const Matrix grid = fixture_grid(file, 0, members.front().config);
    CHECK(models::caption_from_features(unconstrained, grid, 3, 0, 2).tokens ==
          file.get_i32_array("fixture.0.norepeat2_beam3_tokens"));
    CHECK(models::caption_from_features(members, grid, 3, 0, 0).tokens ==
          models::caption_from_features(unconstrained, grid, 3).tokens);
    for (int bad : {-2, 1, 9})
        CHECK_THROWS_WITH_AS(models::caption_from_features(members, grid, 3, 0, bad),
                             doctest::Contains("noRepeatNgram must be"), Error);
}

TEST_CASE("captioner: bad grids, tokens and options are attnlab::Error") {
    const gguf::File& file = caption_fixture();
    const models::CaptionDecoderWeights model = models::load_caption_decoder(file);
    const models::CaptionerConfig& c = model.config;
    CHECK_THROWS_AS(models::caption_prepare(model, Matrix::from_shape({std::size_t(c.grid() + 1), std::size_t(c.feature_size)})),
                    Error);
    CHECK_THROWS_AS(models::caption_prepare(model, Matrix::from_shape({std::size_t(c.grid()), std::size_t(c.feature_size - 1)})),
                    Error);
    Matrix bad = fixture_grid(file, 0, c);
    bad(1, 2) = std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_AS(models::caption_prepare(model, bad), Error);

    const models::CaptionEncoded encoded = models::caption_prepare(model, fixture_grid(file, 0, c));
    std::vector<float> h(c.hidden), cc(c.hidden);
    decode::StepOutput out;
    CHECK_THROWS_AS(models::caption_step(model, encoded, c.vocab, encoded.h0.data(), encoded.c0.data(), h.data(), cc.data(), out),
                    Error);
    CHECK_THROWS_AS(models::caption_step(model, encoded, -1, encoded.h0.data(), encoded.c0.data(), h.data(), cc.data(), out),
                    Error);
    CHECK_THROWS_AS(models::caption_from_features(model, fixture_grid(file, 0, c), 0), Error);
    CHECK_THROWS_AS(models::caption_from_features(model, fixture_grid(file, 0, c), 1, -1), Error);
    CHECK_THROWS_AS(models::caption_from_features(model, fixture_grid(file, 0, c), 1, 100000), Error);

    // An ensemble whose member count is out of range, or whose member is missing, is refused.
    std::ifstream in(test::source_path("tests/fixtures/caption/decoder_ensemble.gguf"), std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string key = "attnlab.captioner.ensemble_size";
    const auto at = std::search(bytes.begin(), bytes.end(), key.begin(), key.end());
    REQUIRE(at != bytes.end());
    const std::size_t value = static_cast<std::size_t>(at - bytes.begin()) + key.size() + 4;   // after the u32 type
    REQUIRE(bytes[value] == 2);
    for (uint8_t count : {0, 3, 9}) {
        CAPTURE(int(count));
        std::vector<uint8_t> patched = bytes;
        patched[value] = count;
        CHECK_THROWS_AS(models::load_caption_decoders(gguf::File::from_bytes(patched)), Error);
    }

    // A caption limit shorter than the caption cuts it.
    const decode::Hypothesis cut = models::caption_from_features(model, fixture_grid(file, 0, c), 1, 2);
    CHECK(cut.tokens.size() == 2);
}

TEST_CASE("captioner: a translation model or a fixture of another kind is rejected with a message") {
    const gguf::File other = gguf::File::open(test::source_path("tests/fixtures/layers/rnn.gguf"));
    CHECK_THROWS_WITH_AS(models::load_caption_decoder(other), doctest::Contains("not a captioner"), Error);
}

// ---- the engine API (attnlab::Model) on a complete decoder-only model file ---------------------------------------
#include "attnlab/attnlab.hpp"

namespace {

const Model& tiny_model() {
    static const Model model = Model::open(test::source_path("tests/fixtures/caption/tiny_model.gguf"));
    return model;
}

}  // namespace

TEST_CASE("captioner API: caption_features gives PyTorch's ids and sentencepiece's text, greedy and beam 3") {
    const Model& model = tiny_model();
    CHECK(model.task() == "caption");
    CHECK(model.architecture() == "attnlab.captioner");
    const gguf::File& file = model.file();
    const std::vector<float> features = file.load_f32_flat("fixture.features");
    const int G = 6, C = 48;
    REQUIRE(features.size() == std::size_t(G * C));
    for (int beam : {1, 3}) {
        CAPTURE(beam);
        const std::string key = beam == 1 ? "fixture.greedy_" : "fixture.beam3_";
        CaptionOptions options;
        options.beam = beam;
        const Caption caption = model.caption_features(features.data(), G, C, options);
        CHECK(caption.ids == file.get_i32_array(key + "ids"));
        CHECK(caption.text == file.get_string(key + "text"));
        CHECK(caption.tokens.size() == caption.ids.size());
        CHECK(caption.grid_height == 2);
        CHECK(caption.grid_width == 3);
        REQUIRE(caption.attention.size() == caption.ids.size() * G);
        for (std::size_t t = 0; t < caption.ids.size(); ++t) {   // each row is a softmax over the grid
            double sum = 0;
            for (int g = 0; g < G; ++g) sum += caption.attention[t * G + g];
            CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
        }
    }
}

TEST_CASE("captioner API: wrong inputs and wrong tasks are clear errors") {
    const Model& model = tiny_model();
    const std::vector<float> features = model.file().load_f32_flat("fixture.features");
    CHECK_THROWS_WITH_AS(model.caption_features(features.data(), 5, 48), doctest::Contains("expects 6 × 48"), Error);
    CHECK_THROWS_AS(model.caption_features(nullptr, 6, 48), Error);
    CaptionOptions bad;
    bad.beam = 0;
    CHECK_THROWS_AS(model.caption_features(features.data(), 6, 48, bad), Error);
    // This file has no encoder: an image cannot be captioned, and the message says why.
    const std::vector<uint8_t> rgba(8 * 8 * 4, 128);
    CHECK_THROWS_WITH_AS(model.caption(rgba.data(), 8, 8), doctest::Contains("no image encoder"), Error);
    CHECK_THROWS_AS(model.caption(rgba.data(), 0, 8), Error);
    CHECK_THROWS_WITH_AS(model.translate("a dog"), doctest::Contains("cannot translate"), Error);

    const Model translator = Model::open(test::source_path("tests/fixtures/transformer/tiny.gguf"));
    CHECK_THROWS_WITH_AS(translator.caption(rgba.data(), 8, 8), doctest::Contains("cannot caption"), Error);
    CHECK_THROWS_WITH_AS(translator.caption_features(features.data(), 6, 48), doctest::Contains("cannot caption"), Error);
}

TEST_CASE("captioner API: an image side beyond the limit is rejected before any allocation") {
    const std::vector<uint8_t> rgba(16, 0);
    CHECK_THROWS_WITH_AS(tiny_model().caption(rgba.data(), 1 << 20, 1 << 20), doctest::Contains("too large"), Error);
}

TEST_CASE("captioner API: the raw scores come with the weights, which are their softmax (one decoder)") {
    const Model& model = tiny_model();
    const std::vector<float> features = model.file().load_f32_flat("fixture.features");
    const int G = 6;
    CaptionOptions options;
    options.beam = 3;
    const Caption caption = model.caption_features(features.data(), G, 48, options);
    REQUIRE(!caption.ids.empty());
    REQUIRE(caption.scores.size() == caption.attention.size());
    for (std::size_t t = 0; t < caption.ids.size(); ++t) {
        CAPTURE(t);
        const float* scores = caption.scores.data() + t * G;
        const float top = *std::max_element(scores, scores + G);
        double sum = 0;
        for (int g = 0; g < G; ++g) sum += std::exp(double(scores[g]) - top);
        for (int g = 0; g < G; ++g)
            CHECK(caption.attention[t * G + g] == doctest::Approx(std::exp(double(scores[g]) - top) / sum).epsilon(1e-4));
    }
}
