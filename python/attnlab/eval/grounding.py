#!/usr/bin/python3
"""Does the captioner look at the dog when it writes "dog"? A measurable answer for the model card.

For every Flickr8k test image (or --split dev) whose caption, as the captioner writes it (greedy), contains a dog
word, take the attention of the step that wrote it and compare it with where MobileNetV2 itself sees a dog: its
ImageNet classifier applied to each cell of the 7x7x1280 grid (a class activation map; the mean of the cells'
logits is exactly the image's logits). A cell's "dog evidence" is its probability summed over the 118 dog classes.
A captioner over the 14x14 grid has its attention summed over 2x2 blocks onto the same 7x7 cells.

    python3 -m attnlab.eval.grounding --checkpoint /work/ckpt/captioner-14/best.pt
    python3 -m attnlab.eval.grounding --engine models/weights/captioner-flickr8k.q8_0.gguf

--checkpoint / --gguf run the decoder in PyTorch on the stored grids (attnlab.data.features); --engine takes
the attention from the native CLI (`attnlab caption --json`, what the page shows) on the JPEGs and the dog map
from PyTorch's MobileNetV2 on the same pixels.

Printed, averaged over those steps:
  mass   attention weight on the dog region (the cells holding the top quarter of the dog evidence), against the
         region's share of the cells, which is what uniform attention would put there;
  point  how often the most-attended cell lies in the dog region (the "pointing game");
  peak   the largest single weight (uniform attention is 1/49 = 0.020);
and the same mass for the caption's other words, so a model that stares at the dog for every word is told apart
from one that looks at it when it names it. The last line is JSON.
"""
import argparse
import json
import os
import subprocess

import numpy as np
import torch

from attnlab.data import flickr8k
from attnlab.data.captions import Data
from attnlab.gguf import captioner
from attnlab.nn import mobilenet_v2 as mnv2
from attnlab.nn import show_attend_tell as sat
from attnlab.paths import CLI, FEATURE_DIR

DOG_WORDS = {"dog", "dogs", "puppy", "puppies", "pup", "pups", "doggy", "doggie"}
# ImageNet class ids 151..268 are the dogs; the 1,001-label file has 'background' at 0, hence +1.
DOG_LABELS = range(152, 270)
REGION_SHARE = 0.25


def dog_evidence(classifier, grid):
    """grid [G, 1280] MobileNetV2 features -> [G] probability of a dog class in each cell."""
    with torch.no_grad():
        probs = torch.softmax(classifier(grid.float()), dim=-1)
    return probs[:, DOG_LABELS.start:DOG_LABELS.stop].sum(-1).numpy()


def dog_region(evidence):
    """Boolean mask of the cells holding the top REGION_SHARE of the cells by dog evidence."""
    k = max(1, int(round(REGION_SHARE * evidence.size)))
    mask = np.zeros(evidence.size, dtype=bool)
    mask[np.argsort(-evidence)[:k]] = True
    return mask


def on_7x7(attention, height, width):
    """attention [T, height*width] -> [T, 49]: a 14x14 grid's weights summed over the 2x2 blocks of each 7x7 cell."""
    if (height, width) == (7, 7):
        return attention
    if (height, width) != (14, 14):
        raise SystemExit(f"no 7x7 dog map for a {height}x{width} grid")
    return attention.reshape(-1, 7, 2, 7, 2).sum(axis=(2, 4)).reshape(-1, 49)


def is_dog_piece(piece):
    return piece.lstrip("\u2581").lower() in DOG_WORDS


def pytorch_steps(args):
    """-> (pieces, attention [T, 49], grid [49, 1280]) from the decoder in PyTorch on the stored grids."""
    model = sat.load_checkpoints(args.checkpoint) if args.checkpoint else captioner.load(args.gguf)[0]
    side = sat.grid_side(model)
    data = Data.for_model(model, args.features, 30)
    cam_data = data if side == 7 else Data(7, args.features, 30, limit_train=1)
    if cam_data.images[args.split] != data.images[args.split]:
        raise SystemExit("the 7x7 and 14x14 stores hold different images: finish attnlab.data.features")
    images = data.images[args.split][:args.subset or None]
    for i in range(len(images)):
        ids, weights, _, _ = sat.greedy_with_attention(model, data.inputs(args.split, slice(i, i + 1)))
        pieces = [data.sp.id_to_piece(t) for t in ids if t != sat.EOS_ID]
        yield pieces, on_7x7(weights[:len(pieces)].numpy(), side, side), cam_data.features[args.split][i].float()


