// The kernel targets (kernels.hpp, kernels/dispatch.cpp): which are compiled, which one runs, and that ATTNLAB_CPU
// picks it. The suite itself is what checks each target's numbers: scripts/test.sh runs it once per target (scripts/test_kernel_target.sh)
// the CPU runs (ATTNLAB_CPU=baseline, avx2, avx512).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "attnlab/attnlab.hpp"
#include "attnlab/kernels/kernels.hpp"

namespace k = attnlab::kernels;

namespace {

bool compiled(const std::string& name) {
    const std::vector<const char*> targets = k::compiled_targets();
    return std::any_of(targets.begin(), targets.end(), [&](const char* t) { return name == t; });
}

}  // namespace

TEST_CASE("the kernel target: compiled, runnable, the one ATTNLAB_CPU names or the best") {
    const std::vector<const char*> targets = k::compiled_targets();
    REQUIRE(!targets.empty());
    CHECK(std::string(targets.front()) == "baseline");
    const std::string active = k::active_target();
    CHECK(compiled(active));
    CHECK(k::cpu_runs(active.c_str()));
    CHECK(k::cpu_runs("baseline"));
    CHECK_FALSE(k::cpu_runs("sse9"));

    const char* forced = std::getenv("ATTNLAB_CPU");
    if (forced && *forced && std::strcmp(forced, "auto") != 0) {
        CHECK(active == forced);
    } else {
        std::string best;
        for (const char* t : targets)
            if (k::cpu_runs(t)) best = t;
        CHECK(active == best);
    }
}

TEST_CASE("each target says what it runs") {
    const std::string active = k::active_target(), simd = k::simd_name();
    CHECK(attnlab::engine_info().simd == simd);
#if defined(__wasm_simd128__)
    CHECK(simd.find("wasm") != std::string::npos);
    CHECK_FALSE(k::keep_f16_weights());
#elif defined(__x86_64__)
    CHECK(compiled("avx2"));
    CHECK(compiled("avx512"));
    if (active == "baseline") CHECK(simd == "sse2");
    if (active == "avx2") CHECK(simd == "avx2+fma");
    if (active == "avx512") CHECK(simd == "avx512");
    // Halves stay halves where the target converts them in one instruction (F16C: avx2 and avx512).
    CHECK(k::keep_f16_weights() == (active != "baseline"));
#endif
}
