#!/usr/bin/python3
"""Evaluate a Transformer translator on test2016 (or val), from a checkpoint OR a GGUF file.

    /usr/bin/python3 models/evaluate_transformer.py --model /work/ckpt/transformer-de-en/best.pt --beam 5
    /usr/bin/python3 models/evaluate_transformer.py --model models/weights/transformer-de-en.q8_0.gguf --beam 5

A GGUF file is dequantized (f16 / q8_0 -> f32) back into the PyTorch model, so its BLEU comes from the same
search code as the checkpoint's. Prints one JSON line:
    {"model", "pair", "split", "beam", "alpha", "lines", "bleu_13a", "bleu_lc_tok", "seconds"}
bleu_13a is sacreBLEU's default (cased, detokenized); bleu_lc_tok is lowercased + 13a-tokenized (models/bleu.py).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cpu_blas  # noqa: E402,F401  (before torch: OpenBLAS's AVX kernels, see models/cpu_blas.py)
import transformer  # noqa: E402
from train_transformer import translate  # noqa: E402
from translation import evaluate_translator, load_translator  # noqa: E402
from transformer import Config, Transformer  # noqa: E402

ARCH = "attnlab.transformer"


def config_from_metadata(meta, p):
    """The Config export_transformer.py wrote under prefix p ("attnlab.transformer.")."""
    return Config(src_vocab=meta[p + "source_vocab_size"], tgt_vocab=meta[p + "target_vocab_size"],
                  d_model=meta[p + "d_model"], heads=meta[p + "heads"], enc_layers=meta[p + "encoder_layers"],
                  dec_layers=meta[p + "decoder_layers"], ff=meta[p + "feed_forward_size"],
                  max_positions=meta[p + "max_positions"], norm=meta[p + "norm"], dropout=0.0)


def load_model(path):
    """A checkpoint or GGUF file -> (model, pair)."""
    return load_translator(path, transformer, Transformer, ARCH, config_from_metadata)


def main(argv=None):
    return evaluate_translator(argv, __doc__, load_model, translate)


if __name__ == "__main__":
    main()
