// The thread pool (parallel/pool.hpp, attnlab/threads.hpp): every piece of a range runs exactly once, on more than
// one thread when the work is large; the dispatched GEMMs and GEMVs split over it give the one-thread result bit
// for bit (shapes with remainders, both split directions, accumulate on and off); and whole models (the fixture and
// shipped translators, the shipped captioner) give identical tokens and attention with 1, 2 and 3 threads (a
// paragraph of f16 weights: the same tokens, attention within float rounding).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "attnlab/attnlab.hpp"
#include "attnlab/audio/wav.hpp"
#include "attnlab/error.hpp"
#include "attnlab/image/decode.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/parallel/pool.hpp"
#include "attnlab/threads.hpp"
#include "test_support.hpp"

using namespace attnlab;

namespace {

// Restores the default thread count when a test case ends, passed or not.
struct ThreadCount {
    explicit ThreadCount(int n) { set_threads(n); }
    ~ThreadCount() { set_threads(0); }
};

// The thread counts a comparison runs: 1 (the reference), 2 and 3 where the build can.
std::vector<int> other_thread_counts() {
    std::vector<int> counts;
    for (int n : {2, 3})
        if (n <= max_threads()) counts.push_back(n);
    return counts;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// run() with 1 thread, then with each other count: the outputs must be the same bits, and the call must have been
// split (else the comparison would prove nothing).
void check_thread_invariant(const char* what, const std::function<std::vector<float>()>& run) {
    std::vector<float> reference;
    {
        ThreadCount one(1);
        reference = run();
    }
    for (int n : other_thread_counts()) {
        ThreadCount count(n);
        const long long before = parallel::split_calls();
        const std::vector<float> out = run();
        INFO(what << " with " << n << " threads");
        CHECK(parallel::split_calls() > before);
        CHECK(same_bits(out, reference));
    }
}

std::vector<kernels::BlockQ8_0> quantized(const std::vector<float>& w) {
    std::vector<kernels::BlockQ8_0> q(w.size() / kernels::kQ8BlockSize);
    kernels::quantize_q8_0(w.data(), w.size(), q.data());
    return q;
}

}  // namespace

TEST_CASE("parallel_for: pieces cover the range once, start at multiples of the grain, run on several threads") {
    if (max_threads() < 2) return;  // the single-thread wasm build: nothing runs in parallel there
    ThreadCount two(2);
    const int count = 64 * 40 + 17;
    std::vector<int> hits(count, 0);
    std::mutex mutex;
    std::set<std::thread::id> seen;
    bool too_short = false;
    parallel::parallel_for(count, 64, 1e9, [&](int begin, int end) {
        {
            std::lock_guard<std::mutex> lock(mutex);
            seen.insert(std::this_thread::get_id());
            if (begin % 64 != 0 || end - begin < 64) too_short = true;
            for (int i = begin; i < end; ++i) ++hits[i];
        }
        // Each piece waits (up to 5 s) until a second thread has entered one, so the check below does not
        // depend on how fast a sleeping worker wakes.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (std::chrono::steady_clock::now() < deadline) {
            std::lock_guard<std::mutex> lock(mutex);
            if (seen.size() >= 2) break;
        }
    });
    CHECK_FALSE(too_short);
    CHECK(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }));
    CHECK(seen.size() == 2);
}

TEST_CASE("parallel_for: small work and nested calls stay on the calling thread; a piece's exception reaches the caller") {
    ThreadCount two(std::min(2, max_threads()));
    const std::thread::id caller = std::this_thread::get_id();
    int calls = 0;
    parallel::parallel_for(1 << 16, 64, parallel::kMinParallelWork / 2, [&](int begin, int end) {
        ++calls;
        CHECK((std::this_thread::get_id() == caller));
        CHECK(begin == 0);
        CHECK(end == 1 << 16);
    });
    CHECK(calls == 1);

    std::atomic<int> nested_calls{0};
    parallel::parallel_for(64 * 8, 64, 1e9, [&](int, int) {
        const std::thread::id outer = std::this_thread::get_id();
        parallel::parallel_for(64 * 8, 64, 1e9, [&](int begin, int end) {
            CHECK((std::this_thread::get_id() == outer));
            CHECK(end - begin == 64 * 8);
            ++nested_calls;
        });
    });
    CHECK(nested_calls.load() >= 1);

    CHECK_THROWS_WITH_AS(parallel::parallel_for(64 * 8, 64, 1e9,
                                                [&](int begin, int end) {
                                                    if (begin <= 320 && 320 < end) fail("piece at 320 failed");
                                                }),
                         "piece at 320 failed", Error);
}

