#include "attnlab/nn/linear.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "attnlab/error.hpp"
#include "attnlab/io/gguf.hpp"

namespace attnlab::nn {

namespace {

// The widened panel of the f16 GEMM path, reused between calls (the engine is single-threaded; thread_local
// keeps that an assumption rather than a race): every multi-row product of an f16 layer calls it.
std::vector<float>& f16_panel(std::size_t size) {
    thread_local std::vector<float> panel;
    if (panel.size() < size) panel.resize(size);
    return panel;
}

// x [rows, in] -> y [rows, out] through the f32 GEMM on panels of widened halves: the conversion is paid once
// per panel, not once per input row.
void linear_f16_rows(const Linear& layer, const float* x, int rows, float* y) {
    constexpr int panel_rows = 64;
    std::vector<float>& panel = f16_panel(std::size_t(panel_rows) * layer.in);
    for (int begin = 0; begin < layer.out; begin += panel_rows) {
        const int count = std::min(panel_rows, layer.out - begin);
        kernels::f16_to_f32_n(layer.weight_f16.data() + std::size_t(begin) * layer.in, std::size_t(count) * layer.in,
                              panel.data());
        kernels::gemm_nt(rows, count, layer.in, x, layer.in, panel.data(), layer.in, y + begin, layer.out);
    }
}

// weight_q8's caches, as the loaders and slice_rows leave them.
void fill_q8_caches(Linear& layer) {
    layer.weight_q8_scales = kernels::q8_scales_by4(layer.weight_q8.data(), layer.out, layer.in);
    if (kernels::q8_rows4_pays())
        layer.weight_q8_rows4 = kernels::interleave_q8_rows4(layer.weight_q8.data(), layer.out, layer.in);
}

const float* packed_q8_scales(const Linear& layer) {
    const std::size_t groups = (std::size_t(layer.out) + 3) / 4;
    return layer.weight_q8_scales.size() == groups * (layer.in / kernels::kQ8BlockSize) * 4
               ? layer.weight_q8_scales.data()
               : nullptr;
}

// weight_q8_rows4 where it holds all of weight_q8 (the cache rule of packed_q8_scales), else null.
const int8_t* interleaved_q8_weights(const Linear& layer) {
    const std::size_t groups = (std::size_t(layer.out) + 3) / 4;
    return layer.weight_q8_rows4.size() == groups * layer.in * 4 ? layer.weight_q8_rows4.data() : nullptr;
}

}  // namespace

Q8Weights::Q8Weights(std::vector<kernels::BlockQ8_0> blocks) : count_(blocks.size()) {
    auto owned = std::make_shared<const std::vector<kernels::BlockQ8_0>>(std::move(blocks));
    blocks_ = std::shared_ptr<const kernels::BlockQ8_0>(owned, owned->data());
}

Q8Weights Q8Weights::part(std::size_t first, std::size_t count) const {
    if (!(first <= count_ && count <= count_ - first))
        fail("Q8Weights::part: blocks [" + std::to_string(first) + ", " + std::to_string(first + count) +
             ") outside [0, " + std::to_string(count_) + ")");
    return Q8Weights(std::shared_ptr<const kernels::BlockQ8_0>(blocks_, blocks_.get() + first), count);
}

void validate(const Linear& layer, const std::string& what) {
    if (!(layer.in > 0 && layer.out > 0))
        fail(what + ": linear layer has no shape (in " + std::to_string(layer.in) + ", out " +
             std::to_string(layer.out) + ")");
    if (layer.quantized()) {
        if (!(layer.in % kernels::kQ8BlockSize == 0))
            fail(what + ": Q8_0 weights need in % 32 == 0, in is " + std::to_string(layer.in));
        if (!(layer.weight_q8.size() == std::size_t(layer.out) * (layer.in / kernels::kQ8BlockSize)))
            fail(what + ": Q8_0 weight has " + std::to_string(layer.weight_q8.size()) + " blocks, expected out*in/32");
    } else if (layer.half()) {
        if (!(layer.weight_f16.size() == std::size_t(layer.out) * std::size_t(layer.in)))
            fail(what + ": F16 weight has " + std::to_string(layer.weight_f16.size()) + " values, expected out*in");
    } else if (layer.panelled()) {
        const std::size_t panels = (std::size_t(layer.out) + kernels::kPanelRows - 1) / kernels::kPanelRows;
        if (!(layer.weight_panels.size() == panels * kernels::kPanelRows * std::size_t(layer.in)))
            fail(what + ": packed weight has " + std::to_string(layer.weight_panels.size()) +
                 " values, expected ceil(out/" + std::to_string(kernels::kPanelRows) + ")*" +
                 std::to_string(kernels::kPanelRows) + "*in");
    } else {
        if (!(layer.weight.dimension() == 2 && int(layer.weight.shape()[0]) == layer.out &&
              int(layer.weight.shape()[1]) == layer.in))
            fail(what + ": weight is not [out=" + std::to_string(layer.out) + ", in=" + std::to_string(layer.in) + "]");
    }
    if (!(!layer.has_bias() || int(layer.bias.size()) == layer.out))
        fail(what + ": bias has " + std::to_string(layer.bias.size()) + " elements, expected " +
             std::to_string(layer.out));
}

// x [rows, in] -> y [rows, out]
void linear(const Linear& layer, const float* x, int rows, float* y) {
    if (rows < 0) fail("linear: negative row count");
    if (rows == 0) return;
    if (layer.quantized()) {
        // One row (every decoder step, greedy or per beam): the int8·int8 kernel, x quantized to Q8_0 per call.
        // It reads the weights at 1 byte each with no per-weight float conversion (gemv_q8's widening made
        // q8_0 decoding slower than f32); the activation rounding is within the weights' own Q8_0 error
        // (docs/performance.md: engine BLEU unchanged). Several rows (the recurrent encoders' inputs) keep the
        // float-activation GEMM, which dequantizes a panel once and reuses it across rows; linear_rows and
        // linear_batched take the int8 path instead.
        if (rows == 1) {
            kernels::gemv_q8_q8(layer.out, layer.in, layer.weight_q8.data(), x, y, false, packed_q8_scales(layer));
        } else {
            kernels::gemm_nt_q8(rows, layer.out, layer.in, x, layer.in, layer.weight_q8.data(), y, layer.out);
        }
    } else if (layer.half()) {
        if (rows == 1) {
            kernels::gemv_f16(layer.out, layer.in, layer.weight_f16.data(), x, y);
        } else {
            linear_f16_rows(layer, x, rows, y);
        }
    } else if (layer.panelled()) {
        if (rows == 1)
            kernels::gemv_panels(layer.out, layer.in, layer.weight_panels.data(), x, y);
        else
            kernels::gemm_panels(rows, layer.out, layer.in, x, layer.in, layer.weight_panels.data(), y, layer.out);
    } else {
        if (rows == 1)
            kernels::gemv(layer.out, layer.in, layer.weight.data(), layer.in, x, y);
        else
            kernels::gemm_nt(rows, layer.out, layer.in, x, layer.in, layer.weight.data(), layer.in, y, layer.out);
    }
    if (layer.has_bias())
        kernels::bias_act(rows, layer.out, y, layer.out, layer.bias.data(), kernels::Activation::none);
}

void linear_batched(const Linear& layer, const float* x, int rows, float* y) {
    if (rows <= 1 || !(layer.quantized() || layer.half())) {
        linear(layer, x, rows, y);
        return;
    }
    if (layer.half()) {
        // Each row exactly as linear() steps it alone (gemv_f16), the halves read once for every four rows.
        kernels::gemv_f16_rows(rows, layer.out, layer.in, layer.weight_f16.data(), x, layer.in, y, layer.out);
        if (layer.has_bias())
            kernels::bias_act(rows, layer.out, y, layer.out, layer.bias.data(), kernels::Activation::none);
        return;
    }
    // linear() would take the float-activation GEMM for several Q8_0 rows, but a hypothesis must see the int8
    // rounding of its batch-1 step: the multi-row int8 GEMM computes each row exactly as its gemv_q8_q8, reading
    // the weights once for all rows.
    const float* scales4 = packed_q8_scales(layer);
    const int8_t* interleaved = interleaved_q8_weights(layer);
    if (scales4 && interleaved)
        kernels::gemm_nt_q8_q8_rows4(rows, layer.out, layer.in, x, layer.in, interleaved, scales4, y, layer.out);
    else
        kernels::gemm_nt_q8_q8(rows, layer.out, layer.in, x, layer.in, layer.weight_q8.data(), y, layer.out, false,
                               scales4);
    if (layer.has_bias())
        kernels::bias_act(rows, layer.out, y, layer.out, layer.bias.data(), kernels::Activation::none);
}

void linear_batched_stack(const Linear* const* layers, int count, const float* x, int rows, float* const* y) {
    constexpr int kMostStacked = 4;  // a fixed array: a decoder step allocates nothing
    bool stackable = rows > 1 && count > 1 && count <= kMostStacked;
    for (int i = 0; i < count && stackable; ++i)
        stackable = layers[i]->quantized() && layers[i]->in == layers[0]->in && (i == count - 1 || layers[i]->out % 64 == 0);
    if (!stackable) {
        for (int i = 0; i < count; ++i) linear_batched(*layers[i], x, rows, y[i]);
        return;
    }
    kernels::Q8Product products[kMostStacked];
    for (int i = 0; i < count; ++i) {
        const Linear& layer = *layers[i];
        kernels::Q8Product& p = products[i];
        p.N = layer.out;
        p.B = layer.weight_q8.data();
        p.scales4 = packed_q8_scales(layer);
        p.W4 = p.scales4 ? interleaved_q8_weights(layer) : nullptr;  // linear_batched's choice of kernel
        p.C = y[i];
        p.ldc = layer.out;
        p.bias = layer.has_bias() ? layer.bias.data() : nullptr;
    }
    kernels::gemm_nt_q8_q8_stack(rows, layers[0]->in, x, layers[0]->in, products, count);
}

// x [rows, in] -> [rows, out]
Matrix linear(const Linear& layer, const Matrix& x) {
    if (!(x.dimension() == 2 && cols(x) == layer.in))
        fail("linear: input has " + std::to_string(cols(x)) + " columns, layer expects " + std::to_string(layer.in));
    Matrix y = Matrix::from_shape({x.shape()[0], std::size_t(layer.out)});
    linear(layer, x.data(), rows(x), y.data());
    return y;
}

Matrix linear_rows(const Linear& layer, const Matrix& x) {
    if (!(x.dimension() == 2 && cols(x) == layer.in))
        fail("linear_rows: input has " + std::to_string(cols(x)) + " columns, layer expects " + std::to_string(layer.in));
    Matrix y = Matrix::from_shape({x.shape()[0], std::size_t(layer.out)});
    linear_rows(layer, x.data(), rows(x), y.data());
    return y;
}

Matrix project_sequence(const Linear& layer, const Matrix& x, SequenceProducts products) {
    return products == SequenceProducts::rows ? linear_rows(layer, x) : linear(layer, x);
}

void linear_rows(const Linear& layer, const float* x, int rows, float* y) {
    if (layer.quantized())
        linear_batched(layer, x, rows, y);
    else
        linear(layer, x, rows, y);
}

void weight_row(const Linear& layer, int row, float* out) {
    if (!(row >= 0 && row < layer.out))
        fail("weight_row: row " + std::to_string(row) + " outside [0, " + std::to_string(layer.out) + ")");
    const std::size_t in = std::size_t(layer.in);
    if (layer.quantized()) {
        kernels::dequantize_q8_0(layer.weight_q8.data() + row * (in / kernels::kQ8BlockSize), in, out);
    } else if (layer.half()) {
        kernels::f16_to_f32_n(layer.weight_f16.data() + row * in, in, out);
    } else if (layer.panelled()) {
        kernels::panel_row(layer.weight_panels.data(), layer.out, layer.in, row, out);
    } else {
        std::copy(layer.weight.data() + row * in, layer.weight.data() + (row + 1) * in, out);
    }
}

Matrix weight_matrix(const Linear& layer) {
    Matrix w = Matrix::from_shape({std::size_t(layer.out), std::size_t(layer.in)});
    for (int r = 0; r < layer.out; ++r) weight_row(layer, r, w.data() + std::size_t(r) * layer.in);
    return w;
}

void pack_weight_panels(Linear& layer) {
    if (layer.quantized() || layer.half() || layer.panelled() || layer.weight.size() == 0) return;
    layer.weight_panels = kernels::pack_panels(layer.weight.data(), layer.out, layer.in, layer.in);
    layer.weight = Matrix();
}

Linear gather_rows(const Linear& layer, const std::vector<int32_t>& rows) {
    if (rows.empty()) fail("gather_rows: no rows");
    for (int32_t row : rows)
        if (!(row >= 0 && row < layer.out))
            fail("gather_rows: row " + std::to_string(row) + " outside [0, " + std::to_string(layer.out) + ")");
    const std::size_t count = rows.size(), in = std::size_t(layer.in);
    Linear part;
    part.in = layer.in;
    part.out = static_cast<int>(count);
    if (layer.quantized()) {
        const std::size_t blocks_per_row = in / kernels::kQ8BlockSize;
        std::vector<kernels::BlockQ8_0> blocks(count * blocks_per_row);
        for (std::size_t r = 0; r < count; ++r)
            std::copy_n(layer.weight_q8.begin() + std::size_t(rows[r]) * blocks_per_row, blocks_per_row,
                        blocks.begin() + r * blocks_per_row);
        part.weight_q8 = Q8Weights(std::move(blocks));
        fill_q8_caches(part);
    } else if (layer.panelled()) {
        part.weight = Matrix::from_shape({count, in});
        for (std::size_t r = 0; r < count; ++r) weight_row(layer, rows[r], part.weight.data() + r * in);
        pack_weight_panels(part);
    } else if (layer.half()) {
        part.weight_f16.resize(count * in);
        for (std::size_t r = 0; r < count; ++r)
            std::copy_n(layer.weight_f16.begin() + std::size_t(rows[r]) * in, in, part.weight_f16.begin() + r * in);
    } else {
        part.weight = Matrix::from_shape({count, in});
        for (std::size_t r = 0; r < count; ++r)
            std::memcpy(part.weight.data() + r * in, layer.weight.data() + std::size_t(rows[r]) * in, sizeof(float) * in);
    }
    if (layer.has_bias()) {
        part.bias = Vector::from_shape({count});
        for (std::size_t r = 0; r < count; ++r) part.bias(r) = layer.bias(std::size_t(rows[r]));
    }
    return part;
}

Linear slice_rows(const Linear& layer, int begin, int count) {
    if (!(begin >= 0 && count > 0 && begin + count <= layer.out))
        fail("slice_rows: rows [" + std::to_string(begin) + ", " + std::to_string(begin + count) + ") outside [0, " +
             std::to_string(layer.out) + ")");
    if (layer.quantized()) {
        const std::size_t blocks_per_row = std::size_t(layer.in) / kernels::kQ8BlockSize;
        Linear part;
        part.in = layer.in;
        part.out = count;
        part.weight_q8 = layer.weight_q8.part(std::size_t(begin) * blocks_per_row, std::size_t(count) * blocks_per_row);
        fill_q8_caches(part);
        if (layer.has_bias()) {
            part.bias = Vector::from_shape({std::size_t(count)});
            std::copy_n(layer.bias.data() + begin, count, part.bias.data());
        }
        return part;
    }
    std::vector<int32_t> rows(static_cast<std::size_t>(count));
    for (int r = 0; r < count; ++r) rows[r] = begin + r;
    return gather_rows(layer, rows);
}

Linear slice_columns(const Linear& layer, int begin, int count, bool keep_bias) {
    if (!(begin >= 0 && count > 0 && begin + count <= layer.in))
        fail("slice_columns: columns [" + std::to_string(begin) + ", " + std::to_string(begin + count) +
             ") outside [0, " + std::to_string(layer.in) + ")");
    const std::size_t rows = std::size_t(layer.out), in = std::size_t(layer.in), n = std::size_t(count);
    Linear part;
    part.in = count;
    part.out = layer.out;
    constexpr int kBlock = kernels::kQ8BlockSize;
    if (layer.quantized() && begin % kBlock == 0 && count % kBlock == 0) {
        const std::size_t blocks = in / kBlock, first = std::size_t(begin) / kBlock, taken = n / kBlock;
        std::vector<kernels::BlockQ8_0> part_blocks(rows * taken);
        for (std::size_t r = 0; r < rows; ++r)
            std::copy_n(layer.weight_q8.begin() + r * blocks + first, taken, part_blocks.begin() + r * taken);
        part.weight_q8 = Q8Weights(std::move(part_blocks));
        fill_q8_caches(part);
    } else if (layer.half()) {
        part.weight_f16.resize(rows * n);
        for (std::size_t r = 0; r < rows; ++r)
            std::copy_n(layer.weight_f16.begin() + r * in + begin, n, part.weight_f16.begin() + r * n);
    } else {
        std::vector<float> row(in);
        part.weight = Matrix::from_shape({rows, n});
        for (std::size_t r = 0; r < rows; ++r) {
            weight_row(layer, static_cast<int>(r), row.data());
            std::copy_n(row.begin() + begin, n, part.weight.data() + r * n);
        }
        if (layer.panelled() || layer.quantized()) pack_weight_panels(part);
    }
    if (keep_bias && layer.has_bias()) part.bias = layer.bias;
    return part;
}

namespace {

// The weights as the file holds them (Q8_0, halves where kept, else f32), with no panels or caches.
Linear load_weights(const gguf::File& file, const std::string& weight_name, const std::string& bias_name, int in,
                    int out) {
    if (!(in > 0 && out > 0)) fail("load_linear(" + weight_name + "): in and out must be positive");
    Linear layer;
    layer.in = in;
    layer.out = out;
    const gguf::TensorType type = file.tensor(weight_name).type;
    if (type == gguf::TensorType::q8_0)
        layer.weight_q8 =
            Q8Weights(file.q8_in_place(weight_name, {out, in}), std::size_t(out) * (in / kernels::kQ8BlockSize));
    else if (type == gguf::TensorType::f16 && kernels::keep_f16_weights())
        layer.weight_f16 = file.load_f16(weight_name, {out, in});
    else
        layer.weight = file.load_f32<2>(weight_name, {out, in});
    if (!bias_name.empty() && file.has_tensor(bias_name)) layer.bias = file.load_f32<1>(bias_name, {out});
    validate(layer, weight_name);
    return layer;
}

}  // namespace

Linear load_linear_tensors(const gguf::File& file, const std::string& weight_name, const std::string& bias_name, int in,
                           int out) {
    Linear layer = load_weights(file, weight_name, bias_name, in, out);
    pack_weight_panels(layer);
    if (layer.quantized()) fill_q8_caches(layer);
    return layer;
}

Linear load_linear_to_split(const gguf::File& file, const std::string& weight_name, const std::string& bias_name,
                            int in, int out) {
    Linear layer = load_weights(file, weight_name, bias_name, in, out);
    pack_weight_panels(layer);  // f32 parts keep the loaders' storage (slices of panels are panels)
    return layer;
}

Linear load_table(const gguf::File& file, const std::string& weight_name, int width, int rows) {
    return load_weights(file, weight_name, "", width, rows);
}

Linear load_linear(const gguf::File& file, const std::string& prefix, int in, int out, bool with_bias) {
    Linear layer = load_linear_tensors(file, prefix + ".weight", "", in, out);
    if (with_bias) layer.bias = file.load_f32<1>(prefix + ".bias", {out});  // required: throws when missing
    return layer;
}

Linear load_linear_optional_bias(const gguf::File& file, const std::string& prefix, int in, int out) {
    return load_linear_tensors(file, prefix + ".weight", prefix + ".bias", in, out);
}

Vector load_vector(const gguf::File& file, const std::string& name, int n) {
    return file.load_f32<1>(name, {n});
}

Matrix load_matrix(const gguf::File& file, const std::string& name, int rows, int cols) {
    return file.load_f32<2>(name, {rows, cols});
}

}  // namespace attnlab::nn
