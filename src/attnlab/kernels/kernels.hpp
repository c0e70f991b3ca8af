#pragma once
// The math the models run, on contiguous row-major float buffers.
//
// Every kernel here has two implementations with the same signature:
//   attnlab::kernels::            the SIMD one (xsimd; AVX2/FMA natively, SSE2 lowered to SIMD128 in wasm)
//   attnlab::kernels::reference:: plain scalar loops, used by the tests as the ground truth
// The SIMD kernels are compiled once per kernel target (x86-64: baseline SSE2, avx2, avx512; elsewhere only
// baseline, with the library's own flags) into attnlab::kernels::<target>::, and attnlab::kernels:: forwards each
// call to the target chosen at startup (dispatch.cpp: the best one the CPU runs, or ATTNLAB_CPU). In a target's
// own translation units (ATTNLAB_KERNEL_TARGET defined) the same declarations name that target's functions instead,
// so kernels calling kernels stay inside their target.
// Leading dimensions (ld*) are in elements, so a kernel can work on a slice of a larger matrix
// (one attention head, one gate of a recurrent cell).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace attnlab::kernels {

enum class Activation { none, relu, relu6, tanh, sigmoid, gelu };

// GGUF / ggml Q8_0: 32 weights share one f16 scale; w = scale * q.
constexpr int kQ8BlockSize = 32;
#pragma pack(push, 1)
struct BlockQ8_0 {
    uint16_t scale;  // IEEE half
    int8_t q[kQ8BlockSize];
};
#pragma pack(pop)
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 blocks are 34 bytes in GGUF");

