// The Transformer against PyTorch (python/attnlab/golden/transformer.py -> tests/fixtures/transformer/tiny.gguf):
// greedy and beam tokens, every attention tensor, the step logits; the KV-cached step against a full
// recomputation of the decoder; beam hypotheses that share a prefix keep separate caches; the Model API.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "attnlab/attnlab.hpp"
#include "attnlab/decode/search.hpp"
#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/models/transformer.hpp"
#include "test_support.hpp"

using namespace attnlab;

namespace {

const std::string& fixture_path() {
    static const std::string path = test::source_path("tests/fixtures/transformer/tiny.gguf");
    return path;
}

const gguf::File& fixture() {
    static const gguf::File file = gguf::File::open(fixture_path());
    return file;
}

const models::Transformer& tiny_model() {
    static const models::Transformer model = models::load_transformer(fixture());
    return model;
}

std::string key(int i, const char* name) { return "test." + std::to_string(i) + "." + name; }

std::vector<float> flat(const Tensor4& t) { return std::vector<float>(t.data(), t.data() + t.size()); }

constexpr float kAttentionTolerance = 1e-5f;  // the issue asks for 1e-4

}  // namespace

TEST_CASE("transformer: the fixture loads with the expected sizes") {
    const models::Transformer& model = tiny_model();
    CHECK(model.config.d_model == 32);
    CHECK(model.config.heads == 4);
    CHECK(model.encoder.size() == 2);
    CHECK(model.decoder.size() == 2);
    CHECK(fixture().get_u32("test.case_count") >= 3);
}

TEST_CASE("transformer: greedy tokens, attention tensors and logits match PyTorch") {
    const models::Transformer& model = tiny_model();
    const int cases = static_cast<int>(fixture().get_u32("test.case_count"));
    for (int i = 0; i < cases; ++i) {
        CAPTURE(i);
        const std::vector<int32_t> source = fixture().get_i32_array(key(i, "source_ids"));
        const std::vector<int32_t> expected = fixture().get_i32_array(key(i, "greedy_ids"));
        const models::TransformerEncoded encoded = models::transformer_encode(model, source);
        test::check_close(flat(encoded.self_attention), fixture().load_f32_flat(key(i, "encoder_self")),
                          kAttentionTolerance, 0.0f, "encoder self-attention");

        const models::TransformerDecoder decoder(model, encoded);
        const decode::Hypothesis greedy = decode::greedy_search(decoder, {});
        CHECK(greedy.tokens == expected);

        Tensor4 self_attention, cross_attention;
        models::transformer_output_attention(model, encoded, expected, self_attention, cross_attention);
        test::check_close(flat(self_attention), fixture().load_f32_flat(key(i, "decoder_self")), kAttentionTolerance,
                          0.0f, "decoder self-attention");
        test::check_close(flat(cross_attention), fixture().load_f32_flat(key(i, "cross")), kAttentionTolerance, 0.0f,
                          "cross-attention");

        // Step logits [T+1, V] against PyTorch's teacher-forced decoder.
        std::vector<int32_t> inputs{model.bos};
        inputs.insert(inputs.end(), expected.begin(), expected.end());
        const Matrix logits = models::transformer_decode_full(model, encoded, inputs, nullptr, nullptr);
        const std::vector<float> expected_logits = fixture().load_f32_flat(key(i, "logits"));
        test::check_close(logits.data(), expected_logits.data(), expected_logits.size(), 1e-4f, 1e-5f, "logits");

        // The generic single-row view is the last layer's cross-attention averaged over heads.
        REQUIRE(greedy.attention.size() == expected.size());
        const std::size_t H = cross_attention.shape()[1], T = expected.size(), S = source.size();
        for (std::size_t t = 0; t < T; ++t) {
            std::vector<float> mean(S, 0.0f);
            for (std::size_t h = 0; h < H; ++h)
                for (std::size_t s = 0; s < S; ++s) mean[s] += cross_attention(1, h, t, s) / float(H);
            test::check_close(greedy.attention[t], mean, 1e-5f, 0.0f, "averaged cross-attention row");
            REQUIRE(greedy.scores[t].size() == S);
        }
    }
}

TEST_CASE("transformer: beam search tokens match PyTorch") {
    const models::Transformer& model = tiny_model();
    const int cases = static_cast<int>(fixture().get_u32("test.case_count"));
    decode::SearchOptions options;
    options.beam = static_cast<int>(fixture().get_u32("test.beam"));
    int differs_from_greedy = 0;
    for (int i = 0; i < cases; ++i) {
        CAPTURE(i);
        const models::TransformerEncoded encoded =
            models::transformer_encode(model, fixture().get_i32_array(key(i, "source_ids")));
        const models::TransformerDecoder decoder(model, encoded);
        const std::vector<int32_t> expected = fixture().get_i32_array(key(i, "beam_ids"));
        CHECK(decode::beam_search(decoder, options).tokens == expected);
        differs_from_greedy += expected != fixture().get_i32_array(key(i, "greedy_ids"));
    }
    CHECK(differs_from_greedy > 0);  // otherwise the fixture would not tell beam search from greedy
}

