#include "attnlab/decode/shortlist.hpp"

#include <algorithm>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"

namespace attnlab::decode {

Shortlist load_shortlist(const gguf::File& file) {
    const std::string architecture = file.get_string_or("general.architecture", "");
    check(architecture == "attnlab.shortlist",
          "not a translation shortlist (general.architecture is '" + architecture + "', expected attnlab.shortlist)",
          ErrorKind::model);
    Shortlist shortlist;
    shortlist.per_source = static_cast<int>(file.get_u32("attnlab.shortlist.per_source"));
    const int frequent = static_cast<int>(file.get_u32("attnlab.shortlist.frequent"));
    check(shortlist.per_source > 0 && frequent > 0, "per_source and frequent must be positive",
          ErrorKind::model);
    shortlist.source_fingerprint = file.get_u64("attnlab.shortlist.source_vocab_fnv1a");
    shortlist.target_fingerprint = file.get_u64("attnlab.shortlist.target_vocab_fnv1a");
    const gguf::TensorInfo& table = file.tensor("shortlist.table");
    check(table.shape.size() == 2, "shortlist.table must be [source vocab, per_source]", ErrorKind::model);
    shortlist.source_vocab = static_cast<int>(table.shape[0]);
    shortlist.table = file.load_i32("shortlist.table", {-1, shortlist.per_source});
    shortlist.frequent = file.load_i32("shortlist.frequent", {frequent});
    for (int32_t id : shortlist.table) check(id >= -1, "a negative target id", ErrorKind::model);
    for (int32_t id : shortlist.frequent) check(id >= 0, "a negative target id", ErrorKind::model);
    return shortlist;
}

uint64_t vocab_fingerprint(const std::vector<std::string>& pieces) {
    uint64_t hash = 0xcbf29ce484222325ull;
    auto add = [&](unsigned char byte) { hash = (hash ^ byte) * 0x100000001b3ull; };
    for (const std::string& piece : pieces) {
        for (char c : piece) add(static_cast<unsigned char>(c));
        add(0);
    }
    return hash;
}

std::vector<int32_t> shortlist_union(const Shortlist& shortlist, const std::vector<const std::vector<int32_t>*>& sources,
                                     int32_t eos, int target_vocab) {
    std::vector<char> chosen(static_cast<std::size_t>(std::max(target_vocab, 0)), 0);
    auto take = [&](int32_t id) {
        if (id >= target_vocab)
            fail("target id " + std::to_string(id) + " is beyond the model's vocabulary of " +
                     std::to_string(target_vocab), ErrorKind::model);
        chosen[static_cast<std::size_t>(id)] = 1;
    };
    for (int32_t id : shortlist.frequent) take(id);
    take(eos);
    for (const std::vector<int32_t>* source : sources)
        for (int32_t piece : *source) {
            if (!(piece >= 0 && piece < shortlist.source_vocab))
                fail("source id " + std::to_string(piece) + " is outside its table of " +
                     std::to_string(shortlist.source_vocab));
            const int32_t* row = shortlist.table.data() + static_cast<std::size_t>(piece) * shortlist.per_source;
            for (int k = 0; k < shortlist.per_source && row[k] >= 0; ++k) take(row[k]);
        }
    std::vector<int32_t> ids;
    for (int id = 0; id < target_vocab; ++id)
        if (chosen[static_cast<std::size_t>(id)]) ids.push_back(id);
    return ids;
}

}  // namespace attnlab::decode
