#pragma once
// Every failure the engine can detect is reported as attnlab::Error with a message meant for a person, and a kind
// that front ends turn into a stable code (the JS module's ATTNLAB_* codes, web/lib/errors.mjs) without parsing
// the message.
#include <stdexcept>
#include <string>

namespace attnlab {

enum class ErrorKind {
    unspecified,  // decided by the API entry point it passes through: a model file (loading) or an input (a call)
    input,        // the text, image or audio a call was given
    options,      // an option outside its range (the Option table in attnlab.hpp)
    model,        // the file is not a usable model, or lacks a part this call needs
    task,         // the model does not do what was asked (translate() on a captioner)
};

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message, ErrorKind kind = ErrorKind::unspecified)
        : std::runtime_error(message), kind_(kind) {}
    ErrorKind kind() const noexcept { return kind_; }

private:
    ErrorKind kind_;
};

[[noreturn]] inline void fail(const std::string& message, ErrorKind kind = ErrorKind::unspecified) {
    throw Error(message, kind);
}

inline void check(bool condition, const std::string& message, ErrorKind kind = ErrorKind::unspecified) {
    if (!condition) fail(message, kind);
}

// A literal message becomes a std::string only when the check fails (checks run per element of weights, shortlist
// tables and sources, where building each message would cost an allocation).
inline void check(bool condition, const char* message, ErrorKind kind = ErrorKind::unspecified) {
    if (!condition) fail(message, kind);
}

// The stable code front ends report for a kind (the JS module's error.code, the CLI's --json "code"); an error
// without a kind of its own takes `fallback`'s (see Model in attnlab.hpp: the model file while loading, the input
// during a call).
inline const char* error_code(ErrorKind kind, ErrorKind fallback) {
    switch (kind == ErrorKind::unspecified ? fallback : kind) {
        case ErrorKind::input: return "ATTNLAB_BAD_INPUT";
        case ErrorKind::options: return "ATTNLAB_BAD_OPTIONS";
        case ErrorKind::model: return "ATTNLAB_BAD_MODEL";
        case ErrorKind::task: return "ATTNLAB_WRONG_TASK";
        case ErrorKind::unspecified: break;
    }
    return "ATTNLAB_INTERNAL";
}

}  // namespace attnlab
