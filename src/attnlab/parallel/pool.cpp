#include "attnlab/parallel/pool.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "attnlab/error.hpp"

// The single-thread wasm build has no threads at all (std::thread would fail at run time): there every parallel
// call is the plain call.
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
#define ATTNLAB_HAVE_THREADS 0
#else
#define ATTNLAB_HAVE_THREADS 1
#endif

#if ATTNLAB_HAVE_THREADS
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>
#endif
#if defined(__EMSCRIPTEN_PTHREADS__)
#include <emscripten.h>
#include <emscripten/threading.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace attnlab {

using parallel::kMaxThreads;

namespace {

// ATTNLAB_THREADS: unset, empty, "auto" or "0" is the default; otherwise a whole number in [1, kMaxThreads].
int threads_from_environment(int fallback) {
#if defined(__EMSCRIPTEN__)
    return fallback;  // a wasm module has no process environment of its own; the JS side calls set_threads
#else
    const char* text = std::getenv("ATTNLAB_THREADS");
    if (text == nullptr || *text == '\0' || std::strcmp(text, "auto") == 0) return fallback;
    char* end = nullptr;
    const long n = std::strtol(text, &end, 10);
    check(*end == '\0' && n >= 0 && n <= kMaxThreads,
          std::string("ATTNLAB_THREADS=") + text + ": not a thread count (a whole number from 1 to " +
              std::to_string(kMaxThreads) + ", or auto)",
          ErrorKind::options);
    return n == 0 ? fallback : static_cast<int>(n);
#endif
}

#if defined(__EMSCRIPTEN_PTHREADS__)
// The workers Emscripten started with the module (PTHREAD_POOL_SIZE, CMakeLists.txt): only those can run a thread
// at once, since a new Web Worker loads only after the thread that asked for it returns to its event loop, and a
// parallel call never does. Read on the module's main thread; elsewhere the list is empty, so other threads get
// max_threads() == 1 and run serially.
EM_JS(int, attnlab_preloaded_workers, (), { return PThread.unusedWorkers.length; });
#endif

int hardware_threads() {
#if defined(__EMSCRIPTEN_PTHREADS__)
    return emscripten_num_logical_cores();
#elif ATTNLAB_HAVE_THREADS
    return static_cast<int>(std::thread::hardware_concurrency());
#else
    return 1;
#endif
}

}  // namespace

int max_threads() {
#if defined(__EMSCRIPTEN_PTHREADS__)
    static const int most = std::clamp(attnlab_preloaded_workers() + 1, 1, kMaxThreads);
    return most;
#elif ATTNLAB_HAVE_THREADS
    return kMaxThreads;
#else
    return 1;
#endif
}

#if !ATTNLAB_HAVE_THREADS

int threads() { return 1; }

void set_threads(int n) {
    check(n == 0 || n == 1, "set_threads(" + std::to_string(n) + "): this build runs one thread (0 or 1)",
          ErrorKind::options);
}

void parallel::run_ranges(int count, int grain, double work, RangeFunction function, void* context) {
    if (count > 0) function(context, 0, count);
}

long long parallel::split_calls() { return 0; }

#else

namespace {

// How long an idle thread polls before it sleeps: a few tens of microseconds (a pause is ~40-140 cycles on
// current x86 cores; a wasm poll is one atomic load). Long enough to span the gap between two kernels of one
// decoder step, short enough not to hold a core through the work between calls.
#if defined(__x86_64__) || defined(__i386__)
constexpr int kSpinIterations = 4096;
inline void pause() { _mm_pause(); }
#else
constexpr int kSpinIterations = 1 << 16;
inline void pause() {}
#endif

// More pieces than threads, taken from a shared counter, so a thread the OS delays (other processes share the
// cores) holds up a small piece and not a whole share.
constexpr int kPiecesPerThread = 4;

thread_local bool tls_inside_job = false;

// A job is published as one atomic word: a counter that changes with every job, and in its low byte how many
// workers take part. A worker that takes no part reads nothing else, so the caller can write the next job while
// it is still looking; one that takes part is waited for before the next job is written.
constexpr int kHelperBits = 8;
static_assert(kMaxThreads < (1 << kHelperBits), "the helper count must fit the job word's low byte");

class Pool {
public:
    ~Pool() { stop_workers(); }

