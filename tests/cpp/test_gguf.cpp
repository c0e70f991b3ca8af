// GGUF reader: round trip on files written by python/attnlab/gguf/writer.py (expected values computed by numpy
// and stored in each fixture's own metadata), and corruption of a valid file's bytes.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "attnlab/io/gguf.hpp"
#include "test_support.hpp"

using attnlab::Error;
using attnlab::gguf::File;
using attnlab::gguf::TensorType;
using attnlab::gguf::ValueType;
namespace kernels = attnlab::kernels;

namespace {

std::string fixture(const std::string& name) { return attnlab::test::source_path("tests/fixtures/gguf/" + name); }

std::vector<uint8_t> read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in.good());
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Where `text` first occurs in the bytes (to find the field of a key or tensor to corrupt).
std::size_t find(const std::vector<uint8_t>& bytes, const std::string& text) {
    for (std::size_t i = 0; i + text.size() <= bytes.size(); ++i)
        if (std::memcmp(bytes.data() + i, text.data(), text.size()) == 0) return i;
    FAIL("'" << text << "' not found in the fixture");
    return 0;
}

void put_u32(std::vector<uint8_t>& bytes, std::size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes[at + i] = uint8_t(v >> (8 * i));
}
void put_u64(std::vector<uint8_t>& bytes, std::size_t at, uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes[at + i] = uint8_t(v >> (8 * i));
}
uint64_t get_u64(const std::vector<uint8_t>& bytes, std::size_t at) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | bytes[at + i];
    return v;
}

// Position of a tensor info's fields in tiny.gguf: right after its name come n_dims, the dims, type, offset.
struct InfoFields {
    std::size_t n_dims, dims, type, offset;
};
InfoFields info_fields(const std::vector<uint8_t>& bytes, const std::string& tensor_name) {
    // The name is preceded by its u64 length; search for length+name so "t.f32" cannot match inside a key.
    std::string pattern(8, '\0');
    pattern[0] = char(tensor_name.size());
    pattern += tensor_name;
    const std::size_t name_end = find(bytes, pattern) + pattern.size();
    uint32_t n_dims = bytes[name_end];
    return {name_end, name_end + 4, name_end + 4 + 8 * n_dims, name_end + 4 + 8 * n_dims + 4};
}

