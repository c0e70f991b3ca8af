#pragma once
// A lexical shortlist, as Marian and bergamot-translator use: the target pieces a translation of a given source is
// likely to need, so that a decoder scores those instead of its whole vocabulary. For a batch of sources it is the
// union of the most frequent target pieces, each source piece's most co-occurring target pieces, and EOS
// (python/attnlab/data/shortlist.py builds the table from the training pairs and documents the file).
#include <cstdint>
#include <string>
#include <vector>

namespace attnlab::gguf {
class File;
}

namespace attnlab::decode {

struct Shortlist {
    int source_vocab = 0;
    int per_source = 0;
    std::vector<int32_t> table;     // [source_vocab, per_source] target ids, -1 after a piece's last one
    std::vector<int32_t> frequent;  // target ids every union holds
    uint64_t source_fingerprint = 0, target_fingerprint = 0;  // vocab_fingerprint of the pieces it was made for
};

// Reads a shortlist file (general.architecture "attnlab.shortlist"); throws attnlab::Error for anything else.
Shortlist load_shortlist(const gguf::File& file);

// FNV-1a 64 over the pieces' bytes, each followed by a zero byte: which vocabulary a shortlist belongs to.
uint64_t vocab_fingerprint(const std::vector<std::string>& pieces);

// The ascending target ids the sources (each a list of source ids) may be translated with: the frequent ids, every
// source id's row of the table, and eos. Throws attnlab::Error for a source id outside the table or a target id at
// or beyond target_vocab.
std::vector<int32_t> shortlist_union(const Shortlist& shortlist, const std::vector<const std::vector<int32_t>*>& sources,
                                     int32_t eos, int target_vocab);

}  // namespace attnlab::decode
