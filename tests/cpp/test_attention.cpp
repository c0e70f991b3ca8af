// The three stages of attention, five score functions, against python/attnlab/nn/attention.py (PyTorch)
// (fixtures: python/attnlab/golden/layers.py -> tests/fixtures/layers/attention.gguf).
#include <doctest/doctest.h>

#include <cmath>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/nn/attention.hpp"
#include "test_support.hpp"

using namespace attnlab;

namespace {

const gguf::File& attention_fixture() {
    static const gguf::File file = gguf::File::open(test::source_path("tests/fixtures/layers/attention.gguf"));
    return file;
}

struct Case {
    nn::AttentionParams params;
    Matrix keys, values, queries;   // [S, dk], [S, dv], [2, dq]
    std::vector<uint8_t> mask;      // [S]
    std::vector<float> scores, weights, context;   // expected, [2, S], [2, S], [2, dv]
    int S = 0, dv = 0;
};

Case load_case(nn::Score score) {
    const gguf::File& file = attention_fixture();
    const std::string prefix = std::string("attn_") + nn::score_name(score);
    Case c;
    const int dq = int(file.get_u32(prefix + ".query_dim")), dk = int(file.get_u32(prefix + ".key_dim"));
    const int A = int(file.get_u32(prefix + ".attn_dim"));
    c.params = nn::load_attention(file, prefix, score, dq, dk, A);
    c.keys = file.load_f32<2>(prefix + ".keys", {-1, dk});
    c.S = rows(c.keys);
    c.values = file.load_f32<2>(prefix + ".values", {c.S, -1});
    c.dv = cols(c.values);
    c.queries = file.load_f32<2>(prefix + ".query", {2, dq});
    for (float m : file.load_f32_flat(prefix + ".mask")) c.mask.push_back(m != 0.0f);
    c.scores = file.load_f32_flat(prefix + ".scores");
    c.weights = file.load_f32_flat(prefix + ".weights");
    c.context = file.load_f32_flat(prefix + ".context");
    return c;
}

const nn::Score kScores[] = {nn::Score::dot, nn::Score::general, nn::Score::additive, nn::Score::cosine,
                             nn::Score::scaled_dot};

}  // namespace

TEST_CASE("attention: every score matches PyTorch in all three stages, with and without a padding mask") {
    for (nn::Score score : kScores) {
        CAPTURE(nn::score_name(score));
        const Case c = load_case(score);
        const nn::PreparedKeys prepared = nn::prepare_keys(c.params, c.keys);
        CHECK(prepared.length == c.S);
        for (int row = 0; row < 2; ++row) {
            CAPTURE(row);
            const uint8_t* mask = row == 1 ? c.mask.data() : nullptr;
            const nn::AttentionResult r = nn::attend(c.params, prepared, c.queries.data() + row * c.params.query_dim,
                                                     c.values, mask);
            REQUIRE(int(r.scores.size()) == c.S);
            REQUIRE(int(r.context.size()) == c.dv);
            // Stage 1: masked positions are -inf (the fixture stores 0 there: GGUF holds no infinities).
            std::vector<float> scores(r.scores.begin(), r.scores.end());
            for (int s = 0; s < c.S; ++s) {
                if (mask && !mask[s]) {
                    CHECK(std::isinf(scores[s]));
                    CHECK(scores[s] < 0);
                    scores[s] = 0.0f;
                }
            }
            test::check_close(scores.data(), c.scores.data() + row * c.S, c.S, 1e-5f, 0.0f, "scores");
            test::check_close(r.weights.data(), c.weights.data() + row * c.S, c.S, 1e-5f, 0.0f, "weights");
            test::check_close(r.context.data(), c.context.data() + row * c.dv, c.dv, 1e-5f, 0.0f, "context");
            double sum = 0;
            for (float w : r.weights) sum += w;
            CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
        }
    }
}

