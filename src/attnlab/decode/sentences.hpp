#pragma once
// Several sentences decoded as one batch: each search step is ONE decoder step for the live hypotheses of every
// sentence, so a step reads each weight once for all of them, while each row attends over its own sentence's
// source only. Per sentence the search takes the decisions greedy_search / beam_search take on that sentence
// alone (batched), so its tokens, stop and attention are the same up to the summation order of the larger GEMMs.
#include <memory>
#include <vector>

#include "attnlab/decode/search.hpp"

namespace attnlab::decode {

// The decoder side of several encoded sentences. Rows of a batch belong to sentences; the search keeps each
// sentence's rows contiguous and passes the row -> sentence map with every step.
class SentencesDecoder {
public:
    virtual ~SentencesDecoder() = default;
    virtual int sentences() const = 0;
    virtual int bos() const = 0;
    virtual int eos() const = 0;
    virtual int source_length(int sentence) const = 0;
    // Row i holds the initial state of sentence sentence_of_row[i], for i < rows; room for `capacity` rows.
    virtual std::unique_ptr<DecoderBatch> start_batch(const int* sentence_of_row, int rows, int capacity) const = 0;
    // Feeds tokens[r] to row r (of sentence sentence_of_row[r]), every row in place. out.length is the longest
    // source of all sentences: row r's weights and scores fill its own sentence's first source_length columns
    // and are zero after them.
    virtual void step_batch(DecoderBatch& batch, const int32_t* tokens, const int* sentence_of_row,
                            BatchOutput& out) const = 0;
    // Row r becomes what row parents[r] was, for r < count (Decoder::select_batch).
    virtual void select_batch(DecoderBatch& batch, const int32_t* parents, int count) const = 0;
};

// The best hypothesis of every sentence of the decoder, in its order, as search() finds it for each one alone
// (SearchOptions::batched), search trees included when record_tree. Throws attnlab::Error on bad options.
std::vector<Hypothesis> search_sentences(const SentencesDecoder& decoder, const SearchOptions& options);

// The most rows one batched step of several sentences holds (sentences × beam): enough for the GEMMs to read
// each weight once for many rows, few enough that the Transformer's per-row caches stay small.
constexpr int kMaxSentenceBatchRows = 64;

// Sentence indices grouped for search_sentences: ordered by length (equal lengths in input order), at most
// max(1, max_rows / beam) sentences a group, so the sentences of a group finish at about the same step.
std::vector<std::vector<int>> length_buckets(const std::vector<int>& lengths, int beam,
                                             int max_rows = kMaxSentenceBatchRows);

}  // namespace attnlab::decode
