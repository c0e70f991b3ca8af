#pragma once
// The speech recognizer: Listen, Attend and Spell with location-aware attention, as trained by
// nn/listen_attend_spell.py (whose docstring has the equations). One GGUF file ("attnlab.las", written by
// attnlab.gguf.speech) holds the weights, the sizes and the character table.
//
//   input:     MFCCs x [T, 13] at frame_rate (100) frames/s; x ← (x − mean_t x) / feature_scale    (CMN)
//   listener:  L pyramidal BiGRU layers (L = log2 time_reduction: 2 in the shipped model, 1 to 3 read); each
//              first stacks frame pairs [x_{2t} ; x_{2t+1}] (an odd count drops the last frame), so the annotations
//              h [S, 2E] come at frame_rate / time_reduction (25 with two layers) frames/s
//              s_0 = tanh(W_init [→h_S ; ←h_1] + b_init)                                      [H]
//   step i:    a_i = location_attend(s_{i-1}, h, a_{i-1})  (a_0 = one-hot on frame 0)  c_i = Σ_j a_ij h_j
//              s_i = GRU([E[y_{i-1}] ; c_i], s_{i-1})
//              t_i = tanh(W_t [s_i ; c_i ; E[y_{i-1}]] + b_t)                                 [emb]
//              logits_i = W_o t_i + b_o                                                         [V] characters
// The decoder state is (s_i, a_i): the location term reads the previous weights, so beam hypotheses carry both.
//   CTC head:  z_j = log_softmax(W_ctc h_j + b_ctc) [S, V] (blank = <pad>), optional in the file: joint_search
//              scores hypotheses by (1 − λ) log p_att + λ log p_ctc(prefix) (python/attnlab/nn/joint_decoding.py
//              has the recursion); a file without it decodes with attention alone.
//   LM:        a character language model (python/attnlab/nn/char_lm.py), optional in the file: g_0 = 0,
//              g_i = GRU(E_lm[y_{i-1}], g_{i-1}) (y_0 = <s>), log p_lm(y_i | y_<i) = log_softmax(W_lm g_i + b_lm);
//              the search adds β log p_lm to each candidate (shallow fusion).
#include <cstdint>
#include <string>
#include <vector>

#include "attnlab/decode/search.hpp"
#include "attnlab/nn/linear.hpp"
#include "attnlab/nn/location_attention.hpp"
#include "attnlab/nn/rnn.hpp"
#include "attnlab/tensor.hpp"

namespace attnlab::gguf {
class File;
}

