// Greedy and beam search (src/attnlab/decode/search.cpp, batched.hpp) on a toy decoder whose next-token
// distribution is a fixed table of the prefix, so every expected answer below is worked out by hand from those
// probabilities.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <vector>

#include "attnlab/decode/batched.hpp"
#include "attnlab/decode/search.hpp"
#include "attnlab/error.hpp"

using namespace attnlab;

namespace {

// Vocabulary: 0 pad, 1 unk, 2 BOS, 3 EOS, 4 A, 5 B (the project's special ids).
constexpr int32_t kBos = 2, kEos = 3, A = 4, B = 5;
constexpr int kVocab = 6;
constexpr int kSourceLength = 2;

using Prefix = std::vector<int32_t>;                          // tokens after BOS
using Table = std::function<std::map<int32_t, float>(const Prefix&)>;  // prefix -> {token: probability}

struct ToyState : decode::DecoderState {
    Prefix prefix;
};

// logits = log p (so log_softmax gives back log p); tokens missing from the table get -inf.
// Each step's attention row is {prefix length, 1 - prefix length}: it tells which step a row came from.
class ToyDecoder : public decode::Decoder {
public:
    explicit ToyDecoder(Table table) : table_(std::move(table)) {}
    int bos() const override { return kBos; }
    int eos() const override { return kEos; }
    int source_length() const override { return kSourceLength; }
    decode::StatePtr initial_state() const override { return std::make_shared<ToyState>(); }
    decode::StatePtr step(const decode::DecoderState& state, int32_t token, decode::StepOutput& out) const override {
        auto next = std::make_shared<ToyState>(static_cast<const ToyState&>(state));
        if (token != kBos) next->prefix.push_back(token);
        ++calls;
        out.logits.assign(kVocab, -std::numeric_limits<float>::infinity());
        for (const auto& [id, p] : table_(next->prefix)) out.logits[id] = std::log(p);
        const float depth = static_cast<float>(next->prefix.size());
        out.weights = {depth, 1.0f - depth};
        out.scores = {10.0f * depth, -depth};
        return next;
    }
    mutable int calls = 0;

private:
    Table table_;
};

decode::SearchOptions options(int beam, float length_penalty = 1.0f) {
    decode::SearchOptions o;
    o.beam = beam;
    o.length_penalty = length_penalty;
    return o;
}

decode::SearchOptions fixed_length(int beam, int max_length, float length_penalty = 1.0f) {
    decode::SearchOptions o = options(beam, length_penalty);
    o.max_length_ratio = 0.0f;
    o.max_length_extra = max_length;
    return o;
}

// [] -> A .5, B .4, EOS .1;  [A] -> EOS .4, A .3, B .3;  [B] -> EOS .9, A .05, B .05;  longer -> EOS .9, A .05, B .05
// Greedy takes A then EOS (p = .2); beam 2 finds B EOS (p = .36).
std::map<int32_t, float> greedy_trap(const Prefix& prefix) {
    if (prefix.empty()) return {{A, 0.5f}, {B, 0.4f}, {kEos, 0.1f}};
    if (prefix == Prefix{A}) return {{kEos, 0.4f}, {A, 0.3f}, {B, 0.3f}};
    return {{kEos, 0.9f}, {A, 0.05f}, {B, 0.05f}};
}

// Never ends: A .7, B .3 forever.
std::map<int32_t, float> endless(const Prefix&) { return {{A, 0.7f}, {B, 0.3f}}; }

}  // namespace

TEST_CASE("search: max_target_length is int(1.5 * |source| + 10), like python/attnlab/nn/seq2seq_rnn.py") {
    CHECK(decode::max_target_length(options(1), 2) == 13);
    CHECK(decode::max_target_length(options(1), 7) == 20);   // 20.5 truncates
    CHECK(decode::max_target_length(fixed_length(1, 4), 100) == 4);
}

