// GGUF reader. Every byte read goes through Cursor (bounds-checked) and every size computation
// through checked_add / checked_mul, so a corrupt or hostile file ends in attnlab::Error, never
// in an out-of-bounds read or a huge allocation.
#include "attnlab/io/gguf.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace attnlab::gguf {

namespace {

constexpr uint64_t kMaxKeyBytes = 65535;       // spec: keys are at most 2^16-1 bytes
constexpr uint64_t kMaxTensorNameBytes = 64;   // spec: tensor names are at most 64 bytes
constexpr uint32_t kMaxDims = 4;
constexpr int64_t kMaxElements = int64_t(1) << 40;  // far beyond any model here; keeps byte counts exact

// Smallest possible encodings, used to reject counts that could not fit in the remaining bytes
// before anything is allocated for them.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;               // key length, 1-byte key, type, 1-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;  // name length, 1-byte name, n_dims, 1 dim, type, offset

uint64_t checked_add(uint64_t a, uint64_t b, const std::string& what) {
    if (a > std::numeric_limits<uint64_t>::max() - b) fail("GGUF size overflow computing " + what);
    return a + b;
}

uint64_t checked_mul(uint64_t a, uint64_t b, const std::string& what) {
    if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) fail("GGUF size overflow computing " + what);
    return a * b;
}

uint64_t align_up(uint64_t offset, uint64_t alignment, const std::string& what) {
    return checked_add(offset, (alignment - offset % alignment) % alignment, what);
}

// Printable rendering of raw bytes for messages: 'PK\x03\x04'.
std::string escape_bytes(const uint8_t* data, std::size_t n) {
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < n; ++i) {
        const uint8_t c = data[i];
        if (c == '\\' || c == '\'') {
            out += '\\';
            out += char(c);
        } else if (c >= 0x20 && c < 0x7f) {
            out += char(c);
        } else {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

std::string quote(const std::string& s, std::size_t max_bytes) {
    const bool cut = s.size() > max_bytes;
    std::string out = "\"";
    for (std::size_t i = 0; i < std::min(s.size(), max_bytes); ++i) {
        const char c = s[i];
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (static_cast<unsigned char>(c) < 0x20) {
            out += escape_bytes(reinterpret_cast<const uint8_t*>(&c), 1);
        } else {
            out += c;  // UTF-8 passes through
        }
    }
    out += cut ? "...\"" : "\"";
    if (cut) out += " (" + std::to_string(s.size()) + " bytes)";
    return out;
}

const char* ggml_type_name(uint32_t id) {
    static const char* names[] = {"f32", "f16", "q4_0", "q4_1", "q4_2 (removed)", "q4_3 (removed)", "q5_0", "q5_1",
                                  "q8_0", "q8_1", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q8_k", "iq2_xxs",
                                  "iq2_xs", "iq3_xxs", "iq1_s", "iq4_nl", "iq3_s", "iq2_s", "iq4_xs", "i8", "i16",
                                  "i32", "i64", "f64", "iq1_m", "bf16"};
    return id < sizeof(names) / sizeof(names[0]) ? names[id] : "unknown";
}

// Little-endian reads with bounds checks; `where` names what is being read in messages.
class Cursor {
public:
    Cursor(const uint8_t* data, uint64_t size) : data_(data), size_(size) {}

    uint64_t position() const { return position_; }
    uint64_t remaining() const { return size_ - position_; }

    void need(uint64_t n, const std::string& where) const {
        if (n <= remaining()) return;
        const std::string end = n <= std::numeric_limits<uint64_t>::max() - position_
                                    ? std::to_string(position_ + n)
                                    : std::to_string(position_) + "+" + std::to_string(n);
        fail("GGUF file truncated: " + where + " needs bytes " + std::to_string(position_) + ".." + end +
             " but the file has " + std::to_string(size_));
    }

    const uint8_t* take(uint64_t n, const std::string& where) {
        need(n, where);
        const uint8_t* p = data_ + position_;
        position_ += n;
        return p;
    }

    uint64_t unsigned_le(int n_bytes, const std::string& where) {
        const uint8_t* p = take(uint64_t(n_bytes), where);
        uint64_t value = 0;
        for (int i = n_bytes - 1; i >= 0; --i) value = (value << 8) | p[i];
        return value;
    }
    uint8_t u8(const std::string& where) { return uint8_t(unsigned_le(1, where)); }
    uint16_t u16(const std::string& where) { return uint16_t(unsigned_le(2, where)); }
    uint32_t u32(const std::string& where) { return uint32_t(unsigned_le(4, where)); }
    uint64_t u64(const std::string& where) { return unsigned_le(8, where); }
    float f32(const std::string& where) {
        const uint32_t bits = u32(where);
        float f;
        std::memcpy(&f, &bits, sizeof f);
        return f;
    }
    double f64(const std::string& where) {
        const uint64_t bits = u64(where);
        double d;
        std::memcpy(&d, &bits, sizeof d);
        return d;
    }

    // The messages' names are built only for a message: a tokenizer's vocabulary is tens of thousands of strings.
    std::string string(const std::string& where, uint64_t max_bytes = std::numeric_limits<uint64_t>::max()) {
        if (remaining() < 8) need(8, where + " (string length)");
        const uint64_t length = u64(where);
        if (length > max_bytes)
            fail("GGUF: " + where + " is " + std::to_string(length) + " bytes long, the limit is " +
                 std::to_string(max_bytes));
        if (length > remaining()) need(length, where + " (" + std::to_string(length) + "-byte string)");
        const uint8_t* p = take(length, where);
        return std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(length));
    }

private:
    const uint8_t* data_;
    uint64_t size_;
    uint64_t position_ = 0;
};

bool is_valid_value_type(uint32_t id) { return id <= uint32_t(ValueType::f64); }

// Bytes one element of this type takes at least (strings: their length field).
uint64_t min_encoded_bytes(ValueType type) {
    switch (type) {
        case ValueType::u8: case ValueType::i8: case ValueType::boolean: return 1;
        case ValueType::u16: case ValueType::i16: return 2;
        case ValueType::u32: case ValueType::i32: case ValueType::f32: return 4;
        case ValueType::u64: case ValueType::i64: case ValueType::f64: case ValueType::string: return 8;
        case ValueType::array: return 4 + 8;
    }
    return 1;
}

uint64_t tensor_bytes(TensorType type, uint64_t n_elements, const std::string& what) {
    switch (type) {
        case TensorType::f32: return checked_mul(n_elements, 4, what);
        case TensorType::f16: return checked_mul(n_elements, 2, what);
        case TensorType::q8_0: return checked_mul(n_elements / kernels::kQ8BlockSize, sizeof(kernels::BlockQ8_0), what);
        case TensorType::i8: return n_elements;
        case TensorType::i32: return checked_mul(n_elements, 4, what);
    }
    fail("GGUF: unknown tensor type in " + what);
}

}  // namespace

