#include "attnlab/decode/sentences.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "attnlab/error.hpp"
#include "attnlab/kernels/kernels.hpp"

namespace attnlab::decode {

namespace {

// One sentence's chosen tokens as a tree over the step rows that produced them (the rows of its own sentence
// only, its own source length wide), so no hypothesis carries its history while the search runs.
class SentenceHistory {
public:
    SentenceHistory(int length, int context_size) : length_(length), context_size_(context_size) {}

    // Copies rows [first, first + count) of the step (its first `length` columns of weights and scores) and
    // returns the index of the first copied row.
    std::size_t add_rows(const BatchOutput& out, int first, int count) {
        const std::size_t start = rows_;
        for (int r = first; r < first + count; ++r) {
            const float* weights = out.weights.data() + std::size_t(r) * out.length;
            const float* scores = out.scores.data() + std::size_t(r) * out.length;
            const float* context = out.context.data() + std::size_t(r) * out.context_size;
            weights_.insert(weights_.end(), weights, weights + length_);
            scores_.insert(scores_.end(), scores, scores + length_);
            context_.insert(context_.end(), context, context + context_size_);
        }
        rows_ += std::size_t(count);
        return start;
    }

    int add_node(int parent, int32_t token, std::size_t row) {
        nodes_.push_back({parent, token, row});
        return static_cast<int>(nodes_.size()) - 1;
    }

    // The tokens and rows from the root to `node` (-1: none).
    void fill(int node, Hypothesis& h) const {
        tokens_of(node, h.tokens);
        const std::size_t count = h.tokens.size();
        h.attention.assign(count, {});
        h.scores.assign(count, {});
        h.context.assign(count, {});
        std::size_t i = count;
        for (int n = node; n >= 0; n = nodes_[n].parent) {
            --i;
            const std::size_t row = nodes_[n].row;
            h.attention[i].assign(weights_.begin() + row * length_, weights_.begin() + (row + 1) * length_);
            h.scores[i].assign(scores_.begin() + row * length_, scores_.begin() + (row + 1) * length_);
            h.context[i].assign(context_.begin() + row * context_size_, context_.begin() + (row + 1) * context_size_);
        }
    }

    void tokens_of(int node, std::vector<int32_t>& tokens) const {
        std::size_t count = 0;
        for (int n = node; n >= 0; n = nodes_[n].parent) ++count;
        tokens.resize(count);
        for (int n = node; n >= 0; n = nodes_[n].parent) tokens[--count] = nodes_[n].token;
    }

private:
    struct Node {
        int parent;       // the node of the prefix, -1 at the root
        int32_t token;    // the token this node appends
        std::size_t row;  // the copied step row that produced it
    };
    std::size_t length_, context_size_;
    std::vector<Node> nodes_;
    std::size_t rows_ = 0;
    std::vector<float> weights_, scores_, context_;
};

struct Ended {
    int node;  // the last token's node (-1: no tokens)
    float log_probability;
    float score;
    bool finished;
    int tree_node;  // its last node in the search tree (SearchOptions::record_tree; else -1)
};

// A search tree node as the one-sentence searches record it: log p is the difference of the cumulative sums.
int add_tree_node(SearchTree& tree, int step, int parent, int32_t token, float parent_cumulative, float cumulative,
                  float score, bool finished) {
    tree.nodes.push_back({step, parent, token, cumulative - parent_cumulative, cumulative, score, finished});
    return static_cast<int>(tree.nodes.size()) - 1;
}

// What greedy_search / beam_search keep for one sentence between steps; its rows in the batch are
// [first, first + tokens.size()).
struct SentenceSearch {
    int sentence = 0;
    int max_length = 0;
    SentenceHistory history;
    int first = 0;
    std::vector<int32_t> tokens;            // per row: the token it is fed next
    std::vector<float> log_probabilities;   // per row (beam)
    std::vector<int> nodes;                 // per row
    std::vector<int> tree_nodes;            // per row: its node in tree (SearchOptions::record_tree)
    SearchTree tree;
    std::vector<Ended> ended;               // beam: the finished hypotheses
    std::vector<int32_t> emitted;           // greedy: the tokens so far, for the n-gram ban
    Hypothesis greedy;                      // greedy: log p and finished as they accumulate
    bool done = false;