TEST_CASE("search: greedy takes the argmax, stops at EOS (not returned, but counted in log p)") {
    const ToyDecoder decoder(greedy_trap);
    const decode::Hypothesis h = decode::greedy_search(decoder, options(1));
    CHECK(h.tokens == std::vector<int32_t>{A});
    CHECK(h.finished);
    CHECK(h.log_probability == doctest::Approx(std::log(0.5 * 0.4)).epsilon(1e-5));
    CHECK(h.score == doctest::Approx(h.log_probability));
    // One attention row per returned token, taken from the step that produced it (prefix [] -> depth 0).
    REQUIRE(h.attention.size() == 1);
    CHECK(h.attention[0] == std::vector<float>{0.0f, 1.0f});
    REQUIRE(h.scores.size() == 1);
    CHECK(h.scores[0] == std::vector<float>{0.0f, -0.0f});
    CHECK(decoder.calls == 2);   // the EOS step, then nothing more
    // search() with beam 1 is greedy.
    CHECK(decode::search(decoder, options(1)).tokens == h.tokens);
}

TEST_CASE("search: greedy without EOS stops at the maximum length, unfinished") {
    const ToyDecoder decoder(endless);
    const decode::Hypothesis h = decode::greedy_search(decoder, options(1));
    CHECK(h.tokens == std::vector<int32_t>(13, A));
    CHECK_FALSE(h.finished);
    CHECK(h.log_probability == doctest::Approx(13 * std::log(0.7)).epsilon(1e-5));
    REQUIRE(h.attention.size() == 13);
    for (int i = 0; i < 13; ++i) CHECK(h.attention[i][0] == float(i));
    CHECK(decode::greedy_search(decoder, fixed_length(1, 3)).tokens.size() == 3);
}

TEST_CASE("search: beam 2 finds the better sequence greedy misses") {
    const ToyDecoder decoder(greedy_trap);
    // Step 0 keeps A (.5) and B (.4). Step 1: B EOS = .36 and A EOS = .2 finish (2 = K finished: stop).
    // Normalized by length 2: log(.36)/2 > log(.2)/2.
    const decode::Hypothesis h = decode::beam_search(decoder, options(2));
    CHECK(h.tokens == std::vector<int32_t>{B});
    CHECK(h.finished);
    CHECK(h.log_probability == doctest::Approx(std::log(0.4 * 0.9)).epsilon(1e-5));
    CHECK(h.score == doctest::Approx(std::log(0.4 * 0.9) / 2).epsilon(1e-5));
    REQUIRE(h.attention.size() == 1);
    CHECK(h.attention[0] == std::vector<float>{0.0f, 1.0f});
    CHECK(decode::search(decoder, options(2)).tokens == h.tokens);
}

TEST_CASE("search: length normalization decides between a short finished and a long unfinished hypothesis") {
    // [] -> A .6, EOS .4;  [A] -> A .55, B .45 (no EOS). With at most 2 tokens and K = 2:
    //   step 0: A is kept, "EOS" finishes []: log p = log .4 = -0.916 over length 1;
    //   step 1 (last): A A finishes by the limit: log p = log(.6 * .55) = -1.109 over length 2.
    // alpha = 1: -0.554 > -0.916 -> [A, A];  alpha = 0: -0.916 > -1.109 -> [] (the empty translation).
    const ToyDecoder decoder([](const Prefix& prefix) -> std::map<int32_t, float> {
        if (prefix.empty()) return {{A, 0.6f}, {kEos, 0.4f}};
        return {{A, 0.55f}, {B, 0.45f}};
    });
    const decode::Hypothesis normalized = decode::beam_search(decoder, fixed_length(2, 2, 1.0f));
    CHECK(normalized.tokens == std::vector<int32_t>{A, A});
    CHECK_FALSE(normalized.finished);
    CHECK(normalized.log_probability == doctest::Approx(std::log(0.6 * 0.55)).epsilon(1e-5));
    CHECK(normalized.score == doctest::Approx(std::log(0.6 * 0.55) / 2).epsilon(1e-5));
    REQUIRE(normalized.attention.size() == 2);
    CHECK(normalized.attention[1][0] == 1.0f);   // the second token came from the step after prefix [A]

    const decode::Hypothesis raw = decode::beam_search(decoder, fixed_length(2, 2, 0.0f));
    CHECK(raw.tokens.empty());
    CHECK(raw.finished);
    CHECK(raw.score == doctest::Approx(std::log(0.4)).epsilon(1e-5));
    CHECK(raw.attention.empty());
}

