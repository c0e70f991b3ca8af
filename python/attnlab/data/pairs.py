"""The translation corpora and language pairs: which files hold each split, which tokenizers each side uses, and
the source / target id sequences the translators train on.

A corpus is a directory of build/data written by attnlab.data.prepare, with one line-aligned file per split and
language; a pair names a corpus and the direction. Adding a data source is one CORPORA entry (and its
preparation in attnlab.data.prepare), adding a direction one PAIRS entry.
"""
import os

import sentencepiece as spm

from attnlab.nn.decoding import BOS_ID, EOS_ID
from attnlab.paths import ROOT

# corpus -> its (train, validation, test) split names
CORPORA = {"multi30k": ("train", "val", "test2016"), "cmn": ("train", "val", "test"), "broad": ("train", "val", "test")}
# corpus -> further evaluation splits, reachable by name ("--split newstest2013")
EXTRA_SPLITS = {"broad": ("tatoeba-val", "newstest2013")}
# pair -> (default corpus, source language, target language); each side's tokenizer is
# models/tokenizers/<corpus>.<lang> of the corpus a model was trained on
PAIRS = {
    "en-de": ("multi30k", "en", "de"),
    "de-en": ("multi30k", "de", "en"),
    "en-zh": ("cmn", "en", "zh"),
}


def pair_paths(pair, root=ROOT, corpus=None, data_corpus=None):
    """-> dict with data files per split and the two tokenizer models. corpus: what the model was trained on (its
    tokenizers; default the pair's own); data_corpus: which corpus's splits to read (default the same), so a model
    trained on one corpus can be scored on another's test set."""
    if pair not in PAIRS:
        raise ValueError(f"unknown pair {pair!r}; expected one of {sorted(PAIRS)}")
    default_corpus, src, tgt = PAIRS[pair]
    corpus = corpus or default_corpus
    data_corpus = data_corpus or corpus
    for name in (corpus, data_corpus):
        if name not in CORPORA:
            raise ValueError(f"unknown corpus {name!r}; expected one of {sorted(CORPORA)}")
    data = os.path.join(root, "build", "data", data_corpus)
    train, val, test = CORPORA[data_corpus]
    splits = {"train": train, "val": val, "test": test}
    splits.update({name: name for name in EXTRA_SPLITS.get(data_corpus, ())})
    paths = {"corpus": corpus, "data_corpus": data_corpus, "src_lang": src, "tgt_lang": tgt,
             "src_spm": os.path.join(root, "models", "tokenizers", f"{corpus}.{src}.model"),
             "tgt_spm": os.path.join(root, "models", "tokenizers", f"{corpus}.{tgt}.model")}
    for split, stem in splits.items():
        paths[split] = (os.path.join(data, f"{stem}.{src}"), os.path.join(data, f"{stem}.{tgt}"))
    return paths


def split_names(corpus):
    """The --split values a corpus offers: val, test and its extra evaluation splits."""
    return ("val", "test") + EXTRA_SPLITS.get(corpus, ())


def add_split_options(parser):
    """--split and --corpus, as every translation evaluator takes them."""
    parser.add_argument("--split", default="test", help="test (test2016 for Multi30k, Tatoeba test for cmn and "
                        "broad), val, or a corpus's extra split (broad: tatoeba-val, newstest2013)")
    parser.add_argument("--corpus", help="score on this corpus's split (default: the one the model was trained "
                        "on), e.g. multi30k for a broad model's test2016")


def read_lines(path):
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} is missing: run python3 -m attnlab.data.prepare first")
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def read_split(paths, split, limit=0):
    """-> (source lines, reference lines) of one split, the first `limit` only when limit > 0."""
    if split not in paths:
        raise ValueError(f"corpus {paths['data_corpus']} has no split {split!r}; it has "
                         f"{', '.join(split_names(paths['data_corpus']))}")
    src, ref = (read_lines(p) for p in paths[split])
    if len(src) != len(ref):
        raise ValueError(f"{split} files differ in length: {len(src)} vs {len(ref)}")
    if limit:
        src, ref = src[:limit], ref[:limit]
    return src, ref


def load_tokenizers(paths):
    return (spm.SentencePieceProcessor(model_file=paths["src_spm"]),
            spm.SentencePieceProcessor(model_file=paths["tgt_spm"]))


def encode_source(sp, line):
    """Source ids end with EOS so the encoder sees where the sentence stops (C++ does the same)."""
    return sp.encode(line) + [EOS_ID]


def encode_training_pairs(sp_src, sp_tgt, src_lines, tgt_lines, max_len):
    """-> (source id lists, BOS + target + EOS id lists), dropping empty pairs and those over max_len subwords."""
    src_ids, tgt_ids = [], []
    for s, t in zip(src_lines, tgt_lines):
        a, b = encode_source(sp_src, s), [BOS_ID] + sp_tgt.encode(t) + [EOS_ID]
        if 1 < len(a) <= max_len and 2 < len(b) <= max_len + 1:
            src_ids.append(a)
            tgt_ids.append(b)
    return src_ids, tgt_ids
