#pragma once
// The public API: everything a front end (the CLI, the embind module) needs, as plain structs.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attnlab/error.hpp"
#include "attnlab/image/decode.hpp"

namespace attnlab {

namespace gguf {
class File;
}
namespace decode {
struct Shortlist;
}

// A translation shortlist (models/weights/<pair>.shortlist.gguf, made by `python -m attnlab.data.shortlist`): for
// each source piece the target pieces its translations use most, and the most frequent target pieces. Translating
// with one scores only the union of those over a batch's sentences (a tenth to a quarter of a 10,000-piece
// vocabulary), so the output projection, the softmax and the beam's choices shrink in proportion; the BLEU it costs
// is measured in docs/performance.md. Cheap to copy (shared, immutable). Made for a pair of vocabularies: any
// translator with those tokenizers takes it.
class Shortlist {
public:
    // Throw attnlab::Error (ErrorKind::model) for a file that is not a shortlist.
    static Shortlist from_bytes(std::vector<uint8_t> bytes);
    static Shortlist open(const std::string& path);
    int per_source() const;  // target pieces per source piece
    int frequent() const;    // target pieces every union holds
    const decode::Shortlist& table() const { return *table_; }

private:
    std::shared_ptr<const decode::Shortlist> table_;
};

struct EngineInfo {
    std::string version;  // the project version, e.g. "0.1.0"
    std::string simd;     // the instruction set the kernels were compiled for
    bool wasm;            // true in the WebAssembly build
};

EngineInfo engine_info();

struct TranslateOptions {
    int beam = 1;               // 1 = greedy
    int max_length = 0;         // > 0: at most this many target tokens; 0: 1.5 × source length + 10
    float length_penalty = 1.0f;
    int no_repeat_ngram = -1;   // 2..8: no target n-gram twice; 0: off; -1: kDefaultTranslationNoRepeatNgram
    bool beam_tree = false;     // also return Translation::beam_tree (every hypothesis the search kept)
    bool query_key = false;     // Transformers: also return the encoder self-attention's per-head queries, keys and
                                // raw scores (Translation::encoder_queries, encoder_keys, encoder_self_scores)
    bool raw_scores = false;    // Transformers: also return every attention's per-head raw scores, taken in the
                                // pass that makes its weights (Translation::encoder_self_scores,
                                // decoder_self_scores, cross_scores); implies all_layers
    bool all_layers = false;    // Transformers: also return every decoder layer's and head's attention
                                // (Translation::decoder_self_attention, cross_attention), one more decoder pass
                                // over the chosen output
    const Shortlist* shortlist = nullptr;  // score only the shortlist's union over the sentences decoded together
                                           // (null: the whole vocabulary); made for the model's vocabularies, else
                                           // Error (ErrorKind::model); not with query_key
};

// The n-gram size a translation may not repeat unless the caller says otherwise: it stops the loops a model falls
// into on input it does not know ("Sa-Sa-Sa-…") and, chosen on the Multi30k validation BLEU of the shipped
// translators, changes nothing measurable on real sentences (docs/decoding.md).
constexpr int kDefaultTranslationNoRepeatNgram = 4;

// Why a decoder stopped: it wrote its end-of-sentence token, or it reached the length limit first.
enum class StopReason { eos, max_length };

// Something the caller should know about a result that is not an error.
struct Warning {
    std::string code;     // "UNKNOWN_INPUT": much of the source is unknown to the model's vocabulary (share says
                          // how much); "LOW_CONFIDENCE": the model gave its own output a low probability (the
                          // input is likely unlike anything it learned from); "MAX_LENGTH": the output was cut at
                          // the length limit
    std::string message;  // for a person
    float share = 0.0f;   // UNKNOWN_INPUT: the share of source pieces that are <unk> or byte fallbacks; else 0
    float log_probability_per_token = 0.0f;  // LOW_CONFIDENCE: Σ log p of the output tokens (and its end token)
                                             // ÷ their count; else 0
};

// UNKNOWN_INPUT is raised from this share of unknown or byte-fallback source pieces (the final </s> not
// counted): an ordinary sentence with one rare name stays below it, Chinese or emoji into an EN→DE model do not.
constexpr float kUnknownInputWarningShare = 0.25f;

// LOW_CONFIDENCE is raised below this mean log-probability per output token. On the shipped EN↔DE models (beam 4,
// `python3 -m attnlab.eval.confidence`, docs/decoding.md) it flags 2-9% of their own test sentences, mostly their
// weaker ones, and 94-97% of everyday sentences given to a model that learned only image descriptions.
constexpr float kLowConfidenceLogProbability = -1.2f;

// One hypothesis a search kept after one step; its path to the root (parent by parent) is its prefix.
struct BeamNode {
    int step = 0;                // the output position it fills, from 0
    int parent = -1;             // index in BeamTree::nodes of its prefix (at step - 1); -1 at step 0
    int32_t id = 0;              // the token it appends: the end-of-sentence token for a hypothesis that ended so
    std::string piece;           // that token's piece ("</s>" for the end of sentence)
    float log_probability = 0;   // log p of the token given the prefix
    float cumulative = 0;        // Σ log p from the first token through this one
    float score = 0;             // what the search ranked it by: for a finished one with beam > 1,
                                 // cumulative / length^length_penalty; otherwise the cumulative log p. In a
                                 // transcription with ctc_weight λ > 0 it is the joint score instead:
                                 // (1 − λ) cumulative + λ log p_ctc(prefix), ÷ length once finished (at any beam)
    bool finished = false;       // the hypothesis ends here (with the end of sentence, or at the length limit)
};

// Every hypothesis the search kept, step by step (nodes in step order), and the one it returned: the path from
// `winner` back to the root is the output's tokens (and its end of sentence, if it has one). Empty unless asked for.
struct BeamTree {
    std::vector<BeamNode> nodes;
    int winner = -1;
};

// Per-layer, per-head attention of a Transformer, row-major [layers, heads, rows, cols]; empty (all zero
// dimensions) for models without it.
struct AttentionTensor {
    std::vector<float> data;
    int layers = 0, heads = 0, rows = 0, cols = 0;
    bool empty() const { return layers == 0; }
};

struct Translation {
    std::string text;                          // detokenized output
    std::vector<std::string> source_tokens;    // pieces as the model saw them, including the final </s>
    std::vector<std::string> target_tokens;    // pieces of the output, without </s>
    std::vector<int32_t> source_ids;
    std::vector<int32_t> target_ids;
    std::vector<float> attention;              // [target × source] row-major: stage 2 weights per output token
    std::vector<float> scores;                 // [target × source] row-major: stage 1 raw scores per output token
    std::vector<float> context;                // [target × context_size] row-major: stage 3 context vector per output token
    std::vector<float> values;                 // [source × context_size] row-major: the source annotations it sums
    int context_size = 0;                      // dv
    std::string score_function;                // "additive", "dot", "general", "cosine", "scaled_dot"
    float log_probability = 0.0f;
    // Transformer only. attention/scores above are then the last decoder layer's cross-attention weights and
    // scaled dot products q·k/√hd, averaged over heads, as the search's steps computed them (so attention is not
    // the softmax of scores: a mean of softmaxes is not the softmax of the mean; cross_scores has each head's).
    // Decoder rows and columns are the decoder inputs (<s>, y_1 .. y_{T-1}): row i is the step that produced
    // target token i.
    AttentionTensor encoder_self_attention;    // [L_enc, H, source, source]
    // TranslateOptions::all_layers or raw_scores only (else empty):
    AttentionTensor decoder_self_attention;    // [L_dec, H, target, target], causal (zero above the diagonal)
    AttentionTensor cross_attention;           // [L_dec, H, target, source]
    // TranslateOptions::query_key only (else empty): what softmax(q·k/√hd) of encoder_self_attention is made of.
    AttentionTensor encoder_queries;           // [L_enc, H, source, hd] each head's query of each source token
    AttentionTensor encoder_keys;              // [L_enc, H, source, hd] and its key
    // TranslateOptions::query_key or raw_scores (else empty):
    AttentionTensor encoder_self_scores;       // [L_enc, H, source, source] q·k/√hd before the softmax
    // TranslateOptions::raw_scores only (else empty): q·k/√hd before the softmax, whose softmax over each row is
    // the row of decoder_self_attention / cross_attention.
    AttentionTensor decoder_self_scores;       // [L_dec, H, target, target]; -inf above the diagonal (the causal
                                               // mask: position i never sees j > i)
    AttentionTensor cross_scores;              // [L_dec, H, target, source]
    StopReason stop_reason = StopReason::eos;
    std::vector<Warning> warnings;             // UNKNOWN_INPUT, LOW_CONFIDENCE, MAX_LENGTH, in that order; usually
                                               // none
    BeamTree beam_tree;                        // TranslateOptions::beam_tree only
};

struct CaptionOptions {
    int beam = 1;               // 1 = greedy
    int max_length = 0;         // > 0: at most this many tokens; 0: the model's default (attnlab.captioner.max_length)
    int no_repeat_ngram = -1;   // 2..8: no token n-gram twice in a caption; 0: off; -1: the model's default
                                // (attnlab.captioner.no_repeat_ngram)
    bool beam_tree = false;     // also return Caption::beam_tree
    bool recognize = false;     // also return Caption::recognized (needs an image and a file with the encoder's
                                // ImageNet classifier: Model::recognizes_images())
};

// One ImageNet class the image encoder sees in the picture.
struct Recognition {
    std::string label;          // the class name, e.g. "tabby, tabby cat"
    int index = 0;              // 0..1000 (0 = "background"), MobileNetV2's output index
    float probability = 0.0f;   // softmax over the 1001 logits
};

// How many classes CaptionOptions::recognize returns.
constexpr int kRecognizedClasses = 5;

struct Caption {
    std::string text;                          // the caption
    std::vector<std::string> tokens;           // its pieces ("▁a", "▁dog", ...), without </s>
    std::vector<int32_t> ids;
    std::vector<float> attention;              // [tokens × grid_height·grid_width] row-major: where each token looked
    std::vector<float> scores;                 // the same shape: the raw scores (before the softmax) of the weights
    int grid_width = 0;                        // the annotation grid, row-major over (y, x): 7 × 7 for MobileNetV2
    int grid_height = 0;
    float log_probability = 0.0f;
    BeamTree beam_tree;                        // CaptionOptions::beam_tree only
    // CaptionOptions::recognize only: the kRecognizedClasses most probable ImageNet classes of MobileNetV2's own
    // classifier, computed in the same pass as the grid, most probable first. It says what the encoder sees, which
    // the captioner (trained on Flickr8k alone) may have no words for.
    std::vector<Recognition> recognized;
};

// Largest accepted input, in source tokens: longer inputs are rejected with a message instead of slowing to a
// crawl (attention is quadratic in the length).
constexpr int kMaxSourceTokens = 400;
// Largest accepted input text, in UTF-8 bytes, checked before tokenizing: far more than kMaxSourceTokens pieces
// take, so only text that would be refused anyway is refused without being tokenized.
constexpr int kMaxTextBytes = 16384;
// Largest TranslateOptions::max_length.
constexpr int kMaxTranslationLength = 1000;

// Everything the engine refuses beyond a size, in one place, so that front ends check against the engine's own
// numbers (the JS module's engineInfo().limits, `attnlab version --json`) instead of copies.
struct TranscribeOptions {
    int beam = 1;            // 1 = greedy (CTC-aware when ctc_weight > 0), up to Limits::max_beam
    float ctc_weight = -1;   // λ of the joint score (1 − λ) log p_att + λ log p_ctc, 0..1; 0: attention only;
                             // -1: the model's (attnlab.las.ctc_weight, 0 for a file without the CTC head)
    float lm_weight = -1;    // β of the language model's share β log p_lm, 0..2 (shallow fusion); 0: none;
                             // -1: the model's (attnlab.las.lm_weight, 0 for a file without the LM)
    bool beam_tree = false;  // also return Transcription::beam_tree (every hypothesis the search kept)
};

// A transcript with its alignment: which stretch of audio each character came from.
struct Transcription {
    std::string text;                      // lower-case letters, apostrophes and single spaces
    std::vector<std::string> characters;   // one entry per output character ([T])
    std::vector<int32_t> ids;              // [T]
    int frames = 0;                        // S: encoder frames (annotations) the attention spans
    double frame_seconds = 0.0;            // audio one frame covers (0.04 s): frame j starts at j · frame_seconds
    std::vector<float> attention;          // [T × S] row-major: stage-2 weights per character
    std::vector<float> scores;             // [T × S] raw location-aware scores (stage 1)
    int spectrogram_frames = 0;            // 100 per second of audio; 0 when transcribing features
    std::vector<float> spectrogram;        // [spectrogram_frames × 40] log-mel energies, for display
    float log_probability = 0.0f;          // Σ log p over the characters (and EOS)
    bool finished = false;                 // ended by the model (false: stopped at the length limit)
    float ctc_weight = 0.0f;               // the λ it was decoded with (0: attention only)
    float lm_weight = 0.0f;                // the β it was decoded with (0: no language model)
    BeamTree beam_tree;                    // TranscribeOptions::beam_tree only: each node's piece is its character
                                           // ("</s>" for the end); log p and cumulative are the attention
                                           // decoder's, score the joint score when ctc_weight or lm_weight
                                           // > 0 (BeamNode)
};

// The longest audio transcribe() takes: attention over much longer stretches needs chunking (not done yet).
constexpr double kMaxTranscribeSeconds = 60.0;

struct Limits {
    int max_beam;                // beam: 1..max_beam (translate and caption)
    int max_text_bytes;          // translate(): the text, in UTF-8 bytes
    int max_source_tokens;       // translate(): the tokenized text, </s> included
    int max_translation_length;  // TranslateOptions::max_length: 0 (automatic)..max_translation_length
    int max_caption_length;      // CaptionOptions::max_length: 0 (the model's)..max_caption_length
    int min_no_repeat_ngram;     // CaptionOptions::no_repeat_ngram: -1 (the model's), 0 (off) or
    int max_no_repeat_ngram;     //   min_no_repeat_ngram..max_no_repeat_ngram
    int max_image_side;          // caption(): width and height 1..max_image_side pixels
};

Limits limits();

// The numeric options and what each accepts, from limits(), in one table: the engine refuses any other value
// with Error(option_error(...), ErrorKind::options), the CLI checks its flags against it (naming the flag), and
// the JS module (web/lib/core.mjs) checks its options against engineInfo().limits with the same words.
enum class Option {
    beam,                         // 1..max_beam
    translation_max_length,       // 0 (automatic)..max_translation_length
    translation_no_repeat_ngram,  // -1 (the default), 0 (off), min_no_repeat_ngram..max_no_repeat_ngram
    caption_max_length,           // 0 (the model's default)..max_caption_length
    caption_no_repeat_ngram,      // -1 (the model's default), 0 (off), min_no_repeat_ngram..max_no_repeat_ngram
};
bool option_accepts(Option option, long long value);
// "<name> must be <what the option accepts>, got <value>", e.g. "beam must be an integer from 1 to 64, got 65".
std::string option_error(Option option, const std::string& name, const std::string& value);
// Throws Error(option_error(option, name, value), ErrorKind::options) unless option_accepts(option, value).
void check_option(Option option, const std::string& name, long long value);

// The name a front end shows for a stop reason: "eos" or "max_length".
const char* stop_reason_name(StopReason reason);

// A loaded model file. Cheap to copy (shared, immutable); safe to use from one thread at a time.
class Model {
public:
    static Model from_bytes(std::vector<uint8_t> bytes);
    static Model open(const std::string& path);

