// Parity of attnlab::text::Tokenizer with sentencepiece 0.1.97: ids and decoded text for every line that
// python/attnlab/golden/tokenizer.py wrote (Multi30k val, Tatoeba lines, adversarial lines, hand-made vocabularies).
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/text/tokenizer.hpp"
#include "test_support.hpp"

using attnlab::text::Tokenizer;

namespace {

std::string golden_dir() {
    const char* env = std::getenv("ATTNLAB_GOLDEN_DIR");
    return (env && *env) ? std::string(env) : attnlab::test::source_path("build/golden");
}

std::string unescape(const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '\\' || i + 1 == s.size()) {
            out += s[i];
            continue;
        }
        const char c = s[++i];
        out += c == 't' ? '\t' : c == 'n' ? '\n' : c == 'r' ? '\r' : c;
    }
    return out;
}

struct GoldenLine {
    std::string text;
    std::vector<int32_t> ids;
    std::string decoded;
    bool must_throw = false;  // sentencepiece fails on this input
};

std::vector<GoldenLine> read_golden(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        FAIL_CHECK("missing " << path << ": run PYTHONPATH=python /usr/bin/python3 -m attnlab.data.prepare && "
                                         "PYTHONPATH=python /usr/bin/python3 -m attnlab.golden.tokenizer (or set "
                                         "ATTNLAB_GOLDEN_DIR)");
        return {};
    }
    std::vector<GoldenLine> lines;
    std::string line;
    while (std::getline(in, line)) {
        const std::size_t tab1 = line.find('\t');
        const std::size_t tab2 = line.find('\t', tab1 + 1);
        REQUIRE_MESSAGE((tab1 != std::string::npos && tab2 != std::string::npos), path << ": malformed line " << lines.size() + 1);
        GoldenLine g;
        g.text = unescape(line.substr(0, tab1));
        const std::string ids_column = line.substr(tab1 + 1, tab2 - tab1 - 1);
        g.must_throw = ids_column == "!error";
        std::istringstream ids(ids_column);
        for (int32_t id; ids >> id;) g.ids.push_back(id);
        g.decoded = unescape(line.substr(tab2 + 1));
        lines.push_back(std::move(g));
    }
    return lines;
}

std::string join(const std::vector<int32_t>& ids) {
    std::string out;
    for (int32_t id : ids) out += (out.empty() ? "" : " ") + std::to_string(id);
    return out;
}

// Every golden line: identical ids, and decode() identical to sentencepiece's decode of those ids.
void check_parity(const std::string& name, const std::string& gguf_path) {
    const std::string golden_path = golden_dir() + "/tokenizer/" + name + ".tsv";
    const auto golden = read_golden(golden_path);
    // An empty golden (a generator that wrote nothing) would otherwise compare zero lines and pass.
    REQUIRE_MESSAGE(!golden.empty(), golden_path << " has no lines to compare");
    const Tokenizer tokenizer = Tokenizer::from_gguf(attnlab::gguf::File::open(gguf_path), "text");
    int id_mismatches = 0, decode_mismatches = 0;
    for (std::size_t i = 0; i < golden.size(); ++i) {
        const GoldenLine& g = golden[i];
        if (g.must_throw) {
            CHECK_THROWS_AS(tokenizer.encode(g.text), attnlab::Error);
            continue;
        }
        const std::vector<int32_t> ids = tokenizer.encode(g.text);
        if (ids != g.ids && ++id_mismatches <= 5) {
            FAIL_CHECK(name << " line " << i + 1 << " '" << g.text << "':\n  attnlab      " << join(ids)
                                << "\n  sentencepiece " << join(g.ids));
        }
        const std::string decoded = tokenizer.decode(g.ids);
        if (decoded != g.decoded && ++decode_mismatches <= 5) {
            FAIL_CHECK(name << " line " << i + 1 << " decode: attnlab '" << decoded << "' sentencepiece '"
                                << g.decoded << "'");
        }
    }
    INFO(name << ": " << golden.size() << " lines");
    CHECK(id_mismatches == 0);
    CHECK(decode_mismatches == 0);
}

std::string model_path(const std::string& name) {
    return attnlab::test::source_path("models/tokenizers/" + name + ".gguf");
}

Tokenizer load(const std::string& name) { return Tokenizer::from_gguf(attnlab::gguf::File::open(model_path(name)), "text"); }

}  // namespace

