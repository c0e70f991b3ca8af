// Multi-head attention against torch.nn.MultiheadAttention (average_attn_weights=False): causal
// self-attention, cross-attention with a key padding mask, and step-by-step decoding over a KV cache
// (fixtures: python/attnlab/golden/layers.py -> tests/fixtures/layers/multihead.gguf).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/nn/multihead.hpp"
#include "test_support.hpp"

using namespace attnlab;

namespace {

const gguf::File& mha_fixture() {
    static const gguf::File file = gguf::File::open(test::source_path("tests/fixtures/layers/multihead.gguf"));
    return file;
}

nn::MultiHeadAttention load_fixture_mha() {
    const gguf::File& file = mha_fixture();
    return nn::load_multihead(file, "mha", int(file.get_u32("mha.d_model")), int(file.get_u32("mha.heads")));
}

std::vector<uint8_t> load_mask(const std::string& name) {
    std::vector<uint8_t> mask;
    for (float m : mha_fixture().load_f32_flat(name)) mask.push_back(m != 0.0f);
    return mask;
}

}  // namespace

TEST_CASE("multihead: causal self-attention matches PyTorch (outputs and per-head weights)") {
    const nn::MultiHeadAttention mha = load_fixture_mha();
    REQUIRE(mha.d_model == 10);
    REQUIRE(mha.heads == 2);
    const Matrix x = mha_fixture().load_f32<2>("self.x", {-1, 10});
    const std::vector<float> expected_out = mha_fixture().load_f32_flat("self.out");
    const std::vector<float> expected_attn = mha_fixture().load_f32_flat("self.attn");
    Tensor3 weights;
    const Matrix out = nn::mha_forward(mha, x, x, nullptr, true, &weights);
    const int T = rows(x);
    REQUIRE(weights.shape()[0] == 2);
    REQUIRE(int(weights.shape()[1]) == T);
    REQUIRE(int(weights.shape()[2]) == T);
    test::check_close(out.data(), expected_out.data(), expected_out.size(), 1e-5f, 0.0f, "out");
    test::check_close(weights.data(), expected_attn.data(), expected_attn.size(), 1e-5f, 0.0f, "weights");
    for (int h = 0; h < 2; ++h)
        for (int i = 0; i < T; ++i)
            for (int j = i + 1; j < T; ++j) CHECK(weights(h, i, j) == 0.0f);   // position i sees only j <= i
}

TEST_CASE("multihead: the raw scores are q·k/√hd, -inf where a mask hides the key, and their softmax is the weights") {
    const nn::MultiHeadAttention mha = load_fixture_mha();
    const gguf::File& file = mha_fixture();
    const Matrix query = file.load_f32<2>("cross.query", {-1, 10});
    const Matrix memory = file.load_f32<2>("cross.memory", {-1, 10});
    const std::vector<uint8_t> padding = load_mask("cross.mask");
    const int hd = mha.head_dim();
    const Matrix q = nn::linear(mha.q, query), k = nn::linear(mha.k, memory);
    for (bool causal : {false, true}) {
        CAPTURE(causal);
        Tensor3 weights, scores;
        const Matrix out = nn::mha_forward(mha, query, memory, padding.data(), causal, &weights, &scores);
        Tensor3 weights_alone;
        const Matrix out_alone = nn::mha_forward(mha, query, memory, padding.data(), causal, &weights_alone);
        CHECK(out == out_alone);  // asking for the scores changes nothing else
        CHECK(weights == weights_alone);
        REQUIRE(scores.shape() == weights.shape());
        const int H = int(scores.shape()[0]), T = int(scores.shape()[1]), S = int(scores.shape()[2]);
        for (int h = 0; h < H; ++h)
            for (int i = 0; i < T; ++i) {
                const bool sees_any = [&] {
                    for (int j = 0; j < S; ++j)
                        if (padding[j] && !(causal && j > i)) return true;
                    return false;
                }();
                double top = -INFINITY, sum = 0;
                for (int j = 0; j < S; ++j)
                    if (std::isfinite(scores(h, i, j))) top = std::max(top, double(scores(h, i, j)));
                for (int j = 0; j < S; ++j)
                    if (std::isfinite(scores(h, i, j))) sum += std::exp(double(scores(h, i, j)) - top);
                for (int j = 0; j < S; ++j) {
                    CAPTURE(h);
                    CAPTURE(i);
                    CAPTURE(j);
                    const bool hidden = !padding[j] || (causal && j > i);
                    if (hidden) {
                        CHECK(scores(h, i, j) == -std::numeric_limits<float>::infinity());
                        continue;
                    }
                    double dot = 0;
                    for (int c = 0; c < hd; ++c) dot += double(q(i, h * hd + c)) * double(k(j, h * hd + c));
                    CHECK(scores(h, i, j) == doctest::Approx(dot / std::sqrt(double(hd))).epsilon(1e-5).scale(1.0));
                    if (sees_any)
                        CHECK(weights(h, i, j) == doctest::Approx(std::exp(double(scores(h, i, j)) - top) / sum).epsilon(1e-5));
                }
            }
    }
}

