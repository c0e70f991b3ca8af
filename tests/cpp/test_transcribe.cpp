// Model::transcribe and transcribe_features (attnlab.hpp) on the speech fixture
// (python/attnlab/golden/speech.py -> tests/fixtures/speech/): the API gives the model's own greedy and beam
// characters with their attention, runs the front end on audio, and refuses what it cannot transcribe.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attnlab/attnlab.hpp"
#include "attnlab/audio/features.hpp"
#include "attnlab/audio/wav.hpp"
#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "test_support.hpp"

using namespace attnlab;
using doctest::Contains;

namespace {

const Model& speech_model() {
    static const Model model = Model::open(test::source_path("tests/fixtures/speech/las.gguf"));
    return model;
}

const gguf::File& expected_file() {
    static const gguf::File file = gguf::File::open(test::source_path("tests/fixtures/speech/las.expected.gguf"));
    return file;
}

std::vector<float> sine(int sample_rate, double seconds) {
    std::vector<float> out(static_cast<std::size_t>(sample_rate * seconds));
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = 0.3f * float(std::sin(2 * M_PI * 440.0 * i / sample_rate));
    return out;
}

}  // namespace

TEST_CASE("transcribe_features: the fixture's greedy and beam characters, with one attention row per character") {
    const Model& model = speech_model();
    CHECK(model.task() == "transcribe");
    const gguf::File& expected = expected_file();
    const int utterances = int(expected.get_u32("expected.utterances"));
    REQUIRE(utterances > 0);
    for (int i = 0; i < utterances; ++i) {
        const std::string p = "utterance." + std::to_string(i) + ".";
        CAPTURE(i);
        const Matrix features = expected.load_f32<2>(p + "features", {-1, 13});
        const int T = int(features.shape()[0]);
        // The file has a CTC head: by default its weight (expected.ctc_weight) takes part, at every beam.
        const Transcription joint = model.transcribe_features(features.data(), T, 13);
        CHECK(joint.ids == expected.get_i32_array(p + "joint_greedy_ids"));
        CHECK(joint.ctc_weight == expected.get_f32("expected.ctc_weight"));
        TranscribeOptions attention_only;
        attention_only.ctc_weight = 0.0f;
        const Transcription greedy = model.transcribe_features(features.data(), T, 13, attention_only);
        CHECK(greedy.ctc_weight == 0.0f);
        CHECK(greedy.ids == expected.get_i32_array(p + "greedy_ids"));
        CHECK(greedy.text == expected.get_string(p + "greedy_text"));
        REQUIRE(greedy.characters.size() == greedy.ids.size());
        CHECK(greedy.frames == (T / 2) / 2);
        CHECK(greedy.frame_seconds == doctest::Approx(0.04));
        REQUIRE(greedy.attention.size() == greedy.ids.size() * std::size_t(greedy.frames));
        CHECK(greedy.scores.size() == greedy.attention.size());
        for (std::size_t c = 0; c < greedy.ids.size(); ++c) {
            double sum = 0;
            for (int j = 0; j < greedy.frames; ++j) sum += greedy.attention[c * greedy.frames + j];
            CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
        }
        CHECK(greedy.spectrogram_frames == 0);

        TranscribeOptions beam;
        beam.beam = int(expected.get_u32("expected.beam"));
        // The fixture's beam results were searched with length penalty expected.alpha = 1, the engine's default.
        REQUIRE(expected.get_f32("expected.alpha") == 1.0f);
        CHECK(model.transcribe_features(features.data(), T, 13, beam).ids == expected.get_i32_array(p + "joint_beam_ids"));
        beam.ctc_weight = 0.0f;
        CHECK(model.transcribe_features(features.data(), T, 13, beam).ids == expected.get_i32_array(p + "beam_ids"));
        beam.ctc_weight = 1.0f;
        CHECK(model.transcribe_features(features.data(), T, 13, beam).ids == expected.get_i32_array(p + "ctc_beam_ids"));
    }
}

TEST_CASE("transcribe: audio goes through the front end, and the spectrogram comes back for display") {
    const Model& model = speech_model();
    const audio::Audio wav = audio::read_wav(test::source_path("tests/fixtures/audio/speech.wav"));
    const Transcription t = model.transcribe(wav.samples.data(), wav.samples.size(), wav.sample_rate);
    const audio::Features features = audio::compute_features(wav.samples.data(), wav.samples.size(), wav.sample_rate);
    const int T = int(features.mfcc.shape()[0]);
    CHECK(t.frames == (T / 2) / 2);
    CHECK(t.spectrogram_frames == T);
    REQUIRE(t.spectrogram.size() == std::size_t(T) * 40);
    for (std::size_t k = 0; k < t.spectrogram.size(); ++k) REQUIRE(t.spectrogram[k] == features.log_mel.data()[k]);
    // The same features by hand give the same characters.
    CHECK(model.transcribe_features(features.mfcc.data(), T, 13).ids == t.ids);
    // Any supported rate: the 44.1 kHz copy of a tone transcribes without error and spans the same frames.
    const std::vector<float> tone16 = sine(16000, 0.5), tone44 = sine(44100, 0.5);
    CHECK(model.transcribe(tone44.data(), tone44.size(), 44100).frames ==
          model.transcribe(tone16.data(), tone16.size(), 16000).frames);
}

