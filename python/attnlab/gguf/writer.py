"""Write GGUF v3 files with numpy only; there is no `gguf` pip package on this machine (attnlab.gguf.reader reads
them back).

Layout and conventions: docs/gguf.md. Spec: /work/shared/reference/gguf.md.

    w = GGUFWriter("model.gguf", architecture="attnlab.bahdanau")
    w.add_uint32("attnlab.bahdanau.hidden_size", 256)
    w.add_array("tokenizer.source.tokens", ["<unk>", "a"], "string")
    w.add_tensor("encoder.embedding.weight", emb)              # numpy, PyTorch shape, float32
    w.add_tensor("decoder.out.weight", w_out, dtype="q8_0")    # innermost dim % 32 == 0
    w.write()
"""
import struct

import numpy as np

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
DEFAULT_ALIGNMENT = 32
QK8_0 = 32
MAX_TENSOR_NAME_BYTES = 64  # ggml's GGML_MAX_NAME

# gguf_metadata_value_type
VALUE_TYPES = {
    "uint8": 0, "int8": 1, "uint16": 2, "int16": 3, "uint32": 4, "int32": 5, "float32": 6,
    "bool": 7, "string": 8, "array": 9, "uint64": 10, "int64": 11, "float64": 12,
}
VALUE_TYPE_NAMES = {v: k for k, v in VALUE_TYPES.items()}
# struct format of each fixed-size scalar type (little-endian)
SCALAR_FORMATS = {
    "uint8": "<B", "int8": "<b", "uint16": "<H", "int16": "<h", "uint32": "<I", "int32": "<i",
    "float32": "<f", "bool": "<?", "uint64": "<Q", "int64": "<q", "float64": "<d",
}
INTEGER_RANGES = {
    "uint8": (0, 2**8 - 1), "int8": (-2**7, 2**7 - 1), "uint16": (0, 2**16 - 1), "int16": (-2**15, 2**15 - 1),
    "uint32": (0, 2**32 - 1), "int32": (-2**31, 2**31 - 1), "uint64": (0, 2**64 - 1), "int64": (-2**63, 2**63 - 1),
}

# ggml_type ids attnlab reads (i8: plain 8-bit integers; the MobileNetV2 encoder keeps its TFLite quantized weights
# in them, with a per-tensor scale and zero point in its metadata: attnlab.gguf.mobilenet)
# i32: plain 32-bit integers (a translation shortlist's token ids: attnlab.data.shortlist)
TENSOR_TYPES = {"f32": 0, "f16": 1, "q8_0": 8, "i8": 24, "i32": 26}
TENSOR_TYPE_NAMES = {v: k for k, v in TENSOR_TYPES.items()}


def align_offset(offset, alignment):
    return offset + (alignment - offset % alignment) % alignment


