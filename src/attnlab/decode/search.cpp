#include "attnlab/decode/search.hpp"

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

// A beam's node: its log p is the difference of the cumulative sums, computed the same way by both searches so
// that their trees agree wherever their decoders do.
int add_beam_node(SearchTree& tree, int step, int parent, int32_t token, float parent_cumulative, float cumulative,
                  float score, bool finished) {
    tree.nodes.push_back({step, parent, token, cumulative - parent_cumulative, cumulative, score, finished});
    return static_cast<int>(tree.nodes.size()) - 1;
}

}  // namespace

void ban_repeated_ngrams(const int32_t* tokens, std::size_t count, int n, float* log_probabilities, int vocab) {
    if (n < 2 || count < static_cast<std::size_t>(n - 1)) return;
    const std::size_t context = static_cast<std::size_t>(n - 1);
    const int32_t* last = tokens + (count - context);  // the n-1 tokens a new one would follow
    for (std::size_t i = 0; i + context < count; ++i) {
        if (std::equal(tokens + i, tokens + i + context, last)) {
            const int32_t token = tokens[i + context];
            if (token >= 0 && token < vocab) log_probabilities[token] = -std::numeric_limits<float>::infinity();
        }
    }
}

void ban_repeated_ngrams(const std::vector<int32_t>& tokens, int n, std::vector<float>& log_probabilities) {
    ban_repeated_ngrams(tokens.data(), tokens.size(), n, log_probabilities.data(),
                        static_cast<int>(log_probabilities.size()));
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
                    if (options.record_tree)
                        finished_nodes.push_back(add_beam_node(tree, step, parent.node, candidate.token,
                                                               parent.log_probability, candidate.log_probability,
                                                               h.score, true));
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
                if (options.record_tree)
                    child.node = add_beam_node(tree, step, parent.node, candidate.token, parent.log_probability,
                                               candidate.log_probability, candidate.log_probability, false);
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

// ---- the batched searches ------------------------------------------------------------------------------------

// Decoder's default batch: one shared state per row, each stepped alone.
struct StateRows final : DecoderBatch {
    std::vector<StatePtr> states, selected;
    StepOutput one;
};

// Every step's output rows, copied once when the step is taken, and the tree of chosen tokens over them: a
// hypothesis is a node, and its attention, scores and context are found by walking back to the root, so no
// hypothesis carries (or copies) its history while the search runs.
class History {
public:
    struct Node {
        int parent;     // the node of the prefix, -1 at the root
        int32_t token;  // the token this node appends
        int step;       // the step whose output row produced it
        int row;        // that row
    };

    // The step's rows [out.rows × S] etc. are kept; returns the step index.
    int add_step(const BatchOutput& out) {
        if (steps_.empty()) {
            length_ = out.length;
            context_size_ = out.context_size;
        } else if (out.length != length_ || out.context_size != context_size_) {
            fail("decoder: the attention width changed between steps");
        }
        steps_.push_back(rows_);
        rows_ += out.rows;
        weights_.insert(weights_.end(), out.weights.begin(), out.weights.begin() + std::size_t(out.rows) * length_);
        scores_.insert(scores_.end(), out.scores.begin(), out.scores.begin() + std::size_t(out.rows) * length_);
        context_.insert(context_.end(), out.context.begin(),
                        out.context.begin() + std::size_t(out.rows) * context_size_);
        return static_cast<int>(steps_.size()) - 1;
    }

    int add_node(int parent, int32_t token, int step, int row) {
        nodes_.push_back({parent, token, step, row});
        return static_cast<int>(nodes_.size()) - 1;
    }

    // The tokens and rows from the root to `node` (-1: none).
    void fill(int node, Hypothesis& h) const {
        std::size_t count = 0;
        for (int n = node; n >= 0; n = nodes_[n].parent) ++count;
        h.tokens.assign(count, 0);
        h.attention.assign(count, {});
        h.scores.assign(count, {});
        h.context.assign(count, {});
        for (int n = node; n >= 0; n = nodes_[n].parent) {
            --count;
            const Node& at = nodes_[n];
            const std::size_t row = steps_[at.step] + std::size_t(at.row);
            h.tokens[count] = at.token;
            h.attention[count].assign(weights_.begin() + row * length_, weights_.begin() + (row + 1) * length_);
            h.scores[count].assign(scores_.begin() + row * length_, scores_.begin() + (row + 1) * length_);
            h.context[count].assign(context_.begin() + row * context_size_,
                                    context_.begin() + (row + 1) * context_size_);
        }
    }

    // The tokens from the root to `node`, into tokens (which keeps its storage).
    void tokens_of(int node, std::vector<int32_t>& tokens) const {
        std::size_t count = 0;
        for (int n = node; n >= 0; n = nodes_[n].parent) ++count;
        tokens.resize(count);
        for (int n = node; n >= 0; n = nodes_[n].parent) tokens[--count] = nodes_[n].token;
    }

private:
    std::vector<Node> nodes_;
    std::vector<std::size_t> steps_;  // the first row of each step
    std::size_t rows_ = 0;
    int length_ = 0, context_size_ = 0;
    std::vector<float> weights_, scores_, context_;
};

}  // namespace

