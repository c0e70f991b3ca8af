// The paragraph workload of issue 20 in the engine alone: Model::translate(texts) on 8-sentence paragraphs (beam 4,
// the shortlist as the page uses it), at each thread count asked, interleaved in blocks of 5 paragraphs in a rotating
// order so every count sees the same drift, each block after one untimed paragraph. Natively (build/native) and in the
// threaded wasm build under Node (build/wasm-mt, whose pool is started with the module), so the threads' speed-up
// of the engine can be told apart from what a browser page adds around it (bench/paragraph_ab.mjs).
//
//   bench_paragraph --model FILE.gguf --text FILE [--shortlist FILE] [--paragraphs 40] [--threads 1,2] [--beam 4]
//       [--pause-ms 0]
//
// --text: one sentence per line (build/data/multi30k/test2016.en); --pause-ms: the idle time before each timed
// paragraph (0: back to back; the browser benchmarks leave 100 ms). Prints the CPU, each thread count's mean and
// median milliseconds per paragraph and, for each count N > 1, "N threads ÷ 1" in speed; the LAST line is one JSON
// object {"cpu", "wasm", "model", "paragraphs", "ms": {"N": [...]}, "speedup": {"N": ratio}, "same_output"}.
// same_output: every thread count translated every paragraph to the same text (bit-identical results are what
// tests/cpp/test_parallel.cpp checks).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "attnlab/attnlab.hpp"
#include "attnlab/error.hpp"
#include "attnlab/threads.hpp"
#include "cpu_description.hpp"

using namespace attnlab;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kSentencesPerParagraph = 8;
constexpr std::size_t kBlock = 5;

struct Options {
    std::string model, text, shortlist;
    int paragraphs = 40, beam = 4, pause_ms = 0;
    std::vector<int> threads{1, 2};
};

std::vector<int> parse_counts(const std::string& text) {
    std::vector<int> counts;
    std::istringstream in(text);
    for (std::string item; std::getline(in, item, ',');) {
        const int n = std::atoi(item.c_str());
        check(n >= 1 && n <= max_threads(), "--threads: " + item + " is not a thread count from 1 to " +
                                                std::to_string(max_threads()) + " in this build");
        counts.push_back(n);
    }
    check(!counts.empty(), "--threads: no thread count");
    return counts;
}

Options parse(int argc, char** argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        const std::string flag = argv[i];
        check(i + 1 < argc, flag + " needs a value");
        const std::string value = argv[++i];
        if (flag == "--model") options.model = value;
        else if (flag == "--text") options.text = value;
        else if (flag == "--shortlist") options.shortlist = value;
        else if (flag == "--paragraphs") options.paragraphs = std::atoi(value.c_str());
        else if (flag == "--beam") options.beam = std::atoi(value.c_str());
        else if (flag == "--pause-ms") options.pause_ms = std::atoi(value.c_str());
        else if (flag == "--threads") options.threads = parse_counts(value);
        else throw Error("unknown option " + flag);
    }
    check(!options.model.empty() && !options.text.empty(), "usage: bench_paragraph --model FILE --text FILE "
                                                           "[--shortlist FILE] [--paragraphs N] [--threads 1,2] "
                                                           "[--beam N] [--pause-ms MS]");
    check(options.paragraphs >= 1, "--paragraphs must be at least 1");
    check(options.pause_ms >= 0, "--pause-ms must not be negative");
    return options;
}

// The first paragraphs + 1 (the warm-up) runs of 8 lines, wrapping around the file.
std::vector<std::vector<std::string>> read_paragraphs(const std::string& path, int paragraphs) {
    std::ifstream in(path);
    check(bool(in), "cannot read " + path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) lines.push_back(line);
    const int available = static_cast<int>(lines.size()) / kSentencesPerParagraph;
    check(available >= 1, path + " has fewer than 8 lines");
    std::vector<std::vector<std::string>> out;
    for (int p = 0; p <= paragraphs; ++p) {
        const auto first = lines.begin() + (p % available) * kSentencesPerParagraph;
        out.emplace_back(first, first + kSentencesPerParagraph);
    }
    return out;
}

