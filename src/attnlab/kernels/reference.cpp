// Scalar reference kernels: the ground truth of the kernel tests and the baseline of the benchmark.
// Plain loops in the most obvious order; CMake compiles this file with auto-vectorization disabled
// so "scalar" in the benchmark really means scalar.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "attnlab/error.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/kernels/detail.hpp"

namespace attnlab::kernels::reference {

void gemm_nn(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
             bool accumulate) {
    detail::check_gemm("gemm_nn", M, N, K, lda, K, ldb, N, ldc);
    for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) {
            float sum = 0.0f;
            for (int k = 0; k < K; ++k) sum += A[(size_t)i * lda + k] * B[(size_t)k * ldb + j];
            float& c = C[(size_t)i * ldc + j];
            c = accumulate ? c + sum : sum;
        }
    }
}

void gemm_nt(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
             bool accumulate) {
    detail::check_gemm("gemm_nt", M, N, K, lda, K, ldb, K, ldc);
    for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) {
            float sum = 0.0f;
            for (int k = 0; k < K; ++k) sum += A[(size_t)i * lda + k] * B[(size_t)j * ldb + k];
            float& c = C[(size_t)i * ldc + j];
            c = accumulate ? c + sum : sum;
        }
    }
}

// One weight row of Q8_0 dotted with x: per block, the integer-weighted sum times the block scale.
static float dot_q8_row(const BlockQ8_0* row, const float* x, int blocks) {
    float sum = 0.0f;
    for (int b = 0; b < blocks; ++b) {
        float block_sum = 0.0f;
        for (int j = 0; j < kQ8BlockSize; ++j) block_sum += float(row[b].q[j]) * x[b * kQ8BlockSize + j];
        sum += f16_to_f32(row[b].scale) * block_sum;
    }
    return sum;
}

void gemm_nt_q8(int M, int N, int K, const float* A, int lda, const BlockQ8_0* B, float* C, int ldc,
                bool accumulate) {
    detail::check_gemm("gemm_nt_q8", M, N, K, lda, K, K, K, ldc);
    detail::check_q8_width("gemm_nt_q8", K);
    const int blocks = K / kQ8BlockSize;
    for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) {
            float sum = dot_q8_row(B + (size_t)j * blocks, A + (size_t)i * lda, blocks);
            float& c = C[(size_t)i * ldc + j];
            c = accumulate ? c + sum : sum;
        }
    }
}

void gemv(int M, int N, const float* W, int ldw, const float* x, float* y, bool accumulate) {
    detail::check_gemv("gemv", M, N, ldw);
    for (int i = 0; i < M; ++i) {
        float sum = 0.0f;
        for (int j = 0; j < N; ++j) sum += W[(size_t)i * ldw + j] * x[j];
        y[i] = accumulate ? y[i] + sum : sum;
    }
}

void gemv_panels(int M, int N, const float* P, const float* x, float* y, bool accumulate) {
    detail::check_gemv("gemv_panels", M, N, N);
    for (int i = 0; i < M; ++i) {
        const float* w = P + (size_t)(i / kPanelRows) * N * kPanelRows + i % kPanelRows;
        float sum = 0.0f;
        for (int k = 0; k < N; ++k) sum += w[(size_t)k * kPanelRows] * x[k];
        y[i] = accumulate ? y[i] + sum : sum;
    }
}

void gemm_panels(int M, int N, int K, const float* A, int lda, const float* P, float* C, int ldc, bool accumulate) {
    detail::check_gemm("gemm_panels", M, N, K, lda, K, K, K, ldc);
    for (int i = 0; i < M; ++i) gemv_panels(N, K, P, A + (size_t)i * lda, C + (size_t)i * ldc, accumulate);
}

void gemv_t(int M, int N, const float* W, int ldw, const float* x, float* y, bool accumulate) {
    detail::check_gemv("gemv_t", M, N, ldw);
    for (int j = 0; j < N; ++j) {
        float sum = 0.0f;
        for (int i = 0; i < M; ++i) sum += W[(size_t)i * ldw + j] * x[i];
        y[j] = accumulate ? y[j] + sum : sum;
    }
}

