// Location-aware attention (nn/location_attention.hpp): a case worked by hand, the additive score it extends, the
// explained terms, masks and refusals; and PyTorch's LocationAttention inside the speech fixture
// (python/attnlab/golden/speech.py -> tests/fixtures/speech/las{,.expected}.gguf).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/nn/attention.hpp"
#include "attnlab/nn/location_attention.hpp"
#include "test_support.hpp"

using namespace attnlab;

namespace {

nn::Linear make_linear(int in, int out, const std::vector<float>& weight, const std::vector<float>& bias = {}) {
    nn::Linear layer;
    layer.in = in;
    layer.out = out;
    layer.weight = Matrix::from_shape({std::size_t(out), std::size_t(in)});
    std::copy(weight.begin(), weight.end(), layer.weight.begin());
    if (!bias.empty()) {
        layer.bias = Vector::from_shape({std::size_t(out)});
        std::copy(bias.begin(), bias.end(), layer.bias.begin());
    }
    return layer;
}

Matrix make_matrix(int r, int c, const std::vector<float>& values) {
    Matrix m = Matrix::from_shape({std::size_t(r), std::size_t(c)});
    std::copy(values.begin(), values.end(), m.begin());
    return m;
}

// dq = dk = A = K = 1, width 3: every stage can be followed with pencil and paper.
nn::LocationAttentionParams hand_params() {
    nn::LocationAttentionParams p;
    p.query_dim = 1;
    p.key_dim = 1;
    p.query_proj = make_linear(1, 1, {2.0f});                 // W_q q = 2q
    p.key_proj = make_linear(1, 1, {1.0f}, {0.5f});           // W_k h + b_k = h + 0.5
    p.filters = make_matrix(1, 3, {1.0f, 2.0f, 3.0f});        // f_j = a_{j-1} + 2 a_j + 3 a_{j+1}
    p.location_proj = make_linear(1, 1, {1.0f});              // W_f f = f
    p.v = Vector::from_shape({1});
    p.v[0] = 1.0f;
    return p;
}

// A random layer of the given sizes (uniform weights in [-0.5, 0.5]).
nn::LocationAttentionParams random_params(int dq, int dk, int A, int K, int width, unsigned seed) {
    nn::LocationAttentionParams p;
    p.query_dim = dq;
    p.key_dim = dk;
    p.query_proj = make_linear(dq, A, test::random_vector(std::size_t(A) * dq, seed, -0.5f, 0.5f));
    p.key_proj = make_linear(dk, A, test::random_vector(std::size_t(A) * dk, seed + 1, -0.5f, 0.5f),
                             test::random_vector(A, seed + 2, -0.5f, 0.5f));
    p.filters = make_matrix(K, width, test::random_vector(std::size_t(K) * width, seed + 3, -0.5f, 0.5f));
    p.location_proj = make_linear(K, A, test::random_vector(std::size_t(A) * K, seed + 4, -0.5f, 0.5f));
    p.v = Vector::from_shape({std::size_t(A)});
    const std::vector<float> v = test::random_vector(A, seed + 5, -0.5f, 0.5f);
    std::copy(v.begin(), v.end(), p.v.begin());
    return p;
}

}  // namespace

