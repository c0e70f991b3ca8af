#pragma once
// Argument checks shared by the SIMD and the reference kernels, so both reject bad input the same way
// (an attnlab::Error with the kernel's name) instead of reading out of bounds.
#include <cstdint>
#include <cstring>
#include <string>

#include "attnlab/error.hpp"
#include "attnlab/kernels/kernels.hpp"

namespace attnlab::kernels::detail {

// A[M, a_width] with stride lda, B[?, b_width] with stride ldb, C[M, N] with stride ldc.
inline void check_gemm(const char* name, int M, int N, int K, int lda, int a_width, int ldb, int b_width,
                       int ldc) {
    if (M < 0 || N < 0 || K < 0)
        fail(std::string(name) + ": negative size M=" + std::to_string(M) + " N=" + std::to_string(N) +
             " K=" + std::to_string(K));
    if (lda < a_width || ldb < b_width || ldc < N)
        fail(std::string(name) + ": leading dimension smaller than the row (lda=" + std::to_string(lda) +
             " ldb=" + std::to_string(ldb) + " ldc=" + std::to_string(ldc) + " for M=" + std::to_string(M) +
             " N=" + std::to_string(N) + " K=" + std::to_string(K) + ")");
}

inline void check_gemv(const char* name, int M, int N, int ldw) {
    if (M < 0 || N < 0) fail(std::string(name) + ": negative size M=" + std::to_string(M) + " N=" + std::to_string(N));
    if (ldw < N) fail(std::string(name) + ": ldw=" + std::to_string(ldw) + " is smaller than N=" + std::to_string(N));
}

inline void check_q8_width(const char* name, int width) {
    if (width % kQ8BlockSize != 0)
        fail(std::string(name) + ": Q8_0 rows need a multiple of 32 values, got " + std::to_string(width));
}

inline void check_rows(const char* name, int rows, int cols, int ld) {
    if (rows < 0 || cols < 0)
        fail(std::string(name) + ": negative size rows=" + std::to_string(rows) + " cols=" + std::to_string(cols));
    if (ld < cols) fail(std::string(name) + ": row stride " + std::to_string(ld) + " < cols " + std::to_string(cols));
}

inline void check_mask(const char* name, int cols, const uint8_t* mask, int ldm) {
    if (mask && ldm != 0 && ldm < cols)
        fail(std::string(name) + ": mask row stride " + std::to_string(ldm) + " < cols " + std::to_string(cols));
    if (ldm < 0) fail(std::string(name) + ": negative mask stride");
}

inline void check_embedding(int vocab, int dim, const int32_t* ids, int n) {
    if (vocab < 0 || dim < 0 || n < 0) fail("embedding: negative size");
    for (int i = 0; i < n; ++i)
        if (ids[i] < 0 || ids[i] >= vocab)
            fail("embedding: token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                 " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
}

inline void check_top_k(int n, int k) {
    if (k < 0 || k > n) fail("top_k: k=" + std::to_string(k) + " must be in [0, n=" + std::to_string(n) + "]");
}

// top_k's order: larger value first, lower index on ties, NaN after every number (keeps the comparator a
// strict weak order, which std::sort needs to stay in bounds).
inline bool ranks_before(const float* x, int a, int b) {
    const bool a_nan = x[a] != x[a], b_nan = x[b] != x[b];
    if (a_nan != b_nan) return b_nan;
    if (!a_nan && x[a] != x[b]) return x[a] > x[b];
    return a < b;
}

// IEEE half -> float, exact (inline so the Q8_0 kernels can convert a block scale cheaply).
inline float half_to_float(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1fu;
    const uint32_t mantissa = h & 0x3ffu;
    uint32_t bits;
    if (exponent == 0) {
        // Zero or subnormal: mantissa * 2^-24 is exact in float (at most 10 significant bits).
        const float magnitude = float(mantissa) * 5.9604644775390625e-8f;
        std::memcpy(&bits, &magnitude, sizeof bits);
        bits |= sign;
    } else if (exponent == 31) {
        bits = sign | 0x7f800000u | (mantissa << 13);  // inf, NaN (payload kept)
    } else {
        bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);  // rebias 15 -> 127
    }
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

}  // namespace attnlab::kernels::detail
