#!/usr/bin/python3
"""Read the uint8 TFLite MobileNetV2 and turn it into the float layer list that models/mobilenet_v2.py runs.

The reader is generated at conversion time from the TFLite schema:
    flatc --python -o build/tflite_schema ../shared/data/mobilenet/schema.fbs
(`ensure_schema()` does it when build/tflite_schema is missing; Debian flatbuffers-compiler + python3-flatbuffers).

What the conversion does, per operator (the graph is checked to be exactly the MobileNetV2 shape we expect):
  CONV_2D / DEPTHWISE_CONV_2D -> a layer: weights and bias dequantized ((q - zero_point) * scale, per tensor),
      stride, SAME/VALID padding and the fused activation (RELU6 or none) from the operator's options.
      Batch norm is already folded into these weights by the TFLite converter, so nothing else is folded.
  ADD -> the residual of the layer that produced its first input: that layer's output += the tensor it names,
      which is always the input of an earlier layer (the block's input), recorded as that layer's index.
  AVERAGE_POOL_2D (7x7 VALID over the 7x7 map) + CONV_2D 1x1 1280->1001 + RESHAPE + SOFTMAX -> the classifier:
      global mean, then a [1001, 1280] linear layer.

    python3 -m attnlab.nn.tflite_mobilenet          # prints the layer list
"""
import importlib.util
import os
import subprocess
import sys

import numpy as np

from attnlab.paths import BUILD, SHARED_DATA

DATA_DIR = os.path.join(SHARED_DATA, "mobilenet")
TFLITE_PATH = os.path.join(DATA_DIR, "mobilenet_v2_1.0_224_quant.tflite")
LABELS_PATH = os.path.join(DATA_DIR, "imagenet_labels.txt")
SCHEMA_PATH = os.path.join(DATA_DIR, "schema.fbs")
SCHEMA_OUT = os.path.join(BUILD, "tflite_schema")


def ensure_schema():
    """Generate the flatbuffers reader for the TFLite schema (once) and make it importable as `tflite`. The
    generated package lives in build/, so it is registered by its location rather than through sys.path."""
    package_dir = os.path.join(SCHEMA_OUT, "tflite")
    if not os.path.exists(os.path.join(package_dir, "Model.py")):
        os.makedirs(SCHEMA_OUT, exist_ok=True)
        subprocess.run(["flatc", "--python", "-o", SCHEMA_OUT, SCHEMA_PATH], check=True)
    if "tflite" not in sys.modules:
        spec = importlib.util.spec_from_file_location("tflite", os.path.join(package_dir, "__init__.py"),
                                                      submodule_search_locations=[package_dir])
        module = importlib.util.module_from_spec(spec)
        sys.modules["tflite"] = module
        spec.loader.exec_module(module)


def read_labels(path=LABELS_PATH):
    with open(path, encoding="utf-8") as f:
        labels = [line.rstrip("\n") for line in f]
    if len(labels) != 1001 or labels[0] != "background":
        raise ValueError(f"{path}: expected 1001 labels starting with 'background'")
    return labels


def _builtin_names():
    from tflite.BuiltinOperator import BuiltinOperator
    return {v: k for k, v in vars(BuiltinOperator).items() if not k.startswith("_")}


def _padding_name(code):
    from tflite.Padding import Padding
    return {Padding.SAME: "same", Padding.VALID: "valid"}[code]


def _activation_name(code):
    from tflite.ActivationFunctionType import ActivationFunctionType as A
    names = {A.NONE: "none", A.RELU6: "relu6"}
    if code not in names:
        raise ValueError(f"unsupported fused activation {code}")
    return names[code]


def dequantize(q, scale, zero_point):
    """(q - zero_point) * scale in float64, rounded to float32 once (the C++ engine's i8 weights do the same)."""
    return ((q.astype(np.float64) - float(zero_point)) * float(scale)).astype(np.float32)


