// libFuzzer: arbitrary bytes as text for every committed tokenizer (models/tokenizers/*.gguf, loaded once), then
// the ids back through decode and pieces_of; and arbitrary bytes as ids. Invalid UTF-8 and out-of-vocabulary ids
// must be rejected with attnlab::Error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "attnlab/io/gguf.hpp"
#include "attnlab/text/tokenizer.hpp"
#include "fuzz_support.hpp"

namespace {

using attnlab::fuzz::expect_error_or_success;
using attnlab::fuzz::violation;
using attnlab::text::Tokenizer;

std::vector<Tokenizer> load_tokenizers() {
    std::vector<Tokenizer> out;
    for (const char* name : {"multi30k.en", "multi30k.de", "cmn.en", "cmn.zh", "flickr8k.en"}) {
        const auto file = attnlab::gguf::File::open(attnlab::fuzz::source_path("models/tokenizers/") + name + ".gguf");
        // Each committed file holds one role ("source" or "target"): take it from its tokenizer.<role>.model key.
        for (const std::string& key : file.keys()) {
            const std::string prefix = "tokenizer.", suffix = ".model";
            if (key.size() > prefix.size() + suffix.size() && key.compare(0, prefix.size(), prefix) == 0 &&
                key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0)
                out.push_back(Tokenizer::from_gguf(file, key.substr(prefix.size(), key.size() - prefix.size() - suffix.size())));
        }
    }
    if (out.size() != 5) violation("expected one tokenizer in each of the 5 committed files");
    return out;
}

}  // namespace

namespace attnlab::fuzz {

int tokenizer_one_input(const uint8_t* data, std::size_t size) {
    static const std::vector<Tokenizer> tokenizers = load_tokenizers();
    if (size == 0) return 0;
    // First byte: which tokenizer (low bits) and whether the rest is text or ids (high bit).
    const Tokenizer& tokenizer = tokenizers[data[0] % tokenizers.size()];
    const bool as_ids = (data[0] & 0x80) != 0;
    const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
    if (!as_ids) {
        expect_error_or_success("encode", [&] {
            const std::vector<int32_t> ids = tokenizer.encode(rest);
            for (int32_t id : ids)
                if (id < 0 || id >= tokenizer.vocab_size()) violation("encode produced id " + std::to_string(id));
            (void)tokenizer.pieces_of(ids);
            (void)tokenizer.decode(ids);
        });
    } else {
        // Little-endian int32 ids; most folded into the vocabulary so that decode gets past the id check.
        std::vector<int32_t> ids(rest.size() / 4);
        if (!ids.empty()) std::memcpy(ids.data(), rest.data(), ids.size() * 4);
        std::vector<int32_t> folded = ids;
        for (int32_t& id : folded) id = static_cast<int32_t>(static_cast<uint32_t>(id) % tokenizer.vocab_size());
        expect_error_or_success("decode (raw ids)", [&] { (void)tokenizer.decode(ids); });
        expect_error_or_success("pieces_of (raw ids)", [&] { (void)tokenizer.pieces_of(ids); });
        expect_error_or_success("decode", [&] { (void)tokenizer.decode(folded); });
        expect_error_or_success("pieces_of", [&] { (void)tokenizer.pieces_of(folded); });
        expect_error_or_success("type_of", [&] { for (int32_t id : ids) (void)tokenizer.type_of(id); });
    }
    return 0;
}

}  // namespace attnlab::fuzz

#ifndef ATTNLAB_FUZZ_NO_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
    return attnlab::fuzz::tokenizer_one_input(data, size);
}
#endif
