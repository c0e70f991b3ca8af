#include "attnlab/models/speech_recognizer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/models/metadata.hpp"
#include "attnlab/models/rnn_seq2seq.hpp"

namespace attnlab::models {

namespace {

constexpr const char* kArchitecture = "attnlab.las";

struct SpeechState : decode::DecoderState {
    Vector s;                      // s_i [H]
    std::vector<float> weights;    // a_i [S]: the next step's location features read them
};

int find_character(const std::vector<std::string>& characters, const std::string& name) {
    const auto at = std::find(characters.begin(), characters.end(), name);
    return at == characters.end() ? -1 : static_cast<int>(at - characters.begin());
}

}  // namespace

SpeechRecognizer load_speech_recognizer(const gguf::File& file) {
    check_architecture(file, kArchitecture, "a speech recognizer");
    const std::string p = std::string(kArchitecture) + ".";
    SpeechRecognizer model;
    SpeechRecognizerConfig& c = model.config;
    c.feature_size = metadata_size(file, p + "feature_size");
    c.encoder_hidden = metadata_size(file, p + "encoder_hidden_size");
    c.decoder_hidden = metadata_size(file, p + "decoder_hidden_size");
    c.embedding = metadata_size(file, p + "embedding_size");
    c.attention_dim = metadata_size(file, p + "attention_size");
    c.location_filters = metadata_size(file, p + "location_filters");
    c.location_width = metadata_size(file, p + "location_width");
    c.vocab = metadata_size(file, p + "vocab_size");
    c.frame_rate = metadata_size(file, p + "frame_rate");
    c.time_reduction = metadata_size(file, p + "time_reduction");
    check(c.time_reduction == 1 << kSpeechListenerLayers,
          "this speech model reduces time by " + std::to_string(c.time_reduction) + "; the engine's listener (" +
              std::to_string(kSpeechListenerLayers) + " pair-stacking layers) reduces it by " +
              std::to_string(1 << kSpeechListenerLayers));

    model.characters = file.get_string_array(p + "characters");
    check(static_cast<int>(model.characters.size()) == c.vocab,
          "the speech model's character table has " + std::to_string(model.characters.size()) +
              " entries but vocab_size is " + std::to_string(c.vocab));
    model.pad = find_character(model.characters, "<pad>");
    model.unk = find_character(model.characters, "<unk>");
    model.bos = find_character(model.characters, "<s>");
    model.eos = find_character(model.characters, "</s>");
    check(model.bos >= 0 && model.eos >= 0, "the speech model's character table has no '<s>' or no '</s>' entry");
    for (int id : {model.pad, model.unk, model.bos})
        if (id >= 0) model.never_written.push_back(id);

    const int E = c.encoder_hidden, H = c.decoder_hidden, memory = 2 * E;
    model.feature_scale = nn::load_vector(file, "feature_scale", c.feature_size);
    for (float scale : model.feature_scale)
        check(std::isfinite(scale) && scale > 0, "the speech model's feature_scale must be positive and finite");
    model.listener[0] = nn::load_bigru(file, "listener.0", 2 * c.feature_size, E);
    model.listener[1] = nn::load_bigru(file, "listener.1", 2 * memory, E);
    model.init = nn::load_linear(file, "init", memory, H);
    model.embedding = nn::load_linear_tensors(file, "embed.weight", "", c.embedding, c.vocab);
    model.attention = nn::load_location_attention(file, "attn", H, memory, c.attention_dim, c.location_filters,
                                                  c.location_width);
    model.speller = nn::load_gru_cell(file, "speller", c.embedding + memory, H);
    model.deep_output = nn::load_linear(file, "deep_out", H + memory + c.embedding, c.embedding);
    model.output = nn::load_linear(file, "out", c.embedding, c.vocab);
    return model;
}

double annotation_seconds(const SpeechRecognizerConfig& config) {
    return static_cast<double>(config.time_reduction) / static_cast<double>(config.frame_rate);
}

Matrix normalize_features(const SpeechRecognizer& model, const Matrix& features) {
    const int F = model.config.feature_size;
    check(features.dimension() == 2 && cols(features) == F,
          "the speech features must be [frames, " + std::to_string(F) + "], got " + std::to_string(cols(features)) +
              " coefficients per frame");
    const int T = rows(features);
    for (float x : features) check(std::isfinite(x), "the speech features hold NaN or infinity");
    // The mean in double: the frames' sum loses nothing, and (x - mean) / scale then rounds like PyTorch's.
    std::vector<double> sum(static_cast<std::size_t>(F), 0.0);
    for (int t = 0; t < T; ++t)
        for (int f = 0; f < F; ++f) sum[f] += features(t, f);
    Matrix out = Matrix::from_shape(features.shape());
    for (int f = 0; f < F; ++f) {
        const float mean = T > 0 ? static_cast<float>(sum[f] / T) : 0.0f;
        for (int t = 0; t < T; ++t) out(t, f) = (features(t, f) - mean) / model.feature_scale[f];
    }
    return out;
}

Matrix stack_frame_pairs(const Matrix& x) {
    const std::size_t pairs = x.shape()[0] / 2, width = x.shape()[1];
    Matrix out = Matrix::from_shape({pairs, 2 * width});
    // Rows 2t and 2t+1 are contiguous in row-major x: stacking them is copying the first 2·pairs rows.
    std::copy(x.data(), x.data() + pairs * 2 * width, out.data());
    return out;
}

SpeechEncoded listen(const SpeechRecognizer& model, const Matrix& features) {
    const SpeechRecognizerConfig& c = model.config;
    Matrix x = normalize_features(model, features);
    const int T = rows(x);
    check(T >= kMinSpeechFrames, "the utterance is too short to transcribe: " + std::to_string(T) + " feature frames, " +
                                     "the listener needs at least " + std::to_string(kMinSpeechFrames) + " (" +
                                     std::to_string(kMinSpeechFrames * 1000 / c.frame_rate) + " ms)");
    Matrix final_hidden;
    for (const nn::BiGRU& layer : model.listener) {
        nn::BiGRUOutput out = nn::bigru_forward(layer, stack_frame_pairs(x));
        x = std::move(out.outputs);
        final_hidden = std::move(out.final_hidden);
    }
    SpeechEncoded encoded;
    encoded.annotations = std::move(x);
    encoded.keys = nn::prepare_location_keys(model.attention, encoded.annotations);
    encoded.initial_state = Vector::from_shape({static_cast<std::size_t>(c.decoder_hidden)});
    // final_hidden rows are [→h_S ; ←h_1], contiguous: exactly init's input.
    nn::linear(model.init, final_hidden.data(), 1, encoded.initial_state.data());
    kernels::activate(encoded.initial_state.data(), encoded.initial_state.size(), kernels::Activation::tanh);
    return encoded;
}

std::vector<float> first_weights(const SpeechEncoded& encoded) {
    std::vector<float> weights(encoded.annotations.shape()[0], 0.0f);
    if (!weights.empty()) weights[0] = 1.0f;
    return weights;
}

void speech_step(const SpeechRecognizer& model, const SpeechEncoded& encoded, int32_t token, const float* state,
                 const float* previous_weights, float* next_state, decode::StepOutput& out) {
    const SpeechRecognizerConfig& c = model.config;
    const int memory = 2 * c.encoder_hidden;
    // x = [E[y_{i-1}] ; c_i] is the GRU input; the deep output reads [s_i ; c_i ; E[y_{i-1}]].
    std::vector<float> gru_input(static_cast<std::size_t>(c.embedding + memory));   // [emb + 2E]
    std::vector<float> deep_input(static_cast<std::size_t>(c.decoder_hidden + memory + c.embedding));
    float* embedded = gru_input.data();
    embedding_row(model.embedding, token, embedded);

    nn::LocationAttentionResult attention = nn::location_attend(model.attention, encoded.keys, state, previous_weights,
                                                                encoded.annotations, nullptr);
    std::copy(attention.context.begin(), attention.context.end(), gru_input.begin() + c.embedding);
    nn::gru_step(model.speller, gru_input.data(), state, next_state);

    std::copy(next_state, next_state + c.decoder_hidden, deep_input.begin());
    std::copy(attention.context.begin(), attention.context.end(), deep_input.begin() + c.decoder_hidden);
    std::copy(embedded, embedded + c.embedding, deep_input.begin() + c.decoder_hidden + memory);
    std::vector<float> t(static_cast<std::size_t>(c.embedding));  // [emb]
    nn::linear(model.deep_output, deep_input.data(), 1, t.data());
    kernels::activate(t.data(), t.size(), kernels::Activation::tanh);

    out.logits.resize(static_cast<std::size_t>(c.vocab));
    nn::linear(model.output, t.data(), 1, out.logits.data());
    out.weights.assign(attention.weights.begin(), attention.weights.end());
    out.scores.assign(attention.scores.begin(), attention.scores.end());
    out.context.assign(attention.context.begin(), attention.context.end());
}

decode::StatePtr SpeechDecoder::initial_state() const {
    auto state = std::make_shared<SpeechState>();
    state->s = encoded_.initial_state;
    state->weights = first_weights(encoded_);
    return state;
}

decode::StatePtr SpeechDecoder::step(const decode::DecoderState& state, int32_t token, decode::StepOutput& out) const {
    const auto& previous = static_cast<const SpeechState&>(state);
    auto next = std::make_shared<SpeechState>();
    next->s = Vector::from_shape({static_cast<std::size_t>(model_.config.decoder_hidden)});
    speech_step(model_, encoded_, token, previous.s.data(), previous.weights.data(), next->s.data(), out);
    next->weights = out.weights;
    for (int32_t id : model_.never_written) out.logits[static_cast<std::size_t>(id)] = -std::numeric_limits<float>::infinity();
    return next;
}

decode::SearchOptions speech_search_options(int beam) {
    decode::SearchOptions options;
    options.beam = beam;
    options.max_length_ratio = kSpeechMaxLengthRatio;
    options.max_length_extra = kSpeechMaxLengthExtra;
    return options;
}

std::string spell(const SpeechRecognizer& model, const std::vector<int32_t>& ids) {
    std::string text;
    for (int32_t id : ids) {
        check(id >= 0 && id < model.config.vocab,
              "character id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(model.config.vocab));
        if (id == model.pad || id == model.unk || id == model.bos || id == model.eos) continue;
        text += model.characters[static_cast<std::size_t>(id)];
    }
    return text;
}

}  // namespace attnlab::models
