// Strict UTF-8: checked exhaustively against Table 3-7 of the Unicode Standard ("Well-Formed UTF-8 Byte
// Sequences"), written below as an independent predicate.
#include <string>
#include <vector>

#include "attnlab/error.hpp"
#include "attnlab/text/utf8.hpp"
#include "test_support.hpp"

using namespace attnlab::text;

namespace {

// Unicode 15, Table 3-7: the allowed range of the second byte depends on the first; later bytes are 80..BF.
bool well_formed_per_table_3_7(const std::vector<int>& s) {
    auto in = [](int b, int lo, int hi) { return b >= lo && b <= hi; };
    if (s.empty()) return false;
    const int b0 = s[0];
    if (s.size() == 1) return in(b0, 0x00, 0x7F);
    if (s.size() == 2) return in(b0, 0xC2, 0xDF) && in(s[1], 0x80, 0xBF);
    if (s.size() == 3) {
        if (!in(s[2], 0x80, 0xBF)) return false;
        if (b0 == 0xE0) return in(s[1], 0xA0, 0xBF);
        if (in(b0, 0xE1, 0xEC) || in(b0, 0xEE, 0xEF)) return in(s[1], 0x80, 0xBF);
        if (b0 == 0xED) return in(s[1], 0x80, 0x9F);
        return false;
    }
    if (s.size() == 4) {
        if (!in(s[2], 0x80, 0xBF) || !in(s[3], 0x80, 0xBF)) return false;
        if (b0 == 0xF0) return in(s[1], 0x90, 0xBF);
        if (in(b0, 0xF1, 0xF3)) return in(s[1], 0x80, 0xBF);
        if (b0 == 0xF4) return in(s[1], 0x80, 0x8F);
        return false;
    }
    return false;
}

std::string bytes_of(const std::vector<int>& s) {
    std::string out;
    for (int b : s) out += char(b);
    return out;
}

// A sequence is one well-formed character exactly when the decoder takes all of it as one valid character.
void check_sequence(const std::vector<int>& s) {
    const std::string text = bytes_of(s);
    const Utf8Char c = decode_utf8_char(text, 0);
    const bool decoder_says = c.valid && c.length == s.size();
    if (decoder_says != well_formed_per_table_3_7(s)) {
        std::string hex;
        for (int b : s) hex += " " + std::to_string(b);
        FAIL("sequence" << hex << ": decoder says " << decoder_says);
    }
}

}  // namespace

TEST_CASE("utf8: every 1- and 2-byte sequence agrees with Unicode Table 3-7") {
    for (int a = 0; a < 256; ++a) check_sequence({a});
    for (int a = 0; a < 256; ++a)
        for (int b = 0; b < 256; ++b) check_sequence({a, b});
}

TEST_CASE("utf8: 3- and 4-byte sequences over every boundary byte agree with Unicode Table 3-7") {
    const std::vector<int> edges = {0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xFF};
    for (int a = 0; a < 256; ++a)
        for (int b : edges)
            for (int c : edges) {
                check_sequence({a, b, c});
                for (int d : edges) check_sequence({a, b, c, d});
            }
}

TEST_CASE("utf8: every scalar value round-trips; surrogates and > U+10FFFF cannot be encoded") {
    std::string buffer;
    for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
        if (cp >= 0xD800 && cp <= 0xDFFF) {
            CHECK_THROWS_AS(append_utf8(buffer, cp), attnlab::Error);
            continue;
        }
        buffer.clear();
        append_utf8(buffer, cp);
        const std::size_t expected_length = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        const Utf8Char c = decode_utf8_char(buffer, 0);
        if (buffer.size() != expected_length || !c.valid || c.codepoint != cp || c.length != expected_length) {
            FAIL("U+" << uint32_t(cp) << " does not round-trip");
        }
    }
    CHECK_THROWS_AS(append_utf8(buffer, 0x110000), attnlab::Error);
}

TEST_CASE("utf8: errors name the byte offset and the problem") {
    struct Case {
        std::string text;
        std::size_t offset;
        const char* problem;
    };
    const std::vector<Case> cases = {
        {"abc\x80", 3, "continuation"},
        {"ok \xC0\xAF", 3, "overlong"},                // '/' encoded in two bytes
        {"\xE0\x80\xAF", 0, "overlong"},               // '/' in three bytes
        {"\xF0\x82\x82\xAC", 0, "overlong"},           // U+20AC in four bytes
        {"x\xED\xA0\x80", 1, "surrogate"},             // U+D800
        {"\xF4\x90\x80\x80", 0, "above U+10FFFF"},    // U+110000
        {"\xE4\xB8", 0, "incomplete 3-byte"},          // truncated at the end of the text
        {"\xE4\xB8x", 0, "incomplete 3-byte"},         // interrupted by ASCII
        {"\xC3", 0, "incomplete 2-byte"},
        {"\xF0\x9F\x98", 0, "incomplete 4-byte"},
        {"\xFF", 0, "never appears"},
        {"\xF8\x88\x80\x80\x80", 0, "never appears"},  // the old 5-byte form
        {"\xE4\xB8\xAD\xE6\x96", 3, "incomplete 3-byte"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.offset);
        const auto error = find_utf8_error(c.text);
        REQUIRE(error.has_value());
        CHECK(error->offset == c.offset);
        CHECK(error->message.find("byte " + std::to_string(c.offset)) != std::string::npos);
        CHECK(error->message.find(c.problem) != std::string::npos);
        CHECK_FALSE(is_valid_utf8(c.text));
        CHECK_THROWS_WITH_AS(validate_utf8(c.text), error->message.c_str(), attnlab::Error);
        CHECK_THROWS_AS(decode_utf8(c.text), attnlab::Error);
    }
}

TEST_CASE("utf8: valid text decodes to its code points") {
    CHECK(is_valid_utf8(""));
    CHECK(is_valid_utf8(std::string("nul \0 inside", 12)));
    const std::vector<char32_t> expected = {U'a', 0xE9, 0x4E2D, 0x1F600, 0x10FFFF, 0xFFFD};
    CHECK(decode_utf8("a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80\xF4\x8F\xBF\xBF\xEF\xBF\xBD") == expected);
    CHECK_THROWS_WITH_AS(validate_utf8("\x80", "caption"), "caption: invalid UTF-8 at byte 0 (0x80): unexpected continuation byte",
                         attnlab::Error);
}