TEST_CASE("transcribe refuses what it cannot transcribe, with a message") {
    const Model& model = speech_model();
    const std::vector<float> half_second = sine(16000, 0.5);
    CHECK_THROWS_WITH_AS(model.transcribe(nullptr, 0, 16000), Contains("the audio is empty"), Error);
    const std::vector<float> ten_ms = sine(16000, 0.01);
    CHECK_THROWS_WITH_AS(model.transcribe(ten_ms.data(), ten_ms.size(), 16000), Contains("the audio is too short: 10 ms"),
                         Error);
    const std::vector<float> long_audio(std::size_t(8000 * (kMaxTranscribeSeconds + 1)), 0.0f);
    CHECK_THROWS_WITH_AS(model.transcribe(long_audio.data(), long_audio.size(), 8000),
                         Contains("the audio is too long: 61 s, at most 60 s"), Error);
    std::vector<float> with_nan = half_second;
    with_nan[123] = std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_WITH_AS(model.transcribe(with_nan.data(), with_nan.size(), 16000), Contains("123"), Error);
    CHECK_THROWS_AS(model.transcribe(half_second.data(), half_second.size(), 96000), Error);
    CHECK_THROWS_WITH_AS(model.transcribe(half_second.data(), half_second.size(), 0),
                         Contains("the sample rate must be positive"), Error);
    TranscribeOptions zero_beam;
    zero_beam.beam = 0;
    CHECK_THROWS_WITH_AS(model.transcribe(half_second.data(), half_second.size(), 16000, zero_beam),
                         Contains("beam width must be between 1 and 64, got 0"), Error);
    for (float weight : {1.5f, -0.5f, std::numeric_limits<float>::quiet_NaN()}) {
        TranscribeOptions bad_weight;
        bad_weight.ctc_weight = weight;
        CHECK_THROWS_WITH_AS(model.transcribe(half_second.data(), half_second.size(), 16000, bad_weight),
                             Contains("ctc weight must be between 0 and 1"), Error);
    }
    // A file written without the CTC head decodes with attention alone and refuses a CTC weight, as an option.
    const Model attention_only = Model::open(test::source_path("tests/fixtures/speech/las.q8_0.gguf"));
    CHECK(attention_only.transcribe(half_second.data(), half_second.size(), 16000).ctc_weight == 0.0f);
    TranscribeOptions with_ctc;
    with_ctc.ctc_weight = 0.3f;
    bool refused = false;
    try {
        attention_only.transcribe(half_second.data(), half_second.size(), 16000, with_ctc);
    } catch (const Error& e) {
        refused = true;
        CHECK(std::string(e.what()).find("no CTC head") != std::string::npos);
        CHECK(e.kind() == ErrorKind::options);
    }
    CHECK(refused);
    const std::vector<float> twelve(13 * 10, 0.0f);
    CHECK_THROWS_WITH_AS(model.transcribe_features(twelve.data(), 10, 12),
                         Contains("reads 13 coefficients per frame, got 12"), Error);

    const Model translator = Model::open(test::source_path("tests/fixtures/rnn/additive.gguf"));
    CHECK_THROWS_WITH_AS(translator.transcribe(half_second.data(), half_second.size(), 16000),
                         Contains("cannot transcribe speech"), Error);
}

TEST_CASE("transcribe beam_tree: only when asked; its winning path spells the transcript, then </s>") {
    const Model& model = speech_model();
    const gguf::File& expected = expected_file();
    const Matrix features = expected.load_f32<2>("utterance.0.features", {-1, 13});
    const int T = int(features.shape()[0]);
    // λ 0 ranks by Σ log p (beam 1: the plain greedy search); the file's λ by the joint CTC/attention score.
    for (float ctc_weight : {0.0f, -1.0f}) {
        for (int beam : {1, 3}) {
            CAPTURE(ctc_weight);
            CAPTURE(beam);
            TranscribeOptions options;
            options.beam = beam;
            options.ctc_weight = ctc_weight;
            const Transcription plain = model.transcribe_features(features.data(), T, 13, options);
            CHECK(plain.beam_tree.nodes.empty());
            CHECK(plain.beam_tree.winner == -1);
            options.beam_tree = true;
            const Transcription t = model.transcribe_features(features.data(), T, 13, options);
            CHECK(t.ids == plain.ids);
            const BeamTree& tree = t.beam_tree;
            REQUIRE(tree.winner >= 0);
            std::vector<int32_t> ids;
            std::string spelled;
            bool ends = false;
            for (int n = tree.winner; n >= 0; n = tree.nodes.at(std::size_t(n)).parent) {
                const BeamNode& node = tree.nodes[std::size_t(n)];
                if (n == tree.winner && node.piece == "</s>") {
                    ends = true;
                    continue;
                }
                ids.insert(ids.begin(), node.id);
                spelled.insert(0, node.piece);
            }
            CHECK(ends == t.finished);
            CHECK(ids == t.ids);
            CHECK(spelled == t.text);
            const BeamNode& winner = tree.nodes[std::size_t(tree.winner)];
            CHECK(winner.finished);
            // cumulative is the attention decoder's Σ log p, whatever the search ranked by.
            CHECK(winner.cumulative == doctest::Approx(t.log_probability).epsilon(1e-5));
            // The winner has the best score among the finished hypotheses: the score is what the search ranked by.
            for (const BeamNode& node : tree.nodes)
                if (node.finished) CHECK(node.score <= winner.score);
            // The plain greedy search keeps one path; a wider beam keeps more than the winner's nodes.
            if (beam == 1 && t.ctc_weight == 0.0f) CHECK(tree.nodes.size() == t.ids.size() + (t.finished ? 1 : 0));
            if (beam > 1) CHECK(tree.nodes.size() > t.ids.size() + 1);
            if (t.ctc_weight > 0.0f) {
                // The joint score is not the attention's: (1 − λ) Σ log p_att + λ log p_ctc, ÷ length once finished.
                const float attention_only = (1.0f - t.ctc_weight) * winner.cumulative / float(winner.step + 1);
                CHECK(winner.score != doctest::Approx(attention_only).epsilon(1e-4));
            }
        }
    }
}