    std::string architecture() const;  // general.architecture, e.g. "attnlab.bahdanau"
    std::string task() const;          // "translate", "caption" or "transcribe"
    bool recognizes_images() const;    // a captioner whose file holds the encoder's ImageNet classifier
    // Metadata as key / printable value pairs, in file order (long arrays summarized).
    std::vector<std::pair<std::string, std::string>> metadata() const;
    const gguf::File& file() const;

    // Errors a call throws without a kind of their own (ErrorKind::unspecified) are about its input; those of
    // from_bytes() and open(), about the model file.
    // Throws attnlab::Error for a model that cannot translate, empty/oversized/invalid UTF-8 text, bad options.
    Translation translate(const std::string& text, const TranslateOptions& options = {}) const;
    // Several texts (a paragraph's sentences, a file's lines), each translated as translate(text) does it, in
    // input order: with q8_0 weights the same bits; with f16/f32 weights the larger matrix products sum in another
    // order, so attention agrees to float rounding and a token may differ only where two candidates tie to it. They
    // are decoded together: sorted by length into groups of at most decode::kMaxSentenceBatchRows rows
    // (sentences × beam), each group's decoder steps all live hypotheses of all its sentences at once, reading
    // each weight once per step. Every text is checked first; a bad one throws what translate(text) throws, its
    // message prefixed with "texts[i]: ", and nothing is translated.
    std::vector<Translation> translate(const std::vector<std::string>& texts, const TranslateOptions& options = {}) const;
    // Throws attnlab::Error (ErrorKind::model) unless the shortlist was made for this translator's vocabularies
    // (what translate() checks of TranslateOptions::shortlist; front ends check once, on loading it).
    void check_shortlist(const Shortlist& shortlist) const;

