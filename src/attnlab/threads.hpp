#pragma once
// How many threads the engine's matrix products run on (the calling thread included). Results do not depend on
// it: the work is split along output rows, never along a sum, so every thread count gives the same bits (except
// Model::translate(texts) with f16 weights: its sentences decode in one lane per thread, and a smaller batch's
// float GEMM may round in the last bits; the same tokens).
namespace attnlab {

// set_threads(n) if it was called, else ATTNLAB_THREADS (native builds: a whole number, or "auto"), else the
// CPU's logical cores; never more than max_threads(). An ATTNLAB_THREADS that is no thread count throws
// attnlab::Error (kind options) here and from every call that would run in parallel.
int threads();
// The most threads this build runs: 1 in the single-thread wasm build; in the threaded wasm build the Web Workers
// started with the module, plus the caller (a page cannot start a thread while a call waits for it); 64 natively.
int max_threads();
// n in [1, max_threads()], or 0 for the default above; anything else throws attnlab::Error (kind options). Waits
// for a call another thread is running in parallel; the workers beyond the new count are stopped.
void set_threads(int n);

}  // namespace attnlab
