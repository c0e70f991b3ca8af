// Stage 3 in the public API: Translation::context [T × dv] is the context vector each returned token was decoded
// with, and equals the attention-weighted sum of Translation::values [S × dv] (the encoder annotations), for greedy
// and beam search (where each hypothesis carries its own contexts).
#include <cstdlib>
#include <string>
#include <vector>

#include "attnlab/attnlab.hpp"
#include "test_support.hpp"

namespace {

std::string context_test_model() {
    const char* override_path = std::getenv("ATTNLAB_TEST_MODEL");
    return override_path && *override_path ? override_path
                                           : attnlab::test::source_path("tests/fixtures/rnn/additive.gguf");
}

}  // namespace

TEST_CASE("translation context vectors are the attention-weighted sums of the source annotations") {
    const attnlab::Model model = attnlab::Model::open(context_test_model());
    for (int beam : {1, 4}) {
        CAPTURE(beam);
        attnlab::TranslateOptions options;
        options.beam = beam;
        const attnlab::Translation t = model.translate("Two men are playing soccer in a park.", options);
        const std::size_t T = t.target_ids.size(), S = t.source_ids.size();
        const std::size_t dv = static_cast<std::size_t>(t.context_size);
        REQUIRE(T > 0);
        REQUIRE(dv > 0);
        REQUIRE(t.attention.size() == T * S);
        REQUIRE(t.context.size() == T * dv);
        REQUIRE(t.values.size() == S * dv);
        std::vector<float> expected(T * dv, 0.0f);
        for (std::size_t i = 0; i < T; ++i)
            for (std::size_t d = 0; d < dv; ++d) {
                double sum = 0;
                for (std::size_t s = 0; s < S; ++s) sum += double(t.attention[i * S + s]) * t.values[s * dv + d];
                expected[i * dv + d] = static_cast<float>(sum);
            }
        attnlab::test::check_close(t.context.data(), expected.data(), expected.size(), 1e-5f, 1e-4f, "context");
        // Different output tokens look at the source differently, so their contexts differ.
        if (T > 1) {
            float difference = 0;
            for (std::size_t d = 0; d < dv; ++d) difference += std::fabs(t.context[d] - t.context[dv + d]);
            CHECK(difference > 0);
        }
    }
}
