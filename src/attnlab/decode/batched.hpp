#pragma once
// The decisions of the batched searches, written once: one search's state between steps, which takes its
// decisions from its own rows of a batched step. greedy_search and beam_search run one such search over a
// Decoder's batch, search_sentences (sentences.cpp) one per sentence over a SentencesDecoder's, and
// models::joint_search a beam search whose candidates a scorer ranks (the hook below).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "attnlab/decode/search.hpp"
#include "attnlab/error.hpp"
#include "attnlab/kernels/kernels.hpp"

namespace attnlab::decode {

// One search's chosen tokens as a tree over the step rows that produced them (each row's weights, scores and
// context copied once, when its step is taken): a hypothesis is a node, and its history is found by walking back
// to the root, so no hypothesis carries (or copies) its history while the search runs.
class History {
public:
    // width: the attention columns a row keeps (its own source's length; -1: all of the step's, which may then
    // not change between steps).
    explicit History(int width = -1) : width_(width) {}

    // Copies rows [first, first + count) of the step; returns the index of the first copied row.
    std::size_t add_rows(const BatchOutput& out, int first, int count);
    int add_node(int parent, int32_t token, std::size_t row) {
        nodes_.push_back({parent, token, row});
        return static_cast<int>(nodes_.size()) - 1;
    }
    // The tokens and rows from the root to `node` (-1: none).
    void fill(int node, Hypothesis& h) const;
    // The tokens from the root to `node`, into tokens (which keeps its storage).
    void tokens_of(int node, std::vector<int32_t>& tokens) const;

private:
    struct Node {
        int parent;       // the node of the prefix, -1 at the root
        int32_t token;    // the token this node appends
        std::size_t row;  // the copied step row that produced it
    };
    int width_;
    bool started_ = false;
    bool width_of_step_ = false;  // width_ was taken from the first step (width -1)
    int context_size_ = 0;
    std::vector<Node> nodes_;
    std::size_t rows_ = 0;
    std::vector<float> weights_, scores_, context_;
};

// Chooses the next token from one row of logits [vocab] exactly as the batch-1 greedy search does; the row ends as
// log-probabilities. With columns, the row holds theirs and the choice is a column.
int32_t choose_greedy(float* logits, int vocab, const std::vector<int32_t>& tokens, int no_repeat_ngram,
                      const Columns* columns = nullptr);

// A greedy search: one row a step.
class GreedySearch {
public:
    GreedySearch(const SearchOptions& options, int bos, int eos, int max_length, int width = -1);
    // What its row is fed next (one token).
    const std::vector<int32_t>& next_tokens() const { return next_; }
    // The step's choice from row `first` of out (its logits end as log p). It touches only that row and this
    // search, so the searches of one step may choose concurrently; advance then acts on the choice.
    void choose(BatchOutput& out, int first);
    // Takes the step's decision from row `first` of out (choosing first, unless choose did). While the search goes
    // on, it appends `first` to parents (the row its next row continues) and returns true.
    bool advance(int step, BatchOutput& out, int first, std::vector<int32_t>& parents);
    Hypothesis result();

private:
    SearchOptions options_;
    int eos_, max_length_;
    History history_;
    std::vector<int32_t> next_;
    std::vector<int32_t> emitted_;  // the tokens so far, for the n-gram ban
    int32_t chosen_ = -1;           // choose()'s column (its token, unless the step has Columns), until advance takes it
    int node_ = -1;
    Hypothesis result_;             // log p, finished and the tree as they accumulate
};

// One candidate continuation of a beam search: `score` ranks it.
template <class Score>
struct Candidate {
    Score score;
    int beam;       // the row it continues
    int32_t token;  // the token it appends; in a step with Columns, its column until BeamSearch::advance maps it
};

// The order the beam keeps candidates in: the higher score first, then the lower beam, then the lower token.
template <class Score>
bool ranks_before(const Candidate<Score>& a, const Candidate<Score>& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.beam != b.beam) return a.beam < b.beam;
    return a.token < b.token;
}