TEST_CASE("tokenizer: ids and decoded text match sentencepiece on the project's tokenizers") {
    for (const char* name : {"multi30k.en", "multi30k.de", "cmn.en", "cmn.zh"}) {
        SUBCASE(name) { check_parity(name, model_path(name)); }
    }
}

TEST_CASE("tokenizer: hand-made vocabularies (ties, unused pieces, user-defined and control symbols, flags)") {
    for (const char* name : {"toy", "toy.nodummy", "toy.keepspaces", "toy.rawspaces", "toy.nobytes"}) {
        SUBCASE(name) { check_parity(name, golden_dir() + "/tokenizer/" + name + ".gguf"); }
    }
}

namespace {

std::vector<std::string> split_tabs(const std::string& line) {
    std::vector<std::string> columns;
    std::size_t start = 0;
    for (std::size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1)
        columns.push_back(line.substr(start, tab - start));
    columns.push_back(line.substr(start));
    return columns;
}

std::vector<int32_t> parse_ids(const std::string& column) {
    std::istringstream in(column);
    std::vector<int32_t> ids;
    for (int32_t id; in >> id;) ids.push_back(id);
    return ids;
}

std::string from_hex(const std::string& hex) {
    std::string bytes;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2) bytes += char(std::stoi(hex.substr(i, 2), nullptr, 16));
    return bytes;
}

}  // namespace

// Seeded random strings (python/attnlab/golden/tokenizer_random.py): each through encode, decode and encode
// again on both sides, and the invalid bytes a repaired line came from refused.
TEST_CASE("tokenizer: random Unicode (mixed scripts, emoji, combining marks, repaired bytes) round-trips as in sentencepiece") {
    for (const std::string name : {"multi30k.en", "multi30k.de", "cmn.en", "cmn.zh", "flickr8k.en"}) {
        CAPTURE(name);
        const std::string path = golden_dir() + "/tokenizer_random/" + name + ".tsv";
        std::ifstream in(path, std::ios::binary);
        if (!in) {
            FAIL_CHECK("missing " << path << ": run PYTHONPATH=python /usr/bin/python3 -m attnlab.golden.tokenizer_random");
            continue;
        }
        const Tokenizer tokenizer = load(name);
        int lines = 0, repaired = 0, astral = 0, mismatches = 0;
        for (std::string line; std::getline(in, line);) {
            ++lines;
            const std::vector<std::string> columns = split_tabs(line);
            REQUIRE_MESSAGE(columns.size() == 5, path << ": malformed line " << lines);
            const std::string text = unescape(columns[0]), decoded = unescape(columns[2]);
            const std::vector<int32_t> ids = parse_ids(columns[1]), again = parse_ids(columns[3]);
            for (unsigned char c : text) astral += c >= 0xF0;
            const std::vector<int32_t> got = tokenizer.encode(text);
            const std::string got_decoded = tokenizer.decode(got);
            const bool same = got == ids && got_decoded == decoded && tokenizer.decode(ids) == decoded &&
                              tokenizer.encode(got_decoded) == again;
            if (!same && ++mismatches <= 5) {
                FAIL_CHECK(name << " line " << lines << " '" << text << "':\n  attnlab       " << join(got) << " -> '"
                                << got_decoded << "' -> " << join(tokenizer.encode(got_decoded))
                                << "\n  sentencepiece " << join(ids) << " -> '" << decoded << "' -> " << join(again));
            }
            if (columns[4] != "-") {
                ++repaired;
                const std::string raw = from_hex(columns[4]);
                CHECK_THROWS_AS(tokenizer.encode(raw), attnlab::Error);
            }
        }
        INFO(name << ": " << lines << " lines");
        CHECK(mismatches == 0);
        // Not vacuous: the file has its lines, repaired ones and characters outside the BMP among them.
        CHECK(lines >= 300);
        CHECK(repaired >= 50);
        CHECK(astral >= 50);
    }
}

TEST_CASE("tokenizer: metadata from GGUF") {
    const Tokenizer tokenizer = load("multi30k.en");
    CHECK(tokenizer.vocab_size() == 8000);
    CHECK(tokenizer.special().pad == 0);
    CHECK(tokenizer.special().unk == 1);
    CHECK(tokenizer.special().bos == 2);
    CHECK(tokenizer.special().eos == 3);
    CHECK(tokenizer.add_dummy_prefix());
    CHECK(tokenizer.remove_extra_whitespaces());
    CHECK(tokenizer.pieces_of({1, 2, 3, 4 + 0xE4}) == std::vector<std::string>{"<unk>", "<s>", "</s>", "<0xE4>"});
    // control ids vanish in decode
    CHECK(tokenizer.decode({2, 3, 0}).empty());
    CHECK_THROWS_AS(Tokenizer::from_gguf(attnlab::gguf::File::open(model_path("cmn.zh")), "source"), attnlab::Error);
}

