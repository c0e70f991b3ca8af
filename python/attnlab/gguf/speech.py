"""The speech recognizer's GGUF schema: write a trained Listen, Attend and Spell model (attnlab.nn.listen_attend_spell)
for the C++ engine (src/attnlab/models/speech_recognizer.hpp), and load such a file back into PyTorch.

    write(model_or_checkpoint, "q8_0", "models/weights/speech.q8_0.gguf")

Tensors keep their PyTorch state_dict names and shapes (the module docstring of listen_attend_spell has the
equations), including the `feature_scale` buffer. Matrices are stored as dtype (f32, f16 or q8_0; q8_0 needs the
innermost dimension % 32 == 0, anything else falls back to f16: the location filters `attn.F.weight` [K, 1, width]
and `attn.W_f.weight` [A, K] usually do); 1-D tensors (biases, feature_scale) are always f32. The CTC head
(`ctc.weight` [V, 2E], `ctc.bias` [V]) is stored with them: the engine's joint CTC/attention search
(attnlab.nn.joint_decoding) reads it. A file without it (written before it was kept, or with ctc=False) still
loads and decodes with attention alone. With `lm`, the character language model (attnlab.nn.char_lm) is stored
too, its tensors prefixed `lm.` (`lm.embed.weight`, `lm.gru.*_l0`, `lm.out.*`): the search adds
lm_weight * log p_lm to each hypothesis (shallow fusion).

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
    attnlab.las.time_reduction               input frames per annotation, 2^L for L pair-stacking listener layers
                                             (4: two, the shipped model's)
    attnlab.las.characters                   string array [V]: id -> "<pad>", "<unk>", "<s>", "</s>", " ", "'", "a".."z"
    attnlab.las.ctc_weight                   float32, only with the CTC head: the decoding weight lambda of the joint
                                             score (1 - lambda) log p_att + lambda log p_ctc (default: the training
                                             loss's CTC weight; the engine takes 0.3 where the head has no key)
    attnlab.las.lm_embedding_size            only with the LM: its character embedding
    attnlab.las.lm_hidden_size               its GRU's hidden size
    attnlab.las.lm_weight                    float32: beta, the LM's weight in the search (0..MAX_LM_WEIGHT)
    attnlab.training_seconds / attnlab.val_cer   for the model card, when the checkpoint's state has them
"""
import os

import torch

from attnlab.gguf.common import add_model_identity, add_state_dict, check_architecture, check_export_dtype, is_gguf
from attnlab.gguf.reader import read_gguf_tensors
from attnlab.gguf.writer import GGUFWriter
from attnlab.nn.char_lm import CharLM, LMConfig
from attnlab.nn.listen_attend_spell import MAX_LISTENER_LAYERS, VOCAB, Config, ListenAttendSpell

ARCH = "attnlab.las"
FRAME_RATE = 100        # attnlab.audio.features: 10 ms hop
CTC_HEAD = ("ctc.",)
DEFAULT_CTC_WEIGHT = 0.3   # the training loss's default (attnlab.train.speech --ctc-weight)
LM_PREFIX = "lm."
DEFAULT_LM_WEIGHT = 0.1        # the shipped file's, the best pooled on the dev sets (models/speech-las.md)
MAX_LM_WEIGHT = 2.0        # the engine's kMaxSpeechLmWeight


def _model_and_state(model_or_checkpoint):
    """A ListenAttendSpell, a checkpoint dict or a .pt path -> (model in eval mode, training state dict or None,
    the training loss's CTC weight or None)."""
    if isinstance(model_or_checkpoint, ListenAttendSpell):
        return model_or_checkpoint.eval(), None, None
    ck = model_or_checkpoint
    if isinstance(ck, (str, os.PathLike)):
        ck = torch.load(ck, map_location="cpu")
    model = ListenAttendSpell(Config(**ck["config"]))
    model.load_state_dict(ck["model"])
    return model.eval(), ck.get("state"), ck.get("meta", {}).get("args", {}).get("ctc_weight")


def load_lm(lm_or_checkpoint):
    """A CharLM, its checkpoint dict, a .pt path (attnlab.train.char_lm) or a speech GGUF file holding one (its
    weights as stored: a recognizer retrained on its own keeps the shipped file's LM) -> CharLM in eval mode."""
    if isinstance(lm_or_checkpoint, CharLM):
        return lm_or_checkpoint.eval()
    ck = lm_or_checkpoint
    if isinstance(ck, (str, os.PathLike)) and is_gguf(ck):
        lm = load(ck).lm
        if lm is None:
            raise ValueError(f"{ck}: this speech file holds no language model (lm.*)")
        return lm
    if isinstance(ck, (str, os.PathLike)):
        ck = torch.load(ck, map_location="cpu")
    lm = CharLM(LMConfig(**ck["config"]))
    lm.load_state_dict(ck["model"])
    return lm.eval()