class _Graph:
    def __init__(self, path):
        ensure_schema()
        from tflite.Model import Model
        self.buf = open(path, "rb").read()
        if self.buf[4:8] != b"TFL3":
            raise ValueError(f"{path}: not a TFLite flatbuffer")
        self.model = Model.GetRootAsModel(self.buf, 0)
        if self.model.SubgraphsLength() != 1:
            raise ValueError("expected one subgraph")
        self.graph = self.model.Subgraphs(0)
        self.op_names = _builtin_names()

    def tensor(self, index):
        return self.graph.Tensors(index)

    def shape(self, index):
        return tuple(int(d) for d in self.tensor(index).ShapeAsNumpy())

    def constant(self, index):
        """A constant tensor dequantized to float32: (q - zero_point) * scale, one scale per tensor."""
        q, scale, zero = self.quantized(index)
        return dequantize(q, scale, zero)

    def quantized(self, index):
        """A constant tensor as stored: (integers, scale as float32, zero point)."""
        t = self.tensor(index)
        data = self.model.Buffers(t.Buffer()).DataAsNumpy()
        if isinstance(data, int) or data.size == 0:
            raise ValueError(f"tensor {index} ({t.Name().decode()}) has no constant data")
        from tflite.TensorType import TensorType
        dtype = {TensorType.UINT8: np.uint8, TensorType.INT32: np.int32}[t.Type()]
        q = np.frombuffer(data.tobytes(), dtype=dtype).reshape(self.shape(index))
        quant = t.Quantization()
        scales, zeros = quant.ScaleAsNumpy(), quant.ZeroPointAsNumpy()
        if np.size(scales) != 1 or np.size(zeros) != 1:
            raise ValueError(f"tensor {index}: expected per-tensor quantization")
        return q, np.float32(scales[0]), int(zeros[0])

    def input_quantization(self):
        t = self.tensor(int(self.graph.Inputs(0)))
        q = t.Quantization()
        return float(q.ScaleAsNumpy()[0]), int(q.ZeroPointAsNumpy()[0])

    def operators(self):
        for i in range(self.graph.OperatorsLength()):
            op = self.graph.Operators(i)
            code = self.model.OperatorCodes(op.OpcodeIndex())
            name = self.op_names[max(code.BuiltinCode(), code.DeprecatedBuiltinCode())]
            yield name, op, [int(x) for x in op.InputsAsNumpy()], [int(x) for x in op.OutputsAsNumpy()]


def _options(op, cls):
    table = op.BuiltinOptions()
    options = cls()
    options.Init(table.Bytes, table.Pos)
    return options


