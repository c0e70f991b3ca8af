// Parity of the SHIPPED f16 translators with PyTorch on 50 test sentences each (issue 3): identical greedy tokens
// on at least 49, and on those the attention within 1e-3 (for a Transformer, every layer's and head's encoder
// self-, decoder self- and cross-attention: issue 5). Golden files: python/attnlab/golden/shipped.py ->
// build/golden/shipped (or $ATTNLAB_GOLDEN_DIR/shipped), one <id>.expected.gguf per manifest entry in index.txt.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "attnlab/attnlab.hpp"
#include "attnlab/io/gguf.hpp"
#include "test_support.hpp"

using namespace attnlab;

namespace {

std::string golden_dir() {
    const char* env = std::getenv("ATTNLAB_GOLDEN_DIR");
    return ((env && *env) ? std::string(env) : test::source_path("build/golden")) + "/shipped/";
}

std::vector<std::string> shipped_ids() {
    std::ifstream in(golden_dir() + "index.txt");
    if (!in) FAIL_CHECK("missing " << golden_dir() << "index.txt: run PYTHONPATH=python /usr/bin/python3 -m attnlab.golden.shipped");
    std::vector<std::string> ids;
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) ids.push_back(line);
    return ids;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    float worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
    return worst;
}

// Worst difference between an engine tensor and PyTorch's, after checking its shape [layers, heads, rows, cols].
float attention_tensor_diff(const AttentionTensor& engine, const gguf::File& expected, const std::string& name) {
    CAPTURE(name);
    const std::vector<float> reference = expected.load_f32_flat(name);
    REQUIRE(static_cast<std::size_t>(engine.layers) * engine.heads * engine.rows * engine.cols == engine.data.size());
    REQUIRE(engine.data.size() == reference.size());
    return max_abs_diff(engine.data, reference);
}

}  // namespace

TEST_CASE("shipped f16 translators: PyTorch's greedy tokens on >= 49 of 50 test sentences, attention within 1e-3") {
    const std::vector<std::string> ids = shipped_ids();
    CHECK(!ids.empty());
    for (const std::string& id : ids) {
        CAPTURE(id);
        const gguf::File expected = gguf::File::open(golden_dir() + id + ".expected.gguf");
        const Model model = Model::open(test::source_path(expected.get_string("expected.model_file")));
        const int sentences = static_cast<int>(expected.get_u32("expected.sentences"));
        REQUIRE(sentences >= 50);
        int identical = 0;
        float worst_attention = 0;
        TranslateOptions pytorch_decoding;  // PyTorch's greedy search bans no repeated n-gram
        pytorch_decoding.no_repeat_ngram = 0;
        pytorch_decoding.all_layers = true;
        for (int i = 0; i < sentences; ++i) {
            const std::string p = "sentence." + std::to_string(i) + ".";
            const std::string text = expected.get_string(p + "text");
            CAPTURE(text);
            const Translation t = model.translate(text, pytorch_decoding);
            CHECK(t.source_ids == expected.get_i32_array(p + "source_ids"));
            if (t.target_ids != expected.get_i32_array(p + "greedy_ids")) {
                MESSAGE(id << ": sentence " << i << " differs: engine '" << t.text << "', PyTorch '"
                           << expected.get_string(p + "greedy_text") << "'");
                continue;
            }
            ++identical;
            CHECK(t.text == expected.get_string(p + "greedy_text"));
            if (expected.has_tensor(p + "encoder_self_attention")) {
                worst_attention = std::max(worst_attention, attention_tensor_diff(t.encoder_self_attention, expected,
                                                                                  p + "encoder_self_attention"));
                if (t.target_ids.empty()) continue;
                worst_attention = std::max(worst_attention, attention_tensor_diff(t.decoder_self_attention, expected,
                                                                                  p + "decoder_self_attention"));
                worst_attention = std::max(worst_attention,
                                           attention_tensor_diff(t.cross_attention, expected, p + "cross_attention"));
                continue;
            }
            if (t.target_ids.empty()) continue;
            const std::vector<float> attention = expected.load_f32_flat(p + "greedy_attention");
            REQUIRE(t.attention.size() == attention.size());
            worst_attention = std::max(worst_attention, max_abs_diff(t.attention, attention));
        }
        MESSAGE(id << ": " << identical << "/" << sentences << " identical, worst attention difference "
                   << worst_attention);
        CHECK(identical >= sentences - 1);
        CHECK(worst_attention <= 1e-3f);
    }
}
