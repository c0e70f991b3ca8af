"""The MobileNetV2 encoder's GGUF schema (and optionally its ImageNet classifier): write it for the C++ engine, on
its own or inside a captioner file (add_mobilenet), and load a file's encoder back into PyTorch.

    python3 -m attnlab.export mobilenet --dtype f16  --out build/mobilenet/mobilenet_v2.f16.gguf
    python3 -m attnlab.export mobilenet --dtype q8_0 --out build/mobilenet/mobilenet_v2.q8_0.gguf

The captioner's export includes the encoder in its own file with
    add_mobilenet(writer, model=None, prefix="encoder.", dtype="f16", classifier=False, feature_layer=51)
(`model`: a models/mobilenet_v2.MobileNetV2, e.g. with fine-tuned blocks; None converts the TFLite file.)

Tensors (row-major shapes; layer i of the flat list in models/mobilenet_v2.py):
    {prefix}layers.{i}.weight   conv 1x1 [out, in]; conv kxk [out, kh, kw, in]; depthwise [kh, kw, channels]
                                (NHWC / TFLite layout: the engine runs NHWC)
    {prefix}layers.{i}.bias     [out] f32
    {prefix}classifier.weight   [1001, 1280], {prefix}classifier.bias [1001] f32   (only with classifier=True)
dtype "f16": every weight f16. "q8_0": q8_0 where the innermost dimension is a multiple of 32, f16 otherwise;
depthwise weights are always f16 (see add_mobilenet). "i8": the TFLite model's own 8-bit weights, exactly: each
layer's uint8 values minus 128 as i8, with their scale and zero point in the metadata below, so the engine
dequantizes them to the very float32 weights models/mobilenet_v2.py runs (half the bytes of f16, no rounding);
only for the unmodified TFLite model; the classifier is then f16.

Metadata (arrays have one entry per layer):
    attnlab.mobilenet.tensor_prefix   string, the prefix above
    attnlab.mobilenet.layer_count     uint32 (52)
    attnlab.mobilenet.kind            string[]  "conv" | "depthwise"
    attnlab.mobilenet.kernel          int32[]   3 | 1
    attnlab.mobilenet.stride          int32[]   1 | 2
    attnlab.mobilenet.padding         string[]  "same" (TensorFlow's) | "valid"
    attnlab.mobilenet.activation      string[]  "relu6" | "none"
    attnlab.mobilenet.residual        int32[]   -1, or the earlier layer whose INPUT is added to this output
    attnlab.mobilenet.in_channels / out_channels  int32[]
    attnlab.mobilenet.input_size      uint32 224
    attnlab.mobilenet.feature_layer   uint32, the layer whose output is the feature grid (51: 7x7x1280;
                                      39: 14x14x576)
    attnlab.mobilenet.preprocess      string, the preprocessing in words (see models/mobilenet_v2.py)
    attnlab.mobilenet.weight_scale    float32[]  (i8 files only) layer i's weight is (w - weight_zero_point[i])
    attnlab.mobilenet.weight_zero_point  int32[]   * weight_scale[i], computed in float64 and rounded to float32
    attnlab.mobilenet.has_classifier  bool
    attnlab.mobilenet.labels          string[1001]  (only with the classifier)
"""
import os

import numpy as np

from attnlab.gguf.reader import read_gguf, read_gguf_tensors
from attnlab.gguf.writer import GGUFWriter
from attnlab.nn import mobilenet_v2 as mnv2
from attnlab.nn import tflite_mobilenet

ARCH = "attnlab.mobilenet"
KEY = ARCH + "."
PREPROCESS = ("RGB (alpha dropped) -> 224x224 bilinear, half-pixel centers, clamped edges, no antialias, "
              "float32 -> x = pixel / 127.5 - 1; NHWC")


def weight_dtype(array, dtype):
    if dtype in ("f16", "i8"):   # (i8 covers the convolutions only; add_mobilenet stores them itself)
        return "f16"
    if dtype == "q8_0":
        return "q8_0" if array.shape[-1] % 32 == 0 else "f16"
    if dtype == "f32":
        return "f32"
    raise ValueError(f"dtype must be f16, q8_0, f32 or i8, got {dtype!r}")


