#pragma once
// Strict UTF-8 (RFC 3629): overlong forms, UTF-16 surrogates, code points above U+10FFFF, stray
// continuation bytes and truncated sequences are all malformed. This is the same rule sentencepiece's
// DecodeUTF8 applies, so "valid" means the same thing on both sides of the parity tests.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnlab::text {

constexpr char32_t kReplacementCharacter = 0xFFFD;

// One decoded character. A malformed sequence gives valid == false, length == 1 (skip one byte and go on,
// as sentencepiece does when it substitutes U+FFFD), and a reason for error messages.
struct Utf8Char {
    char32_t codepoint = kReplacementCharacter;
    std::size_t length = 1;
    bool valid = false;
    const char* problem = "";  // empty when valid
};

// Decodes the character starting at text[offset]; offset must be < text.size().
Utf8Char decode_utf8_char(std::string_view text, std::size_t offset);

struct Utf8Error {
    std::size_t offset;   // byte offset of the first malformed sequence
    std::string message;  // "invalid UTF-8 at byte 5 (0xE4): incomplete 3-byte sequence"
};

std::optional<Utf8Error> find_utf8_error(std::string_view text);
bool is_valid_utf8(std::string_view text);
// Throws attnlab::Error with find_utf8_error's message, prefixed by `what` when given.
void validate_utf8(std::string_view text, std::string_view what = {});

// Whole string -> code points; throws like validate_utf8.
std::vector<char32_t> decode_utf8(std::string_view text);
// Appends the UTF-8 form of codepoint; throws for surrogates and values above U+10FFFF.
void append_utf8(std::string& out, char32_t codepoint);

}  // namespace attnlab::text