def write(model_or_checkpoint, dtype, out, name="speech-las", ctc=True, ctc_weight=None, lm=None, lm_weight=None):
    """A ListenAttendSpell or its checkpoint (dict or .pt path with "config" and "model") -> out.
    ctc: store the CTC head (False writes an attention-only file); ctc_weight: the decoding weight stored with it
    (None: the checkpoint's training CTC weight, else DEFAULT_CTC_WEIGHT). lm: a character language model (CharLM or
    its checkpoint) stored with it, lm_weight its decoding weight (None: DEFAULT_LM_WEIGHT). Returns tensor counts by
    storage type."""
    check_export_dtype(dtype, "dtype")
    model, state, trained_ctc_weight = _model_and_state(model_or_checkpoint)
    if ctc_weight is None:
        ctc_weight = DEFAULT_CTC_WEIGHT if trained_ctc_weight is None else float(trained_ctc_weight)
    if not 0.0 <= ctc_weight <= 1.0:
        raise ValueError(f"ctc_weight must be in [0, 1], got {ctc_weight}")
    cfg = model.cfg
    if cfg.vocab != len(VOCAB):
        raise ValueError(f"the model has {cfg.vocab} outputs but the character table has {len(VOCAB)}")
    if lm is None and lm_weight is not None:
        raise ValueError("lm_weight needs an lm")
    if lm is not None:
        lm = load_lm(lm)
        lm_weight = DEFAULT_LM_WEIGHT if lm_weight is None else float(lm_weight)
        if not 0.0 <= lm_weight <= MAX_LM_WEIGHT:
            raise ValueError(f"lm_weight must be in [0, {MAX_LM_WEIGHT}], got {lm_weight}")
        if lm.cfg.vocab != len(VOCAB):
            raise ValueError(f"the language model has {lm.cfg.vocab} outputs but the character table has {len(VOCAB)}")
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
    w.add_uint32(p + "time_reduction", cfg.time_reduction)
    w.add_array(p + "characters", list(VOCAB), "string")
    if ctc:
        w.add_float32(p + "ctc_weight", float(ctc_weight))
    if lm is not None:
        w.add_uint32(p + "lm_embedding_size", lm.cfg.emb)
        w.add_uint32(p + "lm_hidden_size", lm.cfg.hidden)
        w.add_float32(p + "lm_weight", lm_weight)
    state = state or {}
    if "train_seconds" in state:
        w.add_float32("attnlab.training_seconds", float(state["train_seconds"]))
    if state.get("best_cer", -1) >= 0:
        w.add_float32("attnlab.val_cer", float(state["best_cer"]))
    exported = {k: v for k, v in model.state_dict().items() if ctc or not k.startswith(CTC_HEAD)}
    if lm is not None:
        exported.update({LM_PREFIX + k: v for k, v in lm.state_dict().items()})
    counts = add_state_dict(w, exported, dtype)
    w.write()
    return counts


def config_from_metadata(meta):
    """The Config write() stored under ARCH (dropout 0: the model is for inference)."""
    p = ARCH + "."
    reductions = {2 ** layers: layers for layers in range(1, MAX_LISTENER_LAYERS + 1)}
    if meta.get(p + "frame_rate") != FRAME_RATE or meta.get(p + "time_reduction") not in reductions:
        raise ValueError(f"frame_rate {meta.get(p + 'frame_rate')} / time_reduction {meta.get(p + 'time_reduction')}: "
                         f"ListenAttendSpell reads {FRAME_RATE} frames/s and reduces them by 2^L, "
                         f"L = 1..{MAX_LISTENER_LAYERS} listener layers")
    if tuple(meta[p + "characters"]) != VOCAB:
        raise ValueError("the file's character table is not attnlab.nn.listen_attend_spell.VOCAB")
    return Config(feat_dim=meta[p + "feature_size"], enc_hidden=meta[p + "encoder_hidden_size"],
                  dec_hidden=meta[p + "decoder_hidden_size"], emb=meta[p + "embedding_size"],
                  attn_dim=meta[p + "attention_size"], loc_filters=meta[p + "location_filters"],
                  loc_width=meta[p + "location_width"], vocab=meta[p + "vocab_size"], dropout=0.0,
                  listener_layers=reductions[meta[p + "time_reduction"]])


def load(path):
    """A speech GGUF file -> ListenAttendSpell (eval mode) with its weights, f16/q8_0 dequantized as the engine reads
    them, and `ctc_weight`: the file's decoding weight (attnlab.las.ctc_weight, DEFAULT_CTC_WEIGHT where the head
    has no key), 0.0 for a file without the CTC head, whose ctc.* weights are then zero; `lm`: the file's character
    language model (CharLM, eval mode) or None, and `lm_weight` (0.0 without one)."""
    meta, tensors = read_gguf_tensors(path)
    check_architecture(meta, ARCH, path)
    model = ListenAttendSpell(config_from_metadata(meta))
    # Set past nn.Module's __setattr__: the LM is not a submodule, so the recognizer's state_dict stays its own.
    object.__setattr__(model, "lm", None)
    model.lm_weight = 0.0
    lm_tensors = {k[len(LM_PREFIX):]: tensors.pop(k) for k in list(tensors) if k.startswith(LM_PREFIX)}
    if lm_tensors:
        p = ARCH + "."
        lm = CharLM(LMConfig(vocab=meta[p + "vocab_size"], emb=meta[p + "lm_embedding_size"],
                             hidden=meta[p + "lm_hidden_size"], dropout=0.0))
        lm.load_state_dict({k: torch.from_numpy(v) for k, v in lm_tensors.items()})
        object.__setattr__(model, "lm", lm.eval())
        model.lm_weight = float(meta.get(p + "lm_weight", 0.0))
    expected = model.state_dict()
    has_head = any(k.startswith(CTC_HEAD) for k in tensors)
    needed = {k for k in expected if has_head or not k.startswith(CTC_HEAD)}
    missing, extra = sorted(needed - set(tensors)), sorted(set(tensors) - needed)
    if missing or extra:
        raise ValueError(f"{path}: tensors missing {missing}, unexpected {extra}")
    weights = {k: torch.from_numpy(tensors[k]) if k in needed else torch.zeros_like(v) for k, v in expected.items()}
    model.load_state_dict(weights)
    model.ctc_weight = float(meta.get(ARCH + ".ctc_weight", DEFAULT_CTC_WEIGHT)) if has_head else 0.0
    return model.eval()
