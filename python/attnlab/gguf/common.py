"""What the schemas (attnlab.gguf.bahdanau, .transformer, .captioner) share: the tensor storage rules, the common
metadata keys, and GGUF -> PyTorch weights.

Storage rules (the C++ loaders rely on them):
    1-D tensors (biases, norms, gains)           f32 always
    matrices under --dtype q8_0                  q8_0 when the innermost dimension % 32 == 0 (a Q8_0 block is 32
                                                 values along a row), otherwise f16
    matrices under --dtype f16 / f32             as asked
"""
import torch

from attnlab.gguf.reader import read_gguf_tensors
from attnlab.gguf.writer import QK8_0

EXPORT_DTYPES = ("f32", "f16", "q8_0")


def check_export_dtype(dtype, option="--dtype"):
    if dtype not in EXPORT_DTYPES:
        raise ValueError(f"{option} must be f32, f16 or q8_0, got {dtype!r}")


def tensor_dtype(array, dtype):
    """Storage type of one tensor under the --dtype policy (module docstring)."""
    if array.ndim < 2:
        return "f32"
    if dtype == "q8_0" and array.shape[-1] % QK8_0 != 0:
        return "f16"
    return dtype


def add_state_dict(writer, state_dict, dtype):
    """Every tensor under its state_dict name and PyTorch shape -> {storage type: tensor count}."""
    counts = {}
    for name, tensor in state_dict.items():
        array = tensor.float().numpy()
        stored = tensor_dtype(array, dtype)
        counts[stored] = counts.get(stored, 0) + 1
        writer.add_tensor(name, array, dtype=stored)
    return counts


def add_model_identity(writer, name, task, source_language=None, target_language=None):
    """general.name, attnlab.task and the languages the engine shows (a captioner has no source language)."""
    writer.add_string("general.name", name)
    writer.add_string("attnlab.task", task)
    if source_language is not None:
        writer.add_string("attnlab.source_language", source_language)
    if target_language is not None:
        writer.add_string("attnlab.target_language", target_language)


TRAINING_CORPUS_KEY = "attnlab.training_corpus"


def add_training_corpus(writer, meta):
    """attnlab.training_corpus (e.g. "broad"), for files trained on another corpus than their pair's own: the
    evaluators read the tokenizers and the default test set of that corpus. Older files have no key."""
    if meta.get("corpus"):
        writer.add_string(TRAINING_CORPUS_KEY, meta["corpus"])


def add_training_metadata(writer, state, score_key="attnlab.val_bleu"):
    """The model card's training time and best validation score, from a checkpoint's "state" when it has them
    (a best_bleu of -1 means no validation has run yet, so nothing is written)."""
    state = state or {}
    if "train_seconds" in state:
        writer.add_float32("attnlab.training_seconds", float(state["train_seconds"]))
    if state.get("best_bleu", -1) >= 0:
        writer.add_float32(score_key, float(state["best_bleu"]))


def check_architecture(meta, architecture, path):
    if meta.get("general.architecture") != architecture:
        raise ValueError(f"{path}: architecture is {meta.get('general.architecture')!r}, expected {architecture!r}")


def load_gguf_weights(model, tensors, path, ignore_unknown=False):
    """Loads the file's tensors into `model`. Every model tensor must be in the file; tensors the model does not
    have are an error unless `ignore_unknown` (a captioner file also holds its image encoder)."""
    expected = model.state_dict()
    missing = sorted(set(expected) - set(tensors))
    extra = [] if ignore_unknown else sorted(set(tensors) - set(expected))
    if missing or extra:
        raise ValueError(f"{path}: tensors missing {missing}, unexpected {extra}")
    model.load_state_dict({k: torch.from_numpy(tensors[k]) for k in expected})
    return model


def is_gguf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"GGUF"


def load_translator(path, architecture, model_class, config_from_metadata, ignore_prefix=None):
    """A translator GGUF file -> (PyTorch model with the file's weights, f16/q8_0 dequantized, "src-tgt" pair).
    config_from_metadata(meta) -> the family's Config; tensors under ignore_prefix (a fixture's test data) are
    skipped."""
    meta, tensors = read_gguf_tensors(path)
    check_architecture(meta, architecture, path)
    model = model_class(config_from_metadata(meta))
    if ignore_prefix:
        tensors = {k: v for k, v in tensors.items() if not k.startswith(ignore_prefix)}
    load_gguf_weights(model, tensors, path)
    return model, f"{meta['attnlab.source_language']}-{meta['attnlab.target_language']}"
