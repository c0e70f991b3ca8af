#include "attnlab/decode/search.hpp"

#include "attnlab/decode/batched.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "attnlab/error.hpp"
#include "attnlab/kernels/kernels.hpp"

namespace attnlab::decode {

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

namespace {

struct Beam {
    StatePtr state;
    int32_t last_token;
    float log_probability;
    std::vector<int32_t> tokens;
    std::vector<std::vector<float>> attention;
    std::vector<std::vector<float>> scores;
    std::vector<std::vector<float>> context;
    int node = -1;  // its node in the search tree (SearchOptions::record_tree), -1 before the first token
};

// A greedy search's tree is one path: each step's node is the child of the previous one.
void add_greedy_node(SearchTree& tree, int32_t token, float log_probability, float cumulative, bool finished) {
    const int step = static_cast<int>(tree.nodes.size());
    tree.nodes.push_back({step, step - 1, token, log_probability, cumulative, cumulative, finished});
    tree.winner = step;
}

}  // namespace

void ban_repeated_ngrams(const int32_t* tokens, std::size_t count, int n, float* log_probabilities, int vocab,
                         const Columns* columns) {
    if (n < 2 || count < static_cast<std::size_t>(n - 1)) return;
    const std::size_t context = static_cast<std::size_t>(n - 1);
    const int32_t* last = tokens + (count - context);  // the n-1 tokens a new one would follow
    for (std::size_t i = 0; i + context < count; ++i) {
        if (std::equal(tokens + i, tokens + i + context, last)) {
            const int32_t token = tokens[i + context];
            const int column = columns ? columns->column(token) : token;
            if (column >= 0 && column < vocab) log_probabilities[column] = -std::numeric_limits<float>::infinity();
        }
    }
}

void ban_repeated_ngrams(const std::vector<int32_t>& tokens, int n, std::vector<float>& log_probabilities) {
    ban_repeated_ngrams(tokens.data(), tokens.size(), n, log_probabilities.data(),
                        static_cast<int>(log_probabilities.size()));
}

Columns::Columns(std::vector<int32_t> token_ids, int vocab) : ids(std::move(token_ids)) {
    if (ids.empty()) fail("decoder columns: no token to score");
    column_of.assign(static_cast<std::size_t>(std::max(vocab, 0)), -1);
    for (std::size_t c = 0; c < ids.size(); ++c) {
        if (!(ids[c] >= 0 && ids[c] < vocab))
            fail("decoder columns: token " + std::to_string(ids[c]) + " is outside the vocabulary of " +
                 std::to_string(vocab));
        if (c > 0 && ids[c] <= ids[c - 1]) fail("decoder columns: the tokens must ascend without repeats");
        column_of[static_cast<std::size_t>(ids[c])] = static_cast<int32_t>(c);
    }
}

int max_target_length(const SearchOptions& options, int source_length) {
    // Matches models/seq2seq_rnn.py: int(max_len_a * |source| + max_len_b).
    return static_cast<int>(options.max_length_ratio * static_cast<float>(source_length) +
                            static_cast<float>(options.max_length_extra));
}

namespace {

// The batch-1 reference: every hypothesis stepped alone through Decoder::step, carrying its own history.
Hypothesis greedy_one_by_one(const Decoder& decoder, const SearchOptions& options) {
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
        if (options.record_tree)
            add_greedy_node(result.tree, token, out.logits[token], result.log_probability,
                            token == decoder.eos() || i + 1 == max_length);
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

Hypothesis beam_one_by_one(const Decoder& decoder, const SearchOptions& options) {
    const int beam_width = options.beam;
    const int max_length = max_target_length(options, decoder.source_length());
    constexpr float kNegativeInfinity = -std::numeric_limits<float>::infinity();

    std::vector<Beam> beams{Beam{decoder.initial_state(), decoder.bos(), 0.0f, {}, {}, {}, {}}};
    std::vector<Hypothesis> finished;
    SearchTree tree;
    std::vector<int> finished_nodes;  // finished[i]'s last node in tree
    std::vector<StepOutput> outputs;
    std::vector<StatePtr> next_states;
    std::vector<Candidate<float>> candidates;

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
        std::partial_sort(candidates.begin(), candidates.begin() + keep, candidates.end(), ranks_before<float>);
        const bool last_step = step + 1 >= max_length;
        std::vector<Beam> next;
        for (std::size_t c = 0; c < keep; ++c) {
            const Candidate<float>& candidate = candidates[c];
            if (candidate.score == kNegativeInfinity) break;
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
                    h.log_probability = candidate.score;
                    h.score = candidate.score /
                              std::pow(static_cast<float>(step + 1), options.length_penalty);
                    h.finished = is_eos;
                    if (options.record_tree)
                        finished_nodes.push_back(add_beam_node(tree, step, parent.node, candidate.token,
                                                               parent.log_probability, candidate.score,
                                                               h.score, true));
                    finished.push_back(std::move(h));
                }
            } else {
                Beam child{next_states[candidate.beam], candidate.token, candidate.score,
                           parent.tokens,             parent.attention, parent.scores,
                           parent.context};
                child.tokens.push_back(candidate.token);
                child.attention.push_back(out.weights);
                child.scores.push_back(out.scores);
                child.context.push_back(out.context);
                if (options.record_tree)
                    child.node = add_beam_node(tree, step, parent.node, candidate.token, parent.log_probability,
                                               candidate.score, candidate.score, false);
                next.push_back(std::move(child));
            }
            if (static_cast<int>(next.size()) == beam_width) break;
        }
        if (static_cast<int>(finished.size()) >= beam_width || last_step) break;
        beams = std::move(next);
    }
    if (finished.empty()) {
        Hypothesis none;
        none.tree = std::move(tree);
        return none;
    }
    // The first of equal scores wins, like Python's max().
    auto best = std::max_element(finished.begin(), finished.end(),
                                 [](const Hypothesis& a, const Hypothesis& b) { return a.score < b.score; });
    if (options.record_tree) {
        tree.winner = finished_nodes[static_cast<std::size_t>(best - finished.begin())];
        best->tree = std::move(tree);
    }
    return std::move(*best);
}