// Appends to `best` the `keep` candidates of one row that rank first (values [vocab] are their scores): the
// overall best `keep` are among the rows' best `keep`, so the beam never sorts rows × vocab entries.
template <class Score>
void best_of_row(const Score* values, int vocab, int beam, std::size_t keep, std::vector<Candidate<Score>>& best) {
    if (keep == 0) return;
    constexpr int kBlock = 16;
    const std::size_t begin = best.size();
    for (int block = 0; block < vocab; block += kBlock) {
        const int block_end = std::min(vocab, block + kBlock);
        if (best.size() - begin == keep) {
            // Most of a row ranks below the kept run once it is full: a block with no score above its last one
            // changes nothing (an equal score ranks after it, its token being higher), so it is skipped whole.
            const Score last = best.back().score;
            bool above = false;
            for (int v = block; v < block_end; ++v) above |= values[v] > last;
            if (!above) continue;
        }
        for (int v = block; v < block_end; ++v) {
            const Candidate<Score> c{values[v], beam, v};
            const std::size_t size = best.size() - begin;
            if (size == keep && !ranks_before(c, best.back())) continue;
            if (size < keep) best.push_back(c);
            else best.back() = c;
            // Insertion into the sorted run [begin, end).
            for (std::size_t i = best.size() - 1; i > begin && ranks_before(best[i], best[i - 1]); --i)
                std::swap(best[i], best[i - 1]);
        }
    }
}

// A beam search's scorer: what its candidates are ranked by. A scorer has a type Score (the ranking's precision)
// and two calls:
//   score_row(row, row_score, log_probabilities, vocab, scores): scores[v], the ranking score of live row `row`
//       continued with token v, from the row's own ranking score and its log-probabilities [vocab] (after any
//       n-gram ban; -inf: never). The score the search finishes a hypothesis with is this / length^length_penalty.
//   select(parents, tokens, count): the rows that go on to the next step: its row i continues row parents[i] of
//       this one with tokens[i], for i < count (what the scorer keeps per row follows the beam's back-pointers).
// The plain beam search's: a candidate's score is its Σ log p, in float.
struct LogProbabilityScorer {
    using Score = float;
    void score_row(int /*row*/, float row_score, const float* log_probabilities, int vocab, float* scores) const {
        for (int v = 0; v < vocab; ++v) scores[v] = row_score + log_probabilities[v];
    }
    void select(const int32_t* /*parents*/, const int32_t* /*tokens*/, int /*count*/) const {}
};

// A beam's node in the search tree: its log p is the difference of the cumulative sums, computed the same way by
// every search so that their trees agree wherever their decoders do.
inline int add_beam_node(SearchTree& tree, int step, int parent, int32_t token, float parent_cumulative,
                         float cumulative, float score, bool finished) {
    tree.nodes.push_back({step, parent, token, cumulative - parent_cumulative, cumulative, score, finished});
    return static_cast<int>(tree.nodes.size()) - 1;
}

// A beam search over its rows of each step (SearchOptions::beam of them at most), ranked by a Scorer: 2K
// candidates a step, of which EOS (or the length limit) finishes a hypothesis and the others go on, until K are
// finished or the limit is reached; the best finished one wins.
template <class Scorer = LogProbabilityScorer>
class BeamSearch {
public:
    using Score = typename Scorer::Score;

    BeamSearch(const SearchOptions& options, int bos, int eos, int max_length, int width = -1, Scorer scorer = {})
        : options_(options), eos_(eos), max_length_(max_length), history_(width), scorer_(std::move(scorer)),
          tokens_{bos}, scores_{0}, log_probabilities_{0}, nodes_{-1}, tree_nodes_{-1} {
        const std::size_t beam = static_cast<std::size_t>(options.beam);
        for (auto* v : {&tokens_, &next_tokens_}) v->reserve(beam);
        for (auto* v : {&nodes_, &next_nodes_, &tree_nodes_, &next_tree_nodes_, &next_parents_}) v->reserve(beam);
        candidates_.reserve(2 * beam * beam);
        ended_.reserve(beam);
    }

    // What each live row is fed next.
    const std::vector<int32_t>& next_tokens() const { return tokens_; }

