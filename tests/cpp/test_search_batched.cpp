// Batched decoding (Decoder::step_batch / select_batch, SearchOptions::batched) against the batch-1 reference
// (SearchOptions::batched = false: every hypothesis stepped alone through Decoder::step), on the RNN and
// Transformer fixtures and the shipped f16 and q8_0 translators, for beams 1, 2, 4 and 16; and the batched
// linear layer against its one-row form; best_of_row against a full sort.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attnlab/decode/batched.hpp"
#include "attnlab/decode/search.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/models/rnn_seq2seq.hpp"
#include "attnlab/models/transformer.hpp"
#include "attnlab/nn/linear.hpp"
#include "attnlab/parallel/pool.hpp"
#include "attnlab/text/tokenizer.hpp"
#include "attnlab/threads.hpp"
#include "test_support.hpp"

using namespace attnlab;

namespace {

// Summation order is all that may differ (the GEMM instead of the GEMV): attention and context move by float
// rounding only, and so does log p. With one row, and for Q8_0 weights, the batched step computes the same
// float operations, so those are compared exactly.
constexpr float kAttentionTolerance = 1e-4f;

void check_rows(const std::vector<std::vector<float>>& batched, const std::vector<std::vector<float>>& reference,
                bool exact, const char* what) {
    REQUIRE(batched.size() == reference.size());
    for (std::size_t i = 0; i < batched.size(); ++i) {
        CAPTURE(i);
        REQUIRE(batched[i].size() == reference[i].size());
        if (exact)
            CHECK(batched[i] == reference[i]);
        else
            test::check_close(batched[i], reference[i], kAttentionTolerance, 1e-4f, what);
    }
}

// Both searches on one decoder; returns the number of tokens, so a caller can see that something was decoded.
std::size_t check_same_search(const decode::Decoder& decoder, int beam, bool exact) {
    CAPTURE(beam);
    decode::SearchOptions options;
    options.beam = beam;
    options.batched = false;
    const decode::Hypothesis reference = decode::search(decoder, options);
    options.batched = true;
    const decode::Hypothesis batched = decode::search(decoder, options);
    CHECK(batched.tokens == reference.tokens);
    CHECK(batched.finished == reference.finished);
    if (exact) {
        CHECK(batched.log_probability == reference.log_probability);
        CHECK(batched.score == reference.score);
    } else {
        CHECK(batched.log_probability == doctest::Approx(reference.log_probability).epsilon(1e-5));
        CHECK(batched.score == doctest::Approx(reference.score).epsilon(1e-5));
    }
    if (batched.tokens == reference.tokens) {
        check_rows(batched.attention, reference.attention, exact, "attention");
        check_rows(batched.scores, reference.scores, exact, "scores");
        check_rows(batched.context, reference.context, exact, "context");
    }
    return reference.tokens.size();
}

const int kBeams[] = {1, 2, 4, 16};

// Source ids of the fixture's own test sentences (the golden generators' inputs).
std::vector<std::vector<int32_t>> fixture_sentences(const std::string& expected_path) {
    const gguf::File expected = gguf::File::open(expected_path);
    std::vector<std::vector<int32_t>> out;
    for (int i = 0; expected.has("sentence." + std::to_string(i) + ".source_ids"); ++i)
        out.push_back(expected.get_i32_array("sentence." + std::to_string(i) + ".source_ids"));
    return out;
}

std::vector<int32_t> encode(const gguf::File& file, const std::string& text, int eos) {
    std::vector<int32_t> ids = text::Tokenizer::from_gguf(file, "source").encode(text);
    ids.push_back(eos);
    return ids;
}

const char* const kEnglish[] = {
    "A man in a blue shirt is standing on a ladder.",
    "Two dogs are running through the snow.",
};

// With Q8_0 weights every row of a batched projection is the int8 GEMV's own result; with halves or floats the
// GEMM sums in another order. One row is always the GEMV.
bool exact_rows(const nn::Linear& output_layer, int beam) { return beam == 1 || output_layer.quantized(); }

void check_rnn(const std::string& path, const std::vector<std::vector<int32_t>>& sentences) {
    CAPTURE(path);
    const gguf::File file = gguf::File::open(path);
    const models::RnnSeq2Seq model = models::load_rnn_seq2seq(file);
    REQUIRE(!sentences.empty());
    std::size_t tokens = 0;
    for (std::size_t s = 0; s < sentences.size(); ++s) {
        CAPTURE(s);
        const models::RnnEncoded encoded = models::rnn_encode(model, sentences[s]);
        const models::RnnDecoder decoder(model, encoded);
        for (int beam : kBeams)
            if (beam < 16 || s == 0) tokens += check_same_search(decoder, beam, exact_rows(model.target_embedding, beam));
    }
    CHECK(tokens > 0);
}

void check_transformer(const std::string& path, const std::vector<std::vector<int32_t>>& sentences) {
    CAPTURE(path);
    const gguf::File file = gguf::File::open(path);
    const models::Transformer model = models::load_transformer(file);
    REQUIRE(!sentences.empty());
    std::size_t tokens = 0;
    for (std::size_t s = 0; s < sentences.size(); ++s) {
        CAPTURE(s);
        const models::TransformerEncoded encoded = models::transformer_encode(model, sentences[s]);
        const models::TransformerDecoder decoder(model, encoded);
        for (int beam : kBeams)
            if (beam < 16 || s == 0) tokens += check_same_search(decoder, beam, exact_rows(model.target_embedding, beam));
    }
    CHECK(tokens > 0);
}

std::vector<std::vector<int32_t>> shipped_sentences(const std::string& path, int eos) {
    const gguf::File file = gguf::File::open(path);
    std::vector<std::vector<int32_t>> out;
    for (const char* text : kEnglish) out.push_back(encode(file, text, eos));
    return out;
}

}  // namespace

