// Translation benchmark of the engine core: greedy decoding at batch 1 with per-phase timing, for the comparison
// with PyTorch eager (bench/bench_pytorch.py) that bench/bench_translate.mjs runs on the same source ids.
//
//   bench_translate --model FILE.gguf --ids FILE [--limit N] [--profile] [--beam4 N]
//
// --ids: one sentence per line, its source ids (already ending with EOS) separated by spaces; the JS benchmark
// writes them from attnlab's own tokenizer, so every engine sees identical input. Each sentence is encoded once
// and decoded greedily (decode::greedy_search, the engine's search); the max length rule is the engine's
// (floor(1.5 |source| + 10)). --profile adds a second pass that times the parts of one decoder step:
//   RNN:          attention (scores, softmax, context), GRU cell, deep output, output projection (logits)
//   Transformer:  step without the output projection (self + cross attention + FF, all layers), output projection
// and "weight_read_ms": the time to merely read, once, every weight byte one decoder step reads (the matrices as
// the engine holds them: f32, halves or Q8_0 blocks): the memory-traffic floor of a batch-1 step,
// which no engine holding the same bytes can beat. Its ratio to per_token_ms says how close the step is to it.
// Then beam 4 both ways on the first N sentences (--beam4 N; all by default, 0 skips it): the batched search (every
// live hypothesis in one decoder step) and the one-by-one reference (SearchOptions::batched = false), interleaved
// sentence by sentence with the order alternating, so both see the same load; "beam4_batched_speedup" is the
// one-by-one decoding time over the batched one (> 1: batched is faster), void (null) if any sentence decodes
// differently. "cpu" names the processor and its caches (from /proc/cpuinfo and /sys, natively and in Node).
// The LAST line is one JSON object: {"model", "architecture", "cpu", "sentences", "tokens", "steps", "encoder_ms",
// "per_token_ms", "total_ms", "targets": [[ids]...], "profile": {phase: ms per step}, "beam4": {...},
// "beam4_batched_speedup"}.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "attnlab/decode/search.hpp"
#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/models/rnn_seq2seq.hpp"
#include "attnlab/models/transformer.hpp"
#include "attnlab/nn/attention.hpp"
#include "attnlab/nn/linear.hpp"
#include "attnlab/nn/multihead.hpp"
#include "attnlab/nn/rnn.hpp"
#include "cpu_description.hpp"
#include "variants/variants.hpp"

using namespace attnlab;
using attnlab::bench::cpu_description;
using attnlab::bench::json_escape;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::vector<std::vector<int32_t>> read_ids(const std::string& path, int limit) {
    std::ifstream in(path);
    check(bool(in), "cannot read " + path);
    std::vector<std::vector<int32_t>> out;
    std::string line;
    while (std::getline(in, line) && (limit <= 0 || int(out.size()) < limit)) {
        std::istringstream fields(line);
        std::vector<int32_t> ids;
        for (int32_t id; fields >> id;) ids.push_back(id);
        check(!ids.empty(), path + ": empty line " + std::to_string(out.size() + 1));
        out.push_back(std::move(ids));
    }
    check(!out.empty(), path + " has no sentences");
    return out;
}

struct BeamComparison {
    double one_by_one_ms = 0, batched_ms = 0;
    long sentences = 0, tokens = 0, mismatched = 0;
};

// Beam 4 batched and one by one on each sentence, encoded once (not timed); the order alternates per sentence.
template <typename Encode, typename MakeDecoder>
BeamComparison compare_beam4(const std::vector<std::vector<int32_t>>& sentences, int limit, Encode encode,
                             MakeDecoder make_decoder) {
    BeamComparison result;
    decode::SearchOptions batched;
    batched.beam = 4;
    decode::SearchOptions one_by_one = batched;
    one_by_one.batched = false;
    for (std::size_t s = 0; s < sentences.size() && (limit < 0 || long(s) < limit); ++s) {
        auto encoded = encode(sentences[s]);
        auto decoder = make_decoder(encoded);
        decode::Hypothesis a, b;
        for (int pass = 0; pass < 2; ++pass) {
            const bool batched_now = (pass == 0) == (s % 2 == 0);
            const auto t0 = Clock::now();
            (batched_now ? a : b) = decode::beam_search(decoder, batched_now ? batched : one_by_one);
            (batched_now ? result.batched_ms : result.one_by_one_ms) += ms_since(t0);
        }
        ++result.sentences;
        result.tokens += long(a.tokens.size());
        if (a.tokens != b.tokens) ++result.mismatched;
    }
    return result;
}

