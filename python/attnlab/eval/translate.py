#!/usr/bin/python3
"""Evaluate a translator (Bahdanau RNN or Transformer) on its pair's test set, from a checkpoint OR a GGUF file.

    python3 -m attnlab.eval.translate --model /work/ckpt/bahdanau-en-de/best.pt --beam 5
    python3 -m attnlab.eval.translate --model models/weights/transformer-de-en.q8_0.gguf --beam 5

The family comes from the file, as the engine's Model::open decides it: a GGUF's general.architecture
(attnlab.bahdanau, attnlab.transformer), a checkpoint's config. A GGUF file is dequantized (f16 / q8_0 -> f32)
back into the PyTorch model, so f16 and q8_0 BLEU come from exactly the same search code as the checkpoint's.
Prints one JSON line:
    {"model", "pair", "corpus", "split", "beam", "alpha", "lines", "bleu_13a", "bleu_lc_tok", "seconds"}
(for Chinese "bleu_char" and "chrf" in place of the two word BLEUs).
bleu_13a is sacreBLEU's default (cased, detokenized); bleu_lc_tok is lowercased + 13a-tokenized (attnlab.eval.bleu);
bleu_char is character BLEU and chrf chrF2. --hyps FILE writes the translations. The test split is test2016 for
Multi30k, test for cmn.
"""
from attnlab import cpu_blas  # noqa: F401  (before torch: OpenBLAS's AVX kernels, see attnlab/cpu_blas.py)
import argparse
import dataclasses
import json
import time

import torch

from attnlab.data.pairs import add_split_options, load_tokenizers, pair_paths, read_split
from attnlab.eval.bleu import scores_for
from attnlab.eval.search import translate_lines
from attnlab.gguf import bahdanau, transformer
from attnlab.gguf.common import TRAINING_CORPUS_KEY, is_gguf
from attnlab.gguf.reader import read_gguf
from attnlab.nn import seq2seq_rnn
from attnlab.nn import transformer as transformer_nn
from attnlab.paths import ROOT

# general.architecture -> (the schema that reads the file, the model family that searches)
FAMILIES = {bahdanau.ARCH: (bahdanau, seq2seq_rnn), transformer.ARCH: (transformer, transformer_nn)}


def architecture(path):
    """general.architecture of a GGUF file."""
    return next((v for k, _, v in read_gguf(path)[1] if k == "general.architecture"), None)


def training_corpus(path):
    """The corpus a translator was trained on (its tokenizers), or None for its pair's own."""
    if is_gguf(path):
        return next((v for k, _, v in read_gguf(path)[1] if k == TRAINING_CORPUS_KEY), None)
    return torch.load(path, map_location="cpu")["meta"].get("corpus")


def load_translator(path):
    """A checkpoint (.pt) or GGUF file -> (model in eval mode, its family module, "src-tgt" pair)."""
    if is_gguf(path):
        arch = architecture(path)
        if arch not in FAMILIES:
            raise SystemExit(f"{path}: architecture {arch!r} is not a translator (expected one of {sorted(FAMILIES)})")
        schema, family = FAMILIES[arch]
        model, pair = schema.load(path)
    else:
        ck = torch.load(path, map_location="cpu")
        family = next((f for f in (seq2seq_rnn, transformer_nn)
                       if set(ck["config"]) == {field.name for field in dataclasses.fields(f.Config)}), None)
        if family is None:
            raise SystemExit(f"{path}: config {sorted(ck['config'])} is neither a Bahdanau RNN's nor a Transformer's")
        model_class = family.Seq2SeqRNN if family is seq2seq_rnn else family.Transformer
        model = model_class(family.Config(**ck["config"]))
        model.load_state_dict(ck["model"])
        pair = ck["meta"]["pair"]
    return model.eval(), family, pair


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="checkpoint (.pt) or GGUF file")
    add_split_options(ap)
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
    model, family, pair = load_translator(args.model)
    paths = pair_paths(pair, args.root, training_corpus(args.model), args.corpus)
    sp_src, sp_tgt = load_tokenizers(paths)
    src, ref = read_split(paths, args.split, args.limit)
    t0 = time.time()
    hyps = translate_lines(family, model, sp_src, sp_tgt, src, batch_size=args.batch_size, beam=args.beam,
                           alpha=args.alpha, max_len_a=args.max_len_a, max_len_b=args.max_len_b)
    seconds = time.time() - t0
    if args.hyps:
        with open(args.hyps, "w", encoding="utf-8") as f:
            f.write("".join(h + "\n" for h in hyps))
    result = {"model": args.model, "pair": pair, "corpus": paths["data_corpus"], "split": args.split,
              "beam": args.beam, "alpha": args.alpha, "lines": len(src)}
    result.update(scores_for(paths["tgt_lang"], hyps, ref))
    result["seconds"] = round(seconds, 1)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