double mean(const std::vector<double>& xs) { return std::accumulate(xs.begin(), xs.end(), 0.0) / xs.size(); }

double median(std::vector<double> xs) {
    std::sort(xs.begin(), xs.end());
    const std::size_t n = xs.size();
    return n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

std::string joined(const std::vector<Translation>& translations) {
    std::string out;
    for (const Translation& t : translations) out += t.text + "\n";
    return out;
}

int run(int argc, char** argv) {
    const Options options = parse(argc, argv);
    const Model model = Model::open(options.model);
    std::optional<Shortlist> shortlist;
    if (!options.shortlist.empty()) shortlist = Shortlist::open(options.shortlist);
    TranslateOptions translate;
    translate.beam = options.beam;
    translate.shortlist = shortlist ? &*shortlist : nullptr;
    const std::vector<std::vector<std::string>> paragraphs = read_paragraphs(options.text, options.paragraphs);

    // Blocks of paragraphs per thread count, not single paragraphs: lowering the count stops the pool's workers
    // (set_threads), and a block's first call, untimed, starts them again and warms their scratch.
    const std::size_t counts = options.threads.size();
    std::map<int, std::vector<double>> ms;
    std::vector<std::string> reference(paragraphs.size());
    bool same_output = true;
    for (std::size_t first = 1, round = 0; first < paragraphs.size(); first += kBlock, ++round) {
        const std::size_t end = std::min(paragraphs.size(), first + kBlock);
        for (std::size_t k = 0; k < counts; ++k) {
            const int threads = options.threads[(round + k) % counts];
            set_threads(threads);
            model.translate(paragraphs[0], translate);
            for (std::size_t p = first; p < end; ++p) {
                std::this_thread::sleep_for(std::chrono::milliseconds(options.pause_ms));
                const auto t0 = Clock::now();
                const std::vector<Translation> result = model.translate(paragraphs[p], translate);
                ms[threads].push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
                const std::string text = joined(result);
                if (reference[p].empty()) reference[p] = text;
                else same_output = same_output && text == reference[p];
            }
        }
    }

    const std::string cpu = bench::cpu_description();
    std::printf("cpu: %s\n%s: %d paragraphs of %d sentences, beam %d%s, %s\n", cpu.c_str(), options.model.c_str(),
                options.paragraphs, kSentencesPerParagraph, options.beam, shortlist ? ", shortlist" : "",
                engine_info().wasm ? "wasm" : "native");
    for (const auto& [threads, xs] : ms)
        std::printf("%d thread(s): mean %.2f ms, median %.2f ms per paragraph\n", threads, mean(xs), median(xs));
    std::string json_ms, json_speedup;
    for (const auto& [threads, xs] : ms) {
        std::ostringstream values;
        for (std::size_t i = 0; i < xs.size(); ++i) values << (i ? "," : "") << xs[i];
        json_ms += (json_ms.empty() ? "" : ",") + ("\"" + std::to_string(threads) + "\":[" + values.str() + "]");
        if (threads == 1 || !ms.count(1)) continue;
        const double speedup = mean(ms.at(1)) / mean(xs);
        std::printf("%d threads ÷ 1: %.3f\n", threads, speedup);
        json_speedup += (json_speedup.empty() ? "" : ",") +
                        ("\"" + std::to_string(threads) + "\":" + std::to_string(speedup));
    }
    std::printf("same output at every thread count: %s\n", same_output ? "true" : "false");
    std::printf("{\"cpu\":\"%s\",\"wasm\":%s,\"model\":\"%s\",\"paragraphs\":%d,\"ms\":{%s},\"speedup\":{%s},"
                "\"same_output\":%s}\n",
                bench::json_escape(cpu).c_str(), engine_info().wasm ? "true" : "false",
                bench::json_escape(options.model).c_str(), options.paragraphs, json_ms.c_str(),
                json_speedup.c_str(), same_output ? "true" : "false");
    return same_output ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "bench_paragraph: %s\n", error.what());
        return 1;
    }
}
