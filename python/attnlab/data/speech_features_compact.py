"""The MFCC stores of attnlab.data.speech_features in a compact form, for moving them to a machine that cannot make
them (a GPU machine with no TTS engines or shared data): 8-bit codes per utterance and coefficient, xz-compressed,
about a fifth of the float32 store's bytes.

    PYTHONPATH=python python3 -m attnlab.data.speech_features_compact pack FEATURES COMPACT
    PYTHONPATH=python python3 -m attnlab.data.speech_features_compact unpack COMPACT FEATURES

Each utterance's coefficient k is coded as round((x - low_k) / step_k) in 0..255 with its own low and step
(float32), so the round trip is within half a step: 1/510 of that coefficient's range in that utterance. The
unpacked store has the float32 layout speech_features writes; the shipped recognizer trained on such a store.
"""
import argparse
import io
import lzma
import os
import sys

import numpy as np

LEVELS = 255


def encode(frames, offsets):
    """frames [N, D] float32, offsets [U+1] -> (codes [N, D] uint8, low [U, D], step [U, D])."""
    U, D = len(offsets) - 1, frames.shape[1]
    codes = np.empty(frames.shape, np.uint8)
    low, step = np.zeros((U, D), np.float32), np.ones((U, D), np.float32)
    for u in range(U):
        x = frames[offsets[u]:offsets[u + 1]]
        if len(x) == 0:
            continue
        lo, hi = x.min(0), x.max(0)
        st = np.where(hi > lo, (hi - lo) / LEVELS, 1.0).astype(np.float32)
        codes[offsets[u]:offsets[u + 1]] = np.clip(np.rint((x - lo) / st), 0, LEVELS).astype(np.uint8)
        low[u], step[u] = lo, st
    return codes, low, step


def decode(codes, low, step, offsets):
    per_frame = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    return (codes.astype(np.float32) * step[per_frame] + low[per_frame]).astype(np.float32)


def pack(src, dst):
    os.makedirs(dst, exist_ok=True)
    for name in sorted(os.listdir(src)):
        if not name.endswith(".npz") or name.endswith(".tmp.npz"):
            continue
        with np.load(os.path.join(src, name)) as z:
            arrays = {key: z[key] for key in z.files}
        codes, low, step = encode(arrays.pop("frames"), arrays["offsets"])
        buffer = io.BytesIO()
        np.savez(buffer, codes=codes, low=low, step=step, **arrays)
        out = os.path.join(dst, name[:-4] + ".npz.xz")
        with lzma.open(out + ".tmp", "wb", preset=6) as f:
            f.write(buffer.getvalue())
        os.replace(out + ".tmp", out)
        print(f"{name}: {len(codes)} frames -> {out} ({os.path.getsize(out) / 2**20:.1f} MiB)", flush=True)


def unpack(src, dst):
    os.makedirs(dst, exist_ok=True)
    for name in sorted(os.listdir(src)):
        if not name.endswith(".npz.xz"):
            continue
        with lzma.open(os.path.join(src, name), "rb") as f, np.load(io.BytesIO(f.read())) as z:
            arrays = {key: z[key] for key in z.files}
        frames = decode(arrays.pop("codes"), arrays.pop("low"), arrays.pop("step"), arrays["offsets"])
        out = os.path.join(dst, name[:-3])
        np.savez(out[:-4] + ".tmp.npz", frames=frames, **arrays)
        os.replace(out[:-4] + ".tmp.npz", out)
        print(f"{name}: {len(frames)} frames -> {out}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=("pack", "unpack"))
    ap.add_argument("src")
    ap.add_argument("dst")
    args = ap.parse_args(argv)
    (pack if args.action == "pack" else unpack)(args.src, args.dst)


if __name__ == "__main__":
    sys.exit(main())
