// The speech recognizer (Listen, Attend and Spell with location-aware attention) against PyTorch
// (nn/listen_attend_spell.py): a tiny trained model and what PyTorch computes for it
// (python/attnlab/golden/speech.py -> tests/fixtures/speech/las{,.q8_0,.expected}.gguf), layer by layer, step by
// step and through greedy and beam search; the CTC head and the joint CTC/attention search against its Python twin
// (nn/joint_decoding.py); the character language model and shallow fusion (las-lm{,.expected}.gguf, nn/char_lm.py);
// the Q8_0 export (written without the head); a listener of three layers (las-3{,.expected}.gguf); and the refusals:
// files of another kind or shape, features too short or malformed, CTC and LM weights out of range.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <xtensor/xview.hpp>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/models/speech_recognizer.hpp"
#include "test_support.hpp"

using namespace attnlab;

namespace {

std::string fixture(const std::string& name) { return test::source_path("tests/fixtures/speech/" + name); }

const gguf::File& expected_file() {
    static const gguf::File file = gguf::File::open(fixture("las.expected.gguf"));
    return file;
}

const models::SpeechRecognizer& f32_model() {
    static const models::SpeechRecognizer model = models::load_speech_recognizer(gguf::File::open(fixture("las.gguf")));
    return model;
}

std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in.good());
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string utterance(int i) { return "utterance." + std::to_string(i) + "."; }

Matrix features_of(int i) { return expected_file().load_f32<2>(utterance(i) + "features", {-1, 13}); }

double max_abs_diff(const float* a, const float* b, std::size_t n) {
    double worst = 0;
    for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::fabs(double(a[i]) - double(b[i])));
    return worst;
}

// Each returned character's weights are a distribution over the annotations.
void check_rows_are_distributions(const decode::Hypothesis& h, int S) {
    REQUIRE(h.attention.size() == h.tokens.size());
    for (const std::vector<float>& row : h.attention) {
        REQUIRE(int(row.size()) == S);
        double sum = 0;
        for (float w : row) {
            CHECK((w >= 0.0f && w <= 1.0f));
            sum += w;
        }
        CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
    }
}

// Overwrites the value of a 4-byte metadata key in a GGUF file's bytes (the key is stored as u64 length + bytes,
// then its u32 type, 4 for uint32 or 6 for float32, then the value).
template <class T>
void patch_metadata(std::vector<uint8_t>& bytes, const std::string& key, T value) {
    static_assert(std::is_same_v<T, uint32_t> || std::is_same_v<T, float>, "uint32 or float32 keys only");
    constexpr uint32_t kType = std::is_same_v<T, float> ? 6 : 4;
    const auto at = std::search(bytes.begin(), bytes.end(), key.begin(), key.end());
    REQUIRE(at != bytes.end());
    const std::size_t type_at = std::size_t(at - bytes.begin()) + key.size();
    uint32_t type = 0;
    std::memcpy(&type, bytes.data() + type_at, 4);
    REQUIRE(type == kType);
    std::memcpy(bytes.data() + type_at + 4, &value, 4);
}

// Renames a tensor in place (same length, so the file stays valid GGUF without it).
void rename_tensor(std::vector<uint8_t>& bytes, const std::string& name, const std::string& new_name) {
    REQUIRE(name.size() == new_name.size());
    const auto at = std::search(bytes.begin(), bytes.end(), name.begin(), name.end());
    REQUIRE(at != bytes.end());
    std::copy(new_name.begin(), new_name.end(), at);
}

}  // namespace

TEST_CASE("speech recognizer: the file's sizes and character table") {
    const models::SpeechRecognizer& model = f32_model();
    const models::SpeechRecognizerConfig& c = model.config;
    CHECK(c.feature_size == 13);
    CHECK(c.encoder_hidden == 16);
    CHECK(c.decoder_hidden == 32);
    CHECK(c.embedding == 32);
    CHECK(c.attention_dim == 32);
    CHECK(c.location_filters == 4);
    CHECK(c.location_width == 7);
    CHECK(c.vocab == 32);
    CHECK(c.frame_rate == 100);
    CHECK(c.time_reduction == 4);
    CHECK(models::annotation_seconds(c) == doctest::Approx(0.04));
    REQUIRE(model.characters.size() == 32);
    CHECK(model.characters[2] == "<s>");
    CHECK(model.characters[4] == " ");
    CHECK(model.characters[5] == "'");
    CHECK(model.characters[31] == "z");
    CHECK(model.pad == 0);
    CHECK(model.unk == 1);
    CHECK(model.bos == 2);
    CHECK(model.eos == 3);
    CHECK(model.never_written == std::vector<int32_t>{0, 1, 2});
    CHECK(models::spell(model, {2, 30, 10, 24, 4, 5, 3}) == "yes '");
    CHECK_THROWS_AS(models::spell(model, {32}), Error);
    CHECK_FALSE(model.speller.ih.quantized());
    REQUIRE(model.has_ctc);
    CHECK(model.ctc_weight == doctest::Approx(expected_file().get_f32("expected.ctc_weight")));
    CHECK(models::speech_ctc_weight(model, -1.0f) == model.ctc_weight);
    const decode::SearchOptions options = models::speech_search_options(3);
    CHECK(options.beam == 3);
    CHECK(decode::max_target_length(options, 11) ==
          int(expected_file().get_f32("expected.max_length_ratio") * 11 + expected_file().get_u32("expected.max_length_extra")));
}

