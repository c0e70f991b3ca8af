// The attnlab command line. Exit status 0 on success, 1 on any error or bad usage (message on stderr).
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attnlab/attnlab.hpp"
#include "attnlab/audio/features.hpp"
#include "attnlab/audio/flac.hpp"
#include "attnlab/audio/wav.hpp"
#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"
#include "cli/image.hpp"
#include "cli/json.hpp"

namespace {

using attnlab::cli::json_ints;
using attnlab::cli::json_matrix;
using attnlab::cli::json_number;
using attnlab::cli::json_string;
using attnlab::cli::json_strings;

// Each command's usage, printed by `attnlab COMMAND --help`; usage() lists them all.
struct Command {
    const char* name;
    const char* usage;
};

constexpr Command kCommands[] = {
    {"version",
     "  version [--json]                          engine version and SIMD instruction set; --json adds\n"
     "                                            the limits the engine enforces (beam, lengths, image size)\n"},
    {"info",
     "  info --model FILE                         the model's metadata\n"},
    {"translate",
     "  translate --model FILE [--beam N] [--max-length N] [--no-repeat-ngram N] [--batch N] [--shortlist FILE]\n"
     "            [--json] [TEXT...]\n"
     "                                            translate TEXT, or each line of stdin when no TEXT is given;\n"
     "                                            a terminal also gets the alignment as a text heatmap\n"
     "                                            (--beam 1..64, --max-length 0 (automatic)..1000,\n"
     "                                            --no-repeat-ngram -1 (default), 0 (off), 2..8)\n"
     "                                            whole stdin lines already waiting are translated together,\n"
     "                                            up to --batch 1..256 at once (default 16), as one by one\n"
     "                                            (f16/f32 weights: up to float rounding); a bad line gets its\n"
     "                                            error in its place, a blank line a blank result;\n"
     "                                            --shortlist: score only the target pieces\n"
     "                                            a shortlist file gives for the input (faster; docs/decoding.md)\n"},
    {"caption",
     "  caption --model FILE [--beam N] [--max-length N] [--no-repeat-ngram N] [--recognize] [--json] IMAGE...\n"
     "                                            caption JPEG/PNG images, one line per image\n"
     "                                            (--beam 1..64, --max-length 0 (the model's)..200,\n"
     "                                            --no-repeat-ngram -1 (the model's), 0 (off), 2..8;\n"
     "                                            --recognize: also the image encoder's top 5 ImageNet\n"
     "                                            classes, after a tab, where the file has its classifier)\n"},
    {"transcribe",
     "  transcribe --model FILE [--beam N] [--ctc-weight W] [--lm-weight W] [--json] AUDIO...\n"
     "                                            transcribe WAV (PCM 8/16/24/32-bit or float, any channels,\n"
     "                                            8..48 kHz), FLAC or Sphinx .mfc features, one line each\n"
     "                                            (--ctc-weight 0 (attention only)..1, --lm-weight 0 (no\n"
     "                                            language model)..2; -1 the model's)\n"},
};

std::string usage() {
    std::string out = "usage: attnlab <command> [options]   (attnlab <command> --help: that command)\ncommands:\n";
    for (const Command& command : kCommands) out += command.usage;
    return out;
}

const Command* find_command(const std::string& name) {
    for (const Command& command : kCommands)
        if (name == command.name) return &command;
    return nullptr;
}

// A numeric flag as typed; its range depends on the command, so it is checked by flag_value() once the command
// is known.
struct Flag {
    std::string text;
    bool given = false;
};

struct Arguments {
    std::string model;
    std::string shortlist;
    Flag beam, max_length, no_repeat_ngram, ctc_weight, lm_weight, batch;
    bool json = false;
    bool recognize = false;
    std::vector<std::string> words;
};

// The flag's value checked against the engine's option table, so the CLI accepts what the engine and the JS
// module accept and words a refusal as they do, naming the flag ("--beam must be an integer from 1 to 64, got 65").
// The flag's text as a whole number; errno is ERANGE when it does not fit.
long long whole_number(const std::string& name, const Flag& flag) {
    const std::string& text = flag.text;
    const std::size_t digits = text.find_first_not_of("0123456789", text.empty() || text[0] != '-' ? 0 : 1);
    const bool whole = digits == std::string::npos && text != "" && text != "-";
    attnlab::check(whole, name + " needs a whole number, got '" + text + "'", attnlab::ErrorKind::options);
    errno = 0;
    return std::strtoll(text.c_str(), nullptr, 10);
}

int flag_value(const std::string& name, const Flag& flag, attnlab::Option option, int fallback) {
    if (!flag.given) return fallback;
    const long long value = whole_number(name, flag);
    attnlab::check(errno != ERANGE && attnlab::option_accepts(option, value),
                   attnlab::option_error(option, name, flag.text), attnlab::ErrorKind::options);
    return static_cast<int>(value);
}

Arguments parse(const std::vector<std::string>& args) {
    Arguments out;
    for (std::size_t i = 1; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&]() -> const std::string& {
            attnlab::check(i + 1 < args.size(), a + " needs a value");
            return args[++i];
        };
        auto flag = [&](Flag& f) {
            f.text = value();
            f.given = true;
        };
        if (a == "--model" || a == "-m") out.model = value();
        else if (a == "--shortlist") out.shortlist = value();
        else if (a == "--beam") flag(out.beam);
        else if (a == "--max-length") flag(out.max_length);
        else if (a == "--no-repeat-ngram") flag(out.no_repeat_ngram);
        else if (a == "--ctc-weight") flag(out.ctc_weight);
        else if (a == "--lm-weight") flag(out.lm_weight);
        else if (a == "--batch") flag(out.batch);
        else if (a == "--json") out.json = true;
        else if (a == "--recognize") out.recognize = true;
        else if (a == "--") { out.words.insert(out.words.end(), args.begin() + i + 1, args.end()); break; }
        else if (a.size() > 1 && a[0] == '-' && a[1] == '-') attnlab::fail("unknown option " + a + " (attnlab " + args[0] + " --help lists them)");
        else out.words.push_back(a);
    }
    return out;
}