TEST_CASE("search: beam without EOS returns the best hypothesis at the maximum length") {
    const ToyDecoder decoder(endless);
    const decode::Hypothesis h = decode::beam_search(decoder, fixed_length(3, 4));
    CHECK(h.tokens == std::vector<int32_t>(4, A));
    CHECK_FALSE(h.finished);
    CHECK(h.log_probability == doctest::Approx(4 * std::log(0.7)).epsilon(1e-5));
    CHECK(h.attention.size() == 4);
    CHECK(h.scores.size() == 4);
}

TEST_CASE("search: ties go to the lower token id (greedy) and to the first finished hypothesis (beam)") {
    // [] -> A .5, B .5;  afterwards EOS for sure. Both A EOS and B EOS score log(.5)/2.
    const ToyDecoder decoder([](const Prefix& prefix) -> std::map<int32_t, float> {
        if (prefix.empty()) return {{A, 0.5f}, {B, 0.5f}};
        return {{kEos, 1.0f}};
    });
    CHECK(decode::greedy_search(decoder, options(1)).tokens == std::vector<int32_t>{A});
    const decode::Hypothesis h = decode::beam_search(decoder, options(2));
    CHECK(h.tokens == std::vector<int32_t>{A});
    CHECK(h.score == doctest::Approx(std::log(0.5) / 2).epsilon(1e-5));
    // A single beam over the same table: only the first tie survives.
    CHECK(decode::beam_search(decoder, options(1)).tokens == std::vector<int32_t>{A});
}

TEST_CASE("search: ban_repeated_ngrams bans what would repeat an n-gram, like python/attnlab/nn/decoding.py") {
    const auto banned = [](const std::vector<int32_t>& tokens, int n) {
        std::vector<float> log_p(kVocab, -1.0f);
        decode::ban_repeated_ngrams(tokens, n, log_p);
        std::vector<int32_t> out;
        for (int v = 0; v < kVocab; ++v)
            if (std::isinf(log_p[v])) out.push_back(v);
        return out;
    };
    CHECK(banned({A, B, A}, 2) == std::vector<int32_t>{B});      // "A B" is there: B may not follow A again
    CHECK(banned({A, B, A, B}, 3) == std::vector<int32_t>{A});   // "A B A" is there
    CHECK(banned({A, B, A, B}, 2) == std::vector<int32_t>{A});   // "B A" is there: A may not follow B again
    CHECK(banned({A, A}, 2) == std::vector<int32_t>{A});
    CHECK(banned({A}, 2).empty());                               // one token: no bigram yet
    CHECK(banned({A, A, A}, 0).empty());
    CHECK(banned({A, A, A}, 1).empty());
    CHECK(banned({A, 99, A}, 2).empty());                        // out-of-vocabulary ids are skipped, not written
}

TEST_CASE("search: no_repeat_ngram steers greedy and beam away from repeats; log p stays the model's") {
    const ToyDecoder decoder(endless);   // A .7, B .3 forever: unconstrained, both searches say A A A ...
    decode::SearchOptions o = fixed_length(1, 4);
    o.no_repeat_ngram = 2;
    // [] A; [A] A ("A A" is new); [A A] bans A -> B; [A A B] A ("B A" is new).
    decode::Hypothesis h = decode::greedy_search(decoder, o);
    CHECK(h.tokens == std::vector<int32_t>{A, A, B, A});
    CHECK(h.log_probability == doctest::Approx(3 * std::log(0.7) + std::log(0.3)).epsilon(1e-5));
    o = fixed_length(1, 5);
    o.no_repeat_ngram = 3;   // [A A] A; [A A A] bans A -> B; [A A A B] A
    CHECK(decode::greedy_search(decoder, o).tokens == std::vector<int32_t>{A, A, A, B, A});

    o = fixed_length(3, 4);
    o.no_repeat_ngram = 2;
    h = decode::beam_search(decoder, o);
    REQUIRE(h.tokens.size() == 4);
    float log_p = 0;
    for (std::size_t i = 0; i < h.tokens.size(); ++i) {
        log_p += std::log(h.tokens[i] == A ? 0.7f : 0.3f);
        for (std::size_t j = 0; j + 1 < i; ++j)
            CHECK_FALSE((h.tokens[j] == h.tokens[i - 1] && h.tokens[j + 1] == h.tokens[i]));
    }
    CHECK(h.log_probability == doctest::Approx(log_p).epsilon(1e-5));
    CHECK(h.log_probability == doctest::Approx(3 * std::log(0.7) + std::log(0.3)).epsilon(1e-5));  // the best allowed
}