int32_t choose_greedy(float* logits, int vocab, const std::vector<int32_t>& tokens, int no_repeat_ngram) {
    if (no_repeat_ngram >= 2) {  // banned after the softmax, so log p stays the model's
        kernels::log_softmax_rows(1, vocab, logits, vocab);
        ban_repeated_ngrams(tokens.data(), tokens.size(), no_repeat_ngram, logits, vocab);
        return kernels::argmax(logits, vocab);
    }
    const int32_t token = kernels::argmax(logits, vocab);
    kernels::log_softmax_rows(1, vocab, logits, vocab);
    return token;
}

namespace {

Hypothesis greedy_batched(const Decoder& decoder, const SearchOptions& options) {
    const int max_length = max_target_length(options, decoder.source_length());
    std::unique_ptr<DecoderBatch> batch = decoder.start_batch(1);
    BatchOutput out;
    History history;
    Hypothesis result;
    std::vector<int32_t> tokens;  // what has been emitted, for the n-gram ban
    int node = -1;
    int32_t token = decoder.bos();
    for (int i = 0; i < max_length; ++i) {
        decoder.step_batch(*batch, &token, out);
        float* logits = out.logits_row(0);
        token = choose_greedy(logits, out.vocab, tokens, options.no_repeat_ngram);
        result.log_probability += logits[token];
        if (options.record_tree)
            add_greedy_node(result.tree, token, logits[token], result.log_probability,
                            token == decoder.eos() || i + 1 == max_length);
        if (token == decoder.eos()) {
            result.finished = true;
            break;
        }
        tokens.push_back(token);
        node = history.add_node(node, token, history.add_step(out), 0);
    }
    const float log_probability = result.log_probability;
    const bool finished = result.finished;
    history.fill(node, result);  // keeps result.tree
    result.log_probability = log_probability;
    result.finished = finished;
    result.score = result.log_probability;
    return result;
}

}  // namespace

bool ranks_before(const Candidate& a, const Candidate& b) {
    if (a.log_probability != b.log_probability) return a.log_probability > b.log_probability;
    if (a.beam != b.beam) return a.beam < b.beam;
    return a.token < b.token;
}

void best_of_row(const float* values, int vocab, int beam, std::size_t keep, std::vector<Candidate>& best) {
    const std::size_t begin = best.size();
    for (int v = 0; v < vocab; ++v) {
        const Candidate c{values[v], beam, v};
        const std::size_t size = best.size() - begin;
        if (size == keep && !ranks_before(c, best.back())) continue;
        if (size < keep) best.push_back(c);
        else best.back() = c;
        // Insertion into the sorted run [begin, end).
        for (std::size_t i = best.size() - 1; i > begin && ranks_before(best[i], best[i - 1]); --i)
            std::swap(best[i], best[i - 1]);
    }
}