// A flag the command does not take is refused rather than silently ignored.
void refuse_flags(const Arguments& args, const std::string& command, bool beam, bool max_length, bool no_repeat_ngram) {
    const std::pair<const char*, bool> flags[] = {{"--beam", args.beam.given && !beam},
                                                 {"--max-length", args.max_length.given && !max_length},
                                                 {"--no-repeat-ngram", args.no_repeat_ngram.given && !no_repeat_ngram},
                                                 {"--ctc-weight", args.ctc_weight.given && command != "transcribe"},
                                                 {"--lm-weight", args.lm_weight.given && command != "transcribe"},
                                                 {"--batch", args.batch.given && command != "translate"}};
    for (const auto& [name, refused] : flags)
        attnlab::check(!refused, command + " takes no " + name + " (attnlab " + command + " --help)",
                       attnlab::ErrorKind::options);
    attnlab::check(args.shortlist.empty() || command == "translate",
                   command + " takes no --shortlist (attnlab " + command + " --help)", attnlab::ErrorKind::options);
    attnlab::check(!args.recognize || command == "caption",
                   command + " takes no --recognize (attnlab " + command + " --help)", attnlab::ErrorKind::options);
}

// {"version","simd","wasm","limits":{...}}: the limits under the names of attnlab::Limits.
std::string version_json(const attnlab::EngineInfo& info, const attnlab::Limits& l) {
    const std::pair<const char*, int> limits[] = {
        {"max_beam", l.max_beam},
        {"max_text_bytes", l.max_text_bytes},
        {"max_source_tokens", l.max_source_tokens},
        {"max_translation_length", l.max_translation_length},
        {"max_caption_length", l.max_caption_length},
        {"min_no_repeat_ngram", l.min_no_repeat_ngram},
        {"max_no_repeat_ngram", l.max_no_repeat_ngram},
        {"max_image_side", l.max_image_side},
    };
    std::string out = "{\"version\":" + json_string(info.version) + ",\"simd\":" + json_string(info.simd) +
                      ",\"wasm\":" + (info.wasm ? "true" : "false") + ",\"limits\":{";
    bool first = true;
    for (const auto& [name, value] : limits) {
        out += std::string(first ? "" : ",") + "\"" + name + "\":" + std::to_string(value);
        first = false;
    }
    return out + "}}";
}

int run_version(const Arguments& args) {
    attnlab::check(args.words.empty(), "version takes no arguments (only --json)");
    refuse_flags(args, "version", false, false, false);
    const attnlab::EngineInfo info = attnlab::engine_info();
    if (args.json)
        std::printf("%s\n", version_json(info, attnlab::limits()).c_str());
    else
        std::printf("attnlab %s (%s)\n", info.version.c_str(), info.simd.c_str());
    return 0;
}