TEST_CASE("multihead: incremental decoding over a KV cache equals the causal forward") {
    const nn::MultiHeadAttention mha = load_fixture_mha();
    const Matrix x = mha_fixture().load_f32<2>("self.x", {-1, 10});
    const std::vector<float> expected_out = mha_fixture().load_f32_flat("self.out");
    const std::vector<float> expected_attn = mha_fixture().load_f32_flat("self.attn");
    const int T = rows(x), d = 10;
    nn::KVCache cache = nn::make_kv_cache(mha, 2);   // small on purpose: it must grow
    for (int t = 0; t < T; ++t) {
        CAPTURE(t);
        std::vector<float> y(d);
        Matrix weights;
        nn::mha_step(mha, x.data() + t * d, cache, y.data(), &weights);
        CHECK(cache.length == t + 1);
        REQUIRE(weights.shape()[0] == 2);
        REQUIRE(int(weights.shape()[1]) == t + 1);
        test::check_close(y.data(), expected_out.data() + t * d, d, 1e-5f, 0.0f, "step output");
        for (int h = 0; h < 2; ++h)
            test::check_close(weights.data() + h * (t + 1), expected_attn.data() + (h * T + t) * T, t + 1, 1e-5f, 0.0f,
                              "step weights");
    }
}

TEST_CASE("multihead: cross-attention with a key padding mask, whole and over a precomputed memory") {
    const nn::MultiHeadAttention mha = load_fixture_mha();
    const gguf::File& file = mha_fixture();
    const Matrix query = file.load_f32<2>("cross.query", {-1, 10});
    const Matrix memory = file.load_f32<2>("cross.memory", {-1, 10});
    const std::vector<uint8_t> mask = load_mask("cross.mask");
    const std::vector<float> expected_out = file.load_f32_flat("cross.out");
    const std::vector<float> expected_attn = file.load_f32_flat("cross.attn");
    const int T = rows(query), S = rows(memory), d = 10;

    Tensor3 weights;
    const Matrix out = nn::mha_forward(mha, query, memory, mask.data(), false, &weights);
    test::check_close(out.data(), expected_out.data(), expected_out.size(), 1e-5f, 0.0f, "out");
    test::check_close(weights.data(), expected_attn.data(), expected_attn.size(), 1e-5f, 0.0f, "weights");

    const nn::KVCache cache = nn::mha_precompute_kv(mha, memory);
    CHECK(cache.length == S);
    for (int t = 0; t < T; ++t) {
        std::vector<float> y(d);
        Matrix step_weights;
        nn::mha_attend_cache(mha, query.data() + t * d, cache, mask.data(), y.data(), &step_weights);
        test::check_close(y.data(), expected_out.data() + t * d, d, 1e-5f, 0.0f, "cached output");
        for (int h = 0; h < 2; ++h) {
            test::check_close(step_weights.data() + h * S, expected_attn.data() + (h * T + t) * S, S, 1e-5f, 0.0f,
                              "cached weights");
            double sum = 0;
            for (int s = 0; s < S; ++s) sum += step_weights(h, s);
            CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
        }
    }
}

TEST_CASE("multihead: a fully masked source gives finite outputs (out_proj's bias) and zero weights") {
    const nn::MultiHeadAttention mha = load_fixture_mha();
    const Matrix query = mha_fixture().load_f32<2>("cross.query", {-1, 10});
    const Matrix memory = mha_fixture().load_f32<2>("cross.memory", {-1, 10});
    const std::vector<uint8_t> none(rows(memory), 0);
    Tensor3 weights;
    const Matrix out = nn::mha_forward(mha, query, memory, none.data(), false, &weights);
    for (float w : weights) CHECK(w == 0.0f);
    for (int t = 0; t < rows(out); ++t)
        for (int j = 0; j < 10; ++j) CHECK(out(t, j) == doctest::Approx(mha.out.bias[j]).epsilon(1e-6));
}

TEST_CASE("multihead: bad shapes are attnlab::Error") {
    const nn::MultiHeadAttention mha = load_fixture_mha();
    const Matrix narrow = xt::zeros<float>({3, 9});
    const Matrix ok = xt::zeros<float>({3, 10});
    CHECK_THROWS_AS(nn::mha_forward(mha, narrow, ok, nullptr, false), Error);
    CHECK_THROWS_AS(nn::mha_forward(mha, ok, narrow, nullptr, false), Error);
    CHECK_THROWS_AS(nn::load_multihead(mha_fixture(), "mha", 10, 3), Error);   // 10 % 3 != 0
    CHECK_THROWS_AS(nn::load_multihead(mha_fixture(), "mha", 12, 2), Error);   // wrong d_model
    nn::MultiHeadAttention broken = mha;
    broken.heads = 0;
    CHECK_THROWS_AS(nn::mha_forward(broken, ok, ok, nullptr, false), Error);
    nn::KVCache cache = nn::mha_precompute_kv(mha, ok);
    cache.length = 4;   // more positions than rows
    std::vector<float> y(10);
    CHECK_THROWS_AS(nn::mha_attend_cache(mha, ok.data(), cache, nullptr, y.data()), Error);
}