const char* type_name(TensorType type) {
    switch (type) {
        case TensorType::f32: return "f32";
        case TensorType::f16: return "f16";
        case TensorType::q8_0: return "q8_0";
        case TensorType::i8: return "i8";
        case TensorType::i32: return "i32";
    }
    return "unknown";
}

const char* type_name(ValueType type) {
    switch (type) {
        case ValueType::u8: return "uint8";
        case ValueType::i8: return "int8";
        case ValueType::u16: return "uint16";
        case ValueType::i16: return "int16";
        case ValueType::u32: return "uint32";
        case ValueType::i32: return "int32";
        case ValueType::f32: return "float32";
        case ValueType::boolean: return "bool";
        case ValueType::string: return "string";
        case ValueType::array: return "array";
        case ValueType::u64: return "uint64";
        case ValueType::i64: return "int64";
        case ValueType::f64: return "float64";
    }
    return "unknown";
}

std::string format_shape(const std::vector<int64_t>& shape) {
    std::string out = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) out += ", ";
        out += shape[i] < 0 ? std::string("?") : std::to_string(shape[i]);
    }
    return out + "]";
}

// ---------------------------------------------------------------------------------------------
// Value

// The shortest decimal that reads back as the same float32/float64 (0.1f prints as 0.1, not 0.100000001).
static std::string shortest_float(double x, bool single) {
    for (int precision = 1; precision <= 17; ++precision) {
        std::ostringstream out;
        out.precision(precision);
        out << x;
        const double back = std::strtod(out.str().c_str(), nullptr);
        if (single ? float(back) == float(x) : back == x) return out.str();
    }
    std::ostringstream out;
    out.precision(17);
    out << x;
    return out.str();
}

bool Value::is_integer() const {
    switch (type_) {
        case ValueType::u8: case ValueType::i8: case ValueType::u16: case ValueType::i16: case ValueType::u32:
        case ValueType::i32: case ValueType::u64: case ValueType::i64: return true;
        default: return false;
    }
}