TEST_CASE("for_each_task: each task once; a thread with no task left helps the running task's parallel calls") {
    if (max_threads() < 2) return;  // the single-thread build never splits
    ThreadCount two(2);
    // Task 0 ends at once, so its thread runs out of tasks while task 1 keeps making parallel calls: some of them
    // must be split with it, every piece run once.
    // A bound, not a time: a helper normally takes a piece within the first few calls. Each piece does some work,
    // so that the task's thread cannot claim all of them before a helper that other processes delay looks.
    constexpr int kCalls = 20000;
    const auto some_work = [] {
        volatile float x = 1;
        for (int i = 0; i < 4000; ++i) x = x * 0.999f + 0.001f;
    };
    std::vector<std::atomic<int>> runs(2);
    std::atomic<bool> helped{false};
    const long long before = parallel::helped_calls();
    parallel::for_each_task(2, 1e9, [&](int task) {
        ++runs[task];
        if (task == 0) return;
        const std::thread::id own = std::this_thread::get_id();
        for (int call = 0; call < kCalls && !helped.load(); ++call) {
            std::vector<int> hits(64 * 8, 0);
            std::mutex mutex;
            std::set<std::thread::id> threads_seen;
            parallel::parallel_for(64 * 8, 64, 1e9, [&](int begin, int end) {
                CHECK(begin % 64 == 0);
                for (int i = begin; i < end; ++i) ++hits[i];
                some_work();
                std::lock_guard<std::mutex> lock(mutex);
                threads_seen.insert(std::this_thread::get_id());
            });
            CHECK(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }));
            if (threads_seen.size() > 1 || threads_seen.count(own) == 0) helped = true;
        }
    });
    CHECK(runs[0].load() == 1);
    CHECK(runs[1].load() == 1);
    CHECK(helped.load());
    CHECK(parallel::helped_calls() > before);

    // A helper's piece that throws: the exception leaves the task and reaches for_each_task's caller.
    CHECK_THROWS_WITH_AS(parallel::for_each_task(2, 1e9,
                                                 [&](int task) {
                                                     if (task == 0) return;
                                                     const std::thread::id own = std::this_thread::get_id();
                                                     for (int call = 0; call < kCalls; ++call)
                                                         parallel::parallel_for(64 * 8, 64, 1e9, [&](int, int) {
                                                             some_work();
                                                             if (std::this_thread::get_id() != own)
                                                                 fail("a helper's piece failed");
                                                         });
                                                 }),
                         "a helper's piece failed", Error);
}

TEST_CASE("set_threads from inside a split parallel call is refused, not a deadlock") {
    if (max_threads() < 2) return;  // the single-thread build never splits
    ThreadCount two(2);
    std::atomic<int> refused{0};
    parallel::parallel_for(64 * 8, 64, 1e9, [&](int, int) {
        try {
            set_threads(1);
        } catch (const Error&) {
            ++refused;
        }
    });
    CHECK(refused.load() >= 1);
    CHECK(threads() == 2);
}

TEST_CASE("set_threads: counts outside [0, max_threads()] are refused; 0 restores the default") {
    CHECK_THROWS_AS(set_threads(-1), Error);
    CHECK_THROWS_AS(set_threads(max_threads() + 1), Error);
    set_threads(1);
    CHECK(threads() == 1);
    set_threads(0);
    CHECK(threads() >= 1);
    CHECK(threads() <= max_threads());
}