// ---- the batched searches (their decisions: batched.hpp) ------------------------------------------------------

// Decoder's default batch: one shared state per row, each stepped alone.
struct StateRows final : DecoderBatch {
    std::vector<StatePtr> states, selected;
    StepOutput one;
};

}  // namespace

std::size_t History::add_rows(const BatchOutput& out, int first, int count) {
    if (!started_) {
        started_ = true;
        width_of_step_ = width_ < 0;
        if (width_of_step_) width_ = out.length;
        context_size_ = out.context_size;
    }
    if ((width_of_step_ ? out.length != width_ : out.length < width_) || out.context_size != context_size_)
        fail("decoder: the attention width changed between steps");
    const std::size_t start = rows_;
    const std::size_t width = static_cast<std::size_t>(width_), context_size = static_cast<std::size_t>(context_size_);
    for (int r = first; r < first + count; ++r) {
        const float* weights = out.weights.data() + std::size_t(r) * out.length;
        const float* scores = out.scores.data() + std::size_t(r) * out.length;
        const float* context = out.context.data() + std::size_t(r) * out.context_size;
        weights_.insert(weights_.end(), weights, weights + width);
        scores_.insert(scores_.end(), scores, scores + width);
        context_.insert(context_.end(), context, context + context_size);
    }
    rows_ += std::size_t(count);
    return start;
}

void History::fill(int node, Hypothesis& h) const {
    tokens_of(node, h.tokens);
    const std::size_t count = h.tokens.size();
    const std::size_t width = static_cast<std::size_t>(width_), context_size = static_cast<std::size_t>(context_size_);
    h.attention.assign(count, {});
    h.scores.assign(count, {});
    h.context.assign(count, {});
    std::size_t i = count;
    for (int n = node; n >= 0; n = nodes_[n].parent) {
        --i;
        const std::size_t row = nodes_[n].row;
        h.attention[i].assign(weights_.begin() + row * width, weights_.begin() + (row + 1) * width);
        h.scores[i].assign(scores_.begin() + row * width, scores_.begin() + (row + 1) * width);
        h.context[i].assign(context_.begin() + row * context_size, context_.begin() + (row + 1) * context_size);
    }
}

void History::tokens_of(int node, std::vector<int32_t>& tokens) const {
    std::size_t count = 0;
    for (int n = node; n >= 0; n = nodes_[n].parent) ++count;
    tokens.resize(count);
    for (int n = node; n >= 0; n = nodes_[n].parent) tokens[--count] = nodes_[n].token;
}

int32_t choose_greedy(float* logits, int vocab, const std::vector<int32_t>& tokens, int no_repeat_ngram,
                      const Columns* columns) {
    if (no_repeat_ngram >= 2) {  // banned after the softmax, so log p stays the model's
        kernels::log_softmax_rows(1, vocab, logits, vocab);
        ban_repeated_ngrams(tokens.data(), tokens.size(), no_repeat_ngram, logits, vocab, columns);
        return kernels::argmax(logits, vocab);
    }
    const int32_t token = kernels::argmax(logits, vocab);
    kernels::log_softmax_rows(1, vocab, logits, vocab);
    return token;
}

GreedySearch::GreedySearch(const SearchOptions& options, int bos, int eos, int max_length, int width)
    : options_(options), eos_(eos), max_length_(max_length), history_(width), next_{bos} {}