TEST_CASE("speech recognizer: the listener matches PyTorch layer by layer") {
    const models::SpeechRecognizer& model = f32_model();
    const gguf::File& expected = expected_file();
    const Matrix features = features_of(0);
    const int T = rows(features), E2 = 2 * model.config.encoder_hidden;
    REQUIRE(T % 2 == 1);   // the probe drops a frame before the first layer

    const Matrix normalized = models::normalize_features(model, features);
    const Matrix normalized_expected = expected.load_f32<2>("probe.normalized", {T, 13});
    const double normalize_error = max_abs_diff(normalized.data(), normalized_expected.data(), normalized.size());
    const Matrix pairs = models::stack_frame_pairs(normalized);
    REQUIRE(rows(pairs) == T / 2);
    CHECK(pairs(1, 13) == normalized(3, 0));
    const nn::BiGRUOutput layer0 = nn::bigru_forward(model.listener[0], pairs);
    const Matrix layer0_expected = expected.load_f32<2>("probe.listener0", {T / 2, E2});
    const double layer0_error = max_abs_diff(layer0.outputs.data(), layer0_expected.data(), layer0_expected.size());

    const models::SpeechEncoded encoded = models::listen(model, features);
    const int S = T / 2 / 2;
    const Matrix annotations = expected.load_f32<2>("probe.annotations", {S, E2});
    REQUIRE(encoded.annotations.shape() == annotations.shape());
    const double annotation_error = max_abs_diff(encoded.annotations.data(), annotations.data(), annotations.size());
    const Matrix keys = expected.load_f32<2>("probe.keys", {S, model.config.attention_dim});
    REQUIRE(encoded.keys.projected.shape() == keys.shape());
    const double keys_error = max_abs_diff(encoded.keys.projected.data(), keys.data(), keys.size());
    const std::vector<float> s0 = expected.load_f32_flat("probe.s0");
    REQUIRE(encoded.initial_state.size() == s0.size());
    const double s0_error = max_abs_diff(encoded.initial_state.data(), s0.data(), s0.size());
    MESSAGE("listener max |engine - PyTorch|: CMN " << normalize_error << ", layer 0 " << layer0_error
                                                    << ", annotations " << annotation_error << ", keys " << keys_error
                                                    << ", s0 " << s0_error);
    CHECK(normalize_error < 1e-5);
    CHECK(layer0_error < 1e-4);
    CHECK(annotation_error < 1e-4);
    CHECK(keys_error < 1e-4);
    CHECK(s0_error < 1e-4);
}

