#pragma once
// How an engine error reaches JS, for every embind file: an Error whose message starts with "attnlab: " and whose
// `code` is one of web/lib/errors.mjs's ERROR_CODES (attnlab::error_code of the error's kind).
#include <emscripten/val.h>

#include <exception>
#include <new>
#include <string>

#include "attnlab/error.hpp"

namespace attnlab::wasm {

[[noreturn]] inline void throw_js(const std::string& message, const char* code) {
    emscripten::val error = emscripten::val::global("Error").new_("attnlab: " + message);
    error.set("code", std::string(code));
    error.throw_();
    __builtin_unreachable();
}

// `fallback`: the kind of an error that has none of its own (attnlab::Model's rule: a model file while loading,
// the input during a call).
template <typename F>
auto guarded(attnlab::ErrorKind fallback, F&& body) -> decltype(body()) {
    try {
        return body();
    } catch (const attnlab::Error& e) {
        throw_js(e.what(), attnlab::error_code(e.kind(), fallback));
    } catch (const std::bad_alloc&) {
        throw_js("the engine ran out of memory", "ATTNLAB_INTERNAL");
    } catch (const std::exception& e) {
        throw_js(e.what(), "ATTNLAB_INTERNAL");
    } catch (...) {
        throw_js("unknown engine error", "ATTNLAB_INTERNAL");
    }
}

}  // namespace attnlab::wasm
