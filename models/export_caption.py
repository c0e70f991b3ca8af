#!/usr/bin/python3
"""Export a trained Show-Attend-Tell captioner (models/train_caption.py) as ONE GGUF file: the MobileNetV2 encoder
(models/export_mobilenet.py's add_mobilenet), the decoder and the caption tokenizer.

    /usr/bin/python3 models/export_caption.py --checkpoint /work/ckpt/captioner/best.pt \
        --dtype q8_0 --out models/weights/captioner.q8_0.gguf

Decoder tensors keep their PyTorch state_dict names (models/show_attend_tell.py has the equations). Matrices are
stored as --dtype (q8_0 falls back to f16 when the innermost dimension is not a multiple of 32); 1-D tensors are f32.

Metadata keys:
    general.architecture                   "attnlab.captioner"
    attnlab.task                           "caption"
    attnlab.captioner.vocab_size           V
    attnlab.captioner.feature_size         C (annotation width, 1280 for MobileNetV2's last layer)
    attnlab.captioner.grid_height / grid_width   the annotation grid (7 x 7); G = height * width
    attnlab.captioner.embedding_size       emb
    attnlab.captioner.hidden_size          H (LSTM)
    attnlab.captioner.attention_size       A (additive attention)
    attnlab.captioner.score                "additive"
    attnlab.captioner.gate                 "scalar" (beta = sigmoid(f_beta . h), one value per step)
    attnlab.captioner.deep_output          "linear" (Eq. 7, no activation; L_o tied to embed.weight)
    attnlab.captioner.annotations          "raw", or "centered": attention reads a_i - mean_i a_i
    attnlab.captioner.global_feature       "none", or "grid_mean": g = mean_i a_i (before centering) feeds
                                           relu(global_proj . g) [emb] to the LSTM at every step
    attnlab.captioner.max_length           default caption length limit, in tokens
    attnlab.captioner.encoder              "mobilenet_v2": tensors "encoder.layers.*", keys attnlab.mobilenet.*
                                           (models/export_mobilenet.py; its feature_layer gives the grid)
    attnlab.captioner.feature_layer        which encoder layer the grid comes from (e.g. "last")
    attnlab.training_seconds / attnlab.dev_bleu4   for the model card
    tokenizer.target.*                     models/tokenizer_gguf.py (flickr8k.en)
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from export_common import (add_model_identity, add_state_dict, add_training_metadata, check_export_dtype,  # noqa: E402
                           export_parser, report_written)
from gguf_writer import GGUFWriter  # noqa: E402
import show_attend_tell as sat  # noqa: E402
from tokenizer_gguf import add_tokenizer  # noqa: E402

ARCH = "attnlab.captioner"
ENCODER_PREFIX = "encoder."


def add_decoder(w, model, cfg, grid_h, grid_w, max_len, dtype="f16", global_is_grid_mean=False):
    """The decoder's keys and tensors (shared by the export and models/golden_caption.py's fixture).
    global_is_grid_mean: the decoder's global feature is the mean of its own grid (a 7x7 model reading the last
    layer), which the engine computes; any other global feature needs a second encoder output it does not have."""
    if cfg.global_dim and not (global_is_grid_mean and cfg.global_dim == cfg.feature_dim):
        raise ValueError("this decoder reads a global feature other than its grid's mean (a 14x14 model's "
                         "last-layer mean), which the C++ engine does not compute")
    if grid_h * grid_w != cfg.grid:
        raise ValueError(f"grid {grid_h}x{grid_w} does not match the config's G = {cfg.grid}")
    p = ARCH + "."
    w.add_uint32(p + "vocab_size", cfg.vocab)
    w.add_uint32(p + "feature_size", cfg.feature_dim)
    w.add_uint32(p + "grid_height", grid_h)
    w.add_uint32(p + "grid_width", grid_w)
    w.add_uint32(p + "embedding_size", cfg.emb)
    w.add_uint32(p + "hidden_size", cfg.hidden)
    w.add_uint32(p + "attention_size", cfg.attn_dim)
    w.add_string(p + "score", "additive")
    w.add_string(p + "gate", "scalar")
    w.add_string(p + "deep_output", "linear")
    w.add_string(p + "annotations", "centered" if cfg.center_grid else "raw")
    w.add_string(p + "global_feature", "grid_mean" if cfg.global_dim else "none")
    w.add_uint32(p + "max_length", max_len)
    return add_state_dict(w, model.state_dict(), dtype)


def export(checkpoint, dtype, out, root=ROOT, with_encoder=True):
    check_export_dtype(dtype)
    ck = torch.load(checkpoint, map_location="cpu")
    cfg = sat.Config(**ck["config"])
    meta, state = ck["meta"], ck.get("state")
    model = sat.ShowAttendTell(cfg)
    model.load_state_dict(ck["model"])
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    w = GGUFWriter(out, architecture=ARCH)
    add_model_identity(w, meta.get("name", "show-attend-tell-flickr8k"), "caption", target_language="en")
    counts = add_decoder(w, model, cfg, meta["grid_h"], meta["grid_w"], int(meta.get("max_len", 30)), dtype,
                         global_is_grid_mean=meta.get("feature_layer") == "last")
    p = ARCH + "."
    w.add_string(p + "feature_layer", meta.get("feature_layer", "last"))
    if with_encoder:
        from export_mobilenet import add_mobilenet
        import mobilenet_v2 as mnv2
        w.add_string(p + "encoder", "mobilenet_v2")
        layer = {49: mnv2.FEATURE_LAYER_7, 196: mnv2.FEATURE_LAYER_14}[cfg.grid]
        add_mobilenet(w, prefix=ENCODER_PREFIX, dtype=dtype, feature_layer=layer)
    add_training_metadata(w, state, score_key="attnlab.dev_bleu4")
    add_tokenizer(w, os.path.join(root, meta["spm"]), "target")
    w.write()
    return counts


def main(argv=None):
    ap = export_parser(__doc__)
    ap.add_argument("--no-encoder", action="store_true", help="decoder + tokenizer only (engine: caption_from_features)")
    ap.add_argument("--root", default=ROOT)
    args = ap.parse_args(argv)
    counts = export(args.checkpoint, args.dtype, args.out, args.root, with_encoder=not args.no_encoder)
    report_written(args.out, counts, "decoder tensors")


if __name__ == "__main__":
    main()
