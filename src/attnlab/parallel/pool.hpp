#pragma once
// The engine's one thread pool: created at the first parallel call, N-1 workers plus the calling thread. The
// kernel dispatcher (kernels/dispatch.cpp) splits GEMM and GEMV output rows over it, never a reduction; above the
// kernels, nn::bigru_forward runs its two directions as two pieces, nn::attend_rows / attend_rows_each and the
// Transformer's batched step split a batch's attention rows (for_each_item), the int8 products the rows of their
// activations' quantizing, decode::search_sentences its lanes of sentences (each lane a batch decoded on one
// thread, the products inside it unsplit) and Model::translate(texts) the sentences' encoders. Every output value
// is computed by the same instructions in the same order whatever the thread count: the results are bit-identical
// to one thread's (tests/cpp/test_parallel.cpp checks kernels and models), except where the lanes change a batch's
// row count for a kernel that picks its path by it (the f16 weights' float GEMM: decode/sentences.hpp).
//
// Workers that run out of work spin for up to ~0.2 ms (a decoder step is a burst of GEMVs a few
// microseconds apart, and waking a sleeping thread costs more than that), then sleep on a condition variable.
// A call made while another thread's parallel_for runs, or from inside one, runs on its own thread alone.
#include <cstddef>
#include <type_traits>

#include "attnlab/threads.hpp"

namespace attnlab::parallel {

constexpr int kMaxThreads = 64;
// The least work, in multiply-adds, a piece is given: handing one to a worker costs ~1 µs when it spins and tens
// when it sleeps, and every piece is a claim on a cache line both cores write, while an int8 512×512 GEMV (256 Ki
// multiply-adds) takes ~4 µs on one core natively and ~6 µs in wasm: cut into 32 Ki pieces it would be 8 round
// trips at 2 threads. (bench_kernels split_ compares piece counts; on the shared 2-core machine it was measured on,
// the spread hid any difference: docs/performance.md, "Q8_0 and threads".)
constexpr double kMinPieceWork = 131072.0;
// A range whose whole cost is below this many multiply-adds runs on the calling thread (two pieces' worth).
constexpr double kMinParallelWork = 2 * kMinPieceWork;

using RangeFunction = void (*)(void* context, int begin, int end);

// The type-erased core of parallel_for.
void run_ranges(int count, int grain, double work, RangeFunction function, void* context);

// Calls body(begin, end) on disjoint pieces covering [0, count) exactly once, on up to attnlab::threads() threads. Every
// piece starts at a multiple of `grain` and holds at least `grain` items (the last one takes the remainder), so a
// kernel that treats rows in groups of `grain`, or picks its path by shape, does the same for every piece as for
// the whole. work: the cost of the whole range in multiply-adds; below kMinParallelWork, with count < 2·grain or
// with one thread, it is one call body(0, count) on this thread. The first exception a piece throws is rethrown
// here once every piece has stopped.
// How many parallel_for calls so far were split over more than one thread (the tests check that the shapes they
// compare across thread counts were really split).
long long split_calls();

template <class Body>
void parallel_for(int count, int grain, double work, Body&& body) {
    using Stored = std::remove_reference_t<Body>;
    run_ranges(count, grain, work,
               [](void* context, int begin, int end) { (*static_cast<Stored*>(context))(begin, end); },
               const_cast<void*>(static_cast<const void*>(&body)));
}

// item(i) for every i in [0, count), split over the pool like parallel_for with a grain of 1; work_per_item: one
// item's cost in multiply-adds. For items that write only their own outputs (the rows of a batch attending, each
// piece with its own thread_local scratch): every item is computed by the same instructions, so the same bits.
template <class Item>
void for_each_item(int count, double work_per_item, const Item& item) {
    parallel_for(count, 1, count * work_per_item, [&](int begin, int end) {
        for (int i = begin; i < end; ++i) item(i);
    });
}

}  // namespace attnlab::parallel
