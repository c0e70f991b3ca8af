// The one place that picks a kernel target: attnlab::kernels::X forwards to attnlab::kernels::<target>::X for the
// target chosen at the first call. The SIMD kernel files are compiled once per target (CMakeLists.txt: baseline
// -march=x86-64, avx2 -march=x86-64-v3, avx512 -march=x86-64-v4; a single baseline elsewhere), and each target's
// objects keep only their attnlab::kernels::<target>:: symbols global, so code compiled for one target never
// stands in for another's (an inline function or template both include would otherwise be merged by the linker).
//
// A kernel joins the dispatch with its declaration in one of the DECLARATIONS macros (kernels.hpp, gemm.hpp), its
// file in ATTNLAB_DISPATCHED_KERNELS (CMakeLists.txt) inside namespace attnlab::kernels::ATTNLAB_KERNEL_TARGET,
// and one forwarding function below.
#include <cstdlib>
#include <cstring>
#include <string>

#include "attnlab/error.hpp"
#include "attnlab/kernels/conv.hpp"
#include "attnlab/kernels/gemm.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/kernels/q8_activations.hpp"
#include "attnlab/parallel/pool.hpp"

// CMake defines these to 1 for the targets it compiled.
#ifndef ATTNLAB_KERNEL_HAVE_AVX2
#define ATTNLAB_KERNEL_HAVE_AVX2 0
#endif
#ifndef ATTNLAB_KERNEL_HAVE_AVX512
#define ATTNLAB_KERNEL_HAVE_AVX512 0
#endif

#if (defined(__x86_64__) || defined(__i386__)) && !defined(__EMSCRIPTEN__)
#include <cpuid.h>
#define ATTNLAB_X86_CPUID 1
#endif

