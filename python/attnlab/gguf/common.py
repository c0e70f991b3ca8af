"""What the GGUF exporters (export_rnn.py, export_transformer.py, export_caption.py) and the evaluators that read
their files back share: the tensor storage rules, the common metadata keys, and GGUF -> PyTorch weights.

Storage rules (the C++ loaders rely on them):
    1-D tensors (biases, norms, gains)           f32 always
    matrices under --dtype q8_0                  q8_0 when the innermost dimension % 32 == 0 (a Q8_0 block is 32
                                                 values along a row), otherwise f16
    matrices under --dtype f16 / f32             as asked
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_writer import QK8_0, dequantize_q8_0, read_gguf  # noqa: E402

EXPORT_DTYPES = ("f32", "f16", "q8_0")


def check_export_dtype(dtype, option="--dtype"):
    if dtype not in EXPORT_DTYPES:
        raise ValueError(f"{option} must be f32, f16 or q8_0, got {dtype!r}")


def export_parser(description):
    """The exporters' shared flags: --checkpoint, --dtype, --out (scripts add their own after these)."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--dtype", default="f16", choices=EXPORT_DTYPES)
    ap.add_argument("--out", required=True)
    return ap


def report_written(path, counts, what="tensors"):
    print(f"wrote {path}: {os.path.getsize(path) / 1e6:.2f} MB, {what} by type {counts}")


def translator_export_command(argv, description, export, default_root):
    """The translators' export command: export(checkpoint, dtype, out, root) -> tensor counts by type."""
    ap = export_parser(description)
    ap.add_argument("--root", default=default_root, help="repository root the tokenizer paths are relative to")
    args = ap.parse_args(argv)
    counts = export(args.checkpoint, args.dtype, args.out, args.root)
    report_written(args.out, counts)


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


def add_training_metadata(writer, state, score_key="attnlab.val_bleu"):
    """The model card's training time and best validation score, from a checkpoint's "state" when it has them
    (a best_bleu of -1 means no validation has run yet, so nothing is written)."""
    state = state or {}
    if "train_seconds" in state:
        writer.add_float32("attnlab.training_seconds", float(state["train_seconds"]))
    if state.get("best_bleu", -1) >= 0:
        writer.add_float32(score_key, float(state["best_bleu"]))


def read_gguf_tensors(path):
    """-> ({key: value}, {name: float32 array in PyTorch (row-major) shape}); f16 and q8_0 are widened exactly as
    the C++ engine reads them, so PyTorch can run the very weights the engine runs. i8 tensors come back as their
    integer values."""
    _, kvs, infos, data_start, data = read_gguf(path)
    tensors = {}
    for name, type_name, dims, offset in infos:
        shape = tuple(reversed(dims))              # GGUF lists the innermost dimension first
        count = int(np.prod(shape))
        start = data_start + offset
        if type_name == "f32":
            array = np.frombuffer(data, dtype="<f4", count=count, offset=start)
        elif type_name == "f16":
            array = np.frombuffer(data, dtype="<f2", count=count, offset=start).astype(np.float32)
        elif type_name == "i8":   # plain integers; the caller applies any scale (export_mobilenet.load_from_gguf)
            array = np.frombuffer(data, dtype="i1", count=count, offset=start)
        elif type_name == "q8_0":
            blocks = np.frombuffer(data, dtype=[("d", "<f2"), ("qs", "i1", (QK8_0,))], count=count // QK8_0,
                                   offset=start)
            array = dequantize_q8_0(blocks["d"], blocks["qs"])
        else:
            raise ValueError(f"{path}: tensor {name} has unsupported type {type_name}")
        tensors[name] = np.array(array, dtype=np.float32).reshape(shape)
    return {k: v for k, _, v in kvs}, tensors


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