#define ATTNLAB_KERNEL_DECLARATIONS                                                                        \
    /* C[M,N] (+)= A[M,K] · B[K,N] */                                                                      \
    void gemm_nn(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc, \
                 bool accumulate = false);                                                                 \
    /* C[M,N] (+)= A[M,K] · B[N,K]ᵀ   (B in PyTorch nn.Linear layout [out, in]) */                         \
    void gemm_nt(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc, \
                 bool accumulate = false);                                                                 \
    /* C[M,N] (+)= A[M,K] · B[N,K]ᵀ with B stored as Q8_0, K/32 blocks per row */                           \
    void gemm_nt_q8(int M, int N, int K, const float* A, int lda, const BlockQ8_0* B, float* C, int ldc,    \
                    bool accumulate = false);                                                              \
    /* y[M] (+)= W[M,N] · x[N] */                                                                          \
    void gemv(int M, int N, const float* W, int ldw, const float* x, float* y, bool accumulate = false);   \
    /* y[M] (+)= W[M,N] · x[N] with W packed in panels (pack_panels): every output lane sums its products in \
       the order k = 0, 1, ..., N-1 (no horizontal sums), the weights streamed through one pointer */      \
    void gemv_panels(int M, int N, const float* P, const float* x, float* y, bool accumulate = false);      \
    /* C[M,N] (+)= A[M,K] · W[N,K]ᵀ with W packed in panels (pack_panels(W, N, K, ...)): row i is exactly     \
       gemv_panels(N, K, P, A + i·lda, C + i·ldc), bit for bit, each panel read once for all rows (a batched \
       decoder step) */                                                                                   \
    void gemm_panels(int M, int N, int K, const float* A, int lda, const float* P, float* C, int ldc,      \
                     bool accumulate = false);                                                            \
    /* y[N] (+)= W[M,N]ᵀ · x[M] */                                                                         \
    void gemv_t(int M, int N, const float* W, int ldw, const float* x, float* y, bool accumulate = false); \
    /* y[M] (+)= W[M,N] · x[N], W as Q8_0 with N/32 blocks per row (N % 32 == 0) */                       \
    void gemv_q8(int M, int N, const BlockQ8_0* W, const float* x, float* y, bool accumulate = false);     \
    /* y[M] (+)= W[M,N] · x̃[N], W as Q8_0 and x̃ = x quantized to Q8_0 first (quantize_q8_0); per block  \
       an exact int8·int8 dot times d_w·d_x (ggml's q8_0·q8_0 vec_dot). The decoders' Q8_0 GEMV: it     \
       differs from gemv_q8 by the rounding of x (|x - x̃| <= d_x/2 per element). scales4: null, or W's     \
       block scales as floats from q8_scales_by4(W, M, N) (saves converting them on every call; the      \
       result is the same); the reference ignores it. */                                                 \
    void gemv_q8_q8(int M, int N, const BlockQ8_0* W, const float* x, float* y, bool accumulate = false,   \
                    const float* scales4 = nullptr);                                                      \
    /* C[M,N] (+)= Ã[M,K] · B[N,K]ᵀ, B as Q8_0 and each row of A quantized to Q8_0 on its own: row i is       \
       exactly gemv_q8_q8(N, K, B, A + i·lda, C + i·ldc) (the same int8 rounding and float operations, bit   \
       for bit), with each weight block read once for all rows. For a few rows (a batched decoder step);  \
       scales4 as for gemv_q8_q8. */                                                                      \
    void gemm_nt_q8_q8(int M, int N, int K, const float* A, int lda, const BlockQ8_0* B, float* C, int ldc, \
                       bool accumulate = false, const float* scales4 = nullptr);                           \
    /* y[r,:] = act(y[r,:] + bias) for every row r; bias may be null */                                   \
    void bias_act(int rows, int cols, float* y, int ldy, const float* bias, Activation act);              \
    /* x = act(x) elementwise */                                                                           \
    void activate(float* x, std::size_t n, Activation act);                                               \
    /* One GRU step's gates, PyTorch's nn.GRU equations, for `rows` rows: r = σ(gi_r + gh_r),            \
       z = σ(gi_z + gh_z), n = tanh(gi_n + r·gh_n), h_out = (1 − z)·n + z·h, with gi = input_gates and gh =  \
       hidden_gates [rows, 3H] (r, z, n each H wide), h and h_out [rows, H]; h_out may alias h. */          \
    void gru_gates(int rows, int H, const float* input_gates, const float* hidden_gates, const float* h,  \
                   float* h_out);                                                                          \
    /* Row-wise softmax in place, stable (max subtracted). mask: null or [rows, cols] with row stride     \
       ldm (ldm = 0 broadcasts one mask row to all rows); 0 excludes a column. A fully masked row         \
       becomes all zeros. */                                                                              \
    void softmax_rows(int rows, int cols, float* x, int ldx, const uint8_t* mask = nullptr, int ldm = 0); \
    /* Row-wise log-softmax in place, same masking; masked entries become -inf. */                        \
    void log_softmax_rows(int rows, int cols, float* x, int ldx, const uint8_t* mask = nullptr,           \
                          int ldm = 0);                                                                   \
    /* y[r,:] = (x[r,:] - mean) / sqrt(var + eps) * gamma + beta; y may alias x; gamma/beta may be null */\
    void layer_norm_rows(int rows, int cols, const float* x, float* y, const float* gamma,                \
                         const float* beta, float eps);                                                   \
    /* out[i,:] = table[ids[i],:]; throws attnlab::Error on an id outside [0, vocab) */                   \
    void embedding(const float* table, int vocab, int dim, const int32_t* ids, int n, float* out);        \
    float dot(const float* a, const float* b, int n);                                                     \
    /* y += alpha * x */                                                                                  \
    void axpy(int n, float alpha, const float* x, float* y);                                              \
    /* index of the largest value; the first one on ties; n > 0 */                                        \
    int argmax(const float* x, int n);                                                                    \
    /* the k largest values, descending, ties by lower index; k <= n */                                   \
    void top_k(const float* x, int n, int k, int* indices, float* values);