TEST_CASE("speech recognizer: speller steps match PyTorch (logits, state, weights, scores, context)") {
    const models::SpeechRecognizer& model = f32_model();
    const gguf::File& expected = expected_file();
    const models::SpeechEncoded encoded = models::listen(model, features_of(0));
    const int S = rows(encoded.annotations), V = model.config.vocab, H = model.config.decoder_hidden;
    const int E2 = 2 * model.config.encoder_hidden;
    const std::vector<int32_t> tokens = expected.get_i32_array("probe.tokens");
    const int steps = int(tokens.size());
    REQUIRE(steps >= 3);
    REQUIRE(tokens[0] == model.bos);
    const Matrix logits = expected.load_f32<2>("probe.logits", {steps, V});
    const Matrix states = expected.load_f32<2>("probe.states", {steps, H});
    const Matrix weights = expected.load_f32<2>("probe.weights", {steps, S});
    const Matrix scores = expected.load_f32<2>("probe.scores", {steps, S});
    const Matrix context = expected.load_f32<2>("probe.context", {steps, E2});

    // The engine's own recurrence from (s_0, a_0): errors may compound, and must stay small.
    std::vector<float> state(encoded.initial_state.begin(), encoded.initial_state.end()), next(H);
    std::vector<float> previous = models::first_weights(encoded);
    REQUIRE(int(previous.size()) == S);
    CHECK(previous[0] == 1.0f);
    double logit_error = 0, state_error = 0, weight_error = 0, score_error = 0, context_error = 0;
    decode::StepOutput out;
    for (int i = 0; i < steps; ++i) {
        CAPTURE(i);
        models::speech_step(model, encoded, tokens[i], state.data(), previous.data(), next.data(), out);
        REQUIRE(out.logits.size() == std::size_t(V));
        REQUIRE(out.weights.size() == std::size_t(S));
        REQUIRE(out.context.size() == std::size_t(E2));
        logit_error = std::max(logit_error, max_abs_diff(out.logits.data(), logits.data() + std::size_t(i) * V, V));
        state_error = std::max(state_error, max_abs_diff(next.data(), states.data() + std::size_t(i) * H, H));
        weight_error = std::max(weight_error, max_abs_diff(out.weights.data(), weights.data() + std::size_t(i) * S, S));
        score_error = std::max(score_error, max_abs_diff(out.scores.data(), scores.data() + std::size_t(i) * S, S));
        context_error = std::max(context_error, max_abs_diff(out.context.data(), context.data() + std::size_t(i) * E2, E2));
        // Raw logits: the decoder bans pad/unk/bos, the step itself does not.
        for (float x : out.logits) CHECK(std::isfinite(x));
        state.swap(next);
        previous = out.weights;
    }
    MESSAGE("speller max |engine - PyTorch| over " << steps << " steps: logits " << logit_error << ", states "
                                                   << state_error << ", weights " << weight_error << ", scores "
                                                   << score_error << ", context " << context_error);
    CHECK(logit_error < 1e-4);
    CHECK(state_error < 1e-4);
    CHECK(weight_error < 1e-4);
    CHECK(score_error < 1e-4);
    CHECK(context_error < 1e-4);

    // The decoder adapter: the same step, with the never-written ids at -inf and the weights carried.
    const models::SpeechDecoder decoder(model, encoded);
    CHECK(decoder.source_length() == S);
    decode::StepOutput first;
    const decode::StatePtr after = decoder.step(*decoder.initial_state(), model.bos, first);
    for (int32_t id : model.never_written) CHECK(first.logits[id] == -std::numeric_limits<float>::infinity());
    test::check_close(first.logits.data() + 3, logits.data() + 3, V - 3, 1e-4f, 0.0f, "decoder logits");
    decode::StepOutput second;
    decoder.step(*after, tokens[1], second);
    test::check_close(second.weights.data(), weights.data() + S, S, 1e-4f, 0.0f, "second step's weights");

    // A character outside the table is refused, not read out of bounds.
    CHECK_THROWS_AS(models::speech_step(model, encoded, V, state.data(), previous.data(), next.data(), out), Error);
    CHECK_THROWS_AS(models::speech_step(model, encoded, -1, state.data(), previous.data(), next.data(), out), Error);
}

TEST_CASE("speech recognizer: greedy and beam-3 search give PyTorch's characters and attention") {
    const models::SpeechRecognizer& model = f32_model();
    const gguf::File& expected = expected_file();
    const int utterances = int(expected.get_u32("expected.utterances"));
    REQUIRE(utterances == 8);
    decode::SearchOptions beam = models::speech_search_options(int(expected.get_u32("expected.beam")));
    beam.length_penalty = expected.get_f32("expected.alpha");
    double attention_error = 0, score_error = 0;
    int distinct_beams = 0;
    std::vector<std::string> texts;
    for (int i = 0; i < utterances; ++i) {
        const std::string p = utterance(i);
        const std::string transcript = expected.get_string(p + "transcript");
        CAPTURE(i);
        CAPTURE(transcript);
        const models::SpeechEncoded encoded = models::listen(model, features_of(i));
        const int S = rows(encoded.annotations);
        const models::SpeechDecoder decoder(model, encoded);

        const decode::Hypothesis greedy = decode::search(decoder, models::speech_search_options());
        const std::vector<int32_t> greedy_ids = expected.get_i32_array(p + "greedy_ids");
        REQUIRE(greedy.tokens == greedy_ids);
        CHECK(greedy.finished);
        const std::string text = models::spell(model, greedy.tokens);
        CHECK(text == expected.get_string(p + "greedy_text"));
        if (!transcript.empty()) CHECK(text == transcript);   // the fixture learned its transcripts
        texts.push_back(text);
        const int L = int(greedy.tokens.size());
        const Matrix attention = expected.load_f32<2>(p + "greedy_attention", {L, S});
        const Matrix scores = expected.load_f32<2>(p + "greedy_scores", {L, S});
        check_rows_are_distributions(greedy, S);
        for (int t = 0; t < L; ++t) {
            attention_error = std::max(attention_error, max_abs_diff(greedy.attention[t].data(), attention.data() + std::size_t(t) * S, S));
            score_error = std::max(score_error, max_abs_diff(greedy.scores[t].data(), scores.data() + std::size_t(t) * S, S));
        }

        const decode::Hypothesis best = decode::search(decoder, beam);
        CHECK(best.tokens == expected.get_i32_array(p + "beam_ids"));
        CHECK(models::spell(model, best.tokens) == expected.get_string(p + "beam_text"));
        check_rows_are_distributions(best, S);
        distinct_beams += best.tokens != greedy.tokens;
        for (int32_t id : best.tokens) CHECK((id > model.eos && id < model.config.vocab));
    }
    MESSAGE("greedy attention max |engine - PyTorch| " << attention_error << ", scores " << score_error << "; "
                                                      << distinct_beams << " of " << utterances
                                                      << " beam outputs differ from greedy");
    CHECK(attention_error < 1e-4);
    CHECK(score_error < 1e-4);
    // The outputs are varied, so equal tokens say something.
    std::sort(texts.begin(), texts.end());
    CHECK(std::unique(texts.begin(), texts.end()) - texts.begin() >= 5);
}

