#pragma once
// Greedy and beam search over any model that can take one decoder step. Each hypothesis carries its own
// attention history, so the result has the alignment of exactly the tokens it returns.
#include <cstdint>
#include <memory>
#include <vector>

namespace attnlab::decode {

// What one decoder step produces besides the next state.
struct StepOutput {
    std::vector<float> logits;   // [V]
    std::vector<float> weights;  // [S] attention weights (stage 2) used for this step
    std::vector<float> scores;   // [S] raw attention scores (stage 1) for this step
    std::vector<float> context;  // [dv] the context vector (stage 3) for this step; empty if the model has none
};

// A decoder state is opaque to the search; hypotheses that share a prefix share the state object.
struct DecoderState {
    virtual ~DecoderState() = default;
};
using StatePtr = std::shared_ptr<const DecoderState>;

class Decoder {
public:
    virtual ~Decoder() = default;
    virtual int bos() const = 0;
    virtual int eos() const = 0;
    virtual int source_length() const = 0;
    virtual StatePtr initial_state() const = 0;
    // The state after feeding token (y_{i-1}) to state (s_{i-1}); out gets the logits for y_i and the attention.
    virtual StatePtr step(const DecoderState& state, int32_t token, StepOutput& out) const = 0;
};

constexpr int kMaxBeam = 64;           // the widest SearchOptions::beam
constexpr int kMinNoRepeatNgram = 2;  // the shortest n-gram a caller may ban: 1 would ban every repeated token
constexpr int kMaxNoRepeatNgram = 8;  // the longest n-gram SearchOptions::no_repeat_ngram may name

struct SearchOptions {
    int beam = 1;                    // 1 = greedy
    float length_penalty = 1.0f;     // hypotheses are ranked by Σ log p / length^length_penalty (EOS counted)
    float max_length_ratio = 1.5f;   // at most max_length_ratio · |source| + max_length_extra target tokens
    int max_length_extra = 10;
    int no_repeat_ngram = 0;         // >= 2: never emit a token that repeats an n-gram of this size (0 or 1: off)
};

// Sets log p = -inf for every token that would complete an n-gram `tokens` already holds (n < 2: none); the
// searches apply it to each row's log-probabilities before choosing (python/attnlab/nn/decoding.py's ban_repeated_ngrams).
void ban_repeated_ngrams(const std::vector<int32_t>& tokens, int n, std::vector<float>& log_probabilities);

struct Hypothesis {
    std::vector<int32_t> tokens;                 // without BOS and EOS
    std::vector<std::vector<float>> attention;   // [tokens.size()][S] weights for each returned token
    std::vector<std::vector<float>> scores;      // [tokens.size()][S] raw scores for each returned token
    std::vector<std::vector<float>> context;     // [tokens.size()][dv] context vectors for each returned token
    float log_probability = 0.0f;                // Σ log p over the tokens (and EOS when it was produced)
    float score = 0.0f;                          // the ranking score (normalized by length for beam > 1)
    bool finished = false;                       // ended with EOS rather than by the length limit
};

int max_target_length(const SearchOptions& options, int source_length);

// Throws attnlab::Error on bad options (beam < 1 or > 64, negative limits).
Hypothesis greedy_search(const Decoder& decoder, const SearchOptions& options);
Hypothesis beam_search(const Decoder& decoder, const SearchOptions& options);
// beam == 1 -> greedy, else beam search.
Hypothesis search(const Decoder& decoder, const SearchOptions& options);

}  // namespace attnlab::decode