namespace {

// Ranks a candidate by its Σ log p plus log 10 for the first A of its prefix; which rows already hold an A it
// learns only from select(), so the bonus comes once a hypothesis only if the back-pointers reach it right.
struct FirstABonus {
    using Score = double;
    std::vector<bool> has_a{false};
    void score_row(int row, double row_score, const float* log_p, int vocab, double* scores) const {
        for (int v = 0; v < vocab; ++v)
            scores[v] = row_score + log_p[v] + (v == A && !has_a[row] ? std::log(10.0) : 0.0);
    }
    void select(const int32_t* parents, const int32_t* tokens, int count) {
        std::vector<bool> next;
        for (int i = 0; i < count; ++i) next.push_back(has_a[parents[i]] || tokens[i] == A);
        has_a = next;
    }
};

}  // namespace

TEST_CASE("search: a beam scorer decides the ranking; log p stays the model's; the plain scorer is the one-by-one beam") {
    const ToyDecoder decoder(greedy_trap);
    decode::SearchOptions o = options(2);
    o.record_tree = true;
    const decode::Hypothesis plain = decode::beam_search_scored(decoder, o, decode::LogProbabilityScorer{});
    decode::SearchOptions one_by_one = o;
    one_by_one.batched = false;  // beam_one_by_one: the independent reference, not the scored search again
    const decode::Hypothesis reference = decode::beam_search(decoder, one_by_one);
    CHECK(plain.tokens == reference.tokens);
    CHECK(plain.score == reference.score);
    CHECK(plain.tree.nodes.size() == reference.tree.nodes.size());

    // Step 0 keeps A (log .5 + log 10) and B (log .4). Step 1: A EOS (log .5 + log 10 + log .4) finishes; A A and
    // A B (no second bonus) stay; B EOS (log .36) ranks below them. Step 2: A A EOS finishes second, at
    // (log .5 + log 10 + log .3 + log .9) / 3, below A EOS's score over 2.
    const decode::Hypothesis h = decode::beam_search_scored(decoder, o, FirstABonus{});
    CHECK(h.tokens == std::vector<int32_t>{A});
    CHECK(h.finished);
    CHECK(h.log_probability == doctest::Approx(std::log(0.5 * 0.4)).epsilon(1e-5));
    CHECK(h.score == doctest::Approx((std::log(0.5 * 0.4) + std::log(10.0)) / 2).epsilon(1e-5));
    REQUIRE(h.tree.winner >= 0);
    const decode::TreeNode& winner = h.tree.nodes[static_cast<std::size_t>(h.tree.winner)];
    CHECK(winner.token == kEos);
    CHECK(winner.cumulative == doctest::Approx(h.log_probability).epsilon(1e-6));
    CHECK(winner.score == doctest::Approx(h.score).epsilon(1e-6));
    int finished = 0;
    for (const decode::TreeNode& node : h.tree.nodes) finished += node.finished ? 1 : 0;
    CHECK(finished == 2);
    CHECK(h.tree.nodes.back().step == 2);
}

TEST_CASE("search: bad options are attnlab::Error") {
    const ToyDecoder decoder(greedy_trap);
    CHECK_THROWS_AS(decode::search(decoder, options(0)), Error);
    CHECK_THROWS_AS(decode::search(decoder, options(65)), Error);
    CHECK_THROWS_AS(decode::beam_search(decoder, options(-3)), Error);
    decode::SearchOptions negative = options(2);
    negative.max_length_ratio = -1.0f;
    CHECK_THROWS_AS(decode::search(decoder, negative), Error);
    negative = options(1);
    negative.max_length_extra = -1;
    CHECK_THROWS_AS(decode::search(decoder, negative), Error);
    decode::SearchOptions nan_penalty = options(2, std::nanf(""));
    CHECK_THROWS_AS(decode::search(decoder, nan_penalty), Error);
    decode::SearchOptions ngram = options(2);
    ngram.no_repeat_ngram = 9;
    CHECK_THROWS_WITH_AS(decode::search(decoder, ngram), doctest::Contains("no-repeat n-gram size"), Error);
    ngram.no_repeat_ngram = -1;
    CHECK_THROWS_AS(decode::search(decoder, ngram), Error);
    CHECK(decoder.calls == 0);
}