TEST_CASE("speech recognizer: the CTC head and the joint CTC/attention search give PyTorch's numbers and characters") {
    const models::SpeechRecognizer& model = f32_model();
    const gguf::File& expected = expected_file();
    const float lambda = expected.get_f32("expected.ctc_weight");
    REQUIRE((lambda > 0.0f && lambda < 1.0f));
    {
        const models::SpeechEncoded encoded = models::listen(model, features_of(0));
        const int S = rows(encoded.annotations), V = model.config.vocab;
        const Matrix log_probs = expected.load_f32<2>("probe.ctc_log_probs", {S, V});
        REQUIRE(encoded.ctc_log_probabilities.shape() == log_probs.shape());
        const double error = max_abs_diff(encoded.ctc_log_probabilities.data(), log_probs.data(), log_probs.size());
        MESSAGE("CTC log-probabilities max |engine - PyTorch| " << error);
        CHECK(error < 1e-4);
    }
    decode::SearchOptions beam = models::speech_search_options(int(expected.get_u32("expected.beam")));
    beam.length_penalty = expected.get_f32("expected.alpha");
    const int utterances = int(expected.get_u32("expected.utterances"));
    int differ_from_attention = 0, ctc_alone_differs = 0;
    double attention_error = 0;
    for (int i = 0; i < utterances; ++i) {
        const std::string p = utterance(i);
        CAPTURE(i);
        const models::SpeechEncoded encoded = models::listen(model, features_of(i));
        const int S = rows(encoded.annotations);
        const decode::Hypothesis greedy = models::joint_search(model, encoded, models::speech_search_options(), lambda);
        CHECK(greedy.tokens == expected.get_i32_array(p + "joint_greedy_ids"));
        CHECK(greedy.finished);
        check_rows_are_distributions(greedy, S);
        const decode::Hypothesis best = models::joint_search(model, encoded, beam, lambda);
        const std::vector<int32_t> joint_ids = expected.get_i32_array(p + "joint_beam_ids");
        REQUIRE(best.tokens == joint_ids);
        check_rows_are_distributions(best, S);
        if (!best.tokens.empty()) {
            const Matrix rows_expected = expected.load_f32<2>(p + "joint_beam_attention", {int(best.tokens.size()), S});
            for (std::size_t t = 0; t < best.tokens.size(); ++t)
                attention_error = std::max(attention_error, max_abs_diff(best.attention[t].data(),
                                                                         rows_expected.data() + t * S, S));
        }
        // The attention's own Σ log p is what the result reports, as the attention-only search does.
        CHECK(std::isfinite(best.log_probability));
        CHECK(best.log_probability <= 0.0f);
        const std::vector<int32_t> plain = expected.get_i32_array(p + "beam_ids");
        differ_from_attention += joint_ids != plain;
        const decode::Hypothesis ctc_alone = models::joint_search(model, encoded, beam, 1.0f);
        CHECK(ctc_alone.tokens == expected.get_i32_array(p + "ctc_beam_ids"));
        ctc_alone_differs += ctc_alone.tokens != joint_ids;
        // recognize() with no CTC weight is the attention-only search, greedy and beam.
        CHECK(models::recognize(model, encoded, 1, 0.0f).tokens == expected.get_i32_array(p + "greedy_ids"));
        CHECK(models::recognize(model, encoded, beam.beam, 0.0f).tokens == plain);
        CHECK(models::recognize(model, encoded, beam.beam, lambda).tokens == joint_ids);
    }
    MESSAGE("joint beam attention max |engine - PyTorch| " << attention_error << "; " << differ_from_attention << " of "
                                                           << utterances << " joint outputs differ from attention's, "
                                                           << ctc_alone_differs << " CTC-alone outputs from the joint");
    CHECK(attention_error < 1e-4);
    // The fixture's attention-only beam loses characters that CTC keeps: equal outputs alone would test little.
    CHECK(differ_from_attention >= 2);
    CHECK(ctc_alone_differs >= 1);

    // The weights a caller may ask for.
    CHECK(models::speech_ctc_weight(model, 0.0f) == 0.0f);
    CHECK(models::speech_ctc_weight(model, 1.0f) == 1.0f);
    for (float bad : {-0.5f, 1.5f, -2.0f, std::numeric_limits<float>::quiet_NaN()}) {
        CAPTURE(bad);
        CHECK_THROWS_WITH_AS(models::speech_ctc_weight(model, bad), doctest::Contains("ctc weight must be between 0 and 1"),
                             Error);
    }
    const models::SpeechEncoded encoded = models::listen(model, features_of(0));
    CHECK_THROWS_AS(models::joint_search(model, encoded, beam, 0.0f), Error);
    decode::SearchOptions too_wide = beam;
    too_wide.beam = decode::kMaxBeam + 1;
    CHECK_THROWS_WITH_AS(models::joint_search(model, encoded, too_wide, lambda), doctest::Contains("beam width"), Error);
}