void gemv_q8(int M, int N, const BlockQ8_0* W, const float* x, float* y, bool accumulate) {
    detail::check_gemv("gemv_q8", M, N, N);
    detail::check_q8_width("gemv_q8", N);
    const int blocks = N / kQ8BlockSize;
    for (int i = 0; i < M; ++i) {
        float sum = dot_q8_row(W + (size_t)i * blocks, x, blocks);
        y[i] = accumulate ? y[i] + sum : sum;
    }
}

// ggml's q8_0·q8_0: x quantized once, then per block an exact integer dot product scaled by d_w·d_x, the
// blocks summed in order in float (the SIMD kernel does the same float operations per row, so the two
// differ at most by fused multiply-adds).
void gemv_q8_q8(int M, int N, const BlockQ8_0* W, const float* x, float* y, bool accumulate, const float*) {
    detail::check_gemv("gemv_q8_q8", M, N, N);
    detail::check_q8_width("gemv_q8_q8", N);
    const int blocks = N / kQ8BlockSize;
    std::vector<BlockQ8_0> xq(blocks);
    quantize_q8_0(x, N, xq.data());
    for (int i = 0; i < M; ++i) {
        float sum = 0.0f;
        for (int b = 0; b < blocks; ++b) {
            const BlockQ8_0& w = W[(size_t)i * blocks + b];
            int32_t block_sum = 0;
            for (int j = 0; j < kQ8BlockSize; ++j) block_sum += int32_t(w.q[j]) * int32_t(xq[b].q[j]);
            sum += float(block_sum) * (f16_to_f32(w.scale) * f16_to_f32(xq[b].scale));
        }
        y[i] = accumulate ? y[i] + sum : sum;
    }
}

// Row by row: each row is its own gemv_q8_q8 (its own activation quantization), as the SIMD kernel promises.
void gemm_nt_q8_q8(int M, int N, int K, const float* A, int lda, const BlockQ8_0* B, float* C, int ldc,
                   bool accumulate, const float*) {
    detail::check_gemm("gemm_nt_q8_q8", M, N, K, lda, K, K, K, ldc);
    detail::check_q8_width("gemm_nt_q8_q8", K);
    for (int i = 0; i < M; ++i) reference::gemv_q8_q8(N, K, B, A + (size_t)i * lda, C + (size_t)i * ldc, accumulate);
}

static float activation(float x, Activation act) {
    switch (act) {
        case Activation::none: return x;
        case Activation::relu: return x > 0.0f ? x : 0.0f;
        case Activation::relu6: return std::min(std::max(x, 0.0f), 6.0f);
        case Activation::tanh: return std::tanh(x);
        case Activation::sigmoid: return 1.0f / (1.0f + std::exp(-x));
        // torch.nn.GELU() default (approximate='none'): the exact erf form.
        case Activation::gelu: return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
    }
    fail("unknown activation " + std::to_string(int(act)));
}

void bias_act(int rows, int cols, float* y, int ldy, const float* bias, Activation act) {
    detail::check_rows("bias_act", rows, cols, ldy);
    for (int r = 0; r < rows; ++r) {
        float* row = y + (size_t)r * ldy;
        for (int c = 0; c < cols; ++c) row[c] = activation(bias ? row[c] + bias[c] : row[c], act);
    }
}

void activate(float* x, std::size_t n, Activation act) {
    for (std::size_t i = 0; i < n; ++i) x[i] = activation(x[i], act);
}

void gru_gates(int rows, int H, const float* input_gates, const float* hidden_gates, const float* h, float* h_out) {
    check(rows >= 0 && H >= 0, "gru_gates: negative size");
    for (int row = 0; row < rows; ++row) {
        const float* gi = input_gates + (size_t)row * 3 * H;
        const float* gh = hidden_gates + (size_t)row * 3 * H;
        for (int j = 0; j < H; ++j) {
            const float r = activation(gi[j] + gh[j], Activation::sigmoid);
            const float z = activation(gi[H + j] + gh[H + j], Activation::sigmoid);
            const float n = std::tanh(gi[2 * H + j] + r * gh[2 * H + j]);
            const size_t at = (size_t)row * H + j;
            h_out[at] = (1.0f - z) * n + z * h[at];
        }
    }
}

// The largest kept value of a row (mask null keeps all); -inf when nothing is kept.
static float masked_max(const float* row, const uint8_t* mask, int cols) {
    float max = -std::numeric_limits<float>::infinity();
    for (int c = 0; c < cols; ++c)
        if (!mask || mask[c]) max = std::max(max, row[c]);
    return max;
}

