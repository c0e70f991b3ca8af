// Replays saved fuzz inputs through the libFuzzer targets' own entry points (fuzz/fuzz_*.cpp, compiled here
// without libFuzzer's main): every input that once crashed the engine (tests/fixtures/fuzz/<target>/) and the
// seed corpora (fuzz/corpus/<target>/). Each must run to the end: success or attnlab::Error, never a crash, a
// sanitizer report or another exception type. Runs natively (ASan+UBSan in npm test) and in wasm.
#define ATTNLAB_FUZZ_NO_MAIN
#include "../../fuzz/fuzz_gguf.cpp"
#include "../../fuzz/fuzz_image.cpp"
#include "../../fuzz/fuzz_tokenizer.cpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;

using Entry = int (*)(const uint8_t*, std::size_t);

std::vector<fs::path> files_in(const std::string& relative) {
    std::vector<fs::path> out;
    const fs::path dir = attnlab::test::source_path(relative);
    if (!fs::is_directory(dir)) return out;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.is_regular_file() && entry.path().filename().string()[0] != '.') out.push_back(entry.path());
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<uint8_t> read_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Returns how many files it replayed.
std::size_t replay(const std::string& dir, Entry entry) {
    const std::vector<fs::path> files = files_in(dir);
    for (const fs::path& path : files) {
        CAPTURE(path.string());
        const std::vector<uint8_t> bytes = read_bytes(path);
        try {
            entry(bytes.data(), bytes.size());
        } catch (const attnlab::fuzz::Violation& v) {
            FAIL_CHECK(v.message);
        }
    }
    return files.size();
}

void replay_target(const std::string& target, Entry entry) {
    const std::size_t regressions = replay("tests/fixtures/fuzz/" + target, entry);
    const std::size_t seeds = replay("fuzz/corpus/" + target, entry);
    MESSAGE(target << ": " << regressions << " regression inputs, " << seeds << " seeds");
    CHECK(seeds > 0);  // the committed corpus is there: a wrong path must not pass silently
}

}  // namespace

TEST_CASE("fuzz regressions: GGUF reader and Model::from_bytes") { replay_target("fuzz_gguf", attnlab::fuzz::gguf_one_input); }

TEST_CASE("fuzz regressions: tokenizer encode/decode") {
    replay_target("fuzz_tokenizer", attnlab::fuzz::tokenizer_one_input);
}

TEST_CASE("fuzz regressions: image preprocessing and captioning") {
    replay_target("fuzz_image", attnlab::fuzz::image_one_input);
}

TEST_CASE("fuzz harness: a non-attnlab exception is a violation, attnlab::Error is not") {
    // The replay is only worth something if the harness can fail.
    CHECK_NOTHROW(attnlab::fuzz::expect_error_or_success("x", [] { attnlab::fail("bad input"); }));
    CHECK_THROWS_AS(attnlab::fuzz::expect_error_or_success("x", [] { throw std::out_of_range("oops"); }),
                    attnlab::fuzz::Violation);
}
