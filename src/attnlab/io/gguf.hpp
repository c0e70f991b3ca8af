#pragma once
// GGUF v3 (and v2) weight files: metadata key/values plus F32, F16, Q8_0 and I8 tensors.
//
// File::from_bytes validates the whole file before returning (counts, lengths, types, tensor
// bounds, alignment, overlaps), so everything after that is plain lookups into owned memory.
// Shapes are row-major (PyTorch order): GGUF stores dims innermost-first and we reverse them.
// Layout and key conventions: docs/gguf.md.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "attnlab/error.hpp"
#include "attnlab/kernels/kernels.hpp"
#include "attnlab/tensor.hpp"

namespace attnlab::gguf {

// i8 holds integers whose scale lives in the model's metadata (MobileNetV2's TFLite weights): only load_i8_affine
// reads it, and the float loaders refuse it rather than hand out raw integers as weights.
enum class TensorType : uint32_t { f32 = 0, f16 = 1, q8_0 = 8, i8 = 24, i32 = 26 };
const char* type_name(TensorType type);  // "f32", "f16", "q8_0", "i8", "i32"

// gguf_metadata_value_type
enum class ValueType : uint32_t {
    u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
    string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};
const char* type_name(ValueType type);  // the spec's names: "uint32", "float32", "string", ...

struct TensorInfo {
    std::string name;
    TensorType type;
    std::vector<int64_t> shape;  // row-major (PyTorch order), i.e. GGUF dims reversed
    uint64_t offset;             // from the start of the file (GGUF stores it relative to the data section)
    uint64_t n_bytes;
    const uint8_t* data;         // points into the File's bytes; valid while any copy of the File lives
    int64_t n_elements;
};

// A metadata value: a scalar of any GGUF type, a string, or an array of scalars or strings.
// (Arrays of arrays are rejected by the reader: nothing attnlab writes uses them.)
class Value {
public:
    ValueType type() const { return type_; }
    bool is_array() const { return type_ == ValueType::array; }
    bool is_integer() const;  // u8..i64 (not bool)
    bool is_float() const { return type_ == ValueType::f32 || type_ == ValueType::f64; }

    // Scalars. Each throws attnlab::Error naming the actual type when it does not apply.
    const std::string& as_string() const;
    bool as_bool() const;
    double as_double() const;                   // f32 / f64
    bool to_int64(int64_t& out) const;          // integer types; false if not an integer or it does not fit
    bool to_uint64(uint64_t& out) const;

    // Arrays.
    ValueType element_type() const { return element_type_; }
    std::size_t size() const;
    Value at(std::size_t i) const;  // the element as a Value of its own
    const std::vector<std::string>& strings() const;  // an array of strings' elements

    std::string to_string(std::size_t max_items = 8) const;  // human-readable; arrays summarized

private:
    friend class Parser;
    friend class File;  // its typed array getters read the elements' bits
    void set_scalar(ValueType type, uint64_t bits);  // from an element's bits (below)

    ValueType type_ = ValueType::u8;
    ValueType element_type_ = ValueType::u8;  // arrays only
    uint64_t unsigned_ = 0;                   // u8, u16, u32, u64, bool
    int64_t signed_ = 0;                      // i8, i16, i32, i64
    double float_ = 0;                        // f32, f64
    std::string string_;
    // Array elements, stored compactly (a tokenizer's vocabulary is tens of thousands): strings as strings, every
    // other element type as its bits (the unsigned value, the signed one's two's complement, the double's bits).
    std::vector<std::string> string_items_;
    std::vector<uint64_t> scalar_items_;
};

class File {
public:
    static File from_bytes(std::vector<uint8_t> bytes);  // owns the bytes; validates everything up front
    static File open(const std::string& path);            // reads the file, then from_bytes

    uint32_t version() const { return version_; }
    uint32_t alignment() const { return alignment_; }
    uint64_t data_offset() const { return data_offset_; }  // start of the tensor data section in the file
    std::size_t size_bytes() const { return bytes_->size(); }

    // --- metadata ---
    bool has(const std::string& key) const { return values_.count(key) != 0; }
    const Value& value(const std::string& key) const;  // throws "metadata key 'x' is missing"
    const std::vector<std::string>& keys() const { return keys_; }  // in file order
    std::string describe(const std::string& key) const;             // value rendered for `attnlab info`

