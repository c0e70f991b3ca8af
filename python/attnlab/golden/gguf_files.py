#!/usr/bin/python3
"""Write the small GGUF fixtures the C++ and JS tests read: tests/fixtures/gguf/*.gguf (+ a .json sidecar each).

Expected decoded values come from numpy, not from the C++ code under test:
  expected.<tensor>           float32 array: what load_f32 must return (f16 via numpy's float16, Q8_0 via
                              numpy's dequantization of the blocks numpy quantized)
  expected.<tensor>.q8_scales float32 array: the Q8_0 block scales (f16 values) load_q8 must produce
  expected.<tensor>.q8_quants int8 array:    the Q8_0 block quants load_q8 must produce
The .json sidecar repeats the metadata (with types) and the tensor table exactly as the writer laid it
out; tests/js/gguf_interop.test.mjs checks an independent parser (@huggingface/gguf) against it.

    python3 -m attnlab.golden.gguf_files [--out tests/fixtures/gguf]
"""
import argparse
import json
import os

import numpy as np

from attnlab.gguf.reader import read_gguf
from attnlab.gguf.writer import GGUFWriter, dequantize_q8_0, quantize_q8_0
from attnlab.paths import FIXTURES


def f32(x):
    return np.asarray(x, dtype=np.float32)


def add_expected(w, name, values, dtype):
    """Store what a reader must decode for `values` written as `dtype`, computed with numpy."""
    values = f32(values)
    if dtype == "f32":
        decoded = values
    elif dtype == "f16":
        decoded = values.astype(np.float16).astype(np.float32)
    else:
        scales, quants = quantize_q8_0(values)
        decoded = dequantize_q8_0(scales, quants)
    w.add_array(f"expected.{name}", decoded.reshape(-1), "float32")
    if values.shape[-1] % 32 == 0 and values.ndim == 2:
        # load_q8 copies Q8_0 blocks as stored, and quantizes what F32/F16 decode to.
        scales, quants = quantize_q8_0(values if dtype == "q8_0" else decoded)
        w.add_array(f"expected.{name}.q8_scales", scales.astype(np.float32), "float32")
        w.add_array(f"expected.{name}.q8_quants", quants.reshape(-1), "int8")


def add_tensor_with_expected(w, name, values, dtype):
    w.add_tensor(name, values, dtype)
    add_expected(w, name, values, dtype)


def q8_rounding_block():
    # amax 127 makes the scale exactly 1, so x * (1/d) lands on .5 ties: ggml (roundf) rounds them away
    # from zero, numpy's np.round would not.
    block = np.zeros(32, dtype=np.float32)
    block[:12] = [127, 2.5, -2.5, 0.5, -0.5, 1.5, -1.5, 126.5, -126.5, 0.49, -0.51, 3.0]
    return block


def make_basic(path):
    rng = np.random.RandomState(1234)
    w = GGUFWriter(path, architecture="attnlab.fixture")
    w.add_string("general.name", "gguf fixture: every metadata type")
    w.add_uint8("fixture.u8", 200)
    w.add_int8("fixture.i8", -100)
    w.add_uint16("fixture.u16", 60000)
    w.add_int16("fixture.i16", -30000)
    w.add_uint32("fixture.u32", 4000000000)
    w.add_int32("fixture.i32", -2000000000)
    w.add_float32("fixture.f32", 0.1)
    w.add_bool("fixture.bool_true", True)
    w.add_bool("fixture.bool_false", False)
    w.add_string("fixture.string", "Grüße, 世界 \"quoted\"")
    w.add_string("fixture.empty_string", "")
    w.add_uint64("fixture.u64", 2**63 + 5)
    w.add_int64("fixture.i64", -(2**62) - 7)
    w.add_float64("fixture.f64", 1.0 / 3.0)
    w.add_uint32("fixture.small_u32", 7)
    w.add_int32("fixture.negative_i32", -1)
    w.add_array("fixture.strings", ["<unk>", "<s>", "</s>", "", "▁hello", "世界"], "string")
    w.add_array("fixture.i32s", [0, -1, 2147483647, -2147483648], "int32")
    w.add_array("fixture.u32s", [0, 1, 4294967295], "uint32")
    w.add_array("fixture.f32s", f32([0.0, -1.5, 3.25, 1e-8]), "float32")
    w.add_array("fixture.u8s", [0, 255, 7], "uint8")
    w.add_array("fixture.i8s", [-128, 127, 0], "int8")
    w.add_array("fixture.bools", [True, False, True], "bool")
    w.add_array("fixture.empty", [], "int32")

    add_tensor_with_expected(w, "dense.weight", rng.uniform(-1, 1, (3, 5)), "f32")
    add_tensor_with_expected(w, "dense.bias", f32([1e-6, -0.0, 65504.0, 0.1, 1 / 3, -2.0009766, 2049.0]), "f16")
    q8_values = np.stack([np.concatenate([q8_rounding_block(), rng.uniform(-0.3, 0.3, 32)]),
                          np.concatenate([np.zeros(32), rng.normal(0, 2, 32)])]).astype(np.float32)
    add_tensor_with_expected(w, "proj.weight", q8_values, "q8_0")  # [2, 64]: 4 blocks incl. an all-zero one
    add_tensor_with_expected(w, "proj_f32.weight", rng.uniform(-2, 2, (3, 32)), "f32")  # load_q8 quantizes it
    add_tensor_with_expected(w, "proj_f16.weight", rng.uniform(-2, 2, (2, 32)), "f16")
    add_tensor_with_expected(w, "conv.weight", rng.uniform(-1, 1, (2, 3, 2, 2)), "f16")  # 4-D
    add_tensor_with_expected(w, "cube", np.arange(24, dtype=np.float32).reshape(2, 3, 4), "f32")  # 3-D
    return w


