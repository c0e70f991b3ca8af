// Linked into the threaded wasm build only (CMakeLists.txt, ATTNLAB_WASM_THREADS): the part of libunwind that
// lets a `catch (const T&)` see its exception, with the landing-pad context as an ordinary global.
//
// Why: with -fwasm-exceptions, every catch clause that names a type stores its landing-pad index and its LSDA in
// `__wasm_lpad_context` and asks _Unwind_CallPersonality which clause matches. The compiler this project builds
// with (Emscripten 3.1.6 on LLVM 14) addresses that struct as a plain global, while Emscripten 3.1.6's
// libunwind-mt defines it `thread_local`; under -pthread wasm-ld resolves the plain references to the symbol's
// offset in the TLS block (address 4, in the null page), so the personality function reads the thread's own,
// empty copy, finds no handler, and no typed catch ever matches: only `catch (...)` did, which is how every
// engine error reached JS as "unknown engine error" (src/wasm/guarded.hpp) in web/dist/attnlab-mt.*. Defining
// the struct (and the functions that read it) here, where the compiler's own view is the only one, keeps
// libunwind's object out of the link. Newer LLVM makes the compiler's reference thread-local too, so this file
// goes when the toolchain moves past LLVM 14.
//
// One context for all threads means two threads must not be inside typed catch clauses at the same moment. The
// engine keeps to that: its pool threads only run kernels and hand any exception back through `catch (...)`
// (src/attnlab/parallel/pool.cpp), which never calls the personality function; typed catches run on the thread
// that called the engine.
#include <cstdint>
#include <unwind.h>

#if !defined(__EMSCRIPTEN_PTHREADS__) || !defined(__wasm_exception_handling__)
#error "pthread_landing_pad.cpp belongs to the threaded wasm build (-pthread -fwasm-exceptions) only"
#endif

extern "C" {

// The layout LLVM's WasmEHPrepare writes: index and LSDA in, the matching clause's selector out.
struct _Unwind_LandingPadContext {
    uintptr_t lpad_index;
    uintptr_t lsda;
    uintptr_t selector;
};

_Unwind_LandingPadContext __wasm_lpad_context;

_Unwind_Reason_Code __gxx_personality_wasm0(int version, _Unwind_Action actions, uint64_t exception_class,
                                            _Unwind_Exception* exception, _Unwind_Context* context);

// Called from every typed catch clause's landing pad. Wasm unwinds in one phase, the cleanup phase.
_Unwind_Reason_Code _Unwind_CallPersonality(void* exception_ptr) {
    auto* exception = static_cast<_Unwind_Exception*>(exception_ptr);
    __wasm_lpad_context.selector = 0;
    return __gxx_personality_wasm0(1, _UA_CLEANUP_PHASE, exception->exception_class, exception,
                                   reinterpret_cast<_Unwind_Context*>(&__wasm_lpad_context));
}

// Called by __cxa_throw and std::rethrow_exception.
_Unwind_Reason_Code _Unwind_RaiseException(_Unwind_Exception* exception) { __builtin_wasm_throw(0, exception); }

// Called by __cxa_end_catch.
void _Unwind_DeleteException(_Unwind_Exception* exception) {
    if (exception->exception_cleanup != nullptr) exception->exception_cleanup(_URC_FOREIGN_EXCEPTION_CAUGHT, exception);
}

// The personality function's accessors. It sets only the selector (register 1), and turns the instruction
// pointer back into the landing-pad index by subtracting 2.
void _Unwind_SetGR(_Unwind_Context* context, int index, _Unwind_Word value) {
    if (index == 1) reinterpret_cast<_Unwind_LandingPadContext*>(context)->selector = value;
}
_Unwind_Word _Unwind_GetIP(_Unwind_Context* context) {
    return reinterpret_cast<_Unwind_LandingPadContext*>(context)->lpad_index + 2;
}
void _Unwind_SetIP(_Unwind_Context*, _Unwind_Word) {}
void* _Unwind_GetLanguageSpecificData(_Unwind_Context* context) {
    return reinterpret_cast<void*>(reinterpret_cast<_Unwind_LandingPadContext*>(context)->lsda);
}
_Unwind_Ptr _Unwind_GetRegionStart(_Unwind_Context*) { return 0; }

}  // extern "C"
