#pragma once
// nn.Linear: y = x · Wᵀ + b, with W in PyTorch layout [out, in], as f32 (row-major, or packed in the GEMV's panels
// once loaded), as IEEE halves (native builds with F16C, kernels::keep_f16_weights()) or as GGUF Q8_0 blocks.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attnlab/kernels/kernels.hpp"
#include "attnlab/tensor.hpp"

namespace attnlab::gguf {
class File;
}

namespace attnlab::nn {

// Q8_0 blocks that never change once made: the model file's own bytes, used in place (what the loaders give: nothing
// copied or written at load, the weights' memory is the file's), or blocks of their own (what slices and hand-built
// layers make). Copies share the blocks.
class Q8Weights {
public:
    Q8Weights() = default;
    explicit Q8Weights(std::vector<kernels::BlockQ8_0> blocks);
    // `count` blocks at `blocks`, kept alive by `blocks`' owner (an aliasing pointer into a gguf::File's bytes).
    Q8Weights(std::shared_ptr<const kernels::BlockQ8_0> blocks, std::size_t count)
        : blocks_(std::move(blocks)), count_(count) {}

    const kernels::BlockQ8_0* data() const { return blocks_.get(); }
    std::size_t size() const { return count_; }
    bool empty() const { return count_ == 0; }
    const kernels::BlockQ8_0* begin() const { return data(); }
    const kernels::BlockQ8_0* end() const { return data() + count_; }
    // Blocks [first, first+count), sharing these (no copy).
    Q8Weights part(std::size_t first, std::size_t count) const;

private:
    std::shared_ptr<const kernels::BlockQ8_0> blocks_;
    std::size_t count_ = 0;
};

struct Linear {
    int in = 0;
    int out = 0;
    Matrix weight;                                 // [out, in] f32; empty when another member holds the weights
    // [out, in] f32 in kernels::pack_panels' layout (what the loaders make of f32 weights): used when non-empty.
    std::vector<float> weight_panels;
    std::vector<uint16_t> weight_f16;              // [out, in] halves; used when non-empty
    Q8Weights weight_q8;                           // [out, in/32] Q8_0 blocks; used when non-empty
    // weight_q8's block scales as floats, kernels::q8_scales_by4 (set by the loaders and slice_rows; 12% of
    // the Q8_0 bytes): spares the one-row kernel converting f16 scales on every call. Empty: converted per call.
    // A cache of weight_q8, checked only by size: code that changes weight_q8 after loading must clear or refill it.
    std::vector<float> weight_q8_scales;
    // weight_q8 in kernels::interleave_q8_rows4's layout, for several activation rows (linear_batched), where
    // kernels::q8_rows4_pays() (wasm; 94% of the Q8_0 bytes more in memory). Empty: the Q8_0 layout. The same
    // cache rule as weight_q8_scales.
    std::vector<int8_t> weight_q8_rows4;
    Vector bias;                                   // [out], or empty for no bias

