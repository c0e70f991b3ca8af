#!/usr/bin/python3
"""BLEU of each engine in the paragraph benchmark (bench/bench_translate.mjs), with the project's sacreBLEU-style
13a implementation (attnlab.eval.bleu.bleu_13a, detokenized cased text: sacreBLEU's default signature).

    PYTHONPATH=python /usr/bin/python3 bench/paragraph_bleu.py < JOB.json   # prints one JSON line

JOB: {"references": [ref per sentence], "models": {kind: {"gguf": path, "engines": {name: {"texts": [...]} or
{"ids": [[target ids], ...]}}}}}. Engines that return only ids (onnxruntime-web) are detokenized with the GGUF's
target pieces (detokenize below); for engines that return both, the answer says on how many sentences that
detokenization differs from the engine's own text (it should be 0: then the BLEU figures are comparable).
"""
import json
import re
import sys

from attnlab.eval.bleu import bleu_13a
from attnlab.gguf.reader import read_gguf

SPACE = "\u2581"
BYTE_PIECE = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")


def target_pieces(gguf_path):
    _, kvs, _, _, _ = read_gguf(gguf_path)
    meta = {k: v for k, _, v in kvs}
    return meta["tokenizer.target.tokens"], meta.get("tokenizer.target.token_type")


def detokenize(ids, pieces, types):
    """SentencePiece decoding: pieces joined, byte pieces as UTF-8 bytes, "▁" a space, control pieces dropped."""
    out = bytearray()
    for i in ids:
        if types is not None and types[i] == 3:
            continue
        byte = BYTE_PIECE.match(pieces[i])
        out += bytes([int(byte.group(1), 16)]) if byte else pieces[i].encode("utf-8")
    return out.decode("utf-8", errors="replace").replace(SPACE, " ").strip()


def main():
    job = json.load(sys.stdin)
    refs = job["references"]
    answer = {}
    for kind, model in job["models"].items():
        pieces, types = target_pieces(model["gguf"])
        scores = {}
        for name, engine in model["engines"].items():
            texts = engine.get("texts")
            decoded = [detokenize(ids, pieces, types) for ids in engine["ids"]] if "ids" in engine else None
            hyps = texts if texts is not None else decoded
            entry = {"bleu_13a": bleu_13a(hyps, refs[:len(hyps)]), "sentences": len(hyps)}
            if texts is not None and decoded is not None:
                entry["detokenization_differs"] = sum(a != b for a, b in zip(texts, decoded))
            scores[name] = entry
        answer[kind] = scores
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
