#!/usr/bin/python3
"""Flickr8k test BLEU-1..4 of a captioner: a checkpoint (attnlab.train.caption) or an exported GGUF file
(attnlab.export caption; its decoder weights, dequantized exactly as the engine reads them, run in PyTorch on the
stored grids of attnlab.data.features).

    python3 -m attnlab.eval.caption --checkpoint /work/ckpt/captioner/best.pt --beam 3
    python3 -m attnlab.eval.caption --gguf models/weights/captioner.q8_0.gguf --beam 3
    python3 -m attnlab.eval.caption --engine models/weights/captioner.q8_0.gguf --beam 3

--engine runs the whole captioner in the C++ engine instead (`build/native/attnlab caption`, after npm run build):
the JPEG decoded by stb_image, resized and encoded by the engine's MobileNetV2, the decoder with the engine's
kernels (int8 GEMVs for q8_0), i.e. what the page computes.

BLEU: corpus BLEU-n, n = 1..4, without smoothing, on lower-cased 13a-tokenized text with the 5 cleaned reference
captions per image (models/flickr8k.py), the paper's setting. --split dev|test, --subset N for a quick look,
--out FILE writes one "image<TAB>caption" line per image.
"""
import argparse
import os
import subprocess
import sys

from attnlab import cpu_blas  # noqa: F401  (before torch: OpenBLAS's AVX kernels, see attnlab/cpu_blas.py)
import torch

from attnlab.data import flickr8k
from attnlab.data.captions import Data
from attnlab.eval.bleu import bleu_1_to_4
from attnlab.eval.search import caption_split
from attnlab.gguf import captioner
from attnlab.nn import show_attend_tell as sat
from attnlab.paths import CLI, FEATURE_DIR


def evaluate_engine(args):
    """BLEU-1..4 of the native CLI's captions of the split's images (all of them, or the first --subset)."""
    imgs = flickr8k.load_split(args.split)
    if args.subset:
        imgs = imgs[:args.subset]
    paths = [os.path.join(flickr8k.IMAGE_DIR, img) for img in imgs]
    ngram = [] if args.no_repeat_ngram is None else ["--no-repeat-ngram", str(args.no_repeat_ngram)]
    out = subprocess.run([args.cli, "caption", "--model", args.engine, "--beam", str(args.beam),
                          "--max-length", str(args.max_len), *ngram, *paths], check=True, capture_output=True,
                         text=True)
    hyps = out.stdout.splitlines()
    if len(hyps) != len(imgs):
        raise SystemExit(f"the CLI printed {len(hyps)} captions for {len(imgs)} images")
    scores = bleu_1_to_4(hyps, flickr8k.references(imgs, flickr8k.load_captions()))
    print(f"{args.split} ({len(imgs)} images, beam {args.beam}, engine): " +
          " ".join(f"BLEU-{n} {s:.2f}" for n, s in zip((1, 2, 3, 4), scores)))
    return scores


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--checkpoint", nargs="+", help="one checkpoint, or several: their ensemble")
    src.add_argument("--gguf")
    src.add_argument("--engine", metavar="GGUF", help="caption the split's JPEGs with the native CLI")
    ap.add_argument("--cli", default=CLI)
    ap.add_argument("--features", default=FEATURE_DIR)
    ap.add_argument("--split", default="test", choices=["dev", "test"])
    ap.add_argument("--subset", type=int, default=0)
    ap.add_argument("--beam", type=int, default=3)
    ap.add_argument("--max-len", type=int, default=30)
    ap.add_argument("--length-penalty", type=float, default=1.0,
                    help="beam ranking by sum log p / length^this (the engine uses 1; PyTorch rows only)")
    ap.add_argument("--out", help="write image<TAB>caption lines here")
    ap.add_argument("--no-repeat-ngram", type=int, default=None, metavar="N",
                    help="the search never repeats a token n-gram of this size (0: off). Default: the --gguf or "
                         "--engine file's attnlab.captioner.no_repeat_ngram; off for --checkpoint")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)

    if args.engine:
        return evaluate_engine(args)
    if args.checkpoint:
        model, no_repeat_ngram = sat.load_checkpoints(args.checkpoint), 0
    else:
        model, meta = captioner.load(args.gguf)
        no_repeat_ngram = meta.get("attnlab.captioner.no_repeat_ngram", 0)   # the search the engine runs
    if args.no_repeat_ngram is not None:
        no_repeat_ngram = args.no_repeat_ngram
    data = Data.for_model(model, args.features, args.max_len)
    hyps, imgs = caption_split(model, data, args.split, args.subset, args.beam, args.max_len,
                               length_penalty=args.length_penalty, no_repeat_ngram=no_repeat_ngram)
    if len(imgs) < len(flickr8k.load_split(args.split)) and not args.subset:
        print(f"warning: only {len(imgs)} {args.split} images have stored features", file=sys.stderr)
    scores = bleu_1_to_4(hyps, flickr8k.references(imgs, data.captions))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            for img, hyp in zip(imgs, hyps):
                f.write(f"{img}\t{hyp}\n")
    print(f"{args.split} ({len(imgs)} images, beam {args.beam}): " +
          " ".join(f"BLEU-{n} {s:.2f}" for n, s in zip((1, 2, 3, 4), scores)))
    return scores


if __name__ == "__main__":
    main()