    // The step's candidates from rows [first, first + next_tokens().size()) of out (their logits end as log p):
    // each row's best. It touches only those rows and this search, so the searches of one step may choose
    // concurrently; advance then decides among the candidates.
    void choose(BatchOutput& out, int first);
    // Takes the step's decisions from those rows (choosing first, unless choose did). While the search goes on,
    // it appends to parents the rows of out its next rows continue and returns true; once it has ended it
    // appends nothing and returns false.
    bool advance(int step, BatchOutput& out, int first, std::vector<int32_t>& parents);

    Hypothesis result();

private:
    struct Ended {
        int node;  // the last token's node (-1: no tokens)
        Score log_probability;
        Score score;
        bool finished;
        int tree_node;  // its last node in the search tree (SearchOptions::record_tree; else -1)
    };

    SearchOptions options_;
    int eos_, max_length_;
    History history_;
    Scorer scorer_;
    // Per live row: the token it is fed next, its ranking score, its Σ log p, its node in history_ and in tree_;
    // next_* are the next step's, being built.
    std::vector<int32_t> tokens_, next_tokens_;
    std::vector<Score> scores_, next_scores_, log_probabilities_, next_log_probabilities_;
    std::vector<int> nodes_, next_nodes_, tree_nodes_, next_tree_nodes_;
    std::vector<int32_t> next_parents_;  // the row (of this search's) each next row continues, for the scorer
    SearchTree tree_;
    std::vector<Candidate<Score>> candidates_;
    std::vector<Score> row_scores_;  // one row's candidate scores [vocab]
    std::vector<int32_t> prefix_;    // one row's tokens, for the n-gram ban
    bool chosen_ = false;            // candidates_ holds this step's (choose ran; advance not yet)
    std::vector<Ended> ended_;
};

template <class Scorer>
void BeamSearch<Scorer>::choose(BatchOutput& out, int first) {
    const std::size_t keep_per_step = static_cast<std::size_t>(2 * options_.beam);
    const int rows = static_cast<int>(tokens_.size()), vocab = out.vocab;
    if (first + rows > out.rows) fail("decoder: a step returned fewer rows than it was fed");
    candidates_.clear();
    row_scores_.resize(static_cast<std::size_t>(vocab));
    const std::size_t keep_per_row = std::min(keep_per_step, static_cast<std::size_t>(vocab));
    // All rows in one call: the pool splits them, where one row at a time leaves the other threads idle.
    kernels::log_softmax_rows(rows, vocab, out.logits_row(first), vocab);
    for (int b = 0; b < rows; ++b) {
        float* log_p = out.logits_row(first + b);
        if (options_.no_repeat_ngram >= 2) {
            history_.tokens_of(nodes_[b], prefix_);
            ban_repeated_ngrams(prefix_.data(), prefix_.size(), options_.no_repeat_ngram, log_p, vocab, out.columns);
        }
        scorer_.score_row(b, scores_[b], log_p, vocab, row_scores_.data());
        best_of_row(row_scores_.data(), vocab, b, keep_per_row, candidates_);
    }
    chosen_ = true;
}

