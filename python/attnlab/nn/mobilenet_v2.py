#!/usr/bin/python3
"""MobileNetV2 1.0/224 in float PyTorch, converted from the uint8 TFLite file (attnlab.nn.tflite_mobilenet).

The network is a flat list of 52 convolution layers (the C++ engine walks the same list, read from GGUF
metadata `attnlab.mobilenet.*`):
    kind       "conv" (dense, groups=1) or "depthwise" (groups=channels)
    kernel     3 or 1;  stride 1 or 2
    padding    "same" (TensorFlow's: out = ceil(in/stride), total pad = max((out-1)*stride + k - in, 0), the
               smaller half before, so a stride-2 3x3 conv on 224 pads 0 top/left and 1 bottom/right) or "valid"
    activation "relu6" or "none"
    residual   -1, or the index of an earlier layer whose INPUT is added to this layer's output (after the
               activation; the TFLite ADDs have none)
then the classifier: global average pool over the 7x7 map, a [1001, 1280] linear layer, softmax.

Features for the captioner:
    features(x)                 -> [N, 1280, 7, 7]   layer 51 (the last 1x1 conv + ReLU6)
    features(x, with_14=True)   -> ([N,1280,7,7], [N, 576, 14, 14])   layer 39 = FEATURE_LAYER_14: block 13's
                                   1x1 expansion + ReLU6, the last and widest 14x14 map before the stride-2 conv.

Preprocessing (identical in C++, src/attnlab/image/preprocess.cpp):
    RGB(A) uint8 image of any size -> drop alpha -> resize to 224x224 with bilinear interpolation, half-pixel
    centers (src = (dst + 0.5) * in/out - 0.5, clamped to [0, in-1]), no antialiasing, computed on the float
    pixel values in float32 -> x = pixel / 127.5 - 1. When the image is already 224x224 the resize is the identity.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

INPUT_SIZE = 224
FEATURE_LAYER_7 = 51
FEATURE_LAYER_14 = 39
NUM_CLASSES = 1001


def same_padding(size, kernel, stride):
    """TF SAME: (before, after) for one spatial dimension."""
    out = -(-size // stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


class ConvLayer(nn.Module):
    def __init__(self, spec):
        super().__init__()
        self.kind, self.kernel, self.stride = spec["kind"], spec["kernel"], spec["stride"]
        self.padding, self.activation, self.residual = spec["padding"], spec["activation"], spec["residual"]
        cin, cout = spec["in_channels"], spec["out_channels"]
        groups = cin if self.kind == "depthwise" else 1
        self.conv = nn.Conv2d(cin, cout, self.kernel, stride=self.stride, groups=groups, bias=True)
        if "weight" in spec:
            w = np.asarray(spec["weight"], dtype=np.float32)
            if self.kind == "depthwise":  # [kh, kw, C] -> [C, 1, kh, kw]
                w = w.transpose(2, 0, 1)[:, None]
            else:  # [out, kh, kw, in] -> [out, in, kh, kw]
                w = w.transpose(0, 3, 1, 2)
            with torch.no_grad():
                self.conv.weight.copy_(torch.from_numpy(np.ascontiguousarray(w)))
                self.conv.bias.copy_(torch.from_numpy(np.asarray(spec["bias"], dtype=np.float32)))

    def spec(self):
        return {"kind": self.kind, "kernel": self.kernel, "stride": self.stride, "padding": self.padding,
                "activation": self.activation, "residual": self.residual,
                "in_channels": self.conv.in_channels, "out_channels": self.conv.out_channels}

    def tflite_weight(self):
        """The weight back in the engine's (TFLite) layout: conv [out, kh, kw, in], depthwise [kh, kw, C]."""
        w = self.conv.weight.detach().cpu().numpy()
        if self.kind == "depthwise":
            return np.ascontiguousarray(w[:, 0].transpose(1, 2, 0))
        return np.ascontiguousarray(w.transpose(0, 2, 3, 1))

    def forward(self, x):  # [N, Cin, H, W] -> [N, Cout, H', W']
        if self.padding == "same":
            top, bottom = same_padding(x.shape[2], self.kernel, self.stride)
            left, right = same_padding(x.shape[3], self.kernel, self.stride)
            if top or bottom or left or right:
                x = F.pad(x, (left, right, top, bottom))
        y = self.conv(x)
        if self.activation == "relu6":
            y = torch.clamp(y, 0.0, 6.0)
        return y


class MobileNetV2(nn.Module):
    def __init__(self, specs, classifier=None):
        super().__init__()
        self.layers = nn.ModuleList([ConvLayer(s) for s in specs])
        self.classifier = nn.Linear(specs[-1]["out_channels"], NUM_CLASSES)
        if classifier is not None:
            with torch.no_grad():
                self.classifier.weight.copy_(torch.from_numpy(classifier["weight"]))
                self.classifier.bias.copy_(torch.from_numpy(classifier["bias"]))

    def _run(self, x, last, keep=()):
        inputs, kept = [], {}
        for i, layer in enumerate(self.layers[:last + 1]):
            inputs.append(x)
            x = layer(x)
            if layer.residual >= 0:
                x = x + inputs[layer.residual]
            if i in keep:
                kept[i] = x
        return x, kept

    def features(self, x, with_14=False):
        """x [N, 3, 224, 224] in [-1, 1] -> [N, 1280, 7, 7] (and [N, 576, 14, 14] when with_14)."""
        y, kept = self._run(x, FEATURE_LAYER_7, keep=(FEATURE_LAYER_14,))
        return (y, kept[FEATURE_LAYER_14]) if with_14 else y

    def logits(self, x):
        """x [N, 3, 224, 224] -> [N, 1001] (index 0 is 'background')."""
        return self.classifier(self.features(x).mean(dim=(2, 3)))

    def classify(self, x):
        """x [N, 3, 224, 224] -> class probabilities [N, 1001]."""
        return torch.softmax(self.logits(x), dim=1)

    def forward(self, x):
        return self.logits(x)


