#pragma once
// Show, Attend and Tell (Xu et al. 2015) with soft attention, as trained by python/attnlab/nn/show_attend_tell.py (whose
// docstring has the equations) and exported by python/attnlab/gguf/captioner.py: a MobileNetV2 grid of G annotations
// a_i [C], an LSTM decoder with additive attention and a gating scalar.
//
//   init:    ā = mean_i a_i;  h_0 = tanh(W_h0 ā + b_h0);  c_0 = tanh(W_c0 ā + b_c0)          [H]
//            optional: g_e = relu(W_g ā + b_g) [emb] (global feature), and a_i ← a_i − ā (centered grid)
//   step t:  e_t = v·tanh(W_q h_{t-1} + W_k a_i + b_k)   α_t = softmax(e_t)                   [G]
//            β_t = σ(w_β·h_{t-1} + b_β)                 z_t = β_t Σ_i α_ti a_i                 [C]
//            (h_t, c_t) = LSTM([E y_{t-1} ; z_t (; g_e)], (h_{t-1}, c_{t-1}))
//            logits_t = E (E y_{t-1} + L_h h_t + L_z z_t) + b_o                                [V] (L_o tied to E)
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attnlab/decode/search.hpp"
#include "attnlab/models/mobilenet_v2.hpp"
#include "attnlab/nn/attention.hpp"
#include "attnlab/nn/linear.hpp"
#include "attnlab/nn/rnn.hpp"
#include "attnlab/tensor.hpp"

namespace attnlab::gguf {
class File;
}

namespace attnlab::models {

constexpr int kMaxCaptionLength = 200;  // the longest caption a file or a caller may ask for, in tokens

struct CaptionerConfig {
    int vocab = 0;           // V
    int feature_size = 0;    // C
    int grid_height = 0;     // the grid is grid_height × grid_width = G annotations, row-major
    int grid_width = 0;
    int embedding = 0;       // emb
    int hidden = 0;          // H
    int attention_dim = 0;   // A
    int max_length = 30;     // default caption length limit (tokens, EOS excluded)
    int no_repeat_ngram = 0; // >= 2: the search never repeats a token n-gram of this size (0: off)
    bool center_grid = false;      // attend over a_i − ā: uniform attention then carries no information
    bool global_feature = false;   // feed g_e = relu(W_g ā + b_g) to the LSTM at every step
    bool learned_initial_state = false;  // W_h0, W_c0 are zero (left out of the file): h_0 = tanh(b_h0), c_0 = tanh(b_c0)

