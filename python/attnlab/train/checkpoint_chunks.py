"""A training checkpoint's weights split into files under a size limit and joined again, bit for bit: how a model
trained on a machine that returns only small files (models/train_speech_gpu.sh) comes back.

    python3 -m attnlab.train.checkpoint_chunks split CHECKPOINT.pt PREFIX      -> PREFIX.0.pt, PREFIX.1.pt, ...
    python3 -m attnlab.train.checkpoint_chunks join PREFIX CHECKPOINT.pt

Only what an export and a fine-tuning start need travels: config, model (float32, as trained), state and meta;
never the optimizer. Chunk 0 holds everything but the weights that did not fit it.
"""
import argparse
import glob
import os
import sys

import torch

LIMIT_BYTES = 15 * 2**20
KEPT = ("config", "state", "meta")


def split(path, prefix, limit=LIMIT_BYTES):
    ck = torch.load(path, map_location="cpu", weights_only=False)   # its state holds plain Python objects
    chunks, size = [{}], 0
    for name, tensor in ck["model"].items():
        nbytes = tensor.numel() * tensor.element_size()
        if chunks[-1] and size + nbytes > limit:
            chunks.append({})
            size = 0
        chunks[-1][name] = tensor.detach().cpu().contiguous()
        size += nbytes
    for i, weights in enumerate(chunks):
        part = {"model": weights, "chunk": i, "chunks": len(chunks)}
        if i == 0:
            part.update({key: ck[key] for key in KEPT if key in ck})
        torch.save(part, f"{prefix}.{i}.pt")
    return len(chunks)


def join(prefix, out):
    paths = sorted(glob.glob(glob.escape(prefix) + ".*.pt"), key=lambda p: int(p.rsplit(".", 2)[1]))
    if not paths:
        raise SystemExit(f"no chunks {prefix}.N.pt")
    parts = [torch.load(p, map_location="cpu", weights_only=False) for p in paths]
    expected = parts[0]["chunks"]
    if len(parts) != expected or [part["chunk"] for part in parts] != list(range(expected)):
        raise SystemExit(f"{prefix}: {len(parts)} chunk files, the checkpoint was split into {expected}")
    ck = {key: parts[0][key] for key in KEPT if key in parts[0]}
    ck["model"] = {name: tensor for part in parts for name, tensor in part["model"].items()}
    torch.save(ck, out)
    return ck


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=("split", "join"))
    ap.add_argument("src")
    ap.add_argument("dst")
    args = ap.parse_args(argv)
    if args.action == "split":
        n = split(args.src, args.dst)
        print(f"{args.src} -> {n} chunks {args.dst}.N.pt")
    else:
        join(args.src, args.dst)
        print(f"{args.src}.N.pt -> {args.dst}")


if __name__ == "__main__":
    sys.exit(main())