TEST_CASE("speech recognizer: the language model's steps and the fused search give PyTorch's numbers and characters") {
    const models::SpeechRecognizer model = models::load_speech_recognizer(gguf::File::open(fixture("las-lm.gguf")));
    const gguf::File expected = gguf::File::open(fixture("las-lm.expected.gguf"));
    REQUIRE(model.has_lm);
    CHECK_FALSE(f32_model().has_lm);
    const float beta = expected.get_f32("expected.lm_weight");
    CHECK(model.lm_weight == beta);
    CHECK(models::speech_lm_weight(model, -1.0f) == beta);
    {
        const std::vector<int32_t> tokens = expected.get_i32_array("lm.tokens");
        const int P = int(tokens.size()), V = model.config.vocab, H = model.config.lm_hidden;
        const Matrix log_probs = expected.load_f32<2>("lm.log_probs", {P, V});
        const Matrix states = expected.load_f32<2>("lm.states", {P, H});
        std::vector<float> state(static_cast<std::size_t>(H), 0.0f), next(static_cast<std::size_t>(H)),
            log_p(static_cast<std::size_t>(V));
        double log_p_error = 0, state_error = 0;
        for (int i = 0; i < P; ++i) {
            models::speech_lm_step(model, tokens[std::size_t(i)], state.data(), next.data(), log_p.data());
            log_p_error = std::max(log_p_error, max_abs_diff(log_p.data(), log_probs.data() + i * V, std::size_t(V)));
            state_error = std::max(state_error, max_abs_diff(next.data(), states.data() + i * H, std::size_t(H)));
            state.swap(next);
        }
        MESSAGE("LM steps max |engine - PyTorch|: log p " << log_p_error << ", state " << state_error);
        CHECK(log_p_error < 1e-5);
        CHECK(state_error < 1e-5);
    }
    const float lambda = expected_file().get_f32("expected.ctc_weight");
    decode::SearchOptions beam = models::speech_search_options(int(expected.get_u32("expected.beam")));
    beam.length_penalty = expected_file().get_f32("expected.alpha");
    const int utterances = int(expected.get_u32("expected.utterances"));
    int fusion_changes = 0, lm_only_changes = 0;
    for (int i = 0; i < utterances; ++i) {
        const std::string p = utterance(i);
        CAPTURE(i);
        const models::SpeechEncoded encoded = models::listen(model, features_of(i));
        const std::vector<int32_t> fused = expected.get_i32_array(p + "lm_joint_beam_ids");
        CHECK(models::joint_search(model, encoded, models::speech_search_options(), lambda, beta).tokens ==
              expected.get_i32_array(p + "lm_joint_greedy_ids"));
        const decode::Hypothesis best = models::joint_search(model, encoded, beam, lambda, beta);
        CHECK(best.tokens == fused);
        check_rows_are_distributions(best, rows(encoded.annotations));
        const std::vector<int32_t> lm_only = expected.get_i32_array(p + "lm_only_beam_ids");
        CHECK(models::joint_search(model, encoded, beam, 0.0f, beta).tokens == lm_only);
        CHECK(models::recognize(model, encoded, beam.beam, lambda, beta).tokens == fused);
        CHECK(models::recognize(model, encoded, beam.beam, 0.0f, beta).tokens == lm_only);
        // β = 0 is the search without the LM.
        const std::vector<int32_t> joint = models::joint_search(model, encoded, beam, lambda).tokens;
        CHECK(models::joint_search(model, encoded, beam, lambda, 0.0f).tokens == joint);
        fusion_changes += fused != joint;
        lm_only_changes += lm_only != models::recognize(model, encoded, beam.beam, 0.0f).tokens;
    }
    MESSAGE(fusion_changes << " of " << utterances << " fused outputs differ from the joint search's, " << lm_only_changes
                           << " LM-with-attention outputs from attention's alone");
    // The fixture's LM was trained on other sentences: outputs that never changed would test little.
    CHECK(fusion_changes >= 1);
    CHECK(lm_only_changes >= 1);

    CHECK(models::speech_lm_weight(model, 0.0f) == 0.0f);
    CHECK(models::speech_lm_weight(model, models::kMaxSpeechLmWeight) == models::kMaxSpeechLmWeight);
    for (float bad : {-0.5f, 2.5f, -2.0f, std::numeric_limits<float>::quiet_NaN()}) {
        CAPTURE(bad);
        CHECK_THROWS_WITH_AS(models::speech_lm_weight(model, bad), doctest::Contains("lm weight must be between 0 and 2"),
                             Error);
    }
    CHECK_THROWS_WITH_AS(models::speech_lm_weight(f32_model(), 0.5f), doctest::Contains("has no language model"), Error);
    CHECK(models::speech_lm_weight(f32_model(), -1.0f) == 0.0f);
    const models::SpeechEncoded encoded = models::listen(f32_model(), features_of(0));
    CHECK_THROWS_WITH_AS(models::joint_search(f32_model(), encoded, beam, lambda, 0.5f),
                         doctest::Contains("no language model"), Error);
}

