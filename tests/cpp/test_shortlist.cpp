// Translation shortlists (decode/shortlist.hpp, decode::Columns, TranslateOptions::shortlist): the union of a
// batch's sources, the file the Python side writes, and decoding over the shortlist's columns against decoding
// over the whole vocabulary with every other logit masked to -inf (the same search, so the same tokens).
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "attnlab/attnlab.hpp"
#include "attnlab/decode/search.hpp"
#include "attnlab/decode/sentences.hpp"
#include "attnlab/decode/shortlist.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/models/rnn_seq2seq.hpp"
#include "attnlab/models/transformer.hpp"
#include "test_support.hpp"

using namespace attnlab;

namespace {

const std::string kEnDeShortlist = "models/weights/en-de.shortlist.gguf";

const std::vector<std::string> kParagraph = {
    "Two men are playing soccer in a park.",
    "A dog runs.",
    "A little girl with a red hat is sitting on a bench next to her grandmother.",
    "Where is the train station?",
    "The Law will never be perfect, but its application should be just.",
    "People walk.",
};

// The whole vocabulary's logits with every column outside `columns` at -inf: what the shortlist's search must equal.
class MaskedSentences : public decode::SentencesDecoder {
public:
    MaskedSentences(const decode::SentencesDecoder& inner, const decode::Columns& columns)
        : inner_(inner), columns_(columns) {}
    int sentences() const override { return inner_.sentences(); }
    int bos() const override { return inner_.bos(); }
    int eos() const override { return inner_.eos(); }
    int source_length(int sentence) const override { return inner_.source_length(sentence); }
    std::unique_ptr<decode::DecoderBatch> start_batch(const int* sentence_of_row, int rows, int capacity) const override {
        return inner_.start_batch(sentence_of_row, rows, capacity);
    }
    void step_batch(decode::DecoderBatch& batch, const int32_t* tokens, const int* sentence_of_row,
                    decode::BatchOutput& out) const override {
        inner_.step_batch(batch, tokens, sentence_of_row, out);
        for (int r = 0; r < out.rows; ++r)
            for (int v = 0; v < out.vocab; ++v)
                if (columns_.column(v) < 0) out.logits_row(r)[v] = -std::numeric_limits<float>::infinity();
    }
    void select_batch(decode::DecoderBatch& batch, const int32_t* parents, int count) const override {
        inner_.select_batch(batch, parents, count);
    }

private:
    const decode::SentencesDecoder& inner_;
    const decode::Columns& columns_;
};

std::vector<std::vector<int32_t>> source_ids_of(const Model& model, const std::vector<std::string>& texts) {
    std::vector<std::vector<int32_t>> ids;
    for (const Translation& t : model.translate(texts)) ids.push_back(t.source_ids);
    return ids;
}

decode::Columns union_columns(const decode::Shortlist& shortlist, const std::vector<std::vector<int32_t>>& ids,
                              int32_t eos, int vocab) {
    std::vector<const std::vector<int32_t>*> sources;
    for (const auto& s : ids) sources.push_back(&s);
    return decode::Columns(decode::shortlist_union(shortlist, sources, eos, vocab), vocab);
}

void check_same_search(const std::vector<decode::Hypothesis>& shortlisted, const std::vector<decode::Hypothesis>& masked,
                       const decode::Columns& columns) {
    REQUIRE(shortlisted.size() == masked.size());
    for (std::size_t i = 0; i < masked.size(); ++i) {
        CAPTURE(i);
        CHECK(shortlisted[i].tokens == masked[i].tokens);
        for (int32_t token : shortlisted[i].tokens) CHECK(columns.column(token) >= 0);
        CHECK(shortlisted[i].finished == masked[i].finished);
        // The log-softmax sums the same terms in another order (the masked row's zeros sit between them).
        CHECK(shortlisted[i].log_probability == doctest::Approx(masked[i].log_probability).epsilon(1e-5));
        if (shortlisted[i].tokens == masked[i].tokens)
            for (std::size_t t = 0; t < masked[i].attention.size(); ++t)
                CHECK(shortlisted[i].attention[t] == masked[i].attention[t]);
    }
}

template <class Model_, class Encoded, class Sentences, class Encode>
void check_model_family(const std::string& path, Model_ (*load)(const gguf::File&), Encode encode) {
    CAPTURE(path);
    const Model model = Model::open(test::source_path(path));
    const Model_ translator = load(model.file());
    const Shortlist shortlist = Shortlist::open(test::source_path(kEnDeShortlist));
    const std::vector<std::vector<int32_t>> ids = source_ids_of(model, kParagraph);
    const decode::Columns columns = union_columns(shortlist.table(), ids, translator.eos, translator.config.target_vocab);
    CHECK(columns.size() < translator.config.target_vocab / 2);
    std::vector<Encoded> encoded;
    for (const auto& s : ids) encoded.push_back(encode(translator, s));
    std::vector<const Encoded*> sentences;
    for (const Encoded& e : encoded) sentences.push_back(&e);
    for (int beam : {1, 4}) {
        CAPTURE(beam);
        decode::SearchOptions options;
        options.beam = beam;
        options.no_repeat_ngram = 4;
        const Sentences full(translator, sentences);
        const std::vector<decode::Hypothesis> masked = decode::search_sentences(MaskedSentences(full, columns), options);
        const std::vector<decode::Hypothesis> shortlisted =
            decode::search_sentences(Sentences(translator, sentences, &columns), options);
        check_same_search(shortlisted, masked, columns);
    }
}

}  // namespace