TEST_CASE("GEMM and GEMV split over threads: the same bits as one thread") {
    if (max_threads() < 2) return;
    for (bool accumulate : {false, true}) {
        CAPTURE(accumulate);
        // N-split (N ≥ M) with a remainder past the last multiple of 64, and M-split (M > N), packed and tiled paths.
        struct Shape { int M, N, K; };
        for (const Shape s : {Shape{4, 1000 + 37, 96}, Shape{7, 640, 130}, Shape{300, 70, 40}, Shape{129, 128, 33}}) {
            CAPTURE(s.M);
            CAPTURE(s.N);
            CAPTURE(s.K);
            const std::vector<float> A = test::random_vector((size_t)s.M * s.K, 1);
            const std::vector<float> Bnt = test::random_vector((size_t)s.N * s.K, 2);
            const std::vector<float> Bnn = test::random_vector((size_t)s.K * s.N, 3);
            const std::vector<float> C0 = test::random_vector((size_t)s.M * s.N, 4);
            check_thread_invariant("gemm_nt", [&] {
                std::vector<float> C = C0;
                kernels::gemm_nt(s.M, s.N, s.K, A.data(), s.K, Bnt.data(), s.K, C.data(), s.N, accumulate);
                return C;
            });
            check_thread_invariant("gemm_nn", [&] {
                std::vector<float> C = C0;
                kernels::gemm_nn(s.M, s.N, s.K, A.data(), s.K, Bnn.data(), s.N, C.data(), s.N, accumulate);
                return C;
            });
            // The same weights packed in panels: pieces of whole panels, the last one with a tail panel.
            const std::vector<float> P = kernels::pack_panels(Bnt.data(), s.N, s.K, s.K);
            check_thread_invariant("gemm_panels", [&] {
                std::vector<float> C = C0;
                kernels::gemm_panels(s.M, s.N, s.K, A.data(), s.K, P.data(), C.data(), s.N, accumulate);
                return C;
            });
        }
        // Q8_0 weights: K a multiple of 32; M = 1, 3 (gemm_nt_q8's per-row GEMV), 5 (its dequantized panels) and
        // 37 (a batched step's rows, whose quantizing splits too).
        for (int M : {1, 3, 5, 37}) {
            CAPTURE(M);
            const int N = 64 * 9 + 5, K = 512;  // M = 1 is still above kMinParallelWork, so it is split
            const std::vector<float> A = test::random_vector((size_t)M * K, 5);
            const std::vector<kernels::BlockQ8_0> B = quantized(test::random_vector((size_t)N * K, 6));
            const std::vector<float> scales4 = kernels::q8_scales_by4(B.data(), N, K);
            const std::vector<float> C0 = test::random_vector((size_t)M * N, 7);
            check_thread_invariant("gemm_nt_q8", [&] {
                std::vector<float> C = C0;
                kernels::gemm_nt_q8(M, N, K, A.data(), K, B.data(), C.data(), N, accumulate);
                return C;
            });
            for (const float* s4 : {static_cast<const float*>(nullptr), scales4.data()}) {
                check_thread_invariant("gemm_nt_q8_q8", [&] {
                    std::vector<float> C = C0;
                    kernels::gemm_nt_q8_q8(M, N, K, A.data(), K, B.data(), C.data(), N, accumulate, s4);
                    return C;
                });
            }
            if (M == 37) {  // the activations' quantizing is a split call of its own, before the product's
                ThreadCount two(2);
                std::vector<float> C = C0;
                const long long before = parallel::split_calls();
                kernels::gemm_nt_q8_q8(M, N, K, A.data(), K, B.data(), C.data(), N, accumulate, scales4.data());
                CHECK(parallel::split_calls() - before == 2);
            }
        }
        // The softmaxes split rows: 37 rows of 8000 logits (a batched step's output), a per-row mask and a
        // broadcast one, the odd last piece included.
        {
            const int rows = 37, cols = 8000;
            const std::vector<float> logits = test::random_vector((size_t)rows * cols, 13);
            std::vector<uint8_t> mask((size_t)rows * cols);
            for (size_t i = 0; i < mask.size(); ++i) mask[i] = (i * 7919) % 11 != 0;
            for (size_t c = 0; c < (size_t)cols; ++c) mask[5 * cols + c] = 0;  // a fully masked row
            for (int ldm : {cols, 0}) {
                check_thread_invariant("log_softmax_rows", [&] {
                    std::vector<float> x = logits;
                    kernels::log_softmax_rows(rows, cols, x.data(), cols, mask.data(), ldm);
                    return x;
                });
                check_thread_invariant("softmax_rows", [&] {
                    std::vector<float> x = logits;
                    kernels::softmax_rows(rows, cols, x.data(), cols, mask.data(), ldm);
                    return x;
                });
            }
            check_thread_invariant("log_softmax_rows unmasked", [&] {
                std::vector<float> x = logits;
                kernels::log_softmax_rows(rows, cols, x.data(), cols);
                return x;
            });
        }
        const int M = 64 * 11 + 3, N = 416;  // M·N above kMinParallelWork; N a multiple of 32 for Q8_0
        const std::vector<float> W = test::random_vector((size_t)M * N, 8);
        const std::vector<float> x = test::random_vector(N, 9);
        const std::vector<float> xt = test::random_vector(N, 10);
        const std::vector<kernels::BlockQ8_0> Wq = quantized(W);
        const std::vector<float> scales4 = kernels::q8_scales_by4(Wq.data(), M, N);
        std::vector<uint16_t> Wh(W.size());
        for (size_t i = 0; i < W.size(); ++i) Wh[i] = kernels::f32_to_f16(W[i]);
        const std::vector<float> y0 = test::random_vector(M, 11);
        const std::vector<float> yt0 = test::random_vector(M - 3, 12);
        check_thread_invariant("gemv", [&] {
            std::vector<float> y = y0;
            kernels::gemv(M, N, W.data(), N, x.data(), y.data(), accumulate);
            return y;
        });
        check_thread_invariant("gemv_t (outputs are columns)", [&] {
            std::vector<float> y = yt0;
            kernels::gemv_t(N, M - 3, W.data(), M, xt.data(), y.data(), accumulate);  // W as [N, M], a slice of columns
            return y;
        });
        check_thread_invariant("gemv_q8", [&] {
            std::vector<float> y = y0;
            kernels::gemv_q8(M, N, Wq.data(), x.data(), y.data(), accumulate);
            return y;
        });
        for (const float* s4 : {static_cast<const float*>(nullptr), scales4.data()}) {
            check_thread_invariant("gemv_q8_q8", [&] {
                std::vector<float> y = y0;
                kernels::gemv_q8_q8(M, N, Wq.data(), x.data(), y.data(), accumulate, s4);
                return y;
            });
        }
        const std::vector<float> P = kernels::pack_panels(W.data(), M, N, N);
        check_thread_invariant("gemv_panels", [&] {
            std::vector<float> y = y0;
            kernels::gemv_panels(M, N, P.data(), x.data(), y.data(), accumulate);
            return y;
        });
        check_thread_invariant("gemv_f16", [&] {
            std::vector<float> y = y0;
            kernels::gemv_f16(M, N, Wh.data(), x.data(), y.data(), accumulate);
            return y;
        });
        const std::vector<float> x5 = test::random_vector((size_t)5 * N, 13);
        check_thread_invariant("gemv_f16_rows", [&] {
            std::vector<float> y((size_t)5 * M);
            kernels::gemv_f16_rows(5, M, N, Wh.data(), x5.data(), N, y.data(), M);
            return y;
        });
    }
}