    int threads() {
        std::call_once(default_once_, [this] { wanted_.store(default_threads(), std::memory_order_relaxed); });
        return wanted_.load(std::memory_order_relaxed);
    }

    void set_threads(int n) {
        check(n >= 0 && n <= max_threads(),
              "set_threads(" + std::to_string(n) + "): the thread count must be from 1 to " +
                  std::to_string(max_threads()) + " in this build, or 0 for the default",
              ErrorKind::options);
        const int target = n == 0 ? default_threads() : n;
        std::call_once(default_once_, [] {});
        std::lock_guard<std::mutex> one_job(submit_);
        wanted_.store(target, std::memory_order_relaxed);
        if (static_cast<int>(workers_.size()) + 1 > target) stop_workers();
    }

    void run(int count, int grain, double work, parallel::RangeFunction function, void* context) {
        if (count <= 0) return;
        grain = std::max(grain, 1);
        const int wanted = threads();
        const int pieces = count_pieces(count, grain, work, wanted);
        if (pieces <= 1 || tls_inside_job) {
            function(context, 0, count);
            return;
        }
        std::unique_lock<std::mutex> one_job(submit_, std::try_to_lock);
        if (!one_job.owns_lock()) {  // another thread's call holds the workers: this one runs alone
            function(context, 0, count);
            return;
        }
        start_workers(wanted);
        split_calls_.fetch_add(1, std::memory_order_relaxed);
        job_.function = function;
        job_.context = context;
        job_.count = count;
        job_.pieces = pieces;
        job_.piece = count / pieces / grain * grain;
        job_.next.store(0, std::memory_order_relaxed);
        job_.error = nullptr;
        const int helpers = std::min(static_cast<int>(workers_.size()), pieces - 1);
        pending_.store(helpers, std::memory_order_relaxed);
        publish(helpers);

        tls_inside_job = true;
        run_pieces();
        tls_inside_job = false;
        spin_then_sleep([this] { return pending_.load(std::memory_order_seq_cst) == 0; }, caller_sleeping_, done_);
        if (job_.error) std::rethrow_exception(std::exchange(job_.error, nullptr));
    }

    long long split_calls() const { return split_calls_.load(std::memory_order_relaxed); }

private:
    struct Job {
        parallel::RangeFunction function = nullptr;
        void* context = nullptr;
        int count = 0, piece = 0, pieces = 0;
        std::atomic<int> next{0};
        std::mutex error_mutex;
        std::exception_ptr error;
    };

    static int default_threads() {
        const int hardware = std::max(1, hardware_threads());
        return std::clamp(threads_from_environment(hardware), 1, max_threads());
    }

    // Pieces of whole grains (piece k starts at k·piece, the last one takes the remainder): at most
    // kPiecesPerThread per thread and none below half the serial threshold. 1: run serially.
    static int count_pieces(int count, int grain, double work, int threads) {
        if (threads <= 1 || work < parallel::kMinParallelWork || count < 2 * grain) return 1;
        const double by_work = work / (parallel::kMinParallelWork / 2);
        return static_cast<int>(std::min({static_cast<double>(count / grain),
                                          static_cast<double>(threads * kPiecesPerThread), by_work}));
    }

    void publish(int helpers) {
        const uint64_t counter = (job_word_.load(std::memory_order_relaxed) >> kHelperBits) + 1;  // only we write it
        job_word_.store(counter << kHelperBits | static_cast<uint64_t>(helpers), std::memory_order_seq_cst);
        if (sleepers_.load(std::memory_order_seq_cst) > 0) {
            std::lock_guard<std::mutex> lock(sleep_mutex_);
            wake_.notify_all();
        }
    }

