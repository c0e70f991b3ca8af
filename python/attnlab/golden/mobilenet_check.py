#!/usr/bin/python3
"""Conversion check for the TFLite -> PyTorch MobileNetV2 (attnlab.nn.tflite_mobilenet, attnlab.nn.mobilenet_v2).

1. Sanity classes on license-clean photos (Debian python3-skimage): chelsea -> a cat class, coffee -> espresso.
   (The data README's parrot / hot dog photos are not shipped anywhere we can read.)
2. Dog check: among the Flickr8k images whose five captions ALL mention a dog (dog, dogs, puppy, puppies, pup,
   pups, doggy, doggie), the share whose top-5 classes include a dog class (ImageNet 151..268, i.e. label
   indices 152..269 in the 1,001-label file where 0 is 'background') must be >= 80%.
3. Writes tests/fixtures/mobilenet/dog_check.json: the full-run percentage, a sample of image ids (ids only,
   never photos) with PyTorch's top-5 label indices, and the float logits of 3 of them, so that
   tests/python/test_mobilenet.py can re-check the conversion when ../shared/data is present.

    python3 -m attnlab.golden.mobilenet_check [--limit N] [--no-write]
"""
import argparse
import json
import os
import re
import sys
import time

import numpy as np
import torch

from attnlab.eval.grounding import DOG_LABELS, DOG_WORDS
from attnlab.nn import mobilenet_v2 as mnv2
from attnlab.nn import tflite_mobilenet
from attnlab.paths import FIXTURES, ROOT, SHARED_DATA

FLICKR_DIR = os.path.join(SHARED_DATA, "flickr8k")
FIXTURE = os.path.join(FIXTURES, "mobilenet", "dog_check.json")
SAMPLE_SIZE = 60
LOGIT_IMAGES = 3


def dog_image_ids(token_path=os.path.join(FLICKR_DIR, "Flickr8k.token.txt")):
    captions = {}
    with open(token_path, encoding="utf-8") as f:
        for line in f:
            key, _, caption = line.rstrip("\n").partition("\t")
            image = key.split("#")[0]
            captions.setdefault(image, []).append(set(re.findall(r"[a-z]+", caption.lower())))
    images_dir = os.path.join(FLICKR_DIR, "images")
    return sorted(image for image, words in captions.items()
                  if len(words) == 5 and all(w & DOG_WORDS for w in words)
                  and os.path.exists(os.path.join(images_dir, image)))


def top5_and_logits(model, image_ids, batch=32):
    tops, logits_all = [], []
    for start in range(0, len(image_ids), batch):
        ids = image_ids[start:start + batch]
        x = mnv2.to_tensor([mnv2.preprocess(mnv2.load_image(os.path.join(FLICKR_DIR, "images", i))) for i in ids])
        with torch.no_grad():
            logits = model.logits(x)
        logits_all.append(logits.numpy())
        tops.extend(torch.topk(logits, 5, dim=1).indices.tolist())
    return tops, np.concatenate(logits_all)


def is_dog(top5):
    return any(c in DOG_LABELS for c in top5)


def sanity(model, labels):
    from skimage import data
    expected = {"chelsea": ("Egyptian cat", "tabby, tabby cat", "tiger cat"), "coffee": ("espresso",)}
    ok = True
    for name, allowed in expected.items():
        x = mnv2.to_tensor([mnv2.preprocess(getattr(data, name)())])
        with torch.no_grad():
            p = model.classify(x)[0]
        top = int(p.argmax())
        good = labels[top] in allowed
        ok &= good
        print(f"sanity {name}: {labels[top]} {float(p[top]):.3f} {'ok' if good else 'WRONG'}")
    return ok


def write_fixture(fixture, path=FIXTURE):
    """JSON with one sample / logit row per line (diff-friendly, small)."""
    lines = ["{"]
    for key in ("description", "dog_labels", "full_run"):
        lines.append(f" {json.dumps(key)}: {json.dumps(fixture[key])},")
    for key in ("sample", "logits"):
        rows = [f"  {json.dumps(row)}" for row in fixture[key]]
        lines.append(f" {json.dumps(key)}: [\n" + ",\n".join(rows) + "\n ]" + ("," if key == "sample" else ""))
    lines.append("}")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=0, help="check only the first N dog images")
    parser.add_argument("--no-write", action="store_true", help="do not write the fixture")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    model = mnv2.load_mobilenet_v2()
    labels = tflite_mobilenet.read_labels()
    ok = sanity(model, labels)

    ids = dog_image_ids()
    if args.limit:
        ids = ids[:args.limit]
    started = time.time()
    tops, logits = top5_and_logits(model, ids)
    hits = sum(is_dog(t) for t in tops)
    share = 100.0 * hits / len(ids)
    print(f"dog check: {hits}/{len(ids)} = {share:.2f}% of all-five-captions-say-dog Flickr8k images have a dog "
          f"class in the top 5 ({time.time() - started:.0f} s)")
    ok &= share >= 80.0

    if not args.no_write and not args.limit:
        rng = np.random.default_rng(8)
        picked = sorted(rng.choice(len(ids), size=min(SAMPLE_SIZE, len(ids)), replace=False).tolist())
        fixture = {
            "description": "MobileNetV2 conversion check (attnlab.golden.mobilenet_check): Flickr8k image ids whose five "
                           "captions all mention a dog, with the converted PyTorch model's top-5 label indices "
                           "(1,001-label file, 0 = background; dog classes are 152..269). Ids only, no photos.",
            "dog_labels": [DOG_LABELS.start, DOG_LABELS.stop - 1],
            "full_run": {"images": len(ids), "dog_in_top5": hits, "percent": round(share, 2)},
            "sample": [{"id": ids[i], "top5": tops[i]} for i in picked],
            "logits": [{"id": ids[i], "logits": [round(float(v), 5) for v in logits[i]]}
                       for i in picked[:LOGIT_IMAGES]],
        }
        os.makedirs(os.path.dirname(FIXTURE), exist_ok=True)
        write_fixture(fixture)
        print(f"wrote {os.path.relpath(FIXTURE, ROOT)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
