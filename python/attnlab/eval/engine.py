#!/usr/bin/python3
"""Evaluate a GGUF translator THROUGH THE C++ ENGINE (the native CLI), not PyTorch.

    python3 -m attnlab.eval.engine --model models/weights/bahdanau-en-de.q8_0.gguf [--beam 5]

Runs `build/native/attnlab translate --model F [--beam N]` once in stdin mode over a split and scores the
output with attnlab.eval.bleu exactly as attnlab.eval.translate does (same JSON keys):
    {"model", "pair", "corpus", "split", "beam", "alpha", "lines", "bleu_13a", "bleu_lc_tok", "seconds"}
(for Chinese "bleu_char" and "chrf" in place of the two word BLEUs).
The pair comes from the GGUF metadata (attnlab.source_language / attnlab.target_language); the default split is
the test split of that pair (test2016 for Multi30k, test for cmn). alpha is reported as null: the engine's beam
search applies its own length normalization (the CLI has no option for it). This evaluates what the engine
ships, so f16 and q8_0 differ by the engine's own kernels (e.g. the int8 Q8_0 GEMVs), which PyTorch does not model.
"""
import argparse
import json
import os
import subprocess
import time

from attnlab.data.pairs import add_split_options, pair_paths, read_split
from attnlab.eval.bleu import scores_for
from attnlab.gguf.common import TRAINING_CORPUS_KEY
from attnlab.gguf.reader import read_gguf_tensors
from attnlab.paths import CLI, ROOT


def model_pair(path):
    """The GGUF's language pair, "en-de"."""
    meta, _ = read_gguf_tensors(path)
    try:
        return f"{meta['attnlab.source_language']}-{meta['attnlab.target_language']}"
    except KeyError as e:
        raise SystemExit(f"{path}: no {e.args[0]} in the GGUF metadata; not an attnlab translator?")


def engine_lines(cli, model, lines, beam, extra=()):
    """The CLI's output line for each of `lines` (non-empty: the CLI rejects empty ones), one process, stdin mode."""
    cmd = [cli, "translate", "--model", model, "--beam", str(beam), *extra]
    text = "".join(line.replace("\r", " ") + "\n" for line in lines)
    proc = subprocess.run(cmd, input=text.encode("utf-8"), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode('utf-8', 'replace')}")
    outputs = proc.stdout.decode("utf-8").split("\n")
    if outputs and outputs[-1] == "":
        outputs.pop()
    if len(outputs) != len(lines):
        raise SystemExit(f"the engine returned {len(outputs)} lines for {len(lines)} inputs")
    return outputs


def engine_translate(cli, model, lines, beam):
    """Translations of `lines` by the CLI in one process (stdin mode, one output line per input line).
    Empty source lines are not sent (the CLI rejects them) and translate to ""."""
    todo = [i for i, line in enumerate(lines) if line.strip()]
    hyps = [""] * len(lines)
    for i, out in zip(todo, engine_lines(cli, model, [lines[i] for i in todo], beam)):
        hyps[i] = out
    return hyps


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="GGUF file")
    add_split_options(ap)
    ap.add_argument("--beam", type=int, default=1, help="1 = greedy")
    ap.add_argument("--limit", type=int, default=0, help="evaluate only the first N lines")
    ap.add_argument("--cli", default=CLI)
    ap.add_argument("--hyps", help="write the translations here, one per line")
    ap.add_argument("--root", default=ROOT)
    args = ap.parse_args(argv)
    if not os.path.exists(args.cli):
        raise SystemExit(f"{args.cli} is missing: run scripts/build.sh --only native first")
    pair = model_pair(args.model)
    meta, _ = read_gguf_tensors(args.model)
    paths = pair_paths(pair, args.root, meta.get(TRAINING_CORPUS_KEY), args.corpus)
    src, ref = read_split(paths, args.split, args.limit)
    t0 = time.time()
    hyps = engine_translate(args.cli, args.model, src, args.beam)
    seconds = time.time() - t0
    if args.hyps:
        with open(args.hyps, "w", encoding="utf-8") as f:
            f.write("".join(h + "\n" for h in hyps))
    result = {"model": args.model, "pair": pair, "corpus": paths["data_corpus"], "split": args.split,
              "beam": args.beam, "alpha": None, "lines": len(src)}
    result.update(scores_for(paths["tgt_lang"], hyps, ref))
    result["seconds"] = round(seconds, 1)
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