def make_aligned64(path):
    rng = np.random.RandomState(99)
    w = GGUFWriter(path, alignment=64, architecture="attnlab.fixture")
    w.add_string("general.name", "gguf fixture: alignment 64")
    # Odd byte sizes so that every tensor needs padding before the next one.
    add_tensor_with_expected(w, "a", rng.uniform(-1, 1, 3), "f32")
    add_tensor_with_expected(w, "b", rng.uniform(-1, 1, (5, 3)), "f16")
    add_tensor_with_expected(w, "c", rng.uniform(-1, 1, (1, 32)), "q8_0")
    return w


def make_metadata_only(path):
    w = GGUFWriter(path, architecture="attnlab.fixture")
    w.add_string("general.name", "gguf fixture: no tensors")
    w.add_string("tokenizer.source.model", "spm-bpe")
    w.add_array("tokenizer.source.tokens", ["<unk>", "<s>", "</s>", "<pad>", "▁a", "b"], "string")
    w.add_array("tokenizer.source.scores", f32([0, 0, 0, 0, -1.5, -2.25]), "float32")
    w.add_array("tokenizer.source.token_type", [2, 3, 3, 3, 1, 1], "int32")
    w.add_uint32("tokenizer.source.bos_token_id", 1)
    w.add_uint32("tokenizer.source.eos_token_id", 2)
    w.add_uint32("tokenizer.source.unknown_token_id", 0)
    w.add_uint32("tokenizer.source.padding_token_id", 3)
    w.add_bool("tokenizer.source.add_dummy_prefix", True)
    w.add_bool("tokenizer.source.remove_extra_whitespaces", True)
    return w


def make_tiny(path):
    # Small enough that the C++ test truncates it at every byte and mutates single fields.
    w = GGUFWriter(path, architecture="attnlab.fixture")
    w.add_bool("tiny.flag", True)
    w.add_array("tiny.list", [1, 2, 3], "int32")
    w.add_string("tiny.name_a", "a")
    w.add_string("tiny.name_b", "b")
    w.add_tensor("t.f32", f32([[1, 2, 3], [4, 5, 6]]), "f32")
    w.add_tensor("t.q8", np.linspace(-1, 1, 32, dtype=np.float32).reshape(1, 32), "q8_0")
    w.add_tensor("t.f16", f32([0.5, -0.25, 2.0, 8.0]), "f16")
    return w


def json_value(type_name, value):
    if type_name in ("uint64", "int64"):
        return str(int(value))  # JSON numbers cannot hold them exactly; @huggingface/gguf returns BigInt
    if type_name in ("float32",):
        return float(np.float32(value))
    return value


def sidecar(w):
    metadata = []
    for key, type_name, element_type, value in w.metadata():
        if element_type is None:
            metadata.append({"key": key, "type": type_name, "value": json_value(type_name, value)})
        else:
            metadata.append({"key": key, "type": "array", "element_type": element_type,
                             "value": [json_value(element_type, v) for v in value]})
    tensors = [{"name": name, "dtype": dtype, "ggml_dims": dims, "offset": offset, "n_bytes": n_bytes}
               for name, dtype, dims, offset, n_bytes in w.tensor_table()]
    return {"version": 3, "alignment": w.alignment, "metadata": metadata, "tensors": tensors}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(FIXTURES, "gguf"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, make in [("basic", make_basic), ("aligned64", make_aligned64), ("metadata_only", make_metadata_only),
                       ("tiny", make_tiny)]:
        path = os.path.join(args.out, name + ".gguf")
        w = make(path)
        w.write()
        info = sidecar(w)
        with open(os.path.join(args.out, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(info, f, indent=1, ensure_ascii=False)
            f.write("\n")
        # Self-check with the independent little reader (attnlab.gguf.reader).
        version, kvs, tensors, data_start, data = read_gguf(path)
        assert [k for k, _, _ in kvs] == [m["key"] for m in info["metadata"]]
        assert [(n, list(d), o) for n, _, d, o in tensors] == \
            [(t["name"], t["ggml_dims"], t["offset"]) for t in info["tensors"]]
        print(f"wrote {path} ({len(data)} bytes, {len(kvs)} keys, {len(tensors)} tensors)")


if __name__ == "__main__":
    main()