    // Typed getters throw "metadata key 'x' is missing" / "metadata key 'x' has type T, expected U".
    std::string get_string(const std::string& key) const;
    uint32_t get_u32(const std::string& key) const;  // any integer type whose value fits
    uint64_t get_u64(const std::string& key) const;  // any integer type whose value fits
    int32_t get_i32(const std::string& key) const;   // any integer type whose value fits
    float get_f32(const std::string& key) const;     // float32 or float64
    bool get_bool(const std::string& key) const;
    std::vector<std::string> get_string_array(const std::string& key) const;
    std::vector<float> get_f32_array(const std::string& key) const;    // float32 or float64 elements
    std::vector<int32_t> get_i32_array(const std::string& key) const;  // any integer elements that fit

    // Absent key -> the default; a present key of the wrong type still throws.
    uint32_t get_u32_or(const std::string& key, uint32_t fallback) const;
    std::string get_string_or(const std::string& key, const std::string& fallback) const;
    float get_f32_or(const std::string& key, float fallback) const;
    bool get_bool_or(const std::string& key, bool fallback) const;

    // --- tensors ---
    const std::vector<TensorInfo>& tensors() const { return tensors_; }  // in file order
    bool has_tensor(const std::string& name) const { return tensor_index_.count(name) != 0; }
    const TensorInfo& tensor(const std::string& name) const;  // throws "tensor 'x' is missing"

    // Shape checks throw "tensor 'x' has shape [a, b], expected [c, d]"; -1 in expected means any size.
    // F32 is copied, F16 converted, Q8_0 dequantized.
    template <std::size_t N>
    xt::xtensor<float, N> load_f32(const std::string& name, const std::array<int64_t, N>& expected_shape) const {
        const TensorInfo& info = checked_tensor(name, expected_shape.data(), N);
        std::array<std::size_t, N> shape;
        for (std::size_t i = 0; i < N; ++i) shape[i] = static_cast<std::size_t>(info.shape[i]);
        xt::xtensor<float, N> out(shape);
        decode_f32(info, out.data());
        return out;
    }
    // [rows, cols] as Q8_0 blocks (cols/32 per row): Q8_0 copied, F32/F16 quantized (cols % 32 == 0).
    std::vector<kernels::BlockQ8_0> load_q8(const std::string& name, const std::array<int64_t, 2>& expected_shape) const;
    // A Q8_0 tensor [rows, cols] where the file holds it, kept alive by the pointer (it shares the File's bytes):
    // weights used in place. Throws when the tensor has another type or shape.
    std::shared_ptr<const kernels::BlockQ8_0> q8_in_place(const std::string& name,
                                                          const std::array<int64_t, 2>& expected_shape) const;
    // [rows, cols] as IEEE halves: F16 copied, F32 rounded (round to nearest even), Q8_0 dequantized and rounded.
    std::vector<uint16_t> load_f16(const std::string& name, const std::array<int64_t, 2>& expected_shape) const;
    // Any shape, flattened: for callers that check the shape themselves.
    std::vector<float> load_f32_flat(const std::string& name) const;
    // An i8 tensor of the expected shape (-1: any size), flattened: float((double(q) - zero_point) * scale), the
    // product taken in double and rounded once, as python/attnlab/nn/tflite_mobilenet.py dequantizes.
    // An i32 tensor (token ids, as a translation shortlist holds them) of the expected shape (-1: any size),
    // flattened.
    std::vector<int32_t> load_i32(const std::string& name, const std::vector<int64_t>& expected_shape) const;
    std::vector<float> load_i8_affine(const std::string& name, const std::vector<int64_t>& expected_shape,
                                      double scale, double zero_point) const;

private:
    friend class Parser;
    File() = default;
    const TensorInfo& checked_tensor(const std::string& name, const int64_t* expected, std::size_t rank) const;
    void decode_f32(const TensorInfo& info, float* out) const;
    const Value& typed(const std::string& key, bool ok_for_type, const char* expected) const;

    std::shared_ptr<const std::vector<uint8_t>> bytes_;  // shared so that copies keep TensorInfo::data valid
    uint32_t version_ = 0;
    uint32_t alignment_ = 32;
    uint64_t data_offset_ = 0;
    std::vector<std::string> keys_;
    std::map<std::string, Value> values_;
    std::vector<TensorInfo> tensors_;
    std::map<std::string, std::size_t> tensor_index_;
};

// "[2, 32]": shapes in messages
std::string format_shape(const std::vector<int64_t>& shape);

}  // namespace attnlab::gguf
