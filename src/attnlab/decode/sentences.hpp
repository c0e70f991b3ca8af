#pragma once
// Several sentences decoded as one batch: each search step is ONE decoder step for the live hypotheses of every
// sentence, so a step reads each weight once for all of them, while each row attends over its own sentence's
// source only. Per sentence the search takes the decisions greedy_search / beam_search take on that sentence
// alone (batched), so its tokens, stop and attention are the same up to the summation order of the larger GEMMs.
#include <algorithm>
#include <cstddef>
#include <memory>
#include <utility>
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

// What the models' SentencesDecoders share: the model's BOS and EOS, and its encoded sentences (kept by pointer:
// they must outlive the decoder), each `memory` [S, ...] as long as its source.
template <class Model, class Encoded>
class EncodedSentences : public SentencesDecoder {
public:
    EncodedSentences(const Model& model, std::vector<const Encoded*> sentences)
        : model_(model), sentences_(std::move(sentences)) {
        for (const Encoded* encoded : sentences_) longest_ = std::max(longest_, length_of(*encoded));
    }
    int sentences() const override { return static_cast<int>(sentences_.size()); }
    int bos() const override { return model_.bos; }
    int eos() const override { return model_.eos; }
    int source_length(int sentence) const override { return length_of(*sentence_at(sentence)); }

protected:
    const Encoded* sentence_at(int sentence) const { return sentences_.at(static_cast<std::size_t>(sentence)); }
    // sources[r] = the encoded sentence of row r, for r < rows.
    void sources_of(const int* sentence_of_row, int rows, std::vector<const Encoded*>& sources) const {
        sources.clear();
        for (int r = 0; r < rows; ++r) sources.push_back(sentence_at(sentence_of_row[r]));
    }

    const Model& model_;
    std::vector<const Encoded*> sentences_;
    int longest_ = 0;  // the widest source: the batch's attention width

private:
    static int length_of(const Encoded& encoded) { return static_cast<int>(encoded.memory.shape()[0]); }
};

// The best hypothesis of every sentence of the decoder, in its order, as search() finds it for each one alone
// (SearchOptions::batched), search trees included when record_tree. Throws attnlab::Error on bad options.
// With several threads the sentences are dealt into one lane per thread (sentence_lanes), and the lanes decode
// side by side, each as its own batch on one thread: a step's products then need no hand-over between threads,
// and what would run on one thread alone (the search's choices and bookkeeping, the activations) runs in parallel
// too. The lanes are dealt before their output lengths are known, so they end apart: a thread whose lane is done
// helps the lanes still running with their products (parallel::for_each_task). The int8 and f32-panel products compute each row alone, so with q8_0 and f32 weights any split gives the
// same bits; f16 weights' float GEMM picks register tiles or the packed GEMM by the row count, so a lane's smaller
// batch may round in the last bits (the same tokens, tests/cpp/test_parallel.cpp).
std::vector<Hypothesis> search_sentences(const SentencesDecoder& decoder, const SearchOptions& options);

// Sentence indices (lengths: their source lengths) dealt into at most `lanes` non-empty lanes of about equal total
// length, longest first to the lightest lane; each lane in index order.
std::vector<std::vector<int>> sentence_lanes(const std::vector<int>& lengths, int lanes);

// The most rows one batched step of several sentences holds (sentences × beam): enough for the GEMMs to read
// each weight once for many rows, few enough that the Transformer's per-row caches stay small.
constexpr int kMaxSentenceBatchRows = 64;

// Sentence indices grouped for search_sentences: ordered by length (equal lengths in input order), at most
// max(1, max_rows / beam) sentences a group, so the sentences of a group finish at about the same step.
std::vector<std::vector<int>> length_buckets(const std::vector<int>& lengths, int beam,
                                             int max_rows = kMaxSentenceBatchRows);

}  // namespace attnlab::decode
