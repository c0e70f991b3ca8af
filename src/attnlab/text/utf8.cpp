#include "attnlab/text/utf8.hpp"

#include <cstdio>

#include "attnlab/error.hpp"

namespace attnlab::text {
namespace {

bool is_continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

Utf8Char malformed(const char* problem) {
    Utf8Char c;
    c.problem = problem;
    return c;
}

std::string hex_byte(unsigned char byte) {
    char buffer[8];
    std::snprintf(buffer, sizeof buffer, "0x%02X", byte);
    return buffer;
}

}  // namespace

Utf8Char decode_utf8_char(std::string_view text, std::size_t offset) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(text.data()) + offset;
    const std::size_t available = text.size() - offset;
    const unsigned char lead = bytes[0];
    if (lead < 0x80) return Utf8Char{lead, 1, true, ""};

    std::size_t length;
    char32_t codepoint, minimum;
    if ((lead & 0xE0) == 0xC0) {
        length = 2, codepoint = lead & 0x1F, minimum = 0x80;
    } else if ((lead & 0xF0) == 0xE0) {
        length = 3, codepoint = lead & 0x0F, minimum = 0x800;
    } else if ((lead & 0xF8) == 0xF0) {
        length = 4, codepoint = lead & 0x07, minimum = 0x10000;
    } else if (is_continuation(lead)) {
        return malformed("unexpected continuation byte");
    } else {
        return malformed("byte that never appears in UTF-8");
    }
    for (std::size_t i = 1; i < length; ++i) {
        if (i >= available || !is_continuation(bytes[i]))
            return malformed(length == 2 ? "incomplete 2-byte sequence"
                             : length == 3 ? "incomplete 3-byte sequence"
                                           : "incomplete 4-byte sequence");
        codepoint = (codepoint << 6) | (bytes[i] & 0x3F);
    }
    if (codepoint < minimum) return malformed("overlong encoding");
    if (codepoint >= 0xD800 && codepoint <= 0xDFFF) return malformed("UTF-16 surrogate code point");
    if (codepoint > 0x10FFFF) return malformed("code point above U+10FFFF");
    return Utf8Char{codepoint, length, true, ""};
}

std::optional<Utf8Error> find_utf8_error(std::string_view text) {
    for (std::size_t offset = 0; offset < text.size();) {
        const Utf8Char c = decode_utf8_char(text, offset);
        if (!c.valid) {
            const auto byte = static_cast<unsigned char>(text[offset]);
            return Utf8Error{offset, "invalid UTF-8 at byte " + std::to_string(offset) + " (" + hex_byte(byte) +
                                         "): " + c.problem};
        }
        offset += c.length;
    }
    return std::nullopt;
}

bool is_valid_utf8(std::string_view text) { return !find_utf8_error(text).has_value(); }

void validate_utf8(std::string_view text, std::string_view what) {
    if (auto error = find_utf8_error(text)) {
        fail(what.empty() ? error->message : std::string(what) + ": " + error->message);
    }
}

std::vector<char32_t> decode_utf8(std::string_view text) {
    std::vector<char32_t> out;
    out.reserve(text.size());
    for (std::size_t offset = 0; offset < text.size();) {
        const Utf8Char c = decode_utf8_char(text, offset);
        if (!c.valid) validate_utf8(text);  // throws with the full message
        out.push_back(c.codepoint);
        offset += c.length;
    }
    return out;
}

void append_utf8(std::string& out, char32_t codepoint) {
    if (codepoint > 0x10FFFF || (codepoint >= 0xD800 && codepoint <= 0xDFFF)) {
        char buffer[32];
        std::snprintf(buffer, sizeof buffer, "U+%04X", unsigned(codepoint));
        fail(std::string("cannot encode ") + buffer + " as UTF-8: not a Unicode scalar value");
    }
    if (codepoint < 0x80) {
        out += char(codepoint);
    } else if (codepoint < 0x800) {
        out += char(0xC0 | (codepoint >> 6));
        out += char(0x80 | (codepoint & 0x3F));
    } else if (codepoint < 0x10000) {
        out += char(0xE0 | (codepoint >> 12));
        out += char(0x80 | ((codepoint >> 6) & 0x3F));
        out += char(0x80 | (codepoint & 0x3F));
    } else {
        out += char(0xF0 | (codepoint >> 18));
        out += char(0x80 | ((codepoint >> 12) & 0x3F));
        out += char(0x80 | ((codepoint >> 6) & 0x3F));
        out += char(0x80 | (codepoint & 0x3F));
    }
}

}  // namespace attnlab::text