def _round_half_away_from_zero(x):
    # C's roundf; computed in float64 so that |x| + 0.5 is exact for every float32 x.
    x = x.astype(np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def quantize_q8_0(array):
    """float32 [..., K] (K % 32 == 0) -> (scales f16 [n_blocks], quants int8 [n_blocks, 32]), exactly like
    ggml's quantize_row_q8_0_ref: d = amax / 127, q = roundf(x * (1/d)), all in float32."""
    x = np.ascontiguousarray(array, dtype=np.float32).reshape(-1, QK8_0)
    amax = np.max(np.abs(x), axis=1)
    d = (amax / np.float32(127)).astype(np.float32)
    with np.errstate(divide="ignore"):
        inv_d = np.where(d != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    q = _round_half_away_from_zero(x * inv_d[:, None])  # float32 product, like ggml
    return d.astype(np.float16), np.clip(q, -127, 127).astype(np.int8)


def dequantize_q8_0(scales, quants):
    """The inverse used by ggml: w = f32(d) * q, in float32."""
    return (scales.astype(np.float32)[:, None] * quants.astype(np.float32)).astype(np.float32)


def q8_0_bytes(array):
    scales, quants = quantize_q8_0(array)
    blocks = np.zeros(len(scales), dtype=[("d", "<f2"), ("qs", "i1", (QK8_0,))])
    blocks["d"] = scales
    blocks["qs"] = quants
    return blocks.tobytes()


def _pack_string(value):
    data = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    return struct.pack("<Q", len(data)) + data


def _pack_scalar(value, type_name):
    if type_name == "string":
        return _pack_string(value)
    if type_name in INTEGER_RANGES:
        lo, hi = INTEGER_RANGES[type_name]
        value = int(value)
        if not lo <= value <= hi:
            raise ValueError(f"{value} does not fit in {type_name}")
    elif type_name == "bool":
        value = bool(value)
    else:
        value = float(value)
    return struct.pack(SCALAR_FORMATS[type_name], value)


class GGUFWriter:
    def __init__(self, path, alignment=DEFAULT_ALIGNMENT, architecture=None):
        if not isinstance(alignment, int) or alignment <= 0 or alignment % 8 != 0:
            raise ValueError(f"alignment must be a positive multiple of 8, got {alignment!r}")
        self.path = path
        self.alignment = alignment
        self._kv = {}  # key -> (type name, element type name or None, value); dicts keep insertion order
        self._tensors = {}  # name -> (ggml type id, ggml dims innermost-first, raw bytes)
        if architecture is not None:
            self.add_string("general.architecture", architecture)
        if alignment != DEFAULT_ALIGNMENT:
            self.add_uint32("general.alignment", alignment)

    # --- metadata -------------------------------------------------------------------------------
    def _add(self, key, type_name, value, element_type=None):
        if not isinstance(key, str) or not key or not key.isascii() or len(key) > 65535:
            raise ValueError(f"metadata key must be a non-empty ASCII string of at most 65535 bytes: {key!r}")
        if key in self._kv:
            raise ValueError(f"metadata key '{key}' was already added")
        # Pack now so that a bad value is reported at the call that added it.
        if element_type is None:
            payload = _pack_scalar(value, type_name)
        else:
            payload = struct.pack("<IQ", VALUE_TYPES[element_type], len(value))
            payload += b"".join(_pack_scalar(v, element_type) for v in value)
        self._kv[key] = (type_name, element_type, value, payload)

    def add_string(self, key, value):
        self._add(key, "string", str(value))

    def add_uint8(self, key, value):
        self._add(key, "uint8", value)

    def add_int8(self, key, value):
        self._add(key, "int8", value)

    def add_uint16(self, key, value):
        self._add(key, "uint16", value)

    def add_int16(self, key, value):
        self._add(key, "int16", value)

    def add_uint32(self, key, value):
        self._add(key, "uint32", value)

    def add_int32(self, key, value):
        self._add(key, "int32", value)

    def add_uint64(self, key, value):
        self._add(key, "uint64", value)

    def add_int64(self, key, value):
        self._add(key, "int64", value)

    def add_float32(self, key, value):
        self._add(key, "float32", value)

    def add_float64(self, key, value):
        self._add(key, "float64", value)

    def add_bool(self, key, value):
        self._add(key, "bool", value)

    def add_array(self, key, values, elem_type):
        if elem_type not in VALUE_TYPES or elem_type == "array":
            raise ValueError(f"unsupported array element type {elem_type!r} (arrays of arrays are not supported)")
        if isinstance(values, np.ndarray):
            values = values.reshape(-1).tolist()
        self._add(key, "array", list(values), element_type=elem_type)

    def copy_value(self, key, type_name, element_type, value, payload):
        """A value as attnlab.gguf.reader.read_gguf_raw returns it, stored byte for byte."""
        if key in self._kv:
            raise ValueError(f"metadata key '{key}' was already added")
        self._kv[key] = (type_name, element_type, value, payload)

    # --- tensors --------------------------------------------------------------------------------
    def copy_tensor(self, name, type_name, dims, data):
        """A tensor as attnlab.gguf.reader.read_gguf_raw returns it (ggml dims, innermost first), byte for byte."""
        if name in self._tensors:
            raise ValueError(f"tensor '{name}' was already added")
        self._tensors[name] = (TENSOR_TYPES[type_name], tuple(dims), bytes(data))

    def add_tensor(self, name, array, dtype="f32"):
        """array: numpy (or anything np.asarray takes), row-major, PyTorch shape."""
        if dtype not in TENSOR_TYPES:
            raise ValueError(f"tensor '{name}': dtype must be one of {sorted(TENSOR_TYPES)}, got {dtype!r}")
        if not isinstance(name, str) or not name or len(name.encode("utf-8")) > MAX_TENSOR_NAME_BYTES:
            raise ValueError(f"tensor name must be 1..{MAX_TENSOR_NAME_BYTES} bytes: {name!r}")
        if name in self._tensors:
            raise ValueError(f"tensor '{name}' was already added")
        array = np.asarray(array)
        if not 1 <= array.ndim <= 4:
            raise ValueError(f"tensor '{name}': GGUF holds 1..4 dimensions, got shape {array.shape}")
        if array.size == 0:
            raise ValueError(f"tensor '{name}' is empty (shape {array.shape})")
        if not np.all(np.isfinite(array)):
            raise ValueError(f"tensor '{name}' holds NaN or infinity")
        if dtype == "i8":
            if not np.array_equal(array, np.round(array)) or array.min() < -128 or array.max() > 127:
                raise ValueError(f"tensor '{name}': i8 holds integers in -128..127")
            data = np.ascontiguousarray(array, dtype=np.int8).tobytes()
            self._tensors[name] = (TENSOR_TYPES[dtype], tuple(reversed(array.shape)), data)
            return
        if dtype == "i32":
            if not np.array_equal(array, np.round(array)) or array.min() < -2**31 or array.max() > 2**31 - 1:
                raise ValueError(f"tensor '{name}': i32 holds 32-bit integers")
            data = np.ascontiguousarray(array, dtype="<i4").tobytes()
            self._tensors[name] = (TENSOR_TYPES[dtype], tuple(reversed(array.shape)), data)
            return
        array = np.ascontiguousarray(array, dtype=np.float32)
        if dtype == "f32":
            data = array.astype("<f4").tobytes()
        elif dtype == "f16":
            if np.max(np.abs(array)) > 65504:
                raise ValueError(f"tensor '{name}' has values beyond the f16 range")
            data = array.astype("<f2").tobytes()
        else:
            if array.shape[-1] % QK8_0 != 0:
                raise ValueError(f"tensor '{name}': q8_0 needs the innermost dimension to be a multiple of "
                                 f"{QK8_0}, got shape {array.shape}")
            data = q8_0_bytes(array)
        # GGUF dims are innermost-first (ggml ne[0] varies fastest): the numpy shape reversed.
        self._tensors[name] = (TENSOR_TYPES[dtype], tuple(reversed(array.shape)), data)

    # --- file -----------------------------------------------------------------------------------
    def _layout(self):
        """Offsets of each tensor relative to the data section, and the data section's size."""
        offsets, position = {}, 0
        for name, (_, _, data) in self._tensors.items():
            offsets[name] = position
            position = align_offset(position + len(data), self.alignment)
        return offsets, position

    def tensor_table(self):
        """[(name, ggml type name, ggml dims innermost-first, offset in data section, n_bytes)] as written."""
        offsets, _ = self._layout()
        return [(name, TENSOR_TYPE_NAMES[t], list(dims), offsets[name], len(data))
                for name, (t, dims, data) in self._tensors.items()]

    def metadata(self):
        """[(key, type name, element type name or None, value)] in file order."""
        self._add_implied_keys()
        return [(key, t, et, v) for key, (t, et, v, _) in self._kv.items()]

    def _add_implied_keys(self):
        # The spec requires general.quantization_version whenever a tensor is quantized (ggml's is 2).
        if any(t == TENSOR_TYPES["q8_0"] for t, _, _ in self._tensors.values()) and \
                "general.quantization_version" not in self._kv:
            self.add_uint32("general.quantization_version", 2)

    def write(self):
        self._add_implied_keys()
        out = bytearray()
        out += GGUF_MAGIC
        out += struct.pack("<IQQ", GGUF_VERSION, len(self._tensors), len(self._kv))
        for key, (type_name, _, _, payload) in self._kv.items():
            out += _pack_string(key) + struct.pack("<I", VALUE_TYPES[type_name]) + payload
        offsets, data_size = self._layout()
        for name, (type_id, dims, _) in self._tensors.items():
            out += _pack_string(name) + struct.pack("<I", len(dims))
            out += struct.pack(f"<{len(dims)}Q", *dims)
            out += struct.pack("<IQ", type_id, offsets[name])
        if self._tensors:
            out += bytes(align_offset(len(out), self.alignment) - len(out))
            data_start = len(out)
            for name, (_, _, data) in self._tensors.items():
                out += bytes(data_start + offsets[name] - len(out))
                out += data
            out += bytes(data_start + data_size - len(out))
        with open(self.path, "wb") as f:
            f.write(out)