struct Totals {
    double encoder_ms = 0, decoder_ms = 0;
    long tokens = 0, steps = 0;
    std::vector<std::vector<int32_t>> targets;
};

// Encoder once, then the engine's greedy search; Encode(ids) -> encoded, MakeDecoder(encoded) -> decode::Decoder.
template <typename Encode, typename MakeDecoder>
Totals run_greedy(const std::vector<std::vector<int32_t>>& sentences, Encode encode, MakeDecoder make_decoder) {
    Totals totals;
    const decode::SearchOptions options;  // greedy, 1.5 |source| + 10
    for (const auto& ids : sentences) {
        auto t0 = Clock::now();
        auto encoded = encode(ids);
        totals.encoder_ms += ms_since(t0);
        t0 = Clock::now();
        auto decoder = make_decoder(encoded);
        const decode::Hypothesis result = decode::greedy_search(decoder, options);
        totals.decoder_ms += ms_since(t0);
        totals.tokens += long(result.tokens.size());
        totals.steps += long(result.tokens.size()) + (result.finished ? 1 : 0);
        totals.targets.push_back(result.tokens);
    }
    return totals;
}

// The RNN step of models/rnn_seq2seq.cpp (rnn_step), split into timed phases; returns the argmax token.
struct RnnProfile {
    double attention = 0, gru = 0, deep_output = 0, projection = 0, other = 0;
    long steps = 0;
    // rnn_encode's parts, ms per sentence summed: the source embeddings, the BiGRU's input products (one GEMM per
    // direction), its recurrences, the attention keys, the context projections, s_0.
    double encoder_embedding = 0, encoder_input = 0, encoder_recurrence = 0, encoder_keys = 0,
           encoder_context_projections = 0, encoder_init = 0;
    long sentences = 0;
};

// rnn_encode (models/rnn_seq2seq.cpp) in timed parts, on one thread.
void profile_rnn_encoder(const models::RnnSeq2Seq& model, const std::vector<int32_t>& ids, RnnProfile& p) {
    const auto& c = model.config;
    const int S = int(ids.size()), E = c.encoder_hidden;
    auto t0 = Clock::now();
    Matrix embedded = Matrix::from_shape({std::size_t(S), std::size_t(c.embedding)});
    for (int j = 0; j < S; ++j) models::embedding_row(model.source_embedding, ids[j], embedded.data() + std::size_t(j) * c.embedding);
    p.encoder_embedding += ms_since(t0);
    t0 = Clock::now();
    const Matrix gates[2] = {nn::project_sequence(model.encoder.forward.ih, embedded, nn::SequenceProducts::rows),
                             nn::project_sequence(model.encoder.backward.ih, embedded, nn::SequenceProducts::rows)};
    p.encoder_input += ms_since(t0);
    t0 = Clock::now();
    Matrix memory = Matrix::from_shape({std::size_t(S), 2 * std::size_t(E)});
    std::vector<float> h(static_cast<std::size_t>(E));
    for (int direction = 0; direction < 2; ++direction) {
        const nn::GRUCell& cell = direction == 0 ? model.encoder.forward : model.encoder.backward;
        std::fill(h.begin(), h.end(), 0.0f);
        for (int step = 0; step < S; ++step) {
            const int s = direction == 0 ? step : S - 1 - step;
            nn::gru_step_projected(cell, gates[direction].data() + std::size_t(s) * 3 * E, h.data(), h.data());
            std::copy(h.begin(), h.end(), memory.data() + std::size_t(s) * 2 * E + std::size_t(direction) * E);
        }
    }
    p.encoder_recurrence += ms_since(t0);
    t0 = Clock::now();
    const nn::PreparedKeys keys = nn::prepare_keys(model.attention, memory, nn::SequenceProducts::rows);
    p.encoder_keys += ms_since(t0);
    t0 = Clock::now();
    const Matrix memory_gates = nn::linear_rows(model.decoder_context, memory);
    const Matrix memory_deep = nn::linear_rows(model.deep_context, memory);
    p.encoder_context_projections += ms_since(t0);
    t0 = Clock::now();
    std::vector<float> final_hidden(2 * std::size_t(E)), initial(std::size_t(c.decoder_hidden));
    std::copy_n(memory.data() + std::size_t(S - 1) * 2 * E, E, final_hidden.data());
    std::copy_n(memory.data() + E, E, final_hidden.data() + E);
    nn::linear(model.init, final_hidden.data(), 1, initial.data());
    kernels::activate(initial.data(), initial.size(), kernels::Activation::tanh);
    p.encoder_init += ms_since(t0);
    ++p.sentences;
}