def add_mobilenet(writer, model=None, prefix="encoder.", dtype="f16", classifier=False,
                  feature_layer=mnv2.FEATURE_LAYER_7, quantized=None, input_size=mnv2.INPUT_SIZE, classifier_dtype=None):
    """Add the encoder's tensors and attnlab.mobilenet.* metadata to an open GGUFWriter. Returns the model.
    dtype "i8" stores `quantized`, one (uint8 weight in the TFLite layout, scale, zero point) per layer, which must
    dequantize to `model`'s weights exactly; by default the TFLite file's, for the TFLite model (model None).
    classifier_dtype: the classifier's storage (default: as dtype gives it, f16 for i8)."""
    if quantized is not None and dtype != "i8":
        raise ValueError("integer weights are stored only with dtype i8")
    if dtype == "i8" and quantized is None:
        if model is not None:
            raise ValueError("dtype i8 stores the TFLite model's own weights; a modified model needs f16 or q8_0")
        layers, tflite_classifier = tflite_mobilenet.read_mobilenet()   # one read: the integers and the model
        quantized = [layer["quantized_weight"] for layer in layers]
        model = mnv2.MobileNetV2(layers, tflite_classifier).eval()
    if model is None:
        model = mnv2.load_mobilenet_v2()
    if quantized is not None and len(quantized) != len(model.layers):
        raise ValueError(f"{len(quantized)} integer weights for {len(model.layers)} layers")
    specs = [layer.spec() for layer in model.layers]
    if not 0 <= feature_layer < len(specs):
        raise ValueError(f"feature_layer {feature_layer} outside [0, {len(specs)})")
    for i, layer in enumerate(model.layers):
        w = layer.tflite_weight()
        if quantized is not None:
            q, scale, zero_point = quantized[i]
            if not np.array_equal(tflite_mobilenet.dequantize(q, scale, zero_point), w):
                raise ValueError(f"layer {i}: the integers do not dequantize to the model's weights")
            w = q.astype(np.int16) - 128
        if layer.kind == "conv" and layer.kernel == 1:
            w = w.reshape(w.shape[0], w.shape[3])  # [out, 1, 1, in] -> [out, in]
        # Depthwise weights stay f16 even in q8_0 files: a Q8_0 block runs along channels whose folded batch-norm
        # scales differ by orders of magnitude, so one shared scale wipes out the small ones (chelsea's logits
        # moved by 7.0 with q8_0 depthwise, 0.26 with q8_0 1x1 convs); they are 0.5% of the weights anyway.
        layer_dtype = "f16" if layer.kind == "depthwise" and dtype == "q8_0" else dtype
        writer.add_tensor(f"{prefix}layers.{i}.weight", w,
                          dtype="i8" if quantized is not None else weight_dtype(w, layer_dtype))
        writer.add_tensor(f"{prefix}layers.{i}.bias", layer.conv.bias.detach().cpu().numpy(), dtype="f32")
    writer.add_string(KEY + "tensor_prefix", prefix)
    writer.add_uint32(KEY + "layer_count", len(specs))
    writer.add_array(KEY + "kind", [s["kind"] for s in specs], "string")
    for name in ("kernel", "stride", "residual", "in_channels", "out_channels"):
        writer.add_array(KEY + name, [int(s[name]) for s in specs], "int32")
    writer.add_array(KEY + "padding", [s["padding"] for s in specs], "string")
    writer.add_array(KEY + "activation", [s["activation"] for s in specs], "string")
    writer.add_uint32(KEY + "input_size", input_size)
    writer.add_uint32(KEY + "feature_layer", feature_layer)
    writer.add_string(KEY + "preprocess", PREPROCESS)
    if quantized is not None:
        writer.add_array(KEY + "weight_scale", [float(scale) for _, scale, _ in quantized], "float32")
        writer.add_array(KEY + "weight_zero_point", [zero_point - 128 for _, _, zero_point in quantized], "int32")
    writer.add_bool(KEY + "has_classifier", bool(classifier))
    if classifier:
        add_classifier(writer, model, prefix, classifier_dtype or dtype)
    return model


def add_classifier(writer, model, prefix, dtype):
    """The ImageNet classifier's tensors ({prefix}classifier.*) and attnlab.mobilenet.labels; the caller writes
    attnlab.mobilenet.has_classifier."""
    w = model.classifier.weight.detach().cpu().numpy()
    writer.add_tensor(f"{prefix}classifier.weight", w, dtype=weight_dtype(w, dtype))
    writer.add_tensor(f"{prefix}classifier.bias", model.classifier.bias.detach().cpu().numpy(), dtype="f32")
    writer.add_array(KEY + "labels", tflite_mobilenet.read_labels(), "string")


def write(path, dtype="f16", classifier=True, prefix="encoder.", model=None):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    writer = GGUFWriter(path, architecture=ARCH)
    writer.add_string("general.name", "MobileNetV2 1.0 224 (ImageNet, from the TFLite uint8 model)")
    writer.add_string("general.license", "Apache-2.0")
    model = add_mobilenet(writer, model=model, prefix=prefix, dtype=dtype, classifier=classifier)
    writer.write()
    return model


def load(path):
    """A MobileNetV2 whose weights are exactly what the GGUF file holds (f16 / q8_0 / i8 dequantized)."""
    meta, tensors = read_gguf_tensors(path)
    types = {name: type_name for name, type_name, _, _ in read_gguf(path)[2]}
    prefix = meta[KEY + "tensor_prefix"]
    n = meta[KEY + "layer_count"]
    specs = []
    for i in range(n):
        spec = {name: meta[KEY + name][i] for name in ("kind", "kernel", "stride", "padding", "activation",
                                                        "residual", "in_channels", "out_channels")}
        w = tensors[f"{prefix}layers.{i}.weight"]
        if types[f"{prefix}layers.{i}.weight"] == "i8":
            w = tflite_mobilenet.dequantize(w, meta[KEY + "weight_scale"][i], meta[KEY + "weight_zero_point"][i])
        if spec["kind"] == "conv" and w.ndim == 2:
            w = w.reshape(w.shape[0], 1, 1, w.shape[1])
        spec["weight"], spec["bias"] = w, tensors[f"{prefix}layers.{i}.bias"]
        specs.append(spec)
    classifier = None
    if meta.get(KEY + "has_classifier"):
        classifier = {"weight": tensors[f"{prefix}classifier.weight"], "bias": tensors[f"{prefix}classifier.bias"]}
    model = mnv2.MobileNetV2(specs, classifier)
    model.eval()
    return model