    void run_pieces() {
        for (;;) {
            const int k = job_.next.fetch_add(1, std::memory_order_relaxed);
            if (k >= job_.pieces) return;
            const int begin = k * job_.piece;
            const int end = k == job_.pieces - 1 ? job_.count : begin + job_.piece;
            try {
                job_.function(job_.context, begin, end);
            } catch (...) {
                std::lock_guard<std::mutex> lock(job_.error_mutex);
                if (!job_.error) job_.error = std::current_exception();
                job_.next.store(job_.pieces, std::memory_order_relaxed);  // the others stop at their next piece
            }
        }
    }

    // Waits for `ready` to hold: polls, then sleeps on `cv` (whose notifier checks `sleepers` under sleep_mutex_
    // after changing what `ready` reads, both sequentially consistent, so no wake-up is lost).
    template <class Ready>
    void spin_then_sleep(Ready ready, std::atomic<int>& sleepers, std::condition_variable& cv) {
        for (int i = 0; i < kSpinIterations; ++i) {
            if (ready()) return;
            pause();
        }
        std::unique_lock<std::mutex> lock(sleep_mutex_);
        sleepers.fetch_add(1, std::memory_order_seq_cst);
        cv.wait(lock, ready);
        sleepers.fetch_sub(1, std::memory_order_relaxed);
    }

    // `seen`: the job word when the thread was created, before the job it was created for was published.
    void worker_loop(int index, uint64_t seen) {
        tls_inside_job = true;  // a kernel a worker runs never fans out again
        for (;;) {
            uint64_t word = seen;
            spin_then_sleep([&] { return (word = job_word_.load(std::memory_order_seq_cst)) != seen; }, sleepers_,
                            wake_);
            seen = word;
            if (stopping_.load(std::memory_order_acquire)) return;
            if (index >= static_cast<int>(word & ((1u << kHelperBits) - 1))) continue;
            run_pieces();
            if (pending_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
                caller_sleeping_.load(std::memory_order_seq_cst) > 0) {
                std::lock_guard<std::mutex> lock(sleep_mutex_);
                done_.notify_all();
            }
        }
    }

    // Called with submit_ held.
    void start_workers(int wanted) {
        while (static_cast<int>(workers_.size()) + 1 < wanted) {
            const int index = static_cast<int>(workers_.size());
            const uint64_t seen = job_word_.load(std::memory_order_relaxed);
            workers_.emplace_back([this, index, seen] { worker_loop(index, seen); });
        }
    }

    // Called with submit_ held (or from the destructor).
    void stop_workers() {
        if (workers_.empty()) return;
        stopping_.store(true, std::memory_order_seq_cst);
        publish(0);
        for (std::thread& worker : workers_) worker.join();
        workers_.clear();
        stopping_.store(false, std::memory_order_seq_cst);
    }

    std::once_flag default_once_;
    std::atomic<int> wanted_{1};
    std::mutex submit_;  // one job at a time, held by the caller whose job the workers run
    std::vector<std::thread> workers_;
    Job job_;
    std::atomic<uint64_t> job_word_{0};
    std::atomic<int> pending_{0};  // helpers still working on the current job
    std::atomic<bool> stopping_{false};
    std::mutex sleep_mutex_;
    std::condition_variable wake_, done_;
    std::atomic<int> sleepers_{0}, caller_sleeping_{0};
    std::atomic<long long> split_calls_{0};
};

Pool& pool() {
    static Pool instance;
    return instance;
}

}  // namespace

int threads() { return pool().threads(); }

void set_threads(int n) { pool().set_threads(n); }

void parallel::run_ranges(int count, int grain, double work, RangeFunction function, void* context) {
    pool().run(count, grain, work, function, context);
}

long long parallel::split_calls() { return pool().split_calls(); }

#endif

}  // namespace attnlab
