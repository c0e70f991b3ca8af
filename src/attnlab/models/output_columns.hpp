#pragma once
// The output layer a batched translation decoder projects onto: the model's own, or, when a step scores only some
// target tokens (decode::Columns, a shortlist's union), that layer's rows for them, gathered once per batch (by a
// caller that has other work for its threads, before the decoder, on a thread of its choice).
#include <utility>
#include <vector>

#include "attnlab/decode/search.hpp"
#include "attnlab/decode/sentences.hpp"
#include "attnlab/error.hpp"
#include "attnlab/nn/linear.hpp"

namespace attnlab::models {

class OutputColumns {
public:
    // full and columns are kept by pointer (null columns: the whole vocabulary).
    OutputColumns(const nn::Linear& full, const decode::Columns* columns)
        : full_(&full), columns_(columns), gathered_(columns ? nn::gather_rows(full, columns->ids) : nn::Linear{}) {}
    const nn::Linear& layer() const { return columns_ ? gathered_ : *full_; }
    const nn::Linear& full() const { return *full_; }
    const decode::Columns* columns() const { return columns_; }

private:
    const nn::Linear* full_;
    const decode::Columns* columns_;
    nn::Linear gathered_;
};

// Several encoded sentences of a translation model for decode::search_sentences, every step projecting onto
// output_ (the model's target_embedding, or its rows for the columns, kept by pointer).
template <class Model, class Encoded>
class ColumnSentencesDecoder : public decode::EncodedSentences<Model, Encoded> {
public:
    ColumnSentencesDecoder(const Model& model, std::vector<const Encoded*> sentences,
                           const decode::Columns* columns = nullptr)
        : ColumnSentencesDecoder(model, std::move(sentences), OutputColumns(model.target_embedding, columns)) {}
    // output: OutputColumns(model.target_embedding, columns), made beforehand (throws for another layer's).
    ColumnSentencesDecoder(const Model& model, std::vector<const Encoded*> sentences, OutputColumns output)
        : decode::EncodedSentences<Model, Encoded>(model, std::move(sentences)), output_(std::move(output)) {
        check(&output_.full() == &model.target_embedding, "the output columns are not of this model's output layer");
    }

protected:
    OutputColumns output_;
};

}  // namespace attnlab::models