def read_mobilenet(path=TFLITE_PATH):
    """-> (layers, classifier)

    layers: list of dicts, in graph order, each
        kind "conv" | "depthwise", kernel (3 or 1), stride, padding "same" | "valid", activation "relu6" | "none",
        residual: -1, or the index of the earlier layer whose INPUT is added to this layer's output,
        weight: float32 in TFLite layout, conv [out, kh, kw, in], depthwise [kh, kw, channels],
        quantized_weight: (uint8 in the same layout, scale, zero_point) that `weight` was dequantized from,
        bias: float32 [out], in_channels, out_channels, input_hw / output_hw (for checks).
    classifier: dict weight [1001, 1280], bias [1001] (global average pool first).
    """
    ensure_schema()
    from tflite.Conv2DOptions import Conv2DOptions
    from tflite.DepthwiseConv2DOptions import DepthwiseConv2DOptions
    from tflite.AddOptions import AddOptions
    from tflite.Pool2DOptions import Pool2DOptions

    g = _Graph(path)
    scale, zero = g.input_quantization()
    if abs(scale - 1 / 128) > 1e-9 or zero != 128:
        raise ValueError(f"unexpected input quantization {scale} {zero}")  # the preprocessing assumes x/127.5-1
    layers, classifier = [], None
    producer = {}    # tensor index -> layer that outputs it
    consumer_of = {}  # tensor index -> first layer that reads it
    alias = {}       # ADD output tensor -> the layer whose output it replaces
    pooled = False
    counts = {}
    for name, op, inputs, outputs in g.operators():
        counts[name] = counts.get(name, 0) + 1
        if name in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            x, w, b = inputs
            if pooled:  # the 1x1 conv after the global pool is the classifier
                weight = g.constant(w)
                classifier = {"weight": weight.reshape(weight.shape[0], -1), "bias": g.constant(b)}
                continue
            depthwise = name == "DEPTHWISE_CONV_2D"
            o = _options(op, DepthwiseConv2DOptions if depthwise else Conv2DOptions)
            if o.DilationHFactor() != 1 or o.DilationWFactor() != 1 or o.StrideH() != o.StrideW():
                raise ValueError("dilated or anisotropic convolutions are not supported")
            if depthwise and o.DepthMultiplier() != 1:
                raise ValueError("depth multiplier != 1 is not supported")
            quantized, scale, zero_point = g.quantized(w)
            in_shape, out_shape = g.shape(x), g.shape(outputs[0])
            if depthwise:
                quantized = quantized[0]  # [1, kh, kw, C] -> [kh, kw, C]
            weight = dequantize(quantized, scale, zero_point)
            index = len(layers)
            layers.append({
                "kind": "depthwise" if depthwise else "conv",
                "kernel": int(weight.shape[1] if not depthwise else weight.shape[0]),
                "stride": int(o.StrideH()),
                "padding": _padding_name(o.Padding()),
                "activation": _activation_name(o.FusedActivationFunction()),
                "residual": -1,
                "weight": weight,
                "quantized_weight": (quantized, scale, zero_point),
                "bias": g.constant(b),
                "in_channels": int(in_shape[3]),
                "out_channels": int(out_shape[3]),
                "input_hw": (int(in_shape[1]), int(in_shape[2])),
                "output_hw": (int(out_shape[1]), int(out_shape[2])),
            })
            source = alias.get(x, x)
            expected = producer.get(source, None)
            if index > 0 and expected != index - 1:
                raise ValueError(f"layer {index} does not read the previous layer's output")
            consumer_of.setdefault(x, index)
            producer[outputs[0]] = index
        elif name == "ADD":
            a, b = inputs
            o = _options(op, AddOptions)
            if _activation_name(o.FusedActivationFunction()) != "none":
                raise ValueError("ADD with a fused activation is not supported")
            layer = producer.get(a)
            if layer is None or layer != len(layers) - 1 or b not in consumer_of:
                raise ValueError("ADD is not a residual of the last layer onto an earlier layer's input")
            layers[layer]["residual"] = consumer_of[b]
            producer[outputs[0]] = layer
            alias[outputs[0]] = outputs[0]
        elif name == "AVERAGE_POOL_2D":
            o = _options(op, Pool2DOptions)
            in_shape = g.shape(inputs[0])
            if (o.FilterHeight(), o.FilterWidth()) != (in_shape[1], in_shape[2]) or g.shape(outputs[0])[1:3] != (1, 1):
                raise ValueError("the average pool is expected to be global")
            pooled = True
        elif name in ("RESHAPE", "SOFTMAX"):
            continue
        else:
            raise ValueError(f"unsupported operator {name}")
    if counts != {"CONV_2D": 36, "DEPTHWISE_CONV_2D": 17, "ADD": 10, "AVERAGE_POOL_2D": 1, "RESHAPE": 1, "SOFTMAX": 1}:
        raise ValueError(f"unexpected operator counts {counts}")
    if classifier is None:
        raise ValueError("no classifier found")
    return layers, classifier


def main():
    layers, classifier = read_mobilenet()
    for i, l in enumerate(layers):
        print(f"{i:2d} {l['kind']:9s} k{l['kernel']} s{l['stride']} {l['padding']:5s} {l['activation']:5s} "
              f"res={l['residual']:3d} {l['in_channels']:4d}->{l['out_channels']:4d} {l['input_hw']}->{l['output_hw']} "
              f"w{list(l['weight'].shape)}")
    print("classifier", classifier["weight"].shape, classifier["bias"].shape)


if __name__ == "__main__":
    main()