TEST_CASE("location attention: a case worked by hand, stage by stage") {
    const nn::LocationAttentionParams p = hand_params();
    const Matrix h = make_matrix(3, 1, {0.0f, 1.0f, -1.0f});
    const nn::LocationKeys keys = nn::prepare_location_keys(p, h);
    REQUIRE(keys.length == 3);
    CHECK(keys.projected(0, 0) == 0.5f);
    CHECK(keys.projected(1, 0) == 1.5f);
    CHECK(keys.projected(2, 0) == -0.5f);

    // Stage 0: a cross-correlation centred on each frame, zero beyond the ends (the filter is not flipped).
    std::vector<float> features(3);
    const std::vector<float> first = {1.0f, 0.0f, 0.0f}, last = {0.0f, 0.0f, 1.0f};
    nn::location_features(p, first.data(), 3, features.data());
    CHECK(features == std::vector<float>{2.0f, 1.0f, 0.0f});
    nn::location_features(p, last.data(), 3, features.data());
    CHECK(features == std::vector<float>{0.0f, 3.0f, 2.0f});

    // q = 0.25 after a_0 = [1, 0, 0]: pre-activations 0.5 + [0.5, 1.5, -0.5] + [2, 1, 0] = [3, 3, 0].
    const float query = 0.25f;
    const nn::LocationAttentionResult r = nn::location_attend(p, keys, &query, first.data(), h, nullptr);
    const float e0 = std::tanh(3.0f);
    CHECK(r.scores[0] == doctest::Approx(e0).epsilon(1e-6));
    CHECK(r.scores[1] == doctest::Approx(e0).epsilon(1e-6));
    CHECK(r.scores[2] == doctest::Approx(0.0).epsilon(1e-6));
    const double z = 2 * std::exp(double(e0)) + 1;
    CHECK(r.weights[0] == doctest::Approx(std::exp(double(e0)) / z).epsilon(1e-6));
    CHECK(r.weights[1] == doctest::Approx(std::exp(double(e0)) / z).epsilon(1e-6));
    CHECK(r.weights[2] == doctest::Approx(1 / z).epsilon(1e-6));
    CHECK(r.context[0] == doctest::Approx(std::exp(double(e0)) / z - 1 / z).epsilon(1e-6));

    // The explained terms of the same step: with A = 1 and v = 1 they are the pre-activations' parts.
    const nn::LocationAttentionTerms t = nn::explain_location_attention(p, keys, &query, first.data(), h, nullptr);
    CHECK(t.query_term[0] == 0.5f);
    CHECK(t.query_along_v == 0.5f);
    CHECK(t.features(0, 0) == 2.0f);
    CHECK(t.features(1, 0) == 1.0f);
    CHECK(t.features(2, 0) == 0.0f);
    for (int j = 0; j < 3; ++j) {
        CAPTURE(j);
        CHECK(t.key_term(j, 0) == keys.projected(j, 0));
        CHECK(t.key_along_v[j] == keys.projected(j, 0));
        CHECK(t.location_term(j, 0) == t.features(j, 0));
        CHECK(t.location_along_v[j] == t.features(j, 0));
        CHECK(t.scores[j] == r.scores[j]);
        CHECK(t.weights[j] == r.weights[j]);
    }
    CHECK(t.context[0] == r.context[0]);
}

TEST_CASE("location attention: with zero filters it is the additive score, and the terms explain the scores") {
    const int dq = 6, dk = 5, A = 7, K = 3, width = 5, S = 9;
    nn::LocationAttentionParams p = random_params(dq, dk, A, K, width, 11);
    const Matrix h = make_matrix(S, dk, test::random_vector(std::size_t(S) * dk, 20));
    const std::vector<float> query = test::random_vector(dq, 21);
    std::vector<float> previous = test::random_vector(S, 22, 0.0f, 1.0f);
    const nn::LocationKeys keys = nn::prepare_location_keys(p, h);

    // Every term, recomputed from its definition.
    const nn::LocationAttentionTerms t = nn::explain_location_attention(p, keys, query.data(), previous.data(), h, nullptr);
    const nn::LocationAttentionResult r = nn::location_attend(p, keys, query.data(), previous.data(), h, nullptr);
    for (int j = 0; j < S; ++j) {
        CAPTURE(j);
        double score = 0, key_along_v = 0, location_along_v = 0;
        for (int a = 0; a < A; ++a) {
            double q = 0, k = p.key_proj.bias[a], l = 0;
            for (int i = 0; i < dq; ++i) q += p.query_proj.weight(a, i) * query[i];
            for (int i = 0; i < dk; ++i) k += p.key_proj.weight(a, i) * h(j, i);
            for (int f = 0; f < K; ++f) {
                double feature = 0;
                for (int w = 0; w < width; ++w) {
                    const int frame = j + w - width / 2;
                    if (frame >= 0 && frame < S) feature += p.filters(f, w) * previous[frame];
                }
                if (a == 0) CHECK(t.features(j, f) == doctest::Approx(feature).epsilon(1e-5));
                l += p.location_proj.weight(a, f) * feature;
            }
            CHECK(t.location_term(j, a) == doctest::Approx(l).epsilon(1e-5));
            score += p.v[a] * std::tanh(q + k + l);
            key_along_v += p.v[a] * k;
            location_along_v += p.v[a] * l;
        }
        CHECK(t.scores[j] == doctest::Approx(score).epsilon(1e-5));
        CHECK(r.scores[j] == t.scores[j]);
        CHECK(t.key_along_v[j] == doctest::Approx(key_along_v).epsilon(1e-5));
        CHECK(t.location_along_v[j] == doctest::Approx(location_along_v).epsilon(1e-5));
    }
    test::check_close(r.weights.data(), t.weights.data(), S, 0.0f, 0.0f, "weights");
    test::check_close(r.context.data(), t.context.data(), dk, 0.0f, 0.0f, "context");

    // Zero filters: no location term, so exactly nn::attend's additive score on the same W_q, W_k, v.
    p.filters.fill(0.0f);
    const nn::LocationAttentionResult plain = nn::location_attend(p, keys, query.data(), previous.data(), h, nullptr);
    nn::AttentionParams additive;
    additive.score = nn::Score::additive;
    additive.query_dim = dq;
    additive.key_dim = dk;
    additive.query_proj = p.query_proj;
    additive.key_proj = p.key_proj;
    additive.v = p.v;
    const nn::AttentionResult reference =
        nn::attend(additive, nn::prepare_keys(additive, h), query.data(), h, nullptr);
    test::check_close(plain.scores.data(), reference.scores.data(), S, 1e-6f, 1e-6f, "scores");
    test::check_close(plain.weights.data(), reference.weights.data(), S, 1e-6f, 0.0f, "weights");
    test::check_close(plain.context.data(), reference.context.data(), dk, 1e-6f, 0.0f, "context");
}

