// IEEE half <-> float and ggml's Q8_0 quantization, bit-exact (integer arithmetic, no FPU rounding modes), the
// panel layout of the f32 GEMV and the four-row interleave of the multi-row int8 GEMM.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "attnlab/error.hpp"
#include "attnlab/kernels/detail.hpp"
#include "attnlab/kernels/kernels.hpp"

namespace attnlab::kernels {

static uint32_t float_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

float f16_to_f32(uint16_t h) { return detail::half_to_float(h); }

// Shift right by `shift` (1..31) rounding to nearest, ties to even.
static uint32_t shift_round_even(uint32_t value, int shift) {
    const uint32_t kept = value >> shift;
    const uint32_t rest = value & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
}

uint16_t f32_to_f16(float f) {
    const uint32_t x = float_bits(f);
    const uint16_t sign = uint16_t((x >> 16) & 0x8000u);
    const uint32_t magnitude = x & 0x7fffffffu;
    if (magnitude >= 0x7f800000u) {
        if (magnitude == 0x7f800000u) return sign | 0x7c00u;
        // NaN: keep the top payload bits; never let a NaN collapse into infinity.
        uint32_t payload = (magnitude >> 13) & 0x3ffu;
        if (payload == 0) payload = 0x200u;
        return uint16_t(sign | 0x7c00u | payload);
    }
    if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds past the largest half (65504)
    if (magnitude < 0x38800000u) {                         // below 2^-14: a half subnormal or zero
        const int exponent = int(magnitude >> 23);
        if (exponent < 102) return sign;  // under half of the smallest subnormal 2^-24: rounds to zero
        const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
        // value = significand * 2^(exponent-150); in units of 2^-24 that is significand >> (126 - exponent).
        return uint16_t(sign | shift_round_even(significand, 126 - exponent));
    }
    // Normal: rebias the exponent (127 -> 15) and round the 23-bit mantissa to 10; a carry out of the
    // mantissa correctly bumps the exponent.
    return uint16_t(sign | shift_round_even(magnitude - 0x38000000u, 13));
}

void quantize_q8_0(const float* x, std::size_t n, BlockQ8_0* out) {
    check(n % kQ8BlockSize == 0, "quantize_q8_0: n=" + std::to_string(n) + " is not a multiple of 32");
    for (std::size_t b = 0; b < n / kQ8BlockSize; ++b) {
        const float* block = x + b * kQ8BlockSize;
        float amax = 0.0f;
        for (int j = 0; j < kQ8BlockSize; ++j) amax = std::fmax(amax, std::fabs(block[j]));
        // As ggml's quantize_row_q8_0_reference: the unrounded scale divides, the f16-rounded one is stored.
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        out[b].scale = f32_to_f16(d);
        for (int j = 0; j < kQ8BlockSize; ++j) {
            // |r| <= 127 for finite input; NaN (and Inf · 0) would make the int8 conversion undefined: it becomes 0.
            const float r = std::roundf(block[j] * id);
            out[b].q[j] = r == r ? int8_t(std::fmin(std::fmax(r, -127.0f), 127.0f)) : int8_t(0);
        }
    }
}

void dequantize_q8_0(const BlockQ8_0* blocks, std::size_t n, float* out) {
    check(n % kQ8BlockSize == 0, "dequantize_q8_0: n=" + std::to_string(n) + " is not a multiple of 32");
    for (std::size_t b = 0; b < n / kQ8BlockSize; ++b) {
        const float d = f16_to_f32(blocks[b].scale);
        for (int j = 0; j < kQ8BlockSize; ++j) out[b * kQ8BlockSize + j] = d * float(blocks[b].q[j]);
    }
}

std::vector<float> pack_panels(const float* W, int M, int N, int ldw) {
    check(M > 0 && N > 0 && ldw >= N, "pack_panels: bad shape M=" + std::to_string(M) + " N=" + std::to_string(N) +
                                          " ldw=" + std::to_string(ldw));
    const std::size_t panels = (std::size_t(M) + kPanelRows - 1) / kPanelRows;
    std::vector<float> packed(panels * std::size_t(N) * kPanelRows, 0.0f);
    for (int i = 0; i < M; ++i) {
        float* out = packed.data() + std::size_t(i / kPanelRows) * N * kPanelRows + i % kPanelRows;
        const float* row = W + std::size_t(i) * ldw;
        for (int k = 0; k < N; ++k) out[std::size_t(k) * kPanelRows] = row[k];
    }
    return packed;
}

std::vector<int8_t> interleave_q8_rows4(const BlockQ8_0* W, int M, int N) {
    check(M > 0 && N > 0, "interleave_q8_rows4: bad shape M=" + std::to_string(M) + " N=" + std::to_string(N));
    detail::check_q8_width("interleave_q8_rows4", N);
    const int blocks = N / kQ8BlockSize;
    const std::size_t groups = (std::size_t(M) + 3) / 4;
    std::vector<int8_t> out(groups * blocks * kQ8BlockSize * 4);
    int8_t* o = out.data();
    for (std::size_t g = 0; g < groups; ++g)
        for (int b = 0; b < blocks; ++b)
            for (int quad = 0; quad < kQ8BlockSize / 4; ++quad)
                for (int half = 0; half < 2; ++half)
                    for (int r = 0; r < 4; ++r) {
                        const std::size_t row = std::min<std::size_t>(4 * g + r, std::size_t(M) - 1);
                        const int8_t* q = W[row * blocks + b].q + 4 * quad + 2 * half;
                        *o++ = q[0];
                        *o++ = q[1];
                    }
    return out;
}

void panel_row(const float* P, int M, int N, int row, float* out) {
    check(row >= 0 && row < M && N > 0, "panel_row: row " + std::to_string(row) + " outside [0, " + std::to_string(M) + ")");
    const float* in = P + std::size_t(row / kPanelRows) * N * kPanelRows + row % kPanelRows;
    for (int k = 0; k < N; ++k) out[k] = in[std::size_t(k) * kPanelRows];
}

}  // namespace attnlab::kernels