int run_info(const Arguments& args) {
    attnlab::check(!args.model.empty(), "info needs --model FILE");
    refuse_flags(args, "info", false, false, false);
    // Any GGUF file, not only a loadable model: info is how one finds out what a file is.
    const attnlab::gguf::File file = attnlab::gguf::File::open(args.model);
    std::printf("GGUF v%u, %zu metadata keys, %zu tensors, %zu bytes\n", file.version(), file.keys().size(),
                file.tensors().size(), file.size_bytes());
    for (const std::string& key : file.keys()) std::printf("%s = %s\n", key.c_str(), file.describe(key).c_str());
    for (const attnlab::gguf::TensorInfo& t : file.tensors())
        std::printf("tensor %s %s %s\n", t.name.c_str(), attnlab::gguf::type_name(t.type),
                    attnlab::gguf::format_shape(t.shape).c_str());
    return 0;
}

// One row per output token, one column per source token; darker = more attention.
void print_heatmap(const attnlab::Translation& t) {
    static const char* const kShades[] = {" ", "░", "▒", "▓", "█"};
    const std::size_t S = t.source_tokens.size(), T = t.target_tokens.size();
    std::printf("\n%16s", "");
    for (std::size_t s = 0; s < S; ++s) std::printf("%2zu", s);
    std::printf("\n");
    for (std::size_t i = 0; i < T; ++i) {
        std::printf("%-16.16s", t.target_tokens[i].c_str());
        for (std::size_t s = 0; s < S; ++s) {
            const float w = t.attention[i * S + s];
            const int shade = w >= 0.6f ? 4 : w >= 0.35f ? 3 : w >= 0.15f ? 2 : w >= 0.05f ? 1 : 0;
            std::printf(" %s", kShades[shade]);
        }
        std::printf("\n");
    }
    for (std::size_t s = 0; s < S; ++s) std::printf("%16s%2zu %s\n", "", s, t.source_tokens[s].c_str());
}

