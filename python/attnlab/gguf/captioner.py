"""The captioner's GGUF schema: a trained Show-Attend-Tell captioner (attnlab.train.caption) as ONE file, the
MobileNetV2 encoder (attnlab.gguf.mobilenet's add_mobilenet), the decoder and the caption tokenizer (write); and
such a file's decoder back in PyTorch (load).

    python3 -m attnlab.export caption --checkpoint /work/ckpt/captioner/best.pt \
        --dtype q8_0 --out models/weights/captioner.q8_0.gguf

Decoder tensors keep their PyTorch state_dict names (attnlab.nn.show_attend_tell has the equations). Matrices are
stored as --dtype (q8_0 falls back to f16 when the innermost dimension is not a multiple of 32); 1-D tensors are f32.
The encoder is stored as --encoder-dtype: by default i8, the TFLite model's own 8-bit weights (exactly the floats
the training features came from, in half the bytes of f16); "same" follows --dtype.
A decoder with learned initial states (Config.init_from_image False) has zero, frozen init_h.weight / init_c.weight:
they are left out, and h_0 = tanh(init_h.bias), c_0 = tanh(init_c.bias).

--classifier also stores MobileNetV2's ImageNet classifier, at --dtype (f16 or q8_0; 2.6 or 1.4 MB): what the image
encoder recognises, which the Caption tab shows next to a caption from a captioner that knows only Flickr8k. An
exported file gets it without re-exporting its decoders (`python3 -m attnlab.export caption-classifier --gguf IN
--dtype q8_0 --out OUT`: add_classifier_to copies every value and tensor byte for byte).

--checkpoint (and --member) may also be an exported single-decoder captioner GGUF file: its decoder weights (as
stored, e.g. f16) are re-exported with this run's options, as when a file shipped before --encoder-dtype or
--no-repeat-ngram existed and its checkpoint is gone (load_source).

Ensembles (--member CKPT, repeatable): the decoders of several checkpoints over the same grid and tokenizer decode
as one (attnlab.nn.show_attend_tell's Ensemble: the mean of their next-word distributions, the mean of their
attention). Member 0 is --checkpoint, written exactly as a single model; member k >= 1 has its tensors under
"member<k>." and its own keys under attnlab.captioner.member<k>. (embedding_size, hidden_size, attention_size,
annotations, global_feature); the other keys are shared, and attnlab.captioner.ensemble_size holds the count.

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
    attnlab.captioner.no_repeat_ngram      (absent: 0, off) the search never emits a token that would repeat an
                                           n-gram of this size in the caption (attnlab.nn.decoding)
    attnlab.captioner.ensemble_size        number of decoders (absent: 1); see "Ensembles" above
    attnlab.captioner.encoder              "mobilenet_v2": tensors "encoder.layers.*", keys attnlab.mobilenet.*
                                           (attnlab.gguf.mobilenet; its feature_layer gives the grid)
    attnlab.captioner.feature_layer        which encoder layer the grid comes from (e.g. "last")
    attnlab.mobilenet.has_classifier       true when the file also holds MobileNetV2's ImageNet classifier
                                           (encoder.classifier.*, attnlab.mobilenet.labels): the engine then says
                                           what the encoder recognises in the same pass (CaptionOptions::recognize)
    attnlab.training_seconds / attnlab.dev_bleu4   for the model card
    tokenizer.target.*                     attnlab.gguf.tokenizer (flickr8k.en)
"""
import os

import torch

from attnlab.data.flickr8k import TOKENIZER_PATH
from attnlab.gguf.common import (add_model_identity, add_state_dict, add_training_metadata, check_export_dtype,
                                 is_gguf, load_gguf_weights)
from attnlab.gguf import mobilenet
from attnlab.gguf.mobilenet import add_mobilenet
from attnlab.gguf.reader import read_gguf_raw, read_gguf_tensors
from attnlab.gguf.tokenizer import add_tokenizer, read_spm_model
from attnlab.gguf.writer import DEFAULT_ALIGNMENT, GGUFWriter
from attnlab.nn import mobilenet_v2 as mnv2
from attnlab.nn import show_attend_tell as sat
from attnlab.paths import ROOT

ARCH = "attnlab.captioner"
ENCODER_PREFIX = "encoder."


def member_prefixes(member):
    """(metadata key prefix, tensor name prefix) of ensemble member `member` (0 keeps the single model's names)."""
    return (ARCH + ".", "") if member == 0 else (f"{ARCH}.member{member}.", f"member{member}.")