namespace attnlab::models {

// Pair-stacking listener layers a file may have (python/attnlab/nn/listen_attend_spell.py's MAX_LISTENER_LAYERS):
// with three, one annotation per 80 ms, the output limit below still allows 25 characters a second.
constexpr int kMaxSpeechListenerLayers = 3;
// ListenAttendSpell.greedy's output limit: 2 characters per annotation (one per 20 ms with two listener layers)
// plus 10.
constexpr float kSpeechMaxLengthRatio = 2.0f;
constexpr int kSpeechMaxLengthExtra = 10;
// The joint search's CTC weight λ for a file that has the head but no attnlab.las.ctc_weight (the training default).
constexpr float kDefaultSpeechCtcWeight = 0.3f;
// The largest language-model weight β a search accepts: beyond it the LM, not the audio, writes the text.
constexpr float kMaxSpeechLmWeight = 2.0f;

struct SpeechRecognizerConfig {
    int feature_size = 0;      // MFCCs per input frame (13)
    int encoder_hidden = 0;    // E, per direction: annotations are 2E wide
    int decoder_hidden = 0;    // H
    int embedding = 0;         // emb
    int attention_dim = 0;     // A
    int location_filters = 0;  // K
    int location_width = 0;    // the location filters' width (odd)
    int vocab = 0;             // V: the characters, specials included
    int frame_rate = 0;        // input frames per second (100)
    int time_reduction = 0;    // input frames per annotation: 2^L for L pair-stacking listener layers
    int lm_embedding = 0;      // the language model's character embedding (0: the file has no LM)
    int lm_hidden = 0;         // its GRU's hidden size
};

struct SpeechRecognizer {
    SpeechRecognizerConfig config;
    Vector feature_scale;                                   // [feature_size], divides the mean-normalized MFCCs
    std::vector<nn::BiGRU> listener;                        // [L]: 2·feature_size -> 2E, then 4E -> 2E
    nn::Linear init;                                        // [H, 2E]
    nn::Linear embedding;                                   // [V, emb] as a table (rows are looked up; may be Q8_0)
    nn::LocationAttentionParams attention;                  // query s [H], keys h_j [2E]
    nn::GRUCell speller;                                    // input [emb + 2E], hidden H
    nn::Linear deep_output;                                 // [emb, H + 2E + emb]
    nn::Linear output;                                      // [V, emb] + b_o [V]
    bool has_ctc = false;                                   // the file holds the CTC head
    nn::Linear ctc;                                         // [V, 2E] + b [V]: the CTC head (when has_ctc)
    float ctc_weight = 0.0f;                                // λ the file decodes with (0 without the head)
    bool has_lm = false;                                    // the file holds the character language model
    nn::Linear lm_embedding;                                // [V, lm_embedding] as a table
    nn::GRUCell lm_gru;                                     // input lm_embedding, hidden lm_hidden
    nn::Linear lm_output;                                   // [V, lm_hidden] + b [V]
    float lm_weight = 0.0f;                                 // β the file decodes with (0 without the LM)
    std::vector<std::string> characters;                    // [V]: id -> "<pad>", "<unk>", "<s>", "</s>", " ", "'", "a".."z"
    int pad = -1, unk = -1, bos = -1, eos = -1;             // ids of the special entries (pad/unk: -1 if absent)
    std::vector<int32_t> never_written;                     // pad, unk, bos: the speller may end but never writes them
};

// Reads a model written by attnlab.gguf.speech; throws attnlab::Error on a file of another kind or shape.
SpeechRecognizer load_speech_recognizer(const gguf::File& file);

// Seconds of audio one annotation covers (time_reduction / frame_rate: 0.04): annotation j starts at j times this.
double annotation_seconds(const SpeechRecognizerConfig& config);
// The fewest feature frames the listener takes: time_reduction (its halvings leave one annotation from that many).
int min_speech_frames(const SpeechRecognizerConfig& config);

// features [T, feature_size] -> (x − the utterance's mean frame) / feature_scale [T, feature_size]
Matrix normalize_features(const SpeechRecognizer& model, const Matrix& features);
// x [T, D] -> [T/2, 2D]: row t is [x_{2t} ; x_{2t+1}]; an odd T drops the last row.
Matrix stack_frame_pairs(const Matrix& x);

struct SpeechEncoded {
    Matrix annotations;      // h [S, 2E], S = (T/2)/2
    nn::LocationKeys keys;   // W_k h_j + b_k [S, A], once per utterance
    Vector initial_state;    // s_0 [H]
    Matrix ctc_log_probabilities;  // log_softmax of the CTC head [S, V]; empty when the model has no head
};

// features [T, feature_size] (raw MFCCs, finite, T >= min_speech_frames) -> annotations, keys, s_0 (and the CTC
// log-probabilities when the model has the head)
SpeechEncoded listen(const SpeechRecognizer& model, const Matrix& features);

// a_0: one-hot on the first annotation [S]
std::vector<float> first_weights(const SpeechEncoded& encoded);

// One speller step: token y_{i-1}, state s_{i-1} [H], previous weights a_{i-1} [S] -> s_i [H] (may not alias the
// state), out.logits [V] (raw: nothing banned), out.weights a_i [S], out.scores e_i [S], out.context c_i [2E].
void speech_step(const SpeechRecognizer& model, const SpeechEncoded& encoded, int32_t token, const float* state,
                 const float* previous_weights, float* next_state, decode::StepOutput& out);

// Adapts the model and one encoded utterance to decode::search; its logits have the never_written ids at -inf,
// as ListenAttendSpell.greedy decodes.
class SpeechDecoder : public decode::Decoder {
public:
    SpeechDecoder(const SpeechRecognizer& model, const SpeechEncoded& encoded) : model_(model), encoded_(encoded) {}
    int bos() const override { return model_.bos; }
    int eos() const override { return model_.eos; }
    int source_length() const override { return static_cast<int>(encoded_.annotations.shape()[0]); }
    decode::StatePtr initial_state() const override;
    decode::StatePtr step(const decode::DecoderState& state, int32_t token, decode::StepOutput& out) const override;

private:
    const SpeechRecognizer& model_;
    const SpeechEncoded& encoded_;
};

// The search limits ListenAttendSpell.greedy uses (kSpeechMaxLengthRatio, kSpeechMaxLengthExtra) with this beam.
decode::SearchOptions speech_search_options(int beam = 1);

// The CTC weight a transcription decodes with: `requested` in [0, 1], or the file's (model.ctc_weight) for -1.
// Throws attnlab::Error (options) for anything else (NaN included), or > 0 on a model without the CTC head.
float speech_ctc_weight(const SpeechRecognizer& model, float requested);

// One language-model step: token y_{i-1}, g_{i-1} [lm_hidden] -> g_i [lm_hidden] (may not alias g_{i-1}) and
// log p_lm(y_i | ...) [V]. The model must have the LM.
void speech_lm_step(const SpeechRecognizer& model, int32_t token, const float* state, float* next_state,
                    float* log_probabilities);

// The LM weight a transcription decodes with: `requested` in [0, kMaxSpeechLmWeight], or the file's
// (model.lm_weight) for -1. Throws attnlab::Error (options) for anything else (NaN included), or > 0 on a model
// without the LM.
float speech_lm_weight(const SpeechRecognizer& model, float requested);

// Joint CTC/attention beam search (Watanabe et al. 2017) over one encoded utterance: decode::beam_search's own
// batched search over SpeechDecoder (decode::beam_search_scored: top 2K candidates a step; EOS or the length limit
// finishes; score / length^length_penalty; K finished or the limit stop it; the best finished wins) with each
// candidate ranked by the joint score
//   (1 − λ) Σ log p_att + λ log p_ctc(prefix) + β Σ log p_lm     (EOS: the CTC probability of the whole sequence,
//                                                                  the LM's of </s>)
// in double. beam 1 is the CTC-aware greedy search. λ in [0, 1] (> 0: the model must have the head), β in
// [0, kMaxSpeechLmWeight] (> 0: the model must have the LM), not both 0. The result's log_probability is the
// attention's Σ log p (EOS included), its score the normalized joint score.
// Every decode::SearchOptions field applies as in beam_search (validate(), no_repeat_ngram, record_tree) except
// `batched`: it always runs the batched search.
decode::Hypothesis joint_search(const SpeechRecognizer& model, const SpeechEncoded& encoded,
                                const decode::SearchOptions& options, float ctc_weight, float lm_weight = 0.0f);

// What a transcription decodes with: λ = β = 0 is decode::search over SpeechDecoder (attention only, greedy at
// beam 1), else joint_search; options as speech_search_options(beam), with record_tree (the result's tree) as asked.
decode::Hypothesis recognize(const SpeechRecognizer& model, const SpeechEncoded& encoded, int beam, float ctc_weight,
                             float lm_weight = 0.0f, bool record_tree = false);

// ids -> the characters they stand for, joined; special ids are skipped.
std::string spell(const SpeechRecognizer& model, const std::vector<int32_t>& ids);

}  // namespace attnlab::models
