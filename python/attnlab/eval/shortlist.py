"""What decoding inside a lexical shortlist (attnlab.data.shortlist) would cost and save, measured in PyTorch before
the engine has one: a translator GGUF decodes a test split in paragraphs of --paragraph sentences, beam search over
the full vocabulary and again with every logit outside the paragraph's shortlist union set to -inf (log-softmax
then normalizes over the shortlist, as a decoder that scores only those rows would). Prints one JSON line per
setting: BLEU both ways (13a and lower-cased tokenized, as attnlab.eval.engine reports), the share of sentences whose
output is the same, and the union's mean size against the vocabulary (the share of output-projection rows left).

    PYTHONPATH=python /usr/bin/python3 -m attnlab.eval.shortlist --model models/weights/transformer-en-de.f16.gguf \
        --shortlist build/shortlist/broad.en-de.npz [--split test] [--corpus multi30k] [--beam 4] [--limit N]
"""
import argparse
import json
import sys
import time

import torch

from attnlab.data.batching import pad_batch
from attnlab.data.pairs import add_split_options, encode_source, load_tokenizers, pair_paths, read_split
from attnlab.data.shortlist import Shortlist
from attnlab.eval.bleu import scores_for
from attnlab.gguf import bahdanau, transformer as transformer_gguf
from attnlab.gguf.common import TRAINING_CORPUS_KEY
from attnlab.gguf.reader import read_gguf_tensors
from attnlab.nn import seq2seq_rnn, transformer


@torch.no_grad()
def compare(family, model, sp_src, sp_tgt, lines, shortlist, paragraph, beam):
    """family: attnlab.nn.transformer or .seq2seq_rnn -> (full outputs, shortlisted outputs, union sizes),
    paragraph by paragraph in order."""
    model.eval()
    vocab = sp_tgt.vocab_size()
    full, short, sizes = [], [], []
    for start in range(0, len(lines), paragraph):
        ids = [encode_source(sp_src, line) for line in lines[start:start + paragraph]]
        src, lens = pad_batch(ids)
        union = shortlist.union(ids)
        allowed = torch.zeros(vocab, dtype=torch.bool)
        allowed[torch.from_numpy(union).long()] = True
        sizes.append(len(union))
        full += [sp_tgt.decode(h) for h in family.beam_search(model, src, lens, beam=beam)]
        short += [sp_tgt.decode(h) for h in family.beam_search(model, src, lens, beam=beam, allowed=allowed)]
    return full, short, sizes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--shortlist", required=True, help="attnlab.data.shortlist's --out")
    add_split_options(ap)
    ap.add_argument("--beam", type=int, default=4)
    ap.add_argument("--paragraph", type=int, default=8)
    ap.add_argument("--limit", type=int, default=0, help="only the first N sentences")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    meta, _ = read_gguf_tensors(args.model)
    arch = meta.get("general.architecture")
    family, loader = {transformer_gguf.ARCH: (transformer, transformer_gguf.load),
                      bahdanau.ARCH: (seq2seq_rnn, bahdanau.load)}.get(arch, (None, None))
    if family is None:
        sys.exit(f"{args.model}: a {arch} file; the shortlist is measured on translators (Transformer, Bahdanau)")
    model, pair = loader(args.model)
    paths = pair_paths(pair, corpus=meta.get(TRAINING_CORPUS_KEY), data_corpus=args.corpus)
    sp_src, sp_tgt = load_tokenizers(paths)
    src, ref = read_split(paths, args.split, args.limit)
    shortlist = Shortlist.load(args.shortlist)
    t0 = time.time()
    full, short, sizes = compare(family, model, sp_src, sp_tgt, src, shortlist, args.paragraph, args.beam)
    union_mean = sum(sizes) / max(1, len(sizes))
    print(json.dumps({"model": args.model, "split": args.split, "corpus": paths["data_corpus"], "beam": args.beam,
                      "paragraph": args.paragraph, "sentences": len(src),
                      "full": scores_for(paths["tgt_lang"], full, ref),
                      "shortlist": scores_for(paths["tgt_lang"], short, ref),
                      "same_output": round(100.0 * sum(a == b for a, b in zip(full, short)) / max(1, len(src)), 2),
                      "union_mean": round(union_mean, 1), "vocab": sp_tgt.vocab_size(),
                      "rows_share": round(union_mean / sp_tgt.vocab_size(), 4),
                      "seconds": round(time.time() - t0, 1)}))


if __name__ == "__main__":
    sys.exit(main())