TEST_CASE("location attention: masked frames get -inf scores and zero weight") {
    const int S = 6;
    const nn::LocationAttentionParams p = random_params(4, 3, 8, 2, 3, 31);
    const Matrix h = make_matrix(S, 3, test::random_vector(std::size_t(S) * 3, 32));
    const std::vector<float> query = test::random_vector(4, 33);
    const std::vector<float> previous = {0.5f, 0.5f, 0.0f, 0.0f, 0.0f, 0.0f};
    const std::vector<uint8_t> mask = {1, 1, 1, 1, 0, 0};
    const nn::LocationKeys keys = nn::prepare_location_keys(p, h);
    const nn::LocationAttentionResult r = nn::location_attend(p, keys, query.data(), previous.data(), h, mask.data());
    double sum = 0;
    for (int j = 0; j < S; ++j) {
        CAPTURE(j);
        if (mask[j]) {
            CHECK(std::isfinite(r.scores[j]));
            CHECK(r.weights[j] > 0.0f);
        } else {
            CHECK(r.scores[j] == -std::numeric_limits<float>::infinity());
            CHECK(r.weights[j] == 0.0f);
        }
        sum += r.weights[j];
    }
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
    const nn::LocationAttentionTerms t = nn::explain_location_attention(p, keys, query.data(), previous.data(), h, mask.data());
    for (int j = 0; j < S; ++j) CHECK(t.scores[j] == r.scores[j]);

    // No frames at all: empty results, no reads.
    const nn::LocationKeys none = nn::prepare_location_keys(p, Matrix::from_shape({0, 3}));
    const nn::LocationAttentionResult empty = nn::location_attend(p, none, query.data(), nullptr, Matrix::from_shape({0, 3}), nullptr);
    CHECK(empty.scores.size() == 0);
    CHECK(empty.weights.size() == 0);
    REQUIRE(empty.context.size() == 3);
    CHECK(empty.context[0] == 0.0f);
}

TEST_CASE("location attention: inconsistent layers and keys are refused") {
    nn::LocationAttentionParams even = hand_params();
    even.filters = make_matrix(1, 4, {1, 2, 3, 4});
    CHECK_THROWS_WITH_AS(nn::validate(even), doctest::Contains("odd"), Error);
    nn::LocationAttentionParams wrong_filters = hand_params();
    wrong_filters.filters = make_matrix(2, 3, {1, 2, 3, 4, 5, 6});   // K = 2 but W_f reads 1
    CHECK_THROWS_WITH_AS(nn::validate(wrong_filters), doctest::Contains("W_f"), Error);
    nn::LocationAttentionParams wrong_query = hand_params();
    wrong_query.query_dim = 2;
    CHECK_THROWS_WITH_AS(nn::validate(wrong_query), doctest::Contains("W_q"), Error);
    nn::LocationAttentionParams no_filters = hand_params();
    no_filters.filters = Matrix();
    CHECK_THROWS_AS(nn::validate(no_filters), Error);

    const nn::LocationAttentionParams p = hand_params();
    CHECK_THROWS_WITH_AS(nn::prepare_location_keys(p, make_matrix(2, 2, {1, 2, 3, 4})),
                         doctest::Contains("key_dim"), Error);
    nn::LocationKeys stale = nn::prepare_location_keys(p, make_matrix(2, 1, {1, 2}));
    stale.length = 3;
    const float query = 0;
    const std::vector<float> previous(3, 0.0f);
    std::vector<float> scores(3);
    CHECK_THROWS_WITH_AS(nn::location_scores(p, stale, &query, previous.data(), nullptr, scores.data()),
                         doctest::Contains("prepare_location_keys"), Error);
    const nn::LocationKeys keys = nn::prepare_location_keys(p, make_matrix(2, 1, {1, 2}));
    CHECK_THROWS_WITH_AS(nn::location_attend(p, keys, &query, previous.data(), make_matrix(3, 1, {1, 2, 3}), nullptr),
                         doctest::Contains("rows"), Error);
}

