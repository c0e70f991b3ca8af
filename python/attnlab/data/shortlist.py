"""A lexical shortlist (as Marian and bergamot-translator use): the target pieces a translation of a given source is
likely to need, so that a decoder can score those instead of its whole vocabulary. For a batch of sentences the
shortlist is the union of
  - the `frequent` most frequent target pieces of the training data,
  - for each piece of the sources, the `per_source` target pieces that co-occur with it most in the training pairs,
    ranked by the Dice coefficient 2·c(s, t) / (c(s) + c(t)) over sentence pairs (c: pairs that hold the piece),
  - EOS.

    PYTHONPATH=python python3 -m attnlab.data.shortlist --pair en-de --corpus broad [--per-source 64]
        [--frequent 1000] --out build/shortlist/en-de.npz
    ... --out models/weights/en-de.shortlist.gguf --for-model models/weights/transformer-en-de.q8_0.gguf

The table is an array [source vocab, per_source] of target ids (-1: fewer candidates); `attnlab.eval.shortlist`
measures what decoding inside it costs in BLEU and what it saves in output-projection rows. A `.gguf` output is the
file the engine reads (`TranslateOptions::shortlist`, the module's `loadModel(bytes, { shortlist })`, the CLI's
`--shortlist`): the table and the frequent ids as i32 tensors, and a fingerprint of the vocabularies of the model
named by --for-model (any model with the same tokenizers takes it; the engine refuses one made for others):

    general.architecture                    "attnlab.shortlist"
    attnlab.shortlist.per_source, .frequent u32
    attnlab.shortlist.source_vocab_fnv1a    u64  FNV-1a 64 over the source pieces, each followed by a zero byte
    attnlab.shortlist.target_vocab_fnv1a    u64  the same over the target pieces
    shortlist.table                         i32 [source vocab, per_source]
    shortlist.frequent                      i32 [frequent]
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

    def save_gguf(self, path, source_pieces, target_pieces):
        """The engine's file, for a model whose tokenizers have these pieces."""
        from attnlab.gguf.writer import GGUFWriter
        if self.table.shape[0] != len(source_pieces):
            raise ValueError(f"the table has {self.table.shape[0]} source rows, the model {len(source_pieces)} pieces")
        if self.table.max() >= len(target_pieces) or self.frequent.max() >= len(target_pieces):
            raise ValueError(f"the shortlist names target ids beyond the model's {len(target_pieces)} pieces")
        w = GGUFWriter(path, architecture="attnlab.shortlist")
        w.add_uint32("attnlab.shortlist.per_source", int(self.table.shape[1]))
        w.add_uint32("attnlab.shortlist.frequent", int(len(self.frequent)))
        w.add_uint64("attnlab.shortlist.source_vocab_fnv1a", vocab_fingerprint(source_pieces))
        w.add_uint64("attnlab.shortlist.target_vocab_fnv1a", vocab_fingerprint(target_pieces))
        w.add_tensor("shortlist.table", self.table, dtype="i32")
        w.add_tensor("shortlist.frequent", self.frequent, dtype="i32")
        w.write()

    @classmethod
    def load(cls, path):
        with np.load(path) as z:
            return cls(z["table"], z["frequent"])


def vocab_fingerprint(pieces):
    """FNV-1a 64 over the pieces' UTF-8 bytes, each piece followed by a zero byte (the engine computes the same)."""
    h = 0xcbf29ce484222325
    for piece in pieces:
        for byte in piece.encode("utf-8") + b"\0":
            h = ((h ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def model_pieces(model_path):
    """(source pieces, target pieces) of a translator's GGUF file."""
    from attnlab.gguf.reader import read_gguf
    _, kvs, _, _, _ = read_gguf(model_path)
    values = {key: value for key, _, value in kvs}
    return values["tokenizer.source.tokens"], values["tokenizer.target.tokens"]


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
    ap.add_argument("--out", required=True, help=".npz (the table for attnlab.eval.shortlist) or .gguf (the engine's)")
    ap.add_argument("--for-model", help="a .gguf output: the translator whose vocabularies it is made for")
    args = ap.parse_args(argv)
    if args.out.endswith(".gguf") and not args.for_model:
        ap.error("a .gguf shortlist needs --for-model")
    paths = pair_paths(args.pair, corpus=args.corpus)
    sp_src, sp_tgt = load_tokenizers(paths)
    src_lines, tgt_lines = read_split(paths, "train")
    src_ids, tgt_ids = encode_training_pairs(sp_src, sp_tgt, src_lines, tgt_lines, args.max_len)
    shortlist = build(src_ids, tgt_ids, sp_src.vocab_size(), sp_tgt.vocab_size(), args.per_source, args.frequent)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    if args.out.endswith(".gguf"):
        source_pieces, target_pieces = model_pieces(args.for_model)
        if source_pieces != [sp_src.id_to_piece(i) for i in range(sp_src.vocab_size())] or \
                target_pieces != [sp_tgt.id_to_piece(i) for i in range(sp_tgt.vocab_size())]:
            sys.exit(f"{args.for_model}'s tokenizers are not the {args.pair} {args.corpus} ones")
        shortlist.save_gguf(args.out, source_pieces, target_pieces)
    else:
        shortlist.save(args.out)
    print(f"{len(src_ids)} pairs -> {args.out}: {args.per_source} per source piece, {args.frequent} frequent")


if __name__ == "__main__":
    sys.exit(main())