TEST_CASE("shortlist_union: the frequent ids, each source piece's row up to its -1, and EOS, ascending") {
    decode::Shortlist shortlist;
    shortlist.source_vocab = 3;
    shortlist.per_source = 3;
    shortlist.table = {5, 1, -1,  //
                       7, 8, 9,   //
                       -1, -1, -1};
    shortlist.frequent = {4, 1};
    const std::vector<int32_t> a = {0, 2}, b = {0};
    CHECK(decode::shortlist_union(shortlist, {&a, &b}, 2, 10) == std::vector<int32_t>{1, 2, 4, 5});
    const std::vector<int32_t> c = {1};
    CHECK(decode::shortlist_union(shortlist, {&c}, 2, 10) == std::vector<int32_t>{1, 2, 4, 7, 8, 9});
    CHECK(decode::shortlist_union(shortlist, {}, 0, 10) == std::vector<int32_t>{0, 1, 4});
    const std::vector<int32_t> outside = {3};
    CHECK_THROWS_WITH(decode::shortlist_union(shortlist, {&outside}, 2, 10), "source id 3 is outside its table of 3");
    CHECK_THROWS_WITH(decode::shortlist_union(shortlist, {&c}, 2, 9),
                      "target id 9 is beyond the model's vocabulary of 9");
}

TEST_CASE("Columns: a column per ascending unique id, -1 for the rest; bad ids refused") {
    const decode::Columns columns({1, 4, 6}, 8);
    CHECK(columns.size() == 3);
    CHECK(columns.column(4) == 1);
    CHECK(columns.column(0) == -1);
    CHECK(columns.column(8) == -1);
    CHECK(columns.column(-1) == -1);
    CHECK_THROWS_WITH(decode::Columns({}, 8), "decoder columns: no token to score");
    CHECK_THROWS_WITH(decode::Columns({1, 1}, 8), "decoder columns: the tokens must ascend without repeats");
    CHECK_THROWS_WITH(decode::Columns({8}, 8), "decoder columns: token 8 is outside the vocabulary of 8");
}

TEST_CASE("ban_repeated_ngrams over columns bans the repeating token's column, and nothing outside them") {
    const decode::Columns columns({2, 5, 7}, 10);
    // "5 7 5" then 7 would repeat the bigram "5 7".
    const std::vector<int32_t> tokens = {5, 7, 5};
    std::vector<float> log_p = {-1.0f, -2.0f, -3.0f};
    decode::ban_repeated_ngrams(tokens.data(), tokens.size(), 2, log_p.data(), 3, &columns);
    CHECK(log_p[0] == -1.0f);
    CHECK(log_p[1] == -2.0f);
    CHECK(log_p[2] == -std::numeric_limits<float>::infinity());
    const std::vector<int32_t> outside = {3, 4, 3};  // would ban 4, which the columns do not hold
    std::vector<float> kept = {-1.0f, -2.0f, -3.0f};
    decode::ban_repeated_ngrams(outside.data(), outside.size(), 2, kept.data(), 3, &columns);
    CHECK(kept == std::vector<float>{-1.0f, -2.0f, -3.0f});
}

