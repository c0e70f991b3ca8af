#include "attnlab/decode/sentences.hpp"

#include <algorithm>
#include <numeric>

#include "attnlab/decode/batched.hpp"
#include "attnlab/parallel/pool.hpp"
#include "attnlab/threads.hpp"

namespace attnlab::decode {

namespace {

// A step's choice per logit, in the pool's multiply-adds: the log-softmax's exponential (~8) and the scoring and
// selection after it.
constexpr double kChoiceWorkPerElement = 10.0;

// A lane's decoding costs the pool at least this many multiply-adds: a decoder step of the smallest shipped
// translator (the Score functions tab's, 2 x 128 encoder) is ~0.3 M per row, and a sentence takes several steps.
constexpr double kLaneWork = 1e7;

// search_sentences for the sentences `subset` of the decoder (results written at their indices), with one Search
// (GreedySearch or BeamSearch) per sentence, each taking its decisions from its own rows of every step.
template <class Search>
void search_each(const SentencesDecoder& decoder, const SearchOptions& options, const std::vector<int>& subset,
                 std::vector<Hypothesis>& results) {
    struct Sentence {
        int index;
        int first;  // its first row in the batch
        Search search;
        bool done = false;
    };
    // Sentences whose length limit is 0 never take a step (as the one-sentence searches take none).
    std::vector<Sentence> sentences;
    std::vector<int32_t> tokens, next_tokens, parents;
    std::vector<int> sentence_of_row, next_sentence_of_row;
    for (int s : subset) {
        const int max_length = max_target_length(options, decoder.source_length(s));
        if (max_length <= 0) continue;
        sentences.push_back({s, static_cast<int>(tokens.size()),
                             Search(options, decoder.bos(), decoder.eos(), max_length, decoder.source_length(s))});
        tokens.push_back(decoder.bos());
        sentence_of_row.push_back(s);
    }
    if (tokens.empty()) return;
    const int capacity = static_cast<int>(sentences.size()) * options.beam;
    std::unique_ptr<DecoderBatch> batch =
        decoder.start_batch(sentence_of_row.data(), static_cast<int>(tokens.size()), capacity);
    BatchOutput out;
    std::vector<Sentence*> live;
    live.reserve(sentences.size());
    for (int step = 0; !tokens.empty(); ++step) {
        decoder.step_batch(*batch, tokens.data(), sentence_of_row.data(), out);
        // The sentences choose concurrently (each from its own rows, into its own state), then decide in order.
        live.clear();
        for (Sentence& sentence : sentences)
            if (!sentence.done) live.push_back(&sentence);
        parallel::parallel_for(static_cast<int>(live.size()), 1, double(out.rows) * out.vocab * kChoiceWorkPerElement,
                               [&](int begin, int end) {
                                   for (int i = begin; i < end; ++i) live[i]->search.choose(out, live[i]->first);
                               });
        next_tokens.clear();
        next_sentence_of_row.clear();
        parents.clear();
        for (Sentence& sentence : sentences) {
            if (sentence.done) continue;
            const int first = sentence.first;
            sentence.first = static_cast<int>(next_tokens.size());
            if (!sentence.search.advance(step, out, first, parents)) {
                sentence.done = true;
                continue;
            }
            const std::vector<int32_t>& next = sentence.search.next_tokens();
            next_tokens.insert(next_tokens.end(), next.begin(), next.end());
            next_sentence_of_row.insert(next_sentence_of_row.end(), next.size(), sentence.index);
        }
        if (next_tokens.empty()) break;
        decoder.select_batch(*batch, parents.data(), static_cast<int>(parents.size()));
        tokens.swap(next_tokens);
        sentence_of_row.swap(next_sentence_of_row);
    }
    for (Sentence& sentence : sentences) results[static_cast<std::size_t>(sentence.index)] = sentence.search.result();
}

}  // namespace

std::vector<std::vector<int>> sentence_lanes(const std::vector<int>& lengths, int lanes) {
    const int count = static_cast<int>(lengths.size());
    lanes = std::max(1, std::min(lanes, count));
    std::vector<int> order(lengths.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return lengths[a] > lengths[b]; });
    std::vector<std::vector<int>> result(static_cast<std::size_t>(lanes));
    std::vector<long long> load(static_cast<std::size_t>(lanes), 0);
    for (int s : order) {
        const auto lightest = std::min_element(load.begin(), load.end()) - load.begin();
        result[lightest].push_back(s);
        load[lightest] += std::max(lengths[s], 1);
    }
    for (std::vector<int>& lane : result) std::sort(lane.begin(), lane.end());
    return result;
}

std::vector<Hypothesis> search_sentences(const SentencesDecoder& decoder, const SearchOptions& options) {
    validate(options);
    const int count = decoder.sentences();
    std::vector<Hypothesis> results(static_cast<std::size_t>(count));
    std::vector<int> lengths(static_cast<std::size_t>(count));
    for (int s = 0; s < count; ++s) lengths[s] = decoder.source_length(s);
    const std::vector<std::vector<int>> lanes = sentence_lanes(lengths, threads());
    parallel::for_each_task(static_cast<int>(lanes.size()), kLaneWork * count / double(lanes.size()), [&](int lane) {
        if (options.beam == 1)
            search_each<GreedySearch>(decoder, options, lanes[lane], results);
        else
            search_each<BeamSearch<>>(decoder, options, lanes[lane], results);
    });
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
