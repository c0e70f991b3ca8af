#pragma once
// The public API: everything a front end (the CLI, the embind module) needs, as plain structs.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace attnlab {

namespace gguf {
class File;
}

struct EngineInfo {
    std::string version;  // the project version, e.g. "0.1.0"
    std::string simd;     // the instruction set the kernels were compiled for
    bool wasm;            // true in the WebAssembly build
};

EngineInfo engine_info();

struct TranslateOptions {
    int beam = 1;               // 1 = greedy
    int max_length = 0;         // > 0: at most this many target tokens; 0: 1.5 × source length + 10
    float length_penalty = 1.0f;
};

struct Translation {
    std::string text;                          // detokenized output
    std::vector<std::string> source_tokens;    // pieces as the model saw them, including the final </s>
    std::vector<std::string> target_tokens;    // pieces of the output, without </s>
    std::vector<int32_t> source_ids;
    std::vector<int32_t> target_ids;
    std::vector<float> attention;              // [target × source] row-major: stage 2 weights per output token
    std::vector<float> scores;                 // [target × source] row-major: stage 1 raw scores per output token
    std::string score_function;                // "additive", "dot", "general", "cosine", "scaled_dot"
    float log_probability = 0.0f;
};

// Largest accepted input, in source tokens: longer inputs are rejected with a message instead of slowing to a
// crawl (attention is quadratic in the length).
constexpr int kMaxSourceTokens = 400;

// A loaded model file. Cheap to copy (shared, immutable); safe to use from one thread at a time.
class Model {
public:
    static Model from_bytes(std::vector<uint8_t> bytes);
    static Model open(const std::string& path);

    std::string architecture() const;  // general.architecture, e.g. "attnlab.bahdanau"
    std::string task() const;          // "translate" or "caption"
    // Metadata as key / printable value pairs, in file order (long arrays summarized).
    std::vector<std::pair<std::string, std::string>> metadata() const;
    const gguf::File& file() const;

    // Throws attnlab::Error for a model that cannot translate, empty/oversized/invalid UTF-8 text, bad options.
    Translation translate(const std::string& text, const TranslateOptions& options = {}) const;

private:
    struct Impl;
    std::shared_ptr<const Impl> impl_;
};

}  // namespace attnlab
