#include "attnlab/models/speech_recognizer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "attnlab/decode/batched.hpp"
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

// 0.3 as "0.3", not std::to_string's "0.300000".
std::string format_weight(float weight) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", static_cast<double>(weight));
    return text;
}

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
    int layers = 0;   // log2 time_reduction, where that is a depth the engine's listener can have
    for (int n = 1; n <= kMaxSpeechListenerLayers; ++n)
        if (1 << n == c.time_reduction) layers = n;
    check(layers > 0,
          "this speech model reduces time by " + std::to_string(c.time_reduction) + "; the engine's listener has 1 to " +
              std::to_string(kMaxSpeechListenerLayers) + " pair-stacking layers, each halving it (2 to " +
              std::to_string(1 << kMaxSpeechListenerLayers) + ")");

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
    for (int layer = 0; layer < layers; ++layer)
        model.listener.push_back(nn::load_bigru(file, "listener." + std::to_string(layer),
                                                layer == 0 ? 2 * c.feature_size : 2 * memory, E));
    check(!file.has_tensor("listener." + std::to_string(layers) + ".weight_ih_l0"),
          "the speech model has more listener layers than its time_reduction (" + std::to_string(c.time_reduction) +
              ") says");
    model.init = nn::load_linear(file, "init", memory, H);
    model.embedding = nn::load_linear_tensors(file, "embed.weight", "", c.embedding, c.vocab);
    model.attention = nn::load_location_attention(file, "attn", H, memory, c.attention_dim, c.location_filters,
                                                  c.location_width);
    model.speller = nn::load_gru_cell(file, "speller", c.embedding + memory, H);
    model.deep_output = nn::load_linear(file, "deep_out", H + memory + c.embedding, c.embedding);
    model.output = nn::load_linear(file, "out", c.embedding, c.vocab);
    model.has_ctc = file.has_tensor("ctc.weight");
    if (model.has_ctc) {
        model.ctc = nn::load_linear(file, "ctc", memory, c.vocab);
        model.ctc_weight = file.has(p + "ctc_weight") ? file.get_f32(p + "ctc_weight") : kDefaultSpeechCtcWeight;
        check(model.ctc_weight >= 0.0f && model.ctc_weight <= 1.0f,
              "the speech model's ctc_weight must be between 0 and 1, got " + std::to_string(model.ctc_weight));
        check(model.pad >= 0, "the speech model has a CTC head but no '<pad>' entry, its blank");
    }
    model.has_lm = file.has_tensor("lm.out.weight");
    if (model.has_lm) {
        c.lm_embedding = metadata_size(file, p + "lm_embedding_size");
        c.lm_hidden = metadata_size(file, p + "lm_hidden_size");
        model.lm_embedding = nn::load_linear_tensors(file, "lm.embed.weight", "", c.lm_embedding, c.vocab);
        model.lm_gru = nn::load_gru_cell(file, "lm.gru", c.lm_embedding, c.lm_hidden, "_l0");
        model.lm_output = nn::load_linear(file, "lm.out", c.lm_hidden, c.vocab);
        model.lm_weight = file.has(p + "lm_weight") ? file.get_f32(p + "lm_weight") : 0.0f;
        check(model.lm_weight >= 0.0f && model.lm_weight <= kMaxSpeechLmWeight,
              "the speech model's lm_weight must be between 0 and " + format_weight(kMaxSpeechLmWeight) + ", got " +
                  format_weight(model.lm_weight));
    }
    return model;
}

double annotation_seconds(const SpeechRecognizerConfig& config) {
    return static_cast<double>(config.time_reduction) / static_cast<double>(config.frame_rate);
}

int min_speech_frames(const SpeechRecognizerConfig& config) {
    return config.time_reduction;
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
    const int fewest = min_speech_frames(c);
    check(T >= fewest, "the utterance is too short to transcribe: " + std::to_string(T) + " feature frames, " +
                           "the listener needs at least " + std::to_string(fewest) + " (" +
                           std::to_string(fewest * 1000 / c.frame_rate) + " ms)");
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
    if (model.has_ctc) {
        const int S = rows(encoded.annotations);
        encoded.ctc_log_probabilities = Matrix::from_shape({static_cast<std::size_t>(S), static_cast<std::size_t>(c.vocab)});
        nn::linear(model.ctc, encoded.annotations.data(), S, encoded.ctc_log_probabilities.data());
        kernels::log_softmax_rows(S, c.vocab, encoded.ctc_log_probabilities.data(), c.vocab);
    }
    return encoded;
}