TEST_CASE("search tree: beam 2 on the greedy trap keeps, step by step, what the worked example says") {
    const ToyDecoder decoder(greedy_trap);
    for (bool batched : {false, true}) {
        CAPTURE(batched);
        decode::SearchOptions o = options(2);
        o.batched = batched;
        o.record_tree = true;
        const decode::Hypothesis h = decode::beam_search(decoder, o);
        CHECK(h.tokens == std::vector<int32_t>{B});
        // Step 0 keeps A and B. Step 1 ranks B EOS (.36), A EOS (.2), A A (.15), A B (.15): two finish, so the
        // search stops, and the two live ones it kept on the way are in the tree, never expanded.
        const std::vector<decode::TreeNode>& n = h.tree.nodes;
        REQUIRE(n.size() == 6);
        const struct { int step, parent; int32_t token; double p; bool finished; } expected[] = {
            {0, -1, A, 0.5, false},  {0, -1, B, 0.4, false}, {1, 1, kEos, 0.9, true},
            {1, 0, kEos, 0.4, true}, {1, 0, A, 0.3, false},  {1, 0, B, 0.3, false},
        };
        for (std::size_t i = 0; i < n.size(); ++i) {
            CAPTURE(i);
            CHECK(n[i].step == expected[i].step);
            CHECK(n[i].parent == expected[i].parent);
            CHECK(n[i].token == expected[i].token);
            CHECK(n[i].log_probability == doctest::Approx(std::log(expected[i].p)).epsilon(1e-5));
            const float parent_cumulative = n[i].parent < 0 ? 0.0f : n[n[i].parent].cumulative;
            CHECK(n[i].cumulative == doctest::Approx(parent_cumulative + n[i].log_probability).epsilon(1e-6));
            CHECK(n[i].finished == expected[i].finished);
            CHECK(n[i].score == doctest::Approx(n[i].finished ? n[i].cumulative / 2 : n[i].cumulative).epsilon(1e-6));
        }
        CHECK(h.tree.winner == 2);
        CHECK(n[2].score == doctest::Approx(h.score).epsilon(1e-6));
        CHECK(n[2].cumulative == doctest::Approx(h.log_probability).epsilon(1e-6));
    }
}

TEST_CASE("search tree: greedy is one path; without record_tree there is none and the result is the same") {
    const ToyDecoder decoder(greedy_trap);
    for (bool batched : {false, true}) {
        CAPTURE(batched);
        decode::SearchOptions o = options(1);
        o.batched = batched;
        const decode::Hypothesis plain = decode::search(decoder, o);
        CHECK(plain.tree.nodes.empty());
        CHECK(plain.tree.winner == -1);
        o.record_tree = true;
        const decode::Hypothesis h = decode::search(decoder, o);
        CHECK(h.tokens == plain.tokens);
        CHECK(h.log_probability == plain.log_probability);
        // A (.5), then [A] -> EOS (.4).
        REQUIRE(h.tree.nodes.size() == 2);
        CHECK(h.tree.nodes[0].token == A);
        CHECK(h.tree.nodes[0].parent == -1);
        CHECK_FALSE(h.tree.nodes[0].finished);
        CHECK(h.tree.nodes[1].token == kEos);
        CHECK(h.tree.nodes[1].parent == 0);
        CHECK(h.tree.nodes[1].finished);
        CHECK(h.tree.nodes[1].log_probability == doctest::Approx(std::log(0.4)).epsilon(1e-5));
        CHECK(h.tree.nodes[1].cumulative == h.log_probability);
        CHECK(h.tree.winner == 1);
    }
    // Cut by the length limit: the last node is finished without EOS.
    const ToyDecoder endless_decoder(endless);
    decode::SearchOptions o = fixed_length(1, 3);
    o.record_tree = true;
    const decode::Hypothesis cut = decode::search(endless_decoder, o);
    REQUIRE(cut.tree.nodes.size() == 3);
    CHECK(cut.tree.winner == 2);
    CHECK(cut.tree.nodes[2].token == A);
    CHECK(cut.tree.nodes[2].finished);
    CHECK_FALSE(cut.tree.nodes[1].finished);
}
