// Packed, cache-blocked GEMM (the BLIS/GotoBLAS loop nest) on one register-blocked micro-kernel written
// once against simd.hpp. gemm_nn and gemm_nt both end here for all but tiny problems; they differ only in
// how B is packed.
//
//   for jc in N by kNc:            B block [kc, nc] packed into micro-panels [kc][kNr]      (L2/L3)
//     for pc in K by kKc:
//       for ic in M by kMc:        A block [mc, kc] packed into micro-panels [kc][kMr]      (L2)
//         for jr, ir:              micro-kernel: kMr × kNr of C in registers, one B panel in L1
//
// Packing makes every load of the micro-kernel contiguous and zero-pads the edges, so the kernel itself
// never branches on shape; edge tiles of C go through a small local tile.
#include <algorithm>
#include <cstring>
#include <vector>

#include "attnlab/kernels/detail.hpp"
#include "attnlab/kernels/gemm.hpp"
#include "attnlab/kernels/simd.hpp"

namespace attnlab::kernels::ATTNLAB_KERNEL_TARGET {

using simd::kWidth;
using simd::Vec;

namespace {

// kMr rows × kNv vectors of C in registers: 6×2 (12 accumulators, BLIS's AVX2 shape) with 8- or 16-lane vectors;
// with 4 lanes, 12 accumulators + 2 B vectors + 1 broadcast is one register more than V8 gives, so wasm/SSE2 take
// 4×2. The shapes measured: docs/performance.md ("Kernel notes").
#ifndef ATTNLAB_GEMM_MR
#define ATTNLAB_GEMM_MR (kWidth == 4 ? 4 : 6)
#define ATTNLAB_GEMM_NV 2
#endif
constexpr int kMr = ATTNLAB_GEMM_MR;
constexpr int kNv = ATTNLAB_GEMM_NV;
constexpr int kNr = kNv * kWidth;
// Cache blocks: a packed A block kMc×kKc (96 KiB) stays in L2, a B micro-panel kKc×kNr in L1.
constexpr int kKc = 256;
constexpr int kMc = 16 * kMr;
constexpr int kNc = 512;

// c[kMr, kNr] (+)= Σ_k a[k][0..kMr) ⊗ b[k][0..kNr)
void micro_kernel(int kc, const float* a, const float* b, float* c, int ldc, bool accumulate) {
    Vec acc[kMr][kNv];
    for (int r = 0; r < kMr; ++r)
        for (int v = 0; v < kNv; ++v) acc[r][v] = simd::zero();
    for (int k = 0; k < kc; ++k) {
        Vec bv[kNv];
        for (int v = 0; v < kNv; ++v) bv[v] = simd::load(b + v * kWidth);
        for (int r = 0; r < kMr; ++r) {
            const Vec av = simd::splat(a[r]);
            for (int v = 0; v < kNv; ++v) acc[r][v] = simd::fma(av, bv[v], acc[r][v]);
        }
        a += kMr;
        b += kNr;
    }
    for (int r = 0; r < kMr; ++r)
        for (int v = 0; v < kNv; ++v) {
            float* out = c + (size_t)r * ldc + v * kWidth;
            simd::store(out, accumulate ? acc[r][v] + simd::load(out) : acc[r][v]);
        }
}

// Rows src[0..4) (kc values each) -> dst[k * stride + r]: a transpose, one 4x4 vector transpose per 4 values of k
// where vectors have 4 lanes. Packed one value at a time instead, the 256³ gemm_nt ran ~6% slower in wasm.
[[maybe_unused]] void pack_rows4(const float* const src[4], int kc, float* dst, int stride) {
    int k = 0;
#if ATTNLAB_SIMD_HAS_TRANSPOSE4
    for (; k + 4 <= kc; k += 4) {
        Vec a = simd::load(src[0] + k), b = simd::load(src[1] + k), c = simd::load(src[2] + k), d = simd::load(src[3] + k);
        simd::transpose4(a, b, c, d);
        simd::store(dst + (size_t)(k + 0) * stride, a);
        simd::store(dst + (size_t)(k + 1) * stride, b);
        simd::store(dst + (size_t)(k + 2) * stride, c);
        simd::store(dst + (size_t)(k + 3) * stride, d);
    }
#endif
    for (; k < kc; ++k)
        for (int r = 0; r < 4; ++r) dst[(size_t)k * stride + r] = src[r][k];
}

// The first `rows` rows of M (kc values each, row stride ld) -> one micro-panel [kc][kPanel], the other rows zero.
template <int kPanel>
void pack_panel(int rows, int kc, const float* M, int ld, float* packed) {
    static const float zeros[kKc] = {};
    if constexpr (ATTNLAB_SIMD_HAS_TRANSPOSE4 && kPanel % 4 == 0) {
        for (int r0 = 0; r0 < kPanel; r0 += 4) {
            const float* src[4];
            for (int r = 0; r < 4; ++r) src[r] = r0 + r < rows ? M + (size_t)(r0 + r) * ld : zeros;
            pack_rows4(src, kc, packed + r0, kPanel);
        }
    } else {
        for (int r = 0; r < kPanel; ++r) {
            const float* src = r < rows ? M + (size_t)r * ld : zeros;
            for (int k = 0; k < kc; ++k) packed[(size_t)k * kPanel + r] = src[k];
        }
    }
}

// A[mc, kc] (row stride lda) -> micro-panels [kc][kMr], rows past mc zero.
void pack_a(int mc, int kc, const float* A, int lda, float* packed) {
    for (int i = 0; i < mc; i += kMr) {
        pack_panel<kMr>(std::min(kMr, mc - i), kc, A + (size_t)i * lda, lda, packed);
        packed += (size_t)kc * kMr;
    }
}

// B[kc, nc] (row stride ldb) -> micro-panels [kc][kNr], columns past nc zero.
void pack_b_nn(int kc, int nc, const float* B, int ldb, float* packed) {
    for (int j = 0; j < nc; j += kNr) {
        const int cols = std::min(kNr, nc - j);
        for (int k = 0; k < kc; ++k) {
            const float* src = B + (size_t)k * ldb + j;
            float* dst = packed + (size_t)k * kNr;
            if (cols == kNr) {
                for (int v = 0; v < kNv; ++v) simd::store(dst + v * kWidth, simd::load(src + v * kWidth));
            } else {
                std::memcpy(dst, src, sizeof(float) * cols);
                std::fill(dst + cols, dst + kNr, 0.0f);
            }
        }
        packed += (size_t)kc * kNr;
    }
}

// Bᵀ where B[nc, kc] (row stride ldb) holds the columns as rows -> micro-panels [kc][kNr].
void pack_b_nt(int kc, int nc, const float* B, int ldb, float* packed) {
    for (int j = 0; j < nc; j += kNr) {
        pack_panel<kNr>(std::min(kNr, nc - j), kc, B + (size_t)j * ldb, ldb, packed);
        packed += (size_t)kc * kNr;
    }
}

// Reused between calls: the models call GEMM per layer and per step; allocating 100s of KiB each time
// would cost more than packing. (The engine is single-threaded; thread_local keeps that an assumption
// of nobody's.)
std::vector<float>& scratch(int which) {
    thread_local std::vector<float> buffers[2];
    return buffers[which];
}

}  // namespace

static void gemm_packed(bool b_transposed, int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C,
                 int ldc, bool accumulate) {
    detail::check_gemm(b_transposed ? "gemm_nt" : "gemm_nn", M, N, K, lda, K, ldb, b_transposed ? K : N, ldc);
    if (M == 0 || N == 0) return;
    if (K == 0) {
        if (!accumulate)
            for (int i = 0; i < M; ++i) std::fill(C + (size_t)i * ldc, C + (size_t)i * ldc + N, 0.0f);
        return;
    }
    const int round_nc = (std::min(N, kNc) + kNr - 1) / kNr * kNr;
    const int round_mc = (std::min(M, kMc) + kMr - 1) / kMr * kMr;
    std::vector<float>& packed_b = scratch(0);
    std::vector<float>& packed_a = scratch(1);
    packed_b.resize((size_t)std::min(K, kKc) * round_nc);
    packed_a.resize((size_t)std::min(K, kKc) * round_mc);
    alignas(64) float edge[kMr * kNr];

    for (int jc = 0; jc < N; jc += kNc) {
        const int nc = std::min(kNc, N - jc);
        for (int pc = 0; pc < K; pc += kKc) {
            const int kc = std::min(kKc, K - pc);
            const bool acc = accumulate || pc > 0;
            if (b_transposed)
                pack_b_nt(kc, nc, B + (size_t)jc * ldb + pc, ldb, packed_b.data());
            else
                pack_b_nn(kc, nc, B + (size_t)pc * ldb + jc, ldb, packed_b.data());
            for (int ic = 0; ic < M; ic += kMc) {
                const int mc = std::min(kMc, M - ic);
                pack_a(mc, kc, A + (size_t)ic * lda + pc, lda, packed_a.data());
                for (int jr = 0; jr < nc; jr += kNr) {
                    const int cols = std::min(kNr, nc - jr);
                    const float* b = packed_b.data() + (size_t)(jr / kNr) * kc * kNr;
                    for (int ir = 0; ir < mc; ir += kMr) {
                        const int rows = std::min(kMr, mc - ir);
                        const float* a = packed_a.data() + (size_t)(ir / kMr) * kc * kMr;
                        float* c = C + (size_t)(ic + ir) * ldc + jc + jr;
                        if (rows == kMr && cols == kNr) {
                            micro_kernel(kc, a, b, c, ldc, acc);
                        } else {
                            micro_kernel(kc, a, b, edge, kNr, false);
                            for (int r = 0; r < rows; ++r)
                                for (int j = 0; j < cols; ++j) {
                                    float& out = c[(size_t)r * ldc + j];
                                    out = acc ? out + edge[r * kNr + j] : edge[r * kNr + j];
                                }
                        }
                    }
                }
            }
        }
    }
}

void gemm_nn_packed(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                    bool accumulate) {
    gemm_packed(false, M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

void gemm_nt_packed(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                    bool accumulate) {
    gemm_packed(true, M, N, K, A, lda, B, ldb, C, ldc, accumulate);
}

}  // namespace attnlab::kernels::ATTNLAB_KERNEL_TARGET
