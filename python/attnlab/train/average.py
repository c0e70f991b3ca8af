#!/usr/bin/python3
"""Average the weights of a translator's last epochs into one checkpoint (Vaswani et al. 2017, section 6.1).

    python3 -m attnlab.train.average --dir /work/ckpt/transformer-de-en --last 5 \
        --out /work/ckpt/transformer-de-en/averaged.pt
    python3 -m attnlab.train.average --files A.f16.gguf B.f16.gguf C.pt --out /tmp/averaged.pt

Reads OUT/epoch-<n>.pt, which the trainers keep for the last --keep-epochs epochs (attnlab.train.translator,
attnlab.train.caption), takes the --last N highest epochs (or --epochs a b c), and writes their element-wise mean in
best.pt's layout, so attnlab.export and attnlab.eval take it as they take best.pt. The averaged model often
translates better than any single epoch late in training, when the epochs wander around one minimum; whether it
does here is for attnlab.eval.translate --split val to say, not assumed.

--files averages named checkpoints or translator GGUF files (attnlab.export's output, f16 is enough): epochs whose
checkpoints are gone but whose weights were shipped or carried (models/training) can still be averaged.
"""
import argparse
import os
import re

import torch

from attnlab.data.pairs import pair_paths
from attnlab.gguf.common import is_gguf
from attnlab.paths import ROOT
from attnlab.train.loop import atomic_save
from attnlab.train.translator import checkpoint_from_gguf, translation_meta


def epoch_files(directory):
    """{epoch: path} of the epoch-<n>.pt files in directory."""
    found = {}
    for name in os.listdir(directory):
        m = re.fullmatch(r"epoch-(\d+)\.pt", name)
        if m:
            found[int(m.group(1))] = os.path.join(directory, name)
    return found


def checkpoint_from_file(path):
    """A .pt checkpoint as saved, or a translator GGUF file as a checkpoint attnlab.export can write again: its
    weights, configuration (dropout 0: files record none) and the meta of its pair and training corpus."""
    if not is_gguf(path):
        return torch.load(path, map_location="cpu")
    ck = checkpoint_from_gguf(path, dropout=0.0)
    pair, corpus = ck["meta"]["pair"], ck["meta"]["corpus"]
    ck["meta"] = translation_meta(argparse.Namespace(pair=pair, data_root=ROOT), pair_paths(pair, ROOT, corpus))
    ck["state"] = {"best_bleu": -1.0}
    return ck


def average(paths):
    """The checkpoint of paths[-1] with the mean of all their models' tensors."""
    checkpoints = [checkpoint_from_file(p) for p in paths]
    first = checkpoints[0]
    for path, ck in zip(paths, checkpoints):
        if ck["config"] != first["config"] or ck["model"].keys() != first["model"].keys():
            raise SystemExit(f"{path}: another model configuration than {paths[0]}; cannot average them")
    model = {}
    for name, tensor in first["model"].items():
        if tensor.is_floating_point():
            model[name] = torch.stack([ck["model"][name].double() for ck in checkpoints]).mean(0).to(tensor.dtype)
        else:
            model[name] = checkpoints[-1]["model"][name]
    result = dict(checkpoints[-1])
    result["model"] = model
    # The average has not been validated: no validation BLEU goes into an export of it.
    result["state"] = dict(result.get("state", {}), best_bleu=-1.0)
    result["averaged_from"] = [os.path.basename(p) for p in paths]
    return result


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = ap.add_mutually_exclusive_group(required=True)
    source.add_argument("--dir", help="a training OUT directory holding epoch-<n>.pt files")
    source.add_argument("--files", nargs="+", metavar="FILE", help="average these checkpoints or translator GGUF files")
    ap.add_argument("--last", type=int, default=5, help="average the N highest epochs found")
    ap.add_argument("--epochs", type=int, nargs="+", help="average exactly these epochs instead")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if args.files:
        atomic_save(average(args.files), args.out)
        print(f"average_checkpoints: {len(args.files)} files -> {args.out}")
        return
    found = epoch_files(args.dir)
    wanted = sorted(args.epochs) if args.epochs else sorted(found)[-args.last:]
    missing = [e for e in wanted if e not in found]
    if not wanted or missing:
        raise SystemExit(f"{args.dir}: no epoch file for epoch(s) {missing or 'any'} (have {sorted(found)})")
    atomic_save(average([found[e] for e in wanted]), args.out)
    print(f"average_checkpoints: epochs {wanted} -> {args.out}")


if __name__ == "__main__":
    main()