    int grid() const { return grid_height * grid_width; }
};

struct CaptionDecoderWeights {
    CaptionerConfig config;
    nn::Linear embedding;          // E [V, emb] as a table; also L_o (tied), with bias b_o = out_bias [V]
    nn::Linear init_h;             // [H, C]; unused with config.learned_initial_state
    nn::Linear init_c;             // [H, C]
    Vector initial_h, initial_c;   // tanh(b_h0), tanh(b_c0) [H]; only with config.learned_initial_state
    nn::AttentionParams attention; // additive; query h [H], keys a_i [C]
    nn::Linear f_beta;             // [1, H] + bias [1]
    nn::Linear global_proj;        // [emb, C] + bias; only with config.global_feature
    nn::LSTMCell decoder;          // input [emb + C (+ emb)], hidden H
    nn::Linear L_h;                // [emb, H], no bias
    nn::Linear L_z;                // [emb, C], no bias
    int bos = 2, eos = 3;
};

// The decoder half of a file written by python/attnlab/gguf/captioner.py (or the fixture of python/attnlab/golden/caption.py);
// member > 0 reads that ensemble member's keys and tensors (prefix "member<k>."). Throws attnlab::Error on a file
// of another kind or shape.
CaptionDecoderWeights load_caption_decoder(const gguf::File& file, int member = 0);

// Every decoder of the file: attnlab.captioner.ensemble_size members (1 when the key is absent), which decode as
// one (CaptionDecoder). Throws when the count is out of range.
std::vector<CaptionDecoderWeights> load_caption_decoders(const gguf::File& file);

struct CaptionEncoded {
    Matrix annotations;          // a [G, C], centered when the model says so
    nn::PreparedKeys keys;       // W_k a_i + b_k [G, A]
    Vector h0, c0;               // [H]
    Vector global;               // g_e [emb]; empty without a global feature
};

// annotations [G, C] -> keys and the initial state. Throws when the shape is not the model's [G, C] or a value
// is not finite.
CaptionEncoded caption_prepare(const CaptionDecoderWeights& model, Matrix annotations);

// One step: token y_{t-1}, h_{t-1}, c_{t-1} [H] -> h_t, c_t [H] (must not alias the inputs), out.logits [V],
// out.weights α_t [G], out.scores e_t [G].
void caption_step(const CaptionDecoderWeights& model, const CaptionEncoded& encoded, int32_t token, const float* h,
                  const float* c, float* h_out, float* c_out, decode::StepOutput& out);

// Adapts the decoders (one model, or an ensemble's members) and one image's grid to decode::search
// (source_length() = G). Each member keeps its own h, c. With several members a step's logits are
// log(mean_k softmax(logits_k)), i.e. the mean of their next-word distributions, which search's log-softmax leaves
// as is, and the attention weights and scores are the members' means (python/attnlab/nn/show_attend_tell.py's Ensemble).
class CaptionDecoder : public decode::Decoder {
public:
    // members must outlive the decoder; encoded[k] is caption_prepare(*members[k], grid).
    CaptionDecoder(std::vector<const CaptionDecoderWeights*> members, std::vector<CaptionEncoded> encoded);
    int bos() const override { return members_.front()->bos; }
    int eos() const override { return members_.front()->eos; }
    int source_length() const override { return members_.front()->config.grid(); }
    decode::StatePtr initial_state() const override;
    decode::StatePtr step(const decode::DecoderState& state, int32_t token, decode::StepOutput& out) const override;

private:
    std::vector<const CaptionDecoderWeights*> members_;
    std::vector<CaptionEncoded> encoded_;
};

// Search options for a caption of at most max_length tokens (0: the model's default), whatever the grid size;
// no_repeat_ngram: -1 the model's (attnlab.captioner.no_repeat_ngram), 0 off, 2..8 that n.
decode::SearchOptions caption_search_options(const CaptionDecoderWeights& model, int beam, int max_length,
                                             int no_repeat_ngram = -1);

// annotations [G, C] -> the best hypothesis (tokens without BOS/EOS, attention [tokens][G]) of one decoder, or of an
// ensemble's members decoding together; record_tree: with its search tree (decode::SearchOptions::record_tree).
decode::Hypothesis caption_from_features(const CaptionDecoderWeights& model, const Matrix& annotations, int beam = 1,
                                         int max_length = 0, int no_repeat_ngram = -1, bool record_tree = false);
decode::Hypothesis caption_from_features(const std::vector<CaptionDecoderWeights>& members, const Matrix& annotations,
                                         int beam = 1, int max_length = 0, int no_repeat_ngram = -1,
                                         bool record_tree = false);

// The whole captioner of one file: the decoder and, when the file has attnlab.mobilenet.* keys, the encoder.
struct Captioner {
    std::vector<CaptionDecoderWeights> decoders;   // one, or an ensemble's members (all on the same grid)
    bool has_encoder = false;
    MobileNetV2 encoder;
};

// Checks that the encoder's feature grid is the decoder's [G, C] (at the encoder's input size).
Captioner load_captioner(const gguf::File& file);

// rgba [height, width, 4] bytes (any size) -> preprocess (image::preprocess_rgba) -> encoder grid [G, C]
// (+ the classifier's logits [1001] when with_logits and the encoder has its classifier).
// Throws attnlab::Error when the file has no encoder or the image size / byte count is bad.
MobileNetOutput caption_encode(const Captioner& captioner, const uint8_t* rgba, std::size_t byte_count, int width,
                               int height, bool with_logits = false);

}  // namespace attnlab::models
