"""A lexical shortlist (as Marian and bergamot-translator use): the target pieces a translation of a given source is
likely to need, so that a decoder can score those instead of its whole vocabulary. For a batch of sentences the
shortlist is the union of
  - the `frequent` most frequent target pieces of the training data,
  - for each piece of the sources, the `per_source` target pieces that co-occur with it most in the training pairs,
    ranked by the Dice coefficient 2·c(s, t) / (c(s) + c(t)) over sentence pairs (c: pairs that hold the piece),
  - EOS.

    PYTHONPATH=python python3 -m attnlab.data.shortlist --pair en-de --corpus broad [--per-source 64]
        [--frequent 1000] --out build/shortlist/en-de.npz

The table is an array [source vocab, per_source] of target ids (-1: fewer candidates); `attnlab.eval.shortlist`
measures what decoding inside it costs in BLEU and what it saves in output-projection rows.
"""
import argparse
import os
import sys

import numpy as np

from attnlab.data.pairs import encode_training_pairs, load_tokenizers, pair_paths, read_split
from attnlab.nn.decoding import BOS_ID, EOS_ID, PAD_ID


class Shortlist:
    def __init__(self, table, frequent):
        self.table = np.asarray(table, dtype=np.int32)         # [source vocab, per_source], -1 padded
        self.frequent = np.asarray(frequent, dtype=np.int32)   # the always-allowed target ids

    def union(self, sources):
        """Sorted target ids a batch of sources (lists of source ids) may be translated with."""
        ids = np.unique(np.concatenate([np.asarray(s, dtype=np.int64) for s in sources])) if sources else []
        rows = self.table[np.asarray(ids, dtype=np.int64)].ravel() if len(ids) else np.zeros(0, np.int32)
        return np.union1d(np.union1d(self.frequent, rows[rows >= 0]), [EOS_ID]).astype(np.int32)

    def save(self, path):
        np.savez(path, table=self.table, frequent=self.frequent)

    @classmethod
    def load(cls, path):
        with np.load(path) as z:
            return cls(z["table"], z["frequent"])


def build(src_ids, tgt_ids, src_vocab, tgt_vocab, per_source=64, frequent=1000):
    """src_ids, tgt_ids: the training pairs as lists of token ids (targets may hold BOS: it is left out) ->
    Shortlist."""
    if len(src_ids) != len(tgt_ids):
        raise ValueError(f"{len(src_ids)} source sentences but {len(tgt_ids)} targets")
    codes, c_src, c_tgt = [], np.zeros(src_vocab, np.int64), np.zeros(tgt_vocab, np.int64)
    token_count = np.zeros(tgt_vocab, np.int64)
    for s, t in zip(src_ids, tgt_ids):
        t = np.asarray(t, np.int64)
        t = t[(t != BOS_ID) & (t != PAD_ID)]   # a decoder is fed BOS, never writes it
        us, ut = np.unique(np.asarray(s, np.int64)), np.unique(t)
        c_src[us] += 1
        c_tgt[ut] += 1
        np.add.at(token_count, t, 1)
        codes.append((us[:, None] * tgt_vocab + ut[None, :]).ravel())
    pair_codes, c_pair = np.unique(np.concatenate(codes) if codes else np.zeros(0, np.int64), return_counts=True)
    s, t = pair_codes // tgt_vocab, pair_codes % tgt_vocab
    dice = 2.0 * c_pair / (c_src[s] + c_tgt[t])
    order = np.lexsort((t, -dice, s))    # by source, then the highest Dice first, then the lower id
    s, t = s[order], t[order]
    table = np.full((src_vocab, per_source), -1, np.int32)
    starts = np.searchsorted(s, np.arange(src_vocab))
    ends = np.searchsorted(s, np.arange(src_vocab), side="right")
    for v in range(src_vocab):
        chosen = t[starts[v]:min(ends[v], starts[v] + per_source)]
        table[v, :len(chosen)] = chosen
    most_frequent = np.argsort(-token_count, kind="stable")[:frequent]
    return Shortlist(table, np.sort(most_frequent))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pair", required=True)
    ap.add_argument("--corpus", default=None, help="the corpus whose training pairs and tokenizers are read")
    ap.add_argument("--per-source", type=int, default=64)
    ap.add_argument("--frequent", type=int, default=1000)
    ap.add_argument("--max-len", type=int, default=100)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    paths = pair_paths(args.pair, corpus=args.corpus)
    sp_src, sp_tgt = load_tokenizers(paths)
    src_lines, tgt_lines = read_split(paths, "train")
    src_ids, tgt_ids = encode_training_pairs(sp_src, sp_tgt, src_lines, tgt_lines, args.max_len)
    shortlist = build(src_ids, tgt_ids, sp_src.vocab_size(), sp_tgt.vocab_size(), args.per_source, args.frequent)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    shortlist.save(args.out)
    print(f"{len(src_ids)} pairs -> {args.out}: {args.per_source} per source piece, {args.frequent} frequent")


if __name__ == "__main__":
    sys.exit(main())
