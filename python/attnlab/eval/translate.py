#!/usr/bin/python3
"""Evaluate a Bahdanau RNN translator on the test set, from a checkpoint OR a GGUF file.

    /usr/bin/python3 models/evaluate_rnn.py --model /work/ckpt/bahdanau-en-de/best.pt --beam 5
    /usr/bin/python3 models/evaluate_rnn.py --model models/weights/bahdanau-en-de.q8_0.gguf --beam 5

A GGUF file is dequantized (f16 / q8_0 -> f32) back into the PyTorch model, so f16 and q8_0 BLEU
come from exactly the same search code as the checkpoint's. Prints one JSON line:
    {"model", "pair", "split", "beam", "alpha", "lines", "bleu_13a", "bleu_lc_tok", "seconds"}
(for Chinese "bleu_char" and "chrf" in place of the two word BLEUs).
bleu_13a is sacreBLEU's default (cased, detokenized); bleu_lc_tok is lowercased + 13a-tokenized (see bleu.py);
bleu_char is character BLEU and chrf chrF2. --hyps FILE writes the translations.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cpu_blas  # noqa: E402,F401  (before torch: OpenBLAS's AVX kernels, see models/cpu_blas.py)
import seq2seq_rnn  # noqa: E402
from seq2seq_rnn import Config, Seq2SeqRNN  # noqa: E402
from train_rnn import translate  # noqa: E402
from translation import evaluate_translator, load_translator  # noqa: E402

ARCH = "attnlab.bahdanau"


def config_from_metadata(meta, p):
    """The Config export_rnn.py wrote under prefix p ("attnlab.bahdanau.")."""
    return Config(src_vocab=meta[p + "source_vocab_size"], tgt_vocab=meta[p + "target_vocab_size"],
                  emb=meta[p + "embedding_size"], enc_hidden=meta[p + "encoder_hidden_size"],
                  dec_hidden=meta[p + "decoder_hidden_size"], attn_dim=meta[p + "attention_size"],
                  score=meta[p + "score"], dropout=0.0)


def load_model(path):
    """A checkpoint or GGUF file -> (model, pair)."""
    return load_translator(path, seq2seq_rnn, Seq2SeqRNN, ARCH, config_from_metadata)


def main(argv=None):
    return evaluate_translator(argv, __doc__, load_model, translate)


if __name__ == "__main__":
    main()
