#pragma once
// Activations quantized to Q8_0: the buffers the int8 products quantize into (QuantizedRows: q8_kernels.cpp and
// the dispatcher, dispatch.cpp), and the scalar rule the benchmark's row-by-row variants use (QuantizedActivations:
// bench/bench_kernels.cpp, bench/variants/q8_int8.cpp).
#include <cstdint>
#include <vector>

#include "attnlab/kernels/detail.hpp"
#include "attnlab/kernels/kernels.hpp"

namespace attnlab::kernels::detail {

// Room for rows × n activations quantized by quantize_activations_q8: values [rows, n], scales [rows, n / 32].
// One per thread (thread_local at the user), reused between calls.
struct QuantizedRows {
    std::vector<int16_t> values;
    std::vector<float> scales;
    void fit(int rows, int n) {
        values.resize((size_t)rows * n);
        scales.resize((size_t)rows * (n / kQ8BlockSize));
    }
};

// x[n], or each row of x[rows, n], quantized to Q8_0 and widened: int16 values (what the SIMD multiply-add reads)
// and one float scale per block. Buffers reused between calls (single-threaded engine; thread_local to stay safe).
struct QuantizedActivations {
    std::vector<BlockQ8_0> blocks;
    std::vector<int16_t> values;  // [rows, n]
    std::vector<float> scales;    // [rows, n / 32]

    void quantize(const float* x, int n) { quantize_rows(x, 1, n, n); }

    // rows x [rows, n] (row stride ld), each row quantized on its own exactly as quantize(row, n) would:
    // values [rows, n], scales [rows, n / 32].
    void quantize_rows(const float* x, int rows, int n, int ld) {
        const int count = n / kQ8BlockSize;
        blocks.resize(count);
        values.resize((size_t)rows * n);
        scales.resize((size_t)rows * count);
        for (int r = 0; r < rows; ++r) {
            quantize_q8_0(x + (size_t)r * ld, n, blocks.data());
            for (int b = 0; b < count; ++b) {
                scales[(size_t)r * count + b] = detail::half_to_float(blocks[b].scale);
                int16_t* out = values.data() + (size_t)r * n + (size_t)b * kQ8BlockSize;
                for (int j = 0; j < kQ8BlockSize; ++j) out[j] = blocks[b].q[j];
            }
        }
    }
};

inline QuantizedActivations& activations_scratch() {
    thread_local QuantizedActivations scratch;
    return scratch;
}

}  // namespace attnlab::kernels::detail