namespace {

std::vector<float> translation_bits(const Model& model, const std::vector<std::string>& texts, int beam) {
    TranslateOptions options;
    options.beam = beam;
    options.all_layers = true;
    std::vector<float> out;
    for (const std::string& text : texts) {
        const Translation t = model.translate(text, options);
        for (int32_t id : t.target_ids) out.push_back(static_cast<float>(id));
        out.push_back(-1.0f);
        out.insert(out.end(), t.attention.begin(), t.attention.end());
        out.insert(out.end(), t.scores.begin(), t.scores.end());
        out.insert(out.end(), t.context.begin(), t.context.end());
        out.insert(out.end(), t.cross_attention.data.begin(), t.cross_attention.data.end());
        out.push_back(t.log_probability);
    }
    return out;
}

const std::vector<std::string> kSentences = {"A man is riding a bicycle down the street.",
                                             "Two dogs are playing in the snow.",
                                             "A little girl in a pink dress is climbing the stairs of a house."};

}  // namespace

// A paragraph through translate(texts): the sentences (and a shortlist's union and output rows) encoded as tasks,
// decoded together in one lane per thread (decode::search_sentences), their choices of each step made
// concurrently, and the results filled in side by side.
std::vector<Translation> paragraph(const Model& model, int beam, const Shortlist* shortlist = nullptr) {
    TranslateOptions options;
    options.beam = beam;
    options.shortlist = shortlist;
    return model.translate(kSentences, options);
}

std::vector<float> paragraph_bits(const Model& model, int beam, const Shortlist* shortlist = nullptr) {
    std::vector<float> out;
    for (const Translation& t : paragraph(model, beam, shortlist)) {
        for (int32_t id : t.target_ids) out.push_back(static_cast<float>(id));
        out.push_back(-1.0f);
        out.insert(out.end(), t.attention.begin(), t.attention.end());
        out.insert(out.end(), t.scores.begin(), t.scores.end());
        out.push_back(t.log_probability);
    }
    return out;
}

bool close_values(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!(std::abs(a[i] - b[i]) <= 1e-6f + 1e-5f * std::abs(b[i]))) return false;
    return true;
}