// The message of the Error parsing these bytes throws ("" if it parses).
std::string parse_error(const std::vector<uint8_t>& bytes) {
    try {
        File::from_bytes(bytes);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

#define CHECK_PARSE_FAILS(bytes, fragment)                                        \
    do {                                                                          \
        const std::string message = parse_error(bytes);                           \
        INFO("message: " << message);                                             \
        CHECK(message.find(fragment) != std::string::npos);                       \
    } while (0)

void check_expected_tensor(const File& file, const std::string& name) {
    INFO("tensor " << name);
    const std::vector<float> expected = file.get_f32_array("expected." + name);
    const std::vector<float> actual = file.load_f32_flat(name);
    // Exact: numpy decodes f16 and dequantizes Q8_0 in float32 just as the reader must.
    REQUIRE(actual.size() == expected.size());
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < actual.size(); ++i) {
        if (actual[i] != expected[i] && mismatches++ < 3)
            MESSAGE("element " << i << ": actual " << actual[i] << " expected " << expected[i]);
    }
    CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("gguf: every metadata type round-trips from the Python writer") {
    const File file = File::open(fixture("basic.gguf"));
    CHECK(file.version() == 3);
    CHECK(file.alignment() == 32);
    CHECK(file.get_string("general.architecture") == "attnlab.fixture");
    CHECK(file.keys().front() == "general.architecture");
    CHECK(file.get_u32("fixture.u8") == 200);
    CHECK(file.get_i32("fixture.i8") == -100);
    CHECK(file.get_u32("fixture.u16") == 60000);
    CHECK(file.get_i32("fixture.i16") == -30000);
    CHECK(file.get_u32("fixture.u32") == 4000000000u);
    CHECK(file.get_i32("fixture.i32") == -2000000000);
    CHECK(file.get_f32("fixture.f32") == 0.1f);
    CHECK(file.get_bool("fixture.bool_true") == true);
    CHECK(file.get_bool("fixture.bool_false") == false);
    CHECK(file.get_string("fixture.string") == "Gr\xc3\xbc\xc3\x9f" "e, \xe4\xb8\x96\xe7\x95\x8c \"quoted\"");
    CHECK(file.get_string("fixture.empty_string").empty());
    CHECK(file.get_u64("fixture.u64") == (uint64_t(1) << 63) + 5);
    int64_t i64 = 0;
    CHECK(file.value("fixture.i64").to_int64(i64));
    CHECK(i64 == -(int64_t(1) << 62) - 7);
    CHECK(file.value("fixture.f64").type() == ValueType::f64);
    CHECK(file.value("fixture.f64").as_double() == 1.0 / 3.0);
    CHECK(file.get_f32("fixture.f64") == float(1.0 / 3.0));
    // Integer getters take any integer type whose value fits.
    CHECK(file.get_i32("fixture.small_u32") == 7);
    CHECK(file.get_u64("fixture.small_u32") == 7);

    CHECK(file.get_string_array("fixture.strings") ==
          std::vector<std::string>{"<unk>", "<s>", "</s>", "", "\xe2\x96\x81hello", "\xe4\xb8\x96\xe7\x95\x8c"});
    CHECK(file.get_i32_array("fixture.i32s") ==
          std::vector<int32_t>{0, -1, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()});
    CHECK(file.get_f32_array("fixture.f32s") == std::vector<float>{0.0f, -1.5f, 3.25f, 1e-8f});
    CHECK(file.get_i32_array("fixture.u8s") == std::vector<int32_t>{0, 255, 7});
    CHECK(file.get_i32_array("fixture.i8s") == std::vector<int32_t>{-128, 127, 0});
    CHECK(file.get_i32_array("fixture.empty").empty());
    const auto& bools = file.value("fixture.bools");
    REQUIRE(bools.size() == 3);
    CHECK(bools.element_type() == ValueType::boolean);
    CHECK((bools.at(0).as_bool() && !bools.at(1).as_bool() && bools.at(2).as_bool()));
    CHECK_THROWS_AS(bools.at(3), Error);

    // Optional getters: absent -> default, present -> value, wrong type still throws.
    CHECK(file.get_u32_or("fixture.absent", 42) == 42);
    CHECK(file.get_u32_or("fixture.u16", 42) == 60000);
    CHECK(file.get_string_or("fixture.absent", "x") == "x");
    CHECK(file.get_f32_or("fixture.absent", 2.5f) == 2.5f);
    CHECK_THROWS_AS(file.get_u32_or("fixture.string", 1), Error);

    // describe() for `attnlab info`: scalars as text, arrays summarized.
    CHECK(file.describe("fixture.u32") == "4000000000");
    CHECK(file.describe("fixture.i8") == "-100");
    CHECK(file.describe("fixture.f32") == "0.1");
    CHECK(file.describe("fixture.f64") == "0.3333333333333333");
    CHECK(file.describe("fixture.string") == "\"Gr\xc3\xbc\xc3\x9f" "e, \xe4\xb8\x96\xe7\x95\x8c \\\"quoted\\\"\"");
    CHECK(file.describe("fixture.f32s") == "[float32 x 4: 0, -1.5, 3.25, 1e-08]");
    CHECK(file.describe("fixture.bool_true") == "true");
    CHECK(file.describe("fixture.strings").rfind("[string x 6: \"<unk>\", \"<s>\"", 0) == 0);
    CHECK(file.describe("fixture.empty") == "[int32 x 0]");
}

TEST_CASE("gguf: typed getters report a missing key, a wrong type, a value that does not fit") {
    const File file = File::open(fixture("basic.gguf"));
    CHECK_THROWS_WITH_AS(file.get_u32("nope"), "metadata key 'nope' is missing", Error);
    CHECK_THROWS_WITH_AS(file.get_u32("fixture.string"), "metadata key 'fixture.string' has type string, expected uint32",
                         Error);
    CHECK_THROWS_WITH_AS(file.get_string("fixture.u32"), "metadata key 'fixture.u32' has type uint32, expected string",
                         Error);
    CHECK_THROWS_WITH_AS(file.get_f32_array("fixture.strings"),
                         "metadata key 'fixture.strings' has type array of string, expected array of float32", Error);
    CHECK_THROWS_AS(file.get_bool("fixture.u8"), Error);
    CHECK_THROWS_AS(file.get_f32("fixture.u32"), Error);
    CHECK_THROWS_AS(file.get_string_array("fixture.i32s"), Error);
    CHECK_THROWS_AS(file.get_i32_array("fixture.f32s"), Error);
    CHECK_THROWS_AS(file.get_u32("fixture.negative_i32"), Error);  // -1 does not fit
    CHECK_THROWS_AS(file.get_i32("fixture.u32"), Error);           // 4e9 does not fit
    CHECK_THROWS_AS(file.get_u32("fixture.u64"), Error);
    CHECK_THROWS_WITH_AS(file.get_i32_array("fixture.u32s"),
                         "metadata key 'fixture.u32s'[2] is 4294967295, which does not fit in int32", Error);
}

TEST_CASE("gguf: tensors decode to numpy's values (f32 copied, f16 converted, q8_0 dequantized)") {
    const File file = File::open(fixture("basic.gguf"));
    REQUIRE(file.tensors().size() == 7);
    CHECK(file.tensors()[0].name == "dense.weight");

    const auto& dense = file.tensor("dense.weight");
    CHECK(dense.type == TensorType::f32);
    CHECK(dense.shape == std::vector<int64_t>{3, 5});
    CHECK(dense.n_bytes == 60);
    CHECK(dense.offset % 32 == 0);
    CHECK(dense.offset >= file.data_offset());
    CHECK(file.tensor("proj.weight").type == TensorType::q8_0);
    CHECK(file.tensor("proj.weight").n_bytes == 4 * 34);
    CHECK(file.tensor("conv.weight").shape == std::vector<int64_t>{2, 3, 2, 2});
    CHECK(file.has_tensor("cube"));
    CHECK_FALSE(file.has_tensor("expected.cube"));

    for (const char* name : {"dense.weight", "dense.bias", "proj.weight", "proj_f32.weight", "proj_f16.weight",
                             "conv.weight", "cube"})
        check_expected_tensor(file, name);

    const attnlab::Matrix dense_m = file.load_f32<2>("dense.weight", {3, 5});
    CHECK(dense_m.shape()[0] == 3);
    CHECK(dense_m(2, 4) == file.get_f32_array("expected.dense.weight")[14]);
    const attnlab::Tensor3 cube = file.load_f32<3>("cube", {-1, 3, -1});  // -1: any size
    CHECK(cube(1, 2, 3) == 23.0f);
    const attnlab::Tensor4 conv = file.load_f32<4>("conv.weight", {2, 3, 2, 2});
    CHECK(conv.size() == 24);
    const attnlab::Vector bias = file.load_f32<1>("dense.bias", {7});
    CHECK(bias(2) == 65504.0f);
    CHECK(bias(6) == 2048.0f);  // 2049 rounds to even in f16
}

TEST_CASE("gguf: load_q8 copies q8_0 blocks and quantizes f32/f16 exactly like numpy/ggml") {
    const File file = File::open(fixture("basic.gguf"));
    for (const char* name : {"proj.weight", "proj_f32.weight", "proj_f16.weight"}) {
        INFO("tensor " << name);
        const std::string key(name);
        const auto& info = file.tensor(key);
        const auto blocks = file.load_q8(key, {info.shape[0], info.shape[1]});
        const std::vector<float> scales = file.get_f32_array("expected." + key + ".q8_scales");
        const std::vector<int32_t> quants = file.get_i32_array("expected." + key + ".q8_quants");
        REQUIRE(blocks.size() == scales.size());
        REQUIRE(quants.size() == blocks.size() * 32);
        for (std::size_t b = 0; b < blocks.size(); ++b) {
            CHECK(kernels::f16_to_f32(blocks[b].scale) == scales[b]);
            for (int j = 0; j < 32; ++j) CHECK(int(blocks[b].q[j]) == quants[b * 32 + j]);
        }
    }
    // The tie block: 2.5 -> 3 and -2.5 -> -3 (roundf), not banker's rounding.
    const auto blocks = file.load_q8("proj.weight", {2, 64});
    CHECK(int(blocks[0].q[1]) == 3);
    CHECK(int(blocks[0].q[2]) == -3);
    CHECK_THROWS_WITH_AS(file.load_q8("dense.weight", {3, 5}),
                         "tensor 'dense.weight' has shape [3, 5]: Q8_0 needs the number of columns to be a multiple of 32",
                         Error);
}

TEST_CASE("gguf: q8_in_place gives the file's own Q8_0 blocks, alive after the File is gone") {
    std::shared_ptr<const kernels::BlockQ8_0> in_place;
    std::vector<kernels::BlockQ8_0> copied;
    {
        const File file = File::open(fixture("basic.gguf"));
        in_place = file.q8_in_place("proj.weight", {2, 64});
        CHECK(reinterpret_cast<const uint8_t*>(in_place.get()) == file.tensor("proj.weight").data);
        copied = file.load_q8("proj.weight", {2, 64});
        CHECK_THROWS_WITH_AS(file.q8_in_place("proj_f32.weight", {3, 32}),
                             "tensor 'proj_f32.weight' is f32, expected q8_0", Error);
        CHECK_THROWS_WITH_AS(file.q8_in_place("proj.weight", {64, 2}),
                             "tensor 'proj.weight' has shape [2, 64], expected [64, 2]", Error);
    }
    REQUIRE(copied.size() == 4);
    for (std::size_t b = 0; b < copied.size(); ++b) {
        CHECK(in_place.get()[b].scale == copied[b].scale);
        for (int j = 0; j < 32; ++j) CHECK(in_place.get()[b].q[j] == copied[b].q[j]);
    }
}

TEST_CASE("gguf: wrong expected shapes and missing tensors are reported") {
    const File file = File::open(fixture("basic.gguf"));
    CHECK_THROWS_WITH_AS(file.load_f32<2>("dense.weight", {5, 3}),
                         "tensor 'dense.weight' has shape [3, 5], expected [5, 3]", Error);
    CHECK_THROWS_WITH_AS(file.load_f32<1>("dense.weight", {-1}), "tensor 'dense.weight' has shape [3, 5], expected [?]",
                         Error);
    CHECK_THROWS_WITH_AS(file.load_f32<2>("missing.weight", {1, 1}), "tensor 'missing.weight' is missing", Error);
    CHECK_THROWS_AS(file.load_q8("cube", {2, 3}), Error);
    CHECK_THROWS_AS(file.tensor("nope"), Error);
}

TEST_CASE("gguf: alignment 64 and metadata-only files") {
    const File aligned = File::open(fixture("aligned64.gguf"));
    CHECK(aligned.alignment() == 64);
    CHECK(aligned.data_offset() % 64 == 0);
    for (const auto& info : aligned.tensors()) {
        CHECK(info.offset % 64 == 0);
        check_expected_tensor(aligned, info.name);
    }

    const File meta = File::open(fixture("metadata_only.gguf"));
    CHECK(meta.tensors().empty());
    CHECK(meta.get_string_array("tokenizer.source.tokens").size() == 6);
    CHECK(meta.get_f32_array("tokenizer.source.scores")[5] == -2.25f);
    CHECK(meta.get_i32_array("tokenizer.source.token_type") == std::vector<int32_t>{2, 3, 3, 3, 1, 1});
    CHECK(meta.get_u32("tokenizer.source.padding_token_id") == 3);
    CHECK(meta.get_bool("tokenizer.source.add_dummy_prefix"));
}

TEST_CASE("gguf: copies of a File keep their tensor data valid") {
    std::vector<uint8_t> bytes = read_bytes(fixture("tiny.gguf"));
    File copy = File::from_bytes(bytes);
    {
        const File original = File::from_bytes(bytes);
        copy = original;
    }
    CHECK(copy.load_f32<2>("t.f32", {2, 3})(1, 2) == 6.0f);
}

TEST_CASE("gguf: truncation at every byte throws attnlab::Error") {
    for (const std::string name : {"tiny.gguf", "aligned64.gguf", "metadata_only.gguf", "basic.gguf"}) {
        const std::vector<uint8_t> bytes = read_bytes(fixture(name));
        const File good = File::from_bytes(bytes);
        // The padding after the last tensor is optional; every byte before its end is needed.
        uint64_t needed = good.tensors().empty() ? bytes.size() : 0;
        for (const auto& info : good.tensors()) needed = std::max(needed, info.offset + info.n_bytes);
        REQUIRE(needed <= bytes.size());
        int parsed = 0;
        for (std::size_t n = 0; n < needed; ++n) {
            try {
                File::from_bytes(std::vector<uint8_t>(bytes.begin(), bytes.begin() + n));
                if (++parsed <= 3) MESSAGE(name << " truncated to " << n << " bytes parsed without error");
            } catch (const Error&) {
            }
        }
        CHECK(parsed == 0);
        for (std::size_t n = needed; n < bytes.size(); ++n)
            CHECK_NOTHROW(File::from_bytes(std::vector<uint8_t>(bytes.begin(), bytes.begin() + n)));
    }
}

TEST_CASE("gguf: corrupt headers are rejected with a clear message") {
    const std::vector<uint8_t> good = read_bytes(fixture("tiny.gguf"));
    auto bytes = good;

    bytes = good;
    std::memcpy(bytes.data(), "PK\x03\x04", 4);
    CHECK_THROWS_WITH_AS(File::from_bytes(bytes), "not a GGUF file (magic is 'PK\\x03\\x04')", Error);
    CHECK_PARSE_FAILS(std::vector<uint8_t>{}, "not a GGUF file");

    bytes = good;
    put_u32(bytes, 4, 1);
    CHECK_PARSE_FAILS(bytes, "unsupported GGUF version 1");
    put_u32(bytes, 4, 4);
    CHECK_PARSE_FAILS(bytes, "unsupported GGUF version 4");
    put_u32(bytes, 4, 0x03000000u);
    CHECK_PARSE_FAILS(bytes, "big-endian");
    put_u32(bytes, 4, 2);  // v2 has the same layout
    CHECK_NOTHROW(File::from_bytes(bytes));

    bytes = good;
    put_u64(bytes, 8, uint64_t(1) << 40);  // tensor count
    CHECK_PARSE_FAILS(bytes, "tensor count 1099511627776 cannot fit");
    bytes = good;
    put_u64(bytes, 16, ~uint64_t(0));  // metadata count
    CHECK_PARSE_FAILS(bytes, "metadata count 18446744073709551615 cannot fit");
    bytes = good;
    put_u64(bytes, 16, 7);  // one more key than the file has: the tensor infos get read as a key
    CHECK_THROWS_AS(File::from_bytes(bytes), Error);
}

TEST_CASE("gguf: corrupt metadata is rejected") {
    const std::vector<uint8_t> good = read_bytes(fixture("tiny.gguf"));
    auto bytes = good;
    const std::size_t flag_key = find(good, "tiny.flag");
    const std::size_t flag_type = flag_key + 9;  // after the 9-byte key
    const std::size_t list_key = find(good, "tiny.list");
    const std::size_t list_element_type = list_key + 9 + 4;
    const std::size_t list_length = list_element_type + 4;

    bytes = good;
    put_u64(bytes, 24, ~uint64_t(0) >> 1);  // length of the first key
    CHECK_PARSE_FAILS(bytes, "metadata key #0 is 9223372036854775807 bytes long");
    bytes = good;
    put_u64(bytes, 24, 4000);  // longer than the file
    CHECK_PARSE_FAILS(bytes, "GGUF file truncated: metadata key #0 (4000-byte string) needs bytes 32..4032 but the file has 512");
    bytes = good;
    put_u64(bytes, 24, 0);
    CHECK_PARSE_FAILS(bytes, "is empty");

    bytes = good;
    bytes[flag_key + 5] = '\x01';  // a control character in the key
    CHECK_PARSE_FAILS(bytes, "not printable ASCII");

    bytes = good;
    put_u32(bytes, flag_type, 13);
    CHECK_PARSE_FAILS(bytes, "metadata key 'tiny.flag' has unknown value type 13");
    bytes = good;
    bytes[flag_type + 4] = 2;
    CHECK_PARSE_FAILS(bytes, "metadata key 'tiny.flag' is a bool stored as 2 (must be 0 or 1)");

    bytes = good;
    put_u32(bytes, list_element_type, 9);
    CHECK_PARSE_FAILS(bytes, "array of arrays");
    bytes = good;
    put_u32(bytes, list_element_type, 99);
    CHECK_PARSE_FAILS(bytes, "unknown array element type 99");
    bytes = good;
    put_u64(bytes, list_length, uint64_t(1) << 60);
    CHECK_PARSE_FAILS(bytes, "claims 1152921504606846976 int32 elements");
    bytes = good;
    put_u32(bytes, list_element_type, 8);  // int32 payload read as strings: lengths become garbage
    CHECK_THROWS_AS(File::from_bytes(bytes), Error);

    bytes = good;
    bytes[find(good, "tiny.name_b") + 10] = 'a';  // rename tiny.name_b to tiny.name_a
    CHECK_PARSE_FAILS(bytes, "duplicate metadata key 'tiny.name_a'");
}

TEST_CASE("gguf: bad general.alignment is rejected") {
    const std::vector<uint8_t> good = read_bytes(fixture("aligned64.gguf"));
    const std::size_t value = find(good, "general.alignment") + 17 + 4;
    REQUIRE(good[value] == 64);
    for (uint32_t alignment : {0u, 12u, 4u}) {
        auto bytes = good;
        put_u32(bytes, value, alignment);
        CHECK_PARSE_FAILS(bytes, "general.alignment is " + std::to_string(alignment) + ", must be a non-zero multiple of 8");
    }
    auto bytes = good;
    put_u32(bytes, value - 4, uint32_t(ValueType::f32));
    CHECK_PARSE_FAILS(bytes, "general.alignment has type float32");
    bytes = good;
    put_u32(bytes, value, 8);  // valid, but the tensors' offsets (multiples of 64) are still fine
    CHECK_NOTHROW(File::from_bytes(bytes));
}

TEST_CASE("gguf: corrupt tensor infos are rejected") {
    const std::vector<uint8_t> good = read_bytes(fixture("tiny.gguf"));
    const InfoFields f32_info = info_fields(good, "t.f32");
    const InfoFields q8_info = info_fields(good, "t.q8");
    const InfoFields f16_info = info_fields(good, "t.f16");
    REQUIRE(get_u64(good, q8_info.offset) == 32);
    auto bytes = good;

    bytes = good;
    put_u32(bytes, f32_info.n_dims, 0);
    CHECK_PARSE_FAILS(bytes, "tensor 't.f32' has 0 dimensions (must be 1..4)");
    bytes = good;
    put_u32(bytes, f32_info.n_dims, 5);
    CHECK_PARSE_FAILS(bytes, "tensor 't.f32' has 5 dimensions");
    bytes = good;
    put_u64(bytes, f32_info.dims, 0);
    CHECK_PARSE_FAILS(bytes, "tensor 't.f32' has a zero dimension");
    bytes = good;
    put_u64(bytes, f32_info.dims, uint64_t(1) << 40);
    put_u64(bytes, f32_info.dims + 8, uint64_t(1) << 40);
    CHECK_PARSE_FAILS(bytes, "tensor 't.f32'");  // element count overflow caught before any byte math
    bytes = good;
    put_u64(bytes, f32_info.dims, ~uint64_t(0));
    CHECK_PARSE_FAILS(bytes, "too many elements");
    bytes = good;
    put_u32(bytes, f32_info.type, 2);
    CHECK_PARSE_FAILS(bytes, "tensor 't.f32' has ggml type 2 (q4_0); attnlab reads only f32, f16, q8_0, i8 and i32");
    bytes = good;
    put_u32(bytes, f32_info.type, 1000);
    CHECK_PARSE_FAILS(bytes, "ggml type 1000 (unknown)");
    bytes = good;
    put_u64(bytes, q8_info.dims, 33);
    CHECK_PARSE_FAILS(bytes, "tensor 't.q8' is q8_0 but its innermost dimension 33 is not a multiple of 32");

    bytes = good;
    put_u64(bytes, q8_info.offset, 33);
    CHECK_PARSE_FAILS(bytes, "tensor 't.q8' has offset 33, not a multiple of the alignment 32");
    bytes = good;
    put_u64(bytes, f16_info.offset, 4096);
    CHECK_PARSE_FAILS(bytes, "GGUF file truncated: tensor 't.f16' needs bytes 4480..4488 but the file has 512");
    bytes = good;
    put_u64(bytes, f16_info.offset, ~uint64_t(0) - 31);  // begin + n_bytes would wrap around
    CHECK_PARSE_FAILS(bytes, "overflow");
    bytes = good;
    put_u64(bytes, q8_info.offset, 0);  // on top of t.f32
    CHECK_PARSE_FAILS(bytes, "tensors 't.f32' (bytes 384..408) and 't.q8' (bytes 384..) overlap");

    bytes = good;
    put_u64(bytes, f32_info.n_dims - 5 - 8, 65);  // tensor name longer than 64 bytes
    CHECK_PARSE_FAILS(bytes, "tensor #0 name is 65 bytes long, the limit is 64");
}

TEST_CASE("gguf: i8 tensors are read only with a scale (load_i8_affine), never as plain weights") {
    // Retyping tiny.gguf's f32 tensor as i8 keeps the file valid (one byte per element fits in its slot), and
    // its first bytes become the integers.
    auto bytes = read_bytes(fixture("tiny.gguf"));
    const InfoFields info = info_fields(bytes, "t.f32");
    put_u32(bytes, info.type, 24);
    const File file = File::from_bytes(bytes);
    const auto& tensor = file.tensor("t.f32");
    REQUIRE(tensor.type == TensorType::i8);
    CHECK(std::string(attnlab::gguf::type_name(tensor.type)) == "i8");
    CHECK(tensor.n_bytes == uint64_t(tensor.n_elements));

    const std::vector<float> values = file.load_i8_affine("t.f32", {2, 3}, 0.25, -3.0);
    REQUIRE(values.size() == std::size_t(tensor.n_elements));
    for (std::size_t i = 0; i < values.size(); ++i)
        CHECK(values[i] == float((double(int8_t(tensor.data[i])) + 3.0) * 0.25));
    CHECK_THROWS_WITH_AS(file.load_f32_flat("t.f32"), doctest::Contains("'t.f32' is i8"), Error);
    CHECK_THROWS_WITH_AS(file.load_f16("t.f32", {-1, -1}), doctest::Contains("'t.f32' is i8"), Error);
    CHECK_THROWS_WITH_AS(file.load_i8_affine("t.f32", {2, 2, 2}, 1.0, 0.0), doctest::Contains("expected [2, 2, 2]"),
                         Error);
    CHECK_THROWS_WITH_AS(file.load_i8_affine("t.f16", file.tensor("t.f16").shape, 1.0, 0.0), doctest::Contains("'t.f16' is f16, expected i8"),
                         Error);
}

TEST_CASE("gguf: i32 tensors hold integers (load_i32), never weights") {
    // Retyping tiny.gguf's f32 tensor as i32 keeps the file valid (four bytes per element, as f32), and its bytes
    // become the integers.
    auto bytes = read_bytes(fixture("tiny.gguf"));
    const InfoFields info = info_fields(bytes, "t.f32");
    put_u32(bytes, info.type, 26);
    const File file = File::from_bytes(bytes);
    const auto& tensor = file.tensor("t.f32");
    REQUIRE(tensor.type == TensorType::i32);
    CHECK(std::string(attnlab::gguf::type_name(tensor.type)) == "i32");
    CHECK(tensor.n_bytes == 4 * uint64_t(tensor.n_elements));
    const std::vector<int32_t> values = file.load_i32("t.f32", {2, -1});
    REQUIRE(values.size() == std::size_t(tensor.n_elements));
    for (std::size_t i = 0; i < values.size(); ++i) {
        int32_t expected;
        std::memcpy(&expected, tensor.data + 4 * i, 4);
        CHECK(values[i] == expected);
    }
    CHECK_THROWS_WITH_AS(file.load_f32_flat("t.f32"), doctest::Contains("'t.f32' is i32"), Error);
    CHECK_THROWS_WITH_AS(file.load_i32("t.f16", {-1}), doctest::Contains("'t.f16' is f16, expected i32"), Error);
}

TEST_CASE("gguf: duplicate tensor names are rejected") {
    // tiny.gguf's names "t.f32" and "t.f16" have the same length: renaming one makes a duplicate.
    auto bytes = read_bytes(fixture("tiny.gguf"));
    const InfoFields f16_info = info_fields(bytes, "t.f16");
    bytes[f16_info.n_dims - 2] = '3';
    bytes[f16_info.n_dims - 1] = '2';
    CHECK_PARSE_FAILS(bytes, "duplicate tensor name 't.f32'");
}

TEST_CASE("gguf: open reports unreadable files with their path") {
    CHECK_THROWS_WITH_AS(File::open("/nonexistent/model.gguf"), "cannot open GGUF file '/nonexistent/model.gguf'",
                         Error);
    CHECK_THROWS_AS(File::open(attnlab::test::source_path("tests")), Error);  // a directory
    const std::string path = fixture("basic.json");  // not a GGUF file
    try {
        File::open(path);
        CHECK(false);
    } catch (const Error& e) {
        CHECK(std::string(e.what()).find(path + ": not a GGUF file") == 0);
    }
}