def add_decoder(w, model, cfg, grid_h, grid_w, max_len, dtype="f16", global_is_grid_mean=False, member=0):
    """One decoder's keys and tensors (shared by the export and attnlab.golden.caption's fixtures). Member 0 also
    writes the keys every member shares; a later member only its own sizes and variants, under member_prefixes.
    global_is_grid_mean: the decoder's global feature is the mean of its own grid (a 7x7 model reading the last
    layer), which the engine computes; any other global feature needs a second encoder output it does not have."""
    if cfg.global_dim and not (global_is_grid_mean and cfg.global_dim == cfg.feature_dim):
        raise ValueError("this decoder reads a global feature other than its grid's mean (a 14x14 model's "
                         "last-layer mean), which the C++ engine does not compute")
    if grid_h * grid_w != cfg.grid:
        raise ValueError(f"grid {grid_h}x{grid_w} does not match the config's G = {cfg.grid}")
    shared, own = ARCH + ".", member_prefixes(member)[0]
    first = member == 0   # (the keys keep the order of the single-model files, so the fixtures stay byte-identical)
    if first:
        w.add_uint32(shared + "vocab_size", cfg.vocab)
        w.add_uint32(shared + "feature_size", cfg.feature_dim)
        w.add_uint32(shared + "grid_height", grid_h)
        w.add_uint32(shared + "grid_width", grid_w)
    w.add_uint32(own + "embedding_size", cfg.emb)
    w.add_uint32(own + "hidden_size", cfg.hidden)
    w.add_uint32(own + "attention_size", cfg.attn_dim)
    if first:
        w.add_string(shared + "score", "additive")
        w.add_string(shared + "gate", "scalar")
        w.add_string(shared + "deep_output", "linear")
    w.add_string(own + "annotations", "centered" if cfg.center_grid else "raw")
    w.add_string(own + "global_feature", "grid_mean" if cfg.global_dim else "none")
    if first:
        w.add_uint32(shared + "max_length", max_len)
    state = model.state_dict()
    if not cfg.init_from_image:
        # h_0, c_0 are learned constants: W_h0, W_c0 are frozen zeros (attnlab.nn.show_attend_tell), and leaving them
        # out keeps a two-member f16 file under 25 MB. The engine then takes h_0 = tanh(b_h0), c_0 = tanh(b_c0).
        for name in ("init_h.weight", "init_c.weight"):
            if torch.count_nonzero(state[name]):
                raise ValueError(f"{name} should be zero in a decoder with learned initial states")
            del state[name]
    return add_state_dict(w, {member_prefixes(member)[1] + k: v for k, v in state.items()}, dtype)


def load_source(path, root=ROOT):
    """An attnlab.train.caption checkpoint, or the same fields rebuilt from an exported single-decoder GGUF file."""
    if not is_gguf(path):
        return torch.load(path, map_location="cpu")
    model, meta = load(path)
    if not isinstance(model, sat.ShowAttendTell):
        raise SystemExit(f"{path} holds an ensemble: re-export it from its members' checkpoints")
    p = ARCH + "."
    spm = TOKENIZER_PATH
    if meta.get("tokenizer.target.tokens") != read_spm_model(os.path.join(root, spm))["pieces"]:
        raise SystemExit(f"{path}: its tokenizer is not {spm}")
    cfg = model.cfg
    state = model.state_dict()
    if cfg.init_from_image and not any(torch.count_nonzero(state[k]) for k in ("init_h.weight", "init_c.weight")):
        cfg = sat.Config(**dict(cfg.to_dict(), init_from_image=False))   # zero W_h0, W_c0: learned constants
    run_state = {"train_seconds": meta["attnlab.training_seconds"]} if "attnlab.training_seconds" in meta else {}
    if "attnlab.dev_bleu4" in meta:
        run_state["best_bleu"] = meta["attnlab.dev_bleu4"]
    return {"config": cfg.to_dict(), "model": state, "state": run_state,
            "meta": {"grid_h": meta[p + "grid_height"], "grid_w": meta[p + "grid_width"], "spm": spm,
                     "feature_layer": meta.get(p + "feature_layer", "last"), "max_len": meta[p + "max_length"],
                     "name": meta.get("general.name", "show-attend-tell-flickr8k")}}


