#!/usr/bin/python3
"""Why a captioner's attention is (or is not) uniform: the figures in models/captioner-flickr8k.md's runs table.

    python3 -m attnlab.eval.attention_diagnostics --checkpoint /work/ckpt/captioner-v2/best.pt

On the first --images test images (stored grids, attnlab.data.features), greedy decoding in PyTorch:
  beta      the gate sigmoid(w_beta . h_0 + b) at the first step, averaged over the images (near 0: the context
            is shut out and the caption comes from h_0 alone);
  entropy   each step's attention entropy divided by log(cells), averaged (1.0 = uniform);
  variation half the L1 distance between each step's attention and the caption's mean attention, averaged
            (near 0: every word looks at the same cells).
The last line is JSON.
"""
import argparse
import json
import math

import numpy as np
import torch

from attnlab.data.captions import Data
from attnlab.nn import show_attend_tell as sat
from attnlab.paths import FEATURE_DIR


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--features", default=FEATURE_DIR)
    ap.add_argument("--images", type=int, default=60)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    model = sat.load_checkpoint(args.checkpoint)
    data = Data.for_model(model, args.features, 30)
    images = min(args.images, len(data.images["test"]))
    with torch.no_grad():
        h0 = model.encode(data.inputs("test", slice(0, images))).s0[:, :model.cfg.hidden]
        beta = float(torch.sigmoid(model.f_beta(h0)).mean())
    entropy, variation = [], []
    for i in range(images):
        _, weights, _, _ = sat.greedy_with_attention(model, data.inputs("test", slice(i, i + 1)))
        w = weights.numpy()
        entropy.append(float((-(w * np.log(w + 1e-12)).sum(1)).mean() / math.log(w.shape[1])))
        variation.append(float(np.abs(w - w.mean(0)).sum(1).mean() / 2))
    report = {"images": images, "beta": beta, "entropy": float(np.mean(entropy)),
              "variation": float(np.mean(variation))}
    print(f"gate beta at the first step {beta:.3f}; attention entropy {report['entropy']:.3f} of uniform; "
          f"step-to-step variation {report['variation']:.3f}")
    print(json.dumps(report))
    return report


if __name__ == "__main__":
    main()