TEST_CASE("batched search: the RNN fixtures (every score function, f32 and Q8_0) decode as the batch-1 path") {
    for (const char* score : {"additive", "dot", "general", "cosine"}) {
        const std::string base = test::source_path(std::string("tests/fixtures/rnn/") + score);
        check_rnn(base + ".gguf", fixture_sentences(base + ".expected.gguf"));
    }
    check_rnn(test::source_path("tests/fixtures/rnn/additive.q8_0.gguf"),
              fixture_sentences(test::source_path("tests/fixtures/rnn/additive.expected.gguf")));
}

TEST_CASE("batched search: the Transformer fixture decodes as the batch-1 path") {
    const std::string path = test::source_path("tests/fixtures/transformer/tiny.gguf");
    const gguf::File file = gguf::File::open(path);
    std::vector<std::vector<int32_t>> sentences;
    for (int i = 0; file.has("test." + std::to_string(i) + ".source_ids"); ++i)
        sentences.push_back(file.get_i32_array("test." + std::to_string(i) + ".source_ids"));
    check_transformer(path, sentences);
}

TEST_CASE("batched search: the shipped RNN (f16 and q8_0) decodes as the batch-1 path") {
    for (const char* name : {"bahdanau-en-de.f16.gguf", "bahdanau-en-de.q8_0.gguf"}) {
        const std::string path = test::source_path(std::string("models/weights/") + name);
        const gguf::File file = gguf::File::open(path);
        check_rnn(path, shipped_sentences(path, static_cast<int>(file.get_u32("tokenizer.target.eos_token_id"))));
    }
}

TEST_CASE("batched search: the shipped Transformer (f16 and q8_0) decodes as the batch-1 path") {
    for (const char* name : {"transformer-en-de.f16.gguf", "transformer-en-de.q8_0.gguf"}) {
        const std::string path = test::source_path(std::string("models/weights/") + name);
        const gguf::File file = gguf::File::open(path);
        check_transformer(path, shipped_sentences(path, static_cast<int>(file.get_u32("tokenizer.target.eos_token_id"))));
    }
}

