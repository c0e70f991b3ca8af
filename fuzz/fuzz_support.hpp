#pragma once
// Shared by the libFuzzer targets and tests/cpp/test_fuzz_regressions.cpp (which includes the targets with
// ATTNLAB_FUZZ_NO_MAIN defined and replays saved inputs through the same functions).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "attnlab/error.hpp"

namespace attnlab::fuzz {

// Not a std::exception, so that no handler for those can swallow it.
struct Violation {
    std::string message;
};

// A broken rule on hostile input: under libFuzzer it aborts so that the input is saved; in the doctest replay it
// throws Violation so that the test fails with the message.
[[noreturn]] inline void violation(const std::string& message) {
#ifdef ATTNLAB_FUZZ_NO_MAIN
    throw Violation{message};
#else
    std::fprintf(stderr, "fuzz: %s\n", message.c_str());
    std::abort();
#endif
}

// Runs `body`; attnlab::Error is the only acceptable failure. Anything else (std::bad_alloc, std::out_of_range,
// ...) means a check is missing in front of it.
template <typename Body>
void expect_error_or_success(const char* what, Body&& body) {
    try {
        body();
    } catch (const attnlab::Error&) {
    } catch (const std::exception& e) {
        violation(std::string(what) + " threw a non-attnlab exception: " + e.what());
    }
}

inline std::string source_path(const std::string& relative) { return std::string(ATTNLAB_SOURCE_DIR) + "/" + relative; }

}  // namespace attnlab::fuzz
