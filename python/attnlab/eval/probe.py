#!/usr/bin/python3
"""Which encoder self-attention heads link one word of a sentence to another, as the engine computes them.

    python3 -m attnlab.eval.probe --model models/weights/transformer-en-de.f16.gguf \
        --text "The Law will never be perfect, but its application should be just." --from its --to Law

Runs `build/native/attnlab translate --json` (what the page's Self-attention tab draws) and prints, for every
layer and head, the weight that the first piece of --from gives to all the pieces of --to (summed), the share a
uniform head would give, and the word that head attends to most. Words are SentencePiece pieces joined at "▁" (punctuation and </s> stand alone).
It answers the source material's example (does "its" look at "Law"?) for a trained model, with numbers.
"""
import argparse
import json
import subprocess
import sys

from attnlab.paths import CLI


def words_of(pieces):
    """Piece index -> word index, and the words: pieces joined, where a piece starting with ▁, a punctuation piece
    and </s> each start a word."""
    word_of, words = [], []
    for piece in pieces:
        starts_word = piece.startswith("\u2581") or piece == "</s>" or not any(ch.isalnum() for ch in piece)
        if starts_word or not words:
            words.append(piece.lstrip("\u2581"))
        else:
            words[-1] += piece
        word_of.append(len(words) - 1)
    return word_of, words


def probe(translation, source_word, target_word):
    """-> rows (layer, head, weight on target_word, uniform share, most-attended word), the words, the output."""
    pieces = translation["source_tokens"]
    word_of, words = words_of(pieces)
    lowered = [w.lower() for w in words]
    for word in (source_word, target_word):
        if word.lower() not in lowered:
            raise SystemExit(f"'{word}' is not a word of the source as tokenized: {words}")
    src_word, dst_word = lowered.index(source_word.lower()), lowered.index(target_word.lower())
    row = word_of.index(src_word)                                   # the first piece of the --from word
    columns = [i for i, w in enumerate(word_of) if w == dst_word]
    tensor = translation["encoder_self_attention"]
    L, H, S = tensor["layers"], tensor["heads"], tensor["cols"]
    data = tensor["data"]
    rows = []
    for layer in range(L):
        for head in range(H):
            base = ((layer * H + head) * S + row) * S
            weights = data[base:base + S]
            per_word = [0.0] * len(words)
            for i, w in enumerate(weights):
                per_word[word_of[i]] += w
            top = max(range(len(words)), key=per_word.__getitem__)
            rows.append((layer, head, sum(weights[c] for c in columns), len(columns) / S, words[top]))
    return rows, words, translation["text"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--text", required=True)
    ap.add_argument("--from", dest="source_word", required=True)
    ap.add_argument("--to", dest="target_word", required=True)
    ap.add_argument("--cli", default=CLI)
    args = ap.parse_args(argv)
    out = subprocess.run([args.cli, "translate", "--model", args.model, "--json"], input=args.text + "\n",
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"attnlab translate failed: {out.stderr.strip()}")
    rows, words, text = probe(json.loads(out.stdout), args.source_word, args.target_word)
    print(f"source words: {words}\noutput: {text}")
    print(f"weight of '{args.source_word}' (first piece) on '{args.target_word}', by layer and head "
          f"(uniform share {rows[0][3]:.3f}); * = the head's most-attended word is '{args.target_word}'")
    for layer, head, weight, _, top in rows:
        mark = "*" if top.lower() == args.target_word.lower() else " "
        print(f"  layer {layer + 1} head {head + 1}: {weight:.3f} {mark} (most: {top})")
    best = max(rows, key=lambda r: r[2])
    print(json.dumps({"model": args.model, "from": args.source_word, "to": args.target_word,
                      "best_layer": best[0] + 1, "best_head": best[1] + 1, "best_weight": round(best[2], 4),
                      "uniform": round(best[3], 4),
                      "heads_pointing": sum(r[4].lower() == args.target_word.lower() for r in rows),
                      "heads": len(rows)}))


if __name__ == "__main__":
    sys.exit(main())