void profile_rnn(const models::RnnSeq2Seq& model, const std::vector<std::vector<int32_t>>& sentences,
                 RnnProfile& p) {
    const auto& c = model.config;
    const int H = c.decoder_hidden, emb = c.embedding;
    std::vector<float> embedded(static_cast<std::size_t>(emb)), t(embedded), t_embedded(embedded);
    std::vector<float> input_gates(3 * static_cast<std::size_t>(H)), hidden_gates(input_gates);
    std::vector<float> logits(static_cast<std::size_t>(c.target_vocab)), next(static_cast<std::size_t>(H));
    for (const auto& ids : sentences) {
        profile_rnn_encoder(model, ids, p);
        const models::RnnEncoded encoded = models::rnn_encode(model, ids);
        const int S = int(encoded.memory.shape()[0]);
        std::vector<float> state(encoded.initial_state.begin(), encoded.initial_state.end());
        const int limit = decode::max_target_length({}, int(ids.size()));
        int32_t token = model.bos;
        for (int i = 0; i < limit; ++i) {
            auto t0 = Clock::now();
            models::embedding_row(model.target_embedding, token, embedded.data());
            p.other += ms_since(t0);
            t0 = Clock::now();
            const nn::AttentionResult attention = nn::attend(model.attention, encoded.keys, state.data(), encoded.memory, nullptr);
            p.attention += ms_since(t0);
            t0 = Clock::now();
            nn::linear(model.decoder.ih, embedded.data(), 1, input_gates.data());
            kernels::gemv_t(S, 3 * H, encoded.memory_gates.data(), 3 * H, attention.weights.data(), input_gates.data(), true);
            nn::linear(model.decoder.hh, state.data(), 1, hidden_gates.data());
            kernels::gru_gates(1, H, input_gates.data(), hidden_gates.data(), state.data(), next.data());
            p.gru += ms_since(t0);
            t0 = Clock::now();
            nn::linear(model.deep_embedding, embedded.data(), 1, t_embedded.data());
            kernels::gemv_t(S, emb, encoded.memory_deep.data(), emb, attention.weights.data(), t_embedded.data(), true);
            nn::linear(model.deep_state, next.data(), 1, t.data());
            kernels::axpy(emb, 1.0f, t_embedded.data(), t.data());
            kernels::activate(t.data(), t.size(), kernels::Activation::tanh);
            p.deep_output += ms_since(t0);
            t0 = Clock::now();
            nn::linear(model.target_embedding, t.data(), 1, logits.data());
            p.projection += ms_since(t0);
            t0 = Clock::now();
            token = kernels::argmax(logits.data(), c.target_vocab);
            state.swap(next);
            p.other += ms_since(t0);
            ++p.steps;
            if (token == model.eos) break;
        }
    }
}

// The bytes of a layer's weight matrix as the engine holds it (f32, halves or Q8_0 blocks).
std::pair<const char*, std::size_t> weight_bytes(const nn::Linear& layer) {
    if (layer.quantized())
        return {reinterpret_cast<const char*>(layer.weight_q8.data()), layer.weight_q8.size() * sizeof(kernels::BlockQ8_0)};
    if (layer.half())
        return {reinterpret_cast<const char*>(layer.weight_f16.data()), layer.weight_f16.size() * sizeof(uint16_t)};
    if (layer.panelled())
        return {reinterpret_cast<const char*>(layer.weight_panels.data()), layer.weight_panels.size() * sizeof(float)};
    return {reinterpret_cast<const char*>(layer.weight.data()), layer.weight.size() * sizeof(float)};
}

std::vector<const nn::Linear*> rnn_step_weights(const models::RnnSeq2Seq& model) {
    // The context's columns of the GRU and W_t act once per sentence (rnn_encode), not per step.
    return {&model.attention.query_proj, &model.decoder.ih, &model.decoder.hh, &model.deep_state,
            &model.deep_embedding, &model.target_embedding};
}

std::vector<const nn::Linear*> transformer_step_weights(const models::Transformer& model) {
    // Cross-attention K and V are computed once per sentence by the encoder side, not per step.
    std::vector<const nn::Linear*> out;
    for (const models::TransformerDecoderLayer& layer : model.decoder)
        for (const nn::Linear* l : {&layer.self_attention.q, &layer.self_attention.k, &layer.self_attention.v,
                                    &layer.self_attention.out, &layer.cross_attention.q, &layer.cross_attention.out,
                                    &layer.feed_forward.up, &layer.feed_forward.down})
            out.push_back(l);
    out.push_back(&model.target_embedding);
    return out;
}

