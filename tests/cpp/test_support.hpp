#pragma once
// Helpers shared by the test files: where fixtures live, and comparing buffers with a useful message.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

namespace attnlab::test {

// Absolute path of a file in the source tree (works natively and in wasm under NODERAWFS).
inline std::string source_path(const std::string& relative) { return std::string(ATTNLAB_SOURCE_DIR) + "/" + relative; }

inline std::vector<float> random_vector(std::size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

// Largest |a-b| / (atol + rtol*|b|) over the buffers; <= 1 means every element is within tolerance.
inline void check_close(const float* actual, const float* expected, std::size_t n, float atol, float rtol = 0.0f,
                        const char* what = "") {
    std::size_t worst = 0;
    double worst_ratio = 0;
    for (std::size_t i = 0; i < n; ++i) {
        double diff = std::fabs(double(actual[i]) - double(expected[i]));
        const double tolerance = atol + rtol * std::fabs(double(expected[i]));
        double ratio = tolerance > 0 ? diff / tolerance : (diff == 0 ? 0.0 : INFINITY);
        if (!(ratio <= worst_ratio)) {  // also catches NaN
            worst_ratio = std::isnan(ratio) ? INFINITY : ratio;
            worst = i;
        }
    }
    INFO(std::string(what) << ": worst element " << worst << " of " << n << ": actual " << (n ? actual[worst] : 0.0f)
              << " expected " << (n ? expected[worst] : 0.0f));
    CHECK(worst_ratio <= 1.0);
}

inline void check_close(const std::vector<float>& actual, const std::vector<float>& expected, float atol,
                        float rtol = 0.0f, const char* what = "") {
    REQUIRE(actual.size() == expected.size());
    check_close(actual.data(), expected.data(), actual.size(), atol, rtol, what);
}

}  // namespace attnlab::test
