#!/usr/bin/python3
"""Flickr8k test BLEU-1..4 of a captioner: a checkpoint (models/train_caption.py) or an exported GGUF file
(models/export_caption.py; its decoder weights, dequantized exactly as the engine reads them, run in PyTorch on the
stored grids of models/extract_features.py).

    /usr/bin/python3 models/evaluate_caption.py --checkpoint /work/ckpt/captioner/best.pt --beam 3
    /usr/bin/python3 models/evaluate_caption.py --gguf models/weights/captioner.q8_0.gguf --beam 3
    /usr/bin/python3 models/evaluate_caption.py --engine models/weights/captioner.q8_0.gguf --beam 3

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

import cpu_blas  # noqa: E402,F401  (before torch: OpenBLAS's AVX kernels, see models/cpu_blas.py)
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import flickr8k  # noqa: E402
import show_attend_tell as sat  # noqa: E402
from extract_features import FEATURE_DIR  # noqa: E402
from export_common import load_gguf_weights, read_gguf_tensors  # noqa: E402
from train_caption import Data, caption_split  # noqa: E402


def load_gguf_decoder(path):
    """-> (the file's decoder, or the Ensemble of its decoders, with the file's weights; metadata dict)."""
    from export_caption import member_prefixes
    meta, tensors = read_gguf_tensors(path)
    p = "attnlab.captioner."
    if meta.get("general.architecture") != "attnlab.captioner":
        raise SystemExit(f"{path} is not a captioner ({meta.get('general.architecture')})")
    grid = meta[p + "grid_height"] * meta[p + "grid_width"]
    members = []
    for member in range(meta.get(p + "ensemble_size", 1)):
        own, prefix = member_prefixes(member)
        mine = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)} if prefix else tensors
        learned_init = "init_h.weight" not in mine   # left out by the export: frozen zeros
        cfg = sat.Config(vocab=meta[p + "vocab_size"], feature_dim=meta[p + "feature_size"], grid=grid,
                         emb=meta[own + "embedding_size"], hidden=meta[own + "hidden_size"],
                         attn_dim=meta[own + "attention_size"], dropout=0.0, init_from_image=not learned_init,
                         center_grid=meta.get(own + "annotations", "raw") == "centered",
                         global_dim=meta[p + "feature_size"] if meta.get(own + "global_feature", "none") == "grid_mean" else 0)
        model = sat.ShowAttendTell(cfg)
        if learned_init:
            mine = dict(mine, **{name: model.state_dict()[name].numpy() for name in ("init_h.weight", "init_c.weight")})
        load_gguf_weights(model, mine, path, ignore_unknown=True)   # the file also holds the image encoder
        members.append(model.eval())
    return (members[0] if len(members) == 1 else sat.Ensemble(members).eval()), meta


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
    scores = flickr8k.bleu_1_to_4(hyps, flickr8k.references(imgs, flickr8k.load_captions()))
    print(f"{args.split} ({len(imgs)} images, beam {args.beam}, engine): " +
          " ".join(f"BLEU-{n} {s:.2f}" for n, s in zip((1, 2, 3, 4), scores)))
    return scores


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--checkpoint", nargs="+", help="one checkpoint, or several: their ensemble")
    src.add_argument("--gguf")
    src.add_argument("--engine", metavar="GGUF", help="caption the split's JPEGs with the native CLI")
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "native", "attnlab"))
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
        model, meta = load_gguf_decoder(args.gguf)
        no_repeat_ngram = meta.get("attnlab.captioner.no_repeat_ngram", 0)   # the search the engine runs
    if args.no_repeat_ngram is not None:
        no_repeat_ngram = args.no_repeat_ngram
    data = Data.for_model(model, args.features, args.max_len)
    hyps, imgs = caption_split(model, data, args.split, args.subset, args.beam, args.max_len,
                               length_penalty=args.length_penalty, no_repeat_ngram=no_repeat_ngram)
    if len(imgs) < len(flickr8k.load_split(args.split)) and not args.subset:
        print(f"warning: only {len(imgs)} {args.split} images have stored features", file=sys.stderr)
    scores = flickr8k.bleu_1_to_4(hyps, flickr8k.references(imgs, data.captions))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            for img, hyp in zip(imgs, hyps):
                f.write(f"{img}\t{hyp}\n")
    print(f"{args.split} ({len(imgs)} images, beam {args.beam}): " +
          " ".join(f"BLEU-{n} {s:.2f}" for n, s in zip((1, 2, 3, 4), scores)))
    return scores


if __name__ == "__main__":
    main()
