#include "attnlab/decode/search.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "attnlab/error.hpp"
#include "attnlab/kernels/kernels.hpp"

namespace attnlab::decode {

namespace {

void validate(const SearchOptions& options) {
    check(options.beam >= 1 && options.beam <= kMaxBeam,
          "beam width must be between 1 and " + std::to_string(kMaxBeam) + ", got " + std::to_string(options.beam));
    check(options.max_length_ratio >= 0 && std::isfinite(options.max_length_ratio) && options.max_length_extra >= 0,
          "maximum length settings must be non-negative");
    check(std::isfinite(options.length_penalty), "length penalty must be finite");
    check(options.no_repeat_ngram >= 0 && options.no_repeat_ngram <= kMaxNoRepeatNgram,
          "no-repeat n-gram size must be between 0 and " + std::to_string(kMaxNoRepeatNgram) + ", got " +
              std::to_string(options.no_repeat_ngram));
}

struct Beam {
    StatePtr state;
    int32_t last_token;
    float log_probability;
    std::vector<int32_t> tokens;
    std::vector<std::vector<float>> attention;
    std::vector<std::vector<float>> scores;
    std::vector<std::vector<float>> context;
};

}  // namespace

void ban_repeated_ngrams(const std::vector<int32_t>& tokens, int n, std::vector<float>& log_probabilities) {
    if (n < 2 || tokens.size() < static_cast<std::size_t>(n - 1)) return;
    const std::size_t context = static_cast<std::size_t>(n - 1);
    const auto last = tokens.end() - static_cast<std::ptrdiff_t>(context);  // the n-1 tokens a new one would follow
    for (std::size_t i = 0; i + context < tokens.size(); ++i) {
        const auto at = tokens.begin() + static_cast<std::ptrdiff_t>(i);
        if (std::equal(at, at + static_cast<std::ptrdiff_t>(context), last)) {
            const int32_t token = tokens[i + context];
            if (token >= 0 && static_cast<std::size_t>(token) < log_probabilities.size())
                log_probabilities[static_cast<std::size_t>(token)] = -std::numeric_limits<float>::infinity();
        }
    }
}

int max_target_length(const SearchOptions& options, int source_length) {
    // Matches models/seq2seq_rnn.py: int(max_len_a * |source| + max_len_b).
    return static_cast<int>(options.max_length_ratio * static_cast<float>(source_length) +
                            static_cast<float>(options.max_length_extra));
}

Hypothesis greedy_search(const Decoder& decoder, const SearchOptions& options) {
    validate(options);
    const int max_length = max_target_length(options, decoder.source_length());
    Hypothesis result;
    StatePtr state = decoder.initial_state();
    int32_t token = decoder.bos();
    StepOutput out;
    for (int i = 0; i < max_length; ++i) {
        state = decoder.step(*state, token, out);
        const int vocab = static_cast<int>(out.logits.size());
        if (options.no_repeat_ngram >= 2) {  // banned after the softmax, so log p stays the model's
            kernels::log_softmax_rows(1, vocab, out.logits.data(), vocab);
            ban_repeated_ngrams(result.tokens, options.no_repeat_ngram, out.logits);
            token = kernels::argmax(out.logits.data(), vocab);
        } else {
            token = kernels::argmax(out.logits.data(), vocab);
            kernels::log_softmax_rows(1, vocab, out.logits.data(), vocab);
        }
        result.log_probability += out.logits[token];
        if (token == decoder.eos()) {
            result.finished = true;
            break;
        }
        result.tokens.push_back(token);
        result.attention.push_back(out.weights);
        result.scores.push_back(out.scores);
        result.context.push_back(out.context);
    }
    result.score = result.log_probability;
    return result;
}

Hypothesis beam_search(const Decoder& decoder, const SearchOptions& options) {
    validate(options);
    const int beam_width = options.beam;
    const int max_length = max_target_length(options, decoder.source_length());
    constexpr float kNegativeInfinity = -std::numeric_limits<float>::infinity();

    std::vector<Beam> beams{Beam{decoder.initial_state(), decoder.bos(), 0.0f, {}, {}, {}, {}}};
    std::vector<Hypothesis> finished;
    std::vector<StepOutput> outputs;
    std::vector<StatePtr> next_states;
    struct Candidate {
        float log_probability;
        int beam;
        int32_t token;
    };
    std::vector<Candidate> candidates;

    for (int step = 0; step < max_length && !beams.empty(); ++step) {
        outputs.resize(beams.size());
        next_states.resize(beams.size());
        candidates.clear();
        for (std::size_t b = 0; b < beams.size(); ++b) {
            next_states[b] = decoder.step(*beams[b].state, beams[b].last_token, outputs[b]);
            std::vector<float>& logits = outputs[b].logits;
            const int vocab = static_cast<int>(logits.size());
            kernels::log_softmax_rows(1, vocab, logits.data(), vocab);
            ban_repeated_ngrams(beams[b].tokens, options.no_repeat_ngram, logits);
            for (int v = 0; v < vocab; ++v)
                candidates.push_back({beams[b].log_probability + logits[v], static_cast<int>(b), v});
        }
        // The 2K best continuations: at most K of them can end in EOS, so K live ones remain.
        const std::size_t keep = std::min(candidates.size(), static_cast<std::size_t>(2 * beam_width));
        std::partial_sort(candidates.begin(), candidates.begin() + keep, candidates.end(),
                          [](const Candidate& a, const Candidate& b) {
                              if (a.log_probability != b.log_probability) return a.log_probability > b.log_probability;
                              if (a.beam != b.beam) return a.beam < b.beam;
                              return a.token < b.token;
                          });
        const bool last_step = step + 1 >= max_length;
        std::vector<Beam> next;
        for (std::size_t c = 0; c < keep; ++c) {
            const Candidate& candidate = candidates[c];
            if (candidate.log_probability == kNegativeInfinity) break;
            const Beam& parent = beams[candidate.beam];
            const StepOutput& out = outputs[candidate.beam];
            const bool is_eos = candidate.token == decoder.eos();
            if (is_eos || last_step) {
                if (static_cast<int>(finished.size()) < beam_width) {
                    Hypothesis h;
                    h.tokens = parent.tokens;
                    h.attention = parent.attention;
                    h.scores = parent.scores;
                    h.context = parent.context;
                    if (!is_eos) {
                        h.tokens.push_back(candidate.token);
                        h.attention.push_back(out.weights);
                        h.scores.push_back(out.scores);
                        h.context.push_back(out.context);
                    }
                    h.log_probability = candidate.log_probability;
                    h.score = candidate.log_probability /
                              std::pow(static_cast<float>(step + 1), options.length_penalty);
                    h.finished = is_eos;
                    finished.push_back(std::move(h));
                }
            } else {
                Beam child{next_states[candidate.beam], candidate.token, candidate.log_probability,
                           parent.tokens,             parent.attention, parent.scores,
                           parent.context};
                child.tokens.push_back(candidate.token);
                child.attention.push_back(out.weights);
                child.scores.push_back(out.scores);
                child.context.push_back(out.context);
                next.push_back(std::move(child));
            }
            if (static_cast<int>(next.size()) == beam_width) break;
        }
        if (static_cast<int>(finished.size()) >= beam_width || last_step) break;
        beams = std::move(next);
    }
    if (finished.empty()) return Hypothesis{};
    // The first of equal scores wins, like Python's max().
    auto best = std::max_element(finished.begin(), finished.end(),
                                 [](const Hypothesis& a, const Hypothesis& b) { return a.score < b.score; });
    return std::move(*best);
}

Hypothesis search(const Decoder& decoder, const SearchOptions& options) {
    return options.beam == 1 ? greedy_search(decoder, options) : beam_search(decoder, options);
}

}  // namespace attnlab::decode