namespace {

struct Finished {
    int node;  // the last token's node (-1: no tokens)
    float log_probability;
    float score;
    bool finished;
    int tree_node;  // its last node in the search tree (SearchOptions::record_tree; else -1)
};

Hypothesis beam_batched(const Decoder& decoder, const SearchOptions& options) {
    const int beam_width = options.beam;
    const int max_length = max_target_length(options, decoder.source_length());
    constexpr float kNegativeInfinity = -std::numeric_limits<float>::infinity();
    const std::size_t keep_per_step = static_cast<std::size_t>(2 * beam_width);

    std::unique_ptr<DecoderBatch> batch = decoder.start_batch(beam_width);
    BatchOutput out;
    History history;
    // Row r of the batch: the token it is fed next, its log p and its node; next_* are being built.
    std::vector<int32_t> tokens{decoder.bos()}, next_tokens, parents;
    std::vector<float> log_probabilities{0.0f}, next_log_probabilities;
    std::vector<int> nodes{-1}, next_nodes;
    SearchTree tree;
    std::vector<int> tree_nodes{-1}, next_tree_nodes;  // each row's node in tree (SearchOptions::record_tree)
    std::vector<Candidate> candidates;
    std::vector<Finished> finished;
    std::vector<int32_t> prefix;  // one row's tokens, for the n-gram ban
    for (auto* v : {&tokens, &next_tokens, &parents}) v->reserve(beam_width);
    for (auto* v : {&nodes, &next_nodes}) v->reserve(beam_width);
    log_probabilities.reserve(beam_width);
    next_log_probabilities.reserve(beam_width);
    candidates.reserve(keep_per_step * beam_width);
    finished.reserve(beam_width);

    for (int step = 0; step < max_length && !tokens.empty(); ++step) {
        decoder.step_batch(*batch, tokens.data(), out);
        const int rows = out.rows, vocab = out.vocab;
        const int step_index = history.add_step(out);
        candidates.clear();
        const std::size_t keep_per_row = std::min(keep_per_step, static_cast<std::size_t>(vocab));
        for (int b = 0; b < rows; ++b) {
            float* logits = out.logits_row(b);
            kernels::log_softmax_rows(1, vocab, logits, vocab);
            if (options.no_repeat_ngram >= 2) {
                history.tokens_of(nodes[b], prefix);
                ban_repeated_ngrams(prefix.data(), prefix.size(), options.no_repeat_ngram, logits, vocab);
            }
            for (int v = 0; v < vocab; ++v) logits[v] = log_probabilities[b] + logits[v];
            best_of_row(logits, vocab, b, keep_per_row, candidates);
        }
        // The 2K best continuations: at most K of them can end in EOS, so K live ones remain.
        const std::size_t keep = std::min(candidates.size(), keep_per_step);
        std::partial_sort(candidates.begin(), candidates.begin() + keep, candidates.end(), ranks_before);
        const bool last_step = step + 1 >= max_length;
        next_tokens.clear();
        next_log_probabilities.clear();
        next_nodes.clear();
        next_tree_nodes.clear();
        parents.clear();
        for (std::size_t c = 0; c < keep; ++c) {
            const Candidate& candidate = candidates[c];
            if (candidate.log_probability == kNegativeInfinity) break;
            const bool is_eos = candidate.token == decoder.eos();
            if (is_eos || last_step) {
                if (static_cast<int>(finished.size()) < beam_width) {
                    const int node = is_eos ? nodes[candidate.beam]
                                            : history.add_node(nodes[candidate.beam], candidate.token, step_index,
                                                               candidate.beam);
                    const float score = candidate.log_probability /
                                        std::pow(static_cast<float>(step + 1), options.length_penalty);
                    const int tree_node =
                        options.record_tree
                            ? add_beam_node(tree, step, tree_nodes[candidate.beam], candidate.token,
                                            log_probabilities[candidate.beam], candidate.log_probability, score, true)
                            : -1;
                    finished.push_back({node, candidate.log_probability, score, is_eos, tree_node});
                }
            } else {
                next_tokens.push_back(candidate.token);
                next_log_probabilities.push_back(candidate.log_probability);
                next_nodes.push_back(history.add_node(nodes[candidate.beam], candidate.token, step_index, candidate.beam));
                parents.push_back(candidate.beam);
                if (options.record_tree)
                    next_tree_nodes.push_back(add_beam_node(tree, step, tree_nodes[candidate.beam], candidate.token,
                                                            log_probabilities[candidate.beam],
                                                            candidate.log_probability, candidate.log_probability,
                                                            false));
            }
            if (static_cast<int>(next_tokens.size()) == beam_width) break;
        }
        if (static_cast<int>(finished.size()) >= beam_width || last_step) break;
        decoder.select_batch(*batch, parents.data(), static_cast<int>(parents.size()));
        tokens.swap(next_tokens);
        log_probabilities.swap(next_log_probabilities);
        nodes.swap(next_nodes);
        tree_nodes.swap(next_tree_nodes);
    }
    if (finished.empty()) {
        Hypothesis none;
        none.tree = std::move(tree);
        return none;
    }
    // The first of equal scores wins, like Python's max().
    const Finished& best = *std::max_element(finished.begin(), finished.end(),
                                             [](const Finished& a, const Finished& b) { return a.score < b.score; });
    Hypothesis h;
    history.fill(best.node, h);
    h.log_probability = best.log_probability;
    h.score = best.score;
    h.finished = best.finished;
    if (options.record_tree) {
        tree.winner = best.tree_node;
        h.tree = std::move(tree);
    }
    return h;
}

}  // namespace

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
    return options.batched ? greedy_batched(decoder, options) : greedy_one_by_one(decoder, options);
}

Hypothesis beam_search(const Decoder& decoder, const SearchOptions& options) {
    validate(options);
    return options.batched ? beam_batched(decoder, options) : beam_one_by_one(decoder, options);
}

Hypothesis search(const Decoder& decoder, const SearchOptions& options) {
    return options.beam == 1 ? greedy_search(decoder, options) : beam_search(decoder, options);
}

}  // namespace attnlab::decode