def engine_steps(args, mobilenet):
    """-> (pieces, attention [T, 49], grid [49, 1280]) with the CLI's attention and PyTorch's MobileNetV2 grid."""
    images = flickr8k.load_split(args.split)[:args.subset or None]
    paths = [os.path.join(flickr8k.IMAGE_DIR, img) for img in images]
    out = subprocess.run([args.cli, "caption", "--model", args.engine, "--beam", "1", "--json", *paths],
                         check=True, capture_output=True, text=True)
    for path, line in zip(paths, out.stdout.splitlines()):
        result = json.loads(line)
        pieces = result["tokens"]
        if not any(is_dog_piece(p) for p in pieces):
            continue    # the MobileNetV2 pass is the slow part: only for captions that name a dog
        x = mnv2.to_tensor([mnv2.preprocess(mnv2.load_image(path))])
        with torch.no_grad():
            grid = mobilenet.features(x)[0].flatten(1).t()     # [1280, 7, 7] -> [49, 1280]
        attention = np.asarray(result["attention"], dtype=np.float64)
        yield pieces, on_7x7(attention, result["grid_height"], result["grid_width"]), grid


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--checkpoint", nargs="+", help="one checkpoint, or several: their ensemble")
    src.add_argument("--gguf")
    src.add_argument("--engine", metavar="GGUF")
    ap.add_argument("--cli", default=CLI)
    ap.add_argument("--features", default=FEATURE_DIR)
    ap.add_argument("--split", default="test", choices=["dev", "test"])
    ap.add_argument("--subset", type=int, default=0, help="only the split's first N images")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)

    mobilenet = mnv2.load_mobilenet_v2()
    steps = engine_steps(args, mobilenet) if args.engine else pytorch_steps(args)
    dog, other = {"mass": [], "area": [], "point": [], "peak": []}, []
    for pieces, attention, grid in steps:
        positions = [t for t, p in enumerate(pieces) if is_dog_piece(p)]
        if not positions:
            continue
        region = dog_region(dog_evidence(mobilenet.classifier, grid))
        t = positions[0]
        dog["mass"].append(float(attention[t][region].sum()))
        dog["area"].append(float(region.mean()))
        dog["point"].append(bool(region[int(np.argmax(attention[t]))]))
        dog["peak"].append(float(attention[t].max()))
        other.extend(float(attention[s][region].sum()) for s in range(len(pieces)) if s not in positions)
    n = len(dog["mass"])
    if n == 0:
        raise SystemExit("no caption names a dog: nothing to measure")
    report = {"captions_with_dog": n, "dog_mass": float(np.mean(dog["mass"])), "uniform_mass": float(np.mean(dog["area"])),
              "other_words_mass": float(np.mean(other)) if other else None,
              "pointing": float(np.mean(dog["point"])), "pointing_uniform": REGION_SHARE,
              "dog_peak": float(np.mean(dog["peak"]))}
    print(f"{n} {args.split} captions name a dog. Attention on the dog region ({REGION_SHARE:.0%} of the cells):")
    print(f"  when writing the dog word  {report['dog_mass']:.3f}   (uniform attention: {report['uniform_mass']:.3f})")
    if other:
        print(f"  for the caption's other words {report['other_words_mass']:.3f}")
    print(f"  pointing game: the peak cell is on the dog in {report['pointing']:.0%} (uniform: {REGION_SHARE:.0%})")
    print(f"  mean peak weight {report['dog_peak']:.3f} (uniform: {1 / attention.shape[1]:.3f}; on the 7x7 cells)")
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
