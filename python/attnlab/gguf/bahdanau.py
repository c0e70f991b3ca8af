"""The Bahdanau RNN translator's GGUF schema: write a trained checkpoint (attnlab.train.rnn) for the C++ engine,
and load such a file back into PyTorch.

    python3 -m attnlab.export rnn --checkpoint /work/ckpt/bahdanau-en-de/best.pt \
        --dtype q8_0 --out models/weights/bahdanau-en-de.q8_0.gguf

Tensors keep their PyTorch state_dict names and shapes (see attnlab.nn.seq2seq_rnn for the equations).
Matrices are stored as --dtype (f16 or q8_0; q8_0 needs the innermost dimension % 32 == 0, anything
else falls back to f16); 1-D tensors (biases, the cosine gain) are always f32. The output projection
is tied to `tgt_embed.weight` and is not stored twice.

Metadata keys:
    general.architecture                 "attnlab.bahdanau"
    general.name                         e.g. "bahdanau-en-de-additive"
    attnlab.task                         "translate"
    attnlab.source_language / target_language   "en", "de", "zh"
    attnlab.bahdanau.source_vocab_size / target_vocab_size
    attnlab.bahdanau.embedding_size      emb
    attnlab.bahdanau.encoder_hidden_size per direction (memory is twice that)
    attnlab.bahdanau.decoder_hidden_size
    attnlab.bahdanau.attention_size      additive attention's A (written for every score)
    attnlab.bahdanau.score               "additive" | "dot" | "general" | "cosine"
    attnlab.bahdanau.deep_output_activation  "tanh"
    attnlab.bahdanau.tied_output         true (logits = tgt_embed.weight . t + out_bias)
    attnlab.bahdanau.source_add_eos      true (the source ids end with EOS)
    attnlab.training_seconds / attnlab.val_bleu   for the model card
    tokenizer.source.* / tokenizer.target.*       attnlab.gguf.tokenizer
"""
import os

import torch

from attnlab.gguf.common import (add_model_identity, add_state_dict, add_training_corpus, add_training_metadata, check_export_dtype,
                                 load_translator)
from attnlab.gguf.tokenizer import add_tokenizer
from attnlab.gguf.writer import GGUFWriter
from attnlab.nn.seq2seq_rnn import Config, Seq2SeqRNN
from attnlab.paths import ROOT

ARCH = "attnlab.bahdanau"


def write(checkpoint, dtype, out, root=ROOT):
    """checkpoint (a .pt path) -> out; tokenizer paths in it are relative to root. Returns tensor counts by type."""
    check_export_dtype(dtype)
    ck = torch.load(checkpoint, map_location="cpu")
    cfg = Config(**ck["config"])
    meta = ck["meta"]
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    w = GGUFWriter(out, architecture=ARCH)
    add_model_identity(w, f"bahdanau-{meta['pair']}-{cfg.score}", "translate", meta["src_lang"], meta["tgt_lang"])
    add_training_corpus(w, meta)
    p = ARCH + "."
    w.add_uint32(p + "source_vocab_size", cfg.src_vocab)
    w.add_uint32(p + "target_vocab_size", cfg.tgt_vocab)
    w.add_uint32(p + "embedding_size", cfg.emb)
    w.add_uint32(p + "encoder_hidden_size", cfg.enc_hidden)
    w.add_uint32(p + "decoder_hidden_size", cfg.dec_hidden)
    w.add_uint32(p + "attention_size", cfg.attn_dim)
    w.add_string(p + "score", cfg.score)
    w.add_string(p + "deep_output_activation", "tanh")
    w.add_bool(p + "tied_output", True)
    w.add_bool(p + "source_add_eos", bool(meta.get("source_add_eos", True)))
    add_training_metadata(w, ck.get("state"))
    counts = add_state_dict(w, ck["model"], dtype)
    add_tokenizer(w, os.path.join(root, meta["src_spm"]), "source")
    add_tokenizer(w, os.path.join(root, meta["tgt_spm"]), "target")
    w.write()
    return counts


def config_from_metadata(meta):
    """The Config write() stored under ARCH."""
    p = ARCH + "."
    return Config(src_vocab=meta[p + "source_vocab_size"], tgt_vocab=meta[p + "target_vocab_size"],
                  emb=meta[p + "embedding_size"], enc_hidden=meta[p + "encoder_hidden_size"],
                  dec_hidden=meta[p + "decoder_hidden_size"], attn_dim=meta[p + "attention_size"],
                  score=meta[p + "score"], dropout=0.0)


def load(path):
    """A Bahdanau GGUF file -> (Seq2SeqRNN with its weights, f16/q8_0 dequantized, "src-tgt" pair)."""
    return load_translator(path, ARCH, Seq2SeqRNN, config_from_metadata)