TEST_CASE("location attention: PyTorch's LocationAttention, loaded from the speech fixture, step by step") {
    const gguf::File file = gguf::File::open(test::source_path("tests/fixtures/speech/las.gguf"));
    const gguf::File expected = gguf::File::open(test::source_path("tests/fixtures/speech/las.expected.gguf"));
    const int H = int(file.get_u32("attnlab.las.decoder_hidden_size")), dk = 2 * int(file.get_u32("attnlab.las.encoder_hidden_size"));
    const int A = int(file.get_u32("attnlab.las.attention_size")), K = int(file.get_u32("attnlab.las.location_filters"));
    const int width = int(file.get_u32("attnlab.las.location_width"));
    const nn::LocationAttentionParams p = nn::load_location_attention(file, "attn", H, dk, A, K, width);
    CHECK(p.attention_dim() == A);
    CHECK(p.filter_count() == K);
    CHECK(p.filter_width() == width);
    CHECK_FALSE(p.query_proj.has_bias());
    CHECK(p.key_proj.has_bias());
    CHECK_FALSE(p.location_proj.has_bias());
    // Other sizes than the file's are refused by name.
    CHECK_THROWS_WITH_AS(nn::load_location_attention(file, "attn", H, dk, A, K + 1, width),
                         doctest::Contains("attn.F.weight"), Error);
    CHECK_THROWS_WITH_AS(nn::load_location_attention(file, "attn", H, dk, A, K, width + 2),
                         doctest::Contains("attn.F.weight"), Error);
    CHECK_THROWS_WITH_AS(nn::load_location_attention(file, "attn", H, dk, A, K, width + 1),
                         doctest::Contains("odd"), Error);
    CHECK_THROWS_WITH_AS(nn::load_location_attention(file, "attn", H + 1, dk, A, K, width),
                         doctest::Contains("attn.W_q.weight"), Error);
    CHECK_THROWS_AS(nn::load_location_attention(file, "no_such_prefix", H, dk, A, K, width), Error);

    const Matrix h = expected.load_f32<2>("probe.annotations", {-1, dk});
    const int S = rows(h);
    const nn::LocationKeys keys = nn::prepare_location_keys(p, h);
    const Matrix keys_expected = expected.load_f32<2>("probe.keys", {S, A});
    test::check_close(keys.projected.data(), keys_expected.data(), keys_expected.size(), 1e-5f, 0.0f, "keys");

    // Each probe step from PyTorch's own query (s_{i-1}) and previous weights (a_{i-1}).
    const int steps = int(expected.get_i32_array("probe.tokens").size());
    const Matrix states = expected.load_f32<2>("probe.states", {steps, H});
    const Matrix weights = expected.load_f32<2>("probe.weights", {steps, S});
    const Matrix scores = expected.load_f32<2>("probe.scores", {steps, S});
    const Matrix context = expected.load_f32<2>("probe.context", {steps, dk});
    const Tensor3 features = expected.load_f32<3>("probe.location_features", {steps, S, K});
    const std::vector<float> s0 = expected.load_f32_flat("probe.s0");
    std::vector<float> previous(S, 0.0f);
    previous[0] = 1.0f;
    for (int i = 0; i < steps; ++i) {
        CAPTURE(i);
        const float* query = i == 0 ? s0.data() : states.data() + std::size_t(i - 1) * H;
        if (i > 0) std::copy(weights.data() + std::size_t(i - 1) * S, weights.data() + std::size_t(i) * S, previous.begin());
        const nn::LocationAttentionTerms t = nn::explain_location_attention(p, keys, query, previous.data(), h, nullptr);
        test::check_close(t.features.data(), features.data() + std::size_t(i) * S * K, std::size_t(S) * K, 1e-6f,
                          0.0f, "location features");
        test::check_close(t.scores.data(), scores.data() + std::size_t(i) * S, S, 1e-5f, 1e-5f, "scores");
        test::check_close(t.weights.data(), weights.data() + std::size_t(i) * S, S, 1e-6f, 0.0f, "weights");
        test::check_close(t.context.data(), context.data() + std::size_t(i) * dk, dk, 1e-5f, 0.0f, "context");
    }
}