TEST_CASE("vocab_fingerprint: FNV-1a 64 as python/attnlab/data/shortlist.py computes it") {
    // attnlab.data.shortlist.vocab_fingerprint(['<unk>', '▁the', 'ß', '']) and of [].
    CHECK(decode::vocab_fingerprint({"<unk>", "\xe2\x96\x81the", "\xc3\x9f", ""}) == 0x8efad73f7a0f074dull);
    CHECK(decode::vocab_fingerprint({}) == 0xcbf29ce484222325ull);
}

TEST_CASE("the shipped EN→DE shortlist: 32 per source piece, made for the EN→DE translators' vocabularies") {
    const Shortlist shortlist = Shortlist::open(test::source_path(kEnDeShortlist));
    CHECK(shortlist.per_source() == 32);
    CHECK(shortlist.frequent() == 500);
    const Model model = Model::open(test::source_path("models/weights/transformer-en-de.q8_0.gguf"));
    CHECK(shortlist.table().source_fingerprint ==
          decode::vocab_fingerprint(model.file().get_string_array("tokenizer.source.tokens")));
    CHECK(shortlist.table().target_fingerprint ==
          decode::vocab_fingerprint(model.file().get_string_array("tokenizer.target.tokens")));
}

TEST_CASE("decoding over a shortlist's columns is decoding over the whole vocabulary with the rest masked") {
    check_model_family<models::RnnSeq2Seq, models::RnnEncoded, models::RnnSentencesDecoder>(
        "models/weights/bahdanau-en-de.q8_0.gguf", &models::load_rnn_seq2seq,
        [](const models::RnnSeq2Seq& m, const std::vector<int32_t>& ids) { return models::rnn_encode(m, ids); });
    check_model_family<models::Transformer, models::TransformerEncoded, models::TransformerSentencesDecoder>(
        "models/weights/transformer-en-de.q8_0.gguf", &models::load_transformer,
        [](const models::Transformer& m, const std::vector<int32_t>& ids) {
            return models::transformer_encode(m, ids, false, false);
        });
    check_model_family<models::Transformer, models::TransformerEncoded, models::TransformerSentencesDecoder>(
        "models/weights/transformer-en-de.f16.gguf", &models::load_transformer,
        [](const models::Transformer& m, const std::vector<int32_t>& ids) {
            return models::transformer_encode(m, ids, false, false);
        });
}

TEST_CASE("Model::translate with a shortlist: one text as in a batch, tokens inside the union, refusals") {
    const Model model = Model::open(test::source_path("models/weights/transformer-en-de.q8_0.gguf"));
    const Shortlist shortlist = Shortlist::open(test::source_path(kEnDeShortlist));
    TranslateOptions options;
    options.beam = 4;
    options.shortlist = &shortlist;
    const std::vector<Translation> batched = model.translate(kParagraph, options);
    REQUIRE(batched.size() == kParagraph.size());
    const Translation alone = model.translate(kParagraph[3], options);
    const std::vector<Translation> just_one = model.translate(std::vector<std::string>{kParagraph[3]}, options);
    CHECK(alone.target_ids == just_one.front().target_ids);
    CHECK(alone.text == "Wo ist der Bahnhof?");
    TranslateOptions whole_vocabulary;
    whole_vocabulary.beam = 4;
    const std::vector<Translation> full = model.translate(kParagraph, whole_vocabulary);
    int same = 0;
    for (std::size_t i = 0; i < batched.size(); ++i) same += batched[i].text == full[i].text;
    CHECK(same >= 4);  // the shortlist changes few outputs (docs/performance.md measures how few)

    const Model de_en = Model::open(test::source_path("models/weights/transformer-de-en.q8_0.gguf"));
    try {
        de_en.translate("Ein Hund läuft.", options);
        FAIL("a shortlist for other vocabularies was accepted");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::model);
        CHECK(std::string(e.what()).find("other vocabularies") != std::string::npos);
    }
    TranslateOptions with_query_key = options;
    with_query_key.query_key = true;
    CHECK_THROWS_WITH(model.translate(kParagraph, with_query_key), "queryKey and shortlist cannot be asked together");
    try {
        Shortlist::open(test::source_path("models/weights/transformer-en-de.q8_0.gguf"));
        FAIL("a model file was read as a shortlist");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::model);
        CHECK(std::string(e.what()).rfind("shortlist: not a translation shortlist", 0) == 0);
    }
    std::ifstream file(test::source_path(kEnDeShortlist), std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    bytes.resize(bytes.size() / 2);
    try {
        Shortlist::from_bytes(bytes);
        FAIL("half a shortlist file was read");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::model);
    }
}