    SentenceSearch(int sentence_index, int max_target, int length, int context_size)
        : sentence(sentence_index), max_length(max_target), history(length, context_size) {}
};

}  // namespace

std::vector<Hypothesis> search_sentences(const SentencesDecoder& decoder, const SearchOptions& options) {
    validate(options);
    const int count = decoder.sentences();
    std::vector<Hypothesis> results(static_cast<std::size_t>(count));
    if (count == 0) return results;
    const int beam_width = options.beam;
    const bool greedy = beam_width == 1;
    const std::size_t keep_per_step = static_cast<std::size_t>(2 * beam_width);
    constexpr float kNegativeInfinity = -std::numeric_limits<float>::infinity();

    // Sentences whose length limit is 0 never take a step (as the one-sentence searches take none).
    std::vector<SentenceSearch> searches;
    std::vector<int32_t> tokens, next_tokens, parents;
    std::vector<int> sentence_of_row, next_sentence_of_row;
    for (int s = 0; s < count; ++s) {
        const int max_length = max_target_length(options, decoder.source_length(s));
        if (max_length <= 0) continue;
        searches.emplace_back(s, max_length, decoder.source_length(s), 0);
        SentenceSearch& search = searches.back();
        search.first = static_cast<int>(tokens.size());
        search.tokens = {decoder.bos()};
        search.log_probabilities = {0.0f};
        search.nodes = {-1};
        search.tree_nodes = {-1};
        tokens.push_back(decoder.bos());
        sentence_of_row.push_back(s);
    }
    const int capacity = static_cast<int>(searches.size()) * beam_width;
    std::unique_ptr<DecoderBatch> batch;
    if (!tokens.empty()) batch = decoder.start_batch(sentence_of_row.data(), static_cast<int>(tokens.size()), capacity);
    BatchOutput out;
    std::vector<Candidate> candidates;
    std::vector<int32_t> prefix;
    std::vector<int32_t> live_tokens;
    std::vector<float> live_log_probabilities;
    std::vector<int> live_nodes, live_tree_nodes;
    candidates.reserve(keep_per_step * beam_width);

    for (int step = 0; !tokens.empty(); ++step) {
        decoder.step_batch(*batch, tokens.data(), sentence_of_row.data(), out);
        const int vocab = out.vocab;
        next_tokens.clear();
        next_sentence_of_row.clear();
        parents.clear();
        for (SentenceSearch& search : searches) {
            if (search.done) continue;
            if (step == 0) search.history = SentenceHistory(decoder.source_length(search.sentence), out.context_size);
            const int rows = static_cast<int>(search.tokens.size());
            const bool last_step = step + 1 >= search.max_length;
            const int next_first = static_cast<int>(next_tokens.size());
            if (greedy) {  // greedy_batched's decisions
                float* logits = out.logits_row(search.first);
                const int32_t token = choose_greedy(logits, vocab, search.emitted, options.no_repeat_ngram);
                search.greedy.log_probability += logits[token];
                if (options.record_tree) {
                    const int at = static_cast<int>(search.tree.nodes.size());
                    search.tree.nodes.push_back({at, at - 1, token, logits[token], search.greedy.log_probability,
                                                 search.greedy.log_probability, token == decoder.eos() || last_step});
                    search.tree.winner = at;
                }
                if (token == decoder.eos()) {
                    search.greedy.finished = true;
                    search.done = true;
                } else {
                    search.emitted.push_back(token);
                    search.nodes[0] =
                        search.history.add_node(search.nodes[0], token, search.history.add_rows(out, search.first, 1));
                    search.tokens[0] = token;
                    search.done = last_step;
                }
                if (!search.done) {
                    next_tokens.push_back(token);
                    next_sentence_of_row.push_back(search.sentence);
                    parents.push_back(search.first);
                }
                search.first = next_first;
                continue;
            }
            // beam_batched's decisions, on this sentence's rows only
            const std::size_t step_row = search.history.add_rows(out, search.first, rows);
            candidates.clear();
            const std::size_t keep_per_row = std::min(keep_per_step, static_cast<std::size_t>(vocab));
            for (int b = 0; b < rows; ++b) {
                float* logits = out.logits_row(search.first + b);
                kernels::log_softmax_rows(1, vocab, logits, vocab);
                if (options.no_repeat_ngram >= 2) {
                    search.history.tokens_of(search.nodes[b], prefix);
                    ban_repeated_ngrams(prefix.data(), prefix.size(), options.no_repeat_ngram, logits, vocab);
                }
                for (int v = 0; v < vocab; ++v) logits[v] = search.log_probabilities[b] + logits[v];
                best_of_row(logits, vocab, b, keep_per_row, candidates);
            }
            const std::size_t keep = std::min(candidates.size(), keep_per_step);
            std::partial_sort(candidates.begin(), candidates.begin() + keep, candidates.end(), ranks_before);
            live_tokens.clear();
            live_log_probabilities.clear();
            live_nodes.clear();
            live_tree_nodes.clear();
            for (std::size_t c = 0; c < keep; ++c) {
                const Candidate& candidate = candidates[c];
                if (candidate.log_probability == kNegativeInfinity) break;
                const bool is_eos = candidate.token == decoder.eos();
                const std::size_t row = step_row + std::size_t(candidate.beam);
                if (is_eos || last_step) {
                    if (static_cast<int>(search.ended.size()) < beam_width) {
                        const int node = is_eos ? search.nodes[candidate.beam]
                                                : search.history.add_node(search.nodes[candidate.beam],
                                                                          candidate.token, row);
                        const float score = candidate.log_probability /
                                            std::pow(static_cast<float>(step + 1), options.length_penalty);
                        const int tree_node =
                            options.record_tree
                                ? add_tree_node(search.tree, step, search.tree_nodes[candidate.beam], candidate.token,
                                                search.log_probabilities[candidate.beam], candidate.log_probability,
                                                score, true)
                                : -1;
                        search.ended.push_back({node, candidate.log_probability, score, is_eos, tree_node});
                    }
                } else {
                    live_tokens.push_back(candidate.token);
                    live_log_probabilities.push_back(candidate.log_probability);
                    live_nodes.push_back(search.history.add_node(search.nodes[candidate.beam], candidate.token, row));
                    parents.push_back(search.first + candidate.beam);
                    if (options.record_tree)
                        live_tree_nodes.push_back(add_tree_node(search.tree, step, search.tree_nodes[candidate.beam],
                                                                candidate.token,
                                                                search.log_probabilities[candidate.beam],
                                                                candidate.log_probability, candidate.log_probability,
                                                                false));
                }
                if (static_cast<int>(live_tokens.size()) == beam_width) break;
            }
            search.done = static_cast<int>(search.ended.size()) >= beam_width || last_step || live_tokens.empty();
            if (search.done) {
                parents.resize(std::size_t(next_first));  // its continuations are dropped with it
                continue;
            }
            search.first = next_first;
            search.tokens.swap(live_tokens);
            search.log_probabilities.swap(live_log_probabilities);
            search.nodes.swap(live_nodes);
            search.tree_nodes.swap(live_tree_nodes);
            next_tokens.insert(next_tokens.end(), search.tokens.begin(), search.tokens.end());
            next_sentence_of_row.insert(next_sentence_of_row.end(), search.tokens.size(), search.sentence);
        }
        if (next_tokens.empty()) break;
        decoder.select_batch(*batch, parents.data(), static_cast<int>(parents.size()));
        tokens.swap(next_tokens);
        sentence_of_row.swap(next_sentence_of_row);
    }

    for (SentenceSearch& search : searches) {
        Hypothesis& h = results[static_cast<std::size_t>(search.sentence)];
        if (greedy) {
            search.history.fill(search.nodes[0], h);
            h.log_probability = search.greedy.log_probability;
            h.finished = search.greedy.finished;
            h.score = h.log_probability;
            h.tree = std::move(search.tree);
            continue;
        }
        h.tree = std::move(search.tree);
        if (search.ended.empty()) continue;
        // The first of equal scores wins, like Python's max().
        const Ended& best = *std::max_element(search.ended.begin(), search.ended.end(),
                                              [](const Ended& a, const Ended& b) { return a.score < b.score; });
        search.history.fill(best.node, h);
        h.log_probability = best.log_probability;
        h.score = best.score;
        h.finished = best.finished;
        h.tree.winner = best.tree_node;
    }
    return results;
}

std::vector<std::vector<int>> length_buckets(const std::vector<int>& lengths, int beam, int max_rows) {
    std::vector<int> order(lengths.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return lengths[a] < lengths[b]; });
    const std::size_t per_bucket = static_cast<std::size_t>(std::max(1, max_rows / std::max(beam, 1)));
    std::vector<std::vector<int>> buckets;
    for (std::size_t i = 0; i < order.size(); i += per_bucket)
        buckets.emplace_back(order.begin() + i, order.begin() + std::min(order.size(), i + per_bucket));
    return buckets;
}

}  // namespace attnlab::decode