def write(checkpoints, dtype, out, root=ROOT, with_encoder=True, encoder_dtype="i8", no_repeat_ngram=0,
          classifier=False):
    """checkpoints: one path, or several whose decoders form an ensemble (attnlab.nn.show_attend_tell's Ensemble).
    encoder_dtype: "i8" (the TFLite integers), or f16 / q8_0 / f32 ("same": dtype)."""
    check_export_dtype(dtype)
    encoder_dtype = dtype if encoder_dtype == "same" else encoder_dtype
    if isinstance(checkpoints, str):
        checkpoints = [checkpoints]
    loaded = [load_source(path, root) for path in checkpoints]
    meta, state = loaded[0]["meta"], loaded[0].get("state")
    models = []
    for path, ck in zip(checkpoints, loaded):
        model = sat.ShowAttendTell(sat.Config(**ck["config"]))
        model.load_state_dict(ck["model"])
        if (ck["meta"]["grid_h"], ck["meta"]["grid_w"], ck["meta"]["spm"]) != (meta["grid_h"], meta["grid_w"], meta["spm"]):
            raise SystemExit(f"{path}: another grid or tokenizer than {checkpoints[0]}; cannot ensemble them")
        models.append(model)
    if len(models) > 1:
        sat.Ensemble(models)   # raises when the members do not fit together
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    w = GGUFWriter(out, architecture=ARCH)
    add_model_identity(w, meta.get("name", "show-attend-tell-flickr8k"), "caption", target_language="en")
    counts = {}
    for member, model in enumerate(models):
        for kind, n in add_decoder(w, model, model.cfg, meta["grid_h"], meta["grid_w"], int(meta.get("max_len", 30)),
                                   dtype, global_is_grid_mean=meta.get("feature_layer") == "last",
                                   member=member).items():
            counts[kind] = counts.get(kind, 0) + n
    p = ARCH + "."
    if len(models) > 1:
        w.add_uint32(p + "ensemble_size", len(models))
    if no_repeat_ngram:
        w.add_uint32(p + "no_repeat_ngram", no_repeat_ngram)
    w.add_string(p + "feature_layer", meta.get("feature_layer", "last"))
    if with_encoder:
        w.add_string(p + "encoder", "mobilenet_v2")
        layer = {49: mnv2.FEATURE_LAYER_7, 196: mnv2.FEATURE_LAYER_14}[models[0].cfg.grid]
        add_mobilenet(w, prefix=ENCODER_PREFIX, dtype=encoder_dtype, feature_layer=layer, classifier=classifier,
                      classifier_dtype=dtype)
    # An ensemble's training time is its members' total; its dev score is not any member's, so none is written.
    if len(loaded) > 1:
        state = {"train_seconds": sum(ck.get("state", {}).get("train_seconds", 0.0) for ck in loaded)}
    add_training_metadata(w, state, score_key="attnlab.dev_bleu4")
    add_tokenizer(w, os.path.join(root, meta["spm"]), "target")
    w.write()
    return counts


def add_classifier_to(path, out, dtype):
    """Copy captioner file `path` to `out` with MobileNetV2's ImageNet classifier added (stored as dtype); every
    other value and tensor is copied byte for byte. Returns the added bytes."""
    kvs, tensors = read_gguf_raw(path)
    meta = {key: value for key, _, _, value, _ in kvs}
    if meta.get("general.architecture") != ARCH:
        raise SystemExit(f"{path} is not a captioner ({meta.get('general.architecture')})")
    if meta.get(ARCH + ".encoder") != "mobilenet_v2":
        raise SystemExit(f"{path} has no image encoder (exported with --no-encoder)")
    if meta.get(mobilenet.KEY + "has_classifier"):
        raise SystemExit(f"{path} already holds the classifier")
    # The data section is laid out at the source's alignment, which the constructor records as general.alignment.
    w = GGUFWriter(out, alignment=meta.get("general.alignment", DEFAULT_ALIGNMENT))
    for key, type_name, element, value, payload in kvs:
        if key not in (mobilenet.KEY + "has_classifier", "general.alignment"):
            w.copy_value(key, type_name, element, value, payload)
    for tensor in tensors:
        w.copy_tensor(*tensor)
    before = sum(len(t[3]) for t in tensors)
    w.add_bool(mobilenet.KEY + "has_classifier", True)
    mobilenet.add_classifier(w, mnv2.load_mobilenet_v2(), meta[mobilenet.KEY + "tensor_prefix"], dtype)
    added = sum(n for *_, n in w.tensor_table()) - before
    w.write()
    return added


def load(path):
    """-> (the file's decoder, or the Ensemble of its decoders, with the file's weights; metadata dict)."""
    meta, tensors = read_gguf_tensors(path)
    p = ARCH + "."
    if meta.get("general.architecture") != ARCH:
        raise SystemExit(f"{path} is not a captioner ({meta.get('general.architecture')})")
    grid = meta[p + "grid_height"] * meta[p + "grid_width"]
    members = []
    for member in range(meta.get(p + "ensemble_size", 1)):
        own, prefix = member_prefixes(member)
        mine = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)} if prefix else tensors
        learned_init = "init_h.weight" not in mine   # left out by the export: frozen zeros
        cfg = sat.Config(vocab=meta[p + "vocab_size"], feature_dim=meta[p + "feature_size"], grid=grid,
                         emb=meta[own + "embedding_size"], hidden=meta[own + "hidden_size"],
                         attn_dim=meta[own + "attention_size"], dropout=0.0, init_from_image=not learned_init,
                         center_grid=meta.get(own + "annotations", "raw") == "centered",
                         global_dim=meta[p + "feature_size"] if meta.get(own + "global_feature", "none") == "grid_mean" else 0)
        model = sat.ShowAttendTell(cfg)
        if learned_init:
            mine = dict(mine, **{name: model.state_dict()[name].numpy() for name in ("init_h.weight", "init_c.weight")})
        load_gguf_weights(model, mine, path, ignore_unknown=True)   # the file also holds the image encoder
        members.append(model.eval())
    return (members[0] if len(members) == 1 else sat.Ensemble(members).eval()), meta
