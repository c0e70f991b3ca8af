#!/usr/bin/python3
"""How well the engine's LOW_CONFIDENCE warning separates translations a model can make from those it cannot.

    PYTHONPATH=python /usr/bin/python3 -m attnlab.eval.confidence --model models/weights/bahdanau-en-de.f16.gguf \\
        [--corpus multi30k --corpus broad] [--split test] [--beam 4] [--limit 500]

Runs the native CLI (`translate --json`, stdin mode) over each corpus's split and prints, per corpus, one JSON line:
the share of sentences the engine flags LOW_CONFIDENCE, the sentence chrF2 (0..100) of flagged and unflagged
sentences, and quantiles of the per-token log-probability the warning reads (log p of the output and its end
token, divided by their count). A model's own test set is where the warning should stay quiet; another corpus's
(Tatoeba's everyday sentences for a Multi30k model) is where it should speak, on the outputs that are wrong.
"""
import argparse
import json
import os

import numpy as np

from attnlab.data.pairs import pair_paths, read_split
from attnlab.eval.bleu import chrf
from attnlab.eval.engine import engine_lines, model_pair
from attnlab.gguf.common import TRAINING_CORPUS_KEY
from attnlab.gguf.reader import read_gguf_tensors
from attnlab.paths import CLI, ROOT


def engine_results(cli, model, lines, beam):
    """The CLI's JSON result (`translate --json`) of each of `lines`, all non-empty, in order."""
    return [json.loads(line) for line in engine_lines(cli, model, lines, beam, ["--json"])]


def per_token(result):
    """What LOW_CONFIDENCE reads: log p ÷ the tokens it sums, the end token included where the search wrote it."""
    return result["log_probability"] / (len(result["target_ids"]) + (result["stop_reason"] == "eos"))


def summary(results, refs):
    flagged = np.array([any(w["code"] == "LOW_CONFIDENCE" for w in r["warnings"]) for r in results])
    scores = np.array([chrf([r["text"]], [ref]) for r, ref in zip(results, refs)])
    values = np.array([per_token(r) for r in results])

    def mean(x):
        return round(float(x.mean()), 2) if x.size else None
    return {"lines": len(results), "flagged_share": round(float(flagged.mean()), 4),
            "chrf_flagged": mean(scores[flagged]), "chrf_unflagged": mean(scores[~flagged]),
            "flagged_chrf_below_30": round(float((scores[flagged] < 30).mean()), 3) if flagged.any() else None,
            "log_p_per_token_quantiles": {q: round(float(np.quantile(values, q / 100)), 3) for q in (5, 25, 50, 75, 95)}}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="GGUF translator")
    ap.add_argument("--corpus", action="append", help="corpora whose split to run (default: multi30k and broad)")
    ap.add_argument("--split", default="test")
    ap.add_argument("--beam", type=int, default=4, help="the page's beam")
    ap.add_argument("--limit", type=int, default=500, help="the first N lines of each split (0: all)")
    ap.add_argument("--cli", default=CLI)
    args = ap.parse_args(argv)
    if not os.path.exists(args.cli):
        raise SystemExit(f"{args.cli} is missing: run scripts/build.sh --only native first")
    pair = model_pair(args.model)
    trained_on = read_gguf_tensors(args.model)[0].get(TRAINING_CORPUS_KEY)
    for corpus in args.corpus or ["multi30k", "broad"]:
        paths = pair_paths(pair, ROOT, trained_on, corpus)
        src, ref = read_split(paths, args.split, args.limit)
        keep = [i for i, line in enumerate(src) if line.strip()]
        results = engine_results(args.cli, args.model, [src[i] for i in keep], args.beam)
        line = {"model": args.model, "corpus": corpus, "split": args.split, "beam": args.beam}
        line.update(summary(results, [ref[i] for i in keep]))
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
