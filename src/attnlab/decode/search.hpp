#pragma once
// Greedy and beam search over any model that can take one decoder step. Each hypothesis carries its own
// attention history, so the result has the alignment of exactly the tokens it returns.
#include <cstddef>
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

// The target tokens a step scores when it scores only some of the vocabulary (a translation shortlist's union):
// column c of each logits row is token ids[c]. The ids ascend, so ranking candidates by column ranks their ties
// as token order does.
struct Columns {
    std::vector<int32_t> ids;        // ascending, unique, in [0, vocab)
    std::vector<int32_t> column_of;  // [vocab]: the column that scores a token; -1: the step does not score it

    // Throws attnlab::Error unless ids is a non-empty ascending run of unique ids in [0, vocab).
    Columns(std::vector<int32_t> ids, int vocab);
    int size() const { return static_cast<int>(ids.size()); }
    int column(int32_t token) const {
        return token >= 0 && token < static_cast<int32_t>(column_of.size()) ? column_of[token] : -1;
    }
};

// What one batched step produces, row r for the batch's row r. The buffers keep their storage between steps, so
// a search allocates them once.
struct BatchOutput {
    int rows = 0;
    int vocab = 0;         // V: the columns of a logits row (the vocabulary's size unless `columns` is set)
    int length = 0;        // S
    int context_size = 0;  // dv; 0 if the model has no context vector
    std::vector<float> logits;   // [rows × V]
    std::vector<float> weights;  // [rows × S] attention weights (stage 2)
    std::vector<float> scores;   // [rows × S] raw attention scores (stage 1)
    std::vector<float> context;  // [rows × dv] context vectors (stage 3)
    const Columns* columns = nullptr;  // the tokens of the logits' columns; null: column v is token v

    int32_t token_of(int column) const { return columns ? columns->ids[static_cast<std::size_t>(column)] : column; }
    void reshape(int rows, int vocab, int length, int context_size);
    float* logits_row(int r) { return logits.data() + static_cast<std::size_t>(r) * vocab; }
    float* weights_row(int r) { return weights.data() + static_cast<std::size_t>(r) * length; }
    float* scores_row(int r) { return scores.data() + static_cast<std::size_t>(r) * length; }
    float* context_row(int r) { return context.data() + static_cast<std::size_t>(r) * context_size; }
};

// The states of the live hypotheses, one row each, in the decoder's own layout (a model that batches keeps them
// as matrices, so one step reads every weight once for all rows).
struct DecoderBatch {
    virtual ~DecoderBatch() = default;
    int rows = 0;
};

class Decoder {
public:
    virtual ~Decoder() = default;
    virtual int bos() const = 0;
    virtual int eos() const = 0;
    virtual int source_length() const = 0;
    virtual StatePtr initial_state() const = 0;
    // The state after feeding token (y_{i-1}) to state (s_{i-1}); out gets the logits for y_i and the attention.
    virtual StatePtr step(const DecoderState& state, int32_t token, StepOutput& out) const = 0;

    // The batched interface the searches use (SearchOptions::batched). Its defaults keep one StatePtr per row and
    // call step() row by row, so a decoder that implements only step() decodes exactly as before; RnnDecoder and
    // TransformerDecoder override all three to step every row in one pass over the weights.
    //
    // One row holding initial_state(), with room for `capacity` rows.
    virtual std::unique_ptr<DecoderBatch> start_batch(int capacity) const;
    // Feeds tokens[r] to row r, for every row, in place; out gets each row's logits and attention.
    virtual void step_batch(DecoderBatch& batch, const int32_t* tokens, BatchOutput& out) const;
    // Row r becomes what row parents[r] was, for r < count (count <= capacity; a parent may be chosen several
    // times or not at all): the beam's back-pointers.
    virtual void select_batch(DecoderBatch& batch, const int32_t* parents, int count) const;
};

// What a model's Decoder over one encoded source shares: the model's BOS and EOS, and the encoding (kept by
// reference: it must outlive the decoder), whose `memory` [S, ...] is as long as the source.
template <class Model, class Encoded>
class EncodedDecoder : public Decoder {
public:
    EncodedDecoder(const Model& model, const Encoded& encoded) : model_(model), encoded_(encoded) {}
    int bos() const override { return model_.bos; }
    int eos() const override { return model_.eos; }
    int source_length() const override { return static_cast<int>(encoded_.memory.shape()[0]); }

protected:
    const Model& model_;
    const Encoded& encoded_;
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
    bool batched = true;             // step all live hypotheses at once (Decoder::step_batch); false: each one
                                     // alone through Decoder::step (the batch-1 reference the tests compare with)
    bool record_tree = false;        // fill Hypothesis::tree (what a step-by-step view of the search draws)
};

// Sets log p = -inf for every token that would complete an n-gram `tokens` already holds (n < 2: none); the
// searches apply it to each row's log-probabilities before choosing (python/attnlab/nn/decoding.py's ban_repeated_ngrams).
void ban_repeated_ngrams(const std::vector<int32_t>& tokens, int n, std::vector<float>& log_probabilities);
// The same on raw buffers: tokens [count], log_probabilities [vocab]; with columns, log_probabilities holds their
// columns (vocab of them) and a banned token outside them needs nothing.
void ban_repeated_ngrams(const int32_t* tokens, std::size_t count, int n, float* log_probabilities, int vocab,
                         const Columns* columns = nullptr);

// One hypothesis the search kept after one step: a node of the search tree, whose path to the root is its prefix.
struct TreeNode {
    int step = 0;                 // the output position it fills, from 0
    int parent = -1;              // the node of its prefix in SearchTree::nodes (always at step - 1); -1 at step 0
    int32_t token = 0;            // the token it appends; EOS for a hypothesis that ended with it
    float log_probability = 0;    // log p of that token given the prefix (as the search saw it: after any n-gram ban)
    float cumulative = 0;         // Σ log p from the first token through this one
    float score = 0;              // the ranking score: cumulative / length^length_penalty once finished (beam > 1)
    bool finished = false;        // the hypothesis ends here, with EOS or at the length limit
};

// Every hypothesis kept at every step, in step order, and the one returned.
struct SearchTree {
    std::vector<TreeNode> nodes;
    int winner = -1;              // the node the returned hypothesis ends at (its EOS when it has one); -1: no tokens
};

struct Hypothesis {
    std::vector<int32_t> tokens;                 // without BOS and EOS
    std::vector<std::vector<float>> attention;   // [tokens.size()][S] weights for each returned token
    std::vector<std::vector<float>> scores;      // [tokens.size()][S] raw scores for each returned token
    std::vector<std::vector<float>> context;     // [tokens.size()][dv] context vectors for each returned token
    float log_probability = 0.0f;                // Σ log p over the tokens (and EOS when it was produced)
    float score = 0.0f;                          // the ranking score (normalized by length for beam > 1)
    bool finished = false;                       // ended with EOS rather than by the length limit
    SearchTree tree;                             // empty unless SearchOptions::record_tree
};

int max_target_length(const SearchOptions& options, int source_length);

// Throws attnlab::Error on bad options (beam < 1 or > 64, negative limits); every search checks its options so.
void validate(const SearchOptions& options);

// Throws attnlab::Error on bad options (beam < 1 or > 64, negative limits).
Hypothesis greedy_search(const Decoder& decoder, const SearchOptions& options);
Hypothesis beam_search(const Decoder& decoder, const SearchOptions& options);
// beam == 1 -> greedy, else beam search.
Hypothesis search(const Decoder& decoder, const SearchOptions& options);

}  // namespace attnlab::decode