TEST_CASE("tokenizer: invalid UTF-8 and bad ids throw") {
    const Tokenizer tokenizer = load("cmn.zh");
    for (const std::string bad : {"abc\xFF", "\xE4\xB8", "ok \xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80"}) {
        CHECK_THROWS_AS(tokenizer.encode(bad), attnlab::Error);
    }
    CHECK_THROWS_WITH_AS(tokenizer.encode("\xE4\xB8\xAD\xE6\x96"),
                         "tokenizer input: invalid UTF-8 at byte 3 (0xE6): incomplete 3-byte sequence", attnlab::Error);
    CHECK_THROWS_AS(tokenizer.decode({5, -1}), attnlab::Error);
    CHECK_THROWS_AS(tokenizer.decode({tokenizer.vocab_size()}), attnlab::Error);
    CHECK_THROWS_AS(tokenizer.pieces_of({tokenizer.vocab_size()}), attnlab::Error);
}

// How fast these encode is bench/bench_tokenizer.cpp's question (tests assert no timings).
TEST_CASE("tokenizer: a 10,000-character input and a 10,000-character word round-trip") {
    const Tokenizer tokenizer = load("multi30k.de");
    std::string text;
    for (int i = 0; text.size() < 10000; ++i) text += "Ein Mann fährt mit dem Fahrrad über eine Brücke " + std::to_string(i) + ". ";
    std::string no_spaces(10000, 'a');  // one 10,000-character word: the worst case for merging
    const auto ids = tokenizer.encode(text);
    const auto ids_no_spaces = tokenizer.encode(no_spaces);
    CHECK(ids.size() > 1000);
    CHECK(!ids_no_spaces.empty());
    CHECK(tokenizer.decode(ids) == text.substr(0, text.size() - 1));  // the trailing space is removed
    CHECK(tokenizer.decode(ids_no_spaces) == no_spaces);
}

TEST_CASE("tokenizer: constructor rejects inconsistent vocabularies") {
    using V = std::vector<std::string>;
    std::vector<std::string> pieces = {"<unk>", "a", "b"};
    std::vector<float> scores = {0, -1, -2};
    std::vector<int32_t> types = {2, 1, 1};
    CHECK_NOTHROW(Tokenizer(pieces, scores, types, {}));
    CHECK_THROWS_AS(Tokenizer(pieces, {0, 1}, types, {}), attnlab::Error);                 // sizes differ
    CHECK_THROWS_AS(Tokenizer(V{"<unk>", "a", "a"}, scores, types, {}), attnlab::Error);    // duplicate
    CHECK_THROWS_AS(Tokenizer(V{"<unk>", "", "b"}, scores, types, {}), attnlab::Error);     // empty piece
    CHECK_THROWS_AS(Tokenizer(pieces, scores, {1, 1, 1}, {}), attnlab::Error);              // no unknown piece
    CHECK_THROWS_AS(Tokenizer(pieces, scores, {2, 2, 1}, {}), attnlab::Error);              // two unknown pieces
    CHECK_THROWS_AS(Tokenizer(pieces, scores, {2, 7, 1}, {}), attnlab::Error);              // bad type
    CHECK_THROWS_AS(Tokenizer(V{"<unk>", "<0x41>", "b"}, scores, {2, 6, 1}, {}), attnlab::Error);  // 1 of 256 bytes
    CHECK_THROWS_AS(Tokenizer(V{"<unk>", "<0x4g>", "b"}, scores, {2, 6, 1}, {}), attnlab::Error);  // not a byte
    CHECK_THROWS_AS(Tokenizer(V{"<unk>", "\xFF", "b"}, scores, types, {}), attnlab::Error);        // invalid UTF-8
    Tokenizer::Special special;
    special.bos = 3;
    CHECK_THROWS_AS(Tokenizer(pieces, scores, types, special), attnlab::Error);  // bos out of range
    special = {};
    special.unk = 1;
    CHECK_THROWS_AS(Tokenizer(pieces, scores, types, special), attnlab::Error);  // unk is not the unknown piece
}