// The SIMD kernels without a scalar twin.
#define ATTNLAB_SIMD_KERNEL_DECLARATIONS                                                                    \
    /* y = W·x (+ y when accumulate) with W [M, N] held as halves; exact widening, float accumulation. */  \
    void gemv_f16(int M, int N, const uint16_t* W, const float* x, float* y, bool accumulate = false);     \
    /* y[r,:] = W·x[r,:] for r < rows (x rows ldx apart, y rows ldy apart), W [M, N] halves read once for up \
       to four rows: each row of y is bit for bit gemv_f16's for x[r,:] (batched beams step as one by one). */\
    void gemv_f16_rows(int rows, int M, int N, const uint16_t* W, const float* x, int ldx, float* y, int ldy); \
    /* out[i] = the float value of half h[i], i < n (vectorized where the arch converts halves). */         \
    void f16_to_f32_n(const uint16_t* h, std::size_t n, float* out);                                      \
    /* The block scales of a Q8_0 matrix W [M, N] as floats, grouped the way gemv_q8_q8 reads them: rows   \
       in fours, [ceil(M/4), N/32, 4] (lane r = row 4·g + r; lanes past M are 0). Throws when N % 32 != 0. */\
    std::vector<float> q8_scales_by4(const BlockQ8_0* W, int M, int N);                                   \
    /* rows of x [rows, n] (row stride ldx, n % 32 == 0) quantized to Q8_0 exactly as quantize_q8_0 does,   \
       widened: values [rows, n] int16, scales [rows, n/32] (each the float of the stored half). What        \
       gemv_q8_q8 / gemm_nt_q8_q8 do first; the dispatcher does it once per call, before the pool splits. */ \
    void quantize_activations_q8(int rows, int n, const float* x, int ldx, int16_t* values, float* scales); \
    /* gemm_nt_q8_q8 on activations quantize_activations_q8 made (values, xscales of M rows of K):          \
       row i of C is exactly gemv_q8_q8's for row i. */                                                    \
    void gemm_q8_q8_quantized(int M, int N, int K, const int16_t* values, const float* xscales,          \
                              const BlockQ8_0* B, float* C, int ldc, bool accumulate, const float* scales4); \
    /* gemm_q8_q8_quantized with B as interleave_q8_rows4 made it (W4) and scales4 (not null): the same       \
       integer sums and float operations, so row i of C is again exactly gemv_q8_q8's for row i. */         \
    void gemm_q8_q8_rows4(int M, int N, int K, const int16_t* values, const float* xscales, const int8_t* W4, \
                          const float* scales4, float* C, int ldc, bool accumulate);                          \
    /* Whether the multi-row int8 GEMM should run on interleave_q8_rows4's layout (nn::Linear keeps a copy of \
       its Q8_0 weights in it): in wasm, where SIMD128's dot product leaves the instruction count as the     \
       bound (docs/performance.md, "Q8_0 rows interleaved in fours"); natively the wider kernels keep Q8_0. */ \
    bool q8_rows4_pays();                                                                                  \
    /* Whether F16 weights should stay halves in memory (nn::Linear::weight_f16): where the target converts \
       halves in one instruction per vector (F16C), a batch-1 step then reads half the bytes               \
       (bench_kernels gemv_512x2048: 40.7 GFLOP/s with halves, 15.2 with floats; docs/performance.md). Not  \
       for the SSE2 baseline, which converts with integer arithmetic, nor in wasm: SIMD128 has no half      \
       conversion and the bit arithmetic makes gemv_f16 ~5x slower than gemv there (2.7 against 15.3), so   \
       wasm widens F16 to f32 at load. */                                                                   \
    bool keep_f16_weights();                                                                               \
    /* Which SIMD instruction set the kernels run ("avx512", "avx2+fma", "sse2 (wasm simd128)", ...). */    \
    const char* simd_name();

#if defined(ATTNLAB_KERNEL_TARGET)
namespace ATTNLAB_KERNEL_TARGET {  // only: with the dispatchers visible too, argument-dependent lookup would find both
ATTNLAB_KERNEL_DECLARATIONS
ATTNLAB_SIMD_KERNEL_DECLARATIONS
}
#else
ATTNLAB_KERNEL_DECLARATIONS
ATTNLAB_SIMD_KERNEL_DECLARATIONS
#endif