static bool is_signed_type(ValueType t) {
    return t == ValueType::i8 || t == ValueType::i16 || t == ValueType::i32 || t == ValueType::i64;
}

const std::string& Value::as_string() const {
    check(type_ == ValueType::string, std::string("GGUF value has type ") + type_name(type_) + ", expected string");
    return string_;
}

bool Value::as_bool() const {
    check(type_ == ValueType::boolean, std::string("GGUF value has type ") + type_name(type_) + ", expected bool");
    return unsigned_ != 0;
}

double Value::as_double() const {
    check(is_float(), std::string("GGUF value has type ") + type_name(type_) + ", expected float32");
    return float_;
}

bool Value::to_int64(int64_t& out) const {
    if (!is_integer()) return false;
    if (is_signed_type(type_)) {
        out = signed_;
        return true;
    }
    if (unsigned_ > uint64_t(std::numeric_limits<int64_t>::max())) return false;
    out = int64_t(unsigned_);
    return true;
}

bool Value::to_uint64(uint64_t& out) const {
    if (!is_integer()) return false;
    if (is_signed_type(type_)) {
        if (signed_ < 0) return false;
        out = uint64_t(signed_);
        return true;
    }
    out = unsigned_;
    return true;
}

std::size_t Value::size() const {
    return element_type_ == ValueType::string ? string_items_.size() : scalar_items_.size();
}

const std::vector<std::string>& Value::strings() const {
    check(is_array() && element_type_ == ValueType::string,
          std::string("GGUF value has type ") + type_name(type_) + ", expected array of string");
    return string_items_;
}

void Value::set_scalar(ValueType type, uint64_t bits) {
    type_ = type;
    if (is_signed_type(type))
        signed_ = int64_t(bits);
    else if (type == ValueType::f32 || type == ValueType::f64)
        std::memcpy(&float_, &bits, sizeof float_);
    else
        unsigned_ = bits;
}

Value Value::at(std::size_t i) const {
    check(is_array(), std::string("GGUF value has type ") + type_name(type_) + ", expected array");
    check(i < size(), "GGUF array index " + std::to_string(i) + " out of range (size " + std::to_string(size()) + ")");
    Value item;
    if (element_type_ == ValueType::string) {
        item.type_ = ValueType::string;
        item.string_ = string_items_[i];
    } else {
        item.set_scalar(element_type_, scalar_items_[i]);
    }
    return item;
}

std::string Value::to_string(std::size_t max_items) const {
    std::ostringstream out;
    switch (type_) {
        case ValueType::u8: case ValueType::u16: case ValueType::u32: case ValueType::u64: out << unsigned_; break;
        case ValueType::i8: case ValueType::i16: case ValueType::i32: case ValueType::i64: out << signed_; break;
        case ValueType::f32: out << shortest_float(float_, true); break;
        case ValueType::f64: out << shortest_float(float_, false); break;
        case ValueType::boolean: out << (unsigned_ ? "true" : "false"); break;
        case ValueType::string: out << quote(string_, 120); break;
        case ValueType::array: {
            out << "[" << type_name(element_type_) << " x " << size();
            if (size() != 0) out << ": ";
            for (std::size_t i = 0; i < std::min(size(), max_items); ++i) {
                if (i) out << ", ";
                out << (element_type_ == ValueType::string ? quote(string_items_[i], 40) : at(i).to_string());
            }
            if (size() > max_items) out << ", ...";
            out << "]";
            break;
        }
    }
    return out.str();
}

// ---------------------------------------------------------------------------------------------
// Parser: reads and validates the whole file into a File.

class Parser {
public:
    explicit Parser(File& file) : file_(file), cursor_(file.bytes_->data(), file.bytes_->size()) {}