TEST_CASE("linear_batched: every row as linear() computes it alone (Q8_0 and f16 bit for bit, f32 within rounding)") {
    constexpr int kIn = 96, kOut = 70, kRows = 5;  // 70 rows: the chunks end on a partial group of 4
    nn::Linear f32;
    f32.in = kIn;
    f32.out = kOut;
    f32.weight = Matrix::from_shape({std::size_t(kOut), std::size_t(kIn)});
    const std::vector<float> w = test::random_vector(std::size_t(kOut) * kIn, 11);
    std::copy(w.begin(), w.end(), f32.weight.data());
    f32.bias = Vector::from_shape({std::size_t(kOut)});
    const std::vector<float> bias = test::random_vector(kOut, 12);
    std::copy(bias.begin(), bias.end(), f32.bias.data());

    nn::Linear q8 = f32;
    q8.weight = Matrix();
    std::vector<kernels::BlockQ8_0> blocks(std::size_t(kOut) * kIn / kernels::kQ8BlockSize);
    kernels::quantize_q8_0(w.data(), w.size(), blocks.data());
    q8.weight_q8 = nn::Q8Weights(std::move(blocks));
    nn::Linear q8_unpacked = q8;
    q8.weight_q8_scales = kernels::q8_scales_by4(q8.weight_q8.data(), kOut, kIn);
    nn::Linear q8_rows4 = q8;  // what the loaders make in wasm (kernels::q8_rows4_pays), here on every target
    q8_rows4.weight_q8_rows4 = kernels::interleave_q8_rows4(q8.weight_q8.data(), kOut, kIn);

    nn::Linear f16 = f32;  // what the loaders keep where kernels::keep_f16_weights(), here on every target
    f16.weight = Matrix();
    for (float v : w) f16.weight_f16.push_back(kernels::f32_to_f16(v));

    const std::vector<float> x = test::random_vector(std::size_t(kRows) * kIn, 13, -2.0f, 2.0f);
    for (const nn::Linear* layer : {&f32, &q8, &q8_unpacked, &q8_rows4, &f16}) {
        std::vector<float> batched(std::size_t(kRows) * kOut), one(kOut);
        nn::linear_batched(*layer, x.data(), kRows, batched.data());
        for (int r = 0; r < kRows; ++r) {
            CAPTURE(r);
            nn::linear(*layer, x.data() + std::size_t(r) * kIn, 1, one.data());
            const std::vector<float> row(batched.begin() + std::ptrdiff_t(r) * kOut,
                                         batched.begin() + std::ptrdiff_t(r + 1) * kOut);
            if (layer->quantized() || layer->half())
                CHECK(row == one);
            else
                test::check_close(row, one, 1e-5f, 1e-5f, "f32 row");
        }
    }
}

namespace {

// A random Q8_0 layer [out, in] with a bias, its block scales packed, and in rows4 layout when `interleaved`.
nn::Linear random_q8_layer(int in, int out, uint32_t seed, bool interleaved) {
    nn::Linear layer;
    layer.in = in;
    layer.out = out;
    const std::vector<float> w = test::random_vector(std::size_t(out) * in, seed);
    std::vector<kernels::BlockQ8_0> blocks(std::size_t(out) * in / kernels::kQ8BlockSize);
    kernels::quantize_q8_0(w.data(), w.size(), blocks.data());
    layer.weight_q8 = nn::Q8Weights(std::move(blocks));
    layer.weight_q8_scales = kernels::q8_scales_by4(layer.weight_q8.data(), out, in);
    if (interleaved) layer.weight_q8_rows4 = kernels::interleave_q8_rows4(layer.weight_q8.data(), out, in);
    layer.bias = Vector::from_shape({std::size_t(out)});
    const std::vector<float> bias = test::random_vector(out, seed + 1);
    std::copy(bias.begin(), bias.end(), layer.bias.data());
    return layer;
}

}  // namespace

