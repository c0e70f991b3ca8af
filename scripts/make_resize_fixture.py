#!/usr/bin/python3
"""Golden file for the engine's image resize (tests/cpp/test_preprocess.cpp): what the Python twin,
attnlab.nn.mobilenet_v2.resize_bilinear, computes for synthetic images that shrink (antialiased) and one whose
width shrinks while its height grows.

    PYTHONPATH=python /usr/bin/python3 scripts/make_resize_fixture.py [--out tests/fixtures/image/resize.gguf]

Contents, per case k (metadata resize.names[k]):
    resize.k.width / resize.k.height / resize.k.size   uint32: the synthetic_rgba() input and the square output
    resized.k   [size, size, 3] f32   the resized pixel values (0..255, not normalized)
The inputs are not stored: synthetic_rgba() is a formula, mirrored in the C++ test.
"""
import argparse
import os

import numpy as np

from attnlab.gguf.writer import GGUFWriter
from attnlab.nn import mobilenet_v2 as mnv2

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = [("photo", 640, 480, 224), ("narrow", 97, 481, 56)]


def synthetic_rgba(width, height):
    """uint8 [height, width, 4]: a smooth ramp (red), a one-pixel checkerboard (green), a product pattern (blue)
    and an alpha ramp the resize must ignore."""
    y, x = np.mgrid[0:height, 0:width].astype(np.int64)
    rgba = np.stack([(x * 7 + y * 13) % 256, ((x + y) % 2) * 255, (x * y) % 251, (x * 3) % 256], axis=2)
    return rgba.astype(np.uint8)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "image", "resize.gguf"))
    args = parser.parse_args()
    writer = GGUFWriter(args.out, architecture="attnlab.golden")
    writer.add_array("resize.names", [name for name, *_ in CASES], "string")
    for k, (_, width, height, size) in enumerate(CASES):
        writer.add_uint32(f"resize.{k}.width", width)
        writer.add_uint32(f"resize.{k}.height", height)
        writer.add_uint32(f"resize.{k}.size", size)
        writer.add_tensor(f"resized.{k}", mnv2.resize_bilinear(synthetic_rgba(width, height)[:, :, :3], size))
    writer.write()
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
