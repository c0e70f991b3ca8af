#!/usr/bin/python3
"""PyTorch CPU side of the translation benchmark (bench/bench_translate.mjs): eager mode, 1 thread, batch 1,
the same GGUF weights the engine runs (widened to f32 the way the engine widens them) and the same greedy loop as
bench/bench_translate.cpp (encoder once, decoder step, argmax, stop at EOS, at most int(1.5 |source| + 10) tokens).

    PYTHONPATH=python /usr/bin/python3 bench/bench_pytorch.py --model FILE.gguf --ids FILE [--limit N]

--ids: one sentence per line, its source ids (ending with EOS) separated by spaces. The LAST line printed is one
JSON object: {"model", "architecture", "sentences", "tokens", "steps", "encoder_ms", "per_token_ms", "total_ms",
"threads", "targets": [[ids]...]}.
"""
import argparse
import json
import os
import time

from attnlab import cpu_blas  # noqa: F401  (before torch: OpenBLAS's AVX kernels, or PyTorch is measured on SSE3 ones)
import torch

from attnlab.gguf import bahdanau, transformer
from attnlab.gguf.reader import read_gguf_tensors
from attnlab.nn.decoding import BOS_ID, EOS_ID
from attnlab.paths import ROOT


def read_ids(path, limit):
    with open(path) as f:
        rows = [[int(x) for x in line.split()] for line in f if line.strip()]
    return rows[:limit] if limit > 0 else rows


def load(path):
    """-> (architecture, model, encode(src) -> state, step(token, state) -> (logits, state))."""
    meta, _ = read_gguf_tensors(path)
    architecture = meta["general.architecture"]
    if architecture == bahdanau.ARCH:
        model, _ = bahdanau.load(path)
        model.eval()

        def encode(src):
            enc = model.encode(src, torch.tensor([src.size(1)]))
            return enc, enc.s0

        def step(token, state):
            enc, s = state
            logits, s, _, _ = model.decode_step(token, s, enc)
            return logits, (enc, s)
    elif architecture == transformer.ARCH:
        model, _ = transformer.load(path)
        model.eval()

        def encode(src):
            memory, pad, _ = model.encode(src)
            return model.start_state(memory, pad)

        def step(token, state):
            logits, state, _, _ = model.step(token, state)
            return logits, state
    else:
        raise ValueError(f"{path}: not a translator ({architecture})")
    return architecture, encode, step


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--ids", required=True)
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    architecture, encode, step = load(args.model)
    sentences = read_ids(args.ids, args.limit)
    encoder_s = decoder_s = 0.0
    steps = tokens = 0
    targets = []
    with torch.inference_mode():
        for ids in sentences:
            src = torch.tensor([ids])
            t0 = time.perf_counter()
            state = encode(src)
            encoder_s += time.perf_counter() - t0
            limit = int(1.5 * len(ids) + 10)
            token = torch.tensor([BOS_ID])
            out = []
            t0 = time.perf_counter()
            for _ in range(limit):
                logits, state = step(token, state)
                steps += 1
                token = logits.argmax(-1)
                if int(token) == EOS_ID:
                    break
                out.append(int(token))
            decoder_s += time.perf_counter() - t0
            tokens += len(out)
            targets.append(out)
    print(json.dumps({"model": os.path.relpath(os.path.abspath(args.model), ROOT), "architecture": architecture,
                      "threads": torch.get_num_threads(), "torch": torch.__version__, "sentences": len(sentences),
                      "tokens": tokens, "steps": steps, "encoder_ms": 1000 * encoder_s / len(sentences),
                      "per_token_ms": 1000 * decoder_s / max(1, steps), "total_ms": 1000 * (encoder_s + decoder_s),
                      "targets": targets}))


if __name__ == "__main__":
    main()