void softmax_rows(int rows, int cols, float* x, int ldx, const uint8_t* mask, int ldm) {
    detail::check_rows("softmax_rows", rows, cols, ldx);
    detail::check_mask("softmax_rows", cols, mask, ldm);
    const float neg_inf = -std::numeric_limits<float>::infinity();
    for (int r = 0; r < rows; ++r) {
        float* row = x + (size_t)r * ldx;
        const uint8_t* m = mask ? mask + (size_t)r * ldm : nullptr;
        const float max = masked_max(row, m, cols);
        if (max == neg_inf) {  // fully masked (or every kept logit is -inf): no distribution to speak of
            for (int c = 0; c < cols; ++c) row[c] = 0.0f;
            continue;
        }
        float sum = 0.0f;
        for (int c = 0; c < cols; ++c) {
            row[c] = (!m || m[c]) ? std::exp(row[c] - max) : 0.0f;
            sum += row[c];
        }
        const float inv = 1.0f / sum;
        for (int c = 0; c < cols; ++c) row[c] *= inv;
    }
}

void log_softmax_rows(int rows, int cols, float* x, int ldx, const uint8_t* mask, int ldm) {
    detail::check_rows("log_softmax_rows", rows, cols, ldx);
    detail::check_mask("log_softmax_rows", cols, mask, ldm);
    const float neg_inf = -std::numeric_limits<float>::infinity();
    for (int r = 0; r < rows; ++r) {
        float* row = x + (size_t)r * ldx;
        const uint8_t* m = mask ? mask + (size_t)r * ldm : nullptr;
        const float max = masked_max(row, m, cols);
        if (max == neg_inf) {
            for (int c = 0; c < cols; ++c) row[c] = neg_inf;
            continue;
        }
        float sum = 0.0f;
        for (int c = 0; c < cols; ++c)
            if (!m || m[c]) sum += std::exp(row[c] - max);
        const float log_sum = std::log(sum);
        for (int c = 0; c < cols; ++c) row[c] = (!m || m[c]) ? row[c] - max - log_sum : neg_inf;
    }
}

void layer_norm_rows(int rows, int cols, const float* x, float* y, const float* gamma, const float* beta,
                     float eps) {
    detail::check_rows("layer_norm_rows", rows, cols, cols);
    check(cols > 0 || rows == 0, "layer_norm_rows: cols must be positive");
    for (int r = 0; r < rows; ++r) {
        const float* in = x + (size_t)r * cols;
        float* out = y + (size_t)r * cols;
        float mean = 0.0f;
        for (int c = 0; c < cols; ++c) mean += in[c];
        mean /= float(cols);
        float var = 0.0f;
        for (int c = 0; c < cols; ++c) var += (in[c] - mean) * (in[c] - mean);
        var /= float(cols);
        const float inv_std = 1.0f / std::sqrt(var + eps);
        for (int c = 0; c < cols; ++c) {
            float v = (in[c] - mean) * inv_std;
            if (gamma) v *= gamma[c];
            if (beta) v += beta[c];
            out[c] = v;
        }
    }
}

void embedding(const float* table, int vocab, int dim, const int32_t* ids, int n, float* out) {
    detail::check_embedding(vocab, dim, ids, n);
    for (int i = 0; i < n; ++i)
        for (int d = 0; d < dim; ++d) out[(size_t)i * dim + d] = table[(size_t)ids[i] * dim + d];
}

float dot(const float* a, const float* b, int n) {
    float sum = 0.0f;
    for (int i = 0; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

void axpy(int n, float alpha, const float* x, float* y) {
    for (int i = 0; i < n; ++i) y[i] += alpha * x[i];
}

int argmax(const float* x, int n) {
    check(n > 0, "argmax: empty input");
    int best = 0;
    for (int i = 1; i < n; ++i)
        if (x[i] > x[best]) best = i;
    return best;
}

void top_k(const float* x, int n, int k, int* indices, float* values) {
    detail::check_top_k(n, k);
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [x](int a, int b) { return detail::ranks_before(x, a, b); });
    for (int i = 0; i < k; ++i) {
        indices[i] = order[i];
        values[i] = x[order[i]];
    }
}

}  // namespace attnlab::kernels::reference