std::string json_floats(const std::vector<float>& values) {
    std::string out = "[";
    for (std::size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + attnlab::cli::json_number(values[i]);
    return out + "]";
}

// A Transformer attention tensor: {"layers","heads","rows","cols","data": flat row-major [L·H·rows·cols]}.
std::string attention_tensor_json(const attnlab::AttentionTensor& a) {
    return "{\"layers\":" + std::to_string(a.layers) + ",\"heads\":" + std::to_string(a.heads) +
           ",\"rows\":" + std::to_string(a.rows) + ",\"cols\":" + std::to_string(a.cols) +
           ",\"data\":" + json_floats(a.data) + "}";
}

// [{"code","message"[,"share" | "log_probability_per_token"]}]: share for UNKNOWN_INPUT,
// log_probability_per_token for LOW_CONFIDENCE, as the JS module reports them.
std::string warnings_json(const std::vector<attnlab::Warning>& warnings) {
    std::string out = "[";
    for (std::size_t i = 0; i < warnings.size(); ++i) {
        const attnlab::Warning& w = warnings[i];
        out += std::string(i ? "," : "") + "{\"code\":" + json_string(w.code) + ",\"message\":" + json_string(w.message);
        if (w.code == "UNKNOWN_INPUT") out += ",\"share\":" + attnlab::cli::json_number(w.share);
        if (w.code == "LOW_CONFIDENCE")
            out += ",\"log_probability_per_token\":" + attnlab::cli::json_number(w.log_probability_per_token);
        out += "}";
    }
    return out + "]";
}

// {"error","code"}: one failed input in place of its result (stdin translate, each caption or transcript).
std::string error_fields(const attnlab::Error& e) {
    return "\"error\":" + json_string(e.what()) + ",\"code\":" +
           json_string(attnlab::error_code(e.kind(), attnlab::ErrorKind::input));
}

std::string translation_json(const attnlab::Translation& t) {
    const std::size_t S = t.source_tokens.size(), T = t.target_tokens.size();
    std::string out = "{\"text\":" + json_string(t.text) + ",\"source_tokens\":" + json_strings(t.source_tokens) +
           ",\"target_tokens\":" + json_strings(t.target_tokens) + ",\"source_ids\":" + json_ints(t.source_ids) +
           ",\"target_ids\":" + json_ints(t.target_ids) + ",\"score_function\":" + json_string(t.score_function) +
           ",\"attention\":" + json_matrix(t.attention, T, S) + ",\"scores\":" + json_matrix(t.scores, T, S) +
           ",\"log_probability\":" + attnlab::cli::json_number(t.log_probability) +
           ",\"stop_reason\":" + json_string(attnlab::stop_reason_name(t.stop_reason)) + ",\"warnings\":" +
           warnings_json(t.warnings);
    if (!t.encoder_self_attention.empty())  // Transformer models only
        out += ",\"encoder_self_attention\":" + attention_tensor_json(t.encoder_self_attention) +
               ",\"decoder_self_attention\":" + attention_tensor_json(t.decoder_self_attention) +
               ",\"cross_attention\":" + attention_tensor_json(t.cross_attention);
    return out + "}";
}

// The largest --batch: beyond a few dozen lines a batch reads no weight less often (decode::kMaxSentenceBatchRows).
constexpr long long kMaxLineBatch = 256;

// The lines of a file descriptor, in batches of those already complete: next_batch() waits only while it has no
// whole line, so a line still being typed (or written) never holds back the lines before it. A last line without
// a newline counts once the input ends.
class LineBatches {
public:
    explicit LineBatches(int fd) : fd_(fd) {}

    // Up to `most` lines (without their "\n" or "\r\n"); empty only at the end of the input.
    std::vector<std::string> next_batch(std::size_t most) {
        while (!ended_ && !has_line()) read_some();  // blocks: nothing to answer yet
        while (!ended_ && complete_lines() < most && readable_now()) read_some();
        std::vector<std::string> lines;
        while (lines.size() < most && has_line()) {
            const std::size_t end = pending_.find('\n', start_);
            std::string line = pending_.substr(start_, end == std::string::npos ? std::string::npos : end - start_);
            start_ = end == std::string::npos ? pending_.size() : end + 1;
            if (!line.empty() && line.back() == '\r') line.pop_back();
            lines.push_back(std::move(line));
        }
        pending_.erase(0, start_);
        start_ = 0;
        return lines;
    }

private:
    // A whole line waits: one ended by "\n", or the last one once the input has ended.
    bool has_line() const {
        return pending_.find('\n', start_) != std::string::npos || (ended_ && start_ < pending_.size());
    }

    std::size_t complete_lines() const {
        return static_cast<std::size_t>(
            std::count(pending_.begin() + static_cast<std::ptrdiff_t>(start_), pending_.end(), '\n'));
    }

    // Readable without blocking: bytes waiting, or the end of the input.
    bool readable_now() const {
        pollfd input{fd_, POLLIN, 0};
        return poll(&input, 1, 0) > 0;
    }

    void read_some() {
        char chunk[1 << 16];
        for (;;) {
            const ssize_t got = read(fd_, chunk, sizeof chunk);
            if (got > 0) {
                pending_.append(chunk, static_cast<std::size_t>(got));
                return;
            }
            if (got == 0) {
                ended_ = true;
                return;
            }
            if (errno == EINTR) continue;
            // A nonblocking stdin (a parent's O_NONBLOCK pipe, or a terminal a shell left so) has nothing yet:
            // wait for it rather than give up, as a blocking read would.
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                wait_readable();
                continue;
            }
            attnlab::fail(std::string("cannot read stdin: ") + std::strerror(errno));
        }
    }

    void wait_readable() const {
        pollfd input{fd_, POLLIN, 0};
        while (poll(&input, 1, -1) < 0) {
            if (errno != EINTR && errno != EAGAIN) attnlab::fail(std::string("cannot wait for stdin: ") + std::strerror(errno));
        }
    }

    int fd_;
    std::string pending_;  // bytes read and not yet handed out, from start_ on
    std::size_t start_ = 0;
    bool ended_ = false;
};