    bool quantized() const { return !weight_q8.empty(); }
    bool half() const { return !weight_f16.empty(); }
    bool panelled() const { return !weight_panels.empty(); }
    bool has_bias() const { return bias.size() != 0; }
};

// x [rows, in] -> y [rows, out]; contiguous row-major buffers; y must not alias x.
void linear(const Linear& layer, const float* x, int rows, float* y);
// x [rows, in] -> [rows, out]
Matrix linear(const Linear& layer, const Matrix& x);

// x [rows, in] -> y [rows, out] where the rows are independent batch-1 inputs (a batched decoder step, one row per
// hypothesis): each row is computed as linear(layer, row, 1, ...) computes it (bit for bit for Q8_0 weights, the same
// int8 activation rounding and float operations, and for panel-packed f32 weights; halves and row-major f32 up to
// the summation order of the GEMM),
// with the weights read once for all rows. One row is exactly linear(layer, x, 1, y).
void linear_batched(const Linear& layer, const float* x, int rows, float* y);

// x [rows, in] -> y [rows, out] where Q8_0 weights take linear_batched's int8 path (each row as one row alone, its
// activations rounded to Q8_0 as every decoder step rounds its row; the int8 GEMM is also the faster one in wasm)
// and every other storage linear(). What the Transformer's layers use, so that its encoder and its decoder steps
// go through the same arithmetic.
void linear_rows(const Linear& layer, const float* x, int rows, float* y);
Matrix linear_rows(const Linear& layer, const Matrix& x);

// Which products a layer applies to a whole sequence: `linear` (Q8_0 weights with float activations) or `rows`
// (linear_rows: Q8_0 weights round each row's activations to int8, as the decoder steps do; the faster one in wasm).
// What a model picks for its encoder is part of its numerics: its card's numbers were measured with that choice.
enum class SequenceProducts { linear, rows };
// x [rows, in] -> [rows, out] through linear or linear_rows.
Matrix project_sequence(const Linear& layer, const Matrix& x, SequenceProducts products);

// linear_batched of the same x through several layers of the same `in` (a multi-head attention's query, key and
// value projections): y[i] [rows, layers[i]->out] is bit for bit linear_batched(*layers[i], x, rows, y[i]). Up to 4
// Q8_0 layers whose `out` are multiples of 64 (the last any) share one quantizing of x and one split over the pool
// (kernels::gemm_nt_q8_q8_stack); anything else runs layer by layer.
void linear_batched_stack(const Linear* const* layers, int count, const float* x, int rows, float* const* y);

// Rows [begin, begin+count) of the layer (weights and bias): splits a fused projection such as
// nn.MultiheadAttention's in_proj [3d, d] or a recurrent cell's stacked gates. Q8_0 rows share the layer's blocks.
Linear slice_rows(const Linear& layer, int begin, int count);
// Columns [begin, begin+count) of the layer's weights (input features), in the layer's storage, with its bias when
// keep_bias: one part of a layer whose input is a concatenation, W [x ; c] = W_x x + W_c c. Q8_0 weights stay Q8_0
// where begin and count are multiples of 32 (whole blocks keep their own scales); a part that cuts blocks is their
// dequantized values in f32.
Linear slice_columns(const Linear& layer, int begin, int count, bool keep_bias);
// Rows `rows` of the layer, in that order (weights and bias, in the layer's storage): a tied output projection
// restricted to a translation shortlist's tokens.
Linear gather_rows(const Linear& layer, const std::vector<int32_t>& rows);

// Row `row` of W (f32, for an embedding table tied to or stored as a layer), whatever holds the weights.
void weight_row(const Linear& layer, int row, float* out);
// W [out, in] as f32 row-major, whatever holds the weights (tests and tools; the models never unpack).
Matrix weight_matrix(const Linear& layer);
// Moves f32 row-major weights into the panel layout (a no-op for the other storages).
void pack_weight_panels(Linear& layer);

// Checks that the weights agree with in/out (a hand-built layer with a wrong shape fails here, not in a kernel).
void validate(const Linear& layer, const std::string& what);

// Reads "<prefix>.weight" [out, in] and, when with_bias, "<prefix>.bias" [out]. Q8_0 weights stay quantized (used
// in place in the file's bytes), F16 stays F16 where kernels::keep_f16_weights() (else becomes f32), F32 stays f32,
// packed in panels. Throws attnlab::Error when a tensor is missing or has another shape.
Linear load_linear(const gguf::File& file, const std::string& prefix, int in, int out, bool with_bias = true);
// Same, but the bias is loaded only when the file has "<prefix>.bias".
Linear load_linear_optional_bias(const gguf::File& file, const std::string& prefix, int in, int out);

// The general form: any weight name [out, in]; the bias is loaded when bias_name is non-empty and present.
Linear load_linear_tensors(const gguf::File& file, const std::string& weight_name, const std::string& bias_name,
                           int in, int out);

// load_linear_tensors without the Q8_0 caches of the products: a layer that is split before use (slice_rows,
// slice_columns), whose parts make their own.
Linear load_linear_to_split(const gguf::File& file, const std::string& weight_name, const std::string& bias_name,
                            int in, int out);

// A lookup table [rows, width] (a source embedding): its rows are read (weight_row), never multiplied, so it is held
// as the file holds it, without the panels and Q8_0 caches the products use: less memory, and less of it written
// while a model loads.
Linear load_table(const gguf::File& file, const std::string& weight_name, int width, int rows);

// A 1-D f32/f16 tensor of n elements.
Vector load_vector(const gguf::File& file, const std::string& name, int n);
// A 2-D f32/f16 tensor [rows, cols].
Matrix load_matrix(const gguf::File& file, const std::string& name, int rows, int cols);

}  // namespace attnlab::nn
