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
// (maybe_unused: the single-thread wasm build has no pool to ask these.)
[[maybe_unused]] int threads_from_environment(int fallback) {
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

[[maybe_unused]] int hardware_threads() {
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

void parallel::run_ranges(int count, int grain, double work, RangeFunction function, void* context, bool tasks) {
    if (count > 0) function(context, 0, count);
}

long long parallel::split_calls() { return 0; }
long long parallel::helped_calls() { return 0; }

#else

namespace {

// How long an idle thread polls before it sleeps: up to ~0.2 ms (4096 pauses of ~40-140 cycles on current x86
// cores; a wasm poll is one atomic load). Long enough to span the gap between two kernels of one
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
// Set while this thread runs a piece of a for_each_task job: its parallel calls may be split with helpers.
thread_local bool tls_in_task = false;

// A job is one atomic word: [tasks: 1 bit][job id: 31 bits][pieces: 16][next piece: 16]. A thread claims a piece
// with a compare-and-swap that also checks the id, so a worker that wakes late can never take a piece of a newer
// job with an older job's description; the caller waits only for pieces that were claimed (it runs every
// unclaimed one itself), never for a worker to show up, which matters when other processes keep a worker off its
// core. The tasks bit marks a for_each_task job: a thread that finds no piece left helps the running ones.
constexpr int kPieceBits = 16;
constexpr uint64_t kPieceMask = (uint64_t{1} << kPieceBits) - 1;
constexpr uint64_t kTasksBit = uint64_t{1} << 63;
constexpr uint64_t kIdMask = (uint64_t{1} << 31) - 1;
static_assert(kMaxThreads * kPiecesPerThread < (1 << kPieceBits), "piece counts must fit the job word");

uint64_t id_of(uint64_t word) { return (word >> (2 * kPieceBits)) & kIdMask; }
bool tasks_of(uint64_t word) { return (word & kTasksBit) != 0; }
int pieces_of(uint64_t word) { return static_cast<int>((word >> kPieceBits) & kPieceMask); }
int next_of(uint64_t word) { return static_cast<int>(word & kPieceMask); }
uint64_t job_word(uint64_t id, int pieces, bool tasks) {
    return (tasks ? kTasksBit : 0) | (id & kIdMask) << (2 * kPieceBits) | static_cast<uint64_t>(pieces) << kPieceBits;
}

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
        // The caller of a parallel call holds submit_ while its pieces run: from inside one this would deadlock.
        check(!tls_inside_job, "set_threads: not from inside a parallel call", ErrorKind::options);
        const int target = n == 0 ? default_threads() : n;
        std::call_once(default_once_, [] {});
        std::lock_guard<std::mutex> one_job(submit_);
        wanted_.store(target, std::memory_order_relaxed);
        if (static_cast<int>(workers_.size()) + 1 > target) stop_workers();
    }

    void run(int count, int grain, double work, parallel::RangeFunction function, void* context, bool tasks) {
        if (count <= 0) return;
        grain = std::max(grain, 1);
        const int wanted = threads();
        const int pieces = count_pieces(count, grain, work, wanted);
        if (pieces <= 1) {
            function(context, 0, count);
            return;
        }
        if (tls_inside_job) {
            if (!(tls_in_task && run_helped(count, grain, work, function, context))) function(context, 0, count);
            return;
        }
        std::unique_lock<std::mutex> one_job(submit_, std::try_to_lock);
        if (!one_job.owns_lock()) {  // another thread's call holds the workers: this one runs alone
            function(context, 0, count);
            return;
        }
        start_workers(wanted);
        split_calls_.fetch_add(1, std::memory_order_relaxed);
        const uint64_t id = main_.describe(count, grain, pieces, function, context);
        publish(job_word(id, pieces, tasks));

        tls_inside_job = true;
        run_pieces(main_, id);
        if (tasks) help(id);
        tls_inside_job = false;
        spin_then_sleep([&] { return main_.done.load(std::memory_order_seq_cst) == pieces; }, caller_sleeping_,
                        finished_);
        if (main_.error) std::rethrow_exception(std::exchange(main_.error, nullptr));
    }

    long long split_calls() const { return split_calls_.load(std::memory_order_relaxed); }
    long long helped_calls() const { return helped_calls_.load(std::memory_order_relaxed); }

private:
    // A job's description and progress. The fields are written by the publisher before it publishes the job word;
    // read by a thread only after it claimed a piece, and the publisher does not write them again until every
    // claimed piece is done.
    struct Slot {
        parallel::RangeFunction function = nullptr;
        void* context = nullptr;
        int count = 0, piece = 0;
        std::atomic<bool> failed{false};
        std::mutex error_mutex;
        std::exception_ptr error;
        std::atomic<uint64_t> word{0};
        std::atomic<int> done{0};  // pieces of the current job finished

        // Fills in a new job and returns its id (only the publisher writes new ids).
        uint64_t describe(int count_, int grain, int pieces, parallel::RangeFunction function_, void* context_) {
            function = function_;
            context = context_;
            count = count_;
            piece = count_ / pieces / grain * grain;
            failed.store(false, std::memory_order_relaxed);
            error = nullptr;
            done.store(0, std::memory_order_relaxed);
            return (id_of(word.load(std::memory_order_relaxed)) + 1) & kIdMask;
        }
    };

    // A parallel call from inside a task while some thread helps (help()): published as the one sub-job, its
    // pieces shared with the helpers. False (nothing run) when no thread helps or another task's sub-job runs.
    bool run_helped(int count, int grain, double work, parallel::RangeFunction function, void* context) {
        const int helpers = helpers_.load(std::memory_order_seq_cst);
        if (helpers == 0) return false;
        const int pieces = count_pieces(count, grain, work, helpers + 1);
        if (pieces <= 1 || sub_busy_.exchange(true, std::memory_order_acquire)) return false;
        split_calls_.fetch_add(1, std::memory_order_relaxed);
        helped_calls_.fetch_add(1, std::memory_order_relaxed);
        const uint64_t id = sub_.describe(count, grain, pieces, function, context);
        sub_.word.store(job_word(id, pieces, false), std::memory_order_seq_cst);
        run_pieces(sub_, id);
        // A sub-job's pieces are a kernel's share (microseconds) and its helpers poll for them: no sleeping here.
        while (sub_.done.load(std::memory_order_acquire) != pieces) pause();
        std::exception_ptr error = std::exchange(sub_.error, nullptr);
        sub_busy_.store(false, std::memory_order_release);
        if (error) std::rethrow_exception(error);
        return true;
    }

    // Runs pieces of the sub-jobs the tasks of job `id` publish, until every piece of that job is done.
    void help(uint64_t id) {
        helpers_.fetch_add(1, std::memory_order_seq_cst);
        for (int idle = 0;;) {
            const uint64_t word = main_.word.load(std::memory_order_acquire);
            if (id_of(word) != id || main_.done.load(std::memory_order_acquire) >= pieces_of(word)) break;
            const uint64_t sub = sub_.word.load(std::memory_order_acquire);
            if (next_of(sub) < pieces_of(sub)) {
                run_pieces(sub_, id_of(sub));
                idle = 0;
            } else if (++idle < kSpinIterations) {
                pause();
            } else {
                std::this_thread::yield();
            }
        }
        helpers_.fetch_sub(1, std::memory_order_seq_cst);
    }

    static int default_threads() {
        const int hardware = std::max(1, hardware_threads());
        return std::clamp(threads_from_environment(hardware), 1, max_threads());
    }

    // Pieces of whole grains (piece k starts at k·piece, the last one takes the remainder): at most
    // kPiecesPerThread per thread and none below kMinPieceWork. 1: run serially.
    static int count_pieces(int count, int grain, double work, int threads) {
        if (threads <= 1 || work < parallel::kMinParallelWork || count < 2 * grain) return 1;
        const double by_work = work / parallel::kMinPieceWork;
        return static_cast<int>(std::min({static_cast<double>(count / grain),
                                          static_cast<double>(threads * kPiecesPerThread), by_work}));
    }

    void publish(uint64_t word) {
        main_.word.store(word, std::memory_order_seq_cst);
        if (sleepers_.load(std::memory_order_seq_cst) > 0) {
            std::lock_guard<std::mutex> lock(sleep_mutex_);
            wake_.notify_all();
        }
    }

    // Claims and runs pieces of the slot's job `id` until none is left (or the job is no longer the current one).
    void run_pieces(Slot& slot, uint64_t id) {
        uint64_t word = slot.word.load(std::memory_order_acquire);
        for (;;) {
            if (id_of(word) != id || next_of(word) >= pieces_of(word)) return;
            if (!slot.word.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel, std::memory_order_acquire))
                continue;
            const int k = next_of(word), pieces = pieces_of(word);
            word = word + 1;
            const int begin = k * slot.piece;
            const int end = k == pieces - 1 ? slot.count : begin + slot.piece;
            if (!slot.failed.load(std::memory_order_relaxed)) {
                const bool outer = tls_in_task;
                tls_in_task = tasks_of(word);
                try {
                    slot.function(slot.context, begin, end);
                } catch (...) {
                    std::lock_guard<std::mutex> lock(slot.error_mutex);
                    if (!slot.error) slot.error = std::current_exception();
                    slot.failed.store(true, std::memory_order_relaxed);  // the other pieces are skipped
                }
                tls_in_task = outer;
            }
            if (slot.done.fetch_add(1, std::memory_order_seq_cst) + 1 == pieces && &slot == &main_ &&
                caller_sleeping_.load(std::memory_order_seq_cst) > 0) {
                std::lock_guard<std::mutex> lock(sleep_mutex_);
                finished_.notify_all();
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

    // `seen`: the job id when the thread was created, before the job it was created for was published.
    void worker_loop(uint64_t seen) {
        tls_inside_job = true;  // a kernel a worker runs never fans out again
        for (;;) {
            uint64_t word = 0;
#if defined(ATTNLAB_POOL_NEVER_SLEEPS)
            // For measurements only (docs/performance.md, "The engine alone and the page around it"): each worker
            // polls for the next job for as long as the pool exists, holding a core.
            while (id_of(word = main_.word.load(std::memory_order_seq_cst)) == seen) pause();
#else
            spin_then_sleep([&] { return id_of(word = main_.word.load(std::memory_order_seq_cst)) != seen; },
                            sleepers_, wake_);
#endif
            seen = id_of(word);
            if (stopping_.load(std::memory_order_acquire)) return;
            run_pieces(main_, seen);
            if (tasks_of(word)) help(seen);
        }
    }

    // Called with submit_ held.
    void start_workers(int wanted) {
        while (static_cast<int>(workers_.size()) + 1 < wanted) {
            const uint64_t seen = id_of(main_.word.load(std::memory_order_relaxed));
            workers_.emplace_back([this, seen] { worker_loop(seen); });
        }
    }

    // Called with submit_ held (or from the destructor).
    void stop_workers() {
        if (workers_.empty()) return;
        stopping_.store(true, std::memory_order_seq_cst);
        publish(job_word(id_of(main_.word.load(std::memory_order_relaxed)) + 1, 0, false));  // a job of no pieces
        for (std::thread& worker : workers_) worker.join();
        workers_.clear();
        stopping_.store(false, std::memory_order_seq_cst);
    }

    std::once_flag default_once_;
    std::atomic<int> wanted_{1};
    std::mutex submit_;  // one job at a time, held by the caller whose job the workers run
    std::vector<std::thread> workers_;
    Slot main_;                          // the caller's job
    Slot sub_;                           // a task's parallel call shared with helpers (one at a time)
    std::atomic<bool> sub_busy_{false};  // a task holds sub_
    std::atomic<int> helpers_{0};        // threads in help()
    std::atomic<bool> stopping_{false};
    std::mutex sleep_mutex_;
    std::condition_variable wake_, finished_;
    std::atomic<int> sleepers_{0}, caller_sleeping_{0};
    std::atomic<long long> split_calls_{0}, helped_calls_{0};
};

Pool& pool() {
    static Pool instance;
    return instance;
}

}  // namespace

int threads() { return pool().threads(); }

void set_threads(int n) { pool().set_threads(n); }

void parallel::run_ranges(int count, int grain, double work, RangeFunction function, void* context, bool tasks) {
    pool().run(count, grain, work, function, context, tasks);
}

long long parallel::split_calls() { return pool().split_calls(); }
long long parallel::helped_calls() { return pool().helped_calls(); }

#endif

}  // namespace attnlab