int run_translate(const Arguments& args) {
    refuse_flags(args, "translate", true, true, true);
    attnlab::TranslateOptions options;
    options.beam = flag_value("--beam", args.beam, attnlab::Option::beam, 1);
    options.max_length = flag_value("--max-length", args.max_length, attnlab::Option::translation_max_length, 0);
    options.no_repeat_ngram =
        flag_value("--no-repeat-ngram", args.no_repeat_ngram, attnlab::Option::translation_no_repeat_ngram, -1);
    options.all_layers = args.json;  // the JSON has every decoder layer's attention; the text output needs none
    long long batch_size = 16;  // stdin lines translated at once
    if (args.batch.given) {
        batch_size = whole_number("--batch", args.batch);
        attnlab::check(errno != ERANGE && batch_size >= 1 && batch_size <= kMaxLineBatch,
                       "--batch must be an integer from 1 to " + std::to_string(kMaxLineBatch) + ", got " +
                           args.batch.text,
                       attnlab::ErrorKind::options);
    }
    attnlab::check(!args.model.empty(), "translate needs --model FILE");
    const attnlab::Model model = attnlab::Model::open(args.model);
    std::optional<attnlab::Shortlist> shortlist;
    if (!args.shortlist.empty()) {
        shortlist = attnlab::Shortlist::open(args.shortlist);
        model.check_shortlist(*shortlist);
        options.shortlist = &*shortlist;
    }
    const bool heatmap = !args.json && isatty(STDOUT_FILENO);

    auto print = [&](const attnlab::Translation& t) {
        if (args.json) {
            std::printf("%s\n", translation_json(t).c_str());
        } else {
            std::printf("%s\n", t.text.c_str());
            if (heatmap) {
                print_heatmap(t);
                for (const attnlab::Warning& w : t.warnings) std::printf("warning: %s\n", w.message.c_str());
            }
        }
    };
    if (!args.words.empty()) {
        std::string text;
        for (const std::string& w : args.words) text += (text.empty() ? "" : " ") + w;
        print(model.translate(text, options));
        return 0;
    }
    // One result per input line, so a bad line answers with an error in its place and the status becomes 1.
    int status = 0;
    auto translate_line = [&](const std::string& line) {
        try {
            print(model.translate(line, options));
        } catch (const attnlab::Error& e) {
            std::fprintf(stderr, "attnlab: %s\n", e.what());
            std::printf(args.json ? "{%s}\n" : "%s\n", args.json ? error_fields(e).c_str() : "");
            status = 1;
        }
    };
    // A blank line (nothing but the whitespace the engine calls empty input) separates a text's paragraphs: it is
    // answered with a blank result (an empty line, or the object of an empty translation), not an error, and it is
    // not part of the batch. An input with no other line (none at all, or only blank ones) has nothing to translate:
    // that is an error.
    const auto blank = [](const std::string& line) { return line.find_first_not_of(" \t\n\r\f\v") == std::string::npos; };
    // Complete lines already waiting are translated together (Model::translate of several texts: each as alone,
    // each weight read once per step for all of them). A batch never waits for more input, nor for the rest of a
    // line being written, so a program (or a person) that writes one line and reads its answer gets it at once.
    LineBatches input(STDIN_FILENO);
    bool any_text = false;
    for (;;) {
        const std::vector<std::string> lines = input.next_batch(static_cast<std::size_t>(batch_size));
        if (lines.empty()) break;
        std::vector<bool> blanks;
        std::vector<std::string> texts;
        for (const std::string& line : lines) {
            blanks.push_back(blank(line));
            if (!blanks.back()) texts.push_back(line);
        }
        any_text = any_text || !texts.empty();
        std::vector<attnlab::Translation> together;
        if (texts.size() > 1) {
            try {
                together = model.translate(texts, options);
            } catch (const attnlab::Error&) {
                // A bad line among them: each line again alone (below), so every line gets its own result or error.
            }
        }
        std::size_t next = 0;
        for (std::size_t i = 0; i < lines.size(); ++i) {
            if (blanks[i])
                std::printf("%s\n", args.json ? translation_json(attnlab::Translation{}).c_str() : "");
            else if (!together.empty())
                print(together[next++]);
            else
                translate_line(lines[i]);
        }
        std::fflush(stdout);
    }
    if (!any_text) {
        std::fprintf(stderr, "attnlab: nothing to translate: the input is empty\n");
        return 1;
    }
    return status;
}

