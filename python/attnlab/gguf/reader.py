#!/usr/bin/python3
"""Read GGUF v3 files (an independent little reader: the C++ engine has its own) and print their contents.

    python3 -m attnlab.gguf.reader --dump model.gguf

read_gguf returns the raw layout; read_gguf_tensors the metadata as a dict and every tensor widened to float32
exactly as the engine widens it, so PyTorch can run the very weights the engine runs.
"""
import argparse
import struct
import sys

import numpy as np

from attnlab.gguf.writer import (DEFAULT_ALIGNMENT, GGUF_MAGIC, QK8_0, SCALAR_FORMATS, TENSOR_TYPE_NAMES,
                                 VALUE_TYPE_NAMES, align_offset, dequantize_q8_0)


class _Cursor:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, n):
        if self.pos + n > len(self.data):
            raise ValueError(f"file truncated at byte {self.pos} (needs {n} more)")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, fmt):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self):
        return self.take(self.unpack("<Q")).decode("utf-8", errors="replace")

    def value(self, type_id):
        name = VALUE_TYPE_NAMES.get(type_id)
        if name is None:
            raise ValueError(f"unknown value type {type_id}")
        if name == "string":
            return self.string()
        if name == "array":
            elem, n = self.unpack("<I"), self.unpack("<Q")
            return [self.value(elem) for _ in range(n)]
        return self.unpack(SCALAR_FORMATS[name])


def _parse(path):
    """-> (version, [(key, type name, element type name or None, value, payload bytes)],
    [(name, type name, dims, offset)], data section start, bytes)"""
    with open(path, "rb") as f:
        data = f.read()
    c = _Cursor(data)
    if c.take(4) != GGUF_MAGIC:
        raise ValueError(f"{path}: not a GGUF file")
    version, n_tensors, n_kv = c.unpack("<I"), c.unpack("<Q"), c.unpack("<Q")
    kvs = []
    for _ in range(n_kv):
        key, type_id = c.string(), c.unpack("<I")
        type_name = VALUE_TYPE_NAMES.get(type_id, str(type_id))
        start = c.pos
        element = VALUE_TYPE_NAMES.get(c.unpack("<I")) if type_name == "array" else None
        c.pos = start
        value = c.value(type_id)
        kvs.append((key, type_name, element, value, data[start:c.pos]))
    tensors = []
    for _ in range(n_tensors):
        name, n_dims = c.string(), c.unpack("<I")
        dims = [c.unpack("<Q") for _ in range(n_dims)]
        type_id, offset = c.unpack("<I"), c.unpack("<Q")
        tensors.append((name, TENSOR_TYPE_NAMES.get(type_id, str(type_id)), dims, offset))
    alignment = next((v for k, _, _, v, _ in kvs if k == "general.alignment"), DEFAULT_ALIGNMENT)
    return version, kvs, tensors, align_offset(c.pos, alignment), data


def read_gguf(path):
    """-> (version, [(key, type name, value)], [(name, type name, dims, offset)], data section start, bytes)"""
    version, kvs, tensors, data_start, data = _parse(path)
    return version, [(key, type_name, value) for key, type_name, _, value, _ in kvs], tensors, data_start, data


def tensor_bytes(type_name, dims):
    """Bytes a tensor of this ggml type and dims takes in the data section."""
    count = int(np.prod(dims))
    if type_name == "q8_0":
        return count // QK8_0 * (2 + QK8_0)
    sizes = {"f32": 4, "f16": 2, "i8": 1, "i32": 4}
    if type_name not in sizes:
        raise ValueError(f"tensor type {type_name} is not one this reader knows")
    return count * sizes[type_name]


def read_gguf_raw(path):
    """-> ([(key, type name, element type name or None, value, payload bytes)], [(name, type name, dims, bytes)]):
    every value and tensor as stored, so a file can be copied with changes (GGUFWriter.copy_value / copy_tensor)
    without widening or requantizing anything."""
    _, kvs, infos, data_start, data = _parse(path)
    tensors = []
    for name, type_name, dims, offset in infos:
        start = data_start + offset
        end = start + tensor_bytes(type_name, dims)
        if end > len(data):
            raise ValueError(f"{path}: tensor {name} runs past the end of the file")
        tensors.append((name, type_name, dims, data[start:end]))
    return kvs, tensors


def read_gguf_tensors(path):
    """-> ({key: value}, {name: float32 array in PyTorch (row-major) shape}); f16 and q8_0 are widened exactly as
    the C++ engine reads them, so PyTorch can run the very weights the engine runs. i8 tensors come back as their
    integer values."""
    _, kvs, infos, data_start, data = read_gguf(path)
    tensors = {}
    for name, type_name, dims, offset in infos:
        shape = tuple(reversed(dims))              # GGUF lists the innermost dimension first
        count = int(np.prod(shape))
        start = data_start + offset
        if type_name == "f32":
            array = np.frombuffer(data, dtype="<f4", count=count, offset=start)
        elif type_name == "f16":
            array = np.frombuffer(data, dtype="<f2", count=count, offset=start).astype(np.float32)
        elif type_name == "i8":   # plain integers; the caller applies any scale (attnlab.gguf.mobilenet.load)
            array = np.frombuffer(data, dtype="i1", count=count, offset=start)
        elif type_name == "i32":  # token ids
            array = np.frombuffer(data, dtype="<i4", count=count, offset=start)
            tensors[name] = np.array(array, dtype=np.int32).reshape(shape)
            continue
        elif type_name == "q8_0":
            blocks = np.frombuffer(data, dtype=[("d", "<f2"), ("qs", "i1", (QK8_0,))], count=count // QK8_0,
                                   offset=start)
            array = dequantize_q8_0(blocks["d"], blocks["qs"])
        else:
            raise ValueError(f"{path}: tensor {name} has unsupported type {type_name}")
        tensors[name] = np.array(array, dtype=np.float32).reshape(shape)
    return {k: v for k, _, v in kvs}, tensors


def _summarize(value, type_name):
    if type_name == "array":
        head = ", ".join(repr(v) for v in value[:6])
        return f"[{len(value)} items: {head}{', ...' if len(value) > 6 else ''}]"
    if isinstance(value, str) and len(value) > 80:
        return repr(value[:77] + "...")
    return repr(value)


def dump(path, out=sys.stdout):
    version, kvs, tensors, data_start, data = read_gguf(path)
    print(f"{path}: GGUF v{version}, {len(kvs)} metadata keys, {len(tensors)} tensors, "
          f"data section at byte {data_start}, file {len(data)} bytes", file=out)
    for key, type_name, value in kvs:
        print(f"  {key} ({type_name}) = {_summarize(value, type_name)}", file=out)
    for name, type_name, dims, offset in tensors:
        shape = list(reversed(dims))
        print(f"  tensor {name}: {type_name} shape {shape} (ggml dims {dims}) at data+{offset}", file=out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dump", metavar="FILE", help="print the metadata and tensor table of a GGUF file")
    args = parser.parse_args(argv)
    if not args.dump:
        parser.error("nothing to do (use --dump FILE)")
    dump(args.dump)


if __name__ == "__main__":
    main()