TEST_CASE("linear_batched_stack: each layer exactly as linear_batched, at every thread count") {
    constexpr int kIn = 256, kRows = 8;  // enough multiply-adds for the pool to split at 2 threads
    // Q8_0 layers of 128, 64 and 70 rows (the last ends on a partial group of 4), interleaved and not.
    for (bool interleaved : {false, true}) {
        CAPTURE(interleaved);
        const nn::Linear a = random_q8_layer(kIn, 128, 21, interleaved), b = random_q8_layer(kIn, 64, 23, interleaved),
                         c = random_q8_layer(kIn, 70, 25, !interleaved);
        const nn::Linear* layers[] = {&a, &b, &c};
        const std::vector<float> x = test::random_vector(std::size_t(kRows) * kIn, 27, -2.0f, 2.0f);
        for (int threads : {1, std::min(2, max_threads())}) {  // the single-thread wasm build has 1 only
            CAPTURE(threads);
            set_threads(threads);
            std::vector<std::vector<float>> stacked, alone;
            for (const nn::Linear* layer : layers) {
                stacked.emplace_back(std::size_t(kRows) * layer->out, -1.0f);
                alone.emplace_back(std::size_t(kRows) * layer->out);
                nn::linear_batched(*layer, x.data(), kRows, alone.back().data());
            }
            float* outputs[] = {stacked[0].data(), stacked[1].data(), stacked[2].data()};
            const long long before = parallel::split_calls();
            nn::linear_batched_stack(layers, 3, x.data(), kRows, outputs);
            if (threads > 1) CHECK(parallel::split_calls() > before);  // the three products as one split
            for (int i = 0; i < 3; ++i) CHECK(stacked[i] == alone[i]);
        }
        set_threads(0);
    }
    // A layer whose rows are not a multiple of 64 before the last, or f32 weights: layer by layer, the same.
    const nn::Linear odd = random_q8_layer(kIn, 70, 31, false), last = random_q8_layer(kIn, 64, 33, false);
    const nn::Linear* layers[] = {&odd, &last};
    const std::vector<float> x = test::random_vector(std::size_t(kRows) * kIn, 35);
    std::vector<float> y0(std::size_t(kRows) * 70), y1(std::size_t(kRows) * 64), e0(y0.size()), e1(y1.size());
    float* outputs[] = {y0.data(), y1.data()};
    nn::linear_batched_stack(layers, 2, x.data(), kRows, outputs);
    nn::linear_batched(odd, x.data(), kRows, e0.data());
    nn::linear_batched(last, x.data(), kRows, e1.data());
    CHECK(y0 == e0);
    CHECK(y1 == e1);
}

namespace {

// The tree's winning path is the returned hypothesis: its tokens (and EOS when it finished so), its log-probs
// summing to the hypothesis's log p; every node hangs off one at the step before; at most `beam` live nodes a step.
void check_tree_is_the_hypothesis(const decode::Hypothesis& h, const decode::Decoder& decoder, int beam) {
    const decode::SearchTree& tree = h.tree;
    REQUIRE(tree.winner >= 0);
    REQUIRE(tree.winner < static_cast<int>(tree.nodes.size()));
    std::vector<int32_t> path;
    double sum = 0;
    for (int n = tree.winner; n >= 0; n = tree.nodes[n].parent) {
        path.insert(path.begin(), tree.nodes[n].token);
        sum += tree.nodes[n].log_probability;
    }
    CHECK(tree.nodes[tree.winner].finished);
    if (h.finished) {
        REQUIRE(!path.empty());
        CHECK(path.back() == decoder.eos());
        path.pop_back();
    }
    CHECK(path == h.tokens);
    CHECK(sum == doctest::Approx(h.log_probability).epsilon(1e-4));
    CHECK(tree.nodes[tree.winner].cumulative == doctest::Approx(h.log_probability).epsilon(1e-6));
    CHECK(tree.nodes[tree.winner].score == doctest::Approx(h.score).epsilon(1e-6));
    std::vector<int> live;
    for (const decode::TreeNode& node : tree.nodes) {
        if (node.parent >= 0) CHECK(tree.nodes[node.parent].step == node.step - 1);
        else CHECK(node.step == 0);
        if (!node.finished) {
            if (live.size() <= static_cast<std::size_t>(node.step)) live.resize(node.step + 1);
            ++live[node.step];
        }
    }
    for (int count : live) CHECK(count <= beam);
}

// The batched and one-by-one searches keep the same tree; recording it changes nothing in the result.
void check_same_tree(const decode::Decoder& decoder, int beam, bool exact) {
    CAPTURE(beam);
    decode::SearchOptions options;
    options.beam = beam;
    const decode::Hypothesis plain = decode::search(decoder, options);
    options.record_tree = true;
    const decode::Hypothesis batched = decode::search(decoder, options);
    options.batched = false;
    const decode::Hypothesis reference = decode::search(decoder, options);
    CHECK(plain.tree.nodes.empty());
    CHECK(batched.tokens == plain.tokens);
    CHECK(batched.log_probability == plain.log_probability);
    check_tree_is_the_hypothesis(batched, decoder, beam);
    check_tree_is_the_hypothesis(reference, decoder, beam);
    REQUIRE(batched.tree.nodes.size() == reference.tree.nodes.size());
    CHECK(batched.tree.winner == reference.tree.winner);
    for (std::size_t i = 0; i < batched.tree.nodes.size(); ++i) {
        CAPTURE(i);
        const decode::TreeNode &a = batched.tree.nodes[i], &b = reference.tree.nodes[i];
        CHECK(a.step == b.step);
        CHECK(a.parent == b.parent);
        CHECK(a.token == b.token);
        CHECK(a.finished == b.finished);
        if (exact) {
            CHECK(a.cumulative == b.cumulative);
        } else {
            CHECK(a.cumulative == doctest::Approx(b.cumulative).epsilon(1e-5));
            CHECK(a.score == doctest::Approx(b.score).epsilon(1e-5));
        }
    }
}

}  // namespace