TEST_CASE("transformer: the KV-cached step equals a full recomputation over the prefix") {
    const models::Transformer& model = tiny_model();
    const std::vector<int32_t> source = fixture().get_i32_array(key(0, "source_ids"));
    const models::TransformerEncoded encoded = models::transformer_encode(model, source);
    std::vector<int32_t> inputs{model.bos};
    for (int32_t t : fixture().get_i32_array(key(0, "greedy_ids"))) inputs.push_back(t);
    const int T = static_cast<int>(inputs.size()), V = model.config.target_vocab, L = model.config.decoder_layers;

    std::vector<nn::KVCache> caches;
    for (const auto& layer : model.decoder) caches.push_back(nn::make_kv_cache(layer.self_attention, 2));
    std::vector<float> logits(V);
    for (int t = 0; t < T; ++t) {
        CAPTURE(t);
        models::TransformerStepAttention attention;
        models::transformer_step(model, encoded, inputs[t], caches, logits.data(), &attention);
        const std::vector<int32_t> prefix(inputs.begin(), inputs.begin() + t + 1);
        Tensor4 self_attention, cross_attention;
        const Matrix full = models::transformer_decode_full(model, encoded, prefix, &self_attention, &cross_attention);
        test::check_close(logits.data(), full.data() + std::size_t(t) * V, V, 1e-4f, 1e-5f, "step logits");
        for (int l = 0; l < L; ++l) {
            const Matrix& self_row = attention.self[l];  // [H, t+1]
            REQUIRE(int(self_row.shape()[1]) == t + 1);
            for (std::size_t h = 0; h < self_row.shape()[0]; ++h)
                test::check_close(self_row.data() + h * (t + 1), &self_attention(l, h, t, 0), t + 1, 1e-5f, 0.0f,
                                  "self row");
        }
    }
    CHECK(caches[0].length == T);
}

TEST_CASE("transformer: beam children that share a parent do not share caches") {
    const models::Transformer& model = tiny_model();
    const models::TransformerEncoded encoded =
        models::transformer_encode(model, fixture().get_i32_array(key(1, "source_ids")));
    const models::TransformerDecoder decoder(model, encoded);
    decode::StepOutput out, a1, b1, a2;
    const decode::StatePtr root = decoder.step(*decoder.initial_state(), model.bos, out);
    // Two children of the same parent, then the first child again: its result must not depend on the sibling.
    const decode::StatePtr a = decoder.step(*root, 5, a1);
    const decode::StatePtr b = decoder.step(*root, 6, b1);
    decoder.step(*b, 7, out);
    decoder.step(*a, 7, a2);
    decode::StepOutput fresh;
    const decode::StatePtr a_again = decoder.step(*decoder.step(*decoder.initial_state(), model.bos, out), 5, out);
    decoder.step(*a_again, 7, fresh);
    CHECK(a2.logits == fresh.logits);
    CHECK(a1.logits != b1.logits);
}

TEST_CASE("transformer: Model::translate returns the tensors with their dimensions") {
    const Model model = Model::open(fixture_path());
    CHECK(model.architecture() == "attnlab.transformer");
    const std::string text = fixture().get_string(key(0, "text"));
    TranslateOptions all_layers;
    all_layers.all_layers = true;
    const Translation t = model.translate(text, all_layers);
    // Without the option the decoder's per-layer tensors are not computed; the rest is the same.
    const Translation plain = model.translate(text);
    CHECK(plain.cross_attention.empty());
    CHECK(plain.decoder_self_attention.empty());
    CHECK(plain.target_ids == t.target_ids);
    CHECK(plain.attention == t.attention);
    CHECK(plain.encoder_self_attention.data == t.encoder_self_attention.data);
    const std::vector<int32_t> expected = fixture().get_i32_array(key(0, "greedy_ids"));
    CHECK(t.source_ids == fixture().get_i32_array(key(0, "source_ids")));
    CHECK(t.target_ids == expected);
    const std::size_t T = expected.size(), S = t.source_ids.size();
    CHECK(t.attention.size() == T * S);
    CHECK(t.scores.size() == T * S);
    CHECK(t.score_function == "scaled_dot");
    CHECK(t.encoder_self_attention.layers == 2);
    CHECK(t.encoder_self_attention.heads == 4);
    CHECK(t.encoder_self_attention.rows == int(S));
    CHECK(t.encoder_self_attention.cols == int(S));
    test::check_close(t.encoder_self_attention.data, fixture().load_f32_flat(key(0, "encoder_self")), 1e-5f, 0.0f,
                      "encoder self");
    CHECK(t.decoder_self_attention.rows == int(T));
    CHECK(t.decoder_self_attention.cols == int(T));
    test::check_close(t.decoder_self_attention.data, fixture().load_f32_flat(key(0, "decoder_self")), 1e-5f, 0.0f,
                      "decoder self");
    CHECK(t.cross_attention.rows == int(T));
    CHECK(t.cross_attention.cols == int(S));
    test::check_close(t.cross_attention.data, fixture().load_f32_flat(key(0, "cross")), 1e-5f, 0.0f, "cross");

    TranslateOptions beam;
    beam.beam = static_cast<int>(fixture().get_u32("test.beam"));
    CHECK(model.translate(text, beam).target_ids == fixture().get_i32_array(key(0, "beam_ids")));
    CHECK_THROWS_AS(model.translate(""), Error);
}

TEST_CASE("transformer: bad input is rejected with an error") {
    const models::Transformer& model = tiny_model();
    CHECK_THROWS_AS(models::transformer_encode(model, {}), Error);
    CHECK_THROWS_AS(models::transformer_encode(model, {5, 100000}), Error);
    const models::TransformerEncoded encoded = models::transformer_encode(model, {5, 3});
    std::vector<nn::KVCache> wrong(1);
    std::vector<float> logits(model.config.target_vocab);
    CHECK_THROWS_AS(models::transformer_step(model, encoded, 5, wrong, logits.data(), nullptr), Error);
}