    void parse() {
        read_header();
        for (uint64_t i = 0; i < kv_count_; ++i) read_kv(i);
        read_alignment();
        for (uint64_t i = 0; i < tensor_count_; ++i) read_tensor_info(i);
        place_tensors();
    }

private:
    void read_header() {
        const auto& bytes = *file_.bytes_;
        if (bytes.size() < 4 || std::memcmp(bytes.data(), "GGUF", 4) != 0)
            fail("not a GGUF file (magic is '" + escape_bytes(bytes.data(), std::min<std::size_t>(4, bytes.size())) +
                 "'" + (bytes.size() < 4 ? ", file has only " + std::to_string(bytes.size()) + " bytes" : "") + ")");
        cursor_.take(4, "magic");
        const uint32_t version = cursor_.u32("GGUF version");
        if (version == 0x02000000u || version == 0x03000000u)
            fail("big-endian GGUF files are not supported (version field reads " + std::to_string(version) + ")");
        // v2 and v3 share the layout (v3 only allows big-endian files, which we reject above);
        // v1 used 32-bit counts and lengths.
        if (version != 2 && version != 3)
            fail("unsupported GGUF version " + std::to_string(version) + " (attnlab reads versions 2 and 3)");
        file_.version_ = version;
        tensor_count_ = cursor_.u64("tensor count");
        kv_count_ = cursor_.u64("metadata count");
        const uint64_t rest = cursor_.remaining();
        if (kv_count_ > rest / kMinKvBytes)
            fail("GGUF metadata count " + std::to_string(kv_count_) + " cannot fit in the file's remaining " +
                 std::to_string(rest) + " bytes");
        if (tensor_count_ > rest / kMinTensorInfoBytes ||
            kv_count_ * kMinKvBytes + tensor_count_ * kMinTensorInfoBytes > rest)  // both terms <= rest: no overflow
            fail("GGUF tensor count " + std::to_string(tensor_count_) + " cannot fit in the file's remaining " +
                 std::to_string(rest) + " bytes");
    }

    void read_kv(uint64_t index) {
        const std::string where = "metadata key #" + std::to_string(index);
        std::string key = cursor_.string(where, kMaxKeyBytes);
        if (key.empty()) fail("GGUF: " + where + " is empty");
        for (unsigned char c : key)
            if (c < 0x20 || c >= 0x7f)
                fail("GGUF: " + where + " is not printable ASCII: '" +
                     escape_bytes(reinterpret_cast<const uint8_t*>(key.data()), key.size()) + "'");
        if (file_.values_.count(key)) fail("GGUF: duplicate metadata key '" + key + "'");
        const std::string value_where = "metadata key '" + key + "'";
        const uint32_t type = cursor_.u32(value_where + " (value type)");
        Value value;
        read_value(value, type, value_where);
        file_.keys_.push_back(key);
        file_.values_.emplace(std::move(key), std::move(value));
    }

    void read_value(Value& value, uint32_t type_id, const std::string& where) {
        if (!is_valid_value_type(type_id))
            fail("GGUF: " + where + " has unknown value type " + std::to_string(type_id));
        const ValueType type = ValueType(type_id);
        if (type == ValueType::string) {
            value.type_ = type;
            value.string_ = cursor_.string(where);
        } else if (type == ValueType::array) {
            value.type_ = type;
            read_array(value, where);
        } else {
            value.set_scalar(type, read_scalar_bits(type, where));
        }
    }

    // A scalar as Value's arrays hold it: the unsigned value, the signed one's two's complement, the double's bits.
    uint64_t read_scalar_bits(ValueType type, const std::string& where) {
        switch (type) {
            case ValueType::u8: return cursor_.u8(where);
            case ValueType::u16: return cursor_.u16(where);
            case ValueType::u32: return cursor_.u32(where);
            case ValueType::u64: return cursor_.u64(where);
            case ValueType::i8: return uint64_t(int64_t(int8_t(cursor_.u8(where))));
            case ValueType::i16: return uint64_t(int64_t(int16_t(cursor_.u16(where))));
            case ValueType::i32: return uint64_t(int64_t(int32_t(cursor_.u32(where))));
            case ValueType::i64: return cursor_.u64(where);
            case ValueType::f32: return double_bits(cursor_.f32(where));
            case ValueType::f64: return double_bits(cursor_.f64(where));
            case ValueType::boolean: {
                const uint8_t b = cursor_.u8(where);
                if (b > 1) fail("GGUF: " + where + " is a bool stored as " + std::to_string(b) + " (must be 0 or 1)");
                return b;
            }
            case ValueType::string: case ValueType::array: break;
        }
        fail("GGUF: " + where + " is not a scalar");
    }

    static uint64_t double_bits(double d) {
        uint64_t bits;
        std::memcpy(&bits, &d, sizeof bits);
        return bits;
    }

