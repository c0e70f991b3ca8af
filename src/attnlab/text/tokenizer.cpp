#include "attnlab/text/tokenizer.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <queue>
#include <unordered_map>
#include <utility>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/text/utf8.hpp"

namespace attnlab::text {
namespace {

constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";       // U+2581 "▁": how pieces spell a space
constexpr std::string_view kUnknownSurface = " \xE2\x81\x87 ";  // " ⁇ ": sentencepiece's default unk_surface
constexpr std::string_view kReplacementUtf8 = "\xEF\xBF\xBD";    // U+FFFD

// "<0xE4>" -> 0xE4; -1 for anything else (sentencepiece's PieceToByte).
int parse_byte_piece(std::string_view piece) {
    auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
    const int hi = hex(piece[3]), lo = hex(piece[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

std::size_t utf8_length_of_lead(unsigned char lead) {
    // Only called on validated text, so the lead byte is never a continuation byte.
    return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t pos = 0;;) {
        const std::size_t hit = text.find(from, pos);
        if (hit == std::string_view::npos) {
            out.append(text.substr(pos));
            return out;
        }
        out.append(text.substr(pos, hit - pos)).append(to);
        pos = hit + from.size();
    }
}

bool ends_with(std::string_view text, std::string_view suffix) {
    return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

}  // namespace

struct Tokenizer::Vocab {
    std::vector<std::string> pieces;
    std::vector<float> scores;
    std::vector<TokenType> types;
    // sentencepiece keeps two tables and looks in `reserved` first: normal, user-defined and unused pieces
    // are merge targets; control, unknown and byte pieces are reachable only by exact lookup.
    std::unordered_map<std::string_view, int32_t> mergeable;  // views into `pieces`
    std::unordered_map<std::string_view, int32_t> reserved;
    std::vector<std::string> user_defined;  // longest first
    int32_t unknown_id = -1;
    bool byte_fallback = false;
    int32_t byte_ids[256];
};

Tokenizer::Tokenizer(std::vector<std::string> pieces, std::vector<float> scores, std::vector<int32_t> types,
                     Special special, bool add_dummy_prefix, bool remove_extra_whitespaces)
    : special_(special), add_dummy_prefix_(add_dummy_prefix), remove_extra_whitespaces_(remove_extra_whitespaces) {
    const std::size_t n = pieces.size();
    check(n > 0, "tokenizer: the vocabulary is empty");
    check(n <= std::size_t(INT32_MAX), "tokenizer: the vocabulary is too large");
    check(scores.size() == n && types.size() == n,
          "tokenizer: " + std::to_string(n) + " pieces but " + std::to_string(scores.size()) + " scores and " +
              std::to_string(types.size()) + " token types");

    auto vocab = std::make_shared<Vocab>();
    vocab->pieces = std::move(pieces);
    vocab->scores = std::move(scores);
    vocab->types.resize(n);
    std::fill(std::begin(vocab->byte_ids), std::end(vocab->byte_ids), -1);
    vocab->mergeable.reserve(n);
    int byte_count = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const std::string& piece = vocab->pieces[i];
        const int32_t id = int32_t(i);
        // Messages are built only on failure: a vocabulary is tens of thousands of pieces, loaded with every model.
        auto where = [i] { return "tokenizer: piece " + std::to_string(i); };
        if (piece.empty()) fail(where() + " is empty");
        if (find_utf8_error(piece)) validate_utf8(piece, where());
        if (!(types[i] >= 1 && types[i] <= 6))
            fail(where() + " has token type " + std::to_string(types[i]) + " (expected 1 normal .. 6 byte)");
        const auto type = static_cast<TokenType>(types[i]);
        vocab->types[i] = type;
        const bool mergeable = type == TokenType::normal || type == TokenType::user_defined || type == TokenType::unused;
        auto& table = mergeable ? vocab->mergeable : vocab->reserved;
        if (!table.emplace(std::string_view(piece), id).second) fail(where() + " '" + piece + "' is defined twice");
        if (type == TokenType::user_defined) vocab->user_defined.push_back(piece);
        if (type == TokenType::unknown) {
            if (vocab->unknown_id >= 0)
                fail(where() + ": a second unknown piece (the first is id " + std::to_string(vocab->unknown_id) + ")");
            vocab->unknown_id = id;
        }
        if (type == TokenType::byte) {
            const int byte = parse_byte_piece(piece);
            if (byte < 0) fail(where() + " '" + piece + "' has the byte type but is not of the form <0xXX>");
            vocab->byte_ids[byte] = id;
            ++byte_count;
        }
    }
    check(vocab->unknown_id >= 0, "tokenizer: the vocabulary has no unknown piece (token type 2)");
    // sentencepiece enables byte fallback iff the model has byte pieces, and then requires all 256.
    vocab->byte_fallback = byte_count > 0;
    check(byte_count == 0 || byte_count == 256,
          "tokenizer: " + std::to_string(byte_count) + " byte pieces; byte fallback needs all 256 <0x00>..<0xFF>");
    std::stable_sort(vocab->user_defined.begin(), vocab->user_defined.end(),
                     [](const std::string& a, const std::string& b) { return a.size() > b.size(); });

    auto check_special = [n](int32_t id, const char* name) {
        check(id >= -1 && id < int32_t(n), std::string("tokenizer: ") + name + " id " + std::to_string(id) +
                                               " is outside the vocabulary of " + std::to_string(n));
    };
    check_special(special_.bos, "bos");
    check_special(special_.eos, "eos");
    check_special(special_.unk, "unk");
    check_special(special_.pad, "pad");
    check(special_.unk < 0 || special_.unk == vocab->unknown_id,
          "tokenizer: unk id " + std::to_string(special_.unk) + " is not the unknown piece (id " +
              std::to_string(vocab->unknown_id) + ")");
    if (special_.unk < 0) special_.unk = vocab->unknown_id;
    vocab_ = std::move(vocab);
}

Tokenizer Tokenizer::from_gguf(const gguf::File& file, const std::string& role) {
    const std::string prefix = "tokenizer." + role + ".";
    check(file.has(prefix + "tokens"), "GGUF file has no tokenizer for role '" + role + "' (key '" + prefix +
                                           "tokens' is missing)");
    const std::string model = file.get_string(prefix + "model");
    check(model == "spm-bpe", "tokenizer '" + role + "': model '" + model + "' is not supported (expected spm-bpe)");
    auto optional_id = [&](const std::string& key) -> int32_t {
        if (!file.has(prefix + key)) return -1;
        const uint32_t id = file.get_u32(prefix + key);
        check(id <= uint32_t(INT32_MAX), "tokenizer '" + role + "': " + key + " " + std::to_string(id) + " is too large");
        return int32_t(id);
    };
    Special special;
    special.bos = optional_id("bos_token_id");
    special.eos = optional_id("eos_token_id");
    special.unk = optional_id("unknown_token_id");
    special.pad = optional_id("padding_token_id");
    try {
        return Tokenizer(file.get_string_array(prefix + "tokens"), file.get_f32_array(prefix + "scores"),
                         file.get_i32_array(prefix + "token_type"), special,
                         file.get_bool_or(prefix + "add_dummy_prefix", true),
                         file.get_bool_or(prefix + "remove_extra_whitespaces", true));
    } catch (const Error& e) {
        fail("GGUF tokenizer '" + role + "': " + e.what());
    }
}

int32_t Tokenizer::vocab_size() const { return int32_t(vocab_->pieces.size()); }

void Tokenizer::check_id(int32_t id) const {
    check(id >= 0 && id < vocab_size(),
          "token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(vocab_size()));
}

TokenType Tokenizer::type_of(int32_t id) const {
    check_id(id);
    return vocab_->types[id];
}

float Tokenizer::score_of(int32_t id) const {
    check_id(id);
    return vocab_->scores[id];
}

int32_t Tokenizer::piece_to_id(std::string_view piece) const {
    if (auto it = vocab_->reserved.find(piece); it != vocab_->reserved.end()) return it->second;
    if (auto it = vocab_->mergeable.find(piece); it != vocab_->mergeable.end()) return it->second;
    return vocab_->unknown_id;
}

std::size_t Tokenizer::user_defined_prefix(std::string_view text) const {
    for (const std::string& symbol : vocab_->user_defined) {  // longest first, so the first hit is the longest
        if (text.substr(0, symbol.size()) == symbol) return symbol.size();
    }
    return 0;
}

// sentencepiece's Normalizer::Normalize with an empty charsmap (the 'identity' rule). Input is valid UTF-8.
std::string Tokenizer::normalize(std::string_view text) const {
    // One normalization unit: a user-defined symbol (kept whole) or one character.
    auto unit_length = [this](std::string_view rest) {
        const std::size_t user = user_defined_prefix(rest);
        return user > 0 ? user : utf8_length_of_lead(static_cast<unsigned char>(rest[0]));
    };
    if (remove_extra_whitespaces_) {
        while (!text.empty() && unit_length(text) == 1 && text[0] == ' ') text.remove_prefix(1);
    }
    std::string out;
    if (text.empty()) return out;
    out.reserve(text.size() * 3 + kSpaceSymbol.size());
    if (add_dummy_prefix_) out.append(kSpaceSymbol);

    bool previous_was_space = remove_extra_whitespaces_;
    while (!text.empty()) {
        const std::size_t length = unit_length(text);
        std::string_view unit = text.substr(0, length);
        text.remove_prefix(length);
        if (previous_was_space) {
            while (!unit.empty() && unit[0] == ' ') unit.remove_prefix(1);
        }
        if (!unit.empty()) {
            for (char c : unit) {
                if (c == ' ') {
                    out.append(kSpaceSymbol);
                } else {
                    out += c;
                }
            }
            previous_was_space = unit.back() == ' ';
        }
        if (!remove_extra_whitespaces_) previous_was_space = false;
    }
    // Also strips a literal trailing "▁" typed by the user, exactly as sentencepiece does.
    if (remove_extra_whitespaces_) {
        while (ends_with(out, kSpaceSymbol)) out.resize(out.size() - kSpaceSymbol.size());
    }
    return out;
}

std::vector<int32_t> Tokenizer::encode(std::string_view utf8_text) const {
    validate_utf8(utf8_text, "tokenizer input");
    const std::string normalized = normalize(utf8_text);
    std::vector<int32_t> ids;
    if (normalized.empty()) return ids;
    const Vocab& vocab = *vocab_;

    // A symbol is a byte range of `normalized`; merged-away symbols keep length 0.
    struct Symbol {
        int32_t prev, next;
        uint32_t begin, length;
        bool frozen;  // user-defined symbols never merge
    };
    struct Pair {
        int32_t left, right;
        float score;
        uint32_t length;  // merged length when queued: a mismatch later means the pair is stale
    };
    // Highest score first; equal scores: leftmost first (sentencepiece's SymbolPairComparator).
    auto lower_priority = [](const Pair& a, const Pair& b) {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    };
    std::priority_queue<Pair, std::vector<Pair>, decltype(lower_priority)> agenda(lower_priority);
    std::vector<Symbol> symbols;
    symbols.reserve(normalized.size());
    // merged unused piece -> the two pieces it was made of, so it can be split again at the end
    std::unordered_map<std::string, std::pair<std::string, std::string>> reverse_merge;

    const std::string_view text(normalized);
    auto piece_of = [&](const Symbol& s) { return text.substr(s.begin, s.length); };

    auto maybe_add_pair = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0 || symbols[left].frozen || symbols[right].frozen) return;
        const std::string_view merged = text.substr(symbols[left].begin, symbols[left].length + symbols[right].length);
        const auto it = vocab.mergeable.find(merged);
        if (it == vocab.mergeable.end()) return;
        agenda.push(Pair{left, right, vocab.scores[it->second], uint32_t(merged.size())});
        if (vocab.types[it->second] == TokenType::unused) {
            reverse_merge[std::string(merged)] = {std::string(piece_of(symbols[left])),
                                                  std::string(piece_of(symbols[right]))};
        }
    };

    // [n_bytes] -> symbols: user-defined symbols whole, everything else one character each.
    for (uint32_t pos = 0; pos < normalized.size();) {
        const std::size_t user = user_defined_prefix(text.substr(pos));
        const std::size_t length = user > 0 ? user : utf8_length_of_lead(static_cast<unsigned char>(text[pos]));
        const int32_t index = int32_t(symbols.size());
        symbols.push_back(Symbol{index - 1, -1, pos, uint32_t(length), user > 0});
        pos += uint32_t(length);
        if (pos < normalized.size()) symbols.back().next = index + 1;
    }
    for (std::size_t i = 1; i < symbols.size(); ++i) maybe_add_pair(int32_t(i - 1), int32_t(i));

    while (!agenda.empty()) {
        const Pair top = agenda.top();
        agenda.pop();
        Symbol& left = symbols[top.left];
        Symbol& right = symbols[top.right];
        if (left.length == 0 || right.length == 0 || left.length + right.length != top.length) continue;  // stale
        left.length += right.length;
        left.next = right.next;
        if (right.next >= 0) symbols[right.next].prev = top.left;
        right.length = 0;
        maybe_add_pair(left.prev, top.left);
        maybe_add_pair(top.left, left.next);
    }

    // Unused pieces may serve as merge steps but never appear in the output: split them back (recursively:
    // their halves may be unused too). Symbols outside the vocabulary fall back to their UTF-8 bytes, or
    // without byte pieces become <unk>.
    bool previous_was_unknown = false;
    std::function<void(std::string_view)> emit = [&](std::string_view piece) {
        const int32_t id = piece_to_id(piece);
        if (vocab.types[id] == TokenType::unused) {
            const auto it = reverse_merge.find(std::string(piece));
            if (it != reverse_merge.end()) {  // no insertions happen now, so views into the map stay valid
                emit(it->second.first);
                emit(it->second.second);
                return;
            }
        }
        const bool unknown = id == vocab.unknown_id;
        if (unknown && vocab.byte_fallback) {
            for (unsigned char byte : piece) ids.push_back(vocab.byte_ids[byte]);
        } else if (vocab.types[id] == TokenType::control) {
            // Only possible with a one-character control piece; sentencepiece fails such input too
            // ("all normalized characters are not consumed").
            fail("tokenizer input contains the control symbol '" + std::string(piece) + "' (id " +
                 std::to_string(id) + ") as text");
        } else if (!(unknown && previous_was_unknown)) {  // a run of unknown symbols becomes one <unk>
            ids.push_back(id);
        }
        previous_was_unknown = unknown;
    };
    for (int32_t index = 0; index >= 0; index = symbols[index].next) emit(piece_of(symbols[index]));
    return ids;
}

std::vector<std::string> Tokenizer::pieces_of(const std::vector<int32_t>& ids) const {
    std::vector<std::string> out;
    out.reserve(ids.size());
    for (int32_t id : ids) {
        check_id(id);
        out.push_back(vocab_->pieces[id]);
    }
    return out;
}

// sentencepiece's SentencePieceProcessor::Decode for ids.
std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
    const Vocab& vocab = *vocab_;
    for (int32_t id : ids) check_id(id);
    std::string text;

