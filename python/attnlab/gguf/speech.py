"""The speech recognizer's GGUF schema: write a trained Listen, Attend and Spell model (attnlab.nn.listen_attend_spell)
for the C++ engine (src/attnlab/models/speech_recognizer.hpp), and load such a file back into PyTorch.

    write(model_or_checkpoint, "q8_0", "models/weights/speech.q8_0.gguf")

Tensors keep their PyTorch state_dict names and shapes (the module docstring of listen_attend_spell has the
equations), including the `feature_scale` buffer. Matrices are stored as dtype (f32, f16 or q8_0; q8_0 needs the
innermost dimension % 32 == 0, anything else falls back to f16: the location filters `attn.F.weight` [K, 1, width]
and `attn.W_f.weight` [A, K] usually do); 1-D tensors (biases, feature_scale) are always f32. The CTC head
(`ctc.*`) only shapes the listener during training and is not stored.

Metadata keys:
    general.architecture                     "attnlab.las"
    general.name                             e.g. "speech-las"
    attnlab.task                             "transcribe"
    attnlab.las.feature_size                 MFCCs per input frame (13)
    attnlab.las.encoder_hidden_size          E, per direction (annotations are 2E wide)
    attnlab.las.decoder_hidden_size          H
    attnlab.las.embedding_size               emb
    attnlab.las.attention_size               A
    attnlab.las.location_filters             K
    attnlab.las.location_width               the location filters' width (odd)
    attnlab.las.vocab_size                   V = len(characters)
    attnlab.las.frame_rate                   input frames per second (100)
    attnlab.las.time_reduction               input frames per annotation (4: two pair-stacking listener layers)
    attnlab.las.characters                   string array [V]: id -> "<pad>", "<unk>", "<s>", "</s>", " ", "'", "a".."z"
    attnlab.training_seconds / attnlab.val_cer   for the model card, when the checkpoint's state has them
"""
import os

import torch

from attnlab.gguf.common import add_model_identity, add_state_dict, check_architecture, check_export_dtype
from attnlab.gguf.reader import read_gguf_tensors
from attnlab.gguf.writer import GGUFWriter
from attnlab.nn.listen_attend_spell import VOCAB, Config, ListenAttendSpell

ARCH = "attnlab.las"
FRAME_RATE = 100        # attnlab.audio.features: 10 ms hop
TIME_REDUCTION = 4      # two listener layers, each stacking frame pairs
TRAINING_ONLY = ("ctc.",)


def _model_and_state(model_or_checkpoint):
    """A ListenAttendSpell, a checkpoint dict or a .pt path -> (model in eval mode, training state dict or None)."""
    if isinstance(model_or_checkpoint, ListenAttendSpell):
        return model_or_checkpoint.eval(), None
    ck = model_or_checkpoint
    if isinstance(ck, (str, os.PathLike)):
        ck = torch.load(ck, map_location="cpu")
    model = ListenAttendSpell(Config(**ck["config"]))
    model.load_state_dict(ck["model"])
    return model.eval(), ck.get("state")


def write(model_or_checkpoint, dtype, out, name="speech-las"):
    """A ListenAttendSpell or its checkpoint (dict or .pt path with "config" and "model") -> out.
    Returns tensor counts by storage type."""
    check_export_dtype(dtype, "dtype")
    model, state = _model_and_state(model_or_checkpoint)
    cfg = model.cfg
    if cfg.vocab != len(VOCAB):
        raise ValueError(f"the model has {cfg.vocab} outputs but the character table has {len(VOCAB)}")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    w = GGUFWriter(out, architecture=ARCH)
    add_model_identity(w, name, "transcribe")
    p = ARCH + "."
    w.add_uint32(p + "feature_size", cfg.feat_dim)
    w.add_uint32(p + "encoder_hidden_size", cfg.enc_hidden)
    w.add_uint32(p + "decoder_hidden_size", cfg.dec_hidden)
    w.add_uint32(p + "embedding_size", cfg.emb)
    w.add_uint32(p + "attention_size", cfg.attn_dim)
    w.add_uint32(p + "location_filters", cfg.loc_filters)
    w.add_uint32(p + "location_width", cfg.loc_width)
    w.add_uint32(p + "vocab_size", cfg.vocab)
    w.add_uint32(p + "frame_rate", FRAME_RATE)
    w.add_uint32(p + "time_reduction", TIME_REDUCTION)
    w.add_array(p + "characters", list(VOCAB), "string")
    state = state or {}
    if "train_seconds" in state:
        w.add_float32("attnlab.training_seconds", float(state["train_seconds"]))
    if state.get("best_cer", -1) >= 0:
        w.add_float32("attnlab.val_cer", float(state["best_cer"]))
    exported = {k: v for k, v in model.state_dict().items() if not k.startswith(TRAINING_ONLY)}
    counts = add_state_dict(w, exported, dtype)
    w.write()
    return counts


def config_from_metadata(meta):
    """The Config write() stored under ARCH (dropout 0: the model is for inference)."""
    p = ARCH + "."
    if meta.get(p + "frame_rate") != FRAME_RATE or meta.get(p + "time_reduction") != TIME_REDUCTION:
        raise ValueError(f"frame_rate {meta.get(p + 'frame_rate')} / time_reduction {meta.get(p + 'time_reduction')}: "
                         f"ListenAttendSpell reads {FRAME_RATE} frames/s and reduces them by {TIME_REDUCTION}")
    if tuple(meta[p + "characters"]) != VOCAB:
        raise ValueError("the file's character table is not attnlab.nn.listen_attend_spell.VOCAB")
    return Config(feat_dim=meta[p + "feature_size"], enc_hidden=meta[p + "encoder_hidden_size"],
                  dec_hidden=meta[p + "decoder_hidden_size"], emb=meta[p + "embedding_size"],
                  attn_dim=meta[p + "attention_size"], loc_filters=meta[p + "location_filters"],
                  loc_width=meta[p + "location_width"], vocab=meta[p + "vocab_size"], dropout=0.0)


def load(path):
    """A speech GGUF file -> ListenAttendSpell (eval mode) with its weights, f16/q8_0 dequantized as the engine reads
    them. The CTC head is not in the file: it is zero (it does not take part in decoding)."""
    meta, tensors = read_gguf_tensors(path)
    check_architecture(meta, ARCH, path)
    model = ListenAttendSpell(config_from_metadata(meta))
    expected = model.state_dict()
    needed = {k for k in expected if not k.startswith(TRAINING_ONLY)}
    missing, extra = sorted(needed - set(tensors)), sorted(set(tensors) - needed)
    if missing or extra:
        raise ValueError(f"{path}: tensors missing {missing}, unexpected {extra}")
    weights = {k: torch.from_numpy(tensors[k]) if k in needed else torch.zeros_like(v) for k, v in expected.items()}
    model.load_state_dict(weights)
    return model.eval()
