#pragma once
// The GEMM paths kernels::gemm_nn and gemm_nt choose between by shape (gemm.cpp), declared so that the tests can
// check each one against the reference and the kernel benchmark can time each one; models call gemm_nn / gemm_nt.
#include <algorithm>
#include <cstddef>

#include "attnlab/kernels/kernels.hpp"

namespace attnlab::kernels {

// Dispatched like the kernels of kernels.hpp (in a kernel target's own translation units, that target's own).
#define ATTNLAB_GEMM_PATH_DECLARATIONS                                                                           \
    /* Register tiles straight from A and B, nothing packed: gemm_nn for few rows of A. */                      \
    void gemm_nn_tiles(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc, \
                       bool accumulate = false);                                                                \
    /* Dot-form 4×4 tiles (16 vector accumulators along K) through simd.hpp / xsimd: gemm_nt for few rows. */   \
    void gemm_nt_dot_tiles(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C,      \
                           int ldc, bool accumulate = false);                                                   \
    /* The cache-blocked GEMM (gemm_packed.cpp): A and B packed into micro-panels, one register-blocked         \
       micro-kernel for both; nt packs Bᵀ (B is [N,K]). */                                                      \
    void gemm_nn_packed(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C,         \
                        int ldc, bool accumulate = false);                                                      \
    void gemm_nt_packed(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C,         \
                        int ldc, bool accumulate = false);

#if defined(ATTNLAB_KERNEL_TARGET)
namespace ATTNLAB_KERNEL_TARGET {
ATTNLAB_GEMM_PATH_DECLARATIONS
}
#else
ATTNLAB_GEMM_PATH_DECLARATIONS
#endif

namespace detail {

using NtTile = void (*)(int, const float*, int, const float*, int, float*, int, bool);

// Tiles up to 4×4 of one dot-form micro-kernel family, edges included.
template <template <int, int> class Tile>
void gemm_nt_blocked(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                     bool accumulate) {
    static const NtTile tiles[4][4] = {
        {Tile<1, 1>::run, Tile<1, 2>::run, Tile<1, 3>::run, Tile<1, 4>::run},
        {Tile<2, 1>::run, Tile<2, 2>::run, Tile<2, 3>::run, Tile<2, 4>::run},
        {Tile<3, 1>::run, Tile<3, 2>::run, Tile<3, 3>::run, Tile<3, 4>::run},
        {Tile<4, 1>::run, Tile<4, 2>::run, Tile<4, 3>::run, Tile<4, 4>::run},
    };
    for (int i = 0; i < M; i += 4) {
        const int mr = std::min(4, M - i);
        for (int j = 0; j < N; j += 4) {
            const int nr = std::min(4, N - j);
            tiles[mr - 1][nr - 1](K, A + (size_t)i * lda, lda, B + (size_t)j * ldb, ldb, C + (size_t)i * ldc + j,
                                  ldc, accumulate);
        }
    }
}

}  // namespace detail
}  // namespace attnlab::kernels
