#pragma once
// The engine's one thread pool: created at the first parallel call, N-1 workers plus the calling thread. The
// kernel dispatcher (kernels/dispatch.cpp) splits GEMM and GEMV output rows over it, never a reduction; above the
// kernels, nn::bigru_forward runs its two directions as two pieces, nn::attend_rows / attend_rows_each and the
// Transformer's batched step split a batch's attention rows (for_each_item), the int8 products the rows of their
// activations' quantizing, and as tasks (for_each_task, below) decode::search_sentences its lanes of sentences
// (each lane a batch decoded on one thread, its products split only once a thread has no lane left) and
// Model::translate(texts) the sentences' encoders. Every output value
// is computed by the same instructions in the same order whatever the thread count: the results are bit-identical
// to one thread's (tests/cpp/test_parallel.cpp checks kernels and models), except where the lanes change a batch's
// row count for a kernel that picks its path by it (the f16 weights' float GEMM: decode/sentences.hpp).
//
// Workers that run out of work spin for up to ~0.2 ms (a decoder step is a burst of GEMVs a few
// microseconds apart, and waking a sleeping thread costs more than that), then sleep on a condition variable; a
// thread helping tasks polls (yielding its core after ~0.2 ms idle) until the last task ends.
// A call made while another thread's parallel_for runs, or from inside one, runs on its own thread alone, except
// inside a for_each_task task once a thread has no task left (below).
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

// The type-erased core of parallel_for (tasks: false) and for_each_task (tasks: true).
void run_ranges(int count, int grain, double work, RangeFunction function, void* context, bool tasks = false);

// Calls body(begin, end) on disjoint pieces covering [0, count) exactly once, on up to attnlab::threads() threads. Every
// piece starts at a multiple of `grain` and holds at least `grain` items (the last one takes the remainder), so a
// kernel that treats rows in groups of `grain`, or picks its path by shape, does the same for every piece as for
// the whole. work: the cost of the whole range in multiply-adds; below kMinParallelWork, with count < 2·grain or
// with one thread, it is one call body(0, count) on this thread. The first exception a piece throws is rethrown
// here once every piece has stopped.
template <class Body>
void parallel_for(int count, int grain, double work, Body&& body) {
    using Stored = std::remove_reference_t<Body>;
    run_ranges(count, grain, work,
               [](void* context, int begin, int end) { (*static_cast<Stored*>(context))(begin, end); },
               const_cast<void*>(static_cast<const void*>(&body)));
}

// How many parallel_for calls so far were split over more than one thread (the tests check that the shapes they
// compare across thread counts were really split), and how many of them were calls from inside a for_each_task
// task split with threads that had run out of tasks.
long long split_calls();
long long helped_calls();

// item(i) for every i in [0, count), split over the pool like parallel_for with a grain of 1; work_per_item: one
// item's cost in multiply-adds. For items that write only their own outputs (the rows of a batch attending, each
// piece with its own thread_local scratch): every item is computed by the same instructions, so the same bits.
template <class Item>
void for_each_item(int count, double work_per_item, const Item& item) {
    parallel_for(count, 1, count * work_per_item, [&](int begin, int end) {
        for (int i = begin; i < end; ++i) item(i);
    });
}

// task(i) for every i in [0, count): long items of uneven cost (a lane of sentences, a sentence's encoder), each run
// whole on one thread, taken in order from a shared counter. While every thread has a task, the parallel calls
// inside a task run on its own thread (as inside any parallel_for piece); a thread that finds no task left helps
// the tasks still running, which then split their parallel calls with it, so the last task does not run on one
// thread while the others wait. The split calls compute every value as they do unsplit (the same bits).
template <class Task>
void for_each_task(int count, double work_per_task, const Task& task) {
    auto body = [&](int begin, int end) {
        for (int i = begin; i < end; ++i) task(i);
    };
    run_ranges(count, 1, count * work_per_task,
               [](void* context, int begin, int end) { (*static_cast<decltype(body)*>(context))(begin, end); },
               &body, true);
}

}  // namespace attnlab::parallel
