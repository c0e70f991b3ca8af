// Kernel benchmark: SIMD kernels (attnlab::kernels) against the scalar reference, natively and in wasm.
// Prints a table, then as its LAST line one JSON object that bench/bench_kernels.mjs parses:
//   {"simd": "<simd_name()>", "results": {"gemm_nt_256_f32": {"simd_gflops": x, "scalar_gflops": y}, ...}}
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "attnlab/kernels/gemm.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/kernels/q8_activations.hpp"
#include "attnlab/parallel/pool.hpp"
#include "attnlab/threads.hpp"
#include "variants/variants.hpp"

namespace k = attnlab::kernels;
namespace ref = attnlab::kernels::reference;

namespace {

std::vector<float> random_floats(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

// Best seconds per call over many short trials. The machine is shared (load averages of 10+ on 2 cores):
// a trial of ~2 ms usually runs inside one scheduler slice, so the fastest trials measure the kernel
// rather than the neighbours; long trials would average in the time other processes ran.
double seconds_per_call(const std::function<void()>& call) {
    using clock = std::chrono::steady_clock;
    auto t0 = clock::now();
    call();  // warm-up, and the calibration
    const double once = std::chrono::duration<double>(clock::now() - t0).count();
    const int reps = std::max(1, int(0.002 / std::max(once, 1e-9)));
    double best = 1e30, spent = 0;
    for (int trial = 0; trial < 200 && (trial < 10 || spent < 0.4); ++trial) {
        t0 = clock::now();
        for (int r = 0; r < reps; ++r) call();
        const double seconds = std::chrono::duration<double>(clock::now() - t0).count();
        spent += seconds;
        best = std::min(best, seconds / reps);
    }
    return best;
}

// Two implementations of one case timed in alternating trials (a, b, a, b, ...), best of each: a ratio between
// them is not skewed by a neighbour that took the CPU during one of them only.
std::pair<double, double> seconds_interleaved(const std::function<void()>& a, const std::function<void()>& b) {
    using clock = std::chrono::steady_clock;
    auto calibrate = [](const std::function<void()>& call) {
        const auto t0 = clock::now();
        call();
        const double once = std::chrono::duration<double>(clock::now() - t0).count();
        return std::max(1, int(0.002 / std::max(once, 1e-9)));
    };
    const int reps_a = calibrate(a), reps_b = calibrate(b);
    double best_a = 1e30, best_b = 1e30, spent = 0;
    for (int trial = 0; trial < 100 && (trial < 10 || spent < 0.3); ++trial) {
        for (int which = 0; which < 2; ++which) {
            const auto& call = which ? b : a;
            const int reps = which ? reps_b : reps_a;
            const auto t0 = clock::now();
            for (int r = 0; r < reps; ++r) call();
            const double seconds = std::chrono::duration<double>(clock::now() - t0).count();
            spent += seconds;
            double& best = which ? best_b : best_a;
            best = std::min(best, seconds / reps);
        }
    }
    return {best_a, best_b};
}

struct Result {
    std::string name;
    double flops;
    double simd_gflops, scalar_gflops;
};

}  // namespace

// Optional argument: run only the cases whose name contains it (e.g. bench_kernels gemm_nt).
int main(int argc, char** argv) {
    const std::string only = argc > 1 ? argv[1] : "";
    const int n = 256;
    const auto A = random_floats((size_t)n * n, 1), B = random_floats((size_t)n * n, 2);
    std::vector<float> C((size_t)n * n);
    const auto W = random_floats((size_t)512 * 2048, 3);
    const auto x = random_floats(2048, 4);
    std::vector<float> y(2048);
    std::vector<k::BlockQ8_0> Wq((size_t)512 * 2048 / k::kQ8BlockSize), Bq((size_t)n * n / k::kQ8BlockSize);
    k::quantize_q8_0(W.data(), W.size(), Wq.data());
    k::quantize_q8_0(B.data(), B.size(), Bq.data());

    std::vector<Result> results;
    auto run = [&](const std::string& name, double flops, const std::function<void()>& simd,
                   const std::function<void()>& scalar) {
        if (name.find(only) == std::string::npos) return;
        const double t_simd = seconds_per_call(simd), t_scalar = seconds_per_call(scalar);
        results.push_back({name, flops, flops / t_simd * 1e-9, flops / t_scalar * 1e-9});
        std::printf("%-28s %10.2f %10.2f %8.1fx\n", name.c_str(), results.back().simd_gflops,
                    results.back().scalar_gflops, t_scalar / t_simd);
        std::fflush(stdout);
    };

    std::printf("simd: %s\n%-28s %10s %10s %9s\n", k::simd_name(), "case (GFLOP/s)", "simd", "scalar", "speedup");
    const double gemm_flops = 2.0 * n * n * n;
    run("gemm_nn_256_f32", gemm_flops, [&] { k::gemm_nn(n, n, n, A.data(), n, B.data(), n, C.data(), n); },
        [&] { ref::gemm_nn(n, n, n, A.data(), n, B.data(), n, C.data(), n); });
    run("gemm_nn_256_f32_tiles", gemm_flops,
        [&] { k::gemm_nn_tiles(n, n, n, A.data(), n, B.data(), n, C.data(), n); },
        [&] { ref::gemm_nn(n, n, n, A.data(), n, B.data(), n, C.data(), n); });
    run("gemm_nt_256_f32", gemm_flops, [&] { k::gemm_nt(n, n, n, A.data(), n, B.data(), n, C.data(), n); },
        [&] { ref::gemm_nt(n, n, n, A.data(), n, B.data(), n, C.data(), n); });
    // The gemm_nt implementations gemm_nt chooses between (the scalar column repeats the reference).
    run("gemm_nt_256_f32_dot_xsimd", gemm_flops,
        [&] { k::gemm_nt_dot_tiles(n, n, n, A.data(), n, B.data(), n, C.data(), n); },
        [&] { ref::gemm_nt(n, n, n, A.data(), n, B.data(), n, C.data(), n); });
    {
        const auto packed = k::pack_panels(B.data(), n, n, n);
        run("gemm_panels_256_f32", gemm_flops,
            [&] { k::gemm_panels(n, n, n, A.data(), n, packed.data(), C.data(), n); },
            [&] { ref::gemm_nt(n, n, n, A.data(), n, B.data(), n, C.data(), n); });
    }
    run("gemm_nt_256_f32_packed", gemm_flops,
        [&] { k::gemm_nt_packed(n, n, n, A.data(), n, B.data(), n, C.data(), n); },
        [&] { ref::gemm_nt(n, n, n, A.data(), n, B.data(), n, C.data(), n); });
    {
        // An encoder's shape: a 20-token sentence through a 512 -> 2048 layer, where packing the weights is a larger
        // share of the work than in the square case.
        const int M = 20, N = 2048, K = 512;
        const double flops = 2.0 * M * N * K;
        std::vector<float> Y((size_t)M * N);
        run("gemm_nt_20x2048x512_f32", flops, [&] { k::gemm_nt(M, N, K, W.data(), K, W.data(), K, Y.data(), N); },
            [&] { ref::gemm_nt(M, N, K, W.data(), K, W.data(), K, Y.data(), N); });
        // The same product on the panel-packed weights nn::Linear holds for f32, and at a batched beam step's 4 and
        // 16 rows (beam 4 over 1 and 4 sentences).
        const auto packed = k::pack_panels(W.data(), N, K, K);
        for (int rows : {4, 16, 20}) {
            const double rows_flops = 2.0 * rows * N * K;
            const std::string shape = std::to_string(rows) + "x2048x512";
            if (rows != M)
                run("gemm_nt_" + shape + "_f32", rows_flops,
                    [&] { k::gemm_nt(rows, N, K, W.data(), K, W.data(), K, Y.data(), N); },
                    [&] { ref::gemm_nt(rows, N, K, W.data(), K, W.data(), K, Y.data(), N); });
            run("gemm_panels_" + shape + "_f32", rows_flops,
                [&] { k::gemm_panels(rows, N, K, W.data(), K, packed.data(), Y.data(), N); },
                [&] { ref::gemm_nt(rows, N, K, W.data(), K, W.data(), K, Y.data(), N); });
        }
    }
#if defined(__wasm_simd128__)
    run("gemm_nt_256_f32_dot_wasm128", gemm_flops,
        [&] { k::variants::gemm_nt_wasm128(n, n, n, A.data(), n, B.data(), n, C.data(), n); },
        [&] { ref::gemm_nt(n, n, n, A.data(), n, B.data(), n, C.data(), n); });
#endif
    {
        // A translator's output projection (8000 pieces × 512, 16 MB in f32): larger than L2, so it streams from L3
        // or memory on every step, unlike the 4 MB shapes below.
        const int M = 8000, N = 512;
        const double flops = 2.0 * M * N;
        const auto Wout = random_floats((size_t)M * N, 5);
        std::vector<float> logits(M);
        std::vector<k::BlockQ8_0> Wout_q((size_t)M * N / k::kQ8BlockSize);
        k::quantize_q8_0(Wout.data(), Wout.size(), Wout_q.data());
        const auto scales = k::q8_scales_by4(Wout_q.data(), M, N);
        const auto packed = k::pack_panels(Wout.data(), M, N, N);
        run("gemv_8000x512_f32", flops, [&] { k::gemv(M, N, Wout.data(), N, x.data(), logits.data()); },
            [&] { ref::gemv(M, N, Wout.data(), N, x.data(), logits.data()); });
        run("gemv_8000x512_f32_panels", flops, [&] { k::gemv_panels(M, N, packed.data(), x.data(), logits.data()); },
            [&] { ref::gemv(M, N, Wout.data(), N, x.data(), logits.data()); });
        run("gemv_q8_8000x512_q8q8_scales", flops,
            [&] { k::gemv_q8_q8(M, N, Wout_q.data(), x.data(), logits.data(), false, scales.data()); },
            [&] { ref::gemv_q8_q8(M, N, Wout_q.data(), x.data(), logits.data()); });
    }
    {
        // Elementwise and row kernels a batched step runs (the "GFLOP/s" column: G elements per second): the GRU's
        // gates and the additive score's tanh, and the log-softmax over 32 rows of an 8000-piece vocabulary.
        const int n = 32 * 8000;
        const auto input = random_floats(n, 6);
        std::vector<float> work(input);
        run("activate_tanh_256000", n, [&] { std::copy(input.begin(), input.end(), work.begin()); k::activate(work.data(), n, k::Activation::tanh); },
            [&] { std::copy(input.begin(), input.end(), work.begin()); ref::activate(work.data(), n, k::Activation::tanh); });
        run("activate_sigmoid_256000", n, [&] { std::copy(input.begin(), input.end(), work.begin()); k::activate(work.data(), n, k::Activation::sigmoid); },
            [&] { std::copy(input.begin(), input.end(), work.begin()); ref::activate(work.data(), n, k::Activation::sigmoid); });
        run("log_softmax_32x8000", n, [&] { std::copy(input.begin(), input.end(), work.begin()); k::log_softmax_rows(32, 8000, work.data(), 8000); },
            [&] { std::copy(input.begin(), input.end(), work.begin()); ref::log_softmax_rows(32, 8000, work.data(), 8000); });
        run("copy_256000", n, [&] { std::copy(input.begin(), input.end(), work.begin()); },
            [&] { std::copy(input.begin(), input.end(), work.begin()); });
    }
    for (const auto& shape_mn : {std::pair{512, 2048}, std::pair{2048, 512}}) {
        const int M = shape_mn.first, N = shape_mn.second;  // (clang 14 cannot capture structured bindings)
        const std::string shape = std::to_string(M) + "x" + std::to_string(N);
        const double flops = 2.0 * M * N;
        run("gemv_" + shape + "_f32", flops, [&] { k::gemv(M, N, W.data(), N, x.data(), y.data()); },
            [&] { ref::gemv(M, N, W.data(), N, x.data(), y.data()); });
        // The same weights held as halves (f16 files keep them so natively with F16C; not what the models run yet).
        std::vector<uint16_t> W16(W.size());
        for (std::size_t i = 0; i < W16.size(); ++i) W16[i] = k::f32_to_f16(W[i]);
        {
            const auto packed = k::pack_panels(W.data(), M, N, N);
            run("gemv_" + shape + "_f32_panels", flops, [&] { k::gemv_panels(M, N, packed.data(), x.data(), y.data()); },
                [&] { ref::gemv(M, N, W.data(), N, x.data(), y.data()); });
        }
        run("gemv_" + shape + "_f16", flops, [&] { k::gemv_f16(M, N, W16.data(), x.data(), y.data()); },
            [&] { ref::gemv(M, N, W.data(), N, x.data(), y.data()); });
        run("gemv_t_" + shape + "_f32", flops, [&] { k::gemv_t(M, N, W.data(), N, x.data(), y.data()); },
            [&] { ref::gemv_t(M, N, W.data(), N, x.data(), y.data()); });
        run("gemv_q8_" + shape, flops, [&] { k::gemv_q8(M, N, Wq.data(), x.data(), y.data()); },
            [&] { ref::gemv_q8(M, N, Wq.data(), x.data(), y.data()); });
        // Opt-in int8 path (x quantized too); scalar column: the float reference gemv_q8.
        run("gemv_q8_" + shape + "_int8", flops, [&] { k::variants::gemv_q8_int8(M, N, Wq.data(), x.data(), y.data()); },
            [&] { ref::gemv_q8(M, N, Wq.data(), x.data(), y.data()); });
        // What the decoders run for Q8_0 weights: x quantized too, 4 rows per pass; scalar column: its reference.
        run("gemv_q8_" + shape + "_q8q8", flops, [&] { k::gemv_q8_q8(M, N, Wq.data(), x.data(), y.data()); },
            [&] { ref::gemv_q8_q8(M, N, Wq.data(), x.data(), y.data()); });
        // The same with the block scales converted ahead, as nn::Linear holds them (q8_scales_by4).
        const auto scales4 = k::q8_scales_by4(Wq.data(), M, N);
        run("gemv_q8_" + shape + "_q8q8_scales", flops,
            [&] { k::gemv_q8_q8(M, N, Wq.data(), x.data(), y.data(), false, scales4.data()); },
            [&] { ref::gemv_q8_q8(M, N, Wq.data(), x.data(), y.data()); });
        // Several activation rows at once (a batched beam step): each row exactly its gemv_q8_q8, the weights read
        // once for all; its GFLOP/s over the one-row _q8q8_scales case is what batching gains per row.
        // _interleaved: the same products on the weights interleaved four rows at a time (interleave_q8_rows4,
        // what wasm runs), bit for bit the same results.
        const auto W4 = k::interleave_q8_rows4(Wq.data(), M, N);
        for (int rows : {1, 4, 8, 32}) {
            const auto X = random_floats((size_t)rows * N, 5);
            std::vector<float> Y((size_t)rows * M);
            run("gemv_q8_" + shape + "_q8q8_rows" + std::to_string(rows), flops * rows,
                [&] { k::gemm_nt_q8_q8(rows, M, N, X.data(), N, Wq.data(), Y.data(), M, false, scales4.data()); },
                [&] { ref::gemm_nt_q8_q8(rows, M, N, X.data(), N, Wq.data(), Y.data(), M); });
            run("gemv_q8_" + shape + "_q8q8_interleaved_rows" + std::to_string(rows), flops * rows,
                [&] { k::gemm_nt_q8_q8_rows4(rows, M, N, X.data(), N, W4.data(), scales4.data(), Y.data(), M); },
                [&] { ref::gemm_nt_q8_q8(rows, M, N, X.data(), N, Wq.data(), Y.data(), M); });
        }
    }
    // The int8 products at a paragraph's shapes (beam 4 over 2..8 sentences: 8..32 activation rows; the GRU's
    // 512x512 and 1536x512 gates and the 8000x512 output projection), 1 and 2 threads, against the kernel of
    // before (bench: "q8old": every pool piece quantizing all the activations again, with the scalar quantizer).
    // Not in the JSON's results (no scalar twin): in "comparisons", GFLOP/s of both and new ÷ old.
    struct Comparison {
        std::string name;
        double new_gflops, old_gflops;
    };
    std::vector<Comparison> comparisons;
    auto compare = [&](const std::string& name, double flops, const std::function<void()>& now,
                       const std::function<void()>& before) {
        if (name.find(only) == std::string::npos) return;
        const auto [t_now, t_before] = seconds_interleaved(now, before);
        comparisons.push_back({name, flops / t_now * 1e-9, flops / t_before * 1e-9});
        std::printf("%-28s %10.2f %10.2f %8.2fx (new, old GFLOP/s)\n", name.c_str(), comparisons.back().new_gflops,
                    comparisons.back().old_gflops, t_before / t_now);
        std::fflush(stdout);
    };
    {
        const int rows = 32, K = 512;
        const auto X = random_floats((size_t)rows * K, 7);
        std::vector<int16_t> values((size_t)rows * K);
        std::vector<float> scales((size_t)rows * K / k::kQ8BlockSize);
        attnlab::kernels::detail::QuantizedActivations scalar;
        compare("quantize_act_32x512", double(rows) * K,
                [&] { k::quantize_activations_q8(rows, K, X.data(), K, values.data(), scales.data()); },
                [&] { scalar.quantize_rows(X.data(), rows, K, K); });
        const auto Wbig = random_floats((size_t)8000 * K, 8);
        std::vector<k::BlockQ8_0> Wbig_q(Wbig.size() / k::kQ8BlockSize);
        k::quantize_q8_0(Wbig.data(), Wbig.size(), Wbig_q.data());
        std::vector<float> Y((size_t)rows * 8000);
        const int most = std::min(2, attnlab::max_threads());
        for (int threads = 1; threads <= most; ++threads) {
            attnlab::set_threads(threads);
            for (int N : {512, 1536, 8000}) {
                const auto s4 = k::q8_scales_by4(Wbig_q.data(), N, K);
                const int blocks = K / k::kQ8BlockSize;
                for (int M : {1, 8, 16, 32}) {
                    auto before = [&] {
                        attnlab::parallel::parallel_for(N, 64, double(M) * N * K, [&](int begin, int end) {
                            thread_local attnlab::kernels::detail::QuantizedActivations aq;
                            aq.quantize_rows(X.data(), M, K, K);
                            k::gemm_q8_q8_quantized(M, end - begin, K, aq.values.data(), aq.scales.data(),
                                                    Wbig_q.data() + (size_t)begin * blocks, Y.data() + begin, N,
                                                    false, s4.data() + (size_t)begin * blocks);
                        });
                    };
                    compare("q8q8_" + std::to_string(M) + "x" + std::to_string(N) + "x512_t" + std::to_string(threads),
                            2.0 * M * N * K,
                            [&] { k::gemm_nt_q8_q8(M, N, K, X.data(), K, Wbig_q.data(), Y.data(), N, false, s4.data()); },
                            before);
                }
            }
        }
        attnlab::set_threads(0);
    }
    if (std::string("wake_").find(only) != std::string::npos && attnlab::max_threads() >= 2) {
        // How long a worker that went to sleep (idle past its spin) takes to take a piece: the caller runs piece 0,
        // which waits (up to 50 ms) for piece 1 to start on the worker. Idle gaps of 0.02-5 ms before each call.
        attnlab::set_threads(2);
        using clock = std::chrono::steady_clock;
        for (double gap_ms : {0.02, 0.2, 1.0, 5.0}) {
            std::vector<double> waits;
            int missed = 0;
            for (int trial = 0; trial < 40; ++trial) {
                const auto idle_until = clock::now() + std::chrono::microseconds(int(gap_ms * 1000));
                while (clock::now() < idle_until) {
                }
                std::atomic<long long> started{-1};
                const auto t0 = clock::now();
                attnlab::parallel::parallel_for(2, 1, 1e12, [&](int begin, int end) {
                    if (begin >= 1) {  // piece 1, on the worker or, after the deadline, on the caller
                        started.store(std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - t0).count());
                        return;
                    }
                    if (end >= 2) return;  // not split
                    const auto deadline = clock::now() + std::chrono::milliseconds(50);
                    while (started.load() < 0 && clock::now() < deadline) {
                    }
                });
                if (started.load() < 0 || started.load() >= 50'000'000) ++missed;
                else waits.push_back(started.load() * 1e-3);
            }
            std::sort(waits.begin(), waits.end());
            std::printf("wake_after_%.2fms: median %.1f us, max %.1f us, worker not in 50 ms: %d of 40\n", gap_ms,
                        waits.empty() ? -1.0 : waits[waits.size() / 2], waits.empty() ? -1.0 : waits.back(), missed);
            std::fflush(stdout);
        }
        attnlab::set_threads(0);
    }
    {
        // How an int8 product gains from the second thread by how it is split (issue 20): split_MxN_pP runs the
        // N weight rows as P contiguous pieces of whole 64-row groups over the pool at 2 threads (P = 0: as
        // gemm_nt_q8_q8 splits it itself), against the same product on the calling thread alone, interleaved;
        // "new" is the split one, so the ratio is the speedup. _mP splits the activation rows instead (every piece
        // reads all the weights). The activations are quantized once, outside the timing of both.
        const int K = 512, blocks = K / k::kQ8BlockSize, most = std::min(2, attnlab::max_threads());
        const auto X = random_floats((size_t)32 * K, 9);
        const auto Wf = random_floats((size_t)8000 * K, 10);
        std::vector<k::BlockQ8_0> Wq8(Wf.size() / k::kQ8BlockSize);
        k::quantize_q8_0(Wf.data(), Wf.size(), Wq8.data());
        std::vector<int16_t> values((size_t)32 * K);
        std::vector<float> xscales((size_t)32 * blocks), Y((size_t)32 * 8000);
        k::quantize_activations_q8(32, K, X.data(), K, values.data(), xscales.data());
        if (most >= 2) attnlab::set_threads(2);
        if (most >= 2) {
            // The log-softmax after the 8000-output projection: all 32 rows in one call (split over the pool)
            // against a call per row, as a beam search step makes them (on the calling thread).
            std::vector<float> logits = random_floats((size_t)32 * 8000, 11), work = logits;
            compare("split_logsoftmax_32x8000", 32.0 * 8000,
                    [&] {
                        std::copy(logits.begin(), logits.end(), work.begin());
                        k::log_softmax_rows(32, 8000, work.data(), 8000);
                    },
                    [&] {
                        std::copy(logits.begin(), logits.end(), work.begin());
                        for (int r = 0; r < 32; ++r) k::log_softmax_rows(1, 8000, work.data() + (size_t)r * 8000, 8000);
                    });
        }
        for (int N : {512, 1536, 8000}) {
            const auto s4 = k::q8_scales_by4(Wq8.data(), N, K);
            for (int M : {1, 4, 8, 32}) {
                const double flops = 2.0 * M * N * K;
                auto rows = [&](int m0, int m1, int n0, int n1) {
                    k::gemm_q8_q8_quantized(m1 - m0, n1 - n0, K, values.data() + (size_t)m0 * K,
                                            xscales.data() + (size_t)m0 * blocks, Wq8.data() + (size_t)n0 * blocks,
                                            Y.data() + (size_t)m0 * N + n0, N, false, s4.data() + (size_t)n0 * blocks);
                };
                auto serial = [&] { rows(0, M, 0, N); };
                const std::string shape = std::to_string(M) + "x" + std::to_string(N);
                if (most < 2) continue;
                compare("split_" + shape + "_p0", flops,
                        [&] { k::gemm_nt_q8_q8(M, N, K, X.data(), K, Wq8.data(), Y.data(), N, false, s4.data()); },
                        [&] {
                            k::quantize_activations_q8(M, K, X.data(), K, values.data(), xscales.data());
                            serial();
                        });
                for (int P : {2, 4, 8}) {
                    const int groups = N / 64;
                    if (P > groups) continue;
                    compare("split_" + shape + "_p" + std::to_string(P), flops,
                            [&] {
                                attnlab::parallel::parallel_for(P, 1, 1e12, [&](int begin, int end) {
                                    rows(0, M, begin * groups / P * 64, end == P ? N : end * groups / P * 64);
                                });
                            },
                            serial);
                }
                if (M >= 8)
                    compare("split_" + shape + "_m2", flops,
                            [&] {
                                attnlab::parallel::parallel_for(2, 1, 1e12, [&](int begin, int end) {
                                    rows(begin * M / 2, end * M / 2, 0, N);
                                });
                            },
                            serial);
            }
        }
        attnlab::set_threads(0);
    }
    {
        // The additive attention's scores for one decoder row over a sentence's keys: a fused variant (tanh and
        // the dot product by v in one pass) against what the models run (attention.cpp: the [S, A] hidden layer
        // written, tanh over it, then a GEMV by v). G elements per second. In wasm both use the same tanh; natively
        // the variant is compiled for the library's own flags, not a kernel target, so only wasm compares alike.
        const int S = 32, A = 256;
        const auto query_part = random_floats(A, 10), keys = random_floats((size_t)S * A, 11), v = random_floats(A, 12);
        std::vector<float> hidden((size_t)S * A), scores(S);
        compare("additive_scores_32x256", double(S) * A,
                [&] { k::variants::additive_scores_fused(S, A, query_part.data(), keys.data(), A, v.data(), scores.data()); },
                [&] {
                    for (int s = 0; s < S; ++s)
                        for (int a = 0; a < A; ++a) hidden[(size_t)s * A + a] = query_part[a] + keys[(size_t)s * A + a];
                    k::activate(hidden.data(), hidden.size(), k::Activation::tanh);
                    k::gemv(S, A, hidden.data(), A, v.data(), scores.data());
                });
    }
    {
        // An encoder's shape (a dozen source tokens through a 256 -> 1024 Q8_0 layer, e.g. the Transformer's first
        // feed-forward matrix): gemm_nt_q8 widens 64-row weight panels on vectors (simd::q8_block_to_f32) into a
        // reused buffer and multiplies them in f32; "old" is what it did before: a new buffer each call, widened
        // by the scalar kernels::dequantize_q8_0.
        const int M = 16, N = 1024, K = 256;
        const auto X = random_floats((size_t)M * K, 8), Wf = random_floats((size_t)N * K, 9);
        std::vector<k::BlockQ8_0> Wq8(Wf.size() / k::kQ8BlockSize);
        k::quantize_q8_0(Wf.data(), Wf.size(), Wq8.data());
        std::vector<float> Y((size_t)M * N);
        compare("gemm_nt_q8_16x1024x256", 2.0 * M * N * K,
                [&] { k::gemm_nt_q8(M, N, K, X.data(), K, Wq8.data(), Y.data(), N); },
                [&] {
                    std::vector<float> panel((size_t)64 * K);
                    for (int j = 0; j < N; j += 64) {
                        k::dequantize_q8_0(Wq8.data() + (size_t)j * (K / k::kQ8BlockSize), (size_t)64 * K, panel.data());
                        k::gemm_nt(M, 64, K, X.data(), K, panel.data(), K, Y.data() + j, N);
                    }
                });
    }
    run("gemm_nt_q8_256", gemm_flops, [&] { k::gemm_nt_q8(n, n, n, A.data(), n, Bq.data(), C.data(), n); },
        [&] { ref::gemm_nt_q8(n, n, n, A.data(), n, Bq.data(), C.data(), n); });
    run("gemm_nt_q8_256_int8", gemm_flops,
        [&] { k::variants::gemm_nt_q8_int8(n, n, n, A.data(), n, Bq.data(), C.data(), n); },
        [&] { ref::gemm_nt_q8(n, n, n, A.data(), n, Bq.data(), C.data(), n); });

    std::printf("{\"simd\": \"%s\", \"results\": {", k::simd_name());
    for (size_t i = 0; i < results.size(); ++i)
        std::printf("%s\"%s\": {\"simd_gflops\": %.3f, \"scalar_gflops\": %.3f}", i ? ", " : "",
                    results[i].name.c_str(), results[i].simd_gflops, results[i].scalar_gflops);
    std::printf("}, \"comparisons\": {");
    for (size_t i = 0; i < comparisons.size(); ++i)
        std::printf("%s\"%s\": {\"new_gflops\": %.3f, \"old_gflops\": %.3f}", i ? ", " : "",
                    comparisons[i].name.c_str(), comparisons[i].new_gflops, comparisons[i].old_gflops);
    std::printf("}}\n");
    return 0;
}