TEST_CASE("speech recognizer: the Q8_0 export loads, transcribes, and keeps the greedy characters where margins allow") {
    const models::SpeechRecognizer q8 = models::load_speech_recognizer(gguf::File::open(fixture("las.q8_0.gguf")));
    // Written without the CTC head: it decodes with attention alone, and asking for CTC is refused.
    CHECK_FALSE(q8.has_ctc);
    CHECK(q8.ctc_weight == 0.0f);
    CHECK(models::speech_ctc_weight(q8, -1.0f) == 0.0f);
    CHECK_THROWS_WITH_AS(models::speech_ctc_weight(q8, 0.3f), doctest::Contains("no CTC head"), Error);
    CHECK(models::listen(q8, features_of(0)).ctc_log_probabilities.size() == 0);
    CHECK(q8.speller.ih.quantized());
    CHECK(q8.embedding.quantized());
    CHECK(q8.listener[1].forward.ih.quantized());
    CHECK_FALSE(q8.listener[0].forward.ih.quantized());   // a 26-wide input row is no whole Q8_0 block: f16
    const models::SpeechRecognizer& f32 = f32_model();
    const gguf::File& expected = expected_file();
    const int utterances = int(expected.get_u32("expected.utterances"));
    int same = 0, must_agree = 0;
    double largest_error = 0;
    for (int i = 0; i < utterances; ++i) {
        CAPTURE(i);
        const Matrix features = features_of(i);
        const models::SpeechEncoded encoded_q8 = models::listen(q8, features), encoded_f32 = models::listen(f32, features);
        const models::SpeechDecoder quantized(q8, encoded_q8), reference(f32, encoded_f32);
        const int S = rows(encoded_q8.annotations);
        for (int beam : {1, 3}) {
            const decode::Hypothesis h = decode::search(quantized, models::speech_search_options(beam));
            CHECK(int(h.tokens.size()) <= decode::max_target_length(models::speech_search_options(beam), S));
            check_rows_are_distributions(h, S);
        }
        const std::vector<int32_t> greedy_ids = expected.get_i32_array(utterance(i) + "greedy_ids");
        const std::vector<int32_t> tokens = decode::search(quantized, models::speech_search_options()).tokens;
        same += tokens == greedy_ids;
        // Where the Q8_0 logits stay within half of the f32 top-2 margin on every greedy step, the Q8_0 greedy
        // output cannot differ (test_support.hpp's greedy_margin). The f32 engine stands in for PyTorch: it
        // reproduces PyTorch's greedy characters (the test above).
        const test::GreedyMargin bound = test::greedy_margin(reference, quantized, greedy_ids);
        CAPTURE(bound.margin);
        CAPTURE(bound.error);
        largest_error = std::max(largest_error, bound.error);
        if (bound.tokens_must_agree()) {
            ++must_agree;
            CHECK(tokens == greedy_ids);
        }
    }
    MESSAGE("Q8_0 greedy outputs equal to PyTorch's: " << same << " of " << utterances << " (" << must_agree
                                                       << " guaranteed by their logit margins; largest logit error "
                                                       << largest_error << ")");
    CHECK(largest_error > 0.0);   // the Q8_0 weights are really used
    // The fixture memorized its transcripts, so its margins are wide: most inputs must be guaranteed (a Q8_0 path
    // that is wrong, not merely rounded, moves logits by far more than the margins).
    CHECK(must_agree >= 6);
    CHECK(same >= must_agree);
}

