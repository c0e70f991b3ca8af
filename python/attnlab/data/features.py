#!/usr/bin/python3
"""Run the PyTorch MobileNetV2 (attnlab.nn.mobilenet_v2) once over the 8,000 Flickr8k images and store the annotation
grids for attnlab.train.caption. Resumable: rerun the same command and finished images are skipped.

    nohup nice -n 19 python3 -m attnlab.data.features > build/features/extract.log 2>&1 &

Output (build/features/, never committed):
    mobilenet7.f16.npy     float16 memmap [N, 49, 1280]: image n's 7x7 grid, row-major over (y, x), channels last,
                           i.e. the engine's [G, C] annotation matrix. --layer 14 writes mobilenet14.f16.npy
                           [N, 196, 576] (block 13's expansion) instead.
    mobilenet7.done.npy    uint8 [N]: 1 once image n is stored (written after the grids are flushed)
    images.txt             the N image names, in flickr8k.all_images() order (train, dev, test)
Preprocessing is mobilenet_v2.preprocess (bilinear to 224, pixel / 127.5 - 1), exactly the engine's.
"""
import argparse
import os
import sys
import time

import numpy as np
from attnlab import cpu_blas  # noqa: F401  (before torch: OpenBLAS's AVX kernels, see attnlab/cpu_blas.py)
import torch

from attnlab.data import flickr8k
from attnlab.paths import FEATURE_DIR
LAYERS = {7: (49, 1280), 14: (196, 576)}


def paths(layer, out_dir=FEATURE_DIR):
    return (os.path.join(out_dir, f"mobilenet{layer}.f16.npy"), os.path.join(out_dir, f"mobilenet{layer}.done.npy"),
            os.path.join(out_dir, "images.txt"))


def open_store(layer, out_dir=FEATURE_DIR, mode="r"):
    """-> (features memmap [N, G, C] float16, done [N] uint8, image names)."""
    feat_path, done_path, names_path = paths(layer, out_dir)
    with open(names_path, encoding="utf-8") as f:
        names = [line.strip() for line in f if line.strip()]
    feats = np.load(feat_path, mmap_mode=mode)
    done = np.load(done_path)
    return feats, done, names


def _save_done(done, path):
    tmp = path + ".tmp.npy"
    np.save(tmp, done)
    os.replace(tmp, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layer", type=int, default=7, choices=sorted(LAYERS))
    ap.add_argument("--out", default=FEATURE_DIR)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--limit", type=int, default=0, help="only the first N images (smoke tests)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    from attnlab.nn import mobilenet_v2 as mn

    os.makedirs(args.out, exist_ok=True)
    names = flickr8k.all_images()
    G, C = LAYERS[args.layer]
    feat_path, done_path, names_path = paths(args.layer, args.out)
    if os.path.exists(names_path):
        with open(names_path, encoding="utf-8") as f:
            if [line.strip() for line in f if line.strip()] != names:
                sys.exit(f"{names_path} lists other images: remove {args.out} to start over")
    else:
        with open(names_path + ".tmp", "w", encoding="utf-8") as f:
            f.write("\n".join(names) + "\n")
        os.replace(names_path + ".tmp", names_path)
    if not os.path.exists(feat_path):
        np.lib.format.open_memmap(feat_path, mode="w+", dtype=np.float16, shape=(len(names), G, C)).flush()
    done = np.load(done_path) if os.path.exists(done_path) else np.zeros(len(names), np.uint8)
    feats = np.load(feat_path, mmap_mode="r+")

    model = mn.load_mobilenet_v2()
    todo = [i for i in range(len(names)) if not done[i]]
    if args.limit:
        todo = [i for i in todo if i < args.limit]
    print(f"{len(todo)} of {len(names)} images to do", flush=True)
    start = time.time()
    for b in range(0, len(todo), args.batch):
        idx = todo[b:b + args.batch]
        x = mn.to_tensor([mn.preprocess(mn.load_image(os.path.join(flickr8k.IMAGE_DIR, names[i]))) for i in idx])
        with torch.no_grad():
            out = model.features(x, with_14=args.layer == 14)
            grid = out[1] if args.layer == 14 else out                       # [n, C, h, w]
        feats[idx] = grid.flatten(2).transpose(1, 2).numpy().astype(np.float16)   # [n, G, C]
        feats.flush()
        done[idx] = 1
        _save_done(done, done_path)
        n = b + len(idx)
        if (b // args.batch) % 20 == 0 or n == len(todo):
            rate = n / (time.time() - start)
            print(f"{n}/{len(todo)} images, {rate:.1f} img/s, eta {(len(todo) - n) / rate / 60:.1f} min", flush=True)


if __name__ == "__main__":
    main()