    // A run of byte pieces becomes UTF-8; each byte that does not start a valid character becomes U+FFFD.
    auto flush_bytes = [&](std::size_t begin, std::size_t end) {
        std::string bytes;
        for (std::size_t i = begin; i < end; ++i) bytes += char(parse_byte_piece(vocab.pieces[ids[i]]));
        for (std::size_t offset = 0; offset < bytes.size();) {
            const Utf8Char c = decode_utf8_char(bytes, offset);
            if (c.valid) {
                text.append(bytes, offset, c.length);
            } else {
                text.append(kReplacementUtf8);
            }
            offset += c.length;
        }
    };

    // The dummy prefix put a "▁" before the first word; with remove_extra_whitespaces every leading "▁" of
    // the first visible pieces is dropped, otherwise only the first one.
    bool at_start = true;
    bool start_space_consumed = false;
    std::size_t byte_run_begin = 0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        // sentencepiece maps id -> piece -> id; the round trip only differs if a piece is in both tables.
        const int32_t id = piece_to_id(vocab.pieces[ids[i]]);
        const TokenType type = vocab.types[id];
        if (type == TokenType::byte) continue;
        flush_bytes(byte_run_begin, i);
        byte_run_begin = i + 1;
        if (start_space_consumed || !text.empty()) at_start = false;

        start_space_consumed = false;
        if (type == TokenType::control) continue;
        if (type == TokenType::unknown) {
            text.append(kUnknownSurface);
            continue;
        }
        std::string_view piece = vocab.pieces[ids[i]];
        if (at_start && (add_dummy_prefix_ || remove_extra_whitespaces_) && piece.substr(0, kSpaceSymbol.size()) == kSpaceSymbol) {
            piece.remove_prefix(kSpaceSymbol.size());
            start_space_consumed = !remove_extra_whitespaces_;
        }
        text += replace_all(piece, kSpaceSymbol, " ");
    }
    flush_bytes(byte_run_begin, ids.size());
    return text;
}

}  // namespace attnlab::text