TEST_CASE("speech recognizer: files of another kind or shape are refused with a clear message") {
    // Another model, the expected-output sidecar, a missing file.
    CHECK_THROWS_WITH_AS(models::load_speech_recognizer(gguf::File::open(test::source_path("tests/fixtures/rnn/additive.gguf"))),
                         doctest::Contains("not a speech recognizer"), Error);
    CHECK_THROWS_WITH_AS(models::load_speech_recognizer(expected_file()), doctest::Contains("attnlab.fixture"), Error);
    CHECK_THROWS_AS(gguf::File::open(fixture("no-such-file.gguf")), Error);

    const std::vector<uint8_t> bytes = read_bytes(fixture("las.gguf"));
    REQUIRE_NOTHROW(models::load_speech_recognizer(gguf::File::from_bytes(bytes)));
    {
        std::vector<uint8_t> missing = bytes;
        rename_tensor(missing, "attn.W_f.weight", "attn.W_x.weight");
        CHECK_THROWS_WITH_AS(models::load_speech_recognizer(gguf::File::from_bytes(missing)),
                             doctest::Contains("attn.W_f.weight"), Error);
    }
    {   // A CTC head without its bias is refused by name (ctc.weight alone is no head the search could use).
        std::vector<uint8_t> half_head = bytes;
        rename_tensor(half_head, "ctc.bias", "ctc.bia_");
        CHECK_THROWS_WITH_AS(models::load_speech_recognizer(gguf::File::from_bytes(half_head)),
                             doctest::Contains("ctc.bias"), Error);
    }
    {
        std::vector<uint8_t> no_scale = bytes;
        rename_tensor(no_scale, "feature_scale", "feature_scalf");
        CHECK_THROWS_WITH_AS(models::load_speech_recognizer(gguf::File::from_bytes(no_scale)),
                             doctest::Contains("feature_scale"), Error);
    }
    {   // Sizes that disagree with the tensors: refused at the first tensor of the wrong shape.
        std::vector<uint8_t> wrong = bytes;
        patch_metadata(wrong, "attnlab.las.attention_size", uint32_t{48});
        CHECK_THROWS_WITH_AS(models::load_speech_recognizer(gguf::File::from_bytes(wrong)),
                             doctest::Contains("attn.W_q.weight"), Error);
        wrong = bytes;
        patch_metadata(wrong, "attnlab.las.encoder_hidden_size", uint32_t{32});
        CHECK_THROWS_WITH_AS(models::load_speech_recognizer(gguf::File::from_bytes(wrong)),
                             doctest::Contains("listener.0"), Error);
        wrong = bytes;
        patch_metadata(wrong, "attnlab.las.location_width", uint32_t{8});
        CHECK_THROWS_WITH_AS(models::load_speech_recognizer(gguf::File::from_bytes(wrong)), doctest::Contains("odd"),
                             Error);
    }
    {   // A character table that disagrees with vocab_size, a listener the engine does not have, a zero size.
        std::vector<uint8_t> wrong = bytes;
        patch_metadata(wrong, "attnlab.las.vocab_size", uint32_t{31});
        CHECK_THROWS_WITH_AS(models::load_speech_recognizer(gguf::File::from_bytes(wrong)),
                             doctest::Contains("character table"), Error);
        for (uint32_t reduction : {0u, 1u, 6u, 16u}) {   // not 2^L for L = 1..kMaxSpeechListenerLayers
            CAPTURE(reduction);
            wrong = bytes;
            patch_metadata(wrong, "attnlab.las.time_reduction", reduction);
            const std::string message = reduction == 0 ? "time_reduction" : "reduces time by " + std::to_string(reduction);
            CHECK_THROWS_WITH_AS(models::load_speech_recognizer(gguf::File::from_bytes(wrong)),
                                 doctest::Contains(message.c_str()), Error);
        }
        wrong = bytes;   // three layers' reduction for a file of two: its third layer is missing
        patch_metadata(wrong, "attnlab.las.time_reduction", uint32_t{8});
        CHECK_THROWS_WITH_AS(models::load_speech_recognizer(gguf::File::from_bytes(wrong)),
                             doctest::Contains("listener.2"), Error);
        wrong = bytes;   // one layer's: the file's second would be left unread
        patch_metadata(wrong, "attnlab.las.time_reduction", uint32_t{2});
        CHECK_THROWS_WITH_AS(models::load_speech_recognizer(gguf::File::from_bytes(wrong)),
                             doctest::Contains("more listener layers"), Error);
        wrong = bytes;
        patch_metadata(wrong, "attnlab.las.frame_rate", uint32_t{0});
        CHECK_THROWS_WITH_AS(models::load_speech_recognizer(gguf::File::from_bytes(wrong)),
                             doctest::Contains("frame_rate"), Error);
    }
    {   // The language model: sizes that disagree with its tensors, a missing tensor, a weight out of range.
        const std::vector<uint8_t> with_lm = read_bytes(fixture("las-lm.gguf"));
        std::vector<uint8_t> wrong = with_lm;
        patch_metadata(wrong, "attnlab.las.lm_hidden_size", uint32_t{25});
        CHECK_THROWS_WITH_AS(models::load_speech_recognizer(gguf::File::from_bytes(wrong)), doctest::Contains("lm.gru"),
                             Error);
        wrong = with_lm;
        rename_tensor(wrong, "lm.embed.weight", "lm.embex.weight");
        CHECK_THROWS_WITH_AS(models::load_speech_recognizer(gguf::File::from_bytes(wrong)),
                             doctest::Contains("lm.embed.weight"), Error);
        for (float bad : {-1.0f, 2.5f, std::numeric_limits<float>::quiet_NaN()}) {
            CAPTURE(bad);
            wrong = with_lm;
            patch_metadata(wrong, "attnlab.las.lm_weight", bad);
            CHECK_THROWS_WITH_AS(models::load_speech_recognizer(gguf::File::from_bytes(wrong)),
                                 doctest::Contains("lm_weight must be between 0 and 2"), Error);
        }
    }
    // Truncated copies.
    for (std::size_t keep : {std::size_t(0), std::size_t(100), bytes.size() / 2, bytes.size() - 1}) {
        CAPTURE(keep);
        CHECK_THROWS_AS(models::load_speech_recognizer(gguf::File::from_bytes(std::vector<uint8_t>(bytes.begin(), bytes.begin() + keep))),
                        Error);
    }
}