    void read_array(Value& value, const std::string& where) {
        const uint32_t element_type = cursor_.u32(where + " (array element type)");
        if (!is_valid_value_type(element_type))
            fail("GGUF: " + where + " has unknown array element type " + std::to_string(element_type));
        if (element_type == uint32_t(ValueType::array))
            fail("GGUF: " + where + " is an array of arrays, which attnlab does not support");
        const uint64_t length = cursor_.u64(where + " (array length)");
        const uint64_t min_bytes = min_encoded_bytes(ValueType(element_type));
        if (length > cursor_.remaining() / min_bytes)
            fail("GGUF: " + where + " claims " + std::to_string(length) + " " + type_name(ValueType(element_type)) +
                 " elements but only " + std::to_string(cursor_.remaining()) + " bytes remain");
        value.element_type_ = ValueType(element_type);
        std::string element_where = where + "[";  // "<where>[i]", rewritten in place for each element
        const std::size_t index_at = element_where.size();
        auto element = [&](uint64_t i) -> const std::string& {
            element_where.resize(index_at);
            element_where += std::to_string(i);
            element_where += ']';
            return element_where;
        };
        // Grow as elements are actually read beyond a vocabulary's size: an element takes more memory than its
        // encoding, so the count alone must not decide how much memory we take.
        const std::size_t reserved = static_cast<std::size_t>(std::min<uint64_t>(length, 1 << 16));
        if (value.element_type_ == ValueType::string) {
            value.string_items_.reserve(reserved);
            for (uint64_t i = 0; i < length; ++i) value.string_items_.push_back(cursor_.string(element(i)));
        } else {
            value.scalar_items_.reserve(reserved);
            for (uint64_t i = 0; i < length; ++i)
                value.scalar_items_.push_back(read_scalar_bits(value.element_type_, element(i)));
        }
    }

    void read_alignment() {
        auto it = file_.values_.find("general.alignment");
        if (it == file_.values_.end()) return;
        uint64_t alignment = 0;
        if (!it->second.to_uint64(alignment))
            fail(std::string("GGUF: general.alignment has type ") + type_name(it->second.type()) + ", expected uint32");
        if (alignment == 0 || alignment % 8 != 0 || alignment > (1u << 30))
            fail("GGUF: general.alignment is " + std::to_string(alignment) + ", must be a non-zero multiple of 8");
        file_.alignment_ = uint32_t(alignment);
    }

    void read_tensor_info(uint64_t index) {
        const std::string where = "tensor #" + std::to_string(index);
        TensorInfo info;
        info.name = cursor_.string(where + " name", kMaxTensorNameBytes);
        if (info.name.empty()) fail("GGUF: " + where + " has an empty name");
        if (file_.tensor_index_.count(info.name)) fail("GGUF: duplicate tensor name '" + info.name + "'");
        const std::string named = "tensor '" + info.name + "'";

        const uint32_t n_dims = cursor_.u32(named + " (n_dims)");
        if (n_dims < 1 || n_dims > kMaxDims)
            fail("GGUF: " + named + " has " + std::to_string(n_dims) + " dimensions (must be 1.." +
                 std::to_string(kMaxDims) + ")");
        std::vector<int64_t> ggml_dims(n_dims);  // innermost first
        uint64_t n_elements = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            const uint64_t dim = cursor_.u64(named + " (dimension " + std::to_string(d) + ")");
            if (dim == 0) fail("GGUF: " + named + " has a zero dimension");
            n_elements = checked_mul(n_elements, dim, named + " element count");
            if (n_elements > uint64_t(kMaxElements))
                fail("GGUF: " + named + " has too many elements (more than 2^40)");
            ggml_dims[d] = int64_t(dim);
        }
        info.shape.assign(ggml_dims.rbegin(), ggml_dims.rend());
        info.n_elements = int64_t(n_elements);

        const uint32_t type_id = cursor_.u32(named + " (type)");
        if (type_id != uint32_t(TensorType::f32) && type_id != uint32_t(TensorType::f16) &&
            type_id != uint32_t(TensorType::q8_0) && type_id != uint32_t(TensorType::i8) &&
            type_id != uint32_t(TensorType::i32))
            fail("GGUF: " + named + " has ggml type " + std::to_string(type_id) + " (" + ggml_type_name(type_id) +
                 "); attnlab reads only f32, f16, q8_0, i8 and i32");
        info.type = TensorType(type_id);
        if (info.type == TensorType::q8_0 && ggml_dims[0] % kernels::kQ8BlockSize != 0)
            fail("GGUF: " + named + " is q8_0 but its innermost dimension " + std::to_string(ggml_dims[0]) +
                 " is not a multiple of 32");
        info.n_bytes = tensor_bytes(info.type, n_elements, named + " byte size");

