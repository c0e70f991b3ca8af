#pragma once
// Activations quantized to Q8_0 for the benchmark's row-by-row int8 variants (bench/bench_kernels.cpp,
// bench/variants/q8_int8.cpp); the engine's own products quantize in q8_kernels.cpp.
#include <cstdint>
#include <vector>

#include "attnlab/kernels/detail.hpp"
#include "attnlab/kernels/kernels.hpp"

namespace attnlab::kernels::detail {

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
