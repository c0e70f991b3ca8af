// Tokenizer speed on long inputs, natively and in wasm (node): a 10,000-character text of short words and one
// 10,000-character word (the worst case for merging), each encoded RUNS times. The page and the CLI tokenize
// whatever the user pastes, so encoding it should take well under a second; the budget below is that promise.
//   bench_tokenizer [TOKENIZER.gguf] [runs]        (default models/tokenizers/multi30k.de.gguf, 10 runs)
// Prints best and median milliseconds per input; the LAST line is one JSON object:
//   {"tokenizer", "simd", "runs", "text_ms", "word_ms", "total_ms", "budget_ms", "within_budget"} (best runs).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/text/tokenizer.hpp"

using namespace attnlab;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr double kBudgetMs = 500.0;

double ms_since(clock_type::time_point t0) {
    return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

double best(std::vector<double> ms) { return *std::min_element(ms.begin(), ms.end()); }

double median(std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    const std::string path = argc > 1 ? argv[1] : "models/tokenizers/multi30k.de.gguf";
    const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 10;
    try {
        const auto tokenizer = text::Tokenizer::from_gguf(gguf::File::open(path), "text");
        std::string text;
        for (int i = 0; text.size() < 10000; ++i)
            text += "Ein Mann fährt mit dem Fahrrad über eine Brücke " + std::to_string(i) + ". ";
        const std::string word(10000, 'a');
        std::vector<double> text_ms, word_ms, total_ms;
        std::size_t ids = 0;
        for (int r = 0; r < runs; ++r) {
            auto t0 = clock_type::now();
            ids += tokenizer.encode(text).size();
            text_ms.push_back(ms_since(t0));
            t0 = clock_type::now();
            ids += tokenizer.encode(word).size();
            word_ms.push_back(ms_since(t0));
            total_ms.push_back(text_ms.back() + word_ms.back());
        }
        std::printf("tokenizer %s (simd %s), %d runs, %zu ids in all\n", path.c_str(), kernels::simd_name(), runs, ids);
        std::printf("%-40s best %8.2f ms   median %8.2f ms\n", "10,000 characters of short words", best(text_ms),
                    median(text_ms));
        std::printf("%-40s best %8.2f ms   median %8.2f ms\n", "one 10,000-character word", best(word_ms),
                    median(word_ms));
        std::printf("{\"tokenizer\": \"%s\", \"simd\": \"%s\", \"runs\": %d, \"text_ms\": %.3f, \"word_ms\": %.3f, "
                    "\"total_ms\": %.3f, \"budget_ms\": %.0f, \"within_budget\": %s}\n",
                    path.c_str(), kernels::simd_name(), runs, best(text_ms), best(word_ms), best(total_ms), kBudgetMs,
                    best(total_ms) < kBudgetMs ? "true" : "false");
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_tokenizer: %s\n", e.what());
        return 1;
    }
}
