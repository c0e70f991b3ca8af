// attnlab::limits() is what the engine enforces: every limit is accepted at its value and refused one past it,
// with a message that names it (the JS module and `attnlab version --json` report these same numbers).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "attnlab/attnlab.hpp"
#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/text/tokenizer.hpp"
#include "test_support.hpp"

using namespace attnlab;

namespace {

const Model& translator() {
    static const Model model = Model::open(test::source_path("tests/fixtures/rnn/additive.gguf"));
    return model;
}

const Model& captioner() {  // with an image encoder
    static const Model model = Model::open(test::source_path("tests/fixtures/caption/tiny_encoder_model.gguf"));
    return model;
}

// "a a …" (one token a word in the fixture's vocabulary) long enough that, with the </s> the encoder appends, the model sees exactly `tokens` source tokens.
std::string text_of_tokens(int tokens) {
    const text::Tokenizer tokenizer = text::Tokenizer::from_gguf(translator().file(), "source");
    const int eos = translator().file().get_bool_or(translator().architecture() + ".source_add_eos", true) ? 1 : 0;
    std::string text;
    for (int words = 1; words <= tokens; ++words) {
        text = "a";
        for (int w = 1; w < words; ++w) text += " a";
        if (int(tokenizer.encode(text).size()) + eos >= tokens) break;
    }
    REQUIRE(int(tokenizer.encode(text).size()) + eos == tokens);
    return text;
}

// A message check on a built string (doctest::Contains takes a doctest::String).
doctest::Contains contains(const std::string& text) { return doctest::Contains(text.c_str()); }

std::vector<uint8_t> grey(int width, int height) { return std::vector<uint8_t>(std::size_t(width) * height * 4, 128); }

}  // namespace

TEST_CASE("limits(): the numbers front ends are told") {
    const Limits l = limits();
    CHECK(l.max_beam == 64);
    CHECK(l.max_text_bytes == kMaxTextBytes);
    CHECK(l.max_source_tokens == kMaxSourceTokens);
    CHECK(l.max_translation_length == kMaxTranslationLength);
    CHECK(l.max_caption_length == 200);
    CHECK(l.min_no_repeat_ngram == 2);
    CHECK(l.max_no_repeat_ngram == 8);
    CHECK(l.max_image_side == 8192);
    // Enough room for what the page offers (beam 8, 2,000-character sentences) below each limit.
    CHECK(l.max_text_bytes >= 3 * 2000);
}

TEST_CASE("limits(): translate accepts each limit and refuses one more, naming the limit") {
    const Limits l = limits();
    const Model& model = translator();
    TranslateOptions options;
    options.beam = l.max_beam;
    CHECK_NOTHROW(model.translate("A dog runs.", options));
    options.beam = l.max_beam + 1;
    CHECK_THROWS_WITH_AS(model.translate("A dog runs.", options),
                         contains("beam must be an integer from 1 to " + std::to_string(l.max_beam) + ", got 65"), Error);

    options = {};
    options.max_length = l.max_translation_length;
    CHECK_NOTHROW(model.translate("A dog runs.", options));
    options.max_length = l.max_translation_length + 1;
    CHECK_THROWS_WITH_AS(model.translate("A dog runs.", options),
                         contains("maxLength must be an integer from 0 (automatic) to " + std::to_string(l.max_translation_length) + ", got 1001"),
                         Error);

    const std::string at_limit = text_of_tokens(l.max_source_tokens);
    CHECK_NOTHROW(model.translate(at_limit));
    CHECK_THROWS_WITH_AS(model.translate(at_limit + " a"),
                         contains("too long: " + std::to_string(l.max_source_tokens + 1) + " tokens, at most " +
                                           std::to_string(l.max_source_tokens) + " are accepted"),
                         Error);

    // Exactly max_text_bytes is refused only for its tokens; one byte more, for its bytes, before tokenizing.
    const std::string bytes_at_limit(std::size_t(l.max_text_bytes), 'a');
    CHECK_THROWS_WITH_AS(model.translate(bytes_at_limit), contains("tokens, at most"), Error);
    CHECK_THROWS_WITH_AS(model.translate(bytes_at_limit + "a"),
                         contains(std::to_string(l.max_text_bytes + 1) + " bytes, at most " +
                                           std::to_string(l.max_text_bytes)),
                         Error);
}

TEST_CASE("limits(): caption accepts each limit and refuses one more, naming the limit") {
    const Limits l = limits();
    const Model& model = captioner();
    const std::vector<uint8_t> image = grey(32, 24);
    auto caption = [&](const CaptionOptions& options) { return model.caption(image.data(), 32, 24, options); };

    CaptionOptions options;
    options.beam = l.max_beam;
    CHECK_NOTHROW(caption(options));
    options.beam = l.max_beam + 1;
    CHECK_THROWS_WITH_AS(caption(options), contains("beam must be an integer from 1 to " + std::to_string(l.max_beam) + ", got 65"), Error);

    options = {};
    options.max_length = l.max_caption_length;
    CHECK_NOTHROW(caption(options));
    options.max_length = l.max_caption_length + 1;
    CHECK_THROWS_WITH_AS(caption(options), contains("maxLength must be an integer from 0 (the model's default) to " +
                                                    std::to_string(l.max_caption_length) + ", got 201"), Error);

    const std::string range = "an integer from " + std::to_string(l.min_no_repeat_ngram) + " to " + std::to_string(l.max_no_repeat_ngram);
    for (int n : {-1, 0, l.min_no_repeat_ngram, l.max_no_repeat_ngram}) {
        options = {};
        options.no_repeat_ngram = n;
        CAPTURE(n);
        CHECK_NOTHROW(caption(options));
    }
    for (int n : {l.min_no_repeat_ngram - 1, l.max_no_repeat_ngram + 1}) {
        options = {};
        options.no_repeat_ngram = n;
        CAPTURE(n);
        CHECK_THROWS_WITH_AS(caption(options), contains(range), Error);
    }

    const std::vector<uint8_t> wide = grey(l.max_image_side, 1);
    CHECK_NOTHROW(model.caption(wide.data(), l.max_image_side, 1));
    CHECK_NOTHROW(model.caption(wide.data(), 1, l.max_image_side));
    const std::vector<uint8_t> wider = grey(l.max_image_side + 1, 1);
    CHECK_THROWS_WITH_AS(model.caption(wider.data(), l.max_image_side + 1, 1),
                         contains("at most " + std::to_string(l.max_image_side) + " pixels a side"), Error);
    CHECK_THROWS_WITH_AS(model.caption(wider.data(), 1, l.max_image_side + 1),
                         contains("at most " + std::to_string(l.max_image_side) + " pixels a side"), Error);
}
