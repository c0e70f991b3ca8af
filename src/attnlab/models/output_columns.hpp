#pragma once
// The output layer a batched translation decoder projects onto: the model's own, or, when a step scores only some
// target tokens (decode::Columns, a shortlist's union), that layer's rows for them, gathered once per batch (by a
// caller that has other work for its threads, before the decoder, on a thread of its choice).
#include "attnlab/decode/search.hpp"
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

}  // namespace attnlab::models