// {"image","text","tokens","ids","grid_height","grid_width","attention": [tokens][grid_height·grid_width]}
// (+ "recognized": [{"label","index","probability"}] with --recognize)
std::string caption_json(const std::string& path, const attnlab::Caption& c, bool recognize) {
    const std::size_t T = c.tokens.size(), G = static_cast<std::size_t>(c.grid_height) * c.grid_width;
    std::string out = "{\"image\":" + json_string(path) + ",\"text\":" + json_string(c.text) + ",\"tokens\":" +
                      json_strings(c.tokens) + ",\"ids\":" + json_ints(c.ids) + ",\"grid_height\":" +
                      std::to_string(c.grid_height) + ",\"grid_width\":" + std::to_string(c.grid_width) +
                      ",\"attention\":" + json_matrix(c.attention, T, G);
    if (recognize) {
        out += ",\"recognized\":[";
        for (std::size_t i = 0; i < c.recognized.size(); ++i)
            out += std::string(i ? "," : "") + "{\"label\":" + json_string(c.recognized[i].label) +
                   ",\"index\":" + std::to_string(c.recognized[i].index) +
                   ",\"probability\":" + json_number(c.recognized[i].probability) + "}";
        out += "]";
    }
    return out + "}";
}

// "caption<TAB>label 0.85; label 0.08; ..." (probabilities to 3 decimals)
std::string caption_line(const attnlab::Caption& c, bool recognize) {
    if (!recognize) return c.text;
    std::string out = c.text + "\t";
    for (std::size_t i = 0; i < c.recognized.size(); ++i) {
        char probability[16];
        std::snprintf(probability, sizeof probability, "%.3f", c.recognized[i].probability);
        out += (i ? "; " : "") + c.recognized[i].label + " " + probability;
    }
    return out;
}

int run_caption(const Arguments& args) {
    refuse_flags(args, "caption", true, true, true);
    attnlab::CaptionOptions options;
    options.beam = flag_value("--beam", args.beam, attnlab::Option::beam, 1);
    options.max_length = flag_value("--max-length", args.max_length, attnlab::Option::caption_max_length, 0);
    options.no_repeat_ngram =
        flag_value("--no-repeat-ngram", args.no_repeat_ngram, attnlab::Option::caption_no_repeat_ngram, -1);
    options.recognize = args.recognize;
    attnlab::check(!args.model.empty(), "caption needs --model FILE");
    attnlab::check(!args.words.empty(), "caption needs at least one IMAGE file");
    const attnlab::Model model = attnlab::Model::open(args.model);
    attnlab::check(model.task() == "caption", "this model (" + model.architecture() + ") cannot caption images",
                   attnlab::ErrorKind::task);
    attnlab::check(!options.recognize || model.recognizes_images(),
                   "this captioner file has no ImageNet classifier, which --recognize needs (models/captioner-flickr8k.md)",
                   attnlab::ErrorKind::model);
    // One line per image, so a bad file answers with an error in its place and the status becomes 1.
    int status = 0;
    for (const std::string& path : args.words) {
        try {
            const attnlab::cli::RgbaImage image = attnlab::cli::load_image_rgba(path);
            const attnlab::Caption c = model.caption(image.pixels.data(), image.width, image.height, options);
            std::printf("%s\n", args.json ? caption_json(path, c, args.recognize).c_str()
                                          : caption_line(c, args.recognize).c_str());
        } catch (const attnlab::Error& e) {
            std::fprintf(stderr, "attnlab: %s\n", e.what());
            if (args.json)
                std::printf("{\"image\":%s,%s}\n", json_string(path).c_str(), error_fields(e).c_str());
            else
                std::printf("\n");
            status = 1;
        }
        std::fflush(stdout);
    }
    return status;
}

std::vector<uint8_t> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    attnlab::check(in.good(), "cannot open " + path);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A WAV or FLAC file is decoded and run through the front end; a .mfc file holds the features already.
attnlab::Transcription transcribe_file(const attnlab::Model& model, const std::string& path,
                                       const attnlab::TranscribeOptions& options) {
    const std::vector<uint8_t> bytes = read_file(path);
    if (path.size() > 4 && path.compare(path.size() - 4, 4, ".mfc") == 0) {
        const attnlab::Matrix mfcc = attnlab::audio::parse_sphinx_mfc(bytes.data(), bytes.size());
        return model.transcribe_features(mfcc.data(), static_cast<int>(mfcc.shape()[0]),
                                         static_cast<int>(mfcc.shape()[1]), options);
    }
    attnlab::check(attnlab::audio::looks_like_wav(bytes.data(), bytes.size()) ||
                       attnlab::audio::looks_like_flac(bytes.data(), bytes.size()),
                   path + " is not a WAV or FLAC file (transcribe reads WAV, FLAC and Sphinx .mfc; convert MP3 or "
                          "Ogg with sox or ffmpeg first)");
    return model.transcribe_file_bytes(bytes.data(), bytes.size(), options);
}

