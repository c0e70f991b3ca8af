#pragma once
// SentencePiece BPE tokenizer with exact id parity to sentencepiece 0.1.97 for models trained with
// normalization_rule_name='identity' (python/attnlab/data/tokenizer.py). Algorithm and GGUF keys: docs/gguf.md.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attnlab::gguf {
class File;
}

namespace attnlab::text {

// sentencepiece's ModelProto.SentencePiece.Type, as stored in tokenizer.<role>.token_type
enum class TokenType : int32_t { normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6 };

class Tokenizer {
public:
    struct Special {
        int32_t bos = -1, eos = -1, unk = -1, pad = -1;  // -1: the model has none
    };

    // Validates the vocabulary (sizes agree, no empty or duplicate pieces, exactly one unknown piece,
    // either none or all 256 <0xXX> byte pieces, special ids in range) and throws attnlab::Error otherwise.
    Tokenizer(std::vector<std::string> pieces, std::vector<float> scores, std::vector<int32_t> types, Special special,
              bool add_dummy_prefix = true, bool remove_extra_whitespaces = true);

    // Reads tokenizer.<role>.{model,tokens,scores,token_type,*_token_id,add_dummy_prefix,remove_extra_whitespaces}.
    static Tokenizer from_gguf(const gguf::File& file, const std::string& role);

    // UTF-8 text -> ids, no BOS/EOS added. Throws attnlab::Error on invalid UTF-8.
    std::vector<int32_t> encode(std::string_view utf8_text) const;
    // ids -> piece text for display ("▁Hello", "<0xE4>"). Throws on an id outside the vocabulary.
    std::vector<std::string> pieces_of(const std::vector<int32_t>& ids) const;
    // ids -> text as sentencepiece decodes it: control ids vanish, <unk> becomes " ⁇ ", runs of byte pieces
    // are re-assembled into UTF-8 (each malformed byte becomes U+FFFD), "▁" becomes " ", and the leading
    // whitespace of the first piece(s) is dropped. Throws on an id outside the vocabulary.
    std::string decode(const std::vector<int32_t>& ids) const;

    int32_t vocab_size() const;
    const Special& special() const { return special_; }
    TokenType type_of(int32_t id) const;  // throws on an id outside the vocabulary
    float score_of(int32_t id) const;
    bool add_dummy_prefix() const { return add_dummy_prefix_; }
    bool remove_extra_whitespaces() const { return remove_extra_whitespaces_; }

private:
    struct Vocab;  // pieces and lookup tables; immutable after construction, shared by copies

    std::string normalize(std::string_view text) const;
    std::size_t user_defined_prefix(std::string_view text) const;  // longest user-defined match, 0 if none
    int32_t piece_to_id(std::string_view piece) const;
    void check_id(int32_t id) const;

    std::shared_ptr<const Vocab> vocab_;
    Special special_;
    bool add_dummy_prefix_ = true;
    bool remove_extra_whitespaces_ = true;
};

}  // namespace attnlab::text
