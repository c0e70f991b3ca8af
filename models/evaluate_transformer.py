#!/usr/bin/python3
"""Evaluate a Transformer translator on test2016 (or val), from a checkpoint OR a GGUF file.

    /usr/bin/python3 models/evaluate_transformer.py --model /work/ckpt/transformer-de-en/best.pt --beam 5
    /usr/bin/python3 models/evaluate_transformer.py --model models/weights/transformer-de-en.q8_0.gguf --beam 5

A GGUF file is dequantized (f16 / q8_0 -> f32) back into the PyTorch model, so its BLEU comes from the same
search code as the checkpoint's. Prints one JSON line:
    {"model", "pair", "split", "beam", "alpha", "lines", "bleu_13a", "bleu_lc_tok", "seconds"}
bleu_13a is sacreBLEU's default (cased, detokenized); bleu_lc_tok is lowercased + 13a-tokenized (models/bleu.py).
"""
import argparse
import json
import os
import sys
import time

import sentencepiece as spm
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from evaluate_rnn import gguf_tensors, scores_for  # noqa: E402
from train_rnn import pair_paths, read_lines  # noqa: E402
from train_transformer import PAIRS, translate  # noqa: E402
from transformer import Config, Transformer  # noqa: E402

ARCH = "attnlab.transformer"


def load_gguf_model(path):
    """-> (model, pair) with the GGUF's (dequantized) weights."""
    meta, tensors = gguf_tensors(path)
    if meta.get("general.architecture") != ARCH:
        raise ValueError(f"{path}: architecture is {meta.get('general.architecture')!r}, expected {ARCH!r}")
    p = ARCH + "."
    cfg = Config(src_vocab=meta[p + "source_vocab_size"], tgt_vocab=meta[p + "target_vocab_size"],
                 d_model=meta[p + "d_model"], heads=meta[p + "heads"], enc_layers=meta[p + "encoder_layers"],
                 dec_layers=meta[p + "decoder_layers"], ff=meta[p + "feed_forward_size"],
                 max_positions=meta[p + "max_positions"], norm=meta[p + "norm"], dropout=0.0)
    model = Transformer(cfg)
    expected = model.state_dict()
    missing, extra = sorted(set(expected) - set(tensors)), sorted(set(tensors) - set(expected))
    if missing or extra:
        raise ValueError(f"{path}: tensors missing {missing}, unexpected {extra}")
    model.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()})
    return model, f"{meta['attnlab.source_language']}-{meta['attnlab.target_language']}"


def load_checkpoint_model(path):
    ck = torch.load(path, map_location="cpu")
    model = Transformer(Config(**ck["config"]))
    model.load_state_dict(ck["model"])
    return model, ck["meta"]["pair"]


def load_model(path):
    with open(path, "rb") as f:
        magic = f.read(4)
    return load_gguf_model(path) if magic == b"GGUF" else load_checkpoint_model(path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="checkpoint (.pt) or GGUF file")
    ap.add_argument("--split", default="test", choices=["val", "test"])
    ap.add_argument("--beam", type=int, default=5, help="1 = greedy")
    ap.add_argument("--alpha", type=float, default=1.0, help="length normalization: score / len^alpha")
    ap.add_argument("--max-len-a", type=float, default=1.5)
    ap.add_argument("--max-len-b", type=float, default=10)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--limit", type=int, default=0, help="evaluate only the first N lines")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--hyps", help="write the translations here, one per line")
    ap.add_argument("--root", default=ROOT)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    model, pair = load_model(args.model)
    if pair not in PAIRS:
        raise ValueError(f"model pair {pair!r} is not one of {PAIRS}")
    model.eval()
    paths = pair_paths(pair, args.root)
    sp_src = spm.SentencePieceProcessor(model_file=paths["src_spm"])
    sp_tgt = spm.SentencePieceProcessor(model_file=paths["tgt_spm"])
    src, ref = (read_lines(p) for p in paths[args.split])
    if args.limit:
        src, ref = src[:args.limit], ref[:args.limit]
    t0 = time.time()
    hyps = translate(model, sp_src, sp_tgt, src, batch_size=args.batch_size, beam=args.beam, alpha=args.alpha,
                     max_len_a=args.max_len_a, max_len_b=args.max_len_b)
    seconds = time.time() - t0
    if args.hyps:
        with open(args.hyps, "w", encoding="utf-8") as f:
            f.write("".join(h + "\n" for h in hyps))
    result = {"model": args.model, "pair": pair, "split": args.split, "beam": args.beam, "alpha": args.alpha,
              "lines": len(src)}
    result.update(scores_for(paths["tgt_lang"], hyps, ref))
    result["seconds"] = round(seconds, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