template <class Scorer>
bool BeamSearch<Scorer>::advance(int step, BatchOutput& out, int first, std::vector<int32_t>& parents) {
    constexpr Score kNegativeInfinity = -std::numeric_limits<Score>::infinity();
    const int beam_width = options_.beam;
    const std::size_t keep_per_step = static_cast<std::size_t>(2 * beam_width);
    const int rows = static_cast<int>(tokens_.size());
    if (!chosen_) choose(out, first);
    chosen_ = false;
    const std::size_t step_row = history_.add_rows(out, first, rows);
    // The 2K best continuations: at most K of them can end in EOS, so K live ones remain.
    const std::size_t keep = std::min(candidates_.size(), keep_per_step);
    std::partial_sort(candidates_.begin(), candidates_.begin() + keep, candidates_.end(), ranks_before<Score>);
    const bool last_step = step + 1 >= max_length_;
    const std::size_t parents_before = parents.size();
    for (auto* v : {&next_nodes_, &next_tree_nodes_}) v->clear();
    for (auto* v : {&next_scores_, &next_log_probabilities_}) v->clear();
    next_tokens_.clear();
    next_parents_.clear();
    for (std::size_t c = 0; c < keep; ++c) {
        const Candidate<Score>& candidate = candidates_[c];
        if (candidate.score == kNegativeInfinity) break;
        const int beam = candidate.beam;
        const int32_t token = out.token_of(candidate.token);
        const Score log_probability = log_probabilities_[beam] + out.logits_row(first + beam)[candidate.token];
        const std::size_t row = step_row + static_cast<std::size_t>(beam);
        const bool is_eos = token == eos_;
        if (is_eos || last_step) {
            if (static_cast<int>(ended_.size()) < beam_width) {
                const int node = is_eos ? nodes_[beam] : history_.add_node(nodes_[beam], token, row);
                const Score score =
                    candidate.score / std::pow(static_cast<Score>(step + 1), options_.length_penalty);
                const int tree_node = options_.record_tree
                                          ? add_beam_node(tree_, step, tree_nodes_[beam], token,
                                                          static_cast<float>(log_probabilities_[beam]),
                                                          static_cast<float>(log_probability),
                                                          static_cast<float>(score), true)
                                          : -1;
                ended_.push_back({node, log_probability, score, is_eos, tree_node});
            }
        } else {
            next_tokens_.push_back(token);
            next_scores_.push_back(candidate.score);
            next_log_probabilities_.push_back(log_probability);
            next_nodes_.push_back(history_.add_node(nodes_[beam], token, row));
            next_parents_.push_back(beam);
            parents.push_back(first + beam);
            if (options_.record_tree)
                next_tree_nodes_.push_back(add_beam_node(tree_, step, tree_nodes_[beam], token,
                                                         static_cast<float>(log_probabilities_[beam]),
                                                         static_cast<float>(log_probability),
                                                         static_cast<float>(candidate.score), false));
        }
        if (static_cast<int>(next_tokens_.size()) == beam_width) break;
    }
    if (static_cast<int>(ended_.size()) >= beam_width || last_step || next_tokens_.empty()) {
        parents.resize(parents_before);  // its continuations end with it
        tokens_.clear();
        return false;
    }
    tokens_.swap(next_tokens_);
    scores_.swap(next_scores_);
    log_probabilities_.swap(next_log_probabilities_);
    nodes_.swap(next_nodes_);
    tree_nodes_.swap(next_tree_nodes_);
    scorer_.select(next_parents_.data(), tokens_.data(), static_cast<int>(tokens_.size()));
    return true;
}

template <class Scorer>
Hypothesis BeamSearch<Scorer>::result() {
    Hypothesis h;
    if (!ended_.empty()) {
        // The first of equal scores wins, like Python's max().
        const Ended& best = *std::max_element(ended_.begin(), ended_.end(),
                                              [](const Ended& a, const Ended& b) { return a.score < b.score; });
        history_.fill(best.node, h);
        h.log_probability = static_cast<float>(best.log_probability);
        h.score = static_cast<float>(best.score);
        h.finished = best.finished;
        tree_.winner = best.tree_node;
    }
    h.tree = std::move(tree_);
    return h;
}

// One search (a GreedySearch or a BeamSearch) over a decoder's whole batch, from `capacity` rows of room.
template <class Search>
Hypothesis run_search(const Decoder& decoder, Search search, int capacity, int max_length) {
    std::unique_ptr<DecoderBatch> batch = decoder.start_batch(capacity);
    BatchOutput out;
    std::vector<int32_t> parents;
    parents.reserve(static_cast<std::size_t>(capacity));
    for (int step = 0; step < max_length; ++step) {
        decoder.step_batch(*batch, search.next_tokens().data(), out);
        parents.clear();
        if (!search.advance(step, out, 0, parents)) break;
        decoder.select_batch(*batch, parents.data(), static_cast<int>(parents.size()));
    }
    return search.result();
}

// beam_search's batched path with candidates ranked by `scorer` (the hook models::joint_search uses). Throws
// attnlab::Error on bad options.
template <class Scorer>
Hypothesis beam_search_scored(const Decoder& decoder, const SearchOptions& options, Scorer scorer) {
    validate(options);
    const int max_length = max_target_length(options, decoder.source_length());
    return run_search(decoder,
                      BeamSearch<Scorer>(options, decoder.bos(), decoder.eos(), max_length, -1, std::move(scorer)),
                      options.beam, max_length);
}

}  // namespace attnlab::decode