// A duration as its shortest exact decimal (0.04, not the float 0.0399999991).
std::string seconds_json(double seconds) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.12g", seconds);
    return buffer;
}

// {"audio","text","characters","ids","frames","frame_seconds","attention": [characters][frames], "finished"}
std::string transcription_json(const std::string& path, const attnlab::Transcription& t) {
    const std::size_t T = t.characters.size(), S = static_cast<std::size_t>(t.frames);
    return "{\"audio\":" + json_string(path) + ",\"text\":" + json_string(t.text) + ",\"characters\":" +
           json_strings(t.characters) + ",\"ids\":" + json_ints(t.ids) + ",\"frames\":" + std::to_string(t.frames) +
           ",\"frame_seconds\":" + seconds_json(t.frame_seconds) +
           ",\"attention\":" + json_matrix(t.attention, T, S) + ",\"finished\":" + (t.finished ? "true" : "false") +
           ",\"ctc_weight\":" + seconds_json(t.ctc_weight) + ",\"lm_weight\":" + seconds_json(t.lm_weight) + "}";
}

// A weight flag's number, whole or not; its range (and whether the model has what it weighs) is the engine's to
// check.
float weight_flag(const char* name, const std::string& text, const char* range) {
    char* end = nullptr;
    errno = 0;
    const float weight = text.empty() ? NAN : std::strtof(text.c_str(), &end);
    attnlab::check(!text.empty() && end == text.c_str() + text.size() && errno != ERANGE && std::isfinite(weight),
                   std::string(name) + " needs a number from " + range + " (or -1, the model's), got '" + text + "'",
                   attnlab::ErrorKind::options);
    return weight;
}

int run_transcribe(const Arguments& args) {
    refuse_flags(args, "transcribe", true, false, false);
    attnlab::TranscribeOptions options;
    options.beam = flag_value("--beam", args.beam, attnlab::Option::beam, 1);
    if (args.ctc_weight.given) options.ctc_weight = weight_flag("--ctc-weight", args.ctc_weight.text, "0 to 1");
    if (args.lm_weight.given) options.lm_weight = weight_flag("--lm-weight", args.lm_weight.text, "0 to 2");
    attnlab::check(!args.model.empty(), "transcribe needs --model FILE");
    attnlab::check(!args.words.empty(), "transcribe needs at least one AUDIO file");
    const attnlab::Model model = attnlab::Model::open(args.model);
    attnlab::check(model.task() == "transcribe", "this model (" + model.architecture() + ") cannot transcribe speech",
                   attnlab::ErrorKind::task);
    // One line per file, so a bad file answers with an error in its place and the status becomes 1.
    int status = 0;
    for (const std::string& path : args.words) {
        try {
            const attnlab::Transcription t = transcribe_file(model, path, options);
            std::printf("%s\n", args.json ? transcription_json(path, t).c_str() : t.text.c_str());
        } catch (const attnlab::Error& e) {
            std::fprintf(stderr, "attnlab: %s: %s\n", path.c_str(), e.what());
            if (args.json)
                std::printf("{\"audio\":%s,%s}\n", json_string(path).c_str(), error_fields(e).c_str());
            else
                std::printf("\n");
            status = 1;
        }
        std::fflush(stdout);
    }
    return status;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
        const Command* topic = args.size() > 1 ? find_command(args[1]) : nullptr;
        if (topic) std::printf("usage: attnlab %s", topic->usage + 2);
        else std::fputs(usage().c_str(), args.empty() ? stderr : stdout);
        return args.empty() ? 1 : 0;
    }
    try {
        const std::string command = args[0] == "--version" ? "version" : args[0];
        const Command* known = find_command(command);
        if (!known) {
            std::fprintf(stderr, "attnlab: unknown command '%s'\n%s", command.c_str(), usage().c_str());
            return 1;
        }
        // Before anything else is parsed, so `attnlab translate --beam x --help` still helps.
        for (const std::string& a : args) {
            if (a == "--") break;
            if (a == "--help" || a == "-h") {
                std::printf("usage: attnlab %s", known->usage + 2);
                return 0;
            }
        }
        const Arguments parsed = parse(args);
        if (command == "version") return run_version(parsed);
        if (command == "info") return run_info(parsed);
        if (command == "translate") return run_translate(parsed);
        if (command == "caption") return run_caption(parsed);
        return run_transcribe(parsed);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "attnlab: %s\n", e.what());
        return 1;
    }
}