        info.offset = cursor_.u64(named + " (offset)");  // relative to the data section until place_tensors
        if (info.offset % file_.alignment_ != 0)
            fail("GGUF: " + named + " has offset " + std::to_string(info.offset) + ", not a multiple of the alignment " +
                 std::to_string(file_.alignment_));
        info.data = nullptr;
        file_.tensor_index_.emplace(info.name, file_.tensors_.size());
        file_.tensors_.push_back(std::move(info));
    }

    void place_tensors() {
        const uint64_t file_size = file_.bytes_->size();
        file_.data_offset_ = align_up(cursor_.position(), file_.alignment_, "the data section start");
        if (file_.tensors_.empty()) return;  // a metadata-only file may end without padding
        if (file_.data_offset_ > file_size)
            fail("GGUF file truncated: the tensor data section starts at byte " + std::to_string(file_.data_offset_) +
                 " but the file has " + std::to_string(file_size));
        for (TensorInfo& info : file_.tensors_) {
            const std::string named = "tensor '" + info.name + "'";
            const uint64_t begin = checked_add(file_.data_offset_, info.offset, named + " start");
            const uint64_t end = checked_add(begin, info.n_bytes, named + " end");
            if (end > file_size)
                fail("GGUF file truncated: " + named + " needs bytes " + std::to_string(begin) + ".." +
                     std::to_string(end) + " but the file has " + std::to_string(file_size));
            info.offset = begin;
            info.data = file_.bytes_->data() + begin;
        }
        std::vector<const TensorInfo*> by_offset;
        for (const TensorInfo& info : file_.tensors_) by_offset.push_back(&info);
        std::sort(by_offset.begin(), by_offset.end(),
                  [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
        for (std::size_t i = 1; i < by_offset.size(); ++i) {
            const TensorInfo& prev = *by_offset[i - 1];
            const TensorInfo& next = *by_offset[i];
            if (next.offset < prev.offset + prev.n_bytes)
                fail("GGUF: tensors '" + prev.name + "' (bytes " + std::to_string(prev.offset) + ".." +
                     std::to_string(prev.offset + prev.n_bytes) + ") and '" + next.name + "' (bytes " +
                     std::to_string(next.offset) + "..) overlap");
        }
    }

    File& file_;
    Cursor cursor_;
    uint64_t tensor_count_ = 0;
    uint64_t kv_count_ = 0;
};

// ---------------------------------------------------------------------------------------------
// File

File File::from_bytes(std::vector<uint8_t> bytes) {
    File file;
    file.bytes_ = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
    Parser(file).parse();
    return file;
}

File File::open(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("cannot open GGUF file '" + path + "'");
    // Read in chunks rather than trusting tellg(): for a directory or a pipe it reports nonsense sizes.
    std::vector<uint8_t> bytes;
    std::vector<char> chunk(1 << 20);
    while (in.read(chunk.data(), std::streamsize(chunk.size())) || in.gcount() > 0)
        bytes.insert(bytes.end(), chunk.data(), chunk.data() + in.gcount());
    if (in.bad() || !in.eof()) fail("cannot read GGUF file '" + path + "'");
    try {
        return from_bytes(std::move(bytes));
    } catch (const Error& e) {
        fail(path + ": " + e.what());
    }
}

const Value& File::value(const std::string& key) const {
    auto it = values_.find(key);
    if (it == values_.end()) fail("metadata key '" + key + "' is missing");
    return it->second;
}

std::string File::describe(const std::string& key) const { return value(key).to_string(); }

const Value& File::typed(const std::string& key, bool ok, const char* expected) const {
    const Value& v = value(key);
    if (!ok) {
        std::string actual = type_name(v.type());
        if (v.is_array()) actual += std::string(" of ") + type_name(v.element_type());
        fail("metadata key '" + key + "' has type " + actual + ", expected " + expected);
    }
    return v;
}

std::string File::get_string(const std::string& key) const {
    const Value& v = value(key);
    return typed(key, v.type() == ValueType::string, "string").as_string();
}

uint64_t File::get_u64(const std::string& key) const {
    const Value& v = value(key);
    uint64_t out = 0;
    typed(key, v.is_integer(), "uint64");
    if (!v.to_uint64(out)) fail("metadata key '" + key + "' is " + v.to_string() + ", which does not fit in uint64");
    return out;
}

uint32_t File::get_u32(const std::string& key) const {
    const Value& v = value(key);
    uint64_t out = 0;
    typed(key, v.is_integer(), "uint32");
    if (!v.to_uint64(out) || out > std::numeric_limits<uint32_t>::max())
        fail("metadata key '" + key + "' is " + v.to_string() + ", which does not fit in uint32");
    return uint32_t(out);
}

int32_t File::get_i32(const std::string& key) const {
    const Value& v = value(key);
    int64_t out = 0;
    typed(key, v.is_integer(), "int32");
    if (!v.to_int64(out) || out < std::numeric_limits<int32_t>::min() || out > std::numeric_limits<int32_t>::max())
        fail("metadata key '" + key + "' is " + v.to_string() + ", which does not fit in int32");
    return int32_t(out);
}

float File::get_f32(const std::string& key) const {
    const Value& v = value(key);
    return float(typed(key, v.is_float(), "float32").as_double());
}

bool File::get_bool(const std::string& key) const {
    const Value& v = value(key);
    return typed(key, v.type() == ValueType::boolean, "bool").as_bool();
}

std::vector<std::string> File::get_string_array(const std::string& key) const {
    const Value& v = value(key);
    typed(key, v.is_array() && v.element_type() == ValueType::string, "array of string");
    return v.strings();
}

std::vector<float> File::get_f32_array(const std::string& key) const {
    const Value& v = value(key);
    typed(key, v.is_array() && (v.element_type() == ValueType::f32 || v.element_type() == ValueType::f64),
          "array of float32");
    std::vector<float> out;
    out.reserve(v.size());
    for (const uint64_t bits : v.scalar_items_) {
        double x;
        std::memcpy(&x, &bits, sizeof x);
        out.push_back(float(x));
    }
    return out;
}

std::vector<int32_t> File::get_i32_array(const std::string& key) const {
    const Value& v = value(key);
    const bool integer_elements =
        v.is_array() && v.element_type() != ValueType::f32 && v.element_type() != ValueType::f64 &&
        v.element_type() != ValueType::boolean && v.element_type() != ValueType::string &&
        v.element_type() != ValueType::array;
    typed(key, integer_elements, "array of int32");
    std::vector<int32_t> out;
    out.reserve(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
        // A signed element's bits are its two's complement (int64_t(bits) is its value), an unsigned one's its value.
        const uint64_t bits = v.scalar_items_[i];
        const bool fits = is_signed_type(v.element_type()) ? int64_t(bits) >= std::numeric_limits<int32_t>::min() &&
                                                                 int64_t(bits) <= std::numeric_limits<int32_t>::max()
                                                           : bits <= uint64_t(std::numeric_limits<int32_t>::max());
        if (!fits)
            fail("metadata key '" + key + "'[" + std::to_string(i) + "] is " + v.at(i).to_string() +
                 ", which does not fit in int32");
        out.push_back(int32_t(int64_t(bits)));
    }
    return out;
}

uint32_t File::get_u32_or(const std::string& key, uint32_t fallback) const { return has(key) ? get_u32(key) : fallback; }
std::string File::get_string_or(const std::string& key, const std::string& fallback) const {
    return has(key) ? get_string(key) : fallback;
}
float File::get_f32_or(const std::string& key, float fallback) const { return has(key) ? get_f32(key) : fallback; }
bool File::get_bool_or(const std::string& key, bool fallback) const { return has(key) ? get_bool(key) : fallback; }

const TensorInfo& File::tensor(const std::string& name) const {
    auto it = tensor_index_.find(name);
    if (it == tensor_index_.end()) fail("tensor '" + name + "' is missing");
    return tensors_[it->second];
}

const TensorInfo& File::checked_tensor(const std::string& name, const int64_t* expected, std::size_t rank) const {
    const TensorInfo& info = tensor(name);
    bool match = info.shape.size() == rank;
    for (std::size_t i = 0; match && i < rank; ++i) match = expected[i] < 0 || expected[i] == info.shape[i];
    if (!match)
        fail("tensor '" + name + "' has shape " + format_shape(info.shape) + ", expected " +
             format_shape(std::vector<int64_t>(expected, expected + rank)));
    return info;
}

void File::decode_f32(const TensorInfo& info, float* out) const {
    const std::size_t n = static_cast<std::size_t>(info.n_elements);
    switch (info.type) {
        case TensorType::f32:
            std::memcpy(out, info.data, n * sizeof(float));  // little-endian host (x86, wasm)
            return;
        case TensorType::f16:
            for (std::size_t i = 0; i < n; ++i)
                out[i] = kernels::f16_to_f32(uint16_t(info.data[2 * i] | (info.data[2 * i + 1] << 8)));
            return;
        case TensorType::q8_0:
            for (std::size_t b = 0; b < n / kernels::kQ8BlockSize; ++b) {
                kernels::BlockQ8_0 block;  // copied out: the file's bytes carry no alignment promise
                std::memcpy(&block, info.data + b * sizeof block, sizeof block);
                kernels::dequantize_q8_0(&block, kernels::kQ8BlockSize, out + b * kernels::kQ8BlockSize);
            }
            return;
        case TensorType::i8:
            fail("tensor '" + info.name + "' is i8, which holds integers, not weights: its scale is in the model's "
                 "metadata, and this model does not read it");
        case TensorType::i32:
            fail("tensor '" + info.name + "' is i32, which holds integers (token ids), not weights");
    }
}

std::vector<float> File::load_i8_affine(const std::string& name, const std::vector<int64_t>& expected_shape,
                                        double scale, double zero_point) const {
    const TensorInfo& info = checked_tensor(name, expected_shape.data(), expected_shape.size());
    if (info.type != TensorType::i8)
        fail("tensor '" + name + "' is " + type_name(info.type) + ", expected i8");
    std::vector<float> out(static_cast<std::size_t>(info.n_elements));
    for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<float>((double(int8_t(info.data[i])) - zero_point) * scale);
    return out;
}

std::vector<int32_t> File::load_i32(const std::string& name, const std::vector<int64_t>& expected_shape) const {
    const TensorInfo& info = checked_tensor(name, expected_shape.data(), expected_shape.size());
    if (info.type != TensorType::i32)
        fail("tensor '" + name + "' is " + type_name(info.type) + ", expected i32");
    std::vector<int32_t> out(static_cast<std::size_t>(info.n_elements));
    std::memcpy(out.data(), info.data, out.size() * sizeof(int32_t));  // GGUF is little-endian, as are our targets
    return out;
}

std::vector<float> File::load_f32_flat(const std::string& name) const {
    const TensorInfo& info = tensor(name);
    std::vector<float> out(static_cast<std::size_t>(info.n_elements));
    decode_f32(info, out.data());
    return out;
}

std::vector<kernels::BlockQ8_0> File::load_q8(const std::string& name, const std::array<int64_t, 2>& expected_shape) const {
    const TensorInfo& info = checked_tensor(name, expected_shape.data(), 2);
    const std::size_t n_blocks = static_cast<std::size_t>(info.n_elements) / kernels::kQ8BlockSize;
    if (info.type == TensorType::q8_0) {
        std::vector<kernels::BlockQ8_0> blocks(n_blocks);
        std::memcpy(blocks.data(), info.data, n_blocks * sizeof(kernels::BlockQ8_0));
        return blocks;
    }
    if (info.shape[1] % kernels::kQ8BlockSize != 0)
        fail("tensor '" + name + "' has shape " + format_shape(info.shape) +
             ": Q8_0 needs the number of columns to be a multiple of 32");
    std::vector<float> values(static_cast<std::size_t>(info.n_elements));
    decode_f32(info, values.data());
    std::vector<kernels::BlockQ8_0> blocks(n_blocks);
    kernels::quantize_q8_0(values.data(), values.size(), blocks.data());
    return blocks;
}

std::shared_ptr<const kernels::BlockQ8_0> File::q8_in_place(const std::string& name,
                                                            const std::array<int64_t, 2>& expected_shape) const {
    const TensorInfo& info = checked_tensor(name, expected_shape.data(), 2);
    if (info.type != TensorType::q8_0) fail("tensor '" + name + "' is " + type_name(info.type) + ", expected q8_0");
    // BlockQ8_0 is packed (alignment 1): any offset in the bytes is a valid place for one.
    return std::shared_ptr<const kernels::BlockQ8_0>(bytes_, reinterpret_cast<const kernels::BlockQ8_0*>(info.data));
}

std::vector<uint16_t> File::load_f16(const std::string& name, const std::array<int64_t, 2>& expected_shape) const {
    const TensorInfo& info = checked_tensor(name, expected_shape.data(), 2);
    const std::size_t n = static_cast<std::size_t>(info.n_elements);
    std::vector<uint16_t> halves(n);
    if (info.type == TensorType::f16) {
        for (std::size_t i = 0; i < n; ++i) halves[i] = uint16_t(info.data[2 * i] | (info.data[2 * i + 1] << 8));
        return halves;
    }
    std::vector<float> values(n);
    decode_f32(info, values.data());
    for (std::size_t i = 0; i < n; ++i) halves[i] = kernels::f32_to_f16(values[i]);
    return halves;
}

}  // namespace attnlab::gguf
