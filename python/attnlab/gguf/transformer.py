"""The Transformer translator's GGUF schema: write a trained checkpoint (attnlab.train.transformer) for the C++
engine, and load such a file back into PyTorch.

    python3 -m attnlab.export transformer --checkpoint /work/ckpt/transformer-en-de/best.pt \
        --dtype q8_0 --out models/weights/transformer-en-de.q8_0.gguf

Tensors keep their PyTorch state_dict names and shapes (attnlab.nn.transformer has the equations):
    src_embed.weight [V_src, d], tgt_embed.weight [V_tgt, d] (also the output projection, stored once)
    encoder.layers.<l>.{norm1,norm2}.{weight,bias}, .self_attn.{in_proj_weight [3d, d], in_proj_bias,
        out_proj.weight, out_proj.bias}, .ffn.ff1.{weight [ff, d], bias}, .ffn.ff2.{weight [d, ff], bias}
    encoder.norm.{weight,bias}
    decoder.layers.<l>.{norm1,norm2,norm3}.*, .self_attn.*, .cross_attn.*, .ffn.*; decoder.norm.*
Matrices are stored as --dtype (f32, f16 or q8_0; q8_0 needs the innermost dimension % 32 == 0, anything
else falls back to f16); 1-D tensors (biases, norms) are always f32. The sinusoidal table is not stored.

Metadata keys (docs/gguf.md, "Transformer"):
    general.architecture "attnlab.transformer", general.name, attnlab.task "translate",
    attnlab.source_language / target_language,
    attnlab.transformer.{source_vocab_size, target_vocab_size, d_model, heads, encoder_layers,
        decoder_layers, feed_forward_size, max_positions} (uint32), .norm ("pre"), .activation ("relu"),
        .layer_norm_epsilon (float32), .positions ("sinusoidal"), .embedding_scale ("sqrt_d_model"),
        .tied_output (true), .source_add_eos (true)
    attnlab.training_seconds / attnlab.val_bleu (when known), tokenizer.source.* / tokenizer.target.*
"""
import os

import torch

from attnlab.gguf.common import (add_model_identity, add_state_dict, add_training_corpus, add_training_metadata, check_export_dtype,
                                 load_translator)
from attnlab.gguf.tokenizer import add_tokenizer
from attnlab.gguf.writer import GGUFWriter
from attnlab.nn.transformer import Config, Transformer
from attnlab.paths import ROOT

ARCH = "attnlab.transformer"


def build_writer(out, cfg: Config, state_dict, meta, dtype, src_spm, tgt_spm, name=None, state=None):
    """A GGUFWriter holding the model (not yet written: callers may add tensors), and tensor counts by type."""
    check_export_dtype(dtype, "dtype")
    w = GGUFWriter(out, architecture=ARCH)
    add_model_identity(w, name or f"transformer-{meta['pair']}", "translate", meta["src_lang"], meta["tgt_lang"])
    add_training_corpus(w, meta)
    p = ARCH + "."
    for key, value in (("source_vocab_size", cfg.src_vocab), ("target_vocab_size", cfg.tgt_vocab),
                       ("d_model", cfg.d_model), ("heads", cfg.heads), ("encoder_layers", cfg.enc_layers),
                       ("decoder_layers", cfg.dec_layers), ("feed_forward_size", cfg.ff),
                       ("max_positions", cfg.max_positions)):
        w.add_uint32(p + key, value)
    w.add_string(p + "norm", cfg.norm)
    w.add_string(p + "activation", "relu")
    w.add_float32(p + "layer_norm_epsilon", 1e-5)
    w.add_string(p + "positions", "sinusoidal")
    w.add_string(p + "embedding_scale", "sqrt_d_model")
    w.add_bool(p + "tied_output", True)
    w.add_bool(p + "source_add_eos", bool(meta.get("source_add_eos", True)))
    add_training_metadata(w, state)
    counts = add_state_dict(w, state_dict, dtype)
    add_tokenizer(w, src_spm, "source")
    add_tokenizer(w, tgt_spm, "target")
    return w, counts


def write(checkpoint, dtype, out, root=ROOT):
    """checkpoint (a .pt path) -> out; tokenizer paths in it are relative to root. Returns tensor counts by type."""
    ck = torch.load(checkpoint, map_location="cpu")
    cfg = Config(**ck["config"])
    meta = ck["meta"]
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    w, counts = build_writer(out, cfg, ck["model"], meta, dtype, os.path.join(root, meta["src_spm"]),
                             os.path.join(root, meta["tgt_spm"]), state=ck.get("state"))
    w.write()
    return counts


def config_from_metadata(meta):
    """The Config build_writer() stored under ARCH."""
    p = ARCH + "."
    return Config(src_vocab=meta[p + "source_vocab_size"], tgt_vocab=meta[p + "target_vocab_size"],
                  d_model=meta[p + "d_model"], heads=meta[p + "heads"], enc_layers=meta[p + "encoder_layers"],
                  dec_layers=meta[p + "decoder_layers"], ff=meta[p + "feed_forward_size"],
                  max_positions=meta[p + "max_positions"], norm=meta[p + "norm"], dropout=0.0)


def load(path, ignore_prefix="test."):
    """A Transformer GGUF file -> (Transformer with its weights, f16/q8_0 dequantized, "src-tgt" pair). The test
    fixture (attnlab.golden.transformer) also holds golden outputs under "test.": skipped."""
    return load_translator(path, ARCH, Transformer, config_from_metadata, ignore_prefix)