    // Captions an RGBA image (width × height × 4 bytes, row-major, any size; alpha is ignored). Throws
    // attnlab::Error for a model that cannot caption (or has no image encoder), a bad size or bad options.
    Caption caption(const uint8_t* rgba, int width, int height, const CaptionOptions& options = {}) const;
    // Captions a decoded image (decode_image / read_image: a JPEG or PNG file); also refuses pixels that are not
    // width × height × 4 bytes.
    Caption caption(const Image& image, const CaptionOptions& options = {}) const;
    // Captions from an encoder grid directly: features [grid_cells, feature_size] row-major, as
    // python/attnlab/data/features.py stores them (no image encoder needed).
    Caption caption_features(const float* features, int grid_cells, int feature_size,
                             const CaptionOptions& options = {}) const;

    // Transcribes mono audio samples in [-1, 1] at sample_rate (8000..48000 Hz; resampled to 16 kHz). Throws
    // attnlab::Error for a model that cannot transcribe, empty, too short (fewer feature frames than the model's
    // time reduction: 4, about 55 ms, for the shipped one), too long (> kMaxTranscribeSeconds) or non-finite audio,
    // an unsupported rate or bad options.
    Transcription transcribe(const float* samples, std::size_t count, int sample_rate,
                             const TranscribeOptions& options = {}) const;
    // Transcribes the bytes of a WAV or FLAC file (audio::parse_audio decodes them); throws attnlab::Error for
    // anything else, and for what transcribe() refuses.
    Transcription transcribe_file_bytes(const uint8_t* bytes, std::size_t size,
                                        const TranscribeOptions& options = {}) const;
    // From Sphinx MFCCs [frames, coefficients] row-major (an AN4 .mfc file's contents), without the front end.
    Transcription transcribe_features(const float* mfcc, int frames, int coefficients,
                                      const TranscribeOptions& options = {}) const;

private:
    struct Impl;
    std::shared_ptr<const Impl> impl_;
};

}  // namespace attnlab