namespace attnlab::kernels {

#define ATTNLAB_TARGET_DECLARATIONS ATTNLAB_KERNEL_DECLARATIONS ATTNLAB_SIMD_KERNEL_DECLARATIONS ATTNLAB_GEMM_PATH_DECLARATIONS ATTNLAB_CONV_DECLARATIONS
namespace baseline {
ATTNLAB_TARGET_DECLARATIONS
}
#if ATTNLAB_KERNEL_HAVE_AVX2
namespace avx2 {
ATTNLAB_TARGET_DECLARATIONS
}
#endif
#if ATTNLAB_KERNEL_HAVE_AVX512
namespace avx512 {
ATTNLAB_TARGET_DECLARATIONS
}
#endif
#undef ATTNLAB_TARGET_DECLARATIONS

namespace {

enum class Target { baseline, avx2, avx512 };
constexpr Target kTargets[] = {Target::baseline, Target::avx2, Target::avx512};

const char* name_of(Target target) {
    switch (target) {
        case Target::avx2: return "avx2";
        case Target::avx512: return "avx512";
        case Target::baseline: break;
    }
    return "baseline";
}

bool compiled(Target target) {
    switch (target) {
        case Target::avx2: return ATTNLAB_KERNEL_HAVE_AVX2;
        case Target::avx512: return ATTNLAB_KERNEL_HAVE_AVX512;
        case Target::baseline: break;
    }
    return true;
}

#if ATTNLAB_X86_CPUID
// Every feature the -march level of a target lets the compiler use, and the OS saving the registers it needs
// (XGETBV): x86-64-v3 is AVX, AVX2, BMI1, BMI2, F16C, FMA, LZCNT, MOVBE; x86-64-v4 adds AVX-512 F, BW, CD, DQ, VL.
struct CpuFeatures {
    bool v3 = false, v4 = false;
};

CpuFeatures detect_cpu() {
    CpuFeatures f;
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    const bool fma = c & (1u << 12), movbe = c & (1u << 22), osxsave = c & (1u << 27), avx = c & (1u << 28),
               f16c = c & (1u << 29);
    if (!osxsave || !avx) return f;
    unsigned xcr0_low, xcr0_high;
    __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
    const bool os_ymm = (xcr0_low & 0x6u) == 0x6u;     // SSE and AVX state
    const bool os_zmm = (xcr0_low & 0xe6u) == 0xe6u;   // and opmask, ZMM0-15 upper halves, ZMM16-31
    if (__get_cpuid_max(0, nullptr) < 7) return f;
    __cpuid_count(7, 0, a, b, c, d);
    const bool bmi1 = b & (1u << 3), avx2 = b & (1u << 5), bmi2 = b & (1u << 8), avx512f = b & (1u << 16),
               avx512dq = b & (1u << 17), avx512cd = b & (1u << 28), avx512bw = b & (1u << 30),
               avx512vl = b & (1u << 31);
    bool lzcnt = false;
    if (__get_cpuid(0x80000001u, &a, &b, &c, &d)) lzcnt = c & (1u << 5);
    f.v3 = os_ymm && avx2 && fma && f16c && bmi1 && bmi2 && lzcnt && movbe;
    f.v4 = f.v3 && os_zmm && avx512f && avx512bw && avx512cd && avx512dq && avx512vl;
    return f;
}
#endif

bool runs(Target target) {
    if (target == Target::baseline) return true;
#if ATTNLAB_X86_CPUID
    static const CpuFeatures cpu = detect_cpu();
    return target == Target::avx2 ? cpu.v3 : cpu.v4;
#else
    return false;
#endif
}

std::string runnable_list() {
    std::string list;
    for (Target t : kTargets)
        if (compiled(t) && runs(t)) list += std::string(list.empty() ? "" : ", ") + name_of(t);
    return list;
}

Target choose() {
    const char* forced = std::getenv("ATTNLAB_CPU");
    if (forced == nullptr || *forced == '\0' || std::strcmp(forced, "auto") == 0) {
        Target best = Target::baseline;
        for (Target t : kTargets)
            if (compiled(t) && runs(t)) best = t;
        return best;
    }
    for (Target t : kTargets) {
        if (std::strcmp(forced, name_of(t)) != 0) continue;
        check(compiled(t), std::string("ATTNLAB_CPU=") + forced + ": this build has no " + forced +
                               " kernels (it has: " + runnable_list() + ")");
        check(runs(t), std::string("ATTNLAB_CPU=") + forced + ": this CPU cannot run them (it runs: " +
                           runnable_list() + ")");
        return t;
    }
    fail(std::string("ATTNLAB_CPU=") + forced + ": not a kernel target (baseline, avx2, avx512 or auto)");
}

// Decided once, at the first kernel call (a static initialized on first use, so also right for calls made while
// other files' statics are being initialized); a bad ATTNLAB_CPU throws from every call instead.
Target active() {
    static const Target target = choose();
    return target;
}

}  // namespace

std::vector<const char*> compiled_targets() {
    std::vector<const char*> names;
    for (Target t : kTargets)
        if (compiled(t)) names.push_back(name_of(t));
    return names;
}

const char* active_target() { return name_of(active()); }

bool cpu_runs(const char* target) {
    for (Target t : kTargets)
        if (std::strcmp(target, name_of(t)) == 0) return runs(t);
    return false;
}

#if ATTNLAB_KERNEL_HAVE_AVX512
#define ATTNLAB_CASE_AVX512(call) \
    case Target::avx512: return avx512::call;
#else
#define ATTNLAB_CASE_AVX512(call)
#endif
#if ATTNLAB_KERNEL_HAVE_AVX2
#define ATTNLAB_CASE_AVX2(call) \
    case Target::avx2: return avx2::call;
#else
#define ATTNLAB_CASE_AVX2(call)
#endif
#define ATTNLAB_DISPATCH(call)                \
    switch (active()) {                       \
        ATTNLAB_CASE_AVX512(call)             \
        ATTNLAB_CASE_AVX2(call)               \
        default: return baseline::call;       \
    }

// The matrix products run on the thread pool (parallel/pool.hpp), split along output rows or columns, never along
// the reduction: each output value is computed by the same kernel code as in the one-thread call, so the result is
// the same bit for bit. Pieces start at multiples of kSplitGrain and hold at least kSplitGrain (the last one the
// remainder), which keeps, for every piece, what the kernels decide by position or shape: the GEMVs' groups of 4
// rows, gemm_nt_q8's 64-row weight panels, gemm_nt_q8_q8's groups and scales4 offsets of 4, whole vectors of
// gemv_t, and gemm_nn/gemm_nt's choice between register tiles and the packed GEMM (each dimension at least 8).
// Arguments the kernel would refuse go to it unsplit, so its own check reports them as before.
constexpr int kSplitGrain = 64;

namespace {

double work_of(int M, int N, int K = 1) { return static_cast<double>(M) * N * K; }

bool valid_sizes(int M, int N, int K = 0) { return M > 0 && N > 0 && K >= 0; }

// A GEMM C[M,N] split along N reads all of A in every piece, split along M all of B: the smaller copy wins.
bool split_columns(int M, int N) { return N >= M; }

}  // namespace

void gemm_nn(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc, bool accumulate) {
    if (!valid_sizes(M, N, K) || lda < K || ldb < N || ldc < N) {
        ATTNLAB_DISPATCH(gemm_nn(M, N, K, A, lda, B, ldb, C, ldc, accumulate))
    }
    active();  // a bad ATTNLAB_CPU throws here, on the calling thread
    if (split_columns(M, N)) {
        parallel::parallel_for(N, kSplitGrain, work_of(M, N, K), [&](int begin, int end) {
            ATTNLAB_DISPATCH(gemm_nn(M, end - begin, K, A, lda, B + begin, ldb, C + begin, ldc, accumulate))
        });
    } else {
        parallel::parallel_for(M, kSplitGrain, work_of(M, N, K), [&](int begin, int end) {
            ATTNLAB_DISPATCH(gemm_nn(end - begin, N, K, A + (size_t)begin * lda, lda, B, ldb, C + (size_t)begin * ldc,
                                     ldc, accumulate))
        });
    }
}
void gemm_nt(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc, bool accumulate) {
    if (!valid_sizes(M, N, K) || lda < K || ldb < K || ldc < N) {
        ATTNLAB_DISPATCH(gemm_nt(M, N, K, A, lda, B, ldb, C, ldc, accumulate))
    }
    active();
    if (split_columns(M, N)) {
        parallel::parallel_for(N, kSplitGrain, work_of(M, N, K), [&](int begin, int end) {
            ATTNLAB_DISPATCH(gemm_nt(M, end - begin, K, A, lda, B + (size_t)begin * ldb, ldb, C + begin, ldc,
                                     accumulate))
        });
    } else {
        parallel::parallel_for(M, kSplitGrain, work_of(M, N, K), [&](int begin, int end) {
            ATTNLAB_DISPATCH(gemm_nt(end - begin, N, K, A + (size_t)begin * lda, lda, B, ldb, C + (size_t)begin * ldc,
                                     ldc, accumulate))
        });
    }
}
// The Q8_0 GEMMs split only the weight rows (N): their path depends on M (gemm_nt_q8 below 4 rows, gemm_nt_q8_q8
// for one), and a decoder step's few activation rows are not worth splitting.
void gemm_nt_q8(int M, int N, int K, const float* A, int lda, const BlockQ8_0* B, float* C, int ldc, bool accumulate) {
    if (!valid_sizes(M, N, K) || K % kQ8BlockSize != 0 || lda < K || ldc < N) {
        ATTNLAB_DISPATCH(gemm_nt_q8(M, N, K, A, lda, B, C, ldc, accumulate))
    }
    active();
    const int blocks = K / kQ8BlockSize;
    parallel::parallel_for(N, kSplitGrain, work_of(M, N, K), [&](int begin, int end) {
        ATTNLAB_DISPATCH(gemm_nt_q8(M, end - begin, K, A, lda, B + (size_t)begin * blocks, C + begin, ldc, accumulate))
    });
}
namespace {

// What quantizing one activation costs against one int8 multiply-add of the products that read it (a native
// profile of a q8_0 paragraph at 2 threads: quantizing took 6% of the time of the 256-wide products after it).
constexpr double kQuantizeWorkPerElement = 16.0;

// The activations of one int8 product, quantized once before the pool splits the weight rows: quantizing them in
// every piece would, at a paragraph's 32 rows, cost as much as the piece's share of the product and make 2 threads
// slower than 1 (docs/performance.md, "Q8_0 and threads"). The rows themselves split over the pool where they are
// worth it (each row is quantized alone, so the same bits).
const detail::QuantizedRows& quantize_rows(int rows, int K, const float* A, int lda) {
    thread_local detail::QuantizedRows mine;  // the caller's; a parallel call does not re-enter itself on one thread
    detail::QuantizedRows& q = mine;          // (a lambda names a thread_local directly: a worker would see its own)
    q.fit(rows, K);
    const int blocks = K / kQ8BlockSize;
    parallel::parallel_for(rows, 1, work_of(rows, K) * kQuantizeWorkPerElement, [&](int begin, int end) {
        quantize_activations_q8(end - begin, K, A + (size_t)begin * lda, lda, q.values.data() + (size_t)begin * K,
                                q.scales.data() + (size_t)begin * blocks);
    });
    return q;
}

}  // namespace

void gemm_nt_q8_q8(int M, int N, int K, const float* A, int lda, const BlockQ8_0* B, float* C, int ldc, bool accumulate,
                   const float* scales4) {
    if (!valid_sizes(M, N, K) || K % kQ8BlockSize != 0 || lda < K || ldc < N) {
        ATTNLAB_DISPATCH(gemm_nt_q8_q8(M, N, K, A, lda, B, C, ldc, accumulate, scales4))
    }
    active();
    const int blocks = K / kQ8BlockSize;
    const detail::QuantizedRows& q = quantize_rows(M, K, A, lda);
    parallel::parallel_for(N, kSplitGrain, work_of(M, N, K), [&](int begin, int end) {
        ATTNLAB_DISPATCH(gemm_q8_q8_quantized(M, end - begin, K, q.values.data(), q.scales.data(),
                                              B + (size_t)begin * blocks, C + begin, ldc, accumulate,
                                              scales4 ? scales4 + (size_t)begin * blocks : nullptr))
    });
}
void gemm_nt_q8_q8_rows4(int M, int N, int K, const float* A, int lda, const int8_t* W4, const float* scales4,
                         float* C, int ldc, bool accumulate) {
    detail::check_gemm("gemm_nt_q8_q8_rows4", M, N, K, lda, K, K, K, ldc);
    detail::check_q8_width("gemm_nt_q8_q8_rows4", K);
    check(W4 != nullptr && scales4 != nullptr, "gemm_nt_q8_q8_rows4: needs the interleaved weights and their scales");
    if (M == 0 || N == 0) return;
    active();
    const int blocks = K / kQ8BlockSize;
    const detail::QuantizedRows& q = quantize_rows(M, K, A, lda);
    // Pieces start at multiples of kSplitGrain, so at whole groups of 4 rows.
    parallel::parallel_for(N, kSplitGrain, work_of(M, N, K), [&](int begin, int end) {
        ATTNLAB_DISPATCH(gemm_q8_q8_rows4(M, end - begin, K, q.values.data(), q.scales.data(),
                                          W4 + (size_t)(begin / 4) * blocks * kQ8BlockSize * 4,
                                          scales4 + (size_t)begin * blocks, C + begin, ldc, accumulate))
    });
}
void gemm_nt_q8_q8_stack(int M, int K, const float* A, int lda, const Q8Product* products, int count) {
    int total = 0;
    for (int i = 0; i < count; ++i) {
        const Q8Product& p = products[i];
        detail::check_gemm("gemm_nt_q8_q8_stack", M, p.N, K, lda, K, K, K, p.ldc);
        check(p.B != nullptr || (p.W4 != nullptr && p.scales4 != nullptr),
              "gemm_nt_q8_q8_stack: a product needs its Q8_0 weights, or the interleaved ones and their scales");
        check(i == count - 1 || p.N % kSplitGrain == 0,
              "gemm_nt_q8_q8_stack: every product but the last needs a multiple of 64 rows");
        total += p.N;
    }
    detail::check_q8_width("gemm_nt_q8_q8_stack", K);
    if (M == 0 || total == 0) return;
    active();
    const int blocks = K / kQ8BlockSize;
    const detail::QuantizedRows& q = quantize_rows(M, K, A, lda);
    // A piece of the stacked rows [begin, end) runs each product's part of it; parts start at multiples of 64.
    parallel::parallel_for(total, kSplitGrain, work_of(M, total, K), [&](int begin, int end) {
        int first = 0;
        for (int i = 0; i < count && first < end; first += products[i].N, ++i) {
            const Q8Product& p = products[i];
            const int from = std::max(begin, first) - first, to = std::min(end, first + p.N) - first;
            if (from >= to) continue;
            float* C = p.C + from;
            // The unsplit dispatching kernels (this piece is already one thread's).
            if (p.W4 && p.scales4)
                gemm_q8_q8_rows4(M, to - from, K, q.values.data(), q.scales.data(),
                                 p.W4 + (size_t)(from / 4) * blocks * kQ8BlockSize * 4, p.scales4 + (size_t)from * blocks,
                                 C, p.ldc, false);
            else
                gemm_q8_q8_quantized(M, to - from, K, q.values.data(), q.scales.data(), p.B + (size_t)from * blocks, C,
                                     p.ldc, false, p.scales4 ? p.scales4 + (size_t)from * blocks : nullptr);
            if (p.bias) bias_act(M, to - from, C, p.ldc, p.bias + from, Activation::none);
        }
    });
}
void gemm_q8_q8_rows4(int M, int N, int K, const int16_t* values, const float* xscales, const int8_t* W4,
                      const float* scales4, float* C, int ldc, bool accumulate) {
    ATTNLAB_DISPATCH(gemm_q8_q8_rows4(M, N, K, values, xscales, W4, scales4, C, ldc, accumulate))
}
bool q8_rows4_pays() { ATTNLAB_DISPATCH(q8_rows4_pays()) }
void gemv(int M, int N, const float* W, int ldw, const float* x, float* y, bool accumulate) {
    if (!valid_sizes(M, N) || ldw < N) {
        ATTNLAB_DISPATCH(gemv(M, N, W, ldw, x, y, accumulate))
    }
    active();
    parallel::parallel_for(M, kSplitGrain, work_of(M, N), [&](int begin, int end) {
        ATTNLAB_DISPATCH(gemv(end - begin, N, W + (size_t)begin * ldw, ldw, x, y + begin, accumulate))
    });
}
// Panel-packed weights: pieces of whole panels (kSplitGrain is a multiple of kPanelRows), which start begin·N
// floats into P.
static_assert(kSplitGrain % kPanelRows == 0, "a piece holds whole panels");
static_assert(kSplitGrain % 4 == 0, "a piece holds whole groups of interleave_q8_rows4");
void gemv_panels(int M, int N, const float* P, const float* x, float* y, bool accumulate) {
    if (!valid_sizes(M, N)) {
        ATTNLAB_DISPATCH(gemv_panels(M, N, P, x, y, accumulate))
    }
    active();
    parallel::parallel_for(M, kSplitGrain, work_of(M, N), [&](int begin, int end) {
        ATTNLAB_DISPATCH(gemv_panels(end - begin, N, P + (size_t)begin * N, x, y + begin, accumulate))
    });
}
void gemm_panels(int M, int N, int K, const float* A, int lda, const float* P, float* C, int ldc, bool accumulate) {
    if (!valid_sizes(M, N, K) || lda < K || ldc < N) {
        ATTNLAB_DISPATCH(gemm_panels(M, N, K, A, lda, P, C, ldc, accumulate))
    }
    active();
    if (split_columns(M, N)) {
        parallel::parallel_for(N, kSplitGrain, work_of(M, N, K), [&](int begin, int end) {
            ATTNLAB_DISPATCH(gemm_panels(M, end - begin, K, A, lda, P + (size_t)begin * K, C + begin, ldc, accumulate))
        });
    } else {
        parallel::parallel_for(M, kSplitGrain, work_of(M, N, K), [&](int begin, int end) {
            ATTNLAB_DISPATCH(gemm_panels(end - begin, N, K, A + (size_t)begin * lda, lda, P, C + (size_t)begin * ldc, ldc,
                                         accumulate))
        });
    }
}
// Wᵀ·x: the outputs are W's columns, so the columns are split (each piece still sums over every row).
void gemv_t(int M, int N, const float* W, int ldw, const float* x, float* y, bool accumulate) {
    if (!valid_sizes(M, N) || ldw < N) {
        ATTNLAB_DISPATCH(gemv_t(M, N, W, ldw, x, y, accumulate))
    }
    active();
    parallel::parallel_for(N, kSplitGrain, work_of(M, N), [&](int begin, int end) {
        ATTNLAB_DISPATCH(gemv_t(M, end - begin, W + begin, ldw, x, y + begin, accumulate))
    });
}
void gemv_q8(int M, int N, const BlockQ8_0* W, const float* x, float* y, bool accumulate) {
    if (!valid_sizes(M, N) || N % kQ8BlockSize != 0) {
        ATTNLAB_DISPATCH(gemv_q8(M, N, W, x, y, accumulate))
    }
    active();
    const int blocks = N / kQ8BlockSize;
    parallel::parallel_for(M, kSplitGrain, work_of(M, N), [&](int begin, int end) {
        ATTNLAB_DISPATCH(gemv_q8(end - begin, N, W + (size_t)begin * blocks, x, y + begin, accumulate))
    });
}
void gemv_q8_q8(int M, int N, const BlockQ8_0* W, const float* x, float* y, bool accumulate, const float* scales4) {
    if (!valid_sizes(M, N) || N % kQ8BlockSize != 0) {
        ATTNLAB_DISPATCH(gemv_q8_q8(M, N, W, x, y, accumulate, scales4))
    }
    active();
    const int blocks = N / kQ8BlockSize;
    const detail::QuantizedRows& q = quantize_rows(1, N, x, N);
    parallel::parallel_for(M, kSplitGrain, work_of(M, N), [&](int begin, int end) {
        ATTNLAB_DISPATCH(gemm_q8_q8_quantized(1, end - begin, N, q.values.data(), q.scales.data(),
                                              W + (size_t)begin * blocks, y + begin, end - begin, accumulate,
                                              scales4 ? scales4 + (size_t)begin * blocks : nullptr))
    });
}
void quantize_activations_q8(int rows, int n, const float* x, int ldx, int16_t* values, float* scales) {
    ATTNLAB_DISPATCH(quantize_activations_q8(rows, n, x, ldx, values, scales))
}
void gemm_q8_q8_quantized(int M, int N, int K, const int16_t* values, const float* xscales, const BlockQ8_0* B,
                          float* C, int ldc, bool accumulate, const float* scales4) {
    ATTNLAB_DISPATCH(gemm_q8_q8_quantized(M, N, K, values, xscales, B, C, ldc, accumulate, scales4))
}
void bias_act(int rows, int cols, float* y, int ldy, const float* bias, Activation act) {
    ATTNLAB_DISPATCH(bias_act(rows, cols, y, ldy, bias, act))
}
void activate(float* x, std::size_t n, Activation act) { ATTNLAB_DISPATCH(activate(x, n, act)) }
void gru_gates(int rows, int H, const float* input_gates, const float* hidden_gates, const float* h, float* h_out) {
    ATTNLAB_DISPATCH(gru_gates(rows, H, input_gates, hidden_gates, h, h_out))
}
// The row-wise softmaxes split their rows over the pool (each row is computed alone, so the bits do not depend on
// the split): a batched step's 32 rows of 8000 logits (beam 4 × 8 sentences) are ~2 Mi multiply-adds' worth of
// exponentials, as long as a 512×512 int8 product of the same rows: on one thread they would wait while the
// projection before them runs on two. The cost per element counts one exp as ~8 multiply-adds.
constexpr double kSoftmaxWorkPerElement = 8.0;
// kernel(n, x_rows, mask_rows) runs one dispatched row-wise softmax over n rows.
template <typename RowsKernel>
void split_softmax_rows(int rows, int cols, float* x, int ldx, const uint8_t* mask, int ldm, const RowsKernel& kernel) {
    if (rows < 2 || cols <= 0 || ldx < cols) return kernel(rows, x, mask);
    active();
    parallel::parallel_for(rows, 1, work_of(rows, cols, 1) * kSoftmaxWorkPerElement, [&](int begin, int end) {
        kernel(end - begin, x + (size_t)begin * ldx, mask ? mask + (size_t)begin * ldm : nullptr);
    });
}
void softmax_rows(int rows, int cols, float* x, int ldx, const uint8_t* mask, int ldm) {
    split_softmax_rows(rows, cols, x, ldx, mask, ldm, [&](int n, float* xs, const uint8_t* ms) {
        ATTNLAB_DISPATCH(softmax_rows(n, cols, xs, ldx, ms, ldm))
    });
}
void log_softmax_rows(int rows, int cols, float* x, int ldx, const uint8_t* mask, int ldm) {
    split_softmax_rows(rows, cols, x, ldx, mask, ldm, [&](int n, float* xs, const uint8_t* ms) {
        ATTNLAB_DISPATCH(log_softmax_rows(n, cols, xs, ldx, ms, ldm))
    });
}
void layer_norm_rows(int rows, int cols, const float* x, float* y, const float* gamma, const float* beta, float eps) {
    ATTNLAB_DISPATCH(layer_norm_rows(rows, cols, x, y, gamma, beta, eps))
}
void embedding(const float* table, int vocab, int dim, const int32_t* ids, int n, float* out) {
    ATTNLAB_DISPATCH(embedding(table, vocab, dim, ids, n, out))
}
float dot(const float* a, const float* b, int n) { ATTNLAB_DISPATCH(dot(a, b, n)) }
void axpy(int n, float alpha, const float* x, float* y) { ATTNLAB_DISPATCH(axpy(n, alpha, x, y)) }
int argmax(const float* x, int n) { ATTNLAB_DISPATCH(argmax(x, n)) }
void top_k(const float* x, int n, int k, int* indices, float* values) {
    ATTNLAB_DISPATCH(top_k(x, n, k, indices, values))
}

void conv2d(const float* x, int height, int width, int in_channels, const float* weight, const float* bias,
            int out_channels, int kernel, int stride, Padding padding, Activation act, float* y, float* scratch) {
    ATTNLAB_DISPATCH(conv2d(x, height, width, in_channels, weight, bias, out_channels, kernel, stride, padding, act, y,
                            scratch))
}
void depthwise_conv2d(const float* x, int height, int width, int channels, const float* weight, const float* bias,
                      int kernel, int stride, Padding padding, Activation act, float* y) {
    ATTNLAB_DISPATCH(depthwise_conv2d(x, height, width, channels, weight, bias, kernel, stride, padding, act, y))
}

void gemv_f16(int M, int N, const uint16_t* W, const float* x, float* y, bool accumulate) {
    if (!valid_sizes(M, N)) {
        ATTNLAB_DISPATCH(gemv_f16(M, N, W, x, y, accumulate))
    }
    active();
    parallel::parallel_for(M, kSplitGrain, work_of(M, N), [&](int begin, int end) {
        ATTNLAB_DISPATCH(gemv_f16(end - begin, N, W + (size_t)begin * N, x, y + begin, accumulate))
    });
}
void gemv_f16_rows(int rows, int M, int N, const uint16_t* W, const float* x, int ldx, float* y, int ldy) {
    if (!valid_sizes(M, N) || rows <= 0 || ldx < N || ldy < M) {
        ATTNLAB_DISPATCH(gemv_f16_rows(rows, M, N, W, x, ldx, y, ldy))
    }
    active();
    // Pieces start at multiples of kSplitGrain, so every piece's rows are gemv_f16's fours and leftovers.
    parallel::parallel_for(M, kSplitGrain, work_of(M, N, rows), [&](int begin, int end) {
        ATTNLAB_DISPATCH(gemv_f16_rows(rows, end - begin, N, W + (size_t)begin * N, x, ldx, y + begin, ldy))
    });
}
void f16_to_f32_n(const uint16_t* h, std::size_t n, float* out) { ATTNLAB_DISPATCH(f16_to_f32_n(h, n, out)) }
std::vector<float> q8_scales_by4(const BlockQ8_0* W, int M, int N) { ATTNLAB_DISPATCH(q8_scales_by4(W, M, N)) }
bool keep_f16_weights() { ATTNLAB_DISPATCH(keep_f16_weights()) }
const char* simd_name() { ATTNLAB_DISPATCH(simd_name()) }

void gemm_nn_tiles(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                   bool accumulate) {
    ATTNLAB_DISPATCH(gemm_nn_tiles(M, N, K, A, lda, B, ldb, C, ldc, accumulate))
}
void gemm_nt_dot_tiles(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                       bool accumulate) {
    ATTNLAB_DISPATCH(gemm_nt_dot_tiles(M, N, K, A, lda, B, ldb, C, ldc, accumulate))
}
void gemm_nn_packed(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                    bool accumulate) {
    ATTNLAB_DISPATCH(gemm_nn_packed(M, N, K, A, lda, B, ldb, C, ldc, accumulate))
}
void gemm_nt_packed(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                    bool accumulate) {
    ATTNLAB_DISPATCH(gemm_nt_packed(M, N, K, A, lda, B, ldb, C, ldc, accumulate))
}

}  // namespace attnlab::kernels