std::vector<float> first_weights(const SpeechEncoded& encoded) {
    std::vector<float> weights(encoded.annotations.shape()[0], 0.0f);
    if (!weights.empty()) weights[0] = 1.0f;
    return weights;
}

void speech_step(const SpeechRecognizer& model, const SpeechEncoded& encoded, int32_t token, const float* state,
                 const float* previous_weights, float* next_state, decode::StepOutput& out) {
    nn::LocationAttentionResult attention = nn::location_attend(model.attention, encoded.keys, state, previous_weights,
                                                                encoded.annotations, nullptr);
    gru_deep_output_step(model.embedding, model.speller, model.deep_output, model.output, token, attention.context,
                         state, model.config.decoder_hidden, next_state, out.logits);
    out.weights.assign(attention.weights.begin(), attention.weights.end());
    out.scores.assign(attention.scores.begin(), attention.scores.end());
    out.context.assign(attention.context.begin(), attention.context.end());
}

void speech_lm_step(const SpeechRecognizer& model, int32_t token, const float* state, float* next_state,
                    float* log_probabilities) {
    check(model.has_lm, "speech_lm_step: the model has no language model");
    std::vector<float> embedded(static_cast<std::size_t>(model.config.lm_embedding));
    embedding_row(model.lm_embedding, token, embedded.data());
    nn::gru_step(model.lm_gru, embedded.data(), state, next_state);
    nn::linear(model.lm_output, next_state, 1, log_probabilities);
    kernels::log_softmax_rows(1, model.config.vocab, log_probabilities, model.config.vocab);
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

float speech_ctc_weight(const SpeechRecognizer& model, float requested) {
    if (requested == -1.0f) return model.ctc_weight;
    check(requested >= 0.0f && requested <= 1.0f,
          "ctc weight must be between 0 and 1 (or -1 for the model's), got " + format_weight(requested),
          ErrorKind::options);
    check(requested == 0.0f || model.has_ctc,
          "this speech model has no CTC head: it decodes with attention only (ctc weight 0)", ErrorKind::options);
    return requested;
}

float speech_lm_weight(const SpeechRecognizer& model, float requested) {
    if (requested == -1.0f) return model.lm_weight;
    check(requested >= 0.0f && requested <= kMaxSpeechLmWeight,
          "lm weight must be between 0 and " + format_weight(kMaxSpeechLmWeight) + " (or -1 for the model's), got " +
              format_weight(requested),
          ErrorKind::options);
    check(requested == 0.0f || model.has_lm,
          "this speech model has no language model: it decodes without one (lm weight 0)", ErrorKind::options);
    return requested;
}

namespace {

constexpr double kNoPath = -std::numeric_limits<double>::infinity();

// log(e^a + e^b), exact where one side is -inf (numpy's logaddexp, which the Python twin uses).
double log_add(double a, double b) {
    if (a == kNoPath) return b;
    if (b == kNoPath) return a;
    return a > b ? a + std::log1p(std::exp(b - a)) : b + std::log1p(std::exp(a - b));
}

// A prefix's CTC forward variables over the S frames: r^n_t (its alignments to frame t end in its last character)
// and r^b_t (they end in blank), and log p_ctc(prefix...).
struct CtcPrefix {
    std::vector<double> ending_in_label, ending_in_blank;
    double score = 0.0;
};

// Every one-character extension of `prefix` (`length` characters, the last one `last`): prefix_scores[c] and the
// extensions' forward variables in labels/blanks [V × S], for the c with extend[c]; the others are left alone.
void extend_ctc_prefix(const Matrix& log_probabilities, int blank, const CtcPrefix& prefix, int length, int32_t last,
                       const std::vector<char>& extend, std::vector<double>& prefix_scores,
                       std::vector<double>& labels, std::vector<double>& blanks) {
    const int S = rows(log_probabilities), V = cols(log_probabilities);
    const float* x = log_probabilities.data();
    std::vector<double> either(static_cast<std::size_t>(S));
    for (int t = 0; t < S; ++t) either[t] = log_add(prefix.ending_in_label[t], prefix.ending_in_blank[t]);
    // The new character needs length + 1 frames: before frame `length` both variables stay -inf (log_add of -inf
    // is exact, so starting there changes nothing).
    const int first = std::max(1, length);
    for (int c = 0; c < V; ++c) {
        if (!extend[c]) continue;
        double* n = labels.data() + static_cast<std::size_t>(c) * S;
        double* b = blanks.data() + static_cast<std::size_t>(c) * S;
        // A repeated character needs a blank between the two: only the prefix's alignments ending in blank lead on.
        const std::vector<double>& phi = c == last ? prefix.ending_in_blank : either;
        n[0] = length == 0 ? static_cast<double>(x[c]) : kNoPath;
        b[0] = kNoPath;
        double score = n[0];
        for (int t = 1; t < first && t < S; ++t) n[t] = b[t] = kNoPath;
        for (int t = first; t < S; ++t) {
            const double label = x[static_cast<std::size_t>(t) * V + c];
            n[t] = log_add(n[t - 1], phi[t - 1]) + label;
            b[t] = log_add(b[t - 1], n[t - 1]) + static_cast<double>(x[static_cast<std::size_t>(t) * V + blank]);
            score = log_add(score, phi[t - 1] + label);
        }
        prefix_scores[c] = score;
    }
}

// The language model's state after a prefix: g [lm_hidden] and log p_lm(next character) [V].
struct LmPrefix {
    std::vector<float> state, log_probabilities;
};

std::shared_ptr<const LmPrefix> extend_lm_prefix(const SpeechRecognizer& model, const LmPrefix* prefix, int32_t token) {
    auto next = std::make_shared<LmPrefix>();
    next->state.resize(static_cast<std::size_t>(model.config.lm_hidden));
    next->log_probabilities.resize(static_cast<std::size_t>(model.config.vocab));
    const std::vector<float> zeros(prefix ? 0 : static_cast<std::size_t>(model.config.lm_hidden), 0.0f);
    speech_lm_step(model, token, prefix ? prefix->state.data() : zeros.data(), next->state.data(),
                   next->log_probabilities.data());
    return next;
}

// The joint search's ranking (decode::BeamSearch's scorer): a candidate's score is
//   (1 − λ) Σ log p_att + λ log p_ctc(prefix) + β Σ log p_lm
// in double, from the CTC forward variables and the LM state each live row's prefix keeps (each only where its
// weight is > 0).
class JointScorer {
public:
    using Score = double;

    JointScorer(const SpeechRecognizer& model, const SpeechEncoded& encoded, float ctc_weight, float lm_weight)
        : model_(model), ctc_(encoded.ctc_log_probabilities), frames_(rows(encoded.ctc_log_probabilities)),
          lambda_(ctc_weight), attention_share_(1.0 - lambda_), beta_(lm_weight),
          extend_(static_cast<std::size_t>(model.config.vocab)) {
        std::shared_ptr<CtcPrefix> empty;
        if (lambda_ > 0.0) {
            empty = std::make_shared<CtcPrefix>();
            empty->ending_in_label.assign(static_cast<std::size_t>(frames_), kNoPath);
            empty->ending_in_blank.resize(static_cast<std::size_t>(frames_));
            double blanks_so_far = 0.0;
            for (int t = 0; t < frames_; ++t) {
                blanks_so_far += ctc_(t, model.pad);
                empty->ending_in_blank[t] = blanks_so_far;
            }
        }
        rows_.push_back({std::move(empty), beta_ > 0.0 ? extend_lm_prefix(model, nullptr, model.bos) : nullptr, 0, -1});
    }

    void score_row(int row, double row_score, const float* log_p, int vocab, double* scores) {
        const Row& prefix = rows_[static_cast<std::size_t>(row)];
        const double* ctc = lambda_ > 0.0 ? ctc_prefix_scores(row, log_p, vocab) : nullptr;
        const float* lm = beta_ > 0.0 ? prefix.lm->log_probabilities.data() : nullptr;
        for (int v = 0; v < vocab; ++v) {
            double gain = kNoPath;
            if (std::isfinite(log_p[v])) {
                gain = attention_share_ * log_p[v];
                if (ctc) gain += lambda_ * (ctc[v] - prefix.ctc->score);
                if (lm) gain += beta_ * lm[v];
            }
            scores[v] = row_score + gain;
        }
    }

    void select(const int32_t* parents, const int32_t* tokens, int count) {
        const std::ptrdiff_t S = frames_;
        next_rows_.clear();
        for (int i = 0; i < count; ++i) {
            const std::size_t parent = static_cast<std::size_t>(parents[i]);
            const int32_t token = tokens[i];
            std::shared_ptr<CtcPrefix> ctc;
            if (lambda_ > 0.0) {
                ctc = std::make_shared<CtcPrefix>();
                const auto label_row = labels_[parent].begin() + static_cast<std::ptrdiff_t>(token) * S;
                const auto blank_row = blanks_[parent].begin() + static_cast<std::ptrdiff_t>(token) * S;
                ctc->ending_in_label.assign(label_row, label_row + S);
                ctc->ending_in_blank.assign(blank_row, blank_row + S);
                ctc->score = prefix_scores_[parent][static_cast<std::size_t>(token)];
            }
            auto lm = beta_ > 0.0 ? extend_lm_prefix(model_, rows_[parent].lm.get(), token) : nullptr;
            next_rows_.push_back({std::move(ctc), std::move(lm), rows_[parent].length + 1, token});
        }
        rows_.swap(next_rows_);
    }

private:
    // log p_ctc(prefix + c) [V] for live row `row` (EOS: the whole sequence's), and the extensions' forward
    // variables, kept for select().
    const double* ctc_prefix_scores(int row, const float* log_p, int vocab) {
        const int S = frames_;
        if (prefix_scores_.size() < rows_.size()) {
            prefix_scores_.resize(rows_.size());
            labels_.resize(rows_.size());
            blanks_.resize(rows_.size());
        }
        const Row& prefix = rows_[static_cast<std::size_t>(row)];
        std::vector<double>& prefix_scores = prefix_scores_[static_cast<std::size_t>(row)];
        for (int v = 0; v < vocab; ++v) extend_[v] = std::isfinite(log_p[v]) && v != model_.eos;
        prefix_scores.assign(static_cast<std::size_t>(vocab), kNoPath);
        labels_[static_cast<std::size_t>(row)].resize(static_cast<std::size_t>(vocab) * S);
        blanks_[static_cast<std::size_t>(row)].resize(static_cast<std::size_t>(vocab) * S);
        extend_ctc_prefix(ctc_, model_.pad, *prefix.ctc, prefix.length, prefix.last, extend_, prefix_scores,
                          labels_[static_cast<std::size_t>(row)], blanks_[static_cast<std::size_t>(row)]);
        // EOS: the CTC probability of the whole sequence.
        prefix_scores[static_cast<std::size_t>(model_.eos)] =
            S > 0 ? log_add(prefix.ctc->ending_in_label[S - 1], prefix.ctc->ending_in_blank[S - 1]) : kNoPath;
        return prefix_scores.data();
    }

    struct Row {
        std::shared_ptr<const CtcPrefix> ctc;  // null where λ = 0
        std::shared_ptr<const LmPrefix> lm;  // null where β = 0
        int length;    // the prefix's characters
        int32_t last;  // its last one (-1: none)
    };
    const SpeechRecognizer& model_;
    const Matrix& ctc_;  // [S, V] log p
    int frames_;         // S
    double lambda_, attention_share_, beta_;
    std::vector<Row> rows_, next_rows_;
    // This step's, per row: prefix_scores [V] and the extensions' forward variables [V × S].
    std::vector<std::vector<double>> prefix_scores_, labels_, blanks_;
    std::vector<char> extend_;
};

}  // namespace

decode::Hypothesis joint_search(const SpeechRecognizer& model, const SpeechEncoded& encoded,
                                const decode::SearchOptions& options, float ctc_weight, float lm_weight) {
    check(ctc_weight >= 0.0f && ctc_weight <= 1.0f, "joint_search: the CTC weight must be in [0, 1]");
    check(lm_weight >= 0.0f && lm_weight <= kMaxSpeechLmWeight, "joint_search: the LM weight must be in [0, " +
                                                                     format_weight(kMaxSpeechLmWeight) + "]");
    check(ctc_weight > 0.0f || lm_weight > 0.0f, "joint_search: the CTC weight or the LM weight must be > 0");
    check(ctc_weight == 0.0f || (model.has_ctc && encoded.ctc_log_probabilities.size() > 0),
          "joint_search: the model has no CTC head");
    check(lm_weight == 0.0f || model.has_lm, "joint_search: the model has no language model");
    const SpeechDecoder decoder(model, encoded);
    return decode::beam_search_scored(decoder, options, JointScorer(model, encoded, ctc_weight, lm_weight));
}

decode::Hypothesis recognize(const SpeechRecognizer& model, const SpeechEncoded& encoded, int beam, float ctc_weight,
                             float lm_weight, bool record_tree) {
    decode::SearchOptions options = speech_search_options(beam);
    options.record_tree = record_tree;
    if (ctc_weight > 0.0f || lm_weight > 0.0f) return joint_search(model, encoded, options, ctc_weight, lm_weight);
    const SpeechDecoder decoder(model, encoded);
    return decode::search(decoder, options);
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