TEST_CASE("attention: the stages can be run one by one and agree with attend()") {
    const Case c = load_case(nn::Score::additive);
    const nn::PreparedKeys prepared = nn::prepare_keys(c.params, c.keys);
    std::vector<float> scores(c.S), weights(c.S), context(c.dv);
    const float* query = c.queries.data() + c.params.query_dim;   // row 1: the masked case
    nn::attention_scores(c.params, prepared, query, c.mask.data(), scores.data());
    nn::attention_weights(scores.data(), c.S, c.mask.data(), weights.data());
    nn::attention_context(weights.data(), c.values, context.data());
    test::check_close(weights.data(), c.weights.data() + c.S, c.S, 1e-5f, 0.0f, "weights");
    test::check_close(context.data(), c.context.data() + c.dv, c.dv, 1e-5f, 0.0f, "context");
    for (int s = 0; s < c.S; ++s)
        if (!c.mask[s]) CHECK(weights[s] == 0.0f);
}

TEST_CASE("attention: a fully masked source gives zero weights and context, never NaN") {
    for (nn::Score score : kScores) {
        CAPTURE(nn::score_name(score));
        const Case c = load_case(score);
        const nn::PreparedKeys prepared = nn::prepare_keys(c.params, c.keys);
        const std::vector<uint8_t> none(c.S, 0);
        const nn::AttentionResult r = nn::attend(c.params, prepared, c.queries.data(), c.values, none.data());
        for (float w : r.weights) CHECK(w == 0.0f);
        for (float x : r.context) CHECK(x == 0.0f);
        for (float e : r.scores) CHECK((std::isinf(e) && e < 0));
    }
}

TEST_CASE("attention: cosine clamps tiny norms like torch.nn.functional.cosine_similarity") {
    // torch 1.13: cos([1e-9, 0], [1e-9, 0]) = 0.01 and cos([1e-9, 0], [3, 4]) = 0.06 with eps = 1e-8:
    // each norm is clamped to eps separately.
    nn::AttentionParams params;
    params.score = nn::Score::cosine;
    params.query_dim = params.key_dim = 2;
    Matrix keys = {{1e-9f, 0.0f}, {3.0f, 4.0f}};
    const nn::PreparedKeys prepared = nn::prepare_keys(params, keys);
    const float query[2] = {1e-9f, 0.0f};
    float scores[2];
    nn::attention_scores(params, prepared, query, nullptr, scores);
    CHECK(scores[0] == doctest::Approx(0.01).epsilon(1e-5));
    CHECK(scores[1] == doctest::Approx(0.06).epsilon(1e-5));
}

TEST_CASE("attention: score names round-trip and bad input is an attnlab::Error") {
    for (nn::Score score : kScores) CHECK(nn::parse_score(nn::score_name(score)) == score);
    CHECK_THROWS_AS(nn::parse_score("bilinear"), Error);

    const Case c = load_case(nn::Score::general);
    const Matrix wrong_keys = xt::zeros<float>({3, 4});
    CHECK_THROWS_AS(nn::prepare_keys(c.params, wrong_keys), Error);
    const nn::PreparedKeys prepared = nn::prepare_keys(c.params, c.keys);
    const Matrix short_values = xt::zeros<float>({std::size_t(c.S - 1), std::size_t(c.dv)});
    CHECK_THROWS_AS(nn::attend(c.params, prepared, c.queries.data(), short_values, nullptr), Error);

    nn::AttentionParams dot_params;   // keys prepared for another score
    dot_params.score = nn::Score::dot;
    dot_params.query_dim = dot_params.key_dim = 10;
    std::vector<float> scores(c.S);
    CHECK_THROWS_AS(nn::attention_scores(dot_params, prepared, c.queries.data(), nullptr, scores.data()), Error);

    nn::PreparedKeys hand_built = prepared;   // one row short of its length: must not be read out of bounds
    hand_built.projected = xt::zeros<float>({std::size_t(c.S - 1), std::size_t(c.params.query_dim)});
    CHECK_THROWS_AS(nn::attention_scores(c.params, hand_built, c.queries.data(), nullptr, scores.data()), Error);

    nn::AttentionParams mismatched = dot_params;
    mismatched.key_dim = 9;   // dot needs dq == dk
    CHECK_THROWS_AS(nn::validate(mismatched), Error);
    CHECK_THROWS_AS(nn::load_attention(attention_fixture(), "attn_additive", nn::Score::additive, 6, 10, 8), Error);
}
