#pragma once
// Helpers shared by the test files: where fixtures live, and comparing buffers with a useful message.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "attnlab/decode/search.hpp"

namespace attnlab::test {

// Absolute path of a file in the source tree (works natively and in wasm under NODERAWFS).
inline std::string source_path(const std::string& relative) { return std::string(ATTNLAB_SOURCE_DIR) + "/" + relative; }

inline std::vector<float> random_vector(std::size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

// Largest |a-b| / (atol + rtol*|b|) over the buffers; <= 1 means every element is within tolerance.
inline void check_close(const float* actual, const float* expected, std::size_t n, float atol, float rtol = 0.0f,
                        const char* what = "") {
    std::size_t worst = 0;
    double worst_ratio = 0;
    for (std::size_t i = 0; i < n; ++i) {
        double diff = std::fabs(double(actual[i]) - double(expected[i]));
        const double tolerance = atol + rtol * std::fabs(double(expected[i]));
        double ratio = tolerance > 0 ? diff / tolerance : (diff == 0 ? 0.0 : INFINITY);
        if (!(ratio <= worst_ratio)) {  // also catches NaN
            worst_ratio = std::isnan(ratio) ? INFINITY : ratio;
            worst = i;
        }
    }
    INFO(std::string(what) << ": worst element " << worst << " of " << n << ": actual " << (n ? actual[worst] : 0.0f)
              << " expected " << (n ? expected[worst] : 0.0f));
    CHECK(worst_ratio <= 1.0);
}

inline void check_close(const std::vector<float>& actual, const std::vector<float>& expected, float atol,
                        float rtol = 0.0f, const char* what = "") {
    REQUIRE(actual.size() == expected.size());
    check_close(actual.data(), expected.data(), actual.size(), atol, rtol, what);
}

// When a second decoder (Q8_0 weights) cannot pick another word than a reference (f32/f16) under greedy search.
// Greedy takes each step's argmax. Along the reference's greedy path, let m be a step's top-1 minus top-2 logit of
// the reference, and d the most any logit of the other decoder moves relative to its top-1 logit compared with
// the reference (max over v of |(b_v - b_top) - (a_v - a_top)|; a shift of all logits moves nothing). Then
// b_top - b_v >= m - d for every other v, so where d < m at every step the other decoder's argmax is the same
// token at every step and its greedy output must be identical. Inputs that fail the condition may differ (a near
// tie), and that is no error.
struct GreedyMargin {
    double margin = INFINITY;  // smallest top-1 minus top-2 logit of the reference along its greedy path
    double error = 0;          // largest |logit difference| between the two decoders on the same inputs
    double slack = INFINITY;   // smallest m - d over the steps: > 0 means the greedy outputs must agree
    bool tokens_must_agree() const { return slack > 0; }
};

// greedy_tokens: the reference's greedy output without BOS/EOS (checked here step by step). Both decoders are fed
// BOS then those tokens; the step after the last one counts when the reference chose EOS there (not when greedy
// stopped at its length cap).
inline GreedyMargin greedy_margin(const decode::Decoder& reference, const decode::Decoder& other,
                                  const std::vector<int32_t>& greedy_tokens) {
    GreedyMargin result;
    decode::StatePtr a = reference.initial_state(), b = other.initial_state();
    int32_t input = reference.bos();
    decode::StepOutput out_a, out_b;
    for (std::size_t t = 0; t <= greedy_tokens.size(); ++t) {
        a = reference.step(*a, input, out_a);
        b = other.step(*b, input, out_b);
        REQUIRE(out_a.logits.size() == out_b.logits.size());
        const std::vector<float>& la = out_a.logits;
        const std::vector<float>& lb = out_b.logits;
        const int top = int(std::max_element(la.begin(), la.end()) - la.begin());
        if (t == greedy_tokens.size() && top != reference.eos()) break;
        REQUIRE_MESSAGE(top == (t < greedy_tokens.size() ? greedy_tokens[t] : reference.eos()),
                        "step " << t << ": the tokens are not the reference's greedy path");
        double second = -INFINITY, moved = 0;
        for (std::size_t v = 0; v < la.size(); ++v) {
            if (int(v) != top) second = std::max(second, double(la[v]));
            result.error = std::max(result.error, std::fabs(double(la[v]) - double(lb[v])));
            moved = std::max(moved, std::fabs((double(lb[v]) - lb[top]) - (double(la[v]) - la[top])));
        }
        const double margin = double(la[top]) - second;
        result.margin = std::min(result.margin, margin);
        result.slack = std::min(result.slack, margin - moved);
        if (t < greedy_tokens.size()) input = greedy_tokens[t];
    }
    return result;
}

}  // namespace attnlab::test