void GreedySearch::choose(BatchOutput& out, int first) {
    if (first >= out.rows) fail("decoder: a step returned fewer rows than it was fed");
    chosen_ = choose_greedy(out.logits_row(first), out.vocab, emitted_, options_.no_repeat_ngram, out.columns);
}

bool GreedySearch::advance(int step, BatchOutput& out, int first, std::vector<int32_t>& parents) {
    if (chosen_ < 0) choose(out, first);
    const int column = chosen_;
    chosen_ = -1;
    const int32_t token = out.token_of(column);
    const float log_probability = out.logits_row(first)[column];
    const bool last_step = step + 1 >= max_length_;
    result_.log_probability += log_probability;
    if (options_.record_tree)
        add_greedy_node(result_.tree, token, log_probability, result_.log_probability, token == eos_ || last_step);
    if (token == eos_) {
        result_.finished = true;
        return false;
    }
    emitted_.push_back(token);
    node_ = history_.add_node(node_, token, history_.add_rows(out, first, 1));
    next_[0] = token;
    if (last_step) return false;
    parents.push_back(first);
    return true;
}

Hypothesis GreedySearch::result() {
    history_.fill(node_, result_);  // keeps log p, finished and the tree
    result_.score = result_.log_probability;
    return std::move(result_);
}

void BatchOutput::reshape(int row_count, int vocab_size, int source_length, int context_width) {
    rows = row_count;
    vocab = vocab_size;
    length = source_length;
    context_size = context_width;
    logits.resize(static_cast<std::size_t>(rows) * vocab);
    weights.resize(static_cast<std::size_t>(rows) * length);
    scores.resize(static_cast<std::size_t>(rows) * length);
    context.resize(static_cast<std::size_t>(rows) * context_size);
}

std::unique_ptr<DecoderBatch> Decoder::start_batch(int capacity) const {
    auto batch = std::make_unique<StateRows>();
    batch->states.reserve(capacity);
    batch->selected.reserve(capacity);
    batch->states.push_back(initial_state());
    batch->rows = 1;
    return batch;
}

void Decoder::step_batch(DecoderBatch& batch, const int32_t* tokens, BatchOutput& out) const {
    auto* rows = dynamic_cast<StateRows*>(&batch);
    if (!rows) fail("Decoder::step_batch: the batch does not come from this decoder's start_batch");
    StepOutput& one = rows->one;
    for (int r = 0; r < rows->rows; ++r) {
        rows->states[r] = step(*rows->states[r], tokens[r], one);
        if (r == 0) {
            out.reshape(rows->rows, static_cast<int>(one.logits.size()), static_cast<int>(one.weights.size()),
                        static_cast<int>(one.context.size()));
        } else if (static_cast<int>(one.logits.size()) != out.vocab ||
                   static_cast<int>(one.weights.size()) != out.length ||
                   static_cast<int>(one.context.size()) != out.context_size) {
            fail("Decoder::step_batch: the rows of one step differ in size");
        }
        if (one.scores.size() != one.weights.size())
            fail("Decoder::step_batch: a step's scores and weights differ in size");
        std::copy(one.logits.begin(), one.logits.end(), out.logits_row(r));
        std::copy(one.weights.begin(), one.weights.end(), out.weights_row(r));
        std::copy(one.scores.begin(), one.scores.end(), out.scores_row(r));
        std::copy(one.context.begin(), one.context.end(), out.context_row(r));
    }
}

void Decoder::select_batch(DecoderBatch& batch, const int32_t* parents, int count) const {
    auto* rows = dynamic_cast<StateRows*>(&batch);
    if (!rows) fail("Decoder::select_batch: the batch does not come from this decoder's start_batch");
    rows->selected.clear();
    for (int r = 0; r < count; ++r) rows->selected.push_back(rows->states.at(static_cast<std::size_t>(parents[r])));
    rows->states.swap(rows->selected);
    rows->rows = count;
}

Hypothesis greedy_search(const Decoder& decoder, const SearchOptions& options) {
    validate(options);
    if (!options.batched) return greedy_one_by_one(decoder, options);
    const int max_length = max_target_length(options, decoder.source_length());
    return run_search(decoder, GreedySearch(options, decoder.bos(), decoder.eos(), max_length), 1, max_length);
}

Hypothesis beam_search(const Decoder& decoder, const SearchOptions& options) {
    if (!options.batched) {
        validate(options);
        return beam_one_by_one(decoder, options);
    }
    return beam_search_scored(decoder, options, LogProbabilityScorer{});
}

Hypothesis search(const Decoder& decoder, const SearchOptions& options) {
    return options.beam == 1 ? greedy_search(decoder, options) : beam_search(decoder, options);
}

}  // namespace attnlab::decode