namespace reference {
ATTNLAB_KERNEL_DECLARATIONS
}

// IEEE half <-> float, exact for every half value (round to nearest even on the way down).
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

// Quantize n floats (n % 32 == 0) the way ggml does: scale = max|x| / 127, q = round(x / scale).
void quantize_q8_0(const float* x, std::size_t n, BlockQ8_0* out);
void dequantize_q8_0(const BlockQ8_0* blocks, std::size_t n, float* out);
// The panel layout of gemv_panels / gemm_panels: W [M, N] (row stride ldw) as ceil(M/kPanelRows) panels of
// kPanelRows rows, each stored column by column ([N][kPanelRows], rows past M zero): P[(p·N + k)·kPanelRows + r] =
// W[p·kPanelRows + r, k]. MLAS's packed B for one activation row. panel_row copies row `row` of it back out.
constexpr int kPanelRows = 16;
std::vector<float> pack_panels(const float* W, int M, int N, int ldw);
void panel_row(const float* P, int M, int N, int row, float* out);
// The layout of gemm_q8_q8_rows4: the int8 values of a Q8_0 matrix W [M, N] (N % 32 == 0), rows in fours and
// within each 32-block in pairs of columns, [ceil(M/4)][N/32][8][16]: byte 8·h + 2·r + e of quad j of block b of
// group g is W[4·g + r, 32·b + 4·j + 2·h + e] (rows past M repeat the last row). Sign-extended to 16 bits, each
// half of a quad is four rows' pairs, so one 16-bit dot product against a broadcast pair of activations gives
// the four rows' partial sums side by side, with no horizontal sums (the block scales: q8_scales_by4).
std::vector<int8_t> interleave_q8_rows4(const BlockQ8_0* W, int M, int N);
// C[M, N] (+)= Ã · W[N, K]ᵀ as gemm_nt_q8_q8 computes it, bit for bit, on W4 = interleave_q8_rows4(W, N, K) and
// scales4 = q8_scales_by4(W, N, K): the activations quantized once, the weight rows split over the pool.
void gemm_nt_q8_q8_rows4(int M, int N, int K, const float* A, int lda, const int8_t* W4, const float* scales4,
                         float* C, int ldc, bool accumulate = false);
// One product of gemm_nt_q8_q8_stack: C[M, N] (row stride ldc) = Ã · B[N, K]ᵀ (+ bias [N] when not null), B as
// Q8_0 blocks, or as interleave_q8_rows4's W4 with scales4 when both are given (scales4 alone: gemm_nt_q8_q8's).
struct Q8Product {
    int N = 0;
    const BlockQ8_0* B = nullptr;
    const int8_t* W4 = nullptr;
    const float* scales4 = nullptr;
    float* C = nullptr;
    int ldc = 0;
    const float* bias = nullptr;
};
// The products of one activation matrix A [M, K] with several weight matrices (a layer's query, key and value
// projections), each bit for bit what gemm_nt_q8_q8 / gemm_nt_q8_q8_rows4 and then bias_act would give: the
// activations quantized once, and all the products' rows split over the pool as one range (one round trip, not
// one per product). Every product but the last needs N % 64 == 0, so the pieces keep their rows' groups of 4.
void gemm_nt_q8_q8_stack(int M, int K, const float* A, int lda, const Q8Product* products, int count);
// The kernel targets: the ones this build compiled, the one the CPU runs now (its name, as ATTNLAB_CPU spells
// it). The first kernel call picks it: ATTNLAB_CPU=baseline|avx2|avx512 forces one (an attnlab::Error when it
// is not compiled or the CPU cannot run it), unset, empty or "auto" takes the best the CPU runs.
std::vector<const char*> compiled_targets();
const char* active_target();
// Whether this CPU (and its OS) can run a target's instructions; false for a name that is no target.
bool cpu_runs(const char* target);

}  // namespace attnlab::kernels
