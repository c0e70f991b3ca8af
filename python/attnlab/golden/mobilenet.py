#!/usr/bin/python3
"""Golden files for the C++ MobileNetV2 parity test (tests/cpp/test_mobilenet.cpp), computed by PyTorch.

    python3 -m attnlab.golden.mobilenet

Writes to $ATTNLAB_GOLDEN_DIR/mobilenet (default build/golden/mobilenet; derived from ../shared/data, so never
committed):
    mobilenet_v2.{f16,q8_0,i8}.gguf   the encoder + classifier (attnlab.gguf.mobilenet; i8: the TFLite
                                      integers, so its convolutions are exactly the model features were trained on)
    golden.gguf   per image k (metadata golden.names[k]):
        image.k      [H, W, 4]       the RGBA pixels as f32 values 0..255 (what the engine receives)
        input.k      [224, 224, 3]   models/mobilenet_v2.preprocess
        features.k   [49, 1280]      layer 51 of the PyTorch model loaded from the f16 GGUF (same weights as C++)
        features14.k [196, 576]      layer 39
        logits.k     [1001]
        features_i8.k, logits_i8.k   the same from the i8 GGUF
Images: license-clean only, never Flickr8k: Debian python3-skimage's chelsea (a cat, 451x300), coffee
(600x400), astronaut (512x512), and synthetic ones (224x224 shapes with a varying alpha channel, which must be
ignored; a tiny 37x23 gradient that exercises upsampling).
"""
import os

import numpy as np
import torch

from attnlab.gguf import mobilenet
from attnlab.gguf.writer import GGUFWriter
from attnlab.nn import mobilenet_v2 as mnv2
from attnlab.paths import ROOT, golden_dir

OUT_DIR = golden_dir("mobilenet")


def synthetic_shapes():
    """224x224 RGBA: a diagonal gradient, a disc and a bar, with an alpha ramp the engine must ignore."""
    y, x = np.mgrid[0:224, 0:224].astype(np.float32)
    rgb = np.stack([x / 223 * 255, y / 223 * 255, (x + y) / 446 * 255], axis=2)
    disc = (x - 140) ** 2 + (y - 90) ** 2 < 40 ** 2
    rgb[disc] = [250, 30, 20]
    rgb[150:180, 20:200] = [10, 10, 200]
    alpha = (x * 255 / 223)[:, :, None]
    return np.concatenate([rgb, alpha], axis=2).round().astype(np.uint8)


def synthetic_tiny():
    """37 wide x 23 high RGB gradient with a checker: upsampled to 224."""
    y, x = np.mgrid[0:23, 0:37]
    rgb = np.stack([x * 7, y * 11, ((x // 4 + y // 4) % 2) * 255], axis=2)
    return np.clip(rgb, 0, 255).astype(np.uint8)


def images():
    from skimage import data
    return [("chelsea", data.chelsea()), ("coffee", data.coffee()), ("astronaut", data.astronaut()),
            ("shapes", synthetic_shapes()), ("tiny", synthetic_tiny())]


def to_rgba(image):
    if image.shape[2] == 4:
        return image
    alpha = np.full(image.shape[:2] + (1,), 255, dtype=np.uint8)
    return np.concatenate([image, alpha], axis=2)


def main():
    torch.set_num_threads(1)
    os.makedirs(OUT_DIR, exist_ok=True)
    f16_path = os.path.join(OUT_DIR, "mobilenet_v2.f16.gguf")
    source = mnv2.load_mobilenet_v2()
    mobilenet.write(f16_path, dtype="f16", model=source)
    mobilenet.write(os.path.join(OUT_DIR, "mobilenet_v2.q8_0.gguf"), dtype="q8_0", model=source)
    i8_path = os.path.join(OUT_DIR, "mobilenet_v2.i8.gguf")
    mobilenet.write(i8_path, dtype="i8")
    model = mobilenet.load(f16_path)
    model_i8 = mobilenet.load(i8_path)

    writer = GGUFWriter(os.path.join(OUT_DIR, "golden.gguf"), architecture="attnlab.golden")
    names = []
    for k, (name, image) in enumerate(images()):
        rgba = to_rgba(image)
        x = mnv2.preprocess(rgba)
        with torch.no_grad():
            f7, f14 = model.features(mnv2.to_tensor([x]), with_14=True)
            logits = model.classifier(f7.mean(dim=(2, 3)))[0]
        grid = lambda f: f[0].permute(1, 2, 0).reshape(-1, f.shape[1]).numpy()  # noqa: E731  [C,H,W] -> [H*W, C]
        writer.add_tensor(f"image.{k}", rgba.astype(np.float32))
        writer.add_tensor(f"input.{k}", x)
        writer.add_tensor(f"features.{k}", grid(f7))
        writer.add_tensor(f"features14.{k}", grid(f14))
        writer.add_tensor(f"logits.{k}", logits.numpy())
        with torch.no_grad():
            f7_i8 = model_i8.features(mnv2.to_tensor([x]))
            writer.add_tensor(f"features_i8.{k}", grid(f7_i8))
            writer.add_tensor(f"logits_i8.{k}", model_i8.classifier(f7_i8.mean(dim=(2, 3)))[0].numpy())
        names.append(name)
        print(f"{name}: {image.shape[1]}x{image.shape[0]} top-1 {int(logits.argmax())}")
    writer.add_array("golden.names", names, "string")
    writer.write()
    print(f"wrote {os.path.relpath(OUT_DIR, ROOT)}")


if __name__ == "__main__":
    main()