TEST_CASE("speech recognizer: too short or malformed features are refused, and the shortest input transcribes") {
    const models::SpeechRecognizer& model = f32_model();
    const Matrix features = features_of(1);
    for (int frames : {0, 1, 3}) {
        CAPTURE(frames);
        const Matrix cut = xt::view(features, xt::range(0, frames), xt::all());
        CHECK_THROWS_WITH_AS(models::listen(model, cut), doctest::Contains("too short"), Error);
    }
    REQUIRE(models::min_speech_frames(model.config) == 4);
    const Matrix shortest = xt::view(features, xt::range(0, models::min_speech_frames(model.config)), xt::all());
    const models::SpeechEncoded encoded = models::listen(model, shortest);
    REQUIRE(rows(encoded.annotations) == 1);
    const models::SpeechDecoder decoder(model, encoded);
    const decode::Hypothesis h = decode::search(decoder, models::speech_search_options(3));
    CHECK(int(h.tokens.size()) <= decode::max_target_length(models::speech_search_options(3), 1));
    check_rows_are_distributions(h, 1);

    CHECK_THROWS_WITH_AS(models::listen(model, Matrix::from_shape({20, 12})), doctest::Contains("13"), Error);
    Matrix with_nan = features;
    with_nan(5, 3) = std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_WITH_AS(models::listen(model, with_nan), doctest::Contains("NaN"), Error);
    Matrix with_inf = features;
    with_inf(0, 0) = std::numeric_limits<float>::infinity();
    CHECK_THROWS_AS(models::listen(model, with_inf), Error);
}

TEST_CASE("speech recognizer: a listener of three layers matches PyTorch (annotations, greedy and beam-3 search)") {
    const models::SpeechRecognizer model = models::load_speech_recognizer(gguf::File::open(fixture("las-3.gguf")));
    const gguf::File expected = gguf::File::open(fixture("las-3.expected.gguf"));
    REQUIRE(model.listener.size() == 3);
    CHECK(model.config.time_reduction == 8);
    CHECK(models::annotation_seconds(model.config) == doctest::Approx(0.08));
    const int E2 = 2 * model.config.encoder_hidden;

    const Matrix probe_features = expected.load_f32<2>(utterance(0) + "features", {-1, 13});
    const models::SpeechEncoded probe = models::listen(model, probe_features);
    const int probe_S = rows(probe_features) / 8;
    const Matrix annotations = expected.load_f32<2>("probe.annotations", {probe_S, E2});
    REQUIRE(probe.annotations.shape() == annotations.shape());
    const std::vector<float> s0 = expected.load_f32_flat("probe.s0");
    const double annotation_error = max_abs_diff(probe.annotations.data(), annotations.data(), annotations.size());
    const double s0_error = max_abs_diff(probe.initial_state.data(), s0.data(), s0.size());

    const int utterances = int(expected.get_u32("expected.utterances"));
    decode::SearchOptions beam = models::speech_search_options(int(expected.get_u32("expected.beam")));
    beam.length_penalty = expected.get_f32("expected.alpha");
    double attention_error = 0;
    int learned = 0;
    for (int i = 0; i < utterances; ++i) {
        const std::string p = utterance(i);
        CAPTURE(i);
        const Matrix features = expected.load_f32<2>(p + "features", {-1, 13});
        const models::SpeechEncoded encoded = models::listen(model, features);
        const int S = rows(encoded.annotations);
        CHECK(S == rows(features) / 8);
        const models::SpeechDecoder decoder(model, encoded);
        const decode::Hypothesis greedy = decode::search(decoder, models::speech_search_options());
        REQUIRE(greedy.tokens == expected.get_i32_array(p + "greedy_ids"));
        const std::string transcript = expected.get_string(p + "transcript");
        learned += !transcript.empty() && models::spell(model, greedy.tokens) == transcript;
        const int L = int(greedy.tokens.size());
        const Matrix attention = expected.load_f32<2>(p + "greedy_attention", {L, S});
        for (int t = 0; t < L; ++t)
            attention_error = std::max(attention_error, max_abs_diff(greedy.attention[t].data(), attention.data() + std::size_t(t) * S, S));
        CHECK(decode::search(decoder, beam).tokens == expected.get_i32_array(p + "beam_ids"));
    }
    MESSAGE("three listener layers, max |engine - PyTorch|: annotations " << annotation_error << ", s0 " << s0_error
                                                                          << ", greedy attention " << attention_error);
    CHECK(annotation_error < 1e-4);
    CHECK(s0_error < 1e-4);
    CHECK(attention_error < 1e-4);
    CHECK(learned == 6);   // the fixture spells its six transcripts

    const Matrix seven = xt::view(probe_features, xt::range(0, 7), xt::all());
    CHECK_THROWS_WITH_AS(models::listen(model, seven), doctest::Contains("needs at least 8"), Error);
    const Matrix eight = xt::view(probe_features, xt::range(0, 8), xt::all());
    CHECK(rows(models::listen(model, eight).annotations) == 1);
}