def load_mobilenet_v2(path=None):
    """The converted ImageNet model (eval mode) from the TFLite file."""
    from attnlab.nn import tflite_mobilenet
    layers, classifier = tflite_mobilenet.read_mobilenet(path or tflite_mobilenet.TFLITE_PATH)
    model = MobileNetV2(layers, classifier)
    model.eval()
    return model


# --- preprocessing ---------------------------------------------------------------------------------
def _bilinear_axis(in_size, out_size):
    """Half-pixel bilinear sampling along one axis: (i0, i1, frac) per output index, float32 like the C++."""
    scale = np.float32(in_size) / np.float32(out_size)
    src = (np.arange(out_size, dtype=np.float32) + np.float32(0.5)) * scale - np.float32(0.5)
    src = np.clip(src, np.float32(0), np.float32(in_size - 1)).astype(np.float32)
    i0 = np.floor(src).astype(np.int64)
    i1 = np.minimum(i0 + 1, in_size - 1)
    return i0, i1, (src - i0.astype(np.float32)).astype(np.float32)


def _antialias_axis(in_size, out_size):
    """Triangle filter of radius in/out source pixels (antialiased bilinear, as PyTorch's antialias=True and PIL):
    (index [out, taps], weight [out, taps]) float32 like the C++; taps past an output's window have weight 0."""
    scale = np.float32(in_size) / np.float32(out_size)
    support = scale
    taps = int(np.ceil(support)) * 2 + 1
    center = (np.arange(out_size, dtype=np.float32) + np.float32(0.5)) * scale
    lo = np.maximum((center - support + np.float32(0.5)).astype(np.int64), 0)
    hi = np.minimum((center + support + np.float32(0.5)).astype(np.int64), in_size)
    count = np.minimum(hi - lo, taps)
    k = np.arange(taps)
    index = lo[:, None] + k[None, :]
    inside = k[None, :] < count[:, None]
    distance = np.abs((index.astype(np.float32) + np.float32(0.5) - center[:, None]) / scale)
    weight = np.where(inside, np.maximum(np.float32(0), np.float32(1) - distance), np.float32(0)).astype(np.float32)
    total = np.zeros(out_size, np.float32)
    for t in range(taps):  # summed in tap order, as the C++ does
        total = total + weight[:, t]
    weight = (weight / total[:, None]).astype(np.float32)
    return np.minimum(index, in_size - 1), weight


def _resize_axis(pixels, axis, out_size):
    """float32 pixels resized along axis 0 or 1: antialiased when it shrinks, bilinear otherwise."""
    in_size = pixels.shape[axis]
    take = (lambda idx: pixels[idx]) if axis == 0 else (lambda idx: pixels[:, idx])
    if in_size <= out_size:
        i0, i1, frac = _bilinear_axis(in_size, out_size)
        frac = frac[:, None, None] if axis == 0 else frac[None, :, None]
        a, b = take(i0), take(i1)
        return (a + (b - a) * frac).astype(np.float32)
    index, weight = _antialias_axis(in_size, out_size)
    shape = (out_size,) + pixels.shape[1:] if axis == 0 else (pixels.shape[0], out_size) + pixels.shape[2:]
    out = np.zeros(shape, np.float32)
    for t in range(index.shape[1]):  # one product and one sum per tap, in tap order, as the C++ does
        w = weight[:, t][:, None, None] if axis == 0 else weight[:, t][None, :, None]
        out = out + w * take(index[:, t])
    return out


def resize_bilinear(image, size=INPUT_SIZE):
    """uint8 [H, W, C] -> float32 [size, size, C] pixel values (not normalized), the engine's resize
    (src/attnlab/image/preprocess.hpp): per axis antialiased bilinear when it shrinks, half-pixel bilinear when it
    grows; rows first, then columns. Identity when H = W = size."""
    image = np.asarray(image)
    h, w = image.shape[:2]
    pixels = image.astype(np.float32)
    if (h, w) == (size, size):
        return pixels
    return _resize_axis(_resize_axis(pixels, 1, size), 0, size)


def preprocess(image):
    """uint8 RGB or RGBA [H, W, 3|4] -> float32 [224, 224, 3] in [-1, 1] (NHWC, what the engine computes)."""
    image = np.asarray(image)
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] not in (3, 4):
        raise ValueError(f"expected a uint8 [H, W, 3|4] image, got {image.dtype} {image.shape}")
    resized = resize_bilinear(image[:, :, :3])
    return (resized / np.float32(127.5) - np.float32(1.0)).astype(np.float32)


def to_tensor(images):
    """list of preprocessed [224, 224, 3] arrays -> [N, 3, 224, 224] tensor."""
    return torch.from_numpy(np.stack(images).transpose(0, 3, 1, 2).copy())


def load_image(path):
    """A JPEG/PNG file as uint8 RGB [H, W, 3] (PIL)."""
    from PIL import Image
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))