TEST_CASE("search tree: the shipped RNN and Transformer keep the same tree batched and one by one, beams 1 and 4") {
    for (const char* name : {"bahdanau-en-de.q8_0.gguf", "transformer-en-de.q8_0.gguf", "transformer-en-de.f16.gguf"}) {
        CAPTURE(name);
        const std::string path = test::source_path(std::string("models/weights/") + name);
        const gguf::File file = gguf::File::open(path);
        const int eos = static_cast<int>(file.get_u32("tokenizer.target.eos_token_id"));
        const std::vector<int32_t> source = encode(file, kEnglish[0], eos);
        for (int beam : {1, 4}) {
            if (file.get_string("general.architecture") == "attnlab.bahdanau") {
                const models::RnnSeq2Seq model = models::load_rnn_seq2seq(file);
                const models::RnnEncoded encoded = models::rnn_encode(model, source);
                check_same_tree(models::RnnDecoder(model, encoded), beam, exact_rows(model.target_embedding, beam));
            } else {
                const models::Transformer model = models::load_transformer(file);
                const models::TransformerEncoded encoded = models::transformer_encode(model, source);
                check_same_tree(models::TransformerDecoder(model, encoded), beam,
                                exact_rows(model.target_embedding, beam));
            }
        }
    }
}

TEST_CASE("best_of_row: the kept candidates are the first of a full sort, ties and -inf included") {
    std::mt19937 rng(31);
    for (int vocab : {1, 5, 16, 17, 100, 8000})
        for (std::size_t keep : {std::size_t(1), std::size_t(3), std::size_t(8)}) {
            // Few distinct values, so ties are common; some -inf (banned tokens).
            std::uniform_int_distribution<int> level(0, 12);
            std::vector<float> values(static_cast<std::size_t>(vocab));
            for (float& v : values) {
                const int l = level(rng);
                v = l == 0 ? -std::numeric_limits<float>::infinity() : -0.25f * static_cast<float>(l);
            }
            std::vector<decode::Candidate<float>> all, best{{0.5f, 0, 7}};  // one from an earlier row stays first
            for (int v = 0; v < vocab; ++v) all.push_back({values[static_cast<std::size_t>(v)], 2, v});
            std::sort(all.begin(), all.end(), decode::ranks_before<float>);
            all.resize(std::min(all.size(), keep));
            decode::best_of_row(values.data(), vocab, 2, keep, best);
            CAPTURE(vocab);
            CAPTURE(keep);
            REQUIRE(best.size() == all.size() + 1);
            CHECK(best[0].token == 7);
            for (std::size_t i = 0; i < all.size(); ++i) {
                CHECK(best[i + 1].token == all[i].token);
                CHECK(best[i + 1].score == all[i].score);
            }
        }
}