// Median over `repeats` passes of the time to read every byte of `layers` once; also returns the byte count.
double weight_read_ms(const std::vector<const nn::Linear*>& layers, int repeats, std::size_t& bytes) {
    std::vector<double> times;
    uint32_t checksum = 0;
    bytes = 0;
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = Clock::now();
        for (const nn::Linear* layer : layers) {
            const auto [data, size] = weight_bytes(*layer);
            checksum += kernels::read_checksum(data, size);
            if (r == 0) bytes += size;
        }
        times.push_back(ms_since(t0));
    }
    std::sort(times.begin(), times.end());
    if (checksum == 42) std::fprintf(stderr, " ");   // keeps the loop from being optimized away
    return times[times.size() / 2];
}

struct TransformerProfile {
    double layers = 0, projection = 0;
    long steps = 0;
};

void profile_transformer(const models::Transformer& model, const std::vector<std::vector<int32_t>>& sentences,
                         TransformerProfile& p) {
    std::vector<float> logits(std::size_t(model.config.target_vocab));
    for (const auto& ids : sentences) {
        const models::TransformerEncoded encoded = models::transformer_encode(model, ids);
        const int limit = decode::max_target_length({}, int(ids.size()));
        // Two caches fed the same tokens: one step without the output projection, one with; the difference is
        // the projection (LN_dec + E_tgtᵀ).
        std::vector<nn::KVCache> without, with;
        for (const models::TransformerDecoderLayer& layer : model.decoder) {
            without.push_back(nn::make_kv_cache(layer.self_attention, limit + 1));
            with.push_back(nn::make_kv_cache(layer.self_attention, limit + 1));
        }
        int32_t token = model.bos;
        for (int i = 0; i < limit; ++i) {
            auto t0 = Clock::now();
            models::transformer_step(model, encoded, token, without, nullptr, nullptr);
            const double layers = ms_since(t0);
            t0 = Clock::now();
            models::transformer_step(model, encoded, token, with, logits.data(), nullptr);
            const double full = ms_since(t0);
            p.layers += layers;
            p.projection += std::max(0.0, full - layers);
            ++p.steps;
            token = kernels::argmax(logits.data(), model.config.target_vocab);
            if (token == model.eos) break;
        }
    }
}

void print_targets(const std::vector<std::vector<int32_t>>& targets) {
    std::printf("\"targets\": [");
    for (std::size_t i = 0; i < targets.size(); ++i) {
        std::printf("%s[", i ? ", " : "");
        for (std::size_t j = 0; j < targets[i].size(); ++j) std::printf("%s%d", j ? ", " : "", targets[i][j]);
        std::printf("]");
    }
    std::printf("]");
}