// The lanes put a paragraph's sentences in smaller batches with more threads; f16 weights' float GEMM picks its
// path by the row count (register tiles below 8 rows, the packed GEMM above), so its rows may round differently in
// the last bits, never in the tokens.
void check_paragraph_within_rounding(const Model& model, int beam) {
    std::vector<Translation> reference;
    {
        ThreadCount one(1);
        reference = paragraph(model, beam);
    }
    for (int n : other_thread_counts()) {
        ThreadCount count(n);
        CAPTURE(n);
        const std::vector<Translation> out = paragraph(model, beam);
        REQUIRE(out.size() == reference.size());
        for (std::size_t i = 0; i < out.size(); ++i) {
            CHECK(out[i].target_ids == reference[i].target_ids);
            CHECK(close_values(out[i].attention, reference[i].attention));
            CHECK(close_values(out[i].scores, reference[i].scores));
            CHECK(out[i].log_probability == doctest::Approx(reference[i].log_probability).epsilon(1e-5));
        }
    }
}

TEST_CASE("translators give the same tokens, attention and scores with 1, 2 and 3 threads") {
    if (max_threads() < 2) return;
    for (const char* file : {"tests/fixtures/rnn/additive.gguf", "models/weights/bahdanau-en-de.q8_0.gguf",
                             "models/weights/bahdanau-en-de.f16.gguf", "models/weights/transformer-en-de.q8_0.gguf",
                             "models/weights/transformer-en-de.f16.gguf"}) {
        const std::string name = file;  // CAPTURE of a const char* would print the pointer
        CAPTURE(name);
        const Model model = Model::open(test::source_path(file));
        for (int beam : {1, 4}) {
            CAPTURE(beam);
            std::vector<float> reference;
            {
                ThreadCount one(1);
                reference = translation_bits(model, kSentences, beam);
            }
            for (int n : other_thread_counts()) {
                ThreadCount count(n);
                CAPTURE(n);
                CHECK(same_bits(translation_bits(model, kSentences, beam), reference));
            }
            if (std::string(file).find(".f16.") != std::string::npos)
                check_paragraph_within_rounding(model, beam);
            else
                check_thread_invariant("paragraph", [&] { return paragraph_bits(model, beam); });
        }
    }
}

TEST_CASE("a paragraph with the EN-DE shortlist gives the same bits with 1, 2 and 3 threads") {
    if (max_threads() < 2) return;
    const Shortlist shortlist = Shortlist::open(test::source_path("models/weights/en-de.shortlist.gguf"));
    for (const char* file : {"models/weights/bahdanau-en-de.q8_0.gguf", "models/weights/transformer-en-de.q8_0.gguf"}) {
        const std::string name = file;
        CAPTURE(name);
        const Model model = Model::open(test::source_path(file));
        for (int beam : {1, 4}) {
            CAPTURE(beam);
            check_thread_invariant("paragraph with the shortlist",
                                   [&] { return paragraph_bits(model, beam, &shortlist); });
        }
    }
}

TEST_CASE("the shipped captioner gives the same caption and attention with 1 and 2 threads") {
    if (max_threads() < 2) return;
    const Model model = Model::open(test::source_path("models/weights/captioner-flickr8k.q8_0.gguf"));
    const Image image = read_image(test::source_path("web/app/samples/cat.jpg"));
    auto caption_bits = [&] {
        CaptionOptions options;
        options.beam = 3;
        const Caption c = model.caption(image, options);
        std::vector<float> out(c.attention);
        for (int32_t id : c.ids) out.push_back(static_cast<float>(id));
        out.push_back(c.log_probability);
        return out;
    };
    check_thread_invariant("caption", caption_bits);
}

TEST_CASE("the shipped speech recognizer gives the same transcript and attention with 1 and 2 threads") {
    if (max_threads() < 2) return;
    const Model model = Model::open(test::source_path("models/weights/speech-las.q8_0.gguf"));
    const audio::Audio wav = audio::read_wav(test::source_path("web/app/samples/speech/woodchuck.wav"));
    check_thread_invariant("transcribe", [&] {
        TranscribeOptions options;
        options.beam = 4;
        const Transcription t = model.transcribe(wav.samples.data(), wav.samples.size(), wav.sample_rate, options);
        std::vector<float> out(t.attention);
        for (int32_t id : t.ids) out.push_back(static_cast<float>(id));
        out.push_back(t.log_probability);
        return out;
    });
}
