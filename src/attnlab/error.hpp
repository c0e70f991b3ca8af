#pragma once
// Every failure the engine can detect is reported as attnlab::Error with a message meant for a person.
#include <stdexcept>
#include <string>

namespace attnlab {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

[[noreturn]] inline void fail(const std::string& message) { throw Error(message); }

inline void check(bool condition, const std::string& message) {
    if (!condition) fail(message);
}

}  // namespace attnlab