int run(int argc, char** argv) {
    std::string model_path, ids_path;
    int limit = 0;
    bool profile = false;
    int beam4_limit = -1;  // all sentences
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--model" && i + 1 < argc) model_path = argv[++i];
        else if (arg == "--ids" && i + 1 < argc) ids_path = argv[++i];
        else if (arg == "--limit" && i + 1 < argc) limit = std::stoi(argv[++i]);
        else if (arg == "--profile") profile = true;
        else if (arg == "--beam4" && i + 1 < argc) beam4_limit = std::stoi(argv[++i]);
        else fail("usage: bench_translate --model FILE.gguf --ids FILE [--limit N] [--profile] [--beam4 N]");
    }
    check(!model_path.empty() && !ids_path.empty(), "bench_translate: --model and --ids are required");
    const auto sentences = read_ids(ids_path, limit);
    auto t0 = Clock::now();
    const gguf::File file = gguf::File::open(model_path);
    const std::string architecture = file.get_string("general.architecture");
    Totals totals;
    BeamComparison beam4;
    std::string profile_json = "{}";
    char buffer[512];
    if (architecture == "attnlab.bahdanau") {
        const models::RnnSeq2Seq model = models::load_rnn_seq2seq(file);
        const double load_ms = ms_since(t0);
        const auto encode = [&](const std::vector<int32_t>& ids) { return models::rnn_encode(model, ids); };
        const auto make_decoder = [&](const models::RnnEncoded& e) { return models::RnnDecoder(model, e); };
        totals = run_greedy(sentences, encode, make_decoder);
        if (beam4_limit != 0) beam4 = compare_beam4(sentences, beam4_limit, encode, make_decoder);
        if (profile) {
            RnnProfile p;
            profile_rnn(model, sentences, p);
            const double n = double(std::max(1L, p.steps)), ns = double(std::max(1L, p.sentences));
            std::size_t bytes = 0;
            const double floor = weight_read_ms(rnn_step_weights(model), 200, bytes);
            std::snprintf(buffer, sizeof buffer,
                          "{\"attention\": %.5f, \"gru\": %.5f, \"deep_output\": %.5f, \"output_projection\": %.5f, "
                          "\"other\": %.5f, \"load_ms\": %.3f, \"weight_read_ms\": %.5f, \"weight_bytes\": %zu, "
                          "\"encoder_ms\": {\"embedding\": %.5f, \"input\": %.5f, \"recurrence\": %.5f, \"keys\": %.5f, "
                          "\"context_projections\": %.5f, \"init\": %.5f}}",
                          p.attention / n, p.gru / n, p.deep_output / n, p.projection / n, p.other / n, load_ms, floor,
                          bytes, p.encoder_embedding / ns, p.encoder_input / ns, p.encoder_recurrence / ns,
                          p.encoder_keys / ns, p.encoder_context_projections / ns, p.encoder_init / ns);
            profile_json = buffer;
        }
    } else if (architecture == "attnlab.transformer") {
        const models::Transformer model = models::load_transformer(file);
        const double load_ms = ms_since(t0);
        const auto encode = [&](const std::vector<int32_t>& ids) { return models::transformer_encode(model, ids); };
        const auto make_decoder = [&](const models::TransformerEncoded& e) { return models::TransformerDecoder(model, e); };
        totals = run_greedy(sentences, encode, make_decoder);
        if (beam4_limit != 0) beam4 = compare_beam4(sentences, beam4_limit, encode, make_decoder);
        if (profile) {
            TransformerProfile p;
            profile_transformer(model, sentences, p);
            const double n = double(std::max(1L, p.steps));
            std::size_t bytes = 0;
            const double floor = weight_read_ms(transformer_step_weights(model), 200, bytes);
            std::snprintf(buffer, sizeof buffer,
                          "{\"layers\": %.5f, \"output_projection\": %.5f, \"load_ms\": %.3f, \"weight_read_ms\": %.5f, "
                          "\"weight_bytes\": %zu}",
                          p.layers / n, p.projection / n, load_ms, floor, bytes);
            profile_json = buffer;
        }
    } else {
        fail("bench_translate: " + model_path + " is not a translator (" + architecture + ")");
    }
    const double per_token = totals.decoder_ms / double(std::max(1L, totals.steps));
    const double encoder = totals.encoder_ms / double(sentences.size());
    std::fprintf(stderr, "bench_translate: %s: %zu sentences, %ld tokens, encoder %.3f ms/sentence, %.4f ms/step\n",
                 model_path.c_str(), sentences.size(), totals.tokens, encoder, per_token);
    std::printf("{\"model\": \"%s\", \"architecture\": \"%s\", \"simd\": \"%s\", \"sentences\": %zu, \"tokens\": %ld, "
                "\"steps\": %ld, \"encoder_ms\": %.5f, \"per_token_ms\": %.5f, \"total_ms\": %.3f, \"profile\": %s, ",
                model_path.c_str(), architecture.c_str(), kernels::simd_name(), sentences.size(), totals.tokens,
                totals.steps, encoder, per_token, totals.encoder_ms + totals.decoder_ms, profile_json.c_str());
    print_targets(totals.targets);
    const std::string cpu = json_escape(cpu_description());
    std::fprintf(stderr, "bench_translate: cpu %s\n", cpu.c_str());
    std::printf(", \"cpu\": \"%s\"", cpu.c_str());
    if (beam4.sentences > 0) {
        const double speedup = beam4.one_by_one_ms / std::max(beam4.batched_ms, 1e-9);
        std::fprintf(stderr, "bench_translate: beam 4 on %ld sentences: one by one %.1f ms, batched %.1f ms: %.2fx%s\n",
                     beam4.sentences, beam4.one_by_one_ms, beam4.batched_ms, speedup,
                     beam4.mismatched ? " (VOID: outputs differ)" : "");
        std::printf(", \"beam4\": {\"sentences\": %ld, \"tokens\": %ld, \"one_by_one_ms\": %.3f, \"batched_ms\": %.3f, "
                    "\"mismatched_sentences\": %ld}",
                    beam4.sentences, beam4.tokens, beam4.one_by_one_ms, beam4.batched_ms, beam4.mismatched);
        if (beam4.mismatched) std::printf(", \"beam4_batched_speedup\": null");
        else std::printf(", \"beam4_batched_speedup\": %.4f", speedup);
    }
    std::printf("}\n");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "bench_translate: %s\n", error.what());
        return 1;
    }
}
