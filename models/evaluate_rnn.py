#!/usr/bin/python3
"""Evaluate a Bahdanau RNN translator on the test set, from a checkpoint OR a GGUF file.

    /usr/bin/python3 models/evaluate_rnn.py --model /work/ckpt/bahdanau-en-de/best.pt --beam 5
    /usr/bin/python3 models/evaluate_rnn.py --model models/weights/bahdanau-en-de.q8_0.gguf --beam 5

A GGUF file is dequantized (f16 / q8_0 -> f32) back into the PyTorch model, so f16 and q8_0 BLEU
come from exactly the same search code as the checkpoint's. Prints one JSON line:
    {"model", "pair", "split", "beam", "alpha", "lines", "bleu_13a", "bleu_lc_tok", ["bleu_char", "chrf"], "seconds"}
bleu_13a is sacreBLEU's default (cased, detokenized); bleu_lc_tok is lowercased + 13a-tokenized (see bleu.py);
for Chinese targets bleu_char (character BLEU) and chrF are added. --hyps FILE writes the translations.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import sentencepiece as spm
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import bleu  # noqa: E402
from gguf_writer import QK8_0, read_gguf  # noqa: E402
from seq2seq_rnn import Config, Seq2SeqRNN  # noqa: E402
from train_rnn import PAIRS, pair_paths, read_lines, translate  # noqa: E402

ARCH = "attnlab.bahdanau"


def gguf_tensors(path):
    """-> (metadata dict, {name: float32 numpy array in PyTorch shape})."""
    _, kvs, tensors, data_start, data = read_gguf(path)
    meta = {k: v for k, _, v in kvs}
    out = {}
    for name, type_name, dims, offset in tensors:
        shape = tuple(reversed(dims))
        n = int(np.prod(shape))
        start = data_start + offset
        if type_name == "f32":
            arr = np.frombuffer(data, "<f4", n, start)
        elif type_name == "f16":
            arr = np.frombuffer(data, "<f2", n, start).astype(np.float32)
        elif type_name == "q8_0":
            blocks = np.frombuffer(data, [("d", "<f2"), ("qs", "i1", (QK8_0,))], n // QK8_0, start)
            arr = blocks["d"].astype(np.float32)[:, None] * blocks["qs"].astype(np.float32)
        else:
            raise ValueError(f"{path}: tensor {name} has unsupported type {type_name}")
        out[name] = np.array(arr, dtype=np.float32).reshape(shape)
    return meta, out


def load_gguf_model(path):
    """-> (model, pair) with the GGUF's (dequantized) weights."""
    meta, tensors = gguf_tensors(path)
    if meta.get("general.architecture") != ARCH:
        raise ValueError(f"{path}: architecture is {meta.get('general.architecture')!r}, expected {ARCH!r}")
    p = ARCH + "."
    cfg = Config(src_vocab=meta[p + "source_vocab_size"], tgt_vocab=meta[p + "target_vocab_size"],
                 emb=meta[p + "embedding_size"], enc_hidden=meta[p + "encoder_hidden_size"],
                 dec_hidden=meta[p + "decoder_hidden_size"], attn_dim=meta[p + "attention_size"],
                 score=meta[p + "score"], dropout=0.0)
    model = Seq2SeqRNN(cfg)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(tensors))
    extra = sorted(set(tensors) - set(expected))
    if missing or extra:
        raise ValueError(f"{path}: tensors missing {missing}, unexpected {extra}")
    model.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()})
    pair = f"{meta['attnlab.source_language']}-{meta['attnlab.target_language']}"
    return model, pair


def load_checkpoint_model(path):
    ck = torch.load(path, map_location="cpu")
    cfg = Config(**ck["config"])
    model = Seq2SeqRNN(cfg)
    model.load_state_dict(ck["model"])
    return model, ck["meta"]["pair"]


def load_model(path):
    with open(path, "rb") as f:
        magic = f.read(4)
    return load_gguf_model(path) if magic == b"GGUF" else load_checkpoint_model(path)


def scores_for(tgt_lang, hyps, refs):
    out = {"bleu_13a": bleu.bleu_13a(hyps, refs), "bleu_lc_tok": bleu.bleu_lc_tok(hyps, refs)}
    if tgt_lang == "zh":
        out["bleu_char"] = bleu.bleu_char(hyps, refs)
        out["chrf"] = bleu.chrf(hyps, refs)
    return {k: round(v, 2) for k, v in out.items()}


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
        raise ValueError(f"model pair {pair!r} is not one of {sorted(PAIRS)}")
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
